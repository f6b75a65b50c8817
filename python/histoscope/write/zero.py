"""DeepSpeed: each rank's partition of a ZeRO parameter, and the moment its values are complete.

A `DeepSpeedEngine` trains ``engine.module``; a watch of either is a watch of
that module, under its own names (no ``module.`` prefix). Under ZeRO each
rank holds a partition of every trainable parameter's fp32 master copy and of
its reduced gradient; these are its pieces (`shards.Piece`), merged whole by
`sharded` as FSDP's are, nothing gathered:

- **ZeRO-3** (a parameter with ``ds_id``): DeepSpeed's local accessors,
  ``safe_get_local_fp32_param`` and ``safe_get_local_grad``, give the rank's
  stretch of the flattened tensor, padded to an equal size on every rank: the
  padding (past ``ds_numel``) is cut off. A frozen parameter has no fp32 copy:
  its piece is its own partition, ``ds_tensor``.
- **ZeRO-1 and ZeRO-2**, and DeepSpeed's bf16 optimizer (a parameter with
  ``_hp_mapping``): DeepSpeed offers no local accessor for these, so the piece
  is the fragment that ``_hp_mapping`` links to this rank's partition (what
  ``safe_get_full_fp32_param`` and ``safe_get_full_grad`` add up over the
  ranks), empty where the partition holds none of the parameter.

When. Gradients are complete only once ``engine.backward()`` has returned at
a gradient accumulation boundary (reduced into the partitions), and they are
gone after ``engine.step()``, which clips them (stage 0 before the optimizer,
ZeRO inside it) and changes the parameters. So the watch captures as
``engine.step()`` is called at a boundary, before it does anything: at the
engine's ``global_steps`` (optimizer steps so far, from 0), once per optimizer
step whatever the gradient accumulation. (A pipeline engine's ``train_batch``
steps without ``engine.step()``: it is not captured; nor is
``managed_gradient_accumulation=False``, whose boundary is inside the step.)

Example:
    >>> import torch
    >>> engine_of(torch.nn.Linear(2, 2)) is None
    True
"""

from __future__ import annotations

import dataclasses
import gc
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .options import WatchOptions
from .shards import Found, Local, Piece, original_name, refuse

if TYPE_CHECKING:
    import torch


class ZeroPiece(Piece):
    """A parameter that ZeRO-3 partitioned: this rank's stretch of it."""

    def __init__(self, name: str, parameter: Any) -> None:
        import torch
        import torch.distributed as dist

        group = getattr(parameter, "ds_process_group", None)
        if group is None:
            group = parameter._z3_optimizer.dp_process_group
        self.name = name
        # The parameter itself is empty between passes: a watch's filter sees its shape.
        self.tensor = torch.empty(parameter.ds_shape, dtype=parameter.dtype, device="meta")
        self._parameter = parameter
        self.requires_grad = bool(parameter.requires_grad)
        self.ranks = tuple(dist.get_process_group_ranks(group))
        self._position = dist.get_rank(group)

    def parameter(self) -> Local:
        from deepspeed.utils import safe_get_local_fp32_param

        values = None
        if self.requires_grad:
            values = safe_get_local_fp32_param(self._parameter)
        return self._unpadded(self._parameter.ds_tensor if values is None else values)

    def gradient(self) -> Local | None:
        from deepspeed.utils import safe_get_local_grad

        grad = safe_get_local_grad(self._parameter) if self.requires_grad else None
        return None if grad is None else self._unpadded(grad)

    def _unpadded(self, partition: torch.Tensor) -> Local:
        """The partition's values that are the parameter's: the last ranks' end in padding."""
        flat = partition.detach().reshape(-1)
        size = flat.numel()
        kept = max(0, min(size, int(self._parameter.ds_numel) - self._position * size))
        return Local(flat[:kept], True)


class FragmentPiece(Piece):
    """A parameter of ZeRO-1, ZeRO-2 or the bf16 optimizer: whole on every rank, its fp32
    master and reduced gradient partitioned, this rank holding one fragment of them (or
    none)."""

    def __init__(self, name: str, parameter: Any) -> None:
        import torch.distributed as dist

        self.name = name
        self.tensor = parameter
        self.requires_grad = bool(parameter.requires_grad)
        self.ranks = tuple(dist.get_process_group_ranks(parameter._dp_group))

    def parameter(self) -> Local:
        mapping = self.tensor._hp_mapping
        if mapping is None:
            return Local(_empty(self.tensor), True)
        return Local(mapping.get_hp_fragment().detach().reshape(-1), True)

    def gradient(self) -> Local | None:
        mapping = self.tensor._hp_mapping
        if mapping is None:
            return Local(_empty(self.tensor), True)
        fragment = mapping.get_lp_grad_fragment(self.tensor._index_in_param_group)
        flat = fragment.detach().reshape(-1)
        if flat.numel() == self.tensor.numel():
            # The bf16 optimizer keeps the whole gradient on each rank: its fragment is a part.
            address = mapping.lp_fragment_address
            flat = flat.narrow(0, address.start, address.numel)
        return Local(flat, True)


def find_zero_pieces(module: torch.nn.Module, found: Found) -> bool:
    """Adds ``module``'s ZeRO-partitioned parameters to ``found``, as pieces, covered; a
    partition with no ZeRO-3 optimizer behind it (``deepspeed.zero.Init`` alone) is refused.
    Whether it has any."""
    any_found = False
    for name, parameter in module.named_parameters():
        if id(parameter) in found.covered:
            continue
        if hasattr(parameter, "ds_tensor"):
            if not hasattr(parameter, "_z3_optimizer"):
                found.spread = any_found = True
                refuse(
                    found, "DeepSpeed ZeRO-3 partitions outside a ZeRO-3 optimizer", name, parameter
                )
                continue
            piece: Piece = ZeroPiece(original_name(name), parameter)
        elif hasattr(parameter, "_hp_mapping") and hasattr(parameter, "_dp_group"):
            piece = FragmentPiece(original_name(name), parameter)
        else:
            continue
        found.spread = any_found = True
        found.pieces.append(piece)
        found.covered.add(id(parameter))
    return any_found


def engine_of(model: Any) -> Any:
    """The `DeepSpeedEngine` that ``model`` is, or that trains it as its ``module``; None
    when DeepSpeed is not imported or no engine trains it."""
    engine_class = _engine_class()
    if engine_class is None:
        return None
    if isinstance(model, engine_class):
        return model
    # The module holds no reference to its engine: the engine is found among every object,
    # once, when the watch starts (a fraction of a second on a large heap). `type()`, not
    # `isinstance`: the latter reads `__class__`, which some lazy objects warn about.
    for candidate in gc.get_objects():
        if issubclass(type(candidate), engine_class) and _module_of(candidate) is model:
            return candidate
    return None


def engine_stepping(model: Any, options: WatchOptions) -> tuple[Any, WatchOptions]:
    """The engine that trains ``model`` (`engine_of`), and ``options`` stepped by its
    ``global_steps`` unless they have a ``step_fn=`` of their own."""
    engine = engine_of(model)
    if engine is None or options.step_fn is not None:
        return engine, options
    return engine, dataclasses.replace(options, step_fn=lambda: int(engine.global_steps))


def engine_loss_scale(engine: Any) -> float | None:
    """The dynamic loss scale of an engine training in fp16 (None otherwise): its
    gradients are that many times the applied ones until its optimizer's step unscales
    them, together with clipping, in one multiply."""
    if not engine.fp16_enabled():
        return None
    return float(engine.optimizer.loss_scale)


def inner_module(model: Any) -> Any:
    """``model.module`` when ``model`` is a `DeepSpeedEngine`; else ``model``."""
    engine_class = _engine_class()
    if engine_class is not None and isinstance(model, engine_class):
        return _module_of(model)
    return model


class BeforeEngineStep:
    """Calls ``callback`` just before each ``engine.step()`` that steps the optimizer (at a
    gradient accumulation boundary), and ``after`` once it returns, until `remove`."""

    def __init__(
        self, engine: Any, callback: Callable[[], None], after: Callable[[], None] | None = None
    ) -> None:
        self._engine = engine
        self._own = engine.__dict__.get("step")
        original = engine.step

        def step(*args: Any, **kwargs: Any) -> Any:
            if not engine.is_gradient_accumulation_boundary():
                return original(*args, **kwargs)
            callback()
            stepped = original(*args, **kwargs)
            if after is not None:
                after()
            return stepped

        self._step = step
        engine.step = step

    def remove(self) -> None:
        """Puts the engine's own step back, unless something wrapped it since."""
        engine, self._engine = self._engine, None
        if engine is None or engine.__dict__.get("step") is not self._step:
            return
        if self._own is None:
            del engine.step
        else:
            engine.step = self._own


def _module_of(engine: Any) -> Any:
    return engine.__dict__.get("_modules", {}).get("module")


def _engine_class() -> type | None:
    deepspeed = sys.modules.get("deepspeed")
    engine_class = getattr(deepspeed, "DeepSpeedEngine", None)
    return engine_class if isinstance(engine_class, type) else None


def _empty(parameter: Any) -> torch.Tensor:
    import torch

    return torch.zeros(0, dtype=torch.float32, device=parameter.device)
