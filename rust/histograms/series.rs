//! One tag of one run as read: steps, wall times, flat buckets and statistics, and the checks
//! that arrays handed in make one.

use thiserror::Error;

use crate::histograms::huge_pages;
use crate::histograms::stats::Stats;
use crate::read::event_file::Point;

/// Every step of one tag of one run, steps strictly increasing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Series {
    pub run: String,
    pub tag: String,
    pub steps: Vec<i64>,
    pub wall_times: Vec<f64>,
    /// Buckets of every step, flattened as (left, right, count) rows.
    pub buckets: Vec<f64>,
    /// Step `i` holds rows `offsets[i]..offsets[i + 1]`.
    pub offsets: Vec<usize>,
    pub stats: Vec<Stats>,
}

impl Series {
    pub fn new(run: &str, tag: &str) -> Self {
        Series {
            run: run.to_owned(),
            tag: tag.to_owned(),
            offsets: vec![0],
            ..Default::default()
        }
    }

    /// The buckets of step `i`, three values per bucket.
    pub fn step_buckets(&self, i: usize) -> &[f64] {
        &self.buckets[3 * self.offsets[i]..3 * self.offsets[i + 1]]
    }

    pub fn len(&self) -> usize {
        self.steps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// Appends a point, first dropping every point at its step or later: a step
    /// that goes back means training restarted from a checkpoint, and the newer
    /// writer's values win, as in TensorBoard's data server.
    pub fn push(&mut self, point: Point) {
        self.push_rows(point.step, point.wall_time, &point.buckets, point.stats);
    }

    /// Returns how many points the restart rule dropped first.
    pub fn push_rows(&mut self, step: i64, wall_time: f64, buckets: &[f64], stats: Stats) -> usize {
        let dropped = self.purge_from(step);
        self.steps.push(step);
        self.wall_times.push(wall_time);
        let capacity = self.buckets.capacity();
        self.buckets.extend_from_slice(buckets);
        if self.buckets.capacity() != capacity {
            huge_pages::advise(&self.buckets);
        }
        self.offsets.push(self.buckets.len() / 3);
        self.stats.push(stats);
        dropped
    }

    /// Before the buckets outgrow their buffer, sizes it for the whole file as
    /// projected from the part read (a tenth more, for uneven files): one
    /// allocation, advised onto huge pages before any of it is written.
    pub fn reserve_projected(&mut self, more: usize, read_fraction: f64) {
        let needed = self.buckets.len() + more;
        if needed <= self.buckets.capacity() || read_fraction < 0.01 {
            return;
        }
        let projected = (needed as f64 / read_fraction * 1.1) as usize;
        self.buckets
            .reserve_exact(projected.max(needed) - self.buckets.len());
        huge_pages::advise(&self.buckets);
    }

    /// Drops the points at `step` or later; returns how many.
    pub fn purge_from(&mut self, step: i64) -> usize {
        if self.steps.last().is_none_or(|&last| last < step) {
            return 0; // in order, as all but a restart's first step are
        }
        let keep = self.steps.partition_point(|&s| s < step);
        let dropped = self.steps.len() - keep;
        if dropped > 0 {
            self.steps.truncate(keep);
            self.wall_times.truncate(keep);
            self.stats.truncate(keep);
            self.offsets.truncate(keep + 1);
            self.buckets.truncate(3 * self.offsets[keep]);
        }
        dropped
    }
}

/// Why arrays handed in as a series do not make one.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum SeriesLayoutError {
    #[error("wall_times has {wall_times} values for {steps} steps")]
    WallTimes { steps: usize, wall_times: usize },
    #[error("offsets must have one more value than steps ({want}), got {got}")]
    OffsetsLength { want: usize, got: usize },
    #[error("offsets must start at 0, never decrease and end at the {rows} bucket rows")]
    Offsets { rows: usize },
    #[error("steps must increase strictly")]
    Steps,
    #[error("stats must have shape ({steps}, {columns}), got ({rows}, {got_columns})")]
    Stats {
        steps: usize,
        columns: usize,
        rows: usize,
        got_columns: usize,
    },
}

/// Checks that arrays make a [`Series`]: one wall time and stats row per step,
/// steps strictly increasing, offsets from 0 to `rows` never decreasing.
pub fn check_series_layout(
    steps: &[i64],
    wall_times: usize,
    rows: usize,
    offsets: &[i64],
    stats: (usize, usize),
) -> Result<(), SeriesLayoutError> {
    let n = steps.len();
    if wall_times != n {
        return Err(SeriesLayoutError::WallTimes {
            steps: n,
            wall_times,
        });
    }
    if offsets.len() != n + 1 {
        return Err(SeriesLayoutError::OffsetsLength {
            want: n + 1,
            got: offsets.len(),
        });
    }
    let ordered = offsets.windows(2).all(|w| w[0] <= w[1]);
    if offsets[0] != 0 || !ordered || offsets[n] != rows as i64 {
        return Err(SeriesLayoutError::Offsets { rows });
    }
    if !steps.windows(2).all(|w| w[0] < w[1]) {
        return Err(SeriesLayoutError::Steps);
    }
    if stats != (n, Stats::NAMES.len()) {
        return Err(SeriesLayoutError::Stats {
            steps: n,
            columns: Stats::NAMES.len(),
            rows: stats.0,
            got_columns: stats.1,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_layouts_are_checked() {
        let ok = check_series_layout(&[0, 2], 2, 3, &[0, 1, 3], (2, Stats::NAMES.len()));
        assert_eq!(ok, Ok(()));
        let stats = (2, Stats::NAMES.len());
        assert_eq!(
            check_series_layout(&[0, 2], 2, 3, &[0, 3, 1], stats),
            Err(SeriesLayoutError::Offsets { rows: 3 })
        );
        assert_eq!(
            check_series_layout(&[2, 2], 2, 3, &[0, 1, 3], stats),
            Err(SeriesLayoutError::Steps)
        );
        assert!(matches!(
            check_series_layout(&[0, 2], 1, 3, &[0, 1, 3], stats),
            Err(SeriesLayoutError::WallTimes { .. })
        ));
        assert!(matches!(
            check_series_layout(&[0, 2], 2, 3, &[0, 3], stats),
            Err(SeriesLayoutError::OffsetsLength { .. })
        ));
        assert!(matches!(
            check_series_layout(&[0, 2], 2, 3, &[0, 1, 3], (2, 1)),
            Err(SeriesLayoutError::Stats { .. })
        ));
    }
}
