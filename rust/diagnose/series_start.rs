//! Where a series started: the median and the smallest non-zero of its first scales.

/// A series' start is the median of its first steps: a few, because a broken
/// run can go wrong from its third step (a sigmoid net at a learning rate of 0.5).
pub(super) const EARLY_STEPS: usize = 3;

/// The median of a series' first scales: where it started.
pub(super) fn early_scale(scales: impl Iterator<Item = f64>) -> f64 {
    median(scales)
}

/// The smallest non-zero of a series' first scales: what growth is measured from,
/// since values can explode by the second logged step (Adam at a learning rate
/// of 1); 0 where they are all 0.
pub(super) fn start_scale(scales: impl Iterator<Item = f64>) -> f64 {
    let smallest = scales
        .filter(|&scale| scale > 0.0)
        .fold(f64::INFINITY, f64::min);
    if smallest.is_finite() {
        smallest
    } else {
        0.0
    }
}

/// The middle of `values`, or the mean of the two middle ones; NaN of none.
pub(super) fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len() % 2 == 1 {
        v[mid]
    } else {
        0.5 * (v[mid - 1] + v[mid])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_an_odd_count_is_the_middle_value() {
        assert_eq!(median([3.0, 1.0, 2.0].into_iter()), 2.0);
    }
}
