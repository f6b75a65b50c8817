"""`histoscope report`: one offline HTML file of a whole log directory, opened from file://."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import report_page
from browser import assert_accessible, write_diverged_run, write_thousand_keys
from playwright.sync_api import expect
from tensorboard.backend.event_processing import event_accumulator

import histoscope
from histoscope import _core
from histoscope.view.page import bundle
from histoscope.view.report import build_report, write_report

pytest_plugins = ["browser"]  # the browser, open_page and screenshot fixtures

MAX_BYTES = 8_000_000


def _report(logdir: Path, output: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "histoscope.cli", "report", str(logdir), "-o", str(output), *args],
        capture_output=True,
        text=True,
        timeout=600,
    )


def _embedded(page_text: str) -> dict:
    return report_page.embedded(page_text)


@pytest.fixture(scope="module")
def thousand_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("thousand")
    write_thousand_keys(root)
    output = root / "report.html"
    done = _report(root / "big", output)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"wrote {output} (")
    return output


def test_a_thousand_keys_in_two_runs_fit_in_eight_megabytes(thousand_report: Path) -> None:
    size = thousand_report.stat().st_size
    assert size <= MAX_BYTES, size
    data = _embedded(thousand_report.read_text(encoding="utf-8"))
    assert len(data["tags"]) == 1003 and data["runs"] == ["baseline", "wide"]
    assert data["layout"] == [{"pattern": "debug/*", "section": "Debugging", "hidden": True}] * 2


def test_the_report_opens_offline_with_sections_cards_keys_and_no_request(
    thousand_report: Path, open_page, screenshot
) -> None:
    page = open_page(thousand_report)  # fails at teardown on any request or page error
    expect(page.locator("#status")).to_have_text(
        "2 runs (2 shown), 1003 histogram keys", timeout=30000
    )
    headings = page.locator("details.section > summary h2").all_text_contents()
    assert headings == ["Debugging (3)", "grads (500)", "params (500)"]
    hidden = page.locator('details.section[data-section="Debugging"] details.hidden-cards')
    expect(hidden.locator("article.card").first).to_be_hidden()
    card = page.locator('article.card[data-tag="grads/layer000"]')
    card.scroll_into_view_if_needed()
    expect(card.locator("svg.panel")).to_have_count(2)
    expect(card.locator("path.ridge")).to_have_count(40)
    card.locator(".chart").focus()
    page.keyboard.press("Home")
    expect(card.locator(".announcement")).to_contain_text("baseline, step 19, ")
    page.keyboard.press("ArrowUp")  # the steps run down the figure: Up is earlier
    expect(page.locator("body")).to_have_attribute("data-step", "18")
    page.keyboard.press("b")
    expect(card.locator(".braille mark")).to_have_count(1)
    assert card.locator(".raw-button").count() == 0  # the report holds no raw buckets
    page.get_by_role("searchbox", name="Filter keys").fill("^params/layer00[0-3]$")
    page.select_option("#view", "heatmap")
    expect(page.locator("article.card:visible svg.panel.heatmap")).to_have_count(8)
    assert "view=heatmap" in page.url and "filter=" in page.url
    screenshot(page, "report_heatmap", full_page=False)
    page.get_by_text("Step range and more").click()  # the range sits behind a disclosure
    page.get_by_role("slider", name="First step of the range").focus()
    page.keyboard.press("PageUp")  # a tenth of the 20 steps, twice
    page.keyboard.press("PageUp")
    expect(page.locator("#range-live")).to_have_text("Step range 4 to 19: 16 of 20 steps")
    expect(page.locator("#range-from")).to_have_value("4")
    steps = " ".join(str(step) for step in range(4, 20))
    page.locator("article.card:visible").last.scroll_into_view_if_needed()  # all four near
    ranged = page.locator(f'article.card:visible svg.panel.heatmap[data-steps="{steps}"]')
    expect(ranged).to_have_count(8)
    assert "from=4" in page.url
    page.select_option("#view", "steps")
    expect(page.locator("article.card:visible svg.panel path.median")).to_have_count(8)
    grid = page.locator('.overview-grid[data-section="params"]')
    grid.focus()
    page.keyboard.press("ArrowDown")
    expect(page.locator("#overview-live")).to_contain_text(
        "params/layer001, step 19, standard deviation "
    )
    screenshot(page, "report_overview", full_page=False)
    assert_accessible(page)


def test_the_embedded_data_is_maidrs_thinned_steps_rebinned_with_every_count(
    fixtures: Path, tmp_path: Path
) -> None:
    output = tmp_path / "report.html"
    done = _report(fixtures / "tf2_summary", output, "--max-steps", "5")
    assert done.returncode == 0, done.stderr
    data = _embedded(output.read_text(encoding="utf-8"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = histoscope.load_histograms(fixtures / "tf2_summary")
    assert [t["tag"] for t in data["tags"]] == sorted(loaded)
    for tag, by_run in loaded.items():
        card = data["cards"][tag]
        widths = np.diff(card["edges"])
        np.testing.assert_allclose(widths, widths[0], rtol=1e-9)
        for run, series in by_run.items():
            entry = card["runs"][run]
            maidr = np.unique(np.round(np.linspace(0, len(series.steps) - 1, 5))).astype(int)
            assert entry["steps"] == series.steps[maidr].tolist() == [0, 5, 10, 14, 19]
            for step, counts in zip(entry["steps"], entry["counts"]):
                raw = series.buckets[list(series.steps).index(step)][:, 2].sum()
                assert sum(counts) == pytest.approx(raw, rel=1e-3)
            for name in ("count", "std"):  # to four significant digits
                want = series.stats[name][maidr]
                got = np.array(entry["stats"][name], dtype=float)  # null: not stored
                np.testing.assert_allclose(got, want, rtol=5e-4)


def test_bad_arguments_are_refused_with_a_clear_message(fixtures: Path, tmp_path: Path) -> None:
    done = _report(tmp_path / "missing", tmp_path / "r.html")
    assert done.returncode == 2 and "missing" in done.stderr
    done = _report(fixtures / "tf2_summary", tmp_path / "r.html", "--max-steps", "1")
    assert done.returncode == 2 and "max_steps must be" in done.stderr
    with pytest.raises(ValueError, match="bins must be"):
        build_report(fixtures / "tf2_summary", bins=0)


def test_the_modules_are_bundled_into_one_script_without_imports() -> None:
    script = bundle(["format.js", "draw.js", "report.js"])
    assert not re.search(r"^\s*(import|export) ", script, re.M)
    assert "const { formatValue, niceTicks, svgElement" in script
    assert re.search(r"return \{ [^}]*embeddedSource", script)


def test_define_metric_is_stored_beside_the_histograms_and_other_readers_pass_over_it(
    tmp_path: Path,
) -> None:
    with histoscope.init("p", run_name="r", logdir=tmp_path) as run:
        run.define_metric("grads/*", section="Gradients")
        run.add_histogram("grads/fc", np.arange(10.0), step=0)
        run.define_metric("debug/*", hidden=True)
        for wrong, match in [("", "pattern"), (3, "pattern")]:
            with pytest.raises(ValueError, match=match):
                run.define_metric(wrong)
        with pytest.raises(ValueError, match="section"):
            run.define_metric("x", section=" ")
        path = run.path
    with pytest.raises(RuntimeError, match="finished"):
        run.define_metric("late/*")
    end, found = _core.read_layout(path)
    assert end == path.stat().st_size
    assert [(d.pattern, d.section, d.hidden) for d in found] == [
        ("grads/*", "Gradients", False),
        ("debug/*", None, True),
    ]
    assert list(histoscope.load_histograms(tmp_path / "p")) == ["grads/fc"]
    accumulator = event_accumulator.EventAccumulator(str(path), size_guidance={"histograms": 0})
    accumulator.Reload()
    assert accumulator.Tags()["histograms"] == ["grads/fc"]
    shutil.rmtree(tmp_path / "p")


def test_the_report_opens_on_its_findings_linked_to_their_cards(tmp_path: Path, open_page) -> None:
    write_diverged_run(tmp_path)
    page = open_page(write_report(tmp_path / "p", tmp_path / "report.html"))
    expect(page.locator("#findings-count")).to_have_text("1 error", timeout=30000)
    worst = page.locator("#worst-keys li")
    expect(worst).to_have_text("gradients/fc error: nonfinite in r")
    worst.locator("a").click()
    card = page.locator('article.card[data-tag="gradients/fc"]')
    expect(card.locator(".chart")).to_be_focused()
    expect(page.locator("body")).to_have_attribute("data-step", "6")
    expect(card.locator(".findings")).to_have_text("\u26a0 nonfinite in r")
