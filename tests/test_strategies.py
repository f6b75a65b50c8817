"""The trainers' distributed setups: the callbacks' histograms are the whole tensors, from real
trainings on two CPU processes over gloo.

Lightning (`strategy_ranks`): FSDP (``FSDPStrategy``, its root unit or units made
in ``configure_model``), FSDP2 and FSDP2 with tensor parallelism
(``ModelParallelStrategy``), DeepSpeed ZeRO-2 and ZeRO-3 (``DeepSpeedStrategy``).
The Hugging Face ``Trainer`` (`trainer_ranks`, under torchrun):
DistributedDataParallel, and DeepSpeed ZeRO-2 and ZeRO-3 through
``TrainingArguments(deepspeed=...)`` and accelerate. Every parameter and gradient
that rank 0 wrote, at each step, must have the edges ``Histogram(full)`` has,
where ``full`` is the tensor the setup's own gather gives at that point, and
NumPy's counts of ``full`` on those edges, count for count.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import histoscope as hs

if importlib.util.find_spec("lightning") is None:
    pytest.skip("Lightning is not installed", allow_module_level=True)

import strategy_ranks  # noqa: E402
import trainer_ranks  # noqa: E402
from whole_tensors import assert_whole_tensors, by_key  # noqa: E402

NAMES = {"net.0.weight", "net.0.bias", "net.2.weight", "net.2.bias", "net.3.weight", "net.3.bias"}


def fitted(out: Path, setup: str) -> Path:
    """The log directory of one fit of ``setup`` on two processes."""
    script = Path(__file__).with_name("strategy_ranks.py")
    env = {**os.environ, "PL_DISABLE_FORK": "1"}
    done = subprocess.run(
        [sys.executable, str(script), setup, str(out)], env=env, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    assert json.loads((out / "done.json").read_text()) == {"global_step": strategy_ranks.STEPS}
    return out / "histoscope-logs" / "lightning"


def trained(out: Path, setup: str) -> subprocess.CompletedProcess[str]:
    """One training of ``setup`` by the HF Trainer on two processes, started by torchrun."""
    script = Path(__file__).with_name("trainer_ranks.py")
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2"]
    command += ["--standalone", str(script), setup, str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    return done


@pytest.mark.parametrize("setup", strategy_ranks.SETUPS)
def test_lightning_histograms_are_the_gathered_tensors(tmp_path: Path, setup: str) -> None:
    logs = fitted(tmp_path, setup)
    # At the trainer's global step, from 0: one capture per optimizer step.
    assert_gathered(tmp_path, logs, setup, list(range(strategy_ranks.STEPS)))


@pytest.mark.parametrize("setup", trainer_ranks.SETUPS)
def test_trainer_histograms_are_the_gathered_tensors(tmp_path: Path, setup: str) -> None:
    trained(tmp_path, setup)
    assert [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)] == [3, 3]
    logs = tmp_path / "trainer" / "histoscope-logs" / "transformers"
    # Rank 0 alone made a run, though accelerate calls both ranks the main process when
    # DeepSpeed runs on the CPU.
    assert [run.name for run in logs.iterdir()] == [
        Path(json.loads((tmp_path / "run.json").read_text())).name
    ]
    # At the step the Trainer logs that batch's loss at: state.global_step + 1.
    assert_gathered(tmp_path, logs, setup, [1, 2, 3])


def test_trainer_stop_on_under_ddp_stops_both_processes_at_one_step(tmp_path: Path) -> None:
    done = trained(tmp_path, "ddp_nan")
    # The loss turns NaN in the third batch, logged at step 3: both stop after it.
    assert [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)] == [3, 3]
    assert "stopping the training after this step (stop_on)" in done.stderr
    assert "nonfinite" in done.stderr
    logs = tmp_path / "trainer" / "histoscope-logs" / "transformers"
    written = hs.load_histograms(logs)
    series = next(iter(written["gradients/net.0.weight"].values()))
    assert series.steps.tolist() == [1, 2, 3]
    # Step 3's gradients are NaN throughout: none is counted in a bucket.
    assert series.stats["count"].tolist() == [60.0, 60.0, 0.0]


def assert_gathered(out: Path, logs: Path, setup: str, steps_logged: list[int]) -> None:
    loaded = hs.load_histograms(logs)
    series = {tag: next(iter(runs.values())) for tag, runs in loaded.items()}
    expected = by_key(np.load(out / "expected.npz").items())
    # Under the module's own names, no wrapper's in them.
    assert sorted(series) == sorted(expected)
    assert {key.split("/", 1)[1] for key in series} == NAMES
    for key, steps in expected.items():
        assert series[key].steps.tolist() == steps_logged, key
        assert_whole_tensors(series[key], steps, f"{setup}: {key}")
