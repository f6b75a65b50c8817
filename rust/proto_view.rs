//! Borrowed views of the `Event` fields that histograms need, read with [`crate::wire`].
//!
//! Field numbers follow `tensorboard/compat/proto/{event,summary,histogram}.proto`.

use std::borrow::Cow;

use prost::Message;

use crate::proto::{HistogramProto, HistoscopeStats, SESSION_START};
use crate::wire::{fields, Wire, WireError};

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

/// A `Summary.Value`: its tag, the plugin its metadata names, and its payload if a histogram could be in it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ValueView<'a> {
    pub tag: &'a str,
    pub plugin: Option<&'a str>,
    pub histo: Option<&'a [u8]>,
    pub tensor: Option<&'a [u8]>,
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
                (5, v) => view.histo = Some(v.bytes(5)?),
                (8, v) => view.tensor = Some(v.bytes(8)?),
                (9, v) => view.plugin = plugin_name(v.bytes(9)?)?,
                _ => {}
            }
        }
        Ok(view)
    }
}

/// `SummaryMetadata.plugin_data.plugin_name`, if set.
fn plugin_name(metadata: &[u8]) -> Result<Option<&str>, WireError> {
    let mut name = None;
    for field in fields(metadata) {
        if let (1, plugin_data) = field? {
            for inner in fields(plugin_data.bytes(1)?) {
                if let (1, v) = inner? {
                    name = Some(v.str(1)?);
                }
            }
        }
    }
    Ok(name)
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
            return Err(WireError::PackedLength(packed.len()));
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
    pub fn decode(histo: &'a [u8]) -> Result<Self, String> {
        let mut view = HistogramView::from(&HistogramProto::default());
        for field in fields(histo) {
            match field.map_err(|e| e.to_string())? {
                (1, v) => view.min = v.double(1).map_err(|e| e.to_string())?,
                (2, v) => view.max = v.double(2).map_err(|e| e.to_string())?,
                (3, v) => view.num = v.double(3).map_err(|e| e.to_string())?,
                (4, v) => view.sum = v.double(4).map_err(|e| e.to_string())?,
                (5, v) => view.sum_squares = v.double(5).map_err(|e| e.to_string())?,
                (n @ (6 | 7), v) => {
                    let list = if n == 6 {
                        &mut view.limits
                    } else {
                        &mut view.counts
                    };
                    match v {
                        Wire::Bytes(b) => list.extend_packed(b).map_err(|e| e.to_string())?,
                        Wire::Fixed64(b) => list.push(b),
                        _ => return Err(WireError::UnexpectedType(n).to_string()),
                    }
                }
                (1000, v) => {
                    let bytes = v.bytes(1000).map_err(|e| e.to_string())?;
                    let stats = HistoscopeStats::decode(bytes).map_err(|e| e.to_string())?;
                    view.histoscope = Some(stats);
                }
                _ => {}
            }
        }
        Ok(view)
    }
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
    use crate::proto::{Event, PluginData, SessionLog, Summary, SummaryMetadata, SummaryValue};
    use bytes::Bytes;

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
                histo: None,
                tensor: Some(b"\x08\x02")
            }]
        );
    }
}
