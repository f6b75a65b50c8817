"""What the viewer reads again as the log directory grows: declared layouts and findings.

Example:
    >>> from histoscope.view.refreshed import Layouts
    >>> Layouts("examples/logdir", refresh_seconds=1.0).declared([])
    []
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import numpy as np

from .. import _core

_Found = TypeVar("_Found")

#: A run's files, each with its size and time of change.
_Signature = tuple[tuple[str, int, int], ...]

#: How old the findings of ``diagnose`` may be before the log directory is checked again.
FINDINGS_SECONDS = 10.0
#: ...or, for a log directory that takes long to check, this many times the last check's
#: time: a 10 GB one takes about 10 s on 2 cores, and must not be checked back to back.
FINDINGS_PAUSE_FACTOR = 4.0


class RunFiles:
    """Each run's events files, listed again at most every ``refresh_seconds``, and
    the offset where each file's last read ended, to read on from there."""

    def __init__(self, logdir: str, refresh_seconds: float) -> None:
        self._logdir = logdir
        self._refresh_seconds = refresh_seconds
        self._files: dict[str, list[str]] = {}
        self._listed_at = -np.inf
        self._offsets: dict[str, int] = {}

    def of(self, run: str) -> list[str]:
        """``run``'s files as last listed, the listing made again if it is old."""
        if time.monotonic() - self._listed_at > self._refresh_seconds:
            found = _core.discover_runs(self._logdir)
            self._files = {r.name: list(r.files) for r in found}
            self._listed_at = time.monotonic()
        return self._files.get(run, [])

    def cut_shorter(self, run: str) -> bool:
        """Whether one of ``run``'s files is shorter than where its last read ended;
        if so, every file of the run is read from its start next time."""
        files = self.of(run)
        if not any(self._offsets.get(path, 0) > _size(path) for path in files):
            return False
        for path in files:
            self._offsets.pop(path, None)
        return True

    def read_on(self, run: str, read: Callable[[str, int], tuple[int, _Found]]) -> Iterator[_Found]:
        """What ``read(path, offset)`` finds in each of ``run``'s files from where the
        last read ended; it returns the offset to read on from, and what it found."""
        for path in self.of(run):
            try:
                end, found = read(path, self._offsets.get(path, 0))
            except OSError:  # removed since the listing: the next listing drops it
                continue
            self._offsets[path] = end
            yield found


class Layouts:
    """The ``define_metric`` declarations of each run, read on from where each file was left."""

    def __init__(self, logdir: str, refresh_seconds: float) -> None:
        self._files = RunFiles(logdir, refresh_seconds)
        self._found: dict[str, list[dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def declared(self, runs: list[str]) -> list[dict[str, Any]]:
        """Every declaration of ``runs``, run by run in file order (a later one wins)."""
        with self._lock:
            out: list[dict[str, Any]] = []
            for run in runs:
                for records in self._files.read_on(run, _core.read_layout):
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
    of the server's time. Each time, only the runs whose files changed (in size or
    time of change), or that are new, are read again: every rule weighs a series
    against its own run alone, so the other runs' findings stand.
    """

    def __init__(self, logdir: str) -> None:
        self._logdir = logdir
        self._at = -np.inf
        self._took = 0.0
        #: Per run: its files' signature when it was last diagnosed, its findings, and
        #: what reading its files found (damage, tags kept apart), as notes.
        self._runs: dict[str, tuple[_Signature, list[dict[str, Any]], list[dict[str, str]]]] = {}
        self._lock = threading.Lock()

    def stale(self, now: float) -> bool:
        """Whether the findings are old enough, at monotonic time ``now``, to be made again."""
        return now - self._at > max(FINDINGS_SECONDS, FINDINGS_PAUSE_FACTOR * self._took)

    def answer(self) -> dict[str, Any]:
        with self._lock:
            if self.stale(time.monotonic()):
                start = time.monotonic()
                self._refresh()
                self._at = time.monotonic()
                self._took = self._at - start
            found = [f for run in sorted(self._runs) for f in self._runs[run][1]]
            notes = [n for run in sorted(self._runs) for n in self._runs[run][2]]
            return {"findings": found, "notes": notes, "available": True}

    def _refresh(self) -> None:
        """Diagnoses the runs that changed since they were last, and forgets those gone."""
        from ..diagnose import Diagnosis

        signatures = {run.name: _signature(run.files) for run in _core.discover_runs(self._logdir)}
        held = self._runs
        changed = [run for run, sig in signatures.items() if run not in held or held[run][0] != sig]
        self._runs = {run: held for run, held in self._runs.items() if run in signatures}
        if not changed:
            return
        stream = _core.RunStream(self._logdir, runs=changed, diagnose=True, series=False)
        by_run: dict[str, list[dict[str, Any]]] = {run: [] for run in changed}
        notes: dict[str, list[dict[str, str]]] = {run: [] for run in changed}
        diagnosis = Diagnosis()
        for record in stream:
            diagnosis.add(record)
            notes[record.run] = reading_notes(record.run, record.reports)
        for finding in diagnosis.findings:
            by_run[finding.run].append(finding.to_dict())
        for run, found in by_run.items():
            self._runs[run] = (signatures[run], found, notes[run])


def reading_notes(run: str, reports: list[_core.FileReport]) -> list[dict[str, str]]:
    """What reading ``run``'s files found that its charts cannot show: damage skipped,
    a file its writer left cut short, tags kept apart by position. Each note names the
    file by its name alone, as the page names runs and never paths. A record still being
    written at the end of a run's newest file is what following a training reads, and no
    note.

    Example:
        >>> record = next(iter(_core.RunStream("tests/fixtures/corrupt", series=False)))
        >>> [(note["run"], note["kind"]) for note in reading_notes(record.run, record.reports)]
        [('flipped', 'damage')]
    """
    out = []
    for report in reports:
        name = os.path.basename(report.path)
        texts = [
            ("damage", report.summary if report.has_problems else None),
            ("cut", None if report.newest else report.tail_note),
            ("shared", report.shared_note),
        ]
        for kind, text in texts:
            if text:
                out.append({"run": run, "kind": kind, "text": text.replace(report.path, name)})
    return out


def _signature(files: list[str]) -> _Signature:
    """A run's files with their size and time of change; a file gone has neither."""
    out = []
    for path in files:
        try:
            stat = os.stat(path)
            out.append((path, stat.st_size, stat.st_mtime_ns))
        except OSError:
            out.append((path, -1, -1))
    return tuple(out)


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
