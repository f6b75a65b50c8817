//! A chart that grows while a training logs (the notebook's widget): each tag's runs on
//! shared equal bins that widen with headroom as values spread, each series thinned by
//! halves to a bounded number of steps with its latest step always held, and, in
//! `live_update`, what changed since the page was last told.

use std::collections::HashMap;

use crate::bins::rebin::{extent, rebin_over};
use crate::histograms::profile::profile;
use crate::histograms::stats::Stats;

/// What a step carries besides its counts: the statistics, then the share of zeros.
pub const STEP_FIGURES: usize = Stats::NAMES.len() + 1;

/// The steps a series holds by default: enough for a slider, few enough to resend.
pub const LIVE_STEPS: usize = 128;

/// The share of the bins' width added on a side the values outgrew, so that a
/// spread growing step by step widens the bins (and resends the tag) rarely.
const HEADROOM: f64 = 0.25;

/// Every tag's series, on its shared bins, as the page should hold them.
#[derive(Debug, Clone)]
pub struct LiveChart {
    pub(super) bins: usize,
    pub(super) keep: usize,
    pub(super) tags: Vec<LiveTag>,
    by_name: HashMap<String, usize>,
    /// The tag the next update starts at, so that every tag's turn comes.
    pub(super) cursor: usize,
}

/// One tag: its bins, and one series per run.
#[derive(Debug, Clone)]
pub(super) struct LiveTag {
    pub name: String,
    pub extent: Option<(f64, f64)>,
    pub runs: Vec<LiveSeries>,
    /// Whether the bins changed since the page was told: every series is sent again.
    pub rebinned: bool,
}

/// The steps of one run under one tag, a row of counts and one of figures per step.
#[derive(Debug, Clone)]
pub(super) struct LiveSeries {
    pub run: String,
    pub steps: Vec<i64>,
    pub counts: Vec<f64>,
    pub figures: Vec<f64>,
    /// Held steps are every `stride`-th to arrive, counted by `arrived`, and the last.
    stride: u64,
    arrived: u64,
    /// Whether the last held step is off the stride, to be replaced by the next.
    tail: bool,
    /// The steps the page holds, in its order, and the first step replaced since.
    pub sent: Vec<i64>,
    pub sent_valid_below: i64,
    /// The latest arrival, its buckets in `latest_buckets`, not yet counted on the
    /// shared bins: most arrivals are replaced by the next before the chart is read,
    /// and counting one (the costly part of an add) waits until it is kept or read.
    latest: Option<(i64, Stats)>,
    latest_buckets: Vec<f64>,
}

impl LiveSeries {
    fn new(run: &str) -> Self {
        LiveSeries {
            run: run.to_string(),
            steps: Vec::new(),
            counts: Vec::new(),
            figures: Vec::new(),
            stride: 1,
            arrived: 0,
            tail: false,
            sent: Vec::new(),
            sent_valid_below: i64::MAX,
            latest: None,
            latest_buckets: Vec::new(),
        }
    }

    fn last_step(&self) -> Option<i64> {
        self.latest
            .map(|(step, _)| step)
            .or(self.steps.last().copied())
    }

    /// Whether the next arrival falls on the stride (it stays until a halving).
    fn on_stride(&self) -> bool {
        self.arrived.is_multiple_of(self.stride)
    }

    /// Passes over an arrival off the stride that the next replaces: what `push` and
    /// the next `push` would leave of it, with nothing counted.
    fn pass_over(&mut self, bins: usize) {
        if self.tail {
            self.truncate(self.steps.len() - 1, bins);
            self.tail = false;
        }
        self.arrived += 1;
    }

    fn truncate(&mut self, rows: usize, bins: usize) {
        self.steps.truncate(rows);
        self.counts.truncate(rows * bins);
        self.figures.truncate(rows * STEP_FIGURES);
    }

    /// Drops the held steps at or after `step`, as a restart replaces them.
    fn purge_from(&mut self, step: i64, bins: usize) {
        let rows = self.steps.partition_point(|&s| s < step);
        self.truncate(rows, bins);
        self.tail = false;
        self.sent_valid_below = self.sent_valid_below.min(step);
        self.arrived = rows as u64 * self.stride;
    }

    fn push(&mut self, step: i64, counts: &[f64], figures: &[f64], bins: usize, keep: usize) {
        if self.tail {
            self.truncate(self.steps.len() - 1, bins);
        }
        self.steps.push(step);
        self.counts.extend_from_slice(counts);
        self.figures.extend_from_slice(figures);
        self.tail = !self.arrived.is_multiple_of(self.stride);
        self.arrived += 1;
        if self.steps.len() - usize::from(self.tail) > keep {
            self.halve(bins);
        }
    }

    /// Keeps every other step on the stride (the first among them) and the latest; the
    /// latest, if it falls off the wider stride, becomes the tail.
    fn halve(&mut self, bins: usize) {
        let on_stride = self.steps.len() - usize::from(self.tail);
        let last = self.steps.len() - 1;
        let kept: Vec<usize> = (0..self.steps.len())
            .filter(|&i| (i < on_stride && i % 2 == 0) || i == last)
            .collect();
        self.steps = kept.iter().map(|&i| self.steps[i]).collect();
        self.counts = rows_of(&self.counts, bins, &kept);
        self.figures = rows_of(&self.figures, STEP_FIGURES, &kept);
        self.stride *= 2;
        self.tail = self.tail || (on_stride - 1) % 2 == 1;
    }
}

fn rows_of(flat: &[f64], width: usize, rows: &[usize]) -> Vec<f64> {
    rows.iter()
        .flat_map(|&i| &flat[i * width..(i + 1) * width])
        .copied()
        .collect()
}

impl LiveChart {
    /// Tags on `bins` equal bins, each series holding at most about `keep` steps.
    pub fn new(bins: usize, keep: usize) -> Self {
        assert!(
            bins >= 1 && keep >= 2,
            "a live chart needs a bin and two steps"
        );
        LiveChart {
            bins,
            keep,
            tags: Vec::new(),
            by_name: HashMap::new(),
            cursor: 0,
        }
    }

    /// Adds a step of `run` under `tag`: its buckets (flattened (left, right, count)
    /// rows) and statistics. A step not after the series' last replaces the steps
    /// from it on, as a restart does.
    pub fn add(&mut self, tag: &str, run: &str, step: i64, buckets: &[f64], stats: &Stats) {
        self.arrive(tag, run, step, stats, |held| {
            held.extend_from_slice(buckets)
        });
    }

    /// An arrival, its buckets laid out by `lay` into the series' room for them.
    fn arrive(
        &mut self,
        tag: &str,
        run: &str,
        step: i64,
        stats: &Stats,
        lay: impl FnOnce(&mut Vec<f64>),
    ) {
        let (bins, keep) = (self.bins, self.keep);
        let at = self.tag_index(tag);
        let live = &mut self.tags[at];
        let s = live.series_index(run);
        if live.runs[s].last_step().is_some_and(|last| step <= last) {
            // A restart, seldom: the latest is counted, so what it replaces is as if
            // every arrival had been.
            live.count_latest(s, bins, keep);
            live.runs[s].purge_from(step, bins);
        }
        let series = &mut live.runs[s];
        if series.latest.is_some() {
            if series.on_stride() {
                live.count_latest(s, bins, keep);
            } else {
                series.latest = None;
                series.pass_over(bins);
            }
        }
        let series = &mut live.runs[s];
        series.latest_buckets.clear();
        lay(&mut series.latest_buckets);
        series.latest = Some((step, *stats));
    }

    /// Drops the steps of `run` under `tag` from `step` on, as a restart that left none
    /// of them does: one that left some is told by its first step arriving again.
    pub fn drop_from(&mut self, tag: &str, run: &str, step: i64) {
        let (bins, keep) = (self.bins, self.keep);
        let Some(&at) = self.by_name.get(tag) else {
            return;
        };
        let live = &mut self.tags[at];
        let Some(s) = live.runs.iter().position(|series| series.run == run) else {
            return;
        };
        live.count_latest(s, bins, keep);
        live.runs[s].purge_from(step, bins);
    }

    /// Counts every series' latest arrival on its bins: the chart as a reader sees it.
    pub(super) fn settle(&mut self) {
        let (bins, keep) = (self.bins, self.keep);
        for live in &mut self.tags {
            for s in 0..live.runs.len() {
                live.count_latest(s, bins, keep);
            }
        }
    }

    /// Whether an arrival is not counted yet.
    pub(super) fn unsettled(&self) -> bool {
        self.tags
            .iter()
            .any(|t| t.runs.iter().any(|s| s.latest.is_some()))
    }

    /// [`LiveChart::add`] for a histogram given as `edges` and `counts`.
    pub fn add_binned(
        &mut self,
        tag: &str,
        step: i64,
        run: &str,
        edges: &[f64],
        counts: &[f64],
        stats: &Stats,
    ) {
        self.arrive(tag, run, step, stats, |held| {
            held.extend(
                counts
                    .iter()
                    .enumerate()
                    .flat_map(|(i, &c)| [edges[i], edges[i + 1], c]),
            );
        });
    }

    /// The number of equal bins of every tag.
    pub fn bins(&self) -> usize {
        self.bins
    }

    /// The `bins + 1` edges of `tag`'s shared bins as they hold the counted steps (a
    /// read, `take_update` or `whole`, counts the latest arrivals first); None for a tag
    /// never added.
    pub fn edges(&self, tag: &str) -> Option<Vec<f64>> {
        let live = &self.tags[*self.by_name.get(tag)?];
        Some(rebin_over(&[], live.extent, self.bins).edges)
    }

    fn tag_index(&mut self, tag: &str) -> usize {
        if let Some(&at) = self.by_name.get(tag) {
            return at;
        }
        self.tags.push(LiveTag {
            name: tag.to_string(),
            extent: None,
            runs: Vec::new(),
            rebinned: true,
        });
        self.by_name.insert(tag.to_string(), self.tags.len() - 1);
        self.tags.len() - 1
    }
}

impl LiveTag {
    fn series_index(&mut self, run: &str) -> usize {
        if let Some(at) = self.runs.iter().position(|s| s.run == run) {
            return at;
        }
        self.runs.push(LiveSeries::new(run));
        self.runs.len() - 1
    }

    /// Counts series `s`'s latest arrival on the bins (widened to hold it) and pushes it.
    fn count_latest(&mut self, s: usize, bins: usize, keep: usize) {
        let Some((step, stats)) = self.runs[s].latest.take() else {
            return;
        };
        let buckets = std::mem::take(&mut self.runs[s].latest_buckets);
        self.widen(extent(&[&buckets]), bins);
        let row = rebin_over(&[&buckets], self.extent, bins).counts;
        let mut figures = stats.to_array().to_vec();
        figures.push(profile(&buckets, &stats).zero_share);
        let series = &mut self.runs[s];
        series.push(step, &row, &figures, bins, keep);
        series.latest_buckets = buckets; // its room, for the next arrival
    }

    /// Widens the bins to hold `seen`, with headroom on each side outgrown, and counts
    /// every held step again on the new bins.
    fn widen(&mut self, seen: Option<(f64, f64)>, bins: usize) {
        let Some((lo, hi)) = seen else { return };
        let Some((old_lo, old_hi)) = self.extent else {
            self.extent = Some((lo, hi));
            return;
        };
        if lo >= old_lo && hi <= old_hi {
            return;
        }
        let width = hi.max(old_hi) - lo.min(old_lo);
        let pad = |outgrown: bool| if outgrown { width * HEADROOM } else { 0.0 };
        let wider = (
            lo.min(old_lo) - pad(lo < old_lo),
            hi.max(old_hi) + pad(hi > old_hi),
        );
        let old_edges = rebin_over(&[], self.extent, bins).edges;
        // Bins over a single value are that value ± 0.5, wider than the new extent may
        // be: their rows are the value's count, at the value.
        let point = old_lo == old_hi;
        for series in &mut self.runs {
            let rows: Vec<Vec<f64>> = series
                .counts
                .chunks_exact(bins)
                .map(|row| match point {
                    true => vec![old_lo, old_lo, row.iter().sum()],
                    false => buckets_of(&old_edges, row),
                })
                .collect();
            let rows: Vec<&[f64]> = rows.iter().map(Vec::as_slice).collect();
            series.counts = rebin_over(&rows, Some(wider), bins).counts;
        }
        self.extent = Some(wider);
        self.rebinned = true;
    }
}

fn buckets_of(edges: &[f64], counts: &[f64]) -> Vec<f64> {
    counts
        .iter()
        .enumerate()
        .flat_map(|(i, &c)| [edges[i], edges[i + 1], c])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bins::binning::{histogram, Bins, Values};
    use proptest::prelude::*;

    fn add_values(chart: &mut LiveChart, tag: &str, step: i64, values: &[f64]) {
        let bins = Bins::Uniform {
            count: 16,
            range: None,
        };
        let h = histogram(Values::F64(values), None, bins).expect("binned");
        chart.add_binned(tag, step, "run", &h.edges, &h.counts, &h.stats);
    }

    fn series<'a>(chart: &'a mut LiveChart, tag: &str) -> &'a LiveSeries {
        chart.settle();
        &chart.tags[chart.by_name[tag]].runs[0]
    }

    #[test]
    fn a_series_dropped_from_a_step_keeps_only_the_steps_before_it() {
        let mut chart = LiveChart::new(10, 8);
        for step in 0..5 {
            add_values(&mut chart, "w", step, &[step as f64, 1.0]);
        }
        chart.drop_from("w", "run", 3);
        assert_eq!(series(&mut chart, "w").steps, [0, 1, 2]);
        chart.drop_from("w", "run", i64::MIN);
        assert!(series(&mut chart, "w").steps.is_empty());
        chart.drop_from("unknown", "run", 0); // nothing to drop
        add_values(&mut chart, "w", 7, &[1.0]);
        assert_eq!(series(&mut chart, "w").steps, [7]);
    }

    #[test]
    fn every_value_is_counted_on_the_shared_bins() {
        let mut chart = LiveChart::new(10, 8);
        add_values(&mut chart, "w", 0, &[0.0, 0.5, 1.0]);
        add_values(&mut chart, "w", 1, &[-2.0, 3.0]);
        let s = series(&mut chart, "w");
        let totals: Vec<f64> = s.counts.chunks(10).map(|r| r.iter().sum()).collect();
        assert_eq!(s.steps, [0, 1]);
        for (total, expected) in totals.iter().zip([3.0, 2.0]) {
            assert!((total - expected).abs() < 1e-9, "{total} vs {expected}");
        }
        let edges = chart.edges("w").unwrap();
        assert!(
            edges[0] < -2.0 && edges[10] > 3.0,
            "headroom on both sides: {edges:?}"
        );
    }

    #[test]
    fn a_tag_that_held_one_value_keeps_its_counts_when_its_bins_widen() {
        // A bias all zeros at first, as TensorFlow writes it (one bucket [0, 0]): its
        // bins are 0 ± 0.5. Then it spreads a little.
        let stats = |count: f64, max: f64| Stats {
            count,
            min: 0.0,
            max,
            mean: max / 2.0,
            std: max / 4.0,
            nonfinite: 0.0,
            below: 0.0,
            above: 0.0,
        };
        let mut chart = LiveChart::new(10, 8);
        chart.add("b", "run", 0, &[0.0, 0.0, 5.0], &stats(5.0, 0.0));
        chart.settle();
        chart.add(
            "b",
            "run",
            1,
            &[0.0, 0.001, 2.0, 0.001, 0.002, 1.0],
            &stats(3.0, 0.002),
        );
        let s = series(&mut chart, "b");
        let totals: Vec<f64> = s.counts.chunks(10).map(|r| r.iter().sum()).collect();
        assert_eq!(totals, [5.0, 3.0]);
        assert!(
            chart.edges("b").unwrap()[10] < 0.01,
            "the bins fit the values"
        );
    }

    #[test]
    fn values_inside_the_bins_leave_them_as_they_are() {
        let mut chart = LiveChart::new(10, 8);
        add_values(&mut chart, "w", 0, &[-1.0, 1.0]);
        chart.tags[0].rebinned = false;
        add_values(&mut chart, "w", 1, &[0.0, 0.5]);
        assert!(!chart.tags[0].rebinned);
        assert_eq!(chart.edges("w").unwrap()[0], -1.0);
    }

    #[test]
    fn a_step_not_after_the_last_replaces_the_steps_from_it() {
        let mut chart = LiveChart::new(4, 8);
        for step in [0, 1, 2, 3] {
            add_values(&mut chart, "w", step, &[1.0]);
        }
        add_values(&mut chart, "w", 2, &[1.0]);
        assert_eq!(series(&mut chart, "w").steps, [0, 1, 2]);
    }

    #[test]
    fn steps_are_halved_evenly_and_the_latest_is_always_held() {
        let mut chart = LiveChart::new(4, 8);
        for step in 0..40 {
            add_values(&mut chart, "w", step, &[step as f64]);
            let s = series(&mut chart, "w");
            assert_eq!(*s.steps.last().unwrap(), step);
            assert!(s.steps.len() <= 9, "{:?}", s.steps);
        }
        let s = series(&mut chart, "w");
        assert_eq!(s.steps, [0, 8, 16, 24, 32, 39]);
    }

    proptest! {
        /// Counting an arrival only when it is kept or read changes no held step, nor
        /// what a held step counts, whenever the chart is read.
        #[test]
        fn reading_seldom_holds_what_reading_at_every_add_holds(
            steps in proptest::collection::vec(0i64..60, 1..200), keep in 2usize..12,
            reads in proptest::collection::vec(any::<bool>(), 200)
        ) {
            let mut every = LiveChart::new(4, keep);
            let mut seldom = LiveChart::new(4, keep);
            for (i, &step) in steps.iter().enumerate() {
                let values = [step as f64, -(i as f64)];
                add_values(&mut every, "w", step, &values);
                every.settle();
                add_values(&mut seldom, "w", step, &values);
                if reads[i] {
                    seldom.settle();
                }
            }
            let (a, b) = (series(&mut every, "w").clone(), series(&mut seldom, "w").clone());
            prop_assert_eq!(&a.steps, &b.steps);
            let totals = |s: &LiveSeries| s.counts.chunks(4).map(|r| r.iter().sum::<f64>()).collect::<Vec<_>>();
            for (x, y) in totals(&a).iter().zip(totals(&b)) {
                prop_assert!((x - y).abs() < 1e-9, "{} vs {}", x, y);
            }
            prop_assert_eq!(&a.figures, &b.figures);
        }

        #[test]
        fn held_steps_rise_stay_bounded_and_end_at_the_latest(
            steps in proptest::collection::vec(0i64..60, 1..200), keep in 2usize..12
        ) {
            let mut chart = LiveChart::new(4, keep);
            for &step in &steps {
                add_values(&mut chart, "w", step, &[step as f64]);
                let s = series(&mut chart, "w");
                prop_assert_eq!(*s.steps.last().unwrap(), step);
                prop_assert!(s.steps.windows(2).all(|w| w[0] < w[1]));
                prop_assert!(s.steps.len() <= keep + 1);
                prop_assert_eq!(s.counts.len(), s.steps.len() * 4);
                prop_assert_eq!(s.figures.len(), s.steps.len() * STEP_FIGURES);
            }
        }
    }
}
