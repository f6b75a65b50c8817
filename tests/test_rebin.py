"""Laws of rebinning and thinning, checked on random data with hypothesis."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from histoscope import _core

finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)


@st.composite
def step_buckets(draw) -> np.ndarray:
    n = draw(st.integers(0, 12))
    rows = []
    for _ in range(n):
        a, b = draw(finite), draw(finite)
        count = draw(st.one_of(st.just(0.0), st.floats(0.0, 1e4)))
        rows.append([min(a, b), max(a, b), count])
    return np.array(rows, dtype=np.float64).reshape(-1, 3)


steps_strategy = st.lists(step_buckets(), min_size=1, max_size=6)


def reference_rebin(steps: list[np.ndarray], edges: np.ndarray) -> np.ndarray:
    """The overlap rule written plainly with NumPy, against the given edges."""
    bins = len(edges) - 1
    out = np.zeros((len(steps), bins))
    for i, buckets in enumerate(steps):
        for left, right, count in buckets:
            if count == 0:
                continue
            if left == right:
                j = min(np.searchsorted(edges, left, side="right") - 1, bins - 1)
                out[i, j] += count
                continue
            overlap = np.minimum(right, edges[1:]) - np.maximum(left, edges[:-1])
            out[i] += count * (np.clip(overlap, 0, None) / (right - left))
    return out


@settings(max_examples=300, deadline=None)
@given(steps_strategy, st.integers(1, 64))
def test_counts_are_preserved_and_bins_shared(steps: list[np.ndarray], bins: int) -> None:
    rebinned = _core.rebin(steps, bins)
    edges = rebinned.edges
    counts = rebinned.counts
    lost = rebinned.nonfinite_buckets
    assert lost == 0
    assert edges.shape == (bins + 1,) and counts.shape == (len(steps), bins)
    assert np.all(np.diff(edges) > 0)
    totals = np.array([b[:, 2].sum() for b in steps])
    np.testing.assert_allclose(counts.sum(axis=1), totals, rtol=1e-9, atol=1e-6)
    assert (counts >= 0).all()
    nonempty = np.concatenate([b[b[:, 2] > 0] for b in steps])
    if len(nonempty) and nonempty[:, 1].max() > nonempty[:, 0].min():
        assert edges[0] == nonempty[:, 0].min() and edges[-1] == nonempty[:, 1].max()


@settings(max_examples=300, deadline=None)
@given(steps_strategy, st.integers(1, 40))
def test_matches_the_plain_overlap_rule(steps: list[np.ndarray], bins: int) -> None:
    rebinned = _core.rebin(steps, bins)
    edges = rebinned.edges
    counts = rebinned.counts
    np.testing.assert_allclose(counts, reference_rebin(steps, edges), rtol=1e-9, atol=1e-6)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 50), st.data())
def test_a_bucket_inside_one_bin_stays_in_that_bin(bins: int, data) -> None:
    frame = np.array([[0.0, 0.0, 1.0], [10.0, 10.0, 1.0]])  # fixes the span to 0..10
    rebinned = _core.rebin([frame], bins)
    edges = rebinned.edges
    j = data.draw(st.integers(0, bins - 1))
    lo, hi = edges[j], edges[j + 1]
    a = data.draw(st.floats(lo, hi, exclude_max=True))  # [hi, hi] belongs to bin j + 1
    b = data.draw(st.floats(a, hi))
    inner = np.array([[a, b, 7.0]])
    rebinned = _core.rebin([frame, inner], bins)
    counts = rebinned.counts
    assert counts[1, j] == 7.0
    assert counts[1].sum() == 7.0


@given(st.integers(0, 5000), st.one_of(st.none(), st.integers(2, 300)))
def test_thinning_is_even_and_keeps_the_ends(n: int, max_steps) -> None:
    kept = _core.thin_indices(n, max_steps).tolist()
    assert len(kept) == (n if max_steps is None else min(n, max_steps))
    if n:
        assert kept[0] == 0 and kept[-1] == n - 1
    gaps = np.diff(kept)
    assert (gaps >= 1).all()
    if len(gaps):
        assert gaps.max() - gaps.min() <= 1


def test_nonfinite_buckets_are_counted_not_binned() -> None:
    step = np.array([[np.nan, 1.0, 3.0], [0.0, 1.0, 2.0], [-np.inf, 0.0, 4.0]])
    rebinned = _core.rebin([step], 2)
    counts = rebinned.counts
    lost = rebinned.nonfinite_buckets
    lost_count = rebinned.nonfinite_count
    assert (lost, lost_count) == (2, 7.0)
    assert counts.tolist() == [[1.0, 1.0]]


@given(steps_strategy, st.integers(0, 5), st.integers(1, 40))
@settings(max_examples=200, deadline=None)
def test_steps_rebinned_apart_over_their_joint_extent_are_them_rebinned_together(
    steps: list[np.ndarray], split: int, bins: int
) -> None:
    """How the report rebins a key run by run: each part over the extent of all."""
    together = _core.rebin(steps, bins)
    parts = [steps[:split], steps[split:]]
    extents = [e for e in (_core.bucket_extent(p) for p in parts) if e is not None]
    joint = (min(e[0] for e in extents), max(e[1] for e in extents)) if extents else None
    apart = [_core.rebin(p, bins, joint) for p in parts]
    assert all(np.array_equal(r.edges, together.edges) for r in apart)
    assert np.array_equal(np.concatenate([r.counts for r in apart]), together.counts)


@given(steps_strategy)
@settings(max_examples=100, deadline=None)
def test_any_memory_order_of_the_buckets_reads_alike(steps: list[np.ndarray]) -> None:
    orders = [
        steps,
        [np.asfortranarray(s) for s in steps],
        [np.repeat(s, 2, axis=0)[::2] for s in steps],
    ]
    extents = {_core.bucket_extent(o) for o in orders}
    assert len(extents) == 1
    counts = [_core.rebin(o, 7).counts for o in orders]
    assert all(np.array_equal(c, counts[0]) for c in counts)
