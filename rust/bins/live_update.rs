//! What a live chart changed since the page was last told, as a few flat arrays that a
//! notebook sends as binary buffers: per series, the tag's new bins, which of the rows
//! the page holds stay, and the rows added.
//!
//! The page applies a change to a series in order: new edges replace the tag's; a full
//! change replaces the rows; otherwise the rows held are kept by the mask (or the first
//! `keep` of them), then the new rows are appended.

use super::live_chart::{LiveChart, LiveSeries, LiveTag, STEP_FIGURES};
use super::rebin::rebin_over;

/// One series' change, its numbers at the next places of the update's arrays.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesChange {
    pub tag: String,
    pub run: String,
    /// Whether the tag's `bins + 1` edges come with it (the bins changed).
    pub edges: bool,
    /// Whether the rows replace every row the page holds of the series.
    pub full: bool,
    /// Whether `keep` bytes of the mask say, row by row, which held rows stay;
    /// otherwise the first `keep` held rows stay.
    pub masked: bool,
    pub keep: usize,
    /// Rows added: their steps, `bins` counts and [`STEP_FIGURES`] figures each.
    pub rows: usize,
}

/// Every change of one look, and their numbers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LiveUpdate {
    pub changes: Vec<SeriesChange>,
    pub edges: Vec<f64>,
    pub steps: Vec<f64>,
    pub counts: Vec<f32>,
    pub figures: Vec<f32>,
    pub mask: Vec<u8>,
}

impl LiveUpdate {
    /// About the bytes the update takes to send: its numbers, and the names with the
    /// rest of a change's header as JSON writes it.
    pub fn bytes(&self) -> usize {
        let names: usize = self
            .changes
            .iter()
            .map(|c| c.tag.len() + c.run.len() + 96)
            .sum();
        names
            + 8 * (self.edges.len() + self.steps.len())
            + 4 * (self.counts.len() + self.figures.len())
            + self.mask.len()
    }

    fn append(&mut self, other: LiveUpdate) {
        self.changes.extend(other.changes);
        self.edges.extend(other.edges);
        self.steps.extend(other.steps);
        self.counts.extend(other.counts);
        self.figures.extend(other.figures);
        self.mask.extend(other.mask);
    }
}

impl LiveChart {
    /// The changes since the last look, tag after tag from where the last look
    /// stopped, as many as fit `budget_bytes` (one tag's at least): what does not
    /// fit waits for the next look, so every update stays small.
    pub fn take_update(&mut self, budget_bytes: usize) -> LiveUpdate {
        self.settle();
        let mut out = LiveUpdate::default();
        let n = self.tags.len();
        for k in 0..n {
            let at = (self.cursor + k) % n;
            let change = self.tags[at].change(self.bins, false);
            if change.changes.is_empty() {
                continue;
            }
            if !out.changes.is_empty() && out.bytes() + change.bytes() > budget_bytes {
                self.cursor = at;
                return out;
            }
            self.tags[at].told();
            out.append(change);
        }
        out
    }

    /// Whether anything is not told yet.
    pub fn pending(&self) -> bool {
        self.unsettled()
            || self
                .tags
                .iter()
                .any(|t| !t.change(self.bins, false).changes.is_empty())
    }

    /// Everything held, as one update to an empty page (a saved notebook's snapshot);
    /// what the page was told is left as it is.
    pub fn whole(&mut self) -> LiveUpdate {
        self.settle();
        let mut out = LiveUpdate::default();
        for tag in &self.tags {
            out.append(tag.change(self.bins, true));
        }
        out
    }
}

impl LiveTag {
    /// The tag's change since it was told; with `everything`, all it holds.
    fn change(&self, bins: usize, everything: bool) -> LiveUpdate {
        let rebinned = self.rebinned || everything;
        let mut out = LiveUpdate::default();
        for series in &self.runs {
            let kept = (!rebinned).then(|| series.kept_on_page()).flatten();
            match kept {
                None => series.push_rows(self, bins, 0, Keep::None, &mut out),
                Some(kept) => series.push_change(self, bins, &kept, &mut out),
            }
        }
        if rebinned {
            if let Some(first) = out.changes.first_mut() {
                first.edges = true;
                out.edges = rebin_over(&[], self.extent, bins).edges;
            }
        }
        out
    }

    fn told(&mut self) {
        self.rebinned = false;
        for series in &mut self.runs {
            series.sent.clone_from(&series.steps);
            series.sent_valid_below = i64::MAX;
        }
    }
}

/// Which of the rows on the page stay.
enum Keep<'a> {
    None,
    First(usize),
    Mask(&'a [u8]),
}

impl LiveSeries {
    /// Row by row of the page, whether it stays: a step held and not replaced since.
    /// None when the page must be sent everything: nothing there yet, or the held rows
    /// would not be what stays followed by what is new.
    fn kept_on_page(&self) -> Option<Vec<u8>> {
        if self.sent.is_empty() {
            return None;
        }
        let stays = |s: &i64| *s < self.sent_valid_below && self.steps.binary_search(s).is_ok();
        let kept: Vec<u8> = self.sent.iter().map(|s| u8::from(stays(s))).collect();
        let staying = kept.iter().filter(|&&k| k == 1).count();
        let prefix = self.sent.iter().filter(|s| stays(s));
        prefix
            .eq(self.steps[..staying.min(self.steps.len())].iter())
            .then_some(kept)
    }

    fn push_change(&self, tag: &LiveTag, bins: usize, kept: &[u8], out: &mut LiveUpdate) {
        let staying = kept.iter().filter(|&&k| k == 1).count();
        if staying == self.sent.len() && staying == self.steps.len() {
            return;
        }
        let prefix = kept.iter().take_while(|&&k| k == 1).count();
        let keep = if prefix == staying {
            Keep::First(prefix)
        } else {
            Keep::Mask(kept)
        };
        self.push_rows(tag, bins, staying, keep, out);
    }

    fn push_rows(
        &self,
        tag: &LiveTag,
        bins: usize,
        from: usize,
        keep: Keep<'_>,
        out: &mut LiveUpdate,
    ) {
        let (full, masked, keep) = match keep {
            Keep::None => (true, false, 0),
            Keep::First(n) => (false, false, n),
            Keep::Mask(mask) => {
                out.mask.extend_from_slice(mask);
                (false, true, mask.len())
            }
        };
        out.changes.push(SeriesChange {
            tag: tag.name.clone(),
            run: self.run.clone(),
            edges: false,
            full,
            masked,
            keep,
            rows: self.steps.len() - from,
        });
        out.steps
            .extend(self.steps[from..].iter().map(|&s| s as f64));
        out.counts
            .extend(self.counts[from * bins..].iter().map(|&c| c as f32));
        out.figures.extend(
            self.figures[from * STEP_FIGURES..]
                .iter()
                .map(|&f| f as f32),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histograms::stats::Stats;
    use proptest::prelude::*;
    use std::collections::HashMap;

    /// What the page holds of one series, changed as the page changes it.
    #[derive(Debug, Default, Clone, PartialEq)]
    struct Page {
        steps: Vec<f64>,
        counts: Vec<f32>,
    }

    fn apply(
        pages: &mut HashMap<(String, String), Page>,
        edges: &mut HashMap<String, Vec<f64>>,
        u: &LiveUpdate,
        bins: usize,
    ) {
        let (mut e, mut r, mut m) = (0, 0, 0);
        for c in &u.changes {
            if c.edges {
                edges.insert(c.tag.clone(), u.edges[e..e + bins + 1].to_vec());
                e += bins + 1;
            }
            let page = pages.entry((c.tag.clone(), c.run.clone())).or_default();
            let held: Vec<usize> = if c.full {
                vec![]
            } else if c.masked {
                let mask = &u.mask[m..m + c.keep];
                m += c.keep;
                (0..c.keep).filter(|&i| mask[i] == 1).collect()
            } else {
                (0..c.keep).collect()
            };
            let mut next = Page::default();
            for i in held {
                next.steps.push(page.steps[i]);
                next.counts
                    .extend_from_slice(&page.counts[i * bins..(i + 1) * bins]);
            }
            next.steps.extend_from_slice(&u.steps[r..r + c.rows]);
            next.counts
                .extend_from_slice(&u.counts[r * bins..(r + c.rows) * bins]);
            r += c.rows;
            *page = next;
        }
    }

    fn stats(count: f64) -> Stats {
        Stats {
            count,
            ..Stats::MISSING
        }
    }

    proptest! {
        /// However the looks fall and whatever their budget, the page ends up holding
        /// exactly what the chart holds.
        #[test]
        fn the_page_follows_the_chart(
            adds in proptest::collection::vec((0usize..3, 0i64..40, -50.0f64..50.0, 0.1f64..20.0, any::<bool>()), 1..150),
            budget in 0usize..4000,
        ) {
            let bins = 5;
            let mut chart = LiveChart::new(bins, 6);
            let mut pages = HashMap::new();
            let mut edges = HashMap::new();
            for (tag, step, centre, width, look) in adds {
                let tag = ["a", "b", "c"][tag];
                chart.add(tag, "run", step, &[centre - width, centre + width, 3.0], &stats(3.0));
                if look {
                    apply(&mut pages, &mut edges, &chart.take_update(budget), bins);
                }
            }
            while chart.pending() {
                apply(&mut pages, &mut edges, &chart.take_update(budget), bins);
            }
            for live in &chart.tags {
                let s = &live.runs[0];
                let page = &pages[&(live.name.clone(), "run".to_string())];
                prop_assert_eq!(&page.steps, &s.steps.iter().map(|&x| x as f64).collect::<Vec<_>>());
                prop_assert_eq!(&page.counts, &s.counts.iter().map(|&x| x as f32).collect::<Vec<_>>());
                prop_assert_eq!(&edges[&live.name], &chart.edges(&live.name).unwrap());
            }
        }
    }

    #[test]
    fn a_step_added_sends_only_its_row() {
        let mut chart = LiveChart::new(4, 64);
        chart.add("w", "run", 0, &[0.0, 1.0, 2.0], &stats(2.0));
        let first = chart.take_update(1 << 20);
        assert_eq!(first.changes.len(), 1);
        assert!(first.changes[0].full && first.changes[0].edges);
        chart.add("w", "run", 1, &[0.0, 1.0, 5.0], &stats(5.0));
        let next = chart.take_update(1 << 20);
        assert_eq!(
            next.changes[0],
            SeriesChange {
                tag: "w".into(),
                run: "run".into(),
                edges: false,
                full: false,
                masked: false,
                keep: 1,
                rows: 1,
            }
        );
        assert_eq!(next.counts.len(), 4);
        assert!(chart.take_update(1 << 20).changes.is_empty());
    }

    #[test]
    fn the_whole_chart_fills_an_empty_page_as_the_updates_did() {
        let mut chart = LiveChart::new(3, 4);
        let (mut told, mut whole) = (HashMap::new(), HashMap::new());
        let (mut told_edges, mut whole_edges) = (HashMap::new(), HashMap::new());
        for step in 0..20 {
            chart.add(
                "w",
                "run",
                step,
                &[0.0, step as f64 + 1.0, 2.0],
                &stats(2.0),
            );
            apply(&mut told, &mut told_edges, &chart.take_update(1 << 20), 3);
        }
        apply(&mut whole, &mut whole_edges, &chart.whole(), 3);
        assert_eq!((told, told_edges), (whole, whole_edges));
        assert!(chart.take_update(1 << 20).changes.is_empty());
    }

    #[test]
    fn a_small_budget_sends_one_tag_a_look() {
        let mut chart = LiveChart::new(4, 64);
        for tag in ["a", "b", "c"] {
            chart.add(tag, "run", 0, &[0.0, 1.0, 2.0], &stats(2.0));
        }
        let tags: Vec<String> = (0..3)
            .map(|_| chart.take_update(1).changes[0].tag.clone())
            .collect();
        assert_eq!(tags, ["a", "b", "c"]);
        assert!(!chart.pending());
    }
}
