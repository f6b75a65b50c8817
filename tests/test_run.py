"""Logging runs: round trips through events files, TensorBoard reading them, robustness."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import histoscope as hs
from histoscope import DamagedFileWarning
from histoscope.write.options import DEFAULT_BINS


def read_back(run_dir: Path, tag: str):
    with warnings.catch_warnings():
        warnings.simplefilter("error", DamagedFileWarning)
        return hs.load_histograms(run_dir.parent, runs=[run_dir.name])[tag][run_dir.name]


def assert_logged_like_numpy(
    series, i: int, values: np.ndarray, bins=DEFAULT_BINS, range=None
) -> None:
    finite = values[np.isfinite(values)].astype(np.float64)
    counts, edges = np.histogram(finite, bins=bins, range=range)
    got = series.buckets[i]
    np.testing.assert_array_equal(got[:, 0], edges[:-1])
    np.testing.assert_array_equal(got[:, 1], edges[1:])
    np.testing.assert_array_equal(got[:, 2], counts)
    stats = {name: values[i] for name, values in series.stats.items()}
    assert stats["count"] == len(finite)
    assert stats["nonfinite"] == values.size - len(finite)
    if len(finite):
        assert stats["min"] == finite.min() and stats["max"] == finite.max()
        np.testing.assert_allclose(stats["mean"], finite.mean(), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(stats["std"], finite.std(), rtol=1e-9, atol=1e-12)


def test_round_trip_equals_numpy(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    logged = [rng.normal(size=(64, 32)).astype(np.float32) * (s + 1) for s in range(3)]
    with hs.init("p", run_name="r", logdir=tmp_path) as run:
        assert run.dir == tmp_path / "p" / "r"
        for step, values in enumerate(logged):
            run.add_histogram("w", values, step=step * 10)
    series = read_back(run.dir, "w")
    assert series.steps.tolist() == [0, 10, 20]
    for i, values in enumerate(logged):
        assert_logged_like_numpy(series, i, values.ravel())
        assert series.stats["below"][i] == 0 and series.stats["above"][i] == 0


def test_tensorboard_reads_the_same_buckets(tmp_path: Path) -> None:
    from tensorboard import data_compat
    from tensorboard.backend.event_processing import event_file_loader
    from tensorboard.compat.proto import event_pb2
    from tensorboard.util import tensor_util

    values = np.concatenate([np.zeros(10), np.linspace(-1, 3, 500)])
    with hs.init("p", run_name="r", logdir=tmp_path) as run:
        run.add_histogram("w", values, step=4, bins=20, range=(-2.0, 4.0))
        run.log({"loss": 0.25}, step=4)
    raw = event_file_loader.RawEventFileLoader(str(run.path)).Load()
    events = [event_pb2.Event.FromString(record) for record in raw]
    assert events[0].file_version == "brain.Event:2"
    histo_value = next(v for e in events for v in e.summary.value if v.tag == "w")
    scalar = next(v for e in events for v in e.summary.value if v.tag == "loss")
    assert scalar.simple_value == 0.25
    tensor = tensor_util.make_ndarray(data_compat.migrate_value(histo_value).tensor)
    ours = read_back(run.dir, "w").buckets[0]
    nonempty = ours[np.flatnonzero(ours[:, 2])[0] : np.flatnonzero(ours[:, 2])[-1] + 1]
    np.testing.assert_array_equal(tensor, nonempty.astype(np.float32))
    h = histo_value.histo
    assert h.num == 510
    np.testing.assert_allclose(h.sum / h.num, values.mean())


def test_tensorboards_event_accumulator_serves_our_bins(tmp_path: Path) -> None:
    from tensorboard.backend.event_processing import plugin_event_accumulator as pea
    from tensorboard.util import tensor_util

    rng = np.random.default_rng(7)
    logged = [rng.normal(loc=step, size=3000) for step in range(4)]
    with hs.init("p", run_name="r", logdir=tmp_path) as run:
        for step, values in enumerate(logged):
            run.add_histogram("w", values, step=step, bins=40)
    accumulator = pea.EventAccumulator(str(run.dir), size_guidance={pea.TENSORS: 0})
    accumulator.Reload()
    served = accumulator.Tensors("w")
    assert [event.step for event in served] == [0, 1, 2, 3]
    ours = read_back(run.dir, "w")
    for event, buckets in zip(served, ours.buckets):
        nonzero = np.flatnonzero(buckets[:, 2])
        expected = buckets[nonzero[0] : nonzero[-1] + 1].astype(np.float32)
        np.testing.assert_array_equal(tensor_util.make_ndarray(event.tensor_proto), expected)


def test_values_changed_in_place_after_the_call_are_not_seen(tmp_path: Path) -> None:
    values = np.arange(1000, dtype=np.float64)
    original = values.copy()
    with hs.init("p", run_name="r", logdir=tmp_path) as run:
        for step in range(20):
            run.add_histogram("w", values, step=step)
            values += 1000.0  # as optimizer.step() does
    series = read_back(run.dir, "w")
    for step in range(20):
        assert_logged_like_numpy(series, step, original + 1000.0 * step)


def test_large_arrays_changed_in_place_reuse_no_logged_copy(tmp_path: Path) -> None:
    # Over a MiB, snapshots go through the run's buffer pool: a buffer is only
    # reused once its histogram is binned, so no step sees another's values.
    values = np.linspace(-1.0, 1.0, 400_000)
    with hs.init("p", run_name="r", logdir=tmp_path) as run:
        for step in range(8):
            run.add_histogram("w", values, step=step)
            values *= 2.0
    series = read_back(run.dir, "w")
    for step in range(8):
        assert_logged_like_numpy(series, step, np.linspace(-1.0, 1.0, 400_000) * 2.0**step)


@pytest.mark.parametrize(
    "values",
    [
        np.array([1.0, np.nan, 2.0, np.inf, -np.inf, 3.0]),
        np.full(7, np.nan),
        np.array([], dtype=np.float32),
        np.array([True, False, True, True]),
        np.arange(-50, 50, dtype=np.int16),
        np.linspace(-4, 4, 99).astype(np.float16),
        np.arange(10, dtype=np.uint8).reshape(2, 5),
        [1, 2, 3, 3],
        (0.5, 1.5),
    ],
    ids=["nan-inf", "all-nan", "empty", "bool", "int16", "float16", "uint8-2d", "list", "tuple"],
)
def test_every_kind_of_input_is_logged(tmp_path: Path, values) -> None:
    with hs.init("p", run_name="r", logdir=tmp_path) as run:
        run.add_histogram("w", values, step=0)
    series = read_back(run.dir, "w")
    array = np.asarray(values).ravel()
    assert_logged_like_numpy(series, 0, array.astype(np.float64))


def test_bfloat16_numpy_input(tmp_path: Path) -> None:
    import ml_dtypes

    values = np.linspace(-3, 3, 301).astype(ml_dtypes.bfloat16)
    with hs.init("p", run_name="r", logdir=tmp_path) as run:
        run.add_histogram("w", values, step=0)
    assert_logged_like_numpy(read_back(run.dir, "w"), 0, values.astype(np.float64))


def test_torch_tensors_of_any_dtype(tmp_path: Path) -> None:
    import torch

    weight = torch.nn.Parameter(torch.randn(40, 30))
    bf16 = torch.randn(1000).to(torch.bfloat16)
    before = weight.detach().clone().numpy().ravel()
    with hs.init("p", run_name="r", logdir=tmp_path) as run:
        run.add_histogram("param", weight, step=0)
        run.add_histogram("bf16", bf16, step=0)
        with torch.no_grad():
            weight.mul_(100)  # after the call: not seen
    assert_logged_like_numpy(read_back(run.dir, "param"), 0, before)
    assert_logged_like_numpy(read_back(run.dir, "bf16"), 0, bf16.float().numpy())


def test_weights_and_range(tmp_path: Path) -> None:
    values = np.array([-5.0, 0.1, 0.2, 0.6, 0.9, 7.0, np.nan])
    weights = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])
    with hs.init("p", run_name="r", logdir=tmp_path) as run:
        run.add_histogram("w", values, step=0, bins=2, range=(0.0, 1.0), weights=weights)
        run.add_histogram("edges", values, step=0, bins=[0.0, 0.5, 2.0, 10.0])
    series = read_back(run.dir, "w")
    np.testing.assert_array_equal(series.buckets[0], [[0.0, 0.5, 5.0], [0.5, 1.0, 9.0]])
    stats = {k: v[0] for k, v in series.stats.items()}
    assert (stats["below"], stats["above"]) == (1.0, 6.0)
    edges = read_back(run.dir, "edges")
    np.testing.assert_array_equal(edges.buckets[0][:, 2], [2.0, 2.0, 1.0])
    assert edges.stats["below"][0] == 1.0


def test_steps_default_to_one_more_than_the_last(tmp_path: Path) -> None:
    with hs.init("p", run_name="r", logdir=tmp_path) as run:
        run.add_histogram("a", [1.0])
        run.add_histogram("a", [1.0])
        run.add_histogram("a", [1.0], step=10)
        run.add_histogram("a", [1.0])
        run.add_histogram("b", [1.0])
    assert read_back(run.dir, "a").steps.tolist() == [0, 1, 10, 11]
    assert read_back(run.dir, "b").steps.tolist() == [0]


def test_log_histograms_and_scalars(tmp_path: Path) -> None:
    samples = np.random.default_rng(1).normal(size=5000)
    run = hs.init("p", run_name="r", logdir=tmp_path)
    hs.log(
        {"weights": hs.Histogram(samples, bins=64), "loss": 0.31, "acc": np.float32(0.5)}, step=3
    )
    run.log({"weights": hs.Histogram(samples * 2, bins=64)})
    with pytest.raises(TypeError, match="use separate keys"):
        run.log({"weights": [hs.Histogram(samples), hs.Histogram(samples)]})
    with pytest.raises(TypeError, match="'bad': run.log takes a histoscope.Histogram or a number"):
        run.log({"bad": "text"})
    hs.finish()
    series = read_back(run.dir, "weights")
    assert series.steps.tolist() == [3, 4]
    assert_logged_like_numpy(series, 0, samples, bins=64)
    with pytest.raises(RuntimeError, match="finished"):
        run.add_histogram("w", [1.0])


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"key": ""}, ValueError, "key must not be empty"),
        ({"key": 3}, TypeError, "key must be a str"),
        ({"step": -1}, ValueError, "step must be an int >= 0"),
        ({"step": 1.5}, TypeError, "step must be an int"),
        ({"bins": 0}, ValueError, "bins must be an int from 1 to 512 or increasing edges, got 0"),
        ({"bins": [1.0, 0.0]}, ValueError, "bins"),
        ({"range": (1.0, 0.0)}, ValueError, "range"),
        ({"range": (0.0, np.inf)}, ValueError, "range"),
        ({"weights": np.ones(3)}, ValueError, "weights must have the same shape as values"),
        ({"time": "now"}, TypeError, "time"),
        ({"values": "text"}, TypeError, "values"),
        ({"values": object()}, TypeError, "values"),
    ],
)
def test_bad_arguments_raise_at_the_call(tmp_path: Path, kwargs, error, match) -> None:
    args = {"key": "w", "values": np.ones(4)} | kwargs
    with hs.init("p", run_name="r", logdir=tmp_path) as run:
        with pytest.raises(error, match=match):
            run.add_histogram(args.pop("key"), args.pop("values"), **args)


def test_run_names_and_restarts(tmp_path: Path) -> None:
    first = hs.init("proj", logdir=tmp_path)
    first.add_histogram("w", [1.0, 2.0], step=0)
    first.add_histogram("w", [1.0, 2.0], step=1)
    first.finish()
    assert first.name.count("-") == 2 and first.dir.parent == tmp_path / "proj"
    again = hs.init("proj", run_name=first.name, logdir=tmp_path)
    again.add_histogram("w", [5.0, 6.0], step=1)
    again.finish()
    assert len(list(first.dir.iterdir())) == 2
    series = read_back(first.dir, "w")
    assert series.steps.tolist() == [0, 1]
    assert series.stats["mean"].tolist() == [1.5, 5.5]


def test_bad_run_folders(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(OSError, match="cannot write"):
        hs.init("p", run_name="r", logdir=tmp_path / "file")
    with pytest.raises(ValueError, match="run_name"):
        hs.init("p", run_name="../escape", logdir=tmp_path)
    with pytest.raises(TypeError, match="project"):
        hs.init(None)  # type: ignore[arg-type]


def test_exception_in_the_training_loop_still_flushes(tmp_path: Path) -> None:
    with pytest.raises(KeyError):
        with hs.init("p", run_name="r", logdir=tmp_path) as run:
            run.add_histogram("w", np.arange(10.0), step=0)
            raise KeyError("boom")
    assert read_back(run.dir, "w").steps.tolist() == [0]


CHILD = textwrap.dedent(
    """
    import sys, time, numpy as np, histoscope as hs
    import histoscope.write.writer
    histoscope.write.writer.FLUSH_SECONDS = 0.2
    run = hs.init("p", run_name="killed", logdir=sys.argv[1])
    rng = np.random.default_rng(0)
    for step in range(100000):
        run.add_histogram("w", rng.normal(size=2000), step=step)
        run.log({"loss": 1.0 / (step + 1)}, step=step)
        time.sleep(0.002)
    """
)


def test_a_run_killed_mid_training_reads_back_up_to_the_last_flush(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path)])
    run_dir = tmp_path / "p" / "killed"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            time.sleep(0.3)
            files = list(run_dir.glob("*tfevents*")) if run_dir.is_dir() else []
            if files and files[0].stat().st_size > 20_000:
                break
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    assert child.returncode == -signal.SIGKILL
    series = read_back(run_dir, "w")
    assert len(series) > 5
    assert series.steps.tolist() == list(range(len(series)))
    assert all(b[:, 2].sum() == 2000 for b in series.buckets)


FULL_DISK_CHILD = textwrap.dedent(
    """
    import resource, signal, sys, numpy as np, histoscope as hs
    import histoscope.write.writer
    histoscope.write.writer.FLUSH_SECONDS = 0.05
    run = hs.init("p", run_name="full", logdir=sys.argv[1])
    # Files may not grow past 64 KiB from here on: the disk is "full".
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (65536, 65536))
    for step in range(400):
        run.add_histogram("w", np.arange(1000.0) + step, step=step, bins=200)
    run.finish()
    print("training went on to the end")
    """
)


def test_a_full_disk_is_a_warning_not_a_crash_or_a_hang(tmp_path: Path) -> None:
    child = subprocess.run(
        [sys.executable, "-W", "always", "-c", FULL_DISK_CHILD, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == 0, child.stderr
    assert "training went on to the end" in child.stdout
    assert "HistoscopeWarning" in child.stderr and "cannot write" in child.stderr
    assert child.stderr.count("HistoscopeWarning") < 5  # said once, not once per step
    series = read_back(tmp_path / "p" / "full", "w")
    assert 0 < len(series) < 400
    assert series.steps.tolist() == list(range(len(series)))


def test_an_uncaught_exception_still_flushes_at_exit(tmp_path: Path) -> None:
    child = textwrap.dedent(
        """
        import sys, numpy as np, histoscope as hs
        run = hs.init("p", run_name="crashed", logdir=sys.argv[1])
        for step in range(5):
            run.add_histogram("w", np.arange(100.0), step=step)
        raise RuntimeError("the training loop failed")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", child, str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1 and "the training loop failed" in done.stderr
    assert read_back(tmp_path / "p" / "crashed", "w").steps.tolist() == [0, 1, 2, 3, 4]


MB = 1 << 20


def gated_histogram(gate: threading.Event, failure: BaseException | None = None) -> hs.Histogram:
    """A histogram the writer thread cannot take until ``gate`` is set: a slow
    (or, with ``failure``, dying) writer, whatever the disk."""

    class Gated(hs.Histogram):
        __slots__ = ()

        @property
        def edges(self) -> np.ndarray:
            gate.wait()
            if failure is not None:
                raise failure
            return super().edges

    plain = hs.Histogram([1.0, 2.0], bins=2)
    return Gated(np_histogram=(plain.counts, plain.edges))


def wait_until(condition, thread: threading.Thread | None = None) -> None:
    """Waits for ``condition()`` while ``thread`` (if any) is still running;
    fails if the thread ends first, or after a minute."""
    deadline = time.monotonic() + 60
    while not condition():
        assert thread is None or thread.is_alive(), "the thread ended instead of waiting"
        assert time.monotonic() < deadline, "the condition never became true"
        time.sleep(0.005)


def test_add_histogram_waits_for_a_slow_writer_at_the_bound(tmp_path: Path) -> None:
    gate = threading.Event()
    values = np.ones(MB // 8)  # 1 MiB each
    run = hs.init("p", run_name="r", logdir=tmp_path, max_pending_bytes=3 * MB)
    run.log({"gate": gated_histogram(gate)}, step=0)
    for step in range(3):
        run.add_histogram("x", values, step=step)
    assert run.backlog.pending_bytes == 3 * MB
    fourth = threading.Thread(target=run.add_histogram, args=("x", values, 3))
    fourth.start()
    wait_until(lambda: run.backlog.waiting == 1, fourth)
    assert run.backlog.pending_bytes == 3 * MB  # the fourth is not copied yet
    gate.set()
    fourth.join()
    run.finish()
    assert run.backlog == hs.write.run.Backlog(pending_bytes=0, waiting=0, dropped=0, unwritten=0)
    assert read_back(run.dir, "x").steps.tolist() == [0, 1, 2, 3]
    assert read_back(run.dir, "gate").steps.tolist() == [0]


def test_on_full_drop_drops_counts_and_warns_once(tmp_path: Path) -> None:
    gate = threading.Event()
    values = np.ones(MB // 8)
    run = hs.init("p", run_name="r", logdir=tmp_path, max_pending_bytes=2 * MB, on_full="drop")
    run.log({"gate": gated_histogram(gate)}, step=0)
    run.add_histogram("x", values, step=0)
    run.add_histogram("x", values, step=1)
    with pytest.warns(hs.HistoscopeWarning, match="'x' dropped") as first:
        run.add_histogram("x", values, step=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run.add_histogram("y", values, step=0)
    assert len(first) == 1 and run.backlog.dropped == 2
    gate.set()
    run.flush()
    run.add_histogram("x", values, step=3)  # room again once the writer caught up
    with pytest.warns(hs.HistoscopeWarning, match=r"2 histograms were dropped .*'x', 'y'"):
        run.finish()
    assert read_back(run.dir, "x").steps.tolist() == [0, 1, 3]


def test_one_histogram_larger_than_the_bound_still_goes_through(tmp_path: Path) -> None:
    with hs.init("p", run_name="r", logdir=tmp_path, max_pending_bytes=1000) as run:
        for step in range(3):
            run.add_histogram("big", np.arange(10_000.0), step=step)
    assert read_back(run.dir, "big").steps.tolist() == [0, 1, 2]


def test_finish_gives_up_on_a_stuck_writer_and_says_what_was_not_written(tmp_path: Path) -> None:
    gate = threading.Event()
    run = hs.init("p", run_name="r", logdir=tmp_path)
    run.log({"gate": gated_histogram(gate)}, step=0)
    run.add_histogram("x", np.arange(10.0), step=0)
    run.log({"loss": 0.5}, step=0)
    with pytest.warns(
        hs.HistoscopeWarning,
        match=r"2 histograms and 1 scalars were not written: "
        r"the writer thread did not finish within 0.05 s",
    ):
        run.finish(timeout=0.05)
    gate.set()  # let the thread end


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_finish_and_flush_do_not_hang_on_a_dead_writer(tmp_path: Path) -> None:
    gate = threading.Event()
    gate.set()
    run = hs.init("p", run_name="r", logdir=tmp_path, max_pending_bytes=MB)
    run.add_histogram("before", np.arange(10.0), step=0)
    run.flush()
    run.log({"boom": gated_histogram(gate, SystemExit("writer killed"))}, step=0)
    wait_until(lambda: not run._writer.alive)
    run.add_histogram("x", np.ones(MB // 8), step=0)
    run.add_histogram("x", np.ones(MB // 8), step=1)  # the bound does not wait on a dead writer
    run.log({"loss": 0.5}, step=0)
    with pytest.warns(hs.HistoscopeWarning, match="the writer thread has stopped"):
        run.flush()
    with pytest.warns(
        hs.HistoscopeWarning,
        match=r"2 histograms and 1 scalars were not written: the writer thread stopped early",
    ):
        run.finish()
    assert read_back(run.dir, "before").steps.tolist() == [0]


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"max_pending_bytes": 0}, ValueError, "max_pending_bytes must be an int > 0"),
        ({"max_pending_bytes": 1.5}, TypeError, "max_pending_bytes must be an int > 0"),
        ({"on_full": "block"}, ValueError, "on_full must be 'wait' or 'drop'"),
    ],
)
def test_bad_bound_arguments_are_named(tmp_path: Path, kwargs, error, message) -> None:
    with pytest.raises(error, match=message):
        hs.init("p", run_name="r", logdir=tmp_path, **kwargs)
