"""A sharded model trained under a loss scaler: its gradients captured as the scaler
unscales them.

A sharded watch captures as each backward pass ends, where every rank takes part in
the merge's collectives at once (`sharded`). Under a loss scaler (FSDP2 with fp16 and
``torch.amp.GradScaler``) the gradients there are still multiplied by the scale, and
those of the steps the scaler skips are infinite. Every rank calls the scaler's
``unscale_`` at the same point of the loop (``scaler.step`` does, where the loop does
not), so the capture moves there (`ScaledShardSteps`): merged as unscaled, before a
loop's clipping, and held until an optimizer holding the model's parameters steps
(written), or until the next ``unscale_`` finds that none did (the scaler skipped the
step: recorded as skipped, as `step_capture.record_skip` writes it). The scaler is
found once, at the first backward pass, among the live objects (`used_scaler`).

Example:
    >>> take_over_if_scaled.__name__
    'take_over_if_scaled'
"""

from __future__ import annotations

from typing import Any

from .optimizer_steps import UnscaleHook, loss_scale, used_scalers
from .step_capture import log_loss_scale, record_skip

# A `histoscope.write.watch.Watch`: named loosely, since the watch imports this module.
Watch = Any


class ScaledShardSteps:
    """A sharded watch's captures at the ``unscale_`` of the scaler of its optimizer, among
    ``scalers`` (those in use in the process): one per optimizer step, numbered by the
    watch's steps, written once an optimizer of the model steps. Where an optimizer of
    the model steps before any of them unscaled it, none is the model's: the watch goes
    back to capturing as each backward pass ends, from that step."""

    def __init__(self, watch: Watch, scalers: list[Any]) -> None:
        from torch.optim.optimizer import register_optimizer_step_pre_hook

        self.watch = watch
        self.scaler: Any = None
        self._ids = frozenset(id(p) for p in watch._grad_params)
        self._pending: tuple[int, Any, float | None] | None = None
        self._handles: list[Any] = [register_optimizer_step_pre_hook(self._pre_step)]
        for scaler in scalers:
            self._handles.append(UnscaleHook(scaler, self._unscaled_by(scaler)))

    def remove(self) -> None:
        """Takes the hooks off, the last step recorded as skipped where the scaler's
        scale fell since it was captured (it backs off on an overflow alone)."""
        pending, self._pending = self._pending, None
        if pending is not None and pending[2] is not None and self.scaler is not None:
            if float(self.scaler.get_scale()) < pending[2]:
                record_skip(self.watch, pending[0], pending[2])
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def _holds(self, optimizer: Any) -> bool:
        groups = getattr(optimizer, "param_groups", [])
        return any(id(p) in self._ids for group in groups for p in group["params"])

    def _unscaled_by(self, scaler: Any) -> Any:
        def unscaled(optimizer: Any) -> None:
            if not self._holds(optimizer):
                return  # another training's scaler, or another optimizer
            if self.scaler is None:
                self.scaler = scaler
            if self.scaler is scaler:
                self._capture()

        return unscaled

    def _capture(self) -> None:
        watch = self.watch
        if self._pending is not None:  # no optimizer stepped since: the scaler skipped it
            step, _, scale = self._pending
            self._pending = None
            record_skip(watch, step, scale)
        step = watch.step
        watch._done += 1
        binned = watch._binned(step, held=True) if watch._histograms_due(step) else None
        if watch._spectra is not None and watch._spectra.due(step):
            watch._log_spectra(step)  # the parameters, whatever becomes of the step
        self._pending = (step, binned, loss_scale(self.scaler))

    def _pre_step(self, optimizer: Any, _args: Any, _kwargs: Any) -> None:
        if not self._holds(optimizer):
            return
        if self.scaler is None:
            self._not_scaled()
            return
        if self._pending is None:
            return
        (step, binned, scale), self._pending = self._pending, None
        watch = self.watch
        watch._activations = {}
        if binned is not None:
            watch._last_logged = step
            watch._write(step, *binned)
            watch._alerts.at_logged_step()
        log_loss_scale(watch, scale, step)

    def _not_scaled(self) -> None:
        """No scaler unscaled the model's optimizer before its step: the capture goes back
        to backward passes, this step's taken now (every rank steps at once)."""
        watch = self.watch
        for handle in self._handles:
            handle.remove()
        self._handles = []
        watch._capture_at = "backward"
        step = watch._count - 1  # the backward pass just ended, as it would have been
        if watch.due(step):
            watch.capture(step)


def take_over_if_scaled(watch: Watch) -> bool:
    """At a sharded watch's first backward pass: whether a loss scaler is in use in the
    process, in which case its captures move to the scaler's ``unscale_``
    (`ScaledShardSteps`), until the model's optimizer is found to step without one."""
    scalers = used_scalers()
    if not scalers:
        return False
    watch._handles.append(ScaledShardSteps(watch, scalers))
    watch._capture_at = "optimizer"
    return True
