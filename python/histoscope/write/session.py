"""The process's current run: `init` starts one, and `log`, `log_tree`, `watch` and
`finish` act on the run it started last, while that run is open."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import _args
from .._deprecated import renamed_keywords
from .alerts import Alerts
from .options import WatchOptions
from .run import DEFAULT_MAX_PENDING_BYTES, ON_FULL_CHOICES, Run
from .run_names import new_run_name
from .sinks import NO_SINK
from .watch import Watch, writes_here

if TYPE_CHECKING:
    import torch
    from typing_extensions import Unpack

    from .options import WatchArguments
    from .tree import TreeArguments

DEFAULT_DIR = "histoscope-logs"

_current: Run | None = None


@renamed_keywords(dir="logdir")
def init(
    project: str,
    run_name: str | None = None,
    *,
    logdir: str | os.PathLike | None = None,
    max_pending_bytes: int = DEFAULT_MAX_PENDING_BYTES,
    on_full: str = "wait",
    alerts: Alerts = "warn",
    stop_on: Sequence[str] | None = None,
) -> Run:
    """Starts logging a run into ``<logdir or ./histoscope-logs>/<project>/<run_name>``.

    Without ``run_name`` a readable one is made up; an existing run name
    appends a new events file there, as a restart. The run becomes the one
    `histoscope.write` and `histoscope.watch` write to.

    Snapshots that `Run.add_histogram` took and the writer has not binned
    yet take at most ``max_pending_bytes`` (256 MiB by default; one larger
    histogram alone goes through). When they would pass it,
    ``on_full="wait"`` makes ``add_histogram`` wait for the writer and
    ``on_full="drop"`` drops that histogram, warns once and counts it; the
    count is reported by `Run.finish` and `Run.backlog`.

    While it trains, the run is diagnosed by the rules of `histoscope check`, step by
    step, from the values as they are written. Each new finding of severity warning or
    error (or one grown more severe) is an alert (that `Finding`, with its ``step``),
    delivered at the next logging call or forward pass of a watched model:
    ``alerts="warn"`` warns `HistoscopeAlert` (naming key, kind, step and evidence);
    ``"raise"`` raises `TrainingProblem` for the kinds in ``stop_on``, at the most
    severe each can be (an error for nonfinite, exploding and collapsed, a warning for
    the others; without ``stop_on``, any error), and warns the others; a callable
    receives each alert's `Finding` (to page, to log elsewhere, to save a checkpoint);
    ``"off"`` diagnoses nothing. `Run.findings` gives the findings so far. Under
    ``torch.distributed``, give ``alerts="raise"`` to ``watch`` on every rank, so that
    rank 0 decides and all stop together.

    Example:
        >>> import histoscope as hs
        >>> run = hs.init("mnist", run_name="baseline")  # doctest: +SKIP
        >>> run.dir  # doctest: +SKIP
        PosixPath('histoscope-logs/mnist/baseline')
    """
    global _current
    project = _args.folder_name(project, "project")
    if isinstance(max_pending_bytes, bool) or not isinstance(max_pending_bytes, int):
        raise TypeError(
            f"max_pending_bytes must be an int > 0, got {type(max_pending_bytes).__name__}"
        )
    if max_pending_bytes <= 0:
        raise ValueError(f"max_pending_bytes must be an int > 0, got {max_pending_bytes}")
    if on_full not in ON_FULL_CHOICES:
        raise ValueError(f"on_full must be 'wait' or 'drop', got {on_full!r}")
    root = Path(DEFAULT_DIR if logdir is None else os.fspath(logdir)) / project
    name = new_run_name(root) if run_name is None else _args.folder_name(run_name, "run_name")
    run = Run(
        project,
        name,
        root / name,
        max_pending_bytes=max_pending_bytes,
        on_full=on_full,
        alerts=alerts,
        stop_on=stop_on,
    )
    _current = run
    return run


def current_run() -> Run:
    """The run `histoscope.init` started last, while it is open.

    Example:
        >>> import tempfile, histoscope as hs
        >>> from histoscope.write.session import current_run
        >>> with hs.init("demo", logdir=tempfile.mkdtemp()) as run:
        ...     current_run() is run
        True
    """
    return _open_run("use")


def log(data: Mapping[str, Any], step: int | None = None) -> None:
    """Logs to the run `histoscope.init` started last (see `Run.log`)."""
    _open_run("log to").log(data, step=step)


def log_tree(tree: Any, *, step: int, **options: Unpack[TreeArguments]) -> None:
    """Logs a JAX pytree to the run `histoscope.init` started last (see `Run.log_tree`)."""
    _open_run("log to").log_tree(tree, step=step, **options)


def watch(model: torch.nn.Module, **options: Unpack[WatchArguments]) -> Watch:
    """Watches ``model`` in the run `histoscope.init` started last (see `Run.watch`,
    and `Watch` for how its steps line up with yours).

    A rank that writes nothing (not ``rank=``) needs no run: its watch only
    takes part in merging sharded parameters.

    Example:
        >>> import histoscope as hs
        >>> hs.init("mnist")  # doctest: +SKIP
        >>> hs.watch(model, log="all", every=10)  # doctest: +SKIP
    """
    if _open() is None and not writes_here(checked := WatchOptions(**options)):
        return Watch(NO_SINK, model, checked)
    return _open_run("watch in").watch(model, **options)


def finish() -> None:
    """Finishes the run `histoscope.init` started last, if it is still open."""
    if _current is not None:
        _current.finish()


def _open() -> Run | None:
    """The run `init` started last, unless it is finished."""
    return None if _current is None or _current.closed else _current


def _open_run(doing: str) -> Run:
    run = _open()
    if run is None:
        raise RuntimeError(f"no run to {doing}: call histoscope.init(project) first")
    return run
