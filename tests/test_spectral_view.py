"""The viewer's spectral trend: a spectrum's card shows each run's α and stable rank over
steps, with WeightWatcher's published band drawn as context, reachable by keyboard, named
for screen readers, every value in a table; axe finds nothing wrong."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from browser import Server, assert_accessible, serving, viewed
from playwright.sync_api import Browser, Page, expect

import histoscope as hs
from histoscope.view.spectral import SpectralTrends

pytest_plugins = ["browser"]

KEY = "spectrum/fc.weight"
STEPS = [0, 10, 20]


def heavy(step: int) -> np.ndarray:
    """A 200 x 100 matrix whose α falls as the step grows: from Gaussian towards heavy tails."""
    rng = np.random.default_rng(step)
    return rng.standard_t(10.0 / (1 + step / 5), size=(200, 100))


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("spectral")
    for name in ("base", "other"):
        with hs.init("p", run_name=name, logdir=root) as run:
            scale = 2 if name == "other" else 1
            for step in STEPS:
                run.log_spectrum("fc.weight", heavy(step) * scale, step=step)
                run.add_histogram("parameters/fc.weight", heavy(step), step=step)
    return root / "p"


server = serving("logdir", scope="module")


@pytest.fixture
def page(browser: Browser, server: Server) -> Iterator[Page]:
    with viewed(browser, server.address) as opened:
        card = opened.locator(f'article.card[data-tag="{KEY}"]')
        card.scroll_into_view_if_needed()
        expect(card.locator(".spectral svg.spectral-panel")).to_have_count(2, timeout=15000)
        yield opened


def test_the_answer_holds_each_runs_figures_by_step(server: Server, logdir: Path) -> None:
    with server.open(f"api/spectral?tag={KEY}&run=base&run=other") as answer:
        body = json.load(answer)
    assert body["band"] == [2.0, 6.0] and body["figures"] == ["alpha", "stable_rank"]
    assert [r["run"] for r in body["runs"]] == ["base", "other"]
    base = body["runs"][0]
    want = [hs.spectrum(heavy(step)) for step in STEPS]
    assert [p[0] for p in base["alpha"]] == STEPS
    np.testing.assert_allclose([p[1] for p in base["alpha"]], [s.alpha for s in want], rtol=1e-6)
    np.testing.assert_allclose(
        [p[1] for p in base["stable_rank"]], [s.stable_rank for s in want], rtol=1e-6
    )
    # α and stable rank do not change with scale: the other run's are the same.
    np.testing.assert_allclose(
        [p[1] for p in body["runs"][1]["alpha"]], [p[1] for p in base["alpha"]], rtol=1e-5
    )
    assert server.get("/api/spectral?tag=parameters%2Ffc.weight&run=base") == 400


def test_a_key_that_is_no_spectrum_is_a_bad_request(logdir: Path) -> None:
    from histoscope.errors import RequestError

    trends = SpectralTrends(str(logdir), refresh_seconds=0.0)
    with pytest.raises(RequestError, match="spectrum's key"):
        trends.trend("parameters/fc.weight", ["base"])
    assert trends.trend(KEY, ["missing"])["runs"] == []


def test_a_growing_file_is_followed_and_a_step_going_back_drops_the_later_values(
    tmp_path: Path,
) -> None:
    trends = SpectralTrends(str(tmp_path), refresh_seconds=0.0)
    with hs.init("p", run_name="r", logdir=tmp_path) as run:
        run.log_spectrum("w", heavy(0), step=0)
        run.log_spectrum("w", heavy(1), step=5)
        run.flush()
        assert [p[0] for p in trends.trend("spectrum/w", ["p/r"])["runs"][0]["alpha"]] == [0, 5]
        run.log_spectrum("w", heavy(2), step=3)  # a restart from step 3
        run.flush()
        assert [p[0] for p in trends.trend("spectrum/w", ["p/r"])["runs"][0]["alpha"]] == [0, 3]


def test_the_trend_draws_alpha_with_the_band_and_stable_rank_named_and_tabled(
    page: Page,
) -> None:
    card = page.locator(f'article.card[data-tag="{KEY}"]')
    alpha = card.locator('svg.spectral-panel[data-figure="alpha"]')
    label = alpha.get_attribute("aria-label")
    assert label.startswith(f"α of {KEY} over steps; run base: ")
    assert "inside 2 to 6 at" in label and "WeightWatcher's published band" in label
    assert "context only" in label
    expect(alpha.locator("rect.spectral-band")).to_have_count(1)
    expect(alpha.locator("path.spectral-line")).to_have_count(2)
    rank = card.locator('svg.spectral-panel[data-figure="stable_rank"]')
    assert rank.get_attribute("aria-label").startswith(f"stable rank of {KEY} over steps")
    expect(rank.locator("rect.spectral-band")).to_have_count(0)
    # The table, one row per run and step.
    card.locator(".spectral-details > summary").click()
    rows = card.locator(".spectral-table tbody tr")
    expect(rows).to_have_count(2 * len(STEPS))
    first = rows.first.locator("th, td").all_text_contents()
    assert first[:2] == ["base", "0"]
    assert float(first[2]) == pytest.approx(hs.spectrum(heavy(0)).alpha, rel=5e-3)
    # A parameter's card has no trend.
    other = page.locator('article.card[data-tag="parameters/fc.weight"]')
    expect(other.locator(".spectral")).to_have_count(0)


def test_the_trend_is_reached_by_tab_from_the_cards_chart(page: Page) -> None:
    card = page.locator(f'article.card[data-tag="{KEY}"]')
    card.locator(".chart").focus()
    page.keyboard.press("Tab")
    focused = page.evaluate("document.activeElement.dataset.figure")
    assert focused == "alpha"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.dataset.figure") == "stable_rank"


def test_axe_finds_no_violations_on_the_trend(page: Page) -> None:
    card = page.locator(f'article.card[data-tag="{KEY}"]')
    card.locator(".spectral-details > summary").click()
    card.locator('svg.spectral-panel[data-figure="alpha"]').focus()
    assert_accessible(page)


def test_the_offline_report_draws_the_same_trend(logdir: Path, tmp_path: Path, open_page) -> None:
    from histoscope.view.report import write_report

    page = open_page(write_report(logdir, tmp_path / "report.html"))
    card = page.locator(f'article.card[data-tag="{KEY}"]')
    card.scroll_into_view_if_needed()
    expect(card.locator(".spectral svg.spectral-panel")).to_have_count(2, timeout=15000)
    alpha = card.locator('svg.spectral-panel[data-figure="alpha"]')
    assert alpha.get_attribute("aria-label").startswith(f"α of {KEY} over steps; run base: ")
    card.locator(".spectral-details > summary").click()
    expect(card.locator(".spectral-table tbody tr")).to_have_count(2 * len(STEPS))
    assert_accessible(page)
