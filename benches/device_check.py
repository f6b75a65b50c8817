"""The GPU check: binning on the device against torch.histc and the host, exactness, watch's cost.

Runs in one go on a CUDA machine, in well under five minutes, and prints one table:

- binning 1 M, 16 M and 256 M float32 values (and 16 M bfloat16) in ns per value:
  histoscope on the device (``Histogram(gpu_tensor)``), ``torch.histc`` on the
  device (over the finite values' range, counts copied back), and copying to the host and
  binning there with the core;
- whether the device's edges, counts, count, min and max equal the CPU core's
  for the same values, bit for bit (NaN and infinities included);
- what ``run.watch(model, log="all")`` adds to a training step of a
  ResNet-50-sized model (25.6 M parameters in 161 tensors, batch 32 of 224 x 224
  images), every step and every 10 steps, against ``wandb.watch(log="all")``
  offline when wandb is installed.

    python benches/device_check.py                  # on a CUDA machine
    python benches/device_check.py --device cpu     # the same code on the CPU, small sizes

Without CUDA it says so and exits with status 2, unless ``--device cpu``
asks for the dry run: the device path forced on CPU tensors, at sizes a CPU
runs in a minute, so that the script itself is known to work before a GPU
is at hand. Exits with status 1 if any binning is not exact.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

import histoscope as hs
from histoscope.write.device import bin_on_device

SIZES = {"cuda": [1 << 20, 1 << 24, 1 << 28], "cpu": [1 << 16, 1 << 18]}
STEPS = {"cuda": (20, 40, 3), "cpu": (2, 10, 1)}  # every step, every 10 steps, blocks
WIDTH = {"cuda": 1, "cpu": 8}  # the dry run's ResNet is 8 times narrower


def values(n: int, dtype: torch.dtype, device: str) -> torch.Tensor:
    """Normal values with a few NaN and infinities, made on the device."""
    generator = torch.Generator(device=device).manual_seed(n)
    x = torch.randn(n, generator=generator, device=device)
    x[:: max(1, n // 7)] = float("nan")
    x[1 :: max(1, n // 5)] = float("inf")
    return x.to(dtype)


def best_seconds(work: Callable[[], Any], device: str, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        sync(device)
        start = time.perf_counter()
        work()
        sync(device)
        best = min(best, time.perf_counter() - start)
    return best


def histc_with_its_range(x: torch.Tensor) -> torch.Tensor:
    """``torch.histc``'s counts over the finite values' range (it refuses NaN otherwise)."""
    finite = x.float()[torch.isfinite(x)]
    low, high = torch.aminmax(finite)
    return torch.histc(finite, bins=64, min=low.item(), max=high.item()).cpu()


def binned_on_the_host(x: torch.Tensor) -> hs.Histogram:
    """Copied to the host, then binned by the core."""
    return hs.Histogram(x.cpu(), bins=64)


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def binning_rows(device: str) -> tuple[list[list[str]], bool]:
    rows, exact_everywhere = [], True
    cases = [(n, torch.float32) for n in SIZES[device]]
    cases.append((SIZES[device][1], torch.bfloat16))
    for n, dtype in cases:
        x = values(n, dtype, device)
        ours = best_seconds(functools.partial(bin_on_device, [x], 64), device)
        histc = best_seconds(functools.partial(histc_with_its_range, x), device)
        host = best_seconds(functools.partial(binned_on_the_host, x), device)
        on_device = bin_on_device([x], 64)[0]
        on_host = binned_on_the_host(x)
        exact = (
            np.array_equal(on_device.edges, on_host.edges)
            and np.array_equal(on_device.counts, on_host.counts)
            and all(
                getattr(on_device.stats, s) == on_host.stats[s]
                for s in ("count", "min", "max", "nonfinite")
            )
        )
        exact_everywhere &= exact
        per = 1e9 / n
        rows.append(
            [
                f"bin {n / 2**20:g} Mi {str(dtype).removeprefix('torch.')} (ns/value)",
                f"{ours * per:.3f}",
                f"histc {histc * per:.3f}",
                f"host {host * per:.3f}",
                "exact" if exact else "DIFFERS",
            ]
        )
        del x
    return rows, exact_everywhere


def bottleneck(c_in: int, width: int, stride: int) -> torch.nn.Module:
    """ResNet's bottleneck block: 1x1, 3x3, 1x1 convolutions with batch norms, a shortcut."""

    class Block(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            c_out = 4 * width
            self.body = torch.nn.Sequential(
                torch.nn.Conv2d(c_in, width, 1, bias=False),
                torch.nn.BatchNorm2d(width),
                torch.nn.ReLU(),
                torch.nn.Conv2d(width, width, 3, stride, 1, bias=False),
                torch.nn.BatchNorm2d(width),
                torch.nn.ReLU(),
                torch.nn.Conv2d(width, c_out, 1, bias=False),
                torch.nn.BatchNorm2d(c_out),
            )
            self.shortcut: torch.nn.Module = torch.nn.Identity()
            if stride != 1 or c_in != c_out:
                self.shortcut = torch.nn.Sequential(
                    torch.nn.Conv2d(c_in, c_out, 1, stride, bias=False),
                    torch.nn.BatchNorm2d(c_out),
                )

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(self.body(x) + self.shortcut(x))

    return Block()


def resnet50_sized(narrower: int = 1) -> torch.nn.Module:
    """ResNet-50's shapes (3, 4, 6 and 3 bottlenecks): 25.6 M parameters in 161 tensors,
    or as many tensors ``narrower`` times narrower."""
    torch.manual_seed(0)
    stem = 64 // narrower
    layers: list[torch.nn.Module] = [
        torch.nn.Conv2d(3, stem, 7, 2, 3, bias=False),
        torch.nn.BatchNorm2d(stem),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(3, 2, 1),
    ]
    c_in = stem
    for blocks, width, stride in ((3, 64, 1), (4, 128, 2), (6, 256, 2), (3, 512, 2)):
        for b in range(blocks):
            layers.append(bottleneck(c_in, width // narrower, stride if b == 0 else 1))
            c_in = 4 * width // narrower
    layers += [torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(c_in, 1000)]
    return torch.nn.Sequential(*layers)


def watch_rows(device: str) -> list[list[str]]:
    model = resnet50_sized(WIDTH[device]).to(device)
    batch, side = (32, 224) if device == "cuda" else (2, 64)
    generator = torch.Generator(device=device).manual_seed(0)
    x = torch.randn(batch, 3, side, side, generator=generator, device=device)
    y = torch.randint(0, 1000, (batch,), generator=generator, device=device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)

    def step() -> None:
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
        optimizer.zero_grad()

    try:
        import wandb
    except ImportError:
        wandb = None
    contenders = ["plain", "histoscope"] + (["wandb"] if wandb is not None else [])
    every_step, every_ten, blocks = STEPS[device]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        run = hs.init("device_check", run_name="watch", logdir=tmp)
        if wandb is not None:
            os.environ["WANDB_SILENT"] = "true"
            wandb.init(project="device_check", mode="offline", dir=tmp)
        for _ in range(3):  # warm up: allocator, cuDNN's choices
            step()
        for every, steps in ((1, every_step), (10, every_ten)):
            times: dict[str, list[float]] = {c: [] for c in contenders}
            for _ in range(blocks):
                for contender in contenders:
                    if contender == "histoscope":
                        run.watch(model, log="all", every=every)
                    elif contender == "wandb":
                        wandb.watch(model, log="all", log_freq=every)
                    times[contender].append(best_per_step(step, steps, device))
                    if contender == "histoscope":
                        run.unwatch(model)
                    elif contender == "wandb":
                        wandb.unwatch(model)
            plain = statistics.median(times["plain"])
            cells = [f"watch every {every} (step {plain * 1e3:.1f} ms)"]
            for contender in contenders[1:]:
                overhead = statistics.median(times[contender]) / plain - 1
                cells.append(f"{contender} {overhead * 100:+.1f}%")
            cells += ["-"] * (5 - len(cells))
            rows.append(cells)
        run.finish()
        if wandb is not None:
            wandb.finish()
    return rows


def best_per_step(step: Callable[[], None], steps: int, device: str) -> float:
    sync(device)
    start = time.perf_counter()
    for _ in range(steps):
        step()
    sync(device)
    return (time.perf_counter() - start) / steps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    device = parser.parse_args().device
    if device == "cuda" and not torch.cuda.is_available():
        print(
            "device_check: no CUDA device here; run it on a CUDA machine, or pass "
            "--device cpu for a dry run of the same code on the CPU",
            file=sys.stderr,
        )
        return 2
    began = time.perf_counter()
    where = torch.cuda.get_device_name() if device == "cuda" else "CPU (dry run, small sizes)"
    if device == "cpu":
        # The dry run's watch bins its CPU tensors with the device kernel, as a GPU's would be.
        from histoscope.write import batched

        batched._bin_on_cpu = batched.bin_tensors_with_torch
    rows, exact = binning_rows(device)
    rows += watch_rows(device)
    header = ["what", "histoscope", "against", "against", "bit for bit"]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    print(f"histoscope {hs.__version__}, torch {torch.__version__}, {where}")
    for row in [header, ["-" * w for w in widths], *rows]:
        print("| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths)) + " |")
    print(f"{time.perf_counter() - began:.0f} s")
    return 0 if exact else 1


if __name__ == "__main__":
    sys.exit(main())
