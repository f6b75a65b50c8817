"""`check`, `diagnose(path)` and `report` read a few runs at a time: the same findings and
the same report data as reading every run at once, a progress line on a terminal, and a
file gone or cut while they read costs only that file."""

from __future__ import annotations

import io
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from conftest import FIXTURE_NAMES

import histoscope as hs
from histoscope import _core
from histoscope.diagnose import diagnose_runs
from histoscope.errors import DamagedFileWarning, HistoscopeWarning
from histoscope.view import report

#: Budgets in bytes: one run at a time, two runs of the generated log directory, all.
BUDGETS = [1, 3 * 2**19, None]


class Terminal(io.StringIO):
    """A terminal as `Progress.on` sees one; ``on_write`` runs at each write, as a user's
    training might touch the files while they are read."""

    def __init__(self, on_write: Callable[[str], None] = lambda text: None) -> None:
        super().__init__()
        self.on_write = on_write

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.on_write(text)
        return super().write(text)


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six runs of about 0.6 MB each, with problems planted in some: gradients that vanish
    beside a layer's others, dead ReLUs, weights that explode then turn NaN, a loss that
    diverges; and healthy runs between them."""
    root = tmp_path_factory.mktemp("planted")
    rng = np.random.default_rng(7)
    for r in range(6):
        with hs.init("sweep", f"run{r}", logdir=root) as run:
            for step in range(40):
                for layer in range(3):
                    scale = 1e-9 if (r == 1 and layer == 0) else 1e-2
                    run.add_histogram(
                        f"gradients/{layer}.weight", rng.normal(size=4000) * scale, step=step
                    )
                    weights = rng.normal(size=4000) * (0.1 * 1.3**step if r == 3 else 0.1)
                    if r == 3 and step > 30:
                        weights[:10] = np.nan
                    run.add_histogram(f"parameters/{layer}.weight", weights, step=step, bins=200)
                acts = rng.normal(size=4000) - (6 if r == 2 else 0)
                run.add_histogram("activations/relu", np.maximum(acts, 0), step=step)
                loss = 1.0 if r != 4 else 1.0 + 0.5 * step
                run.log({"loss": loss}, step=step)
    return root / "sweep"


def findings(logdir: Path, budget: int | None) -> list[hs.Finding]:
    stream = _core.RunStream(logdir, budget_bytes=budget, diagnose=True, series=False)
    return diagnose_runs(stream).findings


def report_data(logdir: Path, budget: int | None) -> bytes:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return report._json(report._data(str(logdir), report.MAX_STEPS, report.BINS, None, budget))


def test_the_planted_problems_are_found_alike_at_any_budget(planted: Path) -> None:
    whole = findings(planted, None)
    assert {(f.run, f.kind) for f in whole if f.severity != "info"} >= {
        ("run1", "vanishing"),
        ("run2", "dead"),
        ("run3", "exploding"),
        ("run3", "nonfinite"),
    }
    for budget in BUDGETS:
        assert findings(planted, budget) == whole
    assert hs.diagnose(planted) == whole


def test_a_budget_reads_runs_in_batches_and_never_drops_one(planted: Path) -> None:
    one_at_a_time = list(_core.RunStream(planted, budget_bytes=1))
    assert [run.run for run in one_at_a_time] == [f"run{r}" for r in range(6)]
    stream = _core.RunStream(planted, budget_bytes=None)
    everything = list(stream)
    assert sum(run.bytes for run in everything) == stream.bytes > 3 * 2**20
    assert sum(run.files for run in everything) == stream.files == 6
    for a, b in zip(one_at_a_time, everything):
        assert [s.tag for s in a.series] == [s.tag for s in b.series]
        assert all(np.array_equal(x.buckets, y.buckets) for x, y in zip(a.series, b.series))
    assert all(run.series == [] for run in _core.RunStream(planted, series=False))


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_the_fixtures_give_the_same_findings_and_report_at_any_budget(
    fixtures: Path, name: str
) -> None:
    whole_findings, whole_report = (
        findings(fixtures / name, None),
        report_data(fixtures / name, None),
    )
    for budget in BUDGETS[:2]:
        assert findings(fixtures / name, budget) == whole_findings
        assert report_data(fixtures / name, budget) == whole_report


def test_the_report_is_the_same_read_once_or_twice(planted: Path) -> None:
    whole = report_data(planted, None)
    assert report_data(planted, 1) == whole
    assert report_data(planted, 3 * 2**19) == whole
    data = report._data(str(planted), report.MAX_STEPS, report.BINS, None, 1)
    assert sorted(data["cards"]) == [
        "activations/relu",
        *(f"gradients/{i}.weight" for i in range(3)),
        *(f"parameters/{i}.weight" for i in range(3)),
    ]
    card = data["cards"]["parameters/0.weight"]
    assert list(card["runs"]) == [f"run{r}" for r in range(6)]
    assert card["runs"]["run0"]["counts"].shape == (40, report.BINS)
    assert {f["run"] for f in data["findings"]} >= {"run1", "run2", "run3"}


def test_progress_is_drawn_on_a_terminal_and_nowhere_else(planted: Path, tmp_path: Path) -> None:
    terminal = Terminal()
    assert hs.diagnose(planted, progress=terminal) == hs.diagnose(planted, progress=io.StringIO())
    lines = terminal.getvalue().split("\r")[1:]
    assert lines[-1].startswith("checking [" + "#" * 30 + "] 6/6 files")
    assert lines[-1].endswith("\n")
    for pipe in (io.StringIO(), None):
        report.write_report(planted, tmp_path / "r.html", progress=pipe)
        assert pipe is None or pipe.getvalue() == ""
    terminal = Terminal()
    report.write_report(planted, tmp_path / "r.html", progress=terminal)
    drawn = terminal.getvalue()
    assert "\rreport: reading [" in drawn and "6/6 files" in drawn


def test_the_check_command_draws_no_progress_into_a_pipe(planted: Path) -> None:
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "histoscope.cli", "check", str(planted)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 1
    assert "\r" not in out.stderr and "checking [" not in out.stderr
    assert "vanishing" in out.stdout


def copy_runs(source: Path, target: Path) -> Path:
    import shutil

    return Path(shutil.copytree(source, target))


def events_file(logdir: Path, run: str) -> Path:
    (path,) = (logdir / run).glob("*tfevents*")
    return path


def after_first_run(action: Callable[[], None]) -> Terminal:
    """A terminal that does ``action`` once, when the first run has been read."""
    done = []

    def on_write(text: str) -> None:
        if " 1/6 files" in text and not done:
            done.append(True)
            action()

    return Terminal(on_write)


def test_a_file_gone_while_checking_is_named_and_the_rest_is_checked(
    planted: Path, tmp_path: Path
) -> None:
    logdir = copy_runs(planted, tmp_path / "logdir")
    gone = events_file(logdir, "run3")
    stream = _core.RunStream(logdir, budget_bytes=1, diagnose=True, series=False)
    diagnosis = diagnose_runs(stream, after_first_run(gone.unlink))
    (bad,) = [r for r in diagnosis.reports if r.has_problems]
    assert bad.path == str(gone)
    assert bad.summary == (
        f"{gone}: stopped reading: the file is gone (removed or renamed after the log "
        "directory was listed)"
    )
    runs = {f.run for f in diagnosis.findings}
    assert "run3" not in runs and {"run1", "run2"} <= runs


def test_a_file_gone_or_cut_while_reporting_costs_only_that_file(
    planted: Path, tmp_path: Path
) -> None:
    logdir = copy_runs(planted, tmp_path / "logdir")
    gone, cut = events_file(logdir, "run4"), events_file(logdir, "run5")

    def damage() -> None:
        gone.unlink()
        cut.write_bytes(cut.read_bytes()[: cut.stat().st_size // 2])

    with pytest.warns(DamagedFileWarning, match="run4"):
        page = report.build_report(logdir, progress=after_first_run(damage), budget_bytes=1)
    data = report._data(str(logdir), report.MAX_STEPS, report.BINS, None, 1)
    card = data["cards"]["activations/relu"]
    assert list(card["runs"]) == ["run0", "run1", "run2", "run3", "run5"]
    assert 0 < len(card["runs"]["run5"]["steps"]) < 40
    assert page.startswith("<!DOCTYPE html>")


def test_a_file_cut_between_the_reports_two_reads_leaves_those_counts_empty(
    planted: Path, tmp_path: Path
) -> None:
    logdir = copy_runs(planted, tmp_path / "logdir")
    cut = events_file(logdir, "run5")
    done = []

    def on_write(text: str) -> None:
        if "report: binning" in text and not done:
            done.append(True)
            cut.write_bytes(cut.read_bytes()[: cut.stat().st_size // 2])

    with pytest.warns(HistoscopeWarning, match="changed between the report's two reads"):
        data = report._data(str(logdir), report.MAX_STEPS, report.BINS, Terminal(on_write), 1)
    counts = data["cards"]["activations/relu"]["runs"]["run5"]["counts"]
    assert counts.shape == (40, report.BINS) and not counts.any()
    assert data["cards"]["activations/relu"]["runs"]["run4"]["counts"].any()


def test_the_viewers_findings_wait_longer_after_a_long_check(planted: Path) -> None:
    from histoscope.view.refreshed import FINDINGS_PAUSE_FACTOR, FINDINGS_SECONDS, Findings

    findings = Findings(str(planted))
    answer = findings.answer()
    assert answer["available"] and answer["findings"] == [f.to_dict() for f in hs.diagnose(planted)]
    made = findings._at
    assert findings._took > 0 and not findings.stale(made + FINDINGS_SECONDS / 2)
    assert findings.stale(made + FINDINGS_SECONDS + 0.1)
    findings._took = 100.0  # as a log directory of hundreds of GB would take
    assert not findings.stale(made + FINDINGS_SECONDS + 0.1)
    assert not findings.stale(made + FINDINGS_PAUSE_FACTOR * 100.0 - 1)
    assert findings.stale(made + FINDINGS_PAUSE_FACTOR * 100.0 + 1)


def test_the_viewers_findings_read_again_only_the_runs_that_changed(
    planted: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    from histoscope.view import refreshed

    logdir = tmp_path / "sweep"
    shutil.copytree(planted, logdir)
    read: list[list[str]] = []
    real = _core.RunStream

    def counting(*args: object, **options: object) -> _core.RunStream:
        if "runs" in options:  # the viewer's, not the whole diagnose's it is compared with
            read.append(list(options["runs"]))  # type: ignore[call-overload]
        return real(*args, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(refreshed._core, "RunStream", counting)
    findings = refreshed.Findings(str(logdir))

    def fresh() -> list[dict]:
        findings._at = -np.inf  # stale: as FINDINGS_SECONDS later
        return findings.answer()["findings"]

    def whole() -> list[dict]:
        return [f.to_dict() for f in hs.diagnose(logdir)]

    assert fresh() == whole() and read == [[f"run{r}" for r in range(6)]]
    assert fresh() == whole() and read[1:] == []  # nothing changed: nothing read
    # run5 was healthy; a later step turns its gradients NaN, in a file of its own
    with hs.init("sweep", "run5", logdir=tmp_path) as run:
        for step in range(40, 45):
            run.add_histogram("gradients/0.weight", np.full(100, np.nan), step=step)
    assert ("run5", "nonfinite") in {(f["run"], f["kind"]) for f in fresh()}
    assert read[1:] == [["run5"]] and fresh() == whole()
    shutil.rmtree(logdir / "run3")
    assert "run3" not in {f["run"] for f in fresh()} and read[2:] == []
    assert fresh() == whole()
