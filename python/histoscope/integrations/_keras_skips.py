"""The train steps of a Keras ``LossScaleOptimizer``: applied or skipped, as the host learns it.

Under ``mixed_float16`` a ``LossScaleOptimizer`` skips a train step whose
gradients overflowed float16 and halves its loss scale; its ``iterations`` count
only the applied steps. The Keras callback (`histoscope.integrations.keras`)
numbers train steps with the skipped ones included, as a watch numbers optimizer
steps: ``iterations`` plus the steps skipped so far (`ScaledSteps.skipped`).

The parameters and layer outputs of a step are taken as it starts, before it is
known whether its gradients overflow, so the histograms of a logging step are
held (`ScaledSteps.hold`) until the step is settled (`ScaledSteps.settle`): an
applied step's are written, then the loss scale it ran under; a skipped step's
are dropped and the step is written as the scalars ``amp/skipped_steps`` (how many
so far) and ``amp/loss_scale`` (the scale it overflowed at), as `Run.watch`
writes them under a ``GradScaler``.

Example:
    >>> written = []
    >>> steps = ScaledSteps(every=2, write=lambda step, data: written.append((step, data)))
    >>> steps.hold(0, {"gradients/w": "a histogram"})
    >>> steps.settle(0, applied=False, scale=1024.0)
    >>> steps.hold(1, {"gradients/w": "a histogram"})  # not due: the tap holds nothing
    >>> steps.settle(1, applied=True, scale=512.0)
    >>> steps.hold(2, {"gradients/w": "a histogram"})
    >>> steps.settle(2, applied=True, scale=512.0)
    >>> written  # doctest: +NORMALIZE_WHITESPACE
    [(0, {'amp/skipped_steps': 1.0, 'amp/loss_scale': 1024.0}),
     (2, {'gradients/w': 'a histogram'}), (2, {'amp/loss_scale': 512.0})]
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

from ..write.optimizer_steps import LOSS_SCALE_KEY, SKIPPED_KEY

Write = Callable[[int, dict[str, Any]], None]
"""Where settled values go: ``write(step, {key: Histogram or number})``."""

# Skipped steps seen per optimizer in this process, so that a later ``fit`` (with this
# callback or another) numbers its steps after them.
_SKIPPED: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()


def loss_scale_optimizer(model: Any) -> Any:
    """The model's optimizer if it is a ``LossScaleOptimizer`` (as ``compile`` makes one
    under ``mixed_float16``), else None."""
    import keras

    optimizer = getattr(model, "optimizer", None)
    return optimizer if isinstance(optimizer, keras.optimizers.LossScaleOptimizer) else None


def skipped_before(optimizer: Any) -> int:
    """How many train steps ``optimizer`` skipped in earlier ``fit`` calls of this process."""
    return _SKIPPED.get(optimizer, 0)


class ScaledSteps:
    """Holds a logging step's histograms until the step is known applied or skipped.

    ``skipped`` starts at the skips of earlier fits; `remember` keeps the count for the
    next fit of ``optimizer``. `hold` and `settle` may be called from a JAX runtime thread.
    """

    def __init__(self, every: int, write: Write, skipped: int = 0) -> None:
        self.every = every
        self.write = write
        self.skipped = skipped
        self._held: dict[int, dict[str, Any]] = {}
        self._judged = False
        self._lock = threading.Lock()

    def hold(self, step: int, histograms: dict[str, Any]) -> None:
        with self._lock:
            self._held.setdefault(step, {}).update(histograms)

    def settle(self, step: int, *, applied: bool, scale: float) -> None:
        """Step ``step`` ran under ``scale`` and was ``applied`` or skipped: its held
        histograms are written (then the scale) or dropped (and the skip written)."""
        with self._lock:
            held = self._held.pop(step, {})
            # Values of earlier steps left held were never settled: a step traced but not run.
            for earlier in [s for s in self._held if s < step]:
                del self._held[earlier]
            if not applied:
                self.skipped += 1
                self._judged = True
                self.write(step, {SKIPPED_KEY: float(self.skipped), LOSS_SCALE_KEY: scale})
            elif step % self.every == 0:
                self._judged = True
                if held:
                    self.write(step, held)
                self.write(step, {LOSS_SCALE_KEY: scale})

    def take_judged(self) -> bool:
        """Whether a step was logged or recorded skipped since the last call."""
        with self._lock:
            judged, self._judged = self._judged, False
            return judged

    def remember(self, optimizer: Any) -> None:
        """Keeps the count of skipped steps for the next ``fit`` of ``optimizer``."""
        _SKIPPED[optimizer] = self.skipped
