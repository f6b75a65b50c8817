"""The notebook widget in a Voilà dashboard: a notebook that logs a run, shows it with
`hs.show(run)` and goes on logging in a thread, served by ``voila`` and opened in headless
Chromium. The widget draws its cards and grows while the kernel logs; axe finds nothing
in it. Requests off the server are refused: only Voilà's own page makes any (Font
Awesome's stylesheet), and it draws without them."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe
from browser import OUTPUT
from playwright.sync_api import Browser, Route
from served import serving

pytest.importorskip("voila")
nbformat = pytest.importorskip("nbformat")

pytest_plugins = ["browser"]  # the browser fixture

#: The steps the notebook logs in all (the first three before the widget is shown).
STEPS = 100
KEYS = 3

SHOWN = """
import tempfile, threading, time
import numpy as np
import histoscope as hs

run = hs.init("voila", run_name="live", logdir=tempfile.mkdtemp())

def log(steps):
    for step in steps:
        for i, key in enumerate(["layer/weight", "layer/bias", "grad"]):
            run.add_histogram(key, np.random.default_rng(step).normal(i, 1 + step / 10, 300), step)
        run.flush()
        time.sleep(0.05)

log(range(3))
hs.show(run)
"""

# After the page is sent, the kernel lives on: a thread logs the rest.
GROWS = f"threading.Thread(target=log, args=(range(3, {STEPS}),), daemon=True).start()"


@pytest.fixture
def dashboard(tmp_path: Path) -> Iterator[str]:
    """``voila`` serving the notebook: its address. Each page that opens it runs the
    notebook in a kernel of its own."""
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(SHOWN), nbformat.v4.new_code_cell(GROWS)]
    nbformat.write(notebook, str(tmp_path / "live.ipynb"))
    command = lambda port: [  # noqa: E731
        sys.executable, "-m", "voila", str(tmp_path / "live.ipynb"), "--no-browser",
        f"--port={port}", "--Voila.ip=127.0.0.1",
    ]  # fmt: skip
    address = lambda port: f"http://127.0.0.1:{port}/"  # noqa: E731
    log = tmp_path / "voila.log"
    with serving("voila", command, address, log, cwd=tmp_path, probe_seconds=60) as port:
        yield address(port)


def test_a_voila_dashboard_draws_the_widget_and_grows(browser: Browser, dashboard: str) -> None:
    context = browser.new_context(viewport={"width": 1200, "height": 1000})
    refused: list[str] = []

    def offline(route: Route) -> None:
        if route.request.url.startswith(dashboard):
            route.continue_()
        else:
            refused.append(route.request.url)
            route.abort()

    context.route("**/*", offline)
    page = context.new_page()
    errors: list[Any] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(dashboard, timeout=120_000)
    widget = page.locator(".histoscope-widget").first
    widget.wait_for(state="attached", timeout=90_000)
    page.wait_for_function(
        "([h, last]) => Number(h.dataset.step) === last",
        arg=[widget.element_handle(), STEPS - 1],
        timeout=90_000,
    )
    keys = widget.evaluate("h => h.histoscopeData.tags.length")
    assert keys == KEYS
    widget.locator("article.card").first.scroll_into_view_if_needed()
    widget.locator(".card.mounted canvas, .card.mounted svg").first.wait_for(
        state="attached", timeout=60_000
    )
    results = Axe().run(page, context={"include": [[".histoscope-widget"]]})
    found = [(v["id"], [n["target"] for n in v["nodes"]]) for v in results.response["violations"]]
    OUTPUT.mkdir(exist_ok=True)
    widget.screenshot(path=str(OUTPUT / "voila.png"))
    assert found == [], found
    assert errors == [], errors
    # Voilà's own page asks a CDN for Font Awesome; the widget asks nothing.
    assert all("fontawesome" in url for url in refused), refused
    context.close()
