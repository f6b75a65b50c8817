//! How findings write their numbers and a series' role.

use super::Role;

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
    fn helpers_format_numbers() {
        assert_eq!(sci(1.234e-19), "1.2e-19");
        assert_eq!(power_of_ten(1.1e14), "10^14");
        assert_eq!(percent(0.987), "99%");
    }
}
