"""The Keras 3 callback: real trainings on the CPU, with XLA, on each backend Keras runs on.

Each backend trains in a process of its own (tests/keras_training.py), since
Keras reads KERAS_BACKEND once, when first imported. The test reads the runs
it wrote: the keys, the counts, the parameters against NumPy's histogram of
the same weights, the gradients against the updates SGD made with them, and
`histoscope check` on a healthy and a broken run.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from keras_runs import series, trained_on

import histoscope as hs

pytest.importorskip("keras")

SCRIPT = Path(__file__).with_name("keras_training.py")
EVERY, BINS, LEARNING_RATE, BATCH = 2, 32, 0.05, 16
STEPS = list(range(0, 4 * 128 // BATCH, EVERY))
WEIGHTS = {"hidden/kernel": (6, 16), "hidden/bias": (16,), "out/kernel": (16, 3), "out/bias": (3,)}
ACTIVATIONS = {"hidden": BATCH * 16, "out": BATCH * 3}
BACKENDS = {"tensorflow": "tensorflow", "jax": "jax", "torch": "torch"}


@pytest.fixture(scope="module", params=sorted(BACKENDS))
def trained(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp(f"keras-{request.param}")
    summary = trained_on(BACKENDS[request.param], SCRIPT, out)
    summary["weights"] = dict(np.load(out / "weights.npz"))
    return summary


def edges_and_counts(histograms: hs.HistogramSeries, index: int) -> tuple[np.ndarray, np.ndarray]:
    buckets = histograms.buckets[index]
    return np.append(buckets[:, 0], buckets[-1, 1]), buckets[:, 2]


def test_keys_and_steps_are_watchs(trained: dict) -> None:
    logged = series(trained, "healthy")
    expected = {f"{role}/{name}" for role in ("parameters", "gradients") for name in WEIGHTS}
    expected |= {f"activations/{name}" for name in ACTIVATIONS}
    assert set(logged) == expected
    for key, histograms in logged.items():
        assert histograms.steps.tolist() == STEPS, key
    if trained["backend"] != "torch":
        assert trained["healthy"]["jit_compile"]


def test_counts_are_the_number_of_values(trained: dict) -> None:
    sizes = {
        f"{role}/{name}": int(np.prod(shape))
        for name, shape in WEIGHTS.items()
        for role in ("parameters", "gradients")
    }
    sizes |= {f"activations/{name}": size for name, size in ACTIVATIONS.items()}
    for key, histograms in series(trained, "healthy").items():
        for index in range(len(histograms.steps)):
            _, counts = edges_and_counts(histograms, index)
            assert counts.sum() == sizes[key], key
            assert histograms.stats["count"][index] == sizes[key], key
            assert histograms.stats["nonfinite"][index] == 0, key


def test_parameters_are_numpys_histogram_of_the_weights(trained: dict) -> None:
    logged = series(trained, "healthy")
    for name in WEIGHTS:
        histograms = logged[f"parameters/{name}"]
        for index, step in enumerate(STEPS):
            weights = trained["weights"][f"before|{step}|{name}"]
            edges, counts = edges_and_counts(histograms, index)
            expected_counts, expected_edges = np.histogram(weights.astype(np.float64), bins=BINS)
            np.testing.assert_array_equal(edges, expected_edges, err_msg=f"{name} at {step}")
            np.testing.assert_array_equal(counts, expected_counts, err_msg=f"{name} at {step}")
            assert histograms.stats["mean"][index] == pytest.approx(weights.mean(), abs=1e-6)


def test_gradients_are_those_sgd_applied(trained: dict) -> None:
    """SGD's update is ``-learning_rate * gradient``: the logged gradients must be it."""
    logged = series(trained, "healthy")
    for name in WEIGHTS:
        histograms = logged[f"gradients/{name}"]
        for index, step in enumerate(STEPS):
            before = trained["weights"][f"before|{step}|{name}"].astype(np.float64)
            after = trained["weights"][f"after|{step}|{name}"].astype(np.float64)
            applied = (before - after) / LEARNING_RATE
            # float32 updates round to about 1e-7 of the weights, not of the gradients.
            tolerance = 1e-6 * np.abs(before).max() / LEARNING_RATE + 1e-7
            stats = {k: v[index] for k, v in histograms.stats.items()}
            assert stats["min"] == pytest.approx(applied.min(), abs=tolerance), name
            assert stats["max"] == pytest.approx(applied.max(), abs=tolerance), name
            assert stats["mean"] == pytest.approx(applied.mean(), abs=tolerance), name
            edges, counts = edges_and_counts(histograms, index)
            assert_same_counts(applied, edges, counts, tolerance)


def assert_same_counts(
    values: np.ndarray, edges: np.ndarray, counts: np.ndarray, tol: float
) -> None:
    """``counts`` are NumPy's counts of ``values`` on ``edges``, but for values within ``tol``
    of an inner edge, which rounding may put on either side of it."""
    inside = np.clip(values.ravel(), edges[0], edges[-1])
    expected, _ = np.histogram(inside, bins=edges)
    near = np.abs(inside[:, None] - edges[None, 1:-1]).min(axis=1) <= tol if len(edges) > 2 else []
    assert np.abs(expected - counts).sum() <= 2 * np.count_nonzero(near)


def test_check_passes_the_healthy_run_and_finds_the_nan(trained: dict) -> None:
    assert trained["healthy"]["loss"][-1] < trained["healthy"]["loss"][0]
    healthy = hs.diagnose(Path(trained["healthy"]["path"]).parent)
    assert healthy == [], [finding.message for finding in healthy]
    broken = hs.diagnose(Path(trained["broken"]["path"]).parent)
    nonfinite = {finding.key for finding in broken if finding.kind == "nonfinite"}
    # NaN enters at step 2: the output layer's gradients, then every weight it updates.
    # (ReLU may turn NaN into 0, so the hidden layer's gradients need not be NaN.)
    assert {"gradients/out/kernel", "gradients/out/bias", "activations/out"} <= nonfinite
    assert {"parameters/out/kernel", "parameters/hidden/kernel"} <= nonfinite
    assert all(finding.first_step >= 2 for finding in broken)


def test_stop_on_stops_fit_after_the_batch_the_nan_is_found_at(trained: dict) -> None:
    assert trained["broken"]["batches"] == 4 * 128 // BATCH
    # NaN from the third batch (step 2, a logged step: every=2): fit stops after it.
    assert trained["stopped"]["batches"] == 3
    assert "stopping the training" in trained["stderr"] and "nonfinite" in trained["stderr"]


def test_epoch_logs_are_scalars_at_the_epochs_last_step(trained: dict) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(trained["healthy"]["path"], size_guidance={"scalars": 0})
    events.Reload()
    assert {"loss", "val_loss"} <= set(events.Tags()["scalars"])
    # At each epoch's last step (8 batches an epoch).
    assert [e.step for e in events.Scalars("loss")] == [7, 15, 23, 31]
    assert [e.value for e in events.Scalars("loss")] == pytest.approx(trained["healthy"]["loss"])


TENSORFLOW_RECORDS = """
import numpy as np, tensorflow as tf
from histoscope import _core
from histoscope.integrations import _tf_records
from histoscope.integrations._tf_records import histogram_of_record, records
rng = np.random.default_rng(3)
f32 = np.finfo(np.float32)
arrays = [
    rng.normal(size=5000).astype(np.float32),
    (rng.standard_cauchy(size=3000) * 1e20).astype(np.float32),
    (rng.normal(size=300) * 1e-39).astype(np.float32),  # subnormal float32s
    np.float32([1e-40, -1e-40, 0.5, -0.5]),
    np.float32([-0.0, 0.0, -1e-45]),
    np.full(7, 3.25, np.float32),
    np.full(3, 1e30, np.float32),
    np.float32([1.0, np.nextafter(np.float32(1.0), np.float32(2.0))]),
    np.float32([np.nan, np.inf, -np.inf]),
    np.float32([np.nan, 2.0, -np.inf, 5.0]),
    np.float32([f32.max, -f32.max, 0.0]),
    np.zeros(0, np.float32),
    rng.normal(size=(20, 30)).astype(np.float16),
    np.float16([1e-7, -1e-7, 0.25, -0.25, 3e-5, np.inf, -np.inf, np.nan]),
    np.arange(-128, 128).astype(np.int8),
    rng.integers(0, 2, 50).astype(bool),
    np.float64([1.0, 1.0 + 2**-52]),
    np.float64([1e300, -1e300, 5.0]),
    np.full(4, 1.7e308),
]
encodings = {np.dtype(np.float16): "float16"}


def jitted(function):
    return tf.function(function, jit_compile=True, reduce_retracing=True)


for bins in (1, 64):
    step = tf.constant(3, tf.int64)
    alone = jitted(lambda v: records([v], bins, step)[0])
    tensors = [tf.constant(values) for values in arrays]
    # Every array in one pass; then in passes of at most 1000 values (a larger one alone).
    passes = []
    for most in (1 << 25, 1000):
        _tf_records.CHUNK_VALUES = most
        passes.append(jitted(lambda vs: records(vs, bins, step))(tensors).numpy())
    for index, values in enumerate(arrays):
        rows = [alone(tensors[index]).numpy()] + [rows[index] for rows in passes]
        for way, row in enumerate(rows):
            assert row[0] == 3, row
            ours = histogram_of_record(row[1:], bins)
            encoding = encodings.get(values.dtype)
            host = values.view(np.uint16) if encoding else values
            theirs = _core.histogram(host, bins=bins, encoding=encoding)
            where = f"bins={bins}, array {index}, way {way}"
            assert np.array_equal(ours.edges, theirs.edges), where
            assert np.array_equal(ours.counts, theirs.counts), (where, ours.counts, theirs.counts)
            for name in ("count", "min", "max", "nonfinite", "below", "above"):
                a, b = getattr(ours, name), getattr(theirs.stats, name)
                assert a == b or (np.isnan(a) and np.isnan(b)), (where, name, a, b)
            # The moments against NumPy's, of values scaled so that squares cannot overflow.
            finite = values[np.isfinite(values)].astype(np.float64)
            if finite.size:
                scale = 2.0 ** (np.frexp(np.abs(finite).max())[1] - 1)
                mean, std = (finite / scale).mean() * scale, (finite / scale).std() * scale
                rounding = 1e-12 * (np.ptp(finite) + np.abs(finite).max())
                assert abs(ours.mean - mean) <= rounding, (where, ours.mean, mean)
                assert abs(ours.std - std) <= rounding, (where, ours.std, std)
print("same")
"""


def test_tensorflow_records_are_the_cores_histograms() -> None:
    """Inside a TensorFlow step (XLA, flush-to-zero) the callback bins as the core does."""
    if importlib.util.find_spec("tensorflow") is None:
        pytest.skip("tensorflow is not installed")
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    done = subprocess.run(
        [sys.executable, "-c", TENSORFLOW_RECORDS], env=env, capture_output=True, text=True
    )
    assert done.stdout.strip() == "same", done.stderr[-4000:]


ONE_PASS = """
import collections, json, tensorflow as tf
from histoscope.integrations._tf_records import records

def operations(count):
    specs = [tf.TensorSpec([None, 3], dtype) for dtype in (tf.float32, tf.float16)] * count
    traced = tf.function(lambda *values: records(values, 64, tf.constant(0)), autograph=False)
    graph = traced.get_concrete_function(*specs).graph
    return collections.Counter(op.type for op in graph.get_operations())

print(json.dumps([operations(2), operations(20)]))
"""

# What each tensor adds to the pass: its placeholder, its flattening and its index's fill.
PER_TENSOR = {"Placeholder", "StopGradient", "Shape", "Reshape", "Size", "Fill", "Const"}


def test_tensorflow_binning_is_one_pass_whatever_the_number_of_tensors() -> None:
    """XLA's compilation time grew with each tensor binned in its own kernel: forty tensors
    of two dtypes must make the same computing operations as four."""
    if importlib.util.find_spec("tensorflow") is None:
        pytest.skip("tensorflow is not installed")
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    done = subprocess.run([sys.executable, "-c", ONE_PASS], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-4000:]
    few, many = json.loads(done.stdout.strip().splitlines()[-1])
    assert few["UnsortedSegmentSum"] == many["UnsortedSegmentSum"] == 4
    for kind in set(few) | set(many):
        if kind not in PER_TENSOR:
            assert few.get(kind) == many.get(kind), kind
        else:
            assert many[kind] > few[kind], kind


NNX_TRAINING = """
import json, os, numpy as np, keras, histoscope as hs
from histoscope.errors import UnsupportedTrainingError
from histoscope.integrations.keras import HistoscopeCallback
x, y = np.ones((32, 4), "float32"), np.zeros((32, 2), "float32")
found = {"nnx": keras.config.is_nnx_enabled()}
for jit in (True, False):
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, name="out")])
    model.compile(optimizer="sgd", loss="mse", jit_compile=jit)
    run = None if jit else hs.init("nnx", logdir="given")
    callback = HistoscopeCallback(run, project="nnx", log="all", every=2)
    try:
        model.fit(x, y, batch_size=8, verbose=0, callbacks=[callback])
    except UnsupportedTrainingError as error:
        found["error"] = str(error)
        found["runs made"] = os.path.exists("histoscope-logs")
    else:
        run.finish()
        found["keys"] = sorted(hs.load_histograms(run.path))
print(json.dumps(found))
"""


def test_keras_nnx_mode_with_jit_is_a_clear_error_and_without_it_is_logged(
    tmp_path: Path,
) -> None:
    """NNX mode compiles the model class's train_step, past the capture: an error, not an
    empty run; NNX mode without jit_compile runs the wrapped step, and is logged."""
    if importlib.util.find_spec("jax") is None or importlib.util.find_spec("flax") is None:
        pytest.skip("jax and flax are not installed")
    import keras

    if not hasattr(keras.config, "is_nnx_enabled"):
        pytest.skip("this Keras has no NNX mode")
    env = {**os.environ, "KERAS_BACKEND": "jax", "KERAS_NNX_ENABLED": "true"}
    done = subprocess.run(
        [sys.executable, "-c", NNX_TRAINING], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-4000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["nnx"]
    assert "NNX mode" in found["error"] and "jit_compile=False" in found["error"]
    assert not found["runs made"]
    roles = ("parameters", "gradients")
    assert found["keys"] == sorted(
        f"{role}/out/{name}" for role in roles for name in ("bias", "kernel")
    )
