"""The orders a report offers with no server behind it: each run's keys ranked by each
statistic, and runs compared key by key, exactly from the buckets, as the viewer's
``api/ranking`` and ``api/compare`` answer them (`orders.ranking_of`,
`orders.comparison_of`).

The runs are indexed as the viewer indexes them (steps, statistics and where each
step's buckets lie; the buckets stay in the files), one run at a time for the
rankings. Comparisons are made for every ordered pair of the first
`COMPARED_RUNS` runs, each side at its last step, the last step's buckets read
again from the files; a report of more runs compares only those.
"""

from __future__ import annotations

import math
from typing import Any

from .follow import LogdirIndex
from .orders import RANKINGS, comparison_of, ranking_of

#: The runs whose every ordered pair a report compares (the viewer overlays as many).
COMPARED_RUNS = 8
_ONCE = 1e9


def report_orders(logdir: str, runs: list[str]) -> dict[str, Any]:
    """``{"rankings": {run: {by: answer}}, "compare": {a: {b: answer}}}`` for a local
    log directory, keys given by their index in ``tags`` order as the report lists them.

    Example:
        >>> orders = report_orders("examples/logdir", ["train", "validation"])
        >>> sorted(orders["rankings"]["train"]) == sorted(RANKINGS)
        True
        >>> pairs = orders["compare"]
        >>> pairs["train"]["validation"]["a"], pairs["validation"]["train"]["b"]
        ('train', 'train')
    """
    # Listed once and each run read whole: a report is of the directory as it is now.
    index = LogdirIndex(logdir, budget_seconds=math.inf, refresh_seconds=_ONCE)
    compared = runs[:COMPARED_RUNS]
    rankings: dict[str, dict[str, Any]] = {}
    for name in runs:
        run = index.run(name)
        if run is None:
            continue
        rankings[name] = {by: ranking_of(run, by) for by in RANKINGS}
        if name not in compared:
            index.forget(name)
    pairs: dict[str, dict[str, Any]] = {}
    for a in compared:
        for b in compared:
            first, second = index.run(a), index.run(b)
            if a != b and first is not None and second is not None:
                pairs.setdefault(a, {})[b] = comparison_of(first, second)
    return {"rankings": rankings, "compare": pairs}
