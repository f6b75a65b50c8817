"""The notebook widget (anywidget): the viewer's page in an output, over the core's live
chart, which a feed (`feeds`) fills. A thread sends what changed a few times a second,
each message within a byte budget; at the end of each cell the widget saves a snapshot
(the ``_snapshot`` trait, kept in a saved notebook's widget state) and refreshes its
output's HTML fallback, the saved view of the same data (`saved_view`), for where
widgets are not live (GitHub, nbviewer, a code review). Its messages travel as
`transports` chooses: binary buffers, or base64 text where the front end drops buffers
(Colab).

Where no front end draws it (VS Code offline, a front end without a widget manager),
its outputs become that saved view alone, replaced as the run grows: each view the front
end draws says so to the kernel, which hears it only while idle, so a widget none of
whose views spoke by `UNDRAWN_SECONDS` into an idle kernel after a cell's end falls back;
a view drawn later brings the widget back. Importing this module imports anywidget:
`histoscope.notebook` does so only when a widget is made.
"""

from __future__ import annotations

import json
import threading
import time
import weakref
from typing import Any

import anywidget
import traitlets

from .. import _core
from ..view.follow import STOPPING, in_background
from ..view.page import widget_module, widget_page
from ..write.said_once import SaidOnce
from .cell_end import at_cell_end, cells_started, hooked
from .feeds import Feed
from .messages import message, pack
from .saved_view import saved_view
from .static_view import INTERVAL_SECONDS as UNDRAWN_INTERVAL_SECONDS
from .transports import budget_for, carried, chosen_transport, snapshot_to_json

#: The most bytes one update sends (what does not fit waits for the next).
BUDGET_BYTES = 90 * 1024
#: How often the thread looks for changes: at most this many updates a second, inverted.
INTERVAL_SECONDS = 0.25
#: Where no cell's end saves the snapshot (marimo), how often the thread saves it.
SNAPSHOT_SECONDS = 2.0
#: The widget's height in pixels; the page scrolls inside it.
HEIGHT = 800
#: How long a kernel idles after a cell's end, no view of a shown widget having said it
#: was drawn, before the widget's outputs fall back to its saved view. A front end draws
#: an output within a second or two of its arrival; the kernel hears it once idle.
UNDRAWN_SECONDS = 5.0

_shown: weakref.WeakSet[Widget] = weakref.WeakSet()


class Widget(anywidget.AnyWidget):
    """A live histoscope viewer in a notebook output, filled by ``feed``.

    Example:
        >>> import histoscope as hs, histoscope.notebook  # doctest: +SKIP
        >>> hs.show("logs/")  # doctest: +SKIP
    """

    _esm = traitlets.Unicode(widget_module()).tag(sync=True)
    _page = traitlets.Unicode("").tag(sync=True)
    _snapshot = traitlets.Bytes(b"").tag(sync=True, to_json=snapshot_to_json)
    height = traitlets.Int(HEIGHT).tag(sync=True)
    #: How messages travel (`transports.TRANSPORTS`); fixed when the widget is made.
    transport = traitlets.Unicode("buffers").tag(sync=True)

    def __init__(
        self,
        feed: Feed,
        *,
        height: int = HEIGHT,
        budget_bytes: int = BUDGET_BYTES,
        interval: float = INTERVAL_SECONDS,
        transport: str | None = None,
        falls_back: bool = True,
    ) -> None:
        super().__init__(
            _page=widget_page(f"histoscope: {feed.title}"),
            height=height,
            transport=chosen_transport(transport),
        )
        self.feed = feed
        self.budget_bytes = budget_bytes
        self.interval = interval
        #: Whether its outputs fall back to the saved view where no front end draws it.
        self.falls_back = falls_back
        #: Whether a view of it was drawn, and whether its outputs show the saved view
        #: (no view drawn).
        self.drawn = False
        self.undrawn = False
        self._undrawn_shown = (-1, 0.0)  # the updates it showed, and when
        self._showing = threading.Lock()
        #: Updates sent, their bytes in all, and the largest's.
        self.updates = 0
        self.bytes_sent = 0
        self.largest_update = 0
        self._snapshot_at = -1
        self._saved_at = time.monotonic()
        self._findings: dict[str, Any] = {"findings": [], "notes": []}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._handles: list[Any] = []
        self._said = SaidOnce()
        # Waited for as the interpreter exits: it reads a directory in the core.
        self._thread = in_background(self._work, "histoscope-widget")
        self.on_msg(self._heard)
        _shown.add(self)
        at_cell_end(_settle_all)

    def send_changes(self, everything: bool = False) -> int:
        """Sends what changed, one update within the budget (all of it with
        ``everything``); returns the number of updates sent."""
        sent = 0
        with self._lock:
            while True:
                update = self.feed.chart.take_update(budget_for(self.transport, self.budget_bytes))
                found = self.feed.findings() if sent == 0 else None
                if found is not None:
                    self._findings = found
                if not update.changes and found is None:
                    return sent
                header, buffers = carried(
                    *message(update, self.feed.chart.bins, found), self.transport
                )
                self.send(header, buffers)
                size = sum(len(b) for b in buffers) + len(json.dumps(header))
                self.updates += 1
                self.bytes_sent += size
                self.largest_update = max(self.largest_update, size)
                sent += 1
                if not everything:
                    return sent

    def settle(self) -> None:
        """Sends everything pending, then saves the snapshot and the HTML fallback if the
        widget changed since they were last saved (at the end of each cell). Undrawn, it
        shows the saved view alone, and no snapshot is kept for views that never draw."""
        if self.undrawn:
            self.send_changes(everything=True)
            self._show_undrawn(at_once=True)
            return
        whole = self._save_snapshot()
        if whole is None:
            return
        self._show(self._bundle(whole), undrawn=False)

    def _save_snapshot(self) -> _core.LiveUpdateRecord | None:
        """Sends everything pending, then saves the snapshot if the widget changed since
        it was last saved; the chart's whole update it saved, or None."""
        self.send_changes(everything=True)
        if self._snapshot_at == self.updates:
            return None
        with self._lock:
            whole = self.feed.chart.whole()
            header, buffers = message(whole, self.feed.chart.bins, self._findings)
            self._snapshot = pack(header, buffers)
            self._snapshot_at = self.updates
        return whole

    def fallback(self, whole: _core.LiveUpdateRecord | None = None) -> str:
        """The output's ``text/html``, shown where widgets are not live: the saved view
        (`saved_view`) of what the widget holds (``whole``, the chart's whole update, if
        already taken), refreshed with the widget at the end of each cell and when its
        run ends, so a notebook saved after the run grew holds the latest state.

        It is plain HTML and inline SVG, read where scripts, styles and frames are
        stripped (GitHub, nbviewer's static mode, a code review) and by screen readers.
        The report's page in an iframe is no longer kept beside it: its scripts and
        styles alone weigh about 190 KB escaped, twice a shown widget's budget in a
        saved notebook (100 KB), and the places that show this fallback strip frames;
        ``histoscope report LOGDIR`` writes that page, with every card, as a file."""
        whole = self.feed.chart.whole() if whole is None else whole
        return saved_view(whole, self._findings, self.feed.title)

    def close(self) -> None:
        """Stops following and closes the widget."""
        self._stop.set()
        # Its thread may be reading from the feed: the feed closes once it stopped.
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=10)
        self.feed.close()
        super().close()

    def __repr__(self) -> str:
        return f"histoscope widget of {self.feed.title} ({self.updates} updates sent)"

    def _bundle(self, whole: _core.LiveUpdateRecord | None = None) -> dict[str, Any]:
        # anywidget answers (data, metadata), ipywidgets the data alone.
        shown = super()._repr_mimebundle_()
        bundle = dict((shown[0] if isinstance(shown, tuple) else shown) or {})
        bundle["text/html"] = self.fallback(whole)
        return bundle

    def _ipython_display_(self) -> None:
        from IPython.display import display

        bundle = self._undrawn_bundle() if self.undrawn else self._bundle()
        self._handles.append(display(bundle, raw=True, display_id=True))

    def _undrawn_bundle(self) -> dict[str, Any]:
        """The outputs' bundle where no front end draws the widget: no widget view (a
        front end that cannot load the widget shows an error for it), its saved view."""
        return {"text/html": self.fallback(), "text/plain": repr(self)}

    def _show(self, bundle: dict[str, Any], *, undrawn: bool) -> None:
        """Replaces every output of the widget with ``bundle`` if it still fits its state
        (drawn or not: the kernel's thread may have changed it meanwhile)."""
        with self._showing:
            if undrawn != self.undrawn:
                return
            for handle in self._handles:
                handle.update(bundle, raw=True)

    def _show_undrawn(self, at_once: bool = False) -> None:
        """Undrawn, replaces the outputs with the saved view if updates were sent since
        it was last shown, at most every `UNDRAWN_INTERVAL_SECONDS` unless ``at_once``."""
        shown, when = self._undrawn_shown
        now = time.monotonic()
        if shown == self.updates or (not at_once and now - when < UNDRAWN_INTERVAL_SECONDS):
            return
        self._undrawn_shown = (self.updates, now)
        self._show(self._undrawn_bundle(), undrawn=True)

    def _heard(self, _widget: Any, content: Any, _buffers: Any) -> None:
        """A view says it was drawn: an undrawn widget's outputs become the widget again,
        its snapshot saved first for the views that draw from it."""
        if not isinstance(content, dict) or content.get("kind") != "drawn":
            return
        self.drawn = True
        if self.undrawn:
            with self._showing:
                self.undrawn = False
            self._snapshot_at = -1  # saved again whatever was sent meanwhile
            self._guard("saving", self.settle)

    def _after_cell(self) -> None:
        """At a cell's end: if no view was drawn yet, looks again once the kernel could
        have heard from one."""
        if not self.falls_back or self.drawn or self.undrawn or not self._handles:
            return
        started = cells_started()
        timer = threading.Timer(UNDRAWN_SECONDS, self._fall_back_if_unheard, (started,))
        timer.daemon = True
        timer.start()

    def _fall_back_if_unheard(self, started: int) -> None:
        """Falls back if the kernel stayed idle since the cell's end (no cell began, so
        any view's word was heard) and no view was drawn."""
        if cells_started() != started or self.drawn or self.undrawn or self._stop.is_set():
            return
        with self._showing:
            self.undrawn = True
        self._guard("showing", lambda: self._show_undrawn(at_once=True))

    def _work(self) -> None:
        while not (self._stop.is_set() or STOPPING.is_set()):
            self._guard("reading", self.feed.poll)
            self._guard("sending", self.send_changes)
            if self.undrawn:
                self._guard("showing", self._show_undrawn)
            if self.feed.done and not self.feed.chart.pending:
                self._guard("saving", self.settle)
                return
            if not hooked() and time.monotonic() - self._saved_at >= SNAPSHOT_SECONDS:
                # No cell ends to save at (marimo): the snapshot a page that connects
                # later starts from is saved from here, at a bounded rate.
                self._saved_at = time.monotonic()
                self._guard("saving", self._save_snapshot)
            self._stop.wait(self.interval)

    def _guard(self, what: str, action: Any) -> None:
        self._said.guard(f"histoscope widget {self.feed.title}", what, action)


def _settle_all() -> None:
    for widget in list(_shown):
        widget._guard("saving", widget.settle)
        widget._after_cell()
