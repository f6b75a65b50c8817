"""Read at a glance (issue 20): the demo's report on a 1400 x 900 screen, a PyTorch
tutorial's log directory with long run names and keys with no "/", and a sweep of 50 runs,
in headless Chromium."""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser import (
    PYTORCH_RUNS,
    Server,
    assert_accessible,
    each,
    opened_page,
    viewed,
    write_pytorch_style,
    write_sweep,
)
from playwright.sync_api import Browser, Page, expect

from histoscope.view.report import write_report

pytest_plugins = ["browser"]  # the browser and screenshot fixtures

SCREEN = {"width": 1400, "height": 900}

# Every pair of text boxes in `root` that overlap by more than half a pixel each way.
OVERLAPS = """(root) => {
  const boxes = [...root.querySelectorAll("text")]
    .map((t) => [t.textContent, t.getBoundingClientRect()]).filter(([, b]) => b.width > 0);
  const out = [];
  boxes.forEach(([a, p], i) => boxes.slice(i + 1).forEach(([b, q]) => {
    const x = Math.min(p.right, q.right) - Math.max(p.left, q.left);
    const y = Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top);
    if (x > 0.5 && y > 0.5) out.push(a + " / " + b);
  }));
  return out;
}"""


@contextlib.contextmanager
def offline(browser: Browser, path: Path) -> Iterator[Page]:
    """A report opened from file:// on a 1400 x 900 screen, every request refused; the test
    fails if the page reported an error."""
    context = browser.new_context(viewport=SCREEN)
    context.route(lambda url: not url.startswith("file:"), lambda route: route.abort())
    with opened_page(context, path.resolve().as_uri()) as page:
        yield page


@pytest.fixture(scope="module")
def demo_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's report, its 60 steps trained in a process of its own: PyTorch's threads
    beside Chromium's driver crashed this process at exit now and then."""
    out = tmp_path_factory.mktemp("demo")
    done = subprocess.run(
        [sys.executable, "-m", "histoscope.cli", "demo", "--out", str(out), "--steps", "60"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return out / "report.html"


def test_the_demo_report_opens_on_findings_the_overview_and_a_card(
    browser: Browser, demo_report: Path, screenshot
) -> None:
    with offline(browser, demo_report) as page:
        expect(page.locator("article.card svg.panel path.current").first).to_be_attached(
            timeout=30000
        )
        expect(page.locator("#findings-count")).not_to_have_text("Diagnosing…")
        findings = page.locator("#findings").bounding_box()
        first_card = page.locator("article.card").first
        panel = first_card.locator("svg.panel").first.bounding_box()
        assert findings["y"] + findings["height"] <= SCREEN["height"], findings
        # the first card's title and its first run's whole ridgeline, without scrolling
        assert panel["y"] + panel["height"] <= SCREEN["height"], panel
        assert first_card.bounding_box()["y"] >= findings["y"] + findings["height"]
        screenshot(page, "report_first_screen", full_page=False)
        assert_accessible(page)


def test_every_overview_row_of_the_demo_report_is_labelled(
    browser: Browser, demo_report: Path
) -> None:
    with offline(browser, demo_report) as page:
        labels = page.locator(".overview-label")
        expect(labels.first).to_be_visible(timeout=30000)
        rows = labels.evaluate_all(
            """els => els.map(e => ({shown: e.firstChild.textContent,
              heard: e.querySelector('.visually-hidden').textContent,
              height: e.getBoundingClientRect().height, title: e.title}))"""
        )
        canvases = page.locator(".overview-grid canvas").evaluate_all(
            "els => els.reduce((n, c) => n + c.height, 0)"
        )
        assert len(rows) == canvases == 17  # a label for every row drawn
        for row in rows:
            assert row["shown"].strip() and row["height"] >= 8, row
            assert row["heard"].startswith(("activations/", "gradients/", "parameters/")), row
            assert row["title"].startswith(row["heard"]), row  # the full key on hover
        assert [r["shown"] for r in rows[:5]] == [
            "0",
            "1",
            "2",
            "3",
            "4",
        ]  # relative to the section
        axis = page.locator('.overview-grid[data-section="activations"] .overview-axis text')
        ticks = [int(t) for t in axis.all_text_contents()]
        assert len(ticks) >= 3 and ticks == sorted(ticks), ticks
        assert all(t % 10 == 0 for t in ticks), ticks  # round steps


def test_ridgeline_cards_are_smooth_tall_and_have_round_step_ticks(
    browser: Browser, demo_report: Path, screenshot
) -> None:
    with offline(browser, demo_report) as page:
        card = page.locator('article.card[data-tag="activations/0"]')
        panels = card.locator("svg.panel")
        expect(panels).to_have_count(2, timeout=30000)
        for panel in panels.all():
            ticks = panel.get_attribute("data-ticks").split()
            assert len(ticks) >= 3, ticks
            assert all(int(t) % 10 == 0 for t in ticks), ticks
            # 182 of the panel's 232 units are plot: at least 160 pixels of it a run
            height = panel.bounding_box()["height"]
            assert height * 182 / 232 >= 160, height
            ridges = panel.locator("path.ridge")
            assert ridges.count() >= 10  # a ridge a step logged, up to 24
            assert "C" in ridges.first.get_attribute("d")  # curves, not steps
            # graded: the back ridge fainter than the front one
            shares = ridges.evaluate_all(
                r"els => els.map(e => Number(e.style.fill.match(/(\d+)%/)[1]))"
            )
            assert shares[0] < shares[-1] == 100, shares
        chosen = panels.first.locator("path.chosen")
        expect(chosen).to_have_count(1)
        assert panels.first.evaluate("e => getComputedStyle(e.querySelector('path.chosen')).stroke")
        page.get_by_text("Step range and more").click()
        page.get_by_label("Draw the bins as bars, not smooth densities").check()
        assert "C" not in panels.first.locator("path.ridge").first.get_attribute("d")
        assert "bars=1" in page.url
        screenshot(page, "report_ridgeline_bars", full_page=False)


@pytest.fixture(scope="module")
def pytorch_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = write_pytorch_style(tmp_path_factory.mktemp("pytorch"))
    return write_report(root, root / "report.html")


def test_long_run_names_and_dotted_keys_read_without_overlaps(
    browser: Browser, pytorch_report: Path, screenshot
) -> None:
    full = [f"lesson-19-tensorboard/runs/{name}" for name in PYTORCH_RUNS]
    with offline(browser, pytorch_report) as page:
        expect(page.locator("#status")).to_have_text(
            "5 runs (5 shown), 54 histogram keys", timeout=30000
        )
        # sections by module path, in counting order
        headings = page.locator("details.section > summary h2").all_text_contents()
        assert headings[:3] == ["bn1 (4)", "bn2 (4)", "bn3 (4)"], headings
        assert headings[-4:] == ["fc1 (4)", "fc2 (4)", "fc3 (4)", "prelu (2)"], headings
        assert len(headings) == 14
        # run names: their distinguishing part shown on one line, the full name on hover and heard
        names = page.locator("#runs .run-name")
        assert names.evaluate_all("els => els.map(e => e.title)") == full
        shown = names.evaluate_all("els => els.map(e => e.firstChild.textContent)")
        # the shared start cut, the rest elided in the middle to fit: each starts with its time
        for name, text in zip(PYTORCH_RUNS, shown):
            assert text.startswith("\u2026" + name[6:14]) and "lesson" not in text, shown
        for name in full:
            expect(page.get_by_role("checkbox", name=name, exact=True)).to_be_attached()
        lines = names.evaluate_all(
            "els => els.map(e => [e.getBoundingClientRect().height,"
            " e.scrollWidth <= e.clientWidth])"
        )
        assert all(height < 30 and fits for height, fits in lines), lines
        # the overview opens on a run with every key, not the first run, which has two
        run = page.locator("#overview-run")
        expect(run).to_have_value(full[1])
        assert run.locator("option").first.get_attribute("title") == full[0]
        # no text over other text in any drawn card
        card = page.locator('article.card[data-tag="conv1.weight"]')
        card.scroll_into_view_if_needed()
        expect(card.locator("svg.panel")).to_have_count(5)
        overlaps = each(page, "article.card.mounted svg.panel", OVERLAPS)
        assert len(overlaps) >= 5 and all(found == [] for found in overlaps), overlaps
        titles = card.locator("svg.panel .panel-title").all_text_contents()
        assert all(len(t) < 40 for t in titles), titles
        screenshot(page, "pytorch_names", full_page=False)
        assert_accessible(page)


@pytest.fixture(scope="module")
def sweep_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    logdir = write_sweep(tmp_path_factory.mktemp("sweep"))
    with Server(logdir) as running:
        yield running


def test_a_sweep_of_fifty_runs_filters_colours_and_overlays(
    browser: Browser, sweep_server: Server, screenshot
) -> None:
    with viewed(browser, sweep_server.address) as page:
        status = page.locator("#status")
        expect(status).to_contain_text("50 runs (10 shown), 100 histogram keys", timeout=30000)
        # ten distinct colours for the ten runs shown, and their legend
        legend = page.locator("#run-legend li")
        expect(legend).to_have_count(10)
        colours = legend.locator(".swatch").evaluate_all(
            "els => els.map(e => getComputedStyle(e).backgroundColor)"
        )
        assert len(set(colours)) == 10, colours
        # the run filter: a regular expression, as in TensorBoard
        runs = page.locator("#runs input").evaluate_all("els => els.map(e => e.dataset.run)")
        matching = [run for run in runs if re.search("seed[01]$", run)]
        both = [run for run in runs[:10] if run in matching]
        page.get_by_role("searchbox", name="Filter runs").fill("seed[01]$")
        expect(page.locator("#runs li")).to_have_count(20)
        expect(page.locator("#runs-note")).to_have_text(f"20 of 50 runs match; {len(both)} shown")
        page.get_by_role("button", name="Show all").click()
        expect(status).to_contain_text("50 runs (20 shown)", timeout=30000)
        assert "runfilter=seed%5B01%5D%24" in page.url
        page.select_option("#view", "overlay")
        card = page.locator("article.card").first
        lines = card.locator("svg.panel path.overlay-run")
        expect(lines).to_have_count(8, timeout=30000)  # at most eight runs overlaid
        expect(card.locator(".legend li")).to_have_count(8)
        expect(card).to_contain_text("The first 8 of 20 shown runs are overlaid")
        dashes = each(
            page,
            "svg.panel path.overlay-run",
            "e => getComputedStyle(e).strokeDasharray",
            within="article.card",
        )
        assert len(set(dashes)) == 8, dashes  # told apart by more than colour
        elements = page.evaluate("document.getElementsByTagName('*').length")
        assert elements <= 10_000, elements
        screenshot(page, "sweep_overlay", full_page=False)
        assert_accessible(page)
        page.select_option("#view", "ridgeline")
        expect(card.locator("svg.panel")).to_have_count(20, timeout=30000)
        colours = each(
            page, "svg.panel rect.swatch", "e => getComputedStyle(e).fill", within="article.card"
        )
        assert len(set(colours[:10])) == 10 and colours[10:] == colours[:10], colours
        assert page.evaluate("document.getElementsByTagName('*').length") <= 10_000


def test_keys_past_sixty_rows_are_grouped_by_module_path(browser: Browser, tmp_path: Path) -> None:
    import numpy as np

    import histoscope

    rng = np.random.default_rng(1)
    with histoscope.init("t", run_name="r", logdir=tmp_path) as run:
        for step in range(3):
            for layer in range(25):
                for part in ("q", "k", "v", "o", "ff1", "ff2", "ln1", "ln2"):
                    for kind in ("weight", "bias"):
                        values = rng.normal(size=64) * (1 + layer)
                        name = f"encoder/layers.{layer}.{part}.{kind}"
                        run.add_histogram(name, values, step=step, bins=8)
    report = write_report(tmp_path / "t", tmp_path / "report.html")
    with offline(browser, report) as page:
        grid = page.locator('.overview-grid[data-section="encoder"]')
        labels = grid.locator(".overview-label")
        expect(labels).to_have_count(25, timeout=30000)  # 400 keys: a group per layer
        titles = labels.evaluate_all("els => els.map(e => e.title)")
        assert titles[:3] == [f"layers.{i} (16 keys)" for i in range(3)], titles
        assert titles[-1] == "layers.24 (16 keys)"  # in counting order
        grid.focus()
        live = page.locator("#overview-live")
        expect(live).to_have_text(re.compile(r"^Group layers\.0, 16 keys, closed, step 2, "))
        page.keyboard.press("Enter")
        expect(labels).to_have_count(25 + 16)
        page.keyboard.press("ArrowDown")
        expect(live).to_contain_text("encoder/layers.0.ff1.bias, step 2, standard deviation")
        assert_accessible(page)
