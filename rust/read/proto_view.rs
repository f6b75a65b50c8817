//! Borrowed views of the `Event` fields that histograms need, read with [`crate::read::wire`].
//!
//! Field numbers follow `tensorboard/compat/proto/{event,summary,histogram,tensor}.proto`.
//! Repeated numbers stay in the record's bytes; they are copied only when a
//! writer split one field into several runs, which TensorFlow never does.

use std::borrow::Cow;

use crate::read::proto::{HistogramProto, HistoscopeStats, HISTOSCOPE_FIELD, SESSION_START};
use crate::read::wire::{fields, Wire, WireError};

/// An `Event`: its step, wall time, summary bytes and whether it is a `SessionLog.START`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct EventView<'a> {
    pub wall_time: f64,
    pub step: i64,
    pub summary: Option<&'a [u8]>,
    pub session_start: bool,
}

impl<'a> EventView<'a> {
    pub fn decode(event: &'a [u8]) -> Result<Self, WireError> {
        let mut view = EventView::default();
        for field in fields(event) {
            match field? {
                (1, v) => view.wall_time = v.double(1)?,
                (2, v) => view.step = v.int(2)?,
                (5, v) => view.summary = Some(v.bytes(5)?),
                (7, v) => view.session_start = session_status(v.bytes(7)?)? == SESSION_START as i64,
                _ => {}
            }
        }
        Ok(view)
    }
}

fn session_status(log: &[u8]) -> Result<i64, WireError> {
    let mut status = 0;
    for field in fields(log) {
        if let (1, v) = field? {
            status = v.int(1)?;
        }
    }
    Ok(status)
}

/// A `Summary.Value`: its tag, the plugin its metadata names (and that plugin's
/// content), and its payload: a histogram, a tensor or a scalar's `simple_value`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ValueView<'a> {
    pub tag: &'a str,
    pub plugin: Option<&'a str>,
    pub plugin_content: Option<&'a [u8]>,
    pub histo: Option<&'a [u8]>,
    pub tensor: Option<&'a [u8]>,
    pub simple_value: Option<f32>,
}

/// The values of a `Summary`, in order.
pub fn summary_values(summary: &[u8]) -> impl Iterator<Item = Result<ValueView<'_>, WireError>> {
    fields(summary).filter_map(|field| match field {
        Ok((1, v)) => Some(v.bytes(1).and_then(ValueView::decode)),
        Ok(_) => None,
        Err(e) => Some(Err(e)),
    })
}

impl<'a> ValueView<'a> {
    pub fn decode(value: &'a [u8]) -> Result<Self, WireError> {
        let mut view = ValueView::default();
        for field in fields(value) {
            match field? {
                (1, v) => view.tag = v.str(1)?,
                (2, v) => view.simple_value = Some(v.float(2)?),
                (5, v) => view.histo = Some(v.bytes(5)?),
                (8, v) => view.tensor = Some(v.bytes(8)?),
                (9, v) => (view.plugin, view.plugin_content) = plugin_data(v.bytes(9)?)?,
                _ => {}
            }
        }
        Ok(view)
    }
}

/// `SummaryMetadata.plugin_data`: its `plugin_name` and its `content`, where set.
fn plugin_data(metadata: &[u8]) -> Result<(Option<&str>, Option<&[u8]>), WireError> {
    let (mut name, mut content) = (None, None);
    for field in fields(metadata) {
        if let (1, plugin_data) = field? {
            for inner in fields(plugin_data.bytes(1)?) {
                match inner? {
                    (1, v) => name = Some(v.str(1)?),
                    (2, v) => content = Some(v.bytes(2)?),
                    _ => {}
                }
            }
        }
    }
    Ok((name, content))
}

/// Little-endian doubles as a packed repeated field stores them.
#[derive(Debug, Clone, PartialEq)]
pub struct Doubles<'a>(Cow<'a, [u8]>);

impl<'a> Doubles<'a> {
    pub fn len(&self) -> usize {
        self.0.len() / 8
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn get(&self, i: usize) -> f64 {
        f64::from_le_bytes(self.0[8 * i..8 * i + 8].try_into().expect("8 bytes"))
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = f64> + ExactSizeIterator + '_ {
        self.0
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
    }

    fn from_values(values: &[f64]) -> Doubles<'static> {
        Doubles(Cow::Owned(
            values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        ))
    }

    /// Adds one more value: a field written unpacked, one value per tag.
    fn push(&mut self, bytes: [u8; 8]) {
        self.0.to_mut().extend_from_slice(&bytes);
    }

    fn extend_packed(&mut self, packed: &'a [u8]) -> Result<(), WireError> {
        if !packed.len().is_multiple_of(8) {
            return Err(WireError::PackedLength {
                bytes: packed.len(),
                width: 8,
            });
        }
        if self.0.is_empty() {
            // The usual case, one packed run: borrowed, nothing is copied.
            self.0 = Cow::Borrowed(packed);
        } else {
            self.0.to_mut().extend_from_slice(packed);
        }
        Ok(())
    }
}

/// A `HistogramProto`, its repeated fields left in the record's bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramView<'a> {
    pub min: f64,
    pub max: f64,
    pub num: f64,
    pub sum: f64,
    pub sum_squares: f64,
    pub limits: Doubles<'a>,
    pub counts: Doubles<'a>,
    pub histoscope: Option<HistoscopeStats>,
}

impl<'a> HistogramView<'a> {
    pub fn decode(histo: &'a [u8]) -> Result<Self, WireError> {
        let mut view = HistogramView::from(&HistogramProto::default());
        for field in fields(histo) {
            match field? {
                (1, v) => view.min = v.double(1)?,
                (2, v) => view.max = v.double(2)?,
                (3, v) => view.num = v.double(3)?,
                (4, v) => view.sum = v.double(4)?,
                (5, v) => view.sum_squares = v.double(5)?,
                (n @ (6 | 7), v) => {
                    let list = if n == 6 {
                        &mut view.limits
                    } else {
                        &mut view.counts
                    };
                    match v {
                        Wire::Bytes(b) => list.extend_packed(b)?,
                        Wire::Fixed64(b) => list.push(b),
                        _ => return Err(WireError::UnexpectedType(n)),
                    }
                }
                (HISTOSCOPE_FIELD, v) => {
                    view.histoscope = Some(histoscope_stats(v.bytes(HISTOSCOPE_FIELD)?)?)
                }
                _ => {}
            }
        }
        Ok(view)
    }
}

/// histoscope's extension of a `HistogramProto` (see [`HistoscopeStats`]).
fn histoscope_stats(bytes: &[u8]) -> Result<HistoscopeStats, WireError> {
    let mut stats = HistoscopeStats::default();
    for field in fields(bytes) {
        let (number, v) = field?;
        let slot = match number {
            1 => &mut stats.first_edge,
            2 => &mut stats.count,
            3 => &mut stats.min,
            4 => &mut stats.max,
            5 => &mut stats.mean,
            6 => &mut stats.std,
            7 => &mut stats.nonfinite,
            8 => &mut stats.below,
            9 => &mut stats.above,
            _ => continue,
        };
        *slot = v.double(number)?;
    }
    Ok(stats)
}

/// How a repeated numeric field stores each value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Fixed32,
    Fixed64,
    Varint,
}

/// The values of a repeated numeric field, as its packed bytes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Repeated<'a>(Cow<'a, [u8]>);

impl<'a> Repeated<'a> {
    /// Adds a packed run or one unpacked value, checked to hold whole values.
    fn extend(
        &mut self,
        number: u32,
        value: Wire<'a>,
        encoding: Encoding,
    ) -> Result<(), WireError> {
        match (value, encoding) {
            (Wire::Bytes(packed), _) => {
                check_packed(packed, encoding)?;
                if self.0.is_empty() {
                    // The usual case, one packed run: borrowed, nothing is copied.
                    self.0 = Cow::Borrowed(packed);
                } else {
                    self.0.to_mut().extend_from_slice(packed);
                }
            }
            (Wire::Fixed32(b), Encoding::Fixed32) => self.0.to_mut().extend_from_slice(&b),
            (Wire::Fixed64(b), Encoding::Fixed64) => self.0.to_mut().extend_from_slice(&b),
            (Wire::Varint(mut v), Encoding::Varint) => {
                let bytes = self.0.to_mut();
                while v >= 0x80 {
                    bytes.push(v as u8 | 0x80);
                    v >>= 7;
                }
                bytes.push(v as u8);
            }
            _ => return Err(WireError::UnexpectedType(number)),
        }
        Ok(())
    }

    /// The number of values, for a field stored with `encoding`.
    pub fn len(&self, encoding: Encoding) -> usize {
        match encoding {
            Encoding::Fixed32 => self.0.len() / 4,
            Encoding::Fixed64 => self.0.len() / 8,
            Encoding::Varint => self.0.iter().filter(|&&b| b < 0x80).count(),
        }
    }

    /// The values of a fixed-width field, as little-endian bytes of `N`.
    pub fn fixed<const N: usize>(&self) -> impl Iterator<Item = [u8; N]> + '_ {
        self.0
            .chunks_exact(N)
            .map(|c| c.try_into().expect("chunks of N bytes"))
    }

    /// The values of a varint field, as the 64 bits protobuf stores.
    pub fn varints(&self) -> impl Iterator<Item = u64> + '_ {
        let mut rest: &[u8] = &self.0;
        std::iter::from_fn(move || {
            let mut value = 0u64;
            for (i, &byte) in rest.iter().enumerate() {
                value |= u64::from(byte & 0x7f)
                    .checked_shl(7 * i as u32)
                    .unwrap_or(0);
                if byte < 0x80 {
                    rest = &rest[i + 1..];
                    return Some(value);
                }
            }
            None
        })
    }
}

/// Whether packed bytes hold whole values: a multiple of the width, or
/// varints of at most 10 bytes with the last one finished.
fn check_packed(packed: &[u8], encoding: Encoding) -> Result<(), WireError> {
    let width = match encoding {
        Encoding::Fixed32 => 4,
        Encoding::Fixed64 => 8,
        Encoding::Varint => {
            let mut run = 0;
            for &byte in packed {
                run += 1;
                if run > 10 {
                    return Err(WireError::BadVarint);
                }
                if byte < 0x80 {
                    run = 0;
                }
            }
            return if run == 0 {
                Ok(())
            } else {
                Err(WireError::Truncated)
            };
        }
    };
    if packed.len().is_multiple_of(width) {
        Ok(())
    } else {
        Err(WireError::PackedLength {
            bytes: packed.len(),
            width,
        })
    }
}

/// A `TensorProto`: its dtype, its shape, and its values left in the record's bytes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TensorView<'a> {
    pub dtype: i32,
    /// The `TensorShapeProto`'s bytes; several runs of it merge, as protobuf merges messages.
    pub shape: Cow<'a, [u8]>,
    pub content: &'a [u8],
    pub float_val: Repeated<'a>,
    pub double_val: Repeated<'a>,
    pub int_val: Repeated<'a>,
    pub int64_val: Repeated<'a>,
    pub bool_val: Repeated<'a>,
    pub half_val: Repeated<'a>,
    pub uint32_val: Repeated<'a>,
    pub uint64_val: Repeated<'a>,
}

impl<'a> TensorView<'a> {
    pub fn decode(tensor: &'a [u8]) -> Result<Self, WireError> {
        let mut view = TensorView::default();
        for field in fields(tensor) {
            let (number, v) = field?;
            let (list, encoding) = match number {
                1 => {
                    view.dtype = v.int(1)? as i32;
                    continue;
                }
                2 => {
                    let shape = v.bytes(2)?;
                    if view.shape.is_empty() {
                        view.shape = Cow::Borrowed(shape);
                    } else {
                        view.shape.to_mut().extend_from_slice(shape);
                    }
                    continue;
                }
                4 => {
                    view.content = v.bytes(4)?;
                    continue;
                }
                5 => (&mut view.float_val, Encoding::Fixed32),
                6 => (&mut view.double_val, Encoding::Fixed64),
                7 => (&mut view.int_val, Encoding::Varint),
                10 => (&mut view.int64_val, Encoding::Varint),
                11 => (&mut view.bool_val, Encoding::Varint),
                13 => (&mut view.half_val, Encoding::Varint),
                16 => (&mut view.uint32_val, Encoding::Varint),
                17 => (&mut view.uint64_val, Encoding::Varint),
                _ => continue,
            };
            list.extend(number, v, encoding)?;
        }
        Ok(view)
    }

    /// The sizes of the shape's dimensions, in order.
    pub fn dims(&self) -> impl Iterator<Item = Result<i64, WireError>> + '_ {
        fields(&self.shape).filter_map(|field| match field {
            Ok((2, dim)) => Some(dim.bytes(2).and_then(dim_size)),
            Ok(_) => None,
            Err(e) => Some(Err(e)),
        })
    }
}

/// `TensorShapeProto.Dim.size`.
fn dim_size(dim: &[u8]) -> Result<i64, WireError> {
    let mut size = 0;
    for field in fields(dim) {
        if let (1, v) = field? {
            size = v.int(1)?;
        }
    }
    Ok(size)
}

impl From<&HistogramProto> for HistogramView<'static> {
    fn from(h: &HistogramProto) -> Self {
        HistogramView {
            min: h.min,
            max: h.max,
            num: h.num,
            sum: h.sum,
            sum_squares: h.sum_squares,
            limits: Doubles::from_values(&h.bucket_limit),
            counts: Doubles::from_values(&h.bucket),
            histoscope: h.histoscope.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::proto::{
        Dim, Event, PluginData, SessionLog, Summary, SummaryMetadata, SummaryValue, TensorProto,
        TensorShapeProto,
    };
    use bytes::Bytes;
    use prost::Message;

    fn proto() -> HistogramProto {
        HistogramProto {
            min: -1.0,
            max: 2.0,
            num: 3.0,
            sum: 1.5,
            sum_squares: 4.0,
            bucket_limit: vec![0.0, 1.0, f64::MAX],
            bucket: vec![1.0, 0.0, 2.0],
            histoscope: Some(HistoscopeStats {
                first_edge: -1.0,
                count: 3.0,
                ..Default::default()
            }),
        }
    }

    #[test]
    fn histogram_view_equals_prost_decoding() {
        let bytes = proto().encode_to_vec();
        let view = HistogramView::decode(&bytes).unwrap();
        assert_eq!(view, HistogramView::from(&proto()));
        assert!(matches!(view.limits.0, Cow::Borrowed(_)));
        assert_eq!(view.counts.iter().collect::<Vec<_>>(), vec![1.0, 0.0, 2.0]);
    }

    #[test]
    fn unpacked_repeated_doubles_are_accepted() {
        // field 6, wire type 1, twice; then field 7 packed
        let mut bytes = vec![0x31];
        bytes.extend_from_slice(&1.0f64.to_le_bytes());
        bytes.push(0x31);
        bytes.extend_from_slice(&2.0f64.to_le_bytes());
        bytes.extend_from_slice(&[0x3a, 16]);
        bytes.extend_from_slice(&5.0f64.to_le_bytes());
        bytes.extend_from_slice(&6.0f64.to_le_bytes());
        let view = HistogramView::decode(&bytes).unwrap();
        assert_eq!(view.limits.iter().collect::<Vec<_>>(), vec![1.0, 2.0]);
        assert_eq!(view.counts.iter().collect::<Vec<_>>(), vec![5.0, 6.0]);
        assert!(HistogramView::decode(&[0x3a, 3, 1, 2, 3]).is_err());
    }

    #[test]
    fn event_and_values() {
        let metadata = SummaryMetadata {
            plugin_data: Some(PluginData {
                plugin_name: "histograms".into(),
                content: Bytes::new(),
            }),
        };
        let value = SummaryValue {
            tag: "t".into(),
            tensor: Some(Bytes::from_static(b"\x08\x02")),
            metadata: Some(metadata),
            ..Default::default()
        };
        let event = Event {
            wall_time: 3.0,
            step: 9,
            summary: Some(Summary { value: vec![value] }),
            session_log: Some(SessionLog {
                status: SESSION_START,
            }),
            ..Default::default()
        };
        let bytes = event.encode_to_vec();
        let view = EventView::decode(&bytes).unwrap();
        assert_eq!(
            (view.wall_time, view.step, view.session_start),
            (3.0, 9, true)
        );
        let values: Vec<ValueView<'_>> = summary_values(view.summary.unwrap())
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            values,
            vec![ValueView {
                tag: "t",
                plugin: Some("histograms"),
                tensor: Some(b"\x08\x02"),
                ..Default::default()
            }]
        );
    }

    #[test]
    fn a_scalar_and_plugin_content() {
        let value = SummaryValue {
            tag: "loss".into(),
            simple_value: Some(0.25),
            metadata: Some(SummaryMetadata {
                plugin_data: Some(PluginData {
                    plugin_name: "p".into(),
                    content: Bytes::from_static(b"xy"),
                }),
            }),
            ..Default::default()
        };
        let bytes = value.encode_to_vec();
        let view = ValueView::decode(&bytes).unwrap();
        assert_eq!(view.simple_value, Some(0.25));
        assert_eq!(
            (view.plugin, view.plugin_content),
            (Some("p"), Some(&b"xy"[..]))
        );
    }

    #[test]
    fn tensor_view_reads_packed_and_unpacked_values_and_merges_shapes() {
        let t = TensorProto {
            dtype: 3,
            tensor_shape: Some(TensorShapeProto {
                dim: vec![Dim { size: 2 }, Dim { size: 3 }],
            }),
            int_val: vec![-1, 300, 7],
            int64_val: vec![i64::MIN],
            float_val: vec![0.5],
            ..Default::default()
        };
        let bytes = t.encode_to_vec();
        let view = TensorView::decode(&bytes).unwrap();
        assert_eq!(view.dtype, 3);
        assert!(matches!(view.int_val.0, Cow::Borrowed(_)));
        let dims: Vec<i64> = view.dims().collect::<Result<_, _>>().unwrap();
        assert_eq!(dims, vec![2, 3]);
        let ints: Vec<i32> = view.int_val.varints().map(|v| v as i32).collect();
        assert_eq!(ints, vec![-1, 300, 7]);
        assert_eq!(view.int_val.len(Encoding::Varint), 3);
        assert_eq!(view.int64_val.varints().next(), Some(i64::MIN as u64));
        assert_eq!(
            view.float_val.fixed::<4>().next(),
            Some(0.5f32.to_le_bytes())
        );

        // Unpacked: field 7 as two varints; the shape in two runs.
        let mut unpacked = vec![0x38, 0x05, 0x38, 0x80, 0x01];
        unpacked.extend_from_slice(&[0x12, 0x04, 0x12, 0x02, 0x08, 0x01]);
        unpacked.extend_from_slice(&[0x12, 0x04, 0x12, 0x02, 0x08, 0x03]);
        let view = TensorView::decode(&unpacked).unwrap();
        assert_eq!(view.int_val.varints().collect::<Vec<_>>(), vec![5, 128]);
        let dims: Vec<i64> = view.dims().collect::<Result<_, _>>().unwrap();
        assert_eq!(dims, vec![1, 3]);
    }

    #[test]
    fn damaged_tensors_are_errors() {
        // Packed floats of 3 bytes; a packed varint cut off; a float field as a varint.
        assert_eq!(
            TensorView::decode(&[0x2a, 3, 0, 0, 0]),
            Err(WireError::PackedLength { bytes: 3, width: 4 })
        );
        assert_eq!(
            TensorView::decode(&[0x3a, 1, 0x80]),
            Err(WireError::Truncated)
        );
        assert_eq!(
            TensorView::decode(&[0x28, 1]),
            Err(WireError::UnexpectedType(5))
        );
    }
}
