"""Lightning's sharding strategies: the callback's histograms are the whole tensors, from real
fits on two CPU processes over gloo (`strategy_ranks`).

For each of FSDP (``FSDPStrategy``), FSDP2 and FSDP2 with tensor parallelism
(``ModelParallelStrategy``), and DeepSpeed ZeRO-2 and ZeRO-3
(``DeepSpeedStrategy``), every parameter and gradient that rank 0 wrote, at each
global step, must have the edges ``Histogram(full)`` has, where ``full`` is the
tensor the strategy's own gather gives at that point, and NumPy's counts of
``full`` on those edges, count for count.
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

from strategy_ranks import SETUPS, STEPS  # noqa: E402

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
    assert json.loads((out / "done.json").read_text()) == {"global_step": STEPS}
    return out / "histoscope-logs" / "lightning"


@pytest.mark.parametrize("setup", SETUPS)
def test_each_histogram_is_the_gathered_tensor(tmp_path: Path, setup: str) -> None:
    logs = fitted(tmp_path, setup)
    loaded = hs.load_histograms(logs)
    series = {tag: next(iter(runs.values())) for tag, runs in loaded.items()}
    by_key: dict[str, dict[int, np.ndarray]] = {}
    for name, values in np.load(tmp_path / "expected.npz").items():
        step, key = name.split(":", 1)
        by_key.setdefault(key, {})[int(step)] = values
    # Under the LightningModule's own names, no wrapper's in them.
    assert sorted(series) == sorted(by_key)
    assert {key.split("/", 1)[1] for key in series} == NAMES
    for key, steps in by_key.items():
        # One capture per optimizer step, at the trainer's global step.
        assert series[key].steps.tolist() == list(range(STEPS)), key
        for i, step in enumerate(series[key].steps.tolist()):
            full = steps[step]
            buckets = series[key].buckets[i]
            edges = np.append(buckets[:, 0], buckets[-1, 1])
            where = f"{setup}: {key} at step {step}"
            np.testing.assert_array_equal(edges, hs.Histogram(full, bins=64).edges, err_msg=where)
            counts, _ = np.histogram(full, bins=edges)
            np.testing.assert_array_equal(buckets[:, 2], counts, err_msg=where)
            stats = {name: values[i] for name, values in series[key].stats.items()}
            assert (stats["count"], stats["min"], stats["max"]) == (
                full.size,
                full.min(),
                full.max(),
            ), where
