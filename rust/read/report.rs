//! What reading a file had to skip, and why, for the one warning per file a user sees.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::read::shared_tags;

/// How many damaged stretches a file's summary lists before it only counts the rest.
pub const LISTED_DAMAGE: usize = 3;

/// Why a stretch of a file was not read as data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DamageKind {
    /// The record's data failed its checksum; its framing was sound.
    BadDataChecksum,
    /// The length header failed its checksum; bytes were skipped to the next intact record.
    BadLengthChecksum,
    /// The record's checksums hold but it is not an Event.
    Unparsable,
    /// One histogram value in an intact Event could not be decoded.
    BadValue(String),
}

/// One damaged stretch: where it starts, how many bytes it covers, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    pub offset: u64,
    pub length: u64,
    pub kind: DamageKind,
}

impl Damage {
    pub fn bad_data(offset: u64, length: u64) -> Self {
        Damage {
            offset,
            length,
            kind: DamageKind::BadDataChecksum,
        }
    }

    pub fn bad_length(offset: u64, length: u64) -> Self {
        Damage {
            offset,
            length,
            kind: DamageKind::BadLengthChecksum,
        }
    }

    pub fn unparsable(offset: u64, length: u64) -> Self {
        Damage {
            offset,
            length,
            kind: DamageKind::Unparsable,
        }
    }

    pub fn bad_value(offset: u64, length: u64, problem: String) -> Self {
        Damage {
            offset,
            length,
            kind: DamageKind::BadValue(problem),
        }
    }

    /// Whether whole records were lost here (not just one value of one).
    pub fn loses_records(&self) -> bool {
        !matches!(self.kind, DamageKind::BadValue(_))
    }
}

impl fmt::Display for Damage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let end = self.offset + self.length;
        match &self.kind {
            DamageKind::BadDataChecksum => {
                write!(
                    f,
                    "bytes {}-{}: record data checksum mismatch",
                    self.offset, end
                )
            }
            DamageKind::BadLengthChecksum => write!(
                f,
                "bytes {}-{}: damaged length header, skipped to the next intact record",
                self.offset, end
            ),
            DamageKind::Unparsable => {
                write!(f, "bytes {}-{}: record is not an Event", self.offset, end)
            }
            DamageKind::BadValue(problem) => {
                write!(
                    f,
                    "bytes {}-{}: histogram value skipped ({problem})",
                    self.offset, end
                )
            }
        }
    }
}

/// What happened while reading one file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileReport {
    pub path: PathBuf,
    pub damaged: Vec<Damage>,
    /// Where a record cut off at the end of the file starts (a file still being written).
    pub incomplete_tail: Option<u64>,
    /// Why reading stopped early, when it did.
    pub error: Option<String>,
    /// Whether this is its run's newest file, the only one a writer may still be writing.
    pub newest: bool,
    /// The tags written several times in one step, kept apart by position (see
    /// [`crate::read::shared_tags`]), with the most values of one step.
    pub shared_tags: BTreeMap<String, u32>,
}

impl FileReport {
    pub fn new(path: &Path) -> Self {
        FileReport {
            path: path.to_path_buf(),
            ..Default::default()
        }
    }

    /// Whether anything was skipped that a user must be told about.
    pub fn has_problems(&self) -> bool {
        !self.damaged.is_empty() || self.error.is_some()
    }

    /// One line for a warning: the file, how many records, and the byte offsets.
    pub fn summary(&self) -> String {
        let records = self.damaged.iter().filter(|d| d.loses_records()).count();
        let values = self.damaged.len() - records;
        let mut parts = Vec::new();
        if records > 0 {
            parts.push(format!(
                "skipped {records} damaged record{}",
                plural(records)
            ));
        }
        if values > 0 {
            parts.push(format!(
                "skipped {values} undecodable histogram value{}",
                plural(values)
            ));
        }
        let mut line = format!("{}: {}", self.path.display(), parts.join(" and "));
        if !self.damaged.is_empty() {
            line.push_str(&format!(" ({})", self.first_damage()));
        }
        if let Some(error) = &self.error {
            line.push_str(&format!(
                "{}stopped reading: {error}",
                if parts.is_empty() { "" } else { "; " }
            ));
        }
        line
    }
}

impl FileReport {
    /// The first [`LISTED_DAMAGE`] stretches, and how many more there are: a file
    /// with thousands of damaged records still gets one short line.
    fn first_damage(&self) -> String {
        let listed: Vec<String> = self
            .damaged
            .iter()
            .take(LISTED_DAMAGE)
            .map(|d| d.to_string())
            .collect();
        let mut text = listed.join("; ");
        let more = self.damaged.len().saturating_sub(LISTED_DAMAGE);
        if more > 0 {
            text.push_str(&format!("; and {more} more"));
        }
        text
    }

    /// The one line that says which tags were kept apart by position, if any.
    pub fn shared_note(&self) -> Option<String> {
        shared_tags::note(&self.path.display().to_string(), &self.shared_tags)
    }

    /// What a record cut off at the end means, when there is one: a file still
    /// being written, or, for a run's older file, one its writer left unfinished
    /// when it moved on to a newer file.
    pub fn tail_note(&self) -> Option<String> {
        let offset = self.incomplete_tail?;
        let path = self.path.display();
        Some(if self.newest {
            format!("incomplete last record (still being written?): {path} at byte {offset}")
        } else {
            format!(
                "cut short at byte {offset}: {path} (the writer moved on to a newer file; \
                 the rest of this one was never written)"
            )
        })
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_names_file_records_and_offsets() {
        let mut report = FileReport::new(Path::new("run/events.out.tfevents.1"));
        report.damaged.push(Damage::bad_data(3852, 372));
        report.damaged.push(Damage::bad_length(5000, 40));
        assert!(report.has_problems());
        assert_eq!(
            report.summary(),
            "run/events.out.tfevents.1: skipped 2 damaged records (bytes 3852-4224: record data \
             checksum mismatch; bytes 5000-5040: damaged length header, skipped to the next intact record)"
        );
    }

    #[test]
    fn a_thousand_damaged_records_make_one_short_line() {
        let mut report = FileReport::new(Path::new("f"));
        for i in 0..1000 {
            report.damaged.push(Damage::bad_data(100 * i, 50));
        }
        let line = report.summary();
        assert_eq!(
            line,
            "f: skipped 1000 damaged records (bytes 0-50: record data checksum mismatch; \
             bytes 100-150: record data checksum mismatch; bytes 200-250: record data \
             checksum mismatch; and 997 more)"
        );
    }

    #[test]
    fn only_the_newest_file_may_still_be_written() {
        let mut report = FileReport {
            incomplete_tail: Some(10),
            newest: true,
            ..FileReport::new(Path::new("f"))
        };
        assert_eq!(
            report.tail_note().unwrap(),
            "incomplete last record (still being written?): f at byte 10"
        );
        report.newest = false;
        assert!(report
            .tail_note()
            .unwrap()
            .contains("moved on to a newer file"));
        report.incomplete_tail = None;
        assert_eq!(report.tail_note(), None);
    }

    #[test]
    fn a_cut_off_tail_alone_is_not_a_problem() {
        let report = FileReport {
            incomplete_tail: Some(10),
            ..FileReport::new(Path::new("f"))
        };
        assert!(!report.has_problems());
    }
}
