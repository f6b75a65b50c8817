"""``histoscope demo``: train a small network in pure NumPy, log its histograms, chart them.

Two runs of a two-layer perceptron (ReLU hidden layer, softmax output) learn
to tell the arms of a synthetic spiral apart, one with a learning rate ten
times the other's. Every few steps each run logs its weights, its gradients
and its hidden activations with `Run.add_histogram`; then the histograms are
read back with `read_tensorboard_histograms` and saved as accessible chart
pages, with an index page linking them.
"""

from __future__ import annotations

import html
import re
import shutil
import sys
from pathlib import Path
from typing import TextIO

import numpy as np

__all__ = ["run_demo"]

_PROJECT = "demo"
_RUNS = {"lr-0.3": 0.3, "lr-0.03": 0.03}
_CLASSES, _HIDDEN, _BATCH, _EVERY = 3, 64, 128, 5


def run_demo(out: str | Path, *, steps: int = 300, stream: TextIO = sys.stdout) -> Path:
    """Trains, logs and charts the demo under ``out``; returns the log directory.

    The log directory is ``out/logs/demo`` (replaced on each call), the chart
    pages ``out/charts``.
    """
    import histoscope

    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    out = Path(out)
    logdir = out / "logs" / _PROJECT
    if logdir.exists():
        shutil.rmtree(logdir)
    inputs, labels = _spiral(np.random.default_rng(0))
    for name, learning_rate in _RUNS.items():
        with histoscope.init(_PROJECT, run_name=name, dir=out / "logs") as run:
            loss = _train(run, inputs, labels, learning_rate, steps, np.random.default_rng(1))
        print(f"trained {name}: {steps} steps, final loss {loss:.3f}", file=stream)
    charts = histoscope.read_tensorboard_histograms(logdir)
    pages = _save_charts(charts, out / "charts")
    print(f"logged histograms under {logdir}", file=stream)
    print(f"saved {len(pages) - 1} accessible chart pages; open {pages[0]}", file=stream)
    print(f"watch them with: histoscope view {logdir}", file=stream)
    return logdir


def _spiral(rng: np.random.Generator, per_class: int = 400) -> tuple[np.ndarray, np.ndarray]:
    """Points on three noisy spiral arms in the plane, labelled by arm."""
    radius = np.tile(np.linspace(0.05, 1.0, per_class), _CLASSES)
    labels = np.repeat(np.arange(_CLASSES), per_class)
    angle = labels * (2 * np.pi / _CLASSES) + radius * 4.0 + rng.normal(0, 0.2, radius.size)
    inputs = np.column_stack([radius * np.sin(angle), radius * np.cos(angle)])
    return inputs, labels


def _train(run, inputs, labels, learning_rate, steps, rng) -> float:
    """Minibatch gradient descent on the cross-entropy; logs every `_EVERY` steps."""
    w1 = rng.normal(0, 1.0, (2, _HIDDEN))
    b1 = np.zeros(_HIDDEN)
    w2 = rng.normal(0, 1.0 / np.sqrt(_HIDDEN), (_HIDDEN, _CLASSES))
    b2 = np.zeros(_CLASSES)
    loss = float("nan")
    for step in range(steps):
        batch = rng.choice(len(inputs), _BATCH, replace=False)
        x, y = inputs[batch], labels[batch]
        hidden = np.maximum(x @ w1 + b1, 0.0)
        logits = hidden @ w2 + b2
        shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
        probabilities = shifted / shifted.sum(axis=1, keepdims=True)
        loss = float(-np.log(probabilities[np.arange(_BATCH), y]).mean())
        delta = probabilities
        delta[np.arange(_BATCH), y] -= 1.0
        delta /= _BATCH
        grad_w2, grad_b2 = hidden.T @ delta, delta.sum(axis=0)
        back = (delta @ w2.T) * (hidden > 0)
        grad_w1, grad_b1 = x.T @ back, back.sum(axis=0)
        if step % _EVERY == 0 or step == steps - 1:
            _log(run, step, loss, w1, w2, grad_w1, grad_w2, hidden, logits)
        w1 -= learning_rate * grad_w1
        b1 -= learning_rate * grad_b1
        w2 -= learning_rate * grad_w2
        b2 -= learning_rate * grad_b2
    return loss


def _log(run, step, loss, w1, w2, grad_w1, grad_w2, hidden, logits) -> None:
    run.add_histogram("weights/hidden", w1, step=step)
    run.add_histogram("weights/output", w2, step=step)
    run.add_histogram("gradients/hidden", grad_w1, step=step)
    run.add_histogram("gradients/output", grad_w2, step=step)
    run.add_histogram("activations/hidden", hidden, step=step)
    run.add_histogram("activations/logits", logits, step=step)
    run.log({"loss": loss}, step=step)


def _save_charts(charts, folder: Path) -> list[Path]:
    """One page per chart and an index linking them (first in the list returned)."""
    import histoscope

    folder.mkdir(parents=True, exist_ok=True)
    pages = []
    for chart in charts:
        name = re.sub(r"[^A-Za-z0-9.-]+", "_", f"{chart.tag}__{chart.run}") + ".html"
        pages.append(histoscope.save_html(chart, folder / name))
    items = "\n".join(
        f'<li><a href="{html.escape(page.name)}">{html.escape(c.tag)} ({html.escape(c.run)})</a>'
        f"</li>"
        for c, page in zip(charts, pages)
    )
    index = folder / "index.html"
    index.write_text(
        '<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8">'
        "<title>histoscope demo</title></head>\n<body>\n<main>\n<h1>histoscope demo</h1>\n"
        "<p>Histograms of a two-layer network learning a spiral, one page per histogram "
        "and run. Each chart can be explored with the keyboard, by speech, sound and "
        f"braille.</p>\n<ul>\n{items}\n</ul>\n</main>\n</body>\n</html>\n",
        encoding="utf-8",
    )
    return [index, *pages]
