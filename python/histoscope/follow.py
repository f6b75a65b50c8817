"""Following a log directory as it grows, for the viewer.

Runs are listed first (a directory walk, no reading). A run's events files are
read when the run is first asked for, a segment of whole records at a time, and
each file's byte offset is kept, so a later refresh decodes only what was
appended since. Per step only an index stays in memory: the step, wall time,
statistics, TensorBoard's distribution percentiles (computed by the core as it
reads, without the GIL) and which segment holds the buckets. The buckets of a
step are read again from that segment when someone looks at it, so memory does
not grow with the steps nobody looks at.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from . import _core

__all__ = [
    "BASIS_POINTS",
    "LogdirIndex",
    "RunIndex",
    "SeriesIndex",
    "SeriesView",
]

#: TensorBoard's distribution compressor: the percentiles (in basis points) drawn over steps.
BASIS_POINTS = tuple(_core.BASIS_POINTS)

#: How much of an events file one read decodes; a single longer record is read whole.
SEGMENT_BYTES = 4 << 20

_STAT_COUNT = len(_core.STAT_NAMES)
_CACHED_SEGMENTS = 32
_BACKGROUND_NICENESS = 10


class SeriesView(NamedTuple):
    """The index of one tag of one run at one moment: per step, in step order."""

    steps: np.ndarray
    wall_times: np.ndarray
    stats: np.ndarray
    quantiles: np.ndarray
    segments: np.ndarray

    def rows(self, start: int, stop: int) -> SeriesView:
        return SeriesView(*(column[start:stop] for column in self))


class SeriesIndex:
    """One tag of one run, growing; `view` is replaced whole, so readers see one moment.

    The columns grow in place into spare room, doubled when full, so adding a
    segment copies only its own steps. Rows a view already showed are never
    written again: a restart that drops steps moves the columns to new arrays.
    Each such restart counts up the generation `snapshot` returns with the
    view, so a client holding the first ``n`` steps of one generation can be
    sent only the steps after them.
    """

    def __init__(self) -> None:
        self._columns = SeriesView(
            np.zeros(0, dtype=np.int64),
            np.zeros(0),
            np.zeros((0, _STAT_COUNT)),
            np.zeros((0, len(BASIS_POINTS))),
            np.zeros(0, dtype=np.int64),
        )
        self._written = 0
        self._current = (0, self._columns)

    @property
    def view(self) -> SeriesView:
        return self._current[1]

    def snapshot(self) -> tuple[int, SeriesView]:
        """The generation and the view of one moment, read together."""
        return self._current

    def __len__(self) -> int:
        return len(self.view.steps)

    def purge_from(self, step: int) -> None:
        """Drops the steps at or after ``step``: a restart logged them again."""
        generation, view = self._current
        keep = int(np.searchsorted(view.steps, step, side="left"))
        if keep < len(view.steps):
            self._current = (generation + 1, view.rows(0, keep))

    def extend(self, steps, wall_times, stats, quantiles, segment: int) -> None:
        """Appends a segment's steps of this tag, dropping kept steps they log again."""
        self.purge_from(int(steps[0]))
        keep, added = len(self), len(steps)
        if keep != self._written or keep + added > len(self._columns.steps):
            self._columns = SeriesView(
                *(_grown(column, keep, keep + added) for column in self._columns)
            )
        rows = (steps, wall_times, stats, quantiles, np.full(added, segment, dtype=np.int64))
        for column, new in zip(self._columns, rows):
            column[keep : keep + added] = new
        self._written = keep + added
        self._current = (self._current[0], self._columns.rows(0, self._written))


def _grown(column: np.ndarray, keep: int, need: int) -> np.ndarray:
    """A copy of ``column``'s first ``keep`` rows with room for ``need`` rows and as many again."""
    grown = np.empty((max(2 * need, 64), *column.shape[1:]), dtype=column.dtype)
    grown[:keep] = column[:keep]
    return grown


@dataclass
class _Segment:
    path: str
    start: int
    end: int


@dataclass
class RunIndex:
    """One run: where each of its files was read up to, and the index of each tag."""

    name: str
    offsets: dict[str, int] = field(default_factory=dict)
    plugins: dict[str, str] = field(default_factory=dict)
    segments: list[_Segment] = field(default_factory=list)
    series: dict[str, SeriesIndex] = field(default_factory=dict)
    version: int = 0
    caught_up: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def read(self, files: Iterable[str], budget_seconds: float) -> None:
        """Reads what was appended to ``files`` since the last read, for about ``budget_seconds``.

        Past the budget, reading stops as soon as the run has some histograms
        and a file has more to read, so a page can show a run's first steps
        while the rest is read.
        ``caught_up`` says whether every file was read to its last whole record.
        """
        deadline = time.monotonic() + budget_seconds
        with self.lock:
            self.caught_up = False
            for path in files:
                if not self._read_file(path, deadline):
                    return
            self.caught_up = True

    def _read_file(self, path: str, deadline: float) -> bool:
        while True:
            start = self.offsets.get(path, 0)
            segment = _core.index_segment(self.name, path, start, SEGMENT_BYTES, self.plugins)
            self.plugins = segment.plugins
            end = segment.end
            if end == start:
                return True
            self.offsets[path] = end
            self._apply(_Segment(path, start, end), segment.starts, segment.series)
            more = end < os.path.getsize(path)
            if more and time.monotonic() > deadline and self.series:
                return False

    def _apply(
        self, segment: _Segment, starts: list[int], series: list[_core.StepIndexRecord]
    ) -> None:
        number = len(self.segments)
        self.segments.append(segment)
        for step in starts:
            for index in self.series.values():
                index.purge_from(step)
        for record in series:
            self.series.setdefault(record.tag, SeriesIndex()).extend(
                record.steps, record.wall_times, record.stats, record.percentiles, number
            )
        self.version += 1

    def segment_series(self, number: int, tag: str) -> _core.SeriesRecord | None:
        """The series of ``tag`` in segment ``number``, read again from its file."""
        segment = self.segments[number]
        read = _core.read_segment(
            self.name, segment.path, segment.start, segment.end - segment.start, self.plugins, [tag]
        )
        return next((s for s in read.series if s.tag == tag), None)


class LogdirIndex:
    """A log directory followed as it grows: its runs, and each run's index read on demand.

    ``refresh_seconds`` is how old a listing or a run's read may be before it is
    refreshed; ``budget_seconds`` bounds the time one request spends reading a
    run once it has some histograms (by default: its first segment holding
    any), the rest being read in the background at a lower priority.
    """

    def __init__(
        self, logdir: str, *, refresh_seconds: float = 1.0, budget_seconds: float = 0.0
    ) -> None:
        self.logdir = logdir
        self.refresh_seconds = refresh_seconds
        self.budget_seconds = budget_seconds
        self._files: dict[str, list[str]] = {}
        self._listed_at = -np.inf
        self._runs: dict[str, RunIndex] = {}
        self._read_at: dict[str, float] = {}
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple[str, int, str], _core.SeriesRecord | None] = OrderedDict()
        self._cache_lock = threading.Lock()
        self._background: set[str] = set()

    def runs(self) -> list[str]:
        """Every run's name, sorted; listed again when older than ``refresh_seconds``."""
        with self._lock:
            if time.monotonic() - self._listed_at > self.refresh_seconds:
                found = _core.discover_runs(self.logdir)
                self._files = {run.name: list(run.files) for run in found}
                self._listed_at = time.monotonic()
            return sorted(self._files)

    def run(self, name: str) -> RunIndex | None:
        """The run called ``name``, read up to date (within ``refresh_seconds``), or None."""
        if name not in self.runs():
            return None
        with self._lock:
            run = self._runs.setdefault(name, RunIndex(name))
            stale = time.monotonic() - self._read_at.get(name, -np.inf) > self.refresh_seconds
            if stale:
                self._read_at[name] = time.monotonic()
            files = list(self._files.get(name, []))
        if stale and not run.lock.locked():
            run.read(files, self.budget_seconds)
            if not run.caught_up:
                self._catch_up_later(run, files)
        return run

    def _catch_up_later(self, run: RunIndex, files: list[str]) -> None:
        with self._lock:
            if run.name in self._background:
                return
            self._background.add(run.name)

        def work() -> None:
            _yield_to_requests()
            try:
                while not run.caught_up:
                    run.read(files, 1.0)
            finally:
                with self._lock:
                    self._background.discard(run.name)

        threading.Thread(target=work, name=f"histoscope-read-{run.name}", daemon=True).start()

    def buckets(self, run: RunIndex, tag: str, view: SeriesView, position: int) -> np.ndarray:
        """The (k, 3) buckets of step ``position`` of ``view``, the index of ``tag`` in ``run``."""
        step = int(view.steps[position])
        series = self._segment_series(run, int(view.segments[position]), tag)
        if series is None:
            return np.zeros((0, 3))
        steps, offsets = series.steps, series.offsets
        found = int(np.searchsorted(steps, step))
        if found >= len(steps) or steps[found] != step:
            return np.zeros((0, 3))
        return series.buckets[offsets[found] : offsets[found + 1]]

    def _segment_series(self, run: RunIndex, number: int, tag: str) -> _core.SeriesRecord | None:
        key = (run.name, number, tag)
        with self._cache_lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        series = run.segment_series(number, tag)
        with self._cache_lock:
            self._cache[key] = series
            while len(self._cache) > _CACHED_SEGMENTS:
                self._cache.popitem(last=False)
        return series


def _yield_to_requests() -> None:
    """Lowers the calling thread's CPU priority, where threads have their own (Linux).

    Catching up on a long run takes a core for a while; the page's requests
    should not queue behind it.
    """
    if sys.platform.startswith("linux"):
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), _BACKGROUND_NICENESS)
        except OSError:  # a sandbox refusing it: reading at the usual priority is still right
            pass
