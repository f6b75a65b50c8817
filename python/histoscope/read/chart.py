"""`TensorBoardChart`: one tag of one run, every step counted in the same equal bins."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from .. import _core


def _frozen(array: npt.ArrayLike, dtype: type, ndim: int, name: str) -> np.ndarray:
    out: np.ndarray = np.array(array, dtype=dtype, copy=True)
    if out.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {out.shape}")
    out.setflags(write=False)
    return out


class TensorBoardChart:
    """A histogram tag of one run as TensorBoard's Histograms dashboard draws it.

    Values run along x, cut into ``len(edges) - 1`` equal bins shared by every
    step; ``counts[i, j]`` is how many values of step ``steps[i]`` fall in bin
    ``j``. Steps are in increasing order, the earliest first. The object and its
    arrays are read-only.

    Example:
        >>> import histoscope
        >>> chart = histoscope.TensorBoardChart(
        ...     tag="w", run="train", steps=[0, 1], wall_times=[0.0, 1.0],
        ...     edges=[0.0, 0.5, 1.0], counts=[[1, 3], [2, 2]])
        >>> chart.counts.shape
        (2, 2)
    """

    __slots__ = ("_tag", "_run", "_steps", "_wall_times", "_edges", "_counts")
    _tag: str
    _run: str
    _steps: np.ndarray
    _wall_times: np.ndarray
    _edges: np.ndarray
    _counts: np.ndarray

    def __init__(
        self,
        *,
        tag: str,
        run: str,
        steps: npt.ArrayLike,
        wall_times: npt.ArrayLike,
        edges: npt.ArrayLike,
        counts: npt.ArrayLike,
    ) -> None:
        steps_ = _frozen(steps, np.int64, 1, "steps")
        wall_times_ = _frozen(wall_times, np.float64, 1, "wall_times")
        edges_ = _frozen(edges, np.float64, 1, "edges")
        counts_ = _frozen(counts, np.float64, 2, "counts")
        if len(wall_times_) != len(steps_):
            raise ValueError("wall_times must have one value per step")
        if len(edges_) < 2 or not bool(np.all(np.diff(edges_) > 0)):
            raise ValueError(
                f"edges must be at least 2 strictly increasing values, got {edges_.tolist()[:8]}"
            )
        if counts_.shape != (len(steps_), len(edges_) - 1):
            raise ValueError(
                f"counts must have shape (steps, bins) = ({len(steps_)}, {len(edges_) - 1}),"
                f" got {counts_.shape}"
            )
        for name, value in (
            ("_tag", str(tag)),
            ("_run", str(run)),
            ("_steps", steps_),
            ("_wall_times", wall_times_),
            ("_edges", edges_),
            ("_counts", counts_),
        ):
            object.__setattr__(self, name, value)

    @classmethod
    def from_record(cls, record: _core.ChartRecord) -> TensorBoardChart:
        """The chart of a native record, as `read_tensorboard_histograms` makes them."""
        fields = ("tag", "run", "steps", "wall_times", "edges", "counts")
        return cls(**{name: getattr(record, name) for name in fields})

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("TensorBoardChart is immutable")

    @property
    def tag(self) -> str:
        """The histogram's tag, e.g. ``"layer1/weights"``."""
        return self._tag

    @property
    def run(self) -> str:
        """The run: the path of its directory relative to the log directory (``.`` for the root)."""
        return self._run

    @property
    def steps(self) -> np.ndarray:
        """The steps shown, int64, increasing."""
        return self._steps

    @property
    def wall_times(self) -> np.ndarray:
        """Seconds since the epoch at which each step was logged, float64."""
        return self._wall_times

    @property
    def edges(self) -> np.ndarray:
        """The ``bins + 1`` bin edges shared by every step, float64, increasing."""
        return self._edges

    @property
    def counts(self) -> np.ndarray:
        """Counts per step and bin, float64 of shape ``(len(steps), bins)``."""
        return self._counts

    @property
    def bins(self) -> int:
        """The number of bins."""
        return len(self._edges) - 1

    def __repr__(self) -> str:
        if len(self._steps):
            span = f"steps {self._steps[0]}..{self._steps[-1]} ({len(self._steps)} shown)"
        else:
            span = "no steps"
        values = f", values {self._edges[0]:.6g}..{self._edges[-1]:.6g}" if self.bins else ""
        return (
            f"TensorBoardChart(tag={self._tag!r}, run={self._run!r}, {span},"
            f" {self.bins} bins{values})"
        )

    def _repr_html_(self) -> str:
        """Jupyter shows the chart as its accessible page (see `histoscope.html`)."""
        from ..view.html import _notebook_html

        return _notebook_html(self)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TensorBoardChart):
            return NotImplemented
        return (
            self._tag == other._tag
            and self._run == other._run
            and np.array_equal(self._steps, other._steps)
            and np.array_equal(self._wall_times, other._wall_times)
            and np.array_equal(self._edges, other._edges)
            and np.array_equal(self._counts, other._counts)
        )

    __hash__ = None  # type: ignore[assignment]
