"""Which layers changed: two runs, or two steps of one run, compared key by key.

Each key's histogram on side ``a`` and on side ``b`` is compared exactly, from the
stored buckets (the core's ``bins/distance.rs``): the Wasserstein-1 distance in the
key's units and in standard deviations, the Kolmogorov–Smirnov distance, and how the
mean and the standard deviation moved. Keys are ranked farthest first in their own
scale, so a layer of small weights that doubled ranks above a wide one that barely
moved. A log directory is read as the viewer reads it: an index of every step, then
only the chosen steps' buckets read again, so memory stays bounded by a segment and
a small cache, whatever the size of the runs.

Example:
    >>> import tempfile
    >>> import numpy as np
    >>> import histoscope as hs
    >>> logs = tempfile.TemporaryDirectory()
    >>> rng = np.random.default_rng(0)
    >>> for name, scale in (("base", 1.0), ("tuned", 3.0)):
    ...     with hs.init("sweep", run_name=name, logdir=logs.name) as run:
    ...         run.add_histogram("fc1", rng.normal(size=5000), step=0)
    ...         run.add_histogram("fc2", rng.normal(size=5000) * scale, step=0)
    >>> table = compare(logs.name, a="sweep/base", b="sweep/tuned")
    >>> [row.key for row in table], table[0].std_change > 1.5
    (['fc2', 'fc1'], True)
    >>> logs.cleanup()
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from . import _core
from .read.series import HistogramSeries

#: How much of an events file one read decodes while indexing (the viewer's segment).
_SEGMENT_BYTES = 4 << 20
#: The buckets read again kept at once: the chosen steps of every key of a segment.
_CACHE_BYTES = 64 << 20


@dataclass(frozen=True)
class KeyDistance:
    """How one key differs from side ``a`` (at ``step_a``) to side ``b`` (at ``step_b``).

    ``wasserstein`` is in the key's units; ``scaled`` divides it by the larger of the
    two standard deviations (infinite for two different constants); ``ks`` is the
    largest gap between the two distribution functions, from 0 to 1; ``mean_shift`` is
    the change of the mean in standard deviations of ``a``; ``std_change`` is
    ``std_b / std_a - 1``; ``nonfinite_a`` and ``nonfinite_b`` are the shares of NaN
    and infinite values on each side. ``rank`` counts from 1, farthest first.
    """

    key: str
    rank: int
    step_a: int
    step_b: int
    wasserstein: float
    scaled: float
    ks: float
    mean_shift: float
    std_change: float
    nonfinite_a: float
    nonfinite_b: float


@dataclass(frozen=True)
class Comparison:
    """The keys both sides hold, farthest first, and those left out: held by one side
    only (``only_a``, ``only_b``) or with no step at or before the one asked for, or no
    finite value there (``unmatched``)."""

    a: str
    b: str
    rows: list[KeyDistance]
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[KeyDistance]:
        return iter(self.rows)

    def __getitem__(self, index: int) -> KeyDistance:
        return self.rows[index]

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON: NaN and infinities become None."""
        rows = [{k: _plain(v) for k, v in asdict(row).items()} for row in self.rows]
        return {
            "a": self.a,
            "b": self.b,
            "rows": rows,
            "only_a": self.only_a,
            "only_b": self.only_b,
            "unmatched": self.unmatched,
        }

    def to_text(self, top: int | None = 20) -> str:
        """The ranking as an aligned text table, the ``top`` farthest keys (None: all)."""
        shown = self.rows if top is None else self.rows[:top]
        head = ("rank", "key", "steps", "W1/std", "W1", "KS", "mean shift", "std change")
        lines = [
            (
                str(r.rank),
                r.key,
                f"{r.step_a}->{r.step_b}",
                _number(r.scaled),
                _number(r.wasserstein),
                f"{r.ks:.3f}",
                _number(r.mean_shift, signed=True),
                _percent(r.std_change),
            )
            for r in shown
        ]
        widths = [max(len(x) for x in column) for column in zip(head, *lines)]
        text = [
            "  ".join(
                cell.ljust(w) if i == 1 else cell.rjust(w)
                for i, (cell, w) in enumerate(zip(row, widths))
            )
            for row in [head, *lines]
        ]
        text.insert(0, f"{self.a} against {self.b}: {len(self.rows)} keys compared, farthest first")
        if top is not None and len(self.rows) > top:
            text.append(f"... and {len(self.rows) - top} more")
        for label, keys in (
            (f"only in {self.a}", self.only_a),
            (f"only in {self.b}", self.only_b),
            ("no step to compare", self.unmatched),
        ):
            if keys:
                text.append(f"{label}: {', '.join(keys)}")
        return "\n".join(text)


def compare(
    source: str | os.PathLike[str] | Mapping[str, Mapping[str, HistogramSeries]],
    a: str | None = None,
    b: str | None = None,
    *,
    step: int | None = None,
    steps: tuple[int, int] | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> Comparison:
    """Compares every key of run ``a`` with the same key of run ``b``.

    ``source`` is a log directory (a path or an fsspec URL, with ``storage_options``)
    or what `load_histograms` returned. Each side takes its last step at or before
    ``step`` (default: its last step), or ``steps=(A, B)``: step A on side a, step B on
    side b. Leave ``b`` out to compare two steps of one run, ``steps=(A, B)``. ``a`` may
    be left out when the source holds one run.

    Raises ValueError for a run that is not there or arguments that do not make two
    sides, FileNotFoundError when a file went away while it was read.

    Example:
        >>> table = compare("examples/logdir", a="train", steps=(0, 10))
        >>> table.a, table.b, len(table) > 0
        ('train', 'train', True)
    """
    step_a, step_b = _steps(step, steps, two_runs=b is not None and b != a)
    if isinstance(source, Mapping):
        return _compare_loaded(source, a, b, step_a, step_b)
    from .read import spool

    path = os.fspath(source)
    if spool.is_url(path):
        with spool.RemoteLogdir.open(path, storage_options) as remote:
            remote.sync()
            return _compare_logdir(remote.root, a, b, step_a, step_b)
    if not os.path.isdir(path):
        raise FileNotFoundError(f"no log directory at {path}")
    return _compare_logdir(path, a, b, step_a, step_b)


def _steps(
    step: int | None, steps: tuple[int, int] | None, two_runs: bool
) -> tuple[int | None, int | None]:
    if step is not None and steps is not None:
        raise ValueError("give step= or steps=(A, B), not both")
    if steps is not None:
        if len(steps) != 2:
            raise ValueError(f"steps must be two steps (A, B), got {steps!r}")
        return int(steps[0]), int(steps[1])
    if not two_runs:
        raise ValueError("to compare one run with itself, give steps=(A, B); else give b=RUN")
    return (None, None) if step is None else (int(step), int(step))


def _sides(runs: list[str], a: str | None, b: str | None) -> tuple[str, str]:
    if a is None:
        if len(runs) != 1:
            raise ValueError(f"give a=RUN: the source holds {len(runs)} runs ({', '.join(runs)})")
        a = runs[0]
    b = a if b is None else b
    for name in (a, b):
        if name not in runs:
            raise ValueError(f"no run {name!r}; the runs are {', '.join(runs) or 'none'}")
    return a, b


def _compare_logdir(
    logdir: str, a: str | None, b: str | None, step_a: int | None, step_b: int | None
) -> Comparison:
    files: dict[str, list[str | os.PathLike[str]]] = {
        run.name: list(run.files) for run in _core.discover_runs(logdir)
    }
    a, b = _sides(sorted(files), a, b)
    cache = _core.BucketCache(_CACHE_BYTES)
    loaders = {}
    for name in {a, b}:
        loaders[name] = _core.RunLoader(name, cache)
        loaders[name].read(files[name], _SEGMENT_BYTES, math.inf)
    found = _core.compare_runs(loaders[a], loaders[b], step_a, step_b)
    return _comparison(a, b, found.ranked, found.only_a, found.only_b, found.unmatched)


def _compare_loaded(
    loaded: Mapping[str, Mapping[str, HistogramSeries]],
    a: str | None,
    b: str | None,
    step_a: int | None,
    step_b: int | None,
) -> Comparison:
    runs = sorted({run for by_run in loaded.values() for run in by_run})
    a, b = _sides(runs, a, b)
    side_a = [by_run[a].record for by_run in loaded.values() if a in by_run]
    side_b = [by_run[b].record for by_run in loaded.values() if b in by_run]
    found = _core.compare_series(side_a, side_b, step_a, step_b)
    return _comparison(a, b, found.ranked, found.only_a, found.only_b, found.unmatched)


def _comparison(
    a: str,
    b: str,
    ranked: Sequence[_core.Distance],
    only_a: Sequence[str],
    only_b: Sequence[str],
    unmatched: Sequence[str],
) -> Comparison:
    rows = [
        KeyDistance(
            key=d.key,
            rank=rank,
            step_a=d.step_a,
            step_b=d.step_b,
            wasserstein=d.wasserstein,
            scaled=d.scaled,
            ks=d.ks,
            mean_shift=d.mean_shift,
            std_change=d.std_change,
            nonfinite_a=d.nonfinite_a,
            nonfinite_b=d.nonfinite_b,
        )
        for rank, d in enumerate(ranked, start=1)
    ]
    return Comparison(a, b, rows, list(only_a), list(only_b), list(unmatched))


def _plain(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _number(value: float, signed: bool = False) -> str:
    if not math.isfinite(value):
        return "n/a" if math.isnan(value) else "inf"
    return f"{value:+.3g}" if signed else f"{value:.3g}"


def _percent(value: float) -> str:
    return "n/a" if not math.isfinite(value) else f"{value * 100:+.0f}%"
