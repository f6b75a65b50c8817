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
        fixtures / "tf2_summary", tags=["weights/dense"], runs=["train"]
    )
    assert list(data) == ["weights/dense"] and list(data["weights/dense"]) == ["train"]


def test_chart_counts_equal_rebinned_stored_buckets(fixtures: Path) -> None:
    logdir = fixtures / "torch_writer"
    series = histoscope.load_histograms(logdir, tags=["linear/weight"])["linear/weight"]["run_a"]
    (chart,) = histoscope.read_tensorboard_histograms(
        logdir, tags=["linear/weight"], runs=["run_a"], bins=17, max_steps=None
    )
    edges, counts, _, _ = _core.rebin(series.buckets, 17)
    np.testing.assert_array_equal(chart.edges, edges)
    np.testing.assert_array_equal(chart.counts, counts)
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
    with pytest.raises(FileNotFoundError, match="not a directory"):
        histoscope.read_tensorboard_histograms(tmp_path / "nope")
    (tmp_path / "file").write_text("x")
    with pytest.raises(FileNotFoundError):
        histoscope.load_histograms(tmp_path / "file")
    with pytest.raises(TypeError, match="logdir must be a path"):
        histoscope.load_histograms(42)  # type: ignore[arg-type]


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
    with pytest.warns(HistoscopeWarning, match="150 buckets with NaN or infinite edges"):
        (chart,) = histoscope.read_tensorboard_histograms(
            fixtures / "tf2_edge", tags=["edge/with_nan"]
        )
    assert np.isfinite(chart.edges).all()
    assert chart.counts.sum() == 0


def test_edge_histograms_chart_sensibly(fixtures: Path) -> None:
    charts = {
        c.tag: c
        for c in histoscope.read_tensorboard_histograms(
            fixtures / "tf2_edge", tags=["edge/constant", "edge/empty", "edge/huge_1e30"]
        )
    }
    constant = charts["edge/constant"]
    np.testing.assert_array_equal(constant.counts.sum(axis=1), 100)
    assert constant.edges[0] == 1.5 and constant.edges[-1] == 5.5  # the values of steps 0 and 4
    assert charts["edge/empty"].counts.sum() == 0
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
