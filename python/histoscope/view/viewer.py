"""``histoscope view``: a local web app over a log directory, following it as it grows.

Starlette carries the viewer's `site.Site` (the page, its assets and JSON
answers, with their security headers, ``Host`` rules and token); uvicorn runs it.
Each request is answered on a worker thread, so a long series does not hold up the
event loop serving the others.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, TextIO

from .. import _args
from ..read.spool import RemoteLogdir, is_url
from .access import new_token
from .follow import DEFAULT_CACHE_BYTES
from .site import Site, content_security_policy, is_loopback

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

#: What every answer may load: its own scripts, styles and data, nothing else.
CSP = content_security_policy()


def create_app(
    logdir: str,
    *,
    refresh_seconds: float = 1.0,
    host: str = "127.0.0.1",
    cache_bytes: int = DEFAULT_CACHE_BYTES,
    progress: TextIO | None = None,
    storage_options: Mapping[str, Any] | None = None,
    remote: RemoteLogdir | None = None,
    token: str | None,
    allow_hosts: Iterable[str] = (),
) -> Starlette:
    """The viewer's ASGI app for ``logdir``; its runs are listed before it answers.

    ``token``: the secret a request must carry (see `access.TokenGate`), or None for
    a viewer anyone who reaches it may read. Asked for, not defaulted, so that no
    caller serves an open viewer by leaving it out.

    ``cache_bytes`` caps the decoded histograms kept for all runs together; on a
    terminal ``progress``, the first read draws its progress line. ``logdir`` may be
    an fsspec URL, with ``storage_options``, or ``remote`` the one it names, opened
    (see `site.Site`).

    Requests whose ``Host`` is neither ``host``, a loopback name nor one of
    ``allow_hosts`` are refused (400), so a web page the user visits cannot read the
    data through DNS rebinding; every answer carries a Content-Security-Policy,
    ``nosniff`` and ``Referrer-Policy: no-referrer``.
    """
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.responses import Response
    from starlette.routing import Route

    site = Site(
        os.fspath(logdir), refresh_seconds=refresh_seconds, host=host,
        cache_bytes=cache_bytes, progress=progress, storage_options=storage_options,
        remote=remote, token=token, allow_hosts=allow_hosts,
    )  # fmt: skip

    async def endpoint(request: Request) -> Response:
        path = request.url.path.lstrip("/")
        query = request.scope.get("query_string", b"").decode("latin-1")
        host_header = request.headers.get("host", "")
        cookie_header = request.headers.get("cookie", "")
        found = await run_in_threadpool(site.answer, path, query, host_header, cookie_header)
        return Response(
            found.body, status_code=found.status, media_type=found.media_type,
            headers=dict(found.headers),
        )  # fmt: skip

    return Starlette(routes=[Route("/{path:path}", endpoint)])


def serve(
    logdir: str,
    *,
    host: str = "127.0.0.1",
    port: int = 6006,
    out: TextIO = sys.stdout,
    cache_bytes: int = DEFAULT_CACHE_BYTES,
    storage_options: Mapping[str, Any] | None = None,
    token: str | bool = True,
    allow_hosts: Iterable[str] = (),
) -> None:
    """Serves the viewer of ``logdir`` until interrupted; prints its address first, then
    (on a terminal) the progress of the first read on standard error.

    ``token``: True (the default) makes a random one, a str is the one to use, False
    serves without one (warned about off loopback). The printed address carries it
    (``http://127.0.0.1:6006/?token=...``); see `access.TokenGate`. ``allow_hosts``:
    more ``Host`` names to answer to, such as the one a reverse proxy passes on.

    ``logdir`` may be an fsspec URL (``s3://bucket/logs``, with ``storage_options`` as
    for `histoscope.load_histograms`): it is found, and its events files listed, before
    the address is printed, so that a bucket that does not exist or holds no events
    files is an error; a private spool of its files (deleted when the server stops) is
    then followed as it grows.
    """
    secret = _secret(token)
    remote = None
    if is_url(logdir):
        remote = RemoteLogdir.open(logdir, storage_options)
        try:
            if not remote.list_runs():
                raise FileNotFoundError(f"no events files (*tfevents*) under {logdir!r}")
        except BaseException:
            remote.close()
            raise
    elif not os.path.isdir(logdir):
        raise FileNotFoundError(f"log directory not found: {logdir!r} is not a directory")
    try:
        _serve(logdir, host, port, out, cache_bytes, remote, secret, allow_hosts)
    finally:
        if remote is not None:
            remote.close()


def _serve(
    logdir: str,
    host: str,
    port: int,
    out: TextIO,
    cache_bytes: int,
    remote: RemoteLogdir | None,
    token: str | None,
    allow_hosts: Iterable[str],
) -> None:
    import uvicorn

    if not is_loopback(host):
        print(_off_loopback(host, token), file=sys.stderr)
    sock = _bind(host, port)
    shown = f"[{host}]" if ":" in host else host
    address = f"http://{shown}:{sock.getsockname()[1]}/" + (f"?token={token}" if token else "")
    print(f"histoscope view: {address} (Ctrl+C to stop)", file=out)
    out.flush()
    app = create_app(
        logdir, host=host, cache_bytes=cache_bytes, progress=sys.stderr, remote=remote,
        token=token, allow_hosts=allow_hosts,
    )  # fmt: skip
    config = uvicorn.Config(app, log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])


def _secret(token: str | bool) -> str | None:
    if token is True:
        return new_token()
    if token is False:
        return None
    return _args.token(token, "token")


def _off_loopback(host: str, token: str | None) -> str:
    """What a viewer that other machines may reach says of it."""
    if token is None:
        return (
            f"warning: serving on {host} with no token (--no-token), which other machines may "
            "reach: the histograms of this log directory become visible on the network to "
            "anyone who can connect"
        )
    return (
        f"note: serving on {host}, which other machines may reach: only those given the "
        "address with its token get in, but plain HTTP carries the token in the clear; "
        "on a network you do not trust, reach the viewer through an SSH tunnel instead"
    )


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
