"""Headless Chromium for the chart tests: Debian's /usr/bin/chromium driven by Playwright.

The tests fail, never skip, when the browser is missing: CI installs it with
`.ci/install-browser`, and a silent skip would let a broken page pass.
"""

from __future__ import annotations

import contextlib
import http.client
import http.cookiejar
import os
import re
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import (
    Browser,
    BrowserContext,
    Frame,
    Page,
    Request,
    Route,
    sync_playwright,
)

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


def each(page: Page, selector: str, function: str, within: str = "html") -> list:
    """`function` (JavaScript) applied to every element `selector` matches inside the first
    `within`, all in one evaluation. Playwright's `evaluate_all` finds the elements and calls
    the function in two round trips: a card redrawn or released between them hands it
    detached elements, whose computed style is empty."""
    return page.evaluate(
        f"([within, selector]) => [...document.querySelector(within).querySelectorAll(selector)]"
        f".map({function})",
        [within, selector],
    )


@pytest.fixture
def screenshot() -> Callable[[Page, str], Path]:
    """Saves a full-page screenshot under tests/output/ for a reviewer to look at."""

    def take(page: Page, name: str, full_page: bool = True) -> Path:
        OUTPUT.mkdir(exist_ok=True)
        path = OUTPUT / f"{name}.png"
        page.screenshot(path=str(path), full_page=full_page)
        return path

    return take


def assert_accessible(page: Page | Frame, **options: Any) -> None:
    """axe-core finds no violation in ``page`` (or one of its frames); ``options``
    go to ``Axe.run`` (``context=`` to check part of the page)."""
    results = Axe().run(page, **options)
    assert results.violations_count == 0, results.generate_report()


#: The address ``histoscope view`` prints: where it listens, then its token if it has one.
PRINTED_ADDRESS = re.compile(r"histoscope view: (http://\S+/)(\?token=([\w.~-]+))?")


def signed_in(
    address: str, jar: http.cookiejar.CookieJar | None = None
) -> urllib.request.OpenerDirector:
    """A client that opened ``address`` (the printed one) as a browser does, and so holds
    in ``jar`` the cookie the page's answer set: what it opens next carries it."""
    jar = http.cookiejar.CookieJar() if jar is None else jar
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    with opener.open(address, timeout=30) as answer:
        answer.read()
    return opener


class Server:
    """`histoscope view` on a copy of a fixture, on a free port, in a subprocess.

    ``url`` is where it listens, ``address`` the whole address it printed (with
    ``?token=`` unless ``--no-token``), ``token`` the token; `open` and `get` ask as a
    client that opened ``address`` first, through the cookie its page set.
    """

    def __init__(
        self, logdir: Path | str, *options: str, env: dict[str, str] | None = None
    ) -> None:
        self.logdir = logdir
        self.process = subprocess.Popen(
            [sys.executable, "-m", "histoscope.cli", "view", str(logdir), "--port", "0", *options],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        line = self.process.stdout.readline()
        match = PRINTED_ADDRESS.search(line)
        if not match:
            self.process.kill()
            pytest.fail(f"no address printed: {line!r} {self.process.stderr.read()}")
        self.url = match.group(1)
        self.address = self.url + (match.group(2) or "")
        self.token = match.group(3)
        self.jar = http.cookiejar.CookieJar()
        self._client: urllib.request.OpenerDirector | None = None

    def client(self) -> urllib.request.OpenerDirector:
        if self._client is None:
            self._client = signed_in(self.address, self.jar)
        return self._client

    def open(self, path: str, timeout: float = 30) -> Any:
        """The answer to a GET of ``url + path`` carrying the cookie (HTTPError for a
        status of 400 or more)."""
        return self.client().open(self.url + path, timeout=timeout)

    def cookie(self) -> str:
        """The ``Cookie`` header the client sends."""
        self.client()
        return "; ".join(f"{c.name}={c.value}" for c in self.jar)

    def get(self, raw_path: str, cookie: bool = True) -> int:
        """The status of a GET of ``raw_path`` sent as is, without normalising it, with the
        cookie unless ``cookie`` is false."""
        parts = urlsplit(self.url)
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
        connection.request("GET", raw_path, headers={"Cookie": self.cookie()} if cookie else {})
        status = connection.getresponse().status
        connection.close()
        return status

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def serving(logdir_fixture: str, scope: str = "function") -> Any:
    """A fixture: a `Server` of the log directory that fixture ``logdir_fixture``
    gives, for as long as ``scope`` says."""

    @pytest.fixture(scope=scope)
    def server(request: pytest.FixtureRequest) -> Iterator[Server]:
        with Server(request.getfixturevalue(logdir_fixture)) as running:
            yield running

    return server


@contextlib.contextmanager
def opened_page(context: BrowserContext, url: str) -> Iterator[Page]:
    """A new page of ``context`` at ``url``; the context is closed after, and the test
    fails if the page reported an error meanwhile."""
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    opened.goto(url)
    yield opened
    context.close()
    assert errors == [], f"the page reported errors: {errors}"


@contextlib.contextmanager
def viewed(
    browser: Browser, url: str, prepare: Callable[[BrowserContext], object] = lambda _: None
) -> Iterator[Page]:
    """`opened_page` at ``url`` of a new context of the viewer's size (1400 x 1000),
    which ``prepare`` sets up first."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    prepare(context)
    with opened_page(context, url) as page:
        yield page


def write_thousand_keys(logdir: Path, steps: int = 20) -> None:
    """Two runs of 500 ``params/`` and 500 ``grads/`` keys at ``steps`` steps, and three
    ``debug/`` keys that ``define_metric`` puts in a hidden "Debugging" section. Every
    histogram has values of its own, so the report's compression meets real variety."""
    import numpy as np

    import histoscope

    rng = np.random.default_rng(0)
    for run_name, scale in [("baseline", 1.0), ("wide", 2.0)]:
        with histoscope.init("big", run_name=run_name, logdir=logdir) as run:
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


#: Five runs named as PyTorch's SummaryWriter names them by default (its start time, the
#: machine, the comment), under the folders a tutorial keeps them in; the first crashed
#: after logging two keys once.
PYTORCH_RUNS = [
    "Nov16_13-55-02_DESKTOP-VRDPFUI",
    "Nov16_14-18-08_DESKTOP-VRDPFUItest_your_comment",
    "Nov16_14-31-40_DESKTOP-VRDPFUIlr_0.01",
    "Nov16_15-02-17_DESKTOP-VRDPFUIlr_0.001",
    "Nov16_15-44-51_DESKTOP-VRDPFUIbatch_size_64",
]
#: A CNN's 27 parameters as `named_parameters()` names them: 54 keys with their gradients.
CNN_PARAMETERS = [
    f"{module}.{kind}"
    for module in [*(f"conv{i}" for i in range(1, 6)), *(f"bn{i}" for i in range(1, 6))]
    + ["fc1", "fc2", "fc3"]
    for kind in ("weight", "bias")
] + ["prelu.weight"]


def write_pytorch_style(root: Path, steps: int = 8) -> Path:
    """The log directory of a PyTorch tutorial: five runs under
    ``lesson-19-tensorboard/runs/`` logging ``conv1.weight`` and ``conv1.weight_grad``
    and the rest, keys with no "/"; returns the log directory."""
    import numpy as np

    import histoscope

    rng = np.random.default_rng(3)
    folder = root / "lesson-19-tensorboard"
    for index, name in enumerate(PYTORCH_RUNS):
        with histoscope.init("runs", run_name=name, logdir=folder) as run:
            crashed = index == 0
            for step in range(1 if crashed else steps):
                for parameter in CNN_PARAMETERS[:1] if crashed else CNN_PARAMETERS:
                    values = rng.normal(size=300) * (1 + index) / (1 + step)
                    run.add_histogram(parameter, values, step=step * 50, bins=24)
                    run.add_histogram(parameter + "_grad", values * 1e-2, step=step * 50, bins=24)
    return root


def write_diverged_run(root: Path) -> Path:
    """Run ``r`` of project ``p`` under ``root``: its gradients turn NaN from step 6 of 10,
    one error finding for ``gradients/fc``; returns the log directory ``root / "p"``."""
    import numpy as np

    import histoscope

    with histoscope.init("p", run_name="r", logdir=root) as run:
        for step in range(10):
            gradients = np.random.default_rng(step).normal(size=500)
            if step >= 6:
                gradients[:5] = np.nan  # a diverged run: the diagnosis says so from step 6
            run.add_histogram("gradients/fc", gradients, step=step)
            run.add_histogram("parameters/fc", np.linspace(-1, 1, 500) * (1 + step), step=step)
    return root / "p"


def write_sweep(logdir: Path, runs: int = 50, keys: int = 100, steps: int = 3) -> Path:
    """A hyperparameter sweep: ``runs`` runs named by learning rate and seed, each logging
    ``keys`` keys (``layers.N.weight`` and the like) at ``steps`` steps; returns the log
    directory."""
    import numpy as np

    import histoscope

    rng = np.random.default_rng(0)
    values = rng.normal(size=(keys, 256))
    kinds = ["weight", "bias", "weight_grad", "bias_grad"]
    for index in range(runs):
        rate = 10 ** -(1 + 3 * index / runs)
        with histoscope.init(
            "sweep", run_name=f"lr_{rate:.2e}_seed{index % 5}", logdir=logdir
        ) as run:
            for step in range(steps):
                for key in range(keys):
                    spread = values[key] * (1 + 10 * step * rate) + index / runs
                    name = f"layers.{key // 4}.{kinds[key % 4]}"
                    run.add_histogram(name, spread, step=100 * step, bins=20)
    return logdir / "sweep"
