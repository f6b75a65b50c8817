"""A Lightning fit on two CPU processes (gloo) under one of Lightning's sharding strategies,
watched by histoscope's callback, with every parameter and gradient gathered whole beside it.

Run by tests/test_strategies.py as a script: Lightning's launcher starts the second
rank by running this file again. Just before each optimizer step, after histoscope's
callback has captured, a second callback gathers each parameter and its gradient whole
by the strategy's own means (FSDP's ``summon_full_params``, a DTensor's
``full_tensor()``, DeepSpeed's ``safe_get_full_fp32_param`` and ``safe_get_full_grad``);
rank 0 saves them as ``OUT/expected.npz``, keyed ``"<global step>:<key>"``, for the
test to hold the histograms against, count for count.

    python tests/strategy_ranks.py SETUP OUT
"""

from __future__ import annotations

import json
import logging
import sys
import warnings
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import numpy as np
import torch
from deepspeed_ranks import use_gloo_alone
from lightning.pytorch.strategies import DeepSpeedStrategy, FSDPStrategy, ModelParallelStrategy
from torch import nn

from histoscope.integrations.lightning import HistoscopeCallback

STEPS = 3
SETUPS = ("fsdp", "fsdp_root", "fsdp2", "fsdp2_tp", "deepspeed_zero2", "deepspeed_zero3")


class OnCPU:
    """Lightning refuses FSDP and DeepSpeed unless the accelerator is CUDA, though torch's
    FSDP and DeepSpeed's CPU accelerator both train over gloo: these subclasses lift the
    refusal alone, so that the strategy's own wrapping and stepping run here."""


class CPUFSDPStrategy(OnCPU, FSDPStrategy):
    """The connector's check is `type(strategy) is FSDPStrategy`: no subclass."""

    def _setup_model(self, model: nn.Module) -> nn.Module:
        from torch.distributed.fsdp import FullyShardedDataParallel

        if any(isinstance(m, FullyShardedDataParallel) for m in model.modules()):
            return super()._setup_model(model)  # wrapped in configure_model
        # Lightning's own root wrapping, naming the CPU: it passes the device's CUDA
        # index, None here, which torch refuses on the CPU.
        return FullyShardedDataParallel(
            module=model, device_id=torch.device("cpu"), sharding_strategy=self.sharding_strategy,
            **self.kwargs,
        )  # fmt: skip


class CPUDeepSpeedStrategy(OnCPU, DeepSpeedStrategy):
    def setup_environment(self) -> None:
        # DeepSpeedStrategy's own checks for CUDA, then does DDPStrategy's setup.
        super(DeepSpeedStrategy, self).setup_environment()


class Net(pl.LightningModule):
    """Two linear layers and a norm; under ``fsdp2*`` they are sharded in `configure_model`."""

    def __init__(self, setup: str) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.setup_name = setup
        self.net = nn.Sequential(nn.Linear(6, 10), nn.ReLU(), nn.Linear(10, 4), nn.LayerNorm(4))

    def configure_model(self) -> None:
        if self.setup_name == "fsdp":  # (fsdp_root: the strategy wraps the whole module)
            self._wrap_in_fsdp1()
        if not self.setup_name.startswith("fsdp2"):
            return
        from torch.distributed.fsdp import fully_shard

        mesh = self.device_mesh
        if self.setup_name == "fsdp2_tp":
            from torch.distributed.tensor.parallel import (
                ColwiseParallel,
                RowwiseParallel,
                parallelize_module,
            )

            plan = {"net.0": ColwiseParallel(), "net.2": RowwiseParallel()}
            parallelize_module(self, mesh["tensor_parallel"], plan)
        for layer in (self.net[0], self.net[2]):
            fully_shard(layer, mesh=mesh["data_parallel"])
        # training_step calls self.net, not self: the outer unit is the net (the norm's).
        fully_shard(self.net, mesh=mesh["data_parallel"])

    def _wrap_in_fsdp1(self) -> None:
        """Each layer an FSDP unit of its own, wrapped here as Lightning lets a user do
        (its own wrapping passes no device to FSDP, which torch then refuses on the CPU)."""
        from torch.distributed.fsdp import FullyShardedDataParallel

        for i in (0, 2, 3):
            self.net[i] = FullyShardedDataParallel(
                self.net[i], device_id=torch.device("cpu"), use_orig_params=True
            )

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        return self.net(batch[0]).pow(2).mean()

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(self.parameters(), lr=0.05)


class Gathered(pl.Callback):
    """Every parameter and gradient, gathered whole just before each optimizer step."""

    def __init__(self, setup: str) -> None:
        self.setup_name = setup
        self.expected: dict[str, np.ndarray] = {}

    def on_before_optimizer_step(self, trainer: Any, pl_module: Any, optimizer: Any) -> None:
        step = trainer.global_step
        for name, parameter, gradient in self._whole(trainer, pl_module):
            self.expected[f"{step}:parameters/{name}"] = _numpy(parameter)
            self.expected[f"{step}:gradients/{name}"] = _numpy(gradient)

    def _whole(self, trainer: Any, pl_module: Any) -> list[tuple[str, Any, Any]]:
        if self.setup_name.startswith("fsdp") and not self.setup_name.startswith("fsdp2"):
            from torch.distributed.fsdp import FullyShardedDataParallel

            model = trainer.strategy.model  # the root unit, or the module
            with FullyShardedDataParallel.summon_full_params(model, with_grads=True):
                return [
                    (_own_name(n), p.detach().clone(), p.grad.detach().clone())
                    for n, p in model.named_parameters()
                ]
        if self.setup_name.startswith("fsdp2"):
            return [
                (n, p.full_tensor(), p.grad.full_tensor()) for n, p in pl_module.named_parameters()
            ]
        from deepspeed.utils import safe_get_full_fp32_param, safe_get_full_grad

        return [
            (n, safe_get_full_fp32_param(p), safe_get_full_grad(p))
            for n, p in pl_module.named_parameters()
        ]


def strategy(setup: str) -> Any:
    if setup == "fsdp":
        return CPUFSDPStrategy(process_group_backend="gloo")
    if setup == "fsdp_root":
        # The module in a root unit, each linear layer a unit of its own: the norm's
        # parameters are the root's.
        return CPUFSDPStrategy(auto_wrap_policy={nn.Linear}, process_group_backend="gloo")
    if setup == "fsdp2":
        return ModelParallelStrategy(data_parallel_size=2, tensor_parallel_size=1)
    if setup == "fsdp2_tp":
        return ModelParallelStrategy(data_parallel_size=1, tensor_parallel_size=2)
    stage = int(setup[-1])
    config = {
        "zero_optimization": {"stage": stage},
        "zero_force_ds_cpu_optimizer": False,  # torch's AdamW, not DeepSpeed's unbuilt CPU Adam
        "train_micro_batch_size_per_gpu": 8,
        "steps_per_print": 10**9,
    }
    # Devices numbered by local rank, as DeepSpeedStrategy checks and hands to DeepSpeed.
    devices = [torch.device("cpu", rank) for rank in range(2)]
    return CPUDeepSpeedStrategy(
        config=config, process_group_backend="gloo", parallel_devices=devices
    )


def main() -> None:
    setup, out = sys.argv[1], Path(sys.argv[2])
    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    logging.getLogger("DeepSpeed").setLevel(logging.ERROR)
    warnings.simplefilter("ignore")
    if setup.startswith("deepspeed"):
        use_gloo_alone()
    generator = torch.Generator().manual_seed(1)
    data = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.randn(64, 6, generator=generator)), batch_size=8
    )
    gathered = Gathered(setup)
    trainer = pl.Trainer(
        accelerator="cpu", devices=2, strategy=strategy(setup), max_steps=STEPS, logger=False,
        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
        default_root_dir=out, use_distributed_sampler=False,
        callbacks=[HistoscopeCallback(log="all", every=1), gathered],
    )  # fmt: skip
    trainer.fit(Net(setup), data)
    if trainer.is_global_zero:
        np.savez(out / "expected.npz", **gathered.expected)
        (out / "done.json").write_text(json.dumps({"global_step": trainer.global_step}))
    # Torn down before the interpreter exits (as in trainer_ranks.py): a process group
    # left to exit with it can abort a rank ("terminate called without an active
    # exception") from gloo's threads.
    if torch.distributed.is_initialized():
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()


def _own_name(name: str) -> str:
    """A name under FSDP's root, as the LightningModule has it: without FSDP's wrappers."""
    return ".".join(part for part in name.split(".") if part != "_fsdp_wrapped_module")


def _numpy(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().float().double().reshape(-1).numpy()


if __name__ == "__main__":
    main()
