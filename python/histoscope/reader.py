"""Reading histograms from TensorBoard log directories (the work is done in Rust)."""

from __future__ import annotations

import operator
import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from . import _core
from .chart import TensorBoardChart
from .storage import LogdirRef, _text_path, find_runs, read_runs, resolve_logdirs

if TYPE_CHECKING:
    import pandas
    import pyarrow

__all__ = [
    "DamagedFileWarning",
    "HistogramSeries",
    "HistoscopeWarning",
    "load_histograms",
    "read_tensorboard_histograms",
]

PathLike = Union[str, "os.PathLike[str]"]
Logdirs = Union[PathLike, Sequence[PathLike]]


class HistoscopeWarning(UserWarning):
    """Something asked for was not there, or some data could not be used."""


class DamagedFileWarning(HistoscopeWarning):
    """Part of an events file was damaged and skipped; the message gives the byte offsets."""


def _readonly(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


class HistogramSeries:
    """Every step of one histogram tag of one run, with the buckets exactly as stored.

    ``buckets[i]`` is a float64 array of shape ``(k, 3)``: the left edge, right
    edge and count of each bucket of step ``steps[i]``. ``stats`` maps
    ``count``, ``min``, ``max``, ``mean``, ``std``, ``nonfinite``, ``below`` and
    ``above`` to one float64 value per step, NaN where the writer stored none
    (legacy histograms store count, min, max and the sums behind mean and std).
    Arrays are read-only views into one block per series.

    Example:
        >>> series = histoscope.load_histograms("runs/")["weights"]["train"]  # doctest: +SKIP
        >>> series.steps[-1], series.buckets[-1][:, 2].sum()  # doctest: +SKIP
        (99, 512.0)
    """

    __slots__ = ("run", "tag", "steps", "wall_times", "_flat", "_offsets", "_stats", "_buckets")

    def __init__(
        self,
        run: str,
        tag: str,
        steps: np.ndarray,
        wall_times: np.ndarray,
        flat_buckets: np.ndarray,
        offsets: np.ndarray,
        stats: np.ndarray,
    ) -> None:
        self.run = run
        self.tag = tag
        self.steps = _readonly(steps)
        self.wall_times = _readonly(wall_times)
        self._flat = _readonly(flat_buckets)
        self._offsets = offsets
        self._stats = _readonly(stats)
        self._buckets: list[np.ndarray] | None = None

    @property
    def buckets(self) -> list[np.ndarray]:
        """One ``(k, 3)`` float64 array per step: left edge, right edge, count."""
        if self._buckets is None:
            flat, bounds = self._flat, self._offsets.tolist()
            self._buckets = [flat[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
        return self._buckets

    @property
    def stats(self) -> dict[str, np.ndarray]:
        """Per-step statistics by name; NaN where the writer did not store one."""
        return {name: self._stats[:, i] for i, name in enumerate(_core.STAT_NAMES)}

    def __len__(self) -> int:
        return len(self.steps)

    def to_arrow(self) -> pyarrow.Table:
        """One row per step, with bucket lists and statistics, as `histoscope.to_arrow`
        makes them (needs ``pip install 'histoscope[arrow]'``)."""
        from .tidy import to_arrow

        return to_arrow(self)

    def to_pandas(self) -> pandas.DataFrame:
        """`to_arrow` as a pandas DataFrame."""
        from .tidy import to_pandas

        return to_pandas(self)

    def __repr__(self) -> str:
        span = f"steps {self.steps[0]}..{self.steps[-1]}" if len(self.steps) else "no steps"
        return f"HistogramSeries(tag={self.tag!r}, run={self.run!r}, {span}, {len(self)} steps)"


def load_histograms(
    logdir: Logdirs,
    *,
    tags: Iterable[str] | None = None,
    runs: Iterable[str] | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> dict[str, dict[str, HistogramSeries]]:
    """Reads every histogram under ``logdir``, keyed by tag, then run, buckets as stored.

    Runs are the directories holding events files (``.`` for ``logdir`` itself),
    read on all cores. Damaged records are skipped with a `DamagedFileWarning`.

    ``logdir`` may also be a list of log directories or a glob pattern: their
    runs are then named ``<logdir>/<run>`` (the root run ``<logdir>``), so runs
    of different directories never merge, and ``runs`` takes such names. A URL
    with a scheme fsspec knows (``s3://``, ``gs://``, ``az://``, ``hf://``,
    ``file://``) is streamed through fsspec (``pip install 'histoscope[cloud]'``),
    with ``storage_options`` passed to its filesystem (``{"endpoint_url": ...}``).

    Example:
        >>> import histoscope
        >>> data = histoscope.load_histograms("runs/", tags=["weights"])  # doctest: +SKIP
        >>> data["weights"]["train"].buckets[0].shape  # doctest: +SKIP
        (30, 3)
    """
    logdirs, several = resolve_logdirs(logdir, storage_options)
    tag_list, run_list = _names(tags, "tags"), _names(runs, "runs")
    all_runs, series, reports = _read_series(logdirs, several, run_list, tag_list)
    _warn_reports(reports)
    by_tag: dict[str, dict[str, HistogramSeries]] = {}
    for run, tag, *arrays in series:
        by_tag.setdefault(tag, {})[run] = HistogramSeries(run, tag, *arrays)
    where = _describe(logdirs)
    _warn_missing(where, all_runs, run_list, tag_list, by_tag.keys(), bool(series))
    return {tag: _ordered(by_tag[tag], run_list) for tag in _tag_order(by_tag.keys(), tag_list)}


def read_tensorboard_histograms(
    logdir: Logdirs,
    *,
    tags: Iterable[str] | None = None,
    runs: Iterable[str] | None = None,
    bins: int = 30,
    max_steps: int | None = 51,
    storage_options: Mapping[str, Any] | None = None,
) -> list[TensorBoardChart]:
    """Reads the histograms under ``logdir`` as charts, one per tag and run.

    Each chart counts every step again in ``bins`` equal bins spanning all its
    kept steps (a bucket's count shared among the bins it overlaps, in
    proportion to the overlap), after thinning to at most ``max_steps`` steps
    evenly spaced, the first and last always kept (``None`` keeps all).
    Charts come in the order of ``tags`` (default: sorted), then of runs.
    ``logdir`` and ``storage_options`` are as for `load_histograms`: several log
    directories, glob patterns and fsspec URLs are read too.

    Example:
        >>> import histoscope
        >>> charts = histoscope.read_tensorboard_histograms("runs/", bins=40)  # doctest: +SKIP
        >>> charts[0].counts.shape  # doctest: +SKIP
        (20, 40)
    """
    logdirs, several = resolve_logdirs(logdir, storage_options)
    tag_list, run_list = _names(tags, "tags"), _names(runs, "runs")
    bins = _positive_int(bins, "bins", minimum=1)
    if max_steps is not None:
        max_steps = _positive_int(max_steps, "max_steps", minimum=2)
    all_runs, charts, reports = _read_charts(logdirs, several, bins, max_steps, run_list, tag_list)
    _warn_reports(reports)
    by_tag: dict[str, dict[str, TensorBoardChart]] = {}
    for run, tag, steps, wall_times, edges, counts, lost_buckets, lost_count in charts:
        if lost_buckets:
            warnings.warn(
                f"{tag!r} ({run}): {lost_buckets} buckets with NaN or infinite edges or counts"
                f" (holding {lost_count:g} values) were left out of the chart",
                HistoscopeWarning,
                stacklevel=2,
            )
        by_tag.setdefault(tag, {})[run] = TensorBoardChart(
            tag=tag, run=run, steps=steps, wall_times=wall_times, edges=edges, counts=counts
        )
    where = _describe(logdirs)
    _warn_missing(where, all_runs, run_list, tag_list, by_tag.keys(), bool(charts))
    return [
        chart
        for tag in _tag_order(by_tag.keys(), tag_list)
        for chart in _ordered(by_tag[tag], run_list).values()
    ]


def _core_logdirs(logdirs: list[LogdirRef], several: bool) -> str | list[tuple[str, str]]:
    """The ``logdir`` argument of the Rust core: one path, or (name, path) pairs."""
    return [(ref.name, ref.path) for ref in logdirs] if several else logdirs[0].path


def _read_series(
    logdirs: list[LogdirRef], several: bool, runs: list[str] | None, tags: list[str] | None
) -> tuple[list[str], list[tuple], list[tuple]]:
    """(every run name, series tuples, report tuples), as ``_core.load_histograms`` gives them."""
    if all(ref.is_local for ref in logdirs):
        return _core.load_histograms(_core_logdirs(logdirs, several), runs, tags)
    found = find_runs(logdirs, several)
    chosen = [run for run in found if runs is None or run.name in runs]
    series, reports = read_runs(chosen, tags)
    return [run.name for run in found], series, reports


def _read_charts(
    logdirs: list[LogdirRef],
    several: bool,
    bins: int,
    max_steps: int | None,
    runs: list[str] | None,
    tags: list[str] | None,
) -> tuple[list[str], list[tuple], list[tuple]]:
    """(every run name, chart tuples, report tuples), as ``_core.read_charts`` gives them."""
    if all(ref.is_local for ref in logdirs):
        return _core.read_charts(_core_logdirs(logdirs, several), bins, max_steps, runs, tags)
    all_runs, series, reports = _read_series(logdirs, several, runs, tags)
    charts = []
    for run, tag, steps, wall_times, flat, offsets, _stats in series:
        kept = _core.thin_indices(len(steps), max_steps)
        buckets = [flat[offsets[i] : offsets[i + 1]] for i in kept]
        edges, counts, lost_buckets, lost_count = _core.rebin(buckets, bins)
        charts.append(
            (run, tag, steps[kept], wall_times[kept], edges, counts, lost_buckets, lost_count)
        )
    return all_runs, charts, reports


def _describe(logdirs: list[LogdirRef]) -> str:
    return " or ".join(repr(ref.name) for ref in logdirs)


def _check_logdir(logdir: PathLike) -> str:
    path = _text_path(logdir)
    if not os.path.isdir(path):
        raise FileNotFoundError(f"log directory not found: {path!r} is not a directory")
    return path


def _names(values: Iterable[str] | None, name: str) -> list[str] | None:
    if values is None:
        return None
    if isinstance(values, str):
        return [values]
    if not isinstance(values, Iterable):
        raise TypeError(f"{name} must be a list of strings, got {type(values).__name__}")
    out = list(values)
    for value in out:
        if not isinstance(value, str):
            raise TypeError(f"{name} must hold strings, got {type(value).__name__}: {value!r}")
    return list(dict.fromkeys(out))


def _positive_int(value: object, name: str, minimum: int) -> int:
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an int >= {minimum}, got a bool")
    try:
        number = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        if isinstance(value, float):
            raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}") from None
        raise TypeError(f"{name} must be an int >= {minimum}, got {type(value).__name__}") from None
    if number < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {number}")
    return number


def _warn_reports(reports: Sequence[tuple[str, str, bool, int | None]]) -> None:
    for _path, summary, has_problems, _tail in reports:
        if has_problems:
            warnings.warn(summary, DamagedFileWarning, stacklevel=3)


def _warn_missing(
    logdir: str,
    all_runs: list[str],
    runs: list[str] | None,
    tags: list[str] | None,
    found_tags: Iterable[str],
    found_any: bool,
) -> None:
    missing_runs = [run for run in runs or [] if run not in all_runs]
    for run in missing_runs:
        warnings.warn(f"run {run!r} not found in {logdir}", HistoscopeWarning, stacklevel=3)
    found = set(found_tags)
    for tag in tags or []:
        if tag not in found:
            warnings.warn(
                f"histogram tag {tag!r} not found in {logdir}", HistoscopeWarning, stacklevel=3
            )
    if not found_any and not tags and not missing_runs:
        warnings.warn(f"no histograms found in {logdir}", HistoscopeWarning, stacklevel=3)


def _tag_order(found: Iterable[str], tags: list[str] | None) -> list[str]:
    present = set(found)
    return [t for t in tags if t in present] if tags is not None else sorted(present)


def _ordered(by_run: dict, runs: list[str] | None) -> dict:
    order = [r for r in runs if r in by_run] if runs is not None else sorted(by_run)
    return {run: by_run[run] for run in order}
