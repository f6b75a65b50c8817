//! An events file that arrives in chunks (from object storage), decoded on its own thread as it comes.
//!
//! The decoder is the same [`read_records`] that reads local files: it runs on a
//! thread whose byte source blocks until the next chunk is fed, so a record or a
//! resynchronisation that spans chunks is handled exactly as in a file, and the
//! caller's fetching overlaps the decoding. At most [`QUEUED_CHUNKS`] chunks wait
//! at a time, which bounds the memory a slow decoder can make the caller use.

use std::collections::HashSet;
use std::io::{self, Read};
use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::{self, JoinHandle};

use thiserror::Error;

use crate::read::event_file::{read_records, FileContents};
use crate::read::report::FileReport;
use crate::read::tf_record::RecordReader;

/// How many fed chunks may wait for the decoder before `feed` blocks.
pub const QUEUED_CHUNKS: usize = 4;

/// Why a stream could not take more bytes or give its contents.
#[derive(Debug, Error)]
pub enum StreamError {
    #[error("the stream of {0} was already finished")]
    Finished(String),
    #[error("the decoder of {0} stopped unexpectedly")]
    DecoderFailed(String),
    #[error("cannot start a decoder thread for {path}: {source}")]
    Spawn { path: String, source: io::Error },
}

/// One events file being decoded from chunks fed in order, into a `T`: its
/// contents, or what a caller's own decoder makes of its records.
pub struct EventStream<T = FileContents> {
    path: String,
    sender: Option<SyncSender<Vec<u8>>>,
    worker: Option<JoinHandle<T>>,
}

impl EventStream<FileContents> {
    /// Starts decoding the file named `path` (used in its report) into its contents.
    /// `size`, when known, is the file's total length: a damaged length that claims
    /// more is then known to be cut off at once instead of being read to the end.
    pub fn new(
        path: &str,
        size: Option<u64>,
        tags: Option<HashSet<String>>,
    ) -> Result<Self, StreamError> {
        EventStream::decoding(path, size, move |reader, report| {
            let mut contents = FileContents {
                report,
                ..Default::default()
            };
            read_records(reader, tags.as_ref(), &mut contents);
            contents
        })
    }
}

impl<T: Send + 'static> EventStream<T> {
    /// Starts `decode` on a thread of its own, reading the records of the file
    /// named `path` as its chunks are fed; `size` as for [`EventStream::new`].
    pub fn decoding<F>(path: &str, size: Option<u64>, decode: F) -> Result<Self, StreamError>
    where
        F: FnOnce(RecordReader<ChunkSource>, FileReport) -> T + Send + 'static,
    {
        let (sender, receiver) = sync_channel(QUEUED_CHUNKS);
        let report = FileReport::new(Path::new(path));
        let source = ChunkSource {
            receiver,
            chunk: Vec::new(),
            pos: 0,
        };
        let worker = thread::Builder::new()
            .name("histoscope-stream".into())
            .spawn(move || decode(RecordReader::new(source, size), report))
            .map_err(|source| StreamError::Spawn {
                path: path.to_owned(),
                source,
            })?;
        Ok(EventStream {
            path: path.to_owned(),
            sender: Some(sender),
            worker: Some(worker),
        })
    }

    /// Hands the next chunk of the file to the decoder, waiting while too many are queued.
    pub fn feed(&mut self, chunk: Vec<u8>) -> Result<(), StreamError> {
        if chunk.is_empty() {
            return Ok(());
        }
        let sender = self
            .sender
            .as_ref()
            .ok_or_else(|| StreamError::Finished(self.path.clone()))?;
        sender
            .send(chunk)
            .map_err(|_| StreamError::DecoderFailed(self.path.clone()))
    }

    /// Marks the end of the file and returns what was decoded from it.
    pub fn finish(&mut self) -> Result<T, StreamError> {
        self.sender = None;
        let worker = self
            .worker
            .take()
            .ok_or_else(|| StreamError::Finished(self.path.clone()))?;
        worker
            .join()
            .map_err(|_| StreamError::DecoderFailed(self.path.clone()))
    }
}

/// The fed chunks as one byte source; it ends when the stream is finished.
pub struct ChunkSource {
    receiver: Receiver<Vec<u8>>,
    chunk: Vec<u8>,
    pos: usize,
}

impl Read for ChunkSource {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.pos == self.chunk.len() {
            match self.receiver.recv() {
                Ok(chunk) => {
                    self.chunk = chunk;
                    self.pos = 0;
                }
                // Every sender is gone: the stream was finished (or dropped).
                Err(_) => return Ok(0),
            }
        }
        let n = out.len().min(self.chunk.len() - self.pos);
        out[..n].copy_from_slice(&self.chunk[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::event_file::{read_event_file, Entry};
    use crate::read::test_events::legacy_histogram;

    fn steps(contents: &FileContents) -> Vec<i64> {
        contents
            .entries
            .iter()
            .map(|e| match e {
                Entry::Histogram { point, .. } => point.step,
                Entry::Start { step } => -step,
            })
            .collect()
    }

    fn streamed(bytes: &[u8], chunk: usize, size: Option<u64>) -> FileContents {
        let mut stream = EventStream::new("mem", size, None).unwrap();
        for piece in bytes.chunks(chunk) {
            stream.feed(piece.to_vec()).unwrap();
        }
        stream.finish().unwrap()
    }

    #[test]
    fn chunks_of_any_size_decode_like_one_buffer() {
        let bytes: Vec<u8> = (0..5)
            .flat_map(|s| legacy_histogram("h", s, &[1.0, 2.0]))
            .collect();
        for chunk in [1, 7, 12, 100, bytes.len()] {
            let contents = streamed(&bytes, chunk, Some(bytes.len() as u64));
            assert_eq!(steps(&contents), vec![0, 1, 2, 3, 4], "chunk {chunk}");
            assert!(!contents.report.has_problems());
            assert_eq!(contents.report.incomplete_tail, None);
        }
    }

    #[test]
    fn damage_across_chunk_boundaries_matches_the_file_reader() {
        let records: Vec<Vec<u8>> = (0..6)
            .map(|s| legacy_histogram("h", s, &[1.0, 2.0]))
            .collect();
        let mut bytes: Vec<u8> = records.concat();
        let second = records[0].len();
        bytes[second + 3] ^= 0xFF; // record 1's length header
        let third = second + records[1].len();
        bytes[third + 20] ^= 0xFF; // record 2's data
        let cut = bytes.len() - 5; // record 5 cut off
        let path = std::env::temp_dir().join(format!("histoscope-stream-{}", std::process::id()));
        std::fs::write(&path, &bytes[..cut]).unwrap();
        let from_file = read_event_file(&path, None);
        std::fs::remove_file(&path).unwrap();
        for chunk in [1, 5, 13, 64] {
            let contents = streamed(&bytes[..cut], chunk, None);
            assert_eq!(steps(&contents), vec![0, 3, 4], "chunk {chunk}");
            assert_eq!(steps(&contents), steps(&from_file));
            assert_eq!(contents.report.damaged, from_file.report.damaged);
            assert_eq!(
                contents.report.incomplete_tail,
                from_file.report.incomplete_tail
            );
        }
    }

    #[test]
    fn a_finished_stream_takes_no_more() {
        let mut stream = EventStream::new("mem", None, None).unwrap();
        stream.finish().unwrap();
        assert!(matches!(
            stream.feed(vec![1]),
            Err(StreamError::Finished(_))
        ));
        assert!(matches!(stream.finish(), Err(StreamError::Finished(_))));
    }
}
