//! Series to charts: steps thinned evenly, every kept step rebinned onto the same bins.

use rayon::prelude::*;

use crate::bins::rebin::{rebin, Rebinned};
use crate::bins::thin::thin_indices;
use crate::histograms::series::Series;

/// One tag of one run as a ridgeline draws it.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    pub run: String,
    pub tag: String,
    pub steps: Vec<i64>,
    pub wall_times: Vec<f64>,
    pub bins: Rebinned,
}

/// Thins each series to at most `max_steps` steps (`None`: all) and rebins them, in parallel.
pub fn charts(series: &[Series], bins: usize, max_steps: Option<usize>) -> Vec<Chart> {
    series
        .par_iter()
        .map(|s| chart(s, bins, max_steps))
        .collect()
}

fn chart(series: &Series, bins: usize, max_steps: Option<usize>) -> Chart {
    let kept = thin_indices(series.len(), max_steps);
    let steps: Vec<&[f64]> = kept.iter().map(|&i| series.step_buckets(i)).collect();
    Chart {
        run: series.run.clone(),
        tag: series.tag.clone(),
        steps: kept.iter().map(|&i| series.steps[i]).collect(),
        wall_times: kept.iter().map(|&i| series.wall_times[i]).collect(),
        bins: rebin(&steps, bins),
    }
}
