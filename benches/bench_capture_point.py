"""What capturing at the optimizer's step costs, against the capture at ``backward()`` it replaced.

Issue 41 moved a watch's gradient capture from the end of the backward pass into
torch's optimizer-step pre-hook (`histoscope.write.optimizer_steps`), with a
gradient pre-hook on one sentinel parameter to tell accumulation from a new step.
The capture at ``backward()`` still runs where no optimizer steps the model, so
both are timed in one process on the same CNN as ``bench_watch.py``, the same
update written two ways:

| contender | what runs |
| --- | --- |
| optimizer, plain | ``torch.optim.SGD`` steps the model, no watch |
| optimizer, watched | the same, ``run.watch(model, log="all", every=k)``: captured at the step |
| by hand, plain | ``p -= lr * p.grad`` under ``no_grad``, no watch |
| by hand, watched | the same, watched: captured as each backward pass ends |

Blocks take turns in order; each watched contender's cost is its mean step time
minus its plain twin's in the same block, and the median over blocks is printed
with their ratio (target: at most 1, no dearer than the capture it replaced).

    python benches/bench_capture_point.py [--blocks 4] [--steps 6] [--every 1]

Logs go to a temporary folder that is removed at the end.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import torch
from bench_watch import cnn

import histoscope as hs

CONTENDERS = ("optimizer, plain", "optimizer, watched", "by hand, plain", "by hand, watched")
LEARNING_RATE = 1e-3


class Bench:
    def __init__(self, tmp: str, batch: int) -> None:
        self.model = cnn()
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=LEARNING_RATE)
        generator = torch.Generator().manual_seed(0)
        self.x = torch.randn(batch, 3, 32, 32, generator=generator)
        self.y = torch.randint(0, 10, (batch,), generator=generator)
        self.run = hs.init("bench", run_name="capture_point", logdir=tmp, alerts="off")
        self.logged = 0

    def step(self, by_hand: bool) -> None:
        loss = torch.nn.functional.cross_entropy(self.model(self.x), self.y)
        loss.backward()
        if by_hand:
            with torch.no_grad():
                for p in self.model.parameters():
                    p.add_(p.grad, alpha=-LEARNING_RATE)
                    p.grad = None
        else:
            self.optimizer.step()
            self.optimizer.zero_grad()

    def time_block(self, contender: str, steps: int, every: int) -> float:
        by_hand = contender.startswith("by hand")
        watch = (
            self.run.watch(self.model, log="all", every=every) if "watched" in contender else None
        )
        self.step(by_hand)  # a watch learns its capture point here; not timed
        start = time.perf_counter()
        for _ in range(steps):
            self.step(by_hand)
        elapsed = (time.perf_counter() - start) / steps
        if watch is not None:
            expected = "backward" if by_hand else "optimizer"
            assert watch.capture_point == expected, (contender, watch.capture_point)
            self.run.unwatch(self.model)
            self.run.flush()
        return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=4)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--every", type=int, default=1)
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        bench = Bench(tmp, args.batch)
        costs: dict[str, list[float]] = {"optimizer": [], "backward": []}
        for b in range(args.blocks):
            shift = b % len(CONTENDERS)
            order = CONTENDERS[shift:] + CONTENDERS[:shift]
            block = {c: bench.time_block(c, args.steps, args.every) for c in order}
            costs["optimizer"].append(block["optimizer, watched"] - block["optimizer, plain"])
            costs["backward"].append(block["by hand, watched"] - block["by hand, plain"])
            print(
                f"  block {b + 1}/{args.blocks}: "
                + ", ".join(f"{c} {block[c] * 1e3:.0f} ms" for c in CONTENDERS)
            )
        bench.run.finish()
    at_step = statistics.median(costs["optimizer"])
    at_backward = statistics.median(costs["backward"])
    print(f"\nwatch cost per step, logging every {args.every} (median of {args.blocks} blocks):")
    print(f"  captured at the optimizer's step: {at_step * 1e3:6.1f} ms")
    print(f"  captured at backward():           {at_backward * 1e3:6.1f} ms")
    ratio = at_step / at_backward if at_backward > 0 else float("nan")
    verdict = "PASS" if ratio <= 1.1 else "FAIL"
    print(
        f"  ratio {ratio:.2f} (target <= 1, within the 10 % this machine's noise allows): {verdict}"
    )


if __name__ == "__main__":
    main()
