//! What the triggers of every series read from the rest of the run, made by `triggers`
//! from its watches and read by `verdicts` too.

use super::loss_curve::LossCurve;
use super::scalars::LossEvidence;

/// What the rules of every series read from the rest of the run.
pub(super) struct Context<'a> {
    pub last_step: i64,
    /// The median logging interval of the run's series that have one.
    pub interval: Option<f64>,
    pub loss: Option<LossEvidence>,
    pub curve: Option<&'a LossCurve>,
    /// The run's reward, where it rises (as `LossCurve::rising_reward` finds it).
    pub reward: Option<&'a LossCurve>,
    /// The first step a scalar of the run turned NaN or infinite.
    pub nonfinite_scalar: Option<i64>,
    /// The run records the steps its loss scaler skipped.
    pub skips_recorded: bool,
    /// The first and last of the skipped steps that end that record one after the other.
    pub skipped_tail: Option<(i64, i64)>,
}

impl Context<'_> {
    pub(super) fn not_learning(&self) -> bool {
        self.curve.is_some_and(|c| !c.learned())
    }
}
