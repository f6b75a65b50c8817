//! The rules for any series (nonfinite here; `exploding` and `collapsed` in their own
//! files), what every rule shares, and which rules a series' role calls.
//!
//! Every threshold was set from real trainings (see `docs/diagnosis.md`): far
//! enough from what healthy runs showed that they stay quiet, close enough to
//! what broken runs showed that those are caught.

use super::activations::{dead, saturated};
use super::collapsed::collapsed;
use super::exploding::exploding;
use super::gradients::{stuck, vanishing};
use super::loss_curve::LossCurve;
use super::optimizer::OptimizerKind;
use super::scalars::LossEvidence;
use super::skipped;
use super::{Finding, Kind, Role, Severity};
use crate::histograms::profile::StepProfile;

/// A series' start is the median of its first steps: a few, because a broken
/// run can go wrong from its third step (a sigmoid net at a learning rate of 0.5).
pub(super) const EARLY_STEPS: usize = 3;

/// A problem must hold on at least this share of the steps from where it starts...
const SUSTAINED_SHARE: f64 = 0.8;
/// ...and on at least this many steps (or every step of a shorter series).
const SUSTAINED_STEPS: usize = 3;

/// A series ending this many of its own logging intervals before its run's last step stopped.
const STOPPED_INTERVALS: f64 = 2.0;

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

/// The median of a series' first scales: where it started.
pub(super) fn early_scale(scales: impl Iterator<Item = f64>) -> f64 {
    median(scales)
}

/// The smallest non-zero of a series' first scales: what growth is measured from,
/// since values can explode by the second logged step (Adam at a learning rate
/// of 1); 0 where they are all 0.
pub(super) fn start_scale(scales: impl Iterator<Item = f64>) -> f64 {
    let smallest = scales
        .filter(|&scale| scale > 0.0)
        .fold(f64::INFINITY, f64::min);
    if smallest.is_finite() {
        smallest
    } else {
        0.0
    }
}

/// Every finding of one series.
pub(super) fn findings(cx: &Context<'_>) -> Vec<Finding> {
    if cx.role == Role::Spectrum {
        // Eigenvalues are not values of the model: a spectrum speaks through its α
        // (`spectral`), and its histogram's growth or spread says nothing wrong.
        return Vec::new();
    }
    let mut out = Vec::new();
    out.extend(nonfinite(cx));
    // A distribution of metrics (episode rewards, per-example scores) is no layer: it
    // grows as an agent learns, which is no explosion.
    if cx.role != Role::Other {
        out.extend(exploding(cx));
    }
    match cx.role {
        Role::Gradient => {
            // A vanishing gradient explains a parameter that does not move.
            out.extend(vanishing(cx).or_else(|| stuck(cx)));
        }
        Role::Activation => {
            out.extend(dead(cx));
            out.extend(saturated(cx));
        }
        Role::Parameter | Role::Loss | Role::Spectrum | Role::Other => {}
    }
    // Dead and saturated units have no spread either: one finding says it.
    let explained = out
        .iter()
        .any(|f| matches!(f.kind, Kind::Dead | Kind::Saturated));
    if matches!(cx.role, Role::Parameter | Role::Activation) && !explained {
        out.extend(collapsed(cx));
    }
    out
}

fn nonfinite(cx: &Context<'_>) -> Option<Finding> {
    let bad: Vec<usize> = (0..cx.profiles.len())
        .filter(|&i| cx.profiles[i].nonfinite)
        .collect();
    if let (Some(&first), Some(&last)) = (bad.first(), bad.last()) {
        // Gradients finite again after their NaNs were not applied: a loss scaler's skips.
        if cx.role == Role::Gradient && last + 1 < cx.profiles.len() {
            if cx.skips_recorded {
                return None; // the run's own record of its skipped steps speaks for them
            }
            let steps: Vec<i64> = bad.iter().map(|&i| cx.steps[i]).collect();
            return skipped::recovered(cx.run, cx.key, cx.role, &steps);
        }
        let values: f64 = bad.iter().map(|&i| cx.profiles[i].nonfinite_count).sum();
        let counted = if values > 0.0 {
            format!(" ({values} values)")
        } else {
            String::new()
        };
        return Some(cx.finding(
            Kind::Nonfinite,
            (first, last),
            Severity::Error,
            &[("steps", bad.len() as f64), ("nonfinite_count", values)],
            format!(
                "NaN or infinite values at {} of {} steps from step {}{counted}: training diverged; \
                 lower the learning rate, clip gradients or look for a division by zero or log of 0",
                bad.len(),
                cx.steps.len(),
                cx.steps[first]
            ),
        ));
    }
    stopped(cx)
}

/// PyTorch's `SummaryWriter` raises on NaN, so a diverged run's histograms just end
/// while its other events (its loss, as NaN) go on.
///
/// A series stopped when it ends `STOPPED_INTERVALS` of its logging intervals
/// (its own, or the run's for a series of one step) before the run's last
/// event; with no interval to go by, when a scalar of the run turned NaN or
/// infinite after its last step.
fn stopped(cx: &Context<'_>) -> Option<Finding> {
    let last = cx.steps.len().checked_sub(1)?;
    let end = cx.steps[last];
    let gap = cx.run_last_step.checked_sub(end)?;
    // Every step after it was skipped by the loss scaler: `skipped` says so.
    if let Some((from, to)) = cx.skipped_tail {
        if from > end && to >= cx.run_last_step {
            return None;
        }
    }
    let interval = super::runs::logging_interval(cx.steps).or(cx.run_interval);
    let nan_after = cx.nonfinite_scalar.filter(|&(_, step)| step >= end);
    if !stopped_by(gap, interval, nan_after.is_some()) {
        return None;
    }
    let mut evidence = vec![
        ("last_step", end as f64),
        ("run_last_step", cx.run_last_step as f64),
    ];
    let cause = match nan_after {
        Some((tag, step)) => {
            evidence.push(("nonfinite_scalar_step", step as f64));
            format!("{tag} is NaN or infinite from step {step}, so its values probably turned non-finite")
        }
        None => "writers such as PyTorch's SummaryWriter raise on NaN or infinite values, so they \
                 probably turned non-finite here"
            .to_owned(),
    };
    Some(cx.finding(
        Kind::Nonfinite,
        (last, last),
        Severity::Warning,
        &evidence,
        format!(
            "stops at step {end} while the run goes on to step {}: {cause}",
            cx.run_last_step
        ),
    ))
}

/// Whether a series logged every `interval` steps (None: unknown) and ending `gap` steps
/// before its run's last step stopped; `nan_after`: a scalar of the run turned NaN or
/// infinite at or after its end.
pub(super) fn stopped_by(gap: i64, interval: Option<f64>, nan_after: bool) -> bool {
    match interval {
        Some(interval) => gap as f64 >= STOPPED_INTERVALS * interval.max(1.0),
        None => gap > 0 && nan_after,
    }
}

/// [`sustained`]'s verdict kept as flags come one by one, in constant work each:
/// whether some flagged index `i` has `SUSTAINED_SHARE` of the flags from it on, and
/// whether the last flag holds.
///
/// Index `i` qualifies when `total - before(i) >= 4/5 (n - i)`, that is when
/// `4i - 5 before(i) >= 4n - 5 total`: the left side is fixed once `i` is flagged, so
/// the largest of it is all that is kept. (`SUSTAINED_SHARE` is 4/5; the float
/// comparison of `sustained` is exact at these sizes.)
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Sustained {
    n: i64,
    total: i64,
    best: Option<i64>,
    pub last: bool,
}

impl Sustained {
    pub fn push(&mut self, flag: bool) {
        if flag {
            let held = 4 * self.n - 5 * self.total;
            self.best = Some(self.best.map_or(held, |best| best.max(held)));
            self.total += 1;
        }
        self.n += 1;
        self.last = flag;
    }

    /// Whether [`sustained`] of the flags pushed so far is `Some`.
    pub fn holds(&self) -> bool {
        let needed = (SUSTAINED_STEPS as i64).min(self.n).max(1);
        self.total >= needed
            && self
                .best
                .is_some_and(|best| best >= 4 * self.n - 5 * self.total)
    }
}

/// The first index from which `flags` holds on `SUSTAINED_SHARE` of the rest, and the last index that holds.
pub(super) fn sustained(flags: &[bool]) -> Option<(usize, usize)> {
    let n = flags.len();
    let total = flags.iter().filter(|&&f| f).count();
    if total < SUSTAINED_STEPS.min(n).max(1) {
        return None;
    }
    let mut held_from = total;
    for (i, &flag) in flags.iter().enumerate() {
        if flag && held_from as f64 >= SUSTAINED_SHARE * (n - i) as f64 {
            let last = flags.iter().rposition(|&f| f)?;
            return Some((i, last));
        }
        if flag {
            held_from -= 1;
        }
    }
    None
}

pub(super) fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len() % 2 == 1 {
        v[mid]
    } else {
        0.5 * (v[mid - 1] + v[mid])
    }
}

pub(super) fn noun(role: Role) -> &'static str {
    match role {
        Role::Gradient => "gradient",
        Role::Parameter => "parameter",
        Role::Activation => "activation",
        Role::Loss => "loss",
        Role::Spectrum => "spectrum",
        Role::Other => "value",
    }
}

/// A number in short scientific form: `1.2e-19`.
pub(super) fn sci(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    format!("{x:.1e}")
}

/// A ratio as a power of ten: `10^14`.
pub(super) fn power_of_ten(ratio: f64) -> String {
    if !ratio.is_finite() || ratio <= 0.0 {
        return format!("{ratio}");
    }
    format!("10^{}", ratio.log10().round() as i64)
}

pub(super) fn percent(share: f64) -> String {
    format!("{:.0}%", 100.0 * share)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sustained_needs_most_of_the_rest() {
        assert_eq!(sustained(&[false, true, true, true]), Some((1, 3)));
        // One flag among five after it (a blip) is not sustained; the later run is.
        let f = [
            true, false, false, false, false, true, true, true, true, false,
        ];
        assert_eq!(sustained(&f), Some((5, 8)));
        assert_eq!(sustained(&[true, true, false, false, false]), None);
        assert_eq!(sustained(&[true]), Some((0, 0)));
        assert_eq!(sustained(&[]), None);
    }

    proptest::proptest! {
        #[test]
        fn sustained_kept_flag_by_flag_is_sustained_of_every_prefix(
            flags in proptest::collection::vec(proptest::bool::weighted(0.6), 0..60)
        ) {
            let mut online = Sustained::default();
            for (n, &flag) in flags.iter().enumerate() {
                online.push(flag);
                let whole = sustained(&flags[..=n]);
                proptest::prop_assert_eq!(online.holds(), whole.is_some(), "{:?}", &flags[..=n]);
                proptest::prop_assert_eq!(online.last, flag);
            }
        }
    }

    #[test]
    fn helpers_format_numbers() {
        assert_eq!(sci(1.234e-19), "1.2e-19");
        assert_eq!(power_of_ten(1.1e14), "10^14");
        assert_eq!(percent(0.987), "99%");
        assert_eq!(median([3.0, 1.0, 2.0].into_iter()), 2.0);
    }
}
