"""Reads the example log directory (Keras and tensorboardX runs) and prints what it holds.

Run from the repository root after `pip install .`:

    python examples/quickstart.py [LOGDIR]
"""

import sys
from pathlib import Path

import histoscope

logdir = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "logdir"

for tag, runs in histoscope.load_histograms(logdir).items():
    for run, series in runs.items():
        sizes = sorted({len(b) for b in series.buckets})
        print(f"{run:>14}  {tag:<40} {len(series)} steps, {sizes[0]}-{sizes[-1]} buckets a step")

for chart in histoscope.read_tensorboard_histograms(logdir, bins=20):
    peak = chart.counts[-1].argmax()
    centre = (chart.edges[peak] + chart.edges[peak + 1]) / 2
    print(f"{chart!r}\n    last step {chart.steps[-1]}: the fullest bin is around {centre:.4g}")
