//! Diagnosis: statistics and rules over every histogram series, in parallel, giving findings.
//!
//! Each step is first reduced to a [`StepProfile`] (scale, spread, mass at zero
//! and at the ends of bounded ranges; `histograms::profile`, which the viewer's
//! index reads too) from its stored statistics or its buckets; the rules (each
//! in its file, called by `rules` by a series' role, sharing `context`,
//! `series_start`, `sustained` and `wording`) then compare profiles along a
//! series, against its own early steps and against the run's other gradients,
//! weighing what the run's files hold besides histograms ([`RunEvidence`]: its
//! scalars, whose losses show a divergence, and the optimizer `watch` noted).
//! The thresholds, and why they have their values, are in the rules' files and
//! `docs/diagnosis.md`.

mod activations;
mod collapsed;
mod context;
mod exploding;
mod gradients;
#[cfg(test)]
mod healing_tests;
mod live;
mod loss_curve;
mod nonfinite;
mod optimizer;
mod roles;
mod rules;
mod run_context;
mod runs;
mod scalars;
mod series;
mod series_start;
mod skipped;
mod spectral;
mod sustained;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod trigger_tests;
mod triggers;
mod verdicts;
mod wording;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::str::FromStr;

use rayon::prelude::*;
use thiserror::Error;

pub use live::{Alert, LiveDiagnosis};
pub use optimizer::OptimizerKind;
pub use roles::{role_of, Role};
pub use series::{SeriesKey, SeriesView, StepBuckets};
pub use spectral::ALPHA_BAND;

use crate::histograms::profile::{profile, StepProfile};
use crate::histograms::series::Series;
pub use crate::logdir::evidence::RunEvidence;
use crate::logdir::run::LoadedRun;
use runs::RunSummary;

/// Each run's evidence besides histograms, by run name.
pub type Evidence = BTreeMap<String, RunEvidence>;

/// What went wrong in a series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Vanishing,
    Exploding,
    Nonfinite,
    Dead,
    Saturated,
    Collapsed,
    /// A layer's α outside WeightWatcher's published band: context, always `Info`.
    Spectral,
    /// Optimizer steps a loss scaler skipped: `Info`, unless it skips every step.
    Skipped,
    /// A parameter that stands still while its gradient is not zero.
    Stuck,
}

impl Kind {
    /// Every kind, in the order the Python API lists them (`KINDS`).
    pub const ALL: [Kind; 9] = [
        Kind::Vanishing,
        Kind::Exploding,
        Kind::Nonfinite,
        Kind::Dead,
        Kind::Saturated,
        Kind::Collapsed,
        Kind::Spectral,
        Kind::Skipped,
        Kind::Stuck,
    ];

    /// The most severe a finding of this kind can be: where a run is surely broken.
    /// A trainer told to stop on a kind stops at this severity, so that an exploding
    /// spike on the last step written (a warning until the next step or the loss says
    /// more) does not stop a run that clips its gradients.
    pub fn worst(self) -> Severity {
        match self {
            Kind::Nonfinite | Kind::Exploding | Kind::Collapsed | Kind::Skipped | Kind::Stuck => {
                Severity::Error
            }
            Kind::Vanishing | Kind::Dead | Kind::Saturated => Severity::Warning,
            // Context, never a verdict (`spectral`): nothing to stop a trainer for.
            Kind::Spectral => Severity::Info,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Vanishing => "vanishing",
            Kind::Exploding => "exploding",
            Kind::Nonfinite => "nonfinite",
            Kind::Dead => "dead",
            Kind::Saturated => "saturated",
            Kind::Collapsed => "collapsed",
            Kind::Spectral => "spectral",
            Kind::Skipped => "skipped",
            Kind::Stuck => "stuck",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Kind {
    type Err = DiagnoseError;

    fn from_str(s: &str) -> Result<Self, DiagnoseError> {
        Kind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| DiagnoseError::UnknownKind(s.to_owned()))
    }
}

/// How bad a finding is: `Info` is harmless, `Error` means training is broken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    /// Every severity, from least to most severe (`SEVERITIES`).
    pub const ALL: [Severity; 3] = [Severity::Info, Severity::Warning, Severity::Error];

    pub fn name(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// One problem found in one series: where, how bad, the numbers behind it and what to do.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub kind: Kind,
    pub run: String,
    pub key: String,
    pub role: Role,
    pub first_step: i64,
    pub last_step: i64,
    pub severity: Severity,
    /// The numbers that triggered the rule, by name.
    pub evidence: Vec<(String, f64)>,
    /// One sentence a person can act on.
    pub message: String,
}

/// Why diagnosis could not run.
#[derive(Debug, Error, PartialEq)]
pub enum DiagnoseError {
    #[error(
        "unknown kind {0:?}: expected one of vanishing, exploding, nonfinite, dead, saturated, collapsed, spectral, skipped, stuck"
    )]
    UnknownKind(String),
    #[error("roles[{key:?}]: {problem}")]
    UnknownRole { key: String, problem: String },
    #[error("series {tag:?} of run {run:?}: {problem}")]
    BadSeries {
        run: String,
        tag: String,
        problem: String,
    },
}

/// Which findings to look for, and roles that override those read from key names.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `None`: every kind.
    pub kinds: Option<HashSet<Kind>>,
    /// Key → role, for keys whose names do not say it.
    pub roles: HashMap<String, Role>,
}

impl Options {
    /// Options from names, as the Python API takes them; unknown names are errors.
    pub fn parse(
        kinds: Option<Vec<String>>,
        roles: Vec<(String, String)>,
    ) -> Result<Options, DiagnoseError> {
        let kinds = kinds
            .map(|k| k.iter().map(|s| s.parse()).collect::<Result<_, _>>())
            .transpose()?;
        let roles = roles
            .into_iter()
            .map(|(key, role)| match role.parse() {
                Ok(role) => Ok((key, role)),
                Err(problem) => Err(DiagnoseError::UnknownRole { key, problem }),
            })
            .collect::<Result<_, _>>()?;
        Ok(Options { kinds, roles })
    }

    /// The role of `key`: the one given for it, else the one its words say.
    pub fn role(&self, key: &str) -> Role {
        self.roles.get(key).copied().unwrap_or_else(|| role_of(key))
    }
}

/// [`diagnose`] of series loaded from a log directory, with its runs' evidence.
pub fn diagnose_loaded(series: &[Series], evidence: &Evidence, options: &Options) -> Vec<Finding> {
    let views: Vec<SeriesView<'_>> = series.iter().map(SeriesView::from).collect();
    diagnose(&views, evidence, options)
}

/// [`diagnose`] of one run read alone: its findings are those a whole log
/// directory gives for it, since every rule compares a series only with its own run's.
pub fn diagnose_run(run: &LoadedRun, options: &Options) -> Vec<Finding> {
    let evidence = Evidence::from([(run.name.clone(), run.evidence.clone())]);
    if run.profiled.is_empty() {
        return diagnose_loaded(&run.merged.series, &evidence, options);
    }
    let keys: Vec<SeriesKey<'_>> = run.profiled.iter().map(SeriesKey::from).collect();
    let profiles: Vec<&[StepProfile]> = run.profiled.iter().map(|s| &s.profiles[..]).collect();
    diagnose_profiled(&keys, &profiles, &evidence, options)
}

/// [`diagnose`] of series handed in as arrays, each first checked to fit together.
pub fn diagnose_checked(
    series: &[SeriesView<'_>],
    evidence: &Evidence,
    options: &Options,
) -> Result<Vec<Finding>, DiagnoseError> {
    series.iter().try_for_each(SeriesView::check)?;
    Ok(diagnose(series, evidence, options))
}

/// Finds the problems of every series, each series profiled on its own core, and
/// of every scalar of `evidence`.
///
/// Findings come sorted by run, key, kind and first step.
pub fn diagnose(series: &[SeriesView<'_>], evidence: &Evidence, options: &Options) -> Vec<Finding> {
    let profiles: Vec<Vec<StepProfile>> = series
        .par_iter()
        .map(|s| {
            (0..s.steps.len())
                .map(|i| profile(s.step_buckets(i), &s.stats[i]))
                .collect()
        })
        .collect();
    let keys: Vec<SeriesKey<'_>> = series.iter().map(SeriesView::key).collect();
    let profiles: Vec<&[StepProfile]> = profiles.iter().map(Vec::as_slice).collect();
    diagnose_profiled(&keys, &profiles, evidence, options)
}

/// [`diagnose`] of series whose steps are already profiled (`profiles[i]` those of `series[i]`).
pub fn diagnose_profiled(
    series: &[SeriesKey<'_>],
    profiles: &[&[StepProfile]],
    evidence: &Evidence,
    options: &Options,
) -> Vec<Finding> {
    let roles: Vec<Role> = series.iter().map(|s| options.role(s.tag)).collect();
    let runs = RunSummary::of(series, profiles, &roles, evidence, options);
    let histograms = (0..series.len()).into_par_iter().flat_map_iter(|i| {
        let s = &series[i];
        let summary = &runs[s.run];
        let context = context::Context {
            run: s.run,
            key: s.tag,
            role: roles[i],
            steps: s.steps,
            profiles: profiles[i],
            reference: summary.reference(i, s.steps, series),
            weight_of_bias: summary.weight_of_bias(s.tag, s.steps, series, profiles),
            parameter_stopped: (roles[i] == Role::Gradient)
                .then(|| summary.parameter_stopped(s.tag, s.steps, series, profiles))
                .flatten(),
            run_last_step: summary.last_step,
            run_interval: summary.interval,
            loss: summary.loss.as_ref(),
            loss_curve: summary.loss_curve.as_ref(),
            reward: summary.reward.as_ref(),
            nonfinite_scalar: summary
                .nonfinite_scalar
                .as_ref()
                .map(|(tag, step)| (tag.as_str(), *step)),
            optimizer: summary.optimizer,
            skips_recorded: summary.skips_recorded,
            skipped_tail: summary.skipped_tail,
        };
        rules::findings(&context)
    });
    let scalars = evidence.iter().flat_map(|(run, evidence)| {
        let last_step = runs
            .get(run.as_str())
            .map_or(evidence.last_step().unwrap_or(i64::MIN), |r| r.last_step);
        let skips = skipped::recorded(&evidence.scalars);
        evidence.scalars.iter().filter_map(move |s| {
            if s.tag == skipped::SKIPPED_TAG {
                return skipped::skipped_steps(run, s, last_step);
            }
            let role = options.role(&s.tag);
            scalars::nonfinite_scalar(run, s, role, skips)
                .or_else(|| spectral::alpha_band(run, s, role))
        })
    });
    let mut findings: Vec<Finding> = histograms
        .collect::<Vec<_>>()
        .into_iter()
        .chain(scalars)
        .filter(|f| options.kinds.as_ref().is_none_or(|k| k.contains(&f.kind)))
        .collect();
    findings.sort_by(|a, b| {
        (&a.run, &a.key, a.kind, a.first_step).cmp(&(&b.run, &b.key, b.kind, b.first_step))
    });
    findings
}
