"""How the widget's messages travel (histoscope.notebook.transports): in a real kernel
where ``google.colab`` is importable (a stand-in package on its path) no widget message
carries binary buffers, which Colab's widget manager drops; the front end, handed those
messages in Chromium by a model that drops buffers as Colab's does, draws the cards and
grows update by update; elsewhere the widget keeps its buffers, unless asked by hand."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from browser import assert_accessible
from kernel_messages import recorded
from playwright.sync_api import Browser, Page
from widget_page import deliver, from_kernel, held, open_widget

from histoscope import _core
from histoscope.notebook.messages import message
from histoscope.notebook.transports import carried

pytest_plugins = ["browser"]  # the browser fixture

ROOT = "document.querySelector('.histoscope-widget').shadowRoot"
#: The step the widget's drawn cards show, in the page's JavaScript.
DRAWN_STEP = "Number(document.querySelector('.histoscope-widget').dataset.step || -1)"
KEYS = ["layer/weight", "layer/bias", "grad"]

TRAINING = """
import tempfile, time, numpy as np, histoscope as hs
run = hs.init("colab", run_name="live", logdir=tempfile.mkdtemp())
def log(steps):
    for step in steps:
        for i, key in enumerate({keys!r}):
            values = np.random.default_rng(step).normal(i, 1 + step / 10, 300)
            run.add_histogram(key, values, step)
        run.flush()
        time.sleep(0.05)
log(range(3))
hs.show(run{options})
"""
GROW = "log(range(3, 40))"


@pytest.fixture(scope="module")
def colab(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding a ``google.colab`` package that does nothing, as importable as
    Colab's own is in its kernels."""
    folder = tmp_path_factory.mktemp("colab")
    (folder / "google" / "colab").mkdir(parents=True)
    (folder / "google" / "colab" / "__init__.py").write_text('"""Stands in for Colab."""\n')
    return folder


@pytest.fixture(scope="module")
def colab_messages(colab: Path, tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    cells = [TRAINING.format(keys=KEYS, options=""), GROW]
    return recorded(cells, tmp_path_factory.mktemp("kernel"), path_first=colab)


def _custom(messages: list[dict]) -> list[dict]:
    return [m for m in messages if m["data"].get("method") == "custom"]


def test_in_colab_no_widget_message_carries_buffers(colab_messages: list[dict]) -> None:
    assert [m for m in colab_messages if m["buffers"]] == []
    updates = _custom(colab_messages)
    assert len(updates) >= 2, colab_messages
    assert all(len(m["data"]["content"]["encoded"]) == 5 for m in updates)
    opened = [m["data"]["state"] for m in colab_messages if m["type"] == "comm_open"]
    widget = next(s for s in opened if "_page" in s)
    assert widget["transport"] == "base64" and widget["_snapshot"] == ""
    states = [m["data"]["state"] for m in colab_messages if m["data"].get("method") == "update"]
    saved = [state["_snapshot"] for state in states if "_snapshot" in state]
    assert saved and base64.b64decode(saved[-1])[:4] != b"\0\0\0\0"


def test_elsewhere_buffers_carry_them_and_base64_is_chosen_by_hand(tmp_path: Path) -> None:
    """The same cells in a kernel without Colab: its updates in buffers; a second run
    shown with ``transport="base64"`` sends none (told apart by their comms)."""
    second = TRAINING.format(keys=KEYS, options=', transport="base64"')
    cells = [TRAINING.format(keys=KEYS, options=""), second]
    messages = recorded(cells, tmp_path)
    opened = {
        m["comm_id"]: m["data"]["state"].get("transport")
        for m in messages
        if m["type"] == "comm_open"
    }
    by_transport: dict[str | None, list[dict]] = {}
    for m in _custom(messages):
        by_transport.setdefault(opened[m["comm_id"]], []).append(m)
    assert set(by_transport) == {"buffers", "base64"}
    assert all(len(m["buffers"]) == 5 for m in by_transport["buffers"])
    assert all(m["buffers"] == [] for m in by_transport["base64"])


def _steps_held(page: Page) -> int:
    data = held(page)
    return max((len(s) for s in data["steps"].values()), default=0)


def test_the_front_end_draws_and_grows_where_buffers_are_dropped(
    browser: Browser, colab_messages: list[dict]
) -> None:
    """The Colab kernel's messages, in order, to a model that drops every buffer: the
    cards are drawn from the first update, and each later one adds steps."""
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    opened = next(m for m in colab_messages if "_page" in m["data"].get("state", {}))
    widget_id = opened["comm_id"]
    open_widget(page, traits=opened["data"]["state"], drops_buffers=True)
    grown: list[int] = []
    for m in colab_messages:
        if m["comm_id"] == widget_id and m["type"] == "comm_msg":
            from_kernel(page, m["data"], m["buffers"])
            if m["data"].get("method") == "custom":
                grown.append(_steps_held(page))
                if len(grown) == 1:
                    _wait_drawn(page)
    assert grown[0] >= 3 and grown[-1] == 40, grown
    assert grown == sorted(grown) and len(set(grown)) >= 2, grown
    assert sorted(held(page)["cards"]) == sorted(KEYS)
    page.wait_for_function(f"() => {DRAWN_STEP} == 39", timeout=30_000)
    assert_accessible(page)
    # The snapshot the kernel saved last (as text) draws the same widget again.
    saved = [m["data"]["state"] for m in colab_messages if m["comm_id"] == widget_id
             and "_snapshot" in m["data"].get("state", {}) and m["type"] == "comm_msg"]  # fmt: skip
    again = context.new_page()
    open_widget(again, traits={**opened["data"]["state"], **saved[-1]}, drops_buffers=True)
    assert _series(held(again)) == _series(held(page))
    assert errors == []
    context.close()


def _series(data: dict[str, Any]) -> dict[str, Any]:
    """Per key, its edges and its runs' steps, counts and statistics (what a drawn page
    adds to a card for its own drawing left out)."""
    kept = ("steps", "counts", "stats")
    return {
        tag: (card["edges"], {run: [s[k] for k in kept] for run, s in card["runs"].items()})
        for tag, card in data["cards"].items()
    }


def _wait_drawn(page: Page) -> None:
    page.wait_for_function(
        f"() => {ROOT}.querySelectorAll('.card.mounted canvas, .card.mounted svg').length > 0",
        timeout=30_000,
    )


def _grown_chart(steps: range) -> _core.LiveChart:
    chart = _core.LiveChart(bins=12, keep=8)
    rng = np.random.default_rng(0)
    for step in steps:
        values = rng.normal(0, 1 + step / 10, 200)
        counts, edges = np.histogram(values, bins=12)
        buckets = np.column_stack([edges[:-1], edges[1:], counts]).astype(np.float64)
        stats = _core.Stats(
            count=200.0, min=float(values.min()), max=float(values.max()),
            mean=float(values.mean()), std=float(values.std()),
            nonfinite=0.0, below=0.0, above=0.0,
        )  # fmt: skip
        chart.add("w", "run", step, buckets, stats)
    return chart


def test_both_transports_leave_the_page_holding_the_same(browser: Browser) -> None:
    """Small updates, bins widening and steps thinned: the page handed each update as
    buffers and the page handed it as base64 (its buffers dropped) hold the same."""
    chart = _grown_chart(range(60))
    pages: dict[str, Any] = {}
    context = browser.new_context()
    for transport in ("buffers", "base64"):
        pages[transport] = context.new_page()
        open_widget(pages[transport], drops_buffers=transport == "base64")
    while chart.pending:
        header, buffers = message(chart.take_update(700), chart.bins)
        for transport, page in pages.items():
            deliver(page, *carried(header, buffers, transport))
    assert _series(held(pages["base64"])) == _series(held(pages["buffers"]))
    assert len(held(pages["base64"])["cards"]["w"]["runs"]["run"]["steps"]) > 8
    context.close()
