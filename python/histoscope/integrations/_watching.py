"""What the trainer callbacks share: the run (given or started) and a watch on the model.

Example:
    >>> import tempfile, torch
    >>> from histoscope.write.options import WatchOptions
    >>> watching = Watching(None, "demo", every=1, options=WatchOptions(log="all", bins=8))
    >>> watching.start(torch.nn.Linear(2, 1), tempfile.mkdtemp(), default_every=1, step=lambda: 0)
    >>> watching.capture_if_due()
    >>> watching.stop()
    >>> watching.run.backlog.unwritten
    0
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

from .. import _args
from ..write.options import DEFAULT_BINS, Filter, WatchOptions
from ..write.run import Run, init
from ..write.watch import NO_SINK, Watch

if TYPE_CHECKING:
    import torch

__all__ = ["Watching", "WatchingCallback"]


class Watching:
    """A callback's run and watch: the trainer says when training starts and
    ends, and when an optimizer step is about to be taken."""

    def __init__(
        self,
        run: Run | None,
        project: str,
        *,
        every: int | None,
        options: WatchOptions,
    ) -> None:
        self.run = run
        self.project = project
        self.every = None if every is None else _args.whole_number(every, "every", minimum=1)
        self.options = options
        self.watch: Watch | None = None
        self.owns_run = False

    def start(
        self,
        model: torch.nn.Module,
        dir: str,
        *,
        default_every: int,
        step: Callable[[], int],
        writes: bool = True,
    ) -> None:
        """Watches ``model``, in a run of its own in ``dir`` when none was given.

        The trainer's main process (global rank 0) ``writes``. Every other rank
        calls this too, with ``writes=False``: its watch only takes part in
        merging a sharded model's tensors, and does nothing for any other model.
        """
        every = self.every if self.every is not None else default_every
        options = dataclasses.replace(self.options, every=every, step=step, all_ranks=False)
        if not writes:
            self.watch = Watch(NO_SINK, model, options, backward_hooks=False)
            return
        if self.run is None:
            self.run, self.owns_run = init(self.project, dir=dir), True
        self.watch = Watch(self.run, model, options, backward_hooks=False)

    def capture_if_due(self) -> None:
        """Captures the model if this is a logging step: just before an optimizer step."""
        if self.watch is not None and self.watch.due():
            self.watch.capture()

    def stop(self) -> None:
        """Takes the watch off, and finishes the run if it was started here."""
        if self.watch is None:
            return
        self.watch.remove()
        self.watch = None
        if self.owns_run and self.run is not None:
            self.run.finish()


class WatchingCallback:
    """What every trainer callback takes and has: the run to log to (or a project to start
    one in), the watch's options (``spectral`` and ``spectral_every`` as `Run.watch`
    takes them), and `run`. Mixed in before the trainer's callback class."""

    #: The project a callback starts its run in when given neither ``run`` nor ``project``.
    default_project = "histoscope"

    def __init__(
        self,
        run: Run | None = None,
        *,
        project: str | None = None,
        log: str = "gradients",
        every: int | None = None,
        filter: Filter = None,
        bins: int = DEFAULT_BINS,
        activations: bool = False,
        spectral: bool = False,
        spectral_every: int | None = None,
    ) -> None:
        super().__init__()
        options = WatchOptions(
            log=log,
            filter=filter,
            bins=bins,
            activations=activations,
            spectral=spectral,
            spectral_every=spectral_every,
        )
        project = self.default_project if project is None else project
        self._watching = Watching(run, project, every=every, options=options)

    @property
    def run(self) -> Run | None:
        """The run logged to: the one given, or the one started for training (None until then)."""
        return self._watching.run
