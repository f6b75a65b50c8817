"""DeepSpeed ZeRO 1, 2 and 3: whole-tensor histograms of a watched engine, from real gloo groups
of two processes on the CPU (`deepspeed_ranks`).

Every scenario runs in one group, started once for the module. For each
parameter and gradient at each optimizer step, the histogram rank 0 wrote
must have the edges ``Histogram(full)`` has, where ``full`` is what
DeepSpeed's ``safe_get_full_fp32_param`` or ``safe_get_full_grad`` gathers,
and NumPy's counts of ``full`` on those edges, count for count.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

if importlib.util.find_spec("deepspeed") is None:
    pytest.skip("DeepSpeed is not installed", allow_module_level=True)

from deepspeed_ranks import MATRICES, SETUPS, STEPS, faults, scenarios  # noqa: E402
from sharded_ranks import drilled, ran_in  # noqa: E402
from whole_tensors import assert_whole_tensors, by_key, written  # noqa: E402

WORLD = 2
SECONDS = 900.0
NAMES = {"0.weight", "0.bias", "2.weight", "2.bias", "3.weight", "3.bias"}


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every scenario's folder, after one run of all of them on two ranks."""
    out = tmp_path_factory.mktemp("deepspeed")
    codes, errors = ran_in(out, WORLD, scenarios, SECONDS, list(SETUPS))
    assert codes == [0] * WORLD, errors or f"exit codes {codes}"
    return out


@pytest.mark.parametrize("scenario", list(SETUPS))
def test_each_histogram_is_the_gathered_tensors(trained: Path, scenario: str) -> None:
    folder = trained / scenario
    expected = by_key(np.load(folder / "expected.npz").items())
    engine = json.loads((folder / "engine.json").read_text())
    setup = SETUPS[scenario]
    assert (engine["stage"], engine["offload"], engine["accumulation"]) == (
        setup.stage,
        setup.offload,
        setup.accumulation,
    ), engine
    dtype = "bfloat16" if setup.bf16 else "float16" if setup.fp16 else "float32"
    assert engine["dtype"] == f"torch.{dtype}", engine
    series = {k: v for k, v in written(folder).items() if not k.startswith("activations/")}
    # The module's own names, no engine's "module." before them.
    assert sorted(series) == sorted(expected)
    assert {key.split("/", 1)[1] for key in series} == (MATRICES if setup.filtered else NAMES)
    # fp16: the steps the loss scale overflowed at were skipped, and are recorded so.
    # ZeRO-0's engine.backward() leaves the loss unscaled while its fp16 optimizer still
    # divides by the scale (deepspeedai/DeepSpeed#8393): nothing overflows, and what is
    # applied, and logged, is the gradient divided by the scale.
    skipped = engine["skipped"]
    if setup.fp16 and setup.stage > 0:
        assert 0 < len(skipped) < setup.steps - 2, skipped
    elif not setup.fp16:
        assert skipped == []
    assert skipped_steps(folder) == skipped
    for key, steps in expected.items():
        # One capture per optimizer step applied, at the engine's global step.
        applied = [step for step in range(setup.steps) if step not in skipped]
        assert series[key].steps.tolist() == applied, key
        assert_whole_tensors(series[key], steps, key)


def skipped_steps(folder: Path) -> list[int]:
    """The steps run ``r`` recorded as skipped by the loss scaler."""
    from histoscope import _core
    from histoscope.write.optimizer_steps import SKIPPED_KEY

    return sorted(
        point.step
        for path in (folder / "p" / "r").glob("*tfevents*")
        for point in _core.read_scalars(str(path))[1]
        if point.tag == SKIPPED_KEY
    )


@pytest.mark.parametrize("scenario", [s for s, setup in SETUPS.items() if setup.activations])
def test_activations_are_the_first_forward_pass_of_each_step(trained: Path, scenario: str) -> None:
    series = written(trained / scenario)
    # Leaf modules' outputs on rank 0, for a batch of 6: a step's first micro-batch alone.
    shapes = {"activations/0": 6 * 7, "activations/1": 6 * 7, "activations/2": 6 * 3}
    shapes["activations/3"] = 6 * 3
    for key, numel in shapes.items():
        assert series[key].steps.tolist() == list(range(STEPS)), key
        assert series[key].stats["count"].tolist() == [numel] * STEPS, key


def test_a_stopped_or_dead_peer_costs_only_the_timeout(tmp_path: Path) -> None:
    runs = drilled(faults, tmp_path, SECONDS, "Sequential")
    for run in runs.values():
        assert {key.split("/", 1)[1] for key in run} == NAMES
        assert run["parameters/0.weight"].steps.tolist() == [0]
        assert run["parameters/0.weight"].stats["count"].tolist() == [35.0]
