//! histoscope's core: TensorBoard events files read fast and exactly, histograms rebinned.
//!
//! Plain Rust with no Python in it; the bindings live in `py` and only convert.

pub mod binning;
pub mod binning_batch;
pub mod chart;
pub mod compressor;
pub mod data_compat;
pub mod diagnose;
pub mod edges;
pub mod event_file;
pub mod event_stream;
pub mod event_writer;
pub mod float16;
pub mod follow;
pub mod huge_pages;
pub mod layout;
pub mod logdir;
pub mod masked_crc;
pub mod plan;
pub mod proto;
pub mod proto_view;
pub mod rebin;
pub mod report;
pub mod run_loader;
pub mod series;
pub mod stats;
pub mod tf_record;
pub mod thin;
pub mod wire;

#[cfg(feature = "python")]
mod py;
