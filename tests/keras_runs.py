"""A Keras 3 training script run on one backend in a process of its own (Keras picks its
backend once per process), and what it wrote read back."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import histoscope as hs


def trained_on(backend: str, script: Path, out: Path) -> dict:
    """Runs ``script OUT`` with ``KERAS_BACKEND=backend`` (skips where the backend is not
    installed): its ``summary.json``, with its ``stderr``."""
    if importlib.util.find_spec(backend) is None:
        pytest.skip(f"{backend} is not installed")
    env = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "2"}
    done = subprocess.run(
        [sys.executable, str(script), str(out)], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-4000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["backend"] == backend
    summary["stderr"] = done.stderr
    return summary


def series(summary: dict, run: str) -> dict[str, hs.HistogramSeries]:
    """Each key's series of the summary's ``run`` (its run directory's only run)."""
    loaded = hs.load_histograms(Path(summary[run]["path"]).parent)
    return {key: next(iter(by_run.values())) for key, by_run in loaded.items()}
