"""Several log directories at once: lists and globs, runs named <logdir>/<run>, no mix-ups."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

import histoscope
from histoscope import HistoscopeWarning


def _assert_same_series(got: histoscope.HistogramSeries, want: histoscope.HistogramSeries) -> None:
    np.testing.assert_array_equal(got.steps, want.steps)
    np.testing.assert_array_equal(got.wall_times, want.wall_times)
    assert len(got.buckets) == len(want.buckets)
    for a, b in zip(got.buckets, want.buckets):
        np.testing.assert_array_equal(a, b)


@pytest.fixture
def swapped(fixtures: Path, tmp_path: Path) -> tuple[Path, Path]:
    """Two log directories with the same run names holding different data."""
    same, other = tmp_path / "same", tmp_path / "other"
    shutil.copytree(fixtures / "torch_writer", same)
    shutil.copytree(fixtures / "torch_writer" / "run_a", other / "run_b")
    shutil.copytree(fixtures / "torch_writer" / "run_b", other / "run_a")
    return same, other


def test_runs_of_several_logdirs_never_merge(fixtures: Path, swapped: tuple[Path, Path]) -> None:
    same, other = swapped
    data = histoscope.load_histograms([same, other])
    alone = histoscope.load_histograms(fixtures / "torch_writer")
    assert list(data) == list(alone)
    for tag, by_run in data.items():
        assert list(by_run) == [
            f"{d}/{r}" for d in sorted([str(same), str(other)]) for r in ("run_a", "run_b")
        ]
        _assert_same_series(by_run[f"{same}/run_a"], alone[tag]["run_a"])
        _assert_same_series(by_run[f"{same}/run_b"], alone[tag]["run_b"])
        _assert_same_series(by_run[f"{other}/run_a"], alone[tag]["run_b"])
        _assert_same_series(by_run[f"{other}/run_b"], alone[tag]["run_a"])
        assert by_run[f"{other}/run_a"].run == f"{other}/run_a"


def test_a_glob_pattern_reads_each_match_as_a_logdir(fixtures: Path) -> None:
    data = histoscope.load_histograms(str(fixtures / "restart" / "*"))
    # Each match is a run directory itself: its root run is named by the directory.
    runs = [f"{fixtures}/restart/train", f"{fixtures}/restart/with_purge_step"]
    assert list(data["hist/normal"]) == runs
    alone = histoscope.load_histograms(fixtures / "restart")["hist/normal"]
    _assert_same_series(data["hist/normal"][runs[0]], alone["train"])
    # The restart across train/'s two files is applied as in one log directory.
    assert data["hist/normal"][runs[0]].steps.tolist() == list(range(30))


def test_one_logdir_in_a_list_is_named_like_several(fixtures: Path) -> None:
    data = histoscope.load_histograms([fixtures / "keras_fit"])
    assert set(data["sequential/out/bias/histogram"]) == {f"{fixtures}/keras_fit/fit/train"}
    plain = histoscope.load_histograms(fixtures / "keras_fit")
    assert set(plain["sequential/out/bias/histogram"]) == {"fit/train"}


def test_runs_select_by_full_name_and_missing_ones_warn(fixtures: Path) -> None:
    logdirs = [fixtures / "torch_writer", fixtures / "restart"]
    wanted = [f"{fixtures}/restart/train", f"{fixtures}/torch_writer/run_b"]
    data = histoscope.load_histograms(logdirs, runs=wanted, keys=["hist/normal", "linear/bias"])
    assert list(data) == ["hist/normal", "linear/bias"]
    assert list(data["hist/normal"]) == [wanted[0]] and list(data["linear/bias"]) == [wanted[1]]
    with pytest.warns(HistoscopeWarning, match="run 'run_b' not found in"):
        histoscope.load_histograms(logdirs, runs=["run_b"])


def test_charts_of_several_logdirs(fixtures: Path) -> None:
    charts = histoscope.read_tensorboard_histograms(
        [fixtures / "tf2_summary", fixtures / "many_steps"], tags=["hist/drift", "weights/dense"]
    )
    assert [(c.tag, c.run) for c in charts] == [
        ("hist/drift", f"{fixtures}/many_steps/train"),
        ("weights/dense", f"{fixtures}/tf2_summary/train"),
        ("weights/dense", f"{fixtures}/tf2_summary/validation"),
    ]
    (alone,) = histoscope.read_tensorboard_histograms(fixtures / "many_steps")
    np.testing.assert_array_equal(charts[0].counts, alone.counts)


def test_the_same_logdir_twice_is_read_once(fixtures: Path) -> None:
    data = histoscope.load_histograms([fixtures / "nested", str(fixtures / "nested") + "/"])
    assert sorted(data["hist/values"]) == [f"{fixtures}/nested/{r}" for r in ("a", "a/b/c", "x/y")]


def test_bad_logdir_lists_are_refused(fixtures: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="overlap.*inside"):
        histoscope.load_histograms([fixtures / "nested", fixtures / "nested" / "a"])
    with pytest.raises(FileNotFoundError, match="no log directory matches"):
        histoscope.load_histograms(str(tmp_path / "nothing*"))
    with pytest.raises(FileNotFoundError, match="does not exist"):
        histoscope.load_histograms([fixtures / "nested", tmp_path / "nope"])
    with pytest.raises(ValueError, match="at least one"):
        histoscope.load_histograms([])
    with pytest.raises(TypeError, match="got int"):
        histoscope.load_histograms([fixtures / "nested", 3])
    with pytest.raises(TypeError, match="or a list of them, got int"):
        histoscope.load_histograms(3)


def test_many_logdirs_read_in_one_call(fixtures: Path, tmp_path: Path) -> None:
    for i in range(40):
        shutil.copytree(fixtures / "nested" / "a" / "b" / "c", tmp_path / f"sweep{i:02d}")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        data = histoscope.load_histograms(str(tmp_path / "sweep*"))
    by_run = data["hist/values"]
    assert list(by_run) == [f"{tmp_path}/sweep{i:02d}" for i in range(40)]
    assert all(s.steps.tolist() == list(range(5)) for s in by_run.values())
