//! One events file read a stretch of records at a time, so that a file larger than
//! memory is handed on in pieces of about a byte budget each (export's row groups).

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::Read;
use std::path::Path;

use crate::read::event_file::{decode_records_until, FileContents};
use crate::read::report::FileReport;
use crate::read::shared_tags::StepBurst;
use crate::read::tf_record::RecordReader;

/// The pieces of one events file, in order. Each piece holds the records from
/// where the last one ended to the first record boundary at or past `budget`
/// bytes further; its `plugins` are those named so far in the file, so a value
/// is confirmed as it is in the whole file. The file's report (all its damage,
/// its cut-off tail, an open or read error) comes with the last piece; the
/// others carry a clean one, so the file is reported once. The bytes come from a
/// local file, or from any reader (object storage).
pub struct FilePieces<R = File> {
    reader: Option<RecordReader<R>>,
    tags: Option<HashSet<String>>,
    plugins: HashMap<String, String>,
    burst: StepBurst,
    /// None once the last piece was handed out.
    report: Option<FileReport>,
    budget: u64,
}

impl FilePieces<File> {
    /// Opens `path`; a file that cannot be opened gives one empty piece whose report says why.
    pub fn open(path: &Path, tags: Option<HashSet<String>>, budget: u64) -> Self {
        let mut report = FileReport::new(path);
        let reader = match File::open(path).and_then(|f| Ok((f.metadata()?.len(), f))) {
            Ok((len, file)) => Some(RecordReader::new(file, Some(len))),
            Err(e) => {
                report.error = Some(e.to_string());
                None
            }
        };
        FilePieces::new(reader, report, tags, budget)
    }
}

impl<R: Read> FilePieces<R> {
    /// The pieces of the file `reader` reads, reported as `path`.
    pub fn from_reader(
        path: &Path,
        reader: RecordReader<R>,
        tags: Option<HashSet<String>>,
        budget: u64,
    ) -> Self {
        FilePieces::new(Some(reader), FileReport::new(path), tags, budget)
    }

    fn new(
        reader: Option<RecordReader<R>>,
        report: FileReport,
        tags: Option<HashSet<String>>,
        budget: u64,
    ) -> Self {
        FilePieces {
            reader,
            tags,
            plugins: HashMap::new(),
            burst: StepBurst::default(),
            report: Some(report),
            budget: budget.max(1),
        }
    }

    /// Whether the last piece was handed out: the next call gives none.
    pub fn finished(&self) -> bool {
        self.report.is_none()
    }
}

impl<R: Read> Iterator for FilePieces<R> {
    type Item = FileContents;

    fn next(&mut self) -> Option<FileContents> {
        let mut report = self.report.take()?;
        let mut entries = Vec::new();
        let more = match self.reader.as_mut() {
            Some(reader) => {
                let stop = reader.offset().saturating_add(self.budget);
                let tags = self.tags.as_ref();
                decode_records_until(
                    reader,
                    tags,
                    &mut entries,
                    &mut self.plugins,
                    &mut self.burst,
                    &mut report,
                    stop,
                )
            }
            None => false,
        };
        let report = if more {
            let clean = FileReport::new(&report.path);
            self.report = Some(report);
            clean
        } else {
            report
        };
        Some(FileContents {
            entries,
            plugins: self.plugins.clone(),
            burst: self.burst.clone(),
            report,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logdir::plan::{plan_run, RunPlanner, Skeleton};
    use crate::read::event_file::{read_event_file, Entry};
    use crate::read::test_events::{legacy_histogram, restart, tensor_histogram};

    fn temp_file(name: &str, bytes: &[u8]) -> std::path::PathBuf {
        let path =
            std::env::temp_dir().join(format!("histoscope-pieces-{name}-{}", std::process::id()));
        std::fs::write(&path, bytes).unwrap();
        path
    }

    /// Legacy and tensor histograms, a restart, a tensor whose plugin is named
    /// only by a later value of its tag, and a cut-off last record.
    fn events() -> Vec<u8> {
        let mut bytes = Vec::new();
        for step in 0..6 {
            bytes.extend(legacy_histogram("w", step, &[1.0, step as f64]));
            bytes.extend(tensor_histogram("t", step, &[0.0, 1.0, 2.0], step == 4));
        }
        bytes.extend(restart(3));
        bytes.extend(legacy_histogram("w", 3, &[5.0]));
        let cut = legacy_histogram("w", 4, &[6.0]);
        bytes.extend(&cut[..cut.len() - 3]);
        bytes
    }

    /// Entries as text: statistics a writer left out are NaN, which never compare equal.
    fn text(entries: &[Entry]) -> String {
        format!("{entries:?}")
    }

    fn entries(pieces: &[FileContents]) -> String {
        let all: Vec<Entry> = pieces.iter().flat_map(|p| p.entries.clone()).collect();
        text(&all)
    }

    #[test]
    fn pieces_laid_end_to_end_are_the_whole_file() {
        let path = temp_file("whole", &events());
        let whole = read_event_file(&path, None);
        for budget in [1, 50, 200, 10_000] {
            let pieces: Vec<FileContents> = FilePieces::open(&path, None, budget).collect();
            assert_eq!(entries(&pieces), text(&whole.entries), "budget {budget}");
            let last = pieces.last().unwrap();
            assert_eq!(last.report, whole.report);
            assert_eq!(last.plugins, whole.plugins);
            assert!(pieces[..pieces.len() - 1]
                .iter()
                .all(|p| !p.report.has_problems() && p.report.incomplete_tail.is_none()));
        }
        assert!(FilePieces::open(&path, None, 1).count() > 10);
        let mut pieces = FilePieces::open(&path, None, 10_000);
        assert!(!pieces.finished());
        pieces.next();
        assert!(pieces.finished());
        assert_eq!(FilePieces::open(&path, None, 10_000).count(), 1);
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn a_run_planned_piece_by_piece_keeps_what_the_whole_file_keeps() {
        let path = temp_file("plan", &events());
        let whole = plan_run(&[Skeleton::from(&read_event_file(&path, None))]);
        let mut planner = RunPlanner::default();
        for (i, piece) in FilePieces::open(&path, None, 60).enumerate() {
            planner.add_piece(&piece, i > 0);
        }
        let pieces = planner.finish();
        assert!(pieces.keep.len() > 3);
        assert_eq!(pieces.keep.concat(), whole.keep.concat());
        assert_eq!(pieces.superseded, whole.superseded);
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn a_missing_file_is_one_empty_piece_that_says_why() {
        let path = std::env::temp_dir().join("histoscope-pieces-no-such-file");
        let pieces: Vec<FileContents> = FilePieces::open(&path, None, 100).collect();
        assert_eq!(pieces.len(), 1);
        assert!(pieces[0].entries.is_empty());
        assert!(pieces[0].report.has_problems());
    }

    #[test]
    fn pieces_read_from_any_reader_are_the_files_pieces() {
        let bytes = events();
        let path = temp_file("reader", &bytes);
        let from_file: Vec<FileContents> = FilePieces::open(&path, None, 60).collect();
        let size = Some(bytes.len() as u64);
        let reader = RecordReader::new(std::io::Cursor::new(bytes), size);
        let fed: Vec<FileContents> = FilePieces::from_reader(&path, reader, None, 60).collect();
        assert!(from_file.len() > 3);
        assert_eq!(format!("{fed:?}"), format!("{from_file:?}"));
        std::fs::remove_file(path).unwrap();
    }
}
