//! The few fields of TensorFlow's `Event`, `Summary` and `TensorProto` messages that histograms need.
//!
//! Field numbers follow `tensorboard/compat/proto/*.proto`. Fields that are
//! not declared here (graphs, images, audio, scalars) are skipped by the
//! decoder without being copied; `tensor` and `histo` are kept as byte slices
//! of the record and decoded only for the tags we want.

use bytes::Bytes;

/// `tensorflow.Event`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Event {
    #[prost(double, tag = "1")]
    pub wall_time: f64,
    #[prost(int64, tag = "2")]
    pub step: i64,
    #[prost(string, optional, tag = "3")]
    pub file_version: Option<String>,
    #[prost(message, optional, tag = "5")]
    pub summary: Option<Summary>,
    #[prost(message, optional, tag = "7")]
    pub session_log: Option<SessionLog>,
}

/// `tensorflow.Summary`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Summary {
    #[prost(message, repeated, tag = "1")]
    pub value: Vec<SummaryValue>,
}

/// `tensorflow.Summary.Value`, with the payloads it may carry left encoded.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SummaryValue {
    #[prost(string, tag = "1")]
    pub tag: String,
    #[prost(float, optional, tag = "2")]
    pub simple_value: Option<f32>,
    #[prost(bytes = "bytes", optional, tag = "5")]
    pub histo: Option<Bytes>,
    #[prost(bytes = "bytes", optional, tag = "8")]
    pub tensor: Option<Bytes>,
    #[prost(message, optional, tag = "9")]
    pub metadata: Option<SummaryMetadata>,
}

/// `tensorflow.SummaryMetadata`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SummaryMetadata {
    #[prost(message, optional, tag = "1")]
    pub plugin_data: Option<PluginData>,
}

/// `tensorflow.SummaryMetadata.PluginData`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PluginData {
    #[prost(string, tag = "1")]
    pub plugin_name: String,
    #[prost(bytes = "bytes", tag = "2")]
    pub content: Bytes,
}

/// `tensorflow.HistogramProto`, the legacy histogram of TF1, PyTorch and tensorboardX.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HistogramProto {
    #[prost(double, tag = "1")]
    pub min: f64,
    #[prost(double, tag = "2")]
    pub max: f64,
    #[prost(double, tag = "3")]
    pub num: f64,
    #[prost(double, tag = "4")]
    pub sum: f64,
    #[prost(double, tag = "5")]
    pub sum_squares: f64,
    #[prost(double, repeated, tag = "6")]
    pub bucket_limit: Vec<f64>,
    #[prost(double, repeated, tag = "7")]
    pub bucket: Vec<f64>,
    /// histoscope's own statistics and first edge (docs/format.md); other
    /// readers skip this unknown field.
    #[prost(message, optional, tag = "1000")]
    pub histoscope: Option<HistoscopeStats>,
}

/// The field of a `HistogramProto` that holds [`HistoscopeStats`].
pub const HISTOSCOPE_FIELD: u32 = 1000;

/// What histoscope stores beside a `HistogramProto`: the first bin edge (so
/// that every bin reads back, the empty outer ones too) and the statistics
/// of the finite values that the proto cannot hold.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HistoscopeStats {
    #[prost(double, tag = "1")]
    pub first_edge: f64,
    #[prost(double, tag = "2")]
    pub count: f64,
    #[prost(double, tag = "3")]
    pub min: f64,
    #[prost(double, tag = "4")]
    pub max: f64,
    #[prost(double, tag = "5")]
    pub mean: f64,
    #[prost(double, tag = "6")]
    pub std: f64,
    #[prost(double, tag = "7")]
    pub nonfinite: f64,
    #[prost(double, tag = "8")]
    pub below: f64,
    #[prost(double, tag = "9")]
    pub above: f64,
}

impl HistoscopeStats {
    /// Every field with its tag, in tag order.
    pub fn tagged(&self) -> [(u32, f64); 9] {
        [
            (1, self.first_edge),
            (2, self.count),
            (3, self.min),
            (4, self.max),
            (5, self.mean),
            (6, self.std),
            (7, self.nonfinite),
            (8, self.below),
            (9, self.above),
        ]
    }
}

/// `tensorflow.TensorProto`, restricted to the numeric encodings histograms use.
///
/// Reading uses [`crate::read::proto_view::TensorView`], which borrows; this
/// message is for writing them in tests.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorProto {
    #[prost(int32, tag = "1")]
    pub dtype: i32,
    #[prost(message, optional, tag = "2")]
    pub tensor_shape: Option<TensorShapeProto>,
    #[prost(bytes = "bytes", tag = "4")]
    pub tensor_content: Bytes,
    #[prost(float, repeated, tag = "5")]
    pub float_val: Vec<f32>,
    #[prost(double, repeated, tag = "6")]
    pub double_val: Vec<f64>,
    #[prost(int32, repeated, tag = "7")]
    pub int_val: Vec<i32>,
    #[prost(int64, repeated, tag = "10")]
    pub int64_val: Vec<i64>,
    #[prost(bool, repeated, tag = "11")]
    pub bool_val: Vec<bool>,
    #[prost(int32, repeated, tag = "13")]
    pub half_val: Vec<i32>,
    #[prost(uint32, repeated, tag = "16")]
    pub uint32_val: Vec<u32>,
    #[prost(uint64, repeated, tag = "17")]
    pub uint64_val: Vec<u64>,
}

/// `tensorflow.TensorShapeProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorShapeProto {
    #[prost(message, repeated, tag = "2")]
    pub dim: Vec<Dim>,
}

/// `tensorflow.TensorShapeProto.Dim`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Dim {
    #[prost(int64, tag = "1")]
    pub size: i64,
}

/// `tensorflow.SessionLog`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SessionLog {
    #[prost(int32, tag = "1")]
    pub status: i32,
}

/// `SessionLog.SessionStatus.START`: a (re)started session.
pub const SESSION_START: i32 = 1;

/// `tensorflow.DataType` values that a histogram tensor may hold
/// (`tensorflow/core/framework/types.proto`).
pub mod dtype {
    pub const FLOAT: i32 = 1;
    pub const DOUBLE: i32 = 2;
    pub const INT32: i32 = 3;
    pub const UINT8: i32 = 4;
    pub const INT16: i32 = 5;
    pub const INT8: i32 = 6;
    pub const INT64: i32 = 9;
    pub const BOOL: i32 = 10;
    pub const BFLOAT16: i32 = 14;
    pub const UINT16: i32 = 17;
    pub const HALF: i32 = 19;
    pub const UINT32: i32 = 22;
    pub const UINT64: i32 = 23;

    /// TensorFlow's name for a dtype, for messages; "DT_?" for numbers it does not define.
    pub fn name(dtype: i32) -> &'static str {
        const NAMES: [&str; 24] = [
            "DT_INVALID",
            "DT_FLOAT",
            "DT_DOUBLE",
            "DT_INT32",
            "DT_UINT8",
            "DT_INT16",
            "DT_INT8",
            "DT_STRING",
            "DT_COMPLEX64",
            "DT_INT64",
            "DT_BOOL",
            "DT_QINT8",
            "DT_QUINT8",
            "DT_QINT32",
            "DT_BFLOAT16",
            "DT_QINT16",
            "DT_QUINT16",
            "DT_UINT16",
            "DT_COMPLEX128",
            "DT_HALF",
            "DT_RESOURCE",
            "DT_VARIANT",
            "DT_UINT32",
            "DT_UINT64",
        ];
        usize::try_from(dtype)
            .ok()
            .and_then(|i| NAMES.get(i))
            .copied()
            .unwrap_or("DT_?")
    }
}
