//! What can make a finding of a live run new or more severe, followed in constant work
//! per value as it arrives, so that the step where it happens is judged whatever the budget.
//!
//! The rules read whole series, so a judgement of a live run costs time that grows
//! with the steps logged, and [`LiveDiagnosis`](super::LiveDiagnosis) spaces its
//! judgements out past a small share of the run's time. Triggers keep, per series, the
//! running form of what each rule's verdict rests on: its flags folded step by step
//! ([`Sustained`], episodes of growth), its start, its interval; per run, the main loss
//! and the evidence of its divergence. From them they predict, at each complete step,
//! the severity each rule gives each key, with the rules' own per-step tests
//! (`flagged`, `vanished`, `is_dead`, ...). A prediction above what was announced makes
//! the step urgent: the rules themselves judge it at once.
//!
//! A trigger never makes a finding. One that predicts too low leaves an alert to the
//! next judgement the budget allows, as without triggers; one that predicts too high
//! has a step judged for nothing. `trigger_tests` holds them to the rules: alerts past
//! the budget are those of judging every step, on random runs and on real files.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use super::exploding::heal_wait;
use super::loss_curve::LossCurve;
use super::nonfinite::stopped_by;
use super::optimizer::OptimizerKind;
use super::roles::{is_reward, layer_kind, tensor_name, LayerKind};
use super::run_context::Context;
use super::runs::{other_than, rank, stood_still, weight_keys_of_bias, UNRANKED};
use super::scalars::{nonfinite_severity, strongest, LossFold};
use super::series_start::median;
use super::skipped::{self, StepRuns, SKIPPED_TAG};
use super::spectral::{is_alpha, outside};
use super::verdicts::{Early, Verdicts};
use super::{Kind, Options, Role, Severity};
use crate::histograms::profile::StepProfile;
use crate::histograms::profiled::ProfiledSeries;
use crate::logdir::evidence::RunEvidence;

/// A severity for each kind of a key's findings.
type Raised = [Option<Severity>; Kind::ALL.len()];

/// A live run as the triggers read it.
pub(super) struct Run<'a> {
    pub series: &'a BTreeMap<String, ProfiledSeries>,
    pub evidence: &'a RunEvidence,
    pub options: &'a Options,
    /// The last step written, and whether it is over (a later one began).
    pub newest: (i64, bool),
    /// How many histograms have come so far: none since the last step was folded as it
    /// stood means that fold holds once the step is over.
    pub arrivals: u64,
    /// How many values of any kind have come: none since the last call, nothing to say.
    pub values: u64,
}

/// The running verdicts of a live run's series and scalars.
#[derive(Debug, Default)]
pub(super) struct Triggers {
    series: BTreeMap<String, Watch>,
    scalars: BTreeMap<String, ScalarWatch>,
    /// Whether a series was added since the links between series were found.
    unlinked: bool,
    /// Whether what was folded no longer holds (a restart, an optimizer noted).
    stale: bool,
    /// The arrivals when the last step was folded as it stood.
    tentative_at: Option<u64>,
    /// The values when the run was last read.
    read_at: Option<u64>,
    /// The highest severity each key's kinds were announced at.
    announced: HashMap<String, Raised>,
}

impl Triggers {
    /// What was folded is to be folded again: a restart dropped values, or a note
    /// changed how every step reads.
    pub fn invalidate(&mut self) {
        self.stale = true;
    }

    /// A finding was announced at `severity`.
    pub fn announced(&mut self, key: &str, kind: Kind, severity: Severity) {
        let raised = match self.announced.get_mut(key) {
            Some(raised) => raised,
            None => self.announced.entry(key.to_owned()).or_default(),
        };
        let slot = &mut raised[kind as usize];
        *slot = (*slot).max(Some(severity));
    }

    /// Folds in what came since the last call; returns whether the rules would now
    /// give some key a kind of finding, or a severity of one, not announced before.
    pub fn urgent(&mut self, run: &Run<'_>) -> bool {
        if std::mem::take(&mut self.stale) {
            self.series.clear();
            self.scalars.clear();
            (self.tentative_at, self.read_at) = (None, None);
        }
        self.watch_new_series(run);
        self.fold_scalars(run);
        let series: Vec<&ProfiledSeries> = run.series.values().collect();
        let mut watches: Vec<&mut Watch> = self.series.values_mut().collect();
        let over = run.newest.1;
        if over && self.tentative_at.take() == Some(run.arrivals) {
            // The step was folded as it stood and nothing came since: it stands.
            watches.iter_mut().for_each(|w| w.promote());
        }
        if self.read_at.replace(run.values) == Some(run.values) {
            return false; // the same values, and so the same predictions, as last time
        }
        let pending: BTreeSet<i64> = series
            .iter()
            .zip(&watches)
            .flat_map(|(s, w)| &s.steps[w.folded..])
            .copied()
            .collect();
        let adaptive = OptimizerKind::of(&run.evidence.optimizer) == Some(OptimizerKind::Adaptive);
        for step in pending {
            // Only the newest step can still change: a series a restart has not logged
            // again keeps its later steps, as they were written.
            let over = over || step != run.newest.0;
            fold_step(&series, &mut watches, step, over, adaptive);
            if !over {
                self.tentative_at = Some(run.arrivals);
            }
        }
        self.predict(run)
    }

    /// Whether the rules would now give some key a finding above what was announced
    /// and above what a step was already judged for.
    fn predict(&mut self, run: &Run<'_>) -> bool {
        let context = Context::of(run, &self.series, &self.scalars);
        let kinds = run.options.kinds.as_ref();
        let announced = &self.announced;
        let mut urgent = false;
        for (tag, watch) in &mut self.series {
            let predicted = watch.predict(&context);
            urgent |= raise(announced, kinds, tag, &predicted, &mut watch.forced);
        }
        let run_last_step = context.last_step;
        let none = StepRuns::default();
        let skips = self.scalars.get(SKIPPED_TAG).map_or(&none, |w| &w.skips);
        let predictions: Vec<_> = self
            .scalars
            .values()
            .map(|w| w.predict(run_last_step, skips))
            .collect();
        for ((tag, watch), predicted) in self.scalars.iter_mut().zip(predictions) {
            urgent |= raise(announced, kinds, tag, &predicted, &mut watch.forced);
        }
        urgent
    }

    fn watch_new_series(&mut self, run: &Run<'_>) {
        // A series stays in the run once it came (a restart empties it), so as many
        // watches as series means each has one.
        if self.series.len() == run.series.len() {
            return;
        }
        for tag in run.series.keys() {
            if !self.series.contains_key(tag) {
                let watch = Watch::new(tag, run.options.role(tag));
                self.series.insert(tag.clone(), watch);
                self.unlinked = true;
            }
        }
        if std::mem::take(&mut self.unlinked) {
            self.link();
        }
    }

    /// Finds each gradient's parameter, and each bias gradient's weight gradient, as
    /// the rules do (`RunSummary`), by their places in the series' order.
    fn link(&mut self) {
        let mut gradients: HashMap<&str, usize> = HashMap::new();
        let mut parameters: HashMap<String, usize> = HashMap::new();
        for (k, (tag, watch)) in self.series.iter().enumerate() {
            match watch.role {
                Role::Gradient => {
                    gradients.insert(tag, k);
                }
                Role::Parameter => {
                    parameters.insert(tensor_name(tag), k);
                }
                _ => {}
            }
        }
        let links: Vec<(Option<usize>, Option<usize>)> = self
            .series
            .iter()
            .map(|(tag, watch)| match watch.role {
                Role::Gradient => (
                    parameters.get(&tensor_name(tag)).copied(),
                    weight_keys_of_bias(tag).find_map(|key| gradients.get(key.as_str()).copied()),
                ),
                _ => (None, None),
            })
            .collect();
        for (watch, (parameter, weight)) in self.series.values_mut().zip(links) {
            (watch.parameter, watch.weight) = (parameter, weight);
        }
    }

    fn fold_scalars(&mut self, run: &Run<'_>) {
        for scalar in &run.evidence.scalars {
            if !self.scalars.contains_key(&scalar.tag) {
                let watch = ScalarWatch::new(&scalar.tag, run.options.role(&scalar.tag));
                self.scalars.insert(scalar.tag.clone(), watch);
            }
            let watch = self.scalars.get_mut(&scalar.tag).expect("inserted above");
            for (&step, &value) in scalar.steps.iter().zip(&scalar.values).skip(watch.folded) {
                watch.push(step, value);
            }
        }
    }
}

/// Whether a prediction for `key` rose above what was announced and what was already
/// forced at; `forced` follows the predictions down, so that a step judged for nothing
/// does not hide a later rise.
fn raise(
    announced: &HashMap<String, Raised>,
    kinds: Option<&HashSet<Kind>>,
    key: &str,
    predicted: &[Option<(Kind, Severity)>],
    forced: &mut Raised,
) -> bool {
    let mut now: Raised = Default::default();
    for &(kind, severity) in predicted.iter().flatten() {
        now[kind as usize] = Some(severity);
    }
    let mut urgent = false;
    for (kind, (&now, forced)) in Kind::ALL.iter().zip(now.iter().zip(forced.iter_mut())) {
        if now <= *forced {
            *forced = now;
            continue;
        }
        let said = announced.get(key).and_then(|r| r[*kind as usize]);
        if kinds.is_none_or(|k| k.contains(kind)) && now > said {
            urgent = true;
        }
        *forced = now;
    }
    urgent
}

/// Folds in every series' value at `step` (`series[k]` watched by `watches[k]`), for
/// good if the step is `over`, else as the step stands now.
fn fold_step(
    series: &[&ProfiledSeries],
    watches: &mut [&mut Watch],
    step: i64,
    over: bool,
    adaptive: bool,
) {
    // Where each series' value at `step` is, if it has one.
    let at = |k: usize| {
        let i = watches[k].folded;
        (series[k].steps.get(i) == Some(&step)).then(|| &series[k].profiles[i])
    };
    let present: Vec<usize> = (0..series.len()).filter(|&k| at(k).is_some()).collect();
    // Ranked in the series' order, as the rules rank them, so that ties fall alike.
    let mut tops = [UNRANKED; 4];
    for &k in &present {
        let p = at(k).expect("present");
        if watches[k].role == Role::Gradient && p.has_values() {
            rank(&mut tops[kind_index(watches[k].kind)], k, p.scale());
        }
    }
    let scale_at = |k: Option<usize>| at(k?).filter(|p| p.has_values()).map(StepProfile::scale);
    let folds: Vec<(usize, Option<f64>, bool, Option<f64>)> = present
        .iter()
        .map(|&k| {
            let (watch, p) = (&watches[k], at(k).expect("present"));
            let mut reference = None;
            let mut stood = false;
            if watch.role == Role::Gradient && p.has_values() {
                let stopped = watch.parameter.and_then(|j| {
                    let i = watches[j].folded;
                    let after = at(j)?;
                    Some(i > 0 && stood_still(&series[j].profiles[i - 1], after))
                });
                let compares = !adaptive || stopped == Some(true);
                let other = other_than(&tops[kind_index(watch.kind)], k);
                reference = other.filter(|_| compares).map(|(_, scale)| scale);
                stood = stopped == Some(true);
            }
            (k, reference, stood, scale_at(watch.weight))
        })
        .collect();
    for (k, reference, stopped, weight) in folds {
        let i = watches[k].folded;
        // A value the series has later ones after (a restart did not log it again) stands.
        let over = over || i + 1 < series[k].steps.len();
        let p = &series[k].profiles[i];
        watches[k].fold(step, p, (reference, stopped), weight, over);
    }
}

/// A place for each kind of layer among the gradients that compare with each other.
fn kind_index(kind: LayerKind) -> usize {
    2 * usize::from(kind.query_or_key) + usize::from(kind.bias)
}

impl<'a> Context<'a> {
    /// Made here from the run's watches, which are the triggers' own.
    fn of(
        run: &Run<'_>,
        series: &BTreeMap<String, Watch>,
        scalars: &'a BTreeMap<String, ScalarWatch>,
    ) -> Context<'a> {
        let last = run
            .series
            .values()
            .filter_map(|s| s.steps.last())
            .max()
            .copied();
        // The run's interval stands in for a series' own only where one has none.
        let wanted = series.values().any(|w| !w.has_interval());
        let intervals = series.values().filter_map(|w| w.end_and_interval().1);
        let interval = wanted.then(|| median(intervals)).filter(|m| !m.is_nan());
        let rewards = scalars.values().filter(|w| is_reward(&w.tag));
        let reward =
            LossCurve::longest(rewards.filter_map(|w| w.curve.as_ref())).filter(|c| c.rises());
        let loss_watches = scalars
            .values()
            .filter(|w| w.role == Role::Loss && reward.is_none());
        Context {
            last_step: last.max(run.evidence.last_step()).unwrap_or(i64::MIN),
            interval,
            loss: strongest(loss_watches.clone().filter_map(|w| w.loss.evidence(&w.tag))),
            curve: LossCurve::longest(loss_watches.filter_map(|w| w.curve.as_ref())),
            reward,
            nonfinite_scalar: {
                let none = StepRuns::default();
                let skips = scalars.get(SKIPPED_TAG).map_or(&none, |w| &w.skips);
                let firsts = scalars
                    .values()
                    .filter_map(|w| w.nonfinite.first_outside(skips));
                firsts.min()
            },
            skips_recorded: scalars.contains_key(SKIPPED_TAG),
            skipped_tail: scalars.get(SKIPPED_TAG).and_then(|w| {
                let last = w.last_step?;
                Some((last - w.streak as i64 + 1, last))
            }),
        }
    }
}

/// One series' running verdicts, and what ties it to the others.
#[derive(Debug)]
struct Watch {
    role: Role,
    /// Its kind of layer, which also says whether its key names a bias.
    kind: LayerKind,
    /// For a gradient: its parameter's series, and for a bias's, its layer's weight's
    /// gradient, by place in the series' order.
    parameter: Option<usize>,
    weight: Option<usize>,
    /// How many of the series' steps are folded in for good.
    folded: usize,
    verdicts: Verdicts,
    /// The verdicts with the last step folded in as it stands, while it is not over.
    tentative: Option<(i64, Verdicts)>,
    last_step: Option<i64>,
    /// The gaps between the series' steps, and how many of each: its logging interval.
    gaps: BTreeMap<i64, usize>,
    /// The severities a step was judged for, while the predictions stay there.
    forced: Raised,
}

impl Watch {
    fn new(tag: &str, role: Role) -> Watch {
        Watch {
            role,
            kind: layer_kind(tag),
            parameter: None,
            weight: None,
            folded: 0,
            verdicts: Verdicts::default(),
            tentative: None,
            last_step: None,
            gaps: BTreeMap::new(),
            forced: Raised::default(),
        }
    }

    fn fold(
        &mut self,
        step: i64,
        p: &StepProfile,
        (reference, stopped): (Option<f64>, bool),
        weight: Option<f64>,
        over: bool,
    ) {
        let early = Early {
            step,
            scale: p.scale(),
            max_abs: p.max_abs(),
            reference,
            stopped,
        };
        if !over {
            let mut verdicts = self.verdicts.clone();
            verdicts.push(self.role, p, early, weight);
            self.tentative = Some((step, verdicts));
            return;
        }
        self.verdicts.push(self.role, p, early, weight);
        self.step_over(step);
        self.tentative = None;
    }

    /// Takes the last step, folded as it stood, for good.
    fn promote(&mut self) {
        if let Some((step, verdicts)) = self.tentative.take() {
            self.verdicts = verdicts;
            self.step_over(step);
        }
    }

    fn step_over(&mut self, step: i64) {
        if let Some(last) = self.last_step {
            *self.gaps.entry(step - last).or_default() += 1;
        }
        self.last_step = Some(step);
        self.folded += 1;
    }

    /// Whether the series has an interval of its own (two steps or more), without working it out.
    fn has_interval(&self) -> bool {
        self.folded + usize::from(self.tentative.is_some()) >= 2
    }

    /// The series' last step and its logging interval (the median gap between its
    /// steps), the step not yet over included.
    fn end_and_interval(&self) -> (Option<i64>, Option<f64>) {
        match &self.tentative {
            Some((step, _)) => (Some(*step), self.interval(self.last_step.map(|l| step - l))),
            None => (self.last_step, self.interval(None)),
        }
    }

    /// The median of the gaps between the series' steps, `extra` among them; None
    /// under two steps. Walks the few distinct gaps, not the steps.
    fn interval(&self, extra: Option<i64>) -> Option<f64> {
        let n = self.gaps.values().sum::<usize>() + usize::from(extra.is_some());
        let nth = |k: usize| {
            let (mut seen, mut extra) = (0, extra);
            for (&gap, &count) in &self.gaps {
                if let Some(e) = extra.filter(|&e| e <= gap) {
                    if k == seen {
                        return e;
                    }
                    (seen, extra) = (seen + 1, None);
                }
                if k < seen + count {
                    return gap;
                }
                seen += count;
            }
            extra.unwrap_or(i64::MAX)
        };
        let mid = n / 2;
        match n {
            0 => None,
            _ if n % 2 == 1 => Some(nth(mid) as f64),
            _ => Some(0.5 * (nth(mid - 1) as f64 + nth(mid) as f64)),
        }
    }

    /// The severity the rules give each kind of finding of the series now.
    fn predict(&mut self, context: &Context) -> [Option<(Kind, Severity)>; 7] {
        if self.role == Role::Spectrum {
            return [None; 7];
        }
        let (role, bias_named) = (self.role, self.kind.bias);
        // The interval is worked out only where a rule reads it: a series behind its
        // run, or one that has grown.
        let interval = || self.end_and_interval().1.or(context.interval);
        let end = self.tentative.as_ref().map(|t| t.0).or(self.last_step);
        let stopped = end.is_some_and(|end| {
            // As `nonfinite::stopped`: every step after it skipped by the loss scaler.
            let skipped_after = context
                .skipped_tail
                .is_some_and(|(from, to)| from > end && to >= context.last_step);
            let nan_after = context.nonfinite_scalar.is_some_and(|s| s >= end);
            let gap = context.last_step - end;
            gap > 0 && !skipped_after && stopped_by(gap, interval(), nan_after)
        });
        let diverged = context.loss.is_some();
        let current = self.tentative.as_ref().map_or(&self.verdicts, |t| &t.1);
        let wait = (current.growth[usize::from(diverged)].count > 0).then(|| heal_wait(interval()));
        let verdicts = match &mut self.tentative {
            Some((_, verdicts)) => verdicts,
            None => &mut self.verdicts,
        };
        let of = |kind, severity: Option<Severity>| severity.map(|s| (kind, s));
        // As `nonfinite::nonfinite`: a gradient finite again after its NaNs was skipped.
        let skipped = verdicts.nonfinite && !verdicts.last_nonfinite && role == Role::Gradient;
        let nonfinite = match (verdicts.nonfinite, skipped) {
            (_, true) => (!context.skips_recorded).then_some((Kind::Skipped, Severity::Info)),
            (true, false) => of(Kind::Nonfinite, Some(Severity::Error)),
            (false, _) => of(Kind::Nonfinite, stopped.then_some(Severity::Warning)),
        };
        let activation = role == Role::Activation;
        let dead = activation && verdicts.dead.holds();
        let saturated = activation && verdicts.saturated.holds();
        let collapsed = if matches!(role, Role::Parameter | Role::Activation) && !dead && !saturated
        {
            verdicts.collapsed(role, context.not_learning())
        } else {
            None
        };
        [
            nonfinite,
            of(
                Kind::Exploding,
                wait.filter(|_| role != Role::Other)
                    .and_then(|wait| verdicts.exploding(context, wait)),
            ),
            of(Kind::Vanishing, verdicts.vanishing(role, bias_named)),
            of(Kind::Dead, dead.then_some(Severity::Warning)),
            of(Kind::Saturated, saturated.then_some(Severity::Warning)),
            of(Kind::Collapsed, collapsed),
            of(
                Kind::Stuck,
                verdicts.stuck(role, bias_named, context.not_learning()),
            ),
        ]
    }
}

/// One scalar's running verdicts: its NaN, and for a loss, its curve and divergence.
#[derive(Debug)]
struct ScalarWatch {
    tag: String,
    role: Role,
    folded: usize,
    /// The steps its value was NaN or infinite at.
    nonfinite: StepRuns,
    /// The steps of the run's record of skipped steps, where this scalar is that record.
    skips: StepRuns,
    last: f64,
    /// The last step, and how many steps end the series one after the other.
    last_step: Option<i64>,
    streak: usize,
    loss: LossFold,
    curve: Option<LossCurve>,
    forced: Raised,
}

impl ScalarWatch {
    fn new(tag: &str, role: Role) -> ScalarWatch {
        ScalarWatch {
            tag: tag.to_owned(),
            role,
            folded: 0,
            nonfinite: StepRuns::default(),
            skips: StepRuns::default(),
            last: f64::NAN,
            last_step: None,
            streak: 0,
            loss: LossFold::default(),
            curve: (role == Role::Loss || is_reward(tag)).then(|| LossCurve::new(tag)),
            forced: Raised::default(),
        }
    }

    fn push(&mut self, step: i64, value: f64) {
        if !value.is_finite() {
            self.nonfinite.insert(step);
        }
        if self.tag == SKIPPED_TAG {
            self.skips.insert(step);
        }
        self.last = value;
        self.streak = if self.last_step == Some(step - 1) {
            self.streak + 1
        } else {
            1
        };
        self.last_step = Some(step);
        self.loss.push(step, value);
        if let Some(curve) = &mut self.curve {
            curve.push(step, value);
        }
        self.folded += 1;
    }

    /// As `scalars::nonfinite_scalar` and `skipped::skipped_steps` judge the scalar, its
    /// values at the run's `skips` left out.
    fn predict(&self, run_last_step: i64, skips: &StepRuns) -> [Option<(Kind, Severity)>; 3] {
        let diverged = self.role != Role::Spectrum && self.nonfinite.first_outside(skips).is_some();
        let to_the_end =
            !self.last.is_finite() && !self.last_step.is_some_and(|step| skips.contains(step));
        let nonfinite =
            diverged.then(|| (Kind::Nonfinite, nonfinite_severity(self.role, to_the_end)));
        let spectral = (is_alpha(&self.tag, self.role) && outside(self.last))
            .then_some((Kind::Spectral, Severity::Info));
        let skipped = self
            .last_step
            .filter(|_| self.tag == SKIPPED_TAG)
            .map(|last| {
                (
                    Kind::Skipped,
                    skipped::severity(self.streak, last, run_last_step),
                )
            });
        [nonfinite, spectral, skipped]
    }
}
