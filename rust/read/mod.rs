//! Reading events files: TFRecord framing, the protobuf fields histograms need, and decoding to
//! entries (and to the scalars and optimizer notes diagnosis weighs).

pub mod event_file;
pub mod event_stream;
pub mod file_pieces;
pub mod masked_crc;
pub mod metric_layout;
pub mod optimizer_note;
pub mod proto;
pub mod proto_view;
pub mod report;
pub mod scalars;
pub mod shared_tags;
#[cfg(test)]
pub(crate) mod test_events;
pub mod tf_record;
pub mod wire;
