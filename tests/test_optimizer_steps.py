"""Gradients as the optimizer applies them: real fp16 trainings under a loss scaler, gradient
accumulation, and models that no optimizer steps (`histoscope.write.optimizer_steps`)."""

from __future__ import annotations

import gc
import glob
import warnings

import numpy as np
import pytest
import torch
from torch.optim.optimizer import register_optimizer_step_pre_hook

import histoscope as hs
from histoscope import _core
from histoscope.write.optimizer_steps import LOSS_SCALE_KEY, SKIPPED_KEY

BINS = 32


def mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))


def data(i: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(i)
    x = torch.randn(64, 8, generator=generator)
    return x, x[:, :4].sum(1, keepdim=True) - x[:, 4:].sum(1, keepdim=True)


class Applied:
    """The gradients of every optimizer step taken, as the optimizer is handed them,
    keyed by the caller's step: registered after the watch, so its hook runs after."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.model = model
        self.step = 0
        self.grads: dict[int, dict[str, torch.Tensor]] = {}
        self.handle = register_optimizer_step_pre_hook(self._seen)

    def _seen(self, _optimizer, _args, _kwargs) -> None:
        self.grads[self.step] = {
            f"gradients/{n}": p.grad.detach().clone() for n, p in self.model.named_parameters()
        }


def read(run: hs.Run) -> dict[str, hs.HistogramSeries]:
    loaded = hs.load_histograms(run.dir.parent, runs=[run.name])
    return {tag: loaded[tag][run.name] for tag in loaded}


def scalars(run: hs.Run) -> dict[str, list[tuple[int, float]]]:
    out: dict[str, list[tuple[int, float]]] = {}
    for path in glob.glob(str(run.dir / "*tfevents*")):
        for point in _core.read_scalars(path)[1]:
            out.setdefault(point.tag, []).append((point.step, point.value))
    return out


def assert_histogram_of(series: hs.HistogramSeries, i: int, tensor: torch.Tensor) -> None:
    expected = hs.Histogram(tensor, bins=BINS)
    rows = series.buckets[i]
    np.testing.assert_array_equal(rows[:, 0], expected.edges[:-1])
    np.testing.assert_array_equal(rows[:, 2], expected.counts)


def train_fp16(run: hs.Run, steps: int, *, overflow_from: int | None = None, **watch) -> Applied:
    """fp16 autocast on the CPU under a GradScaler whose first scale overflows fp16 for
    several steps; ``overflow_from`` plants a bug that overflows every step from there on."""
    model = mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**28, growth_interval=10)
    run.watch(model, log="all", every=1, bins=BINS, **watch)
    applied = Applied(model)
    try:
        for i in range(steps):
            applied.step = i
            x, y = data(i % 8)
            if overflow_from is not None and i >= overflow_from:
                x = x * 6e4  # fp16's largest value is 65504
            with torch.autocast("cpu", dtype=torch.float16):
                loss = torch.nn.functional.mse_loss(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
            if overflow_from is None or i < overflow_from:
                run.log({"loss": loss.item()}, step=i)
    finally:
        applied.handle.remove()
    return applied


def test_fp16_gradients_are_the_applied_unscaled_ones_and_skips_are_recorded(tmp_path) -> None:
    with hs.init("amp", run_name="r", logdir=tmp_path) as run:
        applied = train_fp16(run, 40)
        watch = run._watches[0]
        assert watch.capture_point == "optimizer"
    skipped = sorted(set(range(40)) - set(applied.grads))
    # A first streak while the scale comes down to fp16's range, then one skip each time
    # it grows back too far (every 10 good steps).
    first = next(n for n in range(1, 40) if skipped[:n] != list(range(n))) - 1
    assert first >= 4 and len(skipped) > first
    assert watch.skipped_steps == len(skipped)
    series = read(run)
    for key in [k for k in series if k.startswith("gradients/")]:
        assert series[key].steps.tolist() == sorted(applied.grads)
        for i, step in enumerate(series[key].steps.tolist()):
            assert_histogram_of(series[key], i, applied.grads[step][key])
            assert np.isfinite(series[key].stats["max"][i])
    # Unscaled: the scaled gradients were thousands of times larger.
    assert float(np.nanmax(np.abs(series["gradients/2.weight"].stats["max"]))) < 100
    logged = scalars(run)
    assert [step for step, _ in logged[SKIPPED_KEY]] == skipped
    assert [count for _, count in logged[SKIPPED_KEY]] == list(range(1, len(skipped) + 1))
    scales = dict(logged[LOSS_SCALE_KEY])
    assert scales[0] == 2.0**28 and scales[first - 1] == 2.0 ** (28 - first + 1)
    assert scales[first] == 2.0 ** (28 - first)  # the first step applied
    assert scales[skipped[first]] >= scales[skipped[first] - 1]  # overflowed, then backed off
    assert scales[skipped[first] + 1] == scales[skipped[first]] / 2


def test_a_healthy_fp16_training_is_judged_healthy_and_never_stopped(tmp_path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", hs.HistoscopeAlert)
        policy = {"alerts": "raise", "stop_on": ("nonfinite",)}
        with hs.init("amp", run_name="r", logdir=tmp_path, **policy) as run:
            train_fp16(run, 60)
    diagnosis = hs.diagnose(tmp_path / "amp")
    assert [f for f in diagnosis if f.severity in ("warning", "error")] == []
    skipped = [f for f in diagnosis if f.kind == "skipped"]
    assert len(skipped) == 1 and skipped[0].severity == "info"
    assert "skipped" in skipped[0].message


def test_a_scaler_that_skips_every_step_from_some_step_is_an_error_there(tmp_path) -> None:
    with hs.init("amp", run_name="r", logdir=tmp_path) as run:
        applied = train_fp16(run, 70, overflow_from=40)
    assert max(applied.grads) < 40
    # The last step too, though no backward pass came after it to tell.
    assert [step for step, _ in scalars(run)[SKIPPED_KEY]][-30:] == list(range(40, 70))
    errors = [f for f in hs.diagnose(tmp_path / "amp") if f.severity == "error"]
    assert [(f.kind, f.first_step) for f in errors] == [("skipped", 40)]
    assert "every step" in errors[0].message


def test_a_run_stops_when_its_scaler_skips_every_step(tmp_path) -> None:
    with pytest.raises(hs.TrainingProblem) as raised:
        policy = {"alerts": "raise", "stop_on": ("skipped",)}
        with hs.init("amp", run_name="r", logdir=tmp_path, **policy) as run:
            train_fp16(run, 120, overflow_from=40)
    alert = raised.value.finding
    assert alert.kind == "skipped" and alert.finding.first_step == 40


def test_accumulated_gradients_are_captured_once_per_optimizer_step(tmp_path) -> None:
    model = mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    with hs.init("acc", run_name="r", logdir=tmp_path) as run:
        run.watch(model, every=1, bins=BINS)
        applied = Applied(model)
        for i in range(24):
            applied.step = i // 4
            x, y = data(i)
            (torch.nn.functional.mse_loss(model(x), y) / 4).backward()
            if i % 4 == 3:
                optimizer.step()
                optimizer.zero_grad(set_to_none=i % 8 == 3)  # both ways of clearing
                run.log({"loss": 0.0}, step=i // 4)
    applied.handle.remove()
    series = read(run)
    assert series["gradients/0.weight"].steps.tolist() == list(range(6))
    for key, s in series.items():
        for step in range(6):
            assert_histogram_of(s, step, applied.grads[step][key])


def test_a_model_no_optimizer_steps_is_captured_as_each_backward_pass_ends(tmp_path) -> None:
    model = mlp()
    seen: list[dict[str, torch.Tensor]] = []
    with hs.init("manual", run_name="r", logdir=tmp_path) as run:
        watch = run.watch(model, every=2, bins=BINS)
        for i in range(6):
            x, y = data(i)
            torch.nn.functional.mse_loss(model(x), y).backward()
            seen.append({f"gradients/{n}": p.grad.clone() for n, p in model.named_parameters()})
            with torch.no_grad():  # a hand-written update, then the gradients cleared
                for p in model.parameters():
                    p -= 0.05 * p.grad
                    p.grad = None
        assert watch.capture_point == "backward"
    series = read(run)
    assert series["gradients/0.bias"].steps.tolist() == [0, 2, 4]
    for key, s in series.items():
        for i, step in enumerate([0, 2, 4]):
            assert_histogram_of(s, i, seen[step][key])


def test_a_named_optimizer_is_the_only_one_whose_steps_capture(tmp_path) -> None:
    model = mlp()
    mine = torch.optim.SGD(model.parameters(), lr=0.01)
    other = torch.optim.SGD(model.parameters(), lr=0.0)
    with hs.init("named", run_name="r", logdir=tmp_path) as run:
        run.watch(model, every=1, bins=BINS, optimizer=mine)
        for i in range(5):
            x, y = data(i)
            torch.nn.functional.mse_loss(model(x), y).backward()
            other.step()  # an optimizer the watch was not told of: not a capture point
            if i % 2 == 0:
                mine.step()
            mine.zero_grad()
    # Backward passes 1 and 3 took no step of `mine`: with no loss scaler, no step was
    # skipped; the steps are `mine`'s.
    assert read(run)["gradients/0.bias"].steps.tolist() == [0, 1, 2]
    assert SKIPPED_KEY not in scalars(run)


def test_optimizer_must_be_an_optimizer(tmp_path) -> None:
    with hs.init("bad", logdir=tmp_path) as run:
        with pytest.raises(TypeError, match="optimizer must be a torch.optim.Optimizer"):
            run.watch(mlp(), optimizer="sgd")


def test_a_loop_that_clips_logs_the_gradients_before_clipping(tmp_path) -> None:
    model = mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    seen: list[dict[str, torch.Tensor]] = []
    with hs.init("clip", run_name="r", logdir=tmp_path) as run:
        run.watch(model, every=1, bins=BINS)
        for i in range(6):
            x, y = data(i)
            (100 * torch.nn.functional.mse_loss(model(x), y)).backward()
            seen.append({f"gradients/{n}": p.grad.clone() for n, p in model.named_parameters()})
            assert torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1) > 0.1
            optimizer.step()
            optimizer.zero_grad()
    series = read(run)
    for key, s in series.items():
        assert s.steps.tolist() == list(range(6))
        for step in range(6):
            assert_histogram_of(s, step, seen[step][key])


def train_clipped_under_scaler(
    run: hs.Run, steps: int
) -> tuple[Applied, dict[int, dict[str, torch.Tensor]]]:
    """``scaler.unscale_``, ``clip_grad_norm_`` (which changes every step), then
    ``scaler.step``; returns the steps applied and the gradients as unscaled."""
    model = mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**28, growth_interval=10)
    unscaled: dict[int, dict[str, torch.Tensor]] = {}
    run.watch(model, every=1, bins=BINS)
    applied = Applied(model)
    try:
        for i in range(steps):
            applied.step = i
            x, y = data(i % 8)
            with torch.autocast("cpu", dtype=torch.float16):
                loss = 100 * torch.nn.functional.mse_loss(model(x), y)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            unscaled[i] = {f"gradients/{n}": p.grad.clone() for n, p in model.named_parameters()}
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
            assert not torch.isfinite(norm) or norm > 0.1
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
    finally:
        applied.handle.remove()
    return applied, unscaled


def test_a_loop_that_clips_under_a_scaler_logs_the_unscaled_gradients_before_clipping(
    tmp_path,
) -> None:
    """Every step the optimizer applies is logged as the scaler unscaled it, before
    clipping (the scaler, found at the first backward pass, is caught unscaling from the
    first step on); the training is judged healthy."""
    gc.collect()  # earlier tests' scalers: the one in use must be the only one
    with warnings.catch_warnings():
        warnings.simplefilter("error", hs.HistoscopeAlert)
        with hs.init("clip", run_name="r", logdir=tmp_path) as run:
            applied, unscaled = train_clipped_under_scaler(run, 40)
    steps = sorted(applied.grads)
    assert len(steps) >= 15 and steps[0] >= 4  # a first streak of skips, then a few more
    series = read(run)
    for key in [k for k in series if k.startswith("gradients/")]:
        assert series[key].steps.tolist() == steps
        for i, step in enumerate(steps):
            assert_histogram_of(series[key], i, unscaled[step][key])
    assert [s for s, _ in scalars(run)[SKIPPED_KEY]] == sorted(set(range(40)) - set(steps))
    diagnosis = hs.diagnose(tmp_path / "clip")
    assert [(f.kind, f.severity) for f in diagnosis] == [("skipped", "info")]


def test_a_scaler_an_earlier_training_left_is_not_taken_for_this_ones(tmp_path) -> None:
    """A notebook's earlier cell trained under a GradScaler: it is still alive, and
    still has a scale. A training with a scaler of its own logs by that one alone; a
    training with none records no skipped step and no loss scale."""
    gc.collect()
    earlier = torch.amp.GradScaler("cpu", init_scale=2.0**10)
    earlier.scale(torch.ones(()))
    with hs.init("clip", run_name="r", logdir=tmp_path) as run:
        applied, unscaled = train_clipped_under_scaler(run, 30)
    steps = sorted(applied.grads)
    for key, series in read(run).items():
        assert series.steps.tolist() == steps, key
        for i, step in enumerate(steps):
            assert_histogram_of(series, i, unscaled[step][key])
    model = mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    with hs.init("plain", run_name="r", logdir=tmp_path) as plain:
        plain.watch(model, every=1, bins=BINS)
        for i in range(5):
            x, y = data(i)
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
            optimizer.zero_grad()
    assert read(plain)["gradients/0.weight"].steps.tolist() == list(range(5))
    assert SKIPPED_KEY not in scalars(plain) and LOSS_SCALE_KEY not in scalars(plain)
    assert earlier.get_scale() == 2.0**10  # never stepped, never touched


def test_a_gan_logs_each_half_as_its_own_optimizer_applies_it(tmp_path) -> None:
    """The discriminator's gradients from the generator's pass (which no optimizer
    applies: it is cleared before the next discriminator step) are neither logged nor
    taken for skipped steps; each half is logged at its own optimizer's steps."""
    torch.manual_seed(0)
    generator = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    critic = torch.nn.Sequential(torch.nn.Linear(2, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    opt_g = torch.optim.Adam(generator.parameters(), lr=1e-3)
    opt_d = torch.optim.Adam(critic.parameters(), lr=1e-3)
    bce = torch.nn.functional.binary_cross_entropy_with_logits
    seen: dict[str, dict[int, dict[str, torch.Tensor]]] = {"g": {}, "d": {}}
    with hs.init("gan", run_name="r", logdir=tmp_path) as run:
        run.watch(generator, every=1, bins=BINS, filter="2")
        run.watch(critic, every=1, bins=BINS, filter="0")
        for i in range(8):
            real = torch.randn(32, 2, generator=torch.Generator().manual_seed(i)) + 3
            fake = generator(torch.randn(32, 4))
            opt_d.zero_grad()
            d_loss = bce(critic(real), torch.ones(32, 1)) + bce(
                critic(fake.detach()), torch.zeros(32, 1)
            )
            d_loss.backward()
            seen["d"][i] = {f"gradients/{n}": p.grad.clone() for n, p in critic.named_parameters()}
            opt_d.step()
            opt_g.zero_grad()
            bce(critic(fake), torch.ones(32, 1)).backward()  # reaches the critic too
            seen["g"][i] = {
                f"gradients/{n}": p.grad.clone() for n, p in generator.named_parameters()
            }
            opt_g.step()
    series = read(run)
    assert SKIPPED_KEY not in scalars(run)
    for half, keys in (("g", ["gradients/2.weight", "gradients/2.bias"]),
                       ("d", ["gradients/0.weight", "gradients/0.bias"])):  # fmt: skip
        for key in keys:
            assert series[key].steps.tolist() == list(range(8))
            for step in range(8):
                assert_histogram_of(series[key], step, seen[half][step][key])
