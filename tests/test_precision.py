"""Mixed precision: bfloat16, float16 and float8 values binned exactly on their own values, by
the core and by the device kernel, in a watch of a cast model and under autocast.

The oracle is NumPy on the values widened to float64 (exact for every one of
these types); FSDP2's MixedPrecisionPolicy and a bfloat16 FSDP2 model are in
test_sharded.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import histoscope as hs
from histoscope.write.batched import bin_tensors, bin_tensors_with_torch

HALVES = [torch.bfloat16, torch.float16]
FLOAT8 = [
    getattr(torch, name)
    for name in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz")
    if hasattr(torch, name)
]


def values_of(dtype: torch.dtype) -> torch.Tensor:
    """Every kind of value the type holds: normal, subnormal, zeros, a wide spread, and the
    infinities and NaN where it has them."""
    generator = torch.Generator().manual_seed(0)
    spread = torch.randn(2000, generator=generator) * 3
    special = torch.tensor([0.0, -0.0, 1e-3, -1e-3, 2.0**-9, 448.0, -448.0, float("nan")])
    return torch.cat([spread, special]).to(dtype)


def assert_exact(histogram: hs.Histogram, tensor: torch.Tensor) -> None:
    wide = tensor.float().double().numpy().reshape(-1)
    finite = wide[np.isfinite(wide)]
    edges = np.linspace(finite.min(), finite.max(), len(histogram.counts) + 1)
    np.testing.assert_array_equal(histogram.edges, edges)
    np.testing.assert_array_equal(histogram.counts, np.histogram(finite, bins=edges)[0])
    assert histogram.count == finite.size
    assert histogram.nonfinite == wide.size - finite.size
    assert (histogram.min, histogram.max) == (finite.min(), finite.max())
    assert histogram.mean == pytest.approx(finite.mean(), rel=1e-9)


@pytest.mark.parametrize("dtype", HALVES + FLOAT8, ids=str)
def test_each_narrow_float_is_binned_on_its_own_values_by_both_back_ends(dtype) -> None:
    tensors = [values_of(dtype), values_of(dtype)[:7]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for binned in (bin_tensors(tensors, 40), bin_tensors_with_torch(tensors, 40)):
            for histogram, tensor in zip(binned, tensors):
                assert_exact(histogram, tensor)
        assert_exact(hs.Histogram(tensors[0], bins=40), tensors[0])


def small_cnn(dtype: torch.dtype) -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(144, 3)
    ).to(dtype)


def read(tmp_path: Path, name: str) -> dict[str, hs.HistogramSeries]:
    loaded = hs.load_histograms(tmp_path / "p", runs=[name])
    return {tag: loaded[tag][name] for tag in loaded}


def assert_logged_exactly(series: hs.HistogramSeries, tensor: torch.Tensor) -> None:
    buckets = series.buckets[0]
    edges = np.append(buckets[:, 0], buckets[-1, 1])
    wide = tensor.detach().float().double().numpy().reshape(-1)
    assert series.stats["count"][0] == wide.size
    np.testing.assert_array_equal(edges, hs.Histogram(wide, bins=len(buckets)).edges)
    np.testing.assert_array_equal(buckets[:, 2], np.histogram(wide, bins=edges)[0])


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_a_model_cast_to_a_half_type_logs_every_value(tmp_path: Path, dtype) -> None:
    model = small_cnn(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with hs.init("p", run_name="r", logdir=tmp_path) as run:
            run.watch(model, log="all", every=1)
            model(torch.randn(8, 1, 8, 8).to(dtype)).float().pow(2).mean().backward()
    series = read(tmp_path, "r")
    assert len(series) == 8
    for name, parameter in model.named_parameters():
        assert parameter.dtype == dtype and parameter.grad.dtype == dtype
        assert_logged_exactly(series[f"parameters/{name}"], parameter)
        assert_logged_exactly(series[f"gradients/{name}"], parameter.grad)


def test_autocast_activations_are_logged_in_their_own_type(tmp_path: Path) -> None:
    model = small_cnn(torch.float32)
    outputs: dict[str, torch.Tensor] = {}
    for name in ("0", "3"):
        module = getattr(model, name)
        module.register_forward_hook(lambda m, i, o, name=name: outputs.setdefault(name, o))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with hs.init("p", run_name="r", logdir=tmp_path) as run:
            run.watch(model, log="all", every=1, activations=True)
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = model(torch.randn(8, 1, 8, 8)).float().pow(2).mean()
            loss.backward()
    series = read(tmp_path, "r")
    for name, output in outputs.items():
        assert output.dtype == torch.bfloat16
        assert_logged_exactly(series[f"activations/{name}"], output)
    for name, parameter in model.named_parameters():
        assert_logged_exactly(series[f"gradients/{name}"], parameter.grad)


@pytest.mark.skipif(not FLOAT8, reason="this torch has no float8 types")
def test_a_float8_parameter_is_watched_exactly(tmp_path: Path) -> None:
    model = torch.nn.Module()
    model.scales = torch.nn.Parameter(values_of(FLOAT8[0])[:-1], requires_grad=False)
    with hs.init("p", run_name="r", logdir=tmp_path) as run:
        run.watch(model, log="parameters", every=1).capture(0)
    assert_logged_exactly(read(tmp_path, "r")["parameters/scales"], model.scales)
