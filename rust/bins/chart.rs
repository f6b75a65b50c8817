//! Series to charts: steps thinned evenly, every kept step rebinned onto the same bins.

use rayon::prelude::*;

use crate::bins::rebin::{rebin, Rebinned};
use crate::bins::thin::thin_indices;
use crate::histograms::series::Series;

/// The equal bins a chart is counted in unless asked otherwise, as maidr's and
/// TensorBoard's histograms are.
pub const CHART_BINS: usize = 30;

/// The most steps a chart keeps unless asked otherwise: what TensorBoard's
/// `/histograms` route serves of a series.
pub const CHART_STEPS: usize = 51;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histograms::stats::Stats;

    #[test]
    fn a_series_is_thinned_then_rebinned_onto_one_set_of_bins() {
        let mut series = Series::new("r", "h");
        for step in 0..5 {
            series.push_rows(step, step as f64, &[0.0, 2.0, 4.0], Stats::MISSING);
        }
        let chart = &charts(&[series], 2, Some(3))[0];
        assert_eq!((chart.run.as_str(), chart.tag.as_str()), ("r", "h"));
        assert_eq!(chart.steps, vec![0, 2, 4]);
        assert_eq!(chart.wall_times, vec![0.0, 2.0, 4.0]);
        assert_eq!(chart.bins.edges, vec![0.0, 1.0, 2.0]);
        assert_eq!(chart.bins.counts, vec![2.0, 2.0, 2.0, 2.0, 2.0, 2.0]);
    }
}
