//! Diagnosis: statistics and rules over every histogram series, in parallel, giving findings.
//!
//! Each step is first reduced to a [`StepProfile`] (scale, spread, mass at zero
//! and at the ends of bounded ranges) from its stored statistics or its
//! buckets; the rules in `rules` then compare profiles along a series, against
//! its own early steps and against the run's other gradients. The thresholds,
//! and why they have their values, are in `rules` and `docs/diagnosis.md`.

mod profile;
mod roles;
mod rules;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::str::FromStr;

use rayon::prelude::*;
use thiserror::Error;

use crate::data_compat::Stats;
use crate::logdir::Series;

pub use profile::{profile, StepProfile};
pub use roles::{role_of, Role};

/// What went wrong in a series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Vanishing,
    Exploding,
    Nonfinite,
    Dead,
    Saturated,
    Collapsed,
}

impl Kind {
    pub const ALL: [Kind; 6] = [
        Kind::Vanishing,
        Kind::Exploding,
        Kind::Nonfinite,
        Kind::Dead,
        Kind::Saturated,
        Kind::Collapsed,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Vanishing => "vanishing",
            Kind::Exploding => "exploding",
            Kind::Nonfinite => "nonfinite",
            Kind::Dead => "dead",
            Kind::Saturated => "saturated",
            Kind::Collapsed => "collapsed",
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
    #[error("unknown kind {0:?}: expected one of vanishing, exploding, nonfinite, dead, saturated, collapsed")]
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

/// One series as the rules read it, borrowed from a loaded [`Series`] or from arrays.
#[derive(Debug, Clone, Copy)]
pub struct SeriesView<'a> {
    pub run: &'a str,
    pub tag: &'a str,
    pub steps: &'a [i64],
    /// Buckets of every step, flattened as (left, right, count) rows.
    pub buckets: &'a [f64],
    /// Step `i` holds rows `offsets[i]..offsets[i + 1]`.
    pub offsets: &'a [usize],
    pub stats: &'a [Stats],
}

impl<'a> From<&'a Series> for SeriesView<'a> {
    fn from(s: &'a Series) -> Self {
        SeriesView {
            run: &s.run,
            tag: &s.tag,
            steps: &s.steps,
            buckets: &s.buckets,
            offsets: &s.offsets,
            stats: &s.stats,
        }
    }
}

impl SeriesView<'_> {
    /// Checks that the arrays fit together, so that no step reads outside its buckets.
    pub fn check(&self) -> Result<(), DiagnoseError> {
        let bad = |problem: String| DiagnoseError::BadSeries {
            run: self.run.to_owned(),
            tag: self.tag.to_owned(),
            problem,
        };
        let n = self.steps.len();
        if self.offsets.len() != n + 1 {
            return Err(bad(format!(
                "{} offsets for {n} steps, want {}",
                self.offsets.len(),
                n + 1
            )));
        }
        if self.stats.len() != n {
            return Err(bad(format!(
                "{} stats rows for {n} steps",
                self.stats.len()
            )));
        }
        if self.offsets.windows(2).any(|w| w[0] > w[1]) {
            return Err(bad("offsets decrease".to_owned()));
        }
        if self.offsets[0] != 0 || 3 * self.offsets[n] != self.buckets.len() {
            return Err(bad(format!(
                "offsets run {}..{} but there are {} buckets",
                self.offsets[0],
                self.offsets[n],
                self.buckets.len() / 3
            )));
        }
        Ok(())
    }

    fn step_buckets(&self, i: usize) -> &[f64] {
        &self.buckets[3 * self.offsets[i]..3 * self.offsets[i + 1]]
    }
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
}

/// Finds the problems of every series, each series profiled on its own core.
///
/// Findings come sorted by run, key, kind and first step.
pub fn diagnose(series: &[SeriesView<'_>], options: &Options) -> Vec<Finding> {
    let profiles: Vec<Vec<StepProfile>> = series
        .par_iter()
        .map(|s| {
            (0..s.steps.len())
                .map(|i| profile(s.step_buckets(i), &s.stats[i]))
                .collect()
        })
        .collect();
    let roles: Vec<Role> = series
        .iter()
        .map(|s| {
            options
                .roles
                .get(s.tag)
                .copied()
                .unwrap_or_else(|| role_of(s.tag))
        })
        .collect();
    let runs = RunSummary::of(series, &profiles, &roles);
    let mut findings: Vec<Finding> = (0..series.len())
        .into_par_iter()
        .flat_map_iter(|i| {
            let s = &series[i];
            let summary = &runs[s.run];
            let context = rules::Context {
                run: s.run,
                key: s.tag,
                role: roles[i],
                steps: s.steps,
                profiles: &profiles[i],
                reference: summary.reference(i, s.steps, series),
                weight_of_bias: summary.weight_of_bias(s.tag, s.steps, series, &profiles),
                run_last_step: summary.last_step,
            };
            rules::findings(&context)
        })
        .filter(|f| options.kinds.as_ref().is_none_or(|k| k.contains(&f.kind)))
        .collect();
    findings.sort_by(|a, b| {
        (&a.run, &a.key, a.kind, a.first_step).cmp(&(&b.run, &b.key, b.kind, b.first_step))
    });
    findings
}

/// What the rules of one series need from the rest of its run.
struct RunSummary {
    /// The last step of any series of the run: a series ending well before it stopped.
    last_step: i64,
    /// For each step, the two largest gradient scales of the run's series, with the series' index.
    gradient_top: BTreeMap<i64, [(usize, f64); 2]>,
    /// The run's gradient series by key.
    gradients: HashMap<String, usize>,
}

impl RunSummary {
    fn of<'a>(
        series: &[SeriesView<'a>],
        profiles: &[Vec<StepProfile>],
        roles: &[Role],
    ) -> HashMap<&'a str, RunSummary> {
        let mut runs: HashMap<&str, RunSummary> = HashMap::new();
        for (i, s) in series.iter().enumerate() {
            let run = runs.entry(s.run).or_insert_with(|| RunSummary {
                last_step: i64::MIN,
                gradient_top: BTreeMap::new(),
                gradients: HashMap::new(),
            });
            if let Some(&last) = s.steps.last() {
                run.last_step = run.last_step.max(last);
            }
            if roles[i] != Role::Gradient {
                continue;
            }
            run.gradients.insert(s.tag.to_owned(), i);
            for (&step, p) in s.steps.iter().zip(&profiles[i]) {
                if !p.has_values() {
                    continue;
                }
                let top = run
                    .gradient_top
                    .entry(step)
                    .or_insert([(usize::MAX, f64::NEG_INFINITY); 2]);
                let scale = p.scale();
                if scale > top[0].1 {
                    top[1] = top[0];
                    top[0] = (i, scale);
                } else if scale > top[1].1 {
                    top[1] = (i, scale);
                }
            }
        }
        runs
    }

    /// For the gradient of a bias, the gradient of the same layer's weight: its key and its
    /// scale at each step of `steps`. A key names the weight with `weight`, `weights` or
    /// `kernel` where the bias's has `bias`.
    fn weight_of_bias<'a>(
        &self,
        key: &str,
        steps: &[i64],
        series: &[SeriesView<'a>],
        profiles: &[Vec<StepProfile>],
    ) -> Option<(&'a str, Vec<Option<f64>>)> {
        let words: Vec<&str> = key
            .split_inclusive(['/', '.', '_', '-', ' ', ':'])
            .collect();
        let bias_at = words.iter().position(|w| {
            w.trim_end_matches(['/', '.', '_', '-', ' ', ':'])
                .eq_ignore_ascii_case("bias")
        })?;
        let j = ["weight", "weights", "kernel"].iter().find_map(|name| {
            let mut sibling: Vec<String> = words.iter().map(|w| (*w).to_owned()).collect();
            sibling[bias_at] = words[bias_at].replacen(&words[bias_at][..4], name, 1);
            self.gradients.get(&sibling.concat()).copied()
        })?;
        let scales: HashMap<i64, f64> = series[j]
            .steps
            .iter()
            .zip(&profiles[j])
            .filter(|(_, p)| p.has_values())
            .map(|(&step, p)| (step, p.scale()))
            .collect();
        Some((
            series[j].tag,
            steps.iter().map(|s| scales.get(s).copied()).collect(),
        ))
    }

    /// At each step of series `i`, the largest scale of another gradient of the run and its key.
    fn reference<'a>(
        &self,
        i: usize,
        steps: &[i64],
        series: &[SeriesView<'a>],
    ) -> Vec<Option<(f64, &'a str)>> {
        steps
            .iter()
            .map(|step| {
                let top = self.gradient_top.get(step)?;
                let (j, scale) = if top[0].0 == i { top[1] } else { top[0] };
                (j != usize::MAX).then(|| (scale, series[j].tag))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        views.iter().for_each(|v| v.check().unwrap());
        diagnose(&views, options)
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
    }
}
