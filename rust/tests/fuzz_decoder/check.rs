//! The properties: what the decoder gave, checked against the bytes it was given.

use std::collections::{HashMap, HashSet};

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use histoscope::read::event_file::{decode_records, PointView, Sink};
use histoscope::read::masked_crc::MaskedCrc;
use histoscope::read::report::{Damage, DamageKind, FileReport};
use histoscope::read::tf_record::RecordReader;

use super::{peak_bytes, BYTES_PER_INPUT_BYTE, FIXED_BYTES};

/// What the decoder handed its sink, in order.
#[derive(Debug, Default)]
struct Recorded {
    /// The end offset of each record read whole, and whether it gave data.
    records: Vec<(u64, bool)>,
    pending: bool,
    histograms: usize,
}

impl Sink for Recorded {
    fn histogram(&mut self, _: &str, point: PointView<'_>, _: bool) {
        assert_eq!(
            point.buckets.len() % 3,
            0,
            "buckets come in (left, right, count) rows"
        );
        self.pending = true;
        self.histograms += 1;
    }

    fn start(&mut self, _: i64) {
        self.pending = true;
    }

    fn progress(&mut self, offset: u64, _: Option<u64>) {
        self.records.push((offset, self.pending));
        self.pending = false;
    }
}

/// The payload of the frame that is exactly `bytes`, if both its checksums hold.
pub(super) fn intact_payload(bytes: &[u8]) -> Option<&[u8]> {
    let header = bytes.get(..12)?;
    let length = u64::from_le_bytes(header[..8].try_into().ok()?);
    let stored = |at: usize| MaskedCrc::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
    if MaskedCrc::compute(&header[..8]) != stored(8) || length != bytes.len() as u64 - 16 {
        return None;
    }
    let data = &bytes[12..bytes.len() - 4];
    (MaskedCrc::compute(data) == stored(bytes.len() - 4)).then_some(data)
}

/// Whether damage is a stretch skipped by the framing (not a record that was read).
fn is_gap(d: &Damage) -> bool {
    matches!(
        d.kind,
        DamageKind::BadDataChecksum | DamageKind::BadLengthChecksum
    )
}

/// Checks that records and reported damage tile the input, each record intact.
fn check_accounting(
    bytes: &[u8],
    recorded: &Recorded,
    report: &FileReport,
    known: &HashSet<Vec<u8>>,
    framed_again: &[Vec<u8>],
) -> Result<(), TestCaseError> {
    prop_assert!(
        report.error.is_none(),
        "no I/O error on a slice: {:?}",
        report.error
    );
    let mut pos = 0u64;
    let mut damage = report.damaged.iter().peekable();
    for &(end, gave_data) in &recorded.records {
        while let Some(d) = damage.next_if(|d| d.offset == pos && is_gap(d)) {
            prop_assert!(d.length > 0);
            pos += d.length;
        }
        prop_assert!(end > pos, "record ending at {end} starts after {pos}");
        let frame = &bytes[pos as usize..end as usize];
        let payload = intact_payload(frame);
        prop_assert!(
            payload.is_some(),
            "bytes {pos}-{end} read as a record, checksums fail"
        );
        let payload = payload.unwrap();
        // A frame header is itself an intact frame of 8 bytes (the length,
        // then its checksum), so a header the mutations wrote in front of
        // another header reads as a record: checksums held, nobody wrote it.
        let a_header = payload.len() == 8;
        prop_assert!(
            known.contains(payload) || framed_again.iter().any(|p| p == payload) || a_header,
            "bytes {pos}-{end}: a record no writer wrote"
        );
        if let Some(d) = damage.next_if(|d| d.offset == pos && !is_gap(d)) {
            prop_assert_eq!(d.offset + d.length, end);
            prop_assert!(matches!(
                d.kind,
                DamageKind::Unparsable | DamageKind::BadValue(_)
            ));
            prop_assert!(
                !(gave_data && matches!(d.kind, DamageKind::Unparsable)),
                "bytes {pos}-{end}: a record that is not an Event gave data"
            );
        }
        pos = end;
    }
    while let Some(d) = damage.next_if(|d| d.offset == pos && is_gap(d)) {
        pos += d.length;
    }
    prop_assert!(
        damage.next().is_none(),
        "damage out of order: {:?}",
        report.damaged
    );
    match report.incomplete_tail {
        Some(tail) => prop_assert_eq!(tail, pos, "the tail starts where reading stopped"),
        None => prop_assert_eq!(pos, bytes.len() as u64, "every byte accounted for"),
    }
    Ok(())
}

/// Decodes `bytes` as the reader of a local file (length known) and of a
/// stream (length unknown) does, and checks both.
pub(super) fn check(
    bytes: &[u8],
    framed_again: &[Vec<u8>],
    known: &HashSet<Vec<u8>>,
) -> Result<(), TestCaseError> {
    for limit in [Some(bytes.len() as u64), None] {
        let (peak, (recorded, report)) = peak_bytes(|| {
            let mut recorded = Recorded::default();
            let mut plugins = HashMap::new();
            let mut report = FileReport::default();
            let reader = RecordReader::new(bytes, limit);
            decode_records(reader, None, &mut recorded, &mut plugins, &mut report);
            (recorded, report)
        });
        let allowed = FIXED_BYTES + BYTES_PER_INPUT_BYTE * bytes.len();
        prop_assert!(
            peak <= allowed,
            "{peak} bytes held for {} bytes of input (limit {limit:?})",
            bytes.len()
        );
        check_accounting(bytes, &recorded, &report, known, framed_again)?;
    }
    Ok(())
}
