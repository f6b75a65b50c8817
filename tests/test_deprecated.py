"""Each name the 1.0 vocabulary replaced still works for one release: it warns with a
`DeprecationWarning` naming the new one, and gives what the new one gives."""

from __future__ import annotations

import numpy as np
import pytest

import histoscope as hs
from histoscope import _core


def test_run_log_batch_warns_and_writes_as_the_watch_does(tmp_path):
    values = [np.arange(10.0), np.ones(3)]
    with hs.init("old", run_name="r", dir=tmp_path) as old:
        with pytest.warns(DeprecationWarning, match="Run.log_batch is deprecated; use Run.log"):
            old.log_batch(["a", "b"], _core.bin_batch(values, 4), step=2)
    with hs.init("new", run_name="r", dir=tmp_path) as new:
        new._log_batch(["a", "b"], _core.bin_batch(values, 4), step=2)
    was, now = hs.load_histograms(old.path), hs.load_histograms(new.path)
    assert sorted(was) == sorted(now) == ["a", "b"]
    for key in was:
        np.testing.assert_array_equal(was[key]["."].buckets, now[key]["."].buckets)


def test_run_hold_and_take_problem_warn_and_do_what_the_watch_does(tmp_path):
    with hs.init("old", run_name="r", dir=tmp_path, alerts="raise") as run:
        with pytest.warns(DeprecationWarning, match="Run.hold_problems is deprecated"):
            run.hold_problems()
        assert run._alerts.raise_here is False
        with pytest.warns(DeprecationWarning, match="use Run.check_alerts"):
            assert run.take_problem() is run._take_problem() is None


def test_view_show_warns_and_is_the_chart_page_hs_show_shows(monkeypatch):
    import histoscope.view
    from histoscope.view import html

    chart = hs.TensorBoardChart(
        tag="w", run="train", steps=[0], wall_times=[0.0], edges=[0.0, 1.0], counts=[[1]]
    )
    opened = []
    monkeypatch.setattr(html.webbrowser, "open", opened.append)
    with pytest.warns(
        DeprecationWarning, match="histoscope.view.show is deprecated; use histoscope.show"
    ):
        old = histoscope.view.show
    assert old is html.show_chart
    was, now = old(chart), hs.show(chart)
    assert was.read_text() == now.read_text() and len(opened) == 2
