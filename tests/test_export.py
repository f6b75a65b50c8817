"""`histoscope export`: Parquet row for row as load_histograms, file by file, in bounded memory."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

import histoscope
from histoscope.cli import main
from histoscope.read import export
from histoscope.read.export import export_parquet
from histoscope.read.tidy import to_pandas

KEY = ["run", "tag", "step"]


def _local(logdir: object, **selection: list[str]) -> object:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", histoscope.DamagedFileWarning)
        return to_pandas(histoscope.load_histograms(logdir, **selection))


def _assert_rows_equal(got: object, want: object) -> None:
    got = got.sort_values(KEY, ignore_index=True)
    want = want.sort_values(KEY, ignore_index=True)
    assert list(got.columns) == list(want.columns)
    assert len(got) == len(want) > 0
    for column in got.columns:
        for a, b in zip(got[column], want[column]):
            np.testing.assert_array_equal(a, b, err_msg=column)


def test_parquet_equals_load_histograms_row_for_row(fixtures: Path, tmp_path: Path) -> None:
    logdirs = [fixtures / n for n in ("torch_writer", "restart", "tf2_edge", "tf1_graph")]
    out = tmp_path / "all.parquet"
    summary = export_parquet(logdirs, out)
    meta = pq.ParquetFile(out).metadata
    files = [f for d in logdirs for f in d.rglob("*tfevents*") if f.is_file()]
    assert summary.files == len(files) and summary.rows == meta.num_rows
    assert meta.num_row_groups == len(files)  # every file here holds histograms
    assert not (tmp_path / "all.parquet.partial").exists()
    _assert_rows_equal(pq.read_table(out).to_pandas(), _local(logdirs))


def test_restarts_across_files_keep_the_newer_values(fixtures: Path, tmp_path: Path) -> None:
    out = tmp_path / "restart.parquet"
    export_parquet(fixtures / "restart", out, runs=["train"])
    table = pq.read_table(out)
    assert table.column("step").to_pylist() == list(range(30))
    # The second writer's values are offset by +10: steps 10-19 come from it.
    means = table.column("mean").to_numpy()
    assert means[10:20].mean() - means[:10].mean() > 5


def test_cli_selects_reports_damage_and_draws_no_bar_off_a_terminal(
    fixtures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "sel.parquet"
    argv = ["export", str(fixtures / "corrupt"), str(fixtures / "truncated"), "-o", str(out)]
    assert main([*argv, "--tags", "hist/normal", "--runs", f"{fixtures}/corrupt/flipped"]) == 0
    err = capsys.readouterr().err
    assert "\r" not in err
    assert "skipped as damaged:" in err and "corrupt/flipped/events.out" in err
    assert "bytes 3852-4224" in err
    table = pq.read_table(out)
    assert set(table.column("run").to_pylist()) == {f"{fixtures}/corrupt/flipped"}
    assert table.column("step").to_pylist() == [s for s in range(20) if s != 9]
    assert main([*argv]) == 0
    err = capsys.readouterr().err
    assert "incomplete last record (still being written?)" in err and "truncated/cut" in err


def test_progress_line_is_redrawn_in_place(fixtures: Path, tmp_path: Path) -> None:
    terminal = io.StringIO()
    export_parquet(fixtures / "torch_writer", tmp_path / "p.parquet", progress=terminal)
    lines = terminal.getvalue().split("\r")[1:]
    assert len(lines) == 2 and lines[-1].startswith("exporting [###")
    assert "2/2 files" in lines[-1] and lines[-1].endswith("\n")


def test_missing_logdir_fails_without_leaving_a_file(tmp_path: Path) -> None:
    out = tmp_path / "none.parquet"
    assert main(["export", str(tmp_path / "nope"), "-o", str(out)]) == 2
    assert not out.exists() and not (tmp_path / "none.parquet.partial").exists()


def _write_events_file(path: Path, steps: int, buckets: int) -> None:
    """A torch-like events file of legacy histograms, written with TensorBoard's own protos."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.record_writer import RecordWriter

    edges = np.linspace(-1, 1, buckets).tolist()
    with open(path, "wb") as f:
        writer = RecordWriter(f)
        for step in range(steps):
            histo = summary_pb2.HistogramProto(
                min=-1, max=1, num=buckets, bucket_limit=edges, bucket=[1.0 + step] * buckets
            )
            value = summary_pb2.Summary.Value(tag="w", histo=histo)
            event = event_pb2.Event(
                step=step, wall_time=float(step), summary=summary_pb2.Summary(value=[value])
            )
            writer.write(event.SerializeToString())


_PEAK = """
import resource, sys
from histoscope.cli import main
assert main(["export", sys.argv[1], "-o", sys.argv[2]]) == 0
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
"""


def _peak_rss(logdir: Path, out: Path) -> int:
    done = subprocess.run(
        [sys.executable, "-c", _PEAK, str(logdir), str(out)],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(done.stdout.split()[-1])


def test_memory_is_bounded_by_one_file_not_the_directory(tmp_path: Path) -> None:
    one = tmp_path / "one.tfevents"
    _write_events_file(one, steps=200, buckets=1000)
    file_size = one.stat().st_size
    small, big = tmp_path / "small", tmp_path / "big"
    runs = 30
    for logdir, count in ((small, 1), (big, runs)):
        for i in range(count):
            (logdir / f"run{i:02d}").mkdir(parents=True)
            shutil.copy(one, logdir / f"run{i:02d}" / "events.out.tfevents.1")
    baseline = _peak_rss(small, tmp_path / "small.parquet")
    peak = _peak_rss(big, tmp_path / "big.parquet")
    directory = runs * file_size
    buckets = runs * 200 * 1000 * 3 * 8  # what load_histograms would hold
    assert pq.ParquetFile(tmp_path / "big.parquet").metadata.num_rows == runs * 200
    assert peak - baseline < directory / 3 < buckets / 4, (peak - baseline, directory)


def _write_restarted_file(path: Path, steps: list[int], buckets: int, offset: float) -> None:
    """Legacy histograms at ``steps`` in order (a step going back is a restart), counts
    ``offset`` higher per position, so that which writer's value survived shows."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.record_writer import RecordWriter

    edges = np.linspace(-1, 1, buckets).tolist()
    with open(path, "wb") as f:
        writer = RecordWriter(f)
        for position, step in enumerate(steps):
            for tag in ("a", "b"):
                counts = [1.0 + step + offset * position] * buckets
                histo = summary_pb2.HistogramProto(
                    min=-1, max=1, num=sum(counts), bucket_limit=edges, bucket=counts
                )
                value = summary_pb2.Summary.Value(tag=tag, histo=histo)
                event = event_pb2.Event(
                    step=step, wall_time=float(position), summary=summary_pb2.Summary(value=[value])
                )
                writer.write(event.SerializeToString())


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Runs of one file of about 2 MB (one restarted inside the file, so that its
    restart crosses pieces) and a run of two files whose second restarts the first."""
    logdir = tmp_path_factory.mktemp("generated")
    for name, steps in (
        ("plain", list(range(120))),
        ("restarted", [*range(80), *range(40, 120)]),
    ):
        (logdir / name).mkdir()
        _write_restarted_file(logdir / name / "events.out.tfevents.1", steps, 500, 0.5)
    (logdir / "two").mkdir()
    _write_restarted_file(logdir / "two" / "events.out.tfevents.1", list(range(90)), 500, 0)
    _write_restarted_file(logdir / "two" / "events.out.tfevents.2", list(range(60, 120)), 500, 9)
    return logdir


def _rows(path: Path) -> object:
    return pq.read_table(path).to_pandas()


def test_small_row_groups_and_pieces_export_the_same_rows(
    fixtures: Path, generated: Path, tmp_path: Path
) -> None:
    logdirs = [fixtures / n for n in ("torch_writer", "restart", "tf2_edge", "tf1_graph")]
    whole, pieces = tmp_path / "whole.parquet", tmp_path / "pieces.parquet"
    export_parquet(logdirs, whole)
    summary = export_parquet(logdirs, pieces, row_group_bytes=2000, piece_bytes=2000)
    files = [f for d in logdirs for f in d.rglob("*tfevents*") if f.is_file()]
    assert summary.files == len(files)
    assert pq.ParquetFile(pieces).metadata.num_row_groups > 2 * len(files)
    _assert_rows_equal(_rows(pieces), _rows(whole))
    _assert_rows_equal(_rows(pieces), _local(logdirs))

    size = max(f.stat().st_size for f in generated.rglob("*tfevents*"))
    assert size > 1_500_000
    export_parquet(generated, whole)
    summary = export_parquet(generated, pieces, row_group_bytes=100_000, piece_bytes=300_000)
    assert pq.ParquetFile(pieces).metadata.num_row_groups >= 4 * 4
    assert summary.bytes_read == sum(f.stat().st_size for f in generated.rglob("*tfevents*"))
    assert summary.superseded == {"restarted": 80, "two": 60}
    got = _rows(pieces)
    _assert_rows_equal(got, _rows(whole))
    _assert_rows_equal(got, _local(generated))
    restarted = got[(got.run == "restarted") & (got.tag == "a")].sort_values("step")
    assert restarted.step.tolist() == list(range(120))
    # Steps 40-119 are the second writer's: logged at positions 80-159.
    assert restarted.wall_time.tolist() == [*range(40), *range(80, 160)]


def test_budgets_must_be_positive_whole_numbers(fixtures: Path, tmp_path: Path) -> None:
    for name in ("row_group_bytes", "piece_bytes"):
        with pytest.raises(ValueError, match=f"{name} must be an int >= 1, got 0"):
            export_parquet(fixtures / "torch_writer", tmp_path / "x.parquet", **{name: 0})


@pytest.mark.parametrize("damage", ["cut", "gone"])
def test_a_file_cut_or_gone_after_planning_is_reported_and_the_rest_exported(
    generated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    logdir = tmp_path / "logdir"
    shutil.copytree(generated, logdir)
    victim = logdir / "restarted" / "events.out.tfevents.1"
    plan_pieces = export._plan_pieces

    def plan_then_damage(run: object, *args: object) -> object:
        plan = plan_pieces(run, *args)  # type: ignore[arg-type]
        if getattr(run, "name", None) == "restarted":
            if damage == "cut":
                os.truncate(victim, victim.stat().st_size // 2 + 7)
            else:
                victim.unlink()
        return plan

    monkeypatch.setattr(export, "_plan_pieces", plan_then_damage)
    out = tmp_path / "out.parquet"
    summary = export_parquet(logdir, out, piece_bytes=300_000)
    rows = _rows(out)
    for run in ("plain", "two"):
        _assert_rows_equal(rows[rows.run == run], _local(generated, runs=[run]))
    kept = rows[rows.run == "restarted"]
    if damage == "cut":
        assert summary.tail_notes == [
            f"incomplete last record (still being written?): {victim} at byte "
            f"{summary.incomplete[0][1]}"
        ]
        # The first half (the first writer's steps 0-79), less what the restart later in
        # the file dropped: steps 0-39 of both tags.
        assert sorted(kept.step) == sorted([*range(40)] * 2)
    else:
        assert len(kept) == 0
        assert len(summary.damaged) == 1 and summary.damaged[0].startswith(f"{victim}: ")
        assert "stopped reading" in summary.damaged[0]
