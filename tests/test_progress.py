"""The one progress line shared by check, report, export and the viewer's first read."""

from __future__ import annotations

import io

from histoscope.progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def ticking(*times: float):
    return iter(times).__next__


def test_nothing_is_drawn_unless_the_stream_is_a_terminal() -> None:
    assert Progress.on(io.StringIO(), "checking", files=1, total_bytes=1) is None
    assert Progress.on(None, "checking", files=1, total_bytes=1) is None
    assert isinstance(Progress.on(Terminal(), "checking", files=1, total_bytes=1), Progress)


def test_the_line_says_files_bytes_rate_and_time_left() -> None:
    out = Terminal()
    bar = Progress(out, "reading", files=4, total_bytes=8_000_000, clock=ticking(0, 2, 4))
    bar.advance(files=1, nbytes=2_000_000)
    bar.advance(files=1, nbytes=2_000_000, extra="12 rows")
    bar.close()
    first, second = out.getvalue().split("\r")[1:]
    assert (
        first
        == "reading [#######                       ] 1/4 files, 2.0/8.0 MB, 1.0 MB/s, 6 s left"
    )
    assert second.startswith("reading [###############               ] 2/4 files, 4.0/8.0 MB")
    assert second.endswith("1.0 MB/s, 4 s left, 12 rows\n")


def test_long_waits_read_in_minutes_and_hours() -> None:
    bar = Progress(io.StringIO(), "x", files=1, total_bytes=10**10, clock=ticking(0, 1, 1))
    bar.bytes_done = 10**6
    assert bar.line().endswith("2 h 46 min left")
    bar.bytes_done = 10**8
    assert bar.line().endswith("1 min 39 s left")


def test_nothing_read_yet_has_no_rate_to_guess_from() -> None:
    bar = Progress(io.StringIO(), "x", files=1, total_bytes=10, clock=ticking(0, 1))
    assert bar.line().endswith("0.0 MB/s, time left unknown")


def test_an_empty_job_is_done() -> None:
    bar = Progress(io.StringIO(), "x", files=0, total_bytes=0, clock=ticking(0, 1))
    assert bar.line().startswith("x [" + "#" * 30 + "] 0/0 files")
