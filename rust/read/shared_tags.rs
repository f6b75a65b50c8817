//! One tag written several times in one step of one file, kept apart by position:
//! Keras 3 before keras#22317 names every layer's weights by their short name.
//!
//! Its `TensorBoard(histogram_freq=1)` writes, at each epoch and in `model.layers`
//! order, one `kernel/histogram` per layer, one `bias/histogram` per layer, and so
//! on (keras#18433, keras#20809). Read as a restart, all but the last layer would
//! be lost; TensorBoard's data server keeps only the last. The values of one step
//! come in one burst, in the same order at every step, so the n-th value of a tag
//! in a step is the same layer from step to step: it is named `tag (n)`.
//!
//! A burst ends when the file's step changes, or when a value comes more than
//! [`BURST_GAP_SECONDS`] after the one before it: a writer that logs a tag again
//! at the same step later on (per batch, at the epoch's step) is logging it again,
//! and that stays the restart rule's to decide, as before.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::fmt;

/// The most seconds between two values of one burst. Keras writes a step's values
/// back to back, one histogram's binning apart.
pub const BURST_GAP_SECONDS: f64 = 1.0;

/// What a file's decoder remembers of the step it is in, carried from one read of
/// the file to the next (a file followed as it grows, or read in pieces).
#[derive(Clone, Default, PartialEq)]
pub struct StepBurst {
    step: Option<i64>,
    last_wall_time: f64,
    /// Which burst this is, counted from 1: each tag's count below belongs to one.
    burst: u64,
    /// Per tag, the burst it was last seen in and how many values it held there.
    /// Kept from burst to burst, so that a tag's name is allocated once per file.
    seen: HashMap<String, (u64, u32)>,
    /// Every tag the file wrote more than once in a burst, and the most times.
    shared: BTreeMap<String, u32>,
}

/// Written in tag order, so that two equal states print alike (the tags sit in a hash map).
impl fmt::Debug for StepBurst {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let seen: BTreeMap<&String, &(u64, u32)> = self.seen.iter().collect();
        f.debug_struct("StepBurst")
            .field("step", &self.step)
            .field("last_wall_time", &self.last_wall_time)
            .field("burst", &self.burst)
            .field("seen", &seen)
            .field("shared", &self.shared)
            .finish()
    }
}

impl StepBurst {
    /// The name a histogram value of `tag` at `step`, written at `wall_time`, is
    /// kept under: `tag` for its first value in the burst, `tag (n)` for its n-th.
    pub fn name<'t>(&mut self, tag: &'t str, step: i64, wall_time: f64) -> Cow<'t, str> {
        let gap = wall_time - self.last_wall_time;
        if self.step != Some(step) || gap.is_nan() || gap.abs() > BURST_GAP_SECONDS {
            self.step = Some(step);
            self.burst += 1;
        }
        self.last_wall_time = wall_time;
        let position = self.count(tag);
        if position == 1 {
            return Cow::Borrowed(tag);
        }
        let most = self.shared.entry(tag.to_owned()).or_insert(0);
        *most = (*most).max(position);
        Cow::Owned(positioned(tag, position))
    }

    /// Counts one more value of `tag` in this burst; returns its position.
    fn count(&mut self, tag: &str) -> u32 {
        let burst = self.burst;
        let Some((seen_in, count)) = self.seen.get_mut(tag) else {
            self.seen.insert(tag.to_owned(), (burst, 1));
            return 1;
        };
        if *seen_in != burst {
            (*seen_in, *count) = (burst, 0);
        }
        *count += 1;
        *count
    }

    /// Every tag the file wrote more than once in one burst, with the most times.
    pub fn shared(&self) -> &BTreeMap<String, u32> {
        &self.shared
    }
}

/// The name of the `position`-th value (from 1) of `tag` in a step.
pub fn positioned(tag: &str, position: u32) -> String {
    if position <= 1 {
        tag.to_owned()
    } else {
        format!("{tag} ({position})")
    }
}

/// The one line that tells a user which tags were kept apart, and why.
pub fn note(path: &str, shared: &BTreeMap<String, u32>) -> Option<String> {
    if shared.is_empty() {
        return None;
    }
    let tags: Vec<String> = shared
        .iter()
        .map(|(tag, most)| format!("{tag} ({most} a step: {tag} to {})", positioned(tag, *most)))
        .collect();
    Some(format!(
        "{path}: kept apart the values one tag held several times in one step, as one series \
         each, by position: {}. Keras 3 before keras#22317 writes every layer's weights under \
         their short name (keras#18433), so these are separate layers, in model.layers order",
        tags.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(burst: &mut StepBurst, values: &[(&str, i64, f64)]) -> Vec<String> {
        values
            .iter()
            .map(|&(tag, step, time)| burst.name(tag, step, time).into_owned())
            .collect()
    }

    #[test]
    fn a_tag_repeated_in_one_step_is_numbered_by_position_at_every_step() {
        let mut burst = StepBurst::default();
        let step = |s: i64| {
            let t = s as f64 * 10.0;
            [
                ("kernel", s, t),
                ("bias", s, t),
                ("kernel", s, t + 0.01),
                ("bias", s, t + 0.02),
            ]
        };
        let got = names(&mut burst, &[step(0), step(1)].concat());
        let want = ["kernel", "bias", "kernel (2)", "bias (2)"];
        assert_eq!(got, [want, want].concat());
        assert_eq!(
            burst.shared().iter().collect::<Vec<_>>(),
            vec![(&"bias".to_owned(), &2), (&"kernel".to_owned(), &2)]
        );
    }

    #[test]
    fn a_step_that_goes_back_or_a_late_value_starts_a_new_burst() {
        let mut burst = StepBurst::default();
        let got = names(
            &mut burst,
            &[("h", 3, 0.0), ("h", 2, 0.1), ("h", 2, 5.0), ("h", 2, 5.5)],
        );
        assert_eq!(got, ["h", "h", "h", "h (2)"]);
    }

    #[test]
    fn the_note_names_every_kept_apart_tag_and_why() {
        assert_eq!(note("f", &BTreeMap::new()), None);
        let shared = BTreeMap::from([("kernel/histogram".to_owned(), 3)]);
        let line = note("run/f", &shared).unwrap();
        assert!(line.starts_with("run/f: kept apart"));
        assert!(
            line.contains("kernel/histogram (3 a step: kernel/histogram to kernel/histogram (3))")
        );
        assert!(line.contains("keras#18433"));
    }
}
