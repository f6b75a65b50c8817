"""`histoscope view`: the server in a subprocess, its page driven in headless Chromium."""

from __future__ import annotations

import http.client
import json
import re
import shutil
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pytest
from browser import (
    AUDIO_PROBE,
    Server,
    assert_accessible,
    each,
    serving,
    viewed,
    write_diverged_run,
    write_thousand_keys,
)
from playwright.sync_api import Browser, BrowserContext, Locator, Page, expect

import histoscope
from histoscope.errors import RequestError
from histoscope.view import answers, site
from histoscope.view.follow import LogdirIndex
from histoscope.view.page import MODULES
from histoscope.view.refreshed import Findings

pytest_plugins = ["browser"]  # the browser and screenshot fixtures

TAGS = ["activations/relu", "weights/dense", "weights/dense_buckets8"]
RUNS = ["train", "validation"]


@pytest.fixture
def logdir(fixtures: Path, tmp_path: Path) -> Path:
    shutil.copytree(fixtures / "tf2_summary", tmp_path / "logs")
    return tmp_path / "logs"


server = serving("logdir")


@pytest.fixture
def page(browser: Browser, server: Server) -> Iterator[Page]:
    with viewed(browser, server.address) as opened:
        expect(opened.locator("article.card svg.panel path.current")).to_have_count(
            6, timeout=15000
        )
        yield opened


def _panel_steps(page: Page) -> list[str]:
    return page.eval_on_selector_all(
        "article.card svg.panel", "els => els.map(e => e.dataset.step)"
    )


def _announcement(page: Page, tag: str) -> str:
    return page.locator(f'article.card[data-tag="{tag}"] .announcement').text_content()


def _series(logdir: Path) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return histoscope.load_histograms(logdir)


def test_the_address_is_on_loopback_and_the_page_has_a_card_per_key(
    server: Server, page: Page
) -> None:
    assert server.url.startswith("http://127.0.0.1:")
    tags = page.eval_on_selector_all("article.card", "els => els.map(e => e.dataset.tag)")
    assert tags == TAGS
    headings = page.locator("details.section > summary h2").all_text_contents()
    assert headings == ["activations (1)", "weights (2)"]
    for tag in TAGS:
        card = page.locator(f'article.card[data-tag="{tag}"]')
        runs = card.locator("svg.panel").evaluate_all("els => els.map(e => e.dataset.run)")
        assert runs == RUNS
        assert card.locator(".stats tbody tr").count() == 2
    assert _panel_steps(page) == ["19"] * 6
    run_labels = page.locator("#runs label").all_text_contents()
    assert [label.strip() for label in run_labels] == RUNS


def test_the_step_control_moves_every_card_by_keys_and_by_number(page: Page) -> None:
    slider = page.locator("#step-slider")
    slider.focus()
    page.keyboard.press("Home")
    expect(page.locator("body")).to_have_attribute("data-step", "0")
    assert _panel_steps(page) == ["0"] * 6
    assert page.locator("path.previous").count() == 0  # nothing was logged before step 0
    page.keyboard.press("ArrowRight")
    expect(page.locator("body")).to_have_attribute("data-step", "1")
    assert _panel_steps(page) == ["1"] * 6
    page.fill("#step-number", "7")
    page.press("#step-number", "Enter")
    expect(page.locator("body")).to_have_attribute("data-step", "7")
    assert _panel_steps(page) == ["7"] * 6
    assert slider.get_attribute("aria-valuetext") == "step 7"
    assert each(page, "svg.panel path.current", "e => e.dataset.step") == ["7"] * 6
    previous = each(
        page,
        "svg.panel path.previous",
        "e => [e.dataset.step, getComputedStyle(e).strokeDasharray]",
    )
    assert [step for step, _ in previous] == ["6"] * 6
    assert all(dash not in ("", "none") for _, dash in previous), previous
    stats_steps = page.locator("article.card .stats tbody td:first-of-type").all_text_contents()
    assert stats_steps == ["7"] * 6


def test_over_steps_draws_the_median_and_three_bands_per_run(
    page: Page,
    logdir: Path,
    screenshot,
) -> None:
    page.select_option("#view", "steps")
    expect(page.locator("svg.panel path.median")).to_have_count(6)
    bands = page.locator("svg.panel path.band")
    assert bands.count() == 18
    assert bands.evaluate_all("els => els.slice(0, 3).map(e => e.dataset.bps)") == [
        "minimum to maximum",
        "6.68th percentile to 93.32nd percentile",
        "15.87th percentile to 84.13th percentile",
    ]
    steps = len(_series(logdir)["weights/dense"]["train"].steps)
    points = bands.first.evaluate("e => e.getAttribute('d').split(/[ML]/).filter(Boolean).length")
    assert points == 2 * steps
    card = page.locator('article.card[data-tag="weights/dense"] .chart')
    card.focus()
    page.keyboard.press("End")
    expect(page.locator('article.card[data-tag="weights/dense"] .announcement')).to_have_text(
        re.compile(
            r"train, step 19, median \S+; 68% from \S+ to \S+, 86% from \S+ to \S+, "
            r"all from \S+ to \S+"
        )
    )
    page.keyboard.press("ArrowRight")
    expect(page.locator('article.card[data-tag="weights/dense"] .announcement')).to_have_text(
        "Last step"
    )
    screenshot(page, "viewer_over_steps")


def test_the_overlay_shows_each_shown_run_and_follows_the_run_list(page: Page) -> None:
    page.select_option("#view", "overlay")
    card = page.locator('article.card[data-tag="weights/dense"]')
    overlay = card.locator("svg.panel path.overlay-run")
    expect(overlay).to_have_count(2)
    assert overlay.evaluate_all("els => els.map(e => e.dataset.run)") == RUNS
    expect(card.locator(".legend li")).to_have_text(["train, step 19", "validation, step 19"])
    page.uncheck('#runs input[data-run="validation"]')
    expect(overlay).to_have_count(1)
    page.check('#runs input[data-run="validation"]')
    expect(overlay).to_have_count(2)


def _card_answer(server: Server, tag: str, step: int) -> dict:
    query = f"api/card?tag={tag}&run=train&run=validation&step={step}"
    with server.open(query) as answer:
        return json.load(answer)


def test_cards_draw_every_run_on_the_same_equal_bins(server: Server, logdir: Path) -> None:
    card = _card_answer(server, "weights/dense", 7)
    edges = np.array(card["edges"])
    widths = np.diff(edges)
    np.testing.assert_allclose(widths, widths[0], rtol=1e-9)
    series = _series(logdir)["weights/dense"]
    for entry in card["runs"]:
        raw = series[entry["run"]].buckets[7]
        assert entry["current"]["step"] == 7 and entry["previous"]["step"] == 6
        # overlap-proportional rebinning keeps every count
        assert sum(entry["current"]["counts"]) == pytest.approx(raw[:, 2].sum())
        assert entry["steps"] == list(range(20))
    assert edges[0] <= min(series[r].buckets[7][0, 0] for r in RUNS)


def test_a_card_speaks_bins_steps_edges_runs_braille_and_review(page: Page, server: Server) -> None:
    card = _card_answer(server, "weights/dense", 19)
    counts = card["runs"][0]["current"]["counts"]
    chart = page.locator('article.card[data-tag="weights/dense"] .chart')
    chart.focus()
    page.keyboard.press("Home")
    share = f"{round(1000 * counts[0] / sum(counts)) / 10:.1f}%"
    low, high = (f"{card['edges'][i]:.3g}" for i in (0, 1))
    text = _announcement(page, "weights/dense")
    assert text.startswith(f"train, step 19, {low} to ")
    assert text.endswith(f", {share} of the step"), (text, share)
    assert chart.locator("circle.cursor").get_attribute("data-bin") == "0"
    page.keyboard.press("ArrowLeft")
    expect(page.locator('article.card[data-tag="weights/dense"] .announcement')).to_have_text(
        "First bin"
    )
    page.keyboard.press("ArrowDown")  # the steps run down the figure: Down is later
    expect(page.locator('article.card[data-tag="weights/dense"] .announcement')).to_have_text(
        "Last step"
    )
    page.keyboard.press("ArrowUp")
    expect(page.locator("body")).to_have_attribute("data-step", "18")
    assert _panel_steps(page) == ["18"] * 6
    page.keyboard.press("n")
    assert _announcement(page, "weights/dense").startswith("validation, step 18, ")
    page.keyboard.press("b")
    braille = page.locator('article.card[data-tag="weights/dense"] .braille')
    expect(braille.locator("mark")).to_have_count(1)
    assert len(braille.text_content()) == len(card["edges"]) - 1
    spoken = _announcement(page, "weights/dense")
    page.keyboard.press("r")
    review = page.locator('article.card[data-tag="weights/dense"] .review')
    expect(review).to_be_focused()
    page.keyboard.press("Escape")
    expect(chart).to_be_focused()
    page.keyboard.press("End")
    page.keyboard.press("r")
    assert review.input_value() == _announcement(page, "weights/dense") != spoken
    page.keyboard.press("Escape")
    page.keyboard.press("h")
    expect(page.locator('article.card[data-tag="weights/dense"] .keys')).to_be_visible()


def test_appended_steps_and_new_runs_appear_without_reload(
    browser: Browser,
    fixtures: Path,
    tmp_path: Path,
) -> None:
    source = next((fixtures / "tf2_summary" / "train").glob("*tfevents*"))
    data = source.read_bytes()
    logdir = tmp_path / "growing"
    (logdir / "train").mkdir(parents=True)
    target = logdir / "train" / source.name
    target.write_bytes(data[: len(data) // 3])  # cut inside a record, as a writer leaves it
    running = Server(logdir)
    try:
        # tall enough that every card stays near the view (and drawn) once both runs show
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        page.goto(running.address)
        expect(page.locator("article.card svg.panel path.current")).to_have_count(3, timeout=15000)
        first_last = int(page.locator("body").get_attribute("data-step"))
        assert first_last < 19
        with open(target, "ab") as out:
            out.write(data[len(data) // 3 :])
        expect(page.locator("body")).to_have_attribute("data-step", "19", timeout=15000)
        assert _panel_steps(page) == ["19"] * 3
        shutil.copytree(fixtures / "tf2_summary" / "validation", logdir / "validation")
        expect(page.locator("#runs input[data-run]")).to_have_count(2, timeout=15000)
        expect(page.locator("article.card svg.panel")).to_have_count(6, timeout=15000)
        context.close()
    finally:
        running.stop()


@pytest.mark.parametrize(
    "path",
    [
        "/assets/../../pyproject.toml",
        "/assets/..%2F..%2Fpyproject.toml",
        "/assets/%2e%2e/viewer.py",
        "/assets/viewer.py",
        "/../../../../etc/passwd",
        "/api/series?tag=weights/dense&run=../../../etc",
        "/api/series?tag=weights/dense&run=/etc/passwd",
        "/api/buckets?tag=weights/dense&step=0&run=train/../..",
        "/api/tags?run=..",
        "/train/" + "events.out.tfevents",
    ],
)
def test_paths_outside_the_data_are_refused(server: Server, path: str) -> None:
    assert server.get(path) == 404


@pytest.mark.parametrize(
    "path",
    [
        "/api/buckets?tag=weights/dense&step=x&run=train",
        "/api/buckets?tag=weights/dense&run=train",
        "/api/series?run=train",
        "/api/series?tag=weights/dense&run=train&since=eight",
        "/api/card?run=train",
        "/api/card?tag=weights/dense&run=train&from=5&to=1",
        "/api/card?tag=weights/dense&run=train&bins=0",
        "/api/card?tag=weights/dense&run=train&bins=513",
        "/api/card?tag=weights/dense&run=train&step=1.5",
        "/api/overview?run=train&stat=median",
        "/api/overview?stat=std",
    ],
)
def test_malformed_parameters_are_a_bad_request(server: Server, path: str) -> None:
    assert server.get(path) == 400


def test_the_data_and_assets_are_served(server: Server) -> None:
    assets = ["viewer.js", "a11y.js", "viewer.css", *MODULES, "api.js"]
    for path in ["/", *(f"/assets/{name}" for name in assets), "/api/runs", "/api/findings"]:
        assert server.get(path) == 200, path
    assert server.get("/api/series?tag=weights/dense&run=train") == 200
    assert server.get("/api/overview?run=train&stat=absmax") == 200


def _answer(
    server: Server, path: str, host: str | None = None, cookie: bool = True
) -> http.client.HTTPResponse:
    """The answer to ``path`` with ``host`` as its ``Host``, carrying the page's cookie
    unless ``cookie`` is false."""
    parts = urlsplit(server.url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    headers = {"Host": host} if host else {}
    if cookie:
        headers["Cookie"] = server.cookie()
    connection.request("GET", path, headers=headers)
    response = connection.getresponse()
    response.read()
    connection.close()
    return response


@pytest.mark.parametrize("host", ["evil.example", "evil.example:6006", "127.0.0.1.evil.example"])
def test_a_foreign_host_header_is_refused(server: Server, host: str) -> None:
    for path in ["/", "/api/runs", "/api/series?tag=weights/dense&run=train"]:
        assert _answer(server, path, host).status == 400


def test_every_answer_carries_the_security_headers(server: Server) -> None:
    port = urlsplit(server.url).port
    for path, host, cookie, status in [
        ("/", f"localhost:{port}", True, 200),
        ("/api/runs", f"127.0.0.1:{port}", True, 200),
        ("/assets/app.js", None, True, 200),
        ("/assets/nothing.js", None, True, 404),
        ("/api/card?run=train", None, True, 400),
        ("/", "evil.example", True, 400),
        ("/api/runs", None, False, 403),
    ]:
        response = _answer(server, path, host, cookie)
        assert response.status == status, path
        assert response.getheader("x-content-type-options") == "nosniff"
        assert response.getheader("referrer-policy") == "no-referrer"
        policy = response.getheader("content-security-policy")
        assert "default-src 'none'" in policy and "script-src 'self'" in policy
        assert "connect-src 'self'" in policy


def test_series_answers_are_strict_json_with_null_for_missing_statistics(server: Server) -> None:
    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} is not JSON")

    with server.open("api/series?tag=weights/dense&run=train") as answer:
        body = json.loads(answer.read(), parse_constant=refuse)
    (series,) = body["series"]
    want = _series(server.logdir)["weights/dense"]["train"]
    assert series["steps"] == want.steps.tolist()
    assert series["from"] == 0 and series["more"] is False
    assert len(series["quantiles"]) == len(want.steps) and len(series["quantiles"][0]) == 9
    assert series["stats"]["mean"] == [None] * len(want.steps)  # TF2 stores no statistics


def _series_answer(index: LogdirIndex, query: str) -> dict:
    return json.loads(answers.encode(answers.series(index, answers.Query(query))))


def test_series_are_sent_from_the_steps_held_a_page_at_a_time(
    logdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(answers, "SERIES_STEPS", 8)
    index = LogdirIndex(str(logdir))
    run = index.run("train")
    while not run.caught_up:
        run.read(index._files["train"], 10.0)
    generation, view = run.series["weights/dense"].snapshot()
    query = "tag=weights/dense&run=validation&run=train&since=&since="
    steps, quantiles, pages = [], [], []
    while True:
        (_, series) = _series_answer(index, query + f"{generation}:{len(steps)}")["series"]
        assert series["run"] == "train" and series["from"] == len(steps)
        steps += series["steps"]
        quantiles += series["quantiles"]
        pages.append(len(series["steps"]))
        if not series["more"]:
            break
    assert pages == [8, 8, 4]
    assert steps == view.steps.tolist()
    np.testing.assert_array_equal(quantiles, view.quantiles)
    (_, other) = _series_answer(index, query + f"{generation + 1}:8")["series"]
    assert other["from"] == 0 and other["steps"] == steps[:8]  # another generation: from 0
    for wrong in ["eight", "0:-1", "1"]:
        with pytest.raises(RequestError):
            _series_answer(index, query + wrong)


def test_the_page_comes_with_the_runs_listing_that_cannot_end_its_script(
    fixtures: Path, tmp_path: Path
) -> None:
    logdir = tmp_path / "logs"
    shutil.copytree(fixtures / "tf2_summary" / "train", logdir / "</script><b>&x")
    shutil.copytree(fixtures / "tf2_summary" / "validation", logdir / "validation")
    running = Server(logdir)
    try:
        with running.open("") as answer:
            page = answer.read().decode()
        with running.open("api/runs") as answer:
            listing = json.load(answer)
    finally:
        running.stop()
    embedded = re.search(
        r'<script type="application/json" id="histoscope-runs">(.*?)</script>', page, re.S
    )
    assert embedded is not None
    assert "<" not in embedded.group(1) and "&" not in embedded.group(1)
    assert json.loads(embedded.group(1)) == listing
    assert listing["runs"] == ["</script><b>&x", "validation"]


Point = tuple[float, float]


def _drag(page: Page, target: Locator, start: Point, end: Point) -> None:
    """A mouse drag between two points given as shares of ``target``'s width and height."""
    box = target.bounding_box()
    assert box is not None, f"{target} is not shown"
    page.mouse.move(box["x"] + box["width"] * start[0], box["y"] + box["height"] * start[1])
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * end[0], box["y"] + box["height"] * end[1], steps=6)
    page.mouse.up()


def _range_is(page: Page, low: int | None, high: int | None) -> None:
    """The inputs, the URL, the brush's thumbs and every drawn heatmap show steps low to high."""
    expect(page.locator("#range-from")).to_have_value("" if low is None else str(low))
    expect(page.locator("#range-to")).to_have_value("" if high is None else str(high))
    thumbs = page.locator(".brush-thumb")
    expect(thumbs.nth(0)).to_have_attribute("aria-valuenow", str(0 if low is None else low))
    expect(thumbs.nth(1)).to_have_attribute("aria-valuenow", str(19 if high is None else high))
    steps = range(0 if low is None else low, 20 if high is None else high + 1)
    shown = " ".join(str(step) for step in steps)
    heatmaps = page.locator("svg.panel.heatmap")
    expect(heatmaps.first).to_be_attached()
    expect(page.locator(f'svg.panel.heatmap:not([data-steps="{shown}"])')).to_have_count(0)
    fragment = page.url.split("#", 1)[1]
    assert ("from=" + str(low) in fragment) if low is not None else "from=" not in fragment
    assert ("to=" + str(high) in fragment) if high is not None else "&to=" not in fragment


def test_the_step_range_brush_takes_the_mouse_and_the_keys_and_keeps_inputs_and_url_in_step(
    page: Page, screenshot
) -> None:
    page.select_option("#view", "heatmap")
    expect(page.locator("svg.panel.heatmap")).to_have_count(6)
    expect(page.locator('svg.panel.heatmap rect.chosen-row[data-step="19"]')).to_have_count(6)
    page.get_by_text("Step range and more").click()  # the range sits behind a disclosure
    low = page.get_by_role("slider", name="First step of the range")
    high = page.get_by_role("slider", name="Last step of the range")
    expect(low).to_have_attribute("aria-valuetext", "from step 0, 20 of 20 steps")
    assert (low.get_attribute("aria-valuemin"), high.get_attribute("aria-valuemax")) == ("0", "19")
    live = page.locator("#range-live")
    # the keyboard: a logged step per arrow, a tenth of them per page, the far ends
    low.focus()
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    _range_is(page, 3, None)
    expect(live).to_have_text("Step range 3 to 19: 17 of 20 steps")
    high.focus()
    page.keyboard.press("PageDown")
    _range_is(page, 3, 17)
    assert high.get_attribute("aria-valuemin") == "3" and low.get_attribute("aria-valuemax") == "17"
    expect(high).to_have_attribute("aria-valuetext", "to step 17, 15 of 20 steps")
    page.keyboard.press("Home")  # the last step of the range goes no lower than the first
    _range_is(page, 3, 3)
    page.keyboard.press("Home")
    expect(live).to_have_text("To step 3: the other end")
    page.keyboard.press("End")
    low.focus()
    page.keyboard.press("Home")
    _range_is(page, None, None)
    expect(live).to_have_text("Step range 0 to 19: 20 of 20 steps, all")
    # the mouse: a new range drawn on the track, then one end dragged
    track = page.locator(".brush-track")
    _drag(page, track, (5 / 19, 0.5), (10 / 19, 0.5))
    _range_is(page, 5, 10)
    _drag(page, track, (10 / 19, 0.5), (14 / 19, 0.5))  # the last step's thumb, further on
    _range_is(page, 5, 14)
    expect(live).to_have_text("Step range 5 to 14: 10 of 20 steps")
    # a drag down a heatmap's rows (steps 5 to 14, a row each) chooses the rows dragged over
    heatmap = page.locator("svg.panel.heatmap").first
    top, rows = 24 / 230, (174 - 24) / 230  # the plot's top and height in the panel's units
    _drag(page, heatmap, (0.5, top + rows * 2.5 / 10), (0.5, top + rows * 6.5 / 10))
    _range_is(page, 7, 11)
    expect(page.locator("article.card .chart").first).to_be_focused()  # as a click focuses it
    # the chosen step (19, the last) is outside the range: no row is marked as if it were
    expect(page.locator("svg.panel.heatmap rect.chosen-row")).to_have_count(0)
    # typed steps move the thumbs
    page.fill("#range-from", "8")
    page.press("#range-from", "Enter")
    _range_is(page, 8, 11)
    # a drag along the bands' step axis (steps 8 to 11 across the plot)
    page.select_option("#view", "steps")
    bands = page.locator('svg.panel[data-steps="8 9 10 11"]:has(path.median)')
    expect(bands).to_have_count(6)
    left, width = 56 / 320, (320 - 56 - 12) / 320
    _drag(page, bands.first, (left + width * 0.9 / 3, 0.5), (left + width * 2.1 / 3, 0.5))
    expect(page.locator("#range-from")).to_have_value("9")
    expect(page.locator("#range-to")).to_have_value("10")
    expect(page.locator("svg.panel:has(path.median)").first).to_have_attribute("data-steps", "9 10")
    screenshot(page, "viewer_brush", full_page=False)
    assert_accessible(page)
    # the range is in the URL: a page opened from it (in the same browser, which holds the
    # viewer's cookie) has it in its inputs and thumbs
    again = page.context.new_page()
    again.goto(page.url)
    expect(again.locator("svg.panel[data-steps='9 10']")).to_have_count(6, timeout=15000)
    expect(again.locator(".brush-thumb").nth(0)).to_have_attribute("aria-valuenow", "9")
    expect(again.locator(".brush-thumb").nth(1)).to_have_attribute("aria-valuenow", "10")
    again.close()
    page.get_by_role("button", name="All steps").click()
    page.select_option("#view", "heatmap")
    _range_is(page, None, None)


@pytest.mark.parametrize("view", ["ridgeline", "overlay", "heatmap", "steps"])
def test_axe_finds_no_violations(page: Page, view: str) -> None:
    page.select_option("#view", view)
    page.locator("article.card .chart").first.focus()
    page.keyboard.press("b")
    assert_accessible(page)


# ---- a real network's worth of keys: 500 params/, 500 grads/ and 3 hidden debug/ keys, 2 runs


@pytest.fixture(scope="module")
def thousand(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("thousand")
    write_thousand_keys(root)
    return root / "big"


big_server = serving("thousand", scope="module")


@pytest.fixture
def big_page(browser: Browser, big_server: Server) -> Iterator[Page]:
    def prepare(context: BrowserContext) -> None:
        # The page may ask its own server only.
        context.route(lambda url: not url.startswith(big_server.url), lambda route: route.abort())
        context.add_init_script(AUDIO_PROBE)

    with viewed(browser, big_server.address, prepare) as opened:
        expect(opened.locator("#status")).to_contain_text("1003 histogram keys", timeout=30000)
        expect(opened.locator("#status")).not_to_contain_text("still reading", timeout=30000)
        yield opened


def _headings(page: Page) -> list[str]:
    return page.locator("details.section > summary h2").all_text_contents()


def _element_count(page: Page) -> int:
    return page.evaluate("document.getElementsByTagName('*').length")


def test_keys_are_grouped_into_sections_and_declared_hidden_keys_are_collapsed(
    big_page: Page, screenshot
) -> None:
    assert _headings(big_page) == ["Debugging (3)", "grads (500)", "params (500)"]
    debugging = big_page.locator('details.section[data-section="Debugging"]')
    hidden = debugging.locator("details.hidden-cards")
    expect(hidden.locator(":scope > summary")).to_have_text("Hidden keys (3)")
    expect(hidden.locator("article.card").first).to_be_hidden()
    hidden.locator(":scope > summary").click()
    expect(hidden.locator("article.card")).to_have_count(3)
    hidden.locator("article.card").first.scroll_into_view_if_needed()
    expect(hidden.locator('article.card[data-tag="debug/a"] svg.panel')).to_have_count(2)
    grads = big_page.locator('details.section[data-section="grads"]')
    grads.locator(":scope > summary").click()  # collapse: its cards leave the page's layout
    expect(grads.locator("article.card").first).to_be_hidden()
    screenshot(big_page, "viewer_sections", full_page=False)


def test_the_filter_takes_a_regular_expression_or_a_substring_and_lives_in_the_url(
    big_page: Page, big_server: Server
) -> None:
    box = big_page.get_by_role("searchbox", name="Filter keys")
    box.fill("layer01[0-2]$")
    expect(big_page.locator("details.section:visible > summary h2")).to_have_text(
        ["grads (3 of 500)", "params (3 of 500)"]
    )
    shown = big_page.locator("article.card:visible")
    assert sorted(shown.evaluate_all("els => els.map(e => e.dataset.tag)")) == [
        f"{kind}/layer01{i}" for kind in ("grads", "params") for i in range(3)
    ]
    box.fill("grads/layer499")  # a substring (and a regular expression matching itself)
    expect(big_page.locator("article.card:visible")).to_have_count(1)
    box.fill("grads/layer4[")  # not a regular expression: matched as text
    expect(big_page.locator("#status")).to_contain_text("0 match the filter")
    box.fill("params/layer00[0-1]$")
    big_page.select_option("#view", "heatmap")
    big_page.uncheck('#runs input[data-run="wide"]')
    expect(big_page.locator("article.card:visible svg.panel")).to_have_count(2)
    url = big_page.url
    assert "filter=params%2Flayer00%5B0-1%5D%24" in url and "view=heatmap" in url
    assert "runs=baseline" in url
    again = big_page.context.new_page()  # the same browser: it holds the viewer's cookie
    again.goto(url)
    expect(again.locator("article.card:visible svg.panel.heatmap")).to_have_count(2, timeout=30000)
    expect(again.get_by_role("searchbox", name="Filter keys")).to_have_value("params/layer00[0-1]$")
    assert again.locator("#view").input_value() == "heatmap"
    assert not again.locator('#runs input[data-run="wide"]').is_checked()
    again.close()


def test_cards_are_drawn_near_the_viewport_only_and_the_page_stays_small(big_page: Page) -> None:
    big_page.locator(
        'details.section[data-section="grads"] article.card svg.panel'
    ).first.wait_for()
    counts = [_element_count(big_page)]
    for _ in range(12):
        big_page.mouse.wheel(0, 2500)
        big_page.wait_for_timeout(150)
        counts.append(_element_count(big_page))
    drawn = big_page.locator("article.card.mounted").count()
    assert max(counts) <= 10_000, counts
    assert 0 < drawn < 60, drawn  # of 1,003 cards
    assert big_page.locator("article.card").count() == 1003


def test_the_heatmap_has_a_colour_scale_with_its_legend_and_the_log_axis_relabels_it(
    big_page: Page, screenshot
) -> None:
    big_page.get_by_role("searchbox", name="Filter keys").fill("^grads/layer00[0-3]$")
    big_page.select_option("#view", "heatmap")
    card = big_page.locator('article.card[data-tag="grads/layer000"]')
    panels = card.locator("svg.panel.heatmap")
    expect(panels).to_have_count(2)
    assert panels.first.locator("image.cells").get_attribute("href").startswith("data:image/png")
    legend = panels.first.locator(".legend-scale")
    assert legend.locator("rect").count() == 10
    expect(legend).to_contain_text("count per bin")
    big_page.check("#log-axis")
    expect(panels.first.locator(".legend-scale")).to_contain_text("count per bin (log scale)")
    assert "log=1" in big_page.url
    card.locator(".chart").focus()
    big_page.keyboard.press("End")
    expect(card.locator(".announcement")).to_contain_text("baseline, step 19, ")
    screenshot(big_page, "viewer_heatmap", full_page=False)
    big_page.select_option("#view", "ridgeline")
    expect(card.locator("path.ridge")).to_have_count(40)
    ticks = card.locator("svg.panel").first.locator("text.tick").all_text_contents()
    assert ticks and all(re.fullmatch(r"-?\d+(\.\d+)?(e-?\d+)?", t) for t in ticks), ticks
    screenshot(big_page, "viewer_ridgeline", full_page=False)
    big_page.get_by_text("Step range and more").click()
    big_page.fill("#range-from", "5")
    big_page.press("#range-from", "Enter")
    big_page.fill("#range-to", "9")
    big_page.press("#range-to", "Enter")
    expect(card.locator("svg.panel").first.locator("path.ridge")).to_have_count(5)
    assert card.locator("path.ridge").evaluate_all("els => els.map(e => e.dataset.step)")[:5] == [
        "5",
        "6",
        "7",
        "8",
        "9",
    ]


def test_the_overview_is_walked_by_keyboard_and_opens_a_card_at_a_step(
    big_page: Page, screenshot
) -> None:
    grid = big_page.locator('.overview-grid[data-section="grads"]')
    # 500 keys with no module path: 23 labelled groups of neighbours, none under a row's height
    labels = grid.locator(".overview-label")
    expect(labels).to_have_count(23)
    assert labels.first.get_attribute("title") == "layer000 to layer021 (22 keys)"
    heights = each(
        big_page,
        ".overview-label",
        "e => e.getBoundingClientRect().height",
        within='.overview-grid[data-section="grads"]',
    )
    assert min(heights) >= 16, heights
    grid.focus()
    live = big_page.locator("#overview-live")
    expect(live).to_have_text(
        re.compile(
            r"Group layer000 to layer021, 22 keys, closed, step 19, largest standard deviation "
            r"\S+ in grads/layer021; row 1 of 23"
        )
    )
    big_page.keyboard.press("Enter")  # the group opens, its keys as rows under it
    expect(live).to_have_text("Opened group layer000 to layer021, 22 keys; 45 rows")
    expect(labels).to_have_count(45)
    big_page.keyboard.press("ArrowDown")
    expect(live).to_contain_text("grads/layer000, step 19, standard deviation ")
    big_page.keyboard.press("ArrowDown")
    expect(live).to_contain_text("grads/layer001, step 19, standard deviation ")
    big_page.keyboard.press("ArrowLeft")
    expect(live).to_have_text(
        re.compile(r"grads/layer001, step 18, standard deviation \S+; row 3 of 45")
    )
    for _ in range(3):
        big_page.keyboard.press("ArrowUp")
    expect(live).to_have_text("First row")
    big_page.keyboard.press("ArrowDown")
    big_page.keyboard.press("s")  # the row as sound: one tone per step
    expect(live).to_contain_text("Playing grads/layer000, 20 steps")
    # a tone every 120 ms: waited for, not timed, as a loaded machine delays timers
    # (polled from here: the page's CSP refuses wait_for_function's eval)
    tones = "window.__audio.oscillators.length"
    deadline = time.monotonic() + 15
    while big_page.evaluate(tones) < 20 and time.monotonic() < deadline:
        big_page.wait_for_timeout(100)
    big_page.wait_for_timeout(300)
    assert big_page.evaluate("window.__audio.oscillators.length") == 20
    screenshot(big_page, "viewer_overview", full_page=False)
    big_page.keyboard.press("Enter")
    card = big_page.locator('article.card[data-tag="grads/layer000"]')
    expect(card.locator(".chart")).to_be_focused()
    # every drawn card follows the step; a debug build on a shared machine takes a while
    expect(card.locator("svg.panel").first).to_have_attribute("data-step", "18", timeout=30000)
    expect(big_page.locator("body")).to_have_attribute("data-step", "18", timeout=30000)


def test_axe_finds_no_violations_on_a_thousand_keys(big_page: Page) -> None:
    big_page.locator(
        'details.section[data-section="Debugging"] details.hidden-cards summary'
    ).click()
    big_page.locator("article.card svg.panel").first.wait_for()
    assert_accessible(big_page)


def test_findings_are_listed_announced_once_and_marked_on_their_card(
    browser: Browser, tmp_path: Path, screenshot
) -> None:
    write_diverged_run(tmp_path)
    running = Server(tmp_path / "p")
    try:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        page.goto(running.address)
        alerts = page.locator("#alerts li")
        expect(alerts).to_have_count(1, timeout=20000)
        expect(alerts).to_contain_text("error: gradients/fc: NaN or infinite values")
        expect(page.locator("#alerts-live")).to_contain_text("1 new finding: gradients/fc: NaN")
        page.evaluate(
            """() => { window.__spoken = 0; new MutationObserver(() => window.__spoken++)
              .observe(document.getElementById('alerts-live'), {childList: true}); }"""
        )
        polls = int(page.locator("body").get_attribute("data-polls"))
        expect(page.locator("body")).to_have_attribute("data-polls", str(polls + 2), timeout=15000)
        assert page.evaluate("window.__spoken") == 0  # announced once, not at every poll
        marked = page.locator('article.card[data-tag="gradients/fc"]')
        expect(marked).to_have_class(re.compile("has-findings"))
        expect(marked.locator(".findings")).to_have_text("\u26a0 nonfinite in r")
        healthy = page.locator('article.card[data-tag="parameters/fc"]')
        expect(healthy.locator(".findings")).to_be_hidden()
        border = marked.evaluate("e => getComputedStyle(e).borderTopStyle")
        assert border == "double"  # a shape as well as a colour
        grid = page.locator('.overview-grid[data-section="gradients"]')
        marked_row = grid.locator(".overview-label").first
        expect(marked_row.locator(".row-finding")).to_have_text("\u25b2 error")  # shape and word
        grid.focus()
        expect(page.locator("#overview-live")).to_contain_text("finding: nonfinite (error)")
        expect(page.locator("#findings-count")).to_have_text("1 error")
        screenshot(page, "viewer_alerts", full_page=False)
        page.locator("#worst-keys a").click()  # findings first: the worst keys link their cards
        expect(marked.locator(".chart")).to_be_focused()
        expect(page.locator("body")).to_have_attribute("data-step", "6")
        context.close()
    finally:
        running.stop()


def test_what_reading_found_is_listed_as_notes_without_paths(
    fixtures: Path, tmp_path: Path
) -> None:
    for name in ("corrupt", "keras3_shared_tags"):
        shutil.copytree(fixtures / name, tmp_path / "logs" / name)
    answer = Findings(str(tmp_path / "logs")).answer()
    kinds = {(note["run"], note["kind"]) for note in answer["notes"]}
    assert kinds == {
        ("corrupt/flipped", "damage"),
        ("corrupt/flipped_tag", "damage"),
        ("keras3_shared_tags/fit/train", "shared"),
    }
    for note in answer["notes"]:
        assert str(tmp_path) not in note["text"]  # the page names files, never paths
        assert note["text"].startswith("events.out.tfevents.")
    damage = next(n for n in answer["notes"] if n["kind"] == "damage")
    assert "skipped 1 damaged record (bytes 3852-4224" in damage["text"]


def test_reading_notes_are_shown_announced_once_and_pass_axe(
    browser: Browser, fixtures: Path, tmp_path: Path
) -> None:
    for name in ("corrupt", "keras3_shared_tags"):
        shutil.copytree(fixtures / name, tmp_path / "logs" / name)
    running = Server(tmp_path / "logs")
    try:
        page = browser.new_page()
        page.goto(running.address)
        notes = page.locator("#notes li")
        expect(notes).to_have_count(3, timeout=20000)
        expect(page.locator("#notes-heading")).to_have_text("Notes on reading the files (3)")
        expect(notes.nth(0)).to_contain_text("corrupt/flipped: events.out.tfevents.")
        expect(notes.nth(2)).to_contain_text("kept apart the values one tag held several times")
        live = page.locator("#alerts-live")
        expect(live).to_contain_text("3 new notes on reading the files: corrupt/flipped:")
        page.evaluate(
            """() => { window.__spoken = 0; new MutationObserver(() => window.__spoken++)
              .observe(document.getElementById('alerts-live'), {childList: true}); }"""
        )
        polls = int(page.locator("body").get_attribute("data-polls"))
        expect(page.locator("body")).to_have_attribute("data-polls", str(polls + 2), timeout=15000)
        assert page.evaluate("window.__spoken") == 0  # announced once, not at every poll
        page.locator("#notes-heading").focus()
        page.keyboard.press("Enter")  # the list opens by keyboard
        expect(notes.first).to_be_visible()
        assert_accessible(page)
        page.close()
    finally:
        running.stop()


def test_a_wildcard_address_allows_the_machines_own_names_and_loopback_only() -> None:
    import socket

    hosts = site.allowed_hosts("0.0.0.0")
    assert {"localhost", "127.0.0.1", socket.gethostname()} <= set(hosts)
    assert "*" not in hosts and "evil.example" not in hosts
    assert site.allowed_hosts("192.0.2.7") == sorted(
        {"localhost", "127.0.0.1", "::1", "[::1]", "192.0.2.7"}
    )


def test_the_overview_colours_by_the_share_of_zeros_the_diagnosis_reads(
    server: Server, logdir: Path
) -> None:
    with server.open("api/overview?run=train&stat=zeros") as answer:
        overview = json.load(answer)
    series = _series(logdir)
    for tag in ("activations/relu", "weights/dense"):
        record = series[tag]["train"].record
        shares = histoscope._core.zero_shares(record)
        at = np.searchsorted(record.steps, overview["steps"], side="right") - 1
        np.testing.assert_allclose(overview["rows"][tag], shares[at])
    # ReLU of standard normals: about half exact zeros; dense weights: none.
    assert 0.4 < min(overview["rows"]["activations/relu"])
    assert max(overview["rows"]["activations/relu"]) < 0.6
    assert max(overview["rows"]["weights/dense"]) < 0.01
