//! Log directories: runs found and read in parallel (histograms, and the scalars and
//! optimizer diagnosis weighs), restarts planned, growing files followed.

pub mod bucket_cache;
pub mod card;
pub mod compare;
pub mod discover;
pub mod evidence;
pub mod follow;
pub mod load;
pub mod merge;
pub mod plan;
#[cfg(test)]
mod restart_tests;
pub mod run;
pub mod run_loader;
pub mod run_parts;
pub mod storage;
pub mod stream;
