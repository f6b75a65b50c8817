//! What a run's files hold besides histograms: the scalars and optimizer diagnosis weighs,
//! and the card layout `define_metric` declared.
//!
//! Each file is read once, histograms and all: [`Evidenced`] wraps the sink
//! that takes the histograms and keeps the rest as [`Mark`]s in record order;
//! [`RunEvidence::replay`] then plays a run's files back in order under the
//! restart rule of the histograms (`logdir::plan`): a `SessionLog.START`, or a
//! tag's step going back, drops that tag's values from that step on.

use std::collections::BTreeMap;

use crate::read::event_file::{PointView, Sink};
use crate::read::metric_layout::MetricLayout;
use crate::read::optimizer_note::OptimizerNote;

/// One scalar tag of a run: its steps, increasing, and their values.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScalarSeries {
    pub tag: String,
    pub steps: Vec<i64>,
    pub values: Vec<f64>,
}

/// What a run holds besides histograms.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunEvidence {
    /// One series per scalar tag, sorted by tag.
    pub scalars: Vec<ScalarSeries>,
    /// The optimizer `watch` last noted: its class and those it derives from,
    /// most derived first; empty where none was noted.
    pub optimizer: Vec<String>,
    /// Every `define_metric` declaration, in file order (a later one wins where
    /// patterns overlap; a restart does not take one back).
    pub layout: Vec<MetricLayout>,
}

/// One record of a file that diagnosis weighs, in record order.
#[derive(Debug, Clone, PartialEq)]
pub enum Mark {
    Scalar { tag: String, step: i64, value: f64 },
    Start { step: i64 },
    Optimizer(Vec<String>),
    Layout(MetricLayout),
}

/// A sink that hands histograms and restarts to `inner` and keeps scalars,
/// restarts and optimizer notes as marks.
#[derive(Debug, Default)]
pub struct Evidenced<S> {
    pub inner: S,
    pub marks: Vec<Mark>,
}

impl<S> Evidenced<S> {
    pub fn new(inner: S) -> Self {
        Evidenced {
            inner,
            marks: Vec::new(),
        }
    }
}

impl<S: Sink> Sink for Evidenced<S> {
    fn histogram(&mut self, tag: &str, point: PointView<'_>, confirmed: bool) {
        self.inner.histogram(tag, point, confirmed);
    }

    fn start(&mut self, step: i64) {
        self.inner.start(step);
        self.marks.push(Mark::Start { step });
    }

    fn scalar(&mut self, tag: &str, step: i64, value: f64) {
        self.marks.push(Mark::Scalar {
            tag: tag.to_owned(),
            step,
            value,
        });
    }

    fn optimizer(&mut self, note: OptimizerNote) {
        self.marks.push(Mark::Optimizer(note.classes));
    }

    fn layout(&mut self, layout: MetricLayout) {
        self.marks.push(Mark::Layout(layout));
    }

    fn progress(&mut self, offset: u64, length: Option<u64>) {
        self.inner.progress(offset, length);
    }
}

impl RunEvidence {
    /// A run's evidence from the marks of its files, in file order.
    pub fn replay<'a>(files: impl IntoIterator<Item = &'a [Mark]>) -> RunEvidence {
        let mut scalars: BTreeMap<&str, ScalarSeries> = BTreeMap::new();
        let mut optimizer = Vec::new();
        let mut layout = Vec::new();
        for mark in files.into_iter().flatten() {
            match mark {
                Mark::Scalar { tag, step, value } => {
                    let series = scalars.entry(tag).or_insert_with(|| ScalarSeries {
                        tag: tag.clone(),
                        ..Default::default()
                    });
                    series.push(*step, *value);
                }
                Mark::Start { step } => scalars.values_mut().for_each(|s| s.purge_from(*step)),
                Mark::Optimizer(classes) => optimizer.clone_from(classes),
                Mark::Layout(declared) => layout.push(declared.clone()),
            }
        }
        RunEvidence {
            scalars: scalars.into_values().collect(),
            optimizer,
            layout,
        }
    }

    /// The last step of any scalar, if the run has one.
    pub fn last_step(&self) -> Option<i64> {
        self.scalars
            .iter()
            .filter_map(|s| s.steps.last())
            .max()
            .copied()
    }
}

impl ScalarSeries {
    /// Appends a value after the restart rule: those at `step` or later are dropped first.
    pub fn push(&mut self, step: i64, value: f64) {
        self.purge_from(step);
        self.steps.push(step);
        self.values.push(value);
    }

    /// Drops the values at `step` or later: a restart logs them again.
    fn purge_from(&mut self, step: i64) {
        let keep = self.steps.partition_point(|&s| s < step);
        self.steps.truncate(keep);
        self.values.truncate(keep);
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use std::path::Path;

    use super::*;
    use crate::logdir::load::{load_logdir, Selection};
    use crate::read::event_file::{read_event_file_into, Entry};
    use crate::write::event_writer::{optimizer_event, scalar_event, EventWriter};

    fn scalar(tag: &str, step: i64, value: f64) -> Mark {
        Mark::Scalar {
            tag: tag.into(),
            step,
            value,
        }
    }

    #[test]
    fn restarts_drop_the_values_logged_again() {
        let first = [
            scalar("loss", 0, 1.0),
            scalar("loss", 1, 2.0),
            scalar("lr", 1, 0.1),
            scalar("loss", 2, 3.0),
        ];
        // The second file restarts from step 1 (a checkpoint), then a step goes back to 2.
        let second = [
            Mark::Start { step: 1 },
            scalar("loss", 1, 20.0),
            scalar("loss", 3, 40.0),
            scalar("loss", 2, 30.0),
            Mark::Optimizer(vec!["torch.optim.sgd.SGD".into()]),
        ];
        let evidence = RunEvidence::replay([&first[..], &second[..]]);
        assert_eq!(evidence.scalars.len(), 2);
        let loss = &evidence.scalars[0];
        assert_eq!(loss.tag, "loss");
        assert_eq!(
            (loss.steps.clone(), loss.values.clone()),
            (vec![0, 1, 2], vec![1.0, 20.0, 30.0])
        );
        assert_eq!(evidence.scalars[1].steps, Vec::<i64>::new());
        assert_eq!(evidence.optimizer, vec!["torch.optim.sgd.SGD"]);
        assert_eq!(evidence.last_step(), Some(2));
    }

    #[test]
    fn a_file_read_once_gives_histograms_and_evidence() {
        let dir = std::env::temp_dir().join(format!("histoscope-evidence-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let mut writer = EventWriter::create(&dir, 1.0, "host").unwrap();
        writer
            .write(&scalar_event("loss", 3, 2.0, f32::NAN))
            .unwrap();
        let note = OptimizerNote {
            classes: vec!["torch.optim.adamw.AdamW".into()],
        };
        writer.write(&optimizer_event(&note, 2.0)).unwrap();
        writer.flush().unwrap();
        let mut sink = Evidenced::new(Vec::<Entry>::new());
        let mut plugins = Default::default();
        let report = read_event_file_into(writer.path(), None, &mut sink, &mut plugins);
        assert!(!report.has_problems());
        assert!(sink.inner.is_empty());
        assert_eq!(sink.marks.len(), 2);
        assert!(
            matches!(&sink.marks[0], Mark::Scalar { tag, step: 3, value } if tag == "loss" && value.is_nan())
        );
        assert_eq!(sink.marks[1], Mark::Optimizer(note.classes));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn loading_keeps_every_writers_scalars() {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let scalars_of = |logdir: &str, run: &str| -> Vec<(String, usize)> {
            let loaded = load_logdir(&fixtures.join(logdir), &Selection::default()).unwrap();
            let evidence = &loaded.evidence[run];
            assert!(evidence.optimizer.is_empty());
            evidence
                .scalars
                .iter()
                .filter(|s| s.values.iter().all(|v| v.is_finite()))
                .map(|s| (s.tag.clone(), s.steps.len()))
                .collect()
        };
        // PyTorch's simple values, in a run with no histogram at all.
        assert_eq!(
            scalars_of("scalars_only", "train"),
            vec![("accuracy".to_owned(), 20), ("loss".to_owned(), 20)]
        );
        // Keras's TF2 scalar tensors: one per epoch.
        let keras = scalars_of("keras_fit", "fit/train");
        assert!(keras.contains(&("epoch_loss".to_owned(), 3)), "{keras:?}");
    }
}
