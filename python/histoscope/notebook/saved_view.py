"""What a saved notebook shows of a widget where no script runs: the findings as text,
every key's statistics at its last step as a table, and the overview as an inline SVG
(`histoscope.view.overview_svg`), all plain HTML elements with no script, style or
frame, so that GitHub's notebook view, nbviewer's static mode, a code review and a
screen reader read it as they read any page.

It is made from what the widget holds (the core's live chart, its whole update, and the
findings the widget was last sent), never from the files again, and it is kept to
`SAVED_BYTES` however large the model: the findings are listed up to `FINDINGS_SHOWN`,
the overview has a bounded size, and the table takes the bytes left, saying how many
rows it leaves out when they do not fit.

Example:
    >>> import numpy as np
    >>> from histoscope import _core
    >>> chart = _core.LiveChart(bins=4)
    >>> stats = _core.Stats(count=3, min=0, max=1, mean=.5, std=.4, nonfinite=0, below=0, above=0)
    >>> chart.add("parameters/w", "run", 7, np.array([[0.0, 1.0, 3.0]]), stats)
    >>> page = saved_view(chart.whole(), {"findings": [], "notes": []}, "demo")
    >>> "<th scope=\\"row\\">parameters/w</th>" in page, "<script" in page
    (True, False)
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _core
from ..view.overview_svg import Row, natural_key, overview_svg, short_number
from ..view.page import SEVERITIES

#: The most bytes of the saved view's HTML: with the notebook's JSON around it (quotes
#: escaped, a line each), a shown widget adds under 100 KB to a saved notebook.
SAVED_BYTES = 88 * 1024
#: The most findings listed one by one; the rest are counted.
FINDINGS_SHOWN = 40

_STAT = list(_core.STAT_NAMES)
_LIVE = "Where widgets run, the live widget shows instead."
_COLUMNS = ("count", "mean", "std", "min", "max")
_HEADS = {"count": "Count", "mean": "Mean", "std": "Std", "min": "Min", "max": "Max"}


@dataclass(frozen=True)
class Held:
    """One series of the chart: its steps and, per step, the core's statistics."""

    tag: str
    run: str
    steps: np.ndarray
    stats: np.ndarray

    def last(self, name: str) -> float:
        """The statistic ``name`` at the last step."""
        return float(self.stats[-1, _STAT.index(name)])


def held_series(whole: _core.LiveUpdateRecord) -> list[Held]:
    """Every series of ``whole`` (`_core.LiveChart.whole`), keys in counting order."""
    figures = np.asarray(whole.figures, dtype=np.float64).reshape(-1, _core.STEP_FIGURES)
    out, at = [], 0
    for change in whole.changes:
        rows = slice(at, at + change.rows)
        at += change.rows
        if change.rows:
            stats = figures[rows, : len(_STAT)]
            out.append(Held(change.tag, change.run, whole.steps[rows].astype(np.int64), stats))
    return sorted(out, key=lambda s: (natural_key(s.tag), natural_key(s.run)))


def saved_view(whole: _core.LiveUpdateRecord, found: dict[str, Any], title: str) -> str:
    """The saved view of a widget titled ``title`` holding ``whole`` and ``found``
    (``{"findings": [...], "notes": [...]}``, each finding as `Finding.to_dict` gives it)."""
    series = held_series(whole)
    findings = sorted(
        found.get("findings", []),
        key=lambda f: (-SEVERITIES.index(f["severity"]), f["first_step"], natural_key(f["key"])),
    )
    runs = sorted({s.run for s in series}, key=natural_key)
    head = _heading(title, series, runs) + _findings(findings, found.get("notes", []))
    drawing = _drawing(series, runs, {(f["run"], f["key"]) for f in findings})
    table = _table(series, runs, SAVED_BYTES - len(head) - len(drawing))
    return f"<section>\n{head}{drawing}{table}</section>"


def _heading(title: str, series: Sequence[Held], runs: Sequence[str]) -> str:
    said = f"<h2>histoscope: {html.escape(title)}</h2>\n"
    if not series:
        return said + f"<p>No histograms yet. {_LIVE}</p>\n"
    keys = len({s.tag for s in series})
    first = min(int(s.steps[0]) for s in series)
    last = max(int(s.steps[-1]) for s in series)
    in_runs = f"run {html.escape(runs[0])}" if len(runs) == 1 else f"{len(runs)} runs"
    return said + (
        f"<p>{keys} keys of {in_runs}, steps {first} to {last}: the widget's saved view,"
        f" readable with no script. {_LIVE}</p>\n"
    )


def _findings(findings: Sequence[dict[str, Any]], notes: Sequence[dict[str, Any]]) -> str:
    out = "<h3>Findings</h3>\n"
    if not findings:
        out += "<p>No findings so far.</p>\n"
    else:
        items = "".join(
            f"<li>{html.escape(_finding(f), quote=False)}</li>\n" for f in findings[:FINDINGS_SHOWN]
        )
        out += f"<p>{len(findings)} findings, the most severe first:</p>\n<ul>\n{items}</ul>\n"
        if len(findings) > FINDINGS_SHOWN:
            out += f"<p>{len(findings) - FINDINGS_SHOWN} more findings are in the widget.</p>\n"
    if notes:
        items = "".join(
            f"<li>{html.escape(_note(n), quote=False)}</li>\n" for n in notes[:FINDINGS_SHOWN]
        )
        out += f"<h3>Reading notes</h3>\n<ul>\n{items}</ul>\n"
    return out


def _items(texts: Iterable[str]) -> str:
    return "".join(f"<li>{html.escape(text, quote=False)}</li>\n" for text in texts)


def _finding(f: dict[str, Any]) -> str:
    first, last = f["first_step"], f["last_step"]
    steps = f"step {first}" if first == last else f"steps {first} to {last}"
    severity = str(f["severity"]).capitalize()
    return f"{severity}, {f['kind']}, {steps}, run {f['run']}: {f['message']}"


def _note(note: dict[str, Any]) -> str:
    return f"{note.get('run', '')}: {note.get('text', note.get('message', ''))}"


def _drawing(series: Sequence[Held], runs: Sequence[str], flagged: set[tuple[str, str]]) -> str:
    """The overview, a section per run and key prefix (parameters, gradients, ...)."""
    blocks: dict[str, list[Row]] = {}
    for s in sorted(series, key=lambda s: (natural_key(s.run), natural_key(s.tag))):
        section, _, rest = s.tag.partition("/")
        name = section if rest else "(top level)"
        name = name if len(runs) == 1 else f"{s.run} \u00b7 {name}"
        row = Row(rest or s.tag, s.steps, s.stats[:, _STAT.index("std")], (s.run, s.tag) in flagged)
        blocks.setdefault(name, []).append(row)
    svg = overview_svg(list(blocks.items()))
    return f"<h3>Overview</h3>\n{svg}\n" if svg else ""


def _table(series: Sequence[Held], runs: Sequence[str], room: int) -> str:
    """Every key's statistics at its last step, while they fit in ``room`` bytes."""
    if not series:
        return ""
    several = len(runs) > 1
    heads = ["Key", *(["Run"] if several else []), "Step", *(_HEADS[c] for c in _COLUMNS)]
    nonfinite = any(s.last("nonfinite") for s in series)
    heads += ["Non-finite"] if nonfinite else []
    keys = f"{len(series)} keys" if not several else f"{len(series)} keys of runs"
    caption = (
        f"{keys} at their last step: how many values, their mean, standard deviation,"
        " smallest and largest"
    )
    start = (
        f"<h3>Keys</h3>\n<details>\n<summary>Table of {keys} at their last step"
        f"</summary>\n<table>\n<caption>{caption}</caption>\n<thead><tr>"
        + "".join(f'<th scope="col">{h}</th>' for h in heads)
        + "</tr></thead>\n<tbody>\n"
    )
    end = "</tbody>\n</table>\n</details>\n"
    rows: list[str] = []
    used = len(start) + len(end) + 200  # the note on rows left out
    for s in series:
        row = _table_row(s, several, nonfinite)
        if used + len(row) > room:
            break
        rows.append(row)
        used += len(row)
    left = len(series) - len(rows)
    note = f"<p>{left} more keys did not fit in the saved notebook; the widget has them.</p>\n"
    return start + "".join(rows) + end + (note if left else "")


def _table_row(s: Held, several: bool, nonfinite: bool) -> str:
    count = s.last("count")
    cells = [f"{count:,.0f}" if np.isfinite(count) else "n/a"]
    cells += [short_number(s.last(name)) for name in _COLUMNS[1:]]
    cells += [f"{s.last('nonfinite'):,.0f}"] if nonfinite else []
    run = f"<td>{html.escape(s.run)}</td>" if several else ""
    return (
        f'<tr><th scope="row">{html.escape(s.tag)}</th>{run}<td>{int(s.steps[-1])}</td>'
        + "".join(f"<td>{c}</td>" for c in cells)
        + "</tr>\n"
    )
