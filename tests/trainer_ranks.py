"""A Hugging Face ``Trainer`` on two CPU processes (torchrun, gloo), watched by histoscope's
callback, with every parameter and gradient gathered whole beside it.

Run by tests/test_strategies.py under ``torch.distributed.run``. Setups:

- ``ddp``: the Trainer's own DistributedDataParallel (accelerate's MULTI_CPU);
- ``deepspeed_zero2``, ``deepspeed_zero3``: ``TrainingArguments(deepspeed=...)``, on
  DeepSpeed's CPU accelerator;
- ``ddp_nan``: ``ddp`` whose loss turns NaN at optimizer step `NAN_FROM`, with
  ``stop_on=("nonfinite",)``.

Just before each optimizer step a second callback gathers each parameter and its
gradient whole: under DDP they are whole on each rank once its backward has averaged
them; under DeepSpeed, ``safe_get_full_fp32_param`` and ``safe_get_full_grad`` as
``engine.step()`` is called (accelerate calls it inside ``accelerator.backward``, before
the Trainer's own optimizer hooks). Rank 0 saves them as ``OUT/expected.npz``, keyed
``"<step>:<key>"``; every rank saves the step it stopped at as ``OUT/rank<r>.json``.

    python -m torch.distributed.run --nproc_per_node 2 tests/trainer_ranks.py SETUP OUT
"""

from __future__ import annotations

import json
import logging
import os
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from deepspeed_ranks import use_gloo_alone
from torch import nn

STEPS = 3
NAN_FROM = 2
SETUPS = ("ddp", "deepspeed_zero2", "deepspeed_zero3")


class Net(nn.Module):
    def __init__(self, nan_from: int | None) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(6, 10), nn.ReLU(), nn.Linear(10, 4), nn.LayerNorm(4))
        self.nan_from = nan_from
        self.forwards = 0

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        out = self.net(x)
        loss = out.pow(2).mean()
        if self.training:
            if self.nan_from is not None and self.forwards >= self.nan_from:
                loss = loss * float("nan")
            self.forwards += 1
        return {"loss": loss, "logits": out}


class Rows(torch.utils.data.Dataset):
    def __init__(self) -> None:
        self.x = torch.randn(512, 6, generator=torch.Generator().manual_seed(1))

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"x": self.x[i]}


def gathered_callback(setup: str) -> Any:
    from transformers import TrainerCallback

    class Gathered(TrainerCallback):
        """Every parameter and gradient, whole, as the optimizer is about to step."""

        def __init__(self) -> None:
            self.expected: dict[str, np.ndarray] = {}

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if setup.startswith("deepspeed"):
                engine = self.trainer.model_wrapped
                step = engine.step

                def gathered_step(*a: Any, **k: Any) -> Any:
                    if engine.is_gradient_accumulation_boundary():
                        self._gather(engine.module, state.global_step + 1)
                    return step(*a, **k)

                engine.step = gathered_step

        def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if not setup.startswith("deepspeed"):
                self._gather(self.trainer.model, state.global_step + 1)

        def _gather(self, module: nn.Module, step: int) -> None:
            for name, parameter in module.named_parameters():
                name = name.removeprefix("module.")
                whole, gradient = self._whole(parameter)
                self.expected[f"{step}:parameters/{name}"] = _numpy(whole)
                self.expected[f"{step}:gradients/{name}"] = _numpy(gradient)

        def _whole(self, parameter: Any) -> tuple[Any, Any]:
            if not setup.startswith("deepspeed"):
                return parameter, parameter.grad
            from deepspeed.utils import safe_get_full_fp32_param, safe_get_full_grad

            return safe_get_full_fp32_param(parameter), safe_get_full_grad(parameter)

    return Gathered()


def arguments(setup: str, out: Path) -> Any:
    from transformers import TrainingArguments

    settings: dict[str, Any] = dict(
        output_dir=str(out / "trainer"), per_device_train_batch_size=8, logging_steps=1,
        report_to=[], save_strategy="no", disable_tqdm=True, learning_rate=0.05,
        max_steps=200 if setup == "ddp_nan" else STEPS,
    )  # fmt: skip
    if setup.startswith("deepspeed"):
        settings["deepspeed"] = {
            "zero_optimization": {"stage": int(setup[-1])},
            "zero_force_ds_cpu_optimizer": False,  # torch's AdamW, not the unbuilt CPU Adam
            "train_micro_batch_size_per_gpu": "auto",
            "gradient_accumulation_steps": "auto",
            "steps_per_print": 10**9,
        }
    else:
        settings["use_cpu"] = True
    return TrainingArguments(**settings)


def main() -> None:
    setup, out = sys.argv[1], Path(sys.argv[2])
    warnings.simplefilter("ignore")
    logging.getLogger("DeepSpeed").setLevel(logging.ERROR)
    if setup.startswith("deepspeed"):
        use_gloo_alone()
    import transformers
    from transformers import Trainer

    from histoscope.integrations.transformers import HistoscopeCallback

    transformers.logging.set_verbosity_error()
    stop_on = ("nonfinite",) if setup == "ddp_nan" else None
    watching = HistoscopeCallback(log="all", every=1, stop_on=stop_on)
    gathered = gathered_callback(setup)
    model = Net(NAN_FROM if setup == "ddp_nan" else None)
    trainer = Trainer(model, arguments(setup, out), train_dataset=Rows(),
                      callbacks=[watching, gathered])  # fmt: skip
    gathered.trainer = trainer
    done = trainer.train()
    rank = dist.get_rank()
    (out / f"rank{rank}.json").write_text(json.dumps(done.global_step))
    if rank == 0:
        np.savez(out / "expected.npz", **gathered.expected)
        (out / "run.json").write_text(json.dumps(str(watching.run.dir)))
    # Torn down before the interpreter exits: a process group left to exit with it can
    # abort a rank ("terminate called without an active exception") from gloo's threads.
    dist.barrier()
    dist.destroy_process_group()
    # gloo's threads can still abort the interpreter's own exit: the rank's work is
    # written and its group gone, so it leaves without running the C++ destructors.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _numpy(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().float().double().reshape(-1).numpy()


if __name__ == "__main__":
    main()
