//! The rules for gradients: vanishing, against the run's other layers of the same kind,
//! a floor and the series' own start, and the bias that gets no gradient by construction.
//!
//! Under an adaptive optimizer (Adam and its kin, as `watch` notes it) a step
//! does not shrink with its gradient, so a small but steady gradient is judged
//! against the other layers only where its parameter stopped moving.

use super::context::Context;
use super::optimizer::OptimizerKind;
use super::roles::layer_kind;
use super::sustained::sustained;
use super::wording::{power_of_ten, sci};
use super::{Finding, Kind, Severity};

/// Gradients with a root mean square below this are vanishing, whatever their layer.
const VANISHING_ABSOLUTE: f64 = 1e-10;
/// Or this many times smaller than the largest other gradient of the run at that step.
const VANISHING_VS_LAYERS: f64 = 1e-4;
/// Or this many times smaller than their own early scale.
const VANISHING_VS_START: f64 = 1e-4;
/// A bias's gradient this many times smaller than its own layer's weight's
/// gets none by construction (a bias before a normalization layer); in a
/// vanishing network a layer's bias and weight gradients shrink together.
const BIAS_VS_WEIGHT: f64 = 1e-4;

pub(super) fn vanishing(cx: &Context<'_>) -> Option<Finding> {
    let valued = cx.valued();
    if valued.is_empty() {
        return None;
    }
    if valued.iter().all(|&i| cx.profiles[i].max_abs() == 0.0) {
        return Some(no_gradient(cx, (valued[0], valued[valued.len() - 1])));
    }
    if let Some(finding) = bias_without_gradient(cx, &valued) {
        return Some(finding);
    }
    let early = cx.early_scale(&valued);
    let adaptive = cx.optimizer == Some(OptimizerKind::Adaptive);
    // Under an adaptive optimizer, only a parameter standing still shows that a
    // small gradient stopped it.
    let compares_with_layers = |i: usize| {
        !adaptive
            || cx
                .parameter_stopped
                .as_ref()
                .is_some_and(|stopped| stopped[i])
    };
    let why = |i: usize| {
        let reference = cx.reference[i].filter(|_| compares_with_layers(i));
        vanished(cx.profiles[i].scale(), reference, early)
    };
    let flags: Vec<bool> = valued.iter().map(|&i| why(i).is_some()).collect();
    let (a, b) = sustained(&flags)?;
    let (first, last) = (valued[a], valued[b]);
    let scale = cx.profiles[first].scale();
    let from = cx.steps[first];
    let (evidence, message) = match why(first)? {
        Vanished::Absolute => (
            vec![("scale", scale)],
            format!(
                "gradient scale is {} from step {from}, too small to change the weights: \
                 vanishing gradients",
                sci(scale)
            ),
        ),
        Vanished::VsLayer(reference, key) => (
            vec![
                ("scale", scale),
                ("reference_scale", reference),
                ("ratio", scale / reference),
            ],
            format!(
                "gradient scale is {} from step {from}, {} times smaller than {key}'s{}: \
                 vanishing gradients; use ReLU-like activations, normalization or residual \
                 connections",
                sci(scale),
                power_of_ten(reference / scale),
                if adaptive {
                    ", and under its adaptive optimizer its parameter stopped moving"
                } else {
                    ""
                }
            ),
        ),
        Vanished::VsStart => (
            vec![
                ("scale", scale),
                ("early_scale", early),
                ("ratio", scale / early),
            ],
            format!(
                "gradient scale falls to {} by step {from}, {} times smaller than at the start: \
                 vanishing gradients",
                sci(scale),
                power_of_ten(early / scale)
            ),
        ),
    };
    Some(cx.finding(
        Kind::Vanishing,
        (first, last),
        Severity::Warning,
        &evidence,
        message,
    ))
}

/// A gradient exactly 0 at every step: harmless for a bias before a normalization
/// layer (the normalization removes any shift), a broken layer otherwise.
fn no_gradient(cx: &Context<'_>, steps: (usize, usize)) -> Finding {
    let (severity, message) = if layer_kind(cx.key).bias {
        (
            Severity::Info,
            "the gradient is exactly 0 at every step: this bias gets no gradient, as one before \
             a normalization layer does by construction; otherwise check that it is used",
        )
    } else {
        (
            Severity::Warning,
            "the gradient is exactly 0 at every step: this layer does not learn; look for dead \
             units after it or an output that is not used",
        )
    };
    cx.finding(
        Kind::Vanishing,
        steps,
        severity,
        &[("scale", 0.0), ("steps", (steps.1 - steps.0 + 1) as f64)],
        message.to_owned(),
    )
}

/// A bias whose gradient is rounding noise beside its layer's weight's: harmless, by construction.
fn bias_without_gradient(cx: &Context<'_>, valued: &[usize]) -> Option<Finding> {
    let (weight_key, weight_scales) = cx.weight_of_bias.as_ref()?;
    let flags: Vec<bool> = valued
        .iter()
        .map(|&i| bias_vanished(cx.profiles[i].scale(), weight_scales[i]))
        .collect();
    let (a, b) = sustained(&flags)?;
    let (first, last) = (valued[a], valued[b]);
    let scale = cx.profiles[first].scale();
    let weight = weight_scales[first]?;
    Some(cx.finding(
        Kind::Vanishing,
        (first, last),
        Severity::Info,
        &[
            ("scale", scale),
            ("weight_scale", weight),
            ("ratio", scale / weight),
        ],
        format!(
            "gradient scale is {} from step {}, {} times smaller than {weight_key}'s: this bias \
             gets no gradient by construction, as one before a normalization layer does; \
             harmless, and the bias can be dropped",
            sci(scale),
            cx.steps[first],
            power_of_ten(weight / scale)
        ),
    ))
}

/// Why a gradient step of `scale` vanished, if it did: against the largest gradient of
/// its kind of layer at that step (`reference`, where it compares with it), absolutely,
/// or against its series' `early` scale.
pub(super) fn vanished<K: ToString>(
    scale: f64,
    reference: Option<(f64, K)>,
    early: f64,
) -> Option<Vanished> {
    if let Some((reference, key)) = reference {
        if scale < VANISHING_VS_LAYERS * reference {
            return Some(Vanished::VsLayer(reference, key.to_string()));
        }
    }
    if scale < VANISHING_ABSOLUTE {
        return Some(Vanished::Absolute);
    }
    (early > 0.0 && scale < VANISHING_VS_START * early).then_some(Vanished::VsStart)
}

/// Whether a bias's gradient step of `scale` is far below its layer's weight's, `weight`.
pub(super) fn bias_vanished(scale: f64, weight: Option<f64>) -> bool {
    weight.is_some_and(|w| scale < BIAS_VS_WEIGHT * w)
}

pub(super) enum Vanished {
    Absolute,
    VsLayer(f64, String),
    VsStart,
}

/// A gradient that is not zero while its parameter stands still at every step, to the
/// end: the optimizer does not update it (one built over another copy's parameters,
/// parameters left out of it, or a learning rate of 0). An error where the run's loss
/// does not learn, a warning otherwise (a part of the model left out).
pub(super) fn stuck(cx: &Context<'_>) -> Option<Finding> {
    let stopped = cx.parameter_stopped.as_ref()?;
    let valued = cx.valued();
    let flags: Vec<bool> = valued
        .iter()
        .map(|&i| stopped[i] && cx.profiles[i].max_abs() > 0.0)
        .collect();
    let (a, b) = sustained(&flags)?;
    if b + 1 != valued.len() {
        return None;
    }
    let (first, last) = (valued[a], valued[b]);
    let not_learning = cx.loss_curve.filter(|curve| !curve.learned());
    let severity = if not_learning.is_some() {
        Severity::Error
    } else {
        Severity::Warning
    };
    let loss = not_learning.map_or(String::new(), |curve| {
        format!(", and {} does not fall", curve.tag)
    });
    Some(cx.finding(
        Kind::Stuck,
        (first, last),
        severity,
        &[("scale", cx.profiles[last].scale())],
        format!(
            "its parameter stands still from step {} while the gradient is not zero (scale \
             {}){loss}: the optimizer does not update it; check that the optimizer was built \
             over this model's parameters (not another copy's), that they require grad, and \
             the learning rate",
            cx.steps[first],
            sci(cx.profiles[last].scale()),
        ),
    ))
}
