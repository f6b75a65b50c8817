//! The triggers held to the rules: on random runs and on the real fixtures' files, a
//! live diagnosis whose budget is spent, so that only its triggers have steps judged,
//! alerts exactly as one that judges every step.

use std::time::Duration;

use proptest::prelude::*;

use super::live::JUDGING_ALLOWANCE;
use super::skipped::SKIPPED_TAG;
use super::{Alert, LiveDiagnosis, Options};
use crate::histograms::stats::Stats;

/// How a histogram looks over a stretch of steps.
#[derive(Debug, Clone, Copy)]
enum Shape {
    /// Values at ±10^e, and growing by `drift` a step, so that parameters move.
    Spread(i32, bool),
    /// Nearly all exact zeros: dead units.
    Zeros,
    /// Piled at ±0.97: saturated tanh units.
    Ends,
    /// One value, 10^e, no spread: collapsed.
    Point(i32),
    /// Values at ±10^e, but 10^5 times that every seventh step: spikes that heal.
    Spiky(i32),
    /// Every value exactly 0: a gradient that never flows.
    Zero,
    /// NaN edges, as TensorFlow writes for NaN input.
    NaN,
    /// Not logged any more.
    Gone,
}

fn shape() -> impl Strategy<Value = Shape> {
    prop_oneof![
        6 => (-12i32..8, any::<bool>()).prop_map(|(e, drift)| Shape::Spread(e, drift)),
        1 => Just(Shape::Zeros),
        1 => Just(Shape::Ends),
        1 => (-6i32..2).prop_map(Shape::Point),
        2 => (-4i32..1).prop_map(Shape::Spiky),
        1 => Just(Shape::Zero),
        1 => Just(Shape::NaN),
        1 => Just(Shape::Gone),
    ]
}

/// A key's shapes over the run: stretches of one to eight steps.
fn stretches() -> impl Strategy<Value = Vec<(usize, Shape)>> {
    prop::collection::vec((1usize..8, shape()), 1..6)
}

/// How the loss looks over a stretch: a level falling, or not, a spike, up (not back
/// after a spike, not risen enough to say it diverged), risen, NaN, or not logged.
#[derive(Debug, Clone, Copy)]
enum Loss {
    Falls,
    Flat,
    Spike,
    Up,
    Risen,
    NaN,
    Unlogged,
}

fn loss() -> impl Strategy<Value = Vec<(usize, Loss)>> {
    let one = prop_oneof![
        4 => Just(Loss::Falls),
        2 => Just(Loss::Flat),
        1 => Just(Loss::Spike),
        1 => Just(Loss::Up),
        1 => Just(Loss::Risen),
        1 => Just(Loss::Unlogged),
        1 => Just(Loss::NaN),
    ];
    prop::collection::vec((1usize..8, one), 1..6)
}

const KEYS: [&str; 9] = [
    "gradients/l0.weight",
    "gradients/l0.bias",
    "gradients/l1.weight",
    "gradients/l1.bias",
    "parameters/l0.weight",
    "parameters/l1.weight",
    "activations/l0",
    "activations/l1",
    "other/x",
];

#[derive(Debug, Clone)]
struct RandomRun {
    keys: Vec<Vec<(usize, Shape)>>,
    loss: Vec<(usize, Loss)>,
    alpha: Vec<f64>,
    /// Positions in the run where training restarts this many steps back.
    restarts: Vec<(usize, i64)>,
    /// Whether the writer settles each step as it ends (`watch` does), or leaves it
    /// to the next step's first value.
    settles: Vec<bool>,
    adam: bool,
    /// Whether the run logs no loss at all.
    lossless: bool,
    /// The positions its loss scaler skips: recorded, with a NaN gradient norm there.
    skips: Vec<bool>,
    /// Whether a skip is recorded after the gradient norm of its step.
    skip_recorded_last: bool,
    /// Whether it logs a reward that rises: an agent that learns.
    rewarded: bool,
}

fn random_run() -> impl Strategy<Value = RandomRun> {
    (
        prop::collection::vec(stretches(), KEYS.len()),
        loss(),
        prop::collection::vec(1.0f64..8.0, 40),
        prop::collection::vec((1usize..40, 1i64..6), 0..2),
        prop::collection::vec(any::<bool>(), 40),
        any::<bool>(),
        prop::bool::weighted(0.15),
        prop::collection::vec(prop::bool::weighted(0.1), 40),
        any::<bool>(),
        prop::bool::weighted(0.2),
    )
        .prop_map(
            |(
                keys,
                loss,
                alpha,
                restarts,
                settles,
                adam,
                lossless,
                skips,
                skip_recorded_last,
                rewarded,
            )| {
                RandomRun {
                    rewarded,
                    keys,
                    loss,
                    alpha,
                    restarts,
                    settles,
                    adam,
                    lossless,
                    skips,
                    skip_recorded_last,
                }
            },
        )
}

/// The shape a stretch list gives position `at`; the last stretch lasts.
fn at<T: Copy>(stretches: &[(usize, T)], at: usize) -> T {
    let mut end = 0;
    for &(len, value) in stretches {
        end += len;
        if at < end {
            return value;
        }
    }
    stretches.last().expect("one stretch at least").1
}

fn histogram(shape: Shape, position: usize) -> Option<(Vec<f64>, Vec<f64>)> {
    let (edges, counts) = match shape {
        Shape::Spread(e, drift) => {
            let s = 10f64.powi(e)
                * if drift {
                    1.0 + 0.1 * position as f64
                } else {
                    1.0
                };
            (vec![-s, -0.5 * s, 0.5 * s, s], vec![50.0, 0.0, 50.0])
        }
        Shape::Zeros => (vec![-1e-9, 1e-9, 1.0], vec![97.0, 3.0]),
        Shape::Ends => (vec![-1.0, -0.95, 0.95, 1.0], vec![48.0, 4.0, 48.0]),
        Shape::Point(e) => {
            let v = 10f64.powi(e);
            (vec![v, v], vec![100.0])
        }
        Shape::Spiky(e) => {
            let s = 10f64.powi(if position % 7 == 3 { e + 5 } else { e });
            (vec![-s, -0.5 * s, 0.5 * s, s], vec![50.0, 0.0, 50.0])
        }
        Shape::Zero => (vec![0.0, 0.0], vec![100.0]),
        Shape::NaN => (vec![f64::NAN, f64::NAN], vec![100.0]),
        Shape::Gone => return None,
    };
    Some((edges, counts))
}

fn loss_value(loss: Loss, position: usize) -> Option<f32> {
    let level = 2.0 / (1.0 + position as f32 / 5.0);
    Some(match loss {
        Loss::Falls => level,
        Loss::Flat => 2.0,
        Loss::Spike => 1e4,
        Loss::Up => 6.0,
        Loss::Risen => 50.0,
        Loss::NaN => f32::NAN,
        Loss::Unlogged => return None,
    })
}

/// Trains `run` into `live`, settling where the writer would; returns every alert.
fn train(live: &mut LiveDiagnosis, run: &RandomRun) -> Vec<Alert> {
    if run.adam {
        live.optimizer(vec!["Adam".into(), "Optimizer".into()]);
    }
    let mut alerts = Vec::new();
    let mut step = 0i64;
    let mut skipped = 0;
    for position in 0..40 {
        if let Some(&(_, back)) = run.restarts.iter().find(|r| r.0 == position) {
            step = (step - back).max(0);
        }
        for (k, key) in KEYS.iter().enumerate() {
            if let Some((edges, counts)) = histogram(at(&run.keys[k], position), position) {
                live.histogram(key, step, &edges, &counts, &Stats::MISSING);
            }
        }
        let loss = loss_value(at(&run.loss, position), position);
        if let Some(loss) = loss.filter(|_| !run.lossless) {
            live.scalar("loss", step, loss);
        }
        live.scalar("spectrum/l0/alpha", step, run.alpha[position] as f32);
        skip(live, run, position, step, &mut skipped);
        if run.rewarded {
            live.scalar("episode_reward_mean", step, 1.0 + position as f32);
        }
        if run.settles[position] {
            live.settle();
        }
        alerts.extend(live.take_alerts());
        step += 1;
    }
    live.conclude();
    alerts.extend(live.take_alerts());
    alerts
}

/// A trainer's gradient norm at `position`: NaN where the loss scaler skipped the step,
/// which is recorded before or after it.
fn skip(live: &mut LiveDiagnosis, run: &RandomRun, position: usize, step: i64, n: &mut u32) {
    let skips = run.skips[position];
    let record = |live: &mut LiveDiagnosis, n: u32| live.scalar(SKIPPED_TAG, step, n as f32);
    if skips && !run.skip_recorded_last {
        *n += 1;
        record(live, *n);
    }
    live.scalar("grad_norm", step, if skips { f32::NAN } else { 1.0 });
    if skips && run.skip_recorded_last {
        *n += 1;
        record(live, *n);
    }
}

fn described(alerts: &[Alert]) -> Vec<String> {
    alerts
        .iter()
        .map(|a| {
            let f = &a.finding;
            format!("{} {} {} {:?}", a.step, f.key, f.kind, f.severity)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn past_the_budget_triggers_alert_at_the_steps_judging_every_step_does(run in random_run()) {
        let mut every = LiveDiagnosis::with_share("r", Options::default(), f64::INFINITY);
        let expected = train(&mut every, &run);
        let mut spent = LiveDiagnosis::with_share("r", Options::default(), 0.0);
        spent.judging = JUDGING_ALLOWANCE + Duration::from_secs(3600);
        let got = train(&mut spent, &run);
        prop_assert_eq!(described(&got), described(&expected));
        // Evidence may hold NaN (a loss's rise from NaN), which `==` never matches.
        prop_assert_eq!(format!("{got:?}"), format!("{expected:?}"));
        prop_assert_eq!(format!("{:?}", spent.findings()), format!("{:?}", every.findings()));
    }
}

/// One value of an events file, in record order.
enum Value {
    Histogram(String, i64, Vec<f64>, Stats),
    Scalar(String, i64, f64),
}

impl crate::read::event_file::Sink for Vec<Value> {
    fn histogram(&mut self, tag: &str, point: crate::read::event_file::PointView<'_>, _: bool) {
        self.push(Value::Histogram(
            tag.to_owned(),
            point.step,
            point.buckets.to_vec(),
            point.stats,
        ));
    }

    fn start(&mut self, _step: i64) {}

    fn scalar(&mut self, tag: &str, step: i64, value: f64) {
        self.push(Value::Scalar(tag.to_owned(), step, value));
    }
}

/// Every run of the real fixtures (TensorFlow 1 and 2, Keras, PyTorch, tensorboardX;
/// restarts, damage), its files' values in order.
fn fixture_runs() -> Vec<(String, Vec<Value>)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut files: Vec<std::path::PathBuf> = Vec::new();
    let mut folders = vec![root.clone()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(folder).expect("the fixtures are there") {
            let path = entry.expect("a listed entry").path();
            if path.is_dir() {
                folders.push(path);
            } else if path.to_string_lossy().contains("tfevents") {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut runs: Vec<(String, Vec<Value>)> = Vec::new();
    for path in files {
        let run = path.parent().expect("in a folder").display().to_string();
        let mut values = Vec::new();
        let mut plugins = Default::default();
        crate::read::event_file::read_event_file_into(&path, None, &mut values, &mut plugins);
        match runs.last_mut() {
            Some((last, held)) if *last == run => held.extend(values),
            _ => runs.push((run, values)),
        }
    }
    runs
}

/// Feeds a run's values as its writer wrote them, settling at each step's end.
fn replay(live: &mut LiveDiagnosis, values: &[Value]) -> Vec<Alert> {
    let mut alerts = Vec::new();
    for value in values {
        match value {
            Value::Histogram(tag, step, rows, stats) => {
                let mut edges: Vec<f64> = rows.chunks_exact(3).map(|b| b[0]).collect();
                edges.extend(rows.chunks_exact(3).last().map(|b| b[1]));
                let counts: Vec<f64> = rows.chunks_exact(3).map(|b| b[2]).collect();
                if !counts.is_empty() {
                    live.histogram(tag, *step, &edges, &counts, stats);
                }
            }
            Value::Scalar(tag, step, v) => live.scalar(tag, *step, *v as f32),
        }
        alerts.extend(live.take_alerts());
    }
    live.conclude();
    alerts.extend(live.take_alerts());
    alerts
}

#[test]
fn on_real_files_triggers_alert_at_the_steps_judging_every_step_does() {
    let runs = fixture_runs();
    assert!(runs.len() >= 10, "{} runs", runs.len());
    let mut alerted = 0;
    for (run, values) in &runs {
        let mut every = LiveDiagnosis::with_share("r", Options::default(), f64::INFINITY);
        let expected = replay(&mut every, values);
        let mut spent = LiveDiagnosis::with_share("r", Options::default(), 0.0);
        spent.judging = JUDGING_ALLOWANCE + Duration::from_secs(3600);
        let got = replay(&mut spent, values);
        assert_eq!(described(&got), described(&expected), "{run}");
        assert_eq!(format!("{got:?}"), format!("{expected:?}"), "{run}");
        alerted += usize::from(!got.is_empty());
    }
    assert!(alerted >= 3, "only {alerted} fixture runs alert");
}
