"""What the notebook's shown views do at the end of each cell, registered with IPython
once for all of them: the widget saves its snapshot and fallback, the static view shows
what the cell logged. Cells' starts are counted too: a kernel whose count did not move
for a while after a cell's end was idle all that time (a widget tells by it that no
front end draws it, as a view that drew would have said so by then).

Example:
    >>> ran = []
    >>> at_cell_end(lambda: ran.append(1))  # outside IPython: nothing to hook into
    False
    >>> hooked(), cells_started()
    (False, 0)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_callbacks: list[Callable[[], None]] = []
_hooked = False
_started = 0


def at_cell_end(callback: Callable[[], None]) -> bool:
    """Has IPython run ``callback`` at the end of each cell (once however often it is
    asked); whether there is an IPython to run it."""
    global _hooked
    if callback not in _callbacks:
        _callbacks.append(callback)
    if not _hooked:
        from IPython import get_ipython

        shell = get_ipython()
        if shell is None:
            return False
        shell.events.register("pre_run_cell", _count_start)
        shell.events.register("post_run_cell", _run_all)
        _hooked = True
    return True


def hooked() -> bool:
    """Whether cells' ends are hooked: not in marimo, which has none."""
    return _hooked


def cells_started() -> int:
    """How many cells began to run since cells' ends were hooked."""
    return _started


def _count_start(*_info: Any) -> None:
    global _started
    _started += 1


def _run_all(*_result: Any) -> None:
    for callback in list(_callbacks):
        callback()
