//! histoscope's core: TensorBoard events files read fast and exactly, histograms rebinned.
//!
//! Plain Rust with no Python in it; the bindings live in `py` and only convert.
//! The folders follow the data: `read` (events files to histogram entries),
//! `histograms` (buckets, statistics and series), `bins` (the rules for bins:
//! binning values, rebinning, charts), `logdir` (runs found, read, merged and
//! followed), `diagnose` (findings), `write` (events files written), `spectral` (a weight
//! matrix's eigenvalue spectrum: α, stable rank).

pub mod bins;
pub mod diagnose;
pub mod histograms;
pub mod logdir;
pub mod read;
pub mod spectral;
pub mod write;

#[cfg(feature = "python")]
mod py;
