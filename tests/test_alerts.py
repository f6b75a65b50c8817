"""Diagnosis while a run trains: real tiny trainings, judged live and afterwards by `check`.

The oracle is `histoscope.diagnose` on the files the run wrote: the live
findings at the end must equal it, and each alert must come at the first
step where `diagnose` on the file cut after that step finds it (the file cut
with TensorBoard's own protobufs, record by record).
"""

from __future__ import annotations

import dataclasses
import struct
import warnings
from pathlib import Path

import pytest
import torch
from tensorboard.compat.proto import event_pb2
from torch import nn

import histoscope as hs

STEPS = 30


def mlp(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 4)
    )


class Progress:
    """The step a training loop is at, readable after it stopped."""

    step = -1


def train(
    run: hs.Run,
    model: nn.Module,
    *,
    lr: float = 0.05,
    nan_from: int | None = None,
    steps: int = STEPS,
    every: int = 1,
    progress: Progress | None = None,
    **watch: object,
) -> int:
    """Trains ``model`` on four classes, watched every ``every`` steps; returns the steps run."""
    generator = torch.Generator().manual_seed(1)
    directions = torch.randn(4, 8, generator=generator)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    run.watch(model, log="all", every=every, **watch)  # type: ignore[arg-type]
    progress = progress or Progress()
    for step in range(steps):
        progress.step = step
        x = torch.randn(32, 8, generator=generator)
        y = (x @ directions.T).argmax(1)
        loss = nn.functional.cross_entropy(model(x), y)
        if nan_from is not None and step >= nan_from:
            loss = loss * float("nan")
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        run.log({"loss": loss.item()}, step=step)
    return steps


def without_run(findings: list[hs.Finding]) -> list[hs.Finding]:
    return [dataclasses.replace(f, run="") for f in findings]


def records(path: Path) -> list[tuple[bytes, int]]:
    """Every record of an events file, framed as written, with its event's step."""
    data, out, at = path.read_bytes(), [], 0
    while at < len(data):
        (length,) = struct.unpack_from("<Q", data, at)
        end = at + 12 + length + 4
        event = event_pb2.Event.FromString(data[at + 12 : at + 12 + length])
        out.append((data[at:end], event.step))
        at = end
    return out


def cut_after(run_dir: Path, step: int, into: Path) -> Path:
    """A copy of the run's events file holding only the records up to ``step``."""
    (path,) = run_dir.glob("events.out.tfevents.*")
    into.mkdir(parents=True, exist_ok=True)
    kept = b"".join(frame for frame, at in records(path) if at <= step)
    (into / path.name).write_bytes(kept)
    return into


CASES = {
    "healthy": dict(lr=0.05),
    "exploding": dict(lr=40.0),
    "nonfinite": dict(lr=0.05, nan_from=12),
}


@pytest.mark.parametrize("case", list(CASES))
def test_live_findings_at_the_end_equal_check_on_the_files(tmp_path: Path, case: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hs.HistoscopeAlert)
        with hs.init("p", run_name=case, logdir=tmp_path) as run:
            train(run, mlp(), **CASES[case])  # type: ignore[arg-type]
    offline = hs.diagnose(run.dir)
    assert without_run(run.findings()) == without_run(offline)
    if case != "healthy":
        assert {f.kind for f in offline if f.level >= 1} & {"exploding", "nonfinite"}


@pytest.mark.parametrize("case", ["exploding", "nonfinite"])
def test_each_alert_comes_at_the_first_step_check_would_find_it(tmp_path: Path, case: str) -> None:
    seen: list[hs.Finding] = []
    with hs.init("p", run_name=case, logdir=tmp_path / "runs", alerts=seen.append) as run:
        train(run, mlp(), **CASES[case])  # type: ignore[arg-type]
    assert seen, "a broken training alerts"
    for alert in seen:
        at = hs.diagnose(cut_after(run.dir, alert.step, tmp_path / f"cut{alert.step}"))
        found = {(f.key, f.kind): f.level for f in at}
        assert found.get((alert.key, alert.kind), -1) >= alert.level, alert.describe()
        if alert.step > 0:
            before = hs.diagnose(cut_after(run.dir, alert.step - 1, tmp_path / f"b{alert.step}"))
            earlier = {(f.key, f.kind): f.level for f in before}
            assert earlier.get((alert.key, alert.kind), -1) < alert.level, alert.describe()


def test_a_healthy_run_raises_nothing(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", hs.HistoscopeAlert)
        with hs.init("p", run_name="r", logdir=tmp_path, alerts="raise") as run:
            train(run, mlp(), steps=60)
    assert [f for f in run.findings() if f.level >= 1] == []


def test_warn_names_key_kind_step_and_evidence_once_per_finding(tmp_path: Path) -> None:
    with pytest.warns(hs.HistoscopeAlert) as caught:
        with hs.init("p", run_name="r", logdir=tmp_path) as run:
            train(run, mlp(), nan_from=12)
    alerts = [w.message.finding for w in caught if isinstance(w.message, hs.HistoscopeAlert)]
    nonfinite = [a for a in alerts if a.kind == "nonfinite" and a.key.startswith("gradients/")]
    assert nonfinite and all(a.step >= 12 for a in nonfinite)
    text = str(next(w.message for w in caught if "nonfinite" in str(w.message)))
    assert "histoscope alert at step" in text and "nonfinite (error)" in text and "[" in text
    ids = [(a.key, a.kind, a.severity) for a in alerts]
    assert len(ids) == len(set(ids)), "each finding alerts once at each severity"


@pytest.mark.parametrize("every", [1, 5])
def test_raise_stops_the_loop_within_one_logging_interval(tmp_path: Path, every: int) -> None:
    run = hs.init("p", run_name="r", logdir=tmp_path, alerts="raise", stop_on=["nonfinite"])
    progress = Progress()
    with pytest.raises(hs.TrainingProblem) as raised:
        train(run, mlp(), nan_from=7, steps=200, every=every, progress=progress)
    problem = raised.value.finding
    # The loss (logged every step) is NaN from step 7, the gradients logged from `nan_logged`:
    # the loop stops at the latest at the first forward pass after that logged step.
    nan_logged = -(-7 // every) * every
    assert problem.kind == "nonfinite" and 7 <= problem.step <= nan_logged
    assert 7 <= progress.step <= nan_logged + 1
    run.finish()
    logged = hs.load_histograms(run.dir)["gradients/0.weight"]["."].steps.tolist()
    assert logged == list(range(0, logged[-1] + 1, every)), "every logged step is in the file"
    assert progress.step - every <= logged[-1] <= progress.step


def test_raise_without_stop_on_stops_on_errors_only(tmp_path: Path) -> None:
    with hs.init("p", run_name="r", logdir=tmp_path, alerts="raise") as run:
        with pytest.warns(hs.HistoscopeAlert, match="dead"):
            for step in range(5):
                run.add_histogram("activations/relu", torch.zeros(100), step=step)  # a warning
            run.flush()
        run.add_histogram("gradients/w", torch.full((10,), float("nan")), step=5)
        with pytest.raises(hs.TrainingProblem, match="nonfinite"):
            run.flush()
        run.check_alerts()  # raised once, not at every call after


def test_a_callable_receives_each_alert_and_may_stop_the_loop(tmp_path: Path) -> None:
    class Page(Exception):
        pass

    def page(alert: hs.Finding) -> None:
        raise Page(alert.key)

    run = hs.init("p", run_name="r", logdir=tmp_path, alerts=page)
    with pytest.raises(Page):
        train(run, mlp(), nan_from=3, steps=200)
    run.finish()


def test_watch_takes_the_alert_policy_and_off_diagnoses_nothing(tmp_path: Path) -> None:
    with hs.init("p", run_name="r", logdir=tmp_path, alerts="off") as run:
        with warnings.catch_warnings():
            warnings.simplefilter("error", hs.HistoscopeAlert)
            train(run, mlp(), nan_from=3, steps=8)
        assert run.findings() == []
        with pytest.raises(ValueError, match="alerts='off'"):
            run.watch(mlp(), alerts="raise")
    run = hs.init("p", run_name="s", logdir=tmp_path)
    with pytest.raises(hs.TrainingProblem):
        train(run, mlp(), nan_from=3, steps=200, alerts="raise", stop_on=("nonfinite",))
    run.finish()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (dict(alerts="shout"), "alerts must be 'warn', 'off', 'raise' or a callable"),
        (dict(alerts="raise", stop_on=["nan"]), "stop_on: unknown kinds"),
        (dict(stop_on=["nonfinite"]), "stop_on=.* needs alerts='raise'"),
    ],
)
def test_bad_alert_arguments_are_named(tmp_path: Path, arguments: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        hs.init("p", logdir=tmp_path, **arguments)


def test_under_torch_distributed_rank_zero_decides_and_every_rank_stops_at_once(
    tmp_path: Path,
) -> None:
    import json

    from alert_ranks import NAN_FROM, stop_together
    from sharded_ranks import ran_in

    codes, errors = ran_in(tmp_path, 2, stop_together, 300.0)
    assert codes == [0, 0], errors or f"exit codes {codes}"
    stops = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    assert stops[0] is not None and stops[0] == stops[1], stops
    # NaN gradients are logged at NAN_FROM; every rank stops at its next forward pass.
    assert stops[0] == {"step": NAN_FROM + 1, "kind": "nonfinite"}


def test_histograms_wrapped_from_numpy_are_no_divergence(tmp_path: Path) -> None:
    """`numpy.histogram`'s counts carry no limits or moments: unknown, not NaN input. A
    training that logs them healthy is not stopped as diverged, live or by check."""
    import numpy as np

    rng = np.random.default_rng(0)
    with hs.init("numpy", run_name="wrapped", logdir=tmp_path, alerts="raise") as run:
        for step in range(20):
            counts, edges = np.histogram(rng.normal(size=500), bins=30)
            run.log({"parameters/fc": hs.Histogram(np_histogram=(counts, edges))}, step=step)
        live = run.findings()
    assert [f.kind for f in live if f.kind == "nonfinite"] == []
    assert [f.kind for f in hs.diagnose(tmp_path / "numpy") if f.kind == "nonfinite"] == []
