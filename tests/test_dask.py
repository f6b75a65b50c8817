"""histoscope.dask: tidy rows read by two Dask worker processes equal the local read."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import distributed
import numpy as np
import pandas as pd
import pytest

import histoscope
import histoscope.dask
from histoscope.read.tidy import to_pandas

KEY = ["run", "tag", "step"]
BUCKETS = ["left", "right", "count"]


@pytest.fixture(scope="module")
def client() -> Iterator[distributed.Client]:
    with (
        distributed.LocalCluster(
            n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


def _local(logdirs: Path | list[Path], **selection: list[str]) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", histoscope.DamagedFileWarning)
        return to_pandas(histoscope.load_histograms(logdirs, **selection))


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values(KEY, ignore_index=True)


def _assert_same_rows(got: pd.DataFrame, want: pd.DataFrame) -> None:
    """Equal values, column for column. The Dask frame keeps bucket lists in Arrow and
    text in Dask's string dtype (its ``dataframe.convert-string`` setting)."""
    assert list(got.columns) == list(want.columns)
    for column in BUCKETS:
        assert isinstance(got[column].dtype, pd.ArrowDtype)
        assert len(got[column]) == len(want[column])
        for a, b in zip(got[column], want[column]):
            np.testing.assert_array_equal(np.asarray(a, dtype=np.float64), b)
    text = {"run": got["run"].dtype, "tag": got["tag"].dtype}
    pd.testing.assert_frame_equal(
        got.drop(columns=BUCKETS), want.drop(columns=BUCKETS).astype(text)
    )


def test_two_worker_processes_read_fixtures_equal_to_the_local_read(
    fixtures: Path, client: distributed.Client
) -> None:
    logdirs = [fixtures / name for name in ("restart", "torch_writer", "tf2_summary", "corrupt")]
    frame = histoscope.dask.load_histograms(logdirs)
    files = sum(1 for d in logdirs for f in d.rglob("*tfevents*") if f.is_file())
    assert frame.npartitions == files
    got = frame.compute()
    want = _local(logdirs)
    assert len(got) == len(want) > 0
    _assert_same_rows(_sorted(got), _sorted(want))
    worked = client.run(lambda: __import__("os").getpid())
    assert len(set(worked.values())) == 2


def test_restarts_across_files_are_applied_per_partition(
    fixtures: Path, client: distributed.Client
) -> None:
    # train/ holds two files whose steps 10-19 overlap: the second file's copies win.
    frame = histoscope.dask.load_histograms(fixtures / "restart", runs=["train"])
    assert frame.npartitions == 2
    parts = [part.compute() for part in frame.partitions]
    assert parts[0]["step"].tolist() == list(range(10))
    assert parts[1]["step"].tolist() == list(range(10, 30))
    want = _local(fixtures / "restart", runs=["train"])
    _assert_same_rows(pd.concat(parts, ignore_index=True), _sorted(want))


def test_selection_and_empty_result(fixtures: Path, client: distributed.Client) -> None:
    frame = histoscope.dask.load_histograms(
        fixtures / "torch_writer", keys=["linear/bias"], runs=["run_b"]
    )
    got = frame.compute()
    assert set(got["tag"]) == {"linear/bias"} and set(got["run"]) == {"run_b"}
    none = histoscope.dask.load_histograms(fixtures / "scalars_only").compute()
    assert len(none) == 0 and list(none.columns) == list(got.columns)
