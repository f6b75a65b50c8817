"""The accessible chart page: what render() writes, and what a keyboard, screen-reader,
sound or braille user meets in real headless Chromium."""

from __future__ import annotations

import html
import re
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from browser import assert_accessible
from playwright.sync_api import Page, expect

from histoscope.read.chart import TensorBoardChart
from histoscope.view.html import _notebook_html, _value_labels, render, save_html, show_chart

pytest_plugins = ["browser"]  # the browser, open_page and screenshot fixtures


def small_chart(tag: str = "layer/weights", run: str = "train") -> TensorBoardChart:
    """Three steps of four bins, small enough to write every announcement out."""
    return TensorBoardChart(
        tag=tag,
        run=run,
        steps=[0, 50, 100],
        wall_times=[1.0, 2.0, 3.0],
        edges=[-1.0, -0.5, 0.0, 0.5, 1.0],
        counts=[[1, 2, 3, 4], [0, 5, 5, 0], [1234, 0, 0, 1]],
    )


def drifting_chart(steps: int, bins: int = 30) -> TensorBoardChart:
    """Normal samples whose centre and spread grow with the step, like trained weights."""
    rng = np.random.default_rng(7)
    edges = np.linspace(-0.6, 1.2, bins + 1)
    counts = [
        np.histogram(rng.normal(0.5 * i / steps, 0.1 + 0.1 * i / steps, 4096), edges)[0]
        for i in range(steps)
    ]
    return TensorBoardChart(
        tag="dense/kernel",
        run="train",
        steps=np.arange(steps) * 100,
        wall_times=np.arange(steps, dtype=float),
        edges=edges,
        counts=counts,
    )


# --- render() on its own --------------------------------------------------------------


def test_page_is_one_document_with_the_title_escaped():
    page = render(small_chart(tag="<b>w</b>", run="a&b"))
    assert page.startswith('<!DOCTYPE html>\n<html lang="en">')
    assert "<title>&lt;b&gt;w&lt;/b&gt; (a&amp;b)</title>" in page
    assert "<h1>&lt;b&gt;w&lt;/b&gt; (a&amp;b)</h1>" in page
    assert "<b>w</b>" not in page


def test_data_cannot_close_the_script_block():
    page = render(small_chart(tag="</script><script>alert(1)</script>"))
    assert page.count("</script>") == 2  # the data block's and the code's own


def test_page_refers_to_nothing_outside_itself():
    page = render(drifting_chart(51))
    assert not re.search(r"https?:|//[a-z]|\bsrc=|\bhref=|@import|url\(", page)


def test_value_labels_tell_neighbouring_edges_apart():
    assert _value_labels(np.array([-1.0, -0.5, 0.0, 0.5, 1.0])) == ["-1", "-0.5", "0", "0.5", "1"]
    assert _value_labels(np.array([-0.031, -0.029, -0.027])) == ["-0.031", "-0.029", "-0.027"]
    assert _value_labels(np.array([0.0, 1e30, 2e30])) == ["0", "1e+30", "2e+30"]
    assert _value_labels(np.array([1e-30, 2e-30])) == ["1e-30", "2e-30"]
    assert _value_labels(np.array([np.nan, np.nan])) == ["nan", "nan"]


def test_description_says_how_centre_and_spread_move():
    page = render(small_chart())
    assert (
        '<p id="description">3 steps shown, from step 0 to step 100. Values span -1 to 1 in 4'
        " equal bins. Steps count from 10 to 1,235 values. From step 0 to step 100, the centre"
        " moves from 0.25 to -0.75 and the spread shrinks from 0.5 to 0.043. The highest count,"
        " 1,234, is at step 100, -1 to -0.5.</p>"
    ) in page
    assert "the spread grows from 0.1" in render(drifting_chart(51))


def test_table_holds_every_count_with_headers():
    page = render(small_chart())
    assert page.count("<td>") == 3 * 4 + 3
    assert (
        '<tr><th scope="col">Step</th><th scope="col">-1 to -0.5</th>'
        '<th scope="col">-0.5 to 0</th><th scope="col">0 to 0.5</th>'
        '<th scope="col">0.5 to 1</th><th scope="col">Total</th></tr>'
    ) in page
    assert (
        '<tr><th scope="row">100</th><td>1,234</td><td>0</td><td>0</td><td>1</td>'
        "<td>1,235</td></tr>"
    ) in page


def test_fractional_counts_keep_two_decimals():
    chart = TensorBoardChart(
        tag="t", run="r", steps=[1], wall_times=[0.0], edges=[0, 1, 2], counts=[[1.005, 2.5]]
    )
    assert '<th scope="row">1</th><td>1</td><td>2.5</td><td>3.5</td>' in render(chart)


@pytest.mark.parametrize(("steps", "limit"), [(51, 200_000), (1000, 2_000_000)])
def test_page_stays_light(steps, limit):
    assert len(render(drifting_chart(steps)).encode("utf-8")) < limit


def test_render_rejects_what_it_cannot_draw():
    with pytest.raises(TypeError, match="chart must be a TensorBoardChart, got dict"):
        render({})
    bad = TensorBoardChart(
        tag="t", run="r", steps=[0], wall_times=[0.0], edges=[0, 1], counts=[[np.nan]]
    )
    with pytest.raises(ValueError, match="chart.counts must be finite"):
        render(bad)


def test_save_html_writes_the_page(tmp_path):
    chart = small_chart()
    path = save_html(chart, tmp_path / "chart.html")
    assert path == tmp_path / "chart.html"
    assert path.read_text(encoding="utf-8") == render(chart)


def test_jupyter_shows_the_page_in_an_iframe():
    chart = small_chart()
    shown = chart._repr_html_()
    assert shown == _notebook_html(chart)
    match = re.fullmatch(r'<iframe title="([^"]*)" srcdoc="([^"]*)" style="[^"]*"></iframe>', shown)
    assert match, shown[:200]
    assert match.group(1) == "layer/weights (train)"
    assert html.unescape(match.group(2)) == render(chart)


def test_show_outside_a_kernel_opens_the_saved_page(monkeypatch):
    opened = []
    monkeypatch.setattr("webbrowser.open", opened.append)
    chart = small_chart()
    path = show_chart(chart)
    assert opened == [path.as_uri()]
    assert path.name == "layer_weights_train.html"
    assert path.read_text(encoding="utf-8") == render(chart)


def test_show_in_a_kernel_displays_inline(monkeypatch):
    displayed = []
    display = types.ModuleType("IPython.display")
    display.HTML = lambda data: ("HTML", data)
    display.display = displayed.append
    ipython = types.ModuleType("IPython")
    ipython.get_ipython = lambda: types.SimpleNamespace(kernel=object())
    ipython.display = display
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    monkeypatch.setitem(sys.modules, "IPython.display", display)
    chart = small_chart()
    assert show_chart(chart) is None
    assert displayed == [("HTML", _notebook_html(chart))]


# --- the page in Chromium ---------------------------------------------------------------


def expected_point(chart: TensorBoardChart, step: int, bin_: int) -> str:
    labels = _value_labels(chart.edges)
    counts = np.round(chart.counts, 2)
    count, total = counts[step, bin_], counts[step].sum()
    share = np.floor(1000 * count / total + 0.5) / 10 if total else 0.0
    count_text = f"{count:,.2f}".rstrip("0").rstrip(".")
    return (
        f"Step {chart.steps[step]}, {labels[bin_]} to {labels[bin_ + 1]},"
        f" count {count_text}, {share:.1f}% of the step"
    )


def open_chart(open_page, tmp_path: Path, chart: TensorBoardChart) -> Page:
    page = open_page(save_html(chart, tmp_path / "chart.html"))
    page.keyboard.press("Tab")
    expect(page.locator("#chart")).to_be_focused()
    return page


def assert_at(page: Page, step: int, bin_: int) -> None:
    cursor = page.locator("#cursor")
    expect(cursor).to_have_attribute("data-step", str(step))
    expect(cursor).to_have_attribute("data-bin", str(bin_))
    expect(page.locator("#cursor-ridge")).to_have_attribute("data-step", str(step))


# The steps run down the figure, the earliest at the top: Down moves to a later step.
KEY_WALK = [
    ("ArrowRight", "Step 0, -0.5 to 0, count 2, 20.0% of the step", 0, 1),
    ("ArrowLeft", "Step 0, -1 to -0.5, count 1, 10.0% of the step", 0, 0),
    ("ArrowLeft", "First bin", 0, 0),
    ("ArrowUp", "First step", 0, 0),
    ("ArrowDown", "Step 50, -1 to -0.5, count 0, 0.0% of the step", 50, 0),
    ("End", "Step 50, 0.5 to 1, count 0, 0.0% of the step", 50, 3),
    ("ArrowRight", "Last bin", 50, 3),
    ("ArrowLeft", "Step 50, 0 to 0.5, count 5, 50.0% of the step", 50, 2),
    ("PageDown", "Step 100, 0 to 0.5, count 0, 0.0% of the step", 100, 2),
    ("ArrowDown", "Last step", 100, 2),
    ("Home", "Step 100, -1 to -0.5, count 1,234, 99.9% of the step", 100, 0),
    ("End", "Step 100, 0.5 to 1, count 1, 0.1% of the step", 100, 3),
    ("PageUp", "Step 0, 0.5 to 1, count 4, 40.0% of the step", 0, 3),
    ("ArrowUp", "First step", 0, 3),
]


def test_tab_reaches_the_chart_and_shows_a_focus_ring(open_page, tmp_path):
    page = open_chart(open_page, tmp_path, small_chart())
    ring = page.locator("#chart").evaluate(
        "e => { const s = getComputedStyle(e); return [s.outlineStyle, s.outlineWidth]; }"
    )
    assert ring == ["solid", "3px"]
    expect(page.locator("#announcement")).to_have_text("")
    assert_at(page, 0, 0)
    expect(page.locator("#cursor")).not_to_have_attribute("display", "none")


def test_every_key_is_announced_and_highlighted(open_page, tmp_path, screenshot):
    page = open_chart(open_page, tmp_path, small_chart())
    live = page.locator("#announcement")
    expect(live).to_have_attribute("aria-live", "polite")
    for key, spoken, step, bin_ in KEY_WALK:
        page.keyboard.press(key)
        expect(live).to_have_text(spoken)
        assert_at(page, step, bin_)
    screenshot(page, "small_chart_keyboard")


def test_cursor_sits_on_the_ridge_of_its_point(open_page, tmp_path):
    page = open_chart(open_page, tmp_path, small_chart())
    page.keyboard.press("PageDown")  # step 100, bin 0: the chart's highest count
    dot = page.locator("#cursor-dot")
    # 84 px left margin, 4 bins over 692 px; the latest step's baseline at the plot's
    # bottom, 460 px, and the highest count rises a ridge's full 0.3 of the 444 px plot.
    assert float(dot.get_attribute("cx")) == pytest.approx(84 + 0.5 * 173, abs=0.05)
    assert float(dot.get_attribute("cy")) == pytest.approx(460 - 0.3 * 444, abs=0.05)
    ridge = page.locator("#ridges path.ridge").last  # the latest step, in front, is drawn last
    cursor_ridge = page.locator("#cursor-ridge")
    expect(cursor_ridge).to_have_attribute("d", ridge.get_attribute("d"))
    expect(cursor_ridge).to_have_attribute("transform", ridge.get_attribute("transform"))


def test_one_path_per_step(open_page, tmp_path):
    # The ridgeline is drawn in the browser (assets/ridgeline.js), as the viewer's is.
    page = open_chart(open_page, tmp_path, drifting_chart(51))
    expect(page.locator("#ridges path.ridge")).to_have_count(51)


def test_a_repeated_edge_is_spoken_again(open_page, tmp_path):
    page = open_chart(open_page, tmp_path, small_chart())
    page.evaluate(
        """() => {
        window.__spoken = [];
        const live = document.getElementById("announcement");
        new MutationObserver(() => window.__spoken.push(live.textContent))
            .observe(live, { childList: true, characterData: true, subtree: true });
    }"""
    )
    page.keyboard.press("ArrowLeft")
    expect(page.locator("#announcement")).to_have_text("First bin")
    page.keyboard.press("ArrowLeft")
    page.wait_for_function("window.__spoken.length >= 3")
    assert page.evaluate("window.__spoken") == ["First bin", "", "First bin"]


def test_text_mode_silences_moves(open_page, tmp_path):
    page = open_chart(open_page, tmp_path, small_chart())
    live = page.locator("#announcement")
    page.keyboard.press("t")
    expect(live).to_have_text("Text off")
    page.keyboard.press("ArrowRight")
    assert_at(page, 0, 1)
    expect(live).to_have_text("Text off")
    page.keyboard.press("T")
    expect(live).to_have_text("Text on")
    page.keyboard.press("ArrowRight")
    expect(live).to_have_text("Step 0, 0 to 0.5, count 3, 30.0% of the step")


def test_braille_line_follows_the_cursor(open_page, tmp_path, screenshot):
    page = open_chart(open_page, tmp_path, small_chart())
    box, cells, mark = (
        page.locator("#braille-box"),
        page.locator("#braille"),
        page.locator("#braille-cursor"),
    )
    expect(box).to_be_hidden()
    page.keyboard.press("b")
    expect(page.locator("#announcement")).to_have_text("Braille on")
    expect(box).to_be_visible()
    expect(page.locator("#braille-label")).to_have_text("Braille, step 0:")
    expect(cells).to_have_text("\u28c0\u28e4\u28f6\u28ff")  # counts 1, 2, 3, 4
    expect(mark).to_have_text("\u28c0")
    page.keyboard.press("ArrowDown")
    expect(cells).to_have_text("\u2800\u28ff\u28ff\u2800")  # counts 0, 5, 5, 0
    page.keyboard.press("End")
    page.keyboard.press("ArrowDown")
    expect(page.locator("#braille-label")).to_have_text("Braille, step 100:")
    expect(cells).to_have_text("\u28ff\u2800\u2800\u28c0")  # counts 1234, 0, 0, 1
    assert cells.evaluate("e => e.firstChild.textContent") == "\u28ff\u2800\u2800"
    expect(mark).to_have_text("\u28c0")
    screenshot(page, "small_chart_braille")
    page.keyboard.press("B")
    expect(page.locator("#announcement")).to_have_text("Braille off")
    expect(box).to_be_hidden()


def test_review_field_holds_the_last_announcement(open_page, tmp_path):
    page = open_chart(open_page, tmp_path, small_chart())
    page.keyboard.press("End")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("r")
    review = page.locator("#review")
    expect(review).to_be_focused()
    expect(review).to_have_value("Last bin")
    expect(page.get_by_label("Last announcement")).to_have_value("Last bin")
    page.keyboard.press("Escape")
    expect(page.locator("#chart")).to_be_focused()
    expect(page.locator("#review-box")).to_be_hidden()
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("R")
    expect(review).to_have_value("Step 0, 0 to 0.5, count 3, 30.0% of the step")


def test_help_lists_the_keys(open_page, tmp_path):
    page = open_chart(open_page, tmp_path, small_chart())
    keys, live = page.locator("#keys"), page.locator("#announcement")
    expect(keys).to_be_hidden()
    page.keyboard.press("h")
    expect(keys).to_be_visible()
    expect(live).to_have_text(
        "Keys: Left and Right, bins; Up and Down, earlier and later steps; Home and End, first"
        " and last bin; Page Up and Page Down, first and last step; T text; S sound; B braille;"
        " R review; H this list."
    )
    expect(keys.locator("dt")).to_have_count(9)
    page.keyboard.press("?")
    expect(live).to_have_text("Keys hidden")
    expect(keys).to_be_hidden()


def test_sound_starts_only_when_asked(open_page, tmp_path):
    page = open_chart(open_page, tmp_path, small_chart())
    audio = (
        "() => ({ contexts: window.__audio.contexts, tones: window.__audio.oscillators.length })"
    )
    for key in ("ArrowRight", "ArrowUp", "ArrowLeft", "ArrowLeft"):
        page.keyboard.press(key)
    assert page.evaluate(audio) == {"contexts": 0, "tones": 0}

    page.keyboard.press("s")
    expect(page.locator("#announcement")).to_have_text("Sound on")
    assert page.evaluate(audio) == {"contexts": 1, "tones": 1}
    page.keyboard.press("PageDown")  # step 100, bin 0: the highest count, far left
    page.keyboard.press("End")  # step 100, bin 3: count 1, far right
    page.keyboard.press("ArrowRight")  # the edge: a low tone
    tones = page.evaluate(
        """() => window.__audio.oscillators.map((o, i) => [
            o.frequency.value, window.__audio.panners[i].pan.value])"""
    )
    assert len(tones) == 4
    (_, _), (loudest, left), (quiet, right), (edge, middle) = tones
    assert loudest == pytest.approx(200 * 2**2.5, rel=1e-4) and left == -1
    assert quiet == pytest.approx(200 * 2 ** (2.5 / 1234), rel=1e-4) and right == 1
    assert edge == 110 and middle == 0
    assert page.evaluate("window.__audio.contexts") == 1

    page.keyboard.press("S")
    expect(page.locator("#announcement")).to_have_text("Sound off")
    page.keyboard.press("ArrowLeft")
    expect(page.locator("#announcement")).to_have_text(
        "Step 100, 0 to 0.5, count 0, 0.0% of the step"
    )
    assert page.evaluate(audio) == {"contexts": 1, "tones": 4}


def test_data_table_is_collapsed_but_readable(open_page, tmp_path):
    page = open_chart(open_page, tmp_path, small_chart())
    expect(page.get_by_role("table")).to_have_count(0)  # collapsed: not shown
    page.keyboard.press("Tab")
    expect(page.locator("summary")).to_be_focused()
    page.keyboard.press("Enter")
    table = page.get_by_role("table", name="Counts of layer/weights (train) per step and bin")
    expect(table).to_be_visible()
    expect(table.get_by_role("row")).to_have_count(4)
    expect(table.get_by_role("rowheader", name="100")).to_be_visible()
    expect(table.get_by_role("columnheader", name="-1 to -0.5")).to_be_visible()
    expect(page.get_by_role("application", name=re.compile("^Ridgeline chart of"))).to_be_visible()


def test_page_has_no_accessibility_violations(open_page, tmp_path, screenshot):
    page = open_chart(open_page, tmp_path, drifting_chart(51))
    page.locator("details").evaluate("e => { e.open = true; }")
    for key in ("PageDown", "ArrowRight", "b", "h", "r"):
        page.keyboard.press(key)
    expect(page.locator("#review")).to_be_focused()
    assert_accessible(page)
    screenshot(page, "drifting_chart_all_panels")
    page.emulate_media(color_scheme="dark")
    assert_accessible(page)
    screenshot(page, "drifting_chart_all_panels_dark")


def test_empty_chart_says_there_is_nothing_to_explore(open_page, tmp_path):
    chart = TensorBoardChart(
        tag="t", run="r", steps=[], wall_times=[], edges=[0.0, 1.0], counts=np.zeros((0, 1))
    )
    page = open_chart(open_page, tmp_path, chart)
    expect(page.locator("#announcement")).to_have_text("No data to explore")
    expect(page.locator("#description")).to_have_text("No data: the chart has no steps or no bins.")


def test_thousand_steps_open_and_move(open_page, tmp_path, screenshot):
    chart = drifting_chart(1000)
    page = open_chart(open_page, tmp_path, chart)
    page.keyboard.press("PageDown")
    page.keyboard.press("End")
    expect(page.locator("#announcement")).to_have_text(expected_point(chart, 999, 29))
    assert_at(page, 99900, 29)
    screenshot(page, "thousand_steps")


# --- a real TensorBoard log, read by histoscope -----------------------------------------


def test_fixture_chart_in_the_browser(open_page, tmp_path, screenshot, fixtures):
    import histoscope

    (chart,) = histoscope.read_tensorboard_histograms(
        fixtures / "tf2_summary", tags=["weights/dense"], runs=["train"]
    )
    assert (chart.tag, chart.run, chart.bins) == ("weights/dense", "train", 30)
    assert "20 steps shown, from step 0 to step 19." in render(chart)
    assert "Each step counts 512 values." in render(chart)  # shares of buckets sum back
    page = open_chart(open_page, tmp_path, chart)
    expect(page).to_have_title("weights/dense (train)")
    live = page.locator("#announcement")
    last_step, peak = len(chart.steps) - 1, int(np.argmax(chart.counts[-1]))
    page.keyboard.press("PageDown")
    expect(live).to_have_text(expected_point(chart, last_step, 0))
    for _ in range(peak):
        page.keyboard.press("ArrowRight")
    expect(live).to_have_text(expected_point(chart, last_step, peak))
    assert_at(page, int(chart.steps[-1]), peak)
    page.keyboard.press("ArrowDown")
    expect(live).to_have_text("Last step")
    page.keyboard.press("ArrowUp")
    expect(live).to_have_text(expected_point(chart, last_step - 1, peak))
    page.keyboard.press("b")
    expect(page.locator("#braille")).to_have_text(re.compile("^[\u2800-\u28ff]{30}$"))
    screenshot(page, "tf2_summary_weights_dense_train")
    assert_accessible(page)
