"""Following a log directory as it grows, for the viewer.

Runs are listed first (a directory walk, no reading). A run's events files are
read when the run is first asked for, a segment of whole records at a time, by
the core's run loader, which keeps each file's byte offset, the run's plugin
map and restart purges, so a later refresh decodes only what was appended
since. Per step only an index stays in memory: the step, wall time,
statistics, TensorBoard's distribution percentiles and which segment holds the
buckets. The buckets of a step are read again from that segment when someone
looks at it, through one cache of buckets that every run shares, capped in bytes
(``cache_bytes``) and keeping only the steps asked for (of every tag of the
segments read, as the next cards ask for the same steps), so memory grows neither
with the steps nobody looks at nor with the runs looked at.

Example:
    >>> index = LogdirIndex("examples/logdir", cache_bytes=4 << 20)
    >>> run = index.run(index.runs()[0])
    >>> tag = sorted(run.series)[0]
    >>> [b.shape[1] for b in index.buckets(run, tag, run.series[tag].view, [0, 1])]
    [3, 3]
    >>> index.cache.used_bytes <= index.cache.cap_bytes == 4 << 20
    True
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from .. import _args, _core

if TYPE_CHECKING:
    from ..read.spool import RemoteLogdir

#: TensorBoard's distribution compressor: the percentiles (in basis points) drawn over steps.
BASIS_POINTS = tuple(_core.BASIS_POINTS)

#: How much of an events file one read decodes; a single longer record is read whole.
SEGMENT_BYTES = 4 << 20

#: The most bytes of buckets read again the viewer keeps, all runs together (``--cache-mb``).
DEFAULT_CACHE_BYTES = _args.DEFAULT_CACHE_MB << 20

_BACKGROUND_NICENESS = 10


class SeriesView(NamedTuple):
    """The index of one tag of one run at one moment: per step, in step order."""

    steps: np.ndarray
    wall_times: np.ndarray
    stats: np.ndarray
    quantiles: np.ndarray
    segments: np.ndarray
    zeros: np.ndarray

    def rows(self, start: int, stop: int) -> SeriesView:
        return SeriesView(*(column[start:stop] for column in self))


class SeriesIndex:
    """One tag of one run as the core's loader indexes it; each look is one moment.

    A restart that drops steps already indexed counts up the generation
    `snapshot` returns with the view, so a client holding the first ``n`` steps
    of one generation can be sent only the steps after them.
    """

    def __init__(self, loader: _core.RunLoader, tag: str) -> None:
        self._loader, self._tag = loader, tag

    def snapshot(self) -> tuple[int, SeriesView]:
        """The generation and the view of one moment, read together."""
        index = self._loader.index(self._tag)
        if index is None:
            empty = np.zeros(0)
            return 0, SeriesView(
                np.zeros(0, np.int64),
                empty,
                np.zeros((0, len(_core.STAT_NAMES))),
                np.zeros((0, len(BASIS_POINTS))),
                np.zeros(0, np.int64),
                empty,
            )
        view = SeriesView(
            index.steps,
            index.wall_times,
            index.stats,
            index.percentiles,
            index.segments,
            index.zero_shares,
        )
        return index.generation, view

    @property
    def view(self) -> SeriesView:
        return self.snapshot()[1]

    def __len__(self) -> int:
        return len(self.view.steps)


class RunIndex:
    """One run, followed by the core's loader; ``caught_up`` says whether its last read
    reached every file's last whole record."""

    def __init__(self, name: str, cache: _core.BucketCache) -> None:
        self.name = name
        self.caught_up = False
        self.lock = threading.Lock()
        #: Set once the first read has returned: until then the run has no histograms to show.
        self.first_read = threading.Event()
        self._loader = _core.RunLoader(name, cache)

    @property
    def version(self) -> int:
        """Counts up with every segment read."""
        return self._loader.version

    @property
    def offsets(self) -> dict[str, int]:
        """Where each file was read up to."""
        return self._loader.offsets

    @property
    def segment_count(self) -> int:
        """How many segments have been read."""
        return self._loader.segment_count

    @property
    def series(self) -> dict[str, SeriesIndex]:
        """The index of each tag read so far."""
        return {tag: SeriesIndex(self._loader, tag) for tag in self._loader.tags}

    def read(self, files: Iterable[str], budget_seconds: float) -> None:
        """Reads what was appended to ``files`` since the last read, for about ``budget_seconds``.

        Past the budget, reading stops as soon as the run has some histograms
        and a file has more to read, so a page can show a run's first steps
        while the rest is read.
        """
        with self.lock:
            try:
                self.caught_up = False
                self.caught_up = self._loader.read(list(files), SEGMENT_BYTES, budget_seconds)
            finally:
                self.first_read.set()

    def compare(
        self, other: RunIndex, step: int | None = None, other_step: int | None = None
    ) -> _core.Comparison:
        """Every key of this run at its last step at or before ``step`` (default: its last)
        against the same key of ``other`` (which may be this run) at ``other_step``,
        farthest first (see `histoscope.compare`)."""
        return _core.compare_runs(self._loader, other._loader, step, other_step)

    def compare_tracks(self, other: RunIndex, columns: Sequence[int]) -> list[_core.DistanceTrack]:
        """Every key both runs hold, with its scaled distance to ``other``'s at each of
        ``columns`` (increasing steps; each run at its last step at or before)."""
        return _core.compare_tracks(self._loader, other._loader, list(columns))

    def buckets(self, tag: str, steps: Sequence[int]) -> list[np.ndarray]:
        """The ``(k, 3)`` buckets of ``tag`` at each of ``steps``, read again from the files
        (empty for a step the run does not have).

        Raises FileNotFoundError or ValueError, saying which file and why, when a file
        was removed, cut or rewritten since it was indexed.
        """
        found = self._loader.buckets(tag, [int(step) for step in steps])
        return [np.zeros((0, 3)) if rows is None else rows for rows in found]


class LogdirIndex:
    """A log directory followed as it grows: its runs, and each run's index read on demand.

    ``refresh_seconds`` is how old a listing or a run's read may be before it is
    refreshed; ``budget_seconds`` bounds the time one request spends reading a
    run once it has some histograms (by default: its first segment holding
    any), the rest being read in the background at a lower priority;
    ``cache_bytes`` caps the buckets read again kept for every run together.

    With ``remote``, ``logdir`` is its spool: each listing first syncs it (one
    remote listing, ranged reads of what grew), then lists the spool.
    """

    def __init__(
        self,
        logdir: str,
        *,
        refresh_seconds: float = 1.0,
        budget_seconds: float = 0.0,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
        remote: RemoteLogdir | None = None,
    ) -> None:
        self.logdir = logdir
        self.remote = remote
        self.cache = _core.BucketCache(cache_bytes)
        self.refresh_seconds = refresh_seconds
        self.budget_seconds = budget_seconds
        self._files: dict[str, list[str]] = {}
        self._listed_at = -np.inf
        self._runs: dict[str, RunIndex] = {}
        self._read_at: dict[str, float] = {}
        self._lock = threading.Lock()
        self._background: set[str] = set()

    def runs(self) -> list[str]:
        """Every run's name, sorted; listed again when older than ``refresh_seconds``."""
        with self._lock:
            if time.monotonic() - self._listed_at > self.refresh_seconds:
                if self.remote is not None:
                    try:
                        self.remote.sync()
                    except OSError:  # the store unreachable for now: the spool as it stands
                        pass
                found = _core.discover_runs(self.logdir)
                self._files = {run.name: list(run.files) for run in found}
                self._listed_at = time.monotonic()
            return sorted(self._files)

    def run(self, name: str) -> RunIndex | None:
        """The run called ``name``, read up to date (within ``refresh_seconds``), or None."""
        if name not in self.runs():
            return None
        with self._lock:
            run = self._runs.get(name) or self._runs.setdefault(name, RunIndex(name, self.cache))
            stale = time.monotonic() - self._read_at.get(name, -np.inf) > self.refresh_seconds
            if stale:
                self._read_at[name] = time.monotonic()
            files = list(self._files.get(name, []))
        if stale and not run.lock.locked():
            run.read(files, self.budget_seconds)
            if not run.caught_up:
                self._catch_up_later(run, files)
        # A request arriving while another (or the viewer's warm-up) makes the first read
        # waits for it, rather than answering that the run has no histograms.
        run.first_read.wait()
        return run

    def _catch_up_later(self, run: RunIndex, files: list[str]) -> None:
        with self._lock:
            if run.name in self._background:
                return
            self._background.add(run.name)

        def work() -> None:
            _yield_to_requests()
            try:
                while not run.caught_up and not STOPPING.is_set():
                    run.read(files, 1.0)
            finally:
                with self._lock:
                    self._background.discard(run.name)

        in_background(work, f"histoscope-read-{run.name}")

    def index_every_run(self, after: threading.Thread | None = None) -> threading.Thread:
        """Reads every listed run not read yet, one at a time at a lower priority, once
        ``after`` has ended: a run's index (steps, statistics, segments) is then ready
        before a filter or a scroll shows it, and its buckets stay in the files."""

        def work() -> None:
            if after is not None:
                after.join()
            _yield_to_requests()
            for name in self.runs():
                if STOPPING.is_set():
                    return
                if self.started(name) is not None:
                    continue
                try:
                    run = self.run(name)
                except Exception:  # noqa: BLE001 - a request for the run meets it and says why
                    continue
                # The rest is read by the run's catch-up thread: one run at a time.
                while run is not None and not run.caught_up and self._catching_up(name):
                    time.sleep(0.05)

        return in_background(work, "histoscope-index")

    def _catching_up(self, name: str) -> bool:
        with self._lock:
            return name in self._background

    def forget(self, name: str) -> None:
        """Drops what was read of the run ``name``: a later `run` reads it again."""
        with self._lock:
            self._runs.pop(name, None)
            self._read_at.pop(name, None)

    def started(self, name: str) -> RunIndex | None:
        """The run called ``name`` if a read of it has started, as it stands: nothing is read."""
        with self._lock:
            return self._runs.get(name)

    def files(self, name: str) -> list[str]:
        """The events files of the run ``name`` as last listed."""
        with self._lock:
            return list(self._files.get(name, []))

    def buckets(
        self, run: RunIndex, tag: str, view: SeriesView, positions: Sequence[int]
    ) -> list[np.ndarray]:
        """The (k, 3) buckets of the steps at ``positions`` of ``view``, the index of ``tag``
        in ``run`` (see `RunIndex.buckets` for the errors)."""
        return run.buckets(tag, [int(view.steps[p]) for p in positions])

    def card(
        self,
        runs: Sequence[RunIndex],
        tag: str,
        *,
        step: int | None = None,
        from_step: int | None = None,
        to_step: int | None = None,
        max_steps: int | None = None,
        bins: int | None = None,
    ) -> _core.Card:
        """The card of ``tag`` across ``runs``, read and counted by the core through their
        loaders (see `_core.read_card`; ValueError for a malformed request)."""
        return _core.read_card(
            [run._loader for run in runs], tag, step=step, from_step=from_step,
            to_step=to_step, max_steps=max_steps, bins=bins,
        )  # fmt: skip


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


#: Set as the interpreter exits: background reads stop at their next pause.
STOPPING = threading.Event()
_BACKGROUND: weakref.WeakSet[threading.Thread] = weakref.WeakSet()
#: How long the interpreter's exit waits for background reads to pause.
STOP_SECONDS = 5.0


def in_background(work: Callable[[], None], name: str) -> threading.Thread:
    """Starts ``work`` on a daemon thread that the interpreter's exit waits for (see
    `_stop_background`); ``work`` ends soon after `STOPPING` is set.

    Example:
        >>> done = []
        >>> in_background(lambda: done.append(1), "histoscope-doc").join()
        >>> done
        [1]
    """
    thread = threading.Thread(target=work, name=name, daemon=True)
    _BACKGROUND.add(thread)
    thread.start()
    return thread


@atexit.register
def _stop_background() -> None:
    """Stops the background reads and waits for them to pause before Python finalizes:
    a daemon thread coming back from the core after that would find the interpreter
    gone, and CPython up to 3.13 ends such a thread by unwinding it through the core's
    frames, which crashes the process as it exits."""
    STOPPING.set()
    deadline = time.monotonic() + STOP_SECONDS
    for thread in list(_BACKGROUND):
        thread.join(max(0.0, deadline - time.monotonic()))
