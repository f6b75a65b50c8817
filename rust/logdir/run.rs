//! One run as read: its series (or their step profiles), the reports of its files,
//! what restarts superseded, and the scalars and notes diagnosis weighs.

use crate::histograms::profiled::ProfiledSeries;
use crate::logdir::evidence::RunEvidence;
use crate::logdir::merge::MergedRun;

/// One run read: its series, the reports of its files, what restarts
/// superseded, and the scalars and optimizer read in the same pass.
#[derive(Debug, Default)]
pub struct LoadedRun {
    pub name: String,
    /// Its series, buckets and all; empty where read as [`Reading::Profiles`].
    pub merged: MergedRun,
    /// Its series as step profiles, where read as [`Reading::Profiles`].
    pub profiled: Vec<ProfiledSeries>,
    pub evidence: RunEvidence,
}

/// What a run's series are read into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// Every step's buckets, as stored.
    Series,
    /// Every step's profile alone, as diagnosis reads it: a run of one file is
    /// profiled as it is decoded, and never holds its buckets.
    Profiles,
}
