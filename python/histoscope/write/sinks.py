"""Where a watch writes: a `Run`, or a sink that keeps nothing for the ranks that write nothing.

Example:
    >>> NO_SINK.closed
    False
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from .. import _core


class HistogramSink(Protocol):
    """Where a watch writes: a `Run`, or anything with ``log``, ``_log_batch`` and ``closed``."""

    @property
    def closed(self) -> bool:
        """True once nothing more can be written; the watch then takes its hooks off."""
        ...

    def log(self, data: Mapping[str, Any], step: int | None = None) -> None:
        """Writes ``data`` (key -> `Histogram`) at ``step``."""
        ...

    def _log_batch(self, keys: Sequence[str], batch: _core.BinnedBatch, step: int) -> None:
        """Writes ``batch``'s histograms under ``keys`` at ``step``, as the core binned them."""
        ...


class NoSink:
    """A `HistogramSink` that keeps nothing: for the ranks of a sharded watch that only take
    part in its collectives (`histoscope.watch` on a rank that writes nothing, without a run).

    Example:
        >>> NO_SINK.log({"ignored": 1.0}, step=0); NO_SINK.closed
        False
    """

    closed = False

    def log(self, data: Mapping[str, Any], step: int | None = None) -> None:
        """Keeps nothing."""

    def _log_batch(self, keys: Sequence[str], batch: _core.BinnedBatch, step: int) -> None:
        """Keeps nothing."""


NO_SINK = NoSink()
