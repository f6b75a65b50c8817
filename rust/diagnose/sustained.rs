//! A problem that holds: on most of a series' steps from where it starts, whole or
//! kept flag by flag.

/// A problem must hold on at least this share of the steps from where it starts...
const SUSTAINED_SHARE: f64 = 0.8;
/// ...and on at least this many steps (or every step of a shorter series).
const SUSTAINED_STEPS: usize = 3;

/// [`sustained`]'s verdict kept as flags come one by one, in constant work each:
/// whether some flagged index `i` has `SUSTAINED_SHARE` of the flags from it on, and
/// whether the last flag holds.
///
/// Index `i` qualifies when `total - before(i) >= 4/5 (n - i)`, that is when
/// `4i - 5 before(i) >= 4n - 5 total`: the left side is fixed once `i` is flagged, so
/// the largest of it is all that is kept. (`SUSTAINED_SHARE` is 4/5; the float
/// comparison of `sustained` is exact at these sizes.)
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Sustained {
    n: i64,
    total: i64,
    best: Option<i64>,
    pub last: bool,
}

impl Sustained {
    pub fn push(&mut self, flag: bool) {
        if flag {
            let held = 4 * self.n - 5 * self.total;
            self.best = Some(self.best.map_or(held, |best| best.max(held)));
            self.total += 1;
        }
        self.n += 1;
        self.last = flag;
    }

    /// Whether [`sustained`] of the flags pushed so far is `Some`.
    pub fn holds(&self) -> bool {
        let needed = (SUSTAINED_STEPS as i64).min(self.n).max(1);
        self.total >= needed
            && self
                .best
                .is_some_and(|best| best >= 4 * self.n - 5 * self.total)
    }
}

/// The first index from which `flags` holds on `SUSTAINED_SHARE` of the rest, and the last index that holds.
pub(super) fn sustained(flags: &[bool]) -> Option<(usize, usize)> {
    let n = flags.len();
    let total = flags.iter().filter(|&&f| f).count();
    if total < SUSTAINED_STEPS.min(n).max(1) {
        return None;
    }
    let mut held_from = total;
    for (i, &flag) in flags.iter().enumerate() {
        if flag && held_from as f64 >= SUSTAINED_SHARE * (n - i) as f64 {
            let last = flags.iter().rposition(|&f| f)?;
            return Some((i, last));
        }
        if flag {
            held_from -= 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sustained_needs_most_of_the_rest() {
        assert_eq!(sustained(&[false, true, true, true]), Some((1, 3)));
        // One flag among five after it (a blip) is not sustained; the later run is.
        let f = [
            true, false, false, false, false, true, true, true, true, false,
        ];
        assert_eq!(sustained(&f), Some((5, 8)));
        assert_eq!(sustained(&[true, true, false, false, false]), None);
        assert_eq!(sustained(&[true]), Some((0, 0)));
        assert_eq!(sustained(&[]), None);
    }

    proptest::proptest! {
        #[test]
        fn sustained_kept_flag_by_flag_is_sustained_of_every_prefix(
            flags in proptest::collection::vec(proptest::bool::weighted(0.6), 0..60)
        ) {
            let mut online = Sustained::default();
            for (n, &flag) in flags.iter().enumerate() {
                online.push(flag);
                let whole = sustained(&flags[..=n]);
                proptest::prop_assert_eq!(online.holds(), whole.is_some(), "{:?}", &flags[..=n]);
                proptest::prop_assert_eq!(online.last, flag);
            }
        }
    }
}
