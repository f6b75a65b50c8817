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

__all__ = ["FINDINGS_PAUSE_FACTOR", "FINDINGS_SECONDS", "Findings", "Layouts"]

#: How old the findings of ``diagnose`` may be before the log directory is checked again.
FINDINGS_SECONDS = 10.0
#: ...or, for a log directory that takes long to check, this many times the last check's
#: time: a 10 GB one takes about 10 s on 2 cores, and must not be checked back to back.
FINDINGS_PAUSE_FACTOR = 4.0


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
    """``histoscope.diagnose`` over the log directory, run again once its findings are
    FINDINGS_SECONDS old, or FINDINGS_PAUSE_FACTOR times as old as the last run took,
    whichever is later, so that checking a large log directory takes at most a fifth
    of the server's time.
    """

    def __init__(self, logdir: str) -> None:
        self._logdir = logdir
        self._at = -np.inf
        self._took = 0.0
        self._found: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def stale(self, now: float) -> bool:
        """Whether the findings are old enough, at monotonic time ``now``, to be made again."""
        return now - self._at > max(FINDINGS_SECONDS, FINDINGS_PAUSE_FACTOR * self._took)

    def answer(self) -> dict[str, Any]:
        from ..diagnose import diagnose

        with self._lock:
            if self.stale(time.monotonic()):
                start = time.monotonic()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # damage is the follower's to report
                    self._found = [finding.to_dict() for finding in diagnose(self._logdir)]
                self._at = time.monotonic()
                self._took = self._at - start
            return {"findings": self._found, "available": True}
