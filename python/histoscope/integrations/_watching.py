"""What the trainer callbacks share: the run (given or started) and a watch on the model.

Example:
    >>> import tempfile, torch
    >>> from histoscope.write.options import WatchOptions
    >>> watching = Watching(None, "demo", every=1, options=WatchOptions(log="all", bins=8))
    >>> model, folder = torch.nn.Linear(2, 1), tempfile.mkdtemp()
    >>> watching.start(model, folder, default_every=1, step_fn=lambda: 0)
    >>> watching.capture_if_due()
    >>> watching.stop()
    >>> watching.run.backlog.unwritten
    0
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .. import _args
from ..diagnose import Finding
from ..write.alerts import AlertPolicy, stops_training
from ..write.optimizer_steps import UnscaleHook, loss_scale, unscale_once
from ..write.options import DEFAULT_BINS, Filter, WatchOptions
from ..write.run import Run
from ..write.session import init
from ..write.sinks import NO_SINK
from ..write.step_capture import log_loss_scale, trainer_step
from ..write.watch import Watch, writes_here

if TYPE_CHECKING:
    import torch

_log = logging.getLogger("histoscope")


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
        stop_on: Sequence[str] | None = None,
    ) -> None:
        self.run = run
        self.project = project
        self.every = None if every is None else _args.whole_number(every, "every", minimum=1)
        self.options = options
        self.watch: Watch | None = None
        self.owns_run = False
        self.stop_on = None if stop_on is None else AlertPolicy("raise", stop_on).stops_on
        #: The first alert of a kind in ``stop_on``, on the rank that writes.
        self.problem: Finding | None = None
        self._listened: Run | None = None
        self.captured = False
        self._unscale_hook: UnscaleHook | None = None
        self._taken: int | None = None  # the step last captured or recorded skipped

    def start(
        self,
        model: torch.nn.Module,
        dir: str,
        *,
        default_every: int,
        step_fn: Callable[[], int],
        writes: bool = True,
    ) -> None:
        """Watches ``model``, in a run of its own in ``dir`` when none was given.

        The trainer's main process (global rank 0) ``writes``. Every other rank
        calls this too, with ``writes=False``: its watch only takes part in
        merging a sharded model's tensors, and does nothing for any other model.
        """
        every = self.every if self.every is not None else default_every
        options = dataclasses.replace(self.options, every=every, step_fn=step_fn, all_ranks=False)
        # The trainer's word and torch.distributed's: accelerate counts every process as the
        # main one when DeepSpeed runs without an accelerator device, each with a rank.
        if not (writes and writes_here(options)):
            self.watch = Watch(NO_SINK, model, options, backward_hooks=False)
            return
        if self.run is None:
            self.run, self.owns_run = init(self.project, logdir=dir), True
        self.listen()
        self.watch = Watch(self.run, model, options, backward_hooks=False)

    def listen(self) -> None:
        """Notes the run's first alert of a kind in ``stop_on`` (once the run is known)."""
        if self.stop_on is None or self.run is None or self._listened is self.run:
            return
        self.run.on_alert(self._noted)
        self._listened = self.run

    def stop_requested(self, agree: Callable[[bool], bool] | None = None) -> bool:
        """After a training step: whether to stop the trainer, as every rank agrees
        (``agree``, by default `any_rank`), with the finding in the log."""
        if self.stop_on is None:
            return False
        if self.run is not None and not self.run.closed:
            # A step captured since the last look is judged first: the stop comes after it.
            captured, self.captured = self.captured, False
            if captured:
                self.run.flush()
            else:
                self.run.check_alerts()
        stop = (agree or any_rank)(self.problem is not None)
        if stop:
            found = self.problem
            why = found.describe() if found else "the rank that writes found a problem"
            _log.warning("histoscope: stopping the training after this step (stop_on): %s", why)
        return stop

    def capture_at_unscale(self, scaler: Any) -> None:
        """Captures each step as the trainer's loss ``scaler`` unscales the gradients: for a
        trainer that clips them before its callbacks' hook (the transformers Trainer)."""
        if self.watch is None or scaler is None or not scaler.is_enabled():
            return
        self._unscale_hook = UnscaleHook(scaler, lambda _optimizer: self._take(scaler))

    def capture_if_due(self, scaler: Any = None, optimizer: Any = None) -> None:
        """Captures the model if this is a logging step: just before an optimizer step.
        A step the trainer's loss ``scaler`` will skip (its gradients overflowed) is
        recorded as skipped instead (`histoscope.write.step_capture.trainer_step`).
        Under `capture_at_unscale`, the step was taken as the scaler unscaled
        ``optimizer``'s gradients, which is done now if the trainer has not."""
        if self._unscale_hook is not None and optimizer is not None:
            unscale_once(scaler, getattr(optimizer, "optimizer", optimizer))  # accelerate's
        self._take(scaler)

    def _take(self, scaler: Any) -> None:
        if self.watch is None or self._taken == self.watch.step:
            return
        step = self._taken = self.watch.step
        if trainer_step(self.watch, scaler) and self.watch.due():
            self.watch.capture()
            self.captured = True
            log_loss_scale(self.watch, loss_scale(scaler), step)

    def _noted(self, alert: Finding) -> None:
        if self.problem is None and self.stop_on is not None:
            if stops_training(alert, self.stop_on):
                self.problem = alert

    def stop(self) -> None:
        """Takes the watch off, and finishes the run if it was started here."""
        if self.watch is None:
            return
        self.watch.remove()
        self.watch = None
        if self._unscale_hook is not None:
            self._unscale_hook.remove()
            self._unscale_hook = None
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
        stop_on: Sequence[str] | None = None,
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
        self._watching = Watching(run, project, every=every, options=options, stop_on=stop_on)

    @property
    def run(self) -> Run | None:
        """The run logged to: the one given, or the one started for training (None until then)."""
        return self._watching.run


def any_rank(flag: bool) -> bool:
    """Whether ``flag`` holds on any rank of ``torch.distributed`` (``flag`` itself outside it):
    one all-reduce, so every rank must call it at the same point."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1):
        return flag
    import torch

    on_gpu = dist.get_backend() == "nccl"
    device = torch.device("cuda", torch.cuda.current_device()) if on_gpu else torch.device("cpu")
    votes = torch.tensor([int(flag)], device=device)
    dist.all_reduce(votes, op=dist.ReduceOp.MAX)
    return bool(votes.item())
