"""histoscope in the notebook: `show` a run being logged, a log directory (local or an
fsspec URL) or series already loaded as a live, accessible widget (anywidget) in Jupyter,
JupyterLab, VS Code, Colab and marimo. The widget is the viewer's own page and modules; a run's
histograms reach it from the run's writer as they are binned, and a saved notebook keeps
a snapshot and an HTML fallback. Needs the ``notebook`` extra (``pip install
'histoscope[notebook]'``); nothing of it is imported until a widget is shown.

Example:
    >>> import histoscope as hs
    >>> run = hs.init("demo")  # doctest: +SKIP
    >>> hs.show(run)  # doctest: +SKIP
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Union

if TYPE_CHECKING:
    from ..read.series import HistogramSeries
    from ..write.run import Run
    from .live_widget import Widget

#: What a widget can show: a run, a log directory or URL, or series already loaded.
Shown = Union["Run", str, "os.PathLike[str]", "HistogramSeries", Sequence["HistogramSeries"]]

_TAKES = "show() takes a Run, a log directory, HistogramSeries or a chart"
_INSTALL = "the notebook widget needs anywidget: pip install 'histoscope[notebook]'"


def widget(
    source: Shown,
    *,
    storage_options: Mapping[str, Any] | None = None,
    height: int | None = None,
    transport: str | None = None,
) -> Widget:
    """A live widget on ``source``, not displayed yet: a `Run` of this process, a log
    directory or fsspec URL (with ``storage_options``), or `HistogramSeries`. A run's
    widget is made once and shown again after that (made again if another ``transport``
    is asked for).

    ``transport`` is how its messages travel: ``"buffers"`` (binary, the fastest) or
    ``"base64"`` (text, for front ends that drop binary buffers); by default the
    ``HISTOSCOPE_WIDGET_TRANSPORT`` environment variable's, else ``"base64"`` in Colab
    and ``"buffers"`` elsewhere (`histoscope.notebook.transports`).

    Raises ImportError without anywidget, FileNotFoundError for a log directory that is
    not there, TypeError for anything else.
    """
    try:
        from .live_widget import HEIGHT, Widget
    except ImportError as error:
        raise ImportError(_INSTALL) from error
    from ..write.run import Run
    from .transports import chosen_transport

    shown = HEIGHT if height is None else height
    carrier = chosen_transport(transport)
    if isinstance(source, Run):
        held = getattr(source, "_widget", None)
        if held is not None and not source.closed and held.transport == carrier:
            return held
        if held is not None and not source.closed:
            held.close()
        made = Widget(_feed_of(source, storage_options), height=shown, transport=carrier)
        source._widget = made
        return made
    return Widget(_feed_of(source, storage_options), height=shown, transport=carrier)


def static_view(source: Shown, *, storage_options: Mapping[str, Any] | None = None) -> Any:
    """A live view of ``source`` (as `widget` takes it) that needs no widget manager,
    not displayed yet: its saved view, replaced in place as it grows
    (`histoscope.notebook.static_view.StaticView`).

    Raises FileNotFoundError for a log directory that is not there, TypeError for
    anything else.
    """
    from .static_view import StaticView

    return StaticView(_feed_of(source, storage_options))


def _feed_of(source: Shown, storage_options: Mapping[str, Any] | None) -> Any:
    """Where a view of ``source`` is filled from (`histoscope.notebook.feeds`)."""
    from .. import _core
    from ..read.series import HistogramSeries
    from ..write.run import Run
    from .feeds import LogdirFeed, RunFeed, SeriesFeed

    if isinstance(source, Run):
        if not source.closed:
            return RunFeed(source, _core.LiveChart())
        from ..read import load_histograms

        loaded = load_histograms(source.path)
        held_series = [one for runs in loaded.values() for one in runs.values()]
        return SeriesFeed(held_series, source.name, run=f"{source.project}/{source.name}")
    if isinstance(source, (str, os.PathLike)):
        return LogdirFeed(source, storage_options)
    given = [source] if isinstance(source, HistogramSeries) else source
    series = (
        [s for s in given if isinstance(s, HistogramSeries)] if isinstance(given, Sequence) else []
    )
    if series and len(series) == len(given):
        return SeriesFeed(series)
    raise TypeError(f"{_TAKES}, got {type(source).__name__}")


def show(source: Any, *, view: str | None = None, **options: Any) -> Any:
    """Shows ``source`` in the notebook as a live widget (see `widget`); a
    `TensorBoardChart` as its accessible chart page (`histoscope.view.html.show_chart`).
    Outside a kernel, a run or log directory has no widget: use ``histoscope view``.

    ``view="static"`` shows it with no widget manager instead (`static_view`: VS Code
    offline, a front end whose widgets fail), as it is shown by itself where
    ``anywidget`` is not installed. By default a widget none of whose views is drawn
    (the kernel hears from each, once idle after a cell) falls back to the same view
    (`histoscope.notebook.live_widget.UNDRAWN_SECONDS`); ``view="widget"`` keeps the
    widget whatever the front end does.

    Example:
        >>> import histoscope as hs
        >>> hs.show(object())
        Traceback (most recent call last):
        ...
        TypeError: show() takes a Run, a log directory, HistogramSeries or a chart, got object
    """
    from ..view import html

    if all(hasattr(source, name) for name in html._CHART_FIELDS):
        return html.show_chart(source, **options)
    if view not in (None, "widget", "static"):
        raise ValueError(f'view must be "widget" or "static", got {view!r}')
    chosen = view is None
    if view is None:
        view = "widget" if _widgets_installed() or in_marimo() else "static"
    if view == "static" and html._in_kernel():
        from IPython.display import display

        unknown = sorted(set(options) - {"storage_options"})
        if unknown:
            raise TypeError(f"view='static' takes no {', '.join(unknown)}")
        display(static_view(source, **options))
        return None
    if in_marimo():
        import marimo

        made = widget(source, **options)
        # marimo has no end-of-cell hook: the snapshot it keeps is saved here.
        made.settle()
        # Appended, so that it shows wherever in the cell `show` is called.
        marimo.output.append(made)
        return None
    if not html._in_kernel():
        _check_shown(source)
        raise RuntimeError(
            "histoscope's widget shows in a notebook (a Jupyter kernel); outside one, "
            "run `histoscope view LOGDIR` and open its address"
        )
    from IPython.display import display

    made = widget(source, **options)
    made.falls_back = chosen
    display(made)
    return None


def _widgets_installed() -> bool:
    """Whether ``anywidget`` imports: without it no widget can be made."""
    try:
        import anywidget  # noqa: F401
    except ImportError:
        return False
    return True


def in_marimo() -> bool:
    """Whether this code runs in a marimo notebook (edited, run as an app or exported),
    which shows anywidgets itself. marimo is never imported to find out.

    Example:
        >>> in_marimo()
        False
    """
    marimo = sys.modules.get("marimo")
    return marimo is not None and bool(marimo.running_in_notebook())


def _marimo_run(run: Run) -> Any:
    """What marimo shows for a `Run` (its ``_display_``): the run's live widget, or its
    text without the ``notebook`` extra."""
    import warnings

    from ..errors import HistoscopeWarning

    try:
        made = widget(run)
    except ImportError as error:
        warnings.warn(str(error), HistoscopeWarning, stacklevel=2)
        return repr(run)
    made.settle()  # what marimo keeps of the model (its export) is its state now
    return made


def _display_run(run: Run) -> None:
    """A run as a cell's last line: its live widget in a kernel, its text elsewhere
    (a terminal IPython, or without the ``notebook`` extra)."""
    import warnings

    from ..errors import HistoscopeWarning
    from ..view import html

    if not html._in_kernel():
        print(repr(run))
        return
    try:
        show(run)
    except ImportError as error:
        warnings.warn(str(error), HistoscopeWarning, stacklevel=2)
        print(repr(run))


def _register_display() -> None:
    """Teaches marimo and a running IPython to show a `Run` as its widget. marimo asks an
    object for its ``_display_``, which the writer leaves to this module (the writer
    never imports the notebook); IPython by the class's name, so nothing of IPython is
    imported outside one."""
    from ..write.run import Run

    Run._display_ = _marimo_run  # type: ignore[attr-defined]
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None:
        return
    formatter = shell.display_formatter.ipython_display_formatter
    formatter.for_type_by_name("histoscope.write.run", "Run", _display_run)


def _check_shown(source: Any) -> None:
    from ..read.series import HistogramSeries
    from ..write.run import Run

    kinds = (Run, str, os.PathLike, HistogramSeries, Sequence)
    if not isinstance(source, kinds):
        raise TypeError(f"{_TAKES}, got {type(source).__name__}")


_register_display()
