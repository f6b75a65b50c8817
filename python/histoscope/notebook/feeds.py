"""What a notebook widget shows, brought into the core's live chart: a run being logged in
this kernel (its writer hands the chart every histogram it writes, binned once), a log
directory followed as it grows (local or an fsspec URL, read as the viewer reads it), or
series already loaded.

Example:
    >>> import numpy as np, histoscope as hs
    >>> series = hs.HistogramSeries("train", "w", steps=[0, 1], wall_times=[0.0, 1.0],
    ...     flat_buckets=[[0, 1, 2], [1, 2, 3], [0, 2, 5]], offsets=[0, 2, 3])
    >>> feed = SeriesFeed([series])
    >>> feed.done, feed.chart.take_update(1 << 20).steps.tolist()
    (True, [0.0, 1.0])
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from .. import _core

if TYPE_CHECKING:
    from ..read.series import HistogramSeries
    from ..view.follow import LogdirIndex
    from ..view.refreshed import Findings
    from ..write.run import Run

#: How often the findings of a run are read again for the widget.
FINDINGS_SECONDS = 1.0


class Feed(Protocol):
    """Where a widget's chart is filled from."""

    chart: _core.LiveChart
    title: str

    def poll(self) -> None:
        """Brings what is new into the chart (a no-op where it is handed in as written)."""

    def findings(self) -> dict[str, Any] | None:
        """``{"findings": [...], "notes": [...]}`` when they may have changed, else None."""

    @property
    def done(self) -> bool:
        """Whether nothing more will come."""

    def close(self) -> None:
        """Stops feeding the chart."""


def _stats(row: Sequence[float]) -> _core.Stats:
    return _core.Stats(**{name: float(v) for name, v in zip(_core.STAT_NAMES, row)})


class RunFeed:
    """A run of this process: its writer adds each histogram to the chart as it writes it,
    after what its file held when the widget was made."""

    def __init__(self, run: Run, chart: _core.LiveChart) -> None:
        self.chart = chart
        self.run = run
        self.title = f"{run.project}/{run.name}"
        run._writer.file.show_in(chart, self.title)
        self._read_at = -np.inf
        self._said = ""

    def poll(self) -> None:
        pass

    def findings(self) -> dict[str, Any] | None:
        if time.monotonic() - self._read_at < FINDINGS_SECONDS and not self.run.closed:
            return None
        self._read_at = time.monotonic()
        found = [f.to_dict() for f in self.run.findings()]
        said = json.dumps(found, sort_keys=True, default=str)
        if said == self._said:
            return None
        self._said = said
        return {"findings": found, "notes": []}

    @property
    def done(self) -> bool:
        return self.run.closed

    def close(self) -> None:
        if not self.run.closed:
            self.run._writer.guard("hide", lambda: self.run._writer.file.hide_from(self.chart))


class SeriesFeed:
    """Series already loaded, each thinned to the chart's steps; their findings by the
    rules of `histoscope.diagnose`."""

    def __init__(
        self, series: Sequence[HistogramSeries], title: str = "histograms", run: str | None = None
    ) -> None:
        from ..diagnose import diagnose

        self.chart = _core.LiveChart()
        self.title = title
        for one in series:
            stats = np.column_stack([one.stats[name] for name in _core.STAT_NAMES])
            for i in _core.thin_indices(len(one), _core.LIVE_STEPS):
                self.chart.add(
                    one.key, one.run, int(one.steps[i]), one.buckets[i], _stats(stats[i])
                )
        self._findings: dict[str, Any] | None = {
            "findings": [f.to_dict() for f in diagnose(list(series))],
            "notes": [],
        }

    def poll(self) -> None:
        pass

    def findings(self) -> dict[str, Any] | None:
        found, self._findings = self._findings, None
        return found

    @property
    def done(self) -> bool:
        return True

    def close(self) -> None:
        pass


class LogdirFeed:
    """A log directory (or fsspec URL) followed as the viewer follows it: runs listed and
    files read from where the last read stopped, each series' new steps added; a series
    whose steps were replaced by a restart is added again from its first step."""

    def __init__(
        self,
        logdir: str | os.PathLike[str],
        storage_options: Mapping[str, Any] | None = None,
    ) -> None:
        from ..read.spool import RemoteLogdir, is_url
        from ..view.follow import LogdirIndex
        from ..view.refreshed import Findings

        path = os.fspath(logdir)
        self.remote = RemoteLogdir.open(path, storage_options) if is_url(path) else None
        local = path if self.remote is None else self.remote.root
        if self.remote is None and not os.path.isdir(local):
            raise FileNotFoundError(f"no log directory at {path!r}")
        self.index: LogdirIndex = LogdirIndex(local, remote=self.remote)
        if self.remote is not None and not self.index.runs():
            self.remote.close()
            raise FileNotFoundError(f"no events files (*tfevents*) under {path!r}")
        self.title = path.rstrip("/").rsplit("/", 1)[-1] or path
        self.chart = _core.LiveChart()
        self._findings: Findings = Findings(local)
        self._held: dict[tuple[str, str], tuple[int, int]] = {}
        self._said = ""

    def poll(self) -> None:
        for name in self.index.runs():
            run = self.index.run(name)
            if run is None:
                continue
            for tag, series in run.series.items():
                self._add(run, name, tag, *series.snapshot())

    def _add(self, run: Any, name: str, tag: str, generation: int, view: Any) -> None:
        held_generation, held = self._held.get((name, tag), (generation, 0))
        start = 0 if held_generation != generation else held
        count = len(view.steps)
        if count == 0 and held_generation != generation:
            # A restart that left none of the series' steps: no step arrives to say so.
            self.chart.drop_from(tag, name)
        if count <= start:
            self._held[(name, tag)] = (generation, count)
            return
        chosen = [start + int(i) for i in _core.thin_indices(count - start, _core.LIVE_STEPS)]
        steps = [int(view.steps[i]) for i in chosen]
        for i, step, buckets in zip(chosen, steps, run.buckets(tag, steps)):
            self.chart.add(tag, name, step, buckets, _stats(view.stats[i]))
        self._held[(name, tag)] = (generation, count)

    def findings(self) -> dict[str, Any] | None:
        answer = self._findings.answer()
        said = json.dumps(answer, sort_keys=True, default=str)
        if said == self._said:
            return None
        self._said = said
        return {"findings": answer["findings"], "notes": answer["notes"]}

    @property
    def done(self) -> bool:
        return False

    def close(self) -> None:
        if self.remote is not None:
            self.remote.close()
