"""`histoscope demo`: a NumPy network trained, its histograms logged, read back and charted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from browser import PRINTED_ADDRESS, signed_in

import histoscope

LAYERS = {"0": (2, 256), "2": (256, 256), "4": (256, 3)}
TAGS = sorted(
    [f"activations/{i}" for i in range(5)]
    + [
        f"{kind}/{layer}.{part}"
        for kind in ("gradients", "parameters")
        for layer in LAYERS
        for part in ("bias", "weight")
    ]
    + [f"spectrum/{layer}.weight" for layer in LAYERS]
)
RUNS = ["lr-0.03", "lr-0.3"]


def _demo(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "histoscope.cli", "demo", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("demo")
    process = _demo("--out", str(out), "--steps", "60", "--spectral")
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr
    return out, stdout


def test_run_watch_logged_every_layer_with_hundreds_of_values(demo: tuple[Path, str]) -> None:
    out, printed = demo
    logdir = out / "logs" / "demo"
    assert f"logged histograms under {logdir}" in printed
    data = histoscope.load_histograms(logdir)
    assert list(data) == TAGS
    for tag in TAGS:
        assert list(data[tag]) == RUNS
        for series in data[tag].values():
            assert series.steps.tolist() == list(range(0, 60, 5))
            counts = np.array([b[:, 2].sum() for b in series.buckets])
            np.testing.assert_array_equal(series.stats["count"], counts)
            assert np.all(series.stats["nonfinite"] == 0)
    for layer, (fan_in, fan_out) in LAYERS.items():
        weights = data[f"parameters/{layer}.weight"]["lr-0.3"]
        assert np.all(weights.stats["count"] == fan_in * fan_out)
    assert np.all(data["activations/1"]["lr-0.3"].stats["count"] == 128 * 256)
    assert np.all(data["activations/1"]["lr-0.3"].stats["min"] == 0)  # a ReLU
    moved = {
        run: abs(np.diff(data["parameters/4.weight"][run].stats["std"][[0, -1]]))[0] for run in RUNS
    }
    assert moved["lr-0.3"] > 3 * moved["lr-0.03"] > 0, moved  # ten times the rate moves more


def test_the_report_is_written_and_its_opening_is_printed(demo: tuple[Path, str]) -> None:
    out, printed = demo
    report = out / "report.html"
    assert f"open it in a browser: {report.resolve().as_uri()}" in printed
    assert f"histoscope view {out / 'logs' / 'demo'}" in printed
    text = report.read_text(encoding="utf-8")
    assert 'id="histoscope-data"' in text and "<title>histoscope report: demo</title>" in text


def test_view_serves_the_demo_log_directory(tmp_path: Path) -> None:
    process = _demo("--out", str(tmp_path), "--steps", "10", "--view", "--port", "0")
    try:
        match = None
        for line in process.stdout:
            match = PRINTED_ADDRESS.search(line)
            if match:
                break
        assert match and match.group(3), process.stderr.read()
        client = signed_in(match.group(1) + match.group(2))  # the address with its token
        with client.open(match.group(1) + "api/runs", timeout=10) as response:
            assert json.load(response)["runs"] == RUNS
    finally:
        process.terminate()
        process.wait(timeout=10)
