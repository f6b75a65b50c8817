//! Diagnosis while a run trains: its steps profiled as they are written, and the rules
//! of [`diagnose_profiled`] applied to what has come so far each time a step is complete.
//!
//! A step is complete when a later one begins, or when the writer says so
//! ([`LiveDiagnosis::settle`]: after a step `watch` wrote in one call, at a flush,
//! at the end of the run). The rules then see the prefix that the run's file holds
//! at that point, restarts included, so the findings at any moment are those
//! `check` gives on the files written so far, and at the end they are equal:
//! there is one set of rules, and no second, incremental copy of them to drift.
//!
//! Judging a step costs one pass of the rules over the run's profiles (a few
//! dozen bytes a step and key are kept; the histograms are not), so it grows
//! with the steps logged: 500 keys judged at step 1,000 take tens of
//! milliseconds. Judging is therefore held to [`JUDGING_SHARE`] of the time
//! since the run began, beyond a first [`JUDGING_ALLOWANCE`]. While it fits, every
//! complete step is judged; past it, judgements are spaced out, and
//! [`LiveDiagnosis::conclude`] judges the end whatever the budget.
//!
//! Past the budget, the triggers (`triggers`) say which steps to judge all the same:
//! they follow, in constant work per value, what each rule's verdict rests on, and a
//! step where the rules would give a key a new finding, or a worse one, is judged at
//! once. So an alert, and a trainer stopped on it, come at the step where the rules
//! first give it however long the run has gone on. The triggers only say when to
//! judge: the findings are the rules' alone.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use super::triggers::{Run, Triggers};
use super::{diagnose_profiled, Evidence, Finding, Kind, Options, SeriesKey, Severity};
use crate::histograms::profile::{profile_binned, StepProfile};
use crate::histograms::profiled::ProfiledSeries;
use crate::histograms::stats::Stats;
use crate::logdir::evidence::{RunEvidence, ScalarSeries};

/// The most of the time since a run began that judging it may take...
pub const JUDGING_SHARE: f64 = 0.01;
/// ...beyond a first allowance, so that a short run, or the first steps of
/// any, are judged at every step however fast they go.
pub const JUDGING_ALLOWANCE: Duration = Duration::from_millis(100);

/// A finding that is new, or more severe than before: when it was found and what it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Alert {
    /// The last complete step when the rules first gave it.
    pub step: i64,
    pub finding: Finding,
}

/// The diagnosis state of one run being written.
#[derive(Debug, Default)]
pub struct LiveDiagnosis {
    run: String,
    options: Options,
    series: BTreeMap<String, ProfiledSeries>,
    /// The run's scalars and optimizer, under its name.
    evidence: Evidence,
    /// The step of the last value written, and whether the rules have seen it.
    newest: Option<(i64, bool)>,
    /// What the rules would find now, followed value by value.
    triggers: Triggers,
    /// After a restart, the furthest step the run had reached: until it passes it
    /// again, every complete step is judged (see `due`).
    replaying_until: Option<i64>,
    /// How many histograms, and how many values of any kind, have come.
    arrivals: u64,
    values: u64,
    findings: Vec<Finding>,
    /// The most severe level each (key, kind) was announced at.
    announced: HashMap<(String, Kind), Severity>,
    alerts: Vec<Alert>,
    /// The share of the time since `began` that judging may take, and the time it took.
    share: f64,
    began: Option<Instant>,
    pub(super) judging: Duration,
    /// How many times the rules judged the run.
    judgements: usize,
}

impl LiveDiagnosis {
    /// An empty run named `run`, as its findings will name it, judged within [`JUDGING_SHARE`].
    pub fn new(run: &str, options: Options) -> Self {
        Self::with_share(run, options, JUDGING_SHARE)
    }

    /// An empty run whose judging may take `share` of the time since it began
    /// (`f64::INFINITY`: every complete step is judged, however long it takes).
    pub fn with_share(run: &str, options: Options, share: f64) -> Self {
        LiveDiagnosis {
            run: run.to_owned(),
            options,
            evidence: Evidence::from([(run.to_owned(), RunEvidence::default())]),
            share,
            ..Default::default()
        }
    }

    /// Takes a histogram as it was written: `counts[i]` values in `[edges[i], edges[i + 1])`.
    pub fn histogram(
        &mut self,
        tag: &str,
        step: i64,
        edges: &[f64],
        counts: &[f64],
        stats: &Stats,
    ) {
        self.arrive(step);
        let profiled = profile_binned(edges, counts, stats);
        self.arrivals += 1;
        self.values += 1;
        // Looked up before inserting: a tag is copied once, not at every step.
        let dropped = match self.series.get_mut(tag) {
            Some(series) => series.push(step, profiled),
            None => {
                let mut series = ProfiledSeries::new(&self.run, tag);
                series.push(step, profiled);
                self.series.insert(tag.to_owned(), series);
                0
            }
        };
        if dropped > 0 {
            self.restarted();
        }
    }

    /// Takes a scalar as it was written (events hold scalars as 32-bit floats).
    pub fn scalar(&mut self, tag: &str, step: i64, value: f32) {
        self.arrive(step);
        self.values += 1;
        let scalars = &mut self.run_evidence().scalars;
        let i = match scalars.binary_search_by(|s| s.tag.as_str().cmp(tag)) {
            Ok(i) => i,
            Err(i) => {
                let series = ScalarSeries {
                    tag: tag.to_owned(),
                    ..Default::default()
                };
                scalars.insert(i, series);
                i
            }
        };
        let restarts = scalars[i].steps.last().is_some_and(|&last| last >= step);
        scalars[i].push(step, f64::from(value));
        if restarts {
            self.restarted();
        }
    }

    /// Takes the optimizer `watch` noted: its class and those it derives from.
    pub fn optimizer(&mut self, classes: Vec<String>) {
        self.run_evidence().optimizer = classes;
        // Whether gradients compare across layers depends on it, from the first step on.
        self.triggers.invalidate();
        if let Some((_, judged)) = self.newest.as_mut() {
            *judged = false;
        }
    }

    /// Judges what has come so far as complete, if the rules have not seen all of
    /// it and the budget allows.
    pub fn settle(&mut self) {
        if matches!(self.newest, Some((_, false))) && self.due(false) {
            self.judge();
        }
    }

    /// Judges what has come so far, whatever the budget: the run has ended.
    pub fn conclude(&mut self) {
        if matches!(self.newest, Some((_, false))) {
            self.judge();
        }
    }

    /// The findings of the run as written up to the last complete step.
    pub fn findings(&self) -> &[Finding] {
        &self.findings
    }

    /// The findings of the run as written so far, judged now if the rules have not
    /// seen all of it, whatever the budget: what a caller asks for, past the budget,
    /// is what `check` says of the file now, not at the last judgement.
    pub fn findings_now(&mut self) -> &[Finding] {
        self.conclude();
        &self.findings
    }

    /// The alerts found since the last call, oldest first.
    pub fn take_alerts(&mut self) -> Vec<Alert> {
        std::mem::take(&mut self.alerts)
    }

    fn run_evidence(&mut self) -> &mut RunEvidence {
        self.evidence.entry(self.run.clone()).or_default()
    }

    /// A value of `step` arrives: a later step completes the ones before it.
    fn arrive(&mut self, step: i64) {
        self.began.get_or_insert_with(Instant::now);
        let complete = matches!(self.newest, Some((newest, false)) if step > newest);
        if complete && self.due(true) {
            self.judge();
        }
        self.newest = Some((step, false));
    }

    /// The steps `tag` holds now, for the tests that hold every surface to one restart rule.
    #[cfg(test)]
    pub(crate) fn steps(&self, tag: &str) -> Option<&[i64]> {
        self.series.get(tag).map(|s| s.steps.as_slice())
    }

    /// Training went back to a checkpoint: what the triggers folded went.
    fn restarted(&mut self) {
        let reached = self.series.values().filter_map(|s| s.steps.last()).max();
        self.replaying_until = self.replaying_until.max(reached.copied());
        self.triggers.invalidate();
    }

    /// Whether to judge what has come: the budget allows it, the run is logging again
    /// the steps a restart took back (where some of its series hold values from before
    /// the restart and some from after, which the triggers do not follow), or the
    /// triggers say the rules would find something new (the last step `over` or not).
    fn due(&mut self, over: bool) -> bool {
        if self.affordable() {
            return true;
        }
        let newest = self.newest.map_or(i64::MIN, |(step, _)| step);
        match self.replaying_until {
            Some(until) if newest <= until => return true,
            Some(_) => {
                self.replaying_until = None;
                self.triggers.invalidate();
            }
            None => {}
        }
        let started = Instant::now();
        let empty = RunEvidence::default();
        let run = Run {
            series: &self.series,
            evidence: self.evidence.get(&self.run).unwrap_or(&empty),
            options: &self.options,
            newest: (newest, over),
            arrivals: self.arrivals,
            values: self.values,
        };
        let urgent = self.triggers.urgent(&run);
        self.judging += started.elapsed();
        urgent
    }

    /// Whether judging now keeps it within its share of the time since the run began.
    fn affordable(&self) -> bool {
        let elapsed = self.began.map_or(Duration::ZERO, |began| began.elapsed());
        let allowed = self.share * elapsed.as_secs_f64() + JUDGING_ALLOWANCE.as_secs_f64();
        self.share.is_infinite() || self.judging.as_secs_f64() <= allowed
    }

    fn judge(&mut self) {
        let started = Instant::now();
        let series: Vec<&ProfiledSeries> = self.series.values().filter(|s| !s.is_empty()).collect();
        let keys: Vec<SeriesKey<'_>> = series.iter().map(|s| SeriesKey::from(*s)).collect();
        let profiles: Vec<&[StepProfile]> = series.iter().map(|s| &s.profiles[..]).collect();
        self.findings = diagnose_profiled(&keys, &profiles, &self.evidence, &self.options);
        let step = self.newest.map_or(i64::MIN, |(step, _)| step);
        for finding in &self.findings {
            let id = (finding.key.clone(), finding.kind);
            if self
                .announced
                .get(&id)
                .is_some_and(|&s| s >= finding.severity)
            {
                continue;
            }
            self.announced.insert(id, finding.severity);
            self.triggers
                .announced(&finding.key, finding.kind, finding.severity);
            self.alerts.push(Alert {
                step,
                finding: finding.clone(),
            });
        }
        if let Some((_, judged)) = self.newest.as_mut() {
            *judged = true;
        }
        self.judgements += 1;
        self.judging += started.elapsed();
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::diagnose::{diagnose_loaded, Evidence};
    use crate::histograms::series::Series;

    /// One logged value: a histogram (tag, step, scale; two point buckets at ±scale) or a loss.
    enum Logged {
        Histogram(&'static str, i64, f64),
        Loss(i64, f32),
    }

    fn edges_and_counts(scale: f64) -> ([f64; 4], [f64; 3]) {
        (
            [-scale, -scale * 0.5, scale * 0.5, scale],
            [50.0, 0.0, 50.0],
        )
    }

    /// What `check` gives on the first `n` values as a file holds them.
    fn offline(run: &str, logged: &[Logged]) -> Vec<Finding> {
        let mut series: BTreeMap<&str, Series> = BTreeMap::new();
        let mut evidence = RunEvidence::default();
        for value in logged {
            match *value {
                Logged::Histogram(tag, step, scale) => {
                    let (edges, counts) = edges_and_counts(scale);
                    let rows: Vec<f64> = edges
                        .windows(2)
                        .zip(counts)
                        .flat_map(|(e, c)| [e[0], e[1], c])
                        .collect();
                    series
                        .entry(tag)
                        .or_insert_with(|| Series::new(run, tag))
                        .push_rows(step, 0.0, &rows, Stats::MISSING);
                }
                Logged::Loss(step, value) => {
                    if evidence.scalars.is_empty() {
                        evidence.scalars.push(ScalarSeries {
                            tag: "loss".into(),
                            ..Default::default()
                        });
                    }
                    evidence.scalars[0].push(step, f64::from(value));
                }
            }
        }
        let all: Vec<Series> = series.into_values().collect();
        let evidence = Evidence::from([(run.to_owned(), evidence)]);
        diagnose_loaded(&all, &evidence, &Options::default())
    }

    fn feed(live: &mut LiveDiagnosis, value: &Logged) {
        match *value {
            Logged::Histogram(tag, step, scale) => {
                let (edges, counts) = edges_and_counts(scale);
                live.histogram(tag, step, &edges, &counts, &Stats::MISSING);
            }
            Logged::Loss(step, value) => live.scalar("loss", step, value),
        }
    }

    /// Twelve steps of a gradient at `scale(step)` beside a steady one, and the loss.
    fn logged(scale: impl Fn(i64) -> f64, loss: impl Fn(i64) -> f32) -> Vec<Logged> {
        let mut logged = Vec::new();
        for step in 0..12 {
            logged.push(Logged::Histogram("gradients/0.weight", step, scale(step)));
            logged.push(Logged::Histogram("gradients/1.weight", step, 0.01));
            logged.push(Logged::Loss(step, loss(step)));
        }
        logged
    }

    /// A gradient that explodes from step 6 and turns NaN at step 9, and the loss with it.
    fn diverging() -> Vec<Logged> {
        let scale = |step: i64| match step {
            0..=5 => 0.01,
            6..=8 => 10f64.powi(step as i32 - 2),
            _ => f64::NAN,
        };
        logged(scale, |step| if step < 9 { 1.0 } else { f32::NAN })
    }

    /// A gradient that grows from step 6 to the end, the loss flat: no NaN.
    fn growing() -> Vec<Logged> {
        let scale = |step: i64| match step {
            0..=5 => 0.01,
            _ => 10f64.powi(step as i32 - 2),
        };
        logged(scale, |_| 1.0)
    }

    /// Feeds `logged` as a training does, settling at each step's end (its loss), and
    /// returns the alerts, oldest first.
    fn trained(live: &mut LiveDiagnosis, logged: &[Logged]) -> Vec<Alert> {
        let mut alerts = Vec::new();
        for value in logged {
            feed(live, value);
            if matches!(value, Logged::Loss(..)) {
                live.settle();
                alerts.extend(live.take_alerts());
            }
        }
        alerts
    }

    #[test]
    fn at_every_complete_step_the_findings_are_those_of_the_file_so_far() {
        let logged = diverging();
        let mut live = LiveDiagnosis::with_share("r", Options::default(), f64::INFINITY);
        for (i, value) in logged.iter().enumerate() {
            feed(&mut live, value);
            // Each step ends with its loss: after it, the step is complete.
            if matches!(value, Logged::Loss(..)) {
                live.settle();
                assert_eq!(
                    live.findings(),
                    offline("r", &logged[..=i]),
                    "after {i} values"
                );
            }
        }
        assert!(!live.findings().is_empty());
    }

    #[test]
    fn a_later_step_completes_the_one_before_without_settling() {
        let logged = diverging();
        let mut live = LiveDiagnosis::with_share("r", Options::default(), f64::INFINITY);
        logged.iter().for_each(|v| feed(&mut live, v));
        // The last step is not judged until it is settled.
        let before_last = logged.len() - 3;
        assert_eq!(live.findings(), offline("r", &logged[..before_last]));
        live.settle();
        assert_eq!(live.findings(), offline("r", &logged));
    }

    #[test]
    fn each_finding_alerts_once_at_the_step_it_is_first_found_and_again_if_worse() {
        let logged = diverging();
        let mut live = LiveDiagnosis::with_share("r", Options::default(), f64::INFINITY);
        let alerts = trained(&mut live, &logged);
        let seen: Vec<(i64, &str, Kind, Severity)> = alerts
            .iter()
            .map(|a| {
                (
                    a.step,
                    a.finding.key.as_str(),
                    a.finding.kind,
                    a.finding.severity,
                )
            })
            .collect();
        let first_exploding = seen
            .iter()
            .find(|a| a.2 == Kind::Exploding)
            .expect("an exploding alert");
        // The first spike (step 6) is at the end of what was written, so it is found there.
        assert_eq!(first_exploding.0, 6);
        let nonfinite: Vec<_> = seen.iter().filter(|a| a.2 == Kind::Nonfinite).collect();
        assert_eq!(nonfinite.first().map(|a| a.0), Some(9));
        // No (key, kind) alerts twice at the same severity.
        let mut ids: Vec<_> = seen.iter().map(|a| (a.1, a.2, a.3)).collect();
        let n = ids.len();
        ids.dedup();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), n);
        assert!(live.take_alerts().is_empty());
    }

    #[test]
    fn a_restart_drops_the_steps_written_again_as_check_does() {
        let mut logged = diverging();
        // The run restarts from a checkpoint at step 4 and goes on healthy.
        for step in 4..10 {
            logged.push(Logged::Histogram("gradients/0.weight", step, 0.01));
            logged.push(Logged::Histogram("gradients/1.weight", step, 0.01));
            logged.push(Logged::Loss(step, 0.5));
        }
        let mut live = LiveDiagnosis::with_share("r", Options::default(), f64::INFINITY);
        logged.iter().for_each(|v| feed(&mut live, v));
        live.settle();
        assert_eq!(live.findings(), offline("r", &logged));
        assert_eq!(live.findings(), vec![]);
    }

    /// A run whose judging budget is spent from its first step: only triggers judge it.
    fn spent() -> LiveDiagnosis {
        let mut live = LiveDiagnosis::with_share("r", Options::default(), 0.0);
        live.judging = JUDGING_ALLOWANCE + Duration::from_secs(3600);
        live
    }

    #[test]
    fn past_its_budget_a_run_is_judged_only_where_an_alert_comes_and_alerts_as_if_every_step_was() {
        for logged in [growing(), diverging()] {
            let mut every = LiveDiagnosis::with_share("r", Options::default(), f64::INFINITY);
            let expected = trained(&mut every, &logged);
            let mut live = spent();
            let alerts = trained(&mut live, &logged);
            assert_eq!(format!("{alerts:?}"), format!("{expected:?}"));
            let steps: HashSet<i64> = alerts.iter().map(|a| a.step).collect();
            assert!(!steps.is_empty());
            assert_eq!(live.judgements, steps.len(), "{alerts:?}");
            live.conclude();
            assert_eq!(live.findings(), offline("r", &logged));
        }
    }

    #[test]
    fn past_its_budget_a_first_nan_is_judged_at_its_step() {
        let logged = diverging();
        let mut live = spent();
        let alerts = trained(&mut live, &logged);
        // The NaNs of step 9 (a gradient, then the loss) are judged as step 9 ends,
        // and what the file holds then is what check says of it.
        let nonfinite: Vec<i64> = alerts
            .iter()
            .filter(|a| a.finding.kind == Kind::Nonfinite)
            .map(|a| a.step)
            .collect();
        // the gradient's and the loss's
        assert_eq!(nonfinite, vec![9, 9]);
        let first_nan_step_done = logged
            .iter()
            .position(|v| matches!(v, Logged::Loss(9, _)))
            .unwrap();
        assert_eq!(
            live.findings(),
            offline("r", &logged[..=first_nan_step_done])
        );
        // Later NaNs of the same keys force nothing: the end is judged at the end.
        live.conclude();
        assert_eq!(live.findings(), offline("r", &logged));
    }

    #[test]
    fn asked_past_its_budget_a_run_says_what_check_says_of_it_now() {
        let logged = growing();
        let mut live = spent();
        logged.iter().for_each(|v| feed(&mut live, v));
        // Judged last where an alert came, some steps back...
        assert_ne!(live.findings(), offline("r", &logged));
        // ...and asked now, nothing having settled the last step: the whole file's.
        assert_eq!(live.findings_now(), offline("r", &logged));
    }

    #[test]
    fn an_empty_run_has_nothing_to_say() {
        let mut live = LiveDiagnosis::with_share("r", Options::default(), f64::INFINITY);
        live.settle();
        assert!(live.findings().is_empty() && live.take_alerts().is_empty());
    }
}
