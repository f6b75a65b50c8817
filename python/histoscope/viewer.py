"""``histoscope view``: a local web app over a log directory, following it as it grows.

Starlette serves the page, its assets and JSON endpoints; uvicorn runs it. A
request names runs and tags, never paths: runs are looked up among those found
under the log directory, assets in a fixed table, so nothing a request says
reaches the file system.
"""

from __future__ import annotations

import html
import ipaddress
import math
import os
import socket
import sys
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


def _json(handler: Callable[[Request], Any]) -> Callable[[Request], Response]:
    """A sync endpoint (Starlette runs it on a worker thread) answering JSON, 404 for unknowns."""
    from starlette.concurrency import run_in_threadpool
    from starlette.responses import JSONResponse

    async def endpoint(request: Request) -> Response:
        try:
            body = await run_in_threadpool(handler, request)
        except _NotFound as error:
            return JSONResponse({"error": str(error)}, status_code=404)
        return JSONResponse(body, headers={"Cache-Control": "no-store"})

    return endpoint


def _page(logdir: str) -> Callable[[Request], Response]:
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
    tag = _tag(request)
    out = []
    for run in _chosen_runs(index, request):
        series = run.series.get(tag)
        if series is None:
            continue
        series = series.view
        out.append(
            {
                "run": run.name,
                "steps": series.steps.tolist(),
                "wall_times": series.wall_times.tolist(),
                "stats": {
                    name: _numbers(series.stats[:, i]) for i, name in enumerate(_core.STAT_NAMES)
                },
                "quantiles": [_numbers(row) for row in series.quantiles],
            }
        )
    return {"tag": tag, "series": out}


def _buckets(index: LogdirIndex, request: Request) -> dict[str, Any]:
    """Each run's buckets at the last step at or before ``step``, and at the step before it."""
    tag = _tag(request)
    try:
        step = int(request.query_params.get("step", ""))
    except ValueError:
        raise _NotFound("step must be an integer") from None
    out = []
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
    buckets = index.buckets(run, tag, series, position)
    return {
        "step": int(series.steps[position]),
        "buckets": [_numbers(row) for row in buckets],
        "stats": dict(zip(_core.STAT_NAMES, _numbers(series.stats[position]))),
    }


def _numbers(values: np.ndarray) -> list[float | None]:
    """JSON has no NaN or infinity: those become null."""
    return [v if math.isfinite(v) else None for v in values.tolist()]
