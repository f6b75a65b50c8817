"""The viewer's reader: a log directory followed as it grows, read equal to load_histograms."""

from __future__ import annotations

import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import FIXTURE_NAMES
from tensorboard.plugins.distribution.compressor import compress_histogram

import histoscope
from histoscope.view import follow
from histoscope.view.follow import LogdirIndex

# Every fixture with histograms (scalars_only has none to follow).
FIXTURES = [name for name in FIXTURE_NAMES if name != "scalars_only"]


def _load(logdir: Path) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return histoscope.load_histograms(logdir)


def _read_all(index: LogdirIndex) -> dict:
    """Every run of ``index`` read to its end (no time budget)."""
    runs = {}
    for name in index.runs():
        run = index.run(name)
        while not run.caught_up:
            run.read(index._files[name], 10.0)
        runs[name] = run
    return runs


@pytest.mark.parametrize("name", FIXTURES)
def test_percentiles_equal_tensorboards_compressor(fixtures: Path, name: str) -> None:
    runs = _read_all(LogdirIndex(str(fixtures / name)))
    for tag, by_run in _load(fixtures / name).items():
        for run_name, series in by_run.items():
            want = np.array([[v for _, v in compress_histogram(b)] for b in series.buckets])
            got = runs[run_name].series[tag].view.quantiles
            np.testing.assert_array_equal(got, want.reshape(got.shape))


@pytest.mark.parametrize("name", FIXTURES)
def test_the_index_and_reread_buckets_equal_load_histograms(fixtures: Path, name: str) -> None:
    want = _load(fixtures / name)
    index = LogdirIndex(str(fixtures / name))
    runs = _read_all(index)
    got_tags = {tag for run in runs.values() for tag in run.series}
    assert got_tags == set(want)
    for tag, by_run in want.items():
        for run_name, series in by_run.items():
            run = runs[run_name]
            view = run.series[tag].view
            np.testing.assert_array_equal(view.steps, series.steps)
            np.testing.assert_array_equal(view.wall_times, series.wall_times)
            stats = np.column_stack([series.stats[n] for n in histoscope._core.STAT_NAMES])
            np.testing.assert_array_equal(view.stats, stats)
            got = index.buckets(run, tag, view, range(len(view.steps)))
            for position in range(len(view.steps)):
                np.testing.assert_array_equal(got[position], series.buckets[position])


def test_a_growing_file_is_read_from_where_the_last_read_stopped(
    fixtures: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = next((fixtures / "tf2_summary" / "train").glob("*tfevents*"))
    data = source.read_bytes()
    run_dir = tmp_path / "train"
    run_dir.mkdir()
    target = run_dir / source.name
    monkeypatch.setattr(follow, "SEGMENT_BYTES", 1000)  # many segments, cut mid-record
    index = LogdirIndex(str(tmp_path), refresh_seconds=0.0)
    rng = np.random.default_rng(5)
    cuts = sorted(rng.choice(np.arange(1, len(data)), size=12, replace=False).tolist())
    written = 0
    for cut in [*cuts, len(data)]:
        with open(target, "ab") as out:
            out.write(data[written:cut])
        written = cut
        run = _read_all(index)["train"]
        assert run.offsets[str(target)] <= cut
    want = _load(fixtures / "tf2_summary")
    for tag, by_run in want.items():
        view = run.series[tag].view
        np.testing.assert_array_equal(view.steps, by_run["train"].steps)
        positions = (0, len(view.steps) // 2, len(view.steps) - 1)
        for position, got in zip(positions, index.buckets(run, tag, view, positions)):
            np.testing.assert_array_equal(got, by_run["train"].buckets[position])
    assert run.segment_count > 12


def test_a_restart_in_a_later_read_drops_the_steps_it_logs_again(
    fixtures: Path, tmp_path: Path
) -> None:
    shutil.copytree(fixtures / "restart", tmp_path / "restart")
    want = _load(fixtures / "restart")
    files = sorted((tmp_path / "restart").rglob("*tfevents*"))
    assert len(files) >= 2, "the restart fixture has a run of several files"
    index = LogdirIndex(str(tmp_path / "restart"), refresh_seconds=0.0)
    for tag, by_run in want.items():
        for run_name, series in by_run.items():
            run = _read_all(index)[run_name]
            np.testing.assert_array_equal(run.series[tag].view.steps, series.steps)


def test_a_view_taken_earlier_is_unchanged_by_later_reads_and_restarts(
    fixtures: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(fixtures / "restart", tmp_path / "restart")
    monkeypatch.setattr(follow, "SEGMENT_BYTES", 400)  # a few steps per read
    index = LogdirIndex(str(tmp_path / "restart"), refresh_seconds=0.0)
    name = index.runs()[0]
    run = follow.RunIndex(name, index.cache)  # read here alone, without a background reader
    held = []
    while not run.caught_up:
        run.read(index._files[name], 0.0)
        for series in run.series.values():
            generation, view = series.snapshot()
            held.append((series, generation, view, [column.copy() for column in view]))
    restarted = 0
    for series, generation, view, copies in held:
        for column, copy in zip(view, copies):
            np.testing.assert_array_equal(column, copy)
        now, latest = series.snapshot()
        if now == generation:  # no restart since: the view is the start of the latest
            for column, later in zip(view, latest):
                np.testing.assert_array_equal(column, later[: len(column)])
        restarted += now > generation
    assert restarted > 0, "the restart fixture drops steps it logs again"


def test_runs_are_listed_without_reading_them(fixtures: Path) -> None:
    logdir = fixtures / "nested"
    folders = {f.parent.relative_to(logdir).as_posix() for f in logdir.rglob("*tfevents*")}
    index = LogdirIndex(str(logdir))
    assert index.runs() == sorted(folders)
    assert index._runs == {}
    assert index.run("no/such/run") is None


def test_a_request_meeting_a_first_read_in_flight_waits_for_it(
    fixtures: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The viewer starts reading runs before the page asks: a request arriving meanwhile
    must get the run's histograms, not an empty run. The first read is held at its start
    (the read itself is real) until the second request is under way."""
    import threading

    started, release = threading.Event(), threading.Event()
    real_read = follow.RunIndex.read

    def held_read(self: follow.RunIndex, files: list[str], budget_seconds: float) -> None:
        started.set()
        release.wait(10)
        real_read(self, files, budget_seconds)

    monkeypatch.setattr(follow.RunIndex, "read", held_read)
    index = LogdirIndex(str(fixtures / "tf2_summary"))
    answers: dict[str, follow.RunIndex | None] = {}
    first = threading.Thread(target=lambda: answers.update(first=index.run("train")))
    first.start()
    assert started.wait(10)
    second = threading.Thread(target=lambda: answers.update(second=index.run("train")))
    second.start()
    second.join(0.3)
    assert second.is_alive(), "the second request answered before the first read ended"
    release.set()
    first.join(10)
    second.join(10)
    run = answers["second"]
    assert run is not None and sorted(run.series) == sorted(_load(fixtures / "tf2_summary"))


def test_a_script_ending_while_runs_are_read_in_the_background_exits_cleanly(
    fixtures: Path, tmp_path: Path
) -> None:
    # Eight runs read 4 KB at a time: catch-up threads are in the core when the script
    # ends. Returning from it as Python finalizes crashed the process (SIGSEGV) in about a
    # third of such exits before the interpreter's exit waited for them.
    source = next((fixtures / "many_steps").rglob("*tfevents*"))
    for run in range(8):
        (tmp_path / f"run{run}").mkdir()
        shutil.copy(source, tmp_path / f"run{run}" / source.name)
    script = (
        "from histoscope.view import follow\n"
        "follow.SEGMENT_BYTES = 4096\n"
        f"index = follow.LogdirIndex({str(tmp_path)!r})\n"
        "for name in index.runs():\n"
        "    index.run(name)\n"
        "assert not all(index.run(name).caught_up for name in index.runs())\n"
    )
    for _ in range(6):
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
        assert done.returncode == 0, f"exit status {done.returncode}: {done.stderr[-2000:]}"
