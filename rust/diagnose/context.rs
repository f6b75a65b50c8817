//! One series and what the rules need from the rest of its run, and the finding a rule
//! makes of it.

use super::loss_curve::LossCurve;
use super::optimizer::OptimizerKind;
use super::scalars::LossEvidence;
use super::series_start::{early_scale, start_scale, EARLY_STEPS};
use super::{Finding, Kind, Role, Severity};
use crate::histograms::profile::StepProfile;

/// One series and what the rules need from the rest of its run.
pub(super) struct Context<'a> {
    pub run: &'a str,
    pub key: &'a str,
    pub role: Role,
    pub steps: &'a [i64],
    pub profiles: &'a [StepProfile],
    /// At each step, the largest scale of another gradient of the run, and its key.
    pub reference: Vec<Option<(f64, &'a str)>>,
    /// For a bias's gradient, the key of its layer's weight's gradient and that one's scale at each step.
    pub weight_of_bias: Option<(&'a str, Vec<Option<f64>>)>,
    /// For a gradient, whether its parameter stood still at each step (None: not logged).
    pub parameter_stopped: Option<Vec<bool>>,
    /// The last step of any event of the run, histograms and scalars.
    pub run_last_step: i64,
    /// The run's median logging interval of histograms, for a series of one step.
    pub run_interval: Option<f64>,
    /// Evidence from a loss of the run that its values explode.
    pub loss: Option<&'a LossEvidence>,
    /// The run's main loss, to tell spikes that healed and weights that decayed by.
    pub loss_curve: Option<&'a LossCurve>,
    /// The run's reward, where it rises: an agent that learns.
    pub reward: Option<&'a LossCurve>,
    /// The run's first NaN or infinite scalar, its tag and step.
    pub nonfinite_scalar: Option<(&'a str, i64)>,
    /// How the run's optimizer steps, where known.
    pub optimizer: Option<OptimizerKind>,
    /// The run records the steps its loss scaler skipped.
    pub skips_recorded: bool,
    /// The first and last of the skipped steps that end that record one after the other.
    pub skipped_tail: Option<(i64, i64)>,
}

impl Context<'_> {
    pub(super) fn finding(
        &self,
        kind: Kind,
        (first, last): (usize, usize),
        severity: Severity,
        evidence: &[(&str, f64)],
        message: String,
    ) -> Finding {
        Finding {
            kind,
            run: self.run.to_owned(),
            key: self.key.to_owned(),
            role: self.role,
            first_step: self.steps[first],
            last_step: self.steps[last],
            severity,
            evidence: evidence.iter().map(|&(k, v)| (k.to_owned(), v)).collect(),
            message: format!("{}: {message}", self.key),
        }
    }

    /// Indices of the steps holding finite values to judge.
    pub(super) fn valued(&self) -> Vec<usize> {
        (0..self.profiles.len())
            .filter(|&i| self.profiles[i].has_values())
            .collect()
    }

    /// The median scale of the first `EARLY_STEPS` valued steps: where the series started.
    pub(super) fn early_scale(&self, valued: &[usize]) -> f64 {
        early_scale(self.early_scales(valued))
    }

    /// The smallest non-zero scale of the first `EARLY_STEPS` valued steps (see [`start_scale`]).
    pub(super) fn start_scale(&self, valued: &[usize]) -> f64 {
        start_scale(self.early_scales(valued))
    }

    fn early_scales<'v>(&'v self, valued: &'v [usize]) -> impl Iterator<Item = f64> + 'v {
        let n = EARLY_STEPS.min(valued.len());
        valued[..n].iter().map(|&i| self.profiles[i].scale())
    }
}
