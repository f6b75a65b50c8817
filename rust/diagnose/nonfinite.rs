//! The rule for any series' NaN or infinite values, and for a series that stops while
//! its run goes on (a writer that raised on them).

use super::context::Context;
use super::skipped;
use super::{Finding, Kind, Role, Severity};

/// A series ending this many of its own logging intervals before its run's last step stopped.
const STOPPED_INTERVALS: f64 = 2.0;

/// NaN or infinite values in a series (or, where it has none, the series stopping
/// early); a gradient finite again after its NaNs is a loss scaler's skip
/// (`skipped::recovered`).
pub(super) fn nonfinite(cx: &Context<'_>) -> Option<Finding> {
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
