//! The 16-bit floats (IEEE binary16 and bfloat16) that tensors and arrays store, widened to float64.

/// Which 16-bit float a value's bits hold. NumPy has no bfloat16 and PyTorch's
/// tensors reach NumPy as uint16 bits, so an array of either comes as uint16
/// and this says how to read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HalfFloat {
    /// IEEE 754 binary16, NumPy's and PyTorch's float16.
    Float16,
    /// bfloat16: the top half of a float32.
    Bfloat16,
}

impl HalfFloat {
    /// Every 16-bit float, in the order of their names.
    pub const ALL: [HalfFloat; 2] = [HalfFloat::Float16, HalfFloat::Bfloat16];

    /// The dtype's name, as NumPy and PyTorch spell it.
    pub fn name(self) -> &'static str {
        match self {
            HalfFloat::Float16 => "float16",
            HalfFloat::Bfloat16 => "bfloat16",
        }
    }

    /// The 16-bit float named `name` ("float16" or "bfloat16").
    pub fn from_name(name: &str) -> Option<HalfFloat> {
        HalfFloat::ALL.into_iter().find(|h| h.name() == name)
    }
}

/// IEEE 754 binary16 to float64.
pub fn half_to_f64(bits: u16) -> f64 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exponent = i32::from((bits >> 10) & 0x1f);
    let mantissa = f64::from(bits & 0x3ff);
    sign * match exponent {
        0 => mantissa * 2f64.powi(-24),
        31 if mantissa == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        e => (1.0 + mantissa / 1024.0) * 2f64.powi(e - 15),
    }
}

/// bfloat16 (the top half of a float32) to float64.
pub fn bfloat16_to_f64(bits: u16) -> f64 {
    f64::from(f32::from_bits(u32::from(bits) << 16))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for half in HalfFloat::ALL {
            assert_eq!(HalfFloat::from_name(half.name()), Some(half));
        }
        assert_eq!(HalfFloat::from_name("float32"), None);
    }

    #[test]
    fn half_specials() {
        assert_eq!(half_to_f64(0x7c00), f64::INFINITY);
        assert!(half_to_f64(0x7e00).is_nan());
        assert_eq!(half_to_f64(0x0001), 2f64.powi(-24));
        assert_eq!(half_to_f64(0x8000), -0.0);
    }

    #[test]
    fn every_half_widens_as_float32_does() {
        for bits in 0..=u16::MAX {
            let bf = bfloat16_to_f64(bits);
            let f = f32::from_bits(u32::from(bits) << 16);
            assert!(bf.to_bits() == f64::from(f).to_bits() || (bf.is_nan() && f.is_nan()));
        }
        assert_eq!(half_to_f64(0x3c00), 1.0);
        assert_eq!(half_to_f64(0x7bff), 65504.0);
        assert_eq!(half_to_f64(0x0400), 2f64.powi(-14));
    }
}
