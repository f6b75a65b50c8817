//! The rules for bins: edges and their limit, values binned, steps rebinned and thinned into charts (a series on its own bins, or a tag's runs on shared ones), percentiles, distances between histograms.

pub mod binning;
pub mod card;
pub mod chart;
pub mod compressor;
pub mod distance;
pub mod edges;
pub mod live_chart;
pub mod live_update;
pub mod rebin;
pub mod shared;
pub mod thin;
