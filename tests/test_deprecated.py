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
