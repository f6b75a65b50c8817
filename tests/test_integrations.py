"""The trainer integrations: tiny models built here, trained for a few steps on the CPU."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import lightning.pytorch as pl
import numpy as np
import pytest
import torch
import transformers
from tiny_models import tiny_bert
from transformers import Trainer, TrainingArguments

import histoscope as hs
from histoscope.integrations.lightning import HistoscopeCallback as LightningCallback
from histoscope.integrations.transformers import HistoscopeCallback as TransformersCallback


def read(run_dir: Path) -> dict[str, hs.HistogramSeries]:
    loaded = hs.load_histograms(run_dir.parent, runs=[run_dir.name])
    return {tag: loaded[tag][run_dir.name] for tag in loaded}


class TinyModule(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.net = torch.nn.Sequential(
            torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2)
        )
        self.gradients_seen: dict[int, torch.Tensor] = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.cross_entropy(self(x), y)

    def on_before_optimizer_step(self, optimizer) -> None:
        self.gradients_seen[self.trainer.global_step] = self.net[2].weight.grad.clone()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.5)


def data(n: int = 64) -> torch.utils.data.DataLoader:
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(n, 6, generator=generator)
    y = (x[:, 0] > 0).long()
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=8)


def trainer(tmp_path: Path, callback, **kwargs) -> pl.Trainer:
    settings = dict(
        accelerator="cpu",
        max_steps=6,
        log_every_n_steps=2,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
        callbacks=[callback],
    )
    return pl.Trainer(**{**settings, **kwargs})


@pytest.fixture(autouse=True)
def quiet_trainers():
    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    transformers.logging.set_verbosity_error()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", module="lightning")
        yield


def test_lightning_logs_at_the_global_step(tmp_path: Path) -> None:
    module = TinyModule()
    with hs.init("p", run_name="r", logdir=tmp_path) as run:
        trainer(tmp_path, LightningCallback(run, log="all", activations=True)).fit(module, data())
    series = read(run.dir)
    names = ["net.0.weight", "net.0.bias", "net.2.weight", "net.2.bias"]
    expected = {f"{kind}/{n}" for kind in ("gradients", "parameters") for n in names}
    expected |= {"activations/net.0", "activations/net.1", "activations/net.2"}
    assert set(series) == expected
    for tag in expected:
        assert series[tag].steps.tolist() == [0, 2, 4], tag
    logged = series["gradients/net.2.weight"]
    for i, step in enumerate([0, 2, 4]):
        gradient = hs.Histogram(module.gradients_seen[step], bins=64)
        np.testing.assert_array_equal(logged.buckets[i][:, 2], gradient.counts)
        np.testing.assert_array_equal(logged.buckets[i][:, 0], gradient.edges[:-1])


def test_lightning_logs_spectra_at_their_own_interval(tmp_path: Path) -> None:
    module = TinyModule()
    callback = LightningCallback(
        run=None, project="p", log="parameters", spectral=True, spectral_every=3
    )
    trainer(tmp_path, callback).fit(module, data())
    series = read(callback.run.dir)
    assert series["parameters/net.2.weight"].steps.tolist() == [0, 2, 4]
    assert series["spectrum/net.0.weight"].steps.tolist() == [0, 3]
    assert series["spectrum/net.2.weight"].steps.tolist() == [0, 3]


def test_lightning_with_gradient_accumulation_and_its_own_run(tmp_path: Path) -> None:
    module = TinyModule()
    callback = LightningCallback(project="tiny", every=1, filter=r"\.2\.")
    trainer(tmp_path, callback, accumulate_grad_batches=2).fit(module, data())
    assert callback.run is not None and callback.run.backlog.unwritten == 0
    run_dir = callback.run.dir
    assert run_dir.parent == tmp_path / "histoscope-logs" / "tiny"
    series = read(run_dir)
    assert set(series) == {"gradients/net.2.weight", "gradients/net.2.bias"}
    # Six optimizer steps of two batches each, logged once per optimizer step.
    assert series["gradients/net.2.weight"].steps.tolist() == [0, 1, 2, 3, 4, 5]
    np.testing.assert_array_equal(
        series["gradients/net.2.weight"].buckets[3][:, 2],
        hs.Histogram(module.gradients_seen[3], bins=64).counts,
    )
    with pytest.raises(RuntimeError, match="is finished"):
        callback.run.log({"loss": 1.0})


class Tokens(torch.utils.data.Dataset):
    def __len__(self) -> int:
        return 32

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        generator = torch.Generator().manual_seed(i)
        ids = torch.randint(1, 40, (10,), generator=generator)
        return {"input_ids": ids, "labels": torch.tensor(int(ids[0] > 20))}


def training_args(tmp_path: Path, **kwargs) -> TrainingArguments:
    settings = dict(
        output_dir=str(tmp_path / "out"),
        max_steps=4,
        logging_steps=2,
        per_device_train_batch_size=4,
        learning_rate=1e-3,
        report_to=[],
        save_strategy="no",
        use_cpu=True,
        disable_tqdm=True,
    )
    return TrainingArguments(**{**settings, **kwargs})


def test_transformers_trainer_logs_gradients_and_losses_at_the_same_steps(tmp_path: Path) -> None:
    with hs.init("p", run_name="r", logdir=tmp_path) as run:
        callback = TransformersCallback(run, log="all", filter="classifier")
        Trainer(
            tiny_bert(), training_args(tmp_path), train_dataset=Tokens(), callbacks=[callback]
        ).train()
    series = read(run.dir)
    expected = {
        f"{kind}/classifier.{p}" for kind in ("gradients", "parameters") for p in ("weight", "bias")
    }
    assert set(series) == expected
    for tag in expected:
        assert series[tag].steps.tolist() == [2, 4]
    losses = _scalar_steps(run, "loss")
    assert losses == [2, 4]


def test_transformers_every_step_with_its_own_run(tmp_path: Path) -> None:
    callback = TransformersCallback(every=1, filter=r"attention\.self\.query\.weight")
    Trainer(
        tiny_bert(),
        training_args(tmp_path, gradient_accumulation_steps=2),
        train_dataset=Tokens(),
        callbacks=[callback],
    ).train()
    assert callback.run is not None
    assert callback.run.dir.parent == tmp_path / "out" / "histoscope-logs" / "transformers"
    tag = "gradients/bert.encoder.layer.0.attention.self.query.weight"
    assert read(callback.run.dir)[tag].steps.tolist() == [1, 2, 3, 4]


def _scalar_steps(run: hs.Run, tag: str) -> list[int]:
    from tensorboard.backend.event_processing import event_file_loader

    steps = []
    for event in event_file_loader.EventFileLoader(str(run.path)).Load():
        for value in event.summary.value:
            if value.tag == tag:
                steps.append(event.step)
    return steps


class DivergingModule(TinyModule):
    """TinyModule whose loss turns NaN from optimizer step 3 on."""

    def training_step(self, batch, batch_idx):
        loss = super().training_step(batch, batch_idx)
        return loss * float("nan") if self.trainer.global_step >= 3 else loss


def test_lightning_stop_on_stops_the_fit_after_the_step_and_says_why(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    callback = LightningCallback(every=1, stop_on=("nonfinite",))
    fit = trainer(tmp_path, callback, max_steps=200)
    with caplog.at_level(logging.WARNING, logger="histoscope"), warnings.catch_warnings():
        warnings.simplefilter("ignore", hs.HistoscopeAlert)
        fit.fit(DivergingModule(), data(n=2000))
    # NaN from optimizer step 3, logged there: the fit stops after that step.
    assert fit.global_step == 4
    assert "stopping the training" in caplog.text and "nonfinite" in caplog.text
    assert callback.run is not None and callback.run.closed


def test_lightning_without_stop_on_only_warns(tmp_path: Path) -> None:
    fit = trainer(tmp_path, LightningCallback(every=1), max_steps=8)
    with pytest.warns(hs.HistoscopeAlert, match="nonfinite"):
        fit.fit(DivergingModule(), data())
    assert fit.global_step == 8


def test_transformers_stop_on_stops_the_training_after_the_step(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    model = tiny_bert()
    calls = []

    def nan_from_the_fourth_batch(_module, _inputs, output):
        calls.append(1)
        return output * float("nan") if len(calls) > 3 else output

    model.classifier.register_forward_hook(nan_from_the_fourth_batch)
    callback = TransformersCallback(every=1, stop_on=("nonfinite",))
    args = training_args(tmp_path, max_steps=200, logging_steps=1)
    with caplog.at_level(logging.WARNING, logger="histoscope"), warnings.catch_warnings():
        warnings.simplefilter("ignore", hs.HistoscopeAlert)
        output = Trainer(model, args, train_dataset=Tokens(), callbacks=[callback]).train()
    # NaN from the fourth batch, logged at global step 4: training stops after it.
    assert output.global_step == 4
    assert "stopping the training" in caplog.text and "nonfinite" in caplog.text


def test_lightning_stop_on_under_ddp_stops_every_rank_at_one_step(tmp_path: Path) -> None:
    import json
    import os
    import subprocess
    import sys

    script = Path(__file__).with_name("lightning_ranks.py")
    env = {**os.environ, "PL_DISABLE_FORK": "1"}
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path)], env=env, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    steps = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    # NaN from optimizer step 3, logged there by rank 0: both ranks stop after that step.
    assert steps == [4, 4]
    assert "stopping the training" in done.stderr
    written = hs.load_histograms(tmp_path / "histoscope-logs" / "lightning")
    steps_logged = next(iter(written["gradients/net.0.weight"].values())).steps.tolist()
    assert steps_logged == [0, 1, 2, 3]


class _Regression(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.net = torch.nn.Sequential(
            torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1)
        )

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.mse_loss(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.02)


def test_lightning_16_mixed_logs_unscaled_gradients_and_records_skipped_steps(
    tmp_path: Path,
) -> None:
    """Issue 41: Lightning's 16-mixed on the CPU, with its plugin given a GradScaler (on the
    CPU Lightning makes none), as on a GPU: the scaler's first steps overflow."""
    from lightning.pytorch.plugins import MixedPrecision

    from histoscope import _core
    from histoscope.write.optimizer_steps import SKIPPED_KEY

    g = torch.Generator().manual_seed(0)
    x = torch.randn(640, 8, generator=g)
    data = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(x, x[:, :4].sum(1, keepdim=True)), batch_size=64
    )
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**28, growth_interval=10)
    callback = LightningCallback(every=1, log="all")
    trainer = pl.Trainer(
        accelerator="cpu",
        plugins=[MixedPrecision("16-mixed", "cpu", scaler=scaler)],
        max_steps=40,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[callback],
        default_root_dir=tmp_path,
    )
    trainer.fit(_Regression(), data)
    run = callback.run
    assert run is not None
    skipped = sorted(
        point.step
        for path in run.dir.glob("*tfevents*")
        for point in _core.read_scalars(str(path))[1]
        if point.tag == SKIPPED_KEY
    )
    assert len(skipped) >= 4 and skipped[:4] == [0, 1, 2, 3]
    series = read(run.dir)
    for key in [k for k in series if k.startswith("gradients/")]:
        steps = series[key].steps.tolist()
        assert not set(steps) & set(skipped) and len(steps) + len(skipped) == 40
        # Unscaled: the scaled ones were over 2^15 times larger.
        assert np.isfinite(series[key].stats["max"]).all()
        assert float(np.abs(series[key].stats["max"]).max()) < 100
    found = hs.diagnose(run.dir.parent)
    assert [(f.kind, f.severity) for f in found] == [("skipped", "info")]


def test_lightning_bf16_mixed_logs_the_gradients_the_optimizer_is_handed(tmp_path: Path) -> None:
    """Issue 41: bf16-mixed has no loss scaler; the gradients logged are those at the
    optimizer's step, recorded by a callback of the test's own after histoscope's."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(256, 8, generator=g)
    data = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(x, x[:, :4].sum(1, keepdim=True)), batch_size=64
    )

    class Handed(pl.Callback):
        def __init__(self) -> None:
            self.grads: dict[int, dict[str, torch.Tensor]] = {}

        def on_before_optimizer_step(self, trainer, pl_module, optimizer) -> None:
            self.grads[trainer.global_step] = {
                f"gradients/{n}": p.grad.detach().clone() for n, p in pl_module.named_parameters()
            }

    callback, handed = LightningCallback(every=1, bins=16), Handed()
    trainer = pl.Trainer(
        accelerator="cpu",
        precision="bf16-mixed",
        max_steps=8,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[callback, handed],
        default_root_dir=tmp_path,
    )
    trainer.fit(_Regression(), data)
    assert callback.run is not None
    series = read(callback.run.dir)
    keys = [k for k in series if k.startswith("gradients/")]
    assert keys
    for key in keys:
        steps = series[key].steps.tolist()
        assert steps == sorted(handed.grads) and len(steps) == 8
        for i, step in enumerate(steps):
            expected = hs.Histogram(handed.grads[step][key], bins=16)
            np.testing.assert_array_equal(series[key].buckets[i][:, 0], expected.edges[:-1])
            np.testing.assert_array_equal(series[key].buckets[i][:, 2], expected.counts)
