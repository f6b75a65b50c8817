"""What the viewer reads again as the log directory grows: declared layouts and findings.

Example:
    >>> from histoscope.view.refreshed import Layouts
    >>> Layouts("examples/logdir", refresh_seconds=1.0).declared([])
    []
"""

from __future__ import annotations

import threading
import time
import warnings
from typing import Any

import numpy as np

from .. import _core

__all__ = ["FINDINGS_SECONDS", "Findings", "Layouts"]

#: How old the findings of ``diagnose`` may be before the log directory is checked again.
FINDINGS_SECONDS = 10.0


class Layouts:
    """The ``define_metric`` declarations of each run, read on from where each file was left."""

    def __init__(self, logdir: str, refresh_seconds: float) -> None:
        self._logdir = logdir
        self._refresh_seconds = refresh_seconds
        self._files: dict[str, list[str]] = {}
        self._listed_at = -np.inf
        self._offsets: dict[str, int] = {}
        self._found: dict[str, list[dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def declared(self, runs: list[str]) -> list[dict[str, Any]]:
        """Every declaration of ``runs``, run by run in file order (a later one wins)."""
        with self._lock:
            if time.monotonic() - self._listed_at > self._refresh_seconds:
                found = _core.discover_runs(self._logdir)
                self._files = {run.name: list(run.files) for run in found}
                self._listed_at = time.monotonic()
            out: list[dict[str, Any]] = []
            for run in runs:
                for path in self._files.get(run, []):
                    try:
                        end, records = _core.read_layout(path, self._offsets.get(path, 0))
                    except OSError:  # removed since the listing: the next listing drops it
                        continue
                    self._offsets[path] = end
                    self._found.setdefault(run, []).extend(
                        {"pattern": r.pattern, "section": r.section, "hidden": r.hidden}
                        for r in records
                    )
                out.extend(self._found.get(run, []))
            return out


class Findings:
    """``histoscope.diagnose`` over the log directory, run again at most every FINDINGS_SECONDS.

    Empty, with ``available`` false, where this histoscope has no ``diagnose``.
    """

    def __init__(self, logdir: str) -> None:
        self._logdir = logdir
        self._at = -np.inf
        self._found: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def answer(self) -> dict[str, Any]:
        from ..diagnose import diagnose

        with self._lock:
            if time.monotonic() - self._at > FINDINGS_SECONDS:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # damage is the follower's to report
                    self._found = [finding.to_dict() for finding in diagnose(self._logdir)]
                self._at = time.monotonic()
            return {"findings": self._found, "available": True}
