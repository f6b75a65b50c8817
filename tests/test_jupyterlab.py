"""The notebook widget in a real JupyterLab and a real Notebook 7, each started here and
driven in headless Chromium: a cell trains a small PyTorch model with `run.watch` and
shows `run`; the overview and the cards appear and grow while the cell runs, are used by
keyboard without the front end taking the keys, and axe finds nothing in the widget.
Nothing is asked of the network."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from axe_playwright_python.sync_playwright import Axe
from browser import OUTPUT
from playwright.sync_api import Browser, Page, expect
from served import serving

pytest_plugins = ["browser"]  # the browser fixture

TOKEN = "histoscope-test"

#: The widget's page (its scrolling box) in its shadow root, in the page's JavaScript.
PAGE = "document.querySelector('.histoscope-widget').shadowRoot.querySelector('.histoscope-page')"

SETUP = """
import tempfile, time, torch, histoscope as hs
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
run = hs.init("lab", run_name="live", logdir=tempfile.mkdtemp())
run.watch(model, every=2, log="all")
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)

def train(steps):
    for step in range(steps):
        x = torch.randn(64, 8)
        loss = ((model(x) - x.sum(1, keepdim=True)) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        time.sleep(0.05)

train(4)
run
"""

#: Long enough to watch the widget grow while the cell is busy (about 20 s).
TRAIN = "train(400)"


def _write_home(root: Path) -> dict[str, str]:
    """The notebook, and JupyterLab's settings and state kept in ``root``: no news asked
    for, the notebook's kernel started unasked, nothing read from or written to the
    user's Jupyter folders."""
    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(SETUP), nbformat.v4.new_code_cell(TRAIN)],
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
    )
    nbformat.write(notebook, root / "live.ipynb")
    settings = {
        "apputils-extension/notification": '{"fetchNews": "false"}',
        # Without it JupyterLab now and then asks for a kernel the notebook names.
        "notebook-extension/tracker": '{"autoStartDefaultKernel": true}',
    }
    for name, text in settings.items():
        path = root / "settings" / "@jupyterlab" / f"{name}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return dict(
        os.environ,
        JUPYTER_CONFIG_DIR=str(root / "config"),
        JUPYTER_RUNTIME_DIR=str(root / "runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(root / "settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(root / "workspaces"),
    )


#: Each front end: its module, its application's name in options, the notebook's page,
#: and its own options.
FRONT_ENDS = {
    "jupyterlab": ("jupyterlab", "LabApp", "lab/tree/live.ipynb",
                   ["--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]),
    "notebook7": ("notebook", "JupyterNotebookApp", "notebooks/live.ipynb", []),
}  # fmt: skip


@contextlib.contextmanager
def _serving(front_end: str, root: Path, disabled: tuple[str, ...] = ()) -> Iterator[str]:
    """``front_end`` serving ``root`` on a free port, its kernels in its process group,
    with the JupyterLab extensions named in ``disabled`` off: the notebook's address."""
    module, app, notebook, extra = FRONT_ENDS[front_end]
    env = _write_home(root)
    if disabled:
        config = root / "config" / "labconfig" / "page_config.json"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(json.dumps({"disabledExtensions": dict.fromkeys(disabled, True)}))
    command = lambda port: [  # noqa: E731
        sys.executable, "-m", module, "--no-browser", "--allow-root",
        f"--port={port}", "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={TOKEN}",
        f"--ServerApp.root_dir={root}", f"--{app}.expose_app_in_browser=True", *extra,
    ]  # fmt: skip
    status = lambda port: f"http://127.0.0.1:{port}/api/status?token={TOKEN}"  # noqa: E731
    with serving(front_end, command, status, root / "lab.log", env=env, wait_seconds=120) as port:
        yield f"http://127.0.0.1:{port}/{notebook}?token={TOKEN}"


@pytest.fixture(scope="module", params=sorted(FRONT_ENDS))
def lab(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, str]]:
    """JupyterLab, or Notebook 7: its name, and the notebook's address."""
    with _serving(request.param, tmp_path_factory.mktemp(request.param)) as address:
        yield request.param, address


def _open_notebook(page: Page, address: str) -> None:
    page.goto(address)
    page.wait_for_function(
        "() => window.jupyterapp && document.querySelector('.jp-Notebook')", timeout=120_000
    )
    page.wait_for_function(
        "() => { const s = window.jupyterapp.shell.currentWidget?.sessionContext;"
        " return s?.isReady && s.session?.kernel?.connectionStatus === 'connected'; }",
        timeout=120_000,
    )
    expect(page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']")).to_be_visible(
        timeout=120_000
    )
    page.evaluate("() => window.jupyterapp.shell.collapseLeft?.()")  # the notebook's full width


def _run_both_cells(page: Page) -> None:
    """As one would: the first cell chosen, then Shift+Enter on it and on the next."""
    page.locator(".jp-Notebook .jp-Cell .jp-InputPrompt").first.click()
    page.keyboard.press("Shift+Enter")
    page.keyboard.press("Shift+Enter")


def _held(page: Page) -> tuple[int, int]:
    """The keys the widget's page holds, and the steps it holds of its run."""
    return page.evaluate(
        "() => { const d = document.querySelector('.histoscope-widget').histoscopeData;"
        " const steps = Object.values(d.steps)[0] || []; return [d.tags.length, steps.length]; }"
    )


#: The step the widget's drawn cards show, in the page's JavaScript.
DRAWN_STEP = "Number(document.querySelector('.histoscope-widget').dataset.step)"


def _drawn_step(page: Page) -> int:
    return int(page.evaluate(f"() => {DRAWN_STEP}"))


def test_the_widget_grows_while_the_cell_trains_and_is_read_by_keyboard(
    browser: Browser, lab: tuple[str, str]
) -> None:
    name, address = lab
    origin = "/".join(address.split("/")[:3])
    context = browser.new_context(viewport={"width": 1400, "height": 1100})
    asked: list[str] = []
    context.route(
        lambda u: not u.startswith(origin), lambda r: (asked.append(r.request.url), r.abort())
    )
    errors: list[str] = []
    page = context.new_page()

    # Errors of the widget's code (a module anywidget loads from a blob: URL) count, and
    # any not wholly in the front end's bundles; Notebook 7 raises one of its own while
    # loading its settings ("reading 'schema'", every frame in its static bundles).
    def note(error: Any) -> None:
        stack = error.stack or ""
        if "blob:" in stack or "/static/" not in stack:
            errors.append(f"{error}\n{stack}")

    page.on("pageerror", note)
    # The README's picture is JupyterLab's.
    picture = "notebook-widget" if name == "jupyterlab" else f"notebook-widget-{name}"
    try:
        _watch_the_training(page, address, errors, picture)
    except AssertionError:
        OUTPUT.mkdir(exist_ok=True)
        page.screenshot(path=str(OUTPUT / f"{name}-failed.png"))
        raise
    assert asked == [], asked
    context.close()


def _watch_the_training(page: Page, address: str, errors: list[str], picture: str) -> None:
    _open_notebook(page, address)
    _run_both_cells(page)
    widget = page.locator(".histoscope-widget")
    expect(widget).to_be_visible(timeout=120_000)
    busy = page.locator(".jp-Notebook-ExecutionIndicator[data-status='busy']")
    expect(page.locator(".histoscope-widget #overview canvas").first).to_be_visible(timeout=60_000)
    keys, steps = _held(page)
    assert keys == 8, keys  # weights and gradients of two layers' weight and bias
    page.wait_for_function(f"() => {DRAWN_STEP} > 20", timeout=60_000)
    first_step = _drawn_step(page)
    # While the second cell is still running, more steps arrive and the page draws them.
    page.wait_for_function(f"() => {DRAWN_STEP} > {first_step + 40}", timeout=60_000)
    assert busy.is_visible(), "the training ended before the widget was seen to grow"
    assert _held(page)[1] > steps
    card = page.locator(".histoscope-widget article.card").first
    card.scroll_into_view_if_needed()
    chart = page.locator(".histoscope-widget .card.mounted .chart").first
    expect(chart).to_be_visible(timeout=30_000)
    cells = page.locator(".jp-Notebook .jp-Cell").count()
    chart.focus()
    page.keyboard.press("ArrowLeft")
    announcement = page.locator(".histoscope-widget .card.mounted .announcement").first
    expect(announcement).not_to_have_text("", timeout=10_000)
    # Keys that are JupyterLab's shortcuts in command mode stay in the widget:
    # "a" and "b" would add cells, "d d" delete one.
    for key in ("a", "b", "d", "d"):
        page.keyboard.press(key)
    assert page.locator(".jp-Notebook .jp-Cell").count() == cells
    expect(chart).to_be_focused()
    results = Axe().run(page, context=".histoscope-widget")
    found = [(v["id"], [n["target"] for n in v["nodes"]]) for v in results.response["violations"]]
    assert found == [], found
    # The picture in the README: the widget from its top, as the training goes on.
    page.evaluate(f"() => {{ {PAGE}.scrollTop = 0; }}")
    OUTPUT.mkdir(exist_ok=True)
    widget.screenshot(path=str(OUTPUT / f"{picture}.png"))
    assert errors == [], errors
    page.evaluate("() => window.jupyterapp.commands.execute('kernelmenu:interrupt')")


#: The extensions that draw widgets in JupyterLab: without them it has no widget manager.
WIDGET_EXTENSIONS = ("@jupyter-widgets/jupyterlab-manager", "anywidget")

#: The rows of the saved view's table, as the page shows them: each key and its step.
SHOWN_ROWS = (
    "() => [...document.querySelectorAll('.jp-Notebook .jp-OutputArea-output table tbody tr')]"
    ".map((row) => [row.querySelector('th').textContent,"
    " Number(row.querySelector('td').textContent)])"
)

#: Whether the notebook's outputs still carry the widget's view, in the page's JavaScript.
CARRIES_WIDGET = (
    "() => { const cells = window.jupyterapp.shell.currentWidget.content.widgets;"
    " return cells.some((cell) => { const outputs = cell.model.outputs;"
    " if (!outputs) return false;"
    " for (let i = 0; i < outputs.length; i++) {"
    "   if ('application/vnd.jupyter.widget-view+json' in outputs.get(i).data) return true; }"
    " return false; }); }"
)


def test_without_a_widget_manager_the_run_is_its_saved_view_growing_while_it_trains(
    browser: Browser, tmp_path: Path
) -> None:
    """JupyterLab with its widget extensions off, as a front end that cannot draw the
    widget: once the kernel idles, the output is the saved view alone, and it grows
    while the next cell trains; axe finds nothing in it."""
    with _serving("jupyterlab", tmp_path, disabled=WIDGET_EXTENSIONS) as address:
        context = browser.new_context(viewport={"width": 1400, "height": 1100})
        origin = "/".join(address.split("/")[:3])
        asked: list[str] = []
        context.route(
            lambda u: not u.startswith(origin), lambda r: (asked.append(r.request.url), r.abort())
        )
        page = context.new_page()
        try:
            _watch_the_saved_view(page, address)
        except AssertionError:
            OUTPUT.mkdir(exist_ok=True)
            page.screenshot(path=str(OUTPUT / "jupyterlab-no-widgets-failed.png"))
            raise
        assert asked == [], asked
        context.close()


def _watch_the_saved_view(page: Page, address: str) -> None:
    _open_notebook(page, address)
    page.locator(".jp-Notebook .jp-Cell .jp-InputPrompt").first.click()
    page.keyboard.press("Shift+Enter")  # the first cell alone: then the kernel idles
    idle = page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']")
    rows = page.locator(".jp-Notebook .jp-OutputArea-output table tbody tr")
    expect(rows.first).to_be_attached(timeout=120_000)
    expect(idle).to_be_visible(timeout=120_000)
    page.wait_for_function(f"() => !({CARRIES_WIDGET})()", timeout=60_000)
    assert page.locator(".histoscope-widget").count() == 0
    first = dict(page.evaluate(SHOWN_ROWS))
    assert len(first) == 8 and "gradients/0.weight" in first, first
    page.keyboard.press("Shift+Enter")  # the second cell trains
    busy = page.locator(".jp-Notebook-ExecutionIndicator[data-status='busy']")
    expect(busy).to_be_visible(timeout=30_000)
    grown = first["gradients/0.weight"] + 40
    page.wait_for_function(
        f"() => ({SHOWN_ROWS})().some(([key, step]) => key === 'gradients/0.weight'"
        f" && step >= {grown})",
        timeout=60_000,
    )
    assert busy.is_visible(), "the training ended before the view was seen to grow"
    results = Axe().run(page, context=".jp-Notebook .jp-OutputArea-output")
    found = [(v["id"], [n["target"] for n in v["nodes"]]) for v in results.response["violations"]]
    assert found == [], found
    page.evaluate("() => window.jupyterapp.commands.execute('kernelmenu:interrupt')")
