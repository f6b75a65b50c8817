//! The rules on series built in the test, one behaviour each.

use super::*;
use crate::histograms::profiled::ProfiledSeries;
use crate::histograms::series::Series;
use crate::histograms::stats::Stats;
use crate::logdir::evidence::ScalarSeries;

/// A series of `steps.len()` steps, each a normal-like spread of `scale`
/// (two point buckets at ±scale) and no stored stats.
pub(super) fn series(run: &str, tag: &str, steps: &[i64], scales: &[f64]) -> Series {
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

pub(super) fn run_rules(all: &[Series], options: &Options) -> Vec<Finding> {
    run_with(all, &Evidence::new(), options)
}

pub(super) fn run_with(all: &[Series], evidence: &Evidence, options: &Options) -> Vec<Finding> {
    let views: Vec<SeriesView<'_>> = all.iter().map(SeriesView::from).collect();
    let checked = diagnose_checked(&views, evidence, options).unwrap();
    assert_eq!(checked, diagnose_loaded(all, evidence, options));
    // No finding is ever more severe than its kind's worst (what stop_on stops at).
    assert!(
        checked.iter().all(|f| f.severity <= f.kind.worst()),
        "{checked:?}"
    );
    checked
}

/// [`run_with`] run `r`'s loss as its one scalar, default options.
pub(super) fn run_with_loss(all: &[Series], loss: Vec<f64>) -> Vec<Finding> {
    run_with(
        all,
        &evidence("r", &[("loss", loss)], &[]),
        &Options::default(),
    )
}

pub(super) fn kinds(findings: &[Finding]) -> Vec<(&str, Kind, Severity)> {
    findings
        .iter()
        .map(|f| (f.key.as_str(), f.kind, f.severity))
        .collect()
}

pub(super) const STEPS: [i64; 10] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];

#[test]
fn steady_series_have_no_findings() {
    let all = [
        series("r", "gradients/0.weight", &STEPS, &[0.01; 10]),
        series("r", "parameters/0.weight", &STEPS, &moving(0.1)),
        series("r", "activations/0", &STEPS, &[0.5; 10]),
    ];
    assert_eq!(run_rules(&all, &Options::default()), vec![]);
}

/// A parameter's scale about `scale`, moving a little at every step as a trained one does.
fn moving(scale: f64) -> Vec<f64> {
    (0..10).map(|i| scale * (1.0 + 1e-3 * i as f64)).collect()
}

#[test]
fn a_parameter_standing_still_under_a_gradient_is_stuck() {
    let all = [
        series("r", "gradients/0.weight", &STEPS, &[0.01; 10]),
        series("r", "parameters/0.weight", &STEPS, &[0.1; 10]),
    ];
    let found = run_with_loss(&all, vec![2.3; 10]);
    assert_eq!(
        kinds(&found),
        vec![("gradients/0.weight", Kind::Stuck, Severity::Error)]
    );
    assert_eq!(found[0].first_step, 1);
    assert!(found[0].message.contains("stands still from step 1"));
    // With the loss falling elsewhere, a part left out is a warning.
    let falling: Vec<f64> = (0..10).map(|i| 2.3 - 0.2 * i as f64).collect();
    assert_eq!(run_with_loss(&all, falling)[0].severity, Severity::Warning);
    // A parameter that moves is not stuck, nor one whose gradient is zero (vanishing).
    let moves = [
        all[0].clone(),
        series("r", "parameters/0.weight", &STEPS, &moving(0.1)),
    ];
    assert_eq!(run_with_loss(&moves, vec![2.3; 10]), vec![]);
    let zero = [
        series("r", "gradients/0.weight", &STEPS, &[0.0; 10]),
        all[1].clone(),
    ];
    assert!(run_with_loss(&zero, vec![2.3; 10])
        .iter()
        .all(|f| f.kind != Kind::Stuck));
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
        diagnose_checked(&views, &Evidence::new(), &Options::default()),
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
            "collapsed",
            "spectral",
            "skipped",
            "stuck"
        ]
    );
    assert!(kinds.iter().all(|k| k.parse::<Kind>().is_ok()));
    assert_eq!(
        Role::NAMES,
        [
            "gradient",
            "parameter",
            "activation",
            "loss",
            "other",
            "spectrum"
        ]
    );
    assert!(Role::NAMES.iter().all(|r| r.parse::<Role>().is_ok()));
    assert_eq!(
        Severity::ALL.map(Severity::name),
        ["info", "warning", "error"]
    );
    assert!(Severity::ALL.windows(2).all(|w| w[0] < w[1]));
}

/// A run's evidence: scalars logged at steps 0, 1, 2... and the optimizer's classes.
pub(super) fn evidence(run: &str, scalars: &[(&str, Vec<f64>)], optimizer: &[&str]) -> Evidence {
    let scalars = scalars
        .iter()
        .map(|(tag, values)| ScalarSeries {
            tag: (*tag).to_owned(),
            steps: (0..values.len() as i64).collect(),
            values: values.clone(),
        })
        .collect();
    let optimizer = optimizer.iter().map(|c| (*c).to_owned()).collect();
    [(
        run.to_owned(),
        RunEvidence {
            scalars,
            optimizer,
            ..Default::default()
        },
    )]
    .into()
}

/// A series whose stored stats give each step's mean and std (count 100 in [min, max]).
fn with_stats(
    tag: &str,
    steps: &[i64],
    buckets: &[f64],
    moments: &[(f64, f64, f64, f64)],
) -> Series {
    let mut s = series("r", tag, &[], &[]);
    for (&step, &(min, max, mean, std)) in steps.iter().zip(moments) {
        s.steps.push(step);
        s.wall_times.push(step as f64);
        s.buckets.extend_from_slice(buckets);
        s.offsets.push(s.buckets.len() / 3);
        s.stats.push(Stats::from_array([
            100.0, min, max, mean, std, 0.0, 0.0, 0.0,
        ]));
    }
    s
}

#[test]
fn growth_of_a_few_hundred_times_explodes_once_the_loss_diverged() {
    // Parameters grow 470 times (std 0.07 to 33), short of 10^3, while the loss goes
    // from 1.4 to 13: issue 19's first miss.
    let scales = [0.07, 0.07, 0.1, 1.0, 5.0, 12.0, 20.0, 25.0, 30.0, 33.0];
    let all = [series("r", "parameters/fc.weight", &STEPS, &scales)];
    assert_eq!(run_rules(&all, &Options::default()), vec![]);
    let mut loss: Vec<f64> = vec![1.4, 1.3, 1.5, 3.0, 8.0, 13.0, 13.0, 12.0, 13.0, 13.0];
    let diverged = evidence("r", &[("train/loss", loss.clone())], &[]);
    let found = run_with(&all, &diverged, &Options::default());
    assert_eq!(
        kinds(&found),
        vec![("parameters/fc.weight", Kind::Exploding, Severity::Error)]
    );
    assert!(found[0]
        .message
        .contains("while train/loss rises from 1.4e0 to 1.3e1 from step 4"));
    assert_eq!(found[0].evidence[4], ("loss_rise".to_owned(), 13.0 / 1.4));
    // A loss that falls is no evidence.
    loss.reverse();
    let healthy = evidence("r", &[("train/loss", loss)], &[]);
    assert_eq!(run_with(&all, &healthy, &Options::default()), vec![]);
}

#[test]
fn histograms_that_stop_while_the_loss_goes_on_as_nan() {
    // Every histogram ends at step 0 (the writer refused the NaN after it); the loss
    // goes on to step 9 as NaN: issue 19's second miss.
    let all = [
        series("r", "0.weight", &[0], &[0.1]),
        series("r", "0.weight.grad", &[0], &[0.01]),
    ];
    let mut loss = vec![f64::NAN; 10];
    loss[0] = 1.4;
    let found = run_with_loss(&all, loss);
    assert_eq!(
        kinds(&found),
        vec![
            ("0.weight", Kind::Nonfinite, Severity::Warning),
            ("0.weight.grad", Kind::Nonfinite, Severity::Warning),
            ("loss", Kind::Nonfinite, Severity::Error),
        ]
    );
    assert!(found[0].message.contains(
        "stops at step 0 while the run goes on to step 9: loss is NaN or infinite from step 1"
    ));
    assert_eq!(
        (found[2].role, found[2].first_step, found[2].last_step),
        (Role::Loss, 1, 9)
    );
    // Without NaN, one histogram at step 0 and a loss to step 9 say nothing: no interval.
    let finite = evidence("r", &[("loss", vec![1.0; 10])], &[]);
    assert_eq!(run_with(&all, &finite, &Options::default()), vec![]);
    // The run's last event counts, scalars included, for a series with an interval too.
    let every_other = [series("r", "0.weight", &[0, 2, 4], &[0.1; 3])];
    let found = run_with(&every_other, &finite, &Options::default());
    assert_eq!(
        kinds(&found),
        vec![("0.weight", Kind::Nonfinite, Severity::Warning)]
    );
}

#[test]
fn a_sigmoid_at_0_and_1_saturates_however_coarse_its_top_bucket() {
    // PyTorch's buckets near 1: [0, 0.091] holds half the values, [0.909, 1] the other
    // half; spread evenly, 45% fall in the last 5% of the range, but a std of 0.476
    // around 0.5 says they sit at the ends: issue 19's third miss.
    let buckets = [0.0, 0.091, 50.0, 0.091, 0.909, 1.0, 0.909, 1.0, 49.0];
    let moments = [(1e-6, 0.999_999, 0.5, 0.476); 10];
    let all = [with_stats("1/activations", &STEPS, &buckets, &moments)];
    let found = run_rules(&all, &Options::default());
    assert_eq!(
        kinds(&found),
        vec![("1/activations", Kind::Saturated, Severity::Warning)]
    );
    let slope = found[0].evidence[1].1;
    assert!((slope - 4.0 * (0.25 - 0.476 * 0.476)).abs() < 1e-12);
    assert!(found[0].evidence[0].1 < 0.75, "{:?}", found[0].evidence);
    // A healthy sigmoid (std 0.17) in the same buckets is not saturated.
    let healthy = [(0.01, 0.99, 0.5, 0.17); 10];
    let all = [with_stats("1/activations", &STEPS, &buckets, &healthy)];
    assert_eq!(run_rules(&all, &Options::default()), vec![]);
}

#[test]
fn attention_queries_and_keys_under_adam_are_not_vanishing() {
    // A fresh attention layer's query gradient 10^6 below the classifier bias's, and
    // logged parameters that move: issue 19's fourth false alarm.
    let all = [
        series(
            "r",
            "gradients/attention.self.query.weight",
            &STEPS,
            &[1e-7; 10],
        ),
        series("r", "gradients/classifier.bias", &STEPS, &[0.1; 10]),
        series("r", "gradients/classifier.weight", &STEPS, &[0.05; 10]),
        series(
            "r",
            "parameters/attention.self.query.weight",
            &STEPS,
            &[
                0.020, 0.021, 0.022, 0.023, 0.024, 0.025, 0.026, 0.027, 0.028, 0.029,
            ],
        ),
    ];
    // Without the optimizer, a query is compared with queries and keys only.
    assert_eq!(run_rules(&all, &Options::default()), vec![]);
    // Another query or key far above it still counts: both are that kind of layer.
    let mut with_key = all.to_vec();
    with_key.push(series(
        "r",
        "gradients/attention.self.key.weight",
        &STEPS,
        &[0.01; 10],
    ));
    let found = run_rules(&with_key, &Options::default());
    assert_eq!(
        kinds(&found),
        vec![(
            "gradients/attention.self.query.weight",
            Kind::Vanishing,
            Severity::Warning
        )]
    );
    // Under Adam, only where the parameter stops moving...
    let adam = evidence("r", &[], &["torch.optim.adamw.AdamW"]);
    assert_eq!(run_with(&with_key, &adam, &Options::default()), vec![]);
    let mut stuck = with_key.clone();
    stuck[3] = series(
        "r",
        "parameters/attention.self.query.weight",
        &STEPS,
        &[0.02; 10],
    );
    let found = run_with(&stuck, &adam, &Options::default());
    assert_eq!(found.len(), 1);
    assert!(found[0].message.contains("its parameter stopped moving"));
    // ...or its gradient falls far below its own start.
    let mut falling = with_key.clone();
    let scales = [1e-2, 1e-2, 1e-2, 1e-4, 1e-7, 1e-7, 1e-7, 1e-7, 1e-7, 1e-7];
    falling[0] = series(
        "r",
        "gradients/attention.self.query.weight",
        &STEPS,
        &scales,
    );
    let found = run_with(&falling, &adam, &Options::default());
    assert_eq!(found.len(), 1);
    assert!(found[0].message.contains("times smaller than at the start"));
    // Under SGD the kinds of layer still hold apart.
    let sgd = evidence("r", &[], &["torch.optim.sgd.SGD"]);
    assert_eq!(run_with(&all, &sgd, &Options::default()), vec![]);
}

#[test]
fn a_nan_scalar_is_nonfinite_and_a_loss_role_can_be_given() {
    let all = [series("r", "parameters/w", &STEPS, &[0.1; 10])];
    let mut objective = vec![1.0; 10];
    objective[9] = f64::INFINITY;
    let ev = evidence("r", &[("objective", objective.clone())], &[]);
    let found = run_with(&all, &ev, &Options::default());
    assert_eq!(
        kinds(&found),
        vec![("objective", Kind::Nonfinite, Severity::Error)]
    );
    assert_eq!(found[0].role, Role::Other);
    let options = Options::parse(None, vec![("objective".into(), "loss".into())]).unwrap();
    let found = run_with(&all, &ev, &options);
    assert_eq!(found[0].role, Role::Loss);
    // A run with scalars and no histograms is diagnosed too; kinds still choose.
    let found = run_with(&[], &ev, &Options::default());
    assert_eq!(found.len(), 1);
    let options = Options::parse(Some(vec!["dead".into()]), vec![]).unwrap();
    assert_eq!(run_with(&[], &ev, &options), vec![]);
}

/// Findings of `runs` diagnosed one by one, in order, as a stream gives them.
fn run_by_run(runs: &[LoadedRun], options: &Options) -> Vec<Finding> {
    runs.iter().flat_map(|r| diagnose_run(r, options)).collect()
}

#[test]
fn runs_diagnosed_one_by_one_find_what_the_whole_finds() {
    use crate::logdir::load::{LogdirSource, Selection};
    use crate::logdir::run::Reading;
    use crate::logdir::stream::RunStream;

    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    for logdir in [
        "nested",
        "restart",
        "corrupt",
        "keras_fit",
        "torch_writer",
        "tf2_summary",
    ] {
        let source = LogdirSource::local(fixtures.join(logdir));
        let whole = source.load(&Selection::default()).unwrap();
        let options = Options::default();
        let expected = diagnose_loaded(&whole.series, &whole.evidence, &options);
        for reading in [Reading::Series, Reading::Profiles] {
            let stream = RunStream::open(&source, &Selection::default(), Some(1), reading).unwrap();
            let runs: Vec<LoadedRun> = stream.flatten().map(|s| s.run).collect();
            if reading == Reading::Profiles {
                assert!(runs.iter().all(|r| r.merged.series.is_empty()));
            } else {
                assert!(runs.iter().all(|r| r.profiled.is_empty()));
            }
            assert_eq!(
                run_by_run(&runs, &options),
                expected,
                "{logdir} as {reading:?}"
            );
        }
    }
}

#[test]
fn planted_problems_are_found_alike_run_by_run() {
    let planted = [
        vec![
            series("a", "gradients/0.weight", &STEPS, &[1e-9; 10]),
            series("a", "gradients/1.weight", &STEPS, &[1e-2; 10]),
            series("a", "gradients/0.bias", &STEPS, &[1e-12; 10]),
        ],
        vec![
            series("b", "gradients/a", &STEPS[..4], &[0.1; 4]),
            series("b", "gradients/b", &STEPS, &[0.1; 10]),
            series("b", "parameters/b", &STEPS, &[0.1; 10]),
        ],
        vec![series(
            "c",
            "parameters/w",
            &STEPS,
            &[0.1, 0.1, 0.1, 1.0, 10.0, 1e3, 1e5, 1e8, 1e9, 1e10],
        )],
    ];
    let mut evidence = evidence("b", &[("loss", vec![1.0, 1.0, 9.0, 9.0, f64::NAN])], &[]);
    evidence.insert("d".into(), RunEvidence::default());
    let runs: Vec<LoadedRun> = ["a", "b", "c", "d"]
        .iter()
        .zip(planted.iter().cloned().chain([vec![]]))
        .map(|(name, series)| LoadedRun {
            name: (*name).to_owned(),
            merged: crate::logdir::merge::MergedRun {
                series,
                ..Default::default()
            },
            profiled: Vec::new(),
            evidence: evidence.get(*name).cloned().unwrap_or_default(),
        })
        .collect();
    let profiled: Vec<LoadedRun> = runs
        .iter()
        .map(|r| LoadedRun {
            name: r.name.clone(),
            merged: Default::default(),
            profiled: r.merged.series.iter().map(ProfiledSeries::of).collect(),
            evidence: r.evidence.clone(),
        })
        .collect();
    let all: Vec<Series> = planted.concat();
    for options in [
        Options::default(),
        Options::parse(Some(vec!["vanishing".into()]), vec![]).unwrap(),
    ] {
        let whole = diagnose_loaded(&all, &evidence, &options);
        assert!(whole.len() >= 2, "the planted problems are found");
        assert_eq!(run_by_run(&runs, &options), whole);
        assert_eq!(run_by_run(&profiled, &options), whole);
    }
}

#[test]
fn growth_in_an_agent_whose_reward_rises_is_info() {
    let grows: Vec<f64> = (0..10).map(|i| 0.01 * 4f64.powi(i)).collect();
    let all = [series("r", "gradients/critic.0.weight", &STEPS, &grows)];
    let critic: Vec<f64> = (0..10).map(|i| (i * i) as f64 + 1.0).collect();
    let judged = |scalars: &[(&str, Vec<f64>)]| {
        run_with(&all, &evidence("r", scalars, &[]), &Options::default())
    };
    let diverged = judged(&[("critic_loss", critic.clone())]);
    let key = "gradients/critic.0.weight";
    assert_eq!(
        kinds(&diverged),
        vec![(key, Kind::Exploding, Severity::Error)]
    );
    // The same growth while the agent's reward rises fivefold: it learns.
    let reward: Vec<f64> = (0..10).map(|i| 2.0 + i as f64).collect();
    let learning = judged(&[
        ("critic_loss", critic.clone()),
        ("episode_reward_mean", reward),
    ]);
    assert_eq!(
        kinds(&learning),
        vec![(key, Kind::Exploding, Severity::Info)]
    );
    assert!(learning[0]
        .message
        .contains("while episode_reward_mean rises"));
    // A reward that does not rise is no excuse.
    let flat = judged(&[
        ("critic_loss", critic),
        ("episode_reward_mean", vec![2.0; 10]),
    ]);
    assert_eq!(kinds(&flat), vec![(key, Kind::Exploding, Severity::Error)]);
}
