"""``histoscope report``: a whole log directory as one self-contained, offline HTML file.

The report is the viewer's page with its data embedded: the overview, the
sections and every card, with the same keys, speech, sound, braille and data
tables. Each series is thinned to at most ``max_steps`` steps (as maidr thins)
and rebinned, per key, onto shared equal bins by the core's overlap-proportional
rebinning; the data is gzip-compressed JSON in base64, unpacked by the browser's
own ``DecompressionStream``. The file makes no network request, so it opens
from ``file://`` and can be mailed or archived: a replacement for tensorboard.dev.
"""

from __future__ import annotations

import base64
import gzip
import html
import json
import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from .. import _core
from ..read.reader import HistogramSeries, load_histograms
from .page import MODULES, asset_text, bundle, vocabulary_script

__all__ = ["build_report", "bundle", "write_report"]

#: The steps a series keeps in the report by default.
MAX_STEPS = 51
#: The shared equal bins of a key.
BINS = 30

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
) -> Path:
    """Writes the report of ``logdir`` to ``output``; returns its path.

    Example:
        >>> import os, tempfile, histoscope.view.report
        >>> out = os.path.join(tempfile.mkdtemp(), "report.html")
        >>> histoscope.view.report.write_report("examples/logdir", out).stat().st_size > 10_000
        True
    """
    path = Path(output)
    path.write_text(build_report(logdir, max_steps=max_steps, bins=bins), encoding="utf-8")
    return path


def build_report(
    logdir: str | os.PathLike[str], *, max_steps: int = MAX_STEPS, bins: int = BINS
) -> str:
    """The report of ``logdir`` as one HTML document.

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
    loaded = load_histograms(logdir)
    data = _data(os.fspath(logdir), loaded, max_steps, bins)
    packed = base64.b64encode(gzip.compress(_json(data), mtime=0, compresslevel=9)).decode()
    title = html.escape(f"histoscope report: {os.path.basename(os.path.abspath(logdir))}")
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
    logdir: str, loaded: dict[str, dict[str, HistogramSeries]], max_steps: int, bins: int
) -> dict[str, Any]:
    runs = sorted({run for by_run in loaded.values() for run in by_run})
    cards: dict[str, Any] = {}
    steps: dict[str, set[int]] = {run: set() for run in runs}
    for tag, by_run in loaded.items():
        kept = {run: _core.thin_indices(len(s.steps), max_steps) for run, s in by_run.items()}
        buckets = [s.buckets[i] for run, s in by_run.items() for i in kept[run]]
        rebinned = _core.rebin(buckets, bins)
        edges, counts = rebinned.edges, rebinned.counts
        entries, row = {}, 0
        for run, series in by_run.items():
            rows = counts[row : row + len(kept[run])]
            row += len(kept[run])
            entries[run] = {
                "steps": series.steps[kept[run]],
                "counts": _compact(rows),
                "stats": {
                    **{name: _compact(series.stats[name][kept[run]]) for name in _core.STAT_NAMES},
                    "zeros": _compact(_core.zero_shares(series.record)[kept[run]]),
                },
            }
            steps[run].update(int(s) for s in series.steps[kept[run]])
        cards[tag] = {"edges": edges, "runs": entries}
    return {
        "runs": runs,
        "tags": [{"tag": tag, "runs": list(by_run)} for tag, by_run in sorted(loaded.items())],
        "layout": _layout(logdir),
        "steps": {run: sorted(found) for run, found in steps.items()},
        "cards": {tag: cards[tag] for tag in sorted(cards)},
        "findings": _findings(logdir),
    }


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


def _layout(logdir: str) -> list[dict[str, Any]]:
    """The ``define_metric`` declarations of every run, run by run in file order."""
    out = []
    for run in _core.discover_runs(logdir):
        for path in run.files:
            _end, found = _core.read_layout(path)
            out += [{"pattern": d.pattern, "section": d.section, "hidden": d.hidden} for d in found]
    return out


def _findings(logdir: str) -> list[dict[str, Any]]:
    """What ``histoscope check`` finds: diagnosed from the files, so that the runs' scalars
    and optimizer notes count as evidence, as they do for the viewer's alerts."""
    from ..diagnose import diagnose

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [finding.to_dict() for finding in diagnose(logdir)]


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
