//! A run's loss read as a curve: its level before a step, when it came back to that
//! level, and whether the run learned; what tells a spike that healed from an explosion
//! and weights that decayed from a model that trains.

use super::series_start::median;
use super::Role;
use crate::logdir::evidence::ScalarSeries;

/// A level is the median of this many finite values: one noisy batch does not move it.
const LEVEL_VALUES: usize = 5;

/// The loss is back once a value is at most this many times its level before a spike
/// (the zoo's clipped spikes: the value after one is 0.72 to 1.39 times its level, the
/// spike's own 10^4 times; a healthy run's values, up to 3.2 times the median of the 5
/// before them for one step; an explosion's, 5 times its first value and more to its end).
pub(super) const LOSS_BACK: f64 = 2.0;

/// A run learned where its loss ends below this share of its first value (healthy zoo
/// runs: at most 0.60 at their end; runs whose weights collapsed, under SGD's decay or
/// AdamW's, 0.92 and more; exploding ones whose loss came back to chance, 0.93 and more).
pub(super) const LOSS_LEARNED: f64 = 0.8;

/// A reward rises where it ends this share of its starting level's size above it.
pub(super) const REWARD_RISE: f64 = 0.5;

/// The loss of a run that the histogram rules read: its steps and values, finite only.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct LossCurve {
    pub tag: String,
    steps: Vec<i64>,
    values: Vec<f64>,
    /// The step of the last value, finite or not: how far the run's loss reaches.
    pub last_step: i64,
}

impl LossCurve {
    /// The loss of `series`, where it has a finite value.
    pub fn of(series: &ScalarSeries) -> Option<LossCurve> {
        let mut curve = LossCurve::new(&series.tag);
        for (&step, &value) in series.steps.iter().zip(&series.values) {
            curve.push(step, value);
        }
        curve.has_values().then_some(curve)
    }

    /// A loss with no value yet, to push its values into as they come.
    pub fn new(tag: &str) -> LossCurve {
        LossCurve {
            tag: tag.to_owned(),
            steps: Vec::new(),
            values: Vec::new(),
            last_step: i64::MIN,
        }
    }

    /// Takes the next value, finite or not, at a step after the others.
    pub fn push(&mut self, step: i64, value: f64) {
        if value.is_finite() {
            self.steps.push(step);
            self.values.push(value);
        }
        self.last_step = step;
    }

    /// Whether it has a finite value: a curve the rules can read.
    pub fn has_values(&self) -> bool {
        !self.values.is_empty()
    }

    /// The run's main loss: among its losses, the one with the most finite values (the
    /// training loss, logged every step, rather than a validation loss).
    pub fn main<'a>(scalars: impl Iterator<Item = (&'a ScalarSeries, Role)>) -> Option<LossCurve> {
        let curves = scalars
            .filter(|(_, role)| *role == Role::Loss)
            .filter_map(|(series, _)| LossCurve::of(series));
        LossCurve::longest(curves)
    }

    /// Of `curves` with values, the one with the most, the first of those tied.
    pub fn longest<C: std::borrow::Borrow<LossCurve>>(
        curves: impl Iterator<Item = C>,
    ) -> Option<C> {
        curves
            .filter(|c| c.borrow().has_values())
            .fold(None, |best: Option<C>, curve| match best {
                Some(b) if b.borrow().values.len() >= curve.borrow().values.len() => Some(b),
                _ => Some(curve),
            })
    }

    /// Its first value: the loss before training moved much.
    pub fn first(&self) -> f64 {
        self.values[0]
    }

    /// Where it ends: the median of its last values.
    pub fn end_level(&self) -> f64 {
        let n = self.values.len();
        median(
            self.values[n.saturating_sub(LEVEL_VALUES)..]
                .iter()
                .copied(),
        )
    }

    /// The run's reward among `scalars` (`roles::is_reward`), the one with the most finite
    /// values, where it rises (`rises`); None otherwise.
    pub fn rising_reward<'a>(scalars: impl Iterator<Item = &'a ScalarSeries>) -> Option<LossCurve> {
        let rewards = scalars.filter(|s| super::roles::is_reward(&s.tag));
        LossCurve::longest(rewards.filter_map(LossCurve::of)).filter(LossCurve::rises)
    }

    /// Whether a reward rises: it ends above its starting level by `REWARD_RISE` of
    /// that level's size (rewards may be negative: -1500 to -200 rises).
    pub fn rises(&self) -> bool {
        let n = self.values.len();
        let start = median(self.values[..n.min(LEVEL_VALUES)].iter().copied());
        n > LEVEL_VALUES && self.end_level() - start > REWARD_RISE * start.abs().max(1e-12)
    }

    /// Whether the run learned: its loss ends below `LOSS_LEARNED` of its first value.
    pub fn learned(&self) -> bool {
        self.end_level() < LOSS_LEARNED * self.first()
    }

    /// Its level before `step`: the median of the last values before it; None where it
    /// has none.
    pub fn level_before(&self, step: i64) -> Option<f64> {
        let end = self.steps.partition_point(|&s| s < step);
        (end > 0).then(|| {
            median(
                self.values[end.saturating_sub(LEVEL_VALUES)..end]
                    .iter()
                    .copied(),
            )
        })
    }

    /// The first step from `step` to `until` where it is back at `level`: at most
    /// `LOSS_BACK` times it. Only that window is read, however long the loss.
    pub fn back_at(&self, step: i64, level: f64, until: i64) -> Option<i64> {
        let from = self.steps.partition_point(|&s| s < step);
        let to = self.steps.partition_point(|&s| s <= until);
        (from..to)
            .find(|&i| self.values[i] <= LOSS_BACK * level)
            .map(|i| self.steps[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn curve(values: &[f64]) -> LossCurve {
        LossCurve::of(&ScalarSeries {
            tag: "loss".into(),
            steps: (0..values.len() as i64).collect(),
            values: values.to_vec(),
        })
        .unwrap()
    }

    #[test]
    fn a_spike_and_the_step_the_loss_is_back() {
        let c = curve(&[1.4, 1.2, 1.0, 0.9, 0.8, 0.8, 8e3, 0.9, 0.7, 0.6, 0.5]);
        assert_eq!(c.level_before(6), Some(0.9));
        assert_eq!(c.back_at(6, 0.9, 10), Some(7));
        assert_eq!(c.back_at(6, 0.9, 6), None);
        // Not back where every later value stays above twice the level.
        assert_eq!(c.back_at(6, 0.2, 10), None);
        assert_eq!(c.level_before(0), None);
        assert_eq!(c.end_level(), 0.7);
        assert!(c.learned());
        // A loss at chance from start to end did not learn.
        assert!(!curve(&[1.39, 1.40, 1.38, 1.39, 1.39]).learned());
    }

    #[test]
    fn the_main_loss_has_the_most_values_and_nan_is_left_out() {
        let series = |tag: &str, values: Vec<f64>| ScalarSeries {
            tag: tag.into(),
            steps: (0..values.len() as i64).collect(),
            values,
        };
        let train = series("train/loss", vec![1.0, f64::NAN, 0.5, 0.4]);
        let val = series("val/loss", vec![1.0, 0.9]);
        let lr = series("lr", vec![0.1; 9]);
        let nan = series("aux_loss", vec![f64::NAN; 9]);
        let all = [
            (&val, Role::Loss),
            (&train, Role::Loss),
            (&lr, Role::Other),
            (&nan, Role::Loss),
        ];
        let main = LossCurve::main(all.into_iter()).unwrap();
        assert_eq!((main.tag.as_str(), main.last_step), ("train/loss", 3));
        assert_eq!(main.level_before(3), Some(0.75));
    }
}
