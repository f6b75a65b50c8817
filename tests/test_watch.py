"""run.watch: tiny real trainings on the CPU, read back from the events files they wrote."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from hypothesis import given, settings
from hypothesis import strategies as st

import histoscope as hs
from histoscope import DamagedFileWarning
from histoscope.write.batched import bin_tensors, bin_tensors_with_torch


def small_cnn() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 4, 3),
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.Linear(4 * 6 * 6, 3),
    )


def batch(i: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(i)
    return torch.randn(8, 1, 8, 8, generator=generator), torch.randint(
        0, 3, (8,), generator=generator
    )


def train(model: torch.nn.Module, steps: int, run: hs.Run | None = None) -> None:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    for i in range(steps):
        x, y = batch(i)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if run is not None:
            run.log({"loss": loss.item()}, step=i)


def read(run: hs.Run) -> dict[str, hs.HistogramSeries]:
    with warnings.catch_warnings():
        warnings.simplefilter("error", DamagedFileWarning)
        loaded = hs.load_histograms(run.dir.parent, runs=[run.name])
    return {tag: loaded[tag][run.name] for tag in loaded}


def assert_same(series: hs.HistogramSeries, i: int, expected: hs.Histogram) -> None:
    buckets = series.buckets[i]
    np.testing.assert_array_equal(buckets[:, 0], expected.edges[:-1])
    np.testing.assert_array_equal(buckets[:, 1], expected.edges[1:])
    np.testing.assert_array_equal(buckets[:, 2], expected.counts)
    assert series.stats["count"][i] == expected.count
    assert series.stats["min"][i] == expected.min and series.stats["max"][i] == expected.max
    np.testing.assert_allclose(series.stats["mean"][i], expected.mean, rtol=1e-9, atol=1e-12)


NAMES = ["0.weight", "0.bias", "3.weight", "3.bias"]


@pytest.mark.parametrize(
    ("log", "prefixes"),
    [
        ("gradients", ["gradients"]),
        ("parameters", ["parameters"]),
        ("all", ["gradients", "parameters"]),
    ],
)
def test_keys_and_steps_for_each_log_setting(tmp_path: Path, log: str, prefixes) -> None:
    model = small_cnn()
    with hs.init("p", run_name="r", logdir=tmp_path) as run:
        watch = run.watch(model, log=log, every=3)
        train(model, 7, run)
    series = read(run)
    expected = {f"{prefix}/{name}" for prefix in prefixes for name in NAMES}
    assert set(series) == expected
    assert sorted(watch.keys) == sorted(expected)
    for key in expected:
        assert series[key].steps.tolist() == [0, 3, 6]
        assert series[key].buckets[0].shape == (64, 3)


def wide_mlp() -> torch.nn.Module:
    """A first layer of 1.25 MiB: large enough for the core to bin it on several threads."""
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Flatten(),
        torch.nn.Linear(64, 5000),
        torch.nn.ReLU(),
        torch.nn.Linear(5000, 3),
    )


@pytest.mark.parametrize("make_model", [small_cnn, wide_mlp])
def test_logged_values_are_those_before_the_optimizer_step(tmp_path: Path, make_model) -> None:
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    seen: list[dict[str, hs.Histogram]] = []
    with hs.init("p", run_name="r", logdir=tmp_path) as run:
        run.watch(model, log="all", every=1, bins=16)
        for i in range(3):
            x, y = batch(i)
            torch.nn.functional.cross_entropy(model(x), y).backward()
            seen.append(
                {
                    f"parameters/{n}": hs.Histogram(p.detach().clone(), bins=16)
                    for n, p in model.named_parameters()
                }
                | {
                    f"gradients/{n}": hs.Histogram(p.grad.clone(), bins=16)
                    for n, p in model.named_parameters()
                }
            )
            before = model[3].weight.detach().clone()
            optimizer.step()
            # What the optimizer does after the capture changes the model, not the log.
            assert not torch.equal(before, model[3].weight)
            with torch.no_grad():
                for p in model.parameters():
                    p.mul_(100.0)
            optimizer.zero_grad(set_to_none=False)
    series = read(run)
    for i, expected in enumerate(seen):
        for key, histogram in expected.items():
            assert series[key].steps[i] == i
            assert_same(series[key], i, histogram)


def test_activations_are_copied_before_an_inplace_layer(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(5, 6), torch.nn.ReLU(inplace=True), torch.nn.Linear(6, 2)
    )
    x = torch.randn(32, 5)
    with torch.no_grad():
        expected = hs.Histogram(model[0](x), bins=64)
    with hs.init("p", run_name="r", logdir=tmp_path) as run:
        run.watch(model, log="gradients", every=2, activations=True)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
        for _ in range(3):
            model(x).sum().backward()
            optimizer.step()
        with torch.no_grad():
            model(x)  # evaluation passes are not captured
    series = read(run)
    assert {k for k in series if k.startswith("activations/")} == {
        "activations/0",
        "activations/1",
        "activations/2",
    }
    assert series["activations/0"].steps.tolist() == [0, 2]
    assert series["activations/0"].stats["min"][0] < 0  # the ReLU ran in place afterwards
    assert_same(series["activations/0"], 0, expected)
    assert series["activations/1"].stats["min"][0] == 0


@pytest.mark.parametrize(
    "filter", [r"^3\.", re.compile(r"^3\."), lambda name, t: t.dim() == 2 and name.startswith("3")]
)
def test_filter_by_regex_or_function(tmp_path: Path, filter) -> None:
    model = small_cnn()
    with hs.init("p", run_name="r", logdir=tmp_path) as run:
        run.watch(model, log="all", every=1, filter=filter)
        train(model, 2)
    keys = set(read(run))
    if callable(filter) and not isinstance(filter, re.Pattern):
        assert keys == {"parameters/3.weight", "gradients/3.weight"}
    else:
        assert keys == {
            "parameters/3.weight",
            "parameters/3.bias",
            "gradients/3.weight",
            "gradients/3.bias",
        }


def test_frozen_parameters_are_logged_as_parameters_only(tmp_path: Path) -> None:
    model = small_cnn()
    for p in model[0].parameters():
        p.requires_grad_(False)
    with hs.init("p", run_name="r", logdir=tmp_path) as run:
        run.watch(model, log="all", every=1)
        train(model, 2)
    keys = set(read(run))
    assert {f"parameters/{n}" for n in NAMES} <= keys
    assert {k for k in keys if k.startswith("gradients/")} == {
        "gradients/3.weight",
        "gradients/3.bias",
    }


def test_a_fully_frozen_model_counts_its_training_forward_passes(tmp_path: Path) -> None:
    model = small_cnn().requires_grad_(False)
    with hs.init("p", run_name="r", logdir=tmp_path) as run:
        run.watch(model, log="parameters", every=2)
        for i in range(5):
            model(batch(i)[0])
    assert read(run)["parameters/3.bias"].steps.tolist() == [0, 2, 4]


def test_unwatch_removes_every_hook(tmp_path: Path) -> None:
    model = small_cnn()
    hooks_before = [len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules()]
    with hs.init("p", run_name="r", logdir=tmp_path) as run:
        run.watch(model, log="all", every=1, activations=True)
        train(model, 2)
        run.unwatch(model)
        train(model, 3)
        hooks_after = [len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules()]
        assert hooks_after == hooks_before
        assert all(not p._post_accumulate_grad_hooks for p in model.parameters())
    assert read(run)["gradients/0.weight"].steps.tolist() == [0, 1]


def test_finish_unwatches(tmp_path: Path) -> None:
    model = small_cnn()
    with hs.init("p", run_name="r", logdir=tmp_path) as run:
        watch = run.watch(model, every=1)
    train(model, 2)  # no error about a finished run: the hooks are gone
    assert not watch.active
    assert "removed" in repr(watch)


def test_data_parallel_names_are_unwrapped(tmp_path: Path) -> None:
    model = small_cnn()
    with hs.init("p", run_name="r", logdir=tmp_path) as run:
        run.watch(torch.nn.DataParallel(model), every=1)
        train(torch.nn.DataParallel(model), 1)
        run.unwatch(torch.nn.DataParallel(model))
    assert set(read(run)) == {f"gradients/{n}" for n in NAMES}


def test_own_steps_with_gradient_accumulation(tmp_path: Path) -> None:
    model = small_cnn()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    global_step = 0
    with hs.init("p", run_name="r", logdir=tmp_path) as run:
        run.watch(model, every=2, step_fn=lambda: global_step)
        for i in range(12):
            x, y = batch(i)
            torch.nn.functional.cross_entropy(model(x), y).backward()
            if i % 3 == 2:  # three backward passes per optimizer step
                optimizer.step()
                optimizer.zero_grad()
                run.log({"loss": 0.0}, step=global_step)
                global_step += 1
    assert read(run)["gradients/3.bias"].steps.tolist() == [0, 2]


def test_histoscope_watch_uses_the_current_run(tmp_path: Path) -> None:
    model = small_cnn()
    run = hs.init("p", run_name="r", logdir=tmp_path)
    watch = hs.watch(model, log="parameters", every=1)
    assert watch.run is run
    train(model, 1)
    hs.finish()
    assert set(read(run)) == {f"parameters/{n}" for n in NAMES}
    with pytest.raises(RuntimeError, match="no run to watch in"):
        hs.watch(model)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"log": "weights"}, ValueError, "log must be one of"),
        ({"every": 0}, ValueError, "every must be an int >= 1"),
        ({"bins": 0}, ValueError, "bins must be an int from 1 to 512"),
        ({"filter": 3}, TypeError, "filter must be a regular expression"),
        ({"filter": "("}, ValueError, "filter is not a regular expression"),
        ({"activations": "yes"}, TypeError, "activations must be True or False"),
        ({"step_fn": 3}, TypeError, "step_fn must be None or a function"),
    ],
)
def test_bad_arguments_are_named(tmp_path: Path, kwargs, error, message) -> None:
    with hs.init("p", run_name="r", logdir=tmp_path) as run:
        with pytest.raises(error, match=message):
            run.watch(small_cnn(), **kwargs)
        with pytest.raises(TypeError, match="model must be a torch.nn.Module"):
            run.watch("resnet")  # type: ignore[arg-type]


def test_a_tensor_that_cannot_be_binned_is_named_once_and_only_it_is_lost(tmp_path: Path) -> None:
    model = torch.nn.Linear(2, 1).double()
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[-1.7e308, 1.7e308]], dtype=torch.float64))
    with hs.init("p", run_name="r", logdir=tmp_path) as run:
        run.watch(model, log="parameters", every=1)
        with pytest.warns(hs.HistoscopeWarning, match="step 0: parameters/weight: range must be"):
            model(torch.ones(1, 2, dtype=torch.float64)).sum().backward()
        with warnings.catch_warnings():
            warnings.simplefilter("error", hs.HistoscopeWarning)
            model(torch.ones(1, 2, dtype=torch.float64)).sum().backward()
    series = read(run)
    assert sorted(series) == ["parameters/bias"]
    assert series["parameters/bias"].steps.tolist() == [0, 1]


def run_rank(rank: int, world: int, init_file: str, logdir: str) -> None:
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    model = torch.nn.parallel.DistributedDataParallel(small_cnn())
    with hs.init("p", run_name=f"rank{rank}", logdir=logdir) as run:
        run.watch(model, log="all", every=1)
        train(model, 2)
    dist.destroy_process_group()


def test_only_rank_zero_logs_and_ddp_names_are_unwrapped(tmp_path: Path) -> None:
    mp.spawn(run_rank, args=(2, str(tmp_path / "init"), str(tmp_path)), nprocs=2)
    loaded = hs.load_histograms(tmp_path / "p")
    assert set(loaded) == {f"{kind}/{n}" for kind in ("gradients", "parameters") for n in NAMES}
    for tag in loaded:
        assert set(loaded[tag]) == {"rank0"}
        assert loaded[tag]["rank0"].steps.tolist() == [0, 1]


TENSORS = st.builds(
    lambda values, dtype, shape_first: (
        torch.tensor(values, dtype=torch.float64)
        .to(dtype)
        .reshape((len(values),) if shape_first else (1, len(values)))
    ),
    st.lists(
        st.one_of(
            st.floats(allow_nan=True, allow_infinity=True, width=32),
            st.sampled_from([0.0, 1.0, -1.0, 1e-30]),
        ),
        max_size=40,
    ),
    st.sampled_from([torch.float32, torch.float64, torch.float16, torch.bfloat16]),
    st.booleans(),
)


@settings(max_examples=40, deadline=None)
@given(st.lists(TENSORS, min_size=1, max_size=6), st.integers(1, 70))
def test_the_batched_torch_kernels_equal_the_core(tensors, bins) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # float16 overflow when casting
        core = bin_tensors(tensors, bins)
        batched = bin_tensors_with_torch(tensors, bins)
    for tensor, ours, theirs in zip(tensors, core, batched):
        alone = hs.Histogram(tensor, bins=bins)
        np.testing.assert_array_equal(ours.edges, alone.edges)
        np.testing.assert_array_equal(ours.counts, alone.counts)
        np.testing.assert_array_equal(theirs.edges, alone.edges)
        np.testing.assert_array_equal(theirs.counts, alone.counts)
        for name in ("count", "min", "max", "nonfinite", "below", "above"):
            assert theirs.stats[name] == pytest.approx(alone.stats[name], nan_ok=True)
        # Sums in another order: equal up to rounding at the scale of the values.
        scale = max(abs(alone.min), abs(alone.max)) if alone.count else 0.0
        for name in ("mean", "std"):
            assert theirs.stats[name] == pytest.approx(
                alone.stats[name], rel=1e-9, abs=1e-12 * scale, nan_ok=True
            )


def test_a_span_of_a_few_subnormals_gets_numpys_edges_on_both_paths() -> None:
    tiny = 5e-324  # the step of such a span underflows to 0; numpy then divides first
    tensors = [
        torch.tensor([0.0, tiny, tiny], dtype=torch.float64),
        torch.tensor([-tiny, 0.0, tiny], dtype=torch.float64),
        torch.randn(10, dtype=torch.float64),
    ]
    for bins in (3, 5):
        for binned in (bin_tensors(tensors, bins), bin_tensors_with_torch(tensors, bins)):
            for tensor, ours in zip(tensors, binned):
                # np.histogram refuses such a span; its rule on np.linspace's edges:
                # edges[j] <= x < edges[j + 1], the last bin closed.
                values = tensor.numpy()
                edges = np.linspace(values.min(), values.max(), bins + 1)
                slots = np.searchsorted(edges[:-1], values, side="right") - 1
                np.testing.assert_array_equal(ours.edges, edges)
                np.testing.assert_array_equal(ours.counts, np.bincount(slots, minlength=bins))


def test_the_batched_torch_kernels_split_large_batches(monkeypatch) -> None:
    from histoscope.write import device

    monkeypatch.setattr(device, "DEVICE_CHUNK_VALUES", 100)
    tensors = [torch.randn(60), torch.randn(70), torch.randn(250), torch.zeros(3)]
    for ours, tensor in zip(bin_tensors_with_torch(tensors, 8), tensors):
        np.testing.assert_array_equal(ours.counts, hs.Histogram(tensor, bins=8).counts)


def test_a_span_too_narrow_for_distinct_edges_gets_the_cores_range_on_the_device() -> None:
    # The core widens such a span around its middle (numpy would refuse it); the device
    # kernel's edges once stayed on it, equal or out of order.
    tensors = [
        torch.tensor([1.0, 1.0 + 2**-50, 1.0 + 2**-49], dtype=torch.float64),
        torch.tensor([1e20, np.nextafter(1e20, np.inf)], dtype=torch.float64),
        torch.full((3,), 1.7e308, dtype=torch.float64),
        torch.tensor([-1.0, 2.0], dtype=torch.float64),
    ]
    for bins in (4, 64):
        for tensor, ours in zip(tensors, bin_tensors_with_torch(tensors, bins)):
            alone = hs.Histogram(tensor, bins=bins)
            np.testing.assert_array_equal(ours.edges, alone.edges)
            np.testing.assert_array_equal(ours.counts, alone.counts)


@settings(max_examples=30, deadline=None)
@given(st.lists(TENSORS, min_size=1, max_size=5), st.integers(1, 70))
def test_the_halves_sharded_capture_bins_with_agree_on_both_back_ends(tensors, bins) -> None:
    from histoscope.write import batched, device

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # float16 overflow when casting
        core = batched.local_moments(tensors)
        kernel = device.moments_on_device(tensors)
    np.testing.assert_array_equal(core[:, [0, 1, 2, 5]], kernel[:, [0, 1, 2, 5]])
    for (count, low, high, mean, m2, _), theirs in zip(core, kernel):
        # Sums in another order: equal up to rounding at the scale of the values.
        scale = max(abs(low), abs(high)) if count else 0.0
        assert theirs[3] == pytest.approx(mean, rel=1e-9, abs=1e-12 * scale, nan_ok=True)
        assert theirs[4] == pytest.approx(m2, rel=1e-9, abs=1e-9 * count * scale**2)
    edges = device.default_edges(core[:, 1], core[:, 2], bins)
    usable = ~np.isnan(edges[:, 0])
    picked = [t for t, ok in zip(tensors, usable) if ok]
    counts = batched.local_counts(picked, edges[usable])
    np.testing.assert_array_equal(counts, device.counts_on_device(picked, edges[usable]))
    for tensor, row, counted in zip(picked, edges[usable], counts):
        np.testing.assert_array_equal(counted, hs.Histogram(tensor, bins=bins).counts)
        np.testing.assert_array_equal(row, hs.Histogram(tensor, bins=bins).edges)
