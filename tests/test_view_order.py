"""The viewer's key order: keys sorted by a statistic or by distance to a compared run, in
the overview and the cards, kept in the URL, announced, and used by keyboard (Chromium)."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from browser import Server, assert_accessible
from playwright.sync_api import Browser, Page, expect

import histoscope as hs

pytest_plugins = ["browser"]

KEYS = [f"weights/layer{i:02d}" for i in range(8)]
#: The keys the second run changes, and the key with the widest spread in both.
CHANGED = {"weights/layer02", "weights/layer05"}
WIDEST = "weights/layer07"


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("order")
    for run in ("base", "changed"):
        with hs.init("sweep", run_name=run, logdir=str(root)) as logged:
            for step in range(3):
                for i, key in enumerate(KEYS):
                    values = np.random.default_rng(i * 10 + step).normal(0, 0.1 * (i + 1), 2000)
                    if run == "changed" and key in CHANGED:
                        values = values * 3
                    logged.add_histogram(key, values, step=step)
    return root / "sweep"


@pytest.fixture(scope="module")
def server(logdir: Path) -> Iterator[Server]:
    running = Server(logdir)
    yield running
    running.stop()


@pytest.fixture
def page(browser: Browser, server: Server) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    opened = context.new_page()
    opened.goto(server.address + "#runs=base")
    expect(opened.locator("#order-controls")).to_be_visible(timeout=20000)
    yield opened
    context.close()


def answer(server: Server, path: str) -> dict:
    with server.open(path) as response:
        return json.load(response)


def card_order(page: Page) -> list[str]:
    return page.locator('details.section[data-section="weights"] article.card').evaluate_all(
        "cards => cards.map(c => c.dataset.tag)"
    )


def test_the_ranking_and_the_comparison_answer_in_order(server: Server) -> None:
    ranked = answer(server, "api/ranking?run=base&by=std_last")
    assert ranked["keys"][0] == WIDEST
    assert ranked["values"] == sorted(ranked["values"], reverse=True)
    compared = answer(server, "api/compare?run=base&run=changed")
    assert {row["key"] for row in compared["rows"][:2]} == CHANGED
    assert compared["rows"][2]["scaled"] < compared["rows"][1]["scaled"] / 10
    steps = answer(server, "api/compare?run=base&run=base&step_a=0&step_b=2")
    assert {row["step_a"] for row in steps["rows"]} == {0}
    for bad in ("api/ranking?run=base&by=nope", "api/compare?run=base"):
        with pytest.raises(urllib.error.HTTPError) as error:
            server.open(bad)
        assert error.value.code == 400


def test_keys_ordered_by_a_statistic_in_the_overview_and_the_cards(page: Page) -> None:
    # The controls show before the cards are drawn: on a loaded machine there were none yet.
    cards = page.locator('details.section[data-section="weights"] article.card')
    expect(cards).to_have_count(len(KEYS), timeout=20000)
    assert card_order(page) == KEYS  # key order at first
    page.locator("#order").select_option("std_last")
    expect(page.locator("#order-live")).to_contain_text(
        "keys ordered by last standard deviation, first weights/layer07"
    )
    first_card = page.locator('details.section[data-section="weights"] article.card').first
    expect(first_card).to_have_attribute("data-tag", WIDEST)
    assert card_order(page) == KEYS[::-1]  # wider layers first
    labels = page.locator('.overview-grid[data-section="weights"] .overview-label')
    expect(labels.first).to_contain_text("layer07")
    assert "order=std_last" in page.evaluate("location.hash")
    page.reload()  # the order is in the URL
    expect(page.locator("#order")).to_have_value("std_last", timeout=20000)
    expect(first_card).to_have_attribute("data-tag", WIDEST, timeout=20000)


def test_a_compared_run_orders_by_distance_with_a_table_of_links(page: Page) -> None:
    expect(page.locator("#compare-run option")).to_have_count(2, timeout=20000)
    page.locator("#compare-run").focus()
    page.keyboard.press("ArrowDown")  # choose "changed" by keyboard
    expect(page.locator("#compare-run")).to_have_value("changed")
    expect(page.locator("#order")).to_have_value("distance")
    rows = page.locator("#compare-rows tr")
    expect(rows).to_have_count(len(KEYS), timeout=20000)
    first_two = {rows.nth(i).locator("th").inner_text() for i in range(2)}
    assert first_two == CHANGED
    expect(page.locator("#compare-heading")).to_have_text(
        f"Keys of base against changed, farthest first ({len(KEYS)})"
    )
    expect(page.locator("#order-live")).to_contain_text(
        "base compared with changed: keys ordered by distance"
    )
    assert set(card_order(page)[:2]) == CHANGED
    assert "compare=changed" in page.evaluate("location.hash")
    link = rows.first.locator("a")
    link.focus()
    page.keyboard.press("Enter")
    tag = rows.first.locator("th").inner_text()
    expect(page.locator(f'article.card[data-tag="{tag}"] .chart')).to_be_focused()
    card = page.locator(f'article.card[data-tag="{tag}"]')
    expect(card).to_contain_text("changed", timeout=20000)
    assert_accessible(page)


def _expected_points(server: Server, tag: str) -> tuple[float, float]:
    """The largest gain and loss, in percentage points, of changed's shares over base's."""
    card = answer(server, f"api/card?tag={tag}&run=base&run=changed")
    counts = {entry["run"]: np.array(entry["current"]["counts"]) for entry in card["runs"]}
    change = 100 * (
        counts["changed"] / counts["changed"].sum() - counts["base"] / counts["base"].sum()
    )
    return float(change.max()), float(change.min())


def test_compare_mode_draws_each_cards_difference_and_says_it(page: Page, server: Server) -> None:
    expect(page.locator("#compare-run option")).to_have_count(2, timeout=20000)
    page.locator("#compare-run").select_option("changed")
    tag = "weights/layer02"
    card = page.locator(f'article.card[data-tag="{tag}"]')
    card.scroll_into_view_if_needed()
    note = card.locator(".difference-note")
    expect(note).to_contain_text("changed at step 2 minus base at step 2", timeout=20000)
    gain, loss = _expected_points(server, tag)
    expect(note).to_contain_text(f"(+{gain:.1f} points)")
    expect(note).to_contain_text(f"(−{abs(loss):.1f} points)")
    panel = card.locator("svg.difference")
    assert "difference: changed at step 2" in panel.get_attribute("aria-label")
    assert panel.locator("rect.gain").count() > 0 and panel.locator("rect.loss").count() > 0
    # Three times as wide: the compared run loses share in the middle bins.
    edges = np.array(answer(server, f"api/card?tag={tag}&run=base&run=changed")["edges"])
    lost_at = note.inner_text().split("most lost in [")[1].split(",")[0]
    assert abs(float(lost_at.replace("−", "-"))) < (edges[-1] - edges[0]) / 4
    page.locator("#compare-run").select_option("")
    expect(card.locator(".difference-note")).to_have_count(0)
    assert_accessible(page)


def test_the_overview_coloured_by_distance_equals_the_comparison(server: Server) -> None:
    found = answer(server, "api/overview?run=base&stat=distance&against=changed")
    assert found["against"] == "changed" and found["steps"] == [0, 1, 2]
    last = {
        row["key"]: row["scaled"]
        for row in answer(server, "api/compare?run=base&run=changed")["rows"]
    }
    for key in KEYS:
        cells = found["rows"][key]
        assert cells[-1] == pytest.approx(last[key], rel=1e-12)
        if key in CHANGED:
            assert min(cells) > 10 * max(max(found["rows"][k]) for k in KEYS if k not in CHANGED)
    for bad in ("stat=distance", "stat=distance&against=base", "stat=distance&against=nope"):
        with pytest.raises(urllib.error.HTTPError) as error:
            server.open("api/overview?run=base&" + bad)
        assert error.value.code == 400


def test_the_overview_is_coloured_by_distance_in_compare_mode(page: Page) -> None:
    option = page.locator('#overview-stat option[value="distance"]')
    expect(option).to_be_disabled(timeout=20000)
    page.locator("#compare-run").select_option("changed")
    expect(option).to_be_enabled(timeout=20000)
    page.locator("#overview-stat").select_option("distance")
    grid = page.locator('.overview-grid[data-section="weights"]')
    expect(grid).to_have_attribute(
        "aria-label", re.compile("coloured by distance to changed"), timeout=20000
    )
    page.locator("#compare-run").select_option("")
    expect(page.locator("#overview-stat")).to_have_value("std", timeout=20000)
    assert_accessible(page)


def test_a_card_being_read_keeps_its_focus_when_the_cards_are_placed_again(page: Page) -> None:
    """A new order (or a refresh) places the cards again: the card with the focus keeps it,
    as a screen reader would otherwise be thrown back to the top of the page."""
    cards = page.locator('details.section[data-section="weights"] article.card')
    expect(cards).to_have_count(len(KEYS), timeout=20000)
    chart = page.locator('article.card[data-tag="weights/layer03"] .chart')
    # The choices are drawn once the server says which orders it has; set before
    # then, the select would take no value and nothing would be ordered.
    expect(page.locator('#order option[value="std_last"]')).to_have_count(1, timeout=20000)
    chart.focus()
    page.evaluate(  # the order changed while the focus stays in the card
        "() => { const o = document.getElementById('order'); o.value = 'std_last';"
        " o.dispatchEvent(new Event('change', { bubbles: true })); }"
    )
    # Ordering asks the server, slow on a loaded machine.
    expect(cards.first).to_have_attribute("data-tag", WIDEST, timeout=20000)
    expect(chart).to_be_focused(timeout=20000)
