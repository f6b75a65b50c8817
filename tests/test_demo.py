"""`histoscope demo`: a NumPy network trained, its histograms logged, read back and charted."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import numpy as np
import pytest

import histoscope

TAGS = [
    "activations/hidden",
    "activations/logits",
    "gradients/hidden",
    "gradients/output",
    "weights/hidden",
    "weights/output",
]
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
    process = _demo("--out", str(out), "--steps", "60")
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr
    return out, stdout


def test_the_logged_histograms_read_back_with_their_statistics(demo: tuple[Path, str]) -> None:
    out, printed = demo
    logdir = out / "logs" / "demo"
    assert f"logged histograms under {logdir}" in printed
    data = histoscope.load_histograms(logdir)
    assert list(data) == TAGS
    steps = [*range(0, 60, 5), 59]
    for tag in TAGS:
        assert list(data[tag]) == RUNS
        for series in data[tag].values():
            assert series.steps.tolist() == steps
            counts = np.array([b[:, 2].sum() for b in series.buckets])
            np.testing.assert_array_equal(series.stats["count"], counts)
            assert np.all(series.stats["nonfinite"] == 0)
    assert np.all(data["weights/hidden"]["lr-0.3"].stats["count"] == 2 * 64)
    assert np.all(data["activations/hidden"]["lr-0.3"].stats["count"] == 128 * 64)
    assert np.all(data["gradients/output"]["lr-0.3"].stats["std"] > 0)
    first, last = (data["weights/output"]["lr-0.3"].stats["std"][i] for i in (0, -1))
    assert first != last, "training moved the weights"


def test_the_chart_pages_are_saved_and_indexed(demo: tuple[Path, str]) -> None:
    out, printed = demo
    charts = out / "charts"
    index = charts / "index.html"
    assert f"open {index}" in printed
    links = re.findall(r'<a href="([^"]+)">([^<]+)</a>', index.read_text(encoding="utf-8"))
    assert [title for _, title in links] == [f"{tag} ({run})" for tag in TAGS for run in RUNS]
    for target, title in links:
        page = (charts / target).read_text(encoding="utf-8")
        assert f"<title>{title}</title>" in page
        assert 'role="application"' in page


def test_view_serves_the_demo_log_directory(tmp_path: Path) -> None:
    process = _demo("--out", str(tmp_path), "--steps", "10", "--view", "--port", "0")
    try:
        address = None
        for line in process.stdout:
            match = re.search(r"histoscope view: (http://\S+/)", line)
            if match:
                address = match.group(1)
                break
        assert address, process.stderr.read()
        with urllib.request.urlopen(address + "api/runs", timeout=10) as response:
            assert json.load(response)["runs"] == RUNS
    finally:
        process.terminate()
        process.wait(timeout=10)
