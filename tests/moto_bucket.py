"""A local S3 server (moto, on 127.0.0.1) with a bucket of fixture log directories."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import boto3
import moto.server as moto_server
import pytest
import s3fs


def client(options: dict[str, Any]) -> Any:
    """A boto3 client for the server that ``options`` (s3fs storage options) name."""
    return boto3.client(
        "s3", endpoint_url=options["endpoint_url"], region_name="us-east-1",
        aws_access_key_id=options["key"], aws_secret_access_key=options["secret"],
    )  # fmt: skip


def upload(options: dict[str, Any], bucket: str, local: Path, prefix: str) -> None:
    """Every file under ``local`` into ``bucket`` under ``prefix``, paths kept."""
    s3 = client(options)
    for path in sorted(local.rglob("*")):
        if path.is_file():
            s3.upload_file(str(path), bucket, f"{prefix}/{path.relative_to(local).as_posix()}")


@contextmanager
def serving(fixtures: Path, bucket: str, names: Sequence[str]) -> Iterator[dict[str, Any]]:
    """s3fs storage options for a running server whose ``bucket`` holds the fixtures
    ``names`` under ``logs/<name>/``; the server stops on exit."""
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    options = {
        "endpoint_url": f"http://{host}:{port}",
        "key": "testing",
        "secret": "testing",
        "client_kwargs": {"region_name": "us-east-1"},
        "skip_instance_cache": True,
    }
    try:
        client(options).create_bucket(Bucket=bucket)
        for name in names:
            upload(options, bucket, fixtures / name, f"logs/{name}")
        yield options
    finally:
        server.stop()


class OpenFiles:
    """What the code under test does with the bucket's files, as s3fs opens them (its
    ``open`` wrapped with ``monkeypatch``): how many were open as each was opened
    (``held``), which are open now (``open``), the bytes each read gave (``reads``).
    Each read first waits ``latency`` seconds, a bucket's, so that reads at once overlap."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, latency: float = 0.0) -> None:
        self.open: set[str] = set()
        self.held: list[int] = []
        self.reads: list[int] = []
        real_open = s3fs.S3FileSystem.open
        files = self

        class Tracked:
            def __init__(self, path: str, file: Any) -> None:
                self.path, self.file = path, file
                files.open.add(path)
                files.held.append(len(files.open))

            def read(self, size: int) -> bytes:
                time.sleep(latency)
                chunk = self.file.read(size)
                files.reads.append(len(chunk))
                return chunk

            def close(self) -> None:
                files.open.discard(self.path)
                self.file.close()

        monkeypatch.setattr(
            s3fs.S3FileSystem,
            "open",
            lambda fs, path, *a, **k: Tracked(path, real_open(fs, path, *a, **k)),
        )


def bucket_fixture(bucket: str, names: Sequence[str]) -> Any:
    """A module's ``s3`` fixture: the storage options of `serving` ``names`` in
    ``bucket``, one server for the whole module."""

    @pytest.fixture(scope="module")
    def s3(fixtures: Path) -> Iterator[dict[str, Any]]:
        """storage_options for a bucket holding the fixtures under ``logs/``."""
        with serving(fixtures, bucket, names) as options:
            yield options

    return s3
