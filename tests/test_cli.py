"""`histoscope ls`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "histoscope.cli", *args], capture_output=True, text=True, timeout=60
    )


def test_ls_lists_runs_tags_steps_and_damage(fixtures: Path) -> None:
    out = run_cli("ls", str(fixtures / "corrupt"))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "run flipped: 1 histogram tag"
    assert lines[1].split() == ["hist/normal", "steps", "0..19", "(19", "steps)"]
    assert "run intact: 1 histogram tag" in lines
    assert lines[6] == "skipped as damaged:"
    assert "flipped/events.out.tfevents" in lines[7] and "bytes 3852-4224" in lines[7]


def test_ls_reports_a_file_still_being_written(fixtures: Path) -> None:
    out = run_cli("ls", str(fixtures / "truncated"))
    assert "incomplete last record (still being written?)" in out.stdout
    assert "at byte 7992" in out.stdout


def test_ls_runs_without_histograms_and_missing_dir(fixtures: Path, tmp_path: Path) -> None:
    out = run_cli("ls", str(fixtures / "scalars_only"))
    assert out.stdout.strip() == "run train: no histograms"
    missing = run_cli("ls", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "not a directory" in missing.stderr
