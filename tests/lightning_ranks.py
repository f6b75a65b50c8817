"""A Lightning fit on two CPU processes (DDP over gloo) whose loss turns NaN at optimizer
step `NAN_FROM`, watched by histoscope's callback with ``stop_on=("nonfinite",)``.

Run by tests/test_integrations.py as a script: Lightning's DDP launcher starts the
second rank by running this file again. Each rank writes the global step it stopped
at to ``OUT/rank<r>.json``.

    python tests/lightning_ranks.py OUT
"""

from __future__ import annotations

import json
import logging
import sys
import warnings
from pathlib import Path

import lightning.pytorch as pl
import torch

from histoscope.integrations.lightning import HistoscopeCallback

NAN_FROM = 3


class Diverging(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.net = torch.nn.Sequential(
            torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2)
        )

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.cross_entropy(self.net(x), y)
        return loss * float("nan") if self.trainer.global_step >= NAN_FROM else loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def main() -> None:
    out = Path(sys.argv[1])
    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    warnings.simplefilter("ignore")
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(4000, 6, generator=generator)
    data = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(x, (x[:, 0] > 0).long()), batch_size=8
    )
    callback = HistoscopeCallback(every=1, stop_on=("nonfinite",))
    trainer = pl.Trainer(
        accelerator="cpu", devices=2, strategy="ddp", max_steps=200, logger=False,
        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
        default_root_dir=out, callbacks=[callback],
    )  # fmt: skip
    trainer.fit(Diverging(), data)
    (out / f"rank{trainer.global_rank}.json").write_text(json.dumps(trainer.global_step))
    # Torn down before the interpreter exits (as in trainer_ranks.py): a process group
    # left to exit with it can abort a rank ("terminate called without an active
    # exception") from gloo's threads.
    if torch.distributed.is_initialized():
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
