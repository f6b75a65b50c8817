//! Two runs (or two steps of one run) compared key by key: each key's histograms at
//! the chosen steps, read again through the runs' loaders or taken from series already
//! loaded (a [`Side`] either way), and ranked by how far apart they are.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use crate::bins::distance::{distance, Distance};
use crate::histograms::stats::Stats;
use crate::logdir::run_loader::{BucketsError, RunLoader};

/// One side of a comparison: its keys, each key's steps with their statistics, and the
/// buckets of the steps asked for, as (left, right, count) rows.
pub trait Side {
    fn keys(&self) -> Vec<&str>;
    /// A key's steps, increasing, and their statistics; None for a key it lacks.
    fn steps(&self, key: &str) -> Option<(&[i64], &[Stats])>;
    /// The buckets of `key` at the steps at `positions` (increasing), each its rows.
    fn buckets(&self, key: &str, positions: &[usize]) -> Result<Vec<Vec<f64>>, BucketsError>;
}

impl Side for RunLoader {
    fn keys(&self) -> Vec<&str> {
        self.tags().collect()
    }

    fn steps(&self, key: &str) -> Option<(&[i64], &[Stats])> {
        self.tag(key)
            .map(|index| (&index.rows.steps[..], &index.rows.stats[..]))
    }

    fn buckets(&self, key: &str, positions: &[usize]) -> Result<Vec<Vec<f64>>, BucketsError> {
        let steps = self.steps(key).map_or(&[][..], |(steps, _)| steps);
        let wanted: Vec<i64> = positions.iter().map(|&p| steps[p]).collect();
        let read = RunLoader::buckets(self, key, &wanted)?;
        Ok(read.into_iter().map(Option::unwrap_or_default).collect())
    }
}

/// One key of a side already loaded: its steps, their statistics, and every step's
/// buckets in one block, step `i` holding rows `offsets[i]..offsets[i + 1]`.
#[derive(Debug, Clone, Copy)]
pub struct LoadedKey<'a> {
    pub steps: &'a [i64],
    pub stats: &'a [Stats],
    pub rows: &'a [f64],
    pub offsets: &'a [usize],
}

/// A side of series already loaded, by key.
pub type Loaded<'a> = BTreeMap<&'a str, LoadedKey<'a>>;

impl Side for Loaded<'_> {
    fn keys(&self) -> Vec<&str> {
        BTreeMap::keys(self).copied().collect()
    }

    fn steps(&self, key: &str) -> Option<(&[i64], &[Stats])> {
        self.get(key).map(|k| (k.steps, k.stats))
    }

    fn buckets(&self, key: &str, positions: &[usize]) -> Result<Vec<Vec<f64>>, BucketsError> {
        let Some(k) = self.get(key) else {
            return Ok(vec![Vec::new(); positions.len()]);
        };
        let rows = |p: usize| k.rows[3 * k.offsets[p]..3 * k.offsets[p + 1]].to_vec();
        Ok(positions.iter().map(|&p| rows(p)).collect())
    }
}

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
pub fn compare<A: Side + ?Sized, B: Side + ?Sized>(
    a: &A,
    b: &B,
    pick_a: StepPick,
    pick_b: StepPick,
) -> Result<Comparison, BucketsError> {
    let only = |x: &dyn Fn(&str) -> bool, keys: Vec<&str>| -> Vec<String> {
        let mut kept: Vec<String> = keys
            .into_iter()
            .filter(|k| x(k))
            .map(str::to_owned)
            .collect();
        kept.sort_unstable();
        kept
    };
    let mut out = Comparison {
        only_a: only(&|k| b.steps(k).is_none(), a.keys()),
        only_b: only(&|k| a.steps(k).is_none(), b.keys()),
        ..Default::default()
    };
    for key in a.keys().into_iter().filter(|k| b.steps(k).is_some()) {
        match key_distance(a, b, key, pick_a, pick_b)? {
            Some(found) => out.ranked.push(found),
            None => out.unmatched.push(key.to_owned()),
        }
    }
    out.unmatched.sort_unstable();
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
pub fn distance_tracks<A: Side + ?Sized, B: Side + ?Sized>(
    a: &A,
    b: &B,
    columns: &[i64],
) -> Result<Vec<DistanceTrack>, BucketsError> {
    let mut keys: Vec<&str> = a
        .keys()
        .into_iter()
        .filter(|k| b.steps(k).is_some())
        .collect();
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

fn key_track<A: Side + ?Sized, B: Side + ?Sized>(
    a: &A,
    b: &B,
    key: &str,
    columns: &[i64],
) -> Result<Vec<f64>, BucketsError> {
    let ((steps_a, stats_a), (steps_b, stats_b)) = (listed(a, key), listed(b, key));
    let at = |steps: &[i64]| -> Vec<Option<usize>> {
        columns
            .iter()
            .map(|&c| position(steps, StepPick::AtOrBefore(c)))
            .collect()
    };
    let (at_a, at_b) = (at(steps_a), at(steps_b));
    let (used_a, rows_a) = used_rows(a, key, &at_a)?;
    let (used_b, rows_b) = used_rows(b, key, &at_b)?;
    let rows_at = |used: &[usize], rows: &[Vec<f64>], p: usize| -> Vec<f64> {
        used.binary_search(&p)
            .map_or_else(|_| Vec::new(), |i| rows[i].clone())
    };
    let scaled = at_a.iter().zip(&at_b).map(|pair| match pair {
        (Some(pa), Some(pb)) => {
            let stats = (&stats_a[*pa], &stats_b[*pb]);
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

/// The positions `at` uses, once each and increasing, and their buckets.
fn used_rows<S: Side + ?Sized>(
    side: &S,
    key: &str,
    at: &[Option<usize>],
) -> Result<(Vec<usize>, Vec<Vec<f64>>), BucketsError> {
    let mut used: Vec<usize> = at.iter().flatten().copied().collect();
    used.dedup();
    let rows = side.buckets(key, &used)?;
    Ok((used, rows))
}

/// A key both sides were found to hold: its steps and statistics.
fn listed<'s, S: Side + ?Sized>(side: &'s S, key: &str) -> (&'s [i64], &'s [Stats]) {
    side.steps(key).expect("a key both sides hold")
}

fn key_distance<A: Side + ?Sized, B: Side + ?Sized>(
    a: &A,
    b: &B,
    key: &str,
    pick_a: StepPick,
    pick_b: StepPick,
) -> Result<Option<KeyDistance>, BucketsError> {
    let ((steps_a, stats_a), (steps_b, stats_b)) = (listed(a, key), listed(b, key));
    let (Some(at_a), Some(at_b)) = (position(steps_a, pick_a), position(steps_b, pick_b)) else {
        return Ok(None);
    };
    let first = |rows: Vec<Vec<f64>>| rows.into_iter().next().unwrap_or_default();
    let (x, y) = (
        first(a.buckets(key, &[at_a])?),
        first(b.buckets(key, &[at_b])?),
    );
    let found = distance(&x, &y, Some((&stats_a[at_a], &stats_b[at_b])));
    Ok(found.map(|distance| KeyDistance {
        key: key.to_owned(),
        step_a: steps_a[at_a],
        step_b: steps_b[at_b],
        distance,
    }))
}

/// The position of the step `pick` takes in `steps` (increasing), if it has one.
fn position(steps: &[i64], pick: StepPick) -> Option<usize> {
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

    /// The same steps as series already loaded: each key's steps, statistics, rows and
    /// offsets, owned.
    type Held = BTreeMap<String, (Vec<i64>, Vec<Stats>, Vec<f64>, Vec<usize>)>;

    fn held(steps: &[Step<'_>]) -> Held {
        let mut out = Held::new();
        for (step, keys) in steps {
            for (key, rows) in keys {
                let entry = out
                    .entry((*key).to_owned())
                    .or_insert_with(|| (vec![], vec![], vec![], vec![0]));
                entry.0.push(*step);
                entry.1.push(Stats::of_buckets(rows));
                entry.2.extend_from_slice(rows);
                entry.3.push(entry.2.len() / 3);
            }
        }
        out
    }

    fn side(held: &Held) -> Loaded<'_> {
        held.iter()
            .map(|(key, (steps, stats, rows, offsets))| {
                (
                    key.as_str(),
                    LoadedKey {
                        steps,
                        stats,
                        rows,
                        offsets,
                    },
                )
            })
            .collect()
    }

    #[test]
    fn series_already_loaded_compare_as_their_files_do() {
        let first = vec![("w", vec![0.0, 1.0, 10.0]), ("gone", vec![0.0, 1.0, 1.0])];
        let later = vec![("w", vec![0.5, 2.0, 10.0]), ("b", vec![-1.0, 1.0, 3.0])];
        let other = vec![("w", vec![0.0, 3.0, 5.0]), ("b", vec![0.0, 1.0, 3.0])];
        let (steps_a, steps_b) = (vec![(0, first), (4, later)], vec![(2, other)]);
        let (files_a, files_b) = (run("la", &steps_a), run("lb", &steps_b));
        let (held_a, held_b) = (held(&steps_a), held(&steps_b));
        let (loaded_a, loaded_b) = (side(&held_a), side(&held_b));
        for (pick_a, pick_b) in [
            (StepPick::Last, StepPick::Last),
            (StepPick::AtOrBefore(0), StepPick::Last),
            (StepPick::AtOrBefore(3), StepPick::AtOrBefore(1)),
        ] {
            assert_eq!(
                compare(&loaded_a, &loaded_b, pick_a, pick_b).unwrap(),
                compare(&files_a, &files_b, pick_a, pick_b).unwrap(),
                "{pick_a:?} {pick_b:?}"
            );
        }
        let columns = [0, 2, 4, 9];
        let tracks = distance_tracks(&loaded_a, &loaded_b, &columns).unwrap();
        let from_files = distance_tracks(&files_a, &files_b, &columns).unwrap();
        assert_eq!(format!("{tracks:?}"), format!("{from_files:?}")); // NaN for no step yet
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
