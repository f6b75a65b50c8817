"""A live view that needs no widget manager: the saved view of a widget's data
(`saved_view`: the findings, every key's last statistics, the overview), shown with
IPython's display and replaced in place as the data grows.

For front ends where the widget cannot be shown: without ``anywidget`` installed (then
chosen by itself), or where the front end's widget manager fails, such as VS Code
offline, which loads a widget's module from a CDN (``hs.show(source, view="static")``).
A thread brings what is new into the core's live chart and, at most every
`INTERVAL_SECONDS`, replaces the output with the view of all of it
(``update_display``): plain HTML that a screen reader reads, as a saved widget is. It
stops once its source is done (a finished run, series) or the view is closed.

Example:
    >>> import histoscope
    >>> from histoscope.notebook.feeds import SeriesFeed
    >>> series = histoscope.HistogramSeries(
    ...     "train", "w", steps=[0, 1], wall_times=[0.0, 1.0],
    ...     flat_buckets=[[0, 1, 2], [1, 2, 3], [0, 2, 5]], offsets=[0, 2, 3])
    >>> view = StaticView(SeriesFeed([series]), interval=0.01)
    >>> view.close()
    >>> '<th scope="row">w</th>' in view.html(), "<script" in view.html()
    (True, False)
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from ..view.follow import STOPPING, in_background
from ..write.said_once import SaidOnce
from .cell_end import at_cell_end
from .feeds import Feed
from .saved_view import saved_view

#: The least time between two replacements of the shown view: each is the whole view
#: (up to 88 KB), so a front end redraws it at most twice a second.
INTERVAL_SECONDS = 0.5

# An update as large as the chart can give: the view is made from the whole chart, so
# what changed is only taken to know that something did.
_ALL = 1 << 30

_shown: weakref.WeakSet[StaticView] = weakref.WeakSet()


class StaticView:
    """The saved view of ``feed``, shown and kept up to date with no widget manager."""

    def __init__(self, feed: Feed, *, interval: float = INTERVAL_SECONDS) -> None:
        self.feed = feed
        self.interval = interval
        #: How many times the shown view was replaced.
        self.updates = 0
        self._findings: dict[str, Any] = {"findings": [], "notes": []}
        self._handle: Any = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._said = SaidOnce()
        self._thread = in_background(self._work, "histoscope-static-view")
        _shown.add(self)
        at_cell_end(_refresh_all)

    def html(self) -> str:
        """The view of everything the chart holds now."""
        with self._lock:
            whole = self.feed.chart.whole()
            found = self._findings
        return saved_view(whole, found, self.feed.title)

    def refresh(self) -> bool:
        """Takes in what is new and, if anything is, replaces the shown view; whether it
        did."""
        with self._lock:
            changed = False
            found = self.feed.findings()
            if found is not None:
                self._findings, changed = found, True
            while self.feed.chart.pending:
                self.feed.chart.take_update(_ALL)
                changed = True
        if changed and self._handle is not None:
            self._handle.update({"text/html": self.html()}, raw=True)
            self.updates += 1
        return changed

    def close(self) -> None:
        """Stops following its source; the view shown stays as it was last replaced."""
        self._stop.set()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=10)
        self.feed.close()

    def __repr__(self) -> str:
        return f"histoscope static view of {self.feed.title} ({self.updates} updates)"

    def _ipython_display_(self) -> None:
        from IPython.display import display

        self._guard("reading", self.refresh)
        self._handle = display({"text/html": self.html()}, raw=True, display_id=True)

    def _work(self) -> None:
        while not (self._stop.is_set() or STOPPING.is_set()):
            self._guard("reading", self.feed.poll)
            self._guard("showing", self.refresh)
            if self.feed.done and not self.feed.chart.pending:
                self._guard("showing", self.refresh)
                return
            self._stop.wait(self.interval)

    def _guard(self, what: str, action: Any) -> None:
        self._said.guard(f"histoscope view of {self.feed.title}", what, action)


def _refresh_all() -> None:
    for view in list(_shown):
        view._guard("showing", view.refresh)  # polling stays with its thread
