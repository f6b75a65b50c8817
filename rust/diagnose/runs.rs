//! What the rules of one series need from the rest of its run: its end, its logging
//! interval, its other gradients and parameters, its loss and its optimizer.

use std::collections::{BTreeMap, HashMap};

use super::loss_curve::LossCurve;
use super::optimizer::OptimizerKind;
use super::roles::{layer_kind, tensor_name, LayerKind};
use super::scalars::{run_loss_evidence, LossEvidence};
use super::series_start::median;
use super::skipped::{self, SKIPPED_TAG};
use super::{Evidence, Options, Role, SeriesKey};
use crate::histograms::profile::StepProfile;
use crate::logdir::evidence::RunEvidence;

/// What the rules of one series need from the rest of its run.
pub(super) struct RunSummary {
    /// The last step of any event of the run, histogram or scalar: a series
    /// ending well before it stopped.
    pub last_step: i64,
    /// The median logging interval of the run's histogram series that have one.
    pub interval: Option<f64>,
    /// Evidence from the run's losses that its values explode.
    pub loss: Option<LossEvidence>,
    /// The run's main loss (see [`LossCurve::main`]).
    pub loss_curve: Option<LossCurve>,
    /// The run's reward, where it rises (see [`LossCurve::rising_reward`]).
    pub reward: Option<LossCurve>,
    /// The first NaN or infinite scalar of the run: its tag and step.
    pub nonfinite_scalar: Option<(String, i64)>,
    /// How the run's optimizer steps, where `watch` noted it and its kind is known.
    pub optimizer: Option<OptimizerKind>,
    /// The run records the steps its loss scaler skipped (`skipped::SKIPPED_TAG`).
    pub skips_recorded: bool,
    /// The first and last of the skipped steps that end the record one after the other.
    pub skipped_tail: Option<(i64, i64)>,
    /// For each kind of layer and step, the two largest gradient scales of that kind, with the series' index.
    gradient_top: HashMap<LayerKind, BTreeMap<i64, [(usize, f64); 2]>>,
    /// The run's gradient series by key.
    gradients: HashMap<String, usize>,
    /// The run's parameter series by the tensor they name.
    parameters: HashMap<String, usize>,
}

impl RunSummary {
    fn new(evidence: Option<&RunEvidence>, options: &Options) -> RunSummary {
        let empty = RunEvidence::default();
        let evidence = evidence.unwrap_or(&empty);
        let scalars = evidence.scalars.iter().map(|s| (s, options.role(&s.tag)));
        let skips = skipped::recorded(&evidence.scalars);
        let nonfinite_scalar = evidence
            .scalars
            .iter()
            .filter_map(|s| {
                let excused = |i: usize| skips.binary_search(&s.steps[i]).is_ok();
                let i = (0..s.values.len()).find(|&i| !s.values[i].is_finite() && !excused(i))?;
                Some((s.tag.clone(), s.steps[i]))
            })
            .min_by_key(|(_, step)| *step);
        // An agent whose reward rises learns: its value losses grow with the returns
        // they fit, which tells nothing of a divergence or of learning.
        let reward = LossCurve::rising_reward(evidence.scalars.iter());
        let losses = scalars.filter(|_| reward.is_none());
        RunSummary {
            last_step: evidence.last_step().unwrap_or(i64::MIN),
            interval: None,
            loss: run_loss_evidence(losses.clone()),
            loss_curve: LossCurve::main(losses),
            reward,
            nonfinite_scalar,
            optimizer: OptimizerKind::of(&evidence.optimizer),
            skips_recorded: evidence.scalars.iter().any(|s| s.tag == SKIPPED_TAG),
            skipped_tail: evidence
                .scalars
                .iter()
                .find(|s| s.tag == SKIPPED_TAG)
                .and_then(skipped::tail),
            gradient_top: HashMap::new(),
            gradients: HashMap::new(),
            parameters: HashMap::new(),
        }
    }

    pub fn of<'a>(
        series: &[SeriesKey<'a>],
        profiles: &[&[StepProfile]],
        roles: &[Role],
        evidence: &Evidence,
        options: &Options,
    ) -> HashMap<&'a str, RunSummary> {
        let mut runs: HashMap<&str, RunSummary> = HashMap::new();
        let mut intervals: HashMap<&str, Vec<f64>> = HashMap::new();
        for (i, s) in series.iter().enumerate() {
            let run = runs
                .entry(s.run)
                .or_insert_with(|| RunSummary::new(evidence.get(s.run), options));
            if let Some(&last) = s.steps.last() {
                run.last_step = run.last_step.max(last);
            }
            if let Some(interval) = logging_interval(s.steps) {
                intervals.entry(s.run).or_default().push(interval);
            }
            match roles[i] {
                Role::Gradient => run.add_gradient(i, s, profiles[i]),
                Role::Parameter => {
                    run.parameters.insert(tensor_name(s.tag), i);
                }
                _ => {}
            }
        }
        for (run, found) in intervals {
            if let Some(summary) = runs.get_mut(run) {
                summary.interval = Some(median(found.into_iter()));
            }
        }
        runs
    }

    fn add_gradient(&mut self, i: usize, s: &SeriesKey<'_>, profiles: &[StepProfile]) {
        self.gradients.insert(s.tag.to_owned(), i);
        let tops = self.gradient_top.entry(layer_kind(s.tag)).or_default();
        for (&step, p) in s.steps.iter().zip(profiles) {
            if p.has_values() {
                rank(tops.entry(step).or_insert(UNRANKED), i, p.scale());
            }
        }
    }

    /// For the gradient of a bias, the gradient of the same layer's weight: its key and its
    /// scale at each step of `steps`. A key names the weight with `weight`, `weights` or
    /// `kernel` where the bias's has `bias`.
    pub fn weight_of_bias<'a>(
        &self,
        key: &str,
        steps: &[i64],
        series: &[SeriesKey<'a>],
        profiles: &[&[StepProfile]],
    ) -> Option<(&'a str, Vec<Option<f64>>)> {
        let j =
            weight_keys_of_bias(key).find_map(|sibling| self.gradients.get(&sibling).copied())?;
        let scales: HashMap<i64, f64> = series[j]
            .steps
            .iter()
            .zip(profiles[j])
            .filter(|(_, p)| p.has_values())
            .map(|(&step, p)| (step, p.scale()))
            .collect();
        Some((
            series[j].tag,
            steps.iter().map(|s| scales.get(s).copied()).collect(),
        ))
    }

    /// At each step of series `i`, the largest scale of another gradient of the
    /// run of the same kind of layer ([`layer_kind`]), and its key.
    pub fn reference<'a>(
        &self,
        i: usize,
        steps: &[i64],
        series: &[SeriesKey<'a>],
    ) -> Vec<Option<(f64, &'a str)>> {
        let tops = self.gradient_top.get(&layer_kind(series[i].tag));
        steps
            .iter()
            .map(|step| {
                let (j, scale) = other_than(tops?.get(step)?, i)?;
                Some((scale, series[j].tag))
            })
            .collect()
    }

    /// For a gradient, at each of its steps: whether its parameter's histogram
    /// (same tensor, see [`tensor_name`]) is exactly what it was at the
    /// parameter's step before, the parameter standing still. None where the
    /// run logs no such parameter.
    pub fn parameter_stopped(
        &self,
        key: &str,
        steps: &[i64],
        series: &[SeriesKey<'_>],
        profiles: &[&[StepProfile]],
    ) -> Option<Vec<bool>> {
        let j = *self.parameters.get(&tensor_name(key))?;
        let mut stopped_at: HashMap<i64, bool> = HashMap::new();
        for (k, pair) in profiles[j].windows(2).enumerate() {
            stopped_at.insert(series[j].steps[k + 1], stood_still(&pair[0], &pair[1]));
        }
        Some(
            steps
                .iter()
                .map(|s| stopped_at.get(s).copied().unwrap_or(false))
                .collect(),
        )
    }
}

/// The median interval between a series' steps, if it has two.
pub(super) fn logging_interval(steps: &[i64]) -> Option<f64> {
    (steps.len() >= 2).then(|| median(steps.windows(2).map(|w| (w[1] - w[0]) as f64)))
}

/// The two largest scales at one step, with their series: none yet.
pub(super) const UNRANKED: [(usize, f64); 2] = [(usize::MAX, f64::NEG_INFINITY); 2];

/// Ranks series `i`'s `scale` among the two largest of a step (the first of equals first).
pub(super) fn rank(top: &mut [(usize, f64); 2], i: usize, scale: f64) {
    if scale > top[0].1 {
        top[1] = top[0];
        top[0] = (i, scale);
    } else if scale > top[1].1 {
        top[1] = (i, scale);
    }
}

/// The largest of a step's two ranked scales that is not series `i`'s.
pub(super) fn other_than(top: &[(usize, f64); 2], i: usize) -> Option<(usize, f64)> {
    let (j, scale) = if top[0].0 == i { top[1] } else { top[0] };
    (j != usize::MAX).then_some((j, scale))
}

/// Whether a parameter stood still from one step to the next: the same statistics.
pub(super) fn stood_still(before: &StepProfile, after: &StepProfile) -> bool {
    before.has_values()
        && after.has_values()
        && [
            (before.mean, after.mean),
            (before.std, after.std),
            (before.min, after.min),
            (before.max, after.max),
        ]
        .iter()
        .all(|&(a, b)| a == b)
}

/// The keys that name the weight of the layer whose bias `key` names, in the order
/// they are looked for: `bias` read as `weight`, `weights` or `kernel`.
pub(super) fn weight_keys_of_bias(key: &str) -> impl Iterator<Item = String> + '_ {
    let words: Vec<&str> = key
        .split_inclusive(['/', '.', '_', '-', ' ', ':'])
        .collect();
    let bias_at = words.iter().position(|w| {
        w.trim_end_matches(['/', '.', '_', '-', ' ', ':'])
            .eq_ignore_ascii_case("bias")
    });
    let names = if bias_at.is_some() {
        &["weight", "weights", "kernel"][..]
    } else {
        &[]
    };
    names.iter().map(move |name| {
        let at = bias_at.unwrap_or_default();
        let mut sibling: Vec<String> = words.iter().map(|w| (*w).to_owned()).collect();
        sibling[at] = words[at].replacen(&words[at][..4], name, 1);
        sibling.concat()
    })
}
