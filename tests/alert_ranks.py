"""The ranks of test_alerts' process group: DistributedDataParallel on two gloo processes,
every rank watching with ``alerts="raise"`` and rank 0 alone writing a run.

The loss turns NaN on every rank at `NAN_FROM`; each rank saves, in
``<out>/rank<r>.json``, the step at which a `TrainingProblem` stopped it.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn

import histoscope as hs

NAN_FROM = 4
STEPS = 200


def stop_together(rank: int, world: int, init_file: str, out: str) -> None:
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(
        nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 2))
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    if rank == 0:
        run = hs.init("p", run_name="r", logdir=out)
    hs.watch(model, log="all", every=1, alerts="raise", stop_on=["nonfinite"])
    stopped = None
    generator = torch.Generator().manual_seed(rank)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hs.HistoscopeAlert)
        for step in range(STEPS):
            try:
                loss = model(torch.randn(16, 8, generator=generator)).pow(2).mean()
            except hs.TrainingProblem as problem:
                stopped = {"step": step, "kind": problem.finding.kind if problem.finding else None}
                break
            if step >= NAN_FROM:
                loss = loss * float("nan")
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            if rank == 0:
                run.log({"loss": loss.item()}, step=step)
    (Path(out) / f"rank{rank}.json").write_text(json.dumps(stopped))
    if rank == 0:
        run.finish()
    dist.barrier()
    dist.destroy_process_group()
