//! Two runs (or two steps of one run) compared key by key: each key's histograms at
//! the chosen steps, read again through the runs' loaders, and ranked by how far apart
//! they are.

use std::cmp::Ordering;

use crate::bins::distance::{distance, Distance};
use crate::logdir::run_loader::{BucketsError, RunLoader, TagIndex};

/// Which step of a key's series a side of the comparison takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepPick {
    /// Its last step.
    Last,
    /// Its last step at or before this one.
    AtOrBefore(i64),
}

/// How one key differs between the two sides.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyDistance {
    pub key: String,
    pub step_a: i64,
    pub step_b: i64,
    pub distance: Distance,
}

/// Every key both sides hold, ranked, and what kept the others out.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Comparison {
    /// Farthest first: by `Distance::scaled`, then by KS, then by key.
    pub ranked: Vec<KeyDistance>,
    /// Keys only the first side holds, then only the second, sorted.
    pub only_a: Vec<String>,
    pub only_b: Vec<String>,
    /// Keys with no step at or before the one asked for on a side, or with no
    /// finite value there, sorted.
    pub unmatched: Vec<String>,
}

/// Compares every key of `a` at `pick_a` with the same key of `b` at `pick_b`
/// (`a` and `b` may be one loader, for two steps of one run); fails, naming the file,
/// when a file was removed, cut or rewritten since it was indexed.
pub fn compare(
    a: &RunLoader,
    b: &RunLoader,
    pick_a: StepPick,
    pick_b: StepPick,
) -> Result<Comparison, BucketsError> {
    let mut out = Comparison {
        only_a: a
            .tags()
            .filter(|t| b.tag(t).is_none())
            .map(str::to_owned)
            .collect(),
        only_b: b
            .tags()
            .filter(|t| a.tag(t).is_none())
            .map(str::to_owned)
            .collect(),
        ..Default::default()
    };
    for key in a.tags().filter(|t| b.tag(t).is_some()) {
        match key_distance(a, b, key, pick_a, pick_b)? {
            Some(found) => out.ranked.push(found),
            None => out.unmatched.push(key.to_owned()),
        }
    }
    out.ranked.sort_by(farthest_first);
    Ok(out)
}

/// One key's scaled distance (`Distance::scaled`) between two runs at each column step:
/// each side at its last step at or before the column; NaN where a side has none yet or
/// either holds no finite value there.
#[derive(Debug, Clone, PartialEq)]
pub struct DistanceTrack {
    pub key: String,
    pub scaled: Vec<f64>,
}

/// Every key both runs hold, in key order, tracked over `columns` (increasing steps), for
/// the overview's cells; each side's buckets are read once per key, for the steps used.
pub fn distance_tracks(
    a: &RunLoader,
    b: &RunLoader,
    columns: &[i64],
) -> Result<Vec<DistanceTrack>, BucketsError> {
    let mut keys: Vec<&str> = a.tags().filter(|t| b.tag(t).is_some()).collect();
    keys.sort_unstable();
    keys.into_iter()
        .map(|key| {
            Ok(DistanceTrack {
                key: key.to_owned(),
                scaled: key_track(a, b, key, columns)?,
            })
        })
        .collect()
}

fn key_track(
    a: &RunLoader,
    b: &RunLoader,
    key: &str,
    columns: &[i64],
) -> Result<Vec<f64>, BucketsError> {
    let (index_a, index_b) = (a.tag(key).expect("listed"), b.tag(key).expect("listed"));
    let at = |index: &TagIndex| -> Vec<Option<usize>> {
        columns
            .iter()
            .map(|&c| position(index, StepPick::AtOrBefore(c)))
            .collect()
    };
    let (at_a, at_b) = (at(index_a), at(index_b));
    let read = |loader: &RunLoader, index: &TagIndex, at: &[Option<usize>]| {
        let mut used: Vec<usize> = at.iter().flatten().copied().collect();
        used.dedup();
        let steps: Vec<i64> = used.iter().map(|&p| index.rows.steps[p]).collect();
        let rows = loader.buckets(key, &steps)?;
        Ok::<_, BucketsError>((used, rows))
    };
    let ((used_a, rows_a), (used_b, rows_b)) = (read(a, index_a, &at_a)?, read(b, index_b, &at_b)?);
    let rows_at = |used: &[usize], rows: &[Option<Vec<f64>>], p: usize| -> Vec<f64> {
        let found = used.binary_search(&p).ok().and_then(|i| rows[i].clone());
        found.unwrap_or_default()
    };
    let scaled = at_a.iter().zip(&at_b).map(|pair| match pair {
        (Some(pa), Some(pb)) => {
            let stats = (&index_a.rows.stats[*pa], &index_b.rows.stats[*pb]);
            let (x, y) = (
                rows_at(&used_a, &rows_a, *pa),
                rows_at(&used_b, &rows_b, *pb),
            );
            distance(&x, &y, Some(stats)).map_or(f64::NAN, |d| d.scaled)
        }
        _ => f64::NAN,
    });
    Ok(scaled.collect())
}

fn key_distance(
    a: &RunLoader,
    b: &RunLoader,
    key: &str,
    pick_a: StepPick,
    pick_b: StepPick,
) -> Result<Option<KeyDistance>, BucketsError> {
    let (index_a, index_b) = (a.tag(key).expect("listed"), b.tag(key).expect("listed"));
    let (Some(at_a), Some(at_b)) = (position(index_a, pick_a), position(index_b, pick_b)) else {
        return Ok(None);
    };
    let (step_a, step_b) = (index_a.rows.steps[at_a], index_b.rows.steps[at_b]);
    let rows = |loader: &RunLoader, step| -> Result<Vec<f64>, BucketsError> {
        Ok(loader
            .buckets(key, &[step])?
            .pop()
            .flatten()
            .unwrap_or_default())
    };
    let stats = (&index_a.rows.stats[at_a], &index_b.rows.stats[at_b]);
    let found = distance(&rows(a, step_a)?, &rows(b, step_b)?, Some(stats));
    Ok(found.map(|distance| KeyDistance {
        key: key.to_owned(),
        step_a,
        step_b,
        distance,
    }))
}

/// The position of the step `pick` takes in `index`, if it has one.
fn position(index: &TagIndex, pick: StepPick) -> Option<usize> {
    let steps = &index.rows.steps;
    let end = match pick {
        StepPick::Last => steps.len(),
        StepPick::AtOrBefore(step) => steps.partition_point(|&s| s <= step),
    };
    end.checked_sub(1)
}

fn farthest_first(x: &KeyDistance, y: &KeyDistance) -> Ordering {
    let (dx, dy) = (&x.distance, &y.distance);
    dy.scaled
        .total_cmp(&dx.scaled)
        .then(dy.ks.total_cmp(&dx.ks))
        .then_with(|| x.key.cmp(&y.key))
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::path::PathBuf;
    use std::sync::Mutex;
    use std::time::Duration;

    use super::*;
    use crate::logdir::bucket_cache::shared_buckets;
    use crate::logdir::run_loader::{read, Progress};
    use crate::read::test_events::tensor_histogram;

    /// Each key's buckets at one step, as `(left, right, count)` rows.
    type Step<'a> = (i64, Vec<(&'a str, Vec<f64>)>);

    /// A run of one file, step by step.
    fn run(name: &str, steps: &[Step<'_>]) -> RunLoader {
        let dir =
            std::env::temp_dir().join(format!("histoscope-compare-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("events.out.tfevents.1");
        let bytes: Vec<u8> = steps
            .iter()
            .flat_map(|(step, keys)| {
                keys.iter()
                    .flat_map(|(k, rows)| tensor_histogram(k, *step, rows, true))
            })
            .collect();
        fs::write(&path, bytes).unwrap();
        let loader = Mutex::new(RunLoader::new(name, shared_buckets(1 << 20)));
        let files: Vec<PathBuf> = vec![path];
        assert_eq!(
            read(&loader, &files, 1 << 20, Duration::from_secs(60)),
            Progress::CaughtUp
        );
        loader.into_inner().unwrap()
    }

    #[test]
    fn keys_are_ranked_farthest_first_in_their_own_scale() {
        let base = vec![
            ("narrow", vec![0.0, 1.0, 10.0]),
            ("wide", vec![0.0, 100.0, 10.0]),
            ("same", vec![0.0, 1.0, 4.0]),
        ];
        let moved = vec![
            ("narrow", vec![1.0, 2.0, 10.0]),
            ("wide", vec![10.0, 110.0, 10.0]),
            ("same", vec![0.0, 1.0, 4.0]),
            ("new", vec![0.0, 1.0, 1.0]),
        ];
        let a = run("a", &[(0, base.clone()), (5, base)]);
        let b = run("b", &[(0, moved.clone()), (7, moved)]);
        let compared = compare(&a, &b, StepPick::Last, StepPick::Last).unwrap();
        let keys: Vec<&str> = compared.ranked.iter().map(|k| k.key.as_str()).collect();
        // narrow moved by its whole width, wide by a tenth of it: narrow first.
        assert_eq!(keys, vec!["narrow", "wide", "same"]);
        assert_eq!(
            (compared.ranked[0].step_a, compared.ranked[0].step_b),
            (5, 7)
        );
        assert!((compared.ranked[1].distance.wasserstein - 10.0).abs() < 1e-9);
        assert_eq!(compared.ranked[2].distance.wasserstein, 0.0);
        assert_eq!(compared.only_b, vec!["new"]);
        assert!(compared.only_a.is_empty() && compared.unmatched.is_empty());
    }

    #[test]
    fn two_steps_of_one_run_and_steps_before_any_are_apart() {
        let a = run(
            "steps",
            &[
                (3, vec![("h", vec![0.0, 1.0, 2.0])]),
                (9, vec![("h", vec![2.0, 3.0, 2.0])]),
            ],
        );
        let compared = compare(&a, &a, StepPick::AtOrBefore(4), StepPick::Last).unwrap();
        assert_eq!(
            (compared.ranked[0].step_a, compared.ranked[0].step_b),
            (3, 9)
        );
        assert!((compared.ranked[0].distance.wasserstein - 2.0).abs() < 1e-9);
        let none = compare(&a, &a, StepPick::AtOrBefore(2), StepPick::Last).unwrap();
        assert_eq!(none.unmatched, vec!["h"]);
    }

    #[test]
    fn tracks_follow_each_column_and_equal_the_single_step_comparison() {
        let same = vec![("h", vec![0.0, 1.0, 4.0])];
        let moved = vec![("h", vec![1.0, 2.0, 4.0])];
        let a = run("track-a", &[(0, same.clone()), (10, same.clone())]);
        let b = run("track-b", &[(2, same), (10, moved)]);
        let tracks = distance_tracks(&a, &b, &[0, 5, 10, 20]).unwrap();
        assert_eq!(tracks.len(), 1);
        let scaled = &tracks[0].scaled;
        // b has no step at or before 0; at 5 both are the same; from 10 b moved.
        assert!(scaled[0].is_nan());
        assert_eq!(scaled[1], 0.0);
        let last = compare(&a, &b, StepPick::Last, StepPick::Last).unwrap();
        assert_eq!(scaled[2], last.ranked[0].distance.scaled);
        assert_eq!(scaled[3], scaled[2]);
        assert!(scaled[2] > 0.0);
    }
}
