//! Where a log directory's files are kept, behind one interface for every command: the
//! local disk, or an object store the caller reaches (fsspec's buckets, through `py/`).
//!
//! As TensorBoard's data server reads `disk_logdir.rs` and its GCS logdir alike, every
//! reader here (`load.rs`, `stream.rs`) finds runs with `Dir::discover` (`discover.rs`)
//! and decodes a file with `RunFiles::read_part` (`run_parts.rs`), whatever holds the
//! bytes.

use std::fmt;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use rayon::{ThreadPool, ThreadPoolBuilder};

/// How much of a store's file one request fetches (fsspec's block size): large enough
/// that a request's latency is paid rarely, small enough to stream a growing file.
pub const STORE_CHUNK_BYTES: usize = 8 << 20;

/// How many of a store's files are read at once: a bucket's latency, not the cores,
/// bounds it.
pub const STORE_PARALLEL_READS: usize = 8;

/// A store of files the core cannot open itself: a bucket, reached by the caller's code.
pub trait ObjectStore: Send + Sync + fmt::Debug {
    /// Every file under `root` (at any depth), with its size where the listing gives it.
    /// One listing: an object store has no folders to walk.
    fn list(&self, root: &Path) -> io::Result<Vec<(PathBuf, Option<u64>)>>;

    /// A reader of the file at `path`, from its first byte.
    fn open(&self, path: &Path) -> io::Result<Box<dyn Read + Send>>;

    /// The file as its user names it (its URL), for reports.
    fn url(&self, path: &Path) -> String;

    /// How many files are best read at once: a store's latency is hidden by more
    /// reads in flight than there are cores.
    fn parallel_reads(&self) -> usize {
        STORE_PARALLEL_READS
    }
}

/// What holds a log directory's files.
#[derive(Clone, Debug, Default)]
pub enum Storage {
    /// The local file system, read by the core directly.
    #[default]
    Disk,
    /// An object store, read through the caller's [`ObjectStore`].
    Store(Arc<dyn ObjectStore>),
}

impl PartialEq for Storage {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Storage::Disk, Storage::Disk) => true,
            (Storage::Store(a), Storage::Store(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Eq for Storage {}

impl Storage {
    /// How many files to read at once: one per core on disk, the store's own number else.
    pub fn parallel_reads(&self) -> usize {
        match self {
            Storage::Disk => rayon::current_num_threads(),
            Storage::Store(store) => store.parallel_reads(),
        }
    }
}

/// Runs `read` with `width` files read at once: on rayon's own pool when it is as
/// wide, else on a pool of that width made once per process (a store's reads wait
/// on the network, not on the cores), so a stream's batches do not each start one.
pub fn with_parallel_reads<R: Send>(width: usize, read: impl FnOnce() -> R + Send) -> R {
    static POOLS: Mutex<Vec<(usize, &'static ThreadPool)>> = Mutex::new(Vec::new());
    if width <= rayon::current_num_threads() {
        return read();
    }
    let pool = {
        let mut pools = POOLS.lock().unwrap_or_else(PoisonError::into_inner);
        match pools.iter().find(|(w, _)| *w == width) {
            Some(&(_, pool)) => Some(pool),
            None => ThreadPoolBuilder::new()
                .num_threads(width)
                .thread_name(|i| format!("histoscope-fetch-{i}"))
                .build()
                .ok()
                .map(|pool| {
                    let pool: &'static ThreadPool = Box::leak(Box::new(pool));
                    pools.push((width, pool));
                    pool
                }),
        }
    };
    match pool {
        Some(pool) => pool.install(read),
        None => read(),
    }
}

/// One log directory: a root (a path, or a path in a store) and what holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dir {
    pub root: PathBuf,
    pub storage: Storage,
}

impl Dir {
    /// A log directory (or one events file) on the local disk.
    pub fn local(root: impl Into<PathBuf>) -> Self {
        Dir {
            root: root.into(),
            storage: Storage::Disk,
        }
    }
}

#[cfg(test)]
pub mod tests {
    use std::collections::HashMap;
    use std::fs;
    use std::io::Cursor;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::logdir::discover::RunFiles;
    use crate::logdir::run::Reading;
    use crate::logdir::run_parts::assemble_run;
    use crate::logdir::run_parts::tests::VARIED;

    /// A store over a local folder that names its files `mem://…`, counting opens:
    /// the same bytes as on disk, reached only through [`ObjectStore`].
    #[derive(Debug, Default)]
    pub struct FolderStore {
        pub opened: AtomicUsize,
        pub missing: HashMap<PathBuf, ()>,
    }

    impl ObjectStore for FolderStore {
        fn list(&self, root: &Path) -> io::Result<Vec<(PathBuf, Option<u64>)>> {
            let mut found = Vec::new();
            let mut dirs = vec![root.to_path_buf()];
            while let Some(dir) = dirs.pop() {
                for entry in fs::read_dir(dir)? {
                    let path = entry?.path();
                    if path.is_dir() {
                        dirs.push(path);
                    } else {
                        let size = fs::metadata(&path)?.len();
                        found.push((path, Some(size)));
                    }
                }
            }
            Ok(found)
        }

        fn open(&self, path: &Path) -> io::Result<Box<dyn Read + Send>> {
            self.opened.fetch_add(1, Ordering::Relaxed);
            if self.missing.contains_key(path) {
                return Err(io::Error::from(io::ErrorKind::NotFound));
            }
            Ok(Box::new(Cursor::new(fs::read(path)?)))
        }

        fn url(&self, path: &Path) -> String {
            format!("mem://{}", path.display())
        }

        fn parallel_reads(&self) -> usize {
            3
        }
    }

    fn fixtures() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
    }

    #[test]
    fn a_store_finds_and_reads_the_runs_the_disk_does() {
        let store = Arc::new(FolderStore::default());
        for logdir in VARIED {
            let root = fixtures().join(logdir);
            let on_disk = Dir::local(&root).discover().unwrap();
            let stored = Dir {
                root: root.clone(),
                storage: Storage::Store(store.clone()),
            }
            .discover()
            .unwrap();
            let names = |runs: &[RunFiles]| -> Vec<(String, Vec<PathBuf>, u64)> {
                runs.iter()
                    .map(|r| (r.name.clone(), r.files.clone(), r.listed_bytes()))
                    .collect()
            };
            assert_eq!(names(&stored), names(&on_disk), "{logdir}");
            for (disk, store_run) in on_disk.iter().zip(&stored) {
                let read = |run: &RunFiles| {
                    let parts = (0..run.files.len())
                        .map(|i| run.read_part(i, None, Reading::Series))
                        .collect();
                    assemble_run(&run.name, parts, Reading::Series)
                };
                let (want, got) = (read(disk), read(store_run));
                assert_eq!(
                    format!("{:?}", got.merged.series),
                    format!("{:?}", want.merged.series)
                );
                assert_eq!(got.merged.superseded, want.merged.superseded);
                let problems = |run: &crate::logdir::run::LoadedRun| -> Vec<String> {
                    run.merged.reports.iter().map(|r| r.summary()).collect()
                };
                let urls: Vec<String> = problems(&want)
                    .iter()
                    .map(|s| {
                        s.replace(
                            &root.display().to_string(),
                            &format!("mem://{}", root.display()),
                        )
                    })
                    .collect();
                assert_eq!(problems(&got), urls, "{logdir}");
            }
        }
        assert!(store.opened.load(Ordering::Relaxed) > 0);
    }

    #[test]
    fn every_reader_of_a_source_reads_a_store_as_the_disk() {
        use crate::logdir::load::{LogdirSource, Selection};
        use crate::logdir::stream::RunStream;
        let root = fixtures().join("nested");
        let store = Arc::new(FolderStore::default());
        let stored = |root: PathBuf| Dir {
            root,
            storage: Storage::Store(store.clone()),
        };
        let in_store = LogdirSource::Several(vec![
            ("n".into(), stored(root.clone())),
            ("r".into(), stored(fixtures().join("restart"))),
        ]);
        let on_disk = LogdirSource::Several(vec![
            ("n".into(), Dir::local(&root)),
            ("r".into(), Dir::local(fixtures().join("restart"))),
        ]);
        let (got, want) = (
            in_store.load(&Selection::default()).unwrap(),
            on_disk.load(&Selection::default()).unwrap(),
        );
        assert_eq!(got.runs, want.runs);
        assert_eq!(format!("{:?}", got.series), format!("{:?}", want.series));
        assert_eq!(got.superseded, want.superseded);
        let streamed = |source: &LogdirSource| -> Vec<String> {
            RunStream::open(source, &Selection::default(), Some(1), Reading::Profiles)
                .unwrap()
                .flatten()
                .map(|r| format!("{} {} {:?}", r.run.name, r.bytes, r.run.profiled))
                .collect()
        };
        assert_eq!(streamed(&in_store), streamed(&on_disk));
    }

    #[test]
    fn a_file_gone_from_the_store_is_reported_and_the_rest_read() {
        let root = fixtures().join("restart");
        let listed = Dir::local(&root).discover().unwrap();
        let run = listed
            .iter()
            .find(|r| r.files.len() > 1)
            .expect("a run of several files");
        let gone = run.files[0].clone();
        let store = FolderStore {
            missing: [(gone.clone(), ())].into(),
            ..Default::default()
        };
        let run = RunFiles {
            storage: Storage::Store(Arc::new(store)),
            ..run.clone()
        };
        let parts = (0..run.files.len())
            .map(|i| run.read_part(i, None, Reading::Series))
            .collect();
        let loaded = assemble_run(&run.name, parts, Reading::Series);
        let first = &loaded.merged.reports[0];
        assert!(
            first.summary().contains("the file is gone"),
            "{}",
            first.summary()
        );
        assert!(first.summary().starts_with("mem://"));
        assert!(loaded.merged.reports[1..].iter().all(|r| r.error.is_none()));
    }
}
