//! Steps a loss scaler skipped: mixed precision's intended overflows, and a scaler that
//! skips every step from some point on, so that training stopped.
//!
//! Under fp16 a loss scaler (`torch.amp.GradScaler`, the trainers' fp16 modes, Keras's
//! `LossScaleOptimizer`) multiplies the loss by a scale before the backward pass; when a
//! gradient overflows it skips that optimizer step on purpose and halves the scale. A few
//! skips, mostly while the first scale is still too large, are how it works. When every
//! step overflows whatever the scale, the scale falls toward zero and the weights stop
//! changing: the run is broken though nothing in it is NaN.
//!
//! histoscope's watch writes each skipped step as the scalar [`SKIPPED_TAG`] (the count so
//! far); files of other tools hold the skipped steps' gradients instead, NaN or infinite at
//! steps after which they are finite again, which `nonfinite::nonfinite` judges here too.

use super::wording::noun;
use super::{Finding, Kind, Role, Severity};
use crate::logdir::evidence::ScalarSeries;

/// The scalar a watch writes at each step its loss scaler skipped (`write/optimizer_steps.py`).
pub const SKIPPED_TAG: &str = "amp/skipped_steps";

/// Consecutive skipped steps running to the run's last step that mean the scaler can no
/// longer find a scale: GradScaler's first skips from its default 2^16 are a handful
/// (fp16's range is 2^16 wide), and this many more halvings take any scale below 1/2^8.
const STREAK_STEPS: usize = 24;

/// How many skipped steps a message names before it counts the rest.
const NAMED_STEPS: usize = 5;

/// The finding of a run's skipped steps (its [`SKIPPED_TAG`] series), judged against the
/// last step of any event of the run.
pub(super) fn skipped_steps(
    run: &str,
    series: &ScalarSeries,
    run_last_step: i64,
) -> Option<Finding> {
    let steps = &series.steps;
    let (&first, &last) = (steps.first()?, steps.last()?);
    let streak = terminal_streak(steps);
    let finding = |severity, (from, to): (i64, i64), evidence: Vec<(&str, f64)>, message| Finding {
        kind: Kind::Skipped,
        run: run.to_owned(),
        key: series.tag.clone(),
        role: Role::Other,
        first_step: from,
        last_step: to,
        severity,
        evidence: evidence
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
        message,
    };
    if severity(streak, last, run_last_step) == Severity::Error {
        let from = steps[steps.len() - streak];
        return Some(finding(
            Severity::Error,
            (from, last),
            vec![("skipped", steps.len() as f64), ("streak", streak as f64)],
            format!(
                "the loss scaler skipped every step from step {from} to step {last} ({streak} \
                 steps): the gradients overflow at any loss scale, so the scale falls toward zero \
                 and the weights stop changing; look for a value beyond fp16's range (65504) in \
                 the inputs, activations or loss, or train in bf16"
            ),
        ));
    }
    Some(finding(
        Severity::Info,
        (first, last),
        vec![("skipped", steps.len() as f64)],
        format!(
            "the loss scaler skipped {} step{} ({}): their gradients overflowed and were not \
             applied, as mixed precision intends, and the scale was lowered",
            steps.len(),
            if steps.len() == 1 { "" } else { "s" },
            named(steps)
        ),
    ))
}

/// How bad `streak` skipped steps one after the other are, the last at `last`: an error
/// when they are many and run to the run's last step.
pub(super) fn severity(streak: usize, last: i64, run_last_step: i64) -> Severity {
    if streak >= STREAK_STEPS && last >= run_last_step {
        Severity::Error
    } else {
        Severity::Info
    }
}

/// The first and last step of the skipped steps that end `series` one after the other.
pub(super) fn tail(series: &ScalarSeries) -> Option<(i64, i64)> {
    let streak = terminal_streak(&series.steps);
    let last = *series.steps.last()?;
    Some((series.steps[series.steps.len() - streak], last))
}

/// How many steps end `steps` one after the other.
fn terminal_streak(steps: &[i64]) -> usize {
    let run = steps
        .windows(2)
        .rev()
        .take_while(|w| w[1] == w[0] + 1)
        .count();
    if steps.is_empty() {
        0
    } else {
        run + 1
    }
}

/// "steps 0, 1, 2, 3, 4 and 11 more".
pub(super) fn named(steps: &[i64]) -> String {
    let shown: Vec<String> = steps.iter().take(NAMED_STEPS).map(i64::to_string).collect();
    let word = if steps.len() == 1 { "step" } else { "steps" };
    match steps.len().saturating_sub(NAMED_STEPS) {
        0 => format!("{word} {}", shown.join(", ")),
        more => format!("{word} {} and {more} more", shown.join(", ")),
    }
}

/// The steps a run records as skipped (sorted), none where it records none.
pub(super) fn recorded(scalars: &[ScalarSeries]) -> &[i64] {
    scalars
        .iter()
        .find(|s| s.tag == SKIPPED_TAG)
        .map_or(&[], |s| s.steps.as_slice())
}

/// Steps held as runs of consecutive steps, for the live triggers: a run's skipped
/// steps, and the steps a scalar was NaN or infinite at, in memory that grows with the
/// runs of steps rather than the steps (a diverged loss is NaN at every step).
#[derive(Debug, Default)]
pub(super) struct StepRuns(Vec<(i64, i64)>);

impl StepRuns {
    /// Adds `step`: at the end as steps usually come, in place after a restart.
    pub fn insert(&mut self, step: i64) {
        match self.0.last_mut() {
            Some((_, end)) if *end + 1 == step => *end = step,
            Some(&mut (_, end)) if end >= step => {
                if !self.contains(step) {
                    let at = self.0.partition_point(|&(_, end)| end < step);
                    self.0.insert(at, (step, step));
                }
            }
            _ => self.0.push((step, step)),
        }
    }

    pub fn contains(&self, step: i64) -> bool {
        let at = self.0.partition_point(|&(_, end)| end < step);
        self.0.get(at).is_some_and(|&(start, _)| start <= step)
    }

    /// The first of these steps that `other` does not hold.
    pub fn first_outside(&self, other: &StepRuns) -> Option<i64> {
        for &(start, end) in &self.0 {
            let mut step = start;
            while step <= end {
                let at = other.0.partition_point(|&(_, e)| e < step);
                match other.0.get(at) {
                    Some(&(s, e)) if s <= step => step = e + 1,
                    _ => return Some(step),
                }
            }
        }
        None
    }
}

/// The finding of a gradient whose values were NaN or infinite at the `bad` steps and
/// finite again after the last of them: updates that were not applied (an applied NaN
/// makes the weights NaN, and every later gradient with them), as a loss scaler skips
/// the steps whose gradients overflow.
pub(super) fn recovered(run: &str, key: &str, role: Role, bad: &[i64]) -> Option<Finding> {
    Some(Finding {
        kind: Kind::Skipped,
        run: run.to_owned(),
        key: key.to_owned(),
        role,
        first_step: *bad.first()?,
        last_step: *bad.last()?,
        severity: Severity::Info,
        evidence: vec![("steps".to_owned(), bad.len() as f64)],
        message: format!(
            "{key}: the {} is NaN or infinite at {} and finite again after: those updates \
             were not applied (an applied one makes the weights NaN), as a loss scaler skips \
             the steps whose gradients overflow",
            noun(role),
            named(bad)
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skips(steps: impl IntoIterator<Item = i64>) -> ScalarSeries {
        let mut series = ScalarSeries {
            tag: SKIPPED_TAG.to_owned(),
            steps: Vec::new(),
            values: Vec::new(),
        };
        for (i, step) in steps.into_iter().enumerate() {
            series.push(step, (i + 1) as f64);
        }
        series
    }

    #[test]
    fn a_few_skips_in_a_run_that_goes_on_are_info() {
        let found = skipped_steps("r", &skips([0, 1, 2, 3, 40]), 100).unwrap();
        assert_eq!(found.severity, Severity::Info);
        assert_eq!((found.first_step, found.last_step), (0, 40));
        assert!(found
            .message
            .contains("skipped 5 steps (steps 0, 1, 2, 3, 40)"));
    }

    #[test]
    fn a_first_streak_from_a_large_scale_is_info() {
        assert_eq!(
            skipped_steps("r", &skips(0..30), 500).unwrap().severity,
            Severity::Info
        );
    }

    #[test]
    fn skipping_every_step_to_the_end_is_an_error_from_the_streaks_start() {
        let steps = [3, 9].into_iter().chain(40..70);
        let found = skipped_steps("r", &skips(steps), 69).unwrap();
        assert_eq!(found.severity, Severity::Error);
        assert_eq!((found.first_step, found.last_step), (40, 69));
        assert!(found
            .message
            .contains("every step from step 40 to step 69 (30 steps)"));
        // A streak too short to be sure, or one the run went on after, is not.
        let short = skipped_steps("r", &skips(60..70), 69).unwrap();
        assert_eq!(short.severity, Severity::Info);
        let healed = skipped_steps("r", &skips(40..70), 80).unwrap();
        assert_eq!(healed.severity, Severity::Info);
    }

    #[test]
    fn streaks_and_names() {
        assert_eq!(terminal_streak(&[]), 0);
        assert_eq!(terminal_streak(&[5]), 1);
        assert_eq!(terminal_streak(&[1, 3, 4, 5]), 3);
        assert_eq!(named(&[7]), "step 7");
        assert_eq!(
            named(&[0, 1, 2, 3, 4, 5, 6]),
            "steps 0, 1, 2, 3, 4 and 2 more"
        );
    }

    #[test]
    fn step_runs_hold_steps_in_any_order() {
        let mut runs = StepRuns::default();
        for step in [3, 4, 5, 9, 1, 4, 10] {
            runs.insert(step);
        }
        assert_eq!(runs.0, vec![(1, 1), (3, 5), (9, 10)]);
        assert!(runs.contains(4) && runs.contains(10) && !runs.contains(2) && !runs.contains(6));
        let mut skips = StepRuns::default();
        for step in [1, 3, 4] {
            skips.insert(step);
        }
        assert_eq!(runs.first_outside(&skips), Some(5));
        for step in 5..=10 {
            skips.insert(step);
        }
        assert_eq!(runs.first_outside(&skips), None);
        assert_eq!(StepRuns::default().first_outside(&skips), None);
    }

    #[test]
    fn gradients_finite_again_were_skipped() {
        let found = recovered("r", "gradients/w", Role::Gradient, &[2, 5]).unwrap();
        assert_eq!(
            (found.kind, found.severity),
            (Kind::Skipped, Severity::Info)
        );
        assert!(found
            .message
            .contains("NaN or infinite at steps 2, 5 and finite again"));
    }
}
