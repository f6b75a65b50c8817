"""What a notebook widget showing a training costs the training, against `watch` alone.

A 100-layer MLP (64 wide, as in bench_alerts.py) trained on the CPU with
``run.watch(model, log="all", every=1)``: 400 keys a step. Two trainings, each in a
run kept open, in interleaved blocks of ``train-steps`` steps: one watched alone, one
watched and shown in a `histoscope.notebook.live_widget.Widget` (its writer feeding the
core's live chart, its thread taking and sending updates). Outside a kernel the
widget's comm sends nowhere, but every update is still taken from the core, encoded
as a header and buffers and handed to the comm, as in a notebook. Printed: the
overhead per block, in wall time and in the CPU time of every thread (the
widget's work lands on the training's cores or beside them; CPU time is the
steadier on a shared machine), and their medians and quartiles over the second
half (a training past its start), the updates sent, the largest update's bytes,
and the time from a step's end to the update that carries it (the kernel's part
of the way to the page; the page draws within its next frame).

    python benches/bench_widget.py [--blocks 24] [--train-steps 40]

Targets (issue 29): at most 2 % of a watched step, at most 100 KB per update. Logs go
to a temporary folder.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from bench_alerts import Training

from histoscope.notebook import widget


class Shown(Training):
    """A training whose run is shown in a widget, every send's time and last step noted."""

    def __init__(self, folder: Path) -> None:
        super().__init__("off", folder)
        self.widget = widget(self.run)
        self.ended: dict[int, float] = {}
        self.latency: list[float] = []
        send = self.widget.send

        def noted(content: Any, buffers: Any = None) -> None:
            send(content, buffers)
            if buffers and len(buffers[1]):
                import numpy as np

                last = int(np.frombuffer(buffers[1], dtype=np.float64).max())
                if last in self.ended:
                    self.latency.append(time.perf_counter() - self.ended[last])

        self.widget.send = noted  # type: ignore[method-assign]

    def train_step(self) -> None:
        super().train_step()
        self.ended[self.step - 1] = time.perf_counter()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=24)
    parser.add_argument("--train-steps", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        alone = Training("off", Path(tmp) / "alone")
        shown = Shown(Path(tmp) / "shown")
        overheads, cpu_overheads = [], []
        for block in range(args.blocks):
            pair = [("alone", alone), ("shown", shown)]
            times, cpu = {}, {}
            for name, training in pair if block % 2 else pair[::-1]:
                began = time.process_time()
                times[name] = training.block(args.train_steps)
                cpu[name] = (time.process_time() - began) / args.train_steps
            overheads.append(times["shown"] / times["alone"] - 1.0)
            cpu_overheads.append(cpu["shown"] / cpu["alone"] - 1.0)
            print(
                f"  block {block}: watch alone {1e3 * times['alone']:.1f} ms/step, "
                f"shown {1e3 * times['shown']:.1f} ms/step ({100 * overheads[-1]:+.1f} %; "
                f"CPU of every thread {100 * cpu_overheads[-1]:+.1f} %)"
            )
        time.sleep(1.0)
        w = shown.widget
        for what, ratios in (("wall time", overheads), ("CPU time", cpu_overheads)):
            late = ratios[len(ratios) // 2 :]
            low, _, high = statistics.quantiles(late, n=4)
            print(
                f"widget overhead in {what}, median of the second half: "
                f"{100 * statistics.median(late):+.2f} % "
                f"(quartiles {100 * low:+.1f} to {100 * high:+.1f} %; target <= 2 %)"
            )
        print(
            f"updates sent {w.updates}, largest {w.largest_update / 1024:.1f} KB (target 100 KB), "
            f"{w.bytes_sent / max(1, w.updates) / 1024:.1f} KB on average"
        )
        if shown.latency:
            lat = sorted(shown.latency)
            print(
                f"step end to its update sent: median {1e3 * lat[len(lat) // 2]:.0f} ms, "
                f"worst {1e3 * lat[-1]:.0f} ms"
            )
        w.close()
        alone.run.finish()
        shown.run.finish()


if __name__ == "__main__":
    main()
