"""``histoscope report``: a whole log directory as one self-contained, offline HTML file.

The report is the viewer's page with its data embedded: the overview, the
sections and every card, with the same keys, speech, sound, braille and data
tables. Each series is thinned to at most ``max_steps`` steps (as maidr thins)
and rebinned, per key, onto shared equal bins by the core's overlap-proportional
rebinning (`_core.SharedCharts`, which reads the series' buckets in place); the
data is gzip-compressed JSON in base64, unpacked by the browser's own
``DecompressionStream``. The file makes no network request, so it opens
from ``file://`` and can be mailed or archived: a replacement for tensorboard.dev.

The keys can be sorted by a statistic and runs compared, as in the viewer: each
run's rankings and, for the first eight runs, every pair's comparison are
embedded, exact from the buckets (`report_orders`; local directories only).

The log directory is read twice, a few runs at a time, so that memory follows
its largest run: the first read diagnoses each run and keeps the kept steps'
statistics and the span of their buckets; the second, once every key's span is
known, rebins each run's kept steps onto its key's shared bins. A log directory
behind an fsspec URL is read so too, by the same core stream: each batch of runs
fetched through fsspec and decoded as it arrives, nothing written to disk.
"""

from __future__ import annotations

import base64
import gzip
import html
import json
import os
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from .. import _core
from ..diagnose import Diagnosis
from ..errors import DamagedFileWarning, HistoscopeWarning, SharedTagWarning
from ..progress import each_counted
from ..read.reader import HistogramSeries, _warn_missing
from ..read.spool import is_url, remote_logdir
from .page import MODULES, asset_text, bundle, vocabulary_script
from .report_orders import report_orders
from .spectral import SpectralTrends

#: The steps a series keeps in the report by default.
MAX_STEPS = _core.CHART_STEPS
#: The shared equal bins of a key.
BINS = _core.CHART_BINS

#: Only what the file holds may run or be drawn; nothing may be fetched.
_CSP = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "img-src data:; base-uri 'none'; form-action 'none'"
)


def write_report(
    logdir: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    max_steps: int = MAX_STEPS,
    bins: int = BINS,
    progress: TextIO | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> Path:
    """Writes the report of ``logdir`` to ``output``; returns its path. On ``progress``,
    if it is a terminal, a one-line progress is drawn for each of the two reads.
    ``logdir`` may be an fsspec URL, with ``storage_options`` (see `build_report`).

    Example:
        >>> import os, tempfile, histoscope.view.report
        >>> out = os.path.join(tempfile.mkdtemp(), "report.html")
        >>> histoscope.view.report.write_report("examples/logdir", out).stat().st_size > 10_000
        True
    """
    path = Path(output)
    page = build_report(
        logdir, max_steps=max_steps, bins=bins, progress=progress, storage_options=storage_options
    )
    path.write_text(page, encoding="utf-8")
    return path


def build_report(
    logdir: str | os.PathLike[str],
    *,
    max_steps: int = MAX_STEPS,
    bins: int = BINS,
    progress: TextIO | None = None,
    budget_bytes: int | None = _core.READ_BUDGET_BYTES,
    storage_options: Mapping[str, Any] | None = None,
) -> str:
    """The report of ``logdir`` as one HTML document, its files read ``budget_bytes`` at a
    time (or one larger run; None: all at once).

    ``logdir`` may be an fsspec URL (``s3://bucket/logs``; ``storage_options`` as for
    `histoscope.load_histograms`): its runs are fetched ``budget_bytes`` of files at a
    time and read as they arrive, and the report is the one of the same directory on
    disk, less the rankings and spectral trends (which read the runs' indexes again).
    A URL with no events files is refused (FileNotFoundError).

    Example:
        >>> page = build_report("examples/logdir", max_steps=21)
        >>> page.startswith("<!DOCTYPE html>")
        True
    """
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 2:
        raise ValueError(f"max_steps must be a whole number of at least 2, got {max_steps!r}")
    if isinstance(bins, bool) or not isinstance(bins, int):
        raise ValueError(f"bins must be a whole number, got {bins!r}")
    _core.check_bin_count(bins)
    path = os.fspath(logdir)
    if is_url(path):
        source = _Source(path, remote_logdir(path, storage_options).core, remote=True)
        name = path.rstrip("/").rsplit("/", 1)[-1]
    else:
        source = _Source(path, path, remote=False)
        name = os.path.basename(os.path.abspath(path))
    data = _data(source, max_steps, bins, progress, budget_bytes)
    return report_page(data, name)


@dataclass(frozen=True)
class _Source:
    """The log directory a report reads: as named, as the core reads it, and whether
    it is behind a URL (whose runs' indexes are not read again for rankings)."""

    name: str
    core: str | _core.FsspecLogdir
    remote: bool


def report_page(data: Mapping[str, Any], name: str) -> str:
    """The report's page over ``data`` (as `build_report` gathers it: runs, tags, layout,
    steps, cards, findings, and optionally orders and spectral figures), titled by ``name``:
    also the snapshot a saved notebook keeps of a widget (`histoscope.notebook`).

    Example:
        >>> data = {"runs": [], "tags": [], "layout": [], "steps": {}, "cards": {}, "findings": []}
        >>> report_page(data, "empty").count("histoscope report: empty")
        2
    """
    packed = base64.b64encode(gzip.compress(_json(data), mtime=0, compresslevel=9)).decode()
    title = html.escape(f"histoscope report: {name}")
    page = asset_text("viewer.html")
    return (
        page.replace("{title}", title)
        .replace(
            "{styles}",
            f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
            f"<style>\n{asset_text('viewer.css')}\n</style>",
        )
        .replace(
            "{scripts}",
            f'<script type="application/octet-stream" id="histoscope-data">\n{packed}\n</script>\n'
            f"{vocabulary_script()}"
            f'<script type="module">\n{bundle([*MODULES, "report.js"])}\n</script>',
        )
        .replace("Loading runs…", "Unpacking the report…")
    )


def _data(
    source: _Source | str,
    max_steps: int,
    bins: int,
    progress: TextIO | None,
    budget_bytes: int | None,
) -> dict[str, Any]:
    """The report's data of ``source`` (a local path, or a directory as `build_report`
    resolves it)."""
    if isinstance(source, str):
        source = _Source(source, source, remote=False)
    logdir = source.name

    def runs(**options: Any) -> _core.RunStream:
        return _core.RunStream(source.core, budget_bytes=budget_bytes, **options)

    first = runs(diagnose=True)
    if source.remote and not first.runs:
        raise FileNotFoundError(f"no events files (*tfevents*) under {logdir.rstrip('/')!r}")
    names = first.runs
    # A log directory that fits the budget is read once, its kept steps kept.
    once = budget_bytes is None or first.bytes <= budget_bytes
    gathered = _Gathered(max_steps, bins, keep_rows=once)
    for run in each_counted(first, first, progress, "report: reading"):
        gathered.add(run)
    for summary in [r.summary for r in gathered.diagnosis.reports if r.has_problems]:
        warnings.warn(summary, DamagedFileWarning, stacklevel=2)
    shared = [r.shared_note for r in gathered.diagnosis.reports if r.shared_note]
    for note in dict.fromkeys(shared):
        warnings.warn(note, SharedTagWarning, stacklevel=2)
    _warn_missing(repr(logdir), names, None, None, gathered.cards, bool(gathered.cards))
    layout = _declared(gathered.layout)
    if once:
        gathered.rebin_kept()
    else:
        again = runs()
        for run in each_counted(again, again, progress, "report: binning"):
            gathered.rebin(run)
    cards = gathered.cards_by_key()
    runs_found = sorted(gathered.steps)
    # Rankings and comparisons read the runs' indexes again: local directories only.
    orders = report_orders(logdir, runs_found) if not source.remote and runs_found else None
    # A spectrum's α and stable rank over steps, as the viewer draws them (local only).
    spectral = None if source.remote else SpectralTrends(logdir, 0.0).embedded(names)
    return {
        "orders": orders,
        "runs": runs_found,
        "tags": [{"tag": tag, "runs": list(card["runs"])} for tag, card in cards.items()],
        "layout": layout,
        "steps": {run: sorted(found) for run, found in sorted(gathered.steps.items())},
        "cards": cards,
        "findings": [finding.to_dict() for finding in gathered.diagnosis.findings],
        "spectral": spectral,
    }


@dataclass
class _Gathered:
    """The report's data as runs are read: each series' kept steps and their statistics,
    the core widening each key's shared bins by them (`_core.SharedCharts`); then their
    counts on the key's shared bins."""

    max_steps: int
    bins: int
    #: Whether to keep the series read, to rebin them without reading them again.
    keep_rows: bool
    cards: dict[str, dict[str, Any]] = field(default_factory=dict)
    steps: dict[str, set[int]] = field(default_factory=dict)
    diagnosis: Diagnosis = field(default_factory=Diagnosis)
    kept: list[tuple[str, _core.SeriesRecord]] = field(default_factory=list)
    #: Every run's ``define_metric`` declarations, run by run in file order.
    layout: list[_core.LayoutRecord] = field(default_factory=list)
    charts: _core.SharedCharts = field(init=False)

    def __post_init__(self) -> None:
        self.charts = _core.SharedCharts(self.bins, self.max_steps)

    def add(self, run: _core.RunRecord) -> None:
        """Keeps a run's findings, its layout and, of each series, its kept steps and
        statistics."""
        self.diagnosis.add(run)
        self.layout += run.layout
        for record in run.series:
            series = HistogramSeries.from_record(record)
            kept = self.charts.keep(record)
            card = self.cards.setdefault(series.key, {"edges": np.empty(0), "runs": {}})
            card["runs"][run.run] = {
                "steps": series.steps[kept],
                "counts": None,
                "stats": {
                    **{name: _compact(series.stats[name][kept]) for name in _core.STAT_NAMES},
                    "zeros": _compact(_core.zero_shares(record)[kept]),
                },
            }
            if self.keep_rows:
                # The whole log directory fits the budget: its series are kept as read.
                self.kept.append((run.run, record))
            self.steps.setdefault(run.run, set()).update(int(s) for s in series.steps[kept])

    def rebin(self, run: _core.RunRecord) -> None:
        """Counts the kept steps of a run's series, read again, on their key's shared bins."""
        for record in run.series:
            self._count(run.run, record)

    def rebin_kept(self) -> None:
        """Counts the kept steps, kept as they were read, on their key's shared bins."""
        for run, record in self.kept:
            self._count(run, record)
        self.kept.clear()

    def _count(self, run: str, record: _core.SeriesRecord) -> None:
        entry = self.cards.get(record.tag, {"runs": {}})["runs"].get(run)
        if entry is None:
            return
        counts = self.charts.counts(record, entry["steps"])
        if counts is not None:
            entry["counts"] = _compact(counts)

    def cards_by_key(self) -> dict[str, dict[str, Any]]:
        """The cards by key with their shared bins' edges, counts gone from the files
        between the two reads left empty."""
        for tag, card in self.cards.items():
            card["edges"] = self.charts.edges(tag)
            for run, entry in card["runs"].items():
                if entry["counts"] is None:
                    warnings.warn(
                        f"{tag!r} ({run}): its file changed between the report's two reads; "
                        "its counts are left empty",
                        HistoscopeWarning,
                        stacklevel=4,
                    )
                    entry["counts"] = np.zeros((len(entry["steps"]), self.bins))
        return {tag: self.cards[tag] for tag in sorted(self.cards)}


def _compact(values: np.ndarray) -> np.ndarray:
    """Numbers to four significant digits, more than a reader can see or hear of them (the
    page says three); NaN and infinities stay as they are.

    Example:
        >>> _compact(np.array([123456.0, -0.0123456, 0.0, np.nan])).tolist()
        [123500.0, -0.01235, 0.0, nan]
    """
    values = np.asarray(values, dtype=np.float64)
    out = values.copy()
    finite = np.isfinite(values) & (values != 0)
    magnitude = np.floor(np.log10(np.abs(values[finite])))
    scale = 10.0 ** (3 - magnitude)
    out[finite] = np.round(values[finite] * scale) / scale
    return out


def _declared(found: Iterable[_core.LayoutRecord]) -> list[dict[str, Any]]:
    return [{"pattern": d.pattern, "section": d.section, "hidden": d.hidden} for d in found]


def _json(data: Any) -> bytes:
    return json.dumps(data, default=_numbers, allow_nan=False, separators=(",", ":")).encode()


def _numbers(values: Any) -> Any:
    """NumPy arrays and numbers as JSON holds them: NaN and infinities become null."""
    held = np.asarray(values)
    if held.dtype.kind != "f":
        return held.tolist()
    out = held.astype(object)
    out[~np.isfinite(held)] = None
    whole = np.isfinite(held) & (held == np.round(held)) & (np.abs(held) < 2**53)
    out[whole] = [int(v) for v in held[whole]]
    return out.tolist()
