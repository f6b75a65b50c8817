//! The rules for a run's scalars: NaN or infinite values, and the loss as evidence that the
//! run's values explode.

use super::wording::sci;
use super::{Finding, Kind, Role, Severity};
use crate::logdir::evidence::ScalarSeries;

/// A loss this many times above its early level is diverging (healthy zoo runs: at
/// most 1.02 times; exploding ones: 36 times and more; issue 19's run: 9.3)...
const LOSS_RISE: f64 = 5.0;
/// ...on at least this many of its values (one spike is not a divergence).
/// Its early level is its first value, the loss before training moved much: the
/// second may already have diverged (Adam at a learning rate of 1), and a
/// healthy loss falls from its first value.
const LOSS_RISE_VALUES: usize = 2;

/// A loss that diverged: what it rose from and to, or where it turned non-finite.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct LossEvidence {
    pub tag: String,
    /// Its first finite value, and the largest finite value after it.
    pub early: f64,
    pub peak: f64,
    /// The first step at `LOSS_RISE` times its early level or more, or non-finite.
    pub from_step: i64,
    /// The first step with a NaN or infinite value, if any.
    pub nonfinite_step: Option<i64>,
    /// Whether it is still up at its end: its last value NaN or infinite, or its last
    /// `LOSS_RISE_VALUES` values all risen. A loss whose rises were spikes it came back
    /// from is not, nor one whose last value alone spiked (the end of a prefix).
    pub still_up: bool,
}

/// What [`LossEvidence`] rests on, kept value by value in constant work: the first finite
/// value, the peak, the rises, the first NaN or infinity and the last two values.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct LossFold {
    early: Option<f64>,
    peak: f64,
    risen: usize,
    first_risen: Option<i64>,
    nonfinite_step: Option<i64>,
    /// The last two values, newest last, finite or not.
    tail: [Option<f64>; LOSS_RISE_VALUES],
}

impl LossFold {
    pub fn push(&mut self, step: i64, value: f64) {
        if !value.is_finite() {
            self.nonfinite_step.get_or_insert(step);
        } else if let Some(early) = self.early {
            self.peak = self.peak.max(value);
            if early > 0.0 && value >= LOSS_RISE * early {
                self.risen += 1;
                self.first_risen.get_or_insert(step);
            }
        } else {
            self.early = Some(value);
            self.peak = value;
        }
        self.tail.rotate_left(1);
        self.tail[LOSS_RISE_VALUES - 1] = Some(value);
    }

    /// The evidence of the values pushed so far, if the loss diverged.
    pub fn evidence(&self, tag: &str) -> Option<LossEvidence> {
        let early = self.early.unwrap_or(f64::NAN);
        let peak = if self.early.is_some() {
            self.peak
        } else {
            f64::NAN
        };
        let rose = (self.risen >= LOSS_RISE_VALUES)
            .then_some(self.first_risen)
            .flatten();
        let up = |v: &Option<f64>| v.is_some_and(|v| !v.is_finite() || v >= LOSS_RISE * early);
        let still_up = self.tail[LOSS_RISE_VALUES - 1].is_some_and(|v| !v.is_finite())
            || (rose.is_some() && self.tail.iter().all(up));
        let from_step = match (rose, self.nonfinite_step) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b)?,
        };
        Some(LossEvidence {
            tag: tag.to_owned(),
            early,
            peak,
            from_step,
            nonfinite_step: self.nonfinite_step,
            still_up,
        })
    }
}

impl LossEvidence {
    /// The evidence of a loss series, if it diverged: [`LossFold`] over its values.
    pub fn of(series: &ScalarSeries) -> Option<LossEvidence> {
        let mut fold = LossFold::default();
        for (&step, &value) in series.steps.iter().zip(&series.values) {
            fold.push(step, value);
        }
        fold.evidence(&series.tag)
    }

    pub fn cited(&self) -> String {
        match self.nonfinite_step {
            Some(step) if step <= self.from_step || !self.peak.is_finite() => {
                format!("{} turns NaN or infinite at step {step}", self.tag)
            }
            _ => format!(
                "{} rises from {} to {} from step {}",
                self.tag,
                sci(self.early),
                sci(self.peak),
                self.from_step
            ),
        }
    }

    /// The numbers a finding's evidence holds: the loss's rise over its early
    /// level (NaN where no value was finite) and the step it diverged from.
    pub fn numbers(&self) -> [(&'static str, f64); 2] {
        [
            ("loss_rise", self.peak / self.early),
            ("loss_step", self.from_step as f64),
        ]
    }
}

/// The strongest evidence among a run's losses: a non-finite one, else the largest rise.
pub(super) fn run_loss_evidence<'a>(
    scalars: impl Iterator<Item = (&'a ScalarSeries, Role)>,
) -> Option<LossEvidence> {
    strongest(
        scalars
            .filter(|(_, role)| *role == Role::Loss)
            .filter_map(|(series, _)| LossEvidence::of(series)),
    )
}

/// Of the evidence of several losses, the strongest: a NaN first, then the largest rise.
pub(super) fn strongest(evidence: impl Iterator<Item = LossEvidence>) -> Option<LossEvidence> {
    evidence.max_by(|a, b| {
        let strength = |e: &LossEvidence| (e.nonfinite_step.is_some(), e.peak / e.early);
        strength(a)
            .partial_cmp(&strength(b))
            .unwrap_or(std::cmp::Ordering::Equal)
    })
}

/// How bad a scalar's NaN or infinity is: an error for a loss, or where it lasts
/// `to_the_end`; a warning where the values recovered.
pub(super) fn nonfinite_severity(role: Role, to_the_end: bool) -> Severity {
    if role == Role::Loss || to_the_end {
        Severity::Error
    } else {
        Severity::Warning
    }
}

/// A scalar that turned NaN or infinite: an error where it is a loss or stays
/// so to its end, a warning where training recovered (a mixed precision
/// gradient norm on a skipped step). Steps the run's loss scaler recorded as
/// `skipped` (sorted) are left out: a trainer's gradient norm is infinite there.
pub(super) fn nonfinite_scalar(
    run: &str,
    series: &ScalarSeries,
    role: Role,
    skipped: &[i64],
) -> Option<Finding> {
    if role == Role::Spectrum {
        return None; // an α that could not be fitted is no divergence
    }
    let bad: Vec<usize> = (0..series.values.len())
        .filter(|&i| !series.values[i].is_finite())
        .filter(|&i| skipped.binary_search(&series.steps[i]).is_err())
        .collect();
    let (&first, &last) = (bad.first()?, bad.last()?);
    let severity = nonfinite_severity(role, last + 1 == series.values.len());
    let first_step = series.steps[first];
    let what = if role == Role::Loss {
        "the loss"
    } else {
        "the value"
    };
    let advice = if severity == Severity::Warning {
        "it recovered; harmless if those steps were skipped (mixed precision skips them)"
    } else {
        "training diverged; lower the learning rate, clip gradients or look for a \
         division by zero or log of 0"
    };
    Some(Finding {
        kind: Kind::Nonfinite,
        run: run.to_owned(),
        key: series.tag.clone(),
        role,
        first_step,
        last_step: series.steps[last],
        severity,
        evidence: vec![
            ("steps".to_owned(), bad.len() as f64),
            ("values".to_owned(), series.values.len() as f64),
        ],
        message: format!(
            "{}: {what} is {} at {} of {} steps from step {first_step}: {advice}",
            series.tag,
            series.values[first],
            bad.len(),
            series.values.len(),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(tag: &str, values: &[f64]) -> ScalarSeries {
        ScalarSeries {
            tag: tag.into(),
            steps: (0..values.len() as i64).collect(),
            values: values.to_vec(),
        }
    }

    #[test]
    fn a_loss_that_rises_fivefold_or_turns_nan_diverged() {
        let rose = LossEvidence::of(&series("loss", &[1.3, 1.2, 2.0, 9.0, 13.0, 14.0])).unwrap();
        assert_eq!((rose.early, rose.peak, rose.from_step), (1.3, 14.0, 3));
        assert!(rose
            .cited()
            .starts_with("loss rises from 1.3e0 to 1.4e1 from step 3"));
        // Diverged by its second value.
        let fast = LossEvidence::of(&series("loss", &[1.4, 561.0, 460.0, 1.4])).unwrap();
        assert_eq!(fast.from_step, 1);
        // One spike is not a divergence, nor a rise of less than 5 times, nor a fall.
        assert_eq!(
            LossEvidence::of(&series("loss", &[1.4, 1.3, 20.0, 1.2])),
            None
        );
        assert_eq!(
            LossEvidence::of(&series("loss", &[1.4, 6.0, 6.5, 6.9])),
            None
        );
        assert_eq!(
            LossEvidence::of(&series("loss", &[1.4, 0.1, 0.01, 0.1, 0.2])),
            None
        );
        let nan = LossEvidence::of(&series("loss", &[1.4, 1.3, f64::NAN, f64::NAN])).unwrap();
        assert_eq!((nan.from_step, nan.nonfinite_step), (2, Some(2)));
        assert_eq!(nan.cited(), "loss turns NaN or infinite at step 2");
    }

    #[test]
    fn a_loss_is_still_up_unless_its_rises_were_spikes() {
        let up = |values: &[f64]| LossEvidence::of(&series("loss", values)).map(|e| e.still_up);
        assert_eq!(up(&[1.3, 1.2, 2.0, 9.0, 13.0, 14.0]), Some(true));
        assert_eq!(up(&[1.4, 1.3, f64::NAN, f64::NAN]), Some(true));
        // Spikes it came back from, and a prefix that ends at one, rose but are not up.
        assert_eq!(up(&[1.4, 2e4, 1.2, 2e4, 1.1]), Some(false));
        assert_eq!(up(&[1.4, 2e4, 1.2, 2e4]), Some(false));
    }

    #[test]
    fn the_strongest_loss_speaks_for_the_run() {
        let train = series("train/loss", &[1.0, 1.0, 20.0, 30.0]);
        let val = series("val/loss", &[1.0, 1.0, 1.0, f64::INFINITY]);
        let lr = series("lr", &[f64::NAN; 4]);
        let all = [(&train, Role::Loss), (&val, Role::Loss), (&lr, Role::Other)];
        let evidence = run_loss_evidence(all.into_iter()).unwrap();
        assert_eq!(evidence.tag, "val/loss");
    }

    #[test]
    fn nonfinite_scalars_are_errors_unless_training_recovered() {
        let loss = series("loss", &[1.0, f64::NAN, f64::NAN]);
        let found = nonfinite_scalar("r", &loss, Role::Loss, &[]).unwrap();
        assert_eq!(
            (found.severity, found.first_step, found.last_step),
            (Severity::Error, 1, 2)
        );
        assert!(found
            .message
            .starts_with("loss: the loss is NaN at 2 of 3 steps from step 1"));
        let norm = series("grad_norm", &[1.0, f64::INFINITY, 1.0, 1.0, 1.0, 1.0]);
        let found = nonfinite_scalar("r", &norm, Role::Gradient, &[]).unwrap();
        assert_eq!(found.severity, Severity::Warning);
        assert!(nonfinite_scalar("r", &series("lr", &[0.1, 0.1]), Role::Other, &[]).is_none());
    }

    #[test]
    fn nonfinite_values_at_skipped_steps_are_the_skips() {
        let norm = series("grad_norm", &[f64::NAN, f64::INFINITY, 1.0, f64::NAN, 1.0]);
        assert!(nonfinite_scalar("r", &norm, Role::Gradient, &[0, 1, 3]).is_none());
        let found = nonfinite_scalar("r", &norm, Role::Gradient, &[0, 3]).unwrap();
        assert_eq!((found.first_step, found.last_step), (1, 1));
        let loss = series("loss", &[1.0, 1.0, f64::NAN]);
        let found = nonfinite_scalar("r", &loss, Role::Loss, &[0, 1]).unwrap();
        assert_eq!((found.severity, found.first_step), (Severity::Error, 2));
    }
}
