"""Logging runs: `init`, `Run.add_histogram`, `Run.log`, written as TensorBoard events files.

The caller's thread only checks arguments and takes a snapshot of the values;
binning and writing happen on one background thread per run, in Rust with the
GIL released, and records are flushed every few seconds and at the end.
"""

from __future__ import annotations

import atexit
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
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from . import _core
from .histogram import (
    Histogram,
    SnapshotPool,
    bin_prepared,
    check_bins,
    check_range,
    prepare_weights,
)
from .reader import HistoscopeWarning

__all__ = ["Run", "finish", "init", "log"]

DEFAULT_DIR = "histoscope-logs"
FLUSH_SECONDS = 2.0

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


class Run:
    """A run being logged: a folder of TensorBoard events files.

    Make one with `histoscope.init`; use it as a context manager, or call
    `finish` at the end (open runs are also finished at interpreter exit).

    Example:
        >>> import numpy as np, histoscope as hs
        >>> with hs.init("demo", run_name="first", dir=tmp) as run:  # doctest: +SKIP
        ...     run.add_histogram("weights", np.random.randn(1000), step=0)
        ...     run.log({"loss": 0.3, "grads": hs.Histogram(np.random.randn(100))}, step=0)
    """

    def __init__(self, project: str, run_name: str, dir: Path) -> None:
        self.project = project
        self.name = run_name
        self.dir = dir
        self._writer = _core.EventFileWriter(str(dir), _time.time(), socket.gethostname())
        self._last_step: dict[str, int] = {}
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._finished = False
        self._warned: set[str] = set()
        self._pool = SnapshotPool()
        self._thread = threading.Thread(
            target=self._work, name=f"histoscope-{project}/{run_name}", daemon=True
        )
        self._thread.start()
        _open_runs.add(self)

    @property
    def path(self) -> Path:
        """The events file this run writes."""
        return Path(self._writer.path)

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
            >>> run.add_histogram(  # doctest: +SKIP
            ...     "grads/fc", grads, step=10, bins=80, range=(-0.05, 0.05))
        """
        key = _check_key(key)
        bins = check_bins(bins)
        range = check_range(range, bins)
        wall_time = _check_time(time)
        snapshot = self._pool.snapshot(values, "values")
        weight_snapshot = prepare_weights(weights, snapshot)
        step = self._next_step(key, step)
        self._submit(("histogram", key, step, wall_time, (snapshot, bins, range, weight_snapshot)))

    def log(self, data: Mapping[str, Any], step: int | None = None) -> None:
        """Logs a `Histogram` or a number under each key of ``data``.

        Example:
            >>> run.log(  # doctest: +SKIP
            ...     {"weights": hs.Histogram(w, bins=64), "loss": 0.31}, step=100)
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
            >>> run.define_metric("grads/*", section="Gradients")  # doctest: +SKIP
            >>> run.define_metric("debug/*", hidden=True)  # doctest: +SKIP
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
        """Waits until everything logged so far is written and flushed to the operating system."""
        done = threading.Event()
        self._submit(("flush", done))
        done.wait()

    def finish(self) -> None:
        """Writes what is pending, flushes and closes the file. Safe to call twice."""
        global _current
        with self._lock:
            if self._finished:
                return
            self._finished = True
            self._jobs.put(("stop",))
        self._thread.join()
        _open_runs.discard(self)
        if _current is self:
            _current = None

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

    def _submit(self, job: tuple) -> None:
        with self._lock:
            if self._finished:
                raise RuntimeError(
                    f"run {self.project}/{self.name} is finished; start another with init()"
                )
            self._jobs.put(job)

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
        _, key, step, wall_time, payload = job
        if kind == "scalar":
            self._guard(key, lambda: self._writer.write_scalar(key, step, wall_time, payload))
            return
        if kind == "histogram":
            histogram = self._guard(key, lambda: bin_prepared(*payload))
            self._pool.release(payload[0])
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
            message = f"histoscope run {self.project}/{self.name}: {what}: {error}"
            if type(error).__name__ + str(error) not in self._warned:
                self._warned.add(type(error).__name__ + str(error))
                warnings.warn(message, HistoscopeWarning, stacklevel=1)
            return None


def init(project: str, run_name: str | None = None, *, dir: str | os.PathLike | None = None) -> Run:
    """Starts logging a run into ``<dir or ./histoscope-logs>/<project>/<run_name>``.

    Without ``run_name`` a readable one is made up; an existing run name
    appends a new events file there, as a restart. The run becomes the one
    `histoscope.log` writes to.

    Example:
        >>> import histoscope as hs
        >>> run = hs.init("mnist", run_name="baseline")  # doctest: +SKIP
        >>> run.dir  # doctest: +SKIP
        PosixPath('histoscope-logs/mnist/baseline')
    """
    global _current
    project = _check_name(project, "project")
    root = Path(DEFAULT_DIR if dir is None else os.fspath(dir)) / project
    run_name = _new_run_name(root) if run_name is None else _check_name(run_name, "run_name")
    run = Run(project, run_name, root / run_name)
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
