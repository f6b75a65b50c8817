"""The one-line progress drawn on a terminal by long work: ``check``, ``report``,
``export`` and the viewer's first read.

The line says what is being done, the files and bytes read so far, the rate
and the time left, and is redrawn in place (a carriage return). It is drawn
only on a terminal: `Progress.on` gives None for anything else, so a log
file or a pipe gets no control characters.

Example:
    >>> import io
    >>> from histoscope.progress import Progress
    >>> Progress.on(io.StringIO(), "checking", files=3, total_bytes=10) is None
    True
    >>> out = io.StringIO()
    >>> clock = iter([0.0, 1.0]).__next__
    >>> bar = Progress(out, "checking", files=2, total_bytes=2_000_000, clock=clock)
    >>> bar.advance(files=1, nbytes=1_000_000)
    >>> out.getvalue().strip()
    'checking [###############               ] 1/2 files, 1.0/2.0 MB, 1.0 MB/s, 1 s left'
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Protocol, TextIO, TypeVar

_WIDTH = 30


class Progress:
    """A one-line progress display on ``stream``, safe to advance from several threads."""

    def __init__(
        self,
        stream: TextIO,
        what: str,
        *,
        files: int,
        total_bytes: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream, self.what = stream, what
        self.files, self.total_bytes = files, total_bytes
        self.files_done = self.bytes_done = 0
        self._clock = clock
        self._start = clock()
        self._lock = threading.Lock()

    @classmethod
    def on(
        cls, stream: TextIO | None, what: str, *, files: int, total_bytes: int
    ) -> Progress | None:
        """A progress line on ``stream`` if it is a terminal, else None."""
        isatty = getattr(stream, "isatty", None)
        if stream is None or not callable(isatty) or not isatty():
            return None
        return cls(stream, what, files=files, total_bytes=total_bytes)

    def advance(self, *, files: int = 0, nbytes: int = 0, extra: str = "") -> None:
        """Counts ``files`` more files and ``nbytes`` more bytes read, and redraws."""
        with self._lock:
            self.files_done += files
            self.bytes_done += nbytes
            self.stream.write("\r" + self.line(extra))
            self.stream.flush()

    def line(self, extra: str = "") -> str:
        done = min(self.bytes_done / self.total_bytes, 1.0) if self.total_bytes else 1.0
        elapsed = max(self._clock() - self._start, 1e-9)
        rate = self.bytes_done / elapsed
        left = (self.total_bytes - self.bytes_done) / rate if rate > 0 else None
        parts = [
            f"{self.what} [{'#' * int(done * _WIDTH):<{_WIDTH}}]",
            f"{self.files_done}/{self.files} files",
            f"{self.bytes_done / 1e6:.1f}/{self.total_bytes / 1e6:.1f} MB",
            f"{rate / 1e6:.1f} MB/s",
            f"{_duration(left)} left" if left is not None else "time left unknown",
        ]
        return ", ".join([parts[0] + " " + parts[1], *parts[2:]] + ([extra] if extra else []))

    def close(self) -> None:
        """Ends the line, so that what is printed next starts on its own."""
        with self._lock:
            self.stream.write("\n")
            self.stream.flush()


def _duration(seconds: float) -> str:
    seconds = max(round(seconds), 0)
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


class Counted(Protocol):
    """What is read, counted in files and bytes: a run, or all the runs of a read."""

    @property
    def files(self) -> int: ...
    @property
    def bytes(self) -> int: ...


C = TypeVar("C", bound=Counted)


def each_counted(items: Iterable[C], total: Counted, out: TextIO | None, what: str) -> Iterator[C]:
    """Each of ``items``, counted once it has been used against ``total``'s files and bytes
    on a progress line on ``out``, if it is a terminal.

    Example:
        >>> from types import SimpleNamespace as Run
        >>> runs = [Run(files=1, bytes=10), Run(files=2, bytes=30)]
        >>> [run.bytes for run in each_counted(runs, Run(files=3, bytes=40), None, "reading")]
        [10, 30]
    """
    bar = Progress.on(out, what, files=total.files, total_bytes=total.bytes)
    try:
        for item in items:
            yield item
            if bar is not None:
                bar.advance(files=item.files, nbytes=item.bytes)
    finally:
        if bar is not None:
            bar.close()
