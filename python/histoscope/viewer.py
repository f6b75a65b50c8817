"""``histoscope view``: a local web app over a log directory, following it as it grows.

Starlette serves the page, its assets and JSON endpoints; uvicorn runs it. A
request names runs and tags, never paths: runs are looked up among those found
under the log directory, assets in a fixed table, so nothing a request says
reaches the file system.
"""

from __future__ import annotations

import html
import ipaddress
import json
import os
import socket
import sys
import threading
from collections.abc import Awaitable
from importlib import resources
from typing import TYPE_CHECKING, Any, Callable, TextIO

import numpy as np

from . import _core
from .follow import BASIS_POINTS, LogdirIndex, RunIndex, SeriesView

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

__all__ = ["create_app", "serve"]

#: The most steps of one run one series answer holds; the page asks again for the rest.
SERIES_STEPS = 2000

_ASSETS = {
    "a11y.js": "text/javascript",
    "viewer.js": "text/javascript",
    "viewer.css": "text/css",
}


def create_app(logdir: str, *, refresh_seconds: float = 1.0) -> Starlette:
    """The viewer's ASGI app for ``logdir``; its runs are listed before it answers."""
    from starlette.applications import Starlette
    from starlette.routing import Route

    index = LogdirIndex(os.fspath(logdir), refresh_seconds=refresh_seconds)
    index.runs()
    routes = [
        Route("/", _page(logdir)),
        Route("/assets/{name}", _asset),
        Route("/favicon.ico", _no_icon),
        Route("/api/runs", _json(lambda request: _runs(index))),
        Route("/api/tags", _json(lambda request: _tags(index, request))),
        Route("/api/series", _json(lambda request: _series(index, request))),
        Route("/api/buckets", _json(lambda request: _buckets(index, request))),
    ]
    return Starlette(routes=routes)


def serve(
    logdir: str, *, host: str = "127.0.0.1", port: int = 6006, out: TextIO = sys.stdout
) -> None:
    """Serves the viewer of ``logdir`` until interrupted; prints its address first."""
    import uvicorn

    if not os.path.isdir(logdir):
        raise FileNotFoundError(f"log directory not found: {logdir!r} is not a directory")
    if not _is_loopback(host):
        print(
            f"warning: serving on {host}, which other machines may reach: anyone who can "
            "connect can read the histograms of this log directory",
            file=sys.stderr,
        )
    sock = _bind(host, port)
    app = create_app(logdir)
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


class _NotFound(Exception):
    pass


def _json(handler: Callable[[Request], Any]) -> Callable[[Request], Awaitable[Response]]:
    """A sync endpoint answering JSON, 404 for unknowns.

    The handler runs and its answer is encoded on a worker thread, so a long
    series does not hold up the event loop serving the other requests.
    """
    from starlette.concurrency import run_in_threadpool
    from starlette.responses import JSONResponse, Response

    def answer(request: Request) -> Response:
        try:
            body = handler(request)
        except _NotFound as error:
            return JSONResponse({"error": str(error)}, status_code=404)
        return Response(
            _encode(body), media_type="application/json", headers={"Cache-Control": "no-store"}
        )

    async def endpoint(request: Request) -> Response:
        return await run_in_threadpool(answer, request)

    return endpoint


# One answer is encoded at a time: encoding holds the GIL anyway, and this way at
# most one answer's numbers exist as Python objects at once.
_ENCODING = threading.Lock()


def _encode(body: Any) -> bytes:
    """``body`` as JSON, NumPy arrays turned into lists one at a time as they are written."""
    with _ENCODING:
        text = json.dumps(body, default=_numbers, allow_nan=False, separators=(",", ":"))
    return text.encode()


def _page(logdir: str) -> Callable[[Request], Awaitable[Response]]:
    from starlette.responses import HTMLResponse

    text = _read_asset("viewer.html")
    page = text.replace("{title}", html.escape(f"histoscope: {os.path.abspath(logdir)}"))

    async def endpoint(request: Request) -> Response:
        return HTMLResponse(page)

    return endpoint


async def _asset(request: Request) -> Response:
    from starlette.responses import Response

    name = request.path_params["name"]
    if name not in _ASSETS:
        return Response("not found", status_code=404, media_type="text/plain")
    return Response(_read_asset(name), media_type=_ASSETS[name])


async def _no_icon(request: Request) -> Response:
    from starlette.responses import Response

    return Response(status_code=204)


def _read_asset(name: str) -> str:
    return resources.files(__package__).joinpath("_assets", name).read_text(encoding="utf-8")


def _runs(index: LogdirIndex) -> dict[str, Any]:
    return {"runs": index.runs(), "stats": list(_core.STAT_NAMES), "basis_points": BASIS_POINTS}


def _chosen_runs(index: LogdirIndex, request: Request) -> list[RunIndex]:
    runs = []
    for name in request.query_params.getlist("run"):
        run = index.run(name)
        if run is None:
            raise _NotFound(f"no run {name!r}")
        runs.append(run)
    return runs


def _tag(request: Request) -> str:
    tag = request.query_params.get("tag")
    if not tag:
        raise _NotFound("no tag given")
    return tag


def _tags(index: LogdirIndex, request: Request) -> dict[str, Any]:
    by_tag: dict[str, list[str]] = {}
    runs = _chosen_runs(index, request)
    for run in runs:
        for tag in list(run.series):
            by_tag.setdefault(tag, []).append(run.name)
    return {
        "tags": [{"tag": tag, "runs": by_tag[tag]} for tag in sorted(by_tag)],
        "versions": {run.name: run.version for run in runs},
        "reading": [run.name for run in runs if not run.caught_up],
    }


def _series(index: LogdirIndex, request: Request) -> dict[str, Any]:
    """Each run's index of ``tag`` from the ``since`` given for the run, at most SERIES_STEPS steps.

    ``since`` is repeated in the order of ``run``, as ``GENERATION:COUNT`` of the
    steps the page holds; the answer's ``from`` says where its steps go, 0 when
    a restart since then rewrote steps the page holds, and ``more`` whether
    steps are left to ask for. Answers stay small however far the reading has
    gone, so the first cards need not wait for a long run's whole index.
    """
    tag = _tag(request)
    runs = _chosen_runs(index, request)
    held = [_since(text) for text in request.query_params.getlist("since")]
    out = []
    for position, run in enumerate(runs):
        index_of_tag = run.series.get(tag)
        if index_of_tag is None:
            continue
        generation, series = index_of_tag.snapshot()
        since = held[position] if position < len(held) else None
        start = (
            since[1] if since and since[0] == generation and since[1] <= len(series.steps) else 0
        )
        more = len(series.steps) > start + SERIES_STEPS
        series = series.rows(start, start + SERIES_STEPS)
        out.append(
            {
                "run": run.name,
                "generation": generation,
                "from": start,
                "more": more,
                "steps": series.steps,
                "wall_times": series.wall_times,
                "stats": {name: series.stats[:, i] for i, name in enumerate(_core.STAT_NAMES)},
                "quantiles": series.quantiles,
            }
        )
    return {"tag": tag, "series": out}


def _since(text: str) -> tuple[int, int] | None:
    if not text:
        return None
    try:
        generation, count = (int(part) for part in text.split(":"))
    except ValueError:
        generation = count = -1
    if generation < 0 or count < 0:
        raise _NotFound(f"since must be GENERATION:COUNT, two whole numbers, got {text!r}")
    return generation, count


def _buckets(index: LogdirIndex, request: Request) -> dict[str, Any]:
    """Each run's buckets at the last step at or before ``step``, and at the step before it."""
    tag = _tag(request)
    try:
        step = int(request.query_params.get("step", ""))
    except ValueError:
        raise _NotFound("step must be an integer") from None
    out: list[dict[str, Any]] = []
    for run in _chosen_runs(index, request):
        index_of_tag = run.series.get(tag)
        if index_of_tag is None:
            continue
        series = index_of_tag.view
        position = int(np.searchsorted(series.steps, step, side="right")) - 1
        if position < 0:
            out.append({"run": run.name, "current": None, "previous": None})
            continue
        out.append(
            {
                "run": run.name,
                "current": _step(index, run, tag, series, position),
                "previous": _step(index, run, tag, series, position - 1) if position else None,
            }
        )
    return {"tag": tag, "step": step, "runs": out}


def _step(
    index: LogdirIndex, run: RunIndex, tag: str, series: SeriesView, position: int
) -> dict[str, Any]:
    return {
        "step": int(series.steps[position]),
        "buckets": index.buckets(run, tag, series, position),
        "stats": dict(zip(_core.STAT_NAMES, _numbers(series.stats[position]))),
    }


def _numbers(values: Any) -> Any:
    """A NumPy array or number as JSON can hold it: NaN and infinities become null."""
    if not isinstance(values, (np.ndarray, np.generic)):
        raise TypeError(f"{type(values).__name__} is not JSON serializable")
    held = np.asarray(values)
    if held.dtype.kind != "f":
        return held.tolist()
    out = held.astype(object)
    out[~np.isfinite(held)] = None
    return out.tolist()
