"""fp16 under accelerate and the transformers Trainer, on the CPU (issue 41): neither makes
a loss scaler there, so each is given a CPU ``GradScaler``, as it makes one on a GPU. The
gradients logged are those the scaler unscaled, before clipping, recorded by the test's
own wrapper of the scaler's ``unscale_``; the steps it skipped are recorded as skipped."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from tiny_models import tiny_bert

import histoscope as hs
from histoscope import _core
from histoscope.write.optimizer_steps import SKIPPED_KEY

accelerate = pytest.importorskip("accelerate")
transformers = pytest.importorskip("transformers")

BINS = 32


@pytest.fixture(autouse=True)
def fresh_accelerator_state():
    """accelerate keeps one process-wide state, fixed by the first ``Accelerator`` (an
    earlier test's, in fp32): each test here starts and leaves it unset."""
    from accelerate.state import AcceleratorState

    AcceleratorState._reset_state(reset_partial_state=True)
    yield
    AcceleratorState._reset_state(reset_partial_state=True)


class Unscaled:
    """The gradients of ``model`` each time ``scaler`` unscales them, keyed by ``step()``."""

    def __init__(self, scaler: torch.amp.GradScaler, model: torch.nn.Module, step) -> None:
        self.grads: dict[int, dict[str, torch.Tensor]] = {}
        original = scaler.unscale_

        def unscale_(optimizer) -> None:
            original(optimizer)
            self.grads[step()] = {
                f"gradients/{n}": p.grad.detach().clone()
                for n, p in model.named_parameters()
                if p.grad is not None
            }

        scaler.unscale_ = unscale_

    def applied(self) -> list[int]:
        """The steps whose gradients were finite: the scaler skipped the others."""
        return sorted(
            step
            for step, grads in self.grads.items()
            if all(torch.isfinite(g).all() for g in grads.values())
        )


def scaler() -> torch.amp.GradScaler:
    return torch.amp.GradScaler("cpu", init_scale=2.0**24, growth_interval=10)


def skipped_steps(run: hs.Run) -> list[int]:
    return sorted(
        point.step
        for path in run.dir.glob("*tfevents*")
        for point in _core.read_scalars(str(path))[1]
        if point.tag == SKIPPED_KEY
    )


def assert_logged_as(run: hs.Run, unscaled: Unscaled, steps: list[int]) -> None:
    loaded = hs.load_histograms(run.dir.parent, runs=[run.name])
    keys = [key for key in loaded if key.startswith("gradients/")]
    assert keys
    for key in keys:
        series = loaded[key][run.name]
        assert series.steps.tolist() == steps
        for i, step in enumerate(steps):
            expected = hs.Histogram(unscaled.grads[step][key], bins=BINS)
            np.testing.assert_array_equal(series.buckets[i][:, 0], expected.edges[:-1])
            np.testing.assert_array_equal(series.buckets[i][:, 2], expected.counts)


def mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))


def batch(i: int) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randn(64, 8, generator=torch.Generator().manual_seed(i % 8))
    return x, 10 * x[:, :4].sum(1, keepdim=True)


@pytest.mark.parametrize("clip", [False, True], ids=["no-clip", "clip"])
def test_accelerate_fp16_with_accumulation(tmp_path: Path, clip: bool) -> None:
    from accelerate import Accelerator

    accelerator = Accelerator(cpu=True, mixed_precision="fp16", gradient_accumulation_steps=2)
    accelerator.scaler, accelerator.native_amp = scaler(), True  # as on a GPU
    model = mlp()
    model, optimizer = accelerator.prepare(model, torch.optim.SGD(model.parameters(), lr=0.01))
    attempts = [0]
    unscaled = Unscaled(accelerator.scaler, model, lambda: attempts[0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", hs.HistoscopeAlert)
        with hs.init("acc", run_name="r", logdir=tmp_path) as run:
            run.watch(model, every=1, bins=BINS)
            for i in range(80):
                with accelerator.accumulate(model):
                    x, y = batch(i)
                    accelerator.backward(torch.nn.functional.mse_loss(model(x), y))
                    if accelerator.sync_gradients and clip:
                        accelerator.clip_grad_norm_(model.parameters(), 0.5)
                    optimizer.step()
                    optimizer.zero_grad()
                    if accelerator.sync_gradients:
                        attempts[0] += 1
    applied = unscaled.applied()
    assert len(unscaled.grads) == 40 and 2 <= applied[0] and len(applied) >= 25
    assert skipped_steps(run) == sorted(set(range(40)) - set(applied))
    assert_logged_as(run, unscaled, applied)  # before clipping, from the first step
    assert [(f.kind, f.severity) for f in hs.diagnose(tmp_path / "acc")] == [("skipped", "info")]


class Tokens(torch.utils.data.Dataset):
    def __len__(self) -> int:
        return 64

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        ids = torch.randint(1, 40, (10,), generator=torch.Generator().manual_seed(i))
        return {"input_ids": ids, "labels": torch.tensor(int(ids[0] > 20))}


@pytest.mark.parametrize("max_grad_norm", [0.0, 0.05])
def test_transformers_trainer_fp16(tmp_path: Path, max_grad_norm: float) -> None:
    from transformers import Trainer, TrainingArguments

    from histoscope.integrations.transformers import HistoscopeCallback

    args = TrainingArguments(
        output_dir=str(tmp_path / "out"),
        max_steps=30,
        logging_steps=1,
        per_device_train_batch_size=4,
        learning_rate=1e-3,
        max_grad_norm=max_grad_norm,
        fp16=True,
        report_to=[],
        save_strategy="no",
        use_cpu=True,
        disable_tqdm=True,
    )
    callback = HistoscopeCallback(every=1, filter="classifier", bins=BINS)
    trainer = Trainer(tiny_bert(), args, train_dataset=Tokens(), callbacks=[callback])
    trainer.accelerator.scaler, trainer.accelerator.native_amp = scaler(), True
    unscaled = Unscaled(
        trainer.accelerator.scaler, trainer.model, lambda: trainer.state.global_step + 1
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", hs.HistoscopeAlert)
        trainer.train()
    run = callback.run
    assert run is not None
    applied = unscaled.applied()
    assert (
        sorted(unscaled.grads) == list(range(1, 31)) and 4 <= applied[0] - 1 and len(applied) >= 15
    )
    assert skipped_steps(run) == sorted(set(range(1, 31)) - set(applied))
    assert_logged_as(run, unscaled, applied)
    found = hs.diagnose(run.dir.parent)
    assert [(f.kind, f.severity) for f in found] == [("skipped", "info")]
