//! The spectral figures `watch(spectral=True)` logs, read as context: a layer whose α
//! lies outside the band WeightWatcher's authors publish for well-trained layers.
//!
//! Martin and Mahoney report α from 2 to 6 for the layers of well-trained models, α
//! above 6 for layers that learned little (a spectrum still near a random matrix's),
//! and α below 2 for layers that may be over-trained. These are observations over
//! published models, not thresholds tuned on histoscope's zoo, so a finding here is
//! only ever `Info`: it says where a layer stands, never that training is broken.

use super::wording::sci;
use super::{Finding, Kind, Role, Severity};
use crate::logdir::evidence::ScalarSeries;

/// WeightWatcher's published band for the α of well-trained layers.
pub const ALPHA_BAND: (f64, f64) = (2.0, 6.0);

/// The last word of an α scalar's key: `spectrum/<name>/alpha`.
const ALPHA_SUFFIX: &str = "/alpha";

/// Whether a scalar is an α that [`alpha_band`] judges.
pub(super) fn is_alpha(tag: &str, role: Role) -> bool {
    role == Role::Spectrum && tag.ends_with(ALPHA_SUFFIX)
}

/// Whether an α lies outside [`ALPHA_BAND`].
pub(super) fn outside(alpha: f64) -> bool {
    alpha.is_finite() && !(ALPHA_BAND.0..=ALPHA_BAND.1).contains(&alpha)
}

/// A spectrum's α that ends outside [`ALPHA_BAND`]: one `Info` finding over the last
/// stretch of steps outside it. Only the last value decides: a freshly initialised
/// layer's α is usually far above 6, and leaves the band's top as it learns.
pub(super) fn alpha_band(run: &str, series: &ScalarSeries, role: Role) -> Option<Finding> {
    if !is_alpha(&series.tag, role) {
        return None;
    }
    let (low, high) = ALPHA_BAND;
    let last = *series.values.last()?;
    if !outside(last) {
        return None;
    }
    let from = series
        .values
        .iter()
        .rposition(|&v| !outside(v))
        .map_or(0, |i| i + 1);
    let stretch = series.values.len() - from;
    let (first_step, last_step) = (series.steps[from], *series.steps.last()?);
    let reading = if last > high {
        "above 6, where WeightWatcher's authors find layers that learned little \
         (a spectrum still close to a random matrix's)"
    } else {
        "below 2, where WeightWatcher's authors find layers that may be over-trained"
    };
    let layer = series.tag.trim_end_matches(ALPHA_SUFFIX);
    Some(Finding {
        kind: Kind::Spectral,
        run: run.to_owned(),
        key: series.tag.clone(),
        role,
        first_step,
        last_step,
        severity: Severity::Info,
        evidence: vec![
            ("alpha".to_owned(), last),
            ("band_low".to_owned(), low),
            ("band_high".to_owned(), high),
            ("steps_outside".to_owned(), stretch as f64),
        ],
        message: format!(
            "{}: α of {layer} is {} at step {last_step}, outside WeightWatcher's published \
             band of 2 to 6 for {stretch} of {} logged steps since step {first_step}: {reading}; \
             context for reading the layer, not a verdict on training",
            series.tag,
            short(last),
            series.values.len(),
        ),
    })
}

/// α as people write it: `7.31`; `sci` for the far ends.
fn short(x: f64) -> String {
    if (0.01..1e4).contains(&x.abs()) {
        format!("{x:.2}")
    } else {
        sci(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alpha(values: &[f64]) -> ScalarSeries {
        ScalarSeries {
            tag: "spectrum/fc.weight/alpha".into(),
            steps: (0..values.len() as i64).map(|s| s * 10).collect(),
            values: values.to_vec(),
        }
    }

    #[test]
    fn an_alpha_that_ends_outside_the_band_is_said_as_info() {
        let found = alpha_band("r", &alpha(&[9.0, 4.0, 3.5, 7.25, 8.0]), Role::Spectrum).unwrap();
        assert_eq!(found.severity, Severity::Info);
        assert_eq!(found.kind, Kind::Spectral);
        assert_eq!((found.first_step, found.last_step), (30, 40));
        assert_eq!(found.evidence[0], ("alpha".to_owned(), 8.0));
        assert_eq!(found.evidence[3], ("steps_outside".to_owned(), 2.0));
        assert!(found.message.starts_with(
            "spectrum/fc.weight/alpha: α of spectrum/fc.weight is 8.00 at step 40, outside"
        ));
        assert!(found.message.contains("learned little"));
        let low = alpha_band("r", &alpha(&[1.5, 1.7]), Role::Spectrum).unwrap();
        assert_eq!(low.first_step, 0);
        assert!(low.message.contains("over-trained"));
    }

    #[test]
    fn an_alpha_back_in_the_band_or_not_an_alpha_says_nothing() {
        assert!(alpha_band("r", &alpha(&[9.0, 7.0, 5.0]), Role::Spectrum).is_none());
        assert!(alpha_band("r", &alpha(&[2.0, 6.0]), Role::Spectrum).is_none());
        assert!(alpha_band("r", &alpha(&[9.0]), Role::Other).is_none());
        let mut rank = alpha(&[90.0]);
        rank.tag = "spectrum/fc.weight/stable_rank".into();
        assert!(alpha_band("r", &rank, Role::Spectrum).is_none());
        assert!(alpha_band("r", &alpha(&[]), Role::Spectrum).is_none());
    }
}
