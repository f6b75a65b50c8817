"""`histoscope.compare` and `histoscope diff`: distances between runs, checked against SciPy
through the public `compare` on series already loaded, and on a planted sweep written by
each writer. The distances' own laws are also checked in Rust, in rust/bins/distance.rs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

import histoscope as hs
from histoscope import _core, cli
from histoscope.compare import compare

#: The layers of the planted sweep, and how the changed run moves three of them.
LAYERS = [f"layer{i:02d}/weight" for i in range(12)]
CHANGED = {"layer03/weight": 1.8, "layer07/weight": 0.4, "layer10/weight": "shift"}


def distance(a: np.ndarray, b: np.ndarray) -> hs.KeyDistance:
    """How buckets ``b`` differ from buckets ``a``, by `compare` on two one-step series."""
    side = {
        run: hs.HistogramSeries(
            run, "k", steps=[0], wall_times=[0.0], flat_buckets=rows, offsets=[0, len(rows)]
        )
        for run, rows in (("a", a), ("b", b))
    }
    compared = compare({"k": side}, a="a", b="b")
    assert len(compared) == 1, compared.to_dict()
    return compared[0]


def exact(samples: np.ndarray) -> np.ndarray:
    """Exact buckets of integer samples: one bucket of no width per distinct value."""
    values, counts = np.unique(samples, return_counts=True)
    return np.column_stack([values, values, counts]).astype(np.float64)


samples = st.lists(st.integers(-30, 30), min_size=1, max_size=60).map(np.array)


@settings(max_examples=100, deadline=None)
@given(samples, samples)
def test_exact_buckets_give_scipys_distances_of_the_samples(a: np.ndarray, b: np.ndarray) -> None:
    found = distance(exact(a), exact(b))
    assert found.wasserstein == pytest.approx(scipy.stats.wasserstein_distance(a, b), abs=1e-9)
    assert found.ks == pytest.approx(scipy.stats.ks_2samp(a, b).statistic, abs=1e-12)
    assert found.mean_shift == pytest.approx(
        (b.mean() - a.mean()) / a.std() if a.std() > 0 else math.nan, nan_ok=True, rel=1e-9
    )


def test_spread_buckets_agree_with_scipy_on_fine_samples() -> None:
    # An even spread over each bucket, sampled finely, is what the buckets stand for.
    a = np.array([[0.0, 1.0, 3.0], [1.0, 4.0, 1.0]])
    b = np.array([[0.5, 2.0, 2.0], [2.0, 2.5, 2.0]])

    def spread(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        u = (np.arange(20000) + 0.5) / 20000
        values = np.concatenate([left + u * (right - left) for left, right, _ in rows])
        weights = np.concatenate([np.full(u.size, count / u.size) for _, _, count in rows])
        return values, weights

    (va, wa), (vb, wb) = spread(a), spread(b)
    assert distance(a, b).wasserstein == pytest.approx(
        scipy.stats.wasserstein_distance(va, vb, wa, wb), rel=1e-3
    )


def weights(layer: str, changed: bool, step: int) -> np.ndarray:
    """The planted sweep's values: the same draws in both runs, three layers moved in one."""
    rng = np.random.default_rng(LAYERS.index(layer) * 1000 + step)
    values = rng.normal(0.0, 0.05 * (1 + LAYERS.index(layer)), size=3000)
    how = CHANGED.get(layer) if changed else None
    if how == "shift":
        return values + 0.5 * values.std()
    return values * how if how is not None else values


def write_sweep(root: Path, writer: str) -> Path:
    """Two runs, ``base`` and ``changed``, of every layer at steps 0..4, by ``writer``."""
    for run, changed in (("base", False), ("changed", True)):
        folder = root / writer / run
        if writer == "histoscope":
            with hs.init(writer, run_name=run, logdir=str(root)) as logged:
                for step in range(5):
                    for layer in LAYERS:
                        logged.add_histogram(layer, weights(layer, changed, step), step=step)
        elif writer == "torch":
            from torch.utils.tensorboard import SummaryWriter

            with SummaryWriter(str(folder)) as w:
                for step in range(5):
                    for layer in LAYERS:
                        w.add_histogram(layer, weights(layer, changed, step), step)
        elif writer == "tensorboardX":
            from tensorboardX import SummaryWriter as XWriter

            with XWriter(str(folder)) as w:
                for step in range(5):
                    for layer in LAYERS:
                        w.add_histogram(layer, weights(layer, changed, step), step)
        elif writer == "tf2":
            import tensorflow as tf

            w = tf.summary.create_file_writer(str(folder))
            with w.as_default():
                for step in range(5):
                    for layer in LAYERS:
                        tf.summary.histogram(layer, weights(layer, changed, step), step=step)
            w.close()
    return root / writer


@pytest.mark.parametrize("writer", ["histoscope", "torch", "tensorboardX", "tf2"])
def test_the_planted_layers_rank_first_on_every_writers_files(tmp_path: Path, writer: str) -> None:
    logdir = write_sweep(tmp_path, writer)
    runs = sorted(run.name for run in _core.discover_runs(str(logdir)))
    base, changed = (
        (r for r in runs if r.endswith("base")),
        (r for r in runs if r.endswith("changed")),
    )
    table = compare(logdir, a=next(base), b=next(changed))
    assert len(table) == len(LAYERS)
    assert {row.key for row in table[:3]} == set(CHANGED), table.to_text()
    assert table[3].scaled < table[2].scaled / 3  # clearly apart from the rest
    by_key = {row.key: row for row in table}
    assert by_key["layer10/weight"].mean_shift == pytest.approx(0.5, abs=0.15)
    assert by_key["layer03/weight"].std_change == pytest.approx(0.8, abs=0.15)
    assert by_key["layer07/weight"].std_change == pytest.approx(-0.6, abs=0.1)
    assert (table[0].step_a, table[0].step_b) == (4, 4)


def test_a_logdir_and_its_loaded_series_compare_alike(tmp_path: Path) -> None:
    logdir = write_sweep(tmp_path, "histoscope")
    from_files = compare(logdir, a="base", b="changed", step=2)
    from_series = compare(hs.load_histograms(str(logdir)), a="base", b="changed", step=2)
    assert from_files.to_dict() == from_series.to_dict()
    assert {row.step_a for row in from_files} == {2}


def test_two_steps_of_one_run_and_what_is_left_out(tmp_path: Path) -> None:
    with hs.init("logs", run_name="solo", logdir=str(tmp_path)) as run:
        run.add_histogram("early", np.arange(10.0), step=0)
        for step in (1, 5):
            run.add_histogram("grows", np.arange(10.0) * step, step=step)
    table = compare(tmp_path / "logs", steps=(1, 5))
    assert (table.a, table.b) == ("solo", "solo")
    assert [row.key for row in table] == ["grows", "early"]
    assert (table[0].step_a, table[0].step_b, table[0].std_change) == (1, 5, pytest.approx(4.0))
    assert table[1].wasserstein == 0.0  # 'early' has only step 0: both sides take it
    before = compare(tmp_path / "logs", steps=(0, 5))
    assert before.unmatched == ["grows"]
    # Series already loaded take the core's one comparison too.
    loaded = hs.load_histograms(str(tmp_path / "logs"))
    assert compare(loaded, steps=(0, 5)).to_dict() == before.to_dict()
    assert compare(loaded, steps=(1, 5)).to_dict() == table.to_dict()


def test_keys_on_one_side_only_are_named_alike_from_files_and_series(tmp_path: Path) -> None:
    for name, keys in (("a", ("shared", "only_a", "also_a")), ("b", ("shared", "only_b"))):
        with hs.init("logs", run_name=name, logdir=str(tmp_path)) as run:
            for key in keys:
                run.add_histogram(key, np.arange(10.0), step=0)
    from_files = compare(tmp_path / "logs", a="a", b="b")
    from_series = compare(hs.load_histograms(str(tmp_path / "logs")), a="a", b="b")
    assert from_files.to_dict() == from_series.to_dict()
    assert (from_files.only_a, from_files.only_b) == (["also_a", "only_a"], ["only_b"])
    assert [row.key for row in from_files] == ["shared"]


def test_a_side_holding_one_key_twice_is_a_clear_error(tmp_path: Path) -> None:
    with hs.init("logs", run_name="a", logdir=str(tmp_path)) as run:
        run.add_histogram("w", np.arange(10.0), step=0)
    series = hs.load_histograms(str(tmp_path / "logs"))["w"]["a"]
    with pytest.raises(ValueError, match="holds the key 'w' twice"):
        compare({"w": {"a": series}, "copy": {"a": series}}, steps=(0, 0))


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"a": "nope", "b": "base"}, "no run 'nope'; the runs are base, changed"),
        ({"a": "base"}, "give steps=\\(A, B\\); else give b=RUN"),
        ({"a": "base", "b": "changed", "step": 1, "steps": (1, 2)}, "not both"),
        ({"b": "changed", "steps": (1, 2)}, "give a=RUN: the source holds 2 runs"),
    ],
)
def test_arguments_that_do_not_make_two_sides_are_clear_errors(
    tmp_path: Path, arguments: dict, message: str
) -> None:
    logdir = write_sweep(tmp_path, "histoscope")
    with pytest.raises(ValueError, match=message):
        compare(logdir, **arguments)
    with pytest.raises(FileNotFoundError, match="no log directory"):
        compare(tmp_path / "missing", a="x", b="y")


def test_diff_prints_the_ranking_and_json(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    logdir = str(write_sweep(tmp_path, "histoscope"))
    assert cli.main(["diff", logdir, "--a", "base", "--b", "changed", "--top", "3"]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0] == "base against changed: 12 keys compared, farthest first"
    assert "... and 9 more" in text
    assert {line.split()[1] for line in text.splitlines()[2:5]} == set(CHANGED)
    assert cli.main(["diff", logdir, "--a", "base", "--b", "changed", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [row["rank"] for row in data["rows"]] == list(range(1, 13))
    assert cli.main(["diff", logdir, "--a", "base", "--b", "gone"]) == 2
    assert "no run 'gone'" in capsys.readouterr().err


def test_diff_reads_a_bucket_as_the_local_directory(fixtures: Path, tmp_path: Path) -> None:
    from moto_bucket import serving, upload

    logdir = write_sweep(tmp_path, "histoscope")
    local = compare(logdir, a="base", b="changed")
    with serving(fixtures, "diffs", []) as options:
        upload(options, "diffs", logdir, "logs/sweep")
        remote = compare("s3://diffs/logs/sweep", a="base", b="changed", storage_options=options)
    assert remote.to_dict() == local.to_dict()
