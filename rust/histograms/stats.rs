//! The summary statistics stored beside a histogram's buckets, and how each format gives them.

use crate::read::proto::HistoscopeStats;
use crate::read::proto_view::HistogramView;

/// The summary statistics some writers store beside the buckets; NaN where absent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats {
    pub count: f64,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    pub std: f64,
    pub nonfinite: f64,
    pub below: f64,
    pub above: f64,
}

impl Stats {
    /// The names of the fields, in order, as the Python API exposes them.
    pub const NAMES: [&'static str; 8] = [
        "count",
        "min",
        "max",
        "mean",
        "std",
        "nonfinite",
        "below",
        "above",
    ];

    pub const MISSING: Stats = Stats {
        count: f64::NAN,
        min: f64::NAN,
        max: f64::NAN,
        mean: f64::NAN,
        std: f64::NAN,
        nonfinite: f64::NAN,
        below: f64::NAN,
        above: f64::NAN,
    };

    /// The inverse of [`Stats::to_array`].
    pub fn from_array(values: [f64; 8]) -> Stats {
        let [count, min, max, mean, std, nonfinite, below, above] = values;
        Stats {
            count,
            min,
            max,
            mean,
            std,
            nonfinite,
            below,
            above,
        }
    }

    pub fn to_array(self) -> [f64; 8] {
        [
            self.count,
            self.min,
            self.max,
            self.mean,
            self.std,
            self.nonfinite,
            self.below,
            self.above,
        ]
    }

    /// The statistics histoscope stores beside its histograms.
    pub fn of_histoscope(s: &HistoscopeStats) -> Stats {
        Stats {
            count: s.count,
            min: s.min,
            max: s.max,
            mean: s.mean,
            std: s.std,
            nonfinite: s.nonfinite,
            below: s.below,
            above: s.above,
        }
    }

    /// The extension histoscope writes beside a histogram whose first edge is `first_edge`.
    pub fn to_histoscope(self, first_edge: f64) -> HistoscopeStats {
        let Stats {
            count,
            min,
            max,
            mean,
            std,
            nonfinite,
            below,
            above,
        } = self;
        HistoscopeStats {
            first_edge,
            count,
            min,
            max,
            mean,
            std,
            nonfinite,
            below,
            above,
        }
    }

    /// What a `HistogramProto` holds: count, min, max, and the sums that give mean and std.
    pub fn of_legacy(h: &HistogramView<'_>) -> Stats {
        let (mean, std) = if h.num > 0.0 {
            let mean = h.sum / h.num;
            (mean, (h.sum_squares / h.num - mean * mean).max(0.0).sqrt())
        } else {
            (f64::NAN, f64::NAN)
        };
        let (min, max) = if h.num > 0.0 {
            (h.min, h.max)
        } else {
            (f64::NAN, f64::NAN)
        };
        Stats {
            count: h.num,
            min,
            max,
            mean,
            std,
            ..Stats::MISSING
        }
    }

    /// What the buckets of a `histograms` tensor (TF2) tell: the count is the
    /// sum of the counts, min the left edge of the first non-empty bucket and
    /// max the right edge of the last; the rest is not stored, so NaN.
    pub fn of_buckets(buckets: &[f64]) -> Stats {
        let rows = buckets.chunks_exact(3);
        let count = rows.clone().map(|b| b[2]).sum();
        let mut filled = rows.filter(|b| b[2] > 0.0);
        let first = filled.next();
        let last = filled.next_back().or(first);
        Stats {
            count,
            min: first.map_or(f64::NAN, |b| b[0]),
            max: last.map_or(f64::NAN, |b| b[1]),
            ..Stats::MISSING
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tensor_stats_come_from_the_buckets() {
        let buckets = [
            -3.0, -2.0, 0.0, //
            -2.0, -1.0, 4.0, //
            -1.0, 0.0, 0.0, //
            0.0, 1.0, 2.0, //
            1.0, 2.0, 0.0,
        ];
        let s = Stats::of_buckets(&buckets);
        assert_eq!((s.count, s.min, s.max), (6.0, -2.0, 1.0));
        assert!(s.mean.is_nan() && s.std.is_nan() && s.nonfinite.is_nan());
        let one = Stats::of_buckets(&[0.5, 0.75, 3.0]);
        assert_eq!((one.count, one.min, one.max), (3.0, 0.5, 0.75));
        let empty = Stats::of_buckets(&[0.0, 1.0, 0.0]);
        assert_eq!(empty.count, 0.0);
        assert!(empty.min.is_nan() && empty.max.is_nan());
        assert_eq!(Stats::of_buckets(&[]).count, 0.0);
    }
}
