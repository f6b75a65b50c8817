"""Each name the 1.0 vocabulary replaced still works for one release: it warns with a
`DeprecationWarning` naming the new one, and gives what the new one gives."""

from __future__ import annotations

import numpy as np
import pytest

import histoscope as hs
from histoscope import _core


def test_run_log_batch_warns_and_writes_as_the_watch_does(tmp_path):
    values = [np.arange(10.0), np.ones(3)]
    with hs.init("old", run_name="r", logdir=tmp_path) as old:
        with pytest.warns(DeprecationWarning, match="Run.log_batch is deprecated; use Run.log"):
            old.log_batch(["a", "b"], _core.bin_batch(values, 4), step=2)
    with hs.init("new", run_name="r", logdir=tmp_path) as new:
        new._log_batch(["a", "b"], _core.bin_batch(values, 4), step=2)
    was, now = hs.load_histograms(old.path), hs.load_histograms(new.path)
    assert sorted(was) == sorted(now) == ["a", "b"]
    for key in was:
        np.testing.assert_array_equal(was[key]["."].buckets, now[key]["."].buckets)


def test_run_hold_and_take_problem_warn_and_do_what_the_watch_does(tmp_path):
    with hs.init("old", run_name="r", logdir=tmp_path, alerts="raise") as run:
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


def test_alert_is_finding_and_warns():
    with pytest.warns(
        DeprecationWarning, match="histoscope.Alert is deprecated; use histoscope.Finding"
    ):
        assert hs.Alert is hs.Finding
    assert "Alert" not in hs.__all__


def _alerted(tmp_path, alerts):
    with hs.init("a", run_name="r", logdir=tmp_path, alerts=alerts) as run:
        for step in range(3):
            run.add_histogram(
                "gradients/w", np.full(10, np.nan) if step else np.ones(10), step=step
            )
        run.flush()
        run.check_alerts()


def test_an_alert_is_a_finding_with_its_step_and_finding_warns(tmp_path):
    seen: list[hs.Finding] = []
    _alerted(tmp_path, seen.append)
    alert = seen[0]
    assert isinstance(alert, hs.Finding) and (alert.kind, alert.step) == ("nonfinite", 1)
    assert alert.describe().startswith("histoscope alert at step 1: nonfinite (error)")
    with pytest.warns(
        DeprecationWarning, match="Alert.finding is deprecated; use the alert itself"
    ):
        assert alert.finding is alert


def test_warning_and_exception_carry_the_finding_and_alert_warns(tmp_path):
    with pytest.warns(hs.HistoscopeAlert) as caught:
        _alerted(tmp_path / "w", "warn")
    warning = next(w.message for w in caught if isinstance(w.message, hs.HistoscopeAlert))
    assert isinstance(warning.finding, hs.Finding)
    with pytest.warns(
        DeprecationWarning, match="HistoscopeAlert.alert is deprecated; use HistoscopeAlert.finding"
    ):
        assert warning.alert is warning.finding
    with pytest.raises(hs.TrainingProblem) as raised:
        _alerted(tmp_path / "r", "raise")
    with pytest.warns(
        DeprecationWarning, match="TrainingProblem.alert is deprecated; use TrainingProblem.finding"
    ):
        assert raised.value.alert is raised.value.finding


def test_the_old_alert_keyword_of_the_problem_classes_warns():
    finding = hs.Finding("dead", "r", "k", 0, 1, "warning", {}, "m", step=1)
    with pytest.warns(DeprecationWarning, match="keyword 'alert' of __init__"):
        old = hs.TrainingProblem("m", alert=finding)
    assert old.finding is hs.TrainingProblem("m", finding).finding is finding


def test_init_dir_warns_and_is_logdir(tmp_path):
    with pytest.warns(
        DeprecationWarning, match="keyword 'dir' of init\\(\\) is deprecated; use 'logdir'"
    ):
        old = hs.init("p", run_name="old", dir=tmp_path)
    old.finish()
    new = hs.init("p", run_name="new", logdir=tmp_path)
    new.finish()
    assert old.dir.parent == new.dir.parent == tmp_path / "p"
    with pytest.raises(TypeError, match="got both 'logdir' and its old name 'dir'"):
        hs.init("p", dir=tmp_path, logdir=tmp_path)


def test_dask_paths_warns_and_is_logdir(tmp_path):
    pytest.importorskip("dask.dataframe")
    import histoscope.dask

    with hs.init("p", run_name="r", logdir=tmp_path) as run:
        run.add_histogram("w", np.arange(10.0), step=0)
    with pytest.warns(DeprecationWarning, match="keyword 'paths' of load_histograms\\(\\)"):
        old = histoscope.dask.load_histograms(paths=str(tmp_path)).compute()
    new = histoscope.dask.load_histograms(logdir=str(tmp_path)).compute()
    assert old.equals(new) and len(new) > 0


def test_one_default_for_bins():
    from histoscope.write.options import DEFAULT_BINS

    assert hs.Histogram(np.arange(100.0)).counts.shape == (DEFAULT_BINS,)


def test_tags_of_load_histograms_warns_and_is_keys(tmp_path):
    with hs.init("p", run_name="r", logdir=tmp_path) as run:
        run.add_histogram("w", np.arange(10.0), step=0)
        run.add_histogram("b", np.ones(4), step=0)
    with pytest.warns(DeprecationWarning, match="keyword 'tags' of load_histograms\\(\\)"):
        old = hs.load_histograms(run.path, tags=["w"])
    new = hs.load_histograms(run.path, keys=["w"])
    assert list(old) == list(new) == ["w"]
    np.testing.assert_array_equal(old["w"]["."].flat_buckets, new["w"]["."].flat_buckets)
    with pytest.raises(TypeError, match="got both 'keys' and its old name 'tags'"):
        hs.load_histograms(run.path, keys=["w"], tags=["w"])


def test_dask_tags_warns_and_is_keys(tmp_path):
    pytest.importorskip("dask.dataframe")
    import histoscope.dask

    with hs.init("p", run_name="r", logdir=tmp_path) as run:
        run.add_histogram("w", np.arange(10.0), step=0)
        run.add_histogram("b", np.ones(4), step=0)
    with pytest.warns(DeprecationWarning, match="keyword 'tags' of load_histograms\\(\\)"):
        old = histoscope.dask.load_histograms(str(tmp_path), tags=["w"]).compute()
    new = histoscope.dask.load_histograms(str(tmp_path), keys=["w"]).compute()
    assert old.equals(new) and set(new["tag"]) == {"w"}


def test_a_series_tag_warns_and_is_its_key():
    made = {"steps": [0], "wall_times": [0.0], "flat_buckets": [[0, 1, 2]], "offsets": [0, 1]}
    with pytest.warns(DeprecationWarning, match="keyword 'tag' of HistogramSeries\\(\\)"):
        old = hs.HistogramSeries("r", tag="w", **made)
    new = hs.HistogramSeries("r", "w", **made)
    with pytest.warns(
        DeprecationWarning, match="HistogramSeries.tag is deprecated; use HistogramSeries.key"
    ):
        assert old.tag == new.key == "w"
    assert repr(new).startswith("HistogramSeries(key='w'")
    with pytest.raises(TypeError, match="got both 'key' and its old name 'tag'"):
        hs.HistogramSeries("r", "w", tag="w", **made)
    with pytest.raises(TypeError, match="needs the series' key"):
        hs.HistogramSeries("r", **made)


def test_watch_step_warns_and_is_step_fn(tmp_path):
    torch = pytest.importorskip("torch")

    def trained(**numbering):
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 2)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        counter = {"step": 100}
        with hs.init("p", run_name=str(len(list(tmp_path.glob("p/*")))), logdir=tmp_path) as run:
            run.watch(model, every=1, **{k: lambda: counter["step"] for k in numbering})
            for _ in range(3):
                model(torch.randn(8, 4)).sum().backward()
                optimizer.step()
                optimizer.zero_grad()
                counter["step"] += 10
        return hs.load_histograms(run.path)

    with pytest.warns(DeprecationWarning, match="keyword 'step' of watch\\(\\) is deprecated"):
        old = trained(step=True)
    new = trained(step_fn=True)
    assert sorted(old) == sorted(new) and len(new) > 0
    for key in new:
        assert old[key]["."].steps.tolist() == new[key]["."].steps.tolist() == [100, 110, 120]
    from histoscope.write.options import WatchOptions

    with pytest.raises(TypeError, match="got both 'step_fn' and its old name 'step'"):
        WatchOptions(step=lambda: 0, step_fn=lambda: 0)
