"""`HistogramSeries`: every step of one histogram key of one run, wrapping the core's record."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from .. import _core
from .._deprecated import warn_renamed

if TYPE_CHECKING:
    import pandas
    import pyarrow


def _readonly(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


class HistogramSeries:
    """Every step of one histogram key (TensorBoard's tag) of one run, with the buckets
    exactly as stored.

    ``buckets[i]`` is a float64 array of shape ``(k, 3)``: the left edge, right
    edge and count of each bucket of step ``steps[i]``. ``stats`` maps
    ``count``, ``min``, ``max``, ``mean``, ``std``, ``nonfinite``, ``below`` and
    ``above`` to one float64 value per step, NaN where the writer stored none
    (legacy histograms store count, min, max and the sums behind mean and std;
    for TF2 tensors count, min and max come from the buckets).
    Arrays are read-only views into one block per series, the native record's.

    Example:
        >>> import numpy as np, histoscope
        >>> series = histoscope.HistogramSeries(
        ...     "train", "w", steps=[0, 1], wall_times=[0.0, 1.0],
        ...     flat_buckets=[[0, 1, 2], [1, 2, 3], [0, 2, 5]], offsets=[0, 2, 3])
        >>> series.buckets[1]
        array([[0., 2., 5.]])
        >>> len(series), series.key, series.steps.tolist()
        (2, 'w', [0, 1])
    """

    __slots__ = ("_record", "_buckets")

    def __init__(
        self,
        run: str,
        key: str | None = None,
        steps: npt.ArrayLike = (),
        wall_times: npt.ArrayLike = (),
        flat_buckets: npt.ArrayLike = (),
        offsets: npt.ArrayLike = (0,),
        stats: npt.ArrayLike | None = None,
        *,
        tag: str | None = None,
    ) -> None:
        if tag is not None:
            if key is not None:
                raise TypeError("HistogramSeries() got both 'key' and its old name 'tag'")
            warn_renamed("the keyword 'tag' of HistogramSeries()", "'key'")
            key = tag
        if key is None:
            raise TypeError("HistogramSeries() needs the series' key")
        steps_ = np.array(steps, dtype=np.int64, ndmin=1)
        if stats is None:
            stats = np.full((len(steps_), len(_core.STAT_NAMES)), np.nan)
        record = _core.SeriesRecord(
            str(run),
            str(key),
            steps_,
            np.array(wall_times, dtype=np.float64, ndmin=1),
            np.array(flat_buckets, dtype=np.float64, ndmin=2).reshape(-1, 3),
            np.array(offsets, dtype=np.int64, ndmin=1),
            np.array(stats, dtype=np.float64, ndmin=2),
        )
        self._take(record)

    @classmethod
    def from_record(cls, record: _core.SeriesRecord) -> HistogramSeries:
        """Wraps a series as the native module returns it (no copy)."""
        series = cls.__new__(cls)
        series._take(record)
        return series

    def _take(self, record: _core.SeriesRecord) -> None:
        for array in (record.steps, record.wall_times, record.buckets, record.offsets):
            _readonly(array)
        _readonly(record.stats)
        self._record = record
        self._buckets: list[np.ndarray] | None = None

    @property
    def record(self) -> _core.SeriesRecord:
        """The native record this series wraps."""
        return self._record

    @property
    def run(self) -> str:
        """The run: its directory relative to the log directory (``.`` for the root)."""
        return self._record.run

    @property
    def key(self) -> str:
        """The series' key (TensorBoard's tag), e.g. ``"layer1/weights"``."""
        return self._record.tag

    @property
    def tag(self) -> str:
        """Deprecated: `key`."""
        warn_renamed("HistogramSeries.tag", "HistogramSeries.key")
        return self._record.tag

    @property
    def steps(self) -> np.ndarray:
        """The steps, int64, strictly increasing."""
        return self._record.steps

    @property
    def wall_times(self) -> np.ndarray:
        """Seconds since the epoch at which each step was logged, float64."""
        return self._record.wall_times

    @property
    def flat_buckets(self) -> np.ndarray:
        """Every step's buckets one after the other: ``(rows, 3)`` float64 (left, right, count)."""
        return self._record.buckets

    @property
    def offsets(self) -> np.ndarray:
        """Step ``i`` holds rows ``offsets[i]:offsets[i + 1]`` of `flat_buckets`; int64."""
        return self._record.offsets

    @property
    def stats_matrix(self) -> np.ndarray:
        """The statistics as one ``(steps, len(STAT_NAMES))`` float64 array."""
        return self._record.stats

    @property
    def buckets(self) -> list[np.ndarray]:
        """One ``(k, 3)`` float64 array per step: left edge, right edge, count."""
        if self._buckets is None:
            flat, bounds = self.flat_buckets, self.offsets.tolist()
            self._buckets = [flat[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
        return self._buckets

    @property
    def stats(self) -> dict[str, np.ndarray]:
        """Per-step statistics by name; NaN where the writer did not store one."""
        return {name: self.stats_matrix[:, i] for i, name in enumerate(_core.STAT_NAMES)}

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
        return f"HistogramSeries(key={self.key!r}, run={self.run!r}, {span}, {len(self)} steps)"
