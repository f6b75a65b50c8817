"""How fast histoscope renders a chart page, and how large the page is.

What is measured
----------------
``histoscope.render(chart)`` on charts of normal samples drifting over the
steps (the shape of trained weights), at 30 bins and 51 steps (the reader's
default view) and 1,000 steps. The time is the best of ``--repeat`` calls
after one warm-up call (which also reads the page's CSS and JavaScript
assets); the size is the page's UTF-8 bytes. KB and MB are 10**3 and 10**6 bytes.

The targets, from issue 4 (a benchmark, not a test: it prints PASS or FAIL and
exits 0): 51 x 30 well under 100 ms (here: under 25 ms) and under 200 KB;
1,000 x 30 under 2 MB.

How to run
----------
    python benches/bench_html.py              # histoscope installed
    python benches/bench_html.py --repeat 50
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from histoscope import TensorBoardChart
from histoscope.view.html import render


def drifting_chart(steps: int, bins: int = 30) -> TensorBoardChart:
    rng = np.random.default_rng(0)
    edges = np.linspace(-0.6, 1.2, bins + 1)
    counts = [
        np.histogram(rng.normal(0.5 * i / steps, 0.1 + 0.1 * i / steps, 4096), edges)[0]
        for i in range(steps)
    ]
    return TensorBoardChart(
        tag="dense/kernel",
        run="train",
        steps=np.arange(steps) * 100,
        wall_times=np.arange(steps, dtype=float),
        edges=edges,
        counts=counts,
    )


def best_time(chart: TensorBoardChart, repeat: int) -> float:
    render(chart)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        render(chart)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=20, help="timed calls per chart")
    args = parser.parse_args()

    targets = {51: (0.025, 200_000), 1000: (None, 2_000_000)}
    print(f"{'steps x bins':>13} {'render ms':>10} {'page KB':>9}  targets")
    for steps, (most_seconds, most_bytes) in targets.items():
        chart = drifting_chart(steps)
        seconds = best_time(chart, args.repeat)
        size = len(render(chart).encode("utf-8"))
        checks = [f"size < {most_bytes / 1e3:.0f} KB: {'PASS' if size < most_bytes else 'FAIL'}"]
        if most_seconds is not None:
            verdict = "PASS" if seconds < most_seconds else "FAIL"
            checks.insert(0, f"time < {most_seconds * 1e3:.0f} ms: {verdict}")
        print(
            f"{f'{steps} x {chart.bins}':>13} {seconds * 1e3:>10.2f} {size / 1e3:>9.1f}"
            f"  {', '.join(checks)}"
        )


if __name__ == "__main__":
    main()
