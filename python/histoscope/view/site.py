"""The viewer's site over one log directory, whatever server carries it.

`Site` answers a request given as its path (relative to where the site is
mounted), its query string and its ``Host``: the page with the runs' listing in
it, the assets from a fixed table, and the JSON answers of `answers`. A request
names runs and tags, never paths: runs are looked up among those found under the
log directory, assets in the table, so nothing a request says reaches the file
system. Every answer, refusals included, carries the same Content-Security-Policy,
``nosniff`` and ``Referrer-Policy: no-referrer`` (so an address with a token never
leaves through a link); a ``Host`` the site does not answer to is refused (400), so
a web page the user visits cannot read the data through DNS rebinding. A site made
with a token answers the page and its data only to requests that carry it
(`access.TokenGate`).

``histoscope view`` serves it with Starlette (`viewer`); TensorBoard's
histoscope tab with TensorBoard's own WSGI server (`tensorboard_plugin`).
"""

from __future__ import annotations

import html
import ipaddress
import os
import socket
import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any, Callable, NamedTuple, TextIO

from .. import _core
from ..errors import RequestError, RequestNotFoundError
from ..progress import Progress
from ..read.spool import RemoteLogdir, is_url
from . import answers, orders
from .access import REFUSAL, TokenGate
from .follow import DEFAULT_CACHE_BYTES, SEGMENT_BYTES, STOPPING, LogdirIndex, in_background
from .page import MODULES, asset_text, vocabulary_script
from .refreshed import Findings, Layouts
from .spectral import SpectralTrends

ASSETS = {
    "api.js": "text/javascript",
    "viewer.js": "text/javascript",
    "viewer.css": "text/css",
    **{name: "text/javascript" for name in MODULES},
}

#: How many runs the page shows before the user picks (MAX_SHOWN in app.js): the site
#: starts reading these as soon as it starts.
FIRST_SHOWN = 10

#: Runs of at most this many bytes are primed when the site starts, while the cache of
#: buckets has room for all of them.
PRIMED_BYTES = 8 * SEGMENT_BYTES

#: How many times its size on disk a run takes decoded: (left, right, count) per bucket
#: where a file stores (right, count).
DECODED_PER_BYTE = 2

#: How often the progress of the first read is redrawn.
PROGRESS_SECONDS = 0.2

#: How long after the site starts it may prime: about the time a browser takes to load
#: the page; later, priming would hold the run's loader while the page asks for its keys.
PRIME_SECONDS = 0.5


def content_security_policy(framed_by_self: bool = False) -> str:
    """What every answer may load: its own scripts, styles and data, nothing else.

    ``framed_by_self``: pages of the same origin may frame the site, as TensorBoard's page
    frames its tabs; otherwise no page may.

    Example:
        >>> "frame-ancestors 'none'" in content_security_policy()
        True
        >>> "frame-ancestors 'self'" in content_security_policy(framed_by_self=True)
        True
    """
    ancestors = "'self'" if framed_by_self else "'none'"
    return (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        f"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors {ancestors}"
    )


def allowed_hosts(host: str, also: Iterable[str] = ()) -> list[str]:
    """The ``Host`` names a request to a server bound to ``host`` may carry.

    Loopback names always; the bound address itself; for a wildcard address
    (``0.0.0.0``, ``::``) the machine's own names and addresses, which is how
    other machines reach it; and the names ``also`` holds (``--allow-host``: the
    name a reverse proxy passes on from the browser, as jupyter-server-proxy does).

    Example:
        >>> hosts = allowed_hosts("127.0.0.1", also=["hub.example"])
        >>> "localhost" in hosts, "hub.example" in hosts, "evil.example" in hosts
        (True, True, False)
    """
    names = {"localhost", "127.0.0.1", "::1", "[::1]", host, f"[{host}]" if ":" in host else host}
    names |= {name.lower() for name in also}
    if host in ("0.0.0.0", "::", ""):
        machine = socket.gethostname()
        names |= {machine, socket.getfqdn()}
        try:
            names |= set(socket.gethostbyname_ex(machine)[2])
        except OSError:  # a machine whose own name does not resolve: loopback still works
            pass
    return sorted(name for name in names if name)


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only.

    Example:
        >>> is_loopback("localhost"), is_loopback("::1"), is_loopback("0.0.0.0")
        (True, True, False)
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Answer(NamedTuple):
    """An answer as any server sends it: status, body, media type and every header."""

    status: int
    body: bytes
    media_type: str
    headers: list[tuple[str, str]]


class Site:
    """The page, assets and JSON answers over ``logdir``; its runs are listed, and the
    first of them read, as it is made.

    ``host`` is the address the server listens on and ``allow_hosts`` more names to
    answer to (the ``Host`` rules, see `allowed_hosts`); ``framed_by_self`` lets pages
    of the same origin frame the site;
    ``cache_bytes`` caps the buckets read again kept for all runs together; on a terminal
    ``progress``, the first read of the runs shown at first draws its progress line.
    With a ``token``, only requests carrying it get the page and the ``api/`` answers
    (`access.TokenGate`); without, as in TensorBoard's tab, every request does.

    ``logdir`` may be an fsspec URL (``storage_options`` as for `histoscope.load_histograms`),
    or ``remote`` the one it names, already open: its events files are followed into a
    private spool (`histoscope.read.spool.RemoteLogdir`), which `close` deletes, and read
    from there as a local directory's are. A URL with no events files is refused
    (FileNotFoundError).
    """

    def __init__(
        self,
        logdir: str,
        *,
        refresh_seconds: float = 1.0,
        host: str = "127.0.0.1",
        framed_by_self: bool = False,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
        progress: TextIO | None = None,
        storage_options: Mapping[str, Any] | None = None,
        remote: RemoteLogdir | None = None,
        token: str | None = None,
        allow_hosts: Iterable[str] = (),
    ) -> None:
        self.gate = None if token is None else TokenGate(token)
        self.logdir = os.fspath(logdir)
        if remote is None and is_url(self.logdir):
            remote = RemoteLogdir.open(self.logdir, storage_options)
        self.remote = remote
        local = self.logdir if remote is None else remote.root
        self.index = LogdirIndex(
            local, refresh_seconds=refresh_seconds, cache_bytes=cache_bytes, remote=remote
        )
        if remote is not None and not self.index.runs():
            remote.close()
            raise FileNotFoundError(f"no events files (*tfevents*) under {self.logdir!r}")
        self.layouts = Layouts(local, refresh_seconds)
        self.findings = Findings(local)
        self.spectral = SpectralTrends(local, refresh_seconds)
        # Host names are case-insensitive: compared in lower case.
        self.hosts = frozenset(name.lower() for name in allowed_hosts(host, allow_hosts))
        self.security = [
            ("Content-Security-Policy", content_security_policy(framed_by_self)),
            ("X-Content-Type-Options", "nosniff"),
            ("Referrer-Policy", "no-referrer"),
        ]
        self._page = _page_halves(self.logdir)
        self._api: dict[str, Callable[[answers.Query], Any]] = {
            "runs": lambda query: answers.runs(self.index),
            "tags": lambda query: answers.tags(self.index, self.layouts, query),
            "series": lambda query: answers.series(self.index, query),
            "buckets": lambda query: answers.buckets(self.index, query),
            "card": lambda query: answers.card(self.index, query),
            "overview": lambda query: answers.overview(self.index, query),
            "ranking": lambda query: orders.ranking(self.index, query),
            "compare": lambda query: orders.compare(self.index, query),
            "findings": lambda query: self.findings.answer(),
            "spectral": lambda query: self.spectral.trend(
                query.get("tag") or "", query.getlist("run")
            ),
        }
        warm = _warm_up(self.index, self.layouts, progress)
        #: Reads the runs the page does not show at first, after those it does.
        self.indexing = self.index.index_every_run(after=warm)

    def close(self) -> None:
        """Deletes what the site keeps on disk: a remote log directory's spool."""
        if self.remote is not None:
            self.remote.close()

    def allows(self, host_header: str) -> bool:
        """Whether a request carrying ``host_header`` (``name`` or ``name:port``) is answered.

        Example:
            >>> site = Site("examples/logdir")
            >>> site.allows("localhost:6006"), site.allows("[::1]:80"), site.allows("evil.example")
            (True, True, False)
        """
        name = host_header.strip()
        if name.startswith("["):
            name = name[: name.find("]") + 1]
        elif name.count(":") == 1:
            name = name.split(":", 1)[0]
        return name.lower() in self.hosts

    def answer(self, path: str, query: str, host_header: str, cookie_header: str = "") -> Answer:
        """The answer to a GET of ``path`` (without the site's mount point and leading
        slash: ``""`` is the page) with ``query``, from a client that sent ``host_header``
        and ``cookie_header``."""
        if not self.allows(host_header):
            return self._plain(400, "Invalid host header")
        # The assets are the package's own code, the same for everyone: no token needed.
        if path == "favicon.ico":
            return Answer(204, b"", "text/plain", list(self.security))
        folder, _, name = path.partition("/")
        if folder == "assets" and name in ASSETS:
            return self._respond(200, asset_text(name).encode(), ASSETS[name] + "; charset=utf-8")
        if self.gate is not None and self.gate.refuses(query, cookie_header):
            return self._plain(403, REFUSAL)
        if path == "":
            page = self.page().encode()
            answer = self._respond(200, page, "text/html; charset=utf-8", no_store=True)
            if self.gate is not None:
                answer.headers.extend(self.gate.set_cookie(query))
            return answer
        if folder == "api" and name in self._api:
            return self._json(self._api[name], answers.Query(query))
        return self._plain(404, "not found")

    def page(self) -> str:
        """The page, with the runs' listing in it: the page asks for the keys of its first
        runs at once, one round trip sooner than if it asked for the listing first."""
        # As JSON that cannot end the script element, whatever a run is called.
        text = answers.encode(answers.runs(self.index)).decode()
        listed = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
        before, after = self._page
        return before + listed + after

    def _json(self, handler: Callable[[answers.Query], Any], query: answers.Query) -> Answer:
        """JSON, 404 for an unknown run and 400 for malformed parameters."""
        try:
            body = answers.encode(handler(query))
        except RequestNotFoundError as error:
            return self._respond(404, answers.encode({"error": str(error)}), "application/json")
        except RequestError as error:
            return self._respond(400, answers.encode({"error": str(error)}), "application/json")
        return self._respond(200, body, "application/json", no_store=True)

    def _respond(self, status: int, body: bytes, media_type: str, no_store: bool = False) -> Answer:
        cache = [("Cache-Control", "no-store")] if no_store else []
        return Answer(status, body, media_type, [*self.security, *cache])

    def _plain(self, status: int, text: str) -> Answer:
        return self._respond(status, text.encode(), "text/plain; charset=utf-8")


def _page_halves(logdir: str) -> tuple[str, str]:
    """The page before and after the runs' listing; every address in it is relative, so
    it works wherever the site is mounted."""
    shown = logdir if is_url(logdir) else os.path.abspath(logdir)
    page = (
        asset_text("viewer.html")
        .replace("{title}", html.escape(f"histoscope: {shown}"))
        .replace(
            "{styles}",
            '<link rel="stylesheet" href="assets/viewer.css">\n'
            # Every module asked for at once, not a level of imports per round trip.
            + "".join(
                f'<link rel="modulepreload" href="assets/{name}">\n'
                for name in ("api.js", *MODULES)
            ),
        )
        .replace(
            "{scripts}",
            '<script type="application/json" id="histoscope-runs">{runs}</script>\n'
            + vocabulary_script()
            + '<script type="module" src="assets/viewer.js"></script>',
        )
    )
    before, after = page.rsplit("{runs}", 1)  # the last: a title may hold "{runs}" too
    return before, after


def _warm_up(
    index: LogdirIndex, layouts: Layouts, progress: TextIO | None
) -> threading.Thread | None:
    """Lists the runs, and starts reading those the page shows at first, with their
    declarations, so that reading overlaps the browser loading the page and its modules
    instead of waiting for the page's first requests. Returns the reading thread."""
    first = index.runs()[:FIRST_SHOWN]
    warm = None
    if first:
        warm = in_background(lambda: _warm_runs(index, layouts, first), "histoscope-warm")
        files = [path for name in first for path in index.files(name)]
        line = Progress.on(progress, "reading", files=len(files), total_bytes=_sizes(files))
        if line is not None:
            threading.Thread(
                target=_draw_first_read, args=(index, first, files, line, warm),
                name="histoscope-progress", daemon=True,
            ).start()  # fmt: skip
    return warm


def _sizes(files: list[str]) -> int:
    total = 0
    for path in files:
        try:
            total += os.path.getsize(path)
        except OSError:  # gone since the listing: nothing of it to read
            pass
    return total


def _draw_first_read(
    index: LogdirIndex, names: list[str], files: list[str], line: Progress, warm: threading.Thread
) -> None:
    """Redraws ``line`` as the runs ``names`` are read, until every one has caught up (or
    the warm-up gave up on one, whose request will say why)."""
    sizes = {path: _sizes([path]) for path in files}
    done: set[str] = set()
    while True:
        runs = [index.started(name) for name in names]
        offsets = {p: end for run in runs if run is not None for p, end in run.offsets.items()}
        read = sum(min(offsets.get(path, 0), size) for path, size in sizes.items())
        finished = {path for path, size in sizes.items() if offsets.get(path, 0) >= size}
        line.advance(files=len(finished - done), nbytes=read - line.bytes_done)
        done |= finished
        started = [run for run in runs if run is not None]
        gave_up = len(started) < len(runs) and not warm.is_alive()
        if all(run.caught_up for run in started) and (len(started) == len(runs) or gave_up):
            line.close()
            return
        time.sleep(PROGRESS_SECONDS)


def _warm_runs(index: LogdirIndex, layouts: Layouts, names: list[str]) -> None:
    """Reads the first segments of ``names`` side by side; then, of each small run while
    the cache has room, reads again the steps a card thins its first key to (leaving every
    key's buckets at those steps in the cache), so the page's first cards are answered
    from the cache."""
    deadline = time.monotonic() + PRIME_SECONDS
    try:
        declared = answers.READERS.submit(layouts.declared, names)
        runs = [run for run in answers.READERS.map(index.run, names) if run is not None]
        declared.result()
        room = index.cache.cap_bytes
        for run in runs:
            if STOPPING.is_set():
                return
            while not run.caught_up and time.monotonic() < deadline:
                time.sleep(0.01)
            size = sum(run.offsets.values())
            room -= size * DECODED_PER_BYTE
            if not run.caught_up or size > PRIMED_BYTES or room < 0:
                continue
            series = run.series
            if series and time.monotonic() < deadline:
                tag = min(series)
                view = series[tag].view
                thinned = _core.thin_indices(len(view.steps), answers.RIDGE_STEPS)
                index.buckets(run, tag, view, [int(p) for p in thinned])
    except Exception:  # noqa: BLE001 - the page's request meets the same error and reports it
        return
