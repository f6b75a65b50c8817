"""The overview as one inline SVG that needs no script: a row per key (or per band of
neighbouring keys), a cell per step coloured by a statistic, as the viewer's overview
(``assets/overview.js``, ``assets/grid.js``) draws it on a canvas. It is what a saved
notebook shows where scripts, styles and frames are stripped (GitHub, nbviewer's static
mode, a code review), so it is drawn with presentation attributes only, on a white
ground of its own, and named for screen readers by its ``<title>`` and ``<desc>``.

It is kept small whatever the model: at most `MAX_ROWS` rows and `COLUMNS` steps, the
cells of one colour level joined into one path, neighbouring cells of a row at the same
level into one segment.

Example:
    >>> import numpy as np
    >>> row = Row("0.weight", np.array([0, 10, 20]), np.array([0.1, 0.2, 0.4]))
    >>> svg = overview_svg([("parameters", [row])])
    >>> svg.startswith('<svg role="img"'), "<title>" in svg, "0.weight" in svg
    (True, True, True)
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .. import _core

#: The most steps drawn: the row's steps thinned as the core thins a chart's.
COLUMNS = 24
#: The most rows drawn; past it, neighbouring keys of a section share a row.
MAX_ROWS = 40
#: Colour levels: cells are coloured by the level their value falls in.
LEVELS = 8

_ROW = 12  # pixels: a row is a line of small text high, its label beside it
_CELL = 10
_LABEL = 190  # pixels left of the cells, for the labels
_LABEL_CHARS = 30
_HEADING = 24  # a section's name and scale above its rows
_FOOT = 46  # the step axis and the colour legend

# Viridis at ten even points (as the viewer's format.js), dark purple to yellow.
_VIRIDIS = (
    (68, 1, 84), (72, 40, 120), (62, 73, 137), (49, 104, 142), (38, 130, 142),
    (31, 158, 137), (53, 183, 121), (110, 206, 88), (181, 222, 43), (253, 231, 37),
)  # fmt: skip


@dataclass(frozen=True)
class Row:
    """One key's statistic over its steps; ``marked`` when a finding concerns it."""

    label: str
    steps: np.ndarray
    values: np.ndarray
    marked: bool = False


def natural_key(name: str) -> list[object]:
    """Sorts names as people count: layer 2 before layer 10.

    Example:
        >>> sorted(["l10", "l2"], key=natural_key)
        ['l2', 'l10']
    """
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def short_number(value: float) -> str:
    """A value in three significant digits, or "n/a" where there is none.

    Example:
        >>> short_number(0.000123456), short_number(float("nan"))
        ('0.000123', 'n/a')
    """
    return "n/a" if not math.isfinite(value) else f"{value:.3g}"


def overview_svg(
    blocks: Sequence[tuple[str, Sequence[Row]]],
    stat: str = "standard deviation",
    *,
    columns: int = COLUMNS,
    max_rows: int = MAX_ROWS,
) -> str:
    """The overview of ``blocks`` (a section's name and its rows, in order) coloured by
    ``stat``: at most ``columns`` steps shared by all rows (a row's cell holds its value
    at the last step it logged at or before the column's, none before its first), and
    at most about ``max_rows`` rows, each band of neighbouring rows showing its largest
    value. Each section has its own colour scale, logarithmic past two orders of
    magnitude, as in the viewer."""
    blocks = [(name, rows) for name, rows in blocks if rows]
    steps = _shared_steps([row for _, rows in blocks for row in rows], columns)
    if not blocks or not len(steps):
        return ""
    total = sum(len(rows) for _, rows in blocks)
    band = max(1, math.ceil(total / max_rows))
    drawn = [(name, _banded(rows, steps, band)) for name, rows in blocks]
    height = sum(_HEADING + _ROW * len(rows) for _, rows in drawn) + _FOOT
    # The legend's swatches and its last word may be wider than a few steps' cells.
    width = _LABEL + max(_CELL * len(steps), _CELL * LEVELS + 50) + 10
    paths: dict[int, list[str]] = {}
    texts: list[str] = []
    scales: list[str] = []
    top = 0
    for name, rows in drawn:
        scale = _Scale(np.concatenate([values for _, values, _ in rows]))
        scales.append(f"{name}: {len(rows)} row{'s' if len(rows) > 1 else ''}, {scale.says()}")
        texts.append(_text(4, top + 17, f"{name}: {scale.says()}", bold=True))
        top += _HEADING
        for label, values, marked in rows:
            shown = ("\u25b2 " if marked else "") + _elide(label, _LABEL_CHARS)
            texts.append(_text(_LABEL - 6, top + _ROW - 3, shown, end=True))
            _segments(paths, scale.levels(values), top + _ROW // 2)
            top += _ROW
    texts.extend(_foot(top, steps))
    cells = "".join(
        f'<path stroke="{_colour(level)}" stroke-width="{_ROW}" d="{"".join(parts)}"/>'
        for level, parts in sorted(paths.items())
    )
    title = f"Overview: {stat} of each key over the steps"
    each = "one row per key"
    if band > 1:
        each = f"each row up to {band} neighbouring keys, their largest"
    desc = (
        f"{stat.capitalize()} at {len(steps)} steps from {int(steps[0])} to {int(steps[-1])},"
        f" {each}; dark purple is the smallest of a section, yellow the largest, blank where"
        f" a key has no value yet; a triangle marks a row with a finding. {'. '.join(scales)}."
    )
    return (
        f'<svg role="img" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}"'
        f' viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="10">'
        f"<title>{html.escape(title)}</title><desc>{html.escape(desc)}</desc>"
        f'<rect width="{width}" height="{height}" fill="#fff"/>{cells}\n'
        + "\n".join(texts)
        + "</svg>"
    )


def _shared_steps(rows: Sequence[Row], columns: int) -> np.ndarray:
    if not rows:
        return np.array([], dtype=np.int64)
    steps = np.unique(np.concatenate([np.asarray(row.steps, dtype=np.int64) for row in rows]))
    return steps[_core.thin_indices(len(steps), columns)]


def _at(row: Row, steps: np.ndarray) -> np.ndarray:
    order = np.argsort(row.steps, kind="stable")
    held = np.asarray(row.steps)[order]
    values = np.asarray(row.values, dtype=np.float64)[order]
    index = np.searchsorted(held, steps, side="right") - 1
    return np.where(index >= 0, values[np.maximum(index, 0)], np.nan)


def _banded(
    rows: Sequence[Row], steps: np.ndarray, band: int
) -> list[tuple[str, np.ndarray, bool]]:
    """The rows drawn: each ``band`` neighbours joined, their largest value per column."""
    out = []
    for start in range(0, len(rows), band):
        part = rows[start : start + band]
        values = np.fmax.reduce(np.array([_at(row, steps) for row in part]), axis=0)
        label = part[0].label if len(part) == 1 else f"{part[0].label} to {part[-1].label}"
        out.append((label, values, any(row.marked for row in part)))
    return out


class _Scale:
    """A section's colour levels, on a log scale where its values are all positive and
    span more than two orders of magnitude (spreads and gradients of a deep network)."""

    def __init__(self, values: np.ndarray) -> None:
        finite = values[np.isfinite(values)]
        self.lo = float(finite.min()) if finite.size else math.nan
        self.hi = float(finite.max()) if finite.size else math.nan
        self.log = bool(finite.size and self.lo > 0 and self.hi / self.lo > 100)

    def levels(self, values: np.ndarray) -> np.ndarray:
        """Each value's level, 0 to LEVELS - 1, and -1 where there is none."""
        lo, hi = (math.log10(self.lo), math.log10(self.hi)) if self.log else (self.lo, self.hi)
        with np.errstate(all="ignore"):
            x = np.log10(values) if self.log else values
            share = (x - lo) / (hi - lo) if hi > lo else np.full_like(x, 0.5)
        level = np.minimum(LEVELS - 1, np.floor(share * LEVELS))
        return np.where(np.isfinite(level), level, -1).astype(np.int64)

    def says(self) -> str:
        if math.isnan(self.lo):
            return "no values yet"
        spread = f"from {short_number(self.lo)} to {short_number(self.hi)}"
        return spread + (", log scale" if self.log else "")


def _segments(paths: dict[int, list[str]], levels: np.ndarray, y: int) -> None:
    """Adds a row's cells to the paths of their levels, neighbours of one level joined."""
    start = 0
    for end in range(1, len(levels) + 1):
        if end < len(levels) and levels[end] == levels[start]:
            continue
        if levels[start] >= 0:
            x = _LABEL + start * _CELL
            paths.setdefault(int(levels[start]), []).append(f"M{x} {y}h{(end - start) * _CELL}")
        start = end


def _foot(top: int, steps: np.ndarray) -> list[str]:
    """The step axis under the cells, and the colour legend from smallest to largest."""
    right = _LABEL + _CELL * len(steps)
    out = [
        _text(_LABEL, top + 12, f"step {int(steps[0])}"),
        _text(right, top + 12, f"step {int(steps[-1])}", end=True),
        _text(_LABEL - 6, top + 34, "smallest", end=True),
    ]
    for level in range(LEVELS):
        x = _LABEL + level * _CELL
        swatch = f'x="{x}" y="{top + 24}" width="{_CELL}" height="12" fill="{_colour(level)}"'
        out.append(f"<rect {swatch}/>")
    out.append(_text(_LABEL + LEVELS * _CELL + 6, top + 34, "largest"))
    return out


def _colour(level: int) -> str:
    """The viridis colour at the middle of ``level``."""
    x = (level + 0.5) / LEVELS * (len(_VIRIDIS) - 1)
    i = min(len(_VIRIDIS) - 2, int(x))
    f = x - i
    parts = (round(a + (b - a) * f) for a, b in zip(_VIRIDIS[i], _VIRIDIS[i + 1]))
    return "#" + "".join(f"{c:02x}" for c in parts)


def _text(x: int, y: int, words: str, *, bold: bool = False, end: bool = False) -> str:
    weight = ' font-weight="bold"' if bold else ""
    anchor = ' text-anchor="end"' if end else ""
    return f'<text x="{x}" y="{y}"{weight}{anchor}>{html.escape(words)}</text>'


def _elide(text: str, most: int) -> str:
    """``text`` cut in the middle to ``most`` characters: both ends say which key it is."""
    if len(text) <= most:
        return text
    head = (most - 1 + 1) // 2
    return text[:head] + "\u2026" + text[len(text) - (most - 1 - head) :]
