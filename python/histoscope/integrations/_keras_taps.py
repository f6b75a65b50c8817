"""How values leave a Keras train step on each backend, at logging steps only.

The Keras callback (`histoscope.integrations.keras`) calls a tap while Keras
traces (or, on PyTorch, runs) the train step, with the step as a tensor and
named tensors: the parameters as the step starts (`tap`), then each layer's
output and the gradients (`defer`, which a tap may hold until the step's end,
`release`). A tap hands them on, as histograms, to a
``deliver(step, histograms)`` function:

- JAX: ``jax.debug.callback`` under ``jax.lax.cond``, so only logging steps
  leave the compiled step; the callback receives host copies of the arrays
  and bins them in the core.
- TensorFlow: XLA lets nothing leave a compiled step but variables of fixed
  shapes, and layer outputs change shape with the batch. So the histograms
  are made inside the step (`histoscope.integrations._tf_records`), each as
  one fixed-size record variable: counts in the core's bins, and the
  statistics. The parameters are binned together as the step starts, the
  gradients and layer outputs together at its end: two passes for XLA to
  compile, whatever the model. `TensorFlowTap.poll`, after the step, reads
  the rows that changed.
- PyTorch: the step runs eagerly, and the tensors are binned as `watch` bins
  them, on their device.

Under a ``LossScaleOptimizer`` a tap also numbers the step with the skipped steps
included and tells the host whether it was applied (`settle`), for
`histoscope.integrations._keras_skips.ScaledSteps`: JAX asks the host for the
count of skipped steps as the step starts (``io_callback``) and sends the step's
outcome at logging and skipped steps; TensorFlow counts them in a variable and
keeps the last step's outcome in another, which `TensorFlowTap.poll` reads
after each step (with ``steps_per_execution`` above 1, after the last step of an
execution only: the skipped steps before it still count in the steps' numbers,
but are not written); PyTorch reads them as the step runs.

Example:
    >>> tap = TorchTap(every=2, deliver=lambda step, values: print(step, sorted(values)))
    >>> import torch
    >>> tap.tap(4, tap.due(4), [("parameters/w", torch.ones(2))])
    4 ['parameters/w']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ._keras_skips import ScaledSteps
from ._tf_records import histogram_of_record, record_width, records

Deliver = Callable[[int, dict[str, Any]], None]
"""Where a tap hands a logging step's values: ``deliver(step, {key: array or Histogram})``."""

Report = Callable[[int, str, Exception], None]
"""Where a tap says that a value could not be made a histogram: ``report(step, key, error)``."""


class JaxTap:
    """Values leave a jitted JAX step through ``jax.debug.callback``, at logging steps only.

    ``deliver`` runs on a JAX runtime thread, with CPU arrays; `flush` waits for every
    callback of the steps run so far.
    """

    def __init__(self, every: int, deliver: Deliver, scaled: ScaledSteps | None = None) -> None:
        self.every = every
        self.deliver = deliver
        self.scaled = scaled
        self._started: tuple[Any, Any] = (None, None)
        # A step's values must reach the host before its outcome: callbacks in program
        # order, which JAX keeps (ordered effects) in a computation on one device only.
        self.ordered = scaled is not None and _one_device()

    def step_of(self, model: Any, state: Any) -> Any:
        """The train steps so far, from the JAX trainer's ``state``: the optimizer's
        iterations, and under a loss-scale optimizer the steps the host saw skipped."""
        optimizer = model.optimizer
        iterations = _state_value(optimizer, optimizer.iterations, state[2])
        if self.scaled is None:
            return iterations
        import jax
        from jax.experimental import io_callback

        self._started = (iterations, _state_value(optimizer, optimizer.dynamic_scale, state[2]))
        scaled, kind = self.scaled, jax.ShapeDtypeStruct((), iterations.dtype)
        skipped = io_callback(
            lambda: np.asarray(scaled.skipped, kind.dtype), kind, ordered=self.ordered
        )
        return iterations + skipped

    def settle(self, model: Any, state: Any, step: Any, due: Any) -> None:
        """Sends the step's outcome (``state`` is the step's new state) to the host at
        logging and skipped steps."""
        if self.scaled is None:
            return
        import jax

        before, scale = self._started
        applied = _state_value(model.optimizer, model.optimizer.iterations, state[2]) != before
        scaled = self.scaled

        def send(at: Any, done: Any, ran_under: Any) -> None:
            scaled.settle(int(at), applied=bool(done), scale=float(ran_under))

        jax.lax.cond(
            due | ~applied,
            lambda: jax.debug.callback(send, step, applied, scale, ordered=self.ordered),
            lambda: None,
        )

    def due(self, step: Any) -> Any:
        return step % self.every == 0

    def tap(self, step: Any, due: Any, named: Sequence[tuple[str, Any]]) -> None:
        import jax

        keys = [key for key, _ in named]

        def send(at: Any, values: list[Any]) -> None:
            self.deliver(int(at), dict(zip(keys, values)))

        values = [value for _, value in named]
        jax.lax.cond(
            due,
            lambda: jax.debug.callback(send, step, values, ordered=self.ordered),
            lambda: None,
        )

    def defer(self, step: Any, due: Any, named: Sequence[tuple[str, Any]]) -> None:
        """Values from inside the step go as they come, as the parameters do."""
        self.tap(step, due, named)

    def release(self, step: Any, due: Any) -> None:
        """Nothing is held for the step's end."""

    def flush(self) -> None:
        import jax

        jax.effects_barrier()


class TorchTap:
    """The PyTorch backend runs the step eagerly: a logging step's tensors go straight on."""

    def __init__(self, every: int, deliver: Deliver, scaled: ScaledSteps | None = None) -> None:
        self.every = every
        self.deliver = deliver
        self.scaled = scaled
        self._started = (0, 0.0)

    def step_of(self, model: Any, state: Any) -> int:
        """The train steps so far: the optimizer's iterations, and the steps skipped."""
        iterations = int(model.optimizer.iterations.value)
        if self.scaled is None:
            return iterations
        self._started = (iterations, float(model.optimizer.dynamic_scale.value))
        return iterations + self.scaled.skipped

    def settle(self, model: Any, state: Any, step: int, due: bool) -> None:
        if self.scaled is not None:
            before, scale = self._started
            applied = int(model.optimizer.iterations.value) != before
            self.scaled.settle(step, applied=applied, scale=scale)

    def due(self, step: int) -> bool:
        return step % self.every == 0

    def tap(self, step: int, due: bool, named: Sequence[tuple[str, Any]]) -> None:
        if due:
            self.deliver(step, {key: value.detach() for key, value in named})

    def defer(self, step: Any, due: Any, named: Sequence[tuple[str, Any]]) -> None:
        """Values from inside the step go as they come, as the parameters do."""
        self.tap(step, due, named)

    def release(self, step: Any, due: Any) -> None:
        """Nothing is held for the step's end."""

    def flush(self) -> None:
        return


class TensorFlowTap:
    """Histograms made inside the TensorFlow step, one fixed-size record variable per key.

    ``capacity`` record variables are made before the step is traced; a key takes the
    next free one when it is first tapped. `tap` bins its tensors together at once (the
    parameters, as the step starts); `defer` holds the gradients and layer outputs, which
    `release` bins together at the step's end. `poll` reads the rows written since it
    last read.
    """

    def __init__(
        self,
        every: int,
        deliver: Deliver,
        report: Report,
        *,
        bins: int,
        capacity: int,
        scaled: ScaledSteps | None = None,
    ) -> None:
        import tensorflow as tf

        self.every = every
        self.deliver = deliver
        self.report = report
        self.bins = bins
        self.rows: dict[str, int] = {}
        self.full: list[str] = []
        # One variable a row: a whole variable assigned in an XLA conditional, never a slice.
        empty = np.full(record_width(bins), -1.0)
        self.records = [
            tf.Variable(empty, dtype=tf.float64, trainable=False) for _ in range(capacity)
        ]
        self.last_step = tf.Variable(-1, dtype=tf.int64, trainable=False)
        self._polled = -1
        self.scaled = scaled
        if scaled is not None:
            self.skipped = tf.Variable(scaled.skipped, dtype=tf.int64, trainable=False)
            # The last step's number, whether it was applied, and the scale it ran under.
            self.outcome = tf.Variable([-1.0, 0.0, 0.0], dtype=tf.float64, trainable=False)
            self._settled = -1
            self._started: tuple[Any, Any] = (None, None)
        self._held: list[tuple[str, Any]] = []
        self._graph: Any = None
        # Traced as written: AutoGraph's rewriting of the binning's Python cost more time
        # than XLA's compilation of it, and the binning has no Python control flow on tensors.
        self._write = tf.autograph.experimental.do_not_convert(self._write_rows)

    def step_of(self, model: Any, state: Any) -> Any:
        """The optimizer's iterations as the step starts; also where the step's graph is noted
        and the values held for a step traced before are dropped."""
        import tensorflow as tf

        self._held, self._graph = [], tf.compat.v1.get_default_graph()
        iterations = tf.cast(tf.identity(model.optimizer.iterations.value), tf.int64)
        if self.scaled is None:
            return iterations
        optimizer = model.optimizer
        # Built in the first trace, which TensorFlow redoes once the variables exist; the
        # first scales the loss by the initial scale too (LossScaleOptimizer.scale_loss).
        scale = optimizer.dynamic_scale.value if optimizer.built else optimizer.initial_scale
        self._started = (iterations, tf.identity(tf.cast(scale, tf.float32)))
        return iterations + tf.identity(self.skipped)

    def settle(self, model: Any, state: Any, step: Any, due: Any) -> None:
        """Counts the step if it was skipped, and keeps its outcome for `poll`."""
        if self.scaled is None:
            return
        import tensorflow as tf

        before, scale = self._started
        after = tf.cast(model.optimizer.iterations.value, tf.int64)
        applied = tf.not_equal(after, before)
        self.skipped.assign_add(tf.cast(tf.logical_not(applied), tf.int64))
        outcome = [tf.cast(value, tf.float64) for value in (step, applied, scale)]
        self.outcome.assign(tf.stack(outcome))

    def due(self, step: Any) -> Any:
        import tensorflow as tf

        return tf.equal(tf.math.floormod(step, self.every), 0)

    def tap(self, step: Any, due: Any, named: Sequence[tuple[str, Any]]) -> None:
        import tensorflow as tf

        found = ((self._row(key), value) for key, value in named)
        rows = [(row, value) for row, value in found if row is not None]
        if rows:
            tf.cond(due, lambda: self._write(rows, step), lambda: tf.constant(False))

    def defer(self, step: Any, due: Any, named: Sequence[tuple[str, Any]]) -> None:
        """Holds ``named`` for `release`, unless traced inside a loop's or a condition's own
        graph (a recurrent layer's cell, a loss-scale optimizer's apply), whose tensors
        cannot leave it: those are binned there and then."""
        import tensorflow as tf

        if tf.compat.v1.get_default_graph() is self._graph:
            self._held += named
        else:
            self.tap(step, due, named)

    def release(self, step: Any, due: Any) -> None:
        """Bins the values `defer` held, together, at the end of the step."""
        held, self._held = self._held, []
        self.tap(step, due, held)

    def _write_rows(self, rows: list[tuple[int, Any]], step: Any) -> Any:
        import tensorflow as tf

        made = records([value for _, value in rows], self.bins, step)
        for index, (row, _) in enumerate(rows):
            self.records[row].assign(made[index])
        self.last_step.assign(step)
        return tf.constant(True)

    def poll(self) -> None:
        """Delivers the histograms of the logging steps written since the last poll; then,
        under a loss-scale optimizer, the last step's outcome."""
        self._deliver_records()
        if self.scaled is not None:
            step, applied, scale = (float(value) for value in self.outcome.numpy())
            if step > self._settled:
                self._settled = int(step)
                self.scaled.settle(int(step), applied=bool(applied), scale=scale)

    def _deliver_records(self) -> None:
        last = int(self.last_step.numpy())
        if last <= self._polled:
            return
        by_step: dict[int, dict[str, Any]] = {}
        for key, row in self.rows.items():
            record = self.records[row].numpy()
            step = int(record[0])
            if step <= self._polled:
                continue
            try:
                by_step.setdefault(step, {})[key] = histogram_of_record(record[1:], self.bins)
            except ValueError as error:
                self.report(step, key, error)
        self._polled = last
        for step in sorted(by_step):
            self.deliver(step, by_step[step])

    def flush(self) -> None:
        self.poll()

    def _row(self, key: str) -> int | None:
        if key not in self.rows:
            if len(self.rows) == len(self.records):
                self.full.append(key)
                return None
            self.rows[key] = len(self.rows)
        return self.rows[key]


def _state_value(optimizer: Any, variable: Any, values: Sequence[Any]) -> Any:
    """``variable``'s value among the JAX trainer's optimizer ``values``."""
    for candidate, value in zip(optimizer.variables, values):
        if candidate is variable:
            return value
    raise RuntimeError(f"{variable.path} is not among the optimizer's variables")


def _one_device() -> bool:
    """Whether the JAX train step runs on one device (no Keras distribution)."""
    import keras

    return keras.distribution.distribution() is None
