"""Reading histograms from TensorBoard log directories (the work is done in Rust)."""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar, Union

from .. import _args, _core
from .._deprecated import renamed_keywords
from ..errors import DamagedFileWarning, HistoscopeWarning, NotFoundWarning, SharedTagWarning
from .chart import TensorBoardChart
from .series import HistogramSeries
from .storage import LogdirRef, core_logdirs, resolve_logdirs

PathLike = Union[str, "os.PathLike[str]"]
Logdirs = Union[PathLike, Sequence[PathLike]]


@renamed_keywords(tags="keys")
def load_histograms(
    logdir: Logdirs,
    *,
    keys: Iterable[str] | None = None,
    runs: Iterable[str] | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> dict[str, dict[str, HistogramSeries]]:
    """Reads every histogram under ``logdir`` (only ``keys`` and ``runs`` if given), by
    key (TensorBoard's tag), then run, buckets as stored.

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
        >>> data = histoscope.load_histograms("examples/logdir", keys=["tbx/uniform_bins10"])
        >>> series = data["tbx/uniform_bins10"]["tensorboardx"]
        >>> len(series), series.buckets[0].shape
        (15, (10, 3))
    """
    logdirs, several = resolve_logdirs(logdir, storage_options)
    tag_list, run_list = _args.names(keys, "keys"), _args.names(runs, "runs")
    loaded = _read_series(logdirs, several, run_list, tag_list)
    _warn_reports(loaded.reports)
    by_tag: dict[str, dict[str, HistogramSeries]] = {}
    for record in loaded.series:
        by_tag.setdefault(record.tag, {})[record.run] = HistogramSeries.from_record(record)
    where = _describe(logdirs)
    _warn_missing(where, loaded.runs, run_list, tag_list, by_tag.keys(), bool(loaded.series))
    return {tag: _ordered(by_tag[tag], run_list) for tag in _tag_order(by_tag.keys(), tag_list)}


def read_tensorboard_histograms(
    logdir: Logdirs,
    *,
    tags: Iterable[str] | None = None,
    runs: Iterable[str] | None = None,
    bins: int = _core.CHART_BINS,
    max_steps: int | None = _core.CHART_STEPS,
    storage_options: Mapping[str, Any] | None = None,
) -> list[TensorBoardChart]:
    """Reads the histograms under ``logdir`` as charts, one per tag and run.

    Each chart counts every step again in ``bins`` equal bins spanning all its
    kept steps (a bucket's count shared among the bins it overlaps, in
    proportion to the overlap), after thinning to at most ``max_steps`` steps
    evenly spaced, the first and last always kept (``None`` keeps all).
    Charts come in the order of ``tags`` (default: sorted), then of runs.
    ``logdir`` and ``storage_options`` are as for `load_histograms`: several log
    directories, glob patterns and fsspec URLs are read too. ``bins`` is at most
    ``histoscope._core.MAX_BINS``, the limit logging has too.

    Example:
        >>> import histoscope
        >>> charts = histoscope.read_tensorboard_histograms(
        ...     "examples/logdir", bins=40, max_steps=10)
        >>> chart = charts[-1]
        >>> chart.tag, chart.run, chart.counts.shape
        ('tbx/uniform_bins10', 'tensorboardx', (10, 40))
        >>> chart.steps.tolist()  # maidr's evenly spaced choice, first and last kept
        [0, 2, 3, 5, 6, 8, 9, 11, 12, 14]
    """
    logdirs, several = resolve_logdirs(logdir, storage_options)
    tag_list, run_list = _args.names(tags, "tags"), _args.names(runs, "runs")
    bins = _args.bin_count(bins)
    if max_steps is not None:
        max_steps = _args.whole_number(max_steps, "max_steps", minimum=2)
    charted = _read_charts(logdirs, several, bins, max_steps, run_list, tag_list)
    _warn_reports(charted.reports)
    by_tag: dict[str, dict[str, TensorBoardChart]] = {}
    for record in charted.charts:
        if record.nonfinite_buckets:
            warnings.warn(
                f"{record.tag!r} ({record.run}): {record.nonfinite_buckets} buckets with NaN or"
                f" infinite edges or counts (holding {record.nonfinite_count:g} values) were"
                " left out of the chart",
                HistoscopeWarning,
                stacklevel=2,
            )
        if not record.counts.any() and not record.nonfinite_count:
            # maidr leaves out a chart with nothing counted in any kept step, and says so.
            warnings.warn(
                f"every histogram of {record.tag!r} in run {record.run!r} is empty (no"
                " buckets, or every count zero); it is left out",
                HistoscopeWarning,
                stacklevel=2,
            )
            continue
        by_tag.setdefault(record.tag, {})[record.run] = TensorBoardChart.from_record(record)
    where = _describe(logdirs)
    found = {record.tag for record in charted.charts}
    _warn_missing(where, charted.runs, run_list, tag_list, found, bool(charted.charts))
    return [
        chart
        for tag in _tag_order(by_tag.keys(), tag_list)
        for chart in _ordered(by_tag[tag], run_list).values()
    ]


def _read_series(
    logdirs: list[LogdirRef], several: bool, runs: list[str] | None, tags: list[str] | None
) -> _core.LogdirRecord:
    """The selected series of ``logdirs``, read by the core from disk or through fsspec."""
    return _core.load_histograms(core_logdirs(logdirs, several), runs, tags)


def _read_charts(
    logdirs: list[LogdirRef],
    several: bool,
    bins: int,
    max_steps: int | None,
    runs: list[str] | None,
    tags: list[str] | None,
) -> _core.ChartsRecord:
    """The selected series of ``logdirs`` as charts, thinned and rebinned by the core."""
    return _core.read_charts(core_logdirs(logdirs, several), bins, max_steps, runs, tags)


def _describe(logdirs: list[LogdirRef]) -> str:
    return " or ".join(repr(ref.name) for ref in logdirs)


def _warn_reports(reports: Sequence[_core.FileReport]) -> None:
    for report in reports:
        if report.has_problems:
            warnings.warn(report.summary, DamagedFileWarning, stacklevel=3)
        if report.shared_note:
            warnings.warn(report.shared_note, SharedTagWarning, stacklevel=3)


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
        warnings.warn(f"run {run!r} not found in {logdir}", NotFoundWarning, stacklevel=3)
    found = set(found_tags)
    for tag in tags or []:
        if tag not in found:
            warnings.warn(
                f"histogram tag {tag!r} not found in {logdir}", NotFoundWarning, stacklevel=3
            )
    if not found_any and not tags and not missing_runs:
        warnings.warn(f"no histograms found in {logdir}", HistoscopeWarning, stacklevel=3)


def _tag_order(found: Iterable[str], tags: list[str] | None) -> list[str]:
    present = set(found)
    return [t for t in tags if t in present] if tags is not None else sorted(present)


_T = TypeVar("_T")


def _ordered(by_run: dict[str, _T], runs: list[str] | None) -> dict[str, _T]:
    order = [r for r in runs if r in by_run] if runs is not None else sorted(by_run)
    return {run: by_run[run] for run in order}
