"""What a notebook widget on a log directory holds (histoscope.notebook.feeds.LogdirFeed):
the steps `load_histograms` reads of the real fixtures, a growing run followed update by
update, and the same from an S3 bucket (moto) as from the disk."""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import moto_bucket
import numpy as np
import pytest

import histoscope as hs
from histoscope import _core
from histoscope.notebook.feeds import LogdirFeed

BUCKET = "feeds"
FOLLOWED = ("tf2_summary", "torch_writer", "restart", "keras3_shared_tags", "many_steps")


def _held(feed: LogdirFeed) -> dict[tuple[str, str], tuple[list[float], np.ndarray]]:
    """Per (run, tag), the steps and counts the feed's chart holds."""
    whole = feed.chart.whole()
    counts = whole.counts.reshape(-1, feed.chart.bins)
    out, at = {}, 0
    for change in whole.changes:
        rows = slice(at, at + change.rows)
        out[(change.run, change.tag)] = (whole.steps[rows].tolist(), counts[rows])
        at += change.rows
    return out


def _caught_up(feed: LogdirFeed) -> bool:
    runs = [feed.index.started(name) for name in feed.index.runs()]
    return all(run is not None and run.caught_up for run in runs)


def _polled(logdir: str, **options: Any) -> LogdirFeed:
    """The feed polled as the widget polls it until its runs are read whole (a poll
    reads a run's first histograms, the rest is read behind it), then once more."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the damaged fixtures say so; test_reader covers it
        feed = LogdirFeed(logdir, **options)
        deadline = time.monotonic() + 60
        feed.poll()
        while not _caught_up(feed):
            assert time.monotonic() < deadline, "the runs were not read whole in 60 s"
            time.sleep(0.05)
            feed.poll()
        feed.poll()
    return feed


@pytest.mark.parametrize("name", FOLLOWED)
def test_a_directory_shown_holds_the_steps_load_histograms_reads(fixtures: Path, name: str) -> None:
    """Every series, its steps thinned as the chart keeps them (all of them up to
    LIVE_STEPS, the latest always), each step counting what the file holds."""
    feed = _polled(str(fixtures / name))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = hs.load_histograms(fixtures / name)
    held = _held(feed)
    expected = {(run, tag): s for tag, runs in loaded.items() for run, s in runs.items()}
    assert set(held) == set(expected)
    for key, series in expected.items():
        steps, counts = held[key]
        assert steps[-1] == series.steps[-1] and len(steps) <= _core.LIVE_STEPS + 1
        if len(series) <= _core.LIVE_STEPS:
            assert steps == series.steps.tolist(), key
        at = {int(s): i for i, s in enumerate(series.steps)}
        for step, row in zip(steps, counts):
            total = series.buckets[at[int(step)]][:, 2].sum()
            assert row.sum() == pytest.approx(total, rel=1e-5), (key, step)
    feed.close()


def _log(run: hs.Run, steps: range) -> None:
    for step in steps:
        values = np.random.default_rng(step).normal(0, 1 + step / 10, 500)
        run.add_histogram("w", values, step)
    run.flush()


def _next_update(feed: LogdirFeed) -> _core.LiveUpdateRecord:
    deadline = time.monotonic() + 30
    while True:
        feed.poll()
        update = feed.chart.take_update(1 << 20)
        if update.changes:
            return update
        assert time.monotonic() < deadline, "nothing new was read in 30 s"
        time.sleep(0.1)


def test_a_directory_shown_follows_its_run_as_it_grows(tmp_path: Path) -> None:
    run = hs.init("grow", run_name="r", logdir=str(tmp_path))
    _log(run, range(3))
    feed = LogdirFeed(tmp_path / "grow")
    feed.poll()
    first = feed.chart.take_update(1 << 20)
    assert [(c.tag, c.rows, c.full) for c in first.changes] == [("w", 3, True)]
    _log(run, range(3, 5))
    # The directory is read again once its last read is a second old (refresh_seconds).
    second = _next_update(feed)
    # Only the new steps' rows, unless the bins widened and the tag is sent again.
    assert second.steps.tolist()[-2:] == [3.0, 4.0]
    assert all(c.rows == 2 or c.full for c in second.changes)
    time.sleep(1.1)
    feed.poll()
    assert not feed.chart.take_update(1 << 20).changes  # nothing new, nothing sent
    run.finish()
    feed.close()


def test_a_directory_that_is_not_there_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no log directory"):
        LogdirFeed(tmp_path / "nowhere")


@pytest.fixture(scope="module")
def s3(fixtures: Path) -> Iterator[dict[str, Any]]:
    with moto_bucket.serving(fixtures, BUCKET, FOLLOWED) as options:
        yield options


@pytest.mark.parametrize("name", ["tf2_summary", "restart"])
def test_a_bucket_shown_holds_what_the_same_directory_on_disk_holds(
    fixtures: Path, s3: dict[str, Any], name: str
) -> None:
    remote = _polled(f"s3://{BUCKET}/logs/{name}", storage_options=s3)
    local = _polled(str(fixtures / name))
    there, here = _held(remote), _held(local)
    assert set(there) == set(here)
    for key, (steps, counts) in here.items():
        assert there[key][0] == steps
        # Bins widen as values arrive, and a directory's reads arrive in polls of their
        # own: the same steps, each counting the same values, on bins that may differ.
        np.testing.assert_allclose(there[key][1].sum(axis=1), counts.sum(axis=1), rtol=1e-5)
    assert remote.title == local.title == name
    remote.close()
    local.close()


def test_a_bucket_with_no_events_files_is_refused(s3: dict[str, Any]) -> None:
    with pytest.raises(FileNotFoundError, match="nothing-here"):
        LogdirFeed(f"s3://{BUCKET}/nothing-here", storage_options=s3)


def test_a_widget_on_a_bucket_sends_its_runs_from_its_thread(s3: dict[str, Any]) -> None:
    """`histoscope.notebook.widget(URL)`: its thread polls the bucket and sends updates
    within the budget (outside a kernel the comm sends nowhere; the counts are kept)."""
    from histoscope.notebook import widget

    shown = widget(f"s3://{BUCKET}/logs/torch_writer", storage_options=s3)
    deadline = time.monotonic() + 60
    while shown.updates == 0:
        assert time.monotonic() < deadline, "no update in 60 s"
        time.sleep(0.1)
    assert 0 < shown.largest_update <= shown.budget_bytes + 4096
    shown.close()
    assert {c.tag for c in shown.feed.chart.whole().changes}


def test_a_restart_that_leaves_none_of_a_series_empties_it(tmp_path: Path) -> None:
    """A writer's ``SessionLog.START`` before every step of a key drops them all: no step
    of it arrives again to say so, and the widget's chart empties the series."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    def histogram(step: int) -> event_pb2.Event:
        proto = summary_pb2.HistogramProto(
            min=0.0,
            max=1.0,
            num=4,
            sum=2.0,
            sum_squares=1.5,
            bucket_limit=[0.5, 1.0],
            bucket=[2, 2],
        )
        value = summary_pb2.Summary.Value(tag="h", histo=proto)
        return event_pb2.Event(
            step=step, wall_time=float(step), summary=summary_pb2.Summary(value=[value])
        )

    writer = EventFileWriter(str(tmp_path / "run"))
    for step in (1, 2):
        writer.add_event(histogram(step))
    writer.flush()
    feed = _polled(str(tmp_path))
    assert _held(feed)[("run", "h")][0] == [1, 2]
    feed.chart.take_update(1 << 20)  # the page holds both steps
    start = event_pb2.SessionLog(status=event_pb2.SessionLog.START)
    writer.add_event(event_pb2.Event(step=0, wall_time=3.0, session_log=start))
    writer.close()
    feed.index.run("run")  # listed again once its files grew
    deadline = time.monotonic() + 30
    while _held(feed).get(("run", "h"), ([], None))[0]:
        assert time.monotonic() < deadline, _held(feed)
        time.sleep(0.05)
        feed.poll()
    update = feed.chart.take_update(1 << 20)
    assert [(c.tag, c.rows, c.keep) for c in update.changes] == [("h", 0, 0)]
    feed.close()
