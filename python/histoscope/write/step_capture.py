"""A watch's capture at the optimizer's step: held backward passes until it is known
whether an optimizer steps the model, applied steps captured, skipped ones recorded.

Functions of a `Watch`, whose state they keep: its `optimizer_steps.StepAttempts` calls
`applied` and `unapplied_attempt` as each optimizer step is taken or found skipped.

Example:
    >>> _all_finite([])
    True
"""

from __future__ import annotations

from typing import Any

from .optimizer_steps import LOSS_SCALE_KEY, SKIPPED_KEY, loss_scale
from .zero import engine_loss_scale

# A `histoscope.write.watch.Watch`: named loosely, since the watch imports this module.
Watch = Any

# Attempts with no optimizer step a watch waits through before it takes a model with
# nonfinite gradients (or a sharded one, whose ranks cannot agree on finiteness without
# a collective) for one no optimizer steps: longer than a loss scaler's first skips from
# a scale far too large (2^40 falls to fp16's range in 25).
_PATIENCE = 64


class Held:
    """A backward pass's capture binned before it is known whether an optimizer steps
    the model: logged if none does, dropped if one does."""

    def __init__(self, step: int, binned: tuple[list[str], Any] | None) -> None:
        self.step = step
        self.binned = binned


def hold(watch: Watch) -> None:
    """A backward pass before any optimizer step: binned if due, and whether its
    gradients are finite noted (the sign of a step a loss scaler will skip)."""
    if watch._merge is None:
        watch._finite = _all_finite([p.grad for p in watch._grad_params if p.grad is not None])
    step = watch.step
    if watch._histograms_due(step):
        watch._last_logged = step
        watch._held.append(Held(step, watch._binned(step, held=True)))
        if watch._spectra is not None and watch._spectra.due(step):
            watch._log_spectra(step)  # parameters are valid whatever becomes of the step


def attempt_step(watch: Watch) -> int:
    step_of = watch.options.step_fn
    return watch._done if step_of is None else int(step_of())


def applied(watch: Watch, step: int) -> None:
    """The optimizer is about to apply this attempt's gradients: they are captured, as
    the loss scaler unscaled them or the last backward pass left them, where the loop
    clipped them since."""
    attempts = watch._attempts
    # With no loss scaler, what the last backward pass left is what is wanted: the
    # same values, or those before the loop clipped them.
    no_scaler = attempts is not None and attempts.scaler is None
    clipped = no_scaler and attempts is not None and attempts.changed_since_backward
    pending = watch._pending
    first = watch._capture_at is None
    if first:
        watch._capture_at = "optimizer"
        last = watch._held[-1] if watch._held else None
        if no_scaler and last is not None and last.step == watch._count - 1:
            pending = (step, last.binned)
        watch._held, watch._last_logged = [], None
        if not no_scaler:  # with no loss scaler, no step was skipped
            record_skips(watch, watch._unapplied)
        watch._unapplied = []
    watch._bin_at_backward |= clipped
    watch._pending = None
    watch._done += 1
    if watch._capture_at != "optimizer" or not watch.due(step):
        return
    caught = pending is not None and pending[0] == step
    if first and not caught and not no_scaler and attempts and attempts.changed_since_backward:
        # Clipped after an unscale_ not caught (the scaler, found only now, caught from
        # the next step on): no histogram rather than clipped ones, which would read as
        # a sudden growth at the next step.
        return
    if pending is not None and pending[0] == step and pending[1] is not None:
        watch._last_logged = step
        watch._activations = {}
        watch._write(step, *pending[1])
        if watch._spectra is not None and watch._spectra.due(step):
            watch._log_spectra(step)  # the parameters are as the backward pass left them
        watch._alerts.at_logged_step()
    else:
        watch.capture(step)
    log_loss_scale(watch, loss_scale(attempts.scaler if attempts else None), step)


def unscaled(watch: Watch, step: int) -> None:
    """The loss scaler just unscaled this attempt's gradients: binned now if due, as the
    optimizer will be handed them unless the loop clips them first (logged if applied)."""
    if watch._capture_at == "backward":
        return
    # Before the first step, what was logged counts backward passes, not steps.
    first = watch._capture_at is None and watch.active and step % watch.every == 0
    if first or watch._histograms_due(step):
        watch._pending = (step, watch._binned(step, held=True))


def unapplied_attempt(watch: Watch, step: int) -> None:
    """An attempt ended with no optimizer step: skipped by a loss scaler; a backward
    pass no optimizer of the model steps after (a GAN's discriminator, in its
    generator's pass), which is no step; or a model that no optimizer steps."""
    watch._pending = None
    if watch._capture_at == "optimizer":
        if watch._attempts is not None and watch._attempts.scaler is not None:
            watch._done += 1
            record_skips(watch, [step])
        return
    watch._done += 1
    if watch._capture_at is None:
        watch._unapplied.append(step)
        no_optimizer = watch._merge is None and watch._finite
        if no_optimizer or len(watch._unapplied) > _PATIENCE:
            capture_backward(watch)


def capture_backward(watch: Watch) -> None:
    """No optimizer steps the model: the held backward passes are logged, and each
    later one as it ends."""
    watch._capture_at = "backward"
    held, watch._held, watch._unapplied = watch._held, [], []
    for h in held:
        if h.binned is not None:
            watch._write(h.step, *h.binned)
        watch._alerts.at_logged_step()


def record_skips(watch: Watch, steps: list[int], scaler: Any = None, *, after: bool = True) -> None:
    """Steps the loss scaler skipped: counted, and written with the scale each ran
    under (each skip halved it, so earlier ones ran under larger scales). ``after``: the
    scaler already backed off from the last of them."""
    if scaler is None and watch._attempts is not None:
        scaler = watch._attempts.scaler
    scale = loss_scale(scaler, skipped=after)
    backoff = scaler.get_backoff_factor() if scaler is not None and scale is not None else 1.0
    for i, step in enumerate(steps):
        ran_under = None if scale is None else scale / backoff ** (len(steps) - 1 - i)
        record_skip(watch, step, ran_under)


def record_skip(watch: Watch, step: int, scale: float | None) -> None:
    """One step the loss scaler skipped, under ``scale``: counted and written."""
    watch._skipped += 1
    if watch._writes and not watch.sink.closed:
        scalars = {SKIPPED_KEY: float(watch._skipped)}
        if scale is not None:
            scalars[LOSS_SCALE_KEY] = scale
        watch.sink.log(scalars, step=step)
    # Judged before the next step runs (alerts="raise"), as a logged step is; every
    # rank skips the same steps, so those agreeing on a stop take part together.
    watch._alerts.at_logged_step()


def trainer_step(watch: Watch, scaler: Any = None) -> bool:
    """A trainer's optimizer step about to be taken (its callbacks' hook, after the loss
    scaler's ``unscale_``): under an enabled ``scaler``, gradients that are not all finite
    mean it will skip the step, which is recorded instead of captured. Returns whether
    the step goes on to be captured if due (then `log_loss_scale`)."""
    if scaler is None or not scaler.is_enabled():
        return True
    grads = [p.grad for p in watch._grad_params if p.grad is not None]
    if _all_finite(grads):
        return True
    record_skips(watch, [watch.step], scaler, after=False)
    return False


def log_loss_scale(watch: Watch, scale: float | None, step: int) -> None:
    """The loss scale a logged step ran under, written after its histograms: a scalar of
    a later step would make the live diagnosis take the step's histograms as missing."""
    if scale is not None and watch._writes and not watch.sink.closed:
        watch.sink.log({LOSS_SCALE_KEY: scale}, step=step)


def unscale(gradient: Any, scale: float | None) -> Any:
    """``gradient`` as the optimizer applies it when the loss was multiplied by ``scale``:
    in float32, times the scale's reciprocal, as DeepSpeed's step unscales it."""
    return gradient if scale is None else gradient.float().mul(1.0 / scale)


class EngineSteps:
    """A DeepSpeed engine's optimizer steps, for a watch captured at them. In fp16 the
    engine's gradients stay multiplied by its loss scale until its optimizer's step, and
    whether the step is applied or skipped (an overflow) is known only once it returns:
    a due step is binned before, unscaled, and written or recorded skipped after."""

    def __init__(self, watch: Watch, engine: Any) -> None:
        self.watch = watch
        self.engine = engine
        self._stepping: tuple[int, float, int] | None = None

    def begin(self) -> None:
        watch, scale = self.watch, engine_loss_scale(self.engine)
        if scale is None:
            watch._backward_ends()
            return
        step = watch.step
        self._stepping = (step, scale, int(self.engine.skipped_steps))
        try:
            if watch._histograms_due(step):
                watch._loss_scale = scale
                watch._pending = (step, watch._binned(step, held=True))
            if watch._spectra is not None and watch._spectra.due(step):
                watch._log_spectra(step)  # the parameters, whatever becomes of the step
        finally:
            watch._loss_scale = None
            watch._count += 1

    def end(self) -> None:
        watch, stepping, self._stepping = self.watch, self._stepping, None
        pending, watch._pending = watch._pending, None
        if stepping is None:
            return
        step, scale, skips = stepping
        if int(self.engine.skipped_steps) > skips:
            # Taken: a trainer's callback after the step must not capture what it left.
            watch._last_logged = step
            record_skip(watch, step, scale)
            return
        if pending is None or pending[0] != step:
            return
        watch._last_logged = step
        watch._activations = {}
        if pending[1] is not None:
            watch._write(step, *pending[1])
        watch._alerts.at_logged_step()
        log_loss_scale(watch, scale, step)


def _all_finite(tensors: list[Any]) -> bool:
    """Whether every value of ``tensors`` is finite: one device sync per device."""
    import torch

    by_device: dict[Any, list[Any]] = {}
    for t in tensors:
        by_device.setdefault(t.device, []).append(torch.isfinite(t).all())
    return all(bool(torch.stack(flags).all()) for flags in by_device.values())
