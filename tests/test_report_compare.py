"""The report's orders with no server: keys sorted by a statistic and two runs compared,
from rankings and comparisons embedded when it was written (Chromium, file://, offline)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from browser import assert_accessible
from playwright.sync_api import Page, expect
from report_page import embedded

import histoscope as hs
from histoscope.view.report import write_report
from histoscope.view.report_orders import COMPARED_RUNS

pytest_plugins = ["browser"]

KEYS = [f"weights/layer{i:02d}" for i in range(6)]
#: The keys the second run changes, and the key with the widest spread in both.
CHANGED = {"weights/layer01", "weights/layer04"}
WIDEST = "weights/layer05"


def planted(root: Path, runs: tuple[str, ...] = ("base", "changed")) -> Path:
    for run in runs:
        with hs.init("sweep", run_name=run, logdir=str(root)) as logged:
            for step in range(3):
                for i, key in enumerate(KEYS):
                    values = np.random.default_rng(i * 10 + step).normal(0, 0.1 * (i + 1), 2000)
                    if run != "base" and key in CHANGED:
                        values = values * 3
                    logged.add_histogram(key, values, step=step)
    return root / "sweep"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("report-compare")
    return write_report(planted(root), root / "report.html")


def card_order(page: Page) -> list[str]:
    return page.locator('details.section[data-section="weights"] article.card').evaluate_all(
        "cards => cards.map(c => c.dataset.tag)"
    )


def test_the_embedded_comparison_is_histoscope_compare(report: Path) -> None:
    data = embedded(report.read_text())
    logdir = report.parent / "sweep"
    for a, b in (("base", "changed"), ("changed", "base")):
        table = hs.compare(logdir, a=a, b=b)
        rows = data["orders"]["compare"][a][b]["rows"]
        assert [r["key"] for r in rows] == [d.key for d in table.rows]
        np.testing.assert_allclose(
            [r["wasserstein"] for r in rows], [d.wasserstein for d in table.rows]
        )
        assert {r["key"] for r in rows[:2]} == CHANGED
    ranked = data["orders"]["rankings"]["base"]["std_last"]
    assert ranked["keys"][0] == WIDEST


def test_the_report_orders_and_compares_offline_by_keyboard(report: Path, open_page) -> None:
    page = open_page(report)
    expect(page.locator("#order-controls")).to_be_visible(timeout=20000)
    page.locator("#order").select_option("std_last")
    first_card = page.locator('details.section[data-section="weights"] article.card').first
    expect(first_card).to_have_attribute("data-tag", WIDEST, timeout=20000)
    page.locator("#compare-run").focus()
    page.keyboard.press("ArrowDown")
    expect(page.locator("#compare-run")).to_have_value("changed")
    expect(page.locator("#order")).to_have_value("distance")
    rows = page.locator("#compare-rows tr")
    expect(rows).to_have_count(len(KEYS), timeout=20000)
    assert {rows.nth(i).locator("th").inner_text() for i in range(2)} == CHANGED
    assert set(card_order(page)[:2]) == CHANGED
    expect(page.locator("#order-live")).to_contain_text("base compared with changed")
    card = page.locator(f'article.card[data-tag="{rows.first.locator("th").inner_text()}"]')
    card.scroll_into_view_if_needed()
    expect(card.locator(".difference-note")).to_contain_text(
        "changed at step 2 minus base", timeout=20000
    )
    # The report holds no distance step by step: the overview cannot be coloured by it.
    assert page.locator('#overview-stat option[value="distance"]').is_disabled()
    assert_accessible(page)


def test_beyond_eight_runs_only_the_first_eight_are_compared(tmp_path: Path) -> None:
    names = tuple(f"run{i:02d}" for i in range(COMPARED_RUNS + 2))
    logdir = planted(tmp_path, ("base", *names))
    data = embedded(write_report(logdir, tmp_path / "r.html").read_text())
    compared = data["orders"]["compare"]
    assert len(compared) == COMPARED_RUNS and all(
        len(b) == COMPARED_RUNS - 1 for b in compared.values()
    )
    assert len(data["orders"]["rankings"]) == COMPARED_RUNS + 3
