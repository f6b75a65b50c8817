//! The masked CRC-32C that TFRecord framing stores after each length and each payload.

use std::fmt;

/// A CRC-32C (Castagnoli) checksum after TensorFlow's masking.
///
/// TensorFlow masks its checksums so that a CRC of data that itself holds CRCs
/// does not collapse to trivial values (`tensorflow/core/lib/hash/crc32c.h`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MaskedCrc(pub u32);

const MASK_DELTA: u32 = 0xa282_ead8;

impl MaskedCrc {
    /// The masked checksum of `bytes`.
    pub fn compute(bytes: &[u8]) -> Self {
        Self::mask(crc32c::crc32c(bytes))
    }

    /// Masks a raw CRC-32C: rotate right by 15 bits, then add a constant.
    pub fn mask(crc: u32) -> Self {
        MaskedCrc(crc.rotate_right(15).wrapping_add(MASK_DELTA))
    }

    /// Reads a checksum stored little-endian, as TFRecord files hold it.
    pub fn from_le_bytes(bytes: [u8; 4]) -> Self {
        MaskedCrc(u32::from_le_bytes(bytes))
    }
}

impl fmt::Display for MaskedCrc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#010x}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_of_known_string() {
        // RFC 3720, B.4: CRC-32C of "123456789".
        assert_eq!(crc32c::crc32c(b"123456789"), 0xe306_9283);
    }

    #[test]
    fn mask_rotates_and_adds_delta() {
        assert_eq!(MaskedCrc::mask(0), MaskedCrc(MASK_DELTA));
        assert_eq!(MaskedCrc::mask(1 << 15), MaskedCrc(1 + MASK_DELTA));
        assert_eq!(
            MaskedCrc::mask(1),
            MaskedCrc((1u32 << 17).wrapping_add(MASK_DELTA))
        );
    }

    #[test]
    fn length_header_of_a_real_file() {
        // The header of the first record of a file that PyTorch's SummaryWriter
        // wrote (tests/fixtures' torch_writer): a length of 72, then its CRC.
        let header = [0x48, 0, 0, 0, 0, 0, 0, 0, 0xfe, 0x92, 0x48, 0x9d];
        let stored = MaskedCrc::from_le_bytes([header[8], header[9], header[10], header[11]]);
        assert_eq!(MaskedCrc::compute(&header[..8]), stored);
    }
}
