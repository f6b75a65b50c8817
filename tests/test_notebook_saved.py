"""A saved notebook read where no script runs (GitHub, nbviewer's static mode, a code
review, a screen reader there): each shown widget's output holds, in plain HTML and
inline SVG, the findings, every key's last statistics and the overview; axe finds
nothing wrong in it; and a 100-layer model's widget adds under 100 KB to the notebook."""

from __future__ import annotations

import html
import json
import re

import numpy as np
from browser import assert_accessible
from saved_notebook import (
    bytes_added,
    execute,
    printed,
    state_bytes,
    static_page,
    strip,
    widget_outputs,
)

from histoscope import _core
from histoscope.notebook.saved_view import SAVED_BYTES, saved_view
from histoscope.view.overview_svg import MAX_ROWS, Row, overview_svg

pytest_plugins = ["browser"]  # the browser and open_page fixtures

#: The budget of one shown widget's output in a saved notebook.
BUDGET = 100 * 1024

# Every unit of the first layer is dead (its bias far below zero), so its gradients are
# exactly zero: the diagnosis has something to say.
TRAINING = """
import json, tempfile, time, torch, histoscope as hs
torch.manual_seed(0)
model = torch.nn.Sequential({layers})
with torch.no_grad():
    model[0].bias.fill_(-1000.0)
run = hs.init("nb", run_name="saved", logdir=tempfile.mkdtemp())
run.watch(model, every=2, log="all")
hs.show(run)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range({steps}):
    x = torch.randn(64, 8)
    loss = ((model(x) - x.sum(1, keepdim=True)) ** 2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
run.flush()
time.sleep(1.5)  # the widget asks the run for its findings at most once a second
names = [name for name, _ in model.named_parameters()]
keys = [f"{{kind}}/{{name}}" for kind in ("parameters", "gradients") for name in names]
print(json.dumps({{"keys": keys, "findings": [f.message for f in run.findings()]}}))
"""

TINY = "torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1)"
DEEP = (
    "torch.nn.Linear(8, 16), *[torch.nn.Linear(16, 16) for _ in range(98)], torch.nn.Linear(16, 1)"
)

FIRST_RUN = """
import tempfile, time, numpy as np, histoscope as hs
logs = tempfile.mkdtemp()
first = hs.init("grown", run_name="first", logdir=logs)
for step in range(3):
    first.add_histogram("early/w", np.random.default_rng(step).normal(size=500), step)
first.finish()
hs.show(f"{logs}/grown")
"""

# A run added after the widget was shown: the saved view is of the widget at save time.
SECOND_RUN = """
second = hs.init("grown", run_name="second", logdir=logs)
for step in range(3):
    second.add_histogram("late/w", np.random.default_rng(step).normal(size=500), step)
second.finish()
time.sleep(2)  # the widget reads the directory again a few times a second
"""


def test_a_saved_notebook_holds_keys_findings_and_overview_with_no_script(
    tmp_path, open_page
) -> None:
    """The keys and findings of a training watched in the notebook, and of a log directory
    that grew after it was shown, are in the saved notebook once scripts, frames and
    styles are stripped; axe finds no violation in that page."""
    cells = [TRAINING.format(layers=TINY, steps=60), FIRST_RUN, SECOND_RUN]
    notebook = execute(cells, tmp_path / "saved.ipynb")
    expected = json.loads(printed(notebook.cells[0]).strip().splitlines()[-1])
    shown = widget_outputs(notebook)
    assert len(shown) == 2, [cell.outputs for cell in notebook.cells]
    # Nothing in the widgets' HTML needs a script, a style or a frame: stripping keeps it.
    for output in shown:
        assert strip(output["data"]["text/html"]) == output["data"]["text/html"]
    trained, followed = (output["data"]["text/html"] for output in shown)
    assert expected["findings"], "the dead layer should be found"
    for key in expected["keys"]:
        assert f'<th scope="row">{key}</th>' in trained, key
    for message in expected["findings"]:
        assert html.escape(message, quote=False) in trained, message
    for key in ("early/w", "late/w"):
        assert f'<th scope="row">{key}</th>' in followed, key
    path = tmp_path / "saved.html"
    path.write_text(static_page(notebook, "A saved notebook"), encoding="utf-8")
    page = open_page(path)
    assert page.locator("svg[role=img] > title").count() == 2
    assert page.locator("script, iframe, style").count() == 0
    assert_accessible(page)


def test_a_100_layer_models_widget_adds_under_100_kb(tmp_path, open_page) -> None:
    """A 100-layer model (400 keys of parameters and gradients) shown while it trains: its
    saved output, every key in the table, stays within the budget."""
    notebook = execute([TRAINING.format(layers=DEEP, steps=40)], tmp_path / "deep.ipynb")
    expected = json.loads(printed(notebook.cells[0]).strip().splitlines()[-1])
    (output,) = widget_outputs(notebook)
    added = bytes_added(notebook, output)
    saved = output["data"]["text/html"]
    assert added <= BUDGET, (
        f"the widget's output adds {added:,} bytes to the .ipynb ({len(saved):,} of HTML),"
        f" over the {BUDGET:,} budget; its saved widget state adds {state_bytes(notebook):,}"
    )
    assert len(expected["keys"]) == 400
    for key in expected["keys"]:
        assert f'<th scope="row">{key}</th>' in saved, key
    path = tmp_path / "deep.html"
    path.write_text(static_page(notebook, "A 100-layer model"), encoding="utf-8")
    assert_accessible(open_page(path))


def _chart(keys: int, steps: int = 4, name: str = "parameters/layer") -> _core.LiveChart:
    chart = _core.LiveChart(bins=8)
    for k in range(keys):
        for step in range(steps):
            spread = 10.0 ** (-k % 6)
            stats = _core.Stats(
                count=10, min=-spread, max=spread, mean=0, std=spread / 2,
                nonfinite=0, below=0, above=0,
            )  # fmt: skip
            chart.add(f"{name}.{k}.weight", "run", step, np.array([[-spread, spread, 10.0]]), stats)
    return chart


def test_the_overview_joins_neighbouring_keys_past_its_rows() -> None:
    """Past MAX_ROWS keys, a row holds neighbours (said in its description); a key not
    logged yet at a step has no cell there; a wide span is coloured on a log scale."""
    early = Row("early", np.array([0, 1, 2, 3]), np.array([1.0, 2.0, 3.0, 4.0]))
    late = Row("late", np.array([2, 3]), np.array([1e-6, 1.0]))
    svg = overview_svg([("section", [early, late])])
    cells = re.findall(r"M(\d+) (\d+)h(\d+)", svg)
    late_y = max(int(y) for _, y, _ in cells)
    assert sum(int(w) for _, y, w in cells if int(y) == late_y) == 2 * 10  # two of four steps
    assert "log scale" in svg and "one row per key" in svg
    many = [Row(f"k{i}", np.arange(3), np.full(3, i + 1.0)) for i in range(MAX_ROWS * 3)]
    svg = overview_svg([("section", many)])
    assert "each row up to 3 neighbouring keys" in svg
    assert svg.count("<text") == MAX_ROWS + 1 + 4  # rows, the heading, axis and legend words


def test_the_saved_view_keeps_to_its_budget_and_counts_what_it_leaves_out() -> None:
    """A chart far larger than a 100-layer model: the view stays within SAVED_BYTES and
    says how many keys its table leaves out; a small one lists every key."""
    big = saved_view(_chart(3000, name="a/very.long.module.path.of.a.deep.model").whole(), {}, "b")
    listed = big.count('scope="row"')
    assert len(big.encode()) <= SAVED_BYTES, len(big.encode())
    assert 0 < listed < 3000 and f"{3000 - listed} more keys" in big
    small = saved_view(_chart(12).whole(), {}, "small")
    assert small.count('scope="row"') == 12 and "more keys" not in small
