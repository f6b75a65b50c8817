"""A server a test starts (JupyterLab, marimo, Voilà): its command on a free port of the
loopback, in a process group of its own with its kernels, waited for until it answers,
and stopped with everything it started."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def serving(
    name: str,
    command: Callable[[int], list[str]],
    answers: Callable[[int], str],
    log_path: Path,
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    wait_seconds: float = 90,
    probe_seconds: float = 5,
) -> Iterator[int]:
    """Runs ``command(port)`` until the address ``answers(port)`` answers, its output in
    ``log_path``: the port. Fails the test, with the end of the log, if it exits first or
    does not answer within ``wait_seconds``."""
    port = free_port()
    with log_path.open("w") as log:
        process = subprocess.Popen(
            command(port), env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + wait_seconds
        try:
            while True:
                try:
                    urllib.request.urlopen(answers(port), timeout=probe_seconds)
                    break
                except OSError:
                    if process.poll() is not None or time.monotonic() > deadline:
                        pytest.fail(f"{name} did not start:\n{log_path.read_text()[-3000:]}")
                    time.sleep(0.3)
            yield port
        finally:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
