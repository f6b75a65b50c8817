"""What every test of a sharded capture checks: each written histogram is the one
of the whole tensor, as the ranks saved it, step by step."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pytest

import histoscope as hs


def written(folder: Path) -> dict[str, hs.HistogramSeries]:
    """Every series of run ``r`` of project ``p`` under `folder`, by tag."""
    loaded = hs.load_histograms(folder / "p", runs=["r"])
    return {tag: loaded[tag]["r"] for tag in loaded}


def by_key(saved: Iterable[tuple[str, np.ndarray]]) -> dict[str, dict[int, np.ndarray]]:
    """The ranks' ``"step:key"`` arrays as each key's whole tensor per step, flattened."""
    keys: dict[str, dict[int, np.ndarray]] = {}
    for name, values in saved:
        step, key = name.split(":", 1)
        keys.setdefault(key, {})[int(step)] = values.reshape(-1)
    return keys


def assert_whole_tensors(
    series: hs.HistogramSeries, steps: dict[int, np.ndarray], where: str
) -> None:
    """Each step of `series` holds the 64-bin histogram of that step's whole tensor
    in `steps`, and the tensor's own count, extremes, mean and spread."""
    for i, step in enumerate(series.steps.tolist()):
        full = steps[step]
        buckets = series.buckets[i]
        edges = np.append(buckets[:, 0], buckets[-1, 1])
        at = f"{where} at step {step}"
        np.testing.assert_array_equal(edges, hs.Histogram(full, bins=64).edges, err_msg=at)
        counts, _ = np.histogram(full, bins=edges)
        np.testing.assert_array_equal(buckets[:, 2], counts, err_msg=at)
        stats = {name: values[i] for name, values in series.stats.items()}
        assert (stats["count"], stats["min"], stats["max"]) == (
            full.size,
            full.min(),
            full.max(),
        ), at
        assert stats["mean"] == pytest.approx(full.mean(), rel=1e-9, abs=1e-12), at
        assert stats["std"] == pytest.approx(full.std(), rel=1e-9, abs=1e-12), at
