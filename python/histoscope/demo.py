"""``histoscope demo``: train a real network, log its histograms, write the offline report.

Two runs of a three-layer perceptron (256 ReLU units a layer) learn to tell
the arms of a synthetic spiral apart, one with a learning rate ten times the
other's, so their distributions visibly move apart. With PyTorch installed
the model is a ``torch.nn.Sequential`` logged by ``run.watch`` (parameters,
gradients and activations of every layer, and with ``--spectral`` the spectrum
of every weight matrix); without it, the same network is trained in NumPy and
logged with ``run.add_histogram`` (and ``run.log_spectrum``). Then the whole log
directory is written as one offline report, and the commands to open it and
to start the viewer are printed.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any, TextIO

import numpy as np

_PROJECT = "demo"
_RUNS = {"lr-0.3": 0.3, "lr-0.03": 0.03}
_CLASSES, _HIDDEN, _BATCH, _EVERY = 3, 256, 128, 5


def run_demo(
    out: str | Path, *, steps: int = 300, spectral: bool = False, stream: TextIO = sys.stdout
) -> Path:
    """Trains and logs the demo under ``out``, writes its report; returns the log directory.
    With ``spectral``, every weight matrix's spectrum is logged too (`Run.watch`'s
    ``spectral=True``; ``histoscope demo --spectral``).

    The log directory is ``out/logs/demo`` (replaced on each call), the report
    ``out/report.html``.

    Example:
        >>> from histoscope.demo import run_demo
        >>> run_demo("histoscope-demo", steps=100)  # doctest: +SKIP
        PosixPath('histoscope-demo/logs/demo')
    """
    import histoscope
    from histoscope.view.report import write_report

    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a whole number of at least 1, got {steps!r}")
    out = Path(out)
    logdir = out / "logs" / _PROJECT
    if logdir.exists():
        shutil.rmtree(logdir)
    inputs, labels = _spiral(np.random.default_rng(0))
    train = _train_torch if _has_torch() else _train_numpy
    for name, learning_rate in _RUNS.items():
        with histoscope.init(_PROJECT, run_name=name, logdir=out / "logs") as run:
            loss = train(run, inputs, labels, learning_rate, steps, spectral)
        print(f"trained {name}: {steps} steps, final loss {loss:.3f}", file=stream)
    print(f"logged histograms under {logdir}", file=stream)
    report = write_report(logdir, out / "report.html")
    print(
        f"wrote the report {report}; open it in a browser: {report.resolve().as_uri()}", file=stream
    )
    print(f"or watch the log directory live with: histoscope view {logdir}", file=stream)
    return logdir


def _has_torch() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def _spiral(rng: np.random.Generator, per_class: int = 400) -> tuple[np.ndarray, np.ndarray]:
    """Points on three noisy spiral arms in the plane, labelled by arm."""
    radius = np.tile(np.linspace(0.05, 1.0, per_class), _CLASSES)
    labels = np.repeat(np.arange(_CLASSES), per_class)
    angle = labels * (2 * np.pi / _CLASSES) + radius * 4.0 + rng.normal(0, 0.2, radius.size)
    inputs = np.column_stack([radius * np.sin(angle), radius * np.cos(angle)])
    return inputs, labels


def _train_torch(
    run: Any, inputs: np.ndarray, labels: np.ndarray, rate: float, steps: int, spectral: bool
) -> float:
    """Minibatch SGD on the cross-entropy, every layer watched every `_EVERY` steps."""
    import torch

    torch.manual_seed(1)
    model = torch.nn.Sequential(
        torch.nn.Linear(2, _HIDDEN),
        torch.nn.ReLU(),
        torch.nn.Linear(_HIDDEN, _HIDDEN),
        torch.nn.ReLU(),
        torch.nn.Linear(_HIDDEN, _CLASSES),
    )
    run.watch(model, log="all", every=_EVERY, activations=True, spectral=spectral)
    optimizer = torch.optim.SGD(model.parameters(), lr=rate)
    x_all = torch.tensor(inputs, dtype=torch.float32)
    y_all = torch.tensor(labels)
    generator = torch.Generator().manual_seed(2)
    loss = torch.tensor(float("nan"))
    for step in range(steps):
        batch = torch.randperm(len(x_all), generator=generator)[:_BATCH]
        loss = torch.nn.functional.cross_entropy(model(x_all[batch]), y_all[batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % _EVERY == 0:
            run.log({"loss": loss.item()}, step=step)
    return loss.item()


def _train_numpy(
    run: Any, inputs: np.ndarray, labels: np.ndarray, rate: float, steps: int, spectral: bool
) -> float:
    """The same network and loss in NumPy, logged with `add_histogram` every `_EVERY` steps."""
    rng = np.random.default_rng(1)
    sizes = [2, _HIDDEN, _HIDDEN, _CLASSES]
    weights = [rng.normal(0, np.sqrt(2 / a), (a, b)) for a, b in zip(sizes, sizes[1:])]
    biases = [np.zeros(b) for b in sizes[1:]]
    loss = float("nan")
    for step in range(steps):
        batch = rng.choice(len(inputs), _BATCH, replace=False)
        layers = [inputs[batch]]
        for i, (w, b) in enumerate(zip(weights, biases)):
            z = layers[-1] @ w + b
            layers.append(np.maximum(z, 0.0) if i < len(weights) - 1 else z)
        shifted = np.exp(layers[-1] - layers[-1].max(axis=1, keepdims=True))
        probabilities = shifted / shifted.sum(axis=1, keepdims=True)
        y = labels[batch]
        loss = float(-np.log(probabilities[np.arange(_BATCH), y]).mean())
        delta = probabilities
        delta[np.arange(_BATCH), y] -= 1.0
        delta /= _BATCH
        grads = []
        for i in reversed(range(len(weights))):
            grads.append((layers[i].T @ delta, delta.sum(axis=0)))
            delta = (delta @ weights[i].T) * (layers[i] > 0)
        grads.reverse()
        if step % _EVERY == 0:
            for i, (w, (gw, _)) in enumerate(zip(weights, grads)):
                run.add_histogram(f"parameters/{2 * i}.weight", w, step=step)
                run.add_histogram(f"gradients/{2 * i}.weight", gw, step=step)
                run.add_histogram(f"activations/{2 * i}", layers[i + 1], step=step)
                if spectral:
                    run.log_spectrum(f"{2 * i}.weight", w, step=step)
            run.log({"loss": loss}, step=step)
        for w, b, (gw, gb) in zip(weights, biases, grads):
            w -= rate * gw
            b -= rate * gb
    return loss
