//! A log directory read a byte budget of runs at a time, for work that reduces each run
//! (diagnosis, the report) and so needs no more memory than its largest run.

use std::collections::{HashSet, VecDeque};
use std::panic;
use std::sync::mpsc::{self, Receiver};
use std::thread::{self, JoinHandle};

use crate::logdir::discover::{LogdirError, RunFiles};
use crate::logdir::load::{read_runs, LogdirSource, Selection};
use crate::logdir::run::{LoadedRun, Reading};

/// The bytes of files held at once by default (a batch read ahead while the one
/// before is worked on, half of it each): with decoded buckets taking about one
/// and a half times their bytes on disk, a quarter of a GB of memory.
pub const DEFAULT_BUDGET: u64 = 160 << 20;

/// A run of one file read as profiles holds a profile (about a hundred bytes) per
/// stored histogram of hundreds of bytes to kilobytes: it weighs at most this
/// fraction of its bytes.
const PROFILED_SHARE: u64 = 8;

/// The selected runs of a log directory, handed out in name order, read a
/// batch at a time: as many runs as fit the byte budget (at least one, at most
/// one per core), every events file of a batch on its own core.
#[derive(Debug)]
pub struct RunStream {
    /// Every run found, with or without histograms, sorted by name.
    runs: Vec<String>,
    /// The selected runs not read yet, with what their files weighed when listed.
    pending: VecDeque<Listed>,
    tags: Option<HashSet<String>>,
    budget: Option<u64>,
    reading: Reading,
    files: usize,
    bytes: u64,
}

/// A run's files as listed, and their size then.
#[derive(Debug)]
struct Listed {
    run: RunFiles,
    bytes: u64,
}

/// One run of a stream, read, with what its files weighed when listed.
#[derive(Debug)]
pub struct StreamedRun {
    pub run: LoadedRun,
    /// How many events files the run has.
    pub files: usize,
    /// Their bytes when the log directory was listed.
    pub bytes: u64,
}

impl RunStream {
    /// Lists the selected runs of `source`, to be read as `reading` says; `budget`
    /// bounds the memory of the runs read at once, as weighed by their listed bytes
    /// (`None`: every run at once).
    pub fn open(
        source: &LogdirSource,
        selection: &Selection,
        budget: Option<u64>,
        reading: Reading,
    ) -> Result<RunStream, LogdirError> {
        let found = source.discover()?;
        let runs = found.iter().map(|r| r.name.clone()).collect();
        let pending: VecDeque<Listed> = found
            .into_iter()
            .filter(|r| selection.wants_run(&r.name))
            .map(|run| Listed {
                bytes: run.listed_bytes(),
                run,
            })
            .collect();
        Ok(RunStream {
            runs,
            files: pending.iter().map(|l| l.run.files.len()).sum(),
            bytes: pending.iter().map(|l| l.bytes).sum(),
            pending,
            tags: selection.tags.clone(),
            budget,
            reading,
        })
    }

    /// Every run found, with or without histograms, sorted by name.
    pub fn runs(&self) -> &[String] {
        &self.runs
    }

    /// How many events files the selected runs have.
    pub fn files(&self) -> usize {
        self.files
    }

    /// The bytes of the selected runs' files when listed.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Reads the next runs that fit the budget together (the next run alone when
    /// it is larger), in name order; empty when every run has been read.
    pub fn next_batch(&mut self) -> Vec<StreamedRun> {
        // At most as many runs as files are read at once: one per core on disk, a
        // store's own number of reads in flight.
        let most = self
            .pending
            .front()
            .map_or(1, |l| l.run.storage.parallel_reads());
        let weights = self.pending.iter().map(|l| self.weight(l));
        let taken = batch_len(weights, self.budget, most);
        let batch: Vec<Listed> = self.pending.drain(..taken).collect();
        let runs: Vec<&RunFiles> = batch.iter().map(|l| &l.run).collect();
        read_runs(&runs, self.tags.as_ref(), self.reading)
            .into_iter()
            .zip(&batch)
            .map(|(run, listed)| StreamedRun {
                run,
                files: listed.run.files.len(),
                bytes: listed.bytes,
            })
            .collect()
    }
}

/// How many runs, weighing `weights` in their order, the next batch takes: as many
/// as fit `budget` together and at most `most`, or the first alone when it is
/// larger; every run when there is no budget.
fn batch_len(weights: impl Iterator<Item = u64>, budget: Option<u64>, most: usize) -> usize {
    let mut taken = 0;
    let mut held = 0u64;
    for weight in weights {
        let fits = budget.is_none_or(|b| held + weight <= b && taken < most);
        if taken > 0 && !fits {
            break;
        }
        held += weight;
        taken += 1;
    }
    taken
}

impl RunStream {
    /// What a run weighs against the budget while read: its bytes, or a share of
    /// them for a run of one file read as profiles (one of several files is
    /// merged with its buckets before it is profiled).
    fn weight(&self, listed: &Listed) -> u64 {
        match (self.reading, listed.run.files.len()) {
            (Reading::Profiles, 1) => listed.bytes / PROFILED_SHARE,
            _ => listed.bytes,
        }
    }
}

impl Iterator for RunStream {
    type Item = Vec<StreamedRun>;

    /// The next batch, or None when every run has been read.
    fn next(&mut self) -> Option<Vec<StreamedRun>> {
        Some(self.next_batch()).filter(|batch| !batch.is_empty())
    }
}

/// A stream's batches read and reduced on a thread of their own, one batch ahead of
/// whoever takes them: reading the next batch overlaps the work on the one before,
/// at the cost of holding two.
pub struct Prefetched<T> {
    batches: Receiver<T>,
    reader: Option<JoinHandle<()>>,
}

impl<T: Send + 'static> Prefetched<T> {
    /// Starts reading `stream`, each batch handed to `reduce` on the reading thread.
    pub fn start(
        mut stream: RunStream,
        reduce: impl Fn(Vec<StreamedRun>) -> T + Send + 'static,
    ) -> Self {
        // A rendezvous: the reader holds one reduced batch until it is taken.
        let (sender, batches) = mpsc::sync_channel(0);
        let reader = thread::spawn(move || {
            for batch in stream.by_ref() {
                if sender.send(reduce(batch)).is_err() {
                    break; // Nobody takes batches any more.
                }
            }
        });
        Prefetched {
            batches,
            reader: Some(reader),
        }
    }

    /// The next batch, reduced; None once every run has been read. A panic of the
    /// reading thread is raised here.
    pub fn next_batch(&mut self) -> Option<T> {
        match self.batches.recv() {
            Ok(batch) => Some(batch),
            Err(_) => {
                if let Some(Err(panic)) = self.reader.take().map(JoinHandle::join) {
                    panic::resume_unwind(panic);
                }
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use std::fs;

    use super::*;
    use crate::logdir::discover::discover_runs;

    fn fixtures() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
    }

    fn names(batch: &[StreamedRun]) -> Vec<&str> {
        batch.iter().map(|r| r.run.name.as_str()).collect()
    }

    #[test]
    fn a_budget_reads_runs_in_batches_that_fit_it_or_one_at_a_time() {
        for logdir in ["nested", "restart", "corrupt", "torch_writer"] {
            runs_one_at_a_time_are_the_whole(logdir);
        }
    }

    fn runs_one_at_a_time_are_the_whole(logdir: &str) {
        let source = LogdirSource::local(fixtures().join(logdir));
        let whole = source.load(&Selection::default()).unwrap();
        let all: Vec<Vec<StreamedRun>> =
            RunStream::open(&source, &Selection::default(), None, Reading::Series)
                .unwrap()
                .collect();
        assert_eq!(all.len(), 1);
        assert_eq!(names(&all[0]), whole.evidence.keys().collect::<Vec<_>>());
        let stream =
            RunStream::open(&source, &Selection::default(), Some(1), Reading::Series).unwrap();
        assert_eq!(stream.runs(), whole.runs);
        let (files, bytes) = (stream.files(), stream.bytes());
        let batches: Vec<Vec<StreamedRun>> = stream.collect();
        assert!(batches.iter().all(|b| b.len() == 1));
        let runs: Vec<&StreamedRun> = batches.iter().flatten().collect();
        assert_eq!(runs.iter().map(|r| r.files).sum::<usize>(), files);
        assert_eq!(runs.iter().map(|r| r.bytes).sum::<u64>(), bytes);
        let series: Vec<_> = runs.iter().flat_map(|r| &r.run.merged.series).collect();
        // Debug text, since missing statistics are NaN, which equals nothing.
        assert_eq!(
            format!("{series:?}"),
            format!("{:?}", whole.series.iter().collect::<Vec<_>>())
        );
        let reports: Vec<_> = runs.iter().flat_map(|r| &r.run.merged.reports).collect();
        assert_eq!(reports, whole.reports.iter().collect::<Vec<_>>());
    }

    proptest::proptest! {
        #[test]
        fn batches_take_every_run_in_order_within_the_budget(
            weights in proptest::collection::vec(0u64..100, 0..12),
            budget in proptest::option::of(1u64..250),
            most in 1usize..6,
        ) {
            let mut left = &weights[..];
            while !left.is_empty() {
                let taken = batch_len(left.iter().copied(), budget, most);
                let held: u64 = left[..taken].iter().sum();
                // at least one run; every run without a budget; within it and at
                // most `most`, or one larger run alone
                proptest::prop_assert!(taken >= 1);
                match budget {
                    None => proptest::prop_assert_eq!(taken, left.len()),
                    Some(b) => {
                        proptest::prop_assert!((held <= b && taken <= most) || taken == 1);
                        // and no smaller than it need be: the next run would not have fitted
                        if taken < left.len() && taken < most {
                            proptest::prop_assert!(held + left[taken] > b);
                        }
                    }
                }
                left = &left[taken..];
            }
            proptest::prop_assert_eq!(batch_len(std::iter::empty(), budget, most), 0);
        }
    }

    #[test]
    fn prefetched_batches_come_in_order_and_all_of_them() {
        let source = LogdirSource::local(fixtures().join("nested"));
        let open = || RunStream::open(&source, &Selection::default(), Some(1), Reading::Series);
        let expected: Vec<Vec<String>> = open()
            .unwrap()
            .map(|b| b.into_iter().map(|r| r.run.name).collect())
            .collect();
        assert!(expected.len() > 1);
        let mut prefetched = Prefetched::start(open().unwrap(), |batch| {
            batch.into_iter().map(|r| r.run.name).collect::<Vec<_>>()
        });
        let got: Vec<Vec<String>> = std::iter::from_fn(|| prefetched.next_batch()).collect();
        assert_eq!(got, expected);
        assert_eq!(prefetched.next_batch(), None);
    }

    #[test]
    #[should_panic(expected = "reducing failed")]
    fn a_panic_while_reading_ahead_reaches_the_taker() {
        let source = LogdirSource::local(fixtures().join("nested"));
        let stream = RunStream::open(&source, &Selection::default(), None, Reading::Series);
        let mut prefetched =
            Prefetched::start(stream.unwrap(), |_| -> () { panic!("reducing failed") });
        prefetched.next_batch();
    }

    #[test]
    fn a_file_gone_since_the_listing_is_reported_and_the_rest_is_read() {
        let root = std::env::temp_dir().join(format!("histoscope-gone-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        for run in ["a", "b"] {
            fs::create_dir_all(root.join(run)).unwrap();
            let fixture = fixtures().join("many_steps");
            let file = &discover_runs(&fixture).unwrap()[0].files[0];
            fs::copy(file, root.join(run).join("events.out.tfevents.1")).unwrap();
        }
        let source = LogdirSource::local(root.clone());
        let mut stream =
            RunStream::open(&source, &Selection::default(), Some(1), Reading::Series).unwrap();
        fs::remove_file(root.join("a/events.out.tfevents.1")).unwrap();
        let first = stream.next_batch();
        let report = &first[0].run.merged.reports[0];
        assert!(report.has_problems());
        assert!(report
            .summary()
            .contains("a/events.out.tfevents.1: stopped reading: the file is gone"));
        assert!(first[0].run.merged.series.is_empty());
        let second = stream.next_batch();
        assert_eq!(names(&second), ["b"]);
        assert!(!second[0].run.merged.reports[0].has_problems());
        assert!(stream.next_batch().is_empty());
        fs::remove_dir_all(&root).unwrap();
    }
}
