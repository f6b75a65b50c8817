//! TFRecord framing: length, masked CRC of the length, data, masked CRC of the data.
//!
//! The reader is resumable: a record cut off at the end of the input returns
//! [`ReadRecordError::Truncated`] without consuming anything, so a later call
//! picks it up once the writer has appended the rest, which is how a file that
//! is still being written is followed.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use thiserror::Error;

use crate::read::masked_crc::MaskedCrc;

const HEADER_LEN: usize = 12;
const FOOTER_LEN: usize = 4;
const CHUNK: usize = 1 << 20;

/// One record's payload, borrowed from the reader's buffer, and where its frame starts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Record<'a> {
    pub offset: u64,
    pub data: &'a [u8],
}

/// Why the next record could not be read.
#[derive(Debug, Error)]
pub enum ReadRecordError {
    #[error("length checksum mismatch at byte {offset}: got {got}, want {want}")]
    BadLengthCrc {
        offset: u64,
        got: MaskedCrc,
        want: MaskedCrc,
    },
    #[error(
        "data checksum mismatch in the {length}-byte record at byte {offset}: got {got}, want {want}"
    )]
    BadDataCrc {
        offset: u64,
        length: u64,
        got: MaskedCrc,
        want: MaskedCrc,
    },
    #[error("record at byte {offset} is cut off: {have} of {need} bytes present")]
    Truncated { offset: u64, have: u64, need: u64 },
    #[error("read failed at byte {offset}: {source}")]
    Io { offset: u64, source: io::Error },
}

/// Bytes passed over while looking for the next intact record after a damaged header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Skipped {
    pub offset: u64,
    pub length: u64,
}

/// Reads TFRecord frames from any byte source, checking both checksums.
pub struct RecordReader<R> {
    source: R,
    buf: Vec<u8>,
    /// Unread bytes are `buf[pos..end]`; `buf[end..]` is room to read into.
    pos: usize,
    end: usize,
    offset: u64,
    limit: Option<u64>,
}

impl<R: Read> RecordReader<R> {
    /// A reader over `source`. `limit`, when known, is the input's total length:
    /// a header claiming more than is left is then known to be cut off at once.
    pub fn new(source: R, limit: Option<u64>) -> Self {
        RecordReader {
            source,
            buf: Vec::new(),
            pos: 0,
            end: 0,
            offset: 0,
            limit,
        }
    }

    /// The input offset of the next unread byte.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The input's total length, when known.
    pub fn limit(&self) -> Option<u64> {
        self.limit
    }

    /// The next record, `Ok(None)` at a clean end of input.
    ///
    /// A bad data checksum consumes the record (its length was sound, so the
    /// next frame is known); a bad length checksum consumes nothing: call
    /// [`RecordReader::resync`] to move past the damage.
    pub fn next_record(&mut self) -> Result<Option<Record<'_>>, ReadRecordError> {
        if !self.fill(1)? {
            return Ok(None);
        }
        let offset = self.offset;
        if !self.fill(HEADER_LEN)? {
            return Err(self.truncated(HEADER_LEN as u64));
        }
        let length = self.checked_length(0)?;
        let need = frame_len(length);
        if self.beyond_limit(0, need) || !self.fill(need as usize)? {
            return Err(self.truncated(need));
        }
        let start = self.pos + HEADER_LEN;
        let data_end = HEADER_LEN + length as usize;
        let got = MaskedCrc::compute(&self.buf[start..self.pos + data_end]);
        let want = self.stored_crc(data_end);
        self.consume(need as usize);
        if got != want {
            return Err(ReadRecordError::BadDataCrc {
                offset,
                length,
                got,
                want,
            });
        }
        Ok(Some(Record {
            offset,
            data: &self.buf[start..start + length as usize],
        }))
    }

    /// Skips forward to the next offset where a length, its checksum and the
    /// data's checksum all check, or to the end of the input if there is none.
    pub fn resync(&mut self) -> Result<Skipped, ReadRecordError> {
        let start = self.offset;
        self.consume(1);
        while self.fill(HEADER_LEN)? {
            if self.intact_frame_here()? {
                break;
            }
            self.consume(1);
        }
        if !self.fill(HEADER_LEN)? {
            let rest = self.available();
            self.consume(rest);
        }
        Ok(Skipped {
            offset: start,
            length: self.offset - start,
        })
    }

    fn intact_frame_here(&mut self) -> Result<bool, ReadRecordError> {
        let Ok(length) = self.checked_length(0) else {
            return Ok(false);
        };
        let need = frame_len(length);
        if self.beyond_limit(0, need) || !self.fill(need as usize)? {
            return Ok(false);
        }
        let data_end = HEADER_LEN + length as usize;
        let data = &self.buf[self.pos + HEADER_LEN..self.pos + data_end];
        Ok(MaskedCrc::compute(data) == self.stored_crc(data_end))
    }

    fn checked_length(&self, at: usize) -> Result<u64, ReadRecordError> {
        let header = &self.buf[self.pos + at..self.pos + at + HEADER_LEN];
        let got = MaskedCrc::compute(&header[..8]);
        let want = self.stored_crc(at + 8);
        if got != want {
            return Err(ReadRecordError::BadLengthCrc {
                offset: self.offset,
                got,
                want,
            });
        }
        let length: [u8; 8] = header[..8].try_into().expect("header slice is 8 bytes");
        Ok(u64::from_le_bytes(length))
    }

    fn stored_crc(&self, at: usize) -> MaskedCrc {
        let start = self.pos + at;
        let bytes: [u8; 4] = self.buf[start..start + 4].try_into().expect("4-byte slice");
        MaskedCrc::from_le_bytes(bytes)
    }

    /// Whether `need` bytes from `at` cannot all be there: past the known
    /// length, or more than memory can address (the frame of a lying length).
    fn beyond_limit(&self, at: usize, need: u64) -> bool {
        let end = self.offset.saturating_add(at as u64).saturating_add(need);
        match self.limit {
            Some(limit) => end > limit,
            None => need > (usize::MAX / 2) as u64,
        }
    }

    fn truncated(&self, need: u64) -> ReadRecordError {
        ReadRecordError::Truncated {
            offset: self.offset,
            have: self.available() as u64,
            need,
        }
    }

    fn available(&self) -> usize {
        self.end - self.pos
    }

    fn consume(&mut self, n: usize) {
        self.pos += n;
        self.offset += n as u64;
    }

    /// Makes at least `n` unread bytes available; false if the input ends first.
    ///
    /// Memory grows with the bytes actually read, never with a length read
    /// from the file, so a damaged length cannot make us allocate it.
    fn fill(&mut self, n: usize) -> Result<bool, ReadRecordError> {
        while self.available() < n {
            if self.pos > 0 {
                self.buf.copy_within(self.pos..self.end, 0);
                self.end -= self.pos;
                self.pos = 0;
            }
            if self.buf.len() - self.end < CHUNK / 2 {
                self.buf.resize(self.end + CHUNK, 0);
            }
            let read = match self.source.read(&mut self.buf[self.end..]) {
                Ok(read) => read,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(source) => {
                    return Err(ReadRecordError::Io {
                        offset: self.offset,
                        source,
                    })
                }
            };
            if read == 0 {
                return Ok(false);
            }
            self.end += read;
        }
        Ok(true)
    }
}

/// `path` opened at byte `start`, and how many bytes it holds from there as it
/// stands now: where a reader of a growing file picks up, and its limit.
pub fn open_at(path: &Path, start: u64) -> io::Result<(File, u64)> {
    let mut file = File::open(path)?;
    let metadata = file.metadata()?;
    // A directory opens, then fails every read: which the reader would take for a
    // file cut short, holding nothing.
    if metadata.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            "is a directory",
        ));
    }
    let left = metadata.len().saturating_sub(start);
    file.seek(SeekFrom::Start(start))?;
    Ok((file, left))
}

/// The bytes of a frame whose length header says `length`; a length so large
/// that the sum overflows saturates, and is then beyond any input.
fn frame_len(length: u64) -> u64 {
    length.saturating_add((HEADER_LEN + FOOTER_LEN) as u64)
}

/// Frames `data` as one TFRecord.
pub fn frame(data: &[u8]) -> Vec<u8> {
    let length = (data.len() as u64).to_le_bytes();
    let mut out = Vec::with_capacity(HEADER_LEN + data.len() + FOOTER_LEN);
    out.extend_from_slice(&length);
    out.extend_from_slice(&MaskedCrc::compute(&length).0.to_le_bytes());
    out.extend_from_slice(data);
    out.extend_from_slice(&MaskedCrc::compute(data).0.to_le_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reader(bytes: &[u8]) -> RecordReader<&[u8]> {
        RecordReader::new(bytes, Some(bytes.len() as u64))
    }

    fn file(records: &[&[u8]]) -> Vec<u8> {
        records.iter().flat_map(|r| frame(r)).collect()
    }

    #[test]
    fn reads_records_in_order_with_offsets() {
        let bytes = file(&[b"alpha", b"", b"gamma!"]);
        let mut r = reader(&bytes);
        let a = r.next_record().unwrap().unwrap();
        assert_eq!((a.offset, a.data), (0, &b"alpha"[..]));
        let b = r.next_record().unwrap().unwrap();
        assert_eq!((b.offset, b.data), (21, &b""[..]));
        let c = r.next_record().unwrap().unwrap();
        assert_eq!((c.offset, c.data), (37, &b"gamma!"[..]));
        assert!(r.next_record().unwrap().is_none());
    }

    #[test]
    fn bad_data_crc_skips_only_that_record() {
        let mut bytes = file(&[b"one", b"two", b"three"]);
        bytes[19 + 12] ^= 0xff; // first data byte of "two"
        let mut r = reader(&bytes);
        assert_eq!(r.next_record().unwrap().unwrap().data, b"one");
        match r.next_record() {
            Err(ReadRecordError::BadDataCrc {
                offset: 19,
                length: 3,
                ..
            }) => {}
            other => panic!("expected a data checksum error, got {other:?}"),
        }
        assert_eq!(r.next_record().unwrap().unwrap().data, b"three");
    }

    #[test]
    fn bad_length_resyncs_at_next_intact_record() {
        let mut bytes = file(&[b"one", b"two", b"three"]);
        bytes[19] ^= 0x40; // the length of "two"
        let mut r = reader(&bytes);
        r.next_record().unwrap();
        assert!(matches!(
            r.next_record(),
            Err(ReadRecordError::BadLengthCrc { offset: 19, .. })
        ));
        assert_eq!(
            r.resync().unwrap(),
            Skipped {
                offset: 19,
                length: 19
            }
        );
        let three = r.next_record().unwrap().unwrap();
        assert_eq!((three.offset, three.data), (38, &b"three"[..]));
        assert!(r.next_record().unwrap().is_none());
    }

    #[test]
    fn resync_over_garbage_to_the_end() {
        let mut bytes = file(&[b"one"]);
        bytes.extend_from_slice(&[0xAB; 40]);
        let mut r = reader(&bytes);
        r.next_record().unwrap();
        assert!(matches!(
            r.next_record(),
            Err(ReadRecordError::BadLengthCrc { .. })
        ));
        assert_eq!(
            r.resync().unwrap(),
            Skipped {
                offset: 19,
                length: 40
            }
        );
        assert!(r.next_record().unwrap().is_none());
    }

    #[test]
    fn garbage_between_records_is_skipped() {
        let mut bytes = file(&[b"one"]);
        bytes.extend_from_slice(b"not a record at all");
        bytes.extend_from_slice(&frame(b"two"));
        let mut r = reader(&bytes);
        r.next_record().unwrap();
        assert!(r.next_record().is_err());
        assert_eq!(r.resync().unwrap().length, 19);
        assert_eq!(r.next_record().unwrap().unwrap().data, b"two");
    }

    #[test]
    fn cut_off_record_is_truncated_and_resumable() {
        let whole = file(&[b"one", b"second record"]);
        let cut = &whole[..whole.len() - 5];
        let mut growing = RecordReader::new(
            Grow {
                parts: vec![cut, &whole[cut.len()..]],
            },
            None,
        );
        assert_eq!(growing.next_record().unwrap().unwrap().data, b"one");
        match growing.next_record() {
            Err(ReadRecordError::Truncated {
                offset: 19,
                have: 24,
                need: 29,
            }) => {}
            other => panic!("expected truncation, got {other:?}"),
        }
        assert_eq!(
            growing.next_record().unwrap().unwrap().data,
            b"second record"
        );
    }

    #[test]
    fn cut_off_header_is_truncated() {
        let whole = file(&[b"one"]);
        let mut r = reader(&whole[..7]);
        assert!(matches!(
            r.next_record(),
            Err(ReadRecordError::Truncated { offset: 0, .. })
        ));
    }

    #[test]
    fn huge_length_with_valid_crc_is_never_allocated() {
        let length = (1u64 << 60).to_le_bytes();
        let mut bytes = length.to_vec();
        bytes.extend_from_slice(&MaskedCrc::compute(&length).0.to_le_bytes());
        bytes.extend_from_slice(b"tiny");
        let mut r = reader(&bytes);
        assert!(
            matches!(r.next_record(), Err(ReadRecordError::Truncated { need, .. }) if need > 1 << 59)
        );
        let mut unlimited = RecordReader::new(&bytes[..], None);
        assert!(matches!(
            unlimited.next_record(),
            Err(ReadRecordError::Truncated { .. })
        ));
    }

    #[test]
    fn lengths_whose_frame_overflows_are_cut_off_records() {
        // Found by the fuzz harness: 12 + length + 4 overflowed u64.
        for length in [u64::MAX, u64::MAX - 15, u64::MAX - 16, 1 << 63] {
            let header = length.to_le_bytes();
            let mut bytes = header.to_vec();
            bytes.extend_from_slice(&MaskedCrc::compute(&header).0.to_le_bytes());
            bytes.extend_from_slice(b"tiny");
            for limit in [Some(bytes.len() as u64), None] {
                let mut r = RecordReader::new(&bytes[..], limit);
                assert!(
                    matches!(r.next_record(), Err(ReadRecordError::Truncated { .. })),
                    "{length} {limit:?}"
                );
            }
            // While resynchronising, such a header is not an intact frame either.
            let mut garbage = vec![0xAB; 3];
            garbage.extend_from_slice(&bytes);
            garbage.extend_from_slice(&frame(b"after"));
            let mut r = RecordReader::new(&garbage[..], None);
            assert!(matches!(
                r.next_record(),
                Err(ReadRecordError::BadLengthCrc { .. })
            ));
            r.resync().unwrap();
            assert_eq!(r.next_record().unwrap().unwrap().data, b"after");
        }
    }

    /// A source that hands out one part per `read` call after the first returns 0,
    /// like a file that a writer appends to between our reads.
    struct Grow<'a> {
        parts: Vec<&'a [u8]>,
    }

    impl Read for Grow<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let Some(part) = self.parts.first_mut() else {
                return Ok(0);
            };
            if part.is_empty() {
                self.parts.remove(0);
                return Ok(0);
            }
            let n = part.len().min(out.len());
            out[..n].copy_from_slice(&part[..n]);
            *part = &part[n..];
            Ok(n)
        }
    }

    #[test]
    fn a_directory_is_no_file_to_read() {
        let error = open_at(&std::env::temp_dir(), 0).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::IsADirectory);
    }
}
