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

LOGS = """
import tempfile, time
import numpy as np
import histoscope as hs

run = hs.init("static", run_name="live", dir=tempfile.mkdtemp())

def log(steps):
    for step in steps:
        values = np.random.default_rng(step).normal(0, 1 + step / 10, 200)
        run.add_histogram("layer/weight", values, step)
        run.flush()
        time.sleep(0.05)
"""


def run_cells(cells: list[str], timeout: float = 120) -> list[dict[str, Any]]:
    """Every display and comm message the kernel published running ``cells``, in order."""
    from jupyter_client.manager import start_new_kernel

    manager, client = start_new_kernel(kernel_name="python3")
    seen: list[dict[str, Any]] = []
    try:
        for cell in cells:
            asked = client.execute(cell)
            while True:
                msg = client.get_iopub_msg(timeout=timeout)
                kind, content = msg["msg_type"], msg["content"]
                if kind == "error":
                    raise AssertionError("\n".join(content["traceback"]))
                if kind in ("display_data", "update_display_data", "comm_open"):
                    seen.append({"type": kind, **content})
                if kind == "status" and content["execution_state"] == "idle":
                    if msg["parent_header"].get("msg_id") == asked:
                        break
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    return seen


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
