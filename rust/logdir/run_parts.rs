//! One run's events files decoded one by one, each from a path or from bytes fed from
//! elsewhere (object storage), then assembled into the run: its series or their step
//! profiles, and the scalars and notes diagnosis weighs.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{self, Read};
use std::path::Path;

use crate::histograms::profile::profile;
use crate::histograms::profiled::ProfiledSeries;
use crate::histograms::series::Series;
use crate::logdir::discover::RunFiles;
use crate::logdir::evidence::{Evidenced, Mark, RunEvidence};
use crate::logdir::merge::{merge_run, Merged, MergedRun};
use crate::logdir::run::{LoadedRun, Reading};
use crate::logdir::storage::Storage;
use crate::read::event_file::{
    decode_records, open_error, read_event_file_into, Entry, FileContents, PointView, Sink,
    HISTOGRAM_PLUGIN,
};
use crate::read::report::FileReport;
use crate::read::tf_record::RecordReader;

/// Where one events file's bytes come from.
pub trait FileBytes {
    /// Decodes every record into `sink`, naming plugins in `plugins`; returns the file's report.
    fn decode_into<S: Sink>(
        self,
        tags: Option<&HashSet<String>>,
        sink: &mut S,
        plugins: &mut HashMap<String, String>,
    ) -> FileReport;
}

impl FileBytes for &Path {
    fn decode_into<S: Sink>(
        self,
        tags: Option<&HashSet<String>>,
        sink: &mut S,
        plugins: &mut HashMap<String, String>,
    ) -> FileReport {
        read_event_file_into(self, tags, sink, plugins)
    }
}

/// An events file read from any byte source, reported under its report's path.
pub struct Fed<R> {
    pub reader: RecordReader<R>,
    pub report: FileReport,
}

impl<R: Read> FileBytes for Fed<R> {
    fn decode_into<S: Sink>(
        mut self,
        tags: Option<&HashSet<String>>,
        sink: &mut S,
        plugins: &mut HashMap<String, String>,
    ) -> FileReport {
        decode_records(self.reader, tags, sink, plugins, &mut self.report);
        self.report
    }
}

/// One events file of a run, decoded, with the scalars and notes read beside it.
#[derive(Debug)]
pub struct RunPart {
    done: Done,
    marks: Vec<Mark>,
}

#[derive(Debug)]
enum Done {
    /// A file of a run of several: its entries, merged once every file is read.
    File(Box<FileContents>),
    /// A run's only file, read straight into its series.
    Run(MergedRun),
    /// A run's only file, read straight into its series' profiles.
    Profiled(Merged<ProfiledSeries>),
}

/// Decodes `file`, of the run named `run`: straight into the run's series (or their
/// profiles, as `reading` says) when it is the run's only file (`alone`), else into
/// entries that [`assemble_run`] merges with the run's other files.
pub fn read_part(
    run: &str,
    file: impl FileBytes,
    tags: Option<&HashSet<String>>,
    reading: Reading,
    alone: bool,
) -> RunPart {
    let (done, marks) = match (alone, reading) {
        (false, _) => {
            let (contents, marks) = read_file_with_evidence(file, tags);
            (Done::File(Box::new(contents)), marks)
        }
        (true, Reading::Series) => {
            let (merged, marks) = read_single_file_run::<Series>(run, file, tags);
            (Done::Run(merged), marks)
        }
        (true, Reading::Profiles) => {
            let (profiled, marks) = read_single_file_run(run, file, tags);
            (Done::Profiled(profiled), marks)
        }
    };
    RunPart { done, marks }
}

impl RunFiles {
    /// Decodes this run's file at `index` as [`read_part`] does, from the disk or the
    /// store that holds it; a file that cannot be opened is reported, not raised.
    pub fn read_part(
        &self,
        index: usize,
        tags: Option<&std::collections::HashSet<String>>,
        reading: Reading,
    ) -> RunPart {
        let path = self.files[index].as_path();
        let alone = self.files.len() == 1;
        match &self.storage {
            Storage::Disk => read_part(&self.name, path, tags, reading, alone),
            Storage::Store(store) => {
                let mut report = FileReport::new(Path::new(&store.url(path)));
                let reader: Box<dyn Read + Send> = match store.open(path) {
                    Ok(reader) => reader,
                    Err(e) => {
                        report.error = Some(open_error(&e));
                        Box::new(io::empty())
                    }
                };
                let reader = RecordReader::new(reader, self.sizes[index]);
                read_part(&self.name, Fed { reader, report }, tags, reading, alone)
            }
        }
    }
}

/// The run named `name` from its files' parts, in file order.
pub fn assemble_run(name: &str, parts: Vec<RunPart>, reading: Reading) -> LoadedRun {
    let evidence = RunEvidence::replay(parts.iter().map(|p| p.marks.as_slice()));
    let mut files = Vec::new();
    let mut finished = None;
    for part in parts {
        match part.done {
            Done::File(file) => files.push(*file),
            run => finished = Some(run),
        }
    }
    let (merged, profiled) = match finished {
        Some(Done::Run(merged)) => (merged, Vec::new()),
        Some(Done::Profiled(profiled)) => profiled.into_parts(),
        _ => {
            let merged = merge_run(name, files);
            match reading {
                Reading::Series => (merged, Vec::new()),
                Reading::Profiles => merged.into_profiled().into_parts(),
            }
        }
    };
    LoadedRun {
        name: name.to_owned(),
        merged,
        profiled,
        evidence,
    }
}

/// Reads one events file of a run of several, keeping its scalars and notes as marks.
fn read_file_with_evidence(
    file: impl FileBytes,
    tags: Option<&HashSet<String>>,
) -> (FileContents, Vec<Mark>) {
    let mut sink = Evidenced::new(Vec::<Entry>::new());
    let mut plugins = HashMap::new();
    let report = file.decode_into(tags, &mut sink, &mut plugins);
    let contents = FileContents {
        entries: sink.inner,
        plugins,
        report,
        ..Default::default()
    };
    (contents, sink.marks)
}

/// Reads a run held in one file straight into its series (or their profiles),
/// with no intermediate copy of the buckets: restarts are applied as records
/// arrive. Its scalars and notes come back as marks.
fn read_single_file_run<S: Stepped>(
    run: &str,
    file: impl FileBytes,
    tags: Option<&HashSet<String>>,
) -> (Merged<S>, Vec<Mark>) {
    let mut sink = Evidenced::new(SeriesSink::<S> {
        run,
        series: BTreeMap::new(),
        confirmed: HashSet::new(),
        purged: HashMap::new(),
        read_fraction: 0.0,
    });
    let mut plugins = HashMap::new();
    let mut report = file.decode_into(tags, &mut sink, &mut plugins);
    report.newest = true;
    let Evidenced { inner, marks } = sink;
    let SeriesSink {
        series,
        confirmed,
        purged,
        ..
    } = inner;
    let is_histogram = |tag: &String| {
        confirmed.contains(tag) || plugins.get(tag).map(String::as_str) == Some(HISTOGRAM_PLUGIN)
    };
    let superseded = purged
        .iter()
        .filter(|(tag, _)| is_histogram(tag))
        .map(|(_, n)| n)
        .sum();
    let series = series
        .into_iter()
        .filter(|(tag, s)| !s.is_empty() && is_histogram(tag))
        .map(|(_, s)| s.finished())
        .collect();
    let merged = Merged {
        series,
        reports: vec![report],
        superseded,
    };
    (merged, marks)
}

impl Merged<ProfiledSeries> {
    /// The run as [`LoadedRun`] holds it: no series with buckets, and the profiled ones.
    fn into_parts(self) -> (MergedRun, Vec<ProfiledSeries>) {
        let merged = MergedRun {
            series: Vec::new(),
            reports: self.reports,
            superseded: self.superseded,
        };
        (merged, self.series)
    }
}

impl MergedRun {
    /// The run with each series reduced to its step profiles.
    fn into_profiled(self) -> Merged<ProfiledSeries> {
        Merged {
            series: self.series.iter().map(ProfiledSeries::of).collect(),
            reports: self.reports,
            superseded: self.superseded,
        }
    }
}

/// What a run's histogram values are pushed into, tag by tag, under the restart rule.
trait Stepped {
    fn new(run: &str, tag: &str) -> Self;
    /// Appends a value, first dropping the steps at its step or later; returns how many.
    fn push(&mut self, point: PointView<'_>) -> usize;
    /// Drops the steps at `step` or later; returns how many.
    fn purge_from(&mut self, step: i64) -> usize;
    fn is_empty(&self) -> bool;
    /// Sizes buffers for `more` values now, `read_fraction` of the file read.
    fn reserve(&mut self, _more: usize, _read_fraction: f64) {}
    /// The series once the file is read.
    fn finished(self) -> Self;
}

impl Stepped for Series {
    fn new(run: &str, tag: &str) -> Self {
        Series::new(run, tag)
    }

    fn push(&mut self, point: PointView<'_>) -> usize {
        self.push_rows(point.step, point.wall_time, point.buckets, point.stats)
    }

    fn purge_from(&mut self, step: i64) -> usize {
        Series::purge_from(self, step)
    }

    fn is_empty(&self) -> bool {
        Series::is_empty(self)
    }

    fn reserve(&mut self, more: usize, read_fraction: f64) {
        self.reserve_projected(more, read_fraction);
    }

    fn finished(mut self) -> Self {
        // Give back what the projection reserved beyond the end.
        self.buckets.shrink_to_fit();
        self
    }
}

impl Stepped for ProfiledSeries {
    fn new(run: &str, tag: &str) -> Self {
        ProfiledSeries::new(run, tag)
    }

    fn push(&mut self, point: PointView<'_>) -> usize {
        ProfiledSeries::push(self, point.step, profile(point.buckets, &point.stats))
    }

    fn purge_from(&mut self, step: i64) -> usize {
        ProfiledSeries::purge_from(self, step)
    }

    fn is_empty(&self) -> bool {
        ProfiledSeries::is_empty(self)
    }

    fn finished(self) -> Self {
        self
    }
}

/// Histogram values pushed straight into a run's series.
struct SeriesSink<'a, S> {
    run: &'a str,
    series: BTreeMap<String, S>,
    /// Tags with at least one value known to be a histogram when it was read.
    confirmed: HashSet<String>,
    /// Per tag, how many values a restart dropped.
    purged: HashMap<String, usize>,
    /// The fraction of the file read so far, to size each series' buffer once.
    read_fraction: f64,
}

impl<S: Stepped> Sink for SeriesSink<'_, S> {
    fn histogram(&mut self, tag: &str, point: PointView<'_>, confirmed: bool) {
        if !self.series.contains_key(tag) {
            self.series.insert(tag.to_owned(), S::new(self.run, tag));
        }
        let series = self.series.get_mut(tag).expect("inserted above");
        series.reserve(point.buckets.len(), self.read_fraction);
        let dropped = series.push(point);
        if dropped > 0 {
            *self.purged.entry(tag.to_owned()).or_default() += dropped;
        }
        if confirmed && !self.confirmed.contains(tag) {
            self.confirmed.insert(tag.to_owned());
        }
    }

    fn start(&mut self, step: i64) {
        for (tag, series) in self.series.iter_mut() {
            let dropped = series.purge_from(step);
            if dropped > 0 {
                *self.purged.entry(tag.clone()).or_default() += dropped;
            }
        }
    }

    fn progress(&mut self, offset: u64, length: Option<u64>) {
        if let Some(length) = length.filter(|&l| l > 0) {
            self.read_fraction = offset as f64 / length as f64;
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::fs;
    use std::io::Cursor;
    use std::path::{Path, PathBuf};

    use super::*;
    use crate::logdir::discover::discover_runs;

    fn fixtures() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
    }

    fn fed(path: &Path) -> Fed<Cursor<Vec<u8>>> {
        let bytes = fs::read(path).unwrap();
        let size = bytes.len() as u64;
        Fed {
            reader: RecordReader::new(Cursor::new(bytes), Some(size)),
            report: FileReport::new(path),
        }
    }

    /// Fixtures with runs of one file and of several, restarts, damage, a cut-off
    /// tail and scalars.
    pub(crate) const VARIED: [&str; 5] = [
        "restart",
        "keras_fit",
        "tf2_summary",
        "truncated",
        "corrupt",
    ];

    #[test]
    fn a_run_fed_as_bytes_is_the_run_read_from_its_files() {
        for logdir in VARIED {
            for run in discover_runs(&fixtures().join(logdir)).unwrap() {
                let alone = run.files.len() == 1;
                for reading in [Reading::Series, Reading::Profiles] {
                    let read = |file: &PathBuf, fed_bytes: bool| match fed_bytes {
                        true => read_part(&run.name, fed(file), None, reading, alone),
                        false => read_part(&run.name, file.as_path(), None, reading, alone),
                    };
                    let from_files = run.files.iter().map(|f| read(f, false)).collect();
                    let from_bytes = run.files.iter().map(|f| read(f, true)).collect();
                    let want = assemble_run(&run.name, from_files, reading);
                    let got = assemble_run(&run.name, from_bytes, reading);
                    assert_eq!(
                        format!("{got:?}"),
                        format!("{want:?}"),
                        "{logdir}/{}",
                        run.name
                    );
                    let held = want.merged.series.len() + want.profiled.len();
                    assert!(held > 0 || logdir == "keras_fit", "{logdir}/{}", run.name);
                }
            }
        }
    }
}
