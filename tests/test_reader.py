"""The reading API: arguments, selection, order, warnings and charts."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

import histoscope
from histoscope import DamagedFileWarning, HistoscopeWarning, TensorBoardChart, _core


def test_charts_one_per_tag_and_run_sorted(fixtures: Path) -> None:
    charts = histoscope.read_tensorboard_histograms(fixtures / "tf2_summary")
    assert [(c.tag, c.run) for c in charts] == [
        ("activations/relu", "train"),
        ("activations/relu", "validation"),
        ("weights/dense", "train"),
        ("weights/dense", "validation"),
        ("weights/dense_buckets8", "train"),
        ("weights/dense_buckets8", "validation"),
    ]
    chart = charts[2]
    assert isinstance(chart, TensorBoardChart)
    assert chart.steps.dtype == np.int64 and chart.steps.tolist() == list(range(20))
    assert chart.edges.shape == (31,) and chart.counts.shape == (20, 30)
    assert np.all(np.diff(chart.edges) > 0)
    np.testing.assert_allclose(chart.counts.sum(axis=1), 512)


def test_tags_and_runs_select_and_order(fixtures: Path) -> None:
    charts = histoscope.read_tensorboard_histograms(
        fixtures / "tf2_summary",
        tags=["weights/dense", "activations/relu"],
        runs=["validation", "train"],
    )
    assert [(c.tag, c.run) for c in charts] == [
        ("weights/dense", "validation"),
        ("weights/dense", "train"),
        ("activations/relu", "validation"),
        ("activations/relu", "train"),
    ]
    data = histoscope.load_histograms(
        fixtures / "tf2_summary", keys=["weights/dense"], runs=["train"]
    )
    assert list(data) == ["weights/dense"] and list(data["weights/dense"]) == ["train"]


def _overlap_counts(steps: list[np.ndarray], edges: np.ndarray) -> np.ndarray:
    """The rebinning rule written plainly: each bucket's count shared among ``edges``' bins
    in proportion to their overlap (its laws are held in rust/bins/rebin.rs)."""
    out = np.zeros((len(steps), len(edges) - 1))
    for row, buckets in zip(out, steps):
        for left, right, count in buckets[buckets[:, 2] != 0]:
            if left == right:
                row[min(np.searchsorted(edges, left, side="right") - 1, len(row) - 1)] += count
                continue
            overlap = np.minimum(right, edges[1:]) - np.maximum(left, edges[:-1])
            row += count * (np.clip(overlap, 0, None) / (right - left))
    return out


def test_chart_counts_equal_rebinned_stored_buckets(fixtures: Path) -> None:
    logdir = fixtures / "torch_writer"
    series = histoscope.load_histograms(logdir, keys=["linear/weight"])["linear/weight"]["run_a"]
    (chart,) = histoscope.read_tensorboard_histograms(
        logdir, tags=["linear/weight"], runs=["run_a"], bins=17, max_steps=None
    )
    stored = np.concatenate(series.buckets)
    stored = stored[stored[:, 2] != 0]
    assert (chart.edges[0], chart.edges[-1]) == (stored[:, 0].min(), stored[:, 1].max())
    assert chart.edges.shape == (18,) and np.all(np.diff(chart.edges) > 0)
    np.testing.assert_allclose(
        chart.counts, _overlap_counts(series.buckets, chart.edges), rtol=1e-12, atol=1e-12
    )
    np.testing.assert_allclose(
        chart.counts.sum(axis=1), [b[:, 2].sum() for b in series.buckets], rtol=1e-12
    )


def test_steps_are_thinned_evenly_keeping_first_and_last(fixtures: Path) -> None:
    logdir = fixtures / "many_steps"
    (full,) = histoscope.read_tensorboard_histograms(logdir, max_steps=None)
    (thin,) = histoscope.read_tensorboard_histograms(logdir)
    assert len(full.steps) == 1000 and len(thin.steps) == 51
    assert thin.steps[0] == 0 and thin.steps[-1] == 999
    gaps = np.diff(thin.steps)
    assert gaps.max() - gaps.min() <= 1
    (two,) = histoscope.read_tensorboard_histograms(logdir, max_steps=2)
    assert two.steps.tolist() == [0, 999]


def test_chart_is_immutable_and_readable(fixtures: Path) -> None:
    chart = histoscope.read_tensorboard_histograms(fixtures / "keras_fit")[0]
    with pytest.raises(AttributeError):
        chart.tag = "x"  # type: ignore[misc]
    with pytest.raises(ValueError):
        chart.counts[0, 0] = 1
    assert repr(chart).startswith("TensorBoardChart(tag='sequential/hidden/bias/histogram'")
    assert "run='fit/train'" in repr(chart) and "steps 0..2" in repr(chart)


def test_series_arrays(fixtures: Path) -> None:
    series = histoscope.load_histograms(fixtures / "tensorboardx")["tbx/uniform_bins10"]["run"]
    assert series.steps.dtype == np.int64 and series.wall_times.dtype == np.float64
    assert all(b.dtype == np.float64 and b.ndim == 2 and b.shape[1] == 3 for b in series.buckets)
    assert len(series) == len(series.buckets) == 15
    with pytest.raises(ValueError):
        series.buckets[0][0, 0] = 1.0


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"bins": 0}, ValueError, "bins must be an int >= 1, got 0"),
        ({"bins": 2.5}, ValueError, "bins must be an int >= 1"),
        ({"bins": "30"}, TypeError, "bins must be an int >= 1, got str"),
        ({"bins": True}, TypeError, "bins"),
        ({"max_steps": 1}, ValueError, "max_steps must be an int >= 2, got 1"),
        ({"max_steps": 10.0}, ValueError, "max_steps"),
        ({"tags": 3}, TypeError, "tags must be a list of strings"),
        ({"runs": [1]}, TypeError, "runs must hold strings"),
    ],
)
def test_bad_arguments(fixtures: Path, kwargs: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        histoscope.read_tensorboard_histograms(fixtures / "keras_fit", **kwargs)


def test_missing_logdir_and_bad_type(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        histoscope.read_tensorboard_histograms(tmp_path / "nope")
    with pytest.raises(TypeError, match="logdir must be a path"):
        histoscope.load_histograms(42)  # type: ignore[arg-type]


def test_a_path_to_one_events_file_reads_as_one_run(fixtures: Path) -> None:
    # As TensorBoard's EventAccumulator and tbparse take a file: one run, named ".".
    (path,) = (fixtures / "torch_writer" / "run_a").glob("*tfevents*")
    whole = histoscope.load_histograms(fixtures / "torch_writer", runs=["run_a"])
    alone = histoscope.load_histograms(path)
    assert alone.keys() == whole.keys()
    for tag, by_run in alone.items():
        assert list(by_run) == ["."]
        np.testing.assert_array_equal(by_run["."].flat_buckets, whole[tag]["run_a"].flat_buckets)
    charts = histoscope.read_tensorboard_histograms(str(path))
    assert {chart.run for chart in charts} == {"."}
    assert len(charts) == len(whole)


def test_a_file_that_is_no_events_file_reads_as_nothing(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_bytes(b"x" * 40)
    with pytest.warns(HistoscopeWarning) as caught:
        assert histoscope.load_histograms(tmp_path / "notes.txt") == {}
    assert [w.category for w in caught] == [DamagedFileWarning, HistoscopeWarning]
    assert "notes.txt: skipped" in str(caught[0].message)
    assert "no histograms found" in str(caught[1].message)


def test_absent_tags_runs_and_histograms_warn(fixtures: Path) -> None:
    with pytest.warns(HistoscopeWarning, match="histogram tag 'nope' not found"):
        assert histoscope.read_tensorboard_histograms(fixtures / "keras_fit", tags=["nope"]) == []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        histoscope.load_histograms(fixtures / "keras_fit", runs=["nope"])
    assert [str(w.message) for w in caught] == [
        f"run 'nope' not found in {str(fixtures / 'keras_fit')!r}"
    ]
    with pytest.warns(HistoscopeWarning, match="no histograms found"):
        assert histoscope.load_histograms(fixtures / "scalars_only") == {}


def test_nonfinite_buckets_are_left_out_with_a_warning(fixtures: Path) -> None:
    # TensorFlow wrote NaN edges and no counts: nothing is left to chart, and maidr
    # leaves such a chart out.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        charts = histoscope.read_tensorboard_histograms(
            fixtures / "tf2_edge", tags=["edge/with_nan"]
        )
    assert charts == []
    assert [str(w.message) for w in caught] == [
        "'edge/with_nan' (edge): 150 buckets with NaN or infinite edges or counts (holding 0"
        " values) were left out of the chart",
        "every histogram of 'edge/with_nan' in run 'edge' is empty (no buckets, or every count"
        " zero); it is left out",
    ]


def test_an_empty_histogram_is_left_out_as_maidr_does(fixtures: Path) -> None:
    with pytest.warns(HistoscopeWarning, match="'edge/empty' in run 'edge' is empty"):
        charts = histoscope.read_tensorboard_histograms(
            fixtures / "tf2_edge", tags=["edge/empty", "edge/constant"]
        )
    assert [chart.tag for chart in charts] == ["edge/constant"]


def test_the_bin_limit_is_the_cores_everywhere(fixtures: Path) -> None:
    histoscope.read_tensorboard_histograms(fixtures / "keras_fit", bins=_core.MAX_BINS)
    with pytest.raises(ValueError, match=f"bins must be from 1 to {_core.MAX_BINS}, got 513"):
        histoscope.read_tensorboard_histograms(fixtures / "keras_fit", bins=_core.MAX_BINS + 1)
    with pytest.raises(ValueError, match=f"from 1 to {_core.MAX_BINS} .*, got 513"):
        histoscope.Histogram(np.arange(4.0), bins=_core.MAX_BINS + 1)


def test_steps_are_thinned_to_maidrs_choice() -> None:
    # maidr keeps unique(round(linspace(0, n - 1, max_steps))): 0, 4 and 9 of 10 steps.
    assert _core.thin_indices(10, 3).tolist() == [0, 4, 9]
    for n in range(1, 80):
        for m in range(2, 60):
            want = np.unique(np.round(np.linspace(0, n - 1, m))).astype(np.int64)
            np.testing.assert_array_equal(_core.thin_indices(n, m), want)


def test_edge_histograms_chart_sensibly(fixtures: Path) -> None:
    charts = {
        c.tag: c
        for c in histoscope.read_tensorboard_histograms(
            fixtures / "tf2_edge", tags=["edge/constant", "edge/huge_1e30"]
        )
    }
    constant = charts["edge/constant"]
    np.testing.assert_array_equal(constant.counts.sum(axis=1), 100)
    assert constant.edges[0] == 1.5 and constant.edges[-1] == 5.5  # the values of steps 0 and 4
    assert np.isfinite(charts["edge/huge_1e30"].edges).all()


def test_damaged_copy_warns_once_per_file(fixtures: Path, tmp_path: Path) -> None:
    shutil.copytree(fixtures / "corrupt" / "flipped", tmp_path / "run")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        histoscope.read_tensorboard_histograms(tmp_path)
    damaged = [w for w in caught if issubclass(w.category, DamagedFileWarning)]
    assert len(damaged) == 1 and "bytes 3852-4224" in str(damaged[0].message)
    assert damaged[0].filename == __file__  # points at the caller's line


def test_pathlike_and_str_agree(fixtures: Path) -> None:
    a = histoscope.read_tensorboard_histograms(str(fixtures / "nested"))
    b = histoscope.read_tensorboard_histograms(fixtures / "nested")
    assert a == b


def test_the_cores_io_failures_are_the_oserrors_python_gives(tmp_path: Path) -> None:
    """rust/py/errors.rs: one map, by what the system said, naming the path."""
    from histoscope import _core

    with pytest.raises(FileNotFoundError, match="missing"):
        _core.read_scalars(str(tmp_path / "missing"))
    with pytest.raises(IsADirectoryError, match=str(tmp_path)):
        _core.read_scalars(str(tmp_path))  # not an empty events file
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError, match="file"):
        _core.read_scalars(str(tmp_path / "file" / "inside"))
    with pytest.raises(FileNotFoundError, match="missing"):
        histoscope.load_histograms(tmp_path / "missing")
