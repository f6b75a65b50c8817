"""The viewer's one cache of decoded histograms: capped in bytes across runs, answers equal
to an unbounded cache's, files gone or cut since indexing said per run, and ``--cache-mb``."""

from __future__ import annotations

import io
import json
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
from browser import Server, viewed
from conftest import FIXTURE_NAMES
from playwright.sync_api import Browser, expect

import histoscope
from histoscope import cli
from histoscope.view import answers, follow, site
from histoscope.view.follow import LogdirIndex

pytest_plugins = ["browser"]  # the browser fixture

FIXTURES = [name for name in FIXTURE_NAMES if name != "scalars_only"]
SMALL = 1 << 20
UNBOUNDED = 1 << 40


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(scope="module")
def many_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Five runs of six keys of 512 buckets at 40 steps: about 15 MB decoded."""
    logdir = tmp_path_factory.mktemp("many_runs")
    rng = np.random.default_rng(7)
    for number in range(5):
        with histoscope.init("sweep", run_name=f"lr{number}", logdir=logdir) as run:
            for step in range(40):
                for key in range(6):
                    values = rng.normal(number, 1 + step / 40, size=2000)
                    run.add_histogram(f"layer{key}/weights", values, step=step, bins=512)
    return logdir / "sweep"


def _read_all(index: LogdirIndex) -> list[str]:
    """Every run of ``index`` read to its end; their names."""
    names = index.runs()
    for name in names:
        run = index.run(name)
        assert run is not None
        while not run.caught_up:
            run.read(index.files(name), 10.0)
    return names


def _cards(index: LogdirIndex, names: list[str]) -> list[bytes]:
    """Every key's card of every run, as the ridgeline and the heatmap ask, and its
    buckets as logged at a middle step; the cache's cap checked after each."""
    out = []
    keys = answers.tags(index, _NoLayouts(), answers.Query(_runs(names)))
    middle = int(np.median(keys["steps"])) if len(keys["steps"]) else 0
    for entry in keys["tags"]:
        tag = f"tag={entry['tag']}&{_runs(names)}"
        for extra in ("&steps=24", "", f"&step={middle}&from={middle // 2}"):
            out.append(answers.encode(answers.card(index, answers.Query(tag + extra))))
            assert index.cache.used_bytes <= index.cache.cap_bytes
        out.append(answers.encode(answers.buckets(index, answers.Query(f"{tag}&step={middle}"))))
    return out


class _NoLayouts:
    def declared(self, runs: list[str]) -> list[dict]:
        return []


def _runs(names: list[str]) -> str:
    return "&".join(f"run={name}" for name in names)


def _equal_under_a_small_cap(logdir: Path, monkeypatch: pytest.MonkeyPatch) -> LogdirIndex:
    monkeypatch.setattr(follow, "SEGMENT_BYTES", 64 << 10)  # many segments to evict
    small = LogdirIndex(str(logdir), cache_bytes=SMALL)
    unbounded = LogdirIndex(str(logdir), cache_bytes=UNBOUNDED)
    names = _read_all(small)
    assert _read_all(unbounded) == names
    want = _cards(unbounded, names)
    assert _cards(small, names) == want
    assert _cards(small, names) == want  # again, from what the small cache kept
    return small


@pytest.mark.parametrize("name", FIXTURES)
def test_every_card_under_a_small_cap_equals_the_unbounded_cache(
    fixtures: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _equal_under_a_small_cap(fixtures / name, monkeypatch)


def test_many_runs_share_one_cap_and_answer_as_without_it(
    many_runs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small = _equal_under_a_small_cap(many_runs, monkeypatch)
    # The runs read far more than the cap: it was the cap that bounded the cache.
    assert small.cache.used_bytes > SMALL // 2
    runs = [small.run(name) for name in small.runs()]
    read = sum(sum(run.offsets.values()) for run in runs if run is not None)
    assert read > 8 * SMALL


def _gone_or_cut(logdir: Path, change: str) -> tuple[dict, dict, str]:
    # Nothing kept, every card reads again; no listing again, as between two listings.
    index = LogdirIndex(str(logdir), cache_bytes=1, refresh_seconds=1e9)
    names = _read_all(index)
    victim = Path(index.files(names[0])[0])
    if change == "removed":
        victim.unlink()
    else:
        victim.write_bytes(victim.read_bytes()[: victim.stat().st_size // 2])
    tag = sorted(index.run(names[0]).series)[0]  # type: ignore[union-attr]
    query = answers.Query(f"tag={tag}&{_runs(names)}&step=1000000")
    card = json.loads(answers.encode(answers.card(index, query)))
    found = json.loads(answers.encode(answers.buckets(index, query)))
    return card, found, names[0]


@pytest.mark.parametrize(
    ("change", "said"),
    [("removed", "is gone since it was indexed"), ("cut", "was cut since it was indexed")],
)
def test_a_file_removed_or_cut_after_indexing_is_said_for_its_run_and_the_rest_served(
    many_runs: Path, tmp_path: Path, change: str, said: str
) -> None:
    logdir = tmp_path / "logs"
    shutil.copytree(many_runs, logdir)
    card, found, victim = _gone_or_cut(logdir, change)
    [error] = card["errors"]
    assert error["run"] == victim
    assert said in error["error"] and "events.out.tfevents" in error["error"]
    assert [entry["run"] for entry in card["runs"]] == [f"lr{n}" for n in range(1, 5)]
    assert all(len(entry["counts"]) > 0 for entry in card["runs"])
    by_run = {entry["run"]: entry for entry in found["runs"]}
    assert said in by_run[victim]["error"]
    assert len(by_run["lr1"]["current"]["buckets"]) > 0


def _write_split_run(root: Path) -> Path:
    """Runs ``a``, its steps in two events files, and ``b``, each about 1 MB a file."""
    rng = np.random.default_rng(3)
    for run_name, folder, steps in [("a", "logs", range(20)), ("a", "later", range(20, 40))]:
        with histoscope.init(folder, run_name=run_name, logdir=root) as run:
            for step in steps:
                for key in range(3):
                    run.add_histogram(f"k{key}", rng.normal(size=3000), step=step, bins=512)
    with histoscope.init("logs", run_name="b", logdir=root) as run:
        for step in range(40):
            run.add_histogram("k0", rng.normal(size=3000), step=step, bins=512)
    [later] = (root / "later" / "a").glob("*tfevents*")
    later.rename(root / "logs" / "a" / "events.out.tfevents.9999999999.later")
    return root / "logs"


def test_a_card_names_the_run_whose_file_was_removed_and_draws_the_others(
    browser: Browser, tmp_path: Path
) -> None:
    logdir = _write_split_run(tmp_path)
    # A cache too small for the runs to be primed into it: cards read the files.
    with Server(logdir, "--cache-mb", "1") as server:
        tags = "api/tags?run=a&run=b"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with server.open(tags) as answer:
                if not json.load(answer)["reading"]:
                    break
            time.sleep(0.1)
        first = min((logdir / "a").glob("*tfevents*"))
        first.unlink()
        with viewed(browser, server.address) as page:
            card = page.locator('article.card[data-tag="k0"]')
            said = card.locator(".read-error")
            expect(said).to_have_count(1, timeout=15000)
            expect(said).to_contain_text(f"Run a is not drawn: the events file {first}")
            expect(said).to_contain_text("is gone since it was indexed")
            expect(card.locator("svg.panel")).to_have_count(1)


def test_the_first_read_draws_its_progress_on_a_terminal_only(fixtures: Path) -> None:
    terminal, pipe = Terminal(), io.StringIO()
    for stream in (terminal, pipe):
        site.Site(str(fixtures / "nested"), progress=stream)
    deadline = time.monotonic() + 30
    while not terminal.getvalue().endswith("\n") and time.monotonic() < deadline:
        time.sleep(0.05)
    last = terminal.getvalue().rstrip("\n").split("\r")[-1]
    files = len(list((fixtures / "nested").rglob("*tfevents*")))
    assert last.startswith(f"reading [{'#' * 30}] {files}/{files} files")
    assert "MB/s" in last
    assert pipe.getvalue() == ""


@pytest.mark.parametrize("text", ["0", "-5", "abc", "1.5", ""])
def test_cache_mb_must_be_a_whole_number_of_megabytes(
    text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["view", "logs", "--cache-mb", text])
    assert exited.value.code == 2
    said = f"argument --cache-mb: must be a whole number of megabytes, at least 1, got {text!r}"
    assert said in capsys.readouterr().err


def test_cache_mb_is_read_in_megabytes_with_512_by_default() -> None:
    parser = cli._parser()
    assert parser.parse_args(["view", "logs", "--cache-mb", "64"]).cache_mb == 64
    assert parser.parse_args(["view", "logs"]).cache_mb == 512
    assert LogdirIndex("logs").cache.cap_bytes == 512 << 20


def test_runs_the_page_does_not_show_at_first_are_indexed_after_those_it_does(
    tmp_path: Path,
) -> None:
    shown = site.FIRST_SHOWN
    for r in range(shown + 3):
        with histoscope.init("p", run_name=f"run{r:02d}", logdir=tmp_path) as run:
            for step in range(5):
                run.add_histogram("w", np.random.default_rng(step).normal(size=200), step=step)
    served = site.Site(str(tmp_path / "p"), refresh_seconds=3600.0)
    served.indexing.join(timeout=120)
    assert not served.indexing.is_alive()
    names = served.index.runs()
    assert len(names) == shown + 3
    for name in names:
        run = served.index.started(name)
        assert run is not None and run.caught_up, name
        assert run.series["w"].view.steps.tolist() == [0, 1, 2, 3, 4]
