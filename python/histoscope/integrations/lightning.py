"""A PyTorch Lightning callback that watches the model and logs it to a histoscope run.

Gradients and parameters are captured just before each optimizer step (after
gradient accumulation, before Lightning clips them), at ``trainer.global_step``:
the step Lightning's own loggers use for what ``training_step`` logs.

The watch starts as the fit starts, once the strategy has made the model what it
trains: sharded by FSDP (``FSDPStrategy``), by ``configure_model`` under
``ModelParallelStrategy`` (FSDP2, tensor parallelism), or partitioned by DeepSpeed
(``DeepSpeedStrategy``, whose backward pass has reduced the gradients into their
partitions by then). Each is captured whole, as `histoscope.Run.watch` captures it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

try:
    from lightning.pytorch import Callback  # type: ignore[import-not-found,unused-ignore]
except ImportError:  # the older package name
    from pytorch_lightning import Callback  # type: ignore[assignment,no-redef,import-not-found,unused-ignore]

from ._watching import WatchingCallback

if TYPE_CHECKING:
    import torch

__all__ = ["HistoscopeCallback"]


class HistoscopeCallback(WatchingCallback, Callback):  # type: ignore[misc,unused-ignore]
    """Watches the `LightningModule` being fitted (see `histoscope.Run.watch`).

    ``run`` is the histoscope run to log to; without one, a run of
    ``project`` is started in ``<default_root_dir>/histoscope-logs`` and
    finished with the fit. ``every`` defaults to the trainer's
    ``log_every_n_steps``. Only the global rank 0 logs.

    With ``stop_on`` (kinds of finding, such as ``("nonfinite", "exploding")``),
    the run's first alert of one of those kinds stops the fit after the
    current batch, as Lightning's own callbacks do (``trainer.should_stop``,
    agreed by every rank through the strategy), and says why in the log.
    Without it, alerts are only warned (see `histoscope.init`).

    Example:
        >>> from histoscope.integrations.lightning import HistoscopeCallback
        >>> trainer = L.Trainer(callbacks=[HistoscopeCallback(log="all")])  # doctest: +SKIP
        >>> trainer.fit(model, data)  # doctest: +SKIP
    """

    default_project = "lightning"

    def on_fit_start(self, trainer: Any, pl_module: torch.nn.Module) -> None:
        if self._watching.watch is not None:
            return
        self._watching.start(
            _trained(trainer, pl_module),
            os.path.join(trainer.default_root_dir, "histoscope-logs"),
            default_every=max(1, trainer.log_every_n_steps),
            step_fn=lambda: trainer.global_step,
            writes=trainer.is_global_zero,
        )

    def on_before_optimizer_step(self, trainer: Any, pl_module: Any, optimizer: Any) -> None:
        # 16-mixed: the precision plugin's scaler has unscaled the gradients by now.
        scaler = getattr(getattr(trainer, "precision_plugin", None), "scaler", None)
        self._watching.capture_if_due(scaler)

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        agree = lambda stop: bool(trainer.strategy.reduce_boolean_decision(stop, all=False))  # noqa: E731
        if self._watching.stop_requested(agree):
            trainer.should_stop = True

    def teardown(self, trainer: Any, pl_module: Any, stage: str) -> None:
        if stage == "fit":
            self._watching.stop()


def _trained(trainer: Any, pl_module: torch.nn.Module) -> torch.nn.Module:
    """The module whose parameters are trained: FSDP's root when ``FSDPStrategy`` wrapped
    the LightningModule in one (its own parameters are then the root's), else the
    LightningModule (whose parameters DDP, FSDP2, tensor parallelism and DeepSpeed
    train in place)."""
    model = getattr(trainer.strategy, "model", None)
    try:
        from torch.distributed.fsdp import FullyShardedDataParallel
    except ImportError:  # torch without torch.distributed
        return pl_module
    if isinstance(model, FullyShardedDataParallel) and model.module is pl_module:
        return model
    return pl_module
