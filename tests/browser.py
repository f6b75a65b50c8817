"""Headless Chromium for the chart tests: Debian's /usr/bin/chromium driven by Playwright.

The tests fail, never skip, when the browser is missing: CI installs it with
`.ci/install-browser`, and a silent skip would let a broken page pass.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, Request, Route, sync_playwright

OUTPUT = Path(__file__).parent / "output"

# Counts every AudioContext, oscillator and stereo panner the page makes, so a test can
# tell that no sound is prepared before S and read the pitch and pan of each tone.
AUDIO_PROBE = """
window.__audio = { contexts: 0, oscillators: [], panners: [] };
const RealAudioContext = window.AudioContext;
window.AudioContext = class extends RealAudioContext {
  constructor(...args) { super(...args); window.__audio.contexts += 1; }
  createOscillator() {
    const oscillator = super.createOscillator();
    window.__audio.oscillators.push(oscillator);
    return oscillator;
  }
  createStereoPanner() {
    const panner = super.createStereoPanner();
    window.__audio.panners.push(panner);
    return panner;
  }
};
"""


def chromium_path() -> str:
    path = os.environ.get("HISTOSCOPE_CHROMIUM") or shutil.which("chromium") or ""
    if not path:
        pytest.fail(
            "Chromium is missing: run .ci/install-browser (apt-get install chromium), "
            "or set HISTOSCOPE_CHROMIUM to a Chromium binary"
        )
    return path


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium_path(), headless=True)
        yield launched
        launched.close()


@pytest.fixture
def open_page(browser: Browser) -> Iterator[Callable[[Path], Page]]:
    """Opens a saved page from file:// with every other request refused, and fails the
    test at teardown if the page asked for anything off the disk or raised an error."""
    fetched: list[str] = []
    errors: list[str] = []
    context = browser.new_context(viewport={"width": 1280, "height": 900})

    def refuse(route: Route) -> None:
        fetched.append(route.request.url)
        route.abort()

    def note(request: Request) -> None:
        if not request.url.startswith("file:"):
            fetched.append(request.url)

    context.route(lambda url: not url.startswith("file:"), refuse)
    context.add_init_script(AUDIO_PROBE)

    def open_(path: Path) -> Page:
        page = context.new_page()
        page.on("request", note)
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(path.resolve().as_uri())
        return page

    yield open_
    context.close()
    assert fetched == [], f"the page made network requests: {fetched}"
    assert errors == [], f"the page reported errors: {errors}"


@pytest.fixture
def screenshot() -> Callable[[Page, str], Path]:
    """Saves a full-page screenshot under tests/output/ for a reviewer to look at."""

    def take(page: Page, name: str, full_page: bool = True) -> Path:
        OUTPUT.mkdir(exist_ok=True)
        path = OUTPUT / f"{name}.png"
        page.screenshot(path=str(path), full_page=full_page)
        return path

    return take


def write_thousand_keys(logdir: Path, steps: int = 20) -> None:
    """Two runs of 500 ``params/`` and 500 ``grads/`` keys at ``steps`` steps, and three
    ``debug/`` keys that ``define_metric`` puts in a hidden "Debugging" section. Every
    histogram has values of its own, so the report's compression meets real variety."""
    import numpy as np

    import histoscope

    rng = np.random.default_rng(0)
    for run_name, scale in [("baseline", 1.0), ("wide", 2.0)]:
        with histoscope.init("big", run_name=run_name, dir=logdir) as run:
            run.define_metric("debug/*", section="Debugging", hidden=True)
            for step in range(steps):
                shrink = scale * (1 + step) / steps
                for layer in range(500):
                    params = rng.normal(size=256) * shrink + layer / 500
                    grads = rng.normal(size=256) * shrink * 1e-3 * (layer + 1)
                    run.add_histogram(f"params/layer{layer:03d}", params, step=step, bins=20)
                    run.add_histogram(f"grads/layer{layer:03d}", grads, step=step, bins=20)
                for name in ("a", "b", "c"):
                    run.add_histogram(f"debug/{name}", rng.normal(size=256), step=step, bins=10)
