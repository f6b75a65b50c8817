"""Histograms as tidy tables: one row per (run, tag, step), for Arrow, pandas and Parquet.

Columns: ``run``, ``tag``, ``step`` (int64), ``wall_time`` (float64); the
buckets as lists, one element per bucket: ``left``, ``right``, ``count``
(float64); then the statistics, float64, NaN where the writer stored none:
``num`` (the number of values, HistogramProto's name for it, as ``count``
holds the buckets), ``min``, ``max``, ``mean``, ``std``, ``nonfinite``,
``below``, ``above``.

pyarrow (and pandas for `to_pandas`) are optional: ``pip install 'histoscope[arrow]'``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, Union, cast

import numpy as np

from .. import _core

if TYPE_CHECKING:
    import pandas
    import pyarrow

#: The statistics columns, in the order of ``_core.STAT_NAMES`` (``count`` renamed ``num``).
STAT_COLUMNS = tuple("num" if name == "count" else name for name in _core.STAT_NAMES)
#: Every column, in order.
COLUMNS = ("run", "tag", "step", "wall_time", "left", "right", "count", *STAT_COLUMNS)


class SeriesLike(Protocol):
    """What a table is made from: a `histoscope.HistogramSeries`, known here by the core
    record it wraps, since the series module imports this one for its ``to_arrow``."""

    @property
    def record(self) -> _core.SeriesRecord: ...


SeriesInput = Union[
    SeriesLike,
    Mapping[str, Mapping[str, SeriesLike]],
    Iterable[SeriesLike],
]


def _pyarrow() -> Any:
    try:
        import pyarrow
    except ImportError as error:
        raise ImportError("tidy tables need pyarrow: pip install 'histoscope[arrow]'") from error
    return pyarrow


def schema() -> pyarrow.Schema:
    """The Arrow schema of every tidy table (and of `histoscope export`'s Parquet files)."""
    pa = _pyarrow()
    buckets = pa.large_list(pa.float64())
    return pa.schema(
        [
            ("run", pa.string()),
            ("tag", pa.string()),
            ("step", pa.int64()),
            ("wall_time", pa.float64()),
            ("left", buckets),
            ("right", buckets),
            ("count", buckets),
            *[(name, pa.float64()) for name in STAT_COLUMNS],
        ]
    )


def to_arrow(series: SeriesInput) -> pyarrow.Table:
    """One row per (run, tag, step) of ``series``: what `load_histograms` returned,
    one `HistogramSeries` or several; rows in that order, then by step.

    Example:
        >>> import histoscope
        >>> data = histoscope.load_histograms("examples/logdir")
        >>> table = histoscope.to_arrow(data)
        >>> table.column_names[:7]
        ['run', 'tag', 'step', 'wall_time', 'left', 'right', 'count']
        >>> table.num_rows
        47
    """
    return table_of_records([s.record for s in _flatten(series)])


def to_pandas(series: SeriesInput) -> pandas.DataFrame:
    """`to_arrow` as a pandas DataFrame; bucket columns hold one float64 array per row."""
    table = to_arrow(series)
    try:
        import pandas  # noqa: F401
    except ImportError as error:
        raise ImportError("to_pandas needs pandas: pip install 'histoscope[arrow]'") from error
    return table.to_pandas()


def table_of_records(records: Sequence[_core.SeriesRecord]) -> pyarrow.Table:
    """The tidy table of series as the native module returns them, built without a
    Python loop over steps: bucket lists are views of the flat buckets through their offsets.
    """
    pa = _pyarrow()
    lengths = np.array([len(r.steps) for r in records], dtype=np.int64)
    rows_of = pa.array(np.repeat(np.arange(len(records)), lengths))
    names = {
        column: pa.array([getattr(r, column) for r in records], pa.string()).take(rows_of)
        for column in ("run", "tag")
    }
    steps = _concat([r.steps for r in records], np.int64)
    wall_times = _concat([r.wall_times for r in records], np.float64)
    # Each column gathered straight from the records' rows: no copy of all the buckets
    # at once besides the columns themselves (export's memory is a few of these).
    rows = [r.buckets.reshape(-1, 3) for r in records]
    stats = _concat([r.stats for r in records], np.float64).reshape(-1, len(STAT_COLUMNS))
    offsets = pa.array(_joined_offsets([r.offsets for r in records]))
    lists = {
        column: pa.LargeListArray.from_arrays(
            offsets, pa.array(np.ascontiguousarray(_concat([b[:, i] for b in rows], np.float64)))
        )
        for i, column in enumerate(("left", "right", "count"))
    }
    columns = [
        names["run"],
        names["tag"],
        pa.array(steps),
        pa.array(wall_times),
        lists["left"],
        lists["right"],
        lists["count"],
        *[pa.array(np.ascontiguousarray(stats[:, i])) for i in range(len(STAT_COLUMNS))],
    ]
    return pa.Table.from_arrays(columns, schema=schema())


def _concat(arrays: list[np.ndarray], dtype: type) -> np.ndarray:
    if not arrays:
        return np.empty(0, dtype)
    joined = arrays[0] if len(arrays) == 1 else np.concatenate(arrays)
    return joined.astype(dtype, copy=False)


def _joined_offsets(offsets: list[np.ndarray]) -> np.ndarray:
    """One offsets array for the series' buckets laid end to end."""
    if not offsets:
        return np.zeros(1, np.int64)
    totals = np.array([o[-1] for o in offsets], dtype=np.int64)
    shifts = np.concatenate([[0], np.cumsum(totals)[:-1]])
    starts = [o[:-1] + shift for o, shift in zip(offsets, shifts)]
    return np.concatenate([*starts, [totals.sum()]]).astype(np.int64)


def _flatten(series: SeriesInput) -> list[SeriesLike]:
    if _is_series(series):
        return [cast(SeriesLike, series)]
    if isinstance(series, Mapping):
        out: list[SeriesLike] = []
        for tag, by_run in series.items():
            if not isinstance(by_run, Mapping):
                raise TypeError(
                    "series must be what load_histograms returned (tag -> run -> "
                    f"HistogramSeries), got {type(by_run).__name__} for tag {tag!r}"
                )
            out.extend(by_run.values())
        series = out
    # Not a series itself (checked above): an iterable of them.
    items = list(cast(Iterable[SeriesLike], series))
    for item in items:
        if not _is_series(item):
            raise TypeError(
                "series must hold HistogramSeries (as load_histograms returns them), "
                f"got {type(item).__name__}"
            )
    return items


def _is_series(item: object) -> bool:
    return isinstance(getattr(item, "record", None), _core.SeriesRecord)
