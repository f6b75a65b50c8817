"""Whole-tensor histograms of sharded parameters and gradients, merged over their ranks.

Nothing is gathered. At a logged step every rank of a group (the ranks that
hold a set of parameters between them, `shards.Piece.ranks`) does this for
all of that group's tensors at once:

1. bins nothing yet: each local piece's count, extremes, mean and spread
   (`batched.local_moments`);
2. one all-reduce (MAX) of every tensor's ``[-min, max, mean, held, missing]``
   gives the whole tensor's extremes, so every rank makes the same edges by
   the core's rules (`device.default_edges`, as ``Histogram(tensor.full_tensor())``
   would), and a shift for the sums below (the largest local mean);
3. each rank counts its piece on those edges (`batched.local_counts`; the
   core for CPU tensors, the device kernel elsewhere);
4. one reduce (SUM) to the writing rank adds the counts, the counts of
   finite and nonfinite values, and each piece's sum of deviations from the
   shift and sum of their squares, made from its own mean and spread
   (``n (mean - shift)`` and ``m2 + n (mean - shift)^2``). The whole
   tensor's spread is then ``S2 - S1^2 / N``: Chan's merge, which loses
   little to a large mean because the shift is one of the pieces' means.

Two collectives per group and logged step, whatever the number of tensors.
The counts equal those of binning the gathered tensor on the same edges;
the mean and std equal them up to rounding.

The collectives run on a gloo group of their own (made at the first logged
step by the group's ranks alone, then shared by the process's watches), whose
timeout is the watch's: a peer that died or stopped fails the step on the
others within that time, and the training's own collectives are never
delayed or put out of order. After a failure the watch stops logging sharded
tensors, says so once, and training goes on.
"""

from __future__ import annotations

import datetime
import math
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ShardedWarning
from .batched import local_counts, local_moments
from .device import default_edges
from .histogram import Histogram
from .options import WatchOptions
from .shards import Local, Piece

if TYPE_CHECKING:
    import torch

__all__ = ["Merge", "Wanted"]

Wanted = tuple[str, Piece, bool]
"""A tensor to log: its key, its parameter, and whether it is the parameter's gradient."""

_GATHERED = 5
"""Columns of the first collective: -min, max, the local mean (the shift), held, missing."""


class Merge:
    """The merges of one watch: its groups and their gloo process groups, made once.

    Example:
        >>> from histoscope.write.options import WatchOptions
        >>> Merge(WatchOptions(), "Linear").failed
        False
    """

    def __init__(self, options: WatchOptions, model: str) -> None:
        self.options = options
        self.model = model
        self.failed = False
        self._groups: dict[tuple[int, ...], Any] = {}
        self._warned: set[str] = set()

    def writes(self, ranks: tuple[int, ...]) -> bool:
        """Whether this rank writes what the group ``ranks`` holds."""
        if self.options.all_ranks:
            return True
        return _this_rank() == ranks[self.options.rank]

    def capture(self, step: int, wanted: Sequence[Wanted]) -> dict[str, Histogram]:
        """The whole histograms of ``wanted`` that this rank writes, merged group by group.

        Every rank of each group must call this at the same step with the
        same tensors; the rank that writes a group gets its histograms.
        """
        if self.failed:
            return {}
        by_group: dict[tuple[int, ...], list[Wanted]] = {}
        for entry in wanted:
            by_group.setdefault(entry[1].ranks, []).append(entry)
        merged: dict[str, Histogram] = {}
        for ranks, entries in by_group.items():
            try:
                merged.update(self._merge(step, ranks, entries))
            except Exception as error:  # noqa: BLE001 - a failed peer must not stop training
                self.failed = True
                _forget_group(ranks, self.options.timeout)
                self._warn(
                    step,
                    f"the collectives over ranks {_ranks_text(ranks)} failed "
                    f"({type(error).__name__}: {_first_line(error)}); "
                    "sharded tensors are no longer logged",
                )
                break
        return merged

    def _merge(
        self, step: int, ranks: tuple[int, ...], entries: list[Wanted]
    ) -> dict[str, Histogram]:
        import torch.distributed as dist

        locals_ = [self._local(step, ranks, key, piece, grad) for key, piece, grad in entries]
        held = [local is not None for local in locals_]
        tensors = [_values(local) for local in locals_]
        moments = local_moments(tensors)
        count, low, high, mean, m2, nonfinite = moments.T
        first = np.stack(
            [-low, high, np.where(count > 0, mean, -np.inf), held, np.logical_not(held)], 1
        )
        first = self._all_reduce(ranks, first, dist.ReduceOp.MAX)
        low, high, shift = -first[:, 0], first[:, 1], first[:, 2]
        anywhere, somewhere_missing = first[:, 3] > 0, first[:, 4] > 0
        edges = default_edges(low, high, self.options.bins)
        usable = anywhere & ~somewhere_missing & ~np.isnan(edges[:, 0])
        counted = np.array([local is not None and local.counted for local in locals_]) & usable
        shift = np.where(np.isfinite(shift), shift, 0.0)
        second = np.zeros((len(entries), self.options.bins + 4))
        rows = np.flatnonzero(counted)
        if len(rows):
            second[rows, :-4] = local_counts([tensors[i] for i in rows], edges[rows])
        centred = np.where(count > 0, mean - shift, 0.0)
        sums = [
            count,
            nonfinite,
            count * centred,
            np.where(count > 0, m2, 0.0) + count * centred**2,
        ]
        second[:, -4:] = np.where(counted[:, None], np.stack(sums, 1), 0.0)
        summed = self._reduce(ranks, second)
        if summed is None:
            return {}
        self._report(step, entries, anywhere, somewhere_missing, edges, low, high)
        return {
            key: _histogram(edges[i], summed[i], low[i], high[i], shift[i])
            for i, (key, _, _) in enumerate(entries)
            if usable[i]
        }

    def _local(
        self, step: int, ranks: tuple[int, ...], key: str, piece: Piece, gradient: bool
    ) -> Local | None:
        """This rank's values of a tensor; None when it has none, or they cannot be had
        (said by the rank that writes; the other ranks then leave the tensor out too)."""
        try:
            return piece.gradient() if gradient else piece.parameter()
        except Exception as error:  # noqa: BLE001 - one tensor lost, the step goes on
            if self.writes(ranks):
                self._warn(step, f"{key}: {type(error).__name__}: {_first_line(error)}; not logged")
            return None

    def _all_reduce(self, ranks: tuple[int, ...], values: np.ndarray, op: Any) -> np.ndarray:
        import torch
        import torch.distributed as dist

        if len(ranks) == 1:
            return values
        tensor = torch.from_numpy(np.ascontiguousarray(values, dtype=np.float64))
        dist.all_reduce(tensor, op=op, group=self._group(ranks))
        return tensor.numpy()

    def _reduce(self, ranks: tuple[int, ...], values: np.ndarray) -> np.ndarray | None:
        """The sums over ``ranks`` on the rank that writes (on every rank with ``all_ranks``)."""
        import torch
        import torch.distributed as dist

        if self.options.all_ranks:
            return self._all_reduce(ranks, values, dist.ReduceOp.SUM)
        if len(ranks) > 1:
            tensor = torch.from_numpy(np.ascontiguousarray(values, dtype=np.float64))
            writer = ranks[self.options.rank]
            dist.reduce(tensor, dst=writer, op=dist.ReduceOp.SUM, group=self._group(ranks))
            values = tensor.numpy()
        return values if self.writes(ranks) else None

    def _group(self, ranks: tuple[int, ...]) -> Any:
        """The gloo group of ``ranks``, shared by the watches of this process."""
        if ranks not in self._groups:
            self._groups[ranks] = _gloo_group(ranks, self.options.timeout)
        return self._groups[ranks]

    def _report(
        self,
        step: int,
        entries: list[Wanted],
        anywhere: np.ndarray,
        somewhere_missing: np.ndarray,
        edges: np.ndarray,
        low: np.ndarray,
        high: np.ndarray,
    ) -> None:
        for i, (key, _, _) in enumerate(entries):
            if anywhere[i] and somewhere_missing[i]:
                self._warn(step, f"{key}: some ranks hold it and some do not; not logged")
            elif anywhere[i] and np.isnan(edges[i, 0]):
                self._warn(
                    step,
                    f"{key}: its finite values span more than a float64 holds "
                    f"({low[i]:g} to {high[i]:g}); not logged",
                )

    def _warn(self, step: int, message: str) -> None:
        if message in self._warned:
            return
        self._warned.add(message)
        warnings.warn(
            f"histoscope watch of {self.model}: step {step}: {message} (said once)",
            ShardedWarning,
            stacklevel=4,
        )


def _values(local: Local | None) -> torch.Tensor:
    import torch

    return torch.zeros(0) if local is None else local.values


def _histogram(
    edges: np.ndarray, summed: np.ndarray, low: float, high: float, shift: float
) -> Histogram:
    """A whole histogram from the summed row: counts, then count, nonfinite, S1 and S2."""
    from .. import _core

    counts = summed[:-4]
    count, nonfinite, s1, s2 = summed[-4:].tolist()
    some = count > 0
    centred = s1 / count if some else math.nan
    stats = _core.Stats(
        count=count,
        min=low if some else math.nan,
        max=high if some else math.nan,
        mean=shift + centred if some else math.nan,
        std=math.sqrt(max(s2 - s1 * centred, 0.0) / count) if some else math.nan,
        nonfinite=nonfinite,
        below=0.0,
        above=0.0,
    )
    return Histogram._of(edges.copy(), counts.copy(), stats)


_GLOO_GROUPS: dict[tuple[Any, tuple[int, ...], float], Any] = {}
"""Each gloo group made so far, by the process group it was made in, its ranks and timeout."""


def _gloo_group(ranks: tuple[int, ...], timeout: float) -> Any:
    """The gloo group of ``ranks``, made by them alone (no other rank waits) the first time
    a watch of this process needs it: making one takes each rank a round of connections."""
    import torch.distributed as dist

    key = (dist.group.WORLD, ranks, timeout)
    if key not in _GLOO_GROUPS:
        _GLOO_GROUPS[key] = dist.new_group(
            list(ranks),
            timeout=datetime.timedelta(seconds=timeout),
            backend="gloo",
            use_local_synchronization=True,
        )
    return _GLOO_GROUPS[key]


def _forget_group(ranks: tuple[int, ...], timeout: float) -> None:
    """Drops a group whose collectives failed: its ranks are out of step for good."""
    import torch.distributed as dist

    _GLOO_GROUPS.pop((dist.group.WORLD, ranks, timeout), None)


def _this_rank() -> int:
    import torch.distributed as dist

    return dist.get_rank()


def _ranks_text(ranks: tuple[int, ...]) -> str:
    shown = ", ".join(map(str, ranks[:8]))
    return shown + (f" and {len(ranks) - 8} more" if len(ranks) > 8 else "")


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0][:200] if text else "no message"
