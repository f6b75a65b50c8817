"""`histoscope view`'s token: the printed address lets in, nothing else does, on loopback,
on every interface and behind a reverse proxy that strips a path prefix (Chromium)."""

from __future__ import annotations

import http.client
import http.server
import math
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from browser import Server, assert_accessible, chromium_path, serving
from playwright.sync_api import Browser, Page, expect

pytest_plugins = ["browser"]

#: Every ``api/`` answer the page asks for (api.js), and one the site does not have.
API_PATHS = [
    "api/runs",
    "api/tags?run=train",
    "api/series?tag=weights/dense&run=train",
    "api/buckets?tag=weights/dense&step=0&run=train",
    "api/card?tag=weights/dense&run=train",
    "api/overview?run=train&stat=std",
    "api/ranking?run=train&by=std_last",
    "api/compare?run=train&run=validation",
    "api/findings",
    "api/spectral?tag=weights/dense&run=train",
    "api/nothing",
]
#: What a refusal tells the one refused.
HOW_TO_GET_IN = "needs its token"
BASE64URL = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


@pytest.fixture(scope="module")
def logdir(fixtures: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("token")
    shutil.copytree(fixtures / "tf2_summary", root / "logs")
    return root / "logs"


server = serving("logdir", scope="module")


def _ask(url: str, path: str, headers: dict[str, str] | None = None) -> http.client.HTTPResponse:
    """The answer to a GET of ``path`` at the server of ``url``, its body read."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    connection.request("GET", path, headers=headers or {})
    response = connection.getresponse()
    response.body = response.read()  # type: ignore[attr-defined]
    connection.close()
    return response


def _assert_refused(response: http.client.HTTPResponse) -> None:
    assert response.status == 403
    assert HOW_TO_GET_IN in response.body.decode()  # type: ignore[attr-defined]
    assert response.getheader("set-cookie") is None
    assert response.getheader("referrer-policy") == "no-referrer"
    assert "default-src 'none'" in response.getheader("content-security-policy", "")


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0"])
def test_without_the_token_the_page_and_every_api_path_are_refused(logdir: Path, host: str) -> None:
    with Server(logdir, "--host", host) as running:
        for path in ["", *API_PATHS, "favicon.ico/../api/runs", "train/"]:
            _assert_refused(_ask(running.url, "/" + path))
        # The same paths with the cookie are answered: the refusals were the token's.
        for path in API_PATHS[:-1]:
            assert running.get("/" + path) in (200, 400), path
        assert running.get("/assets/viewer.js", cookie=False) == 200  # the package's code


def test_the_printed_address_holds_a_random_secret_of_at_least_128_bits(
    server: Server, logdir: Path
) -> None:
    assert server.address == f"{server.url}?token={server.token}"
    assert set(server.token) <= BASE64URL
    assert len(server.token) * math.log2(len(BASE64URL)) >= 128
    with Server(logdir) as other:
        assert other.token != server.token


def test_a_wrong_token_of_the_right_length_is_refused(server: Server) -> None:
    token = server.token
    wrong = token[:-1] + ("A" if token[-1] != "A" else "B")
    name = server.cookie().split("=", 1)[0]
    for path in ["/", "/api/runs"]:
        _assert_refused(_ask(server.url, f"{path}?token={wrong}"))
        _assert_refused(_ask(server.url, path, {"Cookie": f"{name}={wrong}"}))
        _assert_refused(_ask(server.url, path, {"Cookie": f"{name}={token[:-1]}"}))
    assert _ask(server.url, f"/api/runs?token={token}").status == 200  # a script's way in


def test_the_page_trades_the_token_for_a_strict_http_only_cookie(server: Server) -> None:
    answer = _ask(server.url, f"/?token={server.token}")
    assert answer.status == 200
    cookie = answer.getheader("set-cookie")
    name, value = cookie.split(";")[0].split("=", 1)
    assert value == server.token
    assert {part.strip() for part in cookie.split(";")[1:]} == {"HttpOnly", "SameSite=Strict"}
    assert _ask(server.url, "/api/runs", {"Cookie": f"other=1; {name}={value}"}).status == 200


def test_a_foreign_host_header_is_refused_even_with_the_token(server: Server) -> None:
    for path in [f"/?token={server.token}", f"/api/runs?token={server.token}"]:
        answer = _ask(server.url, path, {"Host": "evil.example", "Cookie": server.cookie()})
        assert answer.status == 400 and answer.getheader("set-cookie") is None


def _requests_of(page: Page) -> list[tuple[str, int]]:
    answered: list[tuple[str, int]] = []
    page.on("response", lambda response: answered.append((response.url, response.status)))
    return answered


def test_the_printed_address_draws_the_cards_and_later_requests_pass_by_the_cookie(
    browser: Browser, server: Server
) -> None:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    answered = _requests_of(page)
    page.goto(server.address + "#view=heatmap")
    cards = page.locator("article.card svg.panel")
    expect(cards).to_have_count(6, timeout=15000)
    assert page.url == server.url + "#view=heatmap"  # the token left the address bar
    asked = [url for url, _ in answered if "/api/" in url]
    assert asked and not any("token=" in url for url in asked)
    assert all(status < 400 for _, status in answered), answered
    (cookie,) = context.cookies()
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/"
    assert page.evaluate("document.cookie") == ""
    page.reload()
    expect(cards).to_have_count(6, timeout=15000)
    assert_accessible(page)
    context.close()


def test_a_page_whose_cookie_is_gone_says_how_to_get_in(browser: Browser, server: Server) -> None:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    raised: list[str] = []
    page.on("pageerror", lambda error: raised.append(str(error)))
    page.goto(server.address)
    expect(page.locator("article.card svg.panel")).to_have_count(6, timeout=15000)
    context.clear_cookies()
    # The next poll is refused: the status line, a live region, says how to get in.
    expect(page.locator("#status")).to_contain_text(HOW_TO_GET_IN, timeout=15000)
    again = context.new_page().goto(server.url)
    assert again is not None and again.status == 403
    context.close()
    assert raised == []


def test_a_token_from_the_option_or_the_environment_is_the_one_asked_for(logdir: Path) -> None:
    chosen, from_environment = "an-option-token-of-24-ch", "an_environment_token.0123~"
    env = {**os.environ, "HISTOSCOPE_TOKEN": from_environment}
    with Server(logdir, env=env) as running:
        assert running.token == from_environment
        assert running.get("/api/runs") == 200
    with Server(logdir, "--token", chosen, env=env) as running:
        assert running.token == chosen
        _assert_refused(_ask(running.url, f"/api/runs?token={from_environment}"))
        assert running.get("/api/runs") == 200


def _usage_error(*arguments: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "histoscope.cli", "view", *arguments],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert done.returncode == 2 and done.stdout == "", done
    return done.stderr


def test_a_bad_token_or_host_name_is_a_usage_error(logdir: Path) -> None:
    short = _usage_error(str(logdir), "--token", "hunter2")
    assert "argument --token: must be at least 22 characters, got 7" in short
    spaced = _usage_error(str(logdir), "--token", "a token with spaces in it")
    assert "argument --token: may hold only letters, digits and - . _ ~" in spaced
    schemed = _usage_error(str(logdir), "--allow-host", "https://hub.example.org:443")
    assert "argument --allow-host: must be a host name without scheme or port" in schemed
    both = _usage_error(str(logdir), "--no-token", "--token", "x" * 30)
    assert "not allowed with argument" in both
    env = {**os.environ, "HISTOSCOPE_TOKEN": ""}
    assert "HISTOSCOPE_TOKEN must be at least 22 characters, got 0" in _usage_error(
        str(logdir), env=env
    )


def test_no_token_serves_everyone_and_is_warned_about_off_loopback(logdir: Path) -> None:
    with Server(logdir, "--no-token") as running:
        assert running.token is None and running.address == running.url
        answer = _ask(running.url, "/api/runs")
        assert answer.status == 200 and answer.getheader("set-cookie") is None
    assert running.process.stderr.read() == ""
    with Server(logdir, "--no-token", "--host", "0.0.0.0") as open_to_all:
        assert _ask(open_to_all.url, "/").status == 200
    warned = open_to_all.process.stderr.read()
    assert "warning: serving on 0.0.0.0 with no token" in warned
    assert "visible on the network to anyone who can connect" in warned
    with Server(logdir, "--host", "0.0.0.0") as with_token:
        _assert_refused(_ask(with_token.url, "/"))
    noted = with_token.process.stderr.read()
    assert "note: serving on 0.0.0.0" in noted and "SSH tunnel" in noted
    assert "warning" not in noted


#: The name the browser reaches the proxy by, as it would a JupyterHub's: the test's
#: Chromium resolves it to loopback.
PUBLIC_NAME = "hub.histoscope.test"


class _StrippingProxy(http.server.BaseHTTPRequestHandler):
    """A reverse proxy as jupyter-server-proxy is one: ``/proxy/<port>/<path>`` is asked
    of ``127.0.0.1:<port>`` as ``/<path>``, the prefix stripped, with the browser's
    headers (its ``Host`` and cookies among them) passed on; the answer comes back
    whole, its headers (``Set-Cookie`` among them) as they were."""

    HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "upgrade"}

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        match = re.fullmatch(r"/proxy/(\d+)(/.*)", self.path)
        if match is None:
            self.send_error(404)
            return
        port, path = match.groups()
        headers = {k: v for k, v in self.headers.items() if k.lower() not in self.HOP_BY_HOP}
        connection = http.client.HTTPConnection("127.0.0.1", int(port), timeout=30)
        connection.request("GET", path, headers=headers)
        answer = connection.getresponse()
        body = answer.read()
        connection.close()
        self.send_response(answer.status)
        for name, value in answer.getheaders():
            if name.lower() not in self.HOP_BY_HOP | {"content-length"}:
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def proxy() -> Iterator[int]:
    """The port of a `_StrippingProxy` on loopback."""
    listening = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _StrippingProxy)
    thread = threading.Thread(target=listening.serve_forever, daemon=True)
    thread.start()
    try:
        yield listening.server_address[1]
    finally:
        listening.shutdown()
        listening.server_close()
        thread.join(timeout=10)


@pytest.fixture
def hub_browser(browser: Browser) -> Iterator[Browser]:
    """Chromium that reaches `PUBLIC_NAME` on this machine."""
    rule = f"--host-resolver-rules=MAP {PUBLIC_NAME} 127.0.0.1"
    launched = browser.browser_type.launch(
        executable_path=chromium_path(), headless=True, args=[rule]
    )
    yield launched
    launched.close()


def test_behind_a_proxy_the_name_it_passes_on_is_refused_unless_allowed(
    server: Server, proxy: int
) -> None:
    prefix = f"/proxy/{urlsplit(server.url).port}/"
    via_hub = {"Host": f"{PUBLIC_NAME}:{proxy}", "Cookie": server.cookie()}
    assert _ask(f"http://127.0.0.1:{proxy}", prefix + "api/runs", via_hub).status == 400
    loopback = {"Host": f"127.0.0.1:{proxy}", "Cookie": server.cookie()}
    assert _ask(f"http://127.0.0.1:{proxy}", prefix + "api/runs", loopback).status == 200


def test_the_viewer_under_a_path_prefix_behind_a_proxy_draws_the_cards(
    hub_browser: Browser, logdir: Path, proxy: int
) -> None:
    with Server(logdir, "--allow-host", PUBLIC_NAME) as running:
        prefix = f"http://{PUBLIC_NAME}:{proxy}/proxy/{urlsplit(running.url).port}/"
        _assert_refused(_ask(f"http://127.0.0.1:{proxy}", urlsplit(prefix).path, {
            "Host": f"{PUBLIC_NAME}:{proxy}"}))  # fmt: skip
        context = hub_browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        answered = _requests_of(page)
        page.goto(f"{prefix}?token={running.token}")
        cards = page.locator("article.card svg.panel")
        expect(cards).to_have_count(6, timeout=15000)
        assert page.url == prefix
        assert any("/api/card?" in url for url, _ in answered)
        assert all(url.startswith(prefix) and status < 400 for url, status in answered), answered
        (cookie,) = context.cookies()
        assert cookie["path"] == urlsplit(prefix).path.rstrip("/")  # kept for the prefix only
        page.reload()
        expect(cards).to_have_count(6, timeout=15000)
        context.close()
