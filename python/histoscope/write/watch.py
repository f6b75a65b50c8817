"""Whole-model capture: `Run.watch` logs a PyTorch model's parameters, gradients and activations.

Keys are ``parameters/<name>``, ``gradients/<name>`` and ``activations/<module
name>`` (leaf modules only). At a logging step every watched tensor is binned
together (`batched.bin_batch`) before the loop goes on, so what the optimizer
does next cannot change what is logged.

Capture points. Where an optimizer steps the model, gradients are captured as
it is about to apply them (`optimizer_steps`): after accumulation, after a loss
scaler's ``unscale_`` and before a loop's clipping, once per optimizer step,
with the parameters and the step's first training activations. A step the
scaler skips logs no histogram but the scalars ``amp/skipped_steps`` and
``amp/loss_scale``. Until the first optimizer step, due backward passes are
held (`step_capture`): a model no optimizer steps, or a sharded one, is
captured as each backward pass ends; a sharded one under a loss scaler, at its
``unscale_`` (`scaled_shards`).

Steps. Without ``step_fn=``, a watch counts the optimizer steps from 0, skipped
ones included (the backward passes, where no optimizer steps the model), and
logs step ``k`` when ``k`` is a multiple of ``every``. In the usual loop, one
optimizer step per batch, ``run.log({"loss": ...}, step=i)`` with ``i``
counting batches from 0 lands on the same steps; with gradient accumulation,
``i`` counting optimizer steps does. ``step_fn=`` a function returning your own
step (for example ``lambda: global_step``) numbers them instead.

Sharded models. Parameters spread over ranks (DTensors from FSDP2's
``fully_shard`` or ``parallelize_module``, FSDP1's flat parameters; see
`shards`) are logged whole, under their original names, by one rank
(``rank=``, 0 by default), merged by two collectives per logged step
(`sharded`). Every rank must watch its model, with the same options; ranks that
write nothing need no run (`histoscope.watch` without `init`). Tensors that are
not sharded are logged by that rank alone, as under DistributedDataParallel.

DeepSpeed. An engine (or its module) is captured as ``engine.step()`` is called
at an accumulation boundary, at its ``global_steps`` (`zero`).

Compiled models. A ``torch.compile``d model is watched under its own names; the
gradient hooks add no graph break, and activation hooks run outside the graphs
(a graph break at each watched leaf, never a recompilation).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import _core
from ..errors import UnloggedWarning
from .autograd_hooks import on_gradient, outside_compiled_graphs, queue_callback, tensors_of
from .batched import batch_of, bin_batch
from .device import Binned
from .histogram import Histogram
from .optimizer import OptimizerWatch
from .optimizer_steps import StepAttempts
from .options import WatchOptions
from .said_once import SaidOnce
from .scaled_shards import take_over_if_scaled
from .sharded import Merge, Wanted, check_writer, wanted_of
from .shards import find_pieces, original_name, warn_unsupported
from .sinks import HistogramSink
from .spectrum import SpectralCapture
from .step_capture import (
    EngineSteps,
    Held,
    applied,
    attempt_step,
    capture_backward,
    hold,
    unapplied_attempt,
    unscale,
    unscaled,
)
from .watch_alerts import WatchAlerts
from .zero import BeforeEngineStep, engine_stepping, find_zero_pieces, inner_module

if TYPE_CHECKING:
    import torch


class Watch:
    """What `Run.watch` returns: the hooks on one model, until `remove` (or `Run.unwatch`).

    Steps: without ``step_fn=``, optimizer step ``k`` (from 0, skipped ones included; the
    backward passes where no optimizer steps the model) is logged when ``k % every ==
    0``, as the module's doc says; ``step_fn=lambda: global_step`` numbers them instead.

    Example:
        >>> import torch, histoscope as hs
        >>> model = torch.nn.Linear(4, 2)
        >>> with hs.init("demo", logdir=tmp) as run:  # doctest: +SKIP
        ...     watch = run.watch(model, log="all", every=1)
        ...     model(torch.randn(8, 4)).sum().backward()
        ...     watch.keys
        ['parameters/weight', 'parameters/bias', 'gradients/weight', 'gradients/bias']
    """

    def __init__(
        self,
        sink: HistogramSink,
        model: torch.nn.Module,
        options: WatchOptions | None = None,
        *,
        backward_hooks: bool = True,
    ) -> None:
        options = WatchOptions() if options is None else options
        engine, options = engine_stepping(model, options)
        module = unwrap(model)
        self.sink = sink
        self.model = module
        self.options = options
        self._count = 0
        self._done = 0
        self._skipped = 0
        self._held: list[Held] = []
        self._unapplied: list[int] = []
        self._finite = True
        # A loop that clips in place before the step, with no loss scaler to unscale:
        # due steps are binned as each backward pass ends, the last one kept for the step.
        self._bin_at_backward = False
        self._pending: tuple[int, tuple[list[str], Any] | None] | None = None
        self._attempts: StepAttempts | None = None
        self._loss_scale: float | None = None  # gradients binned are divided by it (DeepSpeed)
        # "optimizer" or "backward" once known; a named optimizer settles it at once.
        self._capture_at: str | None = None if options.optimizer is None else "optimizer"
        self._last_logged: int | None = None
        self._spectra_step: int | None = None
        self._in_backward = False
        self._activations: dict[str, torch.Tensor] = {}
        self._activations_step: int | None = None
        self._handles: list[Any] = []
        self._said = SaidOnce()
        found = find_pieces(module)
        # ZeRO's values are complete at its optimizer's step, not as a backward pass ends.
        backward_hooks &= not find_zero_pieces(module, found) and engine is None
        named = [
            (original_name(name), p)
            for name, p in module.named_parameters()
            if id(p) not in found.covered and options.keeps(original_name(name), p)
        ]
        pieces = [piece for piece in found.pieces if options.keeps(piece.name, piece.tensor)]
        self._parameters = named if options.parameters else []
        self._gradients = [(n, p) for n, p in named if p.requires_grad] if options.gradients else []
        self._sharded: list[Wanted] = wanted_of(pieces, options)
        # Every rank of a sharded model takes part in each logged step's collectives.
        self._merge = Merge(options, type(module).__name__) if found.spread else None
        if found.spread:
            check_writer(options)
        self._writes = writes_here(options)
        self._alerts = WatchAlerts(sink, options)
        # Under alerts="raise" every rank counts its steps, to agree on stopping at one.
        self.active = self._writes or self._merge is not None or self._alerts.agreed
        self._spectra: SpectralCapture | None = None
        if options.spectral and self._writes:
            self._spectra = SpectralCapture(
                type(module).__name__,
                named,
                [(piece.name, piece.tensor) for piece in pieces],
                every=options.spectral_interval,
                bins=options.bins,
            )
        grad_params = [p for p in module.parameters() if p.requires_grad] + found.triggers
        self._grad_params = list({id(p): p for p in grad_params}.values())
        self._backward_hooks = backward_hooks
        if found.unsupported and self._writes:
            warn_unsupported(type(module).__name__, found.unsupported)
        if not self.active:
            return
        if backward_hooks:
            for p in self._grad_params:
                self._handles.append(on_gradient(p, self._gradient_ready))
        # Sharded models keep the capture at backward(): their ranks would have to agree
        # on each attempt's fate before the collectives of a held capture.
        if backward_hooks and self._grad_params and self._merge is None:
            self._attempts = StepAttempts(
                self._grad_params,
                lambda: attempt_step(self),
                lambda step: applied(self, step),
                lambda step: unapplied_attempt(self, step),
                optimizer=options.optimizer,
                on_unscaled=lambda step: unscaled(self, step),
            )
            self._handles.append(self._attempts)
        else:
            self._capture_at = "backward"
        if backward_hooks and not self._grad_params:
            self._handles.append(module.register_forward_hook(self._frozen_forward_ends))
        if engine is not None:
            steps = EngineSteps(self, engine)
            self._handles.append(BeforeEngineStep(engine, steps.begin, steps.end))
        if options.activations and self._writes:
            for name, leaf in module.named_modules():
                if name and not any(True for _ in leaf.children()):
                    hook = outside_compiled_graphs(self._activation_hook(original_name(name)))
                    self._handles.append(leaf.register_forward_hook(hook))
        if self._alerts.agreed or hasattr(sink, "check_alerts"):
            self._handles.append(module.register_forward_pre_hook(self._before_forward))
        # A run notes which optimizer steps the model, for `histoscope check`.
        note = getattr(self.sink, "note_optimizer", None)
        if note is not None:
            self._handles.append(OptimizerWatch(module.parameters(), note))

    @property
    def run(self) -> HistogramSink:
        """Where this watch writes: the run it was started in."""
        return self.sink

    @property
    def every(self) -> int:
        """Steps between two captures."""
        return self.options.every

    @property
    def step(self) -> int:
        """The step the next capture is logged at: the optimizer steps so far (the backward
        passes, where no optimizer steps the model), or ``step()``."""
        step_of = self.options.step_fn
        if step_of is not None:
            return int(step_of())
        return self._done if self._capture_at == "optimizer" else self._count

    @property
    def capture_point(self) -> str | None:
        """Where gradients are captured: ``"optimizer"`` (as the optimizer is about to apply
        them), ``"backward"`` (as each backward pass ends), or None until it is known."""
        return self._capture_at

    @property
    def skipped_steps(self) -> int:
        """How many optimizer steps the loss scaler skipped so far."""
        return self._skipped

    @property
    def keys(self) -> list[str]:
        """The keys this watch logs parameters and gradients under (activations not listed)."""
        keys = [f"parameters/{n}" for n, _ in self._parameters]
        keys += [key for key, _, gradient in self._sharded if not gradient]
        keys += [f"gradients/{n}" for n, _ in self._gradients]
        return keys + [key for key, _, gradient in self._sharded if gradient]

    @property
    def spectrum_keys(self) -> list[str]:
        """The keys of the spectra this watch logs (``spectral=True``), each with its
        figures under ``<key>/alpha``, ``<key>/stable_rank`` and ``<key>/lambda_max``."""
        return [] if self._spectra is None else self._spectra.keys

    def due(self, step: int | None = None) -> bool:
        """Whether ``step`` (default: `step`) is a logging step not yet logged: of
        histograms, or of spectra alone (``spectral_every``)."""
        step = self.step if step is None else step
        spectra = self._spectra is not None and self._spectra.due(step)
        return self._histograms_due(step) or (spectra and step != self._last_logged)

    def _histograms_due(self, step: int) -> bool:
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
        spectra = self._spectra is not None and self._spectra.due(step)
        if spectra and step % self.every != 0:  # a step of spectra alone
            self._activations = {}
            self._log_spectra(step)
            return
        binned = self._binned(step)
        if binned is not None:
            self._write(step, *binned)
        if spectra:
            self._log_spectra(step)
        self._alerts.at_logged_step()

    def _binned(
        self, step: int, *, held: bool = False
    ) -> tuple[list[str], _core.BinnedBatch] | None:
        """Every watched tensor of ``step``, binned now; ``held`` keeps the activations."""
        keyed: list[tuple[str, torch.Tensor]] = []
        if self._writes:
            keyed += [(f"parameters/{n}", p) for n, p in self._parameters]
            grads = [(n, p.grad) for n, p in self._gradients if p.grad is not None]
            keyed += [(f"gradients/{n}", unscale(g, self._loss_scale)) for n, g in grads]
        if self._activations_step == step:
            keyed += [(f"activations/{key}", t) for key, t in self._activations.items()]
        if not held:
            self._activations = {}
        merged = {}
        if self._merge is not None:
            merged = self._merge.capture(step, self._sharded, self._loss_scale)
        return self._bin(step, keyed, merged)

    def remove(self) -> None:
        """Takes the hooks off the model; nothing more is logged. Safe to call twice.
        Backward passes held while waiting for an optimizer step are logged first."""
        if self._capture_at is None and self.active:
            capture_backward(self)
        if self._attempts is not None and self.active:
            self._attempts.conclude()  # the last step, if the loss scaler skipped it
        for handle in self._handles:
            handle.remove()
        self._handles = []
        self._activations = {}
        self.active = False
        if self._merge is not None:
            self._merge.close()

    def __repr__(self) -> str:
        state = "watching" if self.active else "removed"
        return (
            f"Watch({type(self.model).__name__}, log={self.options.log!r}, every={self.every}, "
            f"{self._count_of(False)} parameters, {self._count_of(True)} gradients, {state})"
        )

    def _count_of(self, gradients: bool) -> int:
        sharded = sum(1 for _, _, gradient in self._sharded if gradient == gradients)
        return len(self._gradients if gradients else self._parameters) + sharded

    def _gradient_ready(self, _param: Any) -> None:
        if self._in_backward:
            return
        self._in_backward = True
        # Queued twice so that it runs after the callbacks queued before it
        # (DistributedDataParallel's gradient averaging among them).
        queue_callback(lambda: queue_callback(self._backward_ends))

    def _backward_ends(self) -> None:
        """Logs the step that ends (or a DeepSpeed engine's) if it is due and captured as
        backward passes end, holds it while that is not known, and counts it."""
        self._in_backward = False
        try:
            if self._merge is not None and self._backward_hooks and self._count == 0:
                take_over_if_scaled(self)  # under a loss scaler, captured at its unscale_
            if self._capture_at == "backward" and self.due():
                self.capture()
            elif self._capture_at is None:
                hold(self)
            elif self._bin_at_backward and self._histograms_due(self.step):
                self._pending = (self.step, self._binned(self.step, held=True))
        finally:
            self._count += 1
            if self._attempts is not None:
                self._attempts.backward_ended()

    def _before_forward(self, module: Any, _inputs: Any) -> None:
        """Alerts reach the loop at a training forward pass. Inside a graph that
        ``torch.compile`` traces the hook is nothing (`is_compiling` is constant there),
        so it adds no guard or graph break; logging calls still deliver them."""
        import torch

        compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None)
        if compiling is not None and compiling():
            return
        if module.training and torch.is_grad_enabled():
            self._alerts.before_forward()

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
            if not self._histograms_due(step):
                return
            if self._activations_step != step:
                self._activations, self._activations_step = {}, step
            tensors = tensors_of(output)
            for i, tensor in enumerate(tensors):
                key = name if len(tensors) == 1 else f"{name}/{i}"
                # The first forward pass of a step only; a copy, since a later
                # in-place layer (ReLU(inplace=True)) would change the output.
                if key not in self._activations and self.options.keeps(key, tensor):
                    self._activations[key] = tensor.detach().clone()

        return hook

    def _bin(
        self, step: int, keyed: list[tuple[str, Any]], merged: dict[str, Binned]
    ) -> tuple[list[str], _core.BinnedBatch] | None:
        if not keyed and not merged:
            return None
        keys = [key for key, _ in keyed]
        try:
            batch = bin_batch([t for _, t in keyed], self.options.bins)
        except Exception:  # noqa: BLE001 - the tensor at fault is found and named below
            alone = [(key, self._bin_alone(step, key, tensor)) for key, tensor in keyed]
            keys = [key for key, binned in alone if binned is not None]
            batch = batch_of([binned for _, binned in alone if binned is not None])
        if merged:
            keys, batch = keys + list(merged), batch.joined(batch_of(list(merged.values())))
        return keys, batch

    def _write(self, step: int, keys: list[str], batch: _core.BinnedBatch) -> None:
        if self.sink.closed:
            self.remove()
            return
        self.sink._log_batch(keys, batch, step=step)

    def _log_spectra(self, step: int) -> None:
        """Every watched matrix's spectrum and figures, computed now, before the optimizer
        steps; once a step (a held backward pass logs them as it ends)."""
        if self._spectra is None or not self.active or step == self._spectra_step:
            return
        self._spectra_step = step
        logged = self._spectra.logged(step)
        if self.sink.closed:
            self.remove()
        elif logged:
            self.sink.log(logged, step=step)

    def _bin_alone(self, step: int, key: str, tensor: Any) -> Histogram | None:
        """One tensor that cannot be binned costs only its own histogram, and is named."""
        try:
            return Histogram(tensor, bins=self.options.bins)
        except Exception as error:  # noqa: BLE001 - reported once, training goes on
            self._warn_once(f"{key}: {error}", step)
            return None

    def _warn_once(self, message: str, step: int) -> None:
        said = (
            f"histoscope watch of {type(self.model).__name__}: step {step}: {message} "
            "(not logged; said once)"
        )
        self._said.warn(message, said, UnloggedWarning, stacklevel=2)


def unwrap(model: Any) -> torch.nn.Module:
    """The model inside `DataParallel`, `DistributedDataParallel`, a DeepSpeed engine and
    ``torch.compile``'s wrappers, for its names.

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
    while True:
        if isinstance(model, wrappers):
            model = model.module
        elif inner_module(model) is not model:
            model = inner_module(model)  # a DeepSpeed engine
        elif isinstance(getattr(model, "_orig_mod", None), torch.nn.Module):
            model = model._orig_mod  # torch.compile's OptimizedModule
        else:
            return model


def writes_here(options: WatchOptions) -> bool:
    """Whether this process writes what a watch with ``options`` logs: with ``all_ranks``, or
    when its rank in ``torch.distributed`` is ``options.rank`` (0 outside torch.distributed).

    Example:
        >>> writes_here(WatchOptions())
        True
    """
    return options.all_ranks or _rank() == options.rank


def _rank() -> int:
    """This process's rank in ``torch.distributed`` (0 outside it)."""
    import torch.distributed as dist

    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0
