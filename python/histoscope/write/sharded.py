"""Whole-tensor histograms of sharded parameters and gradients, merged over every rank.

Nothing is gathered. At a logged step every rank does this for all the
sharded tensors of the step at once:

1. each local piece's count, extremes, mean and spread (`batched.local_moments`);
2. one all-reduce (MAX) of every tensor's ``[-min, max, mean, held, missing]``
   gives the whole tensor's extremes, so every rank makes the same edges by
   the core's rules (`device.default_edges`, as ``Histogram(tensor.full_tensor())``
   would), and a shift for the sums below (the largest of the pieces' means);
3. each rank counts its piece on those edges (`batched.local_counts`: the
   core for CPU tensors, the device kernel elsewhere);
4. one reduce (SUM) to the writing rank adds the counts, the counts of finite
   and nonfinite values, and each piece's sum of deviations from the shift and
   sum of their squares, made from its own mean and spread (``n (mean - shift)``
   and ``m2 + n (mean - shift)^2``). The whole tensor's spread is then
   ``S2 - S1^2 / N``: Chan's merge, which loses little to a large mean because
   the shift is one of the pieces' means.

Two collectives per logged step, whatever the number of tensors. The counts
equal those of binning the gathered tensor on the same edges; the mean and
std equal them up to rounding.

Which ranks hold what is agreed once, at the first logged step (`Layout`):
every rank says which keys it holds and with which group of ranks
(`shards.Piece.ranks`). A key held by several groups with the same values
(a parameter left out of tensor parallelism sits on each "dp" sub-mesh) is
counted from the group with the lowest rank alone; a key of one pipeline
stage is logged by the writing rank all the same.

The collectives run on a gloo group of every rank, the watch's own, made by
all of them at that first logged step, whose timeout is the watch's: a peer
that died or stopped fails the step on the others within that time, and the
training's own collectives are never delayed or put out of order. After a
failure the watch stops logging sharded tensors, says so once, and training
goes on.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ShardedWarning
from .batched import local_counts, local_moments
from .device import Binned, default_edges
from .options import WatchOptions
from .said_once import SaidOnce
from .shards import Local, Piece

if TYPE_CHECKING:
    import torch

Wanted = tuple[str, Piece, bool]
"""A tensor to log: its key, its parameter, and whether it is the parameter's gradient."""


@dataclasses.dataclass(frozen=True)
class Layout:
    """What every rank agreed at the first logged step: the keys, in one order, and which of
    this rank's tensors it counts."""

    keys: list[str]
    """Every rank's keys, sorted: the rows of both collectives."""
    rows: list[int | None]
    """For each of this rank's tensors, its row; None where another group counts the key."""

    @classmethod
    def agreed(cls, wanted: Sequence[Wanted], group: Any) -> Layout:
        """The layout of ``wanted`` and every other rank's, from one all-gather over ``group``."""
        import torch.distributed as dist

        mine = [(key, piece.ranks) for key, piece, _ in wanted]
        everyone: list[Any] = [None] * dist.get_world_size(group)
        dist.all_gather_object(everyone, mine, group=group)
        holders: dict[str, set[tuple[int, ...]]] = {}
        for theirs in everyone:
            for key, ranks in theirs:
                holders.setdefault(key, set()).add(tuple(ranks))
        counting = {key: min(groups, key=lambda r: (min(r), r)) for key, groups in holders.items()}
        keys = sorted(holders)
        row = {key: i for i, key in enumerate(keys)}
        rows = [row[key] if piece.ranks == counting[key] else None for key, piece, _ in wanted]
        return cls(keys, rows)


class Merge:
    """The merges of one watch: the layout agreed at its first logged step, and its group.

    Example:
        >>> from histoscope.write.options import WatchOptions
        >>> Merge(WatchOptions(), "Linear").failed
        False
    """

    def __init__(self, options: WatchOptions, model: str) -> None:
        self.options = options
        self.model = model
        self.failed = False
        self.group: Any = None
        self._layout: Layout | None = None
        self._said = SaidOnce()

    @property
    def writes(self) -> bool:
        """Whether this rank writes the merged histograms: rank ``rank``, or every rank
        with ``all_ranks``."""
        import torch.distributed as dist

        return self.options.all_ranks or dist.get_rank() == self.options.rank

    def capture(
        self, step: int, wanted: Sequence[Wanted], loss_scale: float | None = None
    ) -> dict[str, Binned]:
        """The whole histograms of every rank's ``wanted`` tensors, on the rank that writes;
        gradients divided by ``loss_scale`` where they are still multiplied by it.

        Every rank with a sharded model calls this at the same step, with the
        tensors it holds (none, on a rank off the model's meshes).
        """
        if self.failed:
            return {}
        try:
            if self._layout is None:
                self.group = _gloo_world(self.options.timeout)
                self._layout = Layout.agreed(wanted, self.group)
            return self._merge(step, wanted, self._layout, loss_scale)
        except Exception as error:  # noqa: BLE001 - a failed peer must not stop training
            self.failed = True
            self._warn(
                step,
                f"the collectives over the {_world_size()} ranks failed "
                f"({type(error).__name__}: {_first_line(error)}); "
                "sharded tensors are no longer logged",
            )
            return {}

    def close(self) -> None:
        """Lets the gloo group go (unless its collectives failed: a broken group is left as
        it is, its peers perhaps gone)."""
        if self.group is not None and not self.failed:
            import torch.distributed as dist

            dist.destroy_process_group(self.group)
        self.group = None

    def _merge(
        self, step: int, wanted: Sequence[Wanted], layout: Layout, loss_scale: float | None
    ) -> dict[str, Binned]:
        import torch.distributed as dist

        n, bins = len(layout.keys), self.options.bins
        mine = [(row, entry) for row, entry in zip(layout.rows, wanted) if row is not None]
        locals_ = [self._local(step, k, piece, grad, loss_scale) for _, (k, piece, grad) in mine]
        at = np.array([row for row, _ in mine], dtype=np.int64)
        tensors = [_values(local) for local in locals_]
        count, low, high, mean, m2, nonfinite = local_moments(tensors).T
        held = np.array([local is not None for local in locals_], dtype=np.float64)
        # Ranks that count nothing of a key leave its row as MAX's identity.
        first = np.zeros((n, 5))
        first[:, :3] = -np.inf
        first[at] = np.stack([-low, high, np.where(count > 0, mean, -np.inf), held, 1 - held], 1)
        dist.all_reduce(_tensor(first), op=dist.ReduceOp.MAX, group=self.group)
        low_all, high_all, shift = -first[:, 0], first[:, 1], first[:, 2]
        anywhere, somewhere_missing = first[:, 3] > 0, first[:, 4] > 0
        edges = default_edges(low_all, high_all, bins)
        usable = anywhere & ~somewhere_missing & ~np.isnan(edges[:, 0])
        shift = np.where(np.isfinite(shift), shift, 0.0)
        counted = np.array([local is not None and local.counted for local in locals_], dtype=bool)
        counted &= usable[at]
        second = np.zeros((n, bins + 4))
        if counted.any():
            rows = at[counted]
            picked = [tensor for tensor, c in zip(tensors, counted) if c]
            second[rows, :bins] = local_counts(picked, edges[rows])
            some = count[counted]
            centred = np.where(some > 0, mean[counted] - shift[rows], 0.0)
            spread = np.where(some > 0, m2[counted], 0.0)
            second[rows, bins:] = np.stack(
                [some, nonfinite[counted], some * centred, spread + some * centred**2], 1
            )
        if not self._reduce(second):
            return {}
        self._report(step, layout.keys, anywhere, somewhere_missing, edges, low_all, high_all)
        return {
            key: _histogram(edges[i], second[i], low_all[i], high_all[i], shift[i])
            for i, key in enumerate(layout.keys)
            if usable[i]
        }

    def _reduce(self, values: np.ndarray) -> bool:
        """Adds ``values`` up, in place, on the rank that writes (on every rank with
        ``all_ranks``); whether this rank got the sums."""
        import torch.distributed as dist

        if self.options.all_ranks:
            dist.all_reduce(_tensor(values), op=dist.ReduceOp.SUM, group=self.group)
        else:
            dist.reduce(
                _tensor(values), dst=self.options.rank, op=dist.ReduceOp.SUM, group=self.group
            )
        return self.writes

    def _local(
        self, step: int, key: str, piece: Piece, gradient: bool, loss_scale: float | None
    ) -> Local | None:
        """This rank's values of a tensor; None when it has none, or they cannot be had
        (said here; the rank that writes then says the tensor was left out)."""
        try:
            if not gradient:
                return piece.parameter()
            local = piece.gradient()
            if local is None or loss_scale is None:
                return local
            return Local(local.values.float().mul(1.0 / loss_scale), local.counted)
        except Exception as error:  # noqa: BLE001 - one tensor lost, the step goes on
            self._warn(step, f"{key}: {type(error).__name__}: {_first_line(error)}; not logged")
            return None

    def _report(
        self,
        step: int,
        keys: list[str],
        anywhere: np.ndarray,
        somewhere_missing: np.ndarray,
        edges: np.ndarray,
        low: np.ndarray,
        high: np.ndarray,
    ) -> None:
        for i, key in enumerate(keys):
            if anywhere[i] and somewhere_missing[i]:
                self._warn(step, f"{key}: some ranks hold it and some do not; not logged")
            elif anywhere[i] and np.isnan(edges[i, 0]):
                self._warn(
                    step,
                    f"{key}: its finite values span more than a float64 holds "
                    f"({low[i]:g} to {high[i]:g}); not logged",
                )

    def _warn(self, step: int, message: str) -> None:
        said = f"histoscope watch of {self.model}: step {step}: {message} (said once)"
        self._said.warn(message, said, ShardedWarning, stacklevel=4)


def _values(local: Local | None) -> torch.Tensor:
    import torch

    return torch.zeros(0) if local is None else local.values


def _tensor(values: np.ndarray) -> torch.Tensor:
    """A tensor sharing ``values``' memory, for a collective to fill in place."""
    import torch

    return torch.from_numpy(values)


def _histogram(
    edges: np.ndarray, summed: np.ndarray, low: float, high: float, shift: float
) -> Binned:
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
    return Binned(edges.copy(), counts.copy(), stats)


def _gloo_world(timeout: float) -> Any:
    """A gloo group of every rank, made by all of them together (each watch has its own, so
    that one whose peer failed never puts another's collectives out of step)."""
    import torch.distributed as dist

    return dist.new_group(timeout=datetime.timedelta(seconds=timeout), backend="gloo")


def _world_size() -> int:
    import torch.distributed as dist

    return dist.get_world_size()


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0][:200] if text else "no message"


def wanted_of(pieces: list[Piece], options: WatchOptions) -> list[Wanted]:
    """The tensors of ``pieces`` a watch with ``options`` logs: parameters, gradients."""
    wanted: list[Wanted] = []
    if options.parameters:
        wanted += [(f"parameters/{p.name}", p, False) for p in pieces]
    if options.gradients:
        wanted += [(f"gradients/{p.name}", p, True) for p in pieces if p.requires_grad]
    return wanted


def check_writer(options: WatchOptions) -> None:
    """Raises ValueError unless ``options.rank`` is a rank of ``torch.distributed``."""
    import torch.distributed as dist

    if options.rank >= dist.get_world_size():
        raise ValueError(
            f"rank must be a rank of torch.distributed, from 0 to {dist.get_world_size() - 1}, "
            f"got {options.rank}"
        )
