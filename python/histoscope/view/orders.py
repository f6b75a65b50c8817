"""The viewer's answers that order keys: each run's keys ranked by a statistic
(``api/ranking``) and two runs, or two steps, compared key by key (``api/compare``),
exactly from the buckets; the report embeds the same answers (`report_orders`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import RequestError
from .answers import Query, chosen_runs, finite_or_none, overview_value, query_integer
from .follow import LogdirIndex, RunIndex, SeriesView

#: What the keys can be ordered by (ORDERS in order.js), each from the overview's statistics.
RANKINGS = ("absmax_last", "absmax_peak", "std_last", "std_growth", "nonfinite", "zeros_last")


def ranking(index: LogdirIndex, query: Query) -> dict[str, Any]:
    """Every key of one run with its value of ``by`` (one of RANKINGS), largest first;
    keys without a value (no statistic stored or computable) last, in key order.

    ``absmax_last`` and ``std_last`` are the last step's largest absolute value and
    standard deviation, ``absmax_peak`` the largest absolute value over all steps,
    ``std_growth`` the last step's standard deviation over the first's, ``nonfinite``
    the most NaN and infinite values of one step, ``zeros_last`` the last step's share
    of exact zeros.
    """
    chosen = chosen_runs(index, query)
    if len(chosen) != 1:
        raise RequestError(f"one run=NAME is required, got {len(chosen)}")
    by = query.get("by", "absmax_last")
    if by not in RANKINGS:
        raise RequestError(f"by must be one of {', '.join(RANKINGS)}, got {by!r}")
    return ranking_of(chosen[0], by)


def ranking_of(run: RunIndex, by: str) -> dict[str, Any]:
    """The answer of `ranking` for ``run`` (the report embeds it for every run and ``by``)."""
    values = {tag: _ranked_value(by, series.view) for tag, series in run.series.items()}
    order = sorted(values, key=lambda tag: (not np.isfinite(values[tag]), -values[tag], tag))
    ordered = [finite_or_none(values[tag]) for tag in order]
    return {"run": run.name, "by": by, "keys": order, "values": ordered}


def _ranked_value(by: str, view: SeriesView) -> float:
    if not len(view.steps):
        return math.nan
    stat, reduce = by.rsplit("_", 1) if "_" in by else (by, "peak")
    per_step = overview_value(stat, view.stats, view.quantiles, view.zeros)
    with np.errstate(divide="ignore", invalid="ignore"):
        if reduce == "last":
            return float(per_step[-1])
        if reduce == "growth":
            return float(per_step[-1] / per_step[0])
        return float(np.nanmax(per_step)) if np.isfinite(per_step).any() else math.nan


def compare(index: LogdirIndex, query: Query) -> dict[str, Any]:
    """Every key of run ``a`` against run ``b`` (default: ``a``), each at its last step at
    or before ``step_a`` / ``step_b`` (default: its last), farthest first, exactly from
    the buckets (see `histoscope.compare`)."""
    names = query.getlist("run")
    if len(names) not in (1, 2):
        raise RequestError(f"run=A and optionally run=B are required, got {len(names)} runs")
    runs = chosen_runs(index, query)
    first, second = runs[0], runs[-1]
    step_a, step_b = query_integer(query, "step_a"), query_integer(query, "step_b")
    if first is second and step_a == step_b:
        raise RequestError("to compare a run with itself, give two different steps")
    try:
        return comparison_of(first, second, step_a, step_b)
    except (OSError, ValueError) as error:
        raise RequestError(str(error)) from error


def comparison_of(
    first: RunIndex, second: RunIndex, step_a: int | None = None, step_b: int | None = None
) -> dict[str, Any]:
    """The answer of `compare` for two runs (the report embeds it for each pair); raises
    OSError or ValueError where a file went away or changed."""
    found = first.compare(second, step_a, step_b)
    figures = (
        "wasserstein", "scaled", "ks", "mean_shift", "std_change", "nonfinite_a", "nonfinite_b"
    )  # fmt: skip
    rows = [
        {"key": d.key, "step_a": d.step_a, "step_b": d.step_b}
        | {name: finite_or_none(getattr(d, name)) for name in figures}
        for d in found.ranked
    ]
    return {
        "a": first.name, "b": second.name, "rows": rows,
        "only_a": found.only_a, "only_b": found.only_b, "unmatched": found.unmatched,
    }  # fmt: skip
