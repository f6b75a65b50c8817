//! Property-based fuzzing of the events-file decoder on mutated real records.
//!
//! Each case takes a few consecutive records from the fixtures' events files
//! (real TensorFlow, Keras, PyTorch and tensorboardX output, and a few
//! synthetic records for encodings they lack) and damages them:
//! bit flips, truncations, inserted bytes, lengths that lie (with their
//! checksum fixed, so the reader believes them), and payloads replaced or
//! mutated and framed again with valid checksums (garbage protobuf that only
//! the decoder can catch). The decoder must then
//! - never panic (debug builds check every integer overflow too);
//! - never allocate more than a fixed read buffer plus a multiple of the
//!   input's size (a counting allocator measures it);
//! - account for every byte: the input is tiled by records whose checksums
//!   this harness verifies again (and whose payload is one that was written,
//!   by a fixture or by the mutation) and by damage the report names, up to
//!   an incomplete tail.
//!
//! `cargo test --test fuzz_decoder` runs 2,000 cases; `PROPTEST_CASES=1000000`
//! runs a million (see benches/README.md).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};

use histoscope::event_file::{decode_records, Sink};
use histoscope::masked_crc::MaskedCrc;
use histoscope::report::{Damage, DamageKind, FileReport};
use histoscope::stats::Stats;
use histoscope::tf_record::{frame, RecordReader};

/// Counts the bytes the current thread holds, while it is measuring.
struct Counting;

thread_local! {
    static MEASURING: Cell<bool> = const { Cell::new(false) };
    static HELD: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn note(delta: isize) {
    // `try_with`: the thread's locals may already be gone while it exits.
    let _ = MEASURING.try_with(|measuring| {
        if measuring.get() {
            let held = HELD.with(|h| {
                h.set(h.get() + delta);
                h.get()
            });
            PEAK.with(|p| p.set(p.get().max(held)));
        }
    });
}

// SAFETY: every call is passed on to the system allocator unchanged; the
// counting only reads and writes thread-local cells, which never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size() as isize);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note(-(layout.size() as isize));
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size as isize - layout.size() as isize);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The most bytes `work` held at once on this thread, and its result.
fn peak_bytes<T>(work: impl FnOnce() -> T) -> (usize, T) {
    HELD.with(|h| h.set(0));
    PEAK.with(|p| p.set(0));
    MEASURING.with(|m| m.set(true));
    let result = work();
    MEASURING.with(|m| m.set(false));
    (PEAK.with(Cell::get).max(0) as usize, result)
}

/// The read buffer the record reader starts with and grows by (`tf_record`'s
/// `CHUNK`), and room for the bounded expansion of a short tensor encoding.
const FIXED_BYTES: usize = 2 << 20;

/// Decoded buckets are float64 triples, each from at least one stored byte
/// (an int8 tensor), kept once in the scratch buffer and once in the entry.
const BYTES_PER_INPUT_BYTE: usize = 64;

/// Records for the encodings the fixtures lack: a short `double_val`
/// encoding, integer tensors in `tensor_content` and in `int64_val`, and a
/// session restart, each a histogram tensor with its plugin named.
fn synthetic_records() -> Vec<Vec<u8>> {
    use histoscope::proto::{
        dtype, Dim, Event, PluginData, SessionLog, Summary, SummaryMetadata, SummaryValue,
        TensorProto, TensorShapeProto, SESSION_START,
    };
    use prost::Message;

    let histogram = |step: i64, tensor: TensorProto| {
        let value = SummaryValue {
            tag: "h".into(),
            tensor: Some(tensor.encode_to_vec().into()),
            metadata: Some(SummaryMetadata {
                plugin_data: Some(PluginData {
                    plugin_name: "histograms".into(),
                    content: Default::default(),
                }),
            }),
            ..Default::default()
        };
        Event {
            step,
            wall_time: step as f64,
            summary: Some(Summary { value: vec![value] }),
            ..Default::default()
        }
        .encode_to_vec()
    };
    let shape = |rows: i64| {
        Some(TensorShapeProto {
            dim: vec![Dim { size: rows }, Dim { size: 3 }],
        })
    };
    let restart = Event {
        step: 2,
        session_log: Some(SessionLog {
            status: SESSION_START,
        }),
        ..Default::default()
    };
    vec![
        histogram(
            0,
            TensorProto {
                dtype: dtype::DOUBLE,
                tensor_shape: shape(4),
                double_val: vec![1.5],
                ..Default::default()
            },
        ),
        histogram(
            1,
            TensorProto {
                dtype: dtype::INT32,
                tensor_shape: shape(2),
                tensor_content: [-1i32, 0, 3, 0, 2, 5]
                    .iter()
                    .flat_map(|v| v.to_le_bytes())
                    .collect::<Vec<u8>>()
                    .into(),
                ..Default::default()
            },
        ),
        restart.encode_to_vec(),
        histogram(
            3,
            TensorProto {
                dtype: dtype::INT64,
                tensor_shape: shape(2),
                int64_val: vec![-4, 0, 1, 0, 9, 2],
                ..Default::default()
            },
        ),
    ]
}

/// The records of every events file in the fixtures, file by file, and the synthetic ones.
fn corpus() -> Vec<Vec<Vec<u8>>> {
    let mut files = Vec::new();
    collect(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures"),
        &mut files,
    );
    files.sort();
    files
        .iter()
        .map(|path| {
            let bytes = std::fs::read(path).expect("fixture readable");
            let mut reader = RecordReader::new(&bytes[..], Some(bytes.len() as u64));
            let mut records = Vec::new();
            while let Ok(Some(record)) = reader.next_record() {
                records.push(record.data.to_vec());
            }
            records
        })
        .filter(|records| !records.is_empty())
        .chain([synthetic_records()])
        .collect()
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("fixtures folder") {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            collect(&path, out);
        } else if path.to_string_lossy().contains("tfevents") {
            out.push(path);
        }
    }
}

/// One way of damaging the framed records; indices are taken modulo what exists.
#[derive(Debug, Clone)]
enum Mutation {
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
struct Case {
    file: usize,
    first: usize,
    count: usize,
    mutations: Vec<Mutation>,
}

fn case() -> impl Strategy<Value = Case> {
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
fn build(case: &Case, corpus: &[Vec<Vec<u8>>]) -> (Vec<u8>, Vec<Vec<u8>>) {
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

/// What the decoder handed its sink, in order.
#[derive(Debug, Default)]
struct Recorded {
    /// The end offset of each record read whole, and whether it gave data.
    records: Vec<(u64, bool)>,
    pending: bool,
    histograms: usize,
}

impl Sink for Recorded {
    fn histogram(&mut self, _: &str, _: i64, _: f64, buckets: &[f64], _: Stats, _: bool) {
        assert_eq!(
            buckets.len() % 3,
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
fn intact_payload(bytes: &[u8]) -> Option<&[u8]> {
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
fn check(
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

fn run(default_cases: u32) {
    let corpus = corpus();
    assert!(corpus.len() >= 10, "the fixtures hold events files");
    let known: HashSet<Vec<u8>> = corpus.iter().flatten().cloned().collect();
    let mut config = Config {
        failure_persistence: None,
        ..Config::default()
    };
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = default_cases;
    }
    // The same cases on every run, unless PROPTEST_RNG_SEED asks for others.
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        config.rng_seed = RngSeed::Fixed(0x6869_7374_6f73_636f);
    }
    let (cases, seed) = (config.cases, config.rng_seed);
    let started = std::time::Instant::now();
    let mut runner = TestRunner::new(config);
    let result = runner.run(&case(), |case| {
        let (bytes, framed_again) = build(&case, &corpus);
        check(&bytes, &framed_again, &known)
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    eprintln!(
        "fuzz_decoder: {cases} cases (seed {:?}) in {:.1} s, no finding",
        seed,
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn a_header_in_front_of_a_header_is_an_intact_record() {
    // The first finding of the million-case run (seed 2), a harness error:
    // 12 bytes inserted at the start and overwritten with a header of
    // length 8 make the original header the payload of a valid frame.
    let corpus = corpus();
    let known: HashSet<Vec<u8>> = corpus.iter().flatten().cloned().collect();
    let case = Case {
        file: 0,
        first: 0,
        count: 2,
        mutations: vec![
            Mutation::Insert {
                at: 0,
                bytes: vec![0; 12],
            },
            Mutation::LyingLength {
                record: 0,
                length: 8,
            },
        ],
    };
    let (bytes, framed_again) = build(&case, &corpus);
    assert_eq!(intact_payload(&bytes[..24]), Some(&bytes[12..20]));
    check(&bytes, &framed_again, &known).unwrap();
}

#[test]
fn damaged_records_never_panic_overallocate_or_go_unreported() {
    run(2_000);
}

#[test]
fn the_intact_fixture_records_are_all_accounted_for() {
    let corpus = corpus();
    let known: HashSet<Vec<u8>> = corpus.iter().flatten().cloned().collect();
    for records in &corpus {
        let bytes: Vec<u8> = records.iter().flat_map(|p| frame(p)).collect();
        check(&bytes, &[], &known).unwrap();
    }
}
