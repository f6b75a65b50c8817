"""Tidy tables: one row per (run, tag, step), equal to the HistogramSeries they come from."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import histoscope
from histoscope.read import tidy

STATS = dict(zip(tidy.STAT_COLUMNS, histoscope._core.STAT_NAMES))


def _assert_row_matches(row: dict, series: histoscope.HistogramSeries, i: int) -> None:
    assert (row["run"], row["tag"], row["step"]) == (series.run, series.key, series.steps[i])
    assert row["wall_time"] == series.wall_times[i]
    for j, column in enumerate(("left", "right", "count")):
        np.testing.assert_array_equal(np.asarray(row[column], np.float64), series.buckets[i][:, j])
    for column, name in STATS.items():
        np.testing.assert_array_equal(row[column], series.stats[name][i])


@pytest.mark.parametrize("name", ["torch_writer", "tf2_edge", "tf1_graph", "nested"])
def test_arrow_rows_are_the_series_steps_in_order(fixtures: Path, name: str) -> None:
    data = histoscope.load_histograms(fixtures / name)
    table = tidy.to_arrow(data)
    assert table.schema == tidy.schema() and table.column_names == list(tidy.COLUMNS)
    rows = table.to_pylist()
    expected = [(s, i) for by_run in data.values() for s in by_run.values() for i in range(len(s))]
    assert len(rows) == len(expected) > 0
    for row, (series, i) in zip(rows, expected):
        _assert_row_matches(row, series, i)


def test_pandas_rows_and_series_methods(fixtures: Path) -> None:
    data = histoscope.load_histograms(fixtures / "tf2_summary")
    series = data["weights/dense"]["validation"]
    frame = series.to_pandas()
    assert len(frame) == len(series) == 20
    assert frame["step"].dtype == np.int64 and frame["wall_time"].dtype == np.float64
    for i, row in enumerate(frame.to_dict("records")):
        assert isinstance(row["count"], np.ndarray)
        _assert_row_matches(row, series, i)
    pd.testing.assert_frame_equal(series.to_arrow().to_pandas(), tidy.to_pandas([series]))
    whole = tidy.to_pandas(data)
    assert len(whole) == sum(len(s) for by_run in data.values() for s in by_run.values())
    assert whole.groupby(["tag", "run"]).size().to_dict() == {
        (tag, run): len(s) for tag, by_run in data.items() for run, s in by_run.items()
    }


def test_statistics_of_legacy_histograms_fill_their_columns(fixtures: Path) -> None:
    series = histoscope.load_histograms(fixtures / "torch_writer")["linear/bias"]["run_a"]
    frame = series.to_pandas()
    np.testing.assert_array_equal(frame["num"], [b[:, 2].sum() for b in series.buckets])
    np.testing.assert_array_equal(frame["min"], [b[0, 0] for b in series.buckets])
    assert frame["nonfinite"].isna().all()


def test_nothing_gives_an_empty_table_of_the_same_schema() -> None:
    table = tidy.to_arrow({})
    assert table.num_rows == 0 and table.schema == tidy.schema()
    assert list(tidy.to_pandas([]).columns) == list(tidy.COLUMNS)


def test_wrong_input_is_named() -> None:
    with pytest.raises(TypeError, match="HistogramSeries"):
        tidy.to_arrow([1, 2])
    with pytest.raises(TypeError, match="tag 'w'"):
        tidy.to_arrow({"w": [1]})


def test_missing_pyarrow_names_the_extra(fixtures: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    series = histoscope.load_histograms(fixtures / "keras_fit")
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(ImportError, match=r"pip install 'histoscope\[arrow\]'"):
        tidy.to_arrow(series)
