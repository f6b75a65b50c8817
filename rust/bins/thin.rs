//! Thinning a series' steps to a few evenly spaced ones, as maidr's charts keep them.

/// At most `max_steps` indices into `n` steps, evenly spaced, the first and the last kept.
///
/// `None` keeps every step. The indices are maidr's,
/// `unique(round(linspace(0, n - 1, max_steps)))`, computed as NumPy does: each
/// in float64 as `i * ((n - 1) / (max_steps - 1))`, the last exactly `n - 1`,
/// rounded half to even. So 10 steps thinned to 3 keep 0, 4 and 9.
pub fn thin_indices(n: usize, max_steps: Option<usize>) -> Vec<usize> {
    let Some(m) = max_steps else {
        return (0..n).collect();
    };
    if n == 0 || m == 0 {
        return Vec::new();
    }
    if m == 1 {
        return vec![0];
    }
    let last = n - 1;
    let step = last as f64 / (m - 1) as f64;
    let mut kept: Vec<usize> = (0..m)
        .map(|i| {
            if i == m - 1 {
                last
            } else {
                (i as f64 * step).round_ties_even() as usize
            }
        })
        .collect();
    kept.dedup();
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn keeps_maidrs_steps() {
        assert_eq!(thin_indices(10, Some(3)), vec![0, 4, 9]);
        assert_eq!(thin_indices(10, Some(4)), vec![0, 3, 6, 9]);
        assert_eq!(thin_indices(6, Some(4)), vec![0, 2, 3, 5]);
        assert_eq!(thin_indices(7, Some(3)), vec![0, 3, 6]);
        assert_eq!(thin_indices(1000, Some(2)), vec![0, 999]);
    }

    #[test]
    fn halves_round_as_numpy_rounds_their_float64_value() {
        // 7 * (29 / 14) is 14.5 exactly, but 14.500000000000002 in float64: NumPy keeps 15.
        assert_eq!(
            thin_indices(30, Some(15)),
            vec![0, 2, 4, 6, 8, 10, 12, 15, 17, 19, 21, 23, 25, 27, 29]
        );
        // 1 * (3 / 2) is exactly 1.5: half to even gives 2.
        assert_eq!(thin_indices(4, Some(3)), vec![0, 2, 3]);
        // 1 * (5 / 2) is exactly 2.5: half to even gives 2.
        assert_eq!(thin_indices(6, Some(3)), vec![0, 2, 5]);
    }

    #[test]
    fn more_room_than_steps_keeps_all() {
        assert_eq!(thin_indices(5, Some(51)), vec![0, 1, 2, 3, 4]);
        assert_eq!(thin_indices(5, None), vec![0, 1, 2, 3, 4]);
        assert_eq!(thin_indices(0, Some(3)), Vec::<usize>::new());
        assert_eq!(thin_indices(3, Some(1)), vec![0]);
    }

    proptest! {
        #[test]
        fn thinning_is_even_and_keeps_the_ends(
            n in 0usize..=5000,
            max_steps in proptest::option::of(2usize..=300),
        ) {
            let kept = thin_indices(n, max_steps);
            prop_assert_eq!(kept.len(), max_steps.map_or(n, |m| n.min(m)));
            if n > 0 {
                prop_assert_eq!((kept[0], kept[kept.len() - 1]), (0, n - 1));
            }
            let gaps: Vec<usize> = kept.windows(2).map(|w| w[1] - w[0]).collect();
            prop_assert!(gaps.iter().all(|&g| g >= 1));
            if let (Some(least), Some(most)) = (gaps.iter().min(), gaps.iter().max()) {
                prop_assert!(most - least <= 1, "{:?}", gaps);
            }
        }
    }
}
