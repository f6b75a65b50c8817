"""``histoscope view``: a local web app over a log directory, following it as it grows.

Starlette serves the page, its assets and JSON endpoints; uvicorn runs it. A
request names runs and tags, never paths: runs are looked up among those found
under the log directory, assets in a fixed table, so nothing a request says
reaches the file system.
"""

from __future__ import annotations

import concurrent.futures
import functools
import html
import ipaddress
import json
import os
import socket
import sys
import threading
import time
import warnings
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Callable, TextIO

import numpy as np

from .. import _core
from .follow import BASIS_POINTS, SEGMENT_BYTES, LogdirIndex, RunIndex, SeriesView
from .page import MODULES, asset_text, vocabulary_script

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

__all__ = ["CSP", "allowed_hosts", "create_app", "overview_value", "serve"]

#: The most steps of one run one series answer holds; the page asks again for the rest.
SERIES_STEPS = 2000

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

#: The most steps a card's ridgeline or heatmap draws; the rest are thinned as maidr thins.
CARD_STEPS = 40
#: The most steps a row of the overview holds.
OVERVIEW_STEPS = 51
#: How old the findings of ``diagnose`` may be before the log directory is checked again.
FINDINGS_SECONDS = 10.0
#: The shared equal bins a card's series are rebinned onto.
CARD_BINS = 30

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
    layouts = _Layouts(os.fspath(logdir), refresh_seconds)
    _warm_up(index, layouts)
    findings = _Findings(os.fspath(logdir))
    routes = [
        Route("/", _page(logdir, index)),
        Route("/assets/{name}", _asset),
        Route("/favicon.ico", _no_icon),
        Route("/api/runs", _json(lambda request: _runs(index))),
        Route("/api/tags", _json(lambda request: _tags(index, layouts, request))),
        Route("/api/series", _json(lambda request: _series(index, request))),
        Route("/api/buckets", _json(lambda request: _buckets(index, request))),
        Route("/api/card", _json(lambda request: _card(index, request))),
        Route("/api/overview", _json(lambda request: _overview(index, request))),
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


class _NotFound(Exception):
    """A run or tag that does not exist: 404."""


class _BadRequest(Exception):
    """A query parameter that is missing or malformed: 400."""


def _warm_up(index: LogdirIndex, layouts: _Layouts) -> None:
    """Lists the runs, and starts reading those the page shows at first, with their
    declarations, so that reading overlaps the browser loading the page and its modules
    instead of waiting for the page's first requests."""
    first = index.runs()[:FIRST_SHOWN]
    if first:
        threading.Thread(
            target=_warm_runs, args=(index, layouts, first), name="histoscope-warm", daemon=True
        ).start()


def _warm_runs(index: LogdirIndex, layouts: _Layouts, names: list[str]) -> None:
    """Reads the first segments of ``names`` side by side; then, of each run small enough
    for the core to keep all its segments decoded, decodes those a card reads (the steps
    of its first key a card thins to), so the page's first cards are answered from the
    cache."""
    deadline = time.monotonic() + PRIME_SECONDS
    try:
        declared = _READERS.submit(layouts.declared, names)
        runs = [run for run in _READERS.map(index.run, names) if run is not None]
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
                for position in _core.thin_indices(len(view.steps), CARD_STEPS):
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
        except _NotFound as error:
            return JSONResponse({"error": str(error)}, status_code=404)
        except _BadRequest as error:
            return JSONResponse({"error": str(error)}, status_code=400)
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
        text = _encode(_runs(index)).decode()
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


def _runs(index: LogdirIndex) -> dict[str, Any]:
    return {"runs": index.runs(), "stats": list(_core.STAT_NAMES), "basis_points": BASIS_POINTS}


def _chosen_runs(index: LogdirIndex, request: Request) -> list[RunIndex]:
    """The runs named by ``run``, each brought up to date; several are read side by side
    (the core reads without the GIL), so a page's first answer waits for one run, not all."""
    names = request.query_params.getlist("run")
    if len(names) > 1:
        found = list(_READERS.map(index.run, names))
    else:
        found = [index.run(name) for name in names]
    runs = []
    for name, run in zip(names, found):
        if run is None:
            raise _NotFound(f"no run {name!r}")
        runs.append(run)
    return runs


_READERS = concurrent.futures.ThreadPoolExecutor(
    max_workers=min(8, os.cpu_count() or 1), thread_name_prefix="histoscope-run"
)


def _tag(request: Request) -> str:
    tag = request.query_params.get("tag")
    if not tag:
        raise _BadRequest("no tag given: tag=KEY is required")
    return tag


def _integer(request: Request, name: str, minimum: int | None = None) -> int | None:
    """The whole-number query parameter ``name``, None when absent; 400 when malformed."""
    text = request.query_params.get(name)
    if text is None or text == "":
        return None
    try:
        value = int(text)
    except ValueError:
        raise _BadRequest(f"{name} must be an integer, got {text!r}") from None
    if minimum is not None and value < minimum:
        raise _BadRequest(f"{name} must be at least {minimum}, got {value}")
    return value


def _tags(index: LogdirIndex, layouts: _Layouts, request: Request) -> dict[str, Any]:
    by_tag: dict[str, list[str]] = {}
    declared = _READERS.submit(layouts.declared, request.query_params.getlist("run"))
    runs = _chosen_runs(index, request)
    steps = [np.zeros(0, dtype=np.int64)]
    for run in runs:
        for tag, series in list(run.series.items()):
            by_tag.setdefault(tag, []).append(run.name)
            steps.append(series.view.steps)
    return {
        "tags": [{"tag": tag, "runs": by_tag[tag]} for tag in sorted(by_tag)],
        "versions": {run.name: run.version for run in runs},
        "reading": [run.name for run in runs if not run.caught_up],
        "layout": declared.result(),
        "steps": np.unique(np.concatenate(steps)),
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
        raise _BadRequest(f"since must be GENERATION:COUNT, two whole numbers, got {text!r}")
    return generation, count


def _buckets(index: LogdirIndex, request: Request) -> dict[str, Any]:
    """Each run's buckets at the last step at or before ``step``, and at the step before it."""
    tag = _tag(request)
    step = _integer(request, "step")
    if step is None:
        raise _BadRequest("step must be an integer, got nothing")
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


class _Layouts:
    """The ``define_metric`` declarations of each run, read on from where each file was left."""

    def __init__(self, logdir: str, refresh_seconds: float) -> None:
        self._logdir = logdir
        self._refresh_seconds = refresh_seconds
        self._files: dict[str, list[str]] = {}
        self._listed_at = -np.inf
        self._offsets: dict[str, int] = {}
        self._found: dict[str, list[dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def declared(self, runs: list[str]) -> list[dict[str, Any]]:
        """Every declaration of ``runs``, run by run in file order (a later one wins)."""
        with self._lock:
            if time.monotonic() - self._listed_at > self._refresh_seconds:
                found = _core.discover_runs(self._logdir)
                self._files = {run.name: list(run.files) for run in found}
                self._listed_at = time.monotonic()
            out: list[dict[str, Any]] = []
            for run in runs:
                for path in self._files.get(run, []):
                    try:
                        end, records = _core.read_layout(path, self._offsets.get(path, 0))
                    except OSError:  # removed since the listing: the next listing drops it
                        continue
                    self._offsets[path] = end
                    self._found.setdefault(run, []).extend(
                        {"pattern": r.pattern, "section": r.section, "hidden": r.hidden}
                        for r in records
                    )
                out.extend(self._found.get(run, []))
            return out


class _Findings:
    """``histoscope.diagnose`` over the log directory, run again at most every FINDINGS_SECONDS.

    Empty, with ``available`` false, where this histoscope has no ``diagnose``.
    """

    def __init__(self, logdir: str) -> None:
        self._logdir = logdir
        self._at = -np.inf
        self._found: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def answer(self) -> dict[str, Any]:
        from ..diagnose import diagnose

        with self._lock:
            if time.monotonic() - self._at > FINDINGS_SECONDS:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # damage is the follower's to report
                    self._found = [finding.to_dict() for finding in diagnose(self._logdir)]
                self._at = time.monotonic()
            return {"findings": self._found, "available": True}


def _card(index: LogdirIndex, request: Request) -> dict[str, Any]:
    """A card's series of ``tag``, rebinned onto shared equal bins across the chosen runs.

    Per run: up to ``steps`` steps between ``from`` and ``to`` (thinned as maidr
    thins), and the step at or before ``step`` with the one before it, all
    rebinned together by the core's overlap-proportional rebinning, so runs and
    steps compare bin for bin and PyTorch's narrow exponential buckets draw as
    densities instead of spikes.
    """
    tag = _tag(request)
    runs = _chosen_runs(index, request)
    chosen = _integer(request, "step")
    low, high = _integer(request, "from"), _integer(request, "to")
    if low is not None and high is not None and low > high:
        raise _BadRequest(f"from must not be after to, got from={low} to={high}")
    max_steps = min(_integer(request, "steps", 1) or CARD_STEPS, 1000)
    bins = min(_integer(request, "bins", 1) or CARD_BINS, 512)
    plans: list[tuple[RunIndex, SeriesView, list[int], int, int]] = []
    buckets: list[np.ndarray] = []
    for run in runs:
        index_of_tag = run.series.get(tag)
        if index_of_tag is None:
            continue
        view = index_of_tag.view
        lo = 0 if low is None else int(np.searchsorted(view.steps, low, side="left"))
        hi = len(view.steps) if high is None else int(np.searchsorted(view.steps, high, "right"))
        positions = [lo + int(i) for i in _core.thin_indices(hi - lo, max_steps)] if hi > lo else []
        end = len(view.steps) if chosen is None else np.searchsorted(view.steps, chosen, "right")
        current = int(end) - 1
        picked = positions + [p for p in (current, current - 1) if p >= 0]
        first = len(buckets)
        buckets += [index.buckets(run, tag, view, p) for p in picked]
        plans.append((run, view, positions, current, first))
    if not buckets:
        return {"tag": tag, "edges": [], "runs": []}
    rebinned = _core.rebin(buckets, bins)
    edges, counts = rebinned.edges, rebinned.counts
    out = []
    for run, view, positions, current, first in plans:
        rows = counts[first : first + len(positions) + min(current + 1, 2)]
        at = functools.partial(_counted_step, view, rows)
        out.append(
            {
                "run": run.name,
                "steps": view.steps[positions],
                "counts": rows[: len(positions)],
                "current": at(current, len(positions)),
                "previous": at(current - 1, len(positions) + 1),
                "first": int(view.steps[0]),
                "last": int(view.steps[-1]),
            }
        )
    return {"tag": tag, "edges": edges, "runs": out}


def _counted_step(
    view: SeriesView, rows: np.ndarray, position: int, row: int
) -> dict[str, Any] | None:
    """Step ``position`` of ``view`` with its rebinned counts ``rows[row]`` and its statistics."""
    if position < 0:
        return None
    stats = dict(zip(_core.STAT_NAMES, _numbers(view.stats[position])))
    return {"step": int(view.steps[position]), "counts": rows[row], "stats": stats}


#: What the overview can colour its cells by, from each step's statistics (or its percentiles).
OVERVIEW_STATS = ("std", "absmax", "zeros", "nonfinite", "mean")


def overview_value(
    stat: str, stats: np.ndarray, quantiles: np.ndarray, zeros: np.ndarray | None = None
) -> np.ndarray:
    """One statistic per step, from the (steps, 8) statistics and (steps, 9) percentiles,
    or ``zeros``, each step's share of values at exactly zero (the core's, as the
    diagnosis of dead units reads it).

    Where a writer stored no statistics (TensorFlow 2), the spread falls back to
    half the distance between the 15.87th and 84.13th percentiles (the standard
    deviation of a normal distribution), the extremes to the 0th and 100th.

    Example:
        >>> s = np.array([[4, -3, 2, 0, 1.5, 0, 0, 0]]); q = np.zeros((1, 9))
        >>> overview_value("absmax", s, q).tolist(), overview_value("std", s, q).tolist()
        ([3.0], [1.5])
    """
    names = list(_core.STAT_NAMES)
    column = {name: stats[:, names.index(name)] for name in ("min", "max", "mean", "std")}
    if stat == "std":
        return np.where(
            np.isnan(column["std"]), (quantiles[:, 6] - quantiles[:, 2]) / 2, column["std"]
        )
    if stat == "absmax":
        low = np.where(np.isnan(column["min"]), quantiles[:, 0], column["min"])
        high = np.where(np.isnan(column["max"]), quantiles[:, 8], column["max"])
        return np.maximum(np.abs(low), np.abs(high))
    if stat == "nonfinite":
        return np.nan_to_num(stats[:, names.index("nonfinite")])
    if stat == "zeros":
        return np.full(len(stats), np.nan) if zeros is None else zeros
    return np.where(np.isnan(column["mean"]), quantiles[:, 4], column["mean"])


def _overview(index: LogdirIndex, request: Request) -> dict[str, Any]:
    """For one run, every key's ``stat`` at up to OVERVIEW_STEPS steps shared by all keys.

    A key's cell holds its value at the last step it logged at or before the
    column's step, null before its first.
    """
    chosen = _chosen_runs(index, request)
    if len(chosen) != 1:
        raise _BadRequest(f"one run=NAME is required, got {len(chosen)}")
    run = chosen[0]
    stat = request.query_params.get("stat", "std")
    if stat not in OVERVIEW_STATS:
        raise _BadRequest(f"stat must be one of {', '.join(OVERVIEW_STATS)}, got {stat!r}")
    views = {tag: series.view for tag, series in sorted(run.series.items())}
    every = np.unique(np.concatenate([v.steps for v in views.values()] or [np.zeros(0, np.int64)]))
    columns = every[_core.thin_indices(len(every), OVERVIEW_STEPS)] if len(every) else every
    rows = {}
    for tag, view in views.items():
        values = overview_value(stat, view.stats, view.quantiles, view.zeros)
        at = np.searchsorted(view.steps, columns, side="right") - 1
        row = np.where(at >= 0, values[np.maximum(at, 0)], np.nan) if len(values) else at * np.nan
        rows[tag] = row
    return {"run": run.name, "stat": stat, "steps": columns, "rows": rows}


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
