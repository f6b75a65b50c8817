//! The protobuf wire format, read in place: fields as numbers and borrowed slices.
//!
//! The hot path decodes `Event`s, legacy histograms and histogram tensors
//! with this instead of building messages, so a record's bytes are not
//! copied (only a repeated field split into several runs, which TensorFlow
//! never writes, is joined into one buffer) and skipped payloads (graphs,
//! images) cost nothing but a length.

use thiserror::Error;

/// Why bytes are not a well-formed protobuf message.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WireError {
    #[error("message ends inside a field")]
    Truncated,
    #[error("varint longer than 10 bytes")]
    BadVarint,
    #[error("unsupported wire type {0}")]
    WireType(u8),
    #[error("field {0} has the wrong wire type")]
    UnexpectedType(u32),
    #[error("string field is not UTF-8")]
    BadUtf8,
    #[error("packed field of {bytes} bytes is not a whole number of {width}-byte values")]
    PackedLength { bytes: usize, width: usize },
}

/// One field's value as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire<'a> {
    Varint(u64),
    Fixed64([u8; 8]),
    Bytes(&'a [u8]),
    Fixed32([u8; 4]),
}

impl<'a> Wire<'a> {
    /// The value of a `double` field.
    pub fn double(self, field: u32) -> Result<f64, WireError> {
        match self {
            Wire::Fixed64(b) => Ok(f64::from_le_bytes(b)),
            _ => Err(WireError::UnexpectedType(field)),
        }
    }

    /// The value of a `float` field.
    pub fn float(self, field: u32) -> Result<f32, WireError> {
        match self {
            Wire::Fixed32(b) => Ok(f32::from_le_bytes(b)),
            _ => Err(WireError::UnexpectedType(field)),
        }
    }

    /// The value of a varint field (`int64`, `int32`, enums), as protobuf sign-extends them.
    pub fn int(self, field: u32) -> Result<i64, WireError> {
        match self {
            Wire::Varint(v) => Ok(v as i64),
            _ => Err(WireError::UnexpectedType(field)),
        }
    }

    /// The bytes of a length-delimited field (bytes, string, message, packed).
    pub fn bytes(self, field: u32) -> Result<&'a [u8], WireError> {
        match self {
            Wire::Bytes(b) => Ok(b),
            _ => Err(WireError::UnexpectedType(field)),
        }
    }

    /// The value of a `string` field.
    pub fn str(self, field: u32) -> Result<&'a str, WireError> {
        std::str::from_utf8(self.bytes(field)?).map_err(|_| WireError::BadUtf8)
    }
}

/// The fields of a message, in order: `(field number, value)`.
pub struct Fields<'a> {
    rest: &'a [u8],
}

/// Iterates over the fields of `message`.
pub fn fields(message: &[u8]) -> Fields<'_> {
    Fields { rest: message }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u32, Wire<'a>), WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let field = self.field();
        if field.is_err() {
            self.rest = &[];
        }
        Some(field)
    }
}

impl<'a> Fields<'a> {
    fn field(&mut self) -> Result<(u32, Wire<'a>), WireError> {
        let key = self.varint()?;
        let number = (key >> 3) as u32;
        let value = match key & 7 {
            0 => Wire::Varint(self.varint()?),
            1 => Wire::Fixed64(self.take(8)?.try_into().expect("8 bytes")),
            2 => {
                let length = self.varint()?;
                let length = usize::try_from(length).map_err(|_| WireError::Truncated)?;
                Wire::Bytes(self.take(length)?)
            }
            5 => Wire::Fixed32(self.take(4)?.try_into().expect("4 bytes")),
            other => return Err(WireError::WireType(other as u8)),
        };
        Ok((number, value))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        if self.rest.len() < n {
            return Err(WireError::Truncated);
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    fn varint(&mut self) -> Result<u64, WireError> {
        let mut value = 0u64;
        for (i, &byte) in self.rest.iter().enumerate().take(10) {
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                self.rest = &self.rest[i + 1..];
                return Ok(value);
            }
        }
        Err(if self.rest.len() < 10 {
            WireError::Truncated
        } else {
            WireError::BadVarint
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::proto::{Event, Summary, SummaryValue};
    use prost::Message;

    #[test]
    fn reads_what_prost_writes() {
        let event = Event {
            wall_time: 1.5,
            step: -3,
            summary: Some(Summary {
                value: vec![SummaryValue {
                    tag: "w".into(),
                    simple_value: Some(2.0),
                    ..Default::default()
                }],
            }),
            ..Default::default()
        };
        let bytes = event.encode_to_vec();
        let got: Vec<(u32, Wire<'_>)> = fields(&bytes).collect::<Result<_, _>>().unwrap();
        assert_eq!(got[0], (1, Wire::Fixed64(1.5f64.to_le_bytes())));
        assert_eq!(got[1].1.int(2).unwrap(), -3);
        let summary = got[2].1.bytes(5).unwrap();
        let (_, value) = fields(summary).next().unwrap().unwrap();
        let value: Vec<_> = fields(value.bytes(1).unwrap())
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(value[0].1.str(1).unwrap(), "w");
        assert_eq!(value[1], (2, Wire::Fixed32(2.0f32.to_le_bytes())));
    }

    #[test]
    fn damaged_messages_are_errors_not_panics() {
        assert_eq!(
            fields(&[0x0a, 0x05, 1, 2]).next(),
            Some(Err(WireError::Truncated))
        );
        assert_eq!(
            fields(&[0x09, 1, 2]).next(),
            Some(Err(WireError::Truncated))
        );
        assert_eq!(fields(&[0x0b]).next(), Some(Err(WireError::WireType(3))));
        assert_eq!(
            fields(&[0x08, 0xff]).next(),
            Some(Err(WireError::Truncated))
        );
        assert_eq!(
            fields(&[0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1]).next(),
            Some(Err(WireError::BadVarint))
        );
        let mut after_error = fields(&[0x0b, 0x08, 0x01]);
        assert!(after_error.next().unwrap().is_err());
        assert!(after_error.next().is_none());
    }
}
