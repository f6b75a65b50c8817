"""Sharded watch: whole-tensor histograms of FSDP2, HSDP, tensor-parallel and FSDP1 models,
from real gloo groups of four processes on the CPU (`sharded_ranks`).

Every scenario runs in one group, started once for the module. For each
parameter and gradient at each logged step, the histogram rank 0 wrote must
have the edges ``Histogram(full_tensor)`` has, and NumPy's counts of the
gathered full tensor on those edges, count for count.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("torch.distributed.tensor", reason="DTensor needs torch 2.4 or newer")
if not torch.distributed.is_available():  # pragma: no cover - torch built without it
    pytest.skip("torch.distributed is not available", allow_module_level=True)

from sharded_ranks import (  # noqa: E402
    CHECKS,
    SCALED_STEPS,
    SCENARIOS,
    STEPS,
    drilled,
    faults,
    ran_in,
    scenarios,
)
from whole_tensors import assert_whole_tensors, by_key, written  # noqa: E402

WORLD = 4
SECONDS = 600.0


@pytest.fixture(scope="module")
def sharded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every scenario's folder, after one run of all of them on four ranks."""
    out = tmp_path_factory.mktemp("sharded")
    names = list(SCENARIOS) + list(CHECKS)
    codes, errors = ran_in(out, WORLD, scenarios, SECONDS, names)
    assert codes == [0] * WORLD, errors or f"exit codes {codes}"
    return out


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_each_histogram_is_the_whole_tensors(sharded: Path, scenario: str) -> None:
    folder = sharded / scenario
    expected = by_key(kv for f in folder.glob("expected*.npz") for kv in np.load(f).items())
    series = written(folder)
    assert sorted(k for k in series if not k.startswith("activations/")) == sorted(expected)
    for key, steps in expected.items():
        assert series[key].steps.tolist() == sorted(steps), key
        assert_whole_tensors(series[key], steps, key)


@pytest.mark.parametrize("scenario", [s for s in SCENARIOS if s != "partial_and_replicate"])
def test_two_collectives_per_logged_step(sharded: Path, scenario: str) -> None:
    counted = json.loads((sharded / scenario / "collectives.json").read_text())
    assert counted == [2] * STEPS


def test_keys_are_the_original_names(sharded: Path) -> None:
    names = {"0.weight", "0.bias", "2.weight", "2.bias", "3.weight", "3.bias"}
    for scenario in SCENARIOS:
        if scenario == "partial_and_replicate":
            continue
        keys = set(written(sharded / scenario))
        logged = {k.split("/", 1)[1] for k in keys if not k.startswith("activations/")}
        # The pipeline's two stages hold the first and the second linear layer.
        expected = {n for n in names if n[0] in "02"} if scenario == "pipeline_stages" else names
        assert logged == expected, scenario


def test_activations_stay_the_writing_ranks_own(sharded: Path) -> None:
    series = written(sharded / "fsdp2")
    shapes = {"activations/0": 6 * 7, "activations/1": 6 * 7, "activations/2": 6 * 3}
    for key, numel in shapes.items():
        assert series[key].stats["count"].tolist() == [numel] * STEPS


def test_a_scheme_that_cannot_be_merged_is_named_once_and_never_logged_as_a_slice(
    sharded: Path,
) -> None:
    said = json.loads((sharded / "refused" / "warnings.json").read_text())
    assert said == [
        "ShardedWarning: histoscope watch of Module: DeepSpeed ZeRO-3 partitions outside a "
        "ZeRO-3 optimizer are not supported, so these parameters and their gradients are not "
        "logged: partitioned"
    ]
    assert list(written(sharded / "refused")) == ["parameters/plain"]


def test_a_stopped_or_dead_peer_costs_only_the_timeout(tmp_path: Path) -> None:
    for run in drilled(faults, tmp_path, SECONDS, "Module").values():
        assert run["parameters/weight"].steps.tolist() == [0]
        assert run["parameters/weight"].stats["count"].tolist() == [12.0]


def test_fsdp2_in_fp16_logs_gradients_as_its_scaler_unscales_them(sharded: Path) -> None:
    """Issue 41: under a GradScaler the capture moves to its unscale_; the steps it skips
    log no histogram and are recorded as skipped."""
    from histoscope import _core
    from histoscope.write.optimizer_steps import SKIPPED_KEY

    folder = sharded / "fsdp2_fp16_scaler"
    skipped = json.loads((folder / "skipped.json").read_text())
    assert 0 < len(skipped) < SCALED_STEPS - 2, skipped
    expected = by_key(np.load(folder / "expected.npz").items())
    applied = [step for step in range(SCALED_STEPS) if step not in skipped]
    series = written(folder)
    assert sorted(series) == sorted(expected)
    for key, steps in expected.items():
        assert series[key].steps.tolist() == applied, key
        assert_whole_tensors(series[key], steps, key)
    recorded = sorted(
        point.step
        for path in (folder / "p" / "r").glob("*tfevents*")
        for point in _core.read_scalars(str(path))[1]
        if point.tag == SKIPPED_KEY
    )
    assert recorded == skipped
    # A model trained with no scaler afterwards, that one still alive: logged as usual.
    after = folder / "no_scaler_after"
    expected = by_key(np.load(after / "expected.npz").items())
    series = written(after)
    for key, steps in expected.items():
        assert series[key].steps.tolist() == sorted(steps), key
        assert_whole_tensors(series[key], steps, key)
