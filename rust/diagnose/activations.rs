//! The rules for activations: dead units (all at 0) and saturated ones (at the ends of ±1 or
//! of 0 and 1).

use super::rules::{median, percent, sustained, Context};
use super::{Finding, Kind, Severity};
use crate::histograms::profile::StepProfile;

/// Activations with at least this share of their mass at exactly 0 are dead.
const DEAD_SHARE: f64 = 0.95;

/// Activations with at least this share at the ends of ±1 (or of 0 and 1) are saturated:
/// a converged tanh classifier had 62% there, tanh fed inputs 30 times too large 93%.
const SATURATED_SHARE: f64 = 0.75;
/// A range in [0, 1] needs this much mass at its top end too, so that a ReLU's zeros are not read as a sigmoid's 0.
const SATURATED_TOP_SHARE: f64 = 0.1;
/// How far outside ±1 a bounded range may reach (bucket edges and float rounding).
const BOUND_SLACK: f64 = 1e-3;

pub(super) fn dead(cx: &Context<'_>) -> Option<Finding> {
    let valued = cx.valued();
    let flags: Vec<bool> = valued
        .iter()
        .map(|&i| cx.profiles[i].zero_share >= DEAD_SHARE)
        .collect();
    let (a, b) = sustained(&flags)?;
    let (first, last) = (valued[a], valued[b]);
    let share = median(valued[a..=b].iter().map(|&i| cx.profiles[i].zero_share));
    Some(cx.finding(
        Kind::Dead,
        (first, last),
        Severity::Warning,
        &[("zero_share", share)],
        format!(
            "{} of the activations are exactly 0 from step {}: dead units pass no gradient; \
             look for a large negative bias or too high a learning rate (for ReLUs, try a leaky \
             ReLU)",
            percent(share),
            cx.steps[first]
        ),
    ))
}

/// The share of a step's mass at the ends of its bounded range, if its values lie in ±1 or in [0, 1].
fn end_share(p: &StepProfile) -> Option<(f64, &'static str)> {
    let high = 1.0 + BOUND_SLACK;
    if p.max > high || p.min < -high {
        return None;
    }
    if p.min < 0.0 {
        return Some((p.tanh_ends.0 + p.tanh_ends.1, "-1 and 1"));
    }
    let (low, top) = p.sigmoid_ends;
    (top >= SATURATED_TOP_SHARE).then_some((low + top, "0 and 1"))
}

pub(super) fn saturated(cx: &Context<'_>) -> Option<Finding> {
    let valued = cx.valued();
    let ends: Vec<Option<(f64, &str)>> =
        valued.iter().map(|&i| end_share(&cx.profiles[i])).collect();
    let flags: Vec<bool> = ends
        .iter()
        .map(|e| e.is_some_and(|(share, _)| share >= SATURATED_SHARE))
        .collect();
    let (a, b) = sustained(&flags)?;
    let (first, last) = (valued[a], valued[b]);
    let share = median(ends[a..=b].iter().flatten().map(|&(s, _)| s));
    let (_, bounds) = ends[a]?;
    Some(cx.finding(
        Kind::Saturated,
        (first, last),
        Severity::Warning,
        &[("end_share", share)],
        format!(
            "{} of the activations are piled at the ends of their range, {bounds}, from step {}: saturated \
             units pass almost no gradient; scale or normalize their inputs",
            percent(share),
            cx.steps[first]
        ),
    ))
}
