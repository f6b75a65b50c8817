"""Spectral health: the eigenvalues of WᵀW/N, stable rank, λ_max and WeightWatcher's α, as
`hs.spectrum`, `Run.log_spectrum` and `watch(spectral=True)` compute and log them.

α is checked against a direct NumPy implementation of WeightWatcher's method (the
power-law MLE above each candidate xmin, the xmin of the smallest KS distance kept),
on matrices built with a known power-law spectrum; stable rank and eigenvalues against
NumPy's SVD; laws (bounds, scale invariance) with hypothesis; the logged values against
``torch.linalg.svdvals`` of the weights at the logged step.
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import histoscope as hs
from histoscope.errors import ShardedWarning, UnloggedWarning
from histoscope.write.spectrum import SpectralCapture


def reference_fit(eigenvalues: np.ndarray) -> tuple[float, float, float] | None:
    """(α, xmin, D) by WeightWatcher's method (weightwatcher 0.7.7), written out in NumPy:
    every eigenvalue but the largest a candidate xmin, α = 1 + n / Σ ln(λ / xmin) over
    the n at or above it, D = max |1 - (λ / xmin)^(1 - α) - k / n|, the smallest D kept;
    below 20 eigenvalues, α = 1 + (n - 1) / Σ ln(λ / xmin) over tails of 8 or more."""
    x = np.sort(eigenvalues[eigenvalues > eigenvalues.max() * 1e-12])
    if len(x) < 8:
        return None
    small = len(x) < 20
    best: tuple[float, float, float] | None = None
    for i in range(len(x) - 1):
        tail = x[i:]
        n = len(tail)
        if small and n < 8:
            continue
        alpha = 1 + (n - 1 if small else n) / np.sum(np.log(tail / x[i]))
        if not np.isfinite(alpha):
            continue
        d = np.max(np.abs(1 - (tail / x[i]) ** (1 - alpha) - np.arange(n) / n))
        if best is None or d < best[2]:
            best = (alpha, x[i], d)
    return best


def power_law_matrix(alpha: float, rows: int, cols: int, seed: int = 0) -> np.ndarray:
    """A rows x cols matrix (rows >= cols) whose eigenvalues of WᵀW/rows lie at the
    quantiles of a power law of exponent ``alpha`` above 1, in random directions."""
    rng = np.random.default_rng(seed)
    u, _ = np.linalg.qr(rng.normal(size=(rows, cols)))
    v, _ = np.linalg.qr(rng.normal(size=(cols, cols)))
    quantiles = (np.arange(cols) + 0.5) / cols
    eigenvalues = (1 - quantiles) ** (-1 / (alpha - 1))
    return (u * np.sqrt(eigenvalues * rows)) @ v.T


@pytest.mark.parametrize("alpha", [2.0, 3.0, 4.5])
def test_alpha_of_a_known_power_law_is_weightwatchers_fit(alpha: float) -> None:
    w = power_law_matrix(alpha, 600, 300)
    found = hs.spectrum(w)
    want = reference_fit(found.eigenvalues)
    assert want is not None
    assert (found.alpha, found.xmin) == pytest.approx(want[:2], rel=1e-9)
    assert found.ks == pytest.approx(want[2], abs=1e-9)
    assert found.tail == int(np.sum(found.eigenvalues >= found.xmin))
    assert found.alpha == pytest.approx(alpha, rel=0.1)


@pytest.mark.parametrize("cols", [8, 12, 19, 20, 40])
def test_small_spectra_get_weightwatchers_small_sample_fit(cols: int) -> None:
    w = np.random.default_rng(cols).standard_t(3, size=(300, cols))
    found = hs.spectrum(w)
    want = reference_fit(found.eigenvalues)
    assert want is not None
    assert (found.alpha, found.xmin) == pytest.approx(want[:2], rel=1e-9)
    assert np.isnan(hs.spectrum(w[:, :7]).alpha)


def test_eigenvalues_stable_rank_and_lambda_max_are_numpys_svd() -> None:
    w = np.random.default_rng(1).standard_t(4, size=(120, 70))
    s = np.linalg.svd(w, compute_uv=False)
    found = hs.spectrum(w)
    assert found.n == 120
    np.testing.assert_allclose(found.eigenvalues, np.sort(s**2 / 120), rtol=1e-10)
    assert found.lambda_max == pytest.approx(s.max() ** 2 / 120, rel=1e-10)
    assert found.stable_rank == pytest.approx(np.sum(s**2) / s.max() ** 2, rel=1e-10)
    # A wide matrix is its transpose: N is the larger dimension either way.
    np.testing.assert_allclose(hs.spectrum(w.T).eigenvalues, found.eigenvalues, rtol=1e-10)


def test_the_histogram_is_log_binned_from_the_smallest_positive_eigenvalue() -> None:
    w = power_law_matrix(3.0, 200, 100)
    found = hs.spectrum(w, bins=20)
    edges = found.histogram.edges
    assert len(edges) == 21
    assert edges[0] == found.eigenvalues[0] and edges[-1] == found.lambda_max
    np.testing.assert_allclose(np.diff(np.log(edges)), np.log(edges[-1] / edges[0]) / 20)
    counts, _ = np.histogram(found.eigenvalues, bins=edges)
    np.testing.assert_array_equal(found.histogram.counts, counts)


matrices = arrays(
    np.float64,
    st.tuples(st.integers(2, 24), st.integers(2, 24)),
    elements=st.floats(-100, 100, allow_nan=False, allow_subnormal=False),
)


@settings(max_examples=60, deadline=None)
@given(matrices)
def test_stable_rank_lies_between_one_and_the_rank(w: np.ndarray) -> None:
    assume(np.abs(w).max() > 1e-3)
    found = hs.spectrum(w)
    assert 1.0 <= found.stable_rank <= min(w.shape)
    assert found.stable_rank <= np.linalg.matrix_rank(w) * (1 + 1e-9)


@settings(max_examples=60, deadline=None)
@given(matrices, st.floats(1e-3, 1e3))
def test_alpha_and_stable_rank_do_not_depend_on_scale(w: np.ndarray, scale: float) -> None:
    assume(np.abs(w).max() > 1e-3)
    a, b = hs.spectrum(w), hs.spectrum(w * scale)
    assert b.stable_rank == pytest.approx(a.stable_rank, rel=1e-9)
    assert b.lambda_max == pytest.approx(a.lambda_max * scale**2, rel=1e-9)
    assert np.isnan(a.alpha) == np.isnan(b.alpha)
    if not np.isnan(a.alpha):
        # The same fit, up to rounding: a tie of distances may pick another xmin.
        assert b.ks == pytest.approx(a.ks, abs=1e-9)
        if a.tail == b.tail:
            assert b.alpha == pytest.approx(a.alpha, rel=1e-9)


def test_a_conv_kernel_pools_its_kernel_positions_as_weightwatcher_does() -> None:
    kernel = np.random.default_rng(2).normal(size=(16, 8, 3, 3))
    slices = [kernel[:, :, i, j] for i in range(3) for j in range(3)]
    pooled = np.concatenate([np.linalg.svd(m, compute_uv=False) for m in slices])
    found = hs.spectrum(kernel)
    assert found.n == 16
    np.testing.assert_allclose(found.eigenvalues, np.sort(pooled**2 / 16), rtol=1e-10)
    # Fewer channels than kernel size (1 + 2 < 5 + 5): the channels' slices instead.
    wide = np.random.default_rng(3).normal(size=(1, 2, 5, 5))
    pooled = np.concatenate([np.linalg.svd(wide[0, c], compute_uv=False) for c in range(2)])
    np.testing.assert_allclose(hs.spectrum(wide).eigenvalues, np.sort(pooled**2 / 5))
    # The same on a tensor, on its own device, in float32.
    tensor = torch.from_numpy(kernel).float()
    np.testing.assert_allclose(hs.spectrum(tensor).eigenvalues, found.eigenvalues, rtol=1e-5)


def test_what_has_no_spectrum_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="all zeros"):
        hs.spectrum(np.zeros((4, 3)))
    with pytest.raises(ValueError, match="NaN or infinite"):
        hs.spectrum(np.array([[1.0, np.nan], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="matrix .2-D."):
        hs.spectrum(np.ones(5))
    with pytest.raises(ValueError, match="bins"):
        hs.spectrum(np.eye(3), bins=0)
    with pytest.raises(ValueError, match="spectral_every"):
        hs.write.options.WatchOptions(spectral=True, spectral_every=0)


def test_log_spectrum_writes_the_histogram_and_its_figures(tmp_path: Path) -> None:
    w = power_law_matrix(3.0, 200, 100)
    with hs.init("p", run_name="r", logdir=tmp_path) as run:
        found = run.log_spectrum("fc.weight", w, step=3)
    series = hs.load_histograms(run.path)["spectrum/fc.weight"]["."]
    assert series.steps.tolist() == [3]
    assert series.buckets[0][:, 2].sum() == len(found.eigenvalues)
    assert scalars(run.path) == {
        "spectrum/fc.weight/alpha": {3: pytest.approx(found.alpha, rel=1e-6)},
        "spectrum/fc.weight/stable_rank": {3: pytest.approx(found.stable_rank, rel=1e-6)},
        "spectrum/fc.weight/lambda_max": {3: pytest.approx(found.lambda_max, rel=1e-6)},
    }


def scalars(path: Path) -> dict[str, dict[int, float]]:
    """Every scalar of an events file, decoded by TensorBoard's protos. The records are
    framed here: TensorBoard's loaders import TensorFlow, which aborts a process that
    has PyTorch's compiler loaded (see `.ci/test-wheel`)."""
    from tensorboard.compat.proto import event_pb2

    found: dict[str, dict[int, float]] = {}
    data = path.read_bytes()
    records = []
    while data:
        (length,) = struct.unpack("<Q", data[:8])
        records.append(data[12 : 12 + length])
        data = data[16 + length :]
    for record in records:
        event = event_pb2.Event.FromString(record)
        for value in event.summary.value:
            if value.WhichOneof("value") == "simple_value":
                found.setdefault(value.tag, {})[event.step] = value.simple_value
    return found


def test_a_real_training_logs_the_spectra_of_its_weights_at_their_steps(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 12, 3),
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.Linear(12 * 6 * 6, 40),
        torch.nn.ReLU(),
        torch.nn.Linear(40, 4),
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    seen: dict[int, dict[str, torch.Tensor]] = {}
    with hs.init("p", run_name="r", logdir=tmp_path) as run:
        watch = run.watch(model, log="parameters", every=4, spectral=True, spectral_every=6)
        for step in range(13):
            x = torch.randn(16, 3, 8, 8)
            loss = torch.nn.functional.cross_entropy(model(x), torch.randint(0, 4, (16,)))
            loss.backward()  # the watch logs here, before the optimizer's step
            seen[step] = {n: p.detach().clone() for n, p in model.named_parameters()}
            optimizer.step()
            optimizer.zero_grad()
    assert watch.spectrum_keys == ["spectrum/0.weight", "spectrum/3.weight", "spectrum/5.weight"]
    data = hs.load_histograms(run.path)
    # Histograms every 4 steps, spectra every 6 (step 6 for spectra alone).
    assert data["parameters/0.weight"]["."].steps.tolist() == [0, 4, 8, 12]
    logged = scalars(run.path)
    for name in ["0.weight", "3.weight", "5.weight"]:
        series = data[f"spectrum/{name}"]["."]
        assert series.steps.tolist() == [0, 6, 12]
        for i, step in enumerate(series.steps.tolist()):
            w = seen[step][name]
            slices = w.permute(2, 3, 0, 1).reshape(9, 12, 3) if w.dim() == 4 else w
            n = max(slices.shape[-2:])
            eigenvalues = torch.linalg.svdvals(slices).double().flatten() ** 2 / n
            eigenvalues = np.sort(eigenvalues.numpy())
            buckets = series.buckets[i]
            assert buckets[0, 0] == pytest.approx(eigenvalues[0], rel=1e-6)
            assert buckets[-1, 1] == pytest.approx(eigenvalues[-1], rel=1e-6)
            assert buckets[:, 2].sum() == len(eigenvalues)
            assert series.stats["mean"][i] == pytest.approx(eigenvalues.mean(), rel=1e-6)
            want = hs.spectrum(seen[step][name])
            figures = {f: logged[f"spectrum/{name}/{f}"][step] for f in want.figures}
            assert figures == pytest.approx(want.figures, rel=1e-6)
    # The last layer has 4 eigenvalues: too few for α (8), as WeightWatcher skips it.
    assert "spectrum/5.weight/alpha" not in logged
    assert "spectrum/3.weight/alpha" in logged


def test_a_matrix_with_no_spectrum_costs_only_its_own(tmp_path: Path) -> None:
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 2))
    with torch.no_grad():
        model[0].weight.zero_()
    # With no optimizer step, the backward pass is captured once the watch knows none comes:
    # at the next backward pass, or here at finish.
    with pytest.warns(UnloggedWarning, match="spectrum/0.weight: every singular value is 0"):
        with hs.init("p", run_name="r", logdir=tmp_path) as run:
            run.watch(model, log="parameters", every=1, spectral=True)
            model(torch.randn(3, 4)).sum().backward()
    assert "spectrum/1.weight" in hs.load_histograms(run.path)


SHARDED = textwrap.dedent(
    """
    import sys, warnings, torch, histoscope as hs
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    dist.init_process_group("gloo", init_method=f"file://{sys.argv[1]}/init", rank=0,
                            world_size=1)
    mesh = init_device_mesh("cpu", (1,))
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    fully_shard(model, mesh=mesh)
    run = hs.init("p", run_name="r", logdir=sys.argv[1])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        watch = run.watch(model, log="parameters", every=1, spectral=True)
    print("WARNED", [str(w.message) for w in caught if "spectral" in str(w.message)])
    print("KEYS", watch.spectrum_keys)
    try:
        hs.spectrum(model[0].weight)
    except ValueError as error:
        print("REFUSED", error)
    model(torch.randn(2, 8)).sum().backward()
    run.finish()
    print("LOGGED", sorted(hs.load_histograms(run.path)))
    dist.destroy_process_group()
    """
)


def test_sharded_weights_are_named_once_and_never_gathered(tmp_path: Path) -> None:
    pytest.importorskip("torch.distributed.fsdp", reason="fully_shard needs torch 2.6")
    if not hasattr(torch.distributed.fsdp, "fully_shard"):
        pytest.skip("fully_shard needs torch 2.6 or newer")
    env = {**os.environ, "PYTHONWARNINGS": "ignore::DeprecationWarning"}
    done = subprocess.run(
        [sys.executable, "-c", SHARDED, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "not logged, since a spectrum needs the whole matrix" in out
    assert "0.weight, 2.weight" in out and "0.bias" not in out.split("WARNED")[1].split("\n")[0]
    assert "KEYS []" in out
    assert "REFUSED matrix is a DTensor" in out
    assert "spectrum/" not in out.split("LOGGED")[1]


def test_the_sharded_warning_is_a_sharded_warning() -> None:
    weight = torch.nn.Parameter(torch.ones(3, 3))
    with pytest.warns(ShardedWarning, match="never gathers one: w$"):
        SpectralCapture("M", [], [("w", weight)], every=1, bins=8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a sharded vector has no spectrum to refuse
        SpectralCapture("M", [], [("b", torch.ones(3))], every=1, bins=8)


def test_diagnose_reads_alpha_outside_weightwatchers_band_as_info_only(tmp_path: Path) -> None:
    # A layer whose spectrum stays random-like (α far above 6) and a heavy-tailed one.
    random_like = np.random.default_rng(4).normal(size=(300, 100))
    heavy = power_law_matrix(3.0, 300, 100)
    with hs.init("p", run_name="r", logdir=tmp_path) as run:
        for step in range(3):
            run.log_spectrum("random.weight", random_like * (1 + step), step=step)
            run.log_spectrum("heavy.weight", heavy * 10.0**step, step=step)
            run.log({"loss": 1.0 / (step + 1)}, step=step)
    assert hs.spectrum(random_like).alpha > 6 and 2 <= hs.spectrum(heavy).alpha <= 6
    findings = hs.diagnose(tmp_path)
    assert [(f.kind, f.severity, f.key) for f in findings] == [
        ("spectral", "info", "spectrum/random.weight/alpha")
    ]
    found = findings[0]
    assert (found.first_step, found.last_step) == (0, 2)
    assert "outside WeightWatcher's published band of 2 to 6" in found.message
    assert "not a verdict" in found.message
    assert found.evidence["alpha"] == pytest.approx(hs.spectrum(random_like).alpha, rel=1e-6)
    # The eigenvalues grew a hundredfold: no rule for values judges a spectrum.
    assert hs.diagnose(tmp_path, kinds=["exploding", "collapsed", "nonfinite"]) == []


def test_a_trainer_cannot_be_told_to_stop_on_spectral_findings(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="never a reason to stop training"):
        hs.init("p", run_name="r", logdir=tmp_path, stop_on=["spectral"])


def test_while_it_trains_a_spectral_finding_is_held_and_raises_no_alert(tmp_path: Path) -> None:
    random_like = np.random.default_rng(4).normal(size=(300, 100))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an info raises no HistoscopeAlert
        with hs.init("p", run_name="r", logdir=tmp_path, alerts="raise") as run:
            for step in range(3):
                run.log_spectrum("random.weight", random_like, step=step)
                run.log({"loss": 1.0 / (step + 1)}, step=step)
            run.flush()
            found = [(f.kind, f.severity, f.key) for f in run.findings()]
    assert found == [("spectral", "info", "spectrum/random.weight/alpha")]
