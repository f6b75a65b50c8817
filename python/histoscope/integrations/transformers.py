"""A Hugging Face ``transformers`` callback that watches the model and logs to a histoscope run.

Gradients and parameters are captured once per optimizer step, after gradient
accumulation, at the step the Trainer reports that batch's loss at:
``state.global_step + 1``. Under ``fp16`` they are captured as the loss scaler
unscales them, before ``max_grad_norm`` clips them; a step the scaler skips is
recorded as skipped. Otherwise they are captured just before the optimizer's
step: after clipping, since the Trainer has no hook between the two. The Trainer's logs (loss,
learning rate, ...) are logged as scalars at ``state.global_step``, so both
line up in one run.
"""

from __future__ import annotations

import numbers
import os
from typing import TYPE_CHECKING, Any

from transformers import TrainerCallback  # type: ignore[import-not-found,unused-ignore]

from ._watching import WatchingCallback

if TYPE_CHECKING:
    import torch

__all__ = ["HistoscopeCallback"]


class HistoscopeCallback(WatchingCallback, TrainerCallback):  # type: ignore[misc,unused-ignore]
    """Watches the model a ``transformers.Trainer`` trains (see `histoscope.Run.watch`).

    ``run`` is the histoscope run to log to; without one, a run of
    ``project`` is started in ``<output_dir>/histoscope-logs`` and finished
    with the training. ``every`` defaults to ``args.logging_steps``. Only the
    main process logs.

    With ``stop_on`` (kinds of finding, such as ``("nonfinite", "exploding")``),
    the run's first alert of one of those kinds stops the training after the
    current step (``control.should_training_stop``, agreed by every process)
    and says why in the log. Without it, alerts are only warned.

    Example:
        >>> from histoscope.integrations.transformers import HistoscopeCallback
        >>> trainer = Trainer(model, args, train_dataset=data,  # doctest: +SKIP
        ...                   callbacks=[HistoscopeCallback(log="all", filter="classifier")])
    """

    default_project = "transformers"

    def on_train_begin(
        self,
        args: Any,
        state: Any,
        control: Any,
        model: torch.nn.Module | None = None,
        **kwargs: Any,
    ) -> None:
        if model is None or self._watching.watch is not None:
            return
        self._watching.start(
            model,
            os.path.join(args.output_dir, "histoscope-logs"),
            default_every=_logging_steps(args),
            step_fn=lambda: state.global_step + 1,
            writes=state.is_world_process_zero,
        )
        self._watching.capture_at_unscale(_scaler(kwargs.get("optimizer")))

    def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        optimizer = kwargs.get("optimizer")
        self._watching.capture_if_due(_scaler(optimizer), optimizer)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._watching.stop_requested():
            control.should_training_stop = True

    def on_log(
        self, args: Any, state: Any, control: Any, logs: dict | None = None, **kwargs: Any
    ) -> None:
        run = self._watching.run
        if self._watching.watch is None or run is None or not logs:
            return
        numbers_only = {
            key: float(value)
            for key, value in logs.items()
            if isinstance(value, numbers.Real) and not isinstance(value, bool)
        }
        if numbers_only:
            run.log(numbers_only, step=state.global_step)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._watching.stop()


def _logging_steps(args: Any) -> int:
    """``args.logging_steps`` as a number of steps; a fraction of the run (< 1) counts as 1."""
    steps = getattr(args, "logging_steps", 1)
    return int(steps) if steps >= 1 else 1


def _scaler(optimizer: Any) -> Any:
    """fp16: accelerate's optimizer holds the loss scaler (None otherwise)."""
    return getattr(optimizer, "scaler", None)
