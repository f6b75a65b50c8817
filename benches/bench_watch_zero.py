"""What a logged step costs under DeepSpeed ZeRO-3: histoscope's merge against gathering.

Two processes (a gloo group on the CPU, one core and one thread each) train an
MLP of about 8.4 M parameters under ZeRO-3 (DeepSpeed on its CPU accelerator,
torch's AdamW). Two ways to log every parameter and gradient at a step, each
timed alone between a step's ``engine.backward()`` and its ``engine.step()``
(best of ``--repeat``, rank 0's wall time, the ranks starting together):

| contender | what runs at a logged step |
| --- | --- |
| histoscope | ``watch.capture(step)`` of ``hs.watch(engine, log="all")`` on both ranks |
| gather | ``safe_get_full_fp32_param``, ``safe_get_full_grad`` of each, binned on rank 0 |

The gather's rank 0 bins what it gathered as fast as histoscope can on the
host (``bin_tensors``: the core, one call for every tensor) and logs it. Each
cost is also shown spread over a training step (the median of ``--steps``
unwatched steps), logging every step and every 10 steps.

    python benches/bench_watch_zero.py [--steps 10] [--repeat 5]

Target (issue 30): histoscope costs at most half the gather. Logs go to a
temporary folder that is removed at the end.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench_watch_sharded import best_capture, leave, mlp, run_ranks

WORLD = 2


def engine_of(model: Any) -> Any:
    import importlib

    import deepspeed
    import torch

    # The CPU accelerator's shared-memory collectives would be compiled on the fly.
    importlib.import_module("deepspeed.comm.torch").build_shm_op = lambda: None
    config = {
        "train_micro_batch_size_per_gpu": 64,
        "zero_optimization": {"stage": 3},
        "zero_force_ds_cpu_optimizer": False,
        "steps_per_print": 10**9,
    }
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    engine, *_ = deepspeed.initialize(model=model, optimizer=optimizer, config=config)
    return engine


class Rank:
    """One process's engine and batch, and the contenders' logged steps."""

    def __init__(self, rank: int, out: Path) -> None:
        import torch

        import histoscope as hs

        self.engine = engine_of(mlp())
        generator = torch.Generator().manual_seed(rank)
        self.x = torch.randn(64, 1024, generator=generator)
        self.run = hs.init("bench", run_name="zero3", logdir=out) if rank == 0 else None

    def backward(self) -> None:
        self.engine.backward(self.engine(self.x).pow(2).mean())

    def step_time(self, steps: int) -> float:
        """The median wall time of an unwatched training step."""
        times = []
        for _ in range(steps):
            start = time.perf_counter()
            self.backward()
            self.engine.step()
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    def gather_and_log(self, step: int) -> None:
        """Every parameter and gradient gathered whole, binned and logged on rank 0."""
        from deepspeed.utils import safe_get_full_fp32_param, safe_get_full_grad

        from histoscope.write.batched import bin_tensors

        keyed = []
        for name, parameter in self.engine.module.named_parameters():
            keyed.append((f"parameters/{name}", safe_get_full_fp32_param(parameter)))
            keyed.append((f"gradients/{name}", safe_get_full_grad(parameter)))
        if self.run is not None:
            histograms = bin_tensors([t for _, t in keyed], 64)
            self.run.log({key: h for (key, _), h in zip(keyed, histograms)}, step=step)

    def logged_step(self, contender: str, repeat: int) -> float:
        """The best time of what a contender adds to a logged step, with nothing else."""

        import histoscope as hs

        watch = hs.watch(self.engine, log="all", every=10**9)
        self.backward()
        self.engine.step()  # logs this step: the watch's group and layout, made once
        self.backward()
        best = best_capture(watch, self.gather_and_log, contender, repeat)
        watch.remove()
        self.engine.step()
        return best


def rank_main(rank: int, init_file: str, out: str, args: argparse.Namespace) -> None:
    os.environ.update(RAYON_NUM_THREADS="1", DS_ACCELERATOR="cpu")  # one core each
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(WORLD))
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=WORLD)
    bench = Rank(rank, Path(out))
    results: dict[str, Any] = {
        "parameters": sum(int(p.ds_numel) for p in bench.engine.module.parameters()),
        "step": bench.step_time(args.steps),
    }
    for contender in ("histoscope", "gather"):
        results[contender] = bench.logged_step(contender, args.repeat)
    leave(bench.run, out, results)


def report(results: dict[str, Any]) -> bool:
    millions = results["parameters"] / 1e6
    print(f"DeepSpeed ZeRO-3 MLP, {millions:.1f} M parameters, {WORLD} gloo ranks on the CPU")
    step = results["step"]
    print(f"  a training step, unwatched: {step * 1e3:.1f} ms")
    for contender in ("histoscope", "gather"):
        cost = results[contender]
        print(
            f"  {contender:<11} a logged step {cost * 1e3:7.1f} ms: "
            f"{cost / step:+.1%} every step, {cost / step / 10:+.1%} every 10 steps"
        )
    ratio = results["histoscope"] / results["gather"]
    ok = ratio <= 0.5
    print(f"  histoscope / gather: {ratio:.2f} (target at most 0.50): {'PASS' if ok else 'FAIL'}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=10, help="unwatched steps timed")
    parser.add_argument("--repeat", type=int, default=5, help="tries of each logged step")
    return run_ranks(rank_main, report, parser.parse_args(), WORLD)


if __name__ == "__main__":
    sys.exit(main())
