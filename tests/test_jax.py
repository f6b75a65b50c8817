"""log_tree and the JAX kernel: Flax models trained with Optax in a jax.jit step, on the CPU.

The accelerator path (`bin_on_jax_device`) runs on CPU arrays here, forced,
and must give the core's histograms exactly.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import histoscope as hs
from histoscope import _core
from histoscope.write import jax_device
from histoscope.write.tree import array_leaves

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
nn = pytest.importorskip("flax.linen")
optax = pytest.importorskip("optax")

BINS = 40


class Mlp(nn.Module):
    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        x = nn.relu(nn.Dense(32)(x))
        return nn.Dense(2)(x)


def train(run: hs.Run, *, steps: int, every: int, loss_scale: float = 1.0) -> list[dict]:
    """Trains the MLP on a regression, logging parameters, gradients and the Adam state
    every ``every`` steps; returns what the jitted step returned at those steps."""
    model = Mlp()
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.normal(size=(64, 8)), dtype=jnp.float32)
    y = jnp.stack([x[:, 0] - x[:, 1], x[:, 2] * x[:, 3]], axis=1)
    params = model.init(jax.random.key(0), x)["params"]
    optimizer = optax.adam(1e-2)
    state = optimizer.init(params)

    @jax.jit
    def step(params, state, x, y):
        def loss_fn(p):
            return loss_scale * jnp.mean((model.apply({"params": p}, x) - y) ** 2)

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, state = optimizer.update(grads, state, params)
        return optax.apply_updates(params, updates), state, grads, loss

    seen = []
    for i in range(steps):
        before = params
        params, state, grads, loss = step(params, state, x, y)
        if i % every == 0:
            run.log_tree(before, step=i)
            run.log_tree(grads, prefix="gradients", step=i)
            run.log_tree(state, prefix="optimizer", step=i, filter="mu|nu")
            run.log({"loss": float(loss)}, step=i)
            seen.append({"parameters": before, "gradients": grads})
    return seen


@pytest.fixture(scope="module")
def flax_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    with hs.init("flax", run_name="healthy", logdir=tmp_path_factory.mktemp("flax")) as run:
        seen = train(run, steps=60, every=5)
    return run.path, seen


def edges_and_counts(series: hs.HistogramSeries, index: int) -> tuple[np.ndarray, np.ndarray]:
    buckets = series.buckets[index]
    return np.append(buckets[:, 0], buckets[-1, 1]), buckets[:, 2]


def test_keys_come_from_the_tree_paths(flax_run: tuple[Path, list[dict]]) -> None:
    path, _ = flax_run
    layers = [
        f"{layer}/{weight}" for layer in ("Dense_0", "Dense_1") for weight in ("bias", "kernel")
    ]
    expected = {f"{role}/{name}" for role in ("parameters", "gradients") for name in layers}
    expected |= {f"optimizer/0/{moment}/{name}" for moment in ("mu", "nu") for name in layers}
    logged = hs.load_histograms(path)
    assert set(logged) == expected
    assert logged["parameters/Dense_0/kernel"]["."].steps.tolist() == list(range(0, 60, 5))


def test_counts_and_bins_are_numpys(flax_run: tuple[Path, list[dict]]) -> None:
    path, seen = flax_run
    logged = hs.load_histograms(path, keys=None)
    for role in ("parameters", "gradients"):
        for index, arrays in enumerate(seen):
            for name, leaf in array_leaves(arrays[role]):
                values = np.asarray(leaf, dtype=np.float64)
                series = logged[f"{role}/{name}"]["."]
                edges, counts = edges_and_counts(series, index)
                expected_counts, expected_edges = np.histogram(values, bins=64)
                np.testing.assert_array_equal(edges, expected_edges)
                np.testing.assert_array_equal(counts, expected_counts)
                assert counts.sum() == values.size == series.stats["count"][index]


def test_check_passes_a_healthy_run_and_finds_vanishing_gradients(
    flax_run: tuple[Path, list[dict]], tmp_path: Path
) -> None:
    path, _ = flax_run
    assert hs.diagnose(path.parent) == []
    with hs.init("flax", run_name="vanishing", logdir=tmp_path) as run:
        train(run, steps=60, every=5, loss_scale=1e-12)
    findings = hs.diagnose(run.path.parent)
    vanishing = {f.key for f in findings if f.kind == "vanishing"}
    assert {"gradients/Dense_0/kernel", "gradients/Dense_1/kernel"} <= vanishing
    assert {f.kind for f in findings} == {"vanishing"}


def test_a_jitted_step_logs_through_debug_callback(tmp_path: Path) -> None:
    """The pattern in histoscope.write.tree's doc: the step decides, the callback logs."""
    every = 4
    returned = {}
    with hs.init("flax", logdir=tmp_path) as run:

        def log(step, grads):
            run.log_tree(grads, prefix="gradients", step=step, bins=BINS)

        @jax.jit
        def step(w, i):
            grads = jax.grad(lambda w: jnp.sum(jnp.sin(w["layer"]["w"] * i)))(w)
            jax.lax.cond(i % every == 0, lambda: jax.debug.callback(log, i, grads), lambda: None)
            return grads

        w = {"layer": {"w": jnp.linspace(-1.0, 1.0, 101, dtype=jnp.float32)}}
        for i in range(10):
            returned[i] = np.asarray(step(w, i)["layer"]["w"], dtype=np.float64)
        jax.effects_barrier()
    series = hs.load_histograms(run.path)["gradients/layer/w"]["."]
    assert series.steps.tolist() == [0, 4, 8]
    for index, i in enumerate([0, 4, 8]):
        edges, counts = edges_and_counts(series, index)
        expected_counts, expected_edges = np.histogram(returned[i], bins=BINS)
        np.testing.assert_array_equal(edges, expected_edges)
        np.testing.assert_array_equal(counts, expected_counts)


def awkward_arrays() -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    f32 = np.finfo(np.float32)
    return [
        rng.normal(size=5000).astype(np.float32),
        (rng.standard_cauchy(size=3000) * 1e20).astype(np.float32),
        np.full(7, 3.25, np.float32),
        np.full(3, 1e30, np.float32),
        np.float32([1.0, np.nextafter(np.float32(1.0), np.float32(2.0))]),
        np.float32([np.nan, np.inf, -np.inf]),
        np.float32([np.nan, 2.0, -np.inf, 5.0]),
        np.float32([f32.max, -f32.max, 0.0]),
        np.float32([f32.tiny, -f32.tiny, 0.0]),
        np.zeros(0, np.float32),
        rng.normal(size=(20, 30)).astype(np.float16),
        np.arange(-128, 128).astype(np.int8),
        np.arange(0, 60000, 7).astype(np.uint16),
        rng.integers(0, 2, 50).astype(bool),
    ]


def core_histograms(arrays: list, bins: int) -> list:
    views = [jax_device._host_view(a) for a in arrays]
    return _core.histograms([v for v, _ in views], bins, [e for _, e in views])


def assert_same(device: list[hs.Histogram], core: list) -> None:
    for index, (ours, theirs) in enumerate(zip(device, core)):
        np.testing.assert_array_equal(ours.edges, theirs.edges, err_msg=f"array {index}")
        np.testing.assert_array_equal(ours.counts, theirs.counts, err_msg=f"array {index}")
        for name in ("count", "min", "max", "nonfinite", "below", "above"):
            a, b = getattr(ours, name), getattr(theirs.stats, name)
            assert a == b or (np.isnan(a) and np.isnan(b)), (index, name, a, b)
        spread = theirs.stats.max - theirs.stats.min if theirs.stats.count else 0.0
        for name in ("mean", "std"):
            a, b = getattr(ours, name), getattr(theirs.stats, name)
            assert abs(a - b) <= 1e-6 * spread + 1e-300 or (np.isnan(a) and np.isnan(b)), (
                index,
                name,
                a,
                b,
            )


@pytest.mark.parametrize("bins", [1, 7, 512])
def test_the_device_kernel_bins_as_the_core(bins: int) -> None:
    arrays = [jnp.asarray(a) for a in awkward_arrays()]
    arrays.append(jnp.asarray(np.random.default_rng(1).normal(size=999), dtype=jnp.bfloat16))
    assert_same(jax_device.bin_on_jax_device(arrays, bins), core_histograms(arrays, bins))


def test_the_device_kernel_with_x64_compares_wide_types_in_float64() -> None:
    code = """
import numpy as np, jax, jax.numpy as jnp
jax.config.update("jax_enable_x64", True)
from histoscope.write import jax_device
from histoscope import _core
rng = np.random.default_rng(0)
arrays = [rng.normal(size=3000), np.float64([1.0, 1.0 + 2**-52]), np.arange(-5, 2**40, 2**33),
          rng.integers(-2**31, 2**31 - 1, 1000).astype(np.int32),
          rng.normal(size=10).astype(np.float32), np.float64([5e-324, -5e-324, 0.0])]
arrays = [jnp.asarray(a) for a in arrays]
assert all(jax_device._device_bins(a) for a in arrays)
for bins in (3, 64):
    ours = jax_device.bin_on_jax_device(arrays, bins)
    theirs = _core.histograms([np.asarray(a) for a in arrays], bins)
    for a, b in zip(ours, theirs):
        assert np.array_equal(a.edges, b.edges) and np.array_equal(a.counts, b.counts)
        assert a.count == b.stats.count and a.min == b.stats.min and a.max == b.stats.max
print("same")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "same", done.stderr[-3000:]


def test_arrays_on_an_accelerator_take_the_device_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    taken = []
    real = jax_device.bin_on_jax_device

    def spy(arrays, bins, names=None):
        taken.append(len(arrays))
        return real(arrays, bins, names)

    monkeypatch.setattr(jax_device, "on_accelerator", lambda array: True)
    monkeypatch.setattr(jax_device, "bin_on_jax_device", spy)
    # int32 is binned on the host without x64: float32 cannot hold every int32.
    arrays = [jnp.ones(5), jnp.arange(10, dtype=jnp.int32), jnp.zeros(3, jnp.bfloat16)]
    histograms = jax_device.bin_jax_arrays(arrays, 8)
    assert taken == [2]
    assert_same(histograms, core_histograms(arrays, 8))


def test_cpu_arrays_reach_the_core_without_a_copy() -> None:
    for dtype in (jnp.float32, jnp.bfloat16, jnp.float16, jnp.int8):
        array = jnp.ones((64, 3), dtype)
        view, encoding = jax_device._host_view(array)
        assert view.ctypes.data == array.unsafe_buffer_pointer()
        assert encoding == {jnp.bfloat16: "bfloat16", jnp.float16: "float16"}.get(dtype)


def test_leaves_that_are_not_real_arrays_are_left_out() -> None:
    import ml_dtypes

    tree = {
        "w": jnp.ones(3),
        "key": jax.random.key(0),
        "fn": jnp.tanh,
        "none": None,
        "z": jnp.ones(2, jnp.complex64),
        "count": np.int32(3),
        "f8": jnp.ones(4, ml_dtypes.float8_e4m3fn),
        "nested": [(jnp.zeros(2),)],
    }
    assert [name for name, _ in array_leaves(tree)] == ["count", "f8", "nested/0/0", "w"]
    histograms = jax_device.bin_jax_arrays([leaf for _, leaf in array_leaves(tree)], 4)
    assert [h.count for h in histograms] == [1.0, 4.0, 2.0, 3.0]


def test_flax_nnx_variables_are_keyed_without_value(tmp_path: Path) -> None:
    nnx = pytest.importorskip("flax.nnx")
    model = nnx.Sequential(nnx.Linear(3, 4, rngs=nnx.Rngs(0)), nnx.Dropout(0.5, rngs=nnx.Rngs(1)))
    with hs.init("nnx", logdir=tmp_path) as run:
        run.log_tree(nnx.state(model), step=0)
    # The dropout's PRNG key is left out; its key counter is an array like any other.
    assert sorted(hs.load_histograms(run.path)) == [
        "parameters/layers/0/bias",
        "parameters/layers/0/kernel",
        "parameters/layers/1/rngs/count",
    ]


def test_log_tree_checks_its_arguments(tmp_path: Path) -> None:
    with hs.init("args", logdir=tmp_path) as run:
        with pytest.raises(ValueError, match="step must be an int >= 0"):
            run.log_tree({"w": jnp.ones(2)}, step=-1)
        with pytest.raises(ValueError, match="bins must be"):
            run.log_tree({"w": jnp.ones(2)}, step=0, bins=0)
        with pytest.raises(ValueError, match="key must not be empty"):
            run.log_tree({"w": jnp.ones(2)}, step=0, prefix="")
        with pytest.raises(ValueError, match="args/b: its finite values span more than a float64"):
            run.log_tree({"a": jnp.ones(2), "b": np.array([-1e308, 1e308])}, step=0, prefix="args")
        run.log_tree({"w": jnp.ones(2)}, step=np.int64(3), prefix="weights/", bins=4)
    assert hs.load_histograms(run.path)["weights/w"]["."].steps.tolist() == [3]


def test_module_level_log_tree_logs_to_the_current_run(tmp_path: Path) -> None:
    with hs.init("current", logdir=tmp_path) as run:
        hs.log_tree({"w": jnp.arange(4.0)}, step=2, prefix="gradients")
    assert hs.load_histograms(run.path)["gradients/w"]["."].steps.tolist() == [2]


def test_import_histoscope_imports_no_framework() -> None:
    code = (
        "import sys, histoscope, histoscope.write, histoscope.integrations; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'jax', 'jaxlib', 'flax', 'optax', 'tensorflow', 'keras', 'torch'}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "[]", done.stderr
