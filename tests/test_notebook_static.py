"""The live view that needs no widget manager (`histoscope.notebook.static_view`), in a
real IPython kernel driven through jupyter_client, as a front end with no widget manager
(VS Code offline, nbclient) sees it: one display, replaced in place while the cell logs,
and no widget's comm at all. Chosen by hand (``view="static"``) and by itself where
anywidget cannot be imported."""

from __future__ import annotations

import re
from typing import Any

import pytest

jupyter_client = pytest.importorskip("jupyter_client")

from kernel_messages import DRAWN, run_steps  # noqa: E402

LOGS = """
import tempfile, time
import numpy as np
import histoscope as hs

run = hs.init("static", run_name="live", logdir=tempfile.mkdtemp())

def log(steps):
    for step in steps:
        values = np.random.default_rng(step).normal(0, 1 + step / 10, 200)
        run.add_histogram("layer/weight", values, step)
        run.flush()
        time.sleep(0.05)
"""


#: The widget's output in a front end that draws it.
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

#: What a front end with no widget manager is shown.
DISPLAYED = ("display_data", "update_display_data", "comm_open")


def run_cells(steps: list[str | float], timeout: float = 120) -> list[dict[str, Any]]:
    """Every display and comm-open message of running ``steps`` (`kernel_messages.run_steps`)."""
    return run_steps(steps, DISPLAYED, timeout)


def _steps(page: str) -> list[int]:
    """The steps the view's table shows, from its HTML."""
    return [int(step) for step in re.findall(r"<td>(\d+)</td>", page)]


def test_a_static_view_is_replaced_in_place_while_the_cell_logs() -> None:
    cell = (
        LOGS
        + """
log(range(3))
hs.show(run, view="static")
log(range(3, 60))
run.finish()
"""
    )
    seen = run_cells([cell])
    assert [m for m in seen if m["type"] == "comm_open"] == []  # no widget
    shown = [m for m in seen if m["type"] == "display_data"]
    assert len(shown) == 1
    display_id = shown[0]["transient"]["display_id"]
    first = shown[0]["data"]["text/html"]
    assert "layer/weight" in first and "<script" not in first
    updates = [m for m in seen if m["type"] == "update_display_data"]
    assert len(updates) >= 2, len(updates)  # while the cell ran, not once at its end
    assert {m["transient"]["display_id"] for m in updates} == {display_id}
    last = updates[-1]["data"]["text/html"]
    assert 59 in _steps(last) and 59 not in _steps(first), (_steps(first), _steps(last))


def test_without_anywidget_show_is_the_static_view() -> None:
    cell = (
        "import sys\nsys.modules['anywidget'] = None  # not installed\n"
        + LOGS
        + "log(range(5))\nrun.finish()\nhs.show(run)\n"
    )
    seen = run_cells([cell])
    assert [m["type"] for m in seen] == ["display_data"]
    assert "layer/weight" in seen[0]["data"]["text/html"]


def test_a_view_that_is_neither_is_refused() -> None:
    import histoscope as hs

    with pytest.raises(ValueError, match='view must be "widget" or "static"'):
        hs.show("logs", view="dashboard")


#: The widget falls back a second after its cell ends, not five: the tests idle less.
UNDRAWN_SOON = "import histoscope.notebook.live_widget as live\nlive.UNDRAWN_SECONDS = 1.0\n"

SHOWN = LOGS + UNDRAWN_SOON + "log(range(3))\nhs.show(run{view})\n"


def _fallen_back(seen: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The widget's outputs replaced by its saved view alone: no widget view in them."""
    return [m for m in seen if m["type"] == "update_display_data" and WIDGET_VIEW not in m["data"]]


def test_a_widget_no_front_end_draws_falls_back_once_the_kernel_idles() -> None:
    """As in VS Code offline, or a front end without a widget manager: no view says it
    was drawn. Cells run back to back never let the kernel hear, so nothing changes
    until it idles; then the output is the saved view, replaced while a cell logs."""
    cells = [SHOWN.format(view=""), "time.sleep(2)", 3.0, "log(range(3, 60))\nrun.finish()"]
    seen = run_cells(cells)
    shown = [m for m in seen if m["type"] == "display_data"]
    assert len(shown) == 1 and WIDGET_VIEW in shown[0]["data"]
    fallen = _fallen_back(seen)
    assert [m["cell"] for m in fallen[:1]] == [None], [m["cell"] for m in fallen]  # idle
    display_id = shown[0]["transient"]["display_id"]
    assert {m["transient"]["display_id"] for m in fallen} == {display_id}
    while_logging = [m for m in fallen if m["cell"] == 3]
    assert len(while_logging) >= 2, len(while_logging)
    assert 59 in _steps(fallen[-1]["data"]["text/html"])
    # The widget's own outputs were saved at its cell's end only, before it fell back.
    kept = [m["cell"] for m in seen if m["type"] == "update_display_data" and m not in fallen]
    assert kept == [0], kept


def test_a_drawn_widget_stays_and_an_undrawn_one_comes_back_when_drawn() -> None:
    drawn = run_cells([SHOWN.format(view=""), DRAWN, 3.0, "log(range(3, 20))"])
    assert _fallen_back(drawn) == []
    late = run_cells([SHOWN.format(view=""), 3.0, DRAWN, 1.0, "log(range(3, 20))"])
    fallen = _fallen_back(late)
    assert fallen and fallen[0]["cell"] is None
    after = late[late.index(fallen[-1]) + 1 :]
    back = [m for m in after if m["type"] == "update_display_data"]
    assert back and all(WIDGET_VIEW in m["data"] for m in back), back
    assert back[0]["cell"] is None  # on hearing the word, not at a cell's end
    # The widget's snapshot was saved again on its return: the cell's end saved it.
    assert 19 in _steps(back[-1]["data"]["text/html"])


def test_a_widget_asked_for_by_name_never_falls_back() -> None:
    seen = run_cells([SHOWN.format(view=', view="widget"'), 3.0, "log(range(3, 10))"])
    assert _fallen_back(seen) == []
