//! Log-spaced bin edges, for values spread over decades (a spectrum's eigenvalues).

/// A span of one value, or one too narrow for distinct log-spaced edges, is widened by
/// this factor on each side: half a decade.
const WIDEN: f64 = 3.162_277_660_168_379_5;

/// `count + 1` edges from `lo` to `hi` (both positive and finite), equally spaced in
/// `ln`: `lo · (hi / lo)^(j / count)`, the ends exactly `lo` and `hi`. Where `lo == hi`,
/// or the edges would not all differ, the span is first widened by half a decade on
/// each side (kept finite).
pub fn log_edges(lo: f64, hi: f64, count: usize) -> Vec<f64> {
    let edges = spaced(lo, hi, count);
    if edges.windows(2).all(|w| w[0] < w[1]) {
        return edges;
    }
    spaced(lo / WIDEN, (hi * WIDEN).min(f64::MAX), count)
}

fn spaced(lo: f64, hi: f64, count: usize) -> Vec<f64> {
    let (log_lo, log_hi) = (lo.ln(), hi.ln());
    let step = (log_hi - log_lo) / count as f64;
    let mut edges: Vec<f64> = (0..=count)
        .map(|j| (log_lo + j as f64 * step).exp())
        .collect();
    edges[0] = lo;
    edges[count] = hi;
    edges
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edges_are_equal_steps_of_the_logarithm() {
        let edges = log_edges(1e-3, 10.0, 4);
        assert_eq!(edges[0], 1e-3);
        assert_eq!(edges[4], 10.0);
        for (edge, want) in edges.iter().zip([1e-3, 1e-2, 1e-1, 1.0, 10.0]) {
            assert!((edge / want - 1.0).abs() < 1e-12, "{edge} {want}");
        }
    }

    #[test]
    fn one_value_gets_a_decade_around_it() {
        let edges = log_edges(2.0, 2.0, 2);
        assert!((edges[0] - 2.0 / WIDEN).abs() < 1e-12);
        assert!((edges[1] - 2.0).abs() < 1e-12);
        assert!((edges[2] - 2.0 * WIDEN).abs() < 1e-12);
        let near = log_edges(1.0, 1.0 + 1e-15, 64);
        assert!(near.windows(2).all(|w| w[0] < w[1]));
    }
}
