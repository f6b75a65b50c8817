//! A card's request: its defaults, its checks, and which steps of a series it draws.

use thiserror::Error;

use crate::bins::chart::CHART_BINS;
use crate::bins::edges::{check_bin_count, EdgesError};
use crate::bins::thin::thin_indices;

/// The shared equal bins a card's runs are rebinned onto unless asked otherwise:
/// a chart's.
pub const CARD_BINS: usize = CHART_BINS;

/// The most steps a card's heatmap draws unless asked otherwise; the rest are
/// thinned as maidr thins.
pub const CARD_STEPS: usize = 40;

/// The most steps a card may ask for, so that one answer stays small however
/// long a run grows.
pub const CARD_MAX_STEPS: usize = 1000;
const _: () = assert!(CARD_STEPS <= CARD_MAX_STEPS);

/// Why a card cannot be drawn as asked.
#[derive(Debug, Error, PartialEq)]
pub enum CardError {
    #[error("from must not be after to, got from={from} to={to}")]
    Window { from: i64, to: i64 },
    #[error(transparent)]
    Bins(#[from] EdgesError),
}

/// What a card asks for of each run's series of one tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CardRequest {
    /// The chosen step: the card marks the last step at or before it (None: the last).
    pub step: Option<i64>,
    /// The steps drawn lie within `from..=to` (None: unbounded).
    pub from: Option<i64>,
    pub to: Option<i64>,
    /// At most this many steps drawn, at most [`CARD_MAX_STEPS`].
    pub max_steps: usize,
    pub bins: usize,
}

impl CardRequest {
    /// A request checked, defaults filled in: [`CARD_STEPS`] (capped at
    /// [`CARD_MAX_STEPS`]) and [`CARD_BINS`] (at most `MAX_BINS`).
    pub fn new(
        step: Option<i64>,
        from: Option<i64>,
        to: Option<i64>,
        max_steps: Option<usize>,
        bins: Option<usize>,
    ) -> Result<Self, CardError> {
        if let (Some(from), Some(to)) = (from, to) {
            if from > to {
                return Err(CardError::Window { from, to });
            }
        }
        let bins = bins.unwrap_or(CARD_BINS);
        check_bin_count(i64::try_from(bins).unwrap_or(i64::MAX))?;
        Ok(CardRequest {
            step,
            from,
            to,
            max_steps: max_steps.unwrap_or(CARD_STEPS).min(CARD_MAX_STEPS),
            bins,
        })
    }

    /// Which positions of a series' `steps` (increasing) the card draws.
    pub fn pick(&self, steps: &[i64]) -> CardPick {
        let lo = self
            .from
            .map_or(0, |from| steps.partition_point(|&s| s < from));
        let hi = self
            .to
            .map_or(steps.len(), |to| steps.partition_point(|&s| s <= to));
        let drawn = if hi > lo {
            thin_indices(hi - lo, Some(self.max_steps))
                .into_iter()
                .map(|i| lo + i)
                .collect()
        } else {
            Vec::new()
        };
        let end = self
            .step
            .map_or(steps.len(), |step| steps.partition_point(|&s| s <= step));
        let current = end.checked_sub(1);
        CardPick {
            drawn,
            current,
            previous: current.and_then(|c| c.checked_sub(1)),
        }
    }
}

/// The positions a card takes of one series.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardPick {
    /// Thinned evenly within the window, as maidr thins.
    pub drawn: Vec<usize>,
    /// The last step at or before the chosen one, and the step before it.
    pub current: Option<usize>,
    pub previous: Option<usize>,
}

impl CardPick {
    /// Every position whose buckets the card counts: the drawn, then the current and
    /// the previous where there are such steps.
    pub fn positions(&self) -> Vec<usize> {
        let marked = [self.current, self.previous].into_iter().flatten();
        self.drawn.iter().copied().chain(marked).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(step: Option<i64>, from: Option<i64>, to: Option<i64>, max: usize) -> CardRequest {
        CardRequest::new(step, from, to, Some(max), None).unwrap()
    }

    #[test]
    fn defaults_are_filled_in_and_capped() {
        let r = CardRequest::new(None, None, None, None, None).unwrap();
        assert_eq!((r.max_steps, r.bins), (CARD_STEPS, CARD_BINS));
        let r = CardRequest::new(None, None, None, Some(5000), Some(7)).unwrap();
        assert_eq!((r.max_steps, r.bins), (CARD_MAX_STEPS, 7));
    }

    #[test]
    fn a_reversed_window_and_too_many_bins_are_refused_as_the_viewer_says() {
        let e = CardRequest::new(None, Some(5), Some(2), None, None).unwrap_err();
        assert_eq!(e.to_string(), "from must not be after to, got from=5 to=2");
        let e = CardRequest::new(None, None, None, None, Some(513)).unwrap_err();
        assert_eq!(e.to_string(), "bins must be from 1 to 512, got 513");
    }

    #[test]
    fn steps_are_thinned_within_the_window_with_the_chosen_step_and_its_previous() {
        let steps = [0, 10, 20, 30, 40, 50, 60, 70, 80, 90];
        let pick = request(Some(45), Some(10), Some(80), 3).pick(&steps);
        // positions 1..=8 thinned to 3: 1 + [0, 4, 7]
        assert_eq!(pick.drawn, vec![1, 5, 8]);
        assert_eq!((pick.current, pick.previous), (Some(4), Some(3)));
        assert_eq!(pick.positions(), vec![1, 5, 8, 4, 3]);
        let last = request(None, None, None, 40).pick(&steps);
        assert_eq!(last.drawn, (0..10).collect::<Vec<_>>());
        assert_eq!((last.current, last.previous), (Some(9), Some(8)));
    }

    #[test]
    fn no_step_at_or_before_and_an_empty_window_pick_nothing() {
        let steps = [5, 6];
        let pick = request(Some(2), Some(7), None, 40).pick(&steps);
        assert_eq!(pick.positions(), Vec::<usize>::new());
        let first = request(Some(5), None, Some(4), 40).pick(&steps);
        assert_eq!(
            (first.drawn.len(), first.current, first.previous),
            (0, Some(0), None)
        );
    }
}
