//! An events file whose every histogram, scalar and optimizer note is also handed to the
//! run's live diagnosis, so that alerts come from the values exactly as written, and
//! every histogram to the live charts watching the run (the notebook's widgets).

use std::sync::{Arc, Mutex};

use super::binned::{binned_event, write_step, BinnedError};
use super::event_writer::{
    histogram_event, optimizer_event, scalar_event, EventWriter, HistogramRecord, WriteError,
};
use crate::bins::binning::Histogram;
use crate::bins::live_chart::LiveChart;
use crate::diagnose::LiveDiagnosis;
use crate::read::event_file::{read_event_file, Entry};
use crate::read::optimizer_note::OptimizerNote;

/// A run's events file and, where alerts are on, its diagnosis so far.
pub struct DiagnosedWriter {
    pub file: EventWriter,
    pub live: Option<LiveDiagnosis>,
    /// Charts shown of the run, each with the run's name in it.
    pub charts: Vec<(Arc<Mutex<LiveChart>>, String)>,
}

impl DiagnosedWriter {
    /// Writes one histogram from its edges, counts and statistics.
    pub fn histogram(&mut self, record: &HistogramRecord<'_>) -> Result<(), WriteError> {
        self.file.write(&histogram_event(record)?)?;
        let HistogramRecord {
            tag,
            step,
            edges,
            counts,
            stats,
            ..
        } = *record;
        if let Some(live) = self.live.as_mut() {
            live.histogram(tag, step, edges, counts, &stats);
        }
        self.chart(|c, run| c.add_binned(tag, step, run, edges, counts, &stats));
        Ok(())
    }

    /// Shows the run in `chart` under `run`: what the file holds so far, read back
    /// once it is flushed, then every histogram as it is written.
    pub fn show_in(&mut self, chart: Arc<Mutex<LiveChart>>, run: &str) -> Result<(), WriteError> {
        self.file.flush()?;
        let held = read_event_file(self.file.path(), None);
        {
            let mut open = chart.lock().unwrap_or_else(|p| p.into_inner());
            for entry in &held.entries {
                if let Entry::Histogram { tag, point, .. } = entry {
                    open.add(tag, run, point.step, &point.buckets, &point.stats);
                }
            }
        }
        self.charts.push((chart, run.to_string()));
        Ok(())
    }

    fn chart(&self, add: impl Fn(&mut LiveChart, &str)) {
        for (chart, run) in &self.charts {
            add(&mut chart.lock().unwrap_or_else(|p| p.into_inner()), run);
        }
    }

    /// Writes one histogram the core binned.
    pub fn binned(
        &mut self,
        tag: &str,
        step: i64,
        wall_time: f64,
        h: &Histogram,
    ) -> Result<(), WriteError> {
        self.file.write(&binned_event(tag, step, wall_time, h)?)?;
        self.observe(tag, step, h);
        Ok(())
    }

    /// Writes a step of histograms the core binned, all or none (see [`write_step`]).
    pub fn step(
        &mut self,
        step: i64,
        wall_time: f64,
        tags: &[String],
        histograms: &[Histogram],
    ) -> Result<(), BinnedError> {
        write_step(&mut self.file, step, wall_time, tags, histograms)?;
        tags.iter()
            .zip(histograms)
            .for_each(|(tag, h)| self.observe(tag, step, h));
        Ok(())
    }

    /// Writes one scalar.
    pub fn scalar(
        &mut self,
        tag: &str,
        step: i64,
        wall_time: f64,
        value: f32,
    ) -> Result<(), WriteError> {
        self.file
            .write(&scalar_event(tag, step, wall_time, value))?;
        if let Some(live) = self.live.as_mut() {
            live.scalar(tag, step, value);
        }
        Ok(())
    }

    /// Writes the note of the optimizer the run trains with.
    pub fn optimizer(&mut self, note: OptimizerNote, wall_time: f64) -> Result<(), WriteError> {
        self.file.write(&optimizer_event(&note, wall_time))?;
        if let Some(live) = self.live.as_mut() {
            live.optimizer(note.classes);
        }
        Ok(())
    }

    fn observe(&mut self, tag: &str, step: i64, h: &Histogram) {
        if let Some(live) = self.live.as_mut() {
            live.histogram(tag, step, &h.edges, &h.counts, &h.stats);
        }
        self.chart(|c, run| c.add_binned(tag, step, run, &h.edges, &h.counts, &h.stats));
    }
}
