"""A Keras 3 callback that logs a model's parameters, gradients and activations to histoscope.

Keras's own ``TensorBoard(histogram_freq=1)`` logs weights once an epoch;
this callback logs, every ``every`` training batches, from inside the train
step itself, so it works with ``model.fit`` and ``jit_compile=True`` on the
TensorFlow and JAX backends (and on PyTorch):

- **Gradients**: the very ones the optimizer applies. The callback wraps the
  optimizer's ``apply``, which ``fit``'s train step calls with the gradients
  of the training loss (``apply_gradients`` calls it too), and logs them as
  they arrive there: divided by the optimizer's ``loss_scale_factor`` when it
  has one, and before the optimizer's own ``clipnorm``, ``clipvalue`` and
  weight decay. Nothing is computed twice.
- **Parameters**: every floating-point weight of the model (trainable ones,
  and non-trainable ones such as batch-norm statistics, as Keras's
  TensorBoard callback logs them), as they are when the step starts: the
  values the step's gradients are taken at.
- **Activations** (``activations=True``): the output of every leaf layer in
  the step's forward pass (a layer called twice: its first call).

Keys are those of `histoscope.Run.watch`: ``parameters/<layer>/<weight>``,
``gradients/<layer>/<weight>`` and ``activations/<layer>``, paths as Keras
names them inside the model (``dense_1/kernel``). The step is the train step,
counted from 0 across ``fit`` calls: the optimizer's ``iterations`` as the step
starts, plus the steps a loss-scale optimizer skipped before it. A step is
logged when it is a multiple of ``every``. At the end of each epoch the
epoch's logs (loss, metrics, validation) are logged as scalars at the epoch's
last train step.

Mixed precision (``mixed_float16``, whose ``compile`` wraps the optimizer in a
``LossScaleOptimizer``, or one given): the gradients are the unscaled ones the
loss-scale optimizer hands its inner optimizer, whose ``apply`` is wrapped.
Its ``iterations`` count only applied steps; a step it skips because its
gradients overflowed float16 logs no histogram (the parameters and
activations taken as it started are dropped) and is written as the scalars
``amp/skipped_steps`` (how many so far) and ``amp/loss_scale`` (the scale it
overflowed at), as `Run.watch` writes them under a ``GradScaler``; the loss
scale is also written at each logged step, after its histograms
(`histoscope.integrations._keras_skips`). ``histoscope check`` calls a few
skips ``skipped`` (info), and a run that skips every step to its end an error.

How values leave the step: on JAX, through ``jax.debug.callback`` at logging
steps only, as host copies binned by the core; on TensorFlow, where XLA lets
nothing out but fixed-size variables, the histograms are made inside the step
in float64, in the core's bins, and read after the step: the parameters'
together as the step starts, the gradients' and layer outputs' together at
its end, so that XLA compiles two binning passes whatever the model; on
PyTorch the tensors are binned on their device, as `watch` bins them. Every
histogram is binned before it reaches the run's writer, so the run's memory
bound (``max_pending_bytes``, ``on_full``) holds only small histograms, as
with `watch`. The callback re-traces the train step once per ``fit``.

Keras's NNX mode on JAX (``KERAS_NNX_ENABLED``) compiles the model class's
own ``train_step``, past the callback's capture: ``fit`` with
``jit_compile=True`` there raises `histoscope.errors.UnsupportedTrainingError`
before its first step; with ``jit_compile=False`` it is logged as usual.
"""

from __future__ import annotations

import dataclasses
import numbers
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import keras

from ..errors import UnloggedWarning, UnsupportedTrainingError
from ..write.histogram import Histogram
from ..write.jax_device import bin_jax_arrays
from ..write.options import DEFAULT_BINS, Filter, WatchOptions
from ..write.run import Run
from ..write.session import init
from ._keras_names import named_layers, named_weights
from ._keras_skips import ScaledSteps, loss_scale_optimizer, skipped_before
from ._keras_taps import JaxTap, TensorFlowTap, TorchTap
from ._watching import WatchingCallback

__all__ = ["HistoscopeCallback"]

Tap = Any
"""A `_keras_taps` tap: `JaxTap`, `TensorFlowTap` or `TorchTap`."""


class HistoscopeCallback(WatchingCallback, keras.callbacks.Callback):  # type: ignore[misc,unused-ignore]
    """Logs the model ``fit`` trains to a histoscope run (see the module's doc for what and when).

    ``run`` is the histoscope run to log to; without one, a run of ``project``
    ("keras" unless given) is started in ``./histoscope-logs`` and finished
    with the training. ``log`` is ``"gradients"``, ``"parameters"`` or
    ``"all"``, every ``every`` batches, in ``bins`` equal bins; ``filter``
    keeps the tensors whose name (``dense_1/kernel``, ``dense_1``) a regular
    expression matches, or for which ``filter(name, tensor)`` is true;
    ``activations=True`` adds each leaf layer's output. With ``stop_on``
    (kinds of finding, such as ``("nonfinite", "exploding")``), the run's
    first alert of one of those kinds stops ``fit`` after the current batch
    (``model.stop_training``) and says why in the log.

    Example:
        >>> import tempfile, numpy as np, keras, histoscope as hs
        >>> from histoscope.integrations.keras import HistoscopeCallback
        >>> model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
        >>> model.compile(optimizer="sgd", loss="mse")
        >>> run = hs.init("keras", logdir=tempfile.mkdtemp())
        >>> x, y = np.ones((32, 4), "float32"), np.zeros((32, 2), "float32")
        >>> history = model.fit(x, y, batch_size=8, verbose=0,
        ...                     callbacks=[HistoscopeCallback(run, log="all", every=2)])
        >>> run.finish()
        >>> data = hs.load_histograms(run.path)
        >>> sorted(data)  # doctest: +NORMALIZE_WHITESPACE
        ['gradients/dense/bias', 'gradients/dense/kernel',
         'parameters/dense/bias', 'parameters/dense/kernel']
        >>> data["gradients/dense/kernel"]["."].steps.tolist()
        [0, 2]
    """

    default_project = "keras"

    def __init__(
        self,
        run: Run | None = None,
        *,
        project: str | None = None,
        log: str = "gradients",
        every: int = 100,
        filter: Filter = None,
        bins: int = DEFAULT_BINS,
        activations: bool = False,
        stop_on: Sequence[str] | None = None,
    ) -> None:
        super().__init__(
            run,
            project=project,
            log=log,
            every=every,
            filter=filter,
            bins=bins,
            activations=activations,
            stop_on=stop_on,
        )
        self._capture: _Capture | None = None
        self._scaled: ScaledSteps | None = None
        self._every = every
        self._lock = threading.Lock()
        self._warned: set[str] = set()

    def on_train_begin(self, logs: dict | None = None) -> None:
        _refuse_nnx_jit(self.model)
        watching = self._watching
        if watching.run is None:
            watching.run, watching.owns_run = init(watching.project), True
        watching.listen()
        if self._capture is not None:
            self._capture.remove()
        model = self.model
        every = watching.every if watching.every is not None else 100
        self._every = every
        scaling = loss_scale_optimizer(model)
        self._scaled = (
            None
            if scaling is None
            else ScaledSteps(every, self._write, skipped=skipped_before(scaling))
        )
        self._capture = _Capture(model, self._tap(model, every), watching.options)

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        capture = self._capture
        if capture is not None and isinstance(capture.tap, TensorFlowTap):
            capture.tap.poll()
        watching = self._watching
        if watching.stop_on is not None and capture is not None:
            watching.captured = self._judged_last_step(capture)
        if watching.stop_requested():
            self.model.stop_training = True

    def _judged_last_step(self, capture: _Capture) -> bool:
        """Whether the batch just run was logged (or, under a loss-scale optimizer,
        recorded skipped), so that its alerts are judged before the next one."""
        if self._scaled is not None:
            capture.tap.flush()  # JAX: the step's outcome has reached the host
            return self._scaled.take_judged()
        # The batch's step is one before the optimizer's count now.
        step = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations)) - 1
        return step % self._every == 0

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        run = self._watching.run
        if self._capture is None or run is None or not logs:
            return
        scalars = {
            key: float(value)
            for key, value in logs.items()
            if isinstance(value, numbers.Real) and not isinstance(value, bool)
        }
        if scalars:
            # At the epoch's last step: a run that skips every step to its end ends on one.
            step = self._train_steps() - 1
            self._guard(step, "the epoch's logs", lambda: run.log(scalars, step=step))

    def _train_steps(self) -> int:
        """The train steps run so far: the optimizer's updates, and the steps it skipped."""
        updates = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))
        if self._scaled is None or self._capture is None:
            return updates
        self._capture.tap.flush()
        return updates + self._scaled.skipped

    def on_train_end(self, logs: dict | None = None) -> None:
        capture, self._capture = self._capture, None
        if capture is None:
            return
        capture.remove()
        capture.tap.flush()
        scaled, self._scaled = self._scaled, None
        if scaled is not None:
            scaled.remember(self.model.optimizer)
        self._warn_about(capture, scaled)
        watching = self._watching
        if watching.owns_run and watching.run is not None:
            watching.run.finish()
            watching.run, watching.owns_run = None, False

    def _tap(self, model: Any, every: int) -> Tap:
        backend = keras.backend.backend()
        scaled = self._scaled
        if backend == "jax":
            return JaxTap(every, self._deliver, scaled)
        if backend == "torch":
            return TorchTap(every, self._deliver, scaled)
        if backend == "tensorflow":
            options = self._watching.options
            layers = len(named_layers(model)) if options.activations else 0
            capacity = 2 * len(model.weights) + 4 * layers + 1
            return TensorFlowTap(
                every,
                self._deliver,
                self._report,
                bins=options.bins,
                capacity=capacity,
                scaled=scaled,
            )
        raise RuntimeError(f"histoscope's Keras callback does not know the {backend!r} backend")

    def _deliver(self, step: int, values: dict[str, Any]) -> None:
        """Logs a logging step's values (arrays binned here, histograms as they are); under
        a loss-scale optimizer, holds them until the step is known applied."""
        with self._lock:
            ready = {k: v for k, v in values.items() if isinstance(v, Histogram)}
            arrays = {k: v for k, v in values.items() if not isinstance(v, Histogram)}
            ready.update(self._bin(step, arrays))
            if not ready:
                return
            if self._scaled is not None:
                self._scaled.hold(step, ready)
            else:
                self._write(step, ready)

    def _write(self, step: int, data: dict[str, Any]) -> None:
        run = self._watching.run
        if run is not None:
            self._guard(step, "writing", lambda: run.log(data, step=step))

    def _bin(self, step: int, arrays: dict[str, Any]) -> dict[str, Histogram]:
        if not arrays:
            return {}
        bin_all = _binner(self._watching.options.bins)
        try:
            return dict(zip(arrays, bin_all(list(arrays.values()))))
        except Exception:  # noqa: BLE001 - the value at fault is found and named below
            binned = {}
            for key, value in arrays.items():
                histogram = self._guard(step, key, _first_of(bin_all, value))
                if histogram is not None:
                    binned[key] = histogram
            return binned

    def _guard(self, step: int, what: str, action: Callable[[], Any]) -> Any:
        """Runs ``action``; a failure is one warning, never an error in training."""
        try:
            return action()
        except Exception as error:  # noqa: BLE001 - reported once, training goes on
            self._report(step, what, error)
            return None

    def _report(self, step: int, what: str, error: Exception) -> None:
        self._warn_once(f"step {step}: {what}: {error} (not logged; said once)")

    def _warn_about(self, capture: _Capture, scaled: ScaledSteps | None) -> None:
        # An eager step that a loss-scale optimizer skipped never called the inner apply.
        unapplied = scaled is not None and scaled.skipped > 0
        if (
            capture.options.gradients
            and capture.gradient_keys
            and not (capture.tapped_gradients or unapplied)
        ):
            self._warn_once(
                "no gradients were logged: the train step never called the optimizer's "
                "apply() or apply_gradients() (a custom train_step that updates the weights "
                "otherwise)"
            )
        full = getattr(capture.tap, "full", [])
        if full:
            self._warn_once(f"{len(full)} more tensors than expected were not logged: {full[:3]}")

    def _warn_once(self, message: str) -> None:
        if message in self._warned:
            return
        self._warned.add(message)
        warnings.warn(f"histoscope Keras callback: {message}", UnloggedWarning, stacklevel=2)


@dataclasses.dataclass
class _Step:
    """The train step being traced (or run, on PyTorch): its step, whether it is logged,
    and the layers whose output was already tapped."""

    step: Any
    due: Any
    seen: set[str] = dataclasses.field(default_factory=set)


class _Capture:
    """The wrappers put on one model for one ``fit``: its ``train_step``, its optimizer's
    ``apply`` and, for activations, its leaf layers' ``call``. `remove` takes them off."""

    def __init__(self, model: Any, tap: Tap, options: WatchOptions) -> None:
        self.model = model
        self.tap = tap
        self.options = options
        self.current: _Step | None = None
        self.tapped_gradients = False
        self._undo: list[Callable[[], None]] = []
        kept = named_weights(model, options)
        self.parameters = kept if options.parameters else []
        trainable = {id(v) for v in model.trainable_variables}
        self.gradient_keys = (
            {id(v): key for key, v in kept if id(v) in trainable} if options.gradients else {}
        )
        self._wrap(model, "train_step", self._train_step)
        optimizer = getattr(model.optimizer, "inner_optimizer", model.optimizer)
        self._wrap(optimizer, "apply", self._apply)
        if options.activations:
            for key, layer in named_layers(model):
                self._wrap(layer, "call", self._call(key))
        model.make_train_function(force=True)

    def remove(self) -> None:
        for undo in reversed(self._undo):
            undo()
        self._undo = []
        self.model.make_train_function(force=True)

    def _wrap(self, owner: Any, name: str, make: Callable[[Callable[..., Any]], Any]) -> None:
        own = name in vars(owner)
        original = getattr(owner, name)
        setattr(owner, name, make(original))

        def undo() -> None:
            if own:
                setattr(owner, name, original)
            else:
                delattr(owner, name)

        self._undo.append(undo)

    def _train_step(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def train_step(*args: Any) -> Any:
            state = args[0] if len(args) > 1 else None  # the JAX trainer passes (state, data)
            step = self.tap.step_of(self.model, state)
            self.current = _Step(step, self.tap.due(step))
            try:
                if self.parameters:
                    values = self._values(state)
                    named = [(f"parameters/{key}", values(v)) for key, v in self.parameters]
                    self.tap.tap(self.current.step, self.current.due, named)
                result = original(*args)
                self.tap.release(self.current.step, self.current.due)
                # The JAX trainer's step returns (logs, state): the outcome is in the state.
                new_state = result[1] if state is not None else None
                self.tap.settle(self.model, new_state, self.current.step, self.current.due)
                return result
            finally:
                self.current = None

        return train_step

    def _values(self, state: Any) -> Callable[[Any], Any]:
        """A weight's value in this step: from the JAX trainer's state, or the variable's own."""
        if state is None:
            return lambda variable: variable.value
        model = self.model
        by_id = {id(v): value for v, value in zip(model.trainable_variables, state[0])}
        by_id.update({id(v): value for v, value in zip(model.non_trainable_variables, state[1])})
        return lambda variable: by_id[id(variable)]

    def _apply(self, original: Callable[..., Any]) -> Callable[..., Any]:
        optimizer = getattr(self.model.optimizer, "inner_optimizer", self.model.optimizer)

        def apply(grads: Sequence[Any], trainable_variables: Any = None) -> Any:
            current = self.current
            if current is not None and self.gradient_keys:
                variables = (
                    getattr(optimizer, "_trainable_variables", self.model.trainable_variables)
                    if trainable_variables is None
                    else list(trainable_variables)
                )
                scale = optimizer.loss_scale_factor
                named = [
                    (f"gradients/{self.gradient_keys[id(v)]}", g if scale is None else g / scale)
                    for g, v in zip(grads, variables)
                    if g is not None and id(v) in self.gradient_keys
                ]
                if named:
                    self.tap.defer(current.step, current.due, named)
                    self.tapped_gradients = True
            return original(grads, trainable_variables)

        return apply

    def _call(self, key: str) -> Callable[[Callable[..., Any]], Any]:
        def wrap(original: Callable[..., Any]) -> Callable[..., Any]:
            def call(*args: Any, **kwargs: Any) -> Any:
                output = original(*args, **kwargs)
                current = self.current
                if current is not None and key not in current.seen:
                    current.seen.add(key)
                    self._tap_output(current, key, output)
                return output

            return call

        return wrap

    def _tap_output(self, current: _Step, key: str, output: Any) -> None:
        tensors = [t for t in keras.tree.flatten(output) if keras.ops.is_tensor(t)]
        named = [(key if len(tensors) == 1 else f"{key}/{i}", t) for i, t in enumerate(tensors)]
        kept = [(f"activations/{name}", t) for name, t in named if self.options.keeps(name, t)]
        if kept:
            self.tap.defer(current.step, current.due, kept)


def _refuse_nnx_jit(model: Any) -> None:
    """Raises `UnsupportedTrainingError` for Keras's NNX mode with a compiled train step.

    That step calls the model's class's ``train_step``, never the wrapper the
    callback puts on the model, so nothing would be logged but a misleading
    warning at the end.
    """
    nnx = getattr(keras.config, "is_nnx_enabled", lambda: False)()
    if keras.backend.backend() == "jax" and nnx and model.jit_compile and not model.run_eagerly:
        raise UnsupportedTrainingError(
            "histoscope's Keras callback cannot log a model that Keras's NNX mode "
            "(KERAS_NNX_ENABLED, keras.config.is_nnx_enabled()) trains with jit_compile=True: "
            "its compiled step calls the model class's train_step and skips the callback's "
            "capture. Compile the model with jit_compile=False, or train without NNX mode."
        )


def _first_of(bin_all: Callable[[list[Any]], list[Histogram]], value: Any) -> Callable[[], Any]:
    return lambda: bin_all([value])[0]


def _binner(bins: int) -> Callable[[list[Any]], list[Histogram]]:
    """How this backend's arrays are binned, many at once: torch tensors as `watch` bins them."""
    if keras.backend.backend() == "torch":
        from ..write.batched import bin_tensors

        return lambda values: bin_tensors(values, bins)
    return lambda values: bin_jax_arrays(values, bins)
