"""What watching a sharded model costs a training step: histoscope's merge against gathering.

Two processes (a gloo group on the CPU, one core and one thread each) train an
MLP of about 8.4 M parameters sharded with FSDP2's ``fully_shard``. Three ways
to log every parameter and gradient take turns, block after block, on the
same model:

| contender | what runs at a logged step |
| --- | --- |
| plain | nothing: forward, backward, optimizer step |
| histoscope | ``hs.watch(model, log="all", every=k)`` on both ranks, rank 0 with a run |
| gather | ``full_tensor()`` of every parameter and gradient, binned on rank 0 |

The gather's rank 0 bins what it gathered as fast as histoscope can on the
host (``bin_tensors``: the core, one call for every tensor) and logs it.

Each block times ``--steps`` steps (the ranks start each block together): the
wall time on rank 0, and the CPU time of both processes (all their threads)
added. A histoscope block starts with a new watch and one untimed step: a
watch's first logged step makes its gloo group and agrees what each rank
holds, once in a training. A contender's overhead is its median over the blocks against plain's
in the same block, minus one, for ``k = 1`` (every step) and ``k = 10``. On a
machine shared with other work the wall time moves by more than what is
measured, so the target is judged on the CPU time every step; every 10 steps
both costs (a few percent) are below the blocks' spread there, so the target
is judged on the time of one logged step alone (best of five, rank 0's wall
time), spread over the 10 steps of plain's median step.

    python benches/bench_watch_sharded.py [--blocks 5] [--steps 10] [--steps-every-10 30]

Target (issue 22): histoscope costs less than the gather, at both ``k``. Logs
go to a temporary folder that is removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

CONTENDERS = ("plain", "histoscope", "gather")
WORLD = 2


def mlp() -> Any:
    """About 8.4 M parameters: four 1024 x 2048 layers, and small biases."""
    import torch

    torch.manual_seed(0)
    widths = [1024, 2048, 1024, 2048, 1024]
    layers: list[torch.nn.Module] = []
    for a, b in zip(widths, widths[1:]):
        layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers[:-1])


class Rank:
    """One process's model, optimizer and batch, and the contenders' steps."""

    def __init__(self, rank: int, out: Path) -> None:
        import torch
        from torch.distributed.fsdp import fully_shard

        import histoscope as hs

        self.rank = rank
        self.model = mlp()
        for layer in self.model:
            if isinstance(layer, torch.nn.Linear):
                fully_shard(layer)
        fully_shard(self.model)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=1e-4)
        generator = torch.Generator().manual_seed(rank)
        self.x = torch.randn(64, 1024, generator=generator)
        self.run = hs.init("bench", run_name="sharded", logdir=out) if rank == 0 else None
        self.logged = 0

    def train_step(self) -> None:
        self.model(self.x).pow(2).mean().backward()

    def finish_step(self) -> None:
        self.optimizer.step()
        self.optimizer.zero_grad()

    def block(self, contender: str, steps: int, every: int) -> tuple[float, float]:
        """Mean wall time of ``steps`` steps of ``contender``, logging every ``every``, and
        the mean CPU time per step of both ranks together."""
        import torch.distributed as dist

        import histoscope as hs

        watch = None
        if contender == "histoscope":
            watch = hs.watch(self.model, log="all", every=every)
            # A training's first logged step makes the watch's gloo group and agrees what
            # each rank holds, once; each block has a new watch, whose step 0 is untimed.
            self.train_step()
            self.finish_step()
        dist.barrier()
        start, cpu = time.perf_counter(), time.process_time()
        for i in range(steps):
            self.train_step()
            if contender == "gather" and i % every == 0:
                self.gather_and_log(self.logged)
            self.finish_step()
            self.logged += 1
        elapsed = (time.perf_counter() - start) / steps
        cpu = (time.process_time() - cpu) / steps
        if watch is not None:
            watch.remove()
        if self.run is not None:
            self.run.flush()
        both: list[Any] = [None] * WORLD
        dist.all_gather_object(both, cpu)
        return elapsed, sum(both)

    def gather_and_log(self, step: int) -> None:
        """Every parameter and gradient gathered whole, binned and logged on rank 0."""
        from histoscope.write.batched import bin_tensors

        keyed = []
        for name, parameter in self.model.named_parameters():
            keyed.append((f"parameters/{name}", parameter.detach().full_tensor()))
            keyed.append((f"gradients/{name}", parameter.grad.full_tensor()))
        if self.run is not None:
            histograms = bin_tensors([t for _, t in keyed], 64)
            self.run.log({key: h for (key, _), h in zip(keyed, histograms)}, step=step)

    def one_logged_step(self, contender: str, repeat: int = 5) -> float:
        """The best time of what a contender adds to a logged step, with nothing else."""

        import histoscope as hs

        watch = hs.watch(self.model, log="all", every=10**9)
        self.train_step()  # logs step 0: the watch's group and layout, made once
        best = best_capture(watch, self.gather_and_log, contender, repeat)
        watch.remove()
        self.finish_step()
        return best


def best_capture(
    watch: Any, gather_and_log: Callable[[int], None], contender: str, repeat: int
) -> float:
    """The best of ``repeat`` captures of the contender's (``watch.capture`` for
    histoscope, ``gather_and_log`` for the gather), every rank starting together."""
    import torch.distributed as dist

    best = float("inf")
    for i in range(repeat):
        dist.barrier()
        start = time.perf_counter()
        if contender == "histoscope":
            watch.capture(10**6 + i)
        else:
            gather_and_log(10**6 + i)
        best = min(best, time.perf_counter() - start)
    return best


def rank_main(rank: int, init_file: str, out: str, args: argparse.Namespace) -> None:
    os.environ["RAYON_NUM_THREADS"] = "1"  # one core each: the core's threads too
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=WORLD)
    bench = Rank(rank, Path(out))
    for contender in CONTENDERS:  # warm up: first allocations, the gloo groups
        bench.block(contender, 2, 1)
    results: dict[str, Any] = {"parameters": sum(p.numel() for p in bench.model.parameters())}
    for every, steps in ((1, args.steps), (10, args.steps_every_10)):
        rows: dict[str, list[tuple[float, float]]] = {c: [] for c in CONTENDERS}
        for b in range(args.blocks):
            order = CONTENDERS[b % 3 :] + CONTENDERS[: b % 3]
            for contender in order:
                rows[contender].append(bench.block(contender, steps, every))
        results[f"every {every}"] = rows
    results["logged step"] = {c: bench.one_logged_step(c) for c in ("histoscope", "gather")}
    leave(bench.run, out, results)


def leave(run: Any, out: str, results: dict[str, Any]) -> None:
    """Rank 0 (the one with a ``run``) finishes it and leaves ``results`` for
    `run_ranks`' judge; every rank leaves the process group."""
    import torch.distributed as dist

    if run is not None:
        run.finish()
        (Path(out) / "results.json").write_text(json.dumps(results))
    dist.destroy_process_group()


def report(results: dict[str, Any]) -> bool:
    millions = results["parameters"] / 1e6
    print(f"FSDP2 MLP, {millions:.1f} M parameters, {WORLD} gloo ranks on the CPU")
    logged = results["logged step"]
    passed = True
    for every in (1, 10):
        rows = results[f"every {every}"]
        print(f"\nevery {every} step{'s' if every > 1 else ''}:")
        print(f"  {'contender':<11} {'step (ms)':>10} {'wall':>8} {'CPU (ms)':>9} {'CPU':>8}")
        overhead: dict[str, list[float]] = {}
        for contender in CONTENDERS:
            cells = []
            overhead[contender] = []
            for measure in (0, 1):  # wall time on rank 0, CPU time of both ranks
                times = [row[measure] for row in rows[contender]]
                plain = [row[measure] for row in rows["plain"]]
                ratio = statistics.median([t / p - 1 for t, p in zip(times, plain)])
                overhead[contender].append(ratio)
                cells.append(f"{statistics.median(times) * 1e3:>9.1f} {ratio * 100:>+7.1f}%")
            print(f"  {contender:<11} {cells[0]} {cells[1]}")
        if every == 1:
            ok = overhead["histoscope"][1] < overhead["gather"][1]
            print(f"  histoscope's CPU below the gather's: {'PASS' if ok else 'FAIL'}")
        else:
            # A few percent, below the blocks' spread on a shared machine: judged on one
            # logged step's cost, measured alone, spread over the steps between two.
            plain = statistics.median(row[0] for row in rows["plain"])
            spread = {c: logged[c] / every / plain for c in ("histoscope", "gather")}
            ok = spread["histoscope"] < spread["gather"]
            print(
                f"  one logged step spread over {every}: histoscope {spread['histoscope']:+.1%}, "
                f"gather {spread['gather']:+.1%}: {'PASS' if ok else 'FAIL'}"
            )
        passed &= ok
    print(
        f"\none logged step alone (best of 5): histoscope {logged['histoscope'] * 1e3:.1f} ms, "
        f"gather {logged['gather'] * 1e3:.1f} ms"
    )
    return passed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--blocks", type=int, default=5)
    parser.add_argument("--steps", type=int, default=10, help="steps per block, logging every step")
    parser.add_argument("--steps-every-10", type=int, default=30, help="steps per block at k = 10")
    return run_ranks(rank_main, report, parser.parse_args())


def run_ranks(
    each: Callable[[int, str, str, argparse.Namespace], None],
    judge: Callable[[dict[str, Any]], bool],
    args: argparse.Namespace,
    world: int = WORLD,
) -> int:
    """Runs ``each(rank, init_file, out, args)`` on ``world`` spawned processes, then
    ``judge`` on the results rank 0 left in ``out/results.json``: 0 if it passes."""
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory() as out:
        init_file = os.path.join(out, "init")
        mp.start_processes(
            _spawned, args=(each, init_file, out, args), nprocs=world, start_method="spawn"
        )
        passed = judge(json.loads((Path(out) / "results.json").read_text()))
    return 0 if passed else 1


def _spawned(rank: int, each: Callable[..., None], *args: Any) -> None:
    each(rank, *args)


if __name__ == "__main__":
    sys.exit(main())
