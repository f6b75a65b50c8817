"""A run's writer: one background thread that bins snapshots and writes them through the core.

The caller's thread hands it jobs (frozen dataclasses below) and returns;
the thread has the core bin and write them in one call (the GIL released),
or bins a tensor on its device and writes its counts, and
flushes every few seconds. Snapshots waiting for it are bounded
(``max_pending_bytes``): `Writer.reserve` waits for room, or drops with
``on_full="drop"``. A failure becomes one warning per cause, never an
exception in the training loop and never a dead thread.

Example:
    >>> import tempfile, threading
    >>> from histoscope.write.writer import Flush, Writer
    >>> writer = Writer(tempfile.mkdtemp(), "demo/run", max_pending_bytes=1 << 20, on_full="wait")
    >>> done = threading.Event()
    >>> writer.submit(Flush(done))
    >>> done.wait(5)
    True
    >>> writer.stop(timeout=5)
    True
"""

from __future__ import annotations

import collections
import dataclasses
import queue
import socket
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, Union, cast

import numpy as np

from .. import _core
from .._args import Bins
from ..errors import DroppedHistogramWarning, HistoscopeWarning, UnwrittenWarning
from ._torch import device_type, host_array
from .device import bin_on_device
from .histogram import Histogram, numpy_weights
from .said_once import SaidOnce
from .snapshot import Prepared, SnapshotPool

if TYPE_CHECKING:
    import torch

FLUSH_SECONDS = 2.0
_POLL_SECONDS = 0.5
_T = TypeVar("_T")


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """Values copied on the caller's thread, binned on the writer's; ``size`` bytes reserved."""

    key: str
    step: int
    wall_time: float
    values: Prepared
    bins: Bins
    range: tuple[float, float] | None
    weights: Prepared | None
    size: int


@dataclasses.dataclass(frozen=True)
class ReadyHistogram:
    """A `Histogram` already binned (by `Run.log` or a watch): only written."""

    key: str
    step: int
    wall_time: float
    histogram: Histogram


@dataclasses.dataclass(frozen=True)
class ReadyBatch:
    """Histograms the core binned together (`watch`, `log_tree`): written in one call."""

    keys: list[str]
    step: int
    wall_time: float
    batch: _core.BinnedBatch


@dataclasses.dataclass(frozen=True)
class Scalar:
    """A number `Run.log` was given."""

    key: str
    step: int
    wall_time: float
    value: float


@dataclasses.dataclass(frozen=True)
class Flush:
    """Write and flush everything before this, then set ``done``."""

    done: threading.Event


@dataclasses.dataclass(frozen=True)
class Stop:
    """Close the file and end the thread."""


@dataclasses.dataclass(frozen=True)
class Backlog:
    """What a run's writer has not done yet, as `Run.backlog` reports it.

    Example:
        >>> Backlog(pending_bytes=0, waiting=0, dropped=0, unwritten=0)
        Backlog(pending_bytes=0, waiting=0, dropped=0, unwritten=0)
    """

    pending_bytes: int
    """Bytes of snapshots taken by `Run.add_histogram` and not binned yet."""
    waiting: int
    """Threads waiting in `Run.add_histogram` for the pending bytes to go down."""
    dropped: int
    """Histograms dropped with ``on_full="drop"`` since the run started."""
    unwritten: int
    """Histograms and scalars handed to the writer and not written yet."""


Job = Union[Snapshot, ReadyHistogram, ReadyBatch, Scalar, Flush, Stop]
_COUNTED = (Snapshot, ReadyHistogram, ReadyBatch, Scalar)


class Writer:
    """The events file of one run and the thread that writes it (see the module's doc)."""

    def __init__(
        self,
        dir: str | Path,
        name: str,
        *,
        max_pending_bytes: int,
        on_full: str,
        diagnosed: bool = False,
    ) -> None:
        self.name = name
        self.max_pending_bytes = max_pending_bytes
        self.on_full = on_full
        self.file = _core.EventFileWriter(
            str(dir), time.time(), socket.gethostname(), diagnosed_as=name if diagnosed else None
        )
        self.diagnosed = diagnosed
        # What the live diagnosis found, waiting for the training thread (`alerts`).
        self.alerts: collections.deque[_core.AlertRecord] = collections.deque()
        self._jobs: queue.SimpleQueue[Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._space = threading.Condition(self._lock)
        self.pending_bytes = 0
        self.waiting = 0
        self.dropped: collections.Counter[str] = collections.Counter()
        self.unwritten: collections.Counter[type] = collections.Counter()
        self.closed = False
        self._said = SaidOnce()
        # Free buffers kept for reuse count against memory too: no more than the bound.
        self.pool = SnapshotPool(max_free_bytes=min(1 << 30, max_pending_bytes))
        self._thread = threading.Thread(target=self._work, name=f"histoscope-{name}", daemon=True)
        self._thread.start()

    @property
    def alive(self) -> bool:
        """Whether the thread still runs."""
        return self._thread.is_alive()

    def submit(self, job: Job) -> None:
        """Queues ``job``; RuntimeError once the writer is stopped."""
        with self._lock:
            if self.closed:
                raise RuntimeError(f"run {self.name} is finished; start another with init()")
            if isinstance(job, _COUNTED):
                self.unwritten[type(job)] += 1
            self._jobs.put(job)

    def locked(self, action: Callable[[], _T]) -> _T:
        """Runs ``action`` under the writer's lock, refused once it is stopped."""
        with self._lock:
            if self.closed:
                raise RuntimeError(f"run {self.name} is finished")
            return action()

    def backlog(self) -> Backlog:
        """What is not done yet, read under the lock."""
        with self._lock:
            return Backlog(
                pending_bytes=self.pending_bytes,
                waiting=self.waiting,
                dropped=sum(self.dropped.values()),
                unwritten=sum(self.unwritten.values()),
            )

    def stop(self, timeout: float | None) -> bool:
        """Ends the thread after the jobs queued so far; False if it was already stopped."""
        with self._lock:
            if self.closed:
                return False
            self.closed = True
            self._jobs.put(Stop())
        self._thread.join(timeout)
        if not self._thread.is_alive():
            # The thread has ended; if it died early the file is closed here (a no-op otherwise).
            self.guard("close", self.file.close)
        return True

    def reserve(self, key: str, size: int) -> bool:
        """Counts ``size`` more pending bytes once the bound allows them; False if dropped.

        A histogram larger than the whole bound goes through when nothing else is pending.
        """
        with self._space:
            if self._fits(size):
                self.pending_bytes += size
                return True
            if self.on_full == "drop":
                self.dropped[key] += 1
                first = sum(self.dropped.values()) == 1
            else:
                self._wait_for_room(size)
                self.pending_bytes += size
                return True
        if first:
            warnings.warn(
                f"histoscope run {self.name}: {key!r} dropped: "
                f"{self.max_pending_bytes} bytes of histograms are waiting for the writer "
                "(max_pending_bytes); on_full='drop' drops more without warning and "
                "finish() reports how many",
                DroppedHistogramWarning,
                stacklevel=4,
            )
        return False

    def give_back(self, size: int) -> None:
        """Returns ``size`` reserved bytes, waking any thread waiting for room."""
        with self._space:
            self.pending_bytes -= size
            self._space.notify_all()

    def report_losses(self, where: str, path: Path, timeout: float | None) -> None:
        """Warns with what was not written, and what ``on_full="drop"`` dropped."""
        with self._lock:
            unwritten = {kind: n for kind, n in self.unwritten.items() if n}
            dropped = sum(self.dropped.values())
            dropped_keys = sorted(self.dropped)
        if unwritten:
            histograms = unwritten.get(Snapshot, 0) + unwritten.get(ReadyHistogram, 0)
            why = (
                f"the writer thread did not finish within {timeout} s"
                if self._thread.is_alive()
                else "the writer thread stopped early"
            )
            warnings.warn(
                f"{where}: {histograms} histograms and {unwritten.get(Scalar, 0)} scalars were "
                f"not written: {why}; {path} holds what was written before",
                UnwrittenWarning,
                stacklevel=4,
            )
        if dropped:
            shown = ", ".join(map(repr, dropped_keys[:5]))
            shown += ", ..." if len(dropped_keys) > 5 else ""
            warnings.warn(
                f"{where}: {dropped} histograms were dropped because "
                f"max_pending_bytes={self.max_pending_bytes} was reached (on_full='drop'): {shown}",
                DroppedHistogramWarning,
                stacklevel=4,
            )

    def guard(self, what: str, action: Callable[[], _T]) -> _T | None:
        """Runs ``action``; a failure becomes one warning per kind, never an exception
        in the training loop and never a dead writer thread."""
        try:
            return action()
        except Exception as error:  # noqa: BLE001 - reported, the run goes on
            self.warn_once(what, str(error), type(error).__name__)
            return None

    def warn_once(self, what: str, message: str, kind: str = "") -> None:
        """Warns about ``what`` once per distinct ``kind`` and ``message``."""
        # Plain HistoscopeWarning: what failed is the run's file (a full disk, say), not a value.
        said = f"histoscope run {self.name}: {what}: {message}"
        self._said.warn(kind + message, said, HistoscopeWarning, stacklevel=1)

    def _fits(self, size: int) -> bool:
        return self.pending_bytes == 0 or self.pending_bytes + size <= self.max_pending_bytes

    def _wait_for_room(self, size: int) -> None:
        self.waiting += 1
        try:
            while not self._fits(size) and self._thread.is_alive():
                self._space.wait(_POLL_SECONDS)
        finally:
            self.waiting -= 1

    def _work(self) -> None:
        next_flush = time.monotonic() + FLUSH_SECONDS
        while True:
            try:
                job: Job | None = self._jobs.get(timeout=max(0.0, next_flush - time.monotonic()))
            except queue.Empty:
                job = None
            if isinstance(job, Stop):
                break
            if job is not None:
                self._do(job)
                self._diagnose()
            if time.monotonic() >= next_flush:
                self.guard("flush", self.file.flush)
                next_flush = time.monotonic() + FLUSH_SECONDS
        self.guard("close", self.file.close)
        self._diagnose()

    def _diagnose(self) -> None:
        """Collects the live diagnosis's new alerts; once the queue is empty the writer has
        caught up, and what was written so far is judged as complete."""
        if not self.diagnosed:
            return
        if self._jobs.empty():
            self.file.settle()
        self.guard("diagnose", lambda: self.alerts.extend(self.file.take_alerts()))

    def _do(self, job: Job) -> None:
        if isinstance(job, Flush):
            self.guard("flush", self.file.flush)
            self._diagnose()
            job.done.set()
            return
        try:
            self._write(job)
        finally:
            with self._lock:
                self.unwritten[type(job)] -= 1

    def _write(self, job: Job) -> None:
        if isinstance(job, Scalar):
            self.guard(
                job.key, lambda: self.file.write_scalar(job.key, job.step, job.wall_time, job.value)
            )
        elif isinstance(job, ReadyBatch):
            self.guard(
                ", ".join(job.keys[:3]) + (", ..." if len(job.keys) > 3 else ""),
                lambda: self.file.write_batch(job.keys, job.step, job.wall_time, job.batch),
            )
        elif isinstance(job, Snapshot):
            self._bin_and_write(job)
        elif isinstance(job, ReadyHistogram):
            h = job.histogram
            self._write_binned(job, h.edges, h.counts, h.stats_record)

    def _write_binned(
        self, job: Snapshot | ReadyHistogram, edges: Any, counts: Any, stats: _core.Stats
    ) -> None:
        self.guard(
            job.key,
            lambda: self.file.write_histogram(
                job.key, job.step, job.wall_time, edges, counts, stats
            ),
        )

    def _bin_and_write(self, job: Snapshot) -> None:
        """Bins the snapshot and writes it: in the core in one call for host values, on
        their device (only the counts coming back) for tensors elsewhere."""
        try:
            if isinstance(job.values, np.ndarray) or device_type(job.values) == "cpu":
                self.guard(job.key, lambda: self._core_bin_and_write(job))
            else:
                tensor = cast("torch.Tensor", job.values)
                binned = self.guard(
                    job.key, lambda: bin_on_device([tensor], job.bins, job.range, _w(job))[0]
                )
                if binned is not None:
                    self._write_binned(job, binned.edges, binned.counts, binned.stats)
            self.pool.release(job.values)
        finally:
            self.give_back(job.size)

    def _core_bin_and_write(self, job: Snapshot) -> None:
        array, half = host_array(job.values)
        bins, edges = (job.bins, None) if isinstance(job.bins, int) else (None, job.bins)
        self.file.bin_and_write(
            job.key,
            job.step,
            job.wall_time,
            array,
            bins=bins,
            edges=edges,
            range=job.range,
            weights=None if job.weights is None else numpy_weights(job.weights),
            encoding=half,
        )


def _w(job: Snapshot) -> list[Prepared] | None:
    return None if job.weights is None else [job.weights]
