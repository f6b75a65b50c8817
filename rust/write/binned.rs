//! A step of binned histograms written in one call: what `watch`, `log_tree` and
//! `add_histogram` bin goes to the file without crossing to Python.

use thiserror::Error;

use super::event_writer::{histogram_event, EventWriter, HistogramRecord, WriteError};
use crate::bins::binning::Histogram;

/// Why a step of histograms could not be written.
#[derive(Debug, Error)]
pub enum BinnedError {
    #[error("{tags} tags for {histograms} histograms; want one tag a histogram")]
    TagCount { tags: usize, histograms: usize },
    #[error(transparent)]
    Write(#[from] WriteError),
}

/// The encoded `Event` for a histogram the core binned.
pub fn binned_event(
    tag: &str,
    step: i64,
    wall_time: f64,
    h: &Histogram,
) -> Result<Vec<u8>, WriteError> {
    histogram_event(&HistogramRecord {
        tag,
        step,
        wall_time,
        edges: &h.edges,
        counts: &h.counts,
        stats: h.stats,
    })
}

/// Writes `histograms[i]` under `tags[i]`, all at `step`, in order.
///
/// Every event is encoded before the first is written, so a histogram that
/// cannot be encoded leaves the file as it was rather than with half a step.
pub fn write_step(
    writer: &mut EventWriter,
    step: i64,
    wall_time: f64,
    tags: &[String],
    histograms: &[Histogram],
) -> Result<(), BinnedError> {
    if tags.len() != histograms.len() {
        return Err(BinnedError::TagCount {
            tags: tags.len(),
            histograms: histograms.len(),
        });
    }
    let events = tags
        .iter()
        .zip(histograms)
        .map(|(tag, h)| binned_event(tag, step, wall_time, h))
        .collect::<Result<Vec<_>, _>>()?;
    events.iter().try_for_each(|event| writer.write(event))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bins::binning::{histogram, Bins, Values};
    use crate::read::event_file::{read_event_file, Entry};

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("histoscope-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn binned(values: &[f64], count: usize) -> Histogram {
        let bins = Bins::Uniform { count, range: None };
        histogram(Values::F64(values), None, bins).unwrap()
    }

    #[test]
    fn a_step_reads_back_in_order_with_its_counts() {
        let dir = scratch("binned-step");
        let mut writer = EventWriter::create(&dir, 1.0, "host").unwrap();
        let tags = vec!["a".to_owned(), "b".to_owned()];
        let histograms = vec![binned(&[0.0, 1.0, 1.0], 2), binned(&[5.0; 7], 3)];
        write_step(&mut writer, 4, 2.0, &tags, &histograms).unwrap();
        writer.flush().unwrap();
        let read = read_event_file(writer.path(), None);
        assert!(!read.report.has_problems());
        let found: Vec<(String, i64, f64)> = read
            .entries
            .iter()
            .filter_map(|e| match e {
                Entry::Histogram { tag, point, .. } => {
                    let total = point.buckets.chunks(3).map(|row| row[2]).sum();
                    Some((tag.clone(), point.step, total))
                }
                Entry::Start { .. } => None,
            })
            .collect();
        assert_eq!(
            found,
            vec![("a".to_owned(), 4, 3.0), ("b".to_owned(), 4, 7.0)]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_tag_count_that_does_not_match_writes_nothing() {
        let dir = scratch("binned-mismatch");
        let mut writer = EventWriter::create(&dir, 1.0, "host").unwrap();
        let before = std::fs::metadata(writer.path()).unwrap().len();
        let error = write_step(&mut writer, 0, 0.0, &["a".to_owned()], &[]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "1 tags for 0 histograms; want one tag a histogram"
        );
        writer.flush().unwrap();
        assert_eq!(std::fs::metadata(writer.path()).unwrap().len(), before);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
