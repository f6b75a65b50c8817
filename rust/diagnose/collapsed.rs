//! The `collapsed` rule: a spread gone to almost one value, or a parameter's scale
//! decayed far below its start while the run's loss does not improve.

use super::context::Context;
use super::loss_curve::LossCurve;
use super::sustained::sustained;
use super::wording::{noun, power_of_ten, sci};
use super::{Finding, Kind, Role, Severity};
use crate::histograms::profile::StepProfile;

/// A spread this many times smaller than the largest it had before has collapsed.
const COLLAPSED_VS_PEAK: f64 = 1e-3;
/// A parameter whose scale falls this many times below its start has decayed away,
/// where the loss does not improve (healthy zoo runs: no parameter ends below 0.75 of its
/// start; under AdamW's decay, far too strong, the median one ends at 5 × 10^-3 to
/// 4 × 10^-2 of it).
const COLLAPSED_SCALE_FALL: f64 = 1e-2;

/// Spread or scale gone: the spread `COLLAPSED_VS_PEAK` of its peak (any run), or a
/// parameter's scale `COLLAPSED_SCALE_FALL` of its start while the loss does not improve.
/// An error where the run's loss says it is not learning, a warning otherwise.
pub(super) fn collapsed(cx: &Context<'_>) -> Option<Finding> {
    let valued = cx.valued();
    let not_learning = cx.loss_curve.filter(|curve| !curve.learned());
    spread_collapsed(cx, &valued, not_learning).or_else(|| decayed(cx, &valued, not_learning?))
}

fn spread_collapsed(
    cx: &Context<'_>,
    valued: &[usize],
    not_learning: Option<&LossCurve>,
) -> Option<Finding> {
    let mut peak: f64 = 0.0;
    let flags: Vec<bool> = valued
        .iter()
        .map(|&i| {
            let p = &cx.profiles[i];
            let collapsed = spread_fell(p, peak);
            peak = peak.max(p.std);
            collapsed
        })
        .collect();
    let (a, b) = sustained(&flags)?;
    if b != valued.len() - 1 {
        return None;
    }
    let (first, last) = (valued[a], valued[b]);
    let spread = cx.profiles[last].std;
    let peak = valued[..a]
        .iter()
        .map(|&i| cx.profiles[i].std)
        .fold(0.0, f64::max);
    let mut evidence = vec![
        ("spread", spread),
        ("peak_spread", peak),
        ("ratio", spread / peak),
    ];
    let (severity, loss) = loss_flat(not_learning, &mut evidence);
    Some(cx.finding(
        Kind::Collapsed,
        (first, last),
        severity,
        &evidence,
        format!(
            "spread shrinks from {} to {} by step {}{loss}: the {}s collapsed to almost one \
             value; look for too strong weight decay or a too high learning rate",
            sci(peak),
            sci(spread),
            cx.steps[first],
            noun(cx.role)
        ),
    ))
}

/// A parameter whose scale falls `COLLAPSED_SCALE_FALL` below its start and stays there,
/// in a run whose loss does not improve: weights decayed toward 0 (AdamW's decay, far
/// too strong, holds them 10^2 to 10^3 below their start, not at a point).
fn decayed(cx: &Context<'_>, valued: &[usize], loss: &LossCurve) -> Option<Finding> {
    if cx.role != Role::Parameter || valued.is_empty() {
        return None;
    }
    // The scale at the start of training: weight decay can do most of a collapse before
    // the second logged step, so a median of the first steps would start after it.
    let start = cx.profiles[valued[0]].scale();
    let flags: Vec<bool> = valued
        .iter()
        .map(|&i| scale_fell(cx.profiles[i].scale(), start))
        .collect();
    let (a, b) = sustained(&flags)?;
    if b != valued.len() - 1 {
        return None;
    }
    let (first, last) = (valued[a], valued[b]);
    let scale = cx.profiles[last].scale();
    let mut evidence = vec![
        ("scale", scale),
        ("start_scale", start),
        ("fall", scale / start),
    ];
    let (severity, flat) = loss_flat(Some(loss), &mut evidence);
    Some(cx.finding(
        Kind::Collapsed,
        (first, last),
        severity,
        &evidence,
        format!(
            "scale falls from {} to {} ({} of its start) by step {}{flat}: the {}s decayed \
             toward 0; lower the weight decay (AdamW takes learning rate times weight \
             decay of every weight at each step)",
            sci(start),
            sci(scale),
            power_of_ten(scale / start),
            cx.steps[first],
            noun(cx.role)
        ),
    ))
}

/// The severity of a collapse, and the loss's part of its message and evidence: an
/// error where the run's loss shows it is not learning.
fn loss_flat(
    not_learning: Option<&LossCurve>,
    evidence: &mut Vec<(&str, f64)>,
) -> (Severity, String) {
    match not_learning {
        Some(curve) => {
            evidence.extend([
                ("loss_first", curve.first()),
                ("loss_end", curve.end_level()),
            ]);
            let said = format!(
                ", while {} goes from {} to {}, not learning",
                curve.tag,
                sci(curve.first()),
                sci(curve.end_level())
            );
            (Severity::Error, said)
        }
        None => (Severity::Warning, String::new()),
    }
}

/// Whether a step's spread fell `COLLAPSED_VS_PEAK` times below the series' `peak` before it.
pub(super) fn spread_fell(p: &StepProfile, peak: f64) -> bool {
    p.count > 1.0 && peak > 0.0 && p.std < COLLAPSED_VS_PEAK * peak
}

/// Whether a step's `scale` fell `COLLAPSED_SCALE_FALL` times below the series' `start`.
pub(super) fn scale_fell(scale: f64, start: f64) -> bool {
    start > 0.0 && scale < COLLAPSED_SCALE_FALL * start
}
