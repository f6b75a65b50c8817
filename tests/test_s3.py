"""Object storage: log directories in an S3 bucket served by moto on 127.0.0.1, via s3fs."""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any

import moto_bucket
import numpy as np
import pytest
import s3fs  # noqa: F401  (the filesystem fsspec uses for s3://)

import histoscope
from histoscope import DamagedFileWarning
from histoscope.cli import main
from histoscope.read import storage
from histoscope.read.tidy import to_pandas

BUCKET = "histograms"
UPLOADED = ("torch_writer", "restart", "corrupt", "truncated", "tf2_summary", "tf2_edge")


s3 = moto_bucket.bucket_fixture(BUCKET, UPLOADED)


def _read(logdir: Any, **kwargs: Any) -> dict[str, dict[str, histoscope.HistogramSeries]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DamagedFileWarning)
        return histoscope.load_histograms(logdir, **kwargs)


def _assert_same(local: dict, remote: dict, rename: dict[str, str] | None = None) -> None:
    rename = rename or {}
    assert list(remote) == list(local)
    for tag, by_run in local.items():
        assert list(remote[tag]) == [rename.get(run, run) for run in by_run]
        for run, want in by_run.items():
            got = remote[tag][rename.get(run, run)]
            np.testing.assert_array_equal(got.steps, want.steps)
            np.testing.assert_array_equal(got.wall_times, want.wall_times)
            assert len(got.buckets) == len(want.buckets)
            for a, b in zip(got.buckets, want.buckets):
                np.testing.assert_array_equal(a, b)
            for name, values in want.stats.items():
                np.testing.assert_array_equal(got.stats[name], values)


@pytest.mark.parametrize("name", UPLOADED)
def test_bucket_reads_equal_to_the_local_read(
    fixtures: Path, s3: dict[str, Any], name: str
) -> None:
    remote = _read(f"s3://{BUCKET}/logs/{name}", storage_options=s3)
    local = _read(fixtures / name)
    assert local
    _assert_same(local, remote)


def test_small_chunks_split_records_and_still_read_the_same(
    fixtures: Path, s3: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(storage, "CHUNK_BYTES", 777)
    files = moto_bucket.OpenFiles(monkeypatch)
    remote = _read(f"s3://{BUCKET}/logs/restart", storage_options=s3)
    fed = files.reads
    assert max(fed) <= 777 and len(fed) > 40
    _assert_same(_read(fixtures / "restart"), remote)


def test_damage_and_cut_off_tails_are_reported_with_the_url(s3: dict[str, Any]) -> None:
    with pytest.warns(DamagedFileWarning) as caught:
        data = histoscope.load_histograms(f"s3://{BUCKET}/logs/corrupt", storage_options=s3)
    messages = sorted(str(w.message) for w in caught)
    assert len(messages) == 2
    assert messages[0].startswith(f"s3://{BUCKET}/logs/corrupt/flipped/events.out.tfevents")
    assert "bytes 3852-4224" in messages[0]
    assert data["hist/normal"]["flipped"].steps.tolist() == [s for s in range(20) if s != 9]
    cut = _read(f"s3://{BUCKET}/logs/truncated", runs=["cut"], storage_options=s3)
    assert cut["hist/normal"]["cut"].steps.tolist() == list(range(19))


def test_glob_names_runs_by_their_url(fixtures: Path, s3: dict[str, Any]) -> None:
    remote = _read(f"s3://{BUCKET}/logs/t*", storage_options=s3)
    prefix = f"s3://{BUCKET}/logs"
    runs = {run for by_run in remote.values() for run in by_run}
    assert runs == {
        f"{prefix}/torch_writer/run_a",
        f"{prefix}/torch_writer/run_b",
        f"{prefix}/truncated/cut",
        f"{prefix}/truncated/intact",
        f"{prefix}/tf2_summary/train",
        f"{prefix}/tf2_summary/validation",
        f"{prefix}/tf2_edge/edge",
    }
    local = _read(fixtures / "torch_writer")
    rename = {run: f"{prefix}/torch_writer/{run}" for run in ("run_a", "run_b")}
    _assert_same(local, {tag: remote[tag] for tag in local}, rename)


def test_charts_from_the_bucket_equal_local_charts(fixtures: Path, s3: dict[str, Any]) -> None:
    remote = histoscope.read_tensorboard_histograms(
        f"s3://{BUCKET}/logs/tf2_summary", storage_options=s3, bins=12, max_steps=7
    )
    local = histoscope.read_tensorboard_histograms(fixtures / "tf2_summary", bins=12, max_steps=7)
    assert [(c.tag, c.run) for c in remote] == [(c.tag, c.run) for c in local]
    for got, want in zip(remote, local):
        np.testing.assert_array_equal(got.steps, want.steps)
        np.testing.assert_array_equal(got.edges, want.edges)
        np.testing.assert_array_equal(got.counts, want.counts)


def test_export_from_the_bucket(
    fixtures: Path, s3: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import pyarrow.parquet as pq

    out = tmp_path / "remote.parquet"
    argv = ["export", f"s3://{BUCKET}/logs/restart", "-o", str(out)]
    for key in ("endpoint_url", "key", "secret"):
        argv += ["--storage-option", f"{key}={s3[key]}"]
    assert main(argv) == 0
    assert "wrote 60 rows from 4 events files (2 runs" in capsys.readouterr().err
    got = pq.read_table(out).to_pandas()
    want = to_pandas(_read(fixtures / "restart"))
    assert got.drop(columns=["left", "right", "count"]).equals(
        want.drop(columns=["left", "right", "count"])
    )


def test_ls_on_a_bucket_lists_what_ls_lists_locally(
    fixtures: Path, s3: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    options = [arg for key in ("endpoint_url", "key", "secret")
               for arg in ("--storage-option", f"{key}={s3[key]}")]  # fmt: skip
    for name in ("restart", "corrupt"):
        assert main(["ls", str(fixtures / name)]) == 0
        local = capsys.readouterr().out.replace(str(fixtures / name), "LOGDIR")
        assert main(["ls", f"s3://{BUCKET}/logs/{name}", *options]) == 0
        remote = capsys.readouterr().out.replace(f"s3://{BUCKET}/logs/{name}", "LOGDIR")
        assert remote == local
        assert "run " in remote
    assert main(["ls", "s3://no-such-bucket/logs", *options]) == 2
    assert "does not exist" in capsys.readouterr().err


def _write_planted(root: Path) -> Path:
    """Four runs, a problem planted in three: a loss that turns NaN (run0), seen in the
    scalars alone, gradients of one layer that vanish beside the others (run1) and
    weights that turn NaN (run3)."""
    rng = np.random.default_rng(3)
    for r in range(4):
        with histoscope.init("planted", f"run{r}", logdir=root) as run:
            for step in range(20):
                for layer in range(3):
                    scale = 1e-9 if (r == 1 and layer == 0) else 1e-2
                    gradients = rng.normal(size=2000) * scale
                    run.add_histogram(f"gradients/{layer}.weight", gradients, step=step)
                    weights = rng.normal(size=2000) * 0.1
                    if r == 3 and step > 12:
                        weights[:5] = np.nan
                    run.add_histogram(f"parameters/{layer}.weight", weights, step=step)
                run.log({"loss": math.nan if r == 0 and step > 15 else 1.0 / (1 + step)}, step=step)
    return root / "planted"


def test_check_from_the_bucket_fetches_a_few_runs_at_a_time(
    s3: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    local = _write_planted(tmp_path)
    moto_bucket.upload(s3, BUCKET, local, "planted")
    url = f"s3://{BUCKET}/planted"
    # the same findings as the local directory's, its scalars weighed too
    want = histoscope.diagnose(local)
    assert {(f.run, f.kind) for f in want if f.severity != "info"} == {
        ("run0", "nonfinite"),
        ("run1", "vanishing"),
        ("run3", "nonfinite"),
    }
    # The core reads a batch of runs within the budget (or one larger run) at a time,
    # a batch's files at once: files in flight show the batches.
    files = moto_bucket.OpenFiles(monkeypatch, latency=0.2)
    most = files.held
    monkeypatch.setattr(histoscope._core, "READ_BUDGET_BYTES", 1)
    assert histoscope.diagnose(url, storage_options=s3) == want
    assert len(most) == 4 and max(most) == 1  # a run a batch, read one after another
    most.clear()
    monkeypatch.setattr(histoscope._core, "READ_BUDGET_BYTES", 2**30)
    assert histoscope.diagnose(url, storage_options=s3) == want
    assert len(most) == 4 and max(most) == 4  # one batch, its files read at once
    argv = ["check", url]
    for key in ("endpoint_url", "key", "secret"):
        argv += ["--storage-option", f"{key}={s3[key]}"]
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert "run1" in out and "vanishing" in out and "run3" in out and "nonfinite" in out


@pytest.mark.parametrize("name", UPLOADED)
def test_the_bucket_is_judged_as_the_local_directory(
    fixtures: Path, s3: dict[str, Any], name: str
) -> None:
    with warnings.catch_warnings(record=True) as local_warnings:
        warnings.simplefilter("always")
        want = histoscope.diagnose(fixtures / name)
    with warnings.catch_warnings(record=True) as remote_warnings:
        warnings.simplefilter("always")
        got = histoscope.diagnose(f"s3://{BUCKET}/logs/{name}", storage_options=s3)
    assert got == want
    # the same damage reported, the bucket's files named by their URL
    assert len(remote_warnings) == len(local_warnings)
    assert all(f"s3://{BUCKET}/logs/{name}/" in str(w.message) for w in remote_warnings)


@pytest.mark.parametrize("name", ["restart", "truncated", "corrupt"])
def test_a_large_remote_file_is_exported_in_pieces_as_a_local_one(
    fixtures: Path,
    s3: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
) -> None:
    import pyarrow.parquet as pq

    from histoscope.read import export

    fetched: list[str] = []
    real = export._FetchedPieces.__next__

    def counting(self: Any) -> Any:
        fetched.append(name)
        return real(self)

    monkeypatch.setattr(export._FetchedPieces, "__next__", counting)
    remote, local = tmp_path / "remote.parquet", tmp_path / "local.parquet"
    url = f"s3://{BUCKET}/logs/{name}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DamagedFileWarning)
        got = export.export_parquet(url, remote, storage_options=s3, piece_bytes=2048)
        want = export.export_parquet(fixtures / name, local, piece_bytes=2048)
    # each file fetched in pieces twice: to plan the run's restarts, then to share it
    assert len(fetched) > 4 * got.files
    assert (got.rows, got.files, got.runs) == (want.rows, want.files, want.runs)
    assert [d.split("events.out")[1] for d in got.damaged] == [
        d.split("events.out")[1] for d in want.damaged
    ]
    got_table, want_table = pq.read_table(remote), pq.read_table(local)
    lists = ["left", "right", "count"]
    assert all(got_table[column].equals(want_table[column]) for column in lists)
    # statistics a writer left out are NaN, which arrow never finds equal: pandas does
    assert got_table.drop(lists).to_pandas().equals(want_table.drop(lists).to_pandas())
