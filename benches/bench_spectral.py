"""What spectral capture costs, and how its figures compare with WeightWatcher's own.

Three small models train on random data on the CPU: the demo's perceptron (2-256-256-3),
a CNN (two 3x3 convolutions, two dense layers) and a two-layer transformer encoder
(width 128). For each:

- **cost**: the mean training step with ``run.watch(model, log="all", every=1)``, and with
  ``spectral=True, spectral_every=1`` added; the difference is what the spectra of every
  weight matrix cost a step at which they are logged (``spectral_every=N`` divides it by
  N). Steps alternate between the two watches, block after block, and the median block
  is printed, in CPU time of the process (its threads included).
- **against WeightWatcher** (where ``weightwatcher`` is installed): after the steps,
  ``WeightWatcher(model).analyze()`` against ``histoscope.spectrum`` of the same layers,
  each timed at its second call,
  (WeightWatcher's layers, by module name: it skips those of fewer than 8 eigenvalues),
  the time of each and the largest differences of α and stable rank.

    python benches/bench_spectral.py [--blocks 5] [--steps 10]

Targets (issue 31): α within 0.05 and stable rank within 1 % of WeightWatcher's on every
layer. Logs go to a temporary folder that is removed at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

import histoscope as hs


def mlp() -> tuple[nn.Module, tuple[int, ...]]:
    layers = [nn.Linear(2, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 3)]
    return nn.Sequential(*layers), (128, 2)


def cnn() -> tuple[nn.Module, tuple[int, ...]]:
    layers = [nn.Conv2d(3, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3), nn.ReLU(), nn.Flatten()]
    layers += [nn.Linear(64 * 12 * 12, 256), nn.ReLU(), nn.Linear(256, 10)]
    return nn.Sequential(*layers), (32, 3, 16, 16)


def transformer() -> tuple[nn.Module, tuple[int, ...]]:
    layer = nn.TransformerEncoderLayer(128, 4, 256, batch_first=True)
    encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    return nn.Sequential(encoder, nn.Linear(128, 16)), (16, 20, 128)


MODELS: dict[str, Callable[[], tuple[nn.Module, tuple[int, ...]]]] = {
    "mlp": mlp,
    "cnn": cnn,
    "transformer": transformer,
}


def step_of(model: nn.Module, shape: tuple[int, ...]) -> Callable[[], None]:
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    def step() -> None:
        out = model(torch.randn(*shape))
        loss = out.pow(2).mean() + (out.flatten(1)[:, :1] - 1).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()

    return step


def timed(step: Callable[[], None], steps: int) -> float:
    """The CPU time of this process (all its threads) per step: on a machine shared with
    other work it moves far less than the wall time."""
    start = time.process_time()
    for _ in range(steps):
        step()
    return (time.process_time() - start) / steps


def cost(name: str, blocks: int, steps: int, folder: str) -> None:
    model, shape = MODELS[name]()
    step = step_of(model, shape)
    step()  # warm up
    means: dict[bool, list[float]] = {False: [], True: []}
    with hs.init("bench", run_name=name, logdir=folder) as run:
        for _ in range(blocks):
            for spectral in (False, True):
                watch = run.watch(model, log="all", every=1, spectral=spectral, spectral_every=1)
                means[spectral].append(timed(step, steps))
                run.flush()
                watch.remove()
    plain, spectral = statistics.median(means[False]), statistics.median(means[True])
    weights = sum(1 for p in model.parameters() if p.dim() >= 2)
    print(
        f"{name}: a step watched {plain * 1e3:.2f} ms of CPU, with spectra "
        f"{spectral * 1e3:.2f} ms: {(spectral - plain) * 1e3:.2f} ms for the spectra of "
        f"{weights} weight matrices"
    )


def against_weightwatcher(name: str) -> bool | None:
    try:
        import weightwatcher
    except ImportError:
        print(f"{name}: weightwatcher is not installed; pip install weightwatcher to compare")
        return None
    logging.disable(logging.WARNING)
    model, shape = MODELS[name]()
    step = step_of(model, shape)
    for _ in range(50):
        step()

    def analyze() -> Any:
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return weightwatcher.WeightWatcher(model=model).analyze()

    analyze()  # both timed warm: their second call
    start = time.perf_counter()
    details = analyze()
    theirs = time.perf_counter() - start
    # WeightWatcher's layers by their full module names (it skips those of fewer than 8
    # eigenvalues); the time is histoscope's for every Linear and Conv2d all the same.
    modules = {n: m for n, m in model.named_modules() if isinstance(m, (nn.Linear, nn.Conv2d))}
    ours = {n: hs.spectrum(m.weight) for n, m in modules.items()}
    start = time.perf_counter()
    ours = {n: hs.spectrum(m.weight) for n, m in modules.items()}
    took = time.perf_counter() - start
    rows = [row for _, row in details.iterrows()]
    pairs = [(row, ours[row["longname"]]) for row in rows]
    alpha = max(abs(row["alpha"] - s.alpha) for row, s in pairs)
    rank = max(abs(row["stable_rank"] / s.stable_rank - 1) for row, s in pairs)
    ok = alpha <= 0.05 and rank <= 0.01
    print(
        f"{name}: {len(rows)} layers; WeightWatcher analyze() {theirs:.3f} s, histoscope "
        f"{took:.3f} s ({theirs / took:.1f}x); largest |Δα| {alpha:.1e}, largest stable rank "
        f"difference {rank:.1e}: {'PASS' if ok else 'FAIL'}"
    )
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--blocks", type=int, default=5)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as folder:
        for name in MODELS:
            cost(name, args.blocks, args.steps, folder)
    for name in MODELS:
        against_weightwatcher(name)


if __name__ == "__main__":
    main()
