"""What a logged step costs from binned values to the file: the core's batch against
`Histogram` objects and SummaryWriter (issue 27, item 6).

A model of many small layers (the case where a per-histogram cost shows) is
captured and written, block after block, interleaved:

| contender | what runs for one step of every parameter and gradient |
| --- | --- |
| batch | ``watch.capture()``: binned into a core batch, written by one core call |
| objects | the path before: ``bin_tensors`` (a `Histogram` each), ``run.log(dict)`` |
| SummaryWriter | ``add_histogram`` of each tensor (torch.utils.tensorboard) |

Each block times ``--steps`` steps of each contender until its writer has
flushed; the median per step over the blocks is printed, with the ratios to
``batch``. Logs go to a temporary folder removed at the end.

    python benches/bench_write_path.py [--layers 200] [--width 64] [--blocks 5] [--steps 20]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable

import torch

import histoscope as hs
from histoscope.write.batched import bin_tensors

CONTENDERS = ("batch", "objects", "SummaryWriter")


def model_of(layers: int, width: int) -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(*(torch.nn.Linear(width, width) for _ in range(layers)))


def contenders(
    tmp: str, model: torch.nn.Module
) -> tuple[dict[str, Callable[[int], None]], Callable[[], None]]:
    from torch.utils.tensorboard import SummaryWriter

    model(torch.randn(8, model[0].in_features)).sum().backward()
    named = [(f"parameters/{n}", p) for n, p in model.named_parameters()]
    named += [(f"gradients/{n}", p.grad) for n, p in model.named_parameters()]
    run_batch = hs.init("bench", run_name="batch", logdir=tmp)
    watch = run_batch.watch(model, log="all", every=1_000_000)
    run_objects = hs.init("bench", run_name="objects", logdir=tmp)
    writer = SummaryWriter(f"{tmp}/tb")

    def batch(step: int) -> None:
        watch.capture(step)
        run_batch.flush()

    def objects(step: int) -> None:
        histograms = bin_tensors([t for _, t in named], 64)
        run_objects.log({key: h for (key, _), h in zip(named, histograms)}, step=step)
        run_objects.flush()

    def summary_writer(step: int) -> None:
        for key, tensor in named:
            writer.add_histogram(key, tensor, step, bins=64)
        writer.flush()

    def close() -> None:
        run_batch.finish()
        run_objects.finish()
        writer.close()

    return {"batch": batch, "objects": objects, "SummaryWriter": summary_writer}, close


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=200)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--blocks", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    model = model_of(args.layers, args.width)
    keys = 4 * args.layers
    with tempfile.TemporaryDirectory() as tmp:
        runs, close = contenders(tmp, model)
        times: dict[str, list[float]] = {name: [] for name in CONTENDERS}
        step = 0
        for block in range(args.blocks):
            order = CONTENDERS[block % 3 :] + CONTENDERS[: block % 3]
            for name in order:
                start = time.perf_counter()
                for _ in range(args.steps):
                    runs[name](step)
                    step += 1
                times[name].append((time.perf_counter() - start) / args.steps)
        close()
    base = statistics.median(times["batch"])
    print(f"{keys} histograms a step ({args.layers} layers of {args.width}x{args.width})")
    print(f"{'contender':<14} {'ms/step':>8} {'us/histogram':>13} {'x batch':>8}")
    for name in CONTENDERS:
        median = statistics.median(times[name])
        print(f"{name:<14} {median * 1e3:8.2f} {median / keys * 1e6:13.1f} {median / base:8.2f}")


if __name__ == "__main__":
    main()
