"""Whole-model capture: `Run.watch` logs a PyTorch model's parameters, gradients and activations.

Keys are ``parameters/<name>``, ``gradients/<name>`` and
``activations/<module name>`` (leaf modules only). At a logging step every
watched tensor is binned together (`_batched.bin_tensors`) before the
training loop goes on, so what the optimizer does next cannot change what is
logged, and nothing waits in memory for the writer but the small histograms.

Steps. Without ``step=``, a watch counts the backward passes through the
model from 0. Backward pass ``k`` is logged at step ``k`` when ``k`` is a
multiple of ``every``: the gradients as they are when it ends, the
parameters at that moment (after the backward, before the optimizer's step)
and the activations of the training forward pass before it. In the usual
loop, one backward and one optimizer step per batch,
``run.log({"loss": ...}, step=i)`` with ``i`` counting batches from 0 lands
on the same steps. With gradient accumulation, or to count from elsewhere,
pass ``step=`` a function returning your own step (for example
``lambda: global_step``); a step is then logged at its first backward pass.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Union

from .batched import bin_tensors
from .histogram import MAX_BINS, Histogram
from ..errors import HistoscopeWarning

if TYPE_CHECKING:
    import torch

    from .run import Run

__all__ = ["LOG_CHOICES", "Filter", "Watch", "watch"]

LOG_CHOICES = ("gradients", "parameters", "all")

Filter = Union[str, "re.Pattern[str]", Callable[[str, Any], bool], None]
"""Which tensors a watch logs: a regular expression searched in the name, or
``(name, tensor) -> bool``; None logs every one."""


class Watch:
    """What `Run.watch` returns: the hooks on one model, until `remove` (or `Run.unwatch`).

    Steps: without ``step=``, backward pass ``k`` through the model (from 0)
    is step ``k``, logged when ``k % every == 0``: the gradients as it
    leaves them, the parameters at that moment (before the optimizer's
    step), the activations of the forward pass before it. With one backward
    pass and one optimizer step per batch, ``run.log(..., step=i)`` with
    ``i`` counting batches from 0 lands on the same steps. ``step=lambda:
    global_step`` uses your own counter instead (a step is then logged at its
    first backward pass).

    Example:
        >>> import torch, histoscope as hs
        >>> model = torch.nn.Linear(4, 2)
        >>> with hs.init("demo", dir=tmp) as run:  # doctest: +SKIP
        ...     watch = run.watch(model, log="all", every=1)
        ...     model(torch.randn(8, 4)).sum().backward()
        ...     watch.keys
        ['parameters/weight', 'parameters/bias', 'gradients/weight', 'gradients/bias']
    """

    def __init__(
        self,
        run: Run,
        model: torch.nn.Module,
        *,
        log: str = "gradients",
        every: int = 100,
        filter: Filter = None,
        bins: int = 64,
        activations: bool = False,
        step: Callable[[], int] | None = None,
        all_ranks: bool = False,
        backward_hooks: bool = True,
    ) -> None:
        module = unwrap(model)
        _check_arguments(log, every, filter, bins, activations, step)
        self.run = run
        self.model = module
        self.log = log
        self.every = every
        self.bins = bins
        self.activations = activations
        self._step_of = step
        self._filter = _compile(filter)
        self._count = 0
        self._last_logged: int | None = None
        self._in_backward = False
        self._activations: dict[str, torch.Tensor] = {}
        self._activations_step: int | None = None
        self._handles: list[Any] = []
        self._warned: set[str] = set()
        self.active = all_ranks or _is_rank_zero()
        named = [(name, p) for name, p in module.named_parameters() if self._keep(name, p)]
        wants_parameters = log in ("parameters", "all")
        wants_gradients = log in ("gradients", "all")
        self._parameters = named if wants_parameters else []
        self._gradients = [(n, p) for n, p in named if p.requires_grad] if wants_gradients else []
        self._grad_params = [p for _, p in module.named_parameters() if p.requires_grad]
        self._backward_hooks = backward_hooks
        if not self.active:
            return
        if backward_hooks:
            for p in self._grad_params:
                self._handles.append(_on_gradient(p, self._gradient_ready))
        if backward_hooks and not self._grad_params:
            self._handles.append(module.register_forward_hook(self._frozen_forward_ends))
        if activations:
            for name, leaf in module.named_modules():
                if name and not any(True for _ in leaf.children()):
                    self._handles.append(leaf.register_forward_hook(self._activation_hook(name)))

    @property
    def step(self) -> int:
        """The step the next capture is logged at: the backward passes so far, or ``step()``."""
        return self._count if self._step_of is None else int(self._step_of())

    @property
    def keys(self) -> list[str]:
        """The keys this watch logs parameters and gradients under (activations not listed)."""
        return [f"parameters/{n}" for n, _ in self._parameters] + [
            f"gradients/{n}" for n, _ in self._gradients
        ]

    def due(self, step: int | None = None) -> bool:
        """Whether ``step`` (default: `step`) is a logging step not yet logged."""
        step = self.step if step is None else step
        return self.active and step % self.every == 0 and step != self._last_logged

    def capture(self, step: int | None = None) -> None:
        """Bins and logs the watched parameters and gradients now, at ``step``
        (default: `step`), whether or not it is a logging step.

        The trainer integrations call this just before the optimizer's step.
        """
        if not self.active:
            return
        step = self.step if step is None else step
        self._last_logged = step
        keyed: list[tuple[str, torch.Tensor]] = [
            (f"parameters/{n}", p) for n, p in self._parameters
        ]
        keyed += [(f"gradients/{n}", p.grad) for n, p in self._gradients if p.grad is not None]
        if self._activations_step == step:
            keyed += [(f"activations/{key}", t) for key, t in self._activations.items()]
        self._activations = {}
        self._log(step, keyed)

    def remove(self) -> None:
        """Takes the hooks off the model; nothing more is logged. Safe to call twice."""
        for handle in self._handles:
            handle.remove()
        self._handles = []
        self._activations = {}
        self.active = False

    def __repr__(self) -> str:
        state = "watching" if self.active else "removed"
        return (
            f"Watch({type(self.model).__name__}, log={self.log!r}, every={self.every}, "
            f"{len(self._parameters)} parameters, {len(self._gradients)} gradients, {state})"
        )

    def _keep(self, name: str, tensor: Any) -> bool:
        return self._filter is None or bool(self._filter(name, tensor))

    def _gradient_ready(self, _param: Any) -> None:
        if self._in_backward:
            return
        self._in_backward = True
        # Queued twice so that it runs after the callbacks queued before it
        # (DistributedDataParallel's gradient averaging among them).
        _queue_callback(lambda: _queue_callback(self._backward_ends))

    def _backward_ends(self) -> None:
        """Logs the step that ends if it is due, and counts it."""
        self._in_backward = False
        try:
            if self.due():
                self.capture()
        finally:
            self._count += 1

    def _frozen_forward_ends(self, module: Any, _inputs: Any, _output: Any) -> None:
        """A model with nothing to train has no backward pass: its training forward passes count."""
        import torch

        if module.training and torch.is_grad_enabled():
            self._backward_ends()

    def _activation_hook(self, name: str) -> Callable[..., None]:
        def hook(module: Any, _inputs: Any, output: Any) -> None:
            import torch

            if not (module.training and torch.is_grad_enabled()):
                return  # evaluation passes are not captured
            step = self.step
            if not self.due(step):
                return
            if self._activations_step != step:
                self._activations, self._activations_step = {}, step
            tensors = _tensors_of(output)
            for i, tensor in enumerate(tensors):
                key = name if len(tensors) == 1 else f"{name}/{i}"
                # The first forward pass of a step only; a copy, since a later
                # in-place layer (ReLU(inplace=True)) would change the output.
                if key not in self._activations and self._keep(key, tensor):
                    self._activations[key] = tensor.detach().clone()

        return hook

    def _log(self, step: int, keyed: list[tuple[str, Any]]) -> None:
        if not keyed:
            return
        histograms: list[Histogram | None]
        try:
            histograms = list(bin_tensors([t for _, t in keyed], self.bins))
        except Exception:  # noqa: BLE001 - the tensor at fault is found and named below
            histograms = [self._bin_alone(step, key, tensor) for key, tensor in keyed]
        if self.run._finished:
            self.remove()
            return
        logged = {key: h for (key, _), h in zip(keyed, histograms) if h is not None}
        self.run.log(logged, step=step)

    def _bin_alone(self, step: int, key: str, tensor: Any) -> Histogram | None:
        """One tensor that cannot be binned costs only its own histogram, and is named."""
        try:
            return Histogram(tensor, bins=self.bins)
        except Exception as error:  # noqa: BLE001 - reported once, training goes on
            self._warn_once(f"{key}: {error}", step)
            return None

    def _warn_once(self, message: str, step: int) -> None:
        if message in self._warned:
            return
        self._warned.add(message)
        warnings.warn(
            f"histoscope watch of {type(self.model).__name__}: step {step}: {message} "
            "(not logged; said once)",
            HistoscopeWarning,
            stacklevel=2,
        )


def watch(
    model: torch.nn.Module,
    *,
    log: str = "gradients",
    every: int = 100,
    filter: Filter = None,
    bins: int = 64,
    activations: bool = False,
    step: Callable[[], int] | None = None,
    all_ranks: bool = False,
) -> Watch:
    """Watches ``model`` in the run `histoscope.init` started last (see `Run.watch`,
    and `Watch` for how its steps line up with yours).

    Example:
        >>> import histoscope as hs
        >>> hs.init("mnist")  # doctest: +SKIP
        >>> hs.watch(model, log="all", every=10)  # doctest: +SKIP
    """
    from . import run as run_module

    current = run_module._current
    if current is None:
        raise RuntimeError("no run to watch in: call histoscope.init(project) first")
    return current.watch(
        model,
        log=log,
        every=every,
        filter=filter,
        bins=bins,
        activations=activations,
        step=step,
        all_ranks=all_ranks,
    )


def unwrap(model: Any) -> torch.nn.Module:
    """The model inside `DataParallel` and `DistributedDataParallel` wrappers, for its names.

    Raises TypeError for anything that is not a ``torch.nn.Module``.

    Example:
        >>> import torch
        >>> unwrap(torch.nn.DataParallel(torch.nn.Linear(2, 2)))
        Linear(in_features=2, out_features=2, bias=True)
    """
    import torch

    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    wrappers = (torch.nn.DataParallel, torch.nn.parallel.DistributedDataParallel)
    while isinstance(model, wrappers):
        model = model.module
    return model


def _check_arguments(
    log: object, every: object, filter: object, bins: object, activations: object, step: object
) -> None:
    if log not in LOG_CHOICES:
        raise ValueError(f"log must be one of {', '.join(map(repr, LOG_CHOICES))}, got {log!r}")
    if isinstance(every, bool) or not isinstance(every, int) or every < 1:
        raise ValueError(f"every must be an int >= 1, got {every!r}")
    if isinstance(bins, bool) or not isinstance(bins, int) or not 1 <= bins <= MAX_BINS:
        raise ValueError(f"bins must be an int from 1 to {MAX_BINS}, got {bins!r}")
    if not (filter is None or isinstance(filter, (str, re.Pattern)) or callable(filter)):
        raise TypeError(
            "filter must be a regular expression or a function (name, tensor) -> bool, "
            f"got {type(filter).__name__}"
        )
    if not isinstance(activations, bool):
        raise TypeError(f"activations must be True or False, got {type(activations).__name__}")
    if step is not None and not callable(step):
        raise TypeError(f"step must be None or a function returning an int, got {step!r}")


def _compile(filter: Filter) -> Callable[[str, Any], bool] | None:
    if filter is None:
        return None
    if isinstance(filter, (str, re.Pattern)):
        try:
            pattern = re.compile(filter)
        except re.error as error:
            raise ValueError(f"filter is not a regular expression: {error}") from None
        return lambda name, _tensor: pattern.search(name) is not None
    return filter


def _is_rank_zero() -> bool:
    import torch.distributed as dist

    return not (dist.is_available() and dist.is_initialized()) or dist.get_rank() == 0


def _on_gradient(param: torch.Tensor, hook: Callable[[Any], None]) -> Any:
    """Calls ``hook`` once a gradient of ``param`` is accumulated (or computed, on older torch)."""
    if hasattr(param, "register_post_accumulate_grad_hook"):
        return param.register_post_accumulate_grad_hook(hook)
    return param.register_hook(lambda grad: hook(param))


def _queue_callback(callback: Callable[[], None]) -> None:
    """Runs ``callback`` when the backward pass in progress ends, as DDP does."""
    from torch.autograd import Variable

    Variable._execution_engine.queue_callback(callback)


def _tensors_of(output: Any) -> list[torch.Tensor]:
    import torch

    if isinstance(output, torch.Tensor):
        return [output]
    if isinstance(output, (list, tuple)):
        return [t for t in output if isinstance(t, torch.Tensor)]
    return []
