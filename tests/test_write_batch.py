"""Binned and written in one call: the core's batch (`watch`, `log_tree`) and `add_histogram`'s
values reach the file without a `Histogram` object, count for count what one would hold."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import histoscope as hs
from histoscope import _core
from histoscope.write.batched import bin_batch
from histoscope.write.histogram import batch_of, histograms_of


def _read(path, key):
    return hs.load_histograms(path)[key]["."]


def _rows(histogram: hs.Histogram) -> np.ndarray:
    """The (left, right, count) rows a reader gives for ``histogram``: every bin."""
    edges = histogram.edges
    return np.column_stack([edges[:-1], edges[1:], histogram.counts])


def test_a_batch_holds_what_each_tensor_binned_alone_gives():
    generator = torch.Generator().manual_seed(3)
    tensors = [
        torch.randn(1000, generator=generator),
        torch.randn(7, 5, generator=generator).to(torch.bfloat16),
        torch.randn(33, generator=generator).half(),
        torch.arange(-5, 9),
        torch.tensor([1.0, float("nan"), float("inf"), -2.0]),
        torch.empty(0),
    ]
    batch = bin_batch(tensors, 16)
    assert len(batch) == len(tensors)
    for i, tensor in enumerate(tensors):
        alone = hs.Histogram(tensor, bins=16)
        binned = batch.histogram(i)
        np.testing.assert_array_equal(binned.edges, alone.edges)
        np.testing.assert_array_equal(binned.counts, alone.counts)
        assert binned.stats.count == alone.count
        assert binned.stats.nonfinite == alone.nonfinite
    with pytest.raises(IndexError, match="histogram 6 of a batch of 6"):
        batch.histogram(6)


def test_a_batch_of_binned_histograms_and_its_join_keep_order_and_counts():
    first = batch_of([hs.Histogram([0.0, 1.0, 1.0], bins=2), _core.histogram(np.ones(4), bins=3)])
    second = bin_batch([torch.arange(5.0)], 5)
    joined = first.joined(second)
    assert [joined.histogram(i).stats.count for i in range(len(joined))] == [3.0, 4.0, 5.0]
    assert [h.count for h in histograms_of(joined)] == [3.0, 4.0, 5.0]
    with pytest.raises(ValueError, match="as many edges, counts and stats, got 1, 0 and 0"):
        _core.BinnedBatch.of([np.zeros(2)], [], [])


def test_log_batch_writes_each_key_as_its_histogram(tmp_path):
    values = [np.random.default_rng(0).normal(size=500), np.arange(12.0)]
    batch = _core.bin_batch(values, 8)
    with hs.init("batch", run_name="r", logdir=tmp_path) as run:
        run._log_batch(["w/a", "w/b"], batch, step=3)
        with pytest.raises(ValueError, match="2 keys for 1 histograms"):
            run._log_batch(["x", "y"], _core.bin_batch([np.ones(2)], 2), step=0)
    for key, array in zip(["w/a", "w/b"], values):
        series = _read(run.path, key)
        assert series.steps.tolist() == [3]
        np.testing.assert_array_equal(series.buckets[0], _rows(hs.Histogram(array, bins=8)))


def test_the_core_refuses_a_step_whose_tags_do_not_match_and_writes_nothing(tmp_path):
    writer = _core.EventFileWriter(str(tmp_path), 0.0, "host")
    before = (tmp_path / writer.path.name).stat().st_size
    with pytest.raises(ValueError, match="1 tags for 2 histograms"):
        writer.write_batch(["a"], 0, 0.0, _core.bin_batch([np.ones(2), np.ones(3)], 2))
    writer.close()
    assert (tmp_path / writer.path.name).stat().st_size == before


def test_watch_writes_what_the_histograms_of_its_tensors_hold(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    with hs.init("watch", run_name="r", logdir=tmp_path) as run:
        run.watch(model, log="all", every=1, bins=12)
        model(torch.randn(5, 6)).sum().backward()
        expected = {
            f"parameters/{n}": hs.Histogram(p, bins=12) for n, p in model.named_parameters()
        }
        expected |= {
            f"gradients/{n}": hs.Histogram(p.grad, bins=12) for n, p in model.named_parameters()
        }
    loaded = hs.load_histograms(run.path)
    assert sorted(loaded) == sorted(expected)
    for key, histogram in expected.items():
        series = loaded[key]["."]
        np.testing.assert_array_equal(series.buckets[0], _rows(histogram))
        assert series.stats["count"][0] == histogram.count


@settings(max_examples=40, deadline=None)
@given(
    values=hnp.arrays(
        np.float64,
        st.integers(1, 300),
        elements=st.floats(-1e6, 1e6) | st.sampled_from([np.nan, np.inf, -np.inf]),
    ),
    bins=st.integers(1, 40),
    weighted=st.booleans(),
)
# Protobuf leaves out a field equal to 0.0, which -0.0 is: the minimum lost its sign.
@example(values=np.array([-0.0]), bins=1, weighted=False)
def test_add_histogram_writes_what_a_histogram_holds(tmp_path_factory, values, bins, weighted):
    weights = np.linspace(0.5, 2.0, len(values)) if weighted else None
    expected = hs.Histogram(values, bins=bins, weights=weights)
    path = tmp_path_factory.mktemp("add")
    with hs.init("add", run_name="r", logdir=path) as run:
        run.add_histogram("h", values, step=0, bins=bins, weights=weights)
    series = _read(run.path, "h")
    np.testing.assert_array_equal(series.buckets[0], _rows(expected))
    for name in ("count", "nonfinite", "min", "max"):
        np.testing.assert_equal(series.stats[name][0], expected.stats[name])


def test_add_histogram_with_edges_a_range_and_half_floats(tmp_path):
    values = np.linspace(-2, 2, 101).astype(np.float16)
    edges = np.array([-1.0, 0.0, 0.5, 3.0])
    with hs.init("add", run_name="r", logdir=tmp_path) as run:
        run.add_histogram("edges", values, step=0, bins=edges)
        run.add_histogram("range", values, step=0, bins=4, range=(-1.0, 1.0))
    for key, expected in (
        ("edges", hs.Histogram(values, bins=edges)),
        ("range", hs.Histogram(values, bins=4, range=(-1.0, 1.0))),
    ):
        series = _read(run.path, key)
        np.testing.assert_array_equal(series.buckets[0], _rows(expected))
        assert series.stats["below"][0] == expected.below
        assert series.stats["above"][0] == expected.above


def test_tensors_on_several_devices_keep_their_order_in_the_batch(monkeypatch):
    """The device kernel runs on CPU tensors too: the non-CPU group is binned by it."""
    from histoscope.write import batched

    tensors = [torch.arange(10.0), torch.linspace(-1, 1, 50), torch.ones(3)]
    monkeypatch.setattr(batched, "_by_device", lambda _: {"cpu": [0, 2], "cuda:0": [1]})
    calls = []
    kernel = batched.bin_on_device
    monkeypatch.setattr(batched, "bin_on_device", lambda *a: calls.append(a) or kernel(*a))
    mixed = batched.bin_batch(tensors, 8)
    for i, tensor in enumerate(tensors):
        alone = hs.Histogram(tensor, bins=8)
        np.testing.assert_array_equal(mixed.histogram(i).counts, alone.counts)
        np.testing.assert_allclose(mixed.histogram(i).edges, alone.edges)
    assert [len(group) for group, _ in calls] == [1]


def test_a_snapshot_on_a_device_is_binned_there_and_written(monkeypatch, tmp_path):
    from histoscope.write import writer

    monkeypatch.setattr(writer, "device_type", lambda _: "cuda")
    calls = []
    kernel = writer.bin_on_device
    monkeypatch.setattr(writer, "bin_on_device", lambda *a: calls.append(a) or kernel(*a))
    values = torch.linspace(-3, 3, 301)
    with hs.init("device", run_name="r", logdir=tmp_path) as run:
        run.add_histogram("h", values, step=0, bins=6, range=(-2.0, 2.0))
    expected = hs.Histogram(values, bins=6, range=(-2.0, 2.0))
    series = _read(run.path, "h")
    np.testing.assert_array_equal(series.buckets[0][:, 2], expected.counts)
    assert series.stats["below"][0] == expected.below == 50
    assert len(calls) == 1  # binned by the device kernel, not the core
