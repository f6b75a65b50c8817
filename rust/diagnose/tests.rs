//! The rules on series built in the test, one behaviour each.

use super::*;
use crate::histograms::series::Series;
use crate::histograms::stats::Stats;

/// A series of `steps.len()` steps, each a normal-like spread of `scale`
/// (two point buckets at ±scale) and no stored stats.
fn series(run: &str, tag: &str, steps: &[i64], scales: &[f64]) -> Series {
    let mut s = Series {
        run: run.into(),
        tag: tag.into(),
        offsets: vec![0],
        ..Default::default()
    };
    for (&step, &scale) in steps.iter().zip(scales) {
        s.steps.push(step);
        s.wall_times.push(step as f64);
        s.buckets
            .extend_from_slice(&[-scale, -scale, 50.0, scale, scale, 50.0]);
        s.offsets.push(s.buckets.len() / 3);
        s.stats.push(Stats::MISSING);
    }
    s
}

fn run_rules(all: &[Series], options: &Options) -> Vec<Finding> {
    let views: Vec<SeriesView<'_>> = all.iter().map(SeriesView::from).collect();
    let checked = diagnose_checked(&views, options).unwrap();
    assert_eq!(checked, diagnose_loaded(all, options));
    checked
}

fn kinds(findings: &[Finding]) -> Vec<(&str, Kind, Severity)> {
    findings
        .iter()
        .map(|f| (f.key.as_str(), f.kind, f.severity))
        .collect()
}

const STEPS: [i64; 10] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];

#[test]
fn steady_series_have_no_findings() {
    let all = [
        series("r", "gradients/0.weight", &STEPS, &[0.01; 10]),
        series("r", "parameters/0.weight", &STEPS, &[0.1; 10]),
        series("r", "activations/0", &STEPS, &[0.5; 10]),
    ];
    assert_eq!(run_rules(&all, &Options::default()), vec![]);
}

#[test]
fn a_gradient_far_below_the_others_vanishes() {
    let all = [
        series("r", "gradients/0.weight", &STEPS, &[1e-9; 10]),
        series("r", "gradients/1.weight", &STEPS, &[1e-2; 10]),
        // Another run's gradients are not compared.
        series("s", "gradients/0.weight", &STEPS, &[1e-5; 10]),
    ];
    let found = run_rules(&all, &Options::default());
    assert_eq!(
        kinds(&found),
        vec![("gradients/0.weight", Kind::Vanishing, Severity::Warning)]
    );
    assert_eq!(found[0].run, "r");
    assert!(found[0]
        .message
        .contains("10^7 times smaller than gradients/1.weight's"));
}

#[test]
fn a_bias_without_gradient_beside_its_weight_is_info() {
    let all = [
        series("r", "0.bias.grad", &STEPS, &[1e-10; 10]),
        series("r", "0.weight.grad", &STEPS, &[1e-2; 10]),
    ];
    let found = run_rules(&all, &Options::default());
    assert_eq!(
        kinds(&found),
        vec![("0.bias.grad", Kind::Vanishing, Severity::Info)]
    );
}

#[test]
fn growth_then_nan_edges_is_exploding_then_nonfinite() {
    let mut s = series(
        "r",
        "parameters/w",
        &STEPS[..8],
        &[0.1, 0.1, 0.1, 1.0, 10.0, 1e3, 1e5, 1e8],
    );
    let nan = [f64::NAN, f64::NAN, 0.0];
    for step in [8, 9] {
        s.steps.push(step);
        s.wall_times.push(step as f64);
        s.buckets.extend_from_slice(&nan);
        s.offsets.push(s.buckets.len() / 3);
        s.stats.push(Stats::MISSING);
    }
    let found = run_rules(&[s], &Options::default());
    assert_eq!(
        kinds(&found),
        vec![
            ("parameters/w", Kind::Exploding, Severity::Error),
            ("parameters/w", Kind::Nonfinite, Severity::Error),
        ]
    );
    assert_eq!((found[0].first_step, found[0].last_step), (5, 7));
    assert_eq!((found[1].first_step, found[1].last_step), (8, 9));
}

#[test]
fn a_series_that_stops_before_its_run_ends() {
    let all = [
        series("r", "gradients/a", &STEPS[..4], &[0.1; 4]),
        series("r", "gradients/b", &STEPS, &[0.1; 10]),
        // Logged every 4 steps, its last at 8: not stopped.
        series("r", "parameters/c", &[0, 4, 8], &[0.1; 3]),
    ];
    let found = run_rules(&all, &Options::default());
    assert_eq!(
        kinds(&found),
        vec![("gradients/a", Kind::Nonfinite, Severity::Warning)]
    );
    assert_eq!(found[0].first_step, 3);
}

#[test]
fn a_spread_that_shrinks_to_nothing_collapsed() {
    let scales = [0.1, 0.1, 0.1, 0.01, 1e-3, 1e-5, 1e-6, 1e-6, 1e-6, 1e-6];
    let all = [series("r", "parameters/w", &STEPS, &scales)];
    let found = run_rules(&all, &Options::default());
    assert_eq!(
        kinds(&found),
        vec![("parameters/w", Kind::Collapsed, Severity::Warning)]
    );
    assert_eq!(found[0].first_step, 5);
    // A key the rules know nothing of is only checked for NaN and growth...
    let other = [series("r", "hist/w", &STEPS, &scales)];
    assert_eq!(run_rules(&other, &Options::default()), vec![]);
    // ...unless a role is given, and kinds choose what is reported.
    let options = Options::parse(None, vec![("hist/w".into(), "parameter".into())]).unwrap();
    assert_eq!(run_rules(&other, &options).len(), 1);
    let options = Options::parse(Some(vec!["dead".into()]), vec![]).unwrap();
    assert_eq!(run_rules(&all, &options), vec![]);
}

#[test]
fn bad_names_and_arrays_are_errors() {
    assert_eq!(
        Options::parse(Some(vec!["sad".into()]), vec![]).unwrap_err(),
        DiagnoseError::UnknownKind("sad".into())
    );
    assert!(matches!(
        Options::parse(None, vec![("k".into(), "weights".into())]),
        Err(DiagnoseError::UnknownRole { .. })
    ));
    let mut s = series("r", "t", &STEPS[..2], &[1.0, 1.0]);
    s.offsets[2] = 7;
    assert!(SeriesView::from(&s).check().is_err());
    let views = [SeriesView::from(&s)];
    assert!(matches!(
        diagnose_checked(&views, &Options::default()),
        Err(DiagnoseError::BadSeries { .. })
    ));
}

#[test]
fn the_vocabularies_keep_the_python_apis_order() {
    let kinds = Kind::ALL.map(Kind::name);
    assert_eq!(
        kinds,
        [
            "vanishing",
            "exploding",
            "nonfinite",
            "dead",
            "saturated",
            "collapsed"
        ]
    );
    assert!(kinds.iter().all(|k| k.parse::<Kind>().is_ok()));
    assert_eq!(
        Role::NAMES,
        ["gradient", "parameter", "activation", "other"]
    );
    assert!(Role::NAMES.iter().all(|r| r.parse::<Role>().is_ok()));
    assert_eq!(
        Severity::ALL.map(Severity::name),
        ["info", "warning", "error"]
    );
    assert!(Severity::ALL.windows(2).all(|w| w[0] < w[1]));
}
