"""watch on a ``torch.compile``d model: no graph break or recompilation it would not have alone,
by ``torch._dynamo``'s own counters, and the same histograms as the eager model's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import histoscope as hs

dynamo = pytest.importorskip("torch._dynamo")
if not dynamo.is_dynamo_supported():  # pragma: no cover - a Python torch.compile lacks
    pytest.skip("torch.compile is not supported on this Python", allow_module_level=True)

from torch._dynamo.utils import counters  # noqa: E402


def five_layers() -> torch.nn.Module:
    torch.manual_seed(0)
    layers: list[torch.nn.Module] = []
    for _ in range(5):
        layers += [torch.nn.Linear(16, 16), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers)


def train(
    tmp_path: Path, steps: int, compiled: bool, options: dict[str, Any] | None
) -> tuple[dict[str, int], dict[str, hs.HistogramSeries]]:
    """Trains five layers ``steps`` steps; dynamo's counters for it, and what was logged."""
    dynamo.reset()
    counters.clear()
    model = five_layers()
    # The "eager" backend runs dynamo's capture and the graphs as traced, without inductor:
    # what is counted here, at a fraction of the time.
    stepped = torch.compile(model, backend="eager") if compiled else model
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    name = f"{compiled}-{steps}-{options is not None}"
    with hs.init("p", run_name=name, logdir=tmp_path) as run:
        if options is not None:
            run.watch(stepped, **options)
        for i in range(steps):
            x = torch.randn(8, 16, generator=torch.Generator().manual_seed(i))
            stepped(x).pow(2).mean().backward()
            optimizer.step()
            optimizer.zero_grad()
    seen = {
        "graphs": counters["stats"]["unique_graphs"],
        "breaks": sum(counters["graph_break"].values()),
        "frames": counters["frames"]["total"],
    }
    loaded = hs.load_histograms(tmp_path / "p", runs=[name]) if options is not None else {}
    return seen, {tag: loaded[tag][name] for tag in loaded}


def assert_same_histograms(ours: hs.HistogramSeries, theirs: hs.HistogramSeries) -> None:
    assert ours.steps.tolist() == theirs.steps.tolist()
    for a, b in zip(ours.buckets, theirs.buckets):
        np.testing.assert_array_equal(a, b)


def test_watching_without_activations_adds_no_graph_break_or_recompilation(tmp_path) -> None:
    alone, _ = train(tmp_path, 6, True, None)
    watched, logged = train(tmp_path, 6, True, {"log": "all", "every": 2})
    assert watched == alone == {"graphs": 1, "breaks": 0, "frames": 1}
    assert len(logged) == 20  # 10 parameters and their gradients, no "_orig_mod." in the keys
    assert all(key.split("/")[1][0].isdigit() for key in logged)
    _, eager = train(tmp_path, 6, False, {"log": "all", "every": 2})
    for key in logged:
        assert_same_histograms(logged[key], eager[key])


def test_activations_of_a_compiled_model_cost_breaks_but_never_recompilation(tmp_path) -> None:
    options = {"log": "gradients", "every": 2, "activations": True}
    short, _ = train(tmp_path, 4, True, options)
    long, logged = train(tmp_path, 12, True, options)
    # The watched leaves' hooks run outside the graphs: the breaks are there from the
    # first step and the same at the twelfth; reading the step inside a graph instead
    # recompiled it at every step until dynamo gave up on it.
    assert long == short
    assert long["breaks"] > 0
    _, eager = train(tmp_path, 12, False, options)
    activations = [key for key in eager if key.startswith("activations/")]
    assert len(activations) == 10
    for key in activations:
        assert_same_histograms(logged[key], eager[key])
