//! Framed events for the tests of the modules that read them: legacy histograms, histogram tensors and restarts.

use prost::Message;

use crate::read::proto::{
    dtype, Dim, Event, HistogramProto, PluginData, SessionLog, Summary, SummaryMetadata,
    SummaryValue, TensorProto, TensorShapeProto, SESSION_START,
};
use crate::read::tf_record::frame;

/// A legacy `HistogramProto` of `tag` at `step`, written at `step` seconds:
/// `counts[i]` values in the unit bucket `[i, i + 1)`, so from 0 to `counts.len()`.
pub(crate) fn legacy_histogram(tag: &str, step: i64, counts: &[f64]) -> Vec<u8> {
    let histo = HistogramProto {
        min: 0.0,
        max: counts.len() as f64,
        num: counts.iter().sum(),
        bucket_limit: (1..=counts.len()).map(|limit| limit as f64).collect(),
        bucket: counts.to_vec(),
        ..Default::default()
    };
    let value = SummaryValue {
        tag: tag.into(),
        histo: Some(histo.encode_to_vec().into()),
        ..Default::default()
    };
    summary_event(step, step as f64, value)
}

/// A TF2 histogram tensor of `tag` at `step`, written at `step` seconds:
/// `rows` flattened (left, right, count) rows, as doubles; with `plugin`, the
/// value names the `histograms` plugin, as the first value of a tag does.
pub(crate) fn tensor_histogram(tag: &str, step: i64, rows: &[f64], plugin: bool) -> Vec<u8> {
    tensor_histogram_at(tag, step, step as f64, rows, plugin)
}

/// [`tensor_histogram`] written at `wall_time`: a writer that restarts logs a step
/// again later than the first time, and not within one burst of shared tags.
pub(crate) fn tensor_histogram_at(
    tag: &str,
    step: i64,
    wall_time: f64,
    rows: &[f64],
    plugin: bool,
) -> Vec<u8> {
    let height = (rows.len() / 3) as i64;
    let tensor = TensorProto {
        dtype: dtype::DOUBLE,
        tensor_shape: Some(TensorShapeProto {
            dim: vec![Dim { size: height }, Dim { size: 3 }],
        }),
        double_val: rows.to_vec(),
        ..Default::default()
    };
    let metadata = plugin.then(|| plugin_metadata("histograms"));
    let value = SummaryValue {
        tag: tag.into(),
        tensor: Some(tensor.encode_to_vec().into()),
        metadata,
        ..Default::default()
    };
    summary_event(step, wall_time, value)
}

/// An image summary under `tag` at `step`, as Keras 2 writes beside a weight's
/// histogram with `write_images=True`: a `[2 + n]` string tensor (width, height,
/// then each encoded image), its own `images` metadata on every value.
pub(crate) fn image_summary(tag: &str, step: i64) -> Vec<u8> {
    let tensor = TensorProto {
        dtype: 7,
        tensor_shape: Some(TensorShapeProto {
            dim: vec![Dim { size: 3 }],
        }),
        tensor_content: b"\x024\x028\x05\x89PNG\r".to_vec().into(),
        ..Default::default()
    };
    let value = SummaryValue {
        tag: tag.into(),
        tensor: Some(tensor.encode_to_vec().into()),
        metadata: Some(plugin_metadata("images")),
        ..Default::default()
    };
    summary_event(step, step as f64, value)
}

fn plugin_metadata(plugin: &str) -> SummaryMetadata {
    SummaryMetadata {
        plugin_data: Some(PluginData {
            plugin_name: plugin.into(),
            content: Default::default(),
        }),
    }
}

/// The event TensorFlow writes when a session (re)starts at `step`.
pub(crate) fn restart(step: i64) -> Vec<u8> {
    let event = Event {
        step,
        session_log: Some(SessionLog {
            status: SESSION_START,
        }),
        ..Default::default()
    };
    frame(&event.encode_to_vec())
}

fn summary_event(step: i64, wall_time: f64, value: SummaryValue) -> Vec<u8> {
    let event = Event {
        step,
        wall_time,
        summary: Some(Summary { value: vec![value] }),
        ..Default::default()
    };
    frame(&event.encode_to_vec())
}
