"""load_histograms against TensorBoard's own reading of real log directories.

Each tests/fixtures/<name>.expected.json was written by TensorBoard's
EventMultiplexer and histograms plugin. Where histoscope differs on purpose
(restarts keep the newer writer, a damaged record is skipped rather than
ending the file) the test says so and asserts our behaviour.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import FIXTURE_NAMES as NAMES

import histoscope
from histoscope import DamagedFileWarning

NONFINITE = {"NaN": np.nan, "Infinity": np.inf, "-Infinity": -np.inf}


def _float(x):
    return NONFINITE.get(x, x) if isinstance(x, str) else x


def oracle(fixtures: Path, name: str) -> dict:
    return json.loads((fixtures / f"{name}.expected.json").read_text())


def buckets_of(entry: dict) -> np.ndarray:
    rows = [[_float(v) for v in row] for row in entry["buckets"]]
    return np.array(rows, dtype=np.float64).reshape(-1, 3)


def legacy_buckets(raw: dict) -> np.ndarray:
    """TensorBoard's data_compat rule, in float64, written out independently."""
    counts = np.array([_float(c) for c in raw["bucket"]], dtype=np.float64)
    limits = np.array([_float(c) for c in raw["bucket_limit"]], dtype=np.float64)
    nonzero = np.flatnonzero(counts > 0)
    if not len(nonzero):
        return np.zeros((0, 3))
    start, end = nonzero[0], nonzero[-1]
    lefts = np.concatenate([[_float(raw["min"])], limits[start:end]])
    rights = np.concatenate([limits[start:end], [_float(raw["max"])]])
    return np.stack([lefts, rights, counts[start : end + 1]], axis=1)


def data_server_view(entries: list[dict]) -> list[dict]:
    """The entries as TensorBoard's data server keeps them: a step that goes
    back drops the earlier entries at that step or later."""
    kept: list[dict] = []
    for entry in entries:
        while kept and kept[-1]["step"] >= entry["step"]:
            kept.pop()
        kept.append(entry)
    return kept


def load(logdir: Path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data = histoscope.load_histograms(logdir)
    return data, caught


def assert_series_equal(series, entries: list[dict], where: str) -> None:
    assert series.steps.tolist() == [e["step"] for e in entries], where
    assert series.wall_times.tolist() == [e["wall_time"] for e in entries], where
    assert len(series.buckets) == len(entries), where
    for got, entry in zip(series.buckets, entries):
        want = buckets_of(entry)
        assert got.shape == want.shape, f"{where} step {entry['step']}"
        if "raw" in entry:
            # TensorBoard's Python loader casts legacy buckets to float32; we keep
            # float64, so compare exactly with the float64 rule and in float32 with
            # TensorBoard's numbers.
            np.testing.assert_array_equal(got, legacy_buckets(entry["raw"]), err_msg=where)
            np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"{where} step {entry['step']}")


def expected_runs(fixtures: Path, name: str) -> dict:
    runs = oracle(fixtures, name)["runs"]
    if name == "restart":
        # On purpose: like TensorBoard's data server (and unlike its Python
        # loader, which serves steps 10-19 twice), the newer writer wins.
        runs = {r: {t: data_server_view(e) for t, e in tags.items()} for r, tags in runs.items()}
    return runs


@pytest.mark.parametrize("name", [n for n in NAMES if n != "corrupt"])
def test_load_matches_tensorboard(fixtures: Path, name: str) -> None:
    data, caught = load(fixtures / name)
    want = expected_runs(fixtures, name)
    got_pairs = {(tag, run) for tag, runs in data.items() for run in runs}
    want_pairs = {(tag, run) for run, tags in want.items() for tag in tags}
    assert got_pairs == want_pairs
    for run, tags in want.items():
        for tag, entries in tags.items():
            assert_series_equal(data[tag][run], entries, f"{name}: {run} / {tag}")
    assert not [w for w in caught if issubclass(w.category, DamagedFileWarning)]


def test_restart_serves_every_step_once_from_the_newer_writer(fixtures: Path) -> None:
    data, _ = load(fixtures / "restart")
    served = oracle(fixtures, "restart")["data_server"]["differences"][0]
    assert "serves steps [0, 1, 2" in served
    for run in ("train", "with_purge_step"):
        series = data["hist/normal"][run]
        assert series.steps.tolist() == list(range(30))
        assert np.all(np.diff(series.wall_times[9:11]) > 1.0)  # step 10 from the second writer


def test_damaged_record_is_skipped_and_the_file_goes_on(fixtures: Path) -> None:
    data, caught = load(fixtures / "corrupt")
    want = oracle(fixtures, "corrupt")["runs"]
    intact = want["intact"]["hist/normal"]
    for run in ("flipped", "flipped_tag"):
        series = data["hist/normal"][run]
        # TensorBoard's Python loader stops at the bad record (steps 0-8); we
        # skip only that record (step 9) and read the rest of the file.
        assert [e["step"] for e in want[run]["hist/normal"]] == list(range(9))
        expected = [e for e in intact if e["step"] != 9]
        assert_series_equal(series, expected, f"corrupt: {run}")
    messages = [str(w.message) for w in caught if issubclass(w.category, DamagedFileWarning)]
    assert len(messages) == 2
    for run, message in zip(("flipped", "flipped_tag"), sorted(messages)):
        assert f"/{run}/events.out.tfevents" in message
        assert "skipped 1 damaged record" in message
        assert "bytes 3852-4224" in message


def test_truncated_tail_ends_the_file_quietly(fixtures: Path) -> None:
    data, caught = load(fixtures / "truncated")
    assert data["hist/normal"]["cut"].steps.tolist() == list(range(19))
    assert not caught


def test_legacy_statistics_come_from_the_histogram_proto(fixtures: Path) -> None:
    data, _ = load(fixtures / "torch_writer")
    entries = oracle(fixtures, "torch_writer")["runs"]["run_a"]["normal/bins16"]
    stats = data["normal/bins16"]["run_a"].stats
    raw = [e["raw"] for e in entries]
    num = np.array([r["num"] for r in raw])
    mean = np.array([r["sum"] for r in raw]) / num
    np.testing.assert_array_equal(stats["count"], num)
    np.testing.assert_array_equal(stats["min"], [r["min"] for r in raw])
    np.testing.assert_array_equal(stats["max"], [r["max"] for r in raw])
    np.testing.assert_allclose(stats["mean"], mean)
    std = np.sqrt(np.array([r["sum_squares"] for r in raw]) / num - mean**2)
    np.testing.assert_allclose(stats["std"], std, rtol=1e-9)
    assert np.isnan(stats["nonfinite"]).all()


def test_tf2_tensors_give_count_min_max_from_their_buckets(fixtures: Path) -> None:
    # As maidr and TensorBoard's users read them: the count is the sum of the counts,
    # min the left edge of the first non-empty bucket, max the right edge of the last.
    data, _ = load(fixtures / "tf2_summary")
    series = data["weights/dense"]["train"]
    stats = series.stats
    assert set(stats) == {"count", "min", "max", "mean", "std", "nonfinite", "below", "above"}
    for i, buckets in enumerate(series.buckets):
        filled = buckets[buckets[:, 2] > 0]
        assert stats["count"][i] == buckets[:, 2].sum() == 512
        assert stats["min"][i] == filled[0, 0] and stats["max"][i] == filled[-1, 1]
    for name in ("mean", "std", "nonfinite", "below", "above"):
        assert np.isnan(stats[name]).all(), name


def test_nested_runs_are_named_by_relative_path(fixtures: Path) -> None:
    data, _ = load(fixtures / "nested")
    assert sorted(data["hist/values"]) == ["a", "a/b/c", "x/y"]


def test_a_logdir_that_is_itself_a_run_is_named_dot(fixtures: Path) -> None:
    data, _ = load(fixtures / "keras_fit" / "fit" / "train")
    assert {run for runs in data.values() for run in runs} == {"."}
