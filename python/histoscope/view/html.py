"""Accessible HTML pages for a `TensorBoardChart`: a ridgeline to explore by keys, speech,
sound and braille, with a generated description and the full data as a table.

Python writes the words (title, description, findings, table) and the data as JSON; the
ridgeline is drawn in the browser by the same module as the viewer's and the report's
cards (``assets/ridgeline.js``). The page is one self-contained file (inline CSS and
JavaScript, the modules bundled into one script, no network), so it opens from
``file://``, a notebook output or an e-mail attachment alike.
"""

from __future__ import annotations

import html
import json
import math
import os
import re
import tempfile
import webbrowser
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from .page import SEVERITIES, asset_text, bundle

_NOTEBOOK_HEIGHT = 820  # pixels of the notebook iframe; the page scrolls inside it past that


# A chart and a finding are known here by their fields, not by their classes:
# histoscope.read.chart imports this module for notebooks, and histoscope.diagnose reads.
class TensorBoardChart(Protocol):
    """What a page draws: a `histoscope.TensorBoardChart`, or anything with its fields."""

    @property
    def tag(self) -> str: ...
    @property
    def run(self) -> str: ...
    @property
    def steps(self) -> np.ndarray: ...
    @property
    def edges(self) -> np.ndarray: ...
    @property
    def counts(self) -> np.ndarray: ...
    @property
    def bins(self) -> int: ...


class Finding(Protocol):
    """What a page says of a `histoscope.Finding`."""

    @property
    def run(self) -> str: ...
    @property
    def key(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def severity(self) -> str: ...
    @property
    def first_step(self) -> int: ...
    @property
    def last_step(self) -> int: ...
    @property
    def message(self) -> str: ...


def render(chart: TensorBoardChart, *, findings: Iterable[Finding] | None = None) -> str:
    """Return the chart's page: one complete, self-contained HTML document.

    ``findings`` (from `histoscope.diagnose`) are mentioned in the page's
    description where they concern this chart's run and tag.

    Example:
        >>> import histoscope
        >>> chart = histoscope.TensorBoardChart(
        ...     tag="w", run="train", steps=[0, 1], wall_times=[0.0, 1.0],
        ...     edges=[0.0, 0.5, 1.0], counts=[[1, 3], [2, 2]])
        >>> page = histoscope.render(chart)
        >>> "<title>w (train)</title>" in page
        True
    """
    _check(chart)
    title = html.escape(f"{chart.tag} ({chart.run})")
    labels = _value_labels(chart.edges)
    counts = _json_counts(chart.counts)
    css, js = _assets()
    data = {
        "steps": chart.steps.tolist(),
        "edges": [v if math.isfinite(v) else None for v in chart.edges.tolist()],
        "labels": labels,
        "counts": counts,
    }
    return asset_text("chart.html").format(
        title=title,
        css=css,
        label=_chart_label(chart),
        keys=_keys_section(),
        description=html.escape(_describe(chart, labels) + _findings_text(chart, findings)),
        table=_table(chart, labels, counts),
        data=json.dumps(data, separators=(",", ":")).replace("<", "\\u003c"),
        js=js,
    )


def save_html(
    chart: TensorBoardChart,
    path: str | os.PathLike[str],
    *,
    findings: Iterable[Finding] | None = None,
) -> Path:
    """Write the chart's page (see `render`, and its ``findings``) to ``path`` as UTF-8 and
    return that path.

    Example:
        >>> import histoscope, tempfile, pathlib
        >>> chart = histoscope.TensorBoardChart(
        ...     tag="w", run="train", steps=[0], wall_times=[0.0],
        ...     edges=[0.0, 1.0], counts=[[5]])
        >>> out = histoscope.save_html(chart, pathlib.Path(tempfile.mkdtemp()) / "w.html")
        >>> out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
        True
    """
    path = Path(path)
    path.write_text(render(chart, findings=findings), encoding="utf-8")
    return path


def show_chart(
    chart: TensorBoardChart, *, findings: Iterable[Finding] | None = None
) -> Path | None:
    """Show the chart's page: inline in a Jupyter (IPython kernel) output, else in the web
    browser. `histoscope.show` calls it for a `TensorBoardChart`; it is the one ``show``.

    Outside a kernel the page is saved to a new temporary folder and opened with
    `webbrowser`; that file's path is returned. In a kernel it returns None.

    Example:
        >>> histoscope.show(chart)  # doctest: +SKIP
    """
    _check(chart)
    if _in_kernel():
        from IPython.display import HTML, display

        display(HTML(_notebook_html(chart, findings)))
        return None
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{chart.tag}_{chart.run}").strip("_") or "chart"
    folder = Path(tempfile.mkdtemp(prefix="histoscope-"))
    path = save_html(chart, folder / f"{name}.html", findings=findings)
    webbrowser.open(path.as_uri())
    return path


def _notebook_html(chart: TensorBoardChart, findings: Iterable[Finding] | None = None) -> str:
    """The page inside an ``<iframe srcdoc>``, so that its ids, styles and script stay its own
    next to other outputs: what `TensorBoardChart._repr_html_` shows in Jupyter."""
    title = html.escape(f"{chart.tag} ({chart.run})")
    return (
        f'<iframe title="{title}" srcdoc="{html.escape(render(chart, findings=findings))}"'
        f' style="width:100%;height:{_NOTEBOOK_HEIGHT}px;border:0"></iframe>'
    )


_CHART_FIELDS = ("tag", "run", "steps", "edges", "counts", "bins")


def _check(chart: Any) -> None:
    if not all(hasattr(chart, name) for name in _CHART_FIELDS):
        raise TypeError(f"chart must be a TensorBoardChart, got {type(chart).__name__}")
    if not np.isfinite(chart.counts).all():
        raise ValueError("chart.counts must be finite to be drawn, got NaN or infinity")


def _in_kernel() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    return getattr(get_ipython(), "kernel", None) is not None


@lru_cache(maxsize=1)
def _assets() -> tuple[str, str]:
    return asset_text("chart.css"), bundle(["chart.js"])


def _decimal(value: float, decimals: int) -> str:
    text = f"{value:.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def _value_labels(edges: np.ndarray) -> list[str]:
    """Edge labels short enough to hear, precise enough to tell neighbouring edges apart."""
    finite = edges[np.isfinite(edges)]
    widths = np.diff(finite)
    widths = widths[widths > 0]
    if not len(widths):
        return [_number(v) for v in edges.tolist()]
    width = float(widths.min())
    scale = float(np.abs(finite).max())
    if 1e-4 <= scale < 1e6:
        decimals = max(0, 1 - math.floor(math.log10(width)))
        return [_decimal(v, decimals) if math.isfinite(v) else str(v) for v in edges.tolist()]
    digits = min(17, max(2, math.floor(math.log10(scale)) - math.floor(math.log10(width)) + 2))
    return [f"{v:.{digits}g}" for v in edges.tolist()]


def _number(value: float) -> str:
    """Two significant digits, in plain decimals where that reads well."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    magnitude = math.floor(math.log10(abs(value)))
    if -4 <= magnitude < 6:
        return _decimal(value, max(0, 1 - magnitude))
    return f"{value:.2g}"


def _integral(counts: np.ndarray) -> bool:
    return np.array_equal(counts, np.round(counts)) and np.abs(counts).max(initial=0) < 2**53


def _json_counts(counts: np.ndarray) -> list[list[Any]]:
    """Whole counts as ints, others to two decimals: the JSON stays short."""
    if _integral(counts):
        return counts.astype(np.int64).tolist()
    return np.round(counts, 2).tolist()


def _count_text(count: float) -> str:
    if float(count).is_integer():
        return f"{int(count):,}"
    return f"{count:,.2f}".rstrip("0").rstrip(".")


def _count_cell(count: float) -> str:
    return f"<td>{_count_text(count)}</td>"


def _chart_label(chart: TensorBoardChart) -> str:
    steps = len(chart.steps)
    return html.escape(
        f"Ridgeline chart of {chart.tag} ({chart.run}): {steps} step{'s' * (steps != 1)}"
        f" of {chart.bins} bin{'s' * (chart.bins != 1)}, the earliest at the back, at the top."
        " Arrow keys move, H lists the keys."
    )


def _keys_section() -> str:
    keys = (
        ("Left, Right", "previous or next bin of the step"),
        ("Up, Down", "earlier or later step, same bin: the steps run down the figure"),
        ("Home, End", "first or last bin"),
        ("Page Up, Page Down", "first or last step"),
        ("T", "text announcements on or off"),
        ("S", "sound on or off: pitch follows the count, left to right follows the value"),
        ("B", "braille line of the step on or off"),
        ("R", "review the last announcement in a text field; Escape returns to the chart"),
        ("H or ?", "show or hide this list"),
    )
    rows = "".join(f"<dt>{key}</dt><dd>{what}</dd>\n" for key, what in keys)
    return (
        '<section id="keys" class="keys" aria-labelledby="keys-heading" hidden>\n'
        f'<h2 id="keys-heading">Keys</h2>\n<dl>\n{rows}</dl>\n</section>\n'
    )


def _trend(name: str, first: float, last: float, tolerance: float) -> str:
    if abs(last - first) <= tolerance:
        return f"the {name} stays near {_number(first)}"
    if name == "spread":
        verb = "grows" if last > first else "shrinks"
        return f"the spread {verb} from {_number(first)} to {_number(last)}"
    return f"the centre moves from {_number(first)} to {_number(last)}"


def _describe(chart: TensorBoardChart, labels: Sequence[str]) -> str:
    """A few sentences: what is shown, and how the distribution moves over the steps."""
    steps, counts = chart.steps, chart.counts
    if not len(steps) or not chart.bins:
        return "No data: the chart has no steps or no bins."
    if len(steps) == 1:
        parts = [f"1 step shown: step {steps[0]}."]
    else:
        parts = [f"{len(steps)} steps shown, from step {steps[0]} to step {steps[-1]}."]
    parts.append(f"Values span {labels[0]} to {labels[-1]} in {chart.bins} equal bins.")
    totals = counts.sum(axis=1)
    fewest, most = _count_text(round(totals.min(), 2)), _count_text(round(totals.max(), 2))
    if fewest == most:
        parts.append(f"Each step counts {fewest} values.")
    else:
        parts.append(f"Steps count from {fewest} to {most} values.")
    centres = (chart.edges[:-1] + chart.edges[1:]) / 2
    counted = np.flatnonzero(totals > 0)
    if len(counted) > 1 and np.isfinite(centres).all():
        first, last = counted[0], counted[-1]
        means = counts[[first, last]] @ centres / totals[[first, last]]
        spreads = np.sqrt(
            counts[[first, last]] @ centres**2 / totals[[first, last]] - means**2
        ).clip(0)
        width = float(chart.edges[-1] - chart.edges[0]) / chart.bins
        centre = _trend("centre", float(means[0]), float(means[1]), width / 2)
        spread = _trend("spread", float(spreads[0]), float(spreads[1]), 0.05 * float(spreads.max()))
        parts.append(f"From step {steps[first]} to step {steps[last]}, {centre} and {spread}.")
    peak_step, peak_bin = (int(i) for i in np.unravel_index(int(np.argmax(counts)), counts.shape))
    parts.append(
        f"The highest count, {_count_text(counts[peak_step, peak_bin])}, is at step"
        f" {steps[peak_step]}, {labels[peak_bin]} to {labels[peak_bin + 1]}."
    )
    return " ".join(parts)


def _findings_text(chart: TensorBoardChart, findings: Iterable[Finding] | None) -> str:
    """Sentences for the findings about this chart's run and tag, most severe first."""
    mine = [f for f in findings or () if f.run == chart.run and f.key == chart.tag]
    if not mine:
        return ""
    mine.sort(key=lambda f: (-SEVERITIES.index(f.severity), f.first_step))
    sentences = []
    for f in mine:
        message = f.message.removeprefix(f"{f.key}: ")
        steps = (
            f"step {f.first_step}" if f.first_step == f.last_step
            else f"steps {f.first_step} to {f.last_step}"
        )  # fmt: skip
        sentences.append(f"{f.severity.capitalize()}, {f.kind}, {steps}: {message}.")
    count = f"{len(mine)} finding{'s' if len(mine) != 1 else ''}"
    return f" Diagnosis: {count}. " + " ".join(sentences)


def _table(chart: TensorBoardChart, labels: Sequence[str], counts: list[list[Any]]) -> str:
    head = "".join(
        f'<th scope="col">{html.escape(labels[b])} to {html.escape(labels[b + 1])}</th>'
        for b in range(chart.bins)
    )
    totals = chart.counts.sum(axis=1).tolist()
    cell = "<td>{:,}</td>".format if _integral(chart.counts) else _count_cell
    rows = "".join(
        f'<tr><th scope="row">{step}</th>{"".join(map(cell, row))}'
        f"<td>{_count_text(total)}</td></tr>\n"
        for step, row, total in zip(chart.steps.tolist(), counts, totals)
    )
    return (
        '<details class="data">\n<summary>Data table: counts per step and bin</summary>\n'
        '<div class="table-wrap" tabindex="0" role="region" aria-label="Data table">\n'
        f"<table>\n<caption>Counts of {html.escape(chart.tag)} ({html.escape(chart.run)})"
        " per step and bin</caption>\n"
        f'<thead><tr><th scope="col">Step</th>{head}<th scope="col">Total</th></tr></thead>\n'
        f"<tbody>\n{rows}</tbody>\n</table>\n</div>\n</details>\n"
    )
