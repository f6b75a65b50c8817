"""The spectral figures drawn beside a spectrum's card: each run's α and stable rank over
steps, as `watch(spectral=True)` and `Run.log_spectrum` log them (scalars under
``spectrum/<name>/``), read from the runs' events files and followed as they grow.

Each file is read on from where the last read ended (`_core.read_scalars`); a file
that got shorter is read again from its start. A tag's step going back drops its
values from that step on, as the restart rule does for histograms.

Example:
    >>> from histoscope.view.spectral import SpectralTrends
    >>> SpectralTrends("examples/logdir", refresh_seconds=1.0).trend("spectrum/fc", [])
    {'tag': 'spectrum/fc', 'band': [2.0, 6.0], 'figures': ['alpha', 'stable_rank'], 'runs': []}
"""

from __future__ import annotations

import math
import threading
import time

import numpy as np

from .. import _core
from ..errors import RequestError
from .refreshed import RunFiles

BAND: tuple[float, float] = _core.ALPHA_BAND
"""WeightWatcher's published band for the α of well-trained layers, drawn as context:
the core's, which its `spectral` finding judges by (`rust/diagnose/spectral.rs`)."""

TREND_FIGURES = ("alpha", "stable_rank")
"""The figures drawn over steps, in order."""

PREFIX = _core.SPECTRUM_PREFIX
"""The first word of every spectral key: the core's, as the writer writes it."""


class SpectralTrends:
    """Every run's spectral scalars, by tag, then step; read again at most every
    ``refresh_seconds`` for a run asked about."""

    def __init__(self, logdir: str, refresh_seconds: float) -> None:
        self._refresh_seconds = refresh_seconds
        self._files = RunFiles(logdir, refresh_seconds)
        self._read_at: dict[str, float] = {}
        self._values: dict[str, dict[str, dict[int, float]]] = {}
        self._lock = threading.Lock()

    def trend(self, tag: str, runs: list[str]) -> dict[str, object]:
        """The answer for the card of ``tag`` (``spectrum/<name>``): each of ``runs`` that
        logged any of its figures, with ``[step, value]`` pairs per figure."""
        if not tag.startswith(PREFIX):
            raise RequestError(f"tag must be a spectrum's key (spectrum/<name>), got {tag!r}")
        out = []
        with self._lock:
            for run in runs:
                held = self._read(run)
                figures = {f: sorted(held.get(f"{tag}/{f}", {}).items()) for f in TREND_FIGURES}
                if any(figures.values()):
                    pairs = {f: [list(p) for p in v] for f, v in figures.items()}
                    out.append({"run": run, **pairs})
        return {"tag": tag, "band": list(BAND), "figures": list(TREND_FIGURES), "runs": out}

    def embedded(self, runs: list[str]) -> dict[str, object]:
        """Every spectral figure of ``runs``, for the offline report: the band, the
        figures drawn, and per run and tag the ``[step, value]`` pairs."""
        with self._lock:
            held = {run: self._read(run) for run in runs}
        found = {
            run: {tag: [[s, v] for s, v in sorted(points.items())] for tag, points in tags.items()}
            for run, tags in held.items()
            if tags
        }
        return {"band": list(BAND), "figures": list(TREND_FIGURES), "runs": found}

    def _read(self, run: str) -> dict[str, dict[int, float]]:
        now = time.monotonic()
        if now - self._read_at.get(run, -np.inf) < self._refresh_seconds:
            return self._values.get(run, {})
        self._read_at[run] = now
        if self._files.cut_shorter(run):
            self._values.pop(run, None)  # read the run again from its files' starts
        held = self._values.setdefault(run, {})
        scalars = self._files.read_on(run, lambda path, at: _core.read_scalars(path, at, PREFIX))
        for points in scalars:
            for point in points:
                values = held.setdefault(point.tag, {})
                if values and point.step <= max(values):
                    for step in [s for s in values if s >= point.step]:
                        del values[step]
                if math.isfinite(point.value):  # JSON holds no NaN; a gap is drawn instead
                    values[point.step] = point.value
        return held
