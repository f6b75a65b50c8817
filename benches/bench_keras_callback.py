"""What histoscope's Keras callback costs ``model.fit``, against Keras's own TensorBoard callback.

An MLP of about 2.4 M parameters (784-1024-1024-512-10) trains on random
data on the CPU, with XLA (``jit_compile=True``), 100 batches of 64 an
epoch. Each contender fits the same model once, for one warm-up epoch (which
traces and compiles the step; its time is printed apart) and ``--epochs``
measured ones, in its own process, so that the backend and its compilation
caches start alike; the figures are the medians of ``--repeats`` processes.

| contender | what is logged |
| --- | --- |
| plain | nothing: ``fit`` alone |
| TensorBoard | ``keras.callbacks.TensorBoard(histogram_freq=1)``: every weight, every epoch |
| histoscope every epoch | ``HistoscopeCallback(log="all", every=100)``: weights and gradients |
| histoscope every 10 | ``HistoscopeCallback(log="all", every=10)``: weights and gradients |
| histoscope every 10 + activations | the same, and every layer's output |

Overhead is a contender's epoch time over the plain one's, minus one; the CPU
time of the process (all its threads) is printed too, for the first epoch as
well, as it moves less than the wall time on a machine shared with other
work. Keras's TensorBoard callback logs weights only (its gradient histograms
were removed); histoscope logs gradients too, from inside the compiled step.

    KERAS_BACKEND=tensorflow python benches/bench_keras_callback.py [--epochs 3] [--repeats 3]
    KERAS_BACKEND=jax python benches/bench_keras_callback.py
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

CONTENDERS = (
    "plain",
    "TensorBoard",
    "histoscope every epoch",
    "histoscope every 10",
    "histoscope every 10 + activations",
)
BATCHES, BATCH = 100, 64


def fit_once(contender: str, epochs: int) -> tuple[float, float, float, float]:
    """Wall and CPU seconds per epoch of the last ``epochs`` epochs of one ``fit``, and the
    wall and CPU seconds of its first epoch (which traces and compiles the step), in this
    process."""
    import keras
    import numpy as np

    from histoscope.integrations.keras import HistoscopeCallback

    class Clock(keras.callbacks.Callback):
        """Put last: an epoch's end is read after every other callback's work for it."""

        def on_train_begin(self, logs: dict | None = None) -> None:
            self.marks = [(time.perf_counter(), time.process_time())]

        def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
            self.marks.append((time.perf_counter(), time.process_time()))

    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.Input((784,))]
        + [keras.layers.Dense(n, activation="relu") for n in (1024, 1024, 512)]
        + [keras.layers.Dense(10)]
    )
    model.compile(
        keras.optimizers.Adam(1e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=True,
    )
    rng = np.random.default_rng(0)
    x = rng.normal(size=(BATCHES * BATCH, 784)).astype("float32")
    y = rng.integers(0, 10, BATCHES * BATCH)
    logs = tempfile.mkdtemp()
    callbacks: list = []
    if contender == "TensorBoard":
        callbacks = [keras.callbacks.TensorBoard(log_dir=logs, histogram_freq=1)]
    elif contender.startswith("histoscope"):
        import histoscope as hs

        run = hs.init("bench", logdir=logs)
        every = BATCHES if contender == "histoscope every epoch" else 10
        activations = contender.endswith("activations")
        callbacks = [HistoscopeCallback(run, log="all", every=every, activations=activations)]
    clock = Clock()
    model.fit(x, y, epochs=1 + epochs, batch_size=BATCH, verbose=0, callbacks=[*callbacks, clock])
    (start, start_cpu), (warm, warm_cpu), (end, end_cpu) = (
        clock.marks[0],
        clock.marks[1],
        clock.marks[-1],
    )
    if contender.startswith("histoscope"):
        callbacks[0].run.finish()
    return (end - warm) / epochs, (end_cpu - warm_cpu) / epochs, warm - start, warm_cpu - start_cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--contender", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.contender:
        print(json.dumps(fit_once(args.contender, args.epochs)))
        return
    backend = os.environ.get("KERAS_BACKEND", "tensorflow")
    env = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3"}
    times: dict[str, list[tuple[float, float, float, float]]] = {name: [] for name in CONTENDERS}
    for _ in range(args.repeats):
        for name in CONTENDERS:
            command = [sys.executable, "-X", "faulthandler", __file__, "--contender", name]
            command += ["--epochs", str(args.epochs)]
            done = subprocess.run(command, env=env, capture_output=True, text=True)
            if done.returncode != 0:
                raise SystemExit(f"{name} failed ({done.returncode}):\n{done.stderr[-3000:]}")
            times[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(
        f"Keras {backend} backend, XLA, {BATCHES} batches of {BATCH} an epoch, "
        f"median of {args.repeats} processes"
    )
    plain = [statistics.median(t[i] for t in times["plain"]) for i in (0, 1)]
    header = f"{'contender':<36}{'s / epoch':>10}{'overhead':>10}{'CPU s':>8}{'overhead':>10}"
    print(f"{header}{'first epoch s':>15}{'CPU s':>8}")
    for name in CONTENDERS:
        wall, cpu, first, first_cpu = (
            statistics.median(t[i] for t in times[name]) for i in range(4)
        )
        print(
            f"{name:<36}{wall:>10.2f}{100 * (wall / plain[0] - 1):>9.1f}%"
            f"{cpu:>8.2f}{100 * (cpu / plain[1] - 1):>9.1f}%{first:>15.2f}{first_cpu:>8.2f}"
        )


if __name__ == "__main__":
    main()
