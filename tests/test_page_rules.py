"""The pages' copies of the core's rules, held to the core's numbers in Chromium.

The report and the widget answer from data held in the page (`embedded.js`), so three
rules run there again: maidr's thinning (the core's `thin_indices`), TensorBoard's
distribution percentiles (the core's `compressor.rs`, as the viewer's index holds them)
and the overview's statistic (`view/answers.py` `overview_value`). Each is run in the
page on many cases, ties and empty bins included, and compared with the core's answer.
"""

from __future__ import annotations

import math
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from playwright.sync_api import Browser, Page

import histoscope as hs
from histoscope import _core
from histoscope.view.answers import overview_value
from histoscope.view.page import bundle

pytest_plugins = ["browser"]  # the browser fixture


@pytest.fixture(scope="module")
def rules(browser: Browser) -> Page:
    """A blank page holding `embedded.js` and what it imports, its exports as `rules`."""
    page = browser.new_context().new_page()
    page.set_content("<!DOCTYPE html><title>rules</title>")
    page.add_script_tag(content=f"{bundle(['embedded.js'])}\nwindow.rules = __embedded;")
    return page


def test_thinning_keeps_the_cores_steps(rules: Page) -> None:
    cases = [(n, most) for n in range(0, 130) for most in (2, 3, 7, 40, 51, 64, 129)]
    rng = np.random.default_rng(0)
    cases += [
        (int(n), int(m)) for n, m in zip(rng.integers(2, 100_000, 200), rng.integers(2, 600, 200))
    ]
    in_page = rules.evaluate("(cases) => cases.map(([n, most]) => rules.thin(n, most))", cases)
    for (n, most), kept in zip(cases, in_page):
        assert kept == _core.thin_indices(n, most).tolist(), (n, most)


def _histograms(rng: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray]]:
    """Equal bins and integer counts shaped to land basis points on bin boundaries: empty
    bins inside and at the ends, ties of halves, a single bin, a spike."""
    shaped = [
        [1, 0, 1], [0, 0, 5, 0], [1, 1], [2, 0, 0, 2], [7], [0, 3], [3, 0],
        [1, 0, 0, 0, 0, 0, 1], [10_000, 0, 1], [1, 1, 1, 1, 1, 1, 1, 1, 1, 1],
        [668, 919, 1498, 1915, 1915, 1498, 919, 668],
    ]  # fmt: skip
    counts = [np.array(c, dtype=np.float64) for c in shaped]
    for _ in range(150):
        bins = int(rng.integers(1, 40))
        drawn = rng.integers(0, 6, bins) * (rng.random(bins) < 0.7)
        if drawn.sum() == 0:
            drawn[int(rng.integers(bins))] = 1
        counts.append(drawn.astype(np.float64))
    out = []
    for c in counts:
        low = float(rng.normal()) * 10
        edges = low + np.arange(len(c) + 1) * float(rng.uniform(0.01, 5))
        out.append((edges, c))
    return out


def test_percentiles_are_the_cores_value_for_value(rules: Page) -> None:
    """Each histogram is written exactly, read by the viewer's index (the core's
    compressor) and by `load_histograms` (its rows), and the page's percentiles of those
    rows are the index's."""
    histograms = _histograms(np.random.default_rng(1))
    with tempfile.TemporaryDirectory() as logs:
        with hs.init("rules", run_name="r", logdir=logs) as run:
            made = {
                f"h{i:03d}": hs.Histogram(np_histogram=(counts, edges))
                for i, (edges, counts) in enumerate(histograms)
            }
            run.log(made, step=0)
        logdir = Path(logs) / "rules"
        loader = _core.RunLoader("r", _core.BucketCache(1 << 22))
        loader.read([str(p) for p in sorted((logdir / "r").glob("*tfevents*"))], 1 << 22, math.inf)
        loaded = hs.load_histograms(str(logdir))
        cases: list[dict[str, Any]] = []
        expected = []
        for i in range(len(histograms)):
            rows = loaded[f"h{i:03d}"]["r"].buckets[0]
            assert np.array_equal(rows[1:, 0], rows[:-1, 1]), "contiguous bins"
            edges = [float(rows[0, 0]), *map(float, rows[:, 1])]
            cases.append({"edges": edges, "counts": rows[:, 2].tolist()})
            index = loader.index(f"h{i:03d}")
            expected.append(index.percentiles[0].tolist())
    in_page = rules.evaluate(
        "(cases) => cases.map((c) => rules.percentiles(c.edges, c.counts))", cases
    )
    for case, page_values, core_values in zip(cases, in_page, expected):
        assert page_values == core_values, case


def test_an_empty_step_has_no_percentiles_in_the_page(rules: Page) -> None:
    assert rules.evaluate("() => rules.percentiles([0, 1, 2], [0, 0])") == [None] * 9


def test_the_overview_statistic_is_the_servers(rules: Page) -> None:
    rng = np.random.default_rng(2)
    steps = 300
    stats = rng.normal(size=(steps, len(_core.STAT_NAMES))) * 3
    stats[rng.random(stats.shape) < 0.3] = np.nan  # a writer that stored none
    quantiles = np.sort(rng.normal(size=(steps, 9)), axis=1)
    zeros = rng.random(steps)
    names = list(_core.STAT_NAMES)
    held = {
        name: [None if math.isnan(v) else float(v) for v in stats[:, names.index(name)]]
        for name in names
    }
    held["zeros"] = zeros.tolist()
    for stat in ("mean", "std", "absmax", "nonfinite", "zeros"):
        server = overview_value(stat, stats, quantiles, zeros)
        in_page = rules.evaluate(
            "([stat, stats, quantiles, n]) => [...Array(n).keys()].map("
            "(i) => rules.overviewValue(stat, stats, quantiles, i))",
            [stat, held, quantiles.tolist(), steps],
        )
        np.testing.assert_allclose(np.array(in_page, dtype=float), server, rtol=0, atol=0)
