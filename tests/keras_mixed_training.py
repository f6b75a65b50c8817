"""Trains a small Keras 3 model under ``mixed_float16`` with histoscope's callback, in a
process of its own (KERAS_BACKEND is read once), for tests/test_keras_mixed.py:

    KERAS_BACKEND=jax python tests/keras_mixed_training.py OUT_DIR

Two runs under OUT_DIR/logs:

- ``healthy``: a ``LossScaleOptimizer`` given an initial scale of 2^28, so that its
  first steps overflow float16 and are skipped, over two ``fit`` calls (the
  second numbers its steps after the first's skipped ones), with
  ``stop_on=("nonfinite",)``. Its inner SGD keeps the gradient each update applied
  in variables of its own (`AppliedSGD`), which a callback of the test reads after
  each step, apart from histoscope's: OUT_DIR/healthy.npz holds them, and the
  weights as each logging step starts.
- ``overflow``: ``compile`` wraps plain SGD in a ``LossScaleOptimizer`` itself; at
  step ``PLANT_AT`` a planted bug multiplies a kernel by 10^6, beyond float16's
  range, so that every later step overflows and is skipped. Gradients only.

OUT_DIR/summary.json says, per run, which steps the optimizer skipped (and under
what scale) and which it applied, as the test's callback saw them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import keras
import numpy as np

import histoscope as hs
from histoscope.integrations.keras import HistoscopeCallback

EVERY = 2
BINS = 16
BATCH = 16
BATCHES = 8  # a batch per train step, in each epoch
PLANT_AT = 6


class AppliedSGD(keras.optimizers.SGD):
    """SGD that keeps the gradient its last update applied to each weight, in an
    optimizer variable: read after the step on every backend, jit-compiled or not."""

    def build(self, variables: list) -> None:
        if self.built:
            return
        super().build(variables)
        self.applied = self.add_optimizer_variables(variables, "applied")

    def update_step(self, gradient: object, variable: object, learning_rate: object) -> None:
        slot = self.applied[self._get_variable_index(variable)]
        self.assign(slot, keras.ops.cast(gradient, variable.dtype))
        super().update_step(gradient, variable, learning_rate)


class Reference(keras.callbacks.Callback):
    """What each train step did, seen from outside histoscope: skipped or applied (did
    the optimizer's iterations move?), the loss scale it ran under, and at logging
    steps the weights as it started and the gradients SGD applied."""

    def __init__(self, plant_at: int | None = None) -> None:
        super().__init__()
        self.plant_at = plant_at
        self.step = 0  # train steps so far, across fit calls
        self.skipped: list[tuple[int, float]] = []
        self.applied: list[tuple[int, float]] = []
        self.arrays: dict[str, np.ndarray] = {}
        self._started = (0, 0.0)

    def on_train_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        optimizer = self.model.optimizer
        # TensorFlow builds the optimizer as it traces the first step: at its initial scale.
        scale = self._read(optimizer.dynamic_scale) if optimizer.built else optimizer.initial_scale
        self._started = (self._read(optimizer.iterations), scale)
        if self.step == self.plant_at:
            kernel = self.model.get_layer("hidden").kernel
            kernel.assign(kernel * 1e6)
        if self.step % EVERY == 0:
            for variable in self.model.weights:
                self.arrays[f"before|{self.step}|{self._name(variable)}"] = self._read(variable)

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        optimizer = self.model.optimizer
        iterations, scale = self._started
        if self._read(optimizer.iterations) == iterations:
            self.skipped.append((self.step, float(scale)))
        else:
            self.applied.append((self.step, float(scale)))
            inner = optimizer.inner_optimizer
            if self.step % EVERY == 0 and hasattr(inner, "applied"):
                for variable in self.model.trainable_variables:
                    slot = inner.applied[inner._get_variable_index(variable)]
                    self.arrays[f"gradient|{self.step}|{self._name(variable)}"] = self._read(slot)
        self.step += 1

    def _name(self, variable: keras.Variable) -> str:
        return variable.path.removeprefix(f"{self.model.name}/")

    @staticmethod
    def _read(variable: keras.Variable) -> np.ndarray:
        return keras.ops.convert_to_numpy(variable.value)


def model(optimizer: keras.optimizers.Optimizer) -> keras.Model:
    keras.utils.set_random_seed(1)
    built = keras.Sequential(
        [
            keras.Input((6,)),
            keras.layers.Dense(16, activation="relu", name="hidden"),
            keras.layers.Dense(3, name="out"),
        ]
    )
    # jit_compile=True where the backend compiles (XLA on TensorFlow and JAX).
    built.compile(optimizer, loss="mse", jit_compile=keras.backend.backend() != "torch")
    return built


def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(BATCH * BATCHES, 6)).astype("float32")
    y = np.stack([x[:, 0] - x[:, 1], x[:, 2] * 0.5, x[:, 3] + x[:, 4]], axis=1)
    return x, y.astype("float32")


def train(
    out: Path,
    name: str,
    optimizer: keras.optimizers.Optimizer,
    fits: int,
    plant_at: int | None = None,
    **options: Any,
) -> dict:
    """Four epochs, in ``fits`` calls of ``fit`` (the steps go on across them); ``options``
    for the callback, which logs all (activations too) unless they say otherwise."""
    run = hs.init("keras", run_name=name, logdir=out / "logs")
    fitted = model(optimizer)
    reference = Reference(plant_at)
    settings = {"log": "all", "activations": True, **options}
    callback = HistoscopeCallback(run, every=EVERY, bins=BINS, **settings)
    x, y = data()
    losses = []
    for first in range(0, 4, 4 // fits):
        history = fitted.fit(
            x,
            y,
            batch_size=BATCH,
            initial_epoch=first,
            epochs=first + 4 // fits,
            shuffle=False,
            verbose=0,
            callbacks=[reference, callback],
        )
        losses += [float(v) for v in history.history["loss"]]
    run.finish()
    np.savez(out / f"{name}.npz", **reference.arrays)
    return {
        "path": str(run.path),
        "optimizer": type(fitted.optimizer).__name__,
        "jit_compile": bool(fitted.jit_compile),
        "loss": losses,
        "steps": reference.step,
        "skipped": reference.skipped,
        "applied": reference.applied,
    }


def main() -> None:
    out = Path(sys.argv[1])
    keras.mixed_precision.set_global_policy("mixed_float16")
    scaled = keras.optimizers.LossScaleOptimizer(AppliedSGD(0.05), initial_scale=2.0**28)
    summary = {
        "backend": keras.backend.backend(),
        "healthy": train(out, "healthy", scaled, fits=2, stop_on=("nonfinite",)),
        # Gradients alone: fewer binning passes for XLA to compile.
        "overflow": train(
            out,
            "overflow",
            keras.optimizers.SGD(0.05),
            fits=1,
            plant_at=PLANT_AT,
            log="gradients",
            activations=False,
        ),
    }
    (out / "summary.json").write_text(json.dumps(summary))


if __name__ == "__main__":
    main()
