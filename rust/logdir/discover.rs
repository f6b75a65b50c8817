//! Finding a log directory's runs: the folders holding events files, from a local walk or a remote listing.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::logdir::storage::{Dir, Storage};

/// Why a log directory could not be read at all.
#[derive(Debug, Error)]
pub enum LogdirError {
    #[error("log directory not found: {0}")]
    NotFound(PathBuf),
    #[error("not a directory: {0}")]
    NotADirectory(PathBuf),
    #[error("cannot list {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
}

/// A run: a directory holding events files, named by its path relative to the log directory.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RunFiles {
    pub name: String,
    pub files: Vec<PathBuf>,
    /// Each file's size when listed, where the listing gave it.
    pub sizes: Vec<Option<u64>>,
    /// What holds the files.
    pub storage: Storage,
}

impl RunFiles {
    /// The bytes of its files as listed; a size the listing left out counts as 0.
    pub fn listed_bytes(&self) -> u64 {
        self.sizes.iter().map(|s| s.unwrap_or(0)).sum()
    }
}

impl Dir {
    /// Its runs, each with its events files in reading order, by the same grouping
    /// rule wherever the files are ([`group_runs`]).
    pub fn discover(&self) -> Result<Vec<RunFiles>, LogdirError> {
        match &self.storage {
            Storage::Disk => discover_runs(&self.root),
            Storage::Store(store) => {
                let listing = store.list(&self.root).map_err(|source| LogdirError::Io {
                    path: self.root.clone(),
                    source,
                })?;
                let mut runs = group_listing(&self.root, listing);
                for run in &mut runs {
                    run.storage = self.storage.clone();
                }
                Ok(runs)
            }
        }
    }
}

/// Finds the runs under `logdir`, the root included, each with its events files in name order.
///
/// A path to one file is read as a log directory holding that file alone: one run, `.`.
pub fn discover_runs(logdir: &Path) -> Result<Vec<RunFiles>, LogdirError> {
    let meta = fs::metadata(logdir).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => LogdirError::NotFound(logdir.to_path_buf()),
        _ => LogdirError::Io {
            path: logdir.to_path_buf(),
            source: e,
        },
    })?;
    if meta.is_file() {
        return Ok(vec![RunFiles {
            name: ".".to_owned(),
            files: vec![logdir.to_path_buf()],
            sizes: vec![Some(meta.len())],
            storage: Storage::Disk,
        }]);
    }
    if !meta.is_dir() {
        return Err(LogdirError::NotADirectory(logdir.to_path_buf()));
    }
    let mut listing = Vec::new();
    walk(logdir, &mut listing)?;
    Ok(group_runs(logdir, listing))
}

/// Whether a file's name marks it as an events file, as TensorBoard decides.
pub fn is_events_file(name: &str) -> bool {
    name.contains("tfevents")
}

/// A file as listed: its path and its size, where the listing gave it.
pub type Listed = (PathBuf, Option<u64>);

/// Groups a listing of the events files under `root` into runs on the disk: a run
/// is the directory holding them, named by its path relative to `root` (`.` for
/// `root` itself); runs sorted by name, files by path. Local walks and remote
/// listings both go through here, so they name runs alike.
pub fn group_runs(root: &Path, files: Vec<Listed>) -> Vec<RunFiles> {
    let mut runs: BTreeMap<String, Vec<Listed>> = BTreeMap::new();
    for file in files {
        let dir = file.0.parent().unwrap_or(root);
        runs.entry(run_name(root, dir)).or_default().push(file);
    }
    runs.into_iter()
        .map(|(name, mut files)| {
            files.sort();
            let (files, sizes) = files.into_iter().unzip();
            RunFiles {
                name,
                files,
                sizes,
                storage: Storage::Disk,
            }
        })
        .collect()
}

/// [`group_runs`] of the events files among a listing of every file under `root`.
pub fn group_listing(root: &Path, files: Vec<Listed>) -> Vec<RunFiles> {
    let events = files
        .into_iter()
        .filter(|(f, _)| {
            f.file_name()
                .is_some_and(|name| is_events_file(&name.to_string_lossy()))
        })
        .collect();
    group_runs(root, events)
}

fn run_name(root: &Path, dir: &Path) -> String {
    let relative = dir.strip_prefix(root).unwrap_or(dir);
    let parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.is_empty() {
        ".".to_owned()
    } else {
        parts.join("/")
    }
}

fn walk(dir: &Path, listing: &mut Vec<Listed>) -> Result<(), LogdirError> {
    let io_error = |source| LogdirError::Io {
        path: dir.to_path_buf(),
        source,
    };
    for entry in fs::read_dir(dir).map_err(io_error)? {
        let entry = entry.map_err(io_error)?;
        // Like os.walk in TensorBoard, symlinked directories are not followed (no cycles).
        let kind = entry.file_type().map_err(io_error)?;
        let path = entry.path();
        if kind.is_dir() {
            walk(&path, listing)?;
        } else if is_events_file(&entry.file_name().to_string_lossy()) {
            // Followed as `is_file` would: a symlink to a file is read as the file.
            if let Some(meta) = fs::metadata(&path).ok().filter(|m| m.is_file()) {
                listing.push((path, Some(meta.len())));
            }
        }
    }
    Ok(())
}

/// `runs` of the log directory called `logdir`, named as runs of several log
/// directories; as they are when the directory has no name (it is read alone).
pub fn qualified_runs(runs: Vec<RunFiles>, logdir: Option<&str>) -> Vec<RunFiles> {
    let Some(logdir) = logdir else {
        return runs;
    };
    runs.into_iter()
        .map(|run| RunFiles {
            name: qualified_run_name(logdir, &run.name),
            ..run
        })
        .collect()
}

/// The name of run `run` of the log directory called `logdir` among several.
pub fn qualified_run_name(logdir: &str, run: &str) -> String {
    if run == "." {
        logdir.to_owned()
    } else {
        format!("{logdir}/{run}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_directories_with_events_files() {
        let root = std::env::temp_dir().join(format!("histoscope-discover-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        for dir in ["", "a", "a/b/c", "x/y", "empty"] {
            fs::create_dir_all(root.join(dir)).unwrap();
        }
        for f in [
            "events.out.tfevents.2",
            "a/events.out.tfevents.1",
            "a/b/c/x.tfevents.z",
            "x/y/tfevents",
        ] {
            fs::write(root.join(f), b"").unwrap();
        }
        fs::write(root.join("a/notes.txt"), b"").unwrap();
        let runs = discover_runs(&root).unwrap();
        let names: Vec<&str> = runs.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, vec![".", "a", "a/b/c", "x/y"]);
        assert!(matches!(
            discover_runs(&root.join("nope")),
            Err(LogdirError::NotFound(_))
        ));
        let file_path = root.join("a/events.out.tfevents.1");
        let alone = discover_runs(&file_path).unwrap();
        assert_eq!(
            alone,
            vec![RunFiles {
                name: ".".into(),
                files: vec![file_path],
                sizes: vec![Some(0)],
                storage: Storage::Disk,
            }]
        );
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_remote_listing_groups_as_a_walk_does() {
        let listing = [
            "bucket/logs/b/events.out.tfevents.2",
            "bucket/logs/events.out.tfevents.9",
            "bucket/logs/b/events.out.tfevents.1",
            "bucket/logs/b/notes.txt",
            "bucket/logs/a/c/x.tfevents.z",
        ];
        let runs = group_listing(
            Path::new("bucket/logs"),
            listing.iter().map(|f| (PathBuf::from(f), None)).collect(),
        );
        let names: Vec<(&str, usize)> = runs
            .iter()
            .map(|r| (r.name.as_str(), r.files.len()))
            .collect();
        assert_eq!(names, vec![(".", 1), ("a/c", 1), ("b", 2)]);
        assert!(runs[2].files[0].ends_with("events.out.tfevents.1"));
    }

    #[test]
    fn runs_of_a_named_logdir_are_qualified_by_its_name() {
        let runs = |names: &[&str]| -> Vec<RunFiles> {
            names
                .iter()
                .map(|&name| RunFiles {
                    name: name.into(),
                    ..Default::default()
                })
                .collect()
        };
        let named = qualified_runs(runs(&[".", "train"]), Some("exp"));
        assert_eq!(named, runs(&["exp", "exp/train"]));
        assert_eq!(qualified_runs(runs(&[".", "a"]), None), runs(&[".", "a"]));
    }
}
