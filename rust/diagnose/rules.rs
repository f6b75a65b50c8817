//! Which rules a series' role calls: nonfinite values for any series, growth for all
//! but metrics, and the rules of gradients, activations and parameters.
//!
//! Every threshold was set from real trainings (see `docs/diagnosis.md`): far
//! enough from what healthy runs showed that they stay quiet, close enough to
//! what broken runs showed that those are caught.

use super::activations::{dead, saturated};
use super::collapsed::collapsed;
use super::context::Context;
use super::exploding::exploding;
use super::gradients::{stuck, vanishing};
use super::nonfinite::nonfinite;
use super::{Finding, Kind, Role};

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
