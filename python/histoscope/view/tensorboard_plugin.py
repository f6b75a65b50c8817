"""A HISTOSCOPE tab in TensorBoard: the viewer's site inside ``tensorboard --logdir``.

Installed with ``pip install histoscope[tensorboard]``, histoscope declares this
plugin under TensorBoard's ``tensorboard_plugins`` entry point, so TensorBoard
adds the tab itself. The tab serves the same `site.Site` as ``histoscope view``,
on TensorBoard's log directory, under ``/data/plugin/histoscope/``: the same
page, the same answers, the same Content-Security-Policy (save that TensorBoard's
page of the same origin may frame it, as it frames every tab) and the same
``Host`` rules, for the address TensorBoard listens on.

TensorBoard's loader imports this module; nothing else in histoscope imports
TensorBoard, which stays an optional dependency.

Example:
    >>> from histoscope.view.tensorboard_plugin import HistoscopePlugin
    >>> HistoscopePlugin.plugin_name
    'histoscope'
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any, Callable

from tensorboard.plugins import base_plugin  # type: ignore[import-untyped, import-not-found, unused-ignore]

from .site import Site

#: The tab's first module: TensorBoard imports it into the tab's frame and calls its
#: ``render``, which opens the site's page in that frame.
_ENTRY = (
    "// histoscope's tab: the site's page, opened in the frame TensorBoard gives the tab.\n"
    "export function render() {\n"
    '  location.replace(new URL("index.html", document.baseURI).href);\n'
    "}\n"
)

Environ = dict[str, Any]
StartResponse = Callable[..., Any]


class HistoscopePlugin(base_plugin.TBPlugin):
    """TensorBoard's handle on histoscope: a tab named HISTOSCOPE, active when the log
    directory holds histograms, its routes answered by a `site.Site` made on first use."""

    plugin_name = "histoscope"

    def __init__(self, context: base_plugin.TBContext) -> None:
        flags = context.flags
        self._logdir = context.logdir or getattr(flags, "logdir", "") or ""
        self._host = _bound_host(flags)
        self._site: Site | None = None
        self._lock = threading.Lock()

    def get_plugin_apps(self) -> dict[str, Callable[[Environ, StartResponse], Iterable[bytes]]]:
        return {"/index.js": self._entry, "/*": self._serve}

    def is_active(self) -> bool:
        """Active where TensorBoard found histograms (see `data_plugin_names`); asked only
        otherwise, when the answer is no."""
        return False

    def data_plugin_names(self) -> tuple[str, ...]:
        return ("histograms",)

    def frontend_metadata(self) -> base_plugin.FrontendMetadata:
        return base_plugin.FrontendMetadata(
            es_module_path="/index.js", tab_name="Histoscope", disable_reload=True
        )

    def site(self) -> Site:
        """The site over TensorBoard's log directory, made (and its first runs read) on the
        first request, so TensorBoard starts as fast as without the tab."""
        with self._lock:
            if self._site is None:
                self._site = Site(self._logdir, host=self._host, framed_by_self=True)
            return self._site

    def _entry(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        site = self.site()
        headers = [*site.security, ("Content-Type", "text/javascript; charset=utf-8")]
        if not site.allows(environ.get("HTTP_HOST", "")):
            start_response("400 Bad Request", [*site.security, ("Content-Type", "text/plain")])
            return [b"Invalid host header"]
        start_response("200 OK", headers)
        return [_ENTRY.encode()]

    def _serve(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        site = self.site()
        # TensorBoard routes the tab's paths here whole (below any --path_prefix); the
        # page is index.html, since TensorBoard drops a path's trailing slash.
        path = environ.get("PATH_INFO", "")
        mount = f"/data/plugin/{self.plugin_name}/"
        relative = path[len(mount) :] if path.startswith(mount) else ""
        if relative == "index.html":
            relative = ""
        found = site.answer(relative, environ.get("QUERY_STRING", ""), environ.get("HTTP_HOST", ""))
        status = f"{found.status} {_REASONS.get(found.status, 'OK')}"
        start_response(status, [*found.headers, ("Content-Type", found.media_type)])
        return [found.body]


_REASONS = {200: "OK", 204: "No Content", 400: "Bad Request", 404: "Not Found"}


def _bound_host(flags: Any) -> str:
    """The address TensorBoard listens on: ``--host``, every interface for ``--bind_all``,
    else loopback only (TensorBoard's default)."""
    if getattr(flags, "bind_all", False):
        return "::"
    return getattr(flags, "host", None) or "localhost"
