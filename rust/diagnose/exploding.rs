//! The `exploding` rule: values that grow by orders of magnitude, told apart from
//! spikes that heal by what the run's loss did after them.
//!
//! A series' flagged steps (grown `EXPLODING_GROWTH` times its start, or holding a
//! value of `EXPLODING_HUGE`) fall into episodes of consecutive logged steps. How
//! bad they are depends on what followed, so that a rule read on a prefix of the
//! series (live, while training) says only what that prefix can know:
//!
//! - growth that stays (the last 2 logged steps flagged) or a loss that diverged and
//!   is still up: an error;
//! - a jump at the last logged step only: a warning, since nothing yet says whether
//!   it heals (an explosion is still flagged at the next logged step, an error then);
//! - episodes the series came back from, judged by the run's main loss: back to its
//!   level before each within `HEAL_INTERVALS` logging intervals, in a run that
//!   learned, an `info` (gradient clipping's healed spikes); back in a run that did
//!   not learn, a warning; not back, an error. Without a loss: one spike is an
//!   `info`, more a warning.

use super::context::Context;
use super::loss_curve::LossCurve;
use super::wording::{noun, sci};
use super::{Finding, Kind, Role, Severity};

/// Values growing this many times above their early scale are exploding...
const EXPLODING_GROWTH: f64 = 1e3;
/// ...or this many times, where a loss of the run diverged too (see `scalars`).
const EXPLODING_GROWTH_WITH_LOSS: f64 = 1e2;
/// ...once their root mean square is at least this (so a zero-started bias growing is not).
const EXPLODING_MIN_SCALE: f64 = 1.0;
/// A gradient, parameter or activation this large is exploding, however it started.
const EXPLODING_HUGE: f64 = 1e6;

/// A spike healed where the loss is back within this many of the series' logging
/// intervals after it (the zoo's clipped spikes: back at the next step).
const HEAL_INTERVALS: f64 = 2.0;

/// The spike steps a finding's evidence lists one by one (`spike_1_step`...).
const LISTED_SPIKES: usize = 5;

/// How the flagged steps of a series ended, from what followed them.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Outcome {
    /// Growth on the last 2 logged steps, or a loss that diverged and is still up.
    Grows,
    /// A jump at the last logged step only, or a loss not back yet: too early to tell.
    Fresh,
    /// The series came back, and the loss was back after each episode within `steps`
    /// steps at most; `learned`: the run's loss ends well below its first value.
    Healed { steps: i64, learned: bool },
    /// The series came back but the loss did not, to its `level` before an episode,
    /// by `step`, `HEAL_INTERVALS` after it.
    LossNotBack { level: f64, step: i64 },
    /// The series came back; no loss to say whether training did.
    Unjudged,
}

/// The evidence that lists spike steps one by one, up to `LISTED_SPIKES`.
const SPIKE_NAMES: [&str; LISTED_SPIKES] = [
    "spike_1_step",
    "spike_2_step",
    "spike_3_step",
    "spike_4_step",
    "spike_5_step",
];

/// Values that grew `EXPLODING_GROWTH` times their start (`EXPLODING_GROWTH_WITH_LOSS`
/// where a loss of the run diverged), or any value of `EXPLODING_HUGE`; how bad, by
/// [`Outcome`].
pub(super) fn exploding(cx: &Context<'_>) -> Option<Finding> {
    let valued = cx.valued();
    let flags = flags(cx, &valued);
    let episodes = episodes(&flags);
    let (first, last) = (valued[episodes.first()?.0], valued[episodes.last()?.1]);
    let outcome = outcome(cx, &valued, &episodes);
    let flagged = (0..valued.len())
        .filter(|&k| flags[k])
        .map(|k| &cx.profiles[valued[k]]);
    let (peak, max_abs) = flagged.fold((0.0, 0.0), |(peak, max_abs): (f64, f64), p| {
        (peak.max(p.scale()), max_abs.max(p.max_abs()))
    });
    let start = cx.start_scale(&valued);
    let growth = if start > 0.0 {
        peak / start
    } else {
        f64::INFINITY
    };
    let mut evidence = vec![
        ("early_scale", start),
        ("peak_scale", peak),
        ("growth", growth),
        ("max_abs", max_abs),
    ];
    let spikes: Vec<i64> = episodes.iter().map(|&(a, _)| cx.steps[valued[a]]).collect();
    if outcome != Outcome::Grows {
        evidence.push(("spikes", spikes.len() as f64));
        let listed = SPIKE_NAMES.iter().zip(&spikes);
        evidence.extend(listed.map(|(&name, &step)| (name, step as f64)));
    }
    let grew = format!(
        "{} scale grows from {} to {} ({} times)",
        cx.role,
        sci(start),
        sci(peak),
        sci(growth)
    );
    let (severity, message) = match (outcome, cx.loss_curve) {
        _ if cx.reward.is_some() => learning_agent(cx, &grew, cx.steps[first], &mut evidence),
        (Outcome::Grows, _) => {
            let loss = match cx.loss {
                Some(loss) => {
                    evidence.extend(loss.numbers());
                    format!(", while {}", loss.cited())
                }
                None => String::new(),
            };
            let message = format!(
                "{grew} from step {}, largest value {}{loss}: exploding {}s; lower the \
                 learning rate or clip gradients",
                cx.steps[first],
                sci(max_abs),
                noun(cx.role)
            );
            (Severity::Error, message)
        }
        (Outcome::Healed { steps, learned }, Some(curve)) => {
            healed(curve, (steps, learned), &grew, &spikes, &mut evidence)
        }
        (outcome, curve) => unhealed(cx, outcome, curve, &grew, &spikes, &mut evidence),
    };
    Some(cx.finding(Kind::Exploding, (first, last), severity, &evidence, message))
}

/// The verdict on growth in a run whose reward rises: an agent that learns, whose
/// values grow with the returns it learns to reach (policy gradients are scaled by
/// them, a critic fits them), as in RL without normalized returns or advantages.
fn learning_agent(
    cx: &Context<'_>,
    grew: &str,
    from: i64,
    evidence: &mut Vec<(&str, f64)>,
) -> (Severity, String) {
    let Some(reward) = cx.reward else {
        return (Severity::Info, String::new());
    };
    evidence.extend([("reward_end", reward.end_level())]);
    let message = format!(
        "{grew} from step {from}, while {} rises to {}: the agent learns, and its values grow          with the returns it reaches; normalize returns or advantages if they should not",
        reward.tag,
        sci(reward.end_level())
    );
    (Severity::Info, message)
}

/// The verdict on spikes the series and the loss came back from, `steps` after them at
/// most: an info where the run `learned`, else a warning.
fn healed(
    curve: &LossCurve,
    (steps, learned): (i64, bool),
    grew: &str,
    spikes: &[i64],
    evidence: &mut Vec<(&str, f64)>,
) -> (Severity, String) {
    evidence.extend([
        ("loss_back_steps", steps as f64),
        ("loss_first", curve.first()),
        ("loss_end", curve.end_level()),
    ]);
    let each = if spikes.len() > 1 { " each time" } else { "" };
    let back = format!(
        "{grew} at {} and comes back; {} was back at its level before within {}{each}",
        listed(spikes),
        curve.tag,
        counted(steps, "step")
    );
    let (first, end) = (sci(curve.first()), sci(curve.end_level()));
    if learned {
        let message = format!(
            "{back} and falls from {first} to {end}: transient spikes, harmless where \
             gradients are clipped; look at those steps' batches if they come more often"
        );
        (Severity::Info, message)
    } else {
        let message = format!(
            "{back}, but ends no lower than its first value ({first} to {end}): the run is \
             not learning; lower the learning rate"
        );
        (Severity::Warning, message)
    }
}

/// The verdict on spikes the loss did not come back from, that are too recent to
/// judge, or that no loss can judge.
fn unhealed(
    cx: &Context<'_>,
    outcome: Outcome,
    curve: Option<&LossCurve>,
    grew: &str,
    spikes: &[i64],
    evidence: &mut Vec<(&str, f64)>,
) -> (Severity, String) {
    let at = listed(spikes);
    match outcome {
        Outcome::LossNotBack { level, step } => {
            evidence.push(("loss_before", level));
            let message = format!(
                "{grew} at {at}; {} is not back at its level of {} before the spike by step \
                 {step}: exploding {}s; lower the learning rate or clip gradients",
                curve.map_or("the loss", |c| c.tag.as_str()),
                sci(level),
                noun(cx.role)
            );
            (Severity::Error, message)
        }
        Outcome::Fresh => {
            let message = format!(
                "{grew} at {at}, too recently to tell a spike that heals from an explosion, \
                 which still grows at the next logged step or keeps the loss up; clip \
                 gradients if it does"
            );
            (Severity::Warning, message)
        }
        _ => {
            let severity = if spikes.len() < 2 {
                Severity::Info
            } else {
                Severity::Warning
            };
            let message = format!(
                "{grew} at {at} and comes back: spikes; log the loss to tell whether \
                 training recovered from them"
            );
            (severity, message)
        }
    }
}

/// Whether each valued step has grown `EXPLODING_GROWTH` times the start or holds a huge value.
fn flags(cx: &Context<'_>, valued: &[usize]) -> Vec<bool> {
    let start = cx.start_scale(valued);
    let needed = growth_needed(cx.loss.is_some());
    valued
        .iter()
        .map(|&i| {
            let p = &cx.profiles[i];
            flagged(cx.role, start, needed, p.scale(), p.max_abs())
        })
        .collect()
}

/// The growth over its start that flags a step: less where a loss of the run diverged.
pub(super) fn growth_needed(loss_diverged: bool) -> f64 {
    if loss_diverged {
        EXPLODING_GROWTH_WITH_LOSS
    } else {
        EXPLODING_GROWTH
    }
}

/// Whether a step of `scale` and largest magnitude `max_abs` is flagged, its series
/// having started at `start` and growing `needed` times flagging it.
pub(super) fn flagged(role: Role, start: f64, needed: f64, scale: f64, max_abs: f64) -> bool {
    let grew = start > 0.0 && scale >= needed * start && scale >= EXPLODING_MIN_SCALE;
    let huge_applies = !matches!(role, Role::Other | Role::Loss);
    grew || (huge_applies && max_abs >= EXPLODING_HUGE)
}

/// Runs of consecutive flagged steps, as (first, last) positions in `flags`.
fn episodes(flags: &[bool]) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    for (k, &flag) in flags.iter().enumerate() {
        match out.last_mut() {
            Some(episode) if flag && episode.1 + 1 == k => episode.1 = k,
            _ if flag => out.push((k, k)),
            _ => {}
        }
    }
    out
}

/// What followed the episodes of a series (positions in `valued`), see [`Outcome`].
fn outcome(cx: &Context<'_>, valued: &[usize], episodes: &[(usize, usize)]) -> Outcome {
    let ends_flagged = episodes.last().is_some_and(|&(_, b)| b + 1 == valued.len());
    let tail_grows = episodes.last().is_some_and(|&(a, b)| ends_flagged && b > a);
    if tail_grows || cx.loss.is_some_and(|loss| loss.still_up) {
        return Outcome::Grows;
    }
    let healed = episodes.len() - usize::from(ends_flagged);
    let judged = match cx.loss_curve {
        Some(curve) => loss_back(cx, curve, valued, &episodes[..healed]),
        None => Outcome::Unjudged,
    };
    match judged {
        Outcome::LossNotBack { .. } => judged,
        _ if ends_flagged => Outcome::Fresh,
        _ => judged,
    }
}

/// Whether the loss came back after each episode the series came back from.
fn loss_back(
    cx: &Context<'_>,
    curve: &LossCurve,
    valued: &[usize],
    episodes: &[(usize, usize)],
) -> Outcome {
    let wait = heal_wait(super::runs::logging_interval(cx.steps).or(cx.run_interval));
    let mut slowest = 0;
    let mut pending = false;
    for &(a, b) in episodes {
        let steps = (cx.steps[valued[a]], cx.steps[valued[b]]);
        match episode_back(curve, steps, wait) {
            EpisodeBack::NoLevel => return Outcome::Unjudged,
            EpisodeBack::Back(after) => slowest = slowest.max(after),
            EpisodeBack::Pending => pending = true,
            EpisodeBack::NotBack { level, step } => return Outcome::LossNotBack { level, step },
        }
    }
    if pending {
        return Outcome::Fresh;
    }
    Outcome::Healed {
        steps: slowest,
        learned: curve.learned(),
    }
}

/// How many steps the loss has to come back after an episode, for a series
/// logged every `interval` steps (1 where unknown).
pub(super) fn heal_wait(interval: Option<f64>) -> i64 {
    (HEAL_INTERVALS * interval.unwrap_or(1.0).max(1.0)).ceil() as i64
}

/// What the loss did after one episode, from step `first` to step `last`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum EpisodeBack {
    /// No loss was logged before it to come back to.
    NoLevel,
    /// Back at its level before, this many steps after the episode.
    Back(i64),
    /// Not back yet, and the loss not logged far enough after it to say.
    Pending,
    /// Not back at its `level` before by `step`, `wait` steps after it.
    NotBack { level: f64, step: i64 },
}

pub(super) fn episode_back(curve: &LossCurve, (first, last): (i64, i64), wait: i64) -> EpisodeBack {
    let Some(level) = curve.level_before(first) else {
        return EpisodeBack::NoLevel;
    };
    match curve.back_at(last, level, last + wait) {
        Some(back) => EpisodeBack::Back(back - last),
        _ if curve.last_step < last + wait => EpisodeBack::Pending,
        _ => EpisodeBack::NotBack {
            level,
            step: last + wait,
        },
    }
}

/// `n` things in words: "1 step", "3 steps".
fn counted(n: i64, thing: &str) -> String {
    if n == 1 {
        format!("1 {thing}")
    } else {
        format!("{n} {thing}s")
    }
}

/// Steps as a sentence lists them: "step 30", "steps 30, 55 and 80", "steps 5, 10, ... and 95".
fn listed(steps: &[i64]) -> String {
    let shown: Vec<String> = steps.iter().map(i64::to_string).collect();
    match shown.as_slice() {
        [one] => format!("step {one}"),
        [rest @ .., last] if rest.len() < LISTED_SPIKES => {
            format!("steps {} and {last}", rest.join(", "))
        }
        [head @ .., last] => format!(
            "steps {}, ... and {last} ({} spikes)",
            head[..LISTED_SPIKES - 1].join(", "),
            steps.len()
        ),
        [] => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flagged_steps_fall_into_episodes() {
        let f = [false, true, true, false, true, false, false, true];
        assert_eq!(episodes(&f), vec![(1, 2), (4, 4), (7, 7)]);
        assert_eq!(episodes(&[false; 3]), vec![]);
    }

    #[test]
    fn spike_steps_read_as_a_list() {
        assert_eq!(listed(&[30]), "step 30");
        assert_eq!(listed(&[30, 55, 80]), "steps 30, 55 and 80");
        assert_eq!(
            listed(&[5, 10, 15, 20, 25, 30, 35]),
            "steps 5, 10, 15, 20, ... and 35 (7 spikes)"
        );
    }
}
