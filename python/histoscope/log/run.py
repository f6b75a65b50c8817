"""Logging runs: `init`, `Run.watch`, `Run.add_histogram`, `Run.log`, as TensorBoard events files.

The caller's thread only checks arguments and takes a snapshot of the values;
binning and writing happen on one background Python thread per run, which
calls the Rust core; the core releases the GIL while it bins and writes.
Records are flushed every few seconds and at the end.

The snapshots waiting for that thread are bounded (``max_pending_bytes`` of
`init`, 256 MiB by default): when they reach it, `Run.add_histogram` waits
for the writer, or with ``on_full="drop"`` drops the histogram and counts
it. `Run.finish` waits a bounded time and says what was not written.
"""

from __future__ import annotations

import atexit
import collections
import dataclasses
import itertools
import math
import numbers
import operator
import os
import queue
import random
import socket
import threading
import time as _time
import warnings
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import _core
from .histogram import (
    Histogram,
    SnapshotPool,
    bin_prepared,
    check_bins,
    check_range,
    prepare_weights,
)
from ..errors import HistoscopeWarning

if TYPE_CHECKING:
    import torch

    from .watch import Filter, Watch

__all__ = ["ON_FULL_CHOICES", "Backlog", "Run", "finish", "init", "log"]

DEFAULT_DIR = "histoscope-logs"
FLUSH_SECONDS = 2.0
DEFAULT_MAX_PENDING_BYTES = 256 << 20
FINISH_TIMEOUT_SECONDS = 120.0
ON_FULL_CHOICES = ("wait", "drop")
_POLL_SECONDS = 0.5

_ADJECTIVES = (
    "amber", "brisk", "calm", "bold", "crisp", "deft", "eager", "fair", "gentle", "hardy",
    "keen", "lively", "mellow", "nimble", "quiet", "rapid", "steady", "sunny", "swift", "vivid",
)  # fmt: skip
_NOUNS = (
    "brook", "cedar", "comet", "delta", "ember", "fjord", "grove", "harbor", "island", "lagoon",
    "meadow", "nebula", "orchid", "prairie", "quartz", "river", "summit", "tundra", "valley",
    "willow",
)  # fmt: skip

_open_runs: weakref.WeakSet[Run] = weakref.WeakSet()
_current: Run | None = None


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


class Run:
    """A run being logged: a folder of TensorBoard events files.

    Make one with `histoscope.init`; use it as a context manager, or call
    `finish` at the end (open runs are also finished at interpreter exit).

    Example:
        >>> import tempfile, numpy as np, histoscope as hs
        >>> with hs.init("demo", run_name="first", dir=tempfile.mkdtemp()) as run:
        ...     run.add_histogram("weights", np.random.randn(1000), step=0)
        ...     run.log({"loss": 0.3, "grads": hs.Histogram(np.random.randn(100))}, step=0)
        >>> sorted(hs.load_histograms(run.path))
        ['grads', 'weights']
    """

    def __init__(
        self,
        project: str,
        run_name: str,
        dir: Path,
        *,
        max_pending_bytes: int = DEFAULT_MAX_PENDING_BYTES,
        on_full: str = "wait",
    ) -> None:
        self.project = project
        self.name = run_name
        self.dir = dir
        self.max_pending_bytes = max_pending_bytes
        self.on_full = on_full
        self._writer = _core.EventFileWriter(str(dir), _time.time(), socket.gethostname())
        self._last_step: dict[str, int] = {}
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._space = threading.Condition(self._lock)
        self._pending_bytes = 0
        self._waiting = 0
        self._dropped: collections.Counter[str] = collections.Counter()
        self._unwritten: collections.Counter[str] = collections.Counter()
        self._finished = False
        self._warned: set[str] = set()
        self._watches: list[Watch] = []
        # Free buffers kept for reuse count against memory too: no more than the bound.
        self._pool = SnapshotPool(max_free_bytes=min(1 << 30, max_pending_bytes))
        self._thread = threading.Thread(
            target=self._work, name=f"histoscope-{project}/{run_name}", daemon=True
        )
        self._thread.start()
        _open_runs.add(self)

    @property
    def path(self) -> Path:
        """The events file this run writes."""
        return Path(self._writer.path)

    @property
    def backlog(self) -> Backlog:
        """What the writer has not done yet: pending bytes, waiting threads, drops, unwritten."""
        with self._lock:
            return Backlog(
                pending_bytes=self._pending_bytes,
                waiting=self._waiting,
                dropped=sum(self._dropped.values()),
                unwritten=sum(self._unwritten.values()),
            )

    def watch(
        self,
        model: torch.nn.Module,
        *,
        log: str = "gradients",
        every: int = 100,
        filter: Filter = None,
        bins: int = 64,
        activations: bool = False,
        step: Callable[[], int] | None = None,
        all_ranks: bool = False,
    ) -> Watch:
        """Logs histograms of ``model``'s gradients, parameters or both every ``every`` steps.

        ``log`` is ``"gradients"``, ``"parameters"`` or ``"all"``; keys are
        ``gradients/<name>`` and ``parameters/<name>`` (names as
        ``model.named_parameters()`` gives them, inside any ``DataParallel``
        or ``DistributedDataParallel``), and with ``activations=True``
        ``activations/<module name>`` for the output of each leaf module.
        ``filter`` keeps the tensors whose name a regular expression matches
        (``re.search``), or for which ``filter(name, tensor)`` is true.
        Parameters that do not require grad are logged as parameters only.
        Under ``torch.distributed`` only rank 0 logs, unless ``all_ranks``.

        A step is a backward pass through the model, counted from 0, or
        ``step()`` when given: see `histoscope.watch.Watch` for how steps line up
        with `log`. Every tensor of a logging step is binned together, in
        ``bins`` equal bins, before training goes on.

        Example:
            >>> import tempfile, torch, histoscope as hs
            >>> from torch import nn
            >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
            >>> optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            >>> run = hs.init("mnist", dir=tempfile.mkdtemp())
            >>> watching = run.watch(model, log="all", every=10, filter=r"^0[.]")
            >>> for i in range(20):
            ...     loss = model(torch.randn(16, 4)).pow(2).mean()
            ...     loss.backward()  # step i is logged here when i % 10 == 0
            ...     optimizer.step(); optimizer.zero_grad()
            ...     run.log({"loss": loss.item()}, step=i)
            >>> run.finish()
            >>> data = hs.load_histograms(run.path)
            >>> sorted(data)
            ['gradients/0.bias', 'gradients/0.weight', 'parameters/0.bias', 'parameters/0.weight']
            >>> data["gradients/0.weight"]["."].steps.tolist()
            [0, 10]
        """
        from .watch import Watch

        if self._finished:
            raise RuntimeError(
                f"run {self.project}/{self.name} is finished; start another with init()"
            )
        watch = Watch(
            self,
            model,
            log=log,
            every=every,
            filter=filter,
            bins=bins,
            activations=activations,
            step=step,
            all_ranks=all_ranks,
        )
        self._watches.append(watch)
        return watch

    def unwatch(self, model: torch.nn.Module | None = None) -> None:
        """Stops watching ``model`` (every model, without one): its hooks are removed.

        Example:
            >>> import tempfile, torch, histoscope as hs
            >>> model = torch.nn.Linear(4, 1)
            >>> run = hs.init("demo", dir=tempfile.mkdtemp())
            >>> watching = run.watch(model)
            >>> run.unwatch(model)
            >>> run.finish()
        """
        from .watch import unwrap

        inner = None if model is None else unwrap(model)
        for watch in [w for w in self._watches if inner is None or w.model is inner]:
            watch.remove()
            self._watches.remove(watch)

    def add_histogram(
        self,
        key: str,
        values: Any,
        step: int | None = None,
        *,
        bins: int | Any = 50,
        range: tuple[float, float] | None = None,
        weights: Any = None,
        time: float | None = None,
    ) -> None:
        """Logs the histogram of ``values`` (any shape, flattened) under ``key``.

        Returns once the values are copied: binning and writing happen in the
        background, so later in-place changes (``optimizer.step()``) don't
        leak in. NaN and infinite values are counted as ``nonfinite``, never
        binned; values outside ``range`` are counted as ``below``/``above``.

        Example:
            >>> import tempfile, numpy as np, histoscope as hs
            >>> run = hs.init("demo", dir=tempfile.mkdtemp())
            >>> grads = np.random.default_rng(0).normal(0, 0.01, 1000)
            >>> run.add_histogram("grads/fc", grads, step=10, bins=80, range=(-0.05, 0.05))
            >>> run.finish()
            >>> hs.load_histograms(run.path)["grads/fc"]["."].buckets[0].shape
            (80, 3)
        """
        key = _check_key(key)
        bins = check_bins(bins)
        range = check_range(range, bins)
        wall_time = _check_time(time)
        if step is not None:
            step = _check_step(step)
        size = _nbytes(values) + (0 if weights is None else _nbytes(weights))
        if not self._reserve(key, size):
            return
        try:
            snapshot = self._pool.snapshot(values, "values")
            weight_snapshot = prepare_weights(weights, snapshot)
            step = self._next_step(key, step)
            job = ("histogram", key, step, wall_time, (snapshot, bins, range, weight_snapshot))
            self._submit(job, size)
        except BaseException:
            self._give_back(size)
            raise

    def log(self, data: Mapping[str, Any], step: int | None = None) -> None:
        """Logs a `Histogram` or a number under each key of ``data``.

        Example:
            >>> import tempfile, numpy as np, histoscope as hs
            >>> run = hs.init("demo", dir=tempfile.mkdtemp())
            >>> w = np.random.default_rng(0).normal(size=500)
            >>> run.log({"weights": hs.Histogram(w, bins=64), "loss": 0.31}, step=100)
            >>> run.finish()
            >>> hs.load_histograms(run.path)["weights"]["."].steps.tolist()
            [100]
        """
        if not isinstance(data, Mapping):
            raise TypeError(
                f"data must be a dict of key -> Histogram or number, got {type(data).__name__}"
            )
        wall_time = _time.time()
        items = [(_check_key(key), _loggable(key, value)) for key, value in data.items()]
        if step is not None:
            step = _check_step(step)
        for key, value in items:
            this_step = self._next_step(key, step)
            kind = "ready" if isinstance(value, Histogram) else "scalar"
            self._submit((kind, key, this_step, wall_time, value))

    def define_metric(
        self, pattern: str, *, section: str | None = None, hidden: bool = False
    ) -> None:
        """Puts the keys matching the glob ``pattern`` (``*``, ``?``) in ``section``, or hides them.

        Stored in the events file, so ``histoscope view`` and ``histoscope
        report`` honour it: matching cards go under the ``section`` heading
        instead of their key's prefix, and ``hidden`` cards are listed
        collapsed, shown on demand. A later declaration wins over an earlier one.

        Example:
            >>> import tempfile, histoscope as hs
            >>> run = hs.init("demo", dir=tempfile.mkdtemp())
            >>> run.define_metric("grads/*", section="Gradients")
            >>> run.define_metric("debug/*", hidden=True)
            >>> run.finish()
        """
        if not isinstance(pattern, str) or not pattern:
            raise ValueError(f"pattern must be a non-empty glob string, got {pattern!r}")
        if section is not None and (not isinstance(section, str) or not section.strip()):
            raise ValueError(f"section must be a non-empty string or None, got {section!r}")
        with self._lock:
            if self._finished:
                raise RuntimeError(f"run {self.project}/{self.name} is finished")
            self._writer.write_layout(pattern, section, bool(hidden), _time.time())

    def flush(self) -> None:
        """Waits until everything logged so far is written and flushed to the operating system.

        Returns at once, with a warning, if the writer thread has stopped.
        """
        done = threading.Event()
        self._submit(("flush", done))
        while not done.wait(_POLL_SECONDS):
            if not self._thread.is_alive():
                self._warn_once("flush", "the writer thread has stopped; nothing more is written")
                return

    def finish(self, timeout: float | None = FINISH_TIMEOUT_SECONDS) -> None:
        """Writes what is pending, flushes and closes the file. Safe to call twice.

        Waits at most ``timeout`` seconds (None: as long as it takes) for the
        writer thread; if it is stuck or has died, warns with what was not
        written. Also warns with the number of histograms that
        ``on_full="drop"`` dropped, if any.
        """
        global _current
        with self._lock:
            if self._finished:
                return
            self._finished = True
            self._jobs.put(("stop",))
        for watch in self._watches:
            watch.remove()
        self._watches = []
        self._thread.join(timeout)
        _open_runs.discard(self)
        if _current is self:
            _current = None
        if not self._thread.is_alive():
            # The thread has ended; if it died early the file is closed here (a no-op otherwise).
            self._guard("close", self._writer.close)
        self._report_losses(timeout)

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.finish()

    def __repr__(self) -> str:
        state = "finished" if self._finished else "open"
        return f"Run(project={self.project!r}, name={self.name!r}, dir={str(self.dir)!r}, {state})"

    def _next_step(self, key: str, step: int | None) -> int:
        step = self._last_step.get(key, -1) + 1 if step is None else _check_step(step)
        self._last_step[key] = step
        return step

    def _submit(self, job: tuple, size: int = 0) -> None:
        with self._lock:
            if self._finished:
                raise RuntimeError(
                    f"run {self.project}/{self.name} is finished; start another with init()"
                )
            if job[0] != "flush":
                self._unwritten[job[0]] += 1
            self._jobs.put((*job, size) if job[0] == "histogram" else job)

    def _reserve(self, key: str, size: int) -> bool:
        """Counts ``size`` more pending bytes once the bound allows them; False if dropped.

        A histogram larger than the whole bound goes through when nothing else is pending.
        """
        with self._space:
            if self._fits(size):
                self._pending_bytes += size
                return True
            if self.on_full == "drop":
                self._dropped[key] += 1
                first = sum(self._dropped.values()) == 1
            else:
                self._waiting += 1
                try:
                    while not self._fits(size):
                        if not self._thread.is_alive():
                            break
                        self._space.wait(_POLL_SECONDS)
                finally:
                    self._waiting -= 1
                self._pending_bytes += size
                return True
        if first:
            warnings.warn(
                f"histoscope run {self.project}/{self.name}: {key!r} dropped: "
                f"{self.max_pending_bytes} bytes of histograms are waiting for the writer "
                "(max_pending_bytes); on_full='drop' drops more without warning and "
                "finish() reports how many",
                HistoscopeWarning,
                stacklevel=3,
            )
        return False

    def _fits(self, size: int) -> bool:
        return self._pending_bytes == 0 or self._pending_bytes + size <= self.max_pending_bytes

    def _give_back(self, size: int) -> None:
        with self._space:
            self._pending_bytes -= size
            self._space.notify_all()

    def _report_losses(self, timeout: float | None) -> None:
        """Warns with what was not written, and what ``on_full="drop"`` dropped."""
        with self._lock:
            unwritten = {kind: n for kind, n in self._unwritten.items() if n}
            dropped = sum(self._dropped.values())
            dropped_keys = sorted(self._dropped)
        where = f"histoscope run {self.project}/{self.name}"
        if unwritten:
            histograms = unwritten.get("histogram", 0) + unwritten.get("ready", 0)
            scalars = unwritten.get("scalar", 0)
            why = (
                f"the writer thread did not finish within {timeout} s"
                if self._thread.is_alive()
                else "the writer thread stopped early"
            )
            warnings.warn(
                f"{where}: {histograms} histograms and {scalars} scalars were not written: "
                f"{why}; {self.path} holds what was written before",
                HistoscopeWarning,
                stacklevel=3,
            )
        if dropped:
            shown = ", ".join(map(repr, dropped_keys[:5]))
            shown += ", ..." if len(dropped_keys) > 5 else ""
            warnings.warn(
                f"{where}: {dropped} histograms were dropped because "
                f"max_pending_bytes={self.max_pending_bytes} was reached (on_full='drop'): {shown}",
                HistoscopeWarning,
                stacklevel=3,
            )

    def _work(self) -> None:
        next_flush = _time.monotonic() + FLUSH_SECONDS
        while True:
            try:
                job = self._jobs.get(timeout=max(0.0, next_flush - _time.monotonic()))
            except queue.Empty:
                job = None
            if job is not None and job[0] == "stop":
                break
            if job is not None:
                self._do(job)
            if _time.monotonic() >= next_flush:
                self._guard("flush", self._writer.flush)
                next_flush = _time.monotonic() + FLUSH_SECONDS
        self._guard("close", self._writer.close)

    def _do(self, job: tuple) -> None:
        kind = job[0]
        if kind == "flush":
            self._guard("flush", self._writer.flush)
            job[1].set()
            return
        try:
            self._write(job)
        finally:
            with self._lock:
                self._unwritten[kind] -= 1

    def _write(self, job: tuple) -> None:
        kind, key, step, wall_time, payload = job[:5]
        if kind == "scalar":
            self._guard(key, lambda: self._writer.write_scalar(key, step, wall_time, payload))
            return
        if kind == "histogram":
            try:
                histogram = self._guard(key, lambda: bin_prepared(*payload))
                self._pool.release(payload[0])
            finally:
                self._give_back(job[5])
            if histogram is None:
                return
        else:
            histogram = payload
        stats = [float(getattr(histogram, name)) for name in _core.STAT_NAMES]
        self._guard(
            key,
            lambda: self._writer.write_histogram(
                key, step, wall_time, histogram.edges, histogram.counts, stats
            ),
        )

    def _guard(self, what: str, action):
        """Runs ``action``; a failure becomes one warning per kind, never an exception
        in the training loop and never a dead writer thread."""
        try:
            return action()
        except Exception as error:  # noqa: BLE001 - reported, the run goes on
            self._warn_once(what, str(error), type(error).__name__)
            return None

    def _warn_once(self, what: str, message: str, kind: str = "") -> None:
        if kind + message in self._warned:
            return
        self._warned.add(kind + message)
        warnings.warn(
            f"histoscope run {self.project}/{self.name}: {what}: {message}",
            HistoscopeWarning,
            stacklevel=1,
        )


def init(
    project: str,
    run_name: str | None = None,
    *,
    dir: str | os.PathLike | None = None,
    max_pending_bytes: int = DEFAULT_MAX_PENDING_BYTES,
    on_full: str = "wait",
) -> Run:
    """Starts logging a run into ``<dir or ./histoscope-logs>/<project>/<run_name>``.

    Without ``run_name`` a readable one is made up; an existing run name
    appends a new events file there, as a restart. The run becomes the one
    `histoscope.log` and `histoscope.watch` write to.

    Snapshots that `Run.add_histogram` took and the writer has not binned
    yet take at most ``max_pending_bytes`` (256 MiB by default; one larger
    histogram alone goes through). When they would pass it,
    ``on_full="wait"`` makes ``add_histogram`` wait for the writer and
    ``on_full="drop"`` drops that histogram, warns once and counts it; the
    count is reported by `Run.finish` and `Run.backlog`.

    Example:
        >>> import histoscope as hs
        >>> run = hs.init("mnist", run_name="baseline")  # doctest: +SKIP
        >>> run.dir  # doctest: +SKIP
        PosixPath('histoscope-logs/mnist/baseline')
    """
    global _current
    project = _check_name(project, "project")
    if isinstance(max_pending_bytes, bool) or not isinstance(max_pending_bytes, int):
        raise TypeError(
            f"max_pending_bytes must be an int > 0, got {type(max_pending_bytes).__name__}"
        )
    if max_pending_bytes <= 0:
        raise ValueError(f"max_pending_bytes must be an int > 0, got {max_pending_bytes}")
    if on_full not in ON_FULL_CHOICES:
        raise ValueError(f"on_full must be 'wait' or 'drop', got {on_full!r}")
    root = Path(DEFAULT_DIR if dir is None else os.fspath(dir)) / project
    run_name = _new_run_name(root) if run_name is None else _check_name(run_name, "run_name")
    run = Run(
        project, run_name, root / run_name, max_pending_bytes=max_pending_bytes, on_full=on_full
    )
    _current = run
    return run


def log(data: Mapping[str, Any], step: int | None = None) -> None:
    """Logs to the run `histoscope.init` started last (see `Run.log`)."""
    if _current is None:
        raise RuntimeError("no run to log to: call histoscope.init(project) first")
    _current.log(data, step=step)


def finish() -> None:
    """Finishes the run `histoscope.init` started last, if it is still open."""
    if _current is not None:
        _current.finish()


@atexit.register
def _finish_open_runs() -> None:
    for run in list(_open_runs):
        run.finish()


def _new_run_name(root: Path) -> str:
    taken = {p.name for p in root.iterdir()} if root.is_dir() else set()
    rng = random.Random()
    for n in itertools.count(len(taken) + 1):
        name = f"{rng.choice(_ADJECTIVES)}-{rng.choice(_NOUNS)}-{n}"
        if name not in taken:
            return name
    raise AssertionError("unreachable")


def _check_name(name: object, what: str) -> str:
    if not isinstance(name, str):
        raise TypeError(f"{what} must be a str, got {type(name).__name__}")
    if not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name:
        raise ValueError(f"{what} must be a non-empty folder name without slashes, got {name!r}")
    return name


def _check_key(key: object) -> str:
    if not isinstance(key, str):
        raise TypeError(f"key must be a str, got {type(key).__name__}")
    if not key:
        raise ValueError("key must not be empty")
    return key


def _check_step(step: object) -> int:
    if isinstance(step, bool):
        raise TypeError("step must be an int >= 0 or None, got a bool")
    try:
        value = operator.index(step)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"step must be an int >= 0 or None, got {type(step).__name__}") from None
    if value < 0:
        raise ValueError(f"step must be an int >= 0 or None, got {value}")
    return value


def _nbytes(values: Any) -> int:
    """The bytes a snapshot of ``values`` takes, known before copying them (0 if not known)."""
    if _is_tensor(values):
        return int(values.numel()) * int(values.element_size())
    nbytes = getattr(values, "nbytes", None)
    return int(nbytes) if isinstance(nbytes, numbers.Integral) else 0


def _is_tensor(values: Any) -> bool:
    return type(values).__module__.startswith("torch") and hasattr(values, "element_size")


def _check_time(time: object) -> float:
    if time is None:
        return _time.time()
    if isinstance(time, bool) or not isinstance(time, numbers.Real):
        raise TypeError(
            f"time must be seconds since the epoch (a number), got {type(time).__name__}"
        )
    if not math.isfinite(float(time)):
        raise ValueError(f"time must be finite, got {time!r}")
    return float(time)


def _loggable(key: str, value: Any) -> Any:
    if isinstance(value, Histogram):
        return value
    if isinstance(value, (list, tuple)) and any(isinstance(v, Histogram) for v in value):
        raise TypeError(
            f"{key!r}: log one Histogram per key; use separate keys for several histograms"
        )
    if isinstance(value, bool) or not _is_number(value):
        raise TypeError(
            f"{key!r}: run.log takes a histoscope.Histogram or a number, got {type(value).__name__}"
        )
    return float(value)


def _is_number(value: Any) -> bool:
    if isinstance(value, numbers.Real):
        return True
    shape = getattr(value, "shape", None)
    return shape is not None and len(tuple(shape)) == 0 and hasattr(value, "__float__")
