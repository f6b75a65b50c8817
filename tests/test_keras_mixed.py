"""The Keras 3 callback under ``mixed_float16``: real trainings on the CPU, on each backend.

Each backend trains in a process of its own (tests/keras_mixed_training.py). A
``LossScaleOptimizer`` skips the steps whose gradients overflow float16; the
test compares what the callback logged with what the test's own callback saw:
the gradients the inner SGD applied, count for count on the same edges, the
skipped steps and the loss scales, and `diagnose` on a healthy run and on one
that overflows every step from a planted bug on.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from keras_runs import series as histograms
from keras_runs import trained_on

import histoscope as hs

pytest.importorskip("keras")

SCRIPT = Path(__file__).with_name("keras_mixed_training.py")
EVERY, BINS, PLANT_AT, STEPS = 2, 16, 6, 32
WEIGHTS = ("hidden/kernel", "hidden/bias", "out/kernel", "out/bias")
SKIPPED, LOSS_SCALE = "amp/skipped_steps", "amp/loss_scale"


@pytest.fixture(scope="module", params=["jax", "tensorflow", "torch"])
def trained(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp(f"keras-mixed-{request.param}")
    summary = trained_on(request.param, SCRIPT, out)
    summary["arrays"] = dict(np.load(out / "healthy.npz"))
    return summary


def events(summary: dict, run: str) -> list[tuple[int, str, float | None]]:
    """``(step, tag, scalar value or None for a histogram)`` in the order they were written."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    from tensorboard.util import tensor_util

    written = []
    for path in sorted(Path(summary[run]["path"]).parent.glob("events.out.tfevents.*")):
        for event in EventFileLoader(str(path)).Load():
            for value in event.summary.value:
                array = tensor_util.make_ndarray(value.tensor)
                scalar = float(array) if array.ndim == 0 else None
                written.append((event.step, value.tag, scalar))
    return written


def logged_steps(summary: dict, run: str) -> list[int]:
    """The steps the test's callback saw applied that are logging steps."""
    return [step for step, _ in summary[run]["applied"] if step % EVERY == 0]


def test_the_run_skips_steps_and_applies_others(trained: dict) -> None:
    """The setup the other tests rely on: a LossScaleOptimizer (given, or made by
    ``compile`` under mixed_float16) that skipped the first steps, then applied."""
    healthy = trained["healthy"]
    assert healthy["optimizer"] == trained["overflow"]["optimizer"] == "LossScaleOptimizer"
    assert healthy["steps"] == STEPS and healthy["loss"][-1] < healthy["loss"][0]
    skipped = [step for step, _ in healthy["skipped"]]
    assert len(skipped) >= 8 and skipped == list(range(len(skipped)))
    assert len(logged_steps(trained, "healthy")) >= 6
    if trained["backend"] != "torch":
        assert healthy["jit_compile"]


def test_gradients_are_those_the_inner_optimizer_applied(trained: dict) -> None:
    logged = histograms(trained, "healthy")
    steps = logged_steps(trained, "healthy")
    for name in WEIGHTS:
        series = logged[f"gradients/{name}"]
        assert series.steps.tolist() == steps, name
        for index, step in enumerate(steps):
            applied = hs.Histogram(trained["arrays"][f"gradient|{step}|{name}"], bins=BINS)
            buckets = series.buckets[index]
            edges = np.append(buckets[:, 0], buckets[-1, 1])
            np.testing.assert_array_equal(edges, applied.edges, err_msg=f"{name} at {step}")
            np.testing.assert_array_equal(buckets[:, 2], applied.counts, err_msg=f"{name} {step}")


def test_parameters_and_activations_are_logged_at_the_same_steps(trained: dict) -> None:
    logged = histograms(trained, "healthy")
    steps = logged_steps(trained, "healthy")
    assert {key.split("/")[0] for key in logged} == {"parameters", "gradients", "activations"}
    for key, series in logged.items():
        assert series.steps.tolist() == steps, key
    for name in WEIGHTS:
        series = logged[f"parameters/{name}"]
        for index, step in enumerate(steps):
            weights = hs.Histogram(trained["arrays"][f"before|{step}|{name}"], bins=BINS)
            np.testing.assert_array_equal(series.buckets[index][:, 2], weights.counts)


def test_skipped_steps_are_counted_with_the_scale_they_overflowed_at(trained: dict) -> None:
    written = events(trained, "healthy")
    skipped = trained["healthy"]["skipped"]
    counts = [(step, value) for step, tag, value in written if tag == SKIPPED]
    assert counts == [(step, float(n)) for n, (step, _) in enumerate(skipped, start=1)]
    scales = [(step, value) for step, tag, value in written if tag == LOSS_SCALE]
    by_step = dict(skipped + trained["healthy"]["applied"])
    expected = [step for step, _ in skipped] + logged_steps(trained, "healthy")
    assert scales == [(step, by_step[step]) for step in expected]
    assert scales[0][1] == 2.0**28


def test_the_loss_scale_of_a_logged_step_follows_its_histograms(trained: dict) -> None:
    written = events(trained, "healthy")
    for step in logged_steps(trained, "healthy"):
        at = [(tag, value) for s, tag, value in written if s == step]
        assert at[-1][0] == LOSS_SCALE, (step, at)
        assert sum(value is None for _, value in at) == 3 * len(WEIGHTS) - 2, step


def test_a_healthy_run_is_only_skipped_info_and_is_not_stopped(trained: dict) -> None:
    findings = hs.diagnose(Path(trained["healthy"]["path"]).parent)
    assert [(f.kind, f.severity) for f in findings] == [("skipped", "info")], findings
    skipped = [step for step, _ in trained["healthy"]["skipped"]]
    assert (findings[0].first_step, findings[0].last_step) == (skipped[0], skipped[-1])
    # stop_on=("nonfinite",): no step was judged a reason to stop.
    assert trained["healthy"]["steps"] == STEPS
    assert "stopping the training" not in trained["stderr"]


def test_every_step_overflowing_from_a_planted_bug_is_a_skipped_error(trained: dict) -> None:
    overflow = trained["overflow"]
    assert [step for step, _ in overflow["skipped"]] == list(range(PLANT_AT, STEPS))
    findings = hs.diagnose(Path(overflow["path"]).parent)
    errors = [(f.kind, f.first_step, f.last_step) for f in findings if f.severity == "error"]
    assert errors == [("skipped", PLANT_AT, STEPS - 1)], findings
    logged = histograms(trained, "overflow")
    for key, series in logged.items():
        assert series.steps.max() < PLANT_AT, key
