//! The rules for activations: dead units (all at 0) and saturated ones (at the ends of ±1 or
//! of 0 and 1).

use super::context::Context;
use super::series_start::median;
use super::sustained::sustained;
use super::wording::percent;
use super::{Finding, Kind, Severity};
use crate::histograms::profile::StepProfile;

/// Activations with at least this share of their mass at exactly 0 are dead.
const DEAD_SHARE: f64 = 0.95;

/// Activations with at least this share at the ends of ±1 (or of 0 and 1) are saturated:
/// a converged tanh classifier had 62% there, tanh fed inputs 30 times too large 93%.
const SATURATED_SHARE: f64 = 0.75;
/// Or, however coarse the buckets, whose mean slope is at most this share of the
/// function's peak: `StepProfile::tanh_slope` or `sigmoid_slope`, exact from the
/// stored mean and std (a sigmoid piled at 0 and 1 with std 0.476 keeps 9%).
const SATURATED_SLOPE: f64 = 0.25;
/// A range in [0, 1] needs this much mass at its top end too, so that a ReLU's zeros are not read as a sigmoid's 0.
const SATURATED_TOP_SHARE: f64 = 0.1;
/// How far outside ±1 a bounded range may reach (bucket edges and float rounding).
const BOUND_SLACK: f64 = 1e-3;

pub(super) fn dead(cx: &Context<'_>) -> Option<Finding> {
    let valued = cx.valued();
    let flags: Vec<bool> = valued.iter().map(|&i| is_dead(&cx.profiles[i])).collect();
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

/// How a step's values sit in their bounded range, if they lie in ±1 or in [0, 1].
/// Whether a step of activations is mostly exact zeros: dead units.
pub(super) fn is_dead(p: &StepProfile) -> bool {
    p.zero_share >= DEAD_SHARE
}

/// Whether a step of activations, bounded as `bounded` says, is saturated.
pub(super) fn is_saturated(bounded: Option<Bounded>) -> bool {
    bounded.is_some_and(Bounded::saturated)
}

#[derive(Clone, Copy)]
pub(super) struct Bounded {
    /// The share of the mass at the ends, from the buckets.
    end_share: f64,
    /// The mean slope of tanh or of the sigmoid there, over its peak, from the moments.
    slope: f64,
    bounds: &'static str,
}

impl Bounded {
    pub(super) fn of(p: &StepProfile) -> Option<Bounded> {
        let high = 1.0 + BOUND_SLACK;
        if p.max > high || p.min < -high {
            return None;
        }
        if p.min < 0.0 {
            return Some(Bounded {
                end_share: p.tanh_ends.0 + p.tanh_ends.1,
                slope: p.tanh_slope(),
                bounds: "-1 and 1",
            });
        }
        let (low, top) = p.sigmoid_ends;
        (top >= SATURATED_TOP_SHARE).then_some(Bounded {
            end_share: low + top,
            slope: p.sigmoid_slope(),
            bounds: "0 and 1",
        })
    }

    fn saturated(self) -> bool {
        self.end_share >= SATURATED_SHARE || self.slope <= SATURATED_SLOPE
    }
}

pub(super) fn saturated(cx: &Context<'_>) -> Option<Finding> {
    let valued = cx.valued();
    let bounded: Vec<Option<Bounded>> = valued
        .iter()
        .map(|&i| Bounded::of(&cx.profiles[i]))
        .collect();
    let flags: Vec<bool> = bounded.iter().map(|&b| is_saturated(b)).collect();
    let (a, b) = sustained(&flags)?;
    let (first, last) = (valued[a], valued[b]);
    let share = median(bounded[a..=b].iter().flatten().map(|b| b.end_share));
    let slope = median(bounded[a..=b].iter().flatten().map(|b| b.slope));
    let bounds = bounded[a]?.bounds;
    Some(cx.finding(
        Kind::Saturated,
        (first, last),
        Severity::Warning,
        &[("end_share", share), ("mean_slope", slope)],
        format!(
            "the activations are piled at the ends of their range, {bounds}, from step {}: the \
             function's slope there averages {} of its peak ({} within 5% of the ends by the \
             buckets); saturated units pass almost no gradient; scale or normalize their inputs",
            cx.steps[first],
            percent(slope.max(0.0)),
            percent(share)
        ),
    ))
}
