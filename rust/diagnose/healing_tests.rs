//! The rules on spikes that heal and on weights decayed under a flat loss, read whole
//! and on prefixes as a live diagnosis reads them.

use super::tests::{evidence, kinds, run_rules, run_with, run_with_loss, series, STEPS};
use super::*;
use crate::histograms::series::Series;

/// Steps 0, 5, ... 95, as the zoo logs histograms.
fn every_fifth() -> Vec<i64> {
    (0..100).step_by(5).collect()
}

/// A gradient of scale 0.01 at `every_fifth` steps, 100 at `spikes`.
fn spiky_gradient(spikes: &[i64]) -> Series {
    let steps = every_fifth();
    let scales: Vec<f64> = steps
        .iter()
        .map(|s| if spikes.contains(s) { 100.0 } else { 0.01 })
        .collect();
    series("r", "gradients/fc.weight", &steps, &scales)
}

/// A loss at every step 0..100 falling from 1.4 to 0.2, 10^4 times higher at `spikes`.
fn spiky_loss(spikes: &[i64]) -> Vec<f64> {
    (0..100)
        .map(|s| {
            let level = 1.4 - 1.2 * s as f64 / 99.0;
            if spikes.contains(&s) {
                1e4 * level
            } else {
                level
            }
        })
        .collect()
}

/// `all` and `loss` cut to their steps up to `last`, as a rule sees them live.
fn prefix(all: &[Series], loss: &[f64], last: i64) -> (Vec<Series>, Evidence) {
    let cut = all
        .iter()
        .map(|s| {
            let n = s.steps.partition_point(|&step| step <= last);
            let mut c = series(&s.run, &s.tag, &[], &[]);
            c.steps = s.steps[..n].to_vec();
            c.wall_times = s.wall_times[..n].to_vec();
            c.offsets = s.offsets[..=n].to_vec();
            c.buckets = s.buckets[..3 * s.offsets[n]].to_vec();
            c.stats = s.stats[..n].to_vec();
            c
        })
        .collect();
    let values = loss[..=last as usize].to_vec();
    (cut, evidence("r", &[("loss", values)], &[]))
}

fn value(found: &Finding, name: &str) -> f64 {
    found
        .evidence
        .iter()
        .find(|(k, _)| k == name)
        .map_or(f64::NAN, |&(_, v)| v)
}

#[test]
fn spikes_the_loss_comes_back_from_are_info() {
    let spikes = [30, 55, 80];
    let all = [spiky_gradient(&spikes)];
    let loss = evidence("r", &[("loss", spiky_loss(&spikes))], &[]);
    let found = run_with(&all, &loss, &Options::default());
    assert_eq!(
        kinds(&found),
        vec![("gradients/fc.weight", Kind::Exploding, Severity::Info)]
    );
    let f = &found[0];
    assert_eq!((f.first_step, f.last_step), (30, 80));
    assert_eq!(value(f, "spikes"), 3.0);
    assert_eq!(
        ["spike_1_step", "spike_2_step", "spike_3_step"].map(|k| value(f, k)),
        [30.0, 55.0, 80.0]
    );
    assert_eq!(value(f, "loss_back_steps"), 1.0);
    assert!(f.message.contains("at steps 30, 55 and 80 and comes back"));
    assert!(f
        .message
        .contains("back at its level before within 1 step each time"));
    // Without the loss, three spikes the series came back from are a warning, one an info.
    let found = run_rules(&all, &Options::default());
    assert_eq!(found[0].severity, Severity::Warning);
    let one = [spiky_gradient(&[30])];
    assert_eq!(
        run_rules(&one, &Options::default())[0].severity,
        Severity::Info
    );
}

#[test]
fn spikes_are_judged_on_a_prefix_by_what_it_can_know() {
    let spikes = [30, 55, 80];
    let all = [spiky_gradient(&spikes)];
    let loss = spiky_loss(&spikes);
    let severity = |last: i64| {
        let (cut, evidence) = prefix(&all, &loss, last);
        let found = run_with(&cut, &evidence, &Options::default());
        found.first().map(|f| f.severity)
    };
    assert_eq!(severity(25), None);
    // At the spike's own step nothing yet says whether it heals.
    assert_eq!(severity(30), Some(Severity::Warning));
    // By the next logged step the loss is back, in a run that learns.
    assert_eq!(severity(35), Some(Severity::Info));
    assert_eq!(severity(55), Some(Severity::Warning));
    assert_eq!(severity(60), Some(Severity::Info));
    // No prefix calls it an error.
    assert!((0..100)
        .step_by(5)
        .all(|last| severity(last) != Some(Severity::Error)));
}

#[test]
fn a_spike_the_loss_does_not_come_back_from_is_an_error() {
    let all = [spiky_gradient(&[30])];
    // The loss triples at the spike and stays there, short of 5 times its first value.
    let mut loss = spiky_loss(&[]);
    for v in &mut loss[30..] {
        *v = 3.0;
    }
    let found = run_with_loss(&all, loss);
    assert_eq!(
        kinds(&found),
        vec![("gradients/fc.weight", Kind::Exploding, Severity::Error)]
    );
    assert!(found[0].message.contains("is not back at its level of"));
    assert!(value(&found[0], "loss_before") < 3.0 / 2.0);
    // Spikes the loss comes back from in a run that does not learn: a warning.
    let flat = vec![1.4; 100];
    let found = run_with_loss(&all, flat);
    assert_eq!(found[0].severity, Severity::Warning);
    assert!(found[0].message.contains("the run is not learning"));
}

#[test]
fn growth_that_stays_or_a_loss_still_up_is_an_error() {
    // Growing on the last two logged steps, the loss healthy: an error.
    let steps = every_fifth();
    let mut scales = vec![0.01; steps.len()];
    let n = scales.len();
    scales[n - 2] = 100.0;
    scales[n - 1] = 200.0;
    let all = [series("r", "gradients/fc.weight", &steps, &scales)];
    let loss = evidence("r", &[("loss", spiky_loss(&[]))], &[]);
    assert_eq!(
        run_with(&all, &loss, &Options::default())[0].severity,
        Severity::Error
    );
    // One jump at the last logged step, the loss healthy: too early to tell.
    scales[n - 2] = 0.01;
    let all = [series("r", "gradients/fc.weight", &steps, &scales)];
    let found = run_with(&all, &loss, &Options::default());
    assert_eq!(found[0].severity, Severity::Warning);
    assert!(found[0].message.contains("too recently to tell"));
    // The same jump with a loss that diverged and is still up: an error.
    let mut diverged = spiky_loss(&[]);
    for v in &mut diverged[90..] {
        *v = 50.0;
    }
    let up = evidence("r", &[("loss", diverged)], &[]);
    assert_eq!(
        run_with(&all, &up, &Options::default())[0].severity,
        Severity::Error
    );
}

#[test]
fn weights_decayed_far_below_their_start_while_the_loss_stays_collapsed() {
    // AdamW's decay holds the weights 10^-2.5 below their start, not at a point: the
    // spread stays above 10^-3 of its peak, which the spread rule needs.
    let scales = [0.1, 0.1, 0.1, 0.03, 0.01, 3e-3, 8e-4, 5e-4, 4e-4, 4e-4];
    let all = [series("r", "parameters/fc.weight", &STEPS, &scales)];
    assert_eq!(run_rules(&all, &Options::default()), vec![]);
    let flat = evidence("r", &[("loss", vec![1.39; 10])], &[]);
    let found = run_with(&all, &flat, &Options::default());
    assert_eq!(
        kinds(&found),
        vec![("parameters/fc.weight", Kind::Collapsed, Severity::Error)]
    );
    assert_eq!(found[0].first_step, 6);
    assert!((value(&found[0], "fall") - 4e-3).abs() < 1e-12);
    assert!(found[0].message.contains("decayed toward 0"));
    assert!(found[0]
        .message
        .contains("while loss goes from 1.4e0 to 1.4e0, not learning"));
    // A run whose loss falls is learning: weights that small are its business.
    let learning: Vec<f64> = (0..10).map(|i| 1.4 - 0.1 * i as f64).collect();
    let falls = evidence("r", &[("loss", learning)], &[]);
    assert_eq!(run_with(&all, &falls, &Options::default()), vec![]);
    // A spread collapsed to a point, with the loss flat, is an error too.
    let point = [0.1, 0.1, 0.1, 0.01, 1e-3, 1e-5, 1e-6, 1e-6, 1e-6, 1e-6];
    let all = [series("r", "parameters/w", &STEPS, &point)];
    let found = run_with(&all, &flat, &Options::default());
    assert_eq!(found[0].severity, Severity::Error);
    assert!(found[0].message.contains("spread shrinks"));
}

#[test]
fn a_collapse_done_by_the_second_logged_step_is_measured_from_the_first() {
    // Weight decay took most of the scale before step 1: the median of the first three
    // logged steps (3e-3) would already be after the collapse.
    let scales = [0.3, 3e-3, 2e-3, 1e-3, 1e-3, 1e-3, 1e-3, 1e-3, 1e-3, 1e-3];
    let all = [series("r", "parameters/fc.weight", &STEPS, &scales)];
    let flat = evidence("r", &[("loss", vec![1.39; 10])], &[]);
    let found = run_with(&all, &flat, &Options::default());
    assert_eq!(
        kinds(&found),
        vec![("parameters/fc.weight", Kind::Collapsed, Severity::Error)]
    );
    assert_eq!(value(&found[0], "start_scale"), 0.3);
}

#[test]
fn a_growing_metric_distribution_is_no_explosion() {
    // An RL agent's episode rewards grow 10^4 times as it learns, and its critic loss
    // rises with the Q-values: the rewards are no layer.
    let rewards: Vec<f64> = (0..10).map(|i| 10f64.powf(i as f64 / 2.0)).collect();
    let all = [series(
        "r",
        "ray/tune/hist_stats/episode_reward",
        &STEPS,
        &rewards,
    )];
    let rising = evidence(
        "r",
        &[("critic_loss", (1..=10).map(f64::from).collect())],
        &[],
    );
    assert_eq!(run_with(&all, &rising, &Options::default()), vec![]);
    // The same growth in a layer's weights is one.
    let all = [series("r", "parameters/critic.weight", &STEPS, &rewards)];
    let found = run_with(&all, &rising, &Options::default());
    assert_eq!(found[0].kind, Kind::Exploding);
}
