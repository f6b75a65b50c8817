"""The notebook widget (histoscope.notebook): the core's live chart as the page receives
it, the widget's page in Chromium, notebooks executed headless (state and fallback kept),
and a real JupyterLab driven by keyboard while a training runs (tests/notebook_lab.py)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from browser import assert_accessible
from playwright.sync_api import Browser, BrowserContext, Page, expect
from saved_notebook import execute
from widget_page import deliver, held, open_widget

import histoscope as hs
from histoscope import _core
from histoscope.notebook.messages import FIGURES, message, pack

pytest_plugins = ["browser"]  # the browser fixture

#: The widget's shadow root, in the page's JavaScript.
ROOT = "document.querySelector('.histoscope-widget').shadowRoot"


def _stats(values: np.ndarray) -> _core.Stats:
    return _core.Stats(
        count=float(values.size), min=float(values.min()), max=float(values.max()),
        mean=float(values.mean()), std=float(values.std()), nonfinite=0.0, below=0.0, above=0.0,
    )  # fmt: skip


def _buckets(values: np.ndarray, bins: int = 12) -> np.ndarray:
    counts, edges = np.histogram(values, bins=bins)
    return np.column_stack([edges[:-1], edges[1:], counts]).astype(np.float64)


def _grow(chart: _core.LiveChart, steps: range, restart_at: int | None = None) -> list:
    """Adds steps of three keys whose spread grows (the bins widen), one restarted."""
    rng = np.random.default_rng(0)
    for step in steps:
        for i, tag in enumerate(["layer/<b>weight</b>", "layer/bias", "grad"]):
            values = rng.normal(i, 1 + step / 10, 200)
            chart.add(tag, "run", step, _buckets(values), _stats(values))
        if restart_at is not None and step == restart_at:
            values = rng.normal(0, 1, 200)
            chart.add("grad", "run", 3, _buckets(values), _stats(values))
    return []


def _expected(chart: _core.LiveChart) -> dict:
    """Per key, the steps and counts the core holds, decoded from its whole update."""
    whole = chart.whole()
    out, at = {}, 0
    counts = whole.counts.reshape(-1, chart.bins)
    for change in whole.changes:
        rows = slice(at, at + change.rows)
        out[change.tag] = (whole.steps[rows].tolist(), counts[rows].tolist())
        at += change.rows
    return out


def _page_holds(page, chart: _core.LiveChart) -> None:
    data = held(page)
    for tag, (steps, counts) in _expected(chart).items():
        entry = data["cards"][tag]["runs"]["run"]
        assert entry["steps"] == steps, tag
        np.testing.assert_allclose(entry["counts"], counts, rtol=1e-6)
        assert set(entry["stats"]) == set(FIGURES)


def test_the_module_and_page_carry_no_import_and_no_script() -> None:
    from histoscope.view.page import widget_module, widget_page

    assert "import " not in widget_module()
    page = widget_page("<img src=x onerror=alert(1)>")
    assert "<img src=x" not in page and '<script type="module' not in page


def test_the_page_follows_the_core_update_by_update(browser: Browser) -> None:
    """Small budgets (several updates per step), bins widening, steps halved and a
    restart: the page ends up holding exactly what the core holds, and a page made
    from the snapshot holds the same."""
    chart = _core.LiveChart(bins=12, keep=8)
    context = browser.new_context()
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    open_widget(page)
    for block in range(6):
        _grow(chart, range(block * 7, block * 7 + 7), restart_at=10 if block == 1 else None)
        while chart.pending:
            header, buffers = message(chart.take_update(900), chart.bins)
            assert len(header["changes"]) >= 1
            deliver(page, header, buffers)
    _page_holds(page, chart)
    status = f"{ROOT}.getElementById('status').textContent"
    page.wait_for_function(f"() => {status}.includes('3 histogram keys')")
    # Key names are text: the markup in one is shown, never parsed.
    headings = page.evaluate(f"() => [...{ROOT}.querySelectorAll('h3')].map(h => h.textContent)")
    assert any("<b>weight</b>" in h for h in headings), headings
    header, buffers = message(chart.whole(), chart.bins, {"findings": [], "notes": []})
    again = context.new_page()
    open_widget(again, pack(header, buffers))
    _page_holds(again, chart)
    assert errors == []
    context.close()


def _opened_widget(browser: Browser, steps: int) -> tuple[_core.LiveChart, BrowserContext, Page]:
    """A chart grown over ``steps`` steps, and an empty widget page in a context of its own."""
    chart = _core.LiveChart()
    _grow(chart, range(steps))
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    page = context.new_page()
    open_widget(page)
    return chart, context, page


def test_the_widget_is_drawn_read_by_keyboard_and_passes_axe(browser: Browser) -> None:
    chart, context, page = _opened_widget(browser, 20)
    deliver(page, *message(chart.take_update(1 << 20), chart.bins, {"findings": [], "notes": []}))
    root = ROOT
    page.wait_for_function(
        f"() => {root}.querySelectorAll('.card.mounted canvas, .card.mounted svg').length > 0"
    )
    page.wait_for_function(f"() => {root}.querySelectorAll('#overview canvas').length > 0")
    chart_node = page.locator(".histoscope-widget .card.mounted .chart").first
    chart_node.focus()
    page.keyboard.press("ArrowRight")
    announced = page.locator(".histoscope-widget .card.mounted .announcement").first
    announced.wait_for()
    page.wait_for_function(
        f"() => ({root}.querySelector('.card.mounted .announcement').textContent || '').length > 0"
    )
    assert_accessible(page)
    context.close()


def test_show_refuses_what_it_cannot_show_and_needs_a_kernel(tmp_path) -> None:
    with pytest.raises(TypeError, match="show\\(\\) takes a Run"):
        hs.show(42)
    run = hs.init("nb", logdir=str(tmp_path))
    with pytest.raises(RuntimeError, match="histoscope view"):
        hs.show(run)
    run.finish()


def test_importing_histoscope_imports_no_widget() -> None:
    code = "import sys, histoscope; print('anywidget' in sys.modules, 'ipywidgets' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


TRAINING = """
import tempfile, time, torch, histoscope as hs
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
run = hs.init("nb", run_name="live", logdir=tempfile.mkdtemp())
run.watch(model, every=2, log="all")
hs.show(run)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range({steps}):
    x = torch.randn(64, 8)
    loss = ((model(x) - x.sum(1, keepdim=True)) ** 2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    time.sleep({pause})
run.flush()
time.sleep(0.5)
print("updates", run._widget.updates, "largest", run._widget.largest_update)
"""


def test_an_executed_notebook_keeps_the_widget_and_a_fallback(browser, tmp_path) -> None:
    """nbclient saves the widget's state (its snapshot) and, in the output, the saved view
    of the same data."""
    import base64
    import json

    from widget_page import held as held_by

    notebook = execute([TRAINING.format(steps=120, pause=0.01)], tmp_path / "run.ipynb")
    outputs = notebook.cells[0].outputs
    shown = [o for o in outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert len(shown) == 1, outputs
    printed = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    updates, largest = (int(w) for w in printed.split()[1::2][:2])
    assert updates >= 2 and largest <= 100 * 1024, printed
    model_id = shown[0]["data"]["application/vnd.jupyter.widget-view+json"]["model_id"]
    state = notebook.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    buffers = {tuple(b["path"]): b["data"] for b in state[model_id].get("buffers", [])}
    snapshot = base64.b64decode(buffers[("_snapshot",)])
    length = int.from_bytes(snapshot[:4], "little")
    header = json.loads(snapshot[4 : 4 + length])
    keys = {c["tag"] for c in header["changes"]}
    assert {"parameters/0.weight", "gradients/2.bias"} <= keys, keys
    # The saved state draws the same widget: a page made from it holds every key.
    context = browser.new_context()
    page = context.new_page()
    open_widget(page, snapshot)
    assert set(held_by(page)["cards"]) == keys
    context.close()
    # The fallback is the saved view of the same data, with no script or frame (read as
    # GitHub reads it in test_notebook_saved.py).
    fallback = shown[0]["data"]["text/html"]
    for key in keys:
        assert f'<th scope="row">{key}</th>' in fallback, key
    assert "<script" not in fallback and "<iframe" not in fallback


AS_LAST_LINE = """
import tempfile, numpy as np, histoscope as hs
run = hs.init("nb", run_name="last", logdir=tempfile.mkdtemp())
for step in range(3):
    run.add_histogram("w", np.random.default_rng(step).normal(size=100), step)
run
"""


def test_a_run_as_the_last_line_of_a_cell_is_its_widget_shown_once(tmp_path) -> None:
    """IPython shows a Run by the formatter histoscope.notebook registers; shown again,
    it is the same widget (one model), and a finished run is still drawn from its file."""
    notebook = execute([AS_LAST_LINE, "run", "run.finish()\nrun"], tmp_path / "last.ipynb")
    views = [
        [o["data"]["application/vnd.jupyter.widget-view+json"]["model_id"] for o in cell.outputs
         if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
        for cell in notebook.cells
    ]  # fmt: skip
    assert [len(v) for v in views] == [1, 1, 1], views
    assert views[0] == views[1] and views[2] != views[0]


def test_outside_a_kernel_a_run_shown_by_ipython_is_its_text() -> None:
    code = (
        "from IPython.testing.globalipapp import start_ipython\n"
        "shell = start_ipython()\n"
        "import tempfile, histoscope as hs\n"
        "run = hs.init('p', run_name='r', logdir=tempfile.mkdtemp())\n"
        "shell.display_formatter.format(run)\n"
        "run.finish()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "Run(project='p', name='r'" in out.stdout


def _finding(key: str, step: int) -> dict:
    return {
        "kind": "nonfinite", "run": "run", "key": key, "role": "gradient",
        "first_step": step, "last_step": step + 2, "severity": "error",
        "evidence": {"steps": 3.0, "nonfinite_count": 3.0},
        "message": f"{key}: NaN or infinite values at 3 of 6 steps from step {step}",
    }  # fmt: skip


def test_the_widgets_findings_are_announced_once_each(browser: Browser) -> None:
    """A finding the kernel sends again with every update is spoken once; a new one is."""
    chart, context, page = _opened_widget(browser, 6)
    first = {"findings": [_finding("grad", 3)], "notes": []}
    deliver(page, *message(chart.take_update(1 << 20), chart.bins, first))
    live = page.locator(".histoscope-widget #alerts-live")
    expect(live).to_contain_text("1 new finding: grad: NaN", timeout=20_000)
    expect(page.locator(".histoscope-widget #findings-count")).to_have_text("1 error")
    page.evaluate(
        f"""() => {{ window.__spoken = 0; new MutationObserver(() => window.__spoken++)
          .observe({ROOT}.getElementById('alerts-live'), {{childList: true}}); }}"""
    )
    for steps in (range(6, 9), range(9, 12)):  # more steps, the same finding each time
        _grow(chart, steps)
        polls = int(page.locator(".histoscope-widget").get_attribute("data-polls") or 0)
        deliver(page, *message(chart.take_update(1 << 20), chart.bins, first))
        expect(page.locator(".histoscope-widget")).not_to_have_attribute("data-polls", str(polls))
    assert page.evaluate("window.__spoken") == 0  # announced once, not at every update
    both = {"findings": [_finding("grad", 3), _finding("layer/bias", 9)], "notes": []}
    deliver(page, *message(chart.take_update(1 << 20), chart.bins, both))
    expect(live).to_contain_text("1 new finding: layer/bias: NaN", timeout=20_000)
    expect(page.locator(".histoscope-widget #findings-count")).to_have_text("2 errors")
    context.close()
