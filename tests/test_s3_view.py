"""`histoscope view` and `histoscope report` on an S3 bucket served by moto on 127.0.0.1."""

from __future__ import annotations

import json
import os
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import moto_bucket
import numpy as np
import pytest
import report_page
import s3fs
from browser import Server

from histoscope.cli import main
from histoscope.read import spool, storage
from histoscope.view.report import build_report
from histoscope.view.site import Site

BUCKET = "views"
UPLOADED = ("tf2_summary", "torch_writer", "restart", "corrupt", "nested", "truncated")


s3 = moto_bucket.bucket_fixture(BUCKET, UPLOADED)


def _client(s3: dict[str, Any]) -> Any:
    return moto_bucket.client(s3)


def _upload(s3: dict[str, Any], local: Path, prefix: str) -> None:
    moto_bucket.upload(s3, BUCKET, local, prefix)


def _options(s3: dict[str, Any]) -> list[str]:
    keys = ("endpoint_url", "key", "secret")
    return [arg for key in keys for arg in ("--storage-option", f"{key}={s3[key]}")]


#: What a report embeds of a local directory only: the runs' indexes read again for the
#: rankings and comparisons (view/report_orders.py) and the spectral trends.
LOCAL_ONLY = ("orders", "spectral")


def _embedded(page: str) -> dict[str, Any]:
    return report_page.embedded(page)


def _shared(data: dict[str, Any]) -> dict[str, Any]:
    """The report's data less what only a local directory's report holds."""
    return {key: value for key, value in data.items() if key not in LOCAL_ONLY}


@pytest.fixture
def s3_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    """Every S3 request s3fs makes, by operation, with its arguments."""
    calls: list[tuple[str, dict[str, Any]]] = []
    real = s3fs.S3FileSystem._call_s3

    async def counting(self: Any, method: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append((method if isinstance(method, str) else method.__name__, kwargs))
        return await real(self, method, *args, **kwargs)

    monkeypatch.setattr(s3fs.S3FileSystem, "_call_s3", counting)
    return calls


@pytest.mark.parametrize("budget", [None, 1])
@pytest.mark.parametrize("name", UPLOADED)
def test_the_report_of_the_bucket_equals_the_local_report(
    fixtures: Path, s3: dict[str, Any], name: str, budget: int | None
) -> None:
    with warnings.catch_warnings(record=True) as local_warnings:
        warnings.simplefilter("always")
        want = _embedded(build_report(fixtures / name, budget_bytes=budget))
    with warnings.catch_warnings(record=True) as remote_warnings:
        warnings.simplefilter("always")
        url = f"s3://{BUCKET}/logs/{name}"
        got = _embedded(build_report(url, budget_bytes=budget, storage_options=s3))
    assert want["cards"] and want["orders"]
    assert _shared(got) == _shared(want)
    assert all(got[key] is None for key in LOCAL_ONLY)
    # the same damage reported, the files named by their URL, not the spool's paths
    assert [str(w.message).split("tfevents")[-1] for w in remote_warnings] == [
        str(w.message).split("tfevents")[-1] for w in local_warnings
    ]
    assert all(f"s3://{BUCKET}/logs/{name}/" in str(w.message) for w in remote_warnings)


def test_the_report_fetches_a_batch_at_a_time_and_writes_nothing_to_disk(
    fixtures: Path,
    s3: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    files = moto_bucket.OpenFiles(monkeypatch)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    url = f"s3://{BUCKET}/logs/torch_writer"
    got = _embedded(build_report(url, budget_bytes=1, storage_options=s3))
    assert _shared(got) == _shared(
        _embedded(build_report(fixtures / "torch_writer", budget_bytes=1))
    )
    # two runs of one file each, read twice (findings, then rebinning), one file held at a time
    assert files.held == [1, 1, 1, 1]
    assert not files.open and not any(tmp_path.iterdir())


def test_histoscope_report_takes_a_url_and_storage_options(
    fixtures: Path, s3: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "remote.html"
    url = f"s3://{BUCKET}/logs/tf2_summary"
    assert main(["report", url, "-o", str(out), *_options(s3)]) == 0
    assert "wrote" in capsys.readouterr().out
    page = out.read_text(encoding="utf-8")
    assert "histoscope report: tf2_summary" in page
    assert _shared(_embedded(page)) == _shared(_embedded(build_report(fixtures / "tf2_summary")))


def test_a_missing_bucket_or_events_files_are_named_not_a_traceback(
    s3: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _client(s3).put_object(Bucket=BUCKET, Key="notes/readme.txt", Body=b"no events here")
    out = str(tmp_path / "r.html")
    for command in (["report", "-o", out], ["view", "--port", "0"]):
        assert main([command[0], "s3://no-such-bucket/logs", *command[1:], *_options(s3)]) == 2
        err = capsys.readouterr().err
        assert "the bucket 's3://no-such-bucket'" in err and "does not exist" in err
        assert main([command[0], f"s3://{BUCKET}/notes", *command[1:], *_options(s3)]) == 2
        assert (
            f"no events files (*tfevents*) under 's3://{BUCKET}/notes'" in capsys.readouterr().err
        )
    assert not os.path.exists(out)


QUERIES = [
    ("runs", ""),
    ("tags", "run={a}&run={b}"),
    ("series", "tag={tag}&run={a}&run={b}"),
    ("card", "tag={tag}&run={a}&run={b}"),
    ("card", "tag={tag}&run={a}&run={b}&steps=5&bins=12&from=2&to=15&step=9"),
    ("buckets", "tag={tag}&run={a}&run={b}&step=7"),
    ("overview", "run={a}&stat=std"),
    ("overview", "run={b}&stat=zeros"),
    ("findings", ""),
]


def _answers(site: Site, tag: str) -> dict[str, Any]:
    a, b = (site.index.runs() * 2)[:2]
    out = {}
    for name, query in QUERIES:
        text = query.format(a=a, b=b, tag=tag)
        found = site.answer(f"api/{name}", text, "localhost")
        out[f"{name}?{text}"] = (found.status, json.loads(found.body))
    return out


@pytest.mark.parametrize(
    "name, tag", [("tf2_summary", "weights/dense"), ("torch_writer", "linear/weight")]
)
def test_the_viewer_answers_on_the_bucket_as_on_the_local_directory(
    fixtures: Path, s3: dict[str, Any], name: str, tag: str
) -> None:
    local = Site(str(fixtures / name))
    remote = Site(f"s3://{BUCKET}/logs/{name}", storage_options=s3)
    try:
        want, got = _answers(local, tag), _answers(remote, tag)
        assert all(status == 200 for status, _ in want.values())
        cards = [body for query, (_, body) in want.items() if query.startswith("card?")]
        assert all(len(card["runs"]) == 2 for card in cards)
        assert got == want
        assert f"histoscope: s3://{BUCKET}/logs/{name}" in remote.page()
    finally:
        remote.close()
    assert remote.remote is not None and not os.path.exists(remote.remote.root)


def _poll(site: Site, refresh_seconds: float) -> dict[str, Any]:
    """The runs answer after the listing has aged: one poll of the bucket."""
    time.sleep(refresh_seconds * 1.2)
    return json.loads(site.answer("api/runs", "", "localhost").body)


def _steps(site: Site, run: str, tag: str) -> list[int]:
    body = json.loads(site.answer("api/series", f"tag={tag}&run={run}", "localhost").body)
    return [step for series in body["series"] for step in series["steps"]]


def test_the_viewer_follows_the_bucket_as_it_grows_one_listing_and_ranged_reads_per_poll(
    fixtures: Path, s3: dict[str, Any], s3_calls: list[tuple[str, dict[str, Any]]]
) -> None:
    source = next((fixtures / "tf2_summary" / "train").glob("*tfevents*"))
    data = source.read_bytes()
    prefix = f"growing/{time.monotonic_ns()}"
    key = f"{prefix}/train/{source.name}"
    client = _client(s3)
    client.put_object(Bucket=BUCKET, Key=key, Body=data[: len(data) // 3])  # cut in a record
    refresh = 0.5
    site = Site(f"s3://{BUCKET}/{prefix}", storage_options=s3, refresh_seconds=refresh)
    assert site.remote is not None
    try:
        site.indexing.join(30)
        before = _steps(site, "train", "weights/dense")
        assert before and before[-1] < 19

        # nothing grew: one listing, no read
        s3_calls.clear()
        assert _poll(site, refresh)["runs"] == ["train"]
        assert [op for op, _ in s3_calls] == ["list_objects_v2"]

        # the file grows (S3 replaces the object whole) and a new run appears
        client.put_object(Bucket=BUCKET, Key=key, Body=data)
        _upload(s3, fixtures / "tf2_summary" / "validation", f"{prefix}/validation")
        grown = site.remote.spool.fetched_bytes
        s3_calls.clear()
        assert _poll(site, refresh)["runs"] == ["train", "validation"]
        operations = [op for op, _ in s3_calls]
        assert operations.count("list_objects_v2") == 1
        gets = [kwargs for op, kwargs in s3_calls if op == "get_object"]
        assert len(gets) == 2 and len(operations) == 3
        # only what grew is read of the train file: the range past the third fetched before
        ranges = sorted(str(kwargs.get("Range")) for kwargs in gets)
        assert f"bytes={len(data) // 3}-{len(data) - 1}" in ranges
        other = next((fixtures / "tf2_summary" / "validation").glob("*tfevents*"))
        assert site.remote.spool.fetched_bytes - grown == len(data) - len(data) // 3 + (
            other.stat().st_size
        )
        assert _steps(site, "train", "weights/dense") == list(range(20))
        assert _steps(site, "validation", "weights/dense") == list(range(20))
        card = json.loads(
            site.answer("api/card", "tag=weights/dense&run=train&run=validation", "localhost").body
        )
        assert [run["last"] for run in card["runs"]] == [19, 19]
        assert np.asarray(card["runs"][0]["counts"]).shape[1] == 30
    finally:
        site.close()
    assert not os.path.exists(site.remote.root)


def test_histoscope_view_serves_a_bucket(fixtures: Path, s3: dict[str, Any]) -> None:
    url = f"s3://{BUCKET}/logs/tf2_summary"
    with Server(url, *_options(s3)) as running:  # type: ignore[arg-type]
        with running.open("api/runs") as answer:
            assert json.loads(answer.read())["runs"] == ["train", "validation"]
        query = "api/series?tag=weights/dense&run=train"
        with running.open(query) as answer:
            (series,) = json.loads(answer.read())["series"]
        assert series["steps"] == list(range(20))


def test_chunks_smaller_than_a_file_are_appended_in_order(
    fixtures: Path, s3: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(storage, "CHUNK_BYTES", 1000)
    with spool.RemoteLogdir.open(f"s3://{BUCKET}/logs/restart", s3) as remote:
        runs = remote.sync()
        for run in runs:
            for file in run.files:
                local = remote.spool.local(file.path)
                relative = file.path.split("/logs/restart/", 1)[1]
                assert Path(local).read_bytes() == (fixtures / "restart" / relative).read_bytes()
        assert remote.spool.fetches > len([f for run in runs for f in run.files])
