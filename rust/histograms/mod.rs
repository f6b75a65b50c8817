//! Histograms as values: buckets from every format, statistics and step profiles, one series per tag.

pub mod data_compat;
pub mod float16;
pub mod huge_pages;
pub mod profile;
pub mod profiled;
pub mod series;
pub mod stats;
