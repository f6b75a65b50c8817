"""Optimizer steps as a watch sees them: each one applied or skipped, and the loss scale.

Loss scaling (``torch.amp.GradScaler``, and the trainers' fp16 modes built on it)
leaves the gradients multiplied by the loss scale when ``backward()`` ends and
divides them just before the optimizer's step; gradient accumulation leaves partial
sums at every ``backward()`` but the last of an optimizer step. What the optimizer
applies exists only in torch's global optimizer-step pre-hook, once per optimizer
step, so a watch captures gradients there (`StepAttempts.on_applied`); under a loss
scaler, as the scaler unscales them (`UnscaleHook`), before a loop clips them. The
scaler is the one, among those in use at the first backward pass (`used_scalers`) or
on the stack at the first step (`find_scaler`), that unscales or steps an optimizer
holding a watched parameter.

An *attempt* is the backward passes that one optimizer step takes: it opens with the
first backward pass after a step, and ends with the next step of an optimizer that
holds a watched parameter (applied), or, when the next backward pass finds the
gradients cleared or changed without such a step, unapplied: a step the scaler
skipped because its gradients overflowed (`StepAttempts.on_unapplied`). A parameter's
gradient is cleared (``zero_grad``) or changed in place (``unscale_``) between
attempts, and left alone between the backward passes of one.

Example:
    >>> import torch
    >>> model = torch.nn.Linear(2, 1)
    >>> optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    >>> seen = []
    >>> attempts = StepAttempts(list(model.parameters()), lambda: len(seen),
    ...                         lambda step: seen.append(("applied", step)),
    ...                         lambda step: seen.append(("unapplied", step)))
    >>> for i in range(3):
    ...     model(torch.ones(1, 2)).sum().backward(); attempts.backward_ended()
    ...     if i != 1:
    ...         optimizer.step()
    ...     optimizer.zero_grad()
    >>> model(torch.ones(1, 2)).sum().backward(); attempts.remove()
    >>> seen
    [('applied', 0), ('unapplied', 1), ('applied', 2)]
"""

from __future__ import annotations

import gc
import sys
import weakref
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Any

SKIPPED_KEY = "amp/skipped_steps"
"""The scalar written at each step the loss scaler skipped: how many it skipped so far.
The core's diagnosis reads a run's skipped steps from it (`rust/diagnose/skipped.rs`)."""

LOSS_SCALE_KEY = "amp/loss_scale"
"""The scalar of the loss scale the step ran under, at logged and skipped steps."""

# How far up the stack the optimizer-step hook looks for the scaler that called the step:
# GradScaler.step → (its _maybe_opt_step) → Optimizer.step's wrapper → the hook.
_SCALER_FRAMES = 8


class StepAttempts:
    """Tells applied optimizer steps from unapplied attempts for one watched model.

    ``on_applied(step)`` runs in the optimizer-step pre-hook of the first optimizer
    holding one of ``parameters`` to step in an attempt (``optimizer`` alone, when
    given); ``on_unapplied(step)`` when an attempt is found to have ended with no step.
    ``step_of()`` numbers the attempt, read as it opens. `backward_ended` is called as
    each backward pass through the model ends. ``on_unscaled(step)`` runs as the loss
    scaler (found at the first step) unscales the attempt's gradients, before a loop
    that clips changes them.
    """

    def __init__(
        self,
        parameters: Sequence[Any],
        step_of: Callable[[], int],
        on_applied: Callable[[int], None],
        on_unapplied: Callable[[int], None],
        *,
        optimizer: Any = None,
        sentinel: bool = True,
        on_unscaled: Callable[[int], None] | None = None,
    ) -> None:
        from torch.optim.optimizer import register_optimizer_step_pre_hook

        self._ids = frozenset(id(p) for p in parameters)
        self._step_of = step_of
        self._on_applied = on_applied
        self._on_unapplied = on_unapplied
        self._on_unscaled = on_unscaled
        self._optimizer = None if optimizer is None else weakref.ref(optimizer)
        #: An optimizer holding a watched parameter has stepped (or was named).
        self.seen = optimizer is not None
        self.scaler: Any = None
        self._looked = False
        self._hooked: dict[int, UnscaleHook] = {}
        self._sought = False  # the scalers in use looked for, at the first backward pass
        self.open = False
        self.attempt_step = 0
        self._matched: dict[int, tuple[int, bool]] = {}
        self._mark: tuple[int, int] | None = None
        self._scale_at_open: Any = None
        self._sentinel = parameters[0] if sentinel and parameters else None
        self._handles: list[Any] = [register_optimizer_step_pre_hook(self._pre_step)]
        if self._sentinel is not None:
            self._handles.append(self._sentinel.register_hook(self._gradient_arrives))

    def backward_ended(self) -> None:
        """Notes the sentinel's gradient as a backward pass leaves it, so that the next
        backward pass tells accumulation (untouched) from a new attempt. At the first,
        the loss scaler is looked for, so that its first ``unscale_`` is caught too."""
        if not self._sought:
            self._sought = True
            for scaler in used_scalers():  # the one that unscales our optimizer is ours
                self._hook(scaler)
        grad = None if self._sentinel is None else self._sentinel.grad
        self._mark = None if grad is None else (id(grad), grad._version)
        if not self.open:  # the sentinel had no gradient in this pass
            self._begin()

    def begin(self) -> None:
        """Opens an attempt (ending the one in progress as unapplied): for the trainers'
        callbacks, which say when a step is about to be taken instead of a sentinel."""
        self._begin()

    @property
    def changed_since_backward(self) -> bool:
        """Whether the gradients were changed in place since the last backward pass ended
        (clipped, or unscaled by a loss scaler): read in the optimizer-step hook."""
        grad = None if self._sentinel is None else self._sentinel.grad
        return grad is not None and (id(grad), grad._version) != self._mark

    def end_unapplied(self) -> bool:
        """Ends the attempt in progress as unapplied if it has gradients no step took
        (the trainers' callbacks, at the end of a batch that reached a step)."""
        if not self.open:
            return False
        self.open = False
        self._on_unapplied(self.attempt_step)
        return True

    def remove(self) -> None:
        """Takes the hooks off; safe to call twice."""
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def _gradient_arrives(self, grad: Any) -> None:
        """Runs before each backward pass accumulates into the sentinel's ``.grad``."""
        current = self._sentinel.grad if self._sentinel is not None else None
        mark = None if current is None else (id(current), current._version)
        if self.open and mark is not None and mark == self._mark:
            return None  # accumulation: the same attempt goes on
        self._begin()
        return None

    def _begin(self) -> None:
        if self.open:
            self.open = False
            self._on_unapplied(self.attempt_step)
        self.open = True
        self.attempt_step = int(self._step_of())
        # Copied on the scaler's device, with no sync, for `conclude`.
        scale = getattr(self.scaler, "_scale", None)
        self._scale_at_open = None if scale is None else scale.detach().clone()

    def conclude(self) -> None:
        """The training is over: an attempt still open is one the loss scaler skipped
        if its scale fell since the attempt opened (it backs off on an overflow alone);
        otherwise a backward pass no step followed, which is let go."""
        opened, self._scale_at_open = self._scale_at_open, None
        if not self.open or opened is None or self.scaler is None:
            return
        if float(self.scaler.get_scale()) < float(opened):
            self.open = False
            self._on_unapplied(self.attempt_step)

    def _pre_step(self, optimizer: Any, _args: Any, _kwargs: Any) -> None:
        if not self._holds(optimizer):
            return
        if not self._looked:  # a loop steps under its scaler from its first step, or never
            self._scaler_found(find_scaler())
            self._looked = True
        self.seen = True
        if not self.open:
            return  # another optimizer of this attempt, or a step with no new gradients
        self.open = False
        self._on_applied(int(self._step_of()))

    def _scaler_found(self, scaler: Any) -> None:
        if scaler is not None and self.scaler is None:
            self.scaler = scaler
            self._hook(scaler)

    def _hook(self, scaler: Any) -> None:
        """Watches ``scaler``'s ``unscale_``: a scaler in use in the process, which is
        this model's once it unscales an optimizer holding a watched parameter."""
        if id(scaler) in self._hooked or self._on_unscaled is None:
            return
        hook = UnscaleHook(scaler, lambda optimizer: self._unscaled(scaler, optimizer))
        self._hooked[id(scaler)] = hook
        self._handles.append(hook)

    def _unscaled(self, scaler: Any, optimizer: Any) -> None:
        if not self._holds(optimizer):
            return  # another training's scaler, or another optimizer
        if self.scaler is None:
            self.scaler, self._looked = scaler, True
        if self.scaler is scaler and self.open and self._on_unscaled is not None:
            self._on_unscaled(int(self._step_of()))

    def _holds(self, optimizer: Any) -> bool:
        if self._optimizer is not None:
            return optimizer is self._optimizer()
        groups = getattr(optimizer, "param_groups", [])
        # Cached per optimizer, until its groups change (add_param_group).
        known = self._matched.get(id(optimizer))
        if known is not None and known[0] == len(groups):
            return known[1]
        holds = any(id(p) in self._ids for group in groups for p in group["params"])
        self._matched[id(optimizer)] = (len(groups), holds)
        return holds


class UnscaleHook:
    """Runs ``callback(optimizer)`` just after each ``scaler.unscale_(optimizer)``: the
    one moment the gradients are unscaled and not yet clipped, whether the loop (or a
    trainer, to clip) calls it or ``scaler.step`` does. torch offers no hook there, so
    the scaler's ``unscale_`` is wrapped, on this instance only, until `remove`.

    Example:
        >>> import torch
        >>> model = torch.nn.Linear(2, 1)
        >>> optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        >>> scaler = torch.amp.GradScaler("cpu", init_scale=4.0)
        >>> seen = []
        >>> hook = UnscaleHook(scaler, lambda opt: seen.append(float(model.bias.grad)))
        >>> scaler.scale(model(torch.ones(1, 2)).sum()).backward()
        >>> scaler.step(optimizer); scaler.update(); hook.remove()
        >>> seen, "unscale_" in vars(scaler)
        ([1.0], False)
    """

    def __init__(self, scaler: Any, callback: Callable[[Any], None]) -> None:
        original = scaler.unscale_
        self._scaler = weakref.ref(scaler)
        self.active = True

        def unscale_(optimizer: Any) -> None:
            original(optimizer)
            if self.active:
                callback(optimizer)

        self._installed = unscale_
        scaler.unscale_ = unscale_

    def remove(self) -> None:
        """Puts the scaler's own ``unscale_`` back (unless another hook wrapped it since:
        then this one only stops calling back); safe to call twice."""
        self.active = False
        scaler = self._scaler()
        if scaler is not None and vars(scaler).get("unscale_") is self._installed:
            del scaler.unscale_


def unscale_once(scaler: Any, optimizer: Any) -> None:
    """Unscales ``optimizer``'s gradients unless ``scaler`` did since its last ``update``:
    a trainer's hook that comes before its ``scaler.step`` sees them unscaled either way,
    and the training is the same (``scaler.step`` skips an unscale already done)."""
    try:
        scaler.unscale_(optimizer)
    except RuntimeError as error:
        if "already been called" not in str(error):
            raise


def find_scaler() -> Any:
    """The ``torch.amp.GradScaler`` whose ``step`` is on the call stack (it is when the
    optimizer steps under one: a plain loop's ``scaler.step``, accelerate's and
    Lightning's), or None."""
    try:
        from torch.amp import GradScaler
    except ImportError:  # torch before 2.3
        from torch.cuda.amp import GradScaler  # type: ignore[assignment]
    frame: FrameType | None = sys._getframe(1)
    for _ in range(_SCALER_FRAMES):
        if frame is None:
            return None
        candidate = frame.f_locals.get("self")
        if isinstance(candidate, GradScaler):
            return candidate
        frame = frame.f_back
    return None


def used_scalers() -> list[Any]:
    """The enabled ``torch.amp.GradScaler``s that have scaled a loss (a scaler's scale is
    made at its first ``scale()``), among the live objects: the scaler of the training
    about to step is among them, with any a finished training left (a notebook's earlier
    cell). A walk of every object (36 ms for 223,000): once per watch.

    Example:
        >>> import gc, torch
        >>> _ = gc.collect()  # the scalers of earlier examples
        >>> scaler = torch.amp.GradScaler("cpu")
        >>> scaler in used_scalers()  # made, but it has scaled no loss yet
        False
        >>> _ = scaler.scale(torch.ones(()))
        >>> scaler in used_scalers()
        True
    """
    try:
        from torch.amp import GradScaler
    except ImportError:  # torch before 2.3
        from torch.cuda.amp import GradScaler  # type: ignore[assignment]
    # `type()`, not `isinstance`: the latter reads `__class__`, which lazy objects warn about.
    return [
        o
        for o in gc.get_objects()
        if issubclass(type(o), GradScaler)
        and getattr(o, "_scale", None) is not None
        and o.is_enabled()
    ]


def loss_scale(scaler: Any, *, skipped: bool = False) -> float | None:
    """The loss scale ``scaler`` ran the last step under: after a skipped step it has
    already backed off, so the scale it overflowed at is the current one undone."""
    if scaler is None or not scaler.is_enabled():
        return None
    scale = float(scaler.get_scale())
    return scale / scaler.get_backoff_factor() if skipped else scale
