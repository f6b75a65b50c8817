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
//! has a step judged for nothing, once per key, kind and severity. The tests of `live`
//! hold them to the rules: alerts past the budget are those of judging every step.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::activations::{is_dead, is_saturated, Bounded};
use super::collapsed::{scale_fell, spread_fell};
use super::exploding::{episode_back, flagged, growth_needed, heal_wait, EpisodeBack};
use super::gradients::{bias_vanished, vanished};
use super::loss_curve::LossCurve;
use super::optimizer::OptimizerKind;
use super::roles::{layer_kind, tensor_name, LayerKind};
use super::rules::{early_scale, median, start_scale, stopped_by, Sustained, EARLY_STEPS};
use super::runs::{other_than, rank, stood_still, weight_keys_of_bias, UNRANKED};
use super::scalars::{nonfinite_severity, strongest, LossEvidence, LossFold};
use super::spectral::{is_alpha, outside};
use super::{Kind, Options, Role, Severity};
use crate::histograms::profile::StepProfile;
use crate::histograms::profiled::ProfiledSeries;
use crate::logdir::evidence::RunEvidence;

/// The highest severity each kind of a key's findings was announced or judged at.
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
    /// The highest severity each key's kinds were announced or judged at.
    raised: HashMap<String, Raised>,
}

impl Triggers {
    /// What was folded is to be folded again: a restart dropped values, or a note
    /// changed how every step reads.
    pub fn invalidate(&mut self) {
        self.stale = true;
    }

    /// A finding was announced, or judged, at `severity`.
    pub fn announced(&mut self, key: &str, kind: Kind, severity: Severity) {
        let raised = match self.raised.get_mut(key) {
            Some(raised) => raised,
            None => self.raised.entry(key.to_owned()).or_default(),
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
            self.tentative_at = None;
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
        let pending: BTreeSet<i64> = series
            .iter()
            .zip(&watches)
            .flat_map(|(s, w)| &s.steps[w.folded..])
            .copied()
            .collect();
        let adaptive = OptimizerKind::of(&run.evidence.optimizer) == Some(OptimizerKind::Adaptive);
        for step in pending {
            let over = step < run.newest.0 || over;
            fold_step(&series, &mut watches, step, over, adaptive);
            if !over {
                self.tentative_at = Some(run.arrivals);
            }
        }
        let context = Context::of(run, &self.series, &self.scalars);
        self.predict(run, &context)
    }

    fn watch_new_series(&mut self, run: &Run<'_>) {
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

    /// Whether a prediction of the rules rose above what each key was raised to; raises it.
    fn predict(&mut self, run: &Run<'_>, context: &Context) -> bool {
        let mut urgent = false;
        let kinds = run.options.kinds.as_ref();
        let mut raise = |raised: &mut HashMap<String, Raised>,
                         key: &str,
                         (kind, severity): (Kind, Severity)| {
            if kinds.is_some_and(|k| !k.contains(&kind)) {
                return;
            }
            let now = raised.get(key).and_then(|r| r[kind as usize]);
            if Some(severity) > now {
                raised.entry(key.to_owned()).or_default()[kind as usize] = Some(severity);
                urgent = true;
            }
        };
        for (tag, watch) in &mut self.series {
            for found in watch.predict(context).into_iter().flatten() {
                raise(&mut self.raised, tag, found);
            }
        }
        for (tag, watch) in &self.scalars {
            for found in watch.predict().into_iter().flatten() {
                raise(&mut self.raised, tag, found);
            }
        }
        urgent
    }
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
    let folds: Vec<(usize, Option<f64>, Option<f64>)> = present
        .iter()
        .map(|&k| {
            let (watch, p) = (&watches[k], at(k).expect("present"));
            let mut reference = None;
            if watch.role == Role::Gradient && p.has_values() {
                let stopped = watch.parameter.and_then(|j| {
                    let i = watches[j].folded;
                    let after = at(j)?;
                    Some(i > 0 && stood_still(&series[j].profiles[i - 1], after))
                });
                let compares = !adaptive || stopped == Some(true);
                let other = other_than(&tops[kind_index(watch.kind)], k);
                reference = other.filter(|_| compares).map(|(_, scale)| scale);
            }
            (k, reference, scale_at(watch.weight))
        })
        .collect();
    for (k, reference, weight) in folds {
        let p = series[k].profiles[watches[k].folded];
        watches[k].fold(step, &p, reference, weight, over);
    }
}

/// A place for each kind of layer among the gradients that compare with each other.
fn kind_index(kind: LayerKind) -> usize {
    2 * usize::from(kind.query_or_key) + usize::from(kind.bias)
}

/// What the rules of every series read from the rest of the run.
struct Context {
    last_step: i64,
    /// The median logging interval of the run's series that have one.
    interval: Option<f64>,
    loss: Option<LossEvidence>,
    curve: Option<LossCurve>,
    /// The first step a scalar of the run turned NaN or infinite.
    nonfinite_scalar: Option<i64>,
}

impl Context {
    fn of(
        run: &Run<'_>,
        series: &BTreeMap<String, Watch>,
        scalars: &BTreeMap<String, ScalarWatch>,
    ) -> Context {
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
        let loss_watches = scalars.values().filter(|w| w.role == Role::Loss);
        Context {
            last_step: last.max(run.evidence.last_step()).unwrap_or(i64::MIN),
            interval,
            loss: strongest(loss_watches.clone().filter_map(|w| w.loss.evidence(&w.tag))),
            curve: LossCurve::longest(loss_watches.filter_map(|w| w.curve.as_ref())).cloned(),
            nonfinite_scalar: scalars.values().filter_map(|w| w.nonfinite_step).min(),
        }
    }

    fn not_learning(&self) -> bool {
        self.curve.as_ref().is_some_and(|c| !c.learned())
    }
}

/// What a valued step brings to the rules that read a series' start.
#[derive(Debug, Clone, Copy, Default)]
struct Early {
    step: i64,
    scale: f64,
    max_abs: f64,
    /// The largest scale of another gradient of its kind, where the rule compares with it.
    reference: Option<f64>,
}

/// One series' running verdicts, and what ties it to the others.
#[derive(Debug)]
struct Watch {
    role: Role,
    kind: LayerKind,
    bias_named: bool,
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
}

impl Watch {
    fn new(tag: &str, role: Role) -> Watch {
        Watch {
            role,
            kind: layer_kind(tag),
            bias_named: tag
                .split(['/', '.', '_', '-', ' ', ':'])
                .any(|w| w.eq_ignore_ascii_case("bias")),
            parameter: None,
            weight: None,
            folded: 0,
            verdicts: Verdicts::default(),
            tentative: None,
            last_step: None,
            gaps: BTreeMap::new(),
        }
    }

    fn fold(
        &mut self,
        step: i64,
        p: &StepProfile,
        reference: Option<f64>,
        weight: Option<f64>,
        over: bool,
    ) {
        let early = Early {
            step,
            scale: p.scale(),
            max_abs: p.max_abs(),
            reference,
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
    fn predict(&mut self, context: &Context) -> [Option<(Kind, Severity)>; 6] {
        if self.role == Role::Spectrum {
            return [None; 6];
        }
        let (role, bias_named) = (self.role, self.bias_named);
        // The interval is worked out only where a rule reads it: a series behind its
        // run, or one that has grown.
        let interval = || self.end_and_interval().1.or(context.interval);
        let end = self.tentative.as_ref().map(|t| t.0).or(self.last_step);
        let stopped = end.is_some_and(|end| {
            let nan_after = context.nonfinite_scalar.is_some_and(|s| s >= end);
            let gap = context.last_step - end;
            gap > 0 && stopped_by(gap, interval(), nan_after)
        });
        let diverged = context.loss.is_some();
        let current = self.tentative.as_ref().map_or(&self.verdicts, |t| &t.1);
        let wait = (current.growth[usize::from(diverged)].count > 0).then(|| heal_wait(interval()));
        let verdicts = match &mut self.tentative {
            Some((_, verdicts)) => verdicts,
            None => &mut self.verdicts,
        };
        let nonfinite = if verdicts.nonfinite {
            Some(Severity::Error)
        } else {
            stopped.then_some(Severity::Warning)
        };
        let of = |kind, severity: Option<Severity>| severity.map(|s| (kind, s));
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
            of(Kind::Nonfinite, nonfinite),
            of(
                Kind::Exploding,
                wait.and_then(|wait| verdicts.exploding(context, wait)),
            ),
            of(Kind::Vanishing, verdicts.vanishing(role, bias_named)),
            of(Kind::Dead, dead.then_some(Severity::Warning)),
            of(Kind::Saturated, saturated.then_some(Severity::Warning)),
            of(Kind::Collapsed, collapsed),
        ]
    }
}

/// The running forms of the rules over one series' valued steps.
#[derive(Debug, Clone, Default)]
struct Verdicts {
    nonfinite: bool,
    valued: usize,
    nonzero: bool,
    /// The first `EARLY_STEPS` valued steps: until there are that many, the start moves,
    /// and what is measured from it is folded again.
    early: [Early; EARLY_STEPS],
    peak_spread: f64,
    dead: Sustained,
    saturated: Sustained,
    spread: Sustained,
    bias: Sustained,
    decay: Sustained,
    vanish: Sustained,
    /// Growth flagged as the rule flags it without, then with, a loss that diverged.
    growth: [Episodes; 2],
}

impl Verdicts {
    fn push(&mut self, role: Role, p: &StepProfile, step: Early, weight: Option<f64>) {
        self.nonfinite |= p.nonfinite;
        if !p.has_values() {
            return;
        }
        self.nonzero |= step.max_abs != 0.0;
        self.dead.push(is_dead(p));
        self.saturated.push(is_saturated(Bounded::of(p)));
        self.spread.push(spread_fell(p, self.peak_spread));
        self.peak_spread = self.peak_spread.max(p.std);
        self.bias.push(bias_vanished(step.scale, weight));
        if self.valued < EARLY_STEPS {
            self.early[self.valued] = step;
            self.valued += 1;
            self.decay = Sustained::default();
            self.vanish = Sustained::default();
            self.growth = Default::default();
            for k in 0..self.valued {
                self.push_from_start(role, self.early[k]);
            }
        } else {
            self.valued += 1;
            self.push_from_start(role, step);
        }
    }

    /// Folds in what is measured from the series' start.
    fn push_from_start(&mut self, role: Role, step: Early) {
        let scales = || {
            self.early[..self.valued.min(EARLY_STEPS)]
                .iter()
                .map(|e| e.scale)
        };
        let (early, start) = (early_scale(scales()), start_scale(scales()));
        self.decay.push(scale_fell(step.scale, early));
        let reference = step.reference.map(|r| (r, ""));
        self.vanish
            .push(vanished(step.scale, reference, early).is_some());
        for (diverged, episodes) in self.growth.iter_mut().enumerate() {
            let needed = growth_needed(diverged == 1);
            episodes.push(
                step.step,
                flagged(role, start, needed, step.scale, step.max_abs),
            );
        }
    }

    fn vanishing(&self, role: Role, bias_named: bool) -> Option<Severity> {
        if role != Role::Gradient || self.valued == 0 {
            return None;
        }
        if !self.nonzero {
            return Some(if bias_named {
                Severity::Info
            } else {
                Severity::Warning
            });
        }
        if self.bias.holds() {
            return Some(Severity::Info);
        }
        self.vanish.holds().then_some(Severity::Warning)
    }

    fn collapsed(&self, role: Role, not_learning: bool) -> Option<Severity> {
        if self.spread.holds() && self.spread.last {
            return Some(if not_learning {
                Severity::Error
            } else {
                Severity::Warning
            });
        }
        let decayed = role == Role::Parameter && self.decay.holds() && self.decay.last;
        (not_learning && decayed).then_some(Severity::Error)
    }

    fn exploding(&mut self, context: &Context, wait: i64) -> Option<Severity> {
        let episodes = &mut self.growth[usize::from(context.loss.is_some())];
        episodes.severity(context, wait)
    }
}

/// A series' steps flagged as growing, in episodes of consecutive valued steps, and
/// what the loss did after those that ended.
#[derive(Debug, Clone, Default)]
struct Episodes {
    count: usize,
    /// Whether the last two valued steps were flagged, the last last.
    last_two: [bool; 2],
    open: Option<(i64, i64)>,
    /// The first step of the first episode that ended: without a loss before it, none is judged.
    first_ended: Option<i64>,
    /// Episodes that ended, the loss not yet known to be back after them or not.
    pending: Vec<(i64, i64)>,
    /// An episode after which the loss did not come back.
    not_back: bool,
}

impl Episodes {
    fn push(&mut self, step: i64, flag: bool) {
        match (flag, &mut self.open) {
            (true, Some((_, last))) => *last = step,
            (true, None) => {
                self.open = Some((step, step));
                self.count += 1;
            }
            (false, open) => {
                if let Some(ended) = open.take() {
                    self.first_ended.get_or_insert(ended.0);
                    self.pending.push(ended);
                }
            }
        }
        self.last_two = [self.last_two[1], flag];
    }

    /// The `exploding` rule's severity (see its `Outcome`).
    fn severity(&mut self, context: &Context, wait: i64) -> Option<Severity> {
        if self.count == 0 {
            return None;
        }
        let ends = self.last_two[1];
        if (ends && self.last_two[0]) || context.loss.as_ref().is_some_and(|l| l.still_up) {
            return Some(Severity::Error);
        }
        let unjudged = Some(if self.count < 2 {
            Severity::Info
        } else {
            Severity::Warning
        });
        let Some(curve) = &context.curve else {
            return if ends {
                Some(Severity::Warning)
            } else {
                unjudged
            };
        };
        if self
            .first_ended
            .is_some_and(|first| curve.level_before(first).is_none())
        {
            return if ends {
                Some(Severity::Warning)
            } else {
                unjudged
            };
        }
        let not_back = &mut self.not_back;
        self.pending
            .retain(|&episode| match episode_back(curve, episode, wait) {
                EpisodeBack::Pending => true,
                EpisodeBack::NotBack { .. } => {
                    *not_back = true;
                    false
                }
                EpisodeBack::Back(_) | EpisodeBack::NoLevel => false,
            });
        if self.not_back {
            return Some(Severity::Error);
        }
        if ends || !self.pending.is_empty() || !curve.learned() {
            return Some(Severity::Warning);
        }
        Some(Severity::Info)
    }
}

/// One scalar's running verdicts: its NaN, and for a loss, its curve and divergence.
#[derive(Debug)]
struct ScalarWatch {
    tag: String,
    role: Role,
    folded: usize,
    nonfinite_step: Option<i64>,
    last: f64,
    loss: LossFold,
    curve: Option<LossCurve>,
}

impl ScalarWatch {
    fn new(tag: &str, role: Role) -> ScalarWatch {
        ScalarWatch {
            tag: tag.to_owned(),
            role,
            folded: 0,
            nonfinite_step: None,
            last: f64::NAN,
            loss: LossFold::default(),
            curve: (role == Role::Loss).then(|| LossCurve::new(tag)),
        }
    }

    fn push(&mut self, step: i64, value: f64) {
        if !value.is_finite() {
            self.nonfinite_step.get_or_insert(step);
        }
        self.last = value;
        self.loss.push(step, value);
        if let Some(curve) = &mut self.curve {
            curve.push(step, value);
        }
        self.folded += 1;
    }

    fn predict(&self) -> [Option<(Kind, Severity)>; 2] {
        let nonfinite = (self.role != Role::Spectrum && self.nonfinite_step.is_some()).then(|| {
            (
                Kind::Nonfinite,
                nonfinite_severity(self.role, !self.last.is_finite()),
            )
        });
        let spectral = (is_alpha(&self.tag, self.role) && outside(self.last))
            .then_some((Kind::Spectral, Severity::Info));
        [nonfinite, spectral]
    }
}
