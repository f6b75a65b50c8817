"""The viewer's JSON answers: runs, keys, series, buckets, cards and the overview.

Each takes the log directory's index (`follow.LogdirIndex`) and the request's
`Query`, checks its parameters (`RequestError` for a malformed one,
`RequestNotFoundError` for an unknown run) and returns plain data; `encode`
writes it as JSON. NumPy arrays stay arrays until they are written. Nothing
here knows which server asked: `histoscope view` and the TensorBoard tab both
do (see `site.Site`).
"""

from __future__ import annotations

import concurrent.futures
import json
import math
import os
import threading
import urllib.parse
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _core
from ..errors import RequestError, RequestNotFoundError
from .follow import BASIS_POINTS, LogdirIndex, RunIndex, SeriesView

if TYPE_CHECKING:
    from .refreshed import Layouts

#: The most steps of one run one series answer holds; the page asks again for the rest.
SERIES_STEPS = 2000


#: The most steps a card's heatmap draws unless asked; the rest are thinned as maidr thins.
CARD_STEPS = _core.CARD_STEPS


#: The most steps a card's ridgeline draws (RIDGES in ridgeline.js), so each reads as a ridge.
RIDGE_STEPS = 24


#: The most steps a row of the overview holds.
OVERVIEW_STEPS = _core.CHART_STEPS


#: The shared equal bins a card's series are rebinned onto unless asked.
CARD_BINS = _core.CARD_BINS


#: What the overview can colour its cells by, from each step's statistics (or its percentiles).
OVERVIEW_STATS = ("std", "absmax", "zeros", "nonfinite", "mean", "distance")

READERS = concurrent.futures.ThreadPoolExecutor(
    max_workers=min(8, os.cpu_count() or 1), thread_name_prefix="histoscope-run"
)


# One answer is encoded at a time: encoding holds the GIL anyway, and this way at
# most one answer's numbers exist as Python objects at once.
_ENCODING = threading.Lock()


class Query:
    """A request's query parameters, as the answers read them: ``get`` the first value
    of a name, ``getlist`` every value, in order.

    Example:
        >>> query = Query("run=a&run=b&tag=w%2Fx&since=")
        >>> query.getlist("run"), query.get("tag"), query.get("since"), query.get("step")
        (['a', 'b'], 'w/x', '', None)
    """

    def __init__(self, text: str) -> None:
        self._pairs = urllib.parse.parse_qsl(text, keep_blank_values=True)

    def get(self, name: str, default: str | None = None) -> str | None:
        return next((value for key, value in self._pairs if key == name), default)

    def getlist(self, name: str) -> list[str]:
        return [value for key, value in self._pairs if key == name]


def encode(body: Any) -> bytes:
    """``body`` as JSON, NumPy arrays turned into lists one at a time as they are written."""
    with _ENCODING:
        text = json.dumps(body, default=_numbers, allow_nan=False, separators=(",", ":"))
    return text.encode()


def _numbers(values: Any) -> Any:
    """A NumPy array or number as JSON can hold it: NaN and infinities become null."""
    if not isinstance(values, (np.ndarray, np.generic)):
        raise TypeError(f"{type(values).__name__} is not JSON serializable")
    held = np.asarray(values)
    if held.dtype.kind != "f":
        return held.tolist()
    out = held.astype(object)
    out[~np.isfinite(held)] = None
    return out.tolist()


def runs(index: LogdirIndex) -> dict[str, Any]:
    return {"runs": index.runs(), "stats": list(_core.STAT_NAMES), "basis_points": BASIS_POINTS}


def chosen_runs(index: LogdirIndex, query: Query) -> list[RunIndex]:
    """The runs named by ``run``, each brought up to date; several are read side by side
    (the core reads without the GIL), so a page's first answer waits for one run, not all."""
    names = query.getlist("run")
    if len(names) > 1:
        found = list(READERS.map(index.run, names))
    else:
        found = [index.run(name) for name in names]
    runs = []
    for name, run in zip(names, found):
        if run is None:
            raise RequestNotFoundError(f"no run {name!r}")
        runs.append(run)
    return runs


def _tag(query: Query) -> str:
    tag = query.get("tag")
    if not tag:
        raise RequestError("no tag given: tag=KEY is required")
    return tag


def query_integer(query: Query, name: str, minimum: int | None = None) -> int | None:
    """The whole-number query parameter ``name``, None when absent; 400 when malformed."""
    text = query.get(name)
    if text is None or text == "":
        return None
    try:
        value = int(text)
    except ValueError:
        raise RequestError(f"{name} must be an integer, got {text!r}") from None
    if minimum is not None and value < minimum:
        raise RequestError(f"{name} must be at least {minimum}, got {value}")
    return value


def tags(index: LogdirIndex, layouts: Layouts, query: Query) -> dict[str, Any]:
    by_tag: dict[str, list[str]] = {}
    declared = READERS.submit(layouts.declared, query.getlist("run"))
    runs = chosen_runs(index, query)
    steps = [np.zeros(0, dtype=np.int64)]
    for run in runs:
        for tag, series in list(run.series.items()):
            by_tag.setdefault(tag, []).append(run.name)
            steps.append(series.view.steps)
    return {
        "tags": [{"tag": tag, "runs": by_tag[tag]} for tag in sorted(by_tag)],
        "versions": {run.name: run.version for run in runs},
        "reading": [run.name for run in runs if not run.caught_up],
        "layout": declared.result(),
        "steps": np.unique(np.concatenate(steps)),
    }


def series(index: LogdirIndex, query: Query) -> dict[str, Any]:
    """Each run's index of ``tag`` from the ``since`` given for the run, at most SERIES_STEPS steps.

    ``since`` is repeated in the order of ``run``, as ``GENERATION:COUNT`` of the
    steps the page holds; the answer's ``from`` says where its steps go, 0 when
    a restart since then rewrote steps the page holds, and ``more`` whether
    steps are left to ask for. Answers stay small however far the reading has
    gone, so the first cards need not wait for a long run's whole index.
    """
    tag = _tag(query)
    runs = chosen_runs(index, query)
    held = [_since(text) for text in query.getlist("since")]
    out = []
    for position, run in enumerate(runs):
        index_of_tag = run.series.get(tag)
        if index_of_tag is None:
            continue
        generation, series = index_of_tag.snapshot()
        since = held[position] if position < len(held) else None
        start = (
            since[1] if since and since[0] == generation and since[1] <= len(series.steps) else 0
        )
        more = len(series.steps) > start + SERIES_STEPS
        series = series.rows(start, start + SERIES_STEPS)
        out.append(
            {
                "run": run.name,
                "generation": generation,
                "from": start,
                "more": more,
                "steps": series.steps,
                "wall_times": series.wall_times,
                "stats": {name: series.stats[:, i] for i, name in enumerate(_core.STAT_NAMES)},
                "quantiles": series.quantiles,
            }
        )
    return {"tag": tag, "series": out}


def _since(text: str) -> tuple[int, int] | None:
    if not text:
        return None
    try:
        generation, count = (int(part) for part in text.split(":"))
    except ValueError:
        generation = count = -1
    if generation < 0 or count < 0:
        raise RequestError(f"since must be GENERATION:COUNT, two whole numbers, got {text!r}")
    return generation, count


def buckets(index: LogdirIndex, query: Query) -> dict[str, Any]:
    """Each run's buckets at the last step at or before ``step``, and at the step before it.

    A run whose file is gone, cut or rewritten since it was indexed is answered with
    its ``error`` instead; the other runs are answered as usual.
    """
    tag = _tag(query)
    step = query_integer(query, "step")
    if step is None:
        raise RequestError("step must be an integer, got nothing")
    out: list[dict[str, Any]] = []
    for run in chosen_runs(index, query):
        index_of_tag = run.series.get(tag)
        if index_of_tag is None:
            continue
        series = index_of_tag.view
        position = int(np.searchsorted(series.steps, step, side="right")) - 1
        if position < 0:
            out.append({"run": run.name, "current": None, "previous": None})
            continue
        positions = [position, position - 1] if position else [position]
        try:
            found = index.buckets(run, tag, series, positions)
        except (OSError, ValueError) as error:
            out.append({"run": run.name, "error": str(error)})
            continue
        steps = [_step(series, p, rows) for p, rows in zip(positions, found)]
        previous = steps[1] if len(steps) > 1 else None
        out.append({"run": run.name, "current": steps[0], "previous": previous})
    return {"tag": tag, "step": step, "runs": out}


def _step(series: SeriesView, position: int, rows: np.ndarray) -> dict[str, Any]:
    return {
        "step": int(series.steps[position]),
        "buckets": rows,
        "stats": dict(zip(_core.STAT_NAMES, _numbers(series.stats[position]))),
    }


def card(index: LogdirIndex, query: Query) -> dict[str, Any]:
    """A card's series of ``tag``, rebinned onto shared equal bins across the chosen runs.

    Per run: up to ``steps`` steps between ``from`` and ``to`` (thinned as maidr
    thins), and the step at or before ``step`` with the one before it, all
    rebinned together by the core's overlap-proportional rebinning, so runs and
    steps compare bin for bin and PyTorch's narrow exponential buckets draw as
    densities instead of spikes. The core picks the steps, reads their buckets
    through the runs' loaders and counts them (`_core.read_card`): no bucket
    comes out to Python.

    A run whose file is gone, cut or rewritten since it was indexed is listed in
    ``errors`` with what happened, and the card is drawn from the other runs.
    """
    tag = _tag(query)
    runs = chosen_runs(index, query)
    request = {
        "step": query_integer(query, "step"),
        "from_step": query_integer(query, "from"),
        "to_step": query_integer(query, "to"),
        "max_steps": query_integer(query, "steps", 1),
        "bins": query_integer(query, "bins", 1),
    }
    try:
        found = index.card(runs, tag, **request)
    except ValueError as error:
        raise RequestError(str(error)) from None
    errors = [{"run": failure.run, "error": failure.error} for failure in found.errors]
    if found.edges is None:
        return {"tag": tag, "edges": [], "runs": [], "errors": errors}
    out = [
        {
            "run": run.run,
            "steps": run.steps,
            "counts": run.counts,
            "current": _counted_step(run.current),
            "previous": _counted_step(run.previous),
            "first": run.first,
            "last": run.last,
        }
        for run in found.runs
    ]
    return {"tag": tag, "edges": found.edges, "runs": out, "errors": errors}


def _counted_step(step: _core.CountedStep | None) -> dict[str, Any] | None:
    """A step marked on a card with its rebinned counts and its statistics."""
    if step is None:
        return None
    stats = dict(zip(_core.STAT_NAMES, _numbers(step.stats)))
    return {"step": step.step, "counts": step.counts, "stats": stats}


def overview_value(
    stat: str, stats: np.ndarray, quantiles: np.ndarray, zeros: np.ndarray | None = None
) -> np.ndarray:
    """One statistic per step, from the (steps, 8) statistics and (steps, 9) percentiles,
    or ``zeros``, each step's share of values at exactly zero (the core's, as the
    diagnosis of dead units reads it).

    Where a writer stored no statistics (TensorFlow 2), the spread falls back to
    half the distance between the 15.87th and 84.13th percentiles (the standard
    deviation of a normal distribution), the extremes to the 0th and 100th.

    Example:
        >>> s = np.array([[4, -3, 2, 0, 1.5, 0, 0, 0]]); q = np.zeros((1, 9))
        >>> overview_value("absmax", s, q).tolist(), overview_value("std", s, q).tolist()
        ([3.0], [1.5])
    """
    names = list(_core.STAT_NAMES)
    column = {name: stats[:, names.index(name)] for name in ("min", "max", "mean", "std")}
    if stat == "std":
        return np.where(
            np.isnan(column["std"]), (quantiles[:, 6] - quantiles[:, 2]) / 2, column["std"]
        )
    if stat == "absmax":
        low = np.where(np.isnan(column["min"]), quantiles[:, 0], column["min"])
        high = np.where(np.isnan(column["max"]), quantiles[:, 8], column["max"])
        return np.maximum(np.abs(low), np.abs(high))
    if stat == "nonfinite":
        return np.nan_to_num(stats[:, names.index("nonfinite")])
    if stat == "zeros":
        return np.full(len(stats), np.nan) if zeros is None else zeros
    return np.where(np.isnan(column["mean"]), quantiles[:, 4], column["mean"])


def overview(index: LogdirIndex, query: Query) -> dict[str, Any]:
    """For one run, every key's ``stat`` at up to OVERVIEW_STEPS steps shared by all keys.

    A key's cell holds its value at the last step it logged at or before the
    column's step, null before its first.
    """
    chosen = chosen_runs(index, query)
    if len(chosen) != 1:
        raise RequestError(f"one run=NAME is required, got {len(chosen)}")
    run = chosen[0]
    stat = query.get("stat", "std")
    if stat not in OVERVIEW_STATS:
        raise RequestError(f"stat must be one of {', '.join(OVERVIEW_STATS)}, got {stat!r}")
    views = {tag: series.view for tag, series in sorted(run.series.items())}
    if stat == "distance":
        return _distance_overview(index, query, run, views)
    columns = _columns([v.steps for v in views.values()])
    rows = {}
    for tag, view in views.items():
        values = overview_value(stat, view.stats, view.quantiles, view.zeros)
        at = np.searchsorted(view.steps, columns, side="right") - 1
        row = np.where(at >= 0, values[np.maximum(at, 0)], np.nan) if len(values) else at * np.nan
        rows[tag] = row
    return {"run": run.name, "stat": stat, "steps": columns, "rows": rows}


def _columns(steps: list[np.ndarray]) -> np.ndarray:
    """Up to OVERVIEW_STEPS of every step in ``steps``, thinned as the cards thin."""
    every = np.unique(np.concatenate(steps or [np.zeros(0, np.int64)]))
    return every[_core.thin_indices(len(every), OVERVIEW_STEPS)] if len(every) else every


def _distance_overview(
    index: LogdirIndex, query: Query, run: RunIndex, views: dict[str, SeriesView]
) -> dict[str, Any]:
    """Every key of ``run`` coloured by its scaled distance to the same key of run
    ``against`` at each column step, exactly from the buckets (null where either run has
    no step yet, or the key is only in ``run``)."""
    name = query.get("against")
    other = index.run(name) if name else None
    if other is None or other is run:
        raise RequestError("stat=distance needs against=RUN, another run of the directory")
    columns = _columns(
        [v.steps for v in views.values()] + [s.view.steps for s in other.series.values()]
    )
    try:
        tracks = run.compare_tracks(other, [int(c) for c in columns])
    except (OSError, ValueError) as error:
        raise RequestError(str(error)) from error
    rows = {tag: np.full(len(columns), np.nan) for tag in views}
    rows |= {track.key: track.scaled for track in tracks}
    return {
        "run": run.name,
        "stat": "distance",
        "against": other.name,
        "steps": columns,
        "rows": rows,
    }


def finite_or_none(value: float) -> float | None:
    """``value`` as JSON can hold it: None for NaN and the infinities."""
    return value if math.isfinite(value) else None
