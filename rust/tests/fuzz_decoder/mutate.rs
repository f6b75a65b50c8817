//! The mutations: what is done to a window of framed records, and the bytes that result.

use proptest::prelude::*;

use histoscope::read::masked_crc::MaskedCrc;
use histoscope::read::tf_record::frame;

/// One way of damaging the framed records; indices are taken modulo what exists.
#[derive(Debug, Clone)]
pub(super) enum Mutation {
    FlipBit {
        at: usize,
        bit: u8,
    },
    Truncate {
        keep: usize,
    },
    Insert {
        at: usize,
        bytes: Vec<u8>,
    },
    /// A record's length replaced, its checksum fixed so that the reader believes it.
    LyingLength {
        record: usize,
        length: u64,
    },
    /// A record's payload replaced by random bytes, framed with valid checksums.
    Garbage {
        record: usize,
        payload: Vec<u8>,
    },
    /// Bytes of a record's payload changed, framed again with valid checksums.
    MutatePayload {
        record: usize,
        edits: Vec<(usize, u8)>,
    },
    /// A record's payload cut short, framed again with valid checksums.
    CutPayload {
        record: usize,
        keep: usize,
    },
    /// One varint of a record's protobuf (a field's value, a dtype, a shape's
    /// size or a nested message's length, at any depth) replaced, framed
    /// again with valid checksums: protobuf that is well-formed but lies.
    Varint {
        record: usize,
        which: usize,
        value: u64,
    },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let length = prop_oneof![
        any::<u64>(),
        (0u64..64),
        Just(u64::MAX),
        (u64::MAX - 32..=u64::MAX),
        (1u64 << 32..1u64 << 40),
    ];
    prop_oneof![
        (any::<usize>(), 0u8..8).prop_map(|(at, bit)| Mutation::FlipBit { at, bit }),
        any::<usize>().prop_map(|keep| Mutation::Truncate { keep }),
        (any::<usize>(), prop::collection::vec(any::<u8>(), 1..40))
            .prop_map(|(at, bytes)| Mutation::Insert { at, bytes }),
        (any::<usize>(), length)
            .prop_map(|(record, length)| Mutation::LyingLength { record, length }),
        (any::<usize>(), prop::collection::vec(any::<u8>(), 0..200))
            .prop_map(|(record, payload)| Mutation::Garbage { record, payload }),
        (
            any::<usize>(),
            prop::collection::vec((any::<usize>(), any::<u8>()), 1..6)
        )
            .prop_map(|(record, edits)| Mutation::MutatePayload { record, edits }),
        (any::<usize>(), any::<usize>())
            .prop_map(|(record, keep)| Mutation::CutPayload { record, keep }),
        (any::<usize>(), any::<usize>(), varint_value()).prop_map(|(record, which, value)| {
            Mutation::Varint {
                record,
                which,
                value,
            }
        }),
    ]
}

/// Values that make a varint lie: small, at type limits, negative, huge.
fn varint_value() -> impl Strategy<Value = u64> {
    prop_oneof![
        0u64..40,
        Just(u64::from(u32::MAX)),
        Just(1 << 31),
        Just(1 << 32),
        Just(i64::MIN as u64),
        Just(-1i64 as u64),
        Just(u64::MAX),
        any::<u64>(),
        (1u64 << 20..1u64 << 34),
    ]
}

/// A varint of a protobuf message, and the length prefixes of the messages
/// that hold it, outermost first, as (start, end, length).
#[derive(Debug, Clone)]
struct Found {
    start: usize,
    end: usize,
    parents: Vec<(usize, usize, u64)>,
}

/// Where the varints of a protobuf message lie, nested messages included.
/// Length-delimited fields that parse as messages are searched too;
/// anything that does not parse ends the search.
fn varints(message: &[u8], base: usize, parents: &[(usize, usize, u64)], out: &mut Vec<Found>) {
    let mut at = 0;
    let read = |at: &mut usize| -> Option<(u64, usize, usize)> {
        let start = *at;
        let mut value = 0u64;
        for i in 0..10 {
            let byte = *message.get(*at)?;
            *at += 1;
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte < 0x80 {
                return Some((value, start, *at));
            }
        }
        None
    };
    let found = |start: usize, end: usize| Found {
        start: base + start,
        end: base + end,
        parents: parents.to_vec(),
    };
    while at < message.len() {
        let Some((key, _, _)) = read(&mut at) else {
            return;
        };
        match key & 7 {
            0 => match read(&mut at) {
                Some((_, start, end)) => out.push(found(start, end)),
                None => return,
            },
            1 => at += 8,
            5 => at += 4,
            2 => {
                let Some((length, start, end)) = read(&mut at) else {
                    return;
                };
                out.push(found(start, end));
                let Some(inner) = usize::try_from(length)
                    .ok()
                    .and_then(|l| message.get(at..at.checked_add(l)?))
                else {
                    return;
                };
                let mut inside = parents.to_vec();
                inside.push((base + start, base + end, length));
                varints(inner, base + at, &inside, out);
                at += inner.len();
            }
            _ => return,
        }
    }
}

fn encode_varint(mut v: u64) -> Vec<u8> {
    let mut bytes = Vec::new();
    while v >= 0x80 {
        bytes.push(v as u8 | 0x80);
        v >>= 7;
    }
    bytes.push(v as u8);
    bytes
}

/// Replaces the varint `found` with `value`, and the lengths of the
/// messages that hold it by what that changes, so that they still parse.
fn replace_varint(payload: &mut Vec<u8>, found: &Found, value: u64) {
    let encoded = encode_varint(value);
    let mut grown = encoded.len() as i64 - (found.end - found.start) as i64;
    payload.splice(found.start..found.end, encoded);
    // The innermost first: the prefixes of outer messages lie before it.
    for &(start, end, length) in found.parents.iter().rev() {
        let encoded = encode_varint((length as i64 + grown) as u64);
        grown += encoded.len() as i64 - (end - start) as i64;
        payload.splice(start..end, encoded);
    }
}

/// A case: which records, and what is done to them.
#[derive(Debug, Clone)]
pub(super) struct Case {
    pub(super) file: usize,
    pub(super) first: usize,
    pub(super) count: usize,
    pub(super) mutations: Vec<Mutation>,
}

pub(super) fn case() -> impl Strategy<Value = Case> {
    (
        any::<usize>(),
        any::<usize>(),
        1usize..7,
        prop::collection::vec(mutation(), 1..4),
    )
        .prop_map(|(file, first, count, mutations)| Case {
            file,
            first,
            count,
            mutations,
        })
}

/// The damaged bytes, and the payloads the mutations framed with valid checksums.
pub(super) fn build(case: &Case, corpus: &[Vec<Vec<u8>>]) -> (Vec<u8>, Vec<Vec<u8>>) {
    let records = &corpus[case.file % corpus.len()];
    let first = case.first % records.len();
    let mut payloads: Vec<Vec<u8>> =
        records[first..(first + case.count).min(records.len())].to_vec();
    let mut framed_again = Vec::new();
    // Payload mutations first, on the records; then the framing ones, on the bytes.
    for m in &case.mutations {
        let n = payloads.len();
        match m {
            Mutation::Garbage { record, payload } => {
                payloads[record % n] = payload.clone();
                framed_again.push(payload.clone());
            }
            Mutation::MutatePayload { record, edits } => {
                let p = &mut payloads[record % n];
                for &(at, byte) in edits {
                    if !p.is_empty() {
                        let len = p.len();
                        p[at % len] = byte;
                    }
                }
                framed_again.push(p.clone());
            }
            Mutation::CutPayload { record, keep } => {
                let p = &mut payloads[record % n];
                p.truncate(keep % (p.len() + 1));
                framed_again.push(p.clone());
            }
            Mutation::Varint {
                record,
                which,
                value,
            } => {
                let p = &mut payloads[record % n];
                let mut found = Vec::new();
                varints(p, 0, &[], &mut found);
                if let Some(target) = found.get(which % found.len().max(1)) {
                    replace_varint(p, target, *value);
                }
                framed_again.push(p.clone());
            }
            _ => {}
        }
    }
    let starts: Vec<usize> = payloads
        .iter()
        .scan(0, |at, p| {
            let start = *at;
            *at += p.len() + 16;
            Some(start)
        })
        .collect();
    let mut bytes: Vec<u8> = payloads.iter().flat_map(|p| frame(p)).collect();
    for m in &case.mutations {
        match m {
            Mutation::FlipBit { at, bit } if !bytes.is_empty() => {
                let len = bytes.len();
                bytes[at % len] ^= 1 << bit;
            }
            Mutation::Truncate { keep } => bytes.truncate(keep % (bytes.len() + 1)),
            Mutation::Insert { at, bytes: extra } => {
                let at = at % (bytes.len() + 1);
                bytes.splice(at..at, extra.iter().copied());
            }
            Mutation::LyingLength { record, length } => {
                let start = starts[record % starts.len()];
                if start + 12 <= bytes.len() {
                    let header = length.to_le_bytes();
                    bytes[start..start + 8].copy_from_slice(&header);
                    let crc = MaskedCrc::compute(&header).0.to_le_bytes();
                    bytes[start + 8..start + 12].copy_from_slice(&crc);
                }
            }
            _ => {}
        }
    }
    (bytes, framed_again)
}
