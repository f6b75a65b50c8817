"""The notebook widget in marimo: a marimo notebook that logs a run, shows it with
`hs.show(run)` and ends a cell on `run`, exported with ``marimo export html`` and served
by ``marimo run``, each opened in headless Chromium. The export draws the whole run from
the snapshot marimo keeps; the server's page draws the cards and grows while the cell
logs; axe finds nothing in the widget. marimo's own front end is read from the installed
package (its export names a CDN): nothing is asked of the network."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe
from browser import OUTPUT
from playwright.sync_api import Browser, BrowserContext, Locator, Page, Route
from served import serving

marimo = pytest.importorskip("marimo")

pytest_plugins = ["browser"]  # the browser fixture

#: The steps the notebook logs in all (the first three before the widget is shown).
STEPS = 100
KEYS = 3

NOTEBOOK = """
import marimo

app = marimo.App()


@app.cell
def _():
    import tempfile, time
    import numpy as np
    import histoscope as hs

    run = hs.init("marimo", run_name="live", logdir=tempfile.mkdtemp())

    def log(steps):
        for step in steps:
            for i, key in enumerate(["layer/weight", "layer/bias", "grad"]):
                values = np.random.default_rng(step).normal(i, 1 + step / 10, 300)
                run.add_histogram(key, values, step)
            run.flush()
            time.sleep(0.05)

    log(range(3))
    hs.show(run)
    return log, run


@app.cell
def _(log, run):
    log(range(3, {steps}))
    run
    return


if __name__ == "__main__":
    app.run()
"""

#: Where marimo's export loads marimo's front end from.
CDN = f"https://cdn.jsdelivr.net/npm/@marimo-team/frontend@{marimo.__version__}/dist/"
STATIC = Path(marimo.__file__).parent / "_static"


@pytest.fixture(scope="module")
def notebook(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("marimo") / "live.py"
    path.write_text(NOTEBOOK.replace("{steps}", str(STEPS)))
    return path


def _offline(context: BrowserContext, served: str) -> list[str]:
    """Refuses every request but to ``served``, answering marimo's CDN from the installed
    package; the list of refused addresses."""
    refused: list[str] = []

    def answer(route: Route) -> None:
        url = route.request.url
        local = STATIC / url[len(CDN) :].split("?")[0]
        if url.startswith(CDN) and local.is_file():
            route.fulfill(path=str(local))
        elif url.startswith(served):
            route.continue_()
        else:
            refused.append(url)
            route.abort()

    context.route("**/*", answer)
    return refused


def _widget(page: Page) -> Locator:
    return page.locator(".histoscope-widget").first


def _held(widget: Locator) -> tuple[int, int]:
    """The keys the widget holds, and the step its cards show."""
    keys, step = widget.evaluate(
        "h => [h.histoscopeData.tags.length, Number(h.dataset.step || -1)]"
    )
    return keys, step


def _check_drawn_and_accessible(page: Page, name: str) -> None:
    widget = _widget(page)
    # Cards are drawn as they scroll into view.
    widget.locator("article.card").first.scroll_into_view_if_needed()
    widget.locator(".card.mounted canvas, .card.mounted svg").first.wait_for(
        state="attached", timeout=60_000
    )
    widget.locator("#overview canvas").first.wait_for(state="attached", timeout=30_000)
    # marimo draws an anywidget in a shadow root of its own element.
    inside = {"fromShadowDom": ["marimo-anywidget", ".histoscope-widget"]}
    results = Axe().run(page, context={"include": [inside]})
    found = [(v["id"], [n["target"] for n in v["nodes"]]) for v in results.response["violations"]]
    OUTPUT.mkdir(exist_ok=True)
    widget.screenshot(path=str(OUTPUT / f"marimo-{name}.png"))
    assert found == [], found


def test_an_exported_notebook_draws_the_whole_run(
    browser: Browser, notebook: Path, tmp_path: Path
) -> None:
    exported = tmp_path / "live.html"
    done = subprocess.run(
        [sys.executable, "-m", "marimo", "export", "html", str(notebook), "-o", str(exported)],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert done.returncode == 0 and exported.is_file(), done.stderr[-3000:]
    context = browser.new_context(viewport={"width": 1200, "height": 1000})
    refused = _offline(context, "file:")
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(exported.as_uri())
    _check_drawn_and_accessible(page, "export")
    # Both outputs (`hs.show(run)`, then `run`) are the one model, saved as it ended.
    assert page.locator(".histoscope-widget").count() == 2
    keys, step = _held(_widget(page))
    assert (keys, step) == (KEYS, STEPS - 1), (keys, step)
    assert refused == [] and errors == [], (refused, errors)
    context.close()


@pytest.fixture
def server(notebook: Path) -> Iterator[str]:
    """``marimo run`` on the notebook: its address. Each page that opens it runs the
    notebook anew."""
    command = lambda port: [  # noqa: E731
        sys.executable, "-m", "marimo", "run", str(notebook), "--headless", "--no-token",
        "--port", str(port), "--host", "127.0.0.1",
    ]  # fmt: skip
    address = lambda port: f"http://127.0.0.1:{port}/"  # noqa: E731
    with serving("marimo", command, address, notebook.parent / "server.log") as port:
        yield address(port)


def test_a_served_notebook_draws_the_widget_and_grows_while_the_cell_logs(
    browser: Browser, server: str
) -> None:
    context = browser.new_context(viewport={"width": 1200, "height": 1000})
    refused = _offline(context, server)
    page = context.new_page()
    errors: list[Any] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(server)
    widget = _widget(page)
    widget.wait_for(state="attached", timeout=90_000)
    # The first cell's output, shown while the second cell logs the rest.
    first = widget.evaluate("h => Number(h.dataset.step || -1)")
    page.wait_for_function(
        "([h, s]) => Number(h.dataset.step) > s + 20",
        arg=[widget.element_handle(), max(first, 0)],
        timeout=60_000,
    )
    page.wait_for_function(
        "([h, last]) => Number(h.dataset.step) === last",
        arg=[widget.element_handle(), STEPS - 1],
        timeout=60_000,
    )
    assert _held(widget) == (KEYS, STEPS - 1)
    _check_drawn_and_accessible(page, "server")
    assert refused == [] and errors == [], (refused, errors)
    context.close()
