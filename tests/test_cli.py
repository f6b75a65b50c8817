"""`histoscope ls`."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import histoscope


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
    assert missing.returncode == 2 and "does not exist" in missing.stderr


def test_ls_counts_steps_superseded_by_a_restart(fixtures: Path) -> None:
    # Each restart run logs steps 10-19 twice; the second writer's copies win.
    out = run_cli("ls", str(fixtures / "restart"))
    assert out.returncode == 0, out.stderr
    assert "run train: 1 histogram tag; 10 steps superseded by a restart" in out.stdout
    assert "run with_purge_step: 1 histogram tag; 10 steps superseded by a restart" in out.stdout


def test_ls_says_an_older_file_cut_short_was_left_by_its_writer(
    fixtures: Path, tmp_path: Path
) -> None:
    (cut,) = (fixtures / "truncated" / "cut").glob("*tfevents*")
    (whole,) = (fixtures / "truncated" / "intact").glob("*tfevents*")
    run = tmp_path / "run"
    run.mkdir()
    (run / f"{cut.name}.0").write_bytes(cut.read_bytes())
    (run / f"{whole.name}.1").write_bytes(whole.read_bytes())
    out = run_cli("ls", str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert "still being written" not in out.stdout
    assert f"cut short at byte 7992: {run / cut.name}.0 (the writer moved on to a newer file" in (
        out.stdout
    )
    # The newest file of the same run, cut short, may still be being written.
    (run / f"{whole.name}.1").rename(run / f"{whole.name}.-1")
    out = run_cli("ls", str(tmp_path))
    assert "incomplete last record (still being written?)" in out.stdout


def test_ls_exit_statuses(fixtures: Path, tmp_path: Path) -> None:
    assert run_cli("ls", str(fixtures / "keras_fit")).returncode == 0
    assert run_cli("ls", str(tmp_path / "nope")).returncode == 2
    assert run_cli("no-such-command").returncode == 2
    assert run_cli().returncode == 2


def test_ls_on_a_thousand_damaged_records_prints_one_short_line(tmp_path: Path) -> None:
    run = histoscope.init("damaged", run_name="run", logdir=tmp_path)
    for step in range(1000):
        run.add_histogram("h", [0.0, 1.0, float(step)], step=step, bins=4)
    run.finish()
    (path,) = (tmp_path / "damaged" / "run").glob("*tfevents*")
    data = bytearray(path.read_bytes())
    at, flipped = 0, 0
    while at < len(data):
        (length,) = struct.unpack_from("<Q", data, at)
        if flipped < 1000 and length > 40:  # a histogram's record, not file_version's
            data[at + 12 + length // 2] ^= 0xFF  # the middle of its data: its checksum fails
            flipped += 1
        at += 16 + length
    path.write_bytes(bytes(data))
    assert flipped == 1000
    out = run_cli("ls", str(tmp_path / "damaged"))
    lines = out.stdout.splitlines()
    damage = [line for line in lines if "skipped 1000 damaged records" in line]
    assert len(damage) == 1, out.stdout
    assert damage[0].count("checksum mismatch") == 3
    assert damage[0].endswith("and 997 more)")
    assert len(out.stdout) < 1000, out.stdout
