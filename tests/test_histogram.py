"""Histogram and its Rust core: numpy.histogram's counts, NumPy's statistics, every input."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from histoscope import _core
from histoscope._args import bins_or_edges, value_range
from histoscope.write.histogram import (
    MAX_BINS,
    Histogram,
    _bin_with_torch,
    bin_prepared,
    prepare_values,
    prepare_weights,
)


def numpy_counts(values: np.ndarray, edges: np.ndarray, weights=None) -> np.ndarray:
    """numpy.histogram's counts of the finite values for these edges."""
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    finite = np.isfinite(values)
    w = None if weights is None else np.asarray(weights, dtype=np.float64).reshape(-1)[finite]
    return np.histogram(values[finite], bins=edges, weights=w)[0].astype(np.float64)


def assert_stats_match_numpy(h: Histogram, values, weights=None) -> None:
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    finite = np.isfinite(values)
    w = np.ones_like(values) if weights is None else np.asarray(weights, np.float64).reshape(-1)
    x, wf = values[finite], w[finite]
    assert h.count == wf.sum()
    assert h.nonfinite == w[~finite].sum()
    kept = x[wf != 0]
    if kept.size:
        assert (h.min, h.max) == (kept.min(), kept.max())
        mean = np.average(x, weights=wf)
        # Scaled, so that squaring huge deviations cannot overflow.
        scale = max(np.abs(x).max(), 1e-300)
        std = math.sqrt(np.average(((x - mean) / scale) ** 2, weights=wf)) * scale
        assert h.mean == pytest.approx(mean, rel=1e-12, abs=1e-12 * scale)
        assert h.std == pytest.approx(std, rel=1e-9, abs=1e-12 * scale)
    else:
        assert math.isnan(h.min) and math.isnan(h.max) and math.isnan(h.mean)
    lo, hi = h.edges[0], h.edges[-1]
    assert h.below == wf[x < lo].sum()
    assert h.above == wf[x > hi].sum()


# --- equality with numpy.histogram -------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.int64, np.uint8, np.int8])
def test_default_edges_equal_numpys(dtype) -> None:
    values = (np.random.default_rng(1).normal(size=10_001) * 40).astype(dtype)
    h = Histogram(values, bins=37)
    counts, edges = np.histogram(values, bins=37)
    np.testing.assert_array_equal(h.edges, edges)
    np.testing.assert_array_equal(h.counts, counts)
    assert_stats_match_numpy(h, values)


def test_range_edges_equal_numpys_and_outside_values_are_counted_apart() -> None:
    values = np.random.default_rng(2).normal(size=5000)
    h = Histogram(values, bins=20, range=(-1.3, 0.7))
    counts, edges = np.histogram(values, bins=20, range=(-1.3, 0.7))
    np.testing.assert_array_equal(h.edges, edges)
    np.testing.assert_array_equal(h.counts, counts)
    assert h.below == (values < -1.3).sum() > 0
    assert h.above == (values > 0.7).sum() > 0
    assert h.count == 5000
    assert_stats_match_numpy(h, values)


def test_float32_counts_equal_numpys_for_the_same_float64_edges() -> None:
    values = np.random.default_rng(3).normal(size=20_000).astype(np.float32)
    h = Histogram(values, bins=50)
    np.testing.assert_array_equal(h.counts, numpy_counts(values, h.edges))
    assert h.min == values.min() and h.max == values.max()
    assert h.counts[0] >= 1 and h.counts[-1] >= 1


def test_values_on_every_edge_go_where_numpy_puts_them() -> None:
    edges = np.linspace(-0.3, 1.1, 8)
    values = np.concatenate([edges, np.nextafter(edges, -np.inf), np.nextafter(edges, np.inf)])
    h = Histogram(values, bins=7, range=(-0.3, 1.1))
    np.testing.assert_array_equal(h.edges, edges)
    np.testing.assert_array_equal(h.counts, np.histogram(values, bins=edges)[0])
    assert (h.below, h.above) == (1, 1)


@pytest.mark.parametrize("range_", [None, (-2.5, 3.25), (999.0, 1001.0)])
def test_float32_values_beside_every_edge_go_where_numpy_puts_their_float64_values(range_) -> None:
    rng = np.random.default_rng(5)
    values = (rng.normal(size=300_001) * 2).astype(np.float32)
    values[::7] = 0  # many copies of one value, as ReLU outputs have
    edges = Histogram(values, bins=50, range=range_).edges
    # The default range's ends are the extremes, which the values must keep.
    inner = edges if range_ else edges[1:-1]
    below, above = inner.astype(np.float32), inner.astype(np.float32)
    below[below > inner] = np.nextafter(below[below > inner], np.float32(-np.inf))
    above[above < inner] = np.nextafter(above[above < inner], np.float32(np.inf))
    beside = [np.nextafter(below, np.float32(-np.inf)), below, above]
    beside.append(np.nextafter(above, np.float32(np.inf)))
    values = np.concatenate([values, *beside, np.float32([np.nan, np.inf])])
    h = Histogram(values, bins=50, range=range_)
    np.testing.assert_array_equal(h.edges, edges)
    np.testing.assert_array_equal(h.counts, numpy_counts(values, edges))
    finite = values[np.isfinite(values)].astype(np.float64)
    assert (h.below, h.above) == ((finite < edges[0]).sum(), (finite > edges[-1]).sum())
    assert_stats_match_numpy(h, values)


def test_long_arrays_binned_in_parallel_equal_numpy() -> None:
    values = np.random.default_rng(4).standard_cauchy(size=1_000_003)
    values[::1000] = np.nan
    h = Histogram(values, bins=64, range=(-10, 10))
    np.testing.assert_array_equal(h.counts, numpy_counts(values, h.edges))
    assert_stats_match_numpy(h, values)


@st.composite
def arrays_and_edges(draw):
    dtype = draw(st.sampled_from([np.float64, np.float32, np.float16, np.int16, np.int64]))
    values = draw(
        # Squared deviations of float64 values beyond 1e154 overflow, below 1e-154
        # underflow (documented).
        hnp.arrays(
            dtype,
            st.integers(0, 300),
            elements={"allow_subnormal": False}
            if dtype != np.float64
            else st.floats(-1e150, 1e150).filter(lambda v: v == 0 or abs(v) > 1e-150)
            | st.sampled_from([np.nan, np.inf, -np.inf]),
        )
        if np.issubdtype(dtype, np.floating)
        else hnp.arrays(dtype, st.integers(0, 300))
    )
    edges = None
    if values.size and draw(st.booleans()):
        # Edges drawn from the values themselves, so that many values lie on one.
        finite = np.unique(values[np.isfinite(values.astype(np.float64))].astype(np.float64))
        if finite.size >= 2:
            edges = draw(st.lists(st.sampled_from(finite.tolist()), min_size=2, unique=True))
            edges = np.sort(np.array(edges))
    return values, edges


@settings(max_examples=200, deadline=None)
@given(arrays_and_edges(), st.integers(1, MAX_BINS))
def test_counts_and_statistics_equal_numpys_on_random_data(case, bins) -> None:
    values, edges = case
    h = Histogram(values, bins=bins if edges is None else edges)
    np.testing.assert_array_equal(h.counts, numpy_counts(values, h.edges))
    assert h.counts.sum() + h.below + h.above == h.count
    if edges is not None:
        np.testing.assert_array_equal(h.edges, edges)
    assert_stats_match_numpy(h, values)


@settings(max_examples=100, deadline=None)
@given(
    hnp.arrays(
        np.float64,
        st.integers(1, 200),
        elements=st.floats(-1e6, 1e6).filter(lambda v: v == 0 or abs(v) > 1e-150),
    ),
    st.data(),
)
def test_weighted_counts_and_statistics_equal_numpys(values, data) -> None:
    weights = data.draw(
        hnp.arrays(np.float64, values.shape, elements=st.sampled_from([0.0, 0.5, 1.0, 3.0]))
    )
    h = Histogram(values, bins=10, range=(-5e5, 5e5), weights=weights)
    np.testing.assert_array_equal(h.counts, numpy_counts(values, h.edges, weights))
    assert_stats_match_numpy(h, values, weights)


def test_bool_values() -> None:
    values = np.array([True, False, True, True])
    h = Histogram(values, bins=2)
    np.testing.assert_array_equal(h.counts, [1, 3])
    np.testing.assert_array_equal(h.edges, [0, 0.5, 1])
    assert h.mean == 0.75


def test_float16_and_bfloat16_values_bin_as_their_float64_values() -> None:
    base = np.array([-2.5, -1.0, 0.0, 0.1, 1.0, 2.5, np.inf, np.nan])
    for dtype in (np.float16, ml_dtypes.bfloat16):
        values = base.astype(dtype)
        h = Histogram(values, bins=5)
        exact = values.astype(np.float64)
        np.testing.assert_array_equal(h.counts, numpy_counts(exact, h.edges))
        assert (h.count, h.nonfinite) == (6, 2)
        assert_stats_match_numpy(h, exact)


# --- NaN, infinities, empty ----------------------------------------------------------------------


def test_nan_and_inf_are_counted_not_binned() -> None:
    values = np.array([np.nan, 1.0, np.inf, 2.0, -np.inf, 3.0])
    h = Histogram(values, bins=2)
    np.testing.assert_array_equal(h.counts, [1, 2])
    assert (h.count, h.nonfinite, h.min, h.max, h.mean) == (3, 3, 1, 3, 2)


@pytest.mark.parametrize("values", [[], [np.nan] * 4, [np.inf, -np.inf]], ids=str)
def test_empty_and_all_nonfinite_give_zero_counts(values) -> None:
    h = Histogram(np.array(values, dtype=np.float32), bins=4)
    np.testing.assert_array_equal(h.counts, np.zeros(4))
    np.testing.assert_array_equal(h.edges, np.linspace(0, 1, 5))
    assert (h.count, h.nonfinite) == (0, len(values))
    assert all(math.isnan(v) for v in (h.min, h.max, h.mean, h.std))


def test_a_constant_is_widened_as_numpy_does() -> None:
    h = Histogram(np.full(5, 3.0), bins=4)
    counts, edges = np.histogram(np.full(5, 3.0), bins=4)
    np.testing.assert_array_equal(h.edges, edges)
    np.testing.assert_array_equal(h.counts, counts)
    assert h.std == 0


# --- the object ---------------------------------------------------------------------------------


def test_arrays_are_read_only_and_to_numpy_gives_copies() -> None:
    h = Histogram([1, 2, 3], bins=2)
    with pytest.raises(ValueError):
        h.counts[0] = 5
    counts, edges = h.to_numpy()
    counts[0] = 5
    assert h.counts[0] == 1
    np.testing.assert_array_equal(edges, h.edges)
    assert h.stats == {
        "count": 3,
        "min": 1,
        "max": 3,
        "mean": 2,
        "std": pytest.approx(math.sqrt(2 / 3)),
        "nonfinite": 0,
        "below": 0,
        "above": 0,
    }


def test_repr_says_what_it_holds() -> None:
    h = Histogram([0.0, 1.0, 5.0, np.nan], bins=4, range=(0, 2))
    assert repr(h) == (
        "Histogram(4 bins from 0 to 2, count=3, mean=2, std=2.16025, nonfinite=1, above=1)"
    )


def test_np_histogram_is_wrapped_and_validated() -> None:
    counts, edges = np.histogram(np.arange(10), bins=3)
    h = Histogram(np_histogram=(counts, edges))
    np.testing.assert_array_equal(h.counts, counts)
    np.testing.assert_array_equal(h.edges, edges)
    assert h.count == 10 and math.isnan(h.mean)
    with pytest.raises(ValueError, match="np_histogram must be .* 3 edges for 3 counts"):
        Histogram(np_histogram=(counts, edges[:3]))
    with pytest.raises(ValueError, match="bins must be .* increasing edges"):
        Histogram(np_histogram=(counts, edges[::-1]))
    with pytest.raises(ValueError, match="counts must be finite and not negative"):
        Histogram(np_histogram=([1.0, -1.0, 2.0], edges))
    with pytest.raises(ValueError, match=r"np_histogram must be \(counts, edges\)"):
        Histogram(np_histogram=counts)
    with pytest.raises(TypeError, match="without values"):
        Histogram([1.0], np_histogram=(counts, edges))


# --- bad arguments -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bins", "shown"),
    [
        (0, "0"),
        (513, "513"),
        (-3, "-3"),
        (True, "True"),
        (2.5, "2.5"),
        ([1.0], "[1.0]"),
        ([0, 2, 1], "[0, 2, 1]"),
        ([0, 1, 1], "[0, 1, 1]"),
        ([0, np.inf], "[0, inf]"),
        ("ten", "'ten'"),
        (list(range(514)), "[0, 1, 2, 3, 4, 5, ...]"),
    ],
)
def test_bad_bins_are_named(bins, shown) -> None:
    message = f"bins must be an int from 1 to 512 or increasing edges, got {shown}"
    with pytest.raises(ValueError) as error:
        Histogram([1.0, 2.0], bins=bins)
    assert str(error.value) == message


@pytest.mark.parametrize(
    "range_", [(1, 1), (2, 1), (0, np.inf), (np.nan, 1), (1,), "ab", 5, (-1e308, 1e308)], ids=str
)
def test_bad_range_is_named(range_) -> None:
    with pytest.raises(ValueError, match=r"range must be \(lo, hi\) with lo < hi, finite, got"):
        Histogram([1.0], range=range_)


def test_range_with_edges_is_refused() -> None:
    with pytest.raises(ValueError, match="range cannot be given with bin edges"):
        Histogram([1.0], bins=[0, 1], range=(0, 1))


def test_weights_of_another_shape_are_named() -> None:
    with pytest.raises(ValueError) as error:
        Histogram([1.0, 2.0, 3.0, 4.0], weights=[1.0, 2.0, 3.0])
    assert str(error.value) == "weights must have the same shape as values, got (3,) and (4,)"


@pytest.mark.parametrize("weights", [[1.0, np.nan], [1.0, -1.0], [np.inf, 1.0]], ids=str)
def test_unusable_weights_are_refused(weights) -> None:
    with pytest.raises(ValueError, match="weights must be finite and not negative"):
        Histogram([1.0, 2.0], weights=weights)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ("abc", "values must be numbers (a list, a NumPy array, a tensor, or anything"),
        (np.array(["abc"]), "values must have a numeric or bool dtype, got <U3"),
        (["a", 1], "values must have a numeric or bool dtype, got <U21"),
        ([[1, 2], [3]], "values must be numbers, got a ragged or mixed sequence"),
        (np.array([1 + 2j]), "values must have a numeric or bool dtype, got complex128"),
        (np.array([object()]), "values must have a numeric or bool dtype, got object"),
        ({1: 2}, "values must be numbers (a list, a NumPy array, a tensor, or anything"),
        (None, "Histogram needs values, or np_histogram=(counts, edges)"),
    ],
    ids=["str", "str-array", "mixed", "ragged", "complex", "object", "dict", "none"],
)
def test_values_that_are_not_numbers_are_a_type_error(values, message) -> None:
    with pytest.raises(TypeError) as error:
        Histogram(values)
    assert str(error.value).startswith(message)


def test_weights_that_are_not_numbers_are_named() -> None:
    with pytest.raises(TypeError, match="weights must have a numeric or bool dtype"):
        Histogram([1.0], weights=["x"])


def test_core_rejects_what_the_python_layer_would() -> None:
    with pytest.raises(TypeError, match="values must be a NumPy array of a numeric"):
        _core.histogram(np.array(["a"]), bins=3)
    with pytest.raises(ValueError, match="bins must be from 1 to"):
        _core.histogram(np.zeros(3), bins=0)
    with pytest.raises(ValueError, match="edges must increase"):
        _core.histogram(np.zeros(3), edges=np.array([0.0, 0.0]))
    with pytest.raises(ValueError, match="same shape as values"):
        _core.histogram(np.zeros(3), bins=2, weights=np.ones(2))
    with pytest.raises(TypeError, match="needs the bits as a uint16 array"):
        _core.histogram(np.zeros(3), bins=2, encoding="float16")
    with pytest.raises(TypeError, match="give either bins or edges"):
        _core.histogram(np.zeros(3))


def test_core_reads_strided_arrays_in_their_logical_order() -> None:
    values = np.arange(12.0).reshape(3, 4)
    weights = np.asfortranarray(np.arange(12.0).reshape(3, 4))
    binned = _core.histogram(values.T, bins=3, weights=weights.T)
    edges, counts = binned.edges, binned.counts
    np.testing.assert_array_equal(counts, np.histogram(values, bins=edges, weights=values)[0])
    binned = _core.histogram(values[:, ::2], bins=2)
    edges, counts = binned.edges, binned.counts
    np.testing.assert_array_equal(counts, np.histogram(values[:, ::2], bins=2)[0])


# --- inputs: snapshots, sequences, array-likes ---------------------------------------------------


def test_changing_values_after_prepare_values_does_not_change_the_histogram() -> None:
    values = np.arange(100.0)
    weights = np.ones(100)
    prepared = prepare_values(values)
    prepared_weights = prepare_weights(weights, prepared)
    values[:] = -1.0
    weights[:] = 7.0
    h = bin_prepared(prepared, bins_or_edges(4), None, prepared_weights)
    np.testing.assert_array_equal(h.counts, [25, 25, 25, 25])
    assert h.min == 0


def test_changing_a_tensor_after_prepare_values_does_not_change_the_histogram() -> None:
    tensor = torch.arange(100.0)
    prepared = prepare_values(tensor)
    tensor.mul_(-1)
    h = bin_prepared(prepared, bins_or_edges(4))
    np.testing.assert_array_equal(h.counts, [25, 25, 25, 25])


def test_lists_scalars_byte_orders_and_array_likes() -> None:
    class Wrapped:
        def __init__(self, array: np.ndarray) -> None:
            self.array = array

        def __array__(self, dtype=None, copy=None):
            return self.array

    class OnlyDLPack:
        def __init__(self, array: np.ndarray) -> None:
            self.array = array

        def __dlpack__(self, **kwargs):
            return self.array.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.array.__dlpack_device__()

    expect = Histogram(np.array([1.0, 2.0, 2.0, 3.0]), bins=3)
    backing = np.array([1.0, 2.0, 2.0, 3.0])
    for values in (
        [1, 2, 2, 3],
        (1.0, 2.0, 2.0, 3.0),
        np.array([1, 2, 2, 3], dtype=">f8"),
        np.array([1, 2, 2, 3], dtype=np.longdouble),
        Wrapped(backing),
        OnlyDLPack(backing),
        np.array([[1.0, 2.0], [2.0, 3.0]]).T,
    ):
        h = Histogram(values, bins=3)
        np.testing.assert_array_equal(h.counts, expect.counts)
        np.testing.assert_array_equal(h.edges, expect.edges)
    prepared = prepare_values(Wrapped(backing))
    backing[0] = 100.0
    assert prepared[0] == 1.0
    assert Histogram(2.5, bins=1).count == 1


# --- PyTorch -------------------------------------------------------------------------------------


TORCH_DTYPES = [
    torch.float64,
    torch.float32,
    torch.float16,
    torch.bfloat16,
    torch.int8,
    torch.int32,
    torch.int64,
    torch.uint8,
    torch.bool,
]


@pytest.mark.parametrize("dtype", TORCH_DTYPES, ids=str)
def test_cpu_tensors_of_every_dtype_equal_numpy(dtype) -> None:
    source = torch.randn(3001, generator=torch.Generator().manual_seed(5)) * 50
    tensor = source.to(dtype)
    if dtype.is_floating_point:
        tensor[::100] = float("nan")
    exact = tensor.to(torch.float64).numpy()
    h = Histogram(tensor, bins=30)
    np.testing.assert_array_equal(h.counts, numpy_counts(exact, h.edges))
    assert_stats_match_numpy(h, exact)


def test_tensors_that_require_grad_need_no_detach() -> None:
    weight = torch.nn.Linear(20, 30).weight
    assert weight.requires_grad
    h = Histogram(weight, bins=10)
    exact = weight.detach().double().numpy()
    np.testing.assert_array_equal(h.counts, np.histogram(exact, bins=h.edges)[0])
    bf16 = weight.to(torch.bfloat16)
    assert bf16.requires_grad
    assert Histogram(bf16, bins=10).count == 600


def test_complex_tensors_are_refused() -> None:
    with pytest.raises(TypeError, match="values must be real numbers, got a torch.complex64"):
        Histogram(torch.zeros(3, dtype=torch.complex64))


@pytest.mark.parametrize("dtype", TORCH_DTYPES, ids=str)
def test_the_device_path_equals_the_numpy_path(dtype) -> None:
    source = torch.randn(4000, generator=torch.Generator().manual_seed(6)) * 20
    tensor = source.to(dtype).reshape(40, 100)
    if dtype.is_floating_point:
        tensor[0, :7] = float("nan")
        tensor[1, :3] = float("inf")
    for bins, range_ in ((bins_or_edges(17), None), (bins_or_edges(9), (-5.0, 5.5))):
        on_device = _bin_with_torch(tensor, bins, range_)
        in_rust = bin_prepared(prepare_values(tensor), bins, range_)
        np.testing.assert_array_equal(on_device.edges, in_rust.edges)
        np.testing.assert_array_equal(on_device.counts, in_rust.counts)
        for name, value in in_rust.stats.items():
            assert on_device.stats[name] == pytest.approx(value, rel=1e-12, abs=1e-12, nan_ok=True)


def test_the_device_path_with_edges_weights_and_edge_cases() -> None:
    values = torch.tensor([-1.0, 0.0, 0.5, 1.0, 2.0, float("nan"), 1.0, 7.0])
    weights = torch.tensor([1.0, 2.0, 0.0, 4.0, 0.5, 3.0, 1.0, 2.0])
    edges = bins_or_edges([-1.0, 0.0, 0.5, 2.0])
    on_device = _bin_with_torch(values, edges, None, weights)
    in_rust = bin_prepared(values.numpy(), edges, None, weights.numpy())
    np.testing.assert_array_equal(on_device.counts, in_rust.counts)
    np.testing.assert_array_equal(on_device.counts, [1, 2, 5.5])
    assert on_device.stats == pytest.approx(in_rust.stats, rel=1e-12)
    assert (on_device.nonfinite, on_device.above, on_device.max) == (3, 2, 7)
    for empty in (torch.zeros(0), torch.full((5,), float("nan")), torch.full((3,), 2.0)):
        a, b = (
            _bin_with_torch(empty, bins_or_edges(4)),
            bin_prepared(empty.numpy(), bins_or_edges(4)),
        )
        np.testing.assert_array_equal(a.edges, b.edges)
        np.testing.assert_array_equal(a.counts, b.counts)
        assert a.stats == pytest.approx(b.stats, nan_ok=True)


def test_numpy_weights_with_tensor_values_and_the_reverse() -> None:
    values = torch.arange(6.0)
    weights = np.array([1.0, 0.0, 2.0, 0.0, 3.0, 1.0])
    a = Histogram(values, bins=2, weights=weights)
    b = Histogram(values.numpy(), bins=2, weights=torch.from_numpy(weights))
    np.testing.assert_array_equal(a.counts, [3, 4])
    np.testing.assert_array_equal(b.counts, a.counts)
    with pytest.raises(ValueError, match="weights must be finite and not negative"):
        Histogram(values, bins=2, weights=-torch.ones(6))


def test_check_range_returns_floats() -> None:
    assert value_range(np.array([-1, 2]), 5) == (-1.0, 2.0)
    assert value_range(None, bins_or_edges([0, 1])) is None


# --- the core's edge rules, asked rather than repeated -------------------------------------------


def test_the_bin_limit_is_the_cores() -> None:
    assert MAX_BINS == _core.MAX_BINS == 512
    assert bins_or_edges(_core.MAX_BINS) == _core.MAX_BINS
    with pytest.raises(ValueError, match=f"from 1 to {_core.MAX_BINS} or increasing edges"):
        bins_or_edges(_core.MAX_BINS + 1)
    with pytest.raises(ValueError, match="bins must be from 1 to 512, got 0"):
        _core.check_bin_count(0)
    with pytest.raises(ValueError, match="edges must increase, got 1 after 1 at index 2"):
        _core.check_edges(np.array([0.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match="range must be"):
        _core.check_range(1.0, 1.0)


@given(st.floats(-1e300, 1e300), st.floats(0, 1e300), st.integers(1, MAX_BINS))
@example(0.0, 5e-324, 3)  # a step that underflows to 0: numpy's special case
def test_uniform_edges_are_numpys_linspace(lo: float, width: float, bins: int) -> None:
    hi = lo + width
    if not lo < hi:
        return
    edges = _core.uniform_edges(lo, hi, bins)
    np.testing.assert_array_equal(edges, np.linspace(lo, hi, bins + 1))


def test_default_range_is_numpys_and_widens_large_constants() -> None:
    assert _core.default_range(-2.0, 3.0) == (-2.0, 3.0)
    assert _core.default_range(2.0, 2.0) == (1.5, 2.5)
    assert _core.default_range(math.inf, -math.inf) == (0.0, 1.0)
    lo, hi = _core.default_range(1e20, 1e20)
    assert lo < 1e20 < hi and np.all(np.diff(np.linspace(lo, hi, MAX_BINS + 1)) > 0)


@pytest.mark.parametrize("value", [1e20, -3e300, 7.0])
def test_a_large_constant_gets_the_same_bins_on_device_and_in_rust(value: float) -> None:
    tensor = torch.full((10,), value, dtype=torch.float64)
    on_device = _bin_with_torch(tensor, bins_or_edges(30))
    in_rust = bin_prepared(tensor.numpy(), bins_or_edges(30))
    np.testing.assert_array_equal(on_device.edges, in_rust.edges)
    assert np.all(np.diff(in_rust.edges) > 0)
    assert in_rust.counts.sum() == on_device.counts.sum() == 10
