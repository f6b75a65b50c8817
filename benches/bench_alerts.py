"""What diagnosing a run while it trains costs, against not doing it and against `check` after.

Two measures, in one process:

1. **The writer's work**, where the live diagnosis runs. ``keys`` histograms
   a step (a 64-bin histogram each, as `watch` writes them) go to one
   `_core.EventFileWriter` with the live diagnosis and to one without, step
   by step, for ``steps`` steps, interleaved; each step ends with the
   writer's ``settle`` (what the writer thread does once it has caught up).
   Printed: the diagnosis's share per step, at the start and at the end
   (the rules read every profile of the run so far, so the cost grows with
   the steps logged), and in total, against one `histoscope check` of the
   whole file at the end (``check`` ratio). Four fifths in, the first key's
   values grow ten thousand times and stay there: judged at every step, the
   rules say so at that very step; printed is how many steps later the alert
   came (``alert delay``), past the judging budget by then.

2. **A training step**: a 100-layer MLP (64 wide) trained on the CPU with
   ``run.watch(model, log="all", every=1)``, ``alerts="warn"`` against
   ``alerts="off"``: two trainings, each in a run kept open, in interleaved
   blocks of ``train-steps`` steps, the ratio of their mean step times per
   block. A run's first steps are judged at every step (the first
   allowance, 100 ms of judging): the first quarter of the blocks is printed
   as the runs' start, and the target is held against the median of the
   rest, the steady state of a training that runs for minutes or hours. The
   diagnosis runs on the writer thread, so this is what it costs the loop on
   a machine with a core to spare for it (and with none).

    python benches/bench_alerts.py [--keys 500] [--steps 1000] [--blocks 16] [--train-steps 40]

Target (issue 28): live diagnosis costs at most 1 % of a watched training step, against
``alerts="off"`` in the same run; and the writer's total work no
more than a few `check`s of the file. Logs go to a temporary folder.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

import histoscope as hs
from histoscope import _core

BINS = 64


def step_batch(rng: np.random.Generator, keys: int, step: int, onset: int) -> _core.BinnedBatch:
    scale = 0.01 * (1.0 + 0.001 * step)
    values = [rng.normal(0.0, scale, 256) for _ in range(keys)]
    if step >= onset:
        values[0] *= 1e4  # the first layer's gradients explode, and stay up
    return _core.bin_batch(values, BINS)


def writer_work(keys: int, steps: int, folder: Path) -> dict[str, float]:
    rng = np.random.default_rng(0)
    tags = [f"gradients/layer{i}.weight" for i in range(keys)]
    plain = _core.EventFileWriter(str(folder / "plain"), 0.0, "bench")
    live = _core.EventFileWriter(str(folder / "live"), 0.0, "bench", diagnosed_as="live")
    spent = {"plain": [], "live": []}
    onset, alerted = steps * 4 // 5, None
    for step in range(steps):
        batch = step_batch(rng, keys, step, onset)
        for name, writer in (("plain", plain), ("live", live)):
            start = time.perf_counter()
            writer.write_batch(tags, step, float(step), batch)
            writer.write_scalar("loss", step, float(step), 1.0)
            writer.settle()
            spent[name].append(time.perf_counter() - start)
        exploding = [a.step for a in live.take_alerts() if a.finding.kind == "exploding"]
        alerted = alerted if alerted is not None or not exploding else exploding[0]
    for writer in (plain, live):
        writer.close()
    start = time.perf_counter()
    hs.diagnose(folder / "live")
    check = time.perf_counter() - start
    extra = [b - a for a, b in zip(spent["plain"], spent["live"])]
    tenth = max(1, steps // 10)
    return {
        "first_steps_ms": 1e3 * statistics.median(extra[:tenth]),
        "last_steps_ms": 1e3 * statistics.median(extra[-tenth:]),
        "write_ms": 1e3 * statistics.median(spent["plain"]),
        "total_s": sum(extra),
        "check_s": check,
        "alert_delay": float("nan") if alerted is None else alerted - onset,
    }


def mlp(layers: int = 100, width: int = 64):
    """A healthy deep network: residual blocks, so that no alert fires to be paid for."""
    import torch

    class Block(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = torch.nn.Linear(width, width)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + 0.1 * torch.tanh(self.linear(x))

    torch.manual_seed(0)
    return torch.nn.Sequential(*[Block() for _ in range(layers)])


class Training:
    """One 100-layer MLP trained under a watch, in a run of its own with ``alerts``,
    kept open from block to block so that it ages as a real training does."""

    def __init__(self, alerts: str, folder: Path) -> None:
        import torch

        self.model = mlp()
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=1e-3)
        self.x = torch.randn(64, 64)
        self.run = hs.init("bench", run_name=alerts, logdir=folder, alerts=alerts)
        self.run.watch(self.model, log="all", every=1)
        self.step = 0

    def block(self, steps: int) -> float:
        """The mean wall time of the next ``steps`` training steps."""
        start = time.perf_counter()
        for _ in range(steps):
            self.train_step()
        return (time.perf_counter() - start) / steps

    def train_step(self) -> None:
        """One step: forward, backward, the optimizer's step, the loss logged."""
        loss = self.model(self.x).pow(2).mean()
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad()
        self.run.log({"loss": loss.item()}, step=self.step)
        self.step += 1


def training_overheads(blocks: int, steps: int, folder: Path) -> list[float]:
    """Alerts on against off, block by block (the first block of each run included: its
    judging is the run's first allowance, every step judged), in interleaved order."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hs.HistoscopeAlert)
        trainings = {alerts: Training(alerts, folder) for alerts in ("off", "warn")}
        overheads = []
        for block in range(blocks):
            order = ("off", "warn") if block % 2 == 0 else ("warn", "off")
            times = {alerts: trainings[alerts].block(steps) for alerts in order}
            overheads.append(times["warn"] / times["off"] - 1.0)
            print(
                f"  block {block} (steps {block * steps} to {(block + 1) * steps - 1}): "
                f"off {1e3 * times['off']:.1f} ms/step, warn {1e3 * times['warn']:.1f} ms/step"
            )
        for training in trainings.values():
            training.run.finish()
    return overheads


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=500)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--blocks", type=int, default=16)
    parser.add_argument("--train-steps", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        work = writer_work(args.keys, args.steps, folder / "writer")
        alone = f"write alone {work['write_ms']:.2f} ms/step"
        print(f"writer, {args.keys} keys x {args.steps} steps ({alone}):")
        print(
            f"  live diagnosis per step: {work['first_steps_ms']:.2f} ms over the first tenth, "
            f"{work['last_steps_ms']:.2f} ms over the last"
        )
        print(
            f"  a key exploding at step {args.steps * 4 // 5}: alerted "
            f"{work['alert_delay']:.0f} steps later  (alert delay; 0: at its step)"
        )
        ratio = work["total_s"] / work["check_s"]
        print(
            f"  in total {work['total_s']:.2f} s, against check of the whole file "
            f"{work['check_s']:.3f} s: {ratio:.0f}x  (check ratio)"
        )
        overheads = training_overheads(args.blocks, args.train_steps, folder / "train")
        # The first quarter of the blocks is each run's start, judged at every step within
        # its first allowance: said apart from the steady state a long training is in.
        first = max(1, args.blocks // 4)
        start_cost = statistics.median(overheads[:first])
        print(f"  the runs' start (blocks 0 to {first - 1}): {100 * start_cost:+.1f} %")
        overheads = overheads[first:]
        median = statistics.median(overheads)
        verdict = "PASS" if median <= 0.01 else "FAIL"
        print(
            f"training step, 100-layer MLP watched every step, past the runs' start: "
            f"alerts on vs off {100 * median:+.1f} %  (target <= 1 %: {verdict})"
        )


if __name__ == "__main__":
    main()
