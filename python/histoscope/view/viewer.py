"""``histoscope view``: a local web app over a log directory, following it as it grows.

Starlette serves the page, its assets and JSON endpoints; uvicorn runs it. A
request names runs and tags, never paths: runs are looked up among those found
under the log directory, assets in a fixed table, so nothing a request says
reaches the file system.
"""

from __future__ import annotations

import html
import ipaddress
import os
import socket
import sys
import threading
import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Callable, TextIO

from .. import _core
from ..errors import RequestError, RequestNotFoundError
from . import answers
from .follow import SEGMENT_BYTES, LogdirIndex
from .page import MODULES, asset_text, vocabulary_script
from .refreshed import Findings, Layouts

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

__all__ = ["CSP", "allowed_hosts", "create_app", "serve"]

_ASSETS = {
    "a11y.js": "text/javascript",
    "api.js": "text/javascript",
    "viewer.js": "text/javascript",
    "viewer.css": "text/css",
    **{name: "text/javascript" for name in MODULES},
}


#: How many runs the page shows before the user picks (MAX_SHOWN in app.js): the viewer
#: starts reading these as soon as it starts.
FIRST_SHOWN = 12


#: Runs of at most this many bytes are primed when the viewer starts: the core's run
#: loader keeps eight segments decoded, so all of such a run stays cached.
PRIMED_BYTES = 8 * SEGMENT_BYTES


#: How long after the viewer starts it may prime: about the time a browser takes to load
#: the page; later, priming would hold the run's loader while the page asks for its keys.
PRIME_SECONDS = 0.5


#: What every answer may load: its own scripts, styles and data, nothing else.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


def create_app(logdir: str, *, refresh_seconds: float = 1.0, host: str = "127.0.0.1") -> Starlette:
    """The viewer's ASGI app for ``logdir``; its runs are listed before it answers.

    Requests whose ``Host`` is neither ``host`` nor a loopback name are refused
    (400), so a web page the user visits cannot read the data through DNS
    rebinding; every answer carries a Content-Security-Policy and ``nosniff``.
    """
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.middleware.trustedhost import TrustedHostMiddleware
    from starlette.routing import Route

    index = LogdirIndex(os.fspath(logdir), refresh_seconds=refresh_seconds)
    layouts = Layouts(os.fspath(logdir), refresh_seconds)
    _warm_up(index, layouts)
    findings = Findings(os.fspath(logdir))
    routes = [
        Route("/", _page(logdir, index)),
        Route("/assets/{name}", _asset),
        Route("/favicon.ico", _no_icon),
        Route("/api/runs", _json(lambda request: answers.runs(index))),
        Route("/api/tags", _json(lambda request: answers.tags(index, layouts, request))),
        Route("/api/series", _json(lambda request: answers.series(index, request))),
        Route("/api/buckets", _json(lambda request: answers.buckets(index, request))),
        Route("/api/card", _json(lambda request: answers.card(index, request))),
        Route("/api/overview", _json(lambda request: answers.overview(index, request))),
        Route("/api/findings", _json(lambda request: findings.answer())),
    ]
    middleware = [
        Middleware(_SecurityHeaders),
        Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts(host)),
    ]
    return Starlette(routes=routes, middleware=middleware)


def allowed_hosts(host: str) -> list[str]:
    """The ``Host`` names a request to a server bound to ``host`` may carry.

    Loopback names always; the bound address itself; for a wildcard address
    (``0.0.0.0``, ``::``) the machine's own names and addresses, which is how
    other machines reach it.

    Example:
        >>> hosts = allowed_hosts("127.0.0.1")
        >>> "localhost" in hosts, "127.0.0.1" in hosts, "evil.example" in hosts
        (True, True, False)
    """
    names = {"localhost", "127.0.0.1", "::1", "[::1]", host, f"[{host}]" if ":" in host else host}
    if host in ("0.0.0.0", "::", ""):
        machine = socket.gethostname()
        names |= {machine, socket.getfqdn()}
        try:
            names |= set(socket.gethostbyname_ex(machine)[2])
        except OSError:  # a machine whose own name does not resolve: loopback still works
            pass
    return sorted(name for name in names if name)


class _SecurityHeaders:
    """Adds the Content-Security-Policy and ``nosniff`` to every answer, refusals included."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += [
                    (b"content-security-policy", CSP.encode()),
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"no-referrer"),
                ]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)


def serve(
    logdir: str, *, host: str = "127.0.0.1", port: int = 6006, out: TextIO = sys.stdout
) -> None:
    """Serves the viewer of ``logdir`` until interrupted; prints its address first."""
    import uvicorn

    if not os.path.isdir(logdir):
        raise FileNotFoundError(f"log directory not found: {logdir!r} is not a directory")
    if not _is_loopback(host):
        print(
            f"warning: serving on {host}, which other machines may reach: the histograms "
            "of this log directory become visible on the network to anyone who can connect",
            file=sys.stderr,
        )
    sock = _bind(host, port)
    app = create_app(logdir, host=host)
    shown = f"[{host}]" if ":" in host else host
    print(f"histoscope view: http://{shown}:{sock.getsockname()[1]}/ (Ctrl+C to stop)", file=out)
    out.flush()
    config = uvicorn.Config(app, log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as error:
        sock.close()
        raise OSError(f"cannot listen on {host}:{port}: {error.strerror}") from None
    sock.listen(128)
    return sock


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _warm_up(index: LogdirIndex, layouts: Layouts) -> None:
    """Lists the runs, and starts reading those the page shows at first, with their
    declarations, so that reading overlaps the browser loading the page and its modules
    instead of waiting for the page's first requests."""
    first = index.runs()[:FIRST_SHOWN]
    if first:
        threading.Thread(
            target=_warm_runs, args=(index, layouts, first), name="histoscope-warm", daemon=True
        ).start()


def _warm_runs(index: LogdirIndex, layouts: Layouts, names: list[str]) -> None:
    """Reads the first segments of ``names`` side by side; then, of each run small enough
    for the core to keep all its segments decoded, decodes those a card reads (the steps
    of its first key a card thins to), so the page's first cards are answered from the
    cache."""
    deadline = time.monotonic() + PRIME_SECONDS
    try:
        declared = answers.READERS.submit(layouts.declared, names)
        runs = [run for run in answers.READERS.map(index.run, names) if run is not None]
        declared.result()
        for run in runs:
            while not run.caught_up and time.monotonic() < deadline:
                time.sleep(0.01)
            if not run.caught_up or sum(run.offsets.values()) > PRIMED_BYTES:
                continue
            series = run.series
            if series:
                tag = min(series)
                view = series[tag].view
                for position in _core.thin_indices(len(view.steps), answers.CARD_STEPS):
                    if time.monotonic() > deadline:
                        return
                    index.buckets(run, tag, view, int(position))
    except Exception:  # noqa: BLE001 - the page's request meets the same error and reports it
        return


def _json(handler: Callable[[Request], Any]) -> Callable[[Request], Awaitable[Response]]:
    """A sync endpoint answering JSON, 404 for unknowns and 400 for malformed parameters.

    The handler runs and its answer is encoded on a worker thread, so a long
    series does not hold up the event loop serving the other requests.
    """
    from starlette.concurrency import run_in_threadpool
    from starlette.responses import JSONResponse, Response

    def answer(request: Request) -> Response:
        try:
            body = handler(request)
        except RequestNotFoundError as error:
            return JSONResponse({"error": str(error)}, status_code=404)
        except RequestError as error:
            return JSONResponse({"error": str(error)}, status_code=400)
        return Response(
            answers.encode(body),
            media_type="application/json",
            headers={"Cache-Control": "no-store"},
        )

    async def endpoint(request: Request) -> Response:
        return await run_in_threadpool(answer, request)

    return endpoint


def _page(logdir: str, index: LogdirIndex) -> Callable[[Request], Awaitable[Response]]:
    """The page, with the runs' listing in it: the page asks for the keys of its first runs
    at once, one round trip sooner than if it asked for the listing first."""
    from starlette.concurrency import run_in_threadpool
    from starlette.responses import HTMLResponse

    page = (
        asset_text("viewer.html")
        .replace("{title}", html.escape(f"histoscope: {os.path.abspath(logdir)}"))
        .replace(
            "{styles}",
            '<link rel="stylesheet" href="/assets/viewer.css">\n'
            # Every module asked for at once, not a level of imports per round trip.
            + "".join(
                f'<link rel="modulepreload" href="/assets/{name}">\n'
                for name in ("api.js", *MODULES)
            ),
        )
        .replace(
            "{scripts}",
            '<script type="application/json" id="histoscope-runs">{runs}</script>\n'
            + vocabulary_script()
            + '<script type="module" src="/assets/viewer.js"></script>',
        )
    )

    before, after = page.rsplit("{runs}", 1)  # the last: a title may hold "{runs}" too

    def listed() -> str:
        # As JSON that cannot end the script element, whatever a run is called.
        text = answers.encode(answers.runs(index)).decode()
        return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")

    async def endpoint(request: Request) -> Response:
        body = before + await run_in_threadpool(listed) + after
        return HTMLResponse(body, headers={"Cache-Control": "no-store"})

    return endpoint


async def _asset(request: Request) -> Response:
    from starlette.responses import Response

    name = request.path_params["name"]
    if name not in _ASSETS:
        return Response("not found", status_code=404, media_type="text/plain")
    return Response(asset_text(name), media_type=_ASSETS[name])


async def _no_icon(request: Request) -> Response:
    from starlette.responses import Response

    return Response(status_code=204)
