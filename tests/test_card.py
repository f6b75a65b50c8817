"""One tag across chosen runs on shared bins, as the core draws a card (`_core.read_card`,
the viewer's ``api/card``) and a report's charts (`_core.SharedCharts`), checked against
an independent NumPy computation from the buckets `load_histograms` reads."""

from __future__ import annotations

import json
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import histoscope
from histoscope import _core
from histoscope.view import answers, report
from histoscope.view.follow import LogdirIndex

# The most steps a card draws however many are asked: the core's `CARD_MAX_STEPS`, which
# rust/bins/card.rs holds to.
CARD_MAX_STEPS = 1000


def _thinned(n: int, max_steps: int) -> np.ndarray:
    """maidr's thinning: ``unique(round(linspace(0, n - 1, max_steps)))``."""
    if n == 0:
        return np.zeros(0, dtype=int)
    return np.unique(np.round(np.linspace(0, n - 1, max_steps)).astype(int))


def _extent(steps: list[np.ndarray]) -> tuple[float, float]:
    """The span of every non-empty finite bucket; a constant (or nothing) widened by a half."""
    rows = np.concatenate([s.reshape(-1, 3) for s in steps] or [np.zeros((0, 3))])
    rows = rows[np.isfinite(rows).all(axis=1) & (rows[:, 2] != 0)]
    if not len(rows):
        return -0.5, 0.5
    lo, hi = float(rows[:, :2].min()), float(rows[:, :2].max())
    return (lo - 0.5, hi + 0.5) if lo == hi else (lo, hi)


def _rebinned(steps: list[np.ndarray], edges: np.ndarray) -> np.ndarray:
    """Each step's buckets shared among ``edges``' bins in proportion to their overlap."""
    out = np.zeros((len(steps), len(edges) - 1))
    for row, buckets in zip(out, steps):
        buckets = buckets[np.isfinite(buckets).all(axis=1) & (buckets[:, 2] != 0)]
        left, right, count = np.minimum(buckets[:, 0], buckets[:, 1]), buckets[:, 1], buckets[:, 2]
        right = np.maximum(buckets[:, 0], right)
        wide = right > left
        overlap = np.minimum(right[wide, None], edges[None, 1:]) - np.maximum(
            left[wide, None], edges[None, :-1]
        )
        row += (count[wide, None] * np.clip(overlap, 0, None) / (right - left)[wide, None]).sum(0)
        at = np.clip(np.searchsorted(edges, left[~wide], side="right") - 1, 0, len(row) - 1)
        np.add.at(row, at, count[~wide])
    return out


def _caught_up(logdir: Path) -> LogdirIndex:
    index = LogdirIndex(str(logdir))
    for name in index.runs():
        while not index.run(name).caught_up:  # type: ignore[union-attr]
            time.sleep(0.02)
    return index


@pytest.mark.parametrize(
    ("fixture", "tag", "extra"),
    [
        ("torch_writer", "normal/auto", ""),
        ("torch_writer", "linear/weight_grad", "&steps=7&bins=11&from=3&to=25&step=12"),
        ("tf2_summary", "weights/dense", "&steps=1&bins=1&step=0"),
        ("many_steps", "hist/drift", "&steps=5000&step=500"),
    ],
)
def test_a_card_is_each_runs_picked_steps_on_bins_shared_by_all(
    fixtures: Path, fixture: str, tag: str, extra: str
) -> None:
    logdir = fixtures / fixture
    index = _caught_up(logdir)
    names = index.runs()
    query = answers.Query(f"tag={tag}" + "".join(f"&run={n}" for n in names) + extra)
    card = json.loads(answers.encode(answers.card(index, query)))
    loaded = histoscope.load_histograms(logdir, keys=[tag])[tag]
    step, low, high = (answers.query_integer(query, name) for name in ("step", "from", "to"))
    asked = answers.query_integer(query, "steps")
    max_steps = min(asked or answers.CARD_STEPS, CARD_MAX_STEPS)
    bins = answers.query_integer(query, "bins") or _core.CARD_BINS
    picks = {}
    for name in names:
        steps = loaded[name].steps
        lo = 0 if low is None else np.searchsorted(steps, low, side="left")
        hi = len(steps) if high is None else np.searchsorted(steps, high, side="right")
        drawn = lo + _thinned(max(hi - lo, 0), max_steps)
        current = (len(steps) if step is None else np.searchsorted(steps, step, "right")) - 1
        picks[name] = (drawn, [p for p in (current, current - 1) if p >= 0])
    every = [loaded[name].buckets[p] for name in names for p in [*picks[name][0], *picks[name][1]]]
    edges = np.linspace(*_extent(every), bins + 1)
    np.testing.assert_allclose(card["edges"], edges, rtol=1e-12, atol=1e-12)
    assert [run["run"] for run in card["runs"]] == names and card["errors"] == []
    for run in card["runs"]:
        series = loaded[run["run"]]
        drawn, marked = picks[run["run"]]
        assert len(drawn) <= CARD_MAX_STEPS
        assert run["steps"] == series.steps[drawn].tolist()
        assert (run["first"], run["last"]) == (series.steps[0], series.steps[-1])
        want = _rebinned([series.buckets[p] for p in drawn], edges)
        np.testing.assert_allclose(np.reshape(run["counts"], want.shape), want, atol=1e-9)
        for key, position in zip(("current", "previous"), [*marked, None, None]):
            if position is None:
                assert run[key] is None
                continue
            assert run[key]["step"] == series.steps[position]
            counted = _rebinned([series.buckets[position]], edges)[0]
            np.testing.assert_allclose(run[key]["counts"], counted, atol=1e-9)
            assert run[key]["counts"] and sum(run[key]["counts"]) == pytest.approx(
                series.buckets[position][:, 2].sum()
            )


def test_the_card_defaults_and_limits_are_the_cores(fixtures: Path) -> None:
    assert (answers.CARD_BINS, answers.CARD_STEPS) == (_core.CARD_BINS, _core.CARD_STEPS)
    assert _core.CARD_BINS == _core.CHART_BINS
    index = _caught_up(fixtures / "many_steps")
    run = index.run("train")
    assert run is not None
    card = index.card([run], "hist/drift")
    (drawn,) = card.runs
    assert card.edges is not None and len(card.edges) == _core.CARD_BINS + 1
    assert len(drawn.steps) == _core.CARD_STEPS and drawn.counts.shape == (40, 30)
    assert len(index.card([run], "hist/drift", max_steps=10**6).runs[0].steps) == CARD_MAX_STEPS
    with pytest.raises(ValueError, match=f"bins must be from 1 to {_core.MAX_BINS}, got 0"):
        index.card([run], "hist/drift", bins=0)
    with pytest.raises(ValueError, match="from must not be after to, got from=3 to=2"):
        index.card([run], "hist/drift", from_step=3, to_step=2)
    nothing = index.card([run], "no/such/tag")
    assert (nothing.edges, nothing.runs, nothing.errors) == (None, [], [])


def test_a_report_counts_each_keys_thinned_steps_on_its_shared_bins(fixtures: Path) -> None:
    logdir = fixtures / "torch_writer"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = report._data(str(logdir), 9, 13, None, 1)  # a byte budget: read twice
    for tag, runs in histoscope.load_histograms(logdir).items():
        kept = {name: _thinned(len(s.steps), 9) for name, s in runs.items()}
        every = [runs[name].buckets[i] for name in runs for i in kept[name]]
        edges = np.linspace(*_extent(every), 14)
        card = data["cards"][tag]
        np.testing.assert_allclose(card["edges"], edges, rtol=1e-12, atol=1e-12)
        for name, series in runs.items():
            entry = card["runs"][name]
            np.testing.assert_array_equal(entry["steps"], series.steps[kept[name]])
            want = _rebinned([series.buckets[i] for i in kept[name]], edges)
            # The report keeps four significant digits.
            np.testing.assert_allclose(entry["counts"], want, rtol=1e-3, atol=1e-9)


def test_shared_charts_refuse_bins_past_the_limit_and_a_series_lacking_a_step(
    fixtures: Path,
) -> None:
    with pytest.raises(ValueError, match="bins must be from 1 to"):
        _core.SharedCharts(_core.MAX_BINS + 1, None)
    (record,) = _core.load_histograms(
        fixtures / "tf2_summary", runs=["train"], tags=["weights/dense"]
    ).series
    charts = _core.SharedCharts(4, 3)
    assert charts.keep(record).tolist() == [0, 10, 19]
    assert charts.counts(record, np.array([10**9], dtype=np.int64)) is None
    counts = charts.counts(record, record.steps[[0, 19]])
    assert counts is not None and counts.shape == (2, 4)
