"""How long logging a histogram holds up the training loop.

Times, in the caller's thread, ``Run.add_histogram`` of a 16M-value float32
tensor (and a NumPy array) against PyTorch's ``SummaryWriter.add_histogram``
of the same tensor, which bins it with NumPy before returning. Between two
timed calls the background thread is let finish, as the training step
between two logging calls would; how long it took is printed too.

    python benches/bench_logging.py [--values 16000000] [--repeat 5]

Target (issue 3): at least 20x less time in the caller's thread than PyTorch.
Logs go to a temporary folder that is removed at the end.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable

import torch
from torch.utils.tensorboard import SummaryWriter

import histoscope as hs


def best_of(repeat: int, call: Callable[[int], None], between: Callable[[], None]) -> float:
    """The fastest of ``repeat`` calls; ``between`` runs untimed after each, as
    the training step between two logging calls would."""
    times = []
    for step in range(repeat):
        start = time.perf_counter()
        call(step)
        times.append(time.perf_counter() - start)
        between()
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--values", type=int, default=16_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    tensor = torch.randn(args.values, dtype=torch.float32)
    array = tensor.numpy().copy()
    with tempfile.TemporaryDirectory(prefix="histoscope-bench-log-") as tmp:
        run = hs.init("bench", run_name="histoscope", logdir=tmp)
        drains: list[float] = []

        def drain() -> None:
            start = time.perf_counter()
            run.flush()
            drains.append(time.perf_counter() - start)

        ours_tensor = best_of(args.repeat, lambda s: run.add_histogram("t", tensor, step=s), drain)
        ours_array = best_of(args.repeat, lambda s: run.add_histogram("a", array, step=s), drain)
        run.finish()

        writer = SummaryWriter(f"{tmp}/torch")
        theirs = best_of(
            args.repeat, lambda s: writer.add_histogram("t", tensor, global_step=s), writer.flush
        )
        writer.close()

    ratio = theirs / ours_tensor
    print(f"{args.values:,} float32 values, best of {args.repeat}, time in the caller's thread:")
    print(f"  histoscope Run.add_histogram (torch tensor)   {ours_tensor * 1e3:9.2f} ms")
    print(f"  histoscope Run.add_histogram (NumPy array)    {ours_array * 1e3:9.2f} ms")
    print(f"  torch SummaryWriter.add_histogram             {theirs * 1e3:9.2f} ms")
    print(f"  then, in histoscope's background thread: {min(drains) * 1e3:.1f} ms to bin and write")
    print(f"ratio: {ratio:.1f}x less time in the caller's thread")
    print(f"{'PASS' if ratio >= 20 else 'FAIL'}  add_histogram >= 20x less than SummaryWriter")


if __name__ == "__main__":
    main()
