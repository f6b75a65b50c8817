"""The ranks of test_deepspeed: DeepSpeed ZeRO engines on real gloo groups of CPU processes.

Each scenario builds the same small model under one ZeRO configuration,
watches the engine (or its module) on every rank, rank 0 alone with a run,
and trains two optimizer steps. Just before each ``engine.step()`` at an
accumulation boundary, every rank gathers each parameter and gradient whole
through DeepSpeed's own ``safe_get_full_fp32_param`` and ``safe_get_full_grad``;
rank 0 saves them beside its run (``expected.npz``, keyed ``"<step>:<key>"``)
for test_deepspeed to hold the histograms against, count for count.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from sharded_ranks import fault_drill
from torch import nn

import histoscope as hs

STEPS = 2
MATRICES = {"0.weight", "2.weight"}
TIMEOUT = 5.0


@dataclasses.dataclass(frozen=True)
class Setup:
    """One DeepSpeed configuration, and what is watched."""

    stage: int
    bf16: bool = False
    offload: bool = False
    accumulation: int = 1
    module: bool = False
    """Whether ``engine.module`` is watched rather than the engine."""
    activations: bool = False
    filtered: bool = False
    """Whether the watch's filter keeps the matrices alone, judged by their shape."""
    partitioned_at_init: bool = False
    """Whether the model is made inside ``deepspeed.zero.Init``, partitioned as it is made."""
    fp32_accumulation: bool = False
    fp16: bool = False
    """Whether it trains in fp16 under DeepSpeed's dynamic loss scale, from a scale large
    enough that its first steps overflow and are skipped."""
    steps: int = STEPS

    def config(self) -> dict[str, Any]:
        zero: dict[str, Any] = {"stage": self.stage}
        if self.offload:
            zero["offload_optimizer"] = {"device": "cpu"}
        accumulated = {"grad_accum_dtype": "fp32"} if self.fp32_accumulation else {}
        return {
            "data_types": accumulated,
            "train_micro_batch_size_per_gpu": 6,
            "gradient_accumulation_steps": self.accumulation,
            "zero_optimization": zero,
            "bf16": {"enabled": self.bf16},
            "fp16": {"enabled": self.fp16, "initial_scale_power": 18},
            # torch's AdamW, which runs without DeepSpeed's unbuilt CPU Adam.
            "zero_force_ds_cpu_optimizer": False,
            "steps_per_print": 10**9,
        }


SETUPS: dict[str, Setup] = {
    "zero0": Setup(0),
    "zero1": Setup(1, activations=True),
    "zero2": Setup(2),
    "zero3": Setup(3),
    "zero1_bf16": Setup(1, bf16=True),
    "zero2_bf16": Setup(2, bf16=True),
    "zero3_bf16": Setup(3, bf16=True),
    "zero1_offload": Setup(1, offload=True),
    "zero2_offload": Setup(2, offload=True),
    "zero3_offload": Setup(3, offload=True),
    "zero2_module_accumulation": Setup(2, accumulation=2, module=True),
    "zero3_module_accumulation": Setup(3, accumulation=2, module=True, activations=True),
    "zero0_module": Setup(0, module=True),
    "zero3_filtered": Setup(3, filtered=True),
    "zero0_bf16": Setup(0, bf16=True),
    # DeepSpeed's BF16_Optimizer, which keeps each gradient whole on every rank.
    "zero1_bf16_fp32_accumulation": Setup(1, bf16=True, fp32_accumulation=True),
    "zero3_init": Setup(3, partitioned_at_init=True),
    "zero0_fp16": Setup(0, fp16=True, steps=8),
    "zero1_fp16": Setup(1, fp16=True, steps=8),
    "zero2_fp16_accumulation": Setup(2, fp16=True, steps=8, accumulation=2),
    "zero3_fp16": Setup(3, fp16=True, steps=8),
}


def use_gloo_alone() -> None:
    """DeepSpeed on the CPU, without its shared-memory collectives: the CPU accelerator
    would build them on the fly (ninja and a C++ compiler), which installing with
    ``DS_BUILD_OPS=0`` leaves out; gloo does the same work."""
    os.environ["DS_ACCELERATOR"] = "cpu"
    importlib.import_module("deepspeed.comm.torch").build_shm_op = lambda: None


def join(rank: int, world: int, init_file: str) -> None:
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world))
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    use_gloo_alone()


def engine_of(setup: Setup) -> Any:
    import deepspeed

    if setup.fp16:
        fp16_as_on_a_gpu()
    torch.manual_seed(0)
    if setup.partitioned_at_init:
        with deepspeed.zero.Init(config_dict_or_path=setup.config()):
            model = nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Linear(7, 3), nn.LayerNorm(3))
    else:
        model = nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Linear(7, 3), nn.LayerNorm(3))
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.1)
    engine, *_ = deepspeed.initialize(model=model, optimizer=optimizer, config=setup.config())
    return engine


def scenarios(rank: int, world: int, init_file: str, out: str, names: list[str]) -> None:
    """Every scenario in ``names``, one after another in one process group."""
    join(rank, world, init_file)
    for name in names:
        folder = Path(out) / name
        folder.mkdir(parents=True, exist_ok=True)
        train_watched(rank, folder, SETUPS[name])
        dist.barrier()
    dist.destroy_process_group()


def train_watched(rank: int, out: Path, setup: Setup) -> None:
    from deepspeed.utils import safe_get_full_fp32_param, safe_get_full_grad

    engine = engine_of(setup)
    dtype = torch.bfloat16 if setup.bf16 else torch.float16 if setup.fp16 else torch.float32
    if rank == 0:
        hs.init("p", run_name="r", logdir=out)
    watched = engine.module if setup.module else engine
    keeps = (lambda _name, tensor: tensor.dim() == 2) if setup.filtered else None
    watch = hs.watch(watched, log="all", every=1, activations=setup.activations, filter=keeps)
    expected: dict[str, np.ndarray] = {}
    skipped: list[int] = []
    for micro in range(setup.steps * setup.accumulation):
        generator = torch.Generator().manual_seed(1000 * micro + rank)
        loss = engine(torch.randn(6, 5, generator=generator).to(dtype)).float().pow(2).mean()
        engine.backward(loss)
        boundary = engine.is_gradient_accumulation_boundary()
        if boundary:
            step, skips = engine.global_steps, engine.skipped_steps
            # fp16: the gradients are still multiplied by the loss scale; the step divides.
            unscale = 1.0 / engine.optimizer.loss_scale if setup.fp16 else 1.0
            for name, parameter in engine.module.named_parameters():
                if setup.filtered and name not in MATRICES:
                    continue
                whole = safe_get_full_fp32_param(parameter)
                if whole is None:  # stage 0 keeps no fp32 copy: the parameter is whole
                    whole = parameter
                expected[f"{step}:parameters/{name}"] = _numpy(whole)
                grad = safe_get_full_grad(parameter).float().mul(unscale)
                expected[f"{step}:gradients/{name}"] = _numpy(grad)
        engine.step()
        if boundary and engine.skipped_steps > skips:  # an overflow: nothing logged
            skipped.append(step)
            expected = {k: v for k, v in expected.items() if not k.startswith(f"{step}:")}
    if rank == 0:
        hs.finish()
        np.savez(out / "expected.npz", **expected)
        described = {**_described(engine), "skipped": skipped}
        (out / "engine.json").write_text(json.dumps(described))
    watch.remove()
    engine.destroy()


def fp16_as_on_a_gpu() -> None:
    """DeepSpeed's CPU accelerator says it has no fp16, so DeepSpeed refuses it there; its
    fp16 optimizers and loss scaler run on the CPU as on a GPU once told otherwise."""
    from deepspeed.accelerator import get_accelerator

    type(get_accelerator()).is_fp16_supported = lambda _self: True


def _described(engine: Any) -> dict[str, Any]:
    """What DeepSpeed made of a setup, for the test to check it is the one asked for."""
    return {
        "stage": engine.zero_optimization_stage(),
        "offload": bool(engine.zero_cpu_offload()),
        "optimizer": type(engine.optimizer).__name__,
        "dtype": str(next(engine.module.parameters()).dtype),
        "accumulation": engine.gradient_accumulation_steps(),
    }


def _numpy(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().float().double().numpy()


def faults(rank: int, world: int, init_file: str, out: str) -> None:
    """Two ZeRO-3 engines, one after the other, watched on both ranks and put through
    `sharded_ranks.fault_drill`."""
    join(rank, world, init_file)
    fault_drill(rank, out, lambda: engine_of(Setup(3)))
    os._exit(0)  # the group's peer is gone: nothing more to say to it
