//! The running forms of the rules over one series' valued steps, for the triggers: each
//! rule's per-step flags folded in constant work, with what they are measured from.

use super::activations::{is_dead, is_saturated, Bounded};
use super::collapsed::{scale_fell, spread_fell};
use super::exploding::{episode_back, flagged, growth_needed, EpisodeBack};
use super::gradients::{bias_vanished, vanished};
use super::run_context::Context;
use super::series_start::{early_scale, start_scale, EARLY_STEPS};
use super::sustained::Sustained;
use super::{Role, Severity};
use crate::histograms::profile::StepProfile;

/// What a valued step brings to the rules that read a series' start.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Early {
    pub step: i64,
    pub scale: f64,
    pub max_abs: f64,
    /// The largest scale of another gradient of its kind, where the rule compares with it.
    pub reference: Option<f64>,
    /// For a gradient, its parameter stood still at this step.
    pub stopped: bool,
}

/// The running forms of the rules over one series' valued steps.
#[derive(Debug, Clone, Default)]
pub(super) struct Verdicts {
    pub nonfinite: bool,
    /// The last step pushed was NaN or infinite (one before it was not applied if not).
    pub last_nonfinite: bool,
    valued: usize,
    nonzero: bool,
    /// The first `EARLY_STEPS` valued steps: until there are that many, the start moves,
    /// and what is measured from it is folded again.
    early: [Early; EARLY_STEPS],
    peak_spread: f64,
    pub dead: Sustained,
    pub saturated: Sustained,
    spread: Sustained,
    bias: Sustained,
    stuck: Sustained,
    decay: Sustained,
    vanish: Sustained,
    /// Growth flagged as the rule flags it without, then with, a loss that diverged.
    pub growth: [Episodes; 2],
}

impl Verdicts {
    pub fn push(&mut self, role: Role, p: &StepProfile, step: Early, weight: Option<f64>) {
        self.nonfinite |= p.nonfinite;
        self.last_nonfinite = p.nonfinite;
        if !p.has_values() {
            return;
        }
        self.nonzero |= step.max_abs != 0.0;
        self.dead.push(is_dead(p));
        self.saturated.push(is_saturated(Bounded::of(p)));
        self.spread.push(spread_fell(p, self.peak_spread));
        self.peak_spread = self.peak_spread.max(p.std);
        self.bias.push(bias_vanished(step.scale, weight));
        self.stuck.push(step.stopped && step.max_abs > 0.0); // as `gradients::stuck`
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
        self.decay.push(scale_fell(step.scale, self.early[0].scale)); // as `collapsed::decayed`
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

    pub fn vanishing(&self, role: Role, bias_named: bool) -> Option<Severity> {
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

    /// As `gradients::stuck`: a parameter standing still under a gradient, to the end.
    pub fn stuck(&self, role: Role, bias_named: bool, not_learning: bool) -> Option<Severity> {
        let stuck = role == Role::Gradient && self.stuck.holds() && self.stuck.last;
        if !stuck || self.vanishing(role, bias_named).is_some() {
            return None;
        }
        Some(if not_learning {
            Severity::Error
        } else {
            Severity::Warning
        })
    }

    pub fn collapsed(&self, role: Role, not_learning: bool) -> Option<Severity> {
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

    pub fn exploding(&mut self, context: &Context, wait: i64) -> Option<Severity> {
        let episodes = &mut self.growth[usize::from(context.loss.is_some())];
        episodes.severity(context, wait)
    }
}

/// A series' steps flagged as growing, in episodes of consecutive valued steps, and
/// what the loss did after those that ended.
#[derive(Debug, Clone, Default)]
pub(super) struct Episodes {
    pub count: usize,
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
        if context.reward.is_some() {
            return Some(Severity::Info); // as `exploding::learning_agent`
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
        let Some(curve) = context.curve else {
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
