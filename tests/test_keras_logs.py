"""Real Keras log directories that TensorBoard misreads, read right by every command.

``keras3_shared_tags`` (Keras 3.13.2) writes every layer's kernel as ``kernel/histogram``
and every bias as ``bias/histogram``, one value per layer at each step; ``keras2_images``
(Keras 2.9.0, ``write_images=True``) writes an image under each weight's histogram tag.
Their oracles keep every value TensorBoard's Python loader serves, in write order.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import report_page

import histoscope
from histoscope.errors import HistoscopeWarning, SharedTagWarning
from histoscope.read.export import export_parquet
from histoscope.view.follow import LogdirIndex
from histoscope.view.report import build_report

#: Per tag, the layers in model.layers order and each one's element count (the README's table).
LAYERS = {"kernel/histogram": [32, 40, 5], "bias/histogram": [8, 5, 1]}
RUN = "fit/train"


def positioned(tag: str, position: int) -> str:
    return tag if position == 1 else f"{tag} ({position})"


def oracle_entries(fixtures: Path, name: str) -> dict[str, list[dict]]:
    runs = json.loads((fixtures / f"{name}.expected.json").read_text())["runs"]
    return runs[RUN]


def loaded(logdir: Path) -> tuple[dict, list[warnings.WarningMessage]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data = histoscope.load_histograms(logdir)
    return data, caught


def test_keras3_layers_sharing_a_tag_come_back_apart_count_for_count(fixtures: Path) -> None:
    data, caught = loaded(fixtures / "keras3_shared_tags")
    entries = oracle_entries(fixtures, "keras3_shared_tags")
    want_tags = {positioned(tag, p) for tag in LAYERS for p in (1, 2, 3)}
    assert set(data) == want_tags
    for tag, counts in LAYERS.items():
        # TensorBoard's Python loader serves the 9 values of a step-major burst in order.
        served = entries[tag]
        for position, count in enumerate(counts, start=1):
            series = data[positioned(tag, position)][RUN]
            assert series.steps.tolist() == [0, 1, 2]
            assert series.buckets[0][:, 2].sum() == count
            for step in range(3):
                entry = served[3 * step + position - 1]
                assert entry["step"] == step
                np.testing.assert_array_equal(series.buckets[step], np.array(entry["buckets"]))
                assert series.wall_times[step] == entry["wall_time"]
    shared = [w for w in caught if issubclass(w.category, SharedTagWarning)]
    (note,) = shared
    message = str(note.message)
    assert "kernel/histogram (3 a step: kernel/histogram to kernel/histogram (3))" in message
    assert "keras#18433" in message
    assert not [w for w in caught if not issubclass(w.category, SharedTagWarning)]


def test_keras3_layers_stay_apart_in_ls_the_viewer_charts_and_export(
    fixtures: Path, tmp_path: Path
) -> None:
    logdir = fixtures / "keras3_shared_tags"
    want = sorted(positioned(tag, p) for tag in LAYERS for p in (1, 2, 3))
    out = subprocess.run(
        [sys.executable, "-m", "histoscope.cli", "ls", str(logdir)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert "run fit/train: 6 histogram tags" in out.stdout
    assert "superseded" not in out.stdout
    assert sum("kept apart" in line for line in out.stdout.splitlines()) == 1

    index = LogdirIndex(str(logdir))
    run = index.run(RUN)
    assert sorted(run.series) == want
    for tag, counts in LAYERS.items():
        for position, count in enumerate(counts, start=1):
            view = run.series[positioned(tag, position)].view
            (buckets,) = index.buckets(run, positioned(tag, position), view, [2])
            assert buckets[:, 2].sum() == count

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SharedTagWarning)
        charts = histoscope.read_tensorboard_histograms(logdir)
    assert sorted(chart.tag for chart in charts) == want

    pq = pytest.importorskip("pyarrow.parquet")
    summary = export_parquet(logdir, tmp_path / "rows.parquet")
    (note,) = summary.shared_notes
    assert "kernel/histogram (3 a step" in note
    rows = pq.read_table(tmp_path / "rows.parquet").to_pandas()
    assert sorted(rows["tag"].unique()) == want


def test_keras3_file_written_again_is_still_a_restart(fixtures: Path, tmp_path: Path) -> None:
    run = tmp_path / "fit" / "train"
    (source,) = (fixtures / "keras3_shared_tags" / RUN).glob("*tfevents*")
    run.mkdir(parents=True)
    shutil.copy(source, run / source.name)
    # The same writer started again: a later timestamp, so its file sorts after the first.
    shutil.copy(source, run / "events.out.tfevents.9999999999.vm.1.v2")
    data, _ = loaded(tmp_path)
    assert len(data) == 6
    for tag in data:
        assert data[tag][RUN].steps.tolist() == [0, 1, 2]
    out = subprocess.run(
        [sys.executable, "-m", "histoscope.cli", "ls", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "18 steps superseded by a restart" in out.stdout


def test_keras2_images_under_histogram_tags_are_read_without_a_warning(fixtures: Path) -> None:
    data, caught = loaded(fixtures / "keras2_images")
    assert not [w for w in caught if issubclass(w.category, HistoscopeWarning)]
    entries = oracle_entries(fixtures, "keras2_images")
    assert sorted(data) == sorted(entries)
    for tag, served in entries.items():
        histograms = [e for e in served if not isinstance(e["buckets"][0], dict)]
        series = data[tag][RUN]
        assert series.steps.tolist() == [e["step"] for e in histograms] == [0, 1, 2]
        for got, entry in zip(series.buckets, histograms):
            np.testing.assert_array_equal(got, np.array(entry["buckets"]))
    out = subprocess.run(
        [sys.executable, "-m", "histoscope.cli", "ls", str(fixtures / "keras2_images")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert "damaged" not in out.stdout and "skipped" not in out.stdout


def test_the_report_draws_every_keras3_layer_and_names_the_shared_tags(fixtures: Path) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        page = build_report(fixtures / "keras3_shared_tags")
    (note,) = [w for w in caught if issubclass(w.category, SharedTagWarning)]
    assert "kernel/histogram (3 a step" in str(note.message)
    cards = report_page.embedded(page)["cards"]
    assert sorted(cards) == sorted(positioned(tag, p) for tag in LAYERS for p in (1, 2, 3))
