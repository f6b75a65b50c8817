//! Series to charts: steps thinned evenly, every kept step rebinned onto the same bins.

use std::collections::BTreeMap;

use rayon::prelude::*;

use crate::bins::rebin::{rebin, Rebinned};
use crate::bins::thin::thin_indices;
use crate::histograms::series::Series;
use crate::logdir::load::Logdir;
use crate::read::report::FileReport;

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

/// A log directory's histograms as charts, beside what reading it found.
#[derive(Debug, Default)]
pub struct LogdirCharts {
    /// Every run found, with or without histograms, sorted by name.
    pub runs: Vec<String>,
    /// One chart per run and tag, by run, then tag.
    pub charts: Vec<Chart>,
    /// One report per file read, in run and file order.
    pub reports: Vec<FileReport>,
    /// Per run read, how many histogram values a restart dropped or logged again.
    pub superseded: BTreeMap<String, usize>,
}

/// Every series of `logdir` as a chart (see [`charts`]); its series are used up.
pub fn logdir_charts(logdir: Logdir, bins: usize, max_steps: Option<usize>) -> LogdirCharts {
    let Logdir {
        runs,
        series,
        reports,
        superseded,
        ..
    } = logdir;
    LogdirCharts {
        charts: charts(&series, bins, max_steps),
        runs,
        reports,
        superseded,
    }
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
    use std::path::Path;

    use super::*;
    use crate::histograms::stats::Stats;

    #[test]
    fn a_logdirs_series_become_charts_beside_its_runs_and_reports() {
        let mut series = Series::new("r", "h");
        for step in 0..5 {
            series.push_rows(step, step as f64, &[0.0, 2.0, 4.0], Stats::MISSING);
        }
        let logdir = Logdir {
            runs: vec!["empty".into(), "r".into()],
            series: vec![series],
            reports: vec![FileReport::new(Path::new("r/events"))],
            superseded: [("r".to_owned(), 2)].into(),
            ..Default::default()
        };
        let charted = logdir_charts(logdir, 2, Some(3));
        assert_eq!(charted.runs, vec!["empty", "r"]);
        assert_eq!((charted.reports.len(), charted.superseded["r"]), (1, 2));
        let chart = &charted.charts[0];
        assert_eq!((chart.run.as_str(), chart.tag.as_str()), ("r", "h"));
        assert_eq!(chart.steps, vec![0, 2, 4]);
        assert_eq!(chart.bins.edges, vec![0.0, 1.0, 2.0]);
        assert_eq!(chart.bins.counts, vec![2.0, 2.0, 2.0, 2.0, 2.0, 2.0]);
    }
}
