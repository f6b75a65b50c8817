"""Each rank's piece of a sharded parameter, found under the names the model was written with.

Three kinds of parameter are spread over ranks:

- **DTensors**: FSDP2's ``fully_shard``, tensor parallelism through
  ``parallelize_module``, or any DTensor parameter. A rank's piece is its
  local tensor. Along a ``Replicate`` mesh dimension every rank holds the
  same values, so only the rank at coordinate 0 counts them; ``Partial``
  values are reduced (redistributed to ``Replicate``) first.
- **FSDP1's flat parameters** (``FullyShardedDataParallel``, with
  ``use_orig_params`` True or False): an original parameter's piece is the
  stretch of the rank's flat shard that the flat parameter's shard metadata
  names, often empty. Under ``NO_SHARD`` every rank holds every value, counted
  on the group's rank 0; under ``HYBRID_SHARD`` the pieces of one shard
  group make the whole parameter, so the merge runs over that group.
- **DeepSpeed ZeRO partitions** are left to `zero`, which reads them through
  DeepSpeed's optimizer.

A piece names the ranks of its group (`Piece.ranks`, global ranks), which
`sharded` uses to count a parameter that several groups hold once; keys drop
the wrappers' own names (`original_name`).

Example:
    >>> original_name("_fsdp_wrapped_module.layers.0._checkpoint_wrapped_module.fc.weight")
    'layers.0.fc.weight'
"""

from __future__ import annotations

import abc
import dataclasses
import warnings
from typing import TYPE_CHECKING, Any

from ..errors import ShardedWarning

if TYPE_CHECKING:
    import torch

WRAPPER_NAMES = frozenset(
    {"_fsdp_wrapped_module", "_checkpoint_wrapped_module", "_orig_mod", "_flat_param"}
)
"""Module names that wrappers add to a parameter's name: FSDP1, activation checkpointing
and ``torch.compile``."""


def original_name(name: str) -> str:
    """A parameter's name without the wrappers' parts (`WRAPPER_NAMES`)."""
    return ".".join(part for part in name.split(".") if part and part not in WRAPPER_NAMES)


@dataclasses.dataclass(frozen=True)
class Local:
    """A rank's values of one logical tensor at one step."""

    values: torch.Tensor
    counted: bool
    """False where another rank's identical copy is the one counted."""


class Piece(abc.ABC):
    """One parameter spread over ranks: what this rank holds of it and of its gradient."""

    name: str
    """The parameter's name as the model was written (`original_name`)."""
    ranks: tuple[int, ...]
    """The global ranks that hold the parameter between them, in their group's order."""
    tensor: Any
    """What a watch's filter is shown: the parameter."""
    requires_grad: bool

    @abc.abstractmethod
    def parameter(self) -> Local:
        """This rank's values of the parameter."""

    @abc.abstractmethod
    def gradient(self) -> Local | None:
        """This rank's values of the gradient; None while there is none."""


class DTensorPiece(Piece):
    """A DTensor parameter: FSDP2, tensor parallelism, or one made by hand."""

    def __init__(self, name: str, parameter: Any) -> None:
        self.name = name
        self.tensor = parameter
        self.requires_grad = bool(parameter.requires_grad)
        self.ranks = tuple(int(r) for r in parameter.device_mesh.mesh.flatten().tolist())

    def parameter(self) -> Local:
        return _local_of(self.tensor)

    def gradient(self) -> Local | None:
        grad = self.tensor.grad
        return None if grad is None else _local_of(grad)


class FlatPiece(Piece):
    """An original parameter inside one of FSDP1's flat parameters."""

    def __init__(
        self,
        name: str,
        flat: Any,
        index: int,
        ranks: tuple[int, ...],
        replicated: bool,
        original: Any,
    ) -> None:
        import torch

        self.name = name
        self.ranks = ranks
        # Without use_orig_params there is no original parameter: the filter sees its shape.
        self.tensor = original
        if original is None:
            self.tensor = torch.empty(flat._shapes[index], dtype=flat.dtype, device="meta")
        self.requires_grad = bool(flat.requires_grad)
        self._flat = flat
        info = flat._shard_param_infos[index]
        self._start = int(info.offset_in_shard) if info.in_shard else 0
        self._length = int(info.numel_in_shard) if info.in_shard else 0
        self._counted = not replicated or _group_rank(ranks) == 0

    def parameter(self) -> Local:
        flat = self._flat
        shard = flat if flat.numel() == flat._sharded_size.numel() else flat._local_shard
        return Local(shard.detach()[self._start : self._start + self._length], self._counted)

    def gradient(self) -> Local | None:
        grad = self._flat.grad
        if grad is None:
            return None
        if grad.numel() != self._flat._sharded_size.numel():
            raise ValueError(
                "FSDP1's gradient is not sharded at this point (inside no_sync?), "
                "so no piece of it is this rank's alone"
            )
        return Local(grad.detach()[self._start : self._start + self._length], self._counted)


@dataclasses.dataclass
class Found:
    """What `find_pieces` finds in a model."""

    pieces: list[Piece] = dataclasses.field(default_factory=list)
    covered: set[int] = dataclasses.field(default_factory=set)
    """The ids of the model's parameters that pieces stand for: not to be logged as they are."""
    triggers: list[Any] = dataclasses.field(default_factory=list)
    """Parameters whose gradients mark a backward pass, besides the model's own."""
    unsupported: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    """Each sharding scheme that cannot be merged, and the parameters it leaves out."""
    spread: bool = False
    """Whether the model has parameters spread over ranks at all, pieces here or not: its
    watch then takes part in every logged step's merge."""


def find_pieces(module: torch.nn.Module) -> Found:
    """The sharded parameters of ``module``: FSDP1's originals first, then DTensors.

    DTensors with a placement other than Shard, Replicate and Partial are
    listed in ``unsupported`` and covered, so that they are never logged as
    the slices they are here. DeepSpeed's parameters are `zero`'s to find.

    Example:
        >>> import torch
        >>> find_pieces(torch.nn.Linear(2, 2)).pieces
        []
    """
    found = Found()
    if not _distributed():
        return found
    _find_flat_pieces(module, found)
    dtensor = _dtensor_class()
    for name, parameter in module.named_parameters():
        if id(parameter) in found.covered:
            continue
        if dtensor is not None and isinstance(parameter, dtensor):
            _add_dtensor(found, name, parameter)
    return found


def _add_dtensor(found: Found, name: str, parameter: Any) -> None:
    """A DTensor parameter as a piece, unless this rank is not on its mesh (it holds none)."""
    found.spread = True
    placement = _unsupported_placement(parameter)
    if placement is not None:
        refuse(found, f"DTensor placement {placement}", name, parameter)
    elif parameter.device_mesh.get_coordinate() is not None:
        found.pieces.append(DTensorPiece(original_name(name), parameter))
        found.covered.add(id(parameter))


def _find_flat_pieces(module: torch.nn.Module, found: Found) -> None:
    try:
        from torch.distributed.fsdp import FullyShardedDataParallel, ShardingStrategy
    except ImportError:  # torch without torch.distributed
        return
    for path, fsdp in module.named_modules():
        handle = (
            getattr(fsdp, "_handle", None) if isinstance(fsdp, FullyShardedDataParallel) else None
        )
        if handle is None:
            continue
        flat = handle.flat_param
        originals = list(getattr(flat, "_params", None) or [None] * len(flat._fqns))
        names = [original_name(f"{path}.{fqn}") for fqn in flat._fqns]
        covered = [flat, *(p for p in originals if p is not None)]
        covered += list(getattr(flat, "_shared_params", None) or [])
        found.covered.update(id(p) for p in covered)
        if not hasattr(flat, "_shard_param_infos") or not hasattr(flat, "_sharded_size"):
            for name, original in zip(names, originals):
                refuse(found, "FSDP1 flat parameters without shard metadata", name, original)
            continue
        import torch.distributed as dist

        ranks = tuple(dist.get_process_group_ranks(fsdp.process_group))
        replicated = fsdp.sharding_strategy == ShardingStrategy.NO_SHARD
        found.spread = True
        found.triggers.append(flat)
        for index, (name, original) in enumerate(zip(names, originals)):
            found.pieces.append(FlatPiece(name, flat, index, ranks, replicated, original))


def refuse(found: Found, scheme: str, name: str, parameter: Any) -> None:
    """Notes that ``parameter`` is sharded by ``scheme``, which cannot be merged: named in a
    warning, never logged as the slice a rank holds."""
    found.unsupported.setdefault(scheme, []).append(original_name(name))
    if parameter is not None:
        found.covered.add(id(parameter))


def _local_of(tensor: Any) -> Local:
    """A DTensor's local values, Partial placements reduced first, and whether they count here."""
    import torch
    from torch.distributed.tensor import Replicate

    with torch.no_grad():
        placements = tensor.placements
        if any(p.is_partial() for p in placements):
            reduced = [Replicate() if p.is_partial() else p for p in placements]
            tensor = tensor.redistribute(tensor.device_mesh, reduced)
        coordinate = tensor.device_mesh.get_coordinate()
        counted = all(c == 0 for c, p in zip(coordinate, tensor.placements) if p.is_replicate())
        return Local(tensor.detach().to_local(), counted)


def _unsupported_placement(tensor: Any) -> str | None:
    for placement in tensor.placements:
        known = placement.is_shard() or placement.is_replicate() or placement.is_partial()
        if not (known or _strided_shard(placement)):
            return type(placement).__name__
    return None


def _strided_shard(placement: Any) -> bool:
    """Whether ``placement`` is FSDP2's strided sharding over tensor parallelism: each value on
    one rank alone, as with Shard (which it is not a kind of, in newer torch)."""
    try:
        from torch.distributed.tensor.placement_types import _StridedShard
    except ImportError:  # a torch without it has no such placement
        return False
    return isinstance(placement, _StridedShard)


def _group_rank(ranks: tuple[int, ...]) -> int:
    import torch.distributed as dist

    return ranks.index(dist.get_rank())


def _distributed() -> bool:
    import torch.distributed as dist

    return dist.is_available() and dist.is_initialized()


def _dtensor_class() -> type | None:
    try:
        from torch.distributed.tensor import DTensor
    except ImportError:  # torch older than 2.4, or without torch.distributed
        return None
    return DTensor


def warn_unsupported(model: str, unsupported: dict[str, list[str]]) -> None:
    """Says which parameters of ``model`` a sharding scheme it cannot merge leaves out."""
    for scheme, names in unsupported.items():
        shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
        warnings.warn(
            f"histoscope watch of {model}: {scheme} are not supported, so these parameters "
            f"and their gradients are not logged: {shown}",
            ShardedWarning,
            stacklevel=4,
        )
