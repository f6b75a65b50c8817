"""Trains a small Keras 3 model with histoscope's callback, in a process of its own.

Keras picks its backend once, from KERAS_BACKEND, when it is first imported,
so tests/test_keras.py runs this script once per backend:

    KERAS_BACKEND=jax python tests/keras_training.py OUT_DIR

It writes three runs under OUT_DIR/logs: ``healthy`` (a regression that
learns), ``broken`` (the same, with NaN in the data from the third batch of
each epoch on) and ``stopped`` (``broken`` with ``stop_on=("nonfinite",)``),
and OUT_DIR/weights.npz: every weight before and after each logged step of
the healthy run, read by a callback of the test's own, so that the
test can compare the logged parameters with NumPy's histogram of the same
arrays and the logged gradients with the updates SGD made from them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import keras
import numpy as np

import histoscope as hs
from histoscope.integrations.keras import HistoscopeCallback

EVERY = 2
BINS = 32
LEARNING_RATE = 0.05
BATCH = 16


class WeightsAround(keras.callbacks.Callback):
    """Every weight before and after each logged step, as NumPy arrays."""

    def __init__(self) -> None:
        super().__init__()
        self.arrays: dict[str, np.ndarray] = {}
        self.step = -1

    def on_train_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        self.step = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))
        if self.step % EVERY == 0:
            self._save("before")

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        if self.step % EVERY == 0:
            self._save("after")

    def _save(self, when: str) -> None:
        for variable in self.model.weights:
            name = variable.path.removeprefix(f"{self.model.name}/")
            value = keras.ops.convert_to_numpy(variable.value)
            self.arrays[f"{when}|{self.step}|{name}"] = value


def model() -> keras.Model:
    keras.utils.set_random_seed(1)
    built = keras.Sequential(
        [
            keras.Input((6,)),
            keras.layers.Dense(16, activation="relu", name="hidden"),
            keras.layers.Dense(3, name="out"),
        ]
    )
    # jit_compile=True where the backend compiles (XLA on TensorFlow and JAX).
    jit = keras.backend.backend() != "torch"
    built.compile(keras.optimizers.SGD(LEARNING_RATE), loss="mse", jit_compile=jit)
    return built


def data(broken: bool) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(128, 6)).astype("float32")
    y = np.stack([x[:, 0] - x[:, 1], x[:, 2] * 0.5, x[:, 3] + x[:, 4]], axis=1)
    if broken:
        x[40:] = np.nan  # from the third batch of every epoch on: NaN loss, gradients, weights
    return x, y.astype("float32")


class Batches(keras.callbacks.Callback):
    """How many batches ``fit`` ran."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        self.count += 1


def train(out: Path, name: str, broken: bool, stop_on: tuple[str, ...] | None = None) -> dict:
    run = hs.init("keras", run_name=name, logdir=out / "logs")
    fitted = model()
    weights = WeightsAround()
    batches = Batches()
    x, y = data(broken)
    history = fitted.fit(
        x,
        y,
        batch_size=BATCH,
        epochs=4,
        shuffle=False,
        verbose=0,
        validation_data=(x[:32], y[:32]),
        callbacks=[
            weights,
            batches,
            HistoscopeCallback(
                run, log="all", every=EVERY, bins=BINS, activations=True, stop_on=stop_on
            ),
        ],
    )
    run.finish()
    if not broken:
        np.savez(out / "weights.npz", **weights.arrays)
    return {
        "path": str(run.path),
        "loss": [float(v) for v in history.history["loss"]],
        "jit_compile": bool(fitted.jit_compile),
        "batches": batches.count,
    }


def main() -> None:
    out = Path(sys.argv[1])
    summary = {
        "backend": keras.backend.backend(),
        "healthy": train(out, "healthy", broken=False),
        "broken": train(out, "broken", broken=True),
        "stopped": train(out, "stopped", broken=True, stop_on=("nonfinite",)),
    }
    (out / "summary.json").write_text(json.dumps(summary))


if __name__ == "__main__":
    main()
