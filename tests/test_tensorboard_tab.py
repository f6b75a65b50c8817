"""The HISTOSCOPE tab: real `tensorboard --logdir` loading histoscope's plugin through its
entry point, the tab driven in headless Chromium."""

from __future__ import annotations

import http.client
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from browser import assert_accessible
from playwright.sync_api import Browser, Frame, Page, expect

from histoscope.view import tensorboard_plugin, viewer

pytest_plugins = ["browser"]  # the browser and screenshot fixtures

if sys.version_info >= (3, 11):
    import tomllib
else:  # the test extra installs tomli there
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
MOUNT = "/data/plugin/histoscope/"


def declared_entry_point() -> importlib.metadata.EntryPoint:
    """The plugin as pyproject.toml declares it to TensorBoard."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    (name, value), *others = project["entry-points"]["tensorboard_plugins"].items()
    assert others == []
    return importlib.metadata.EntryPoint(name, value, "tensorboard_plugins")


def test_pyproject_declares_the_plugin_and_the_extra() -> None:
    entry = declared_entry_point()
    assert entry.name == "histoscope"
    assert entry.load() is tensorboard_plugin.HistoscopePlugin
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert any(r.startswith("tensorboard") for r in project["optional-dependencies"]["tensorboard"])
    assert not any(r.startswith("tensorboard") for r in project["dependencies"])


def installed_site(folder: Path) -> Path:
    """A folder to put on PYTHONPATH that declares the entry point to TensorBoard as an
    installed histoscope does; left empty where the installed histoscope declares it."""
    installed = importlib.metadata.entry_points(group="tensorboard_plugins")
    if any(entry.name == "histoscope" for entry in installed):
        return folder
    entry = declared_entry_point()
    info = folder / "histoscope_tab_probe-0.dist-info"
    info.mkdir(parents=True)
    metadata = "Metadata-Version: 2.1\nName: histoscope-tab-probe\nVersion: 0\n"
    (info / "METADATA").write_text(metadata)
    (info / "entry_points.txt").write_text(f"[tensorboard_plugins]\n{entry.name} = {entry.value}\n")
    return folder


class TensorBoard:
    """`tensorboard --logdir` on a free port, in a subprocess, with the plugin installed."""

    def __init__(self, logdir: Path, site: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(site)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tensorboard.main", "--logdir", str(logdir)]
            + ["--port", "0", "--host", "127.0.0.1"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        deadline = time.monotonic() + 180  # TensorBoard imports TensorFlow where installed
        lines = []
        while time.monotonic() < deadline:
            line = self.process.stderr.readline()
            lines.append(line)
            found = re.search(r"TensorBoard \S+ at (http://\S+/)", line)
            if found:
                self.url = found.group(1)
                return
            if not line and self.process.poll() is not None:
                break
        self.process.kill()
        pytest.fail("TensorBoard printed no address: " + "".join(lines[-20:]))

    def answer(self, path: str, host: str | None = None) -> http.client.HTTPResponse:
        parts = urlsplit(self.url)
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        connection.request("GET", path, headers={"Host": host} if host else {})
        response = connection.getresponse()
        response.read()
        connection.close()
        return response

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


@pytest.fixture(scope="module")
def tensorboard(fixtures: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TensorBoard]:
    root = tmp_path_factory.mktemp("tab")
    shutil.copytree(fixtures / "tf2_summary", root / "logs")
    running = TensorBoard(root / "logs", installed_site(root / "site"))
    try:
        yield running
    finally:
        running.stop()


def tab_frame(page: Page) -> Frame:
    """The frame TensorBoard gives the tab, once histoscope's page is in it."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for frame in page.frames:
            if frame.url.split("?")[0].endswith(MOUNT + "index.html"):
                return frame
        page.wait_for_timeout(200)
    raise AssertionError(f"no histoscope frame among {[f.url for f in page.frames]}")


def test_the_tab_appears_draws_cards_and_passes_axe(
    tensorboard: TensorBoard, browser: Browser, screenshot
) -> None:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(tensorboard.url)
    tab = page.get_by_role("tab", name=re.compile("^histoscope$", re.I))
    expect(tab).to_be_visible(timeout=60000)
    assert tab.evaluate("e => e.innerText.trim()") == "HISTOSCOPE"
    tab.click()
    frame = tab_frame(page)
    expect(frame.locator("article.card svg.panel path.current")).to_have_count(6, timeout=60000)
    expect(frame.locator("#status")).to_have_text("2 runs (2 shown), 3 histogram keys")
    chart = frame.locator('article.card[data-tag="weights/dense"] .chart')
    chart.focus()
    page.keyboard.press("Home")
    expect(frame.locator('article.card[data-tag="weights/dense"] .announcement')).to_contain_text(
        "train, step 19, "
    )
    screenshot(page, "tensorboard_tab", full_page=False)
    assert_accessible(frame)
    context.close()
    assert errors == [], errors


def test_the_tab_has_the_viewers_security_headers_and_host_rules(
    tensorboard: TensorBoard,
) -> None:
    port = urlsplit(tensorboard.url).port
    for path, host, status in [
        (MOUNT + "index.html", f"localhost:{port}", 200),
        (MOUNT + "api/runs", f"127.0.0.1:{port}", 200),
        (MOUNT + "assets/app.js", None, 200),
        (MOUNT + "index.js", None, 200),
        (MOUNT + "assets/nothing.js", None, 404),
        (MOUNT + "assets/..%2F..%2Fsite.py", None, 404),
        (MOUNT + "api/series?tag=weights/dense&run=../../etc", None, 404),
        (MOUNT + "api/card?run=train", None, 400),
        (MOUNT + "index.html", "evil.example", 400),
        (MOUNT + "api/runs", "evil.example:6006", 400),
    ]:
        response = tensorboard.answer(path, host)
        assert response.status == status, path
        assert response.getheader("x-content-type-options") == "nosniff"
        # the viewer's policy, save that TensorBoard's own page may frame the tab
        policy = response.getheader("content-security-policy")
        assert policy == viewer.CSP.replace("frame-ancestors 'none'", "frame-ancestors 'self'")
