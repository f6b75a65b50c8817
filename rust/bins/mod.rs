//! The rules for bins: edges and their limit, values binned, steps rebinned and thinned into charts, percentiles, distances between histograms.

pub mod binning;
pub mod chart;
pub mod compressor;
pub mod distance;
pub mod edges;
pub mod rebin;
pub mod thin;
