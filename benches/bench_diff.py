"""How fast ``histoscope.compare`` (``histoscope diff``) ranks the keys of two runs,
against doing it by hand with TensorBoard's reader and SciPy.

What is measured
----------------
- Wide: two runs of 1,000 keys x 5 steps (64 bins each, histoscope's writer), the
  second with 3 keys changed. Each contender ranks every key of the last step:
  - ``histoscope.compare(logdir, a=, b=)``;
  - by hand: TensorBoard's ``EventAccumulator`` (histograms kept in full) on each
    run, then ``scipy.stats.wasserstein_distance`` per key over the bucket centres
    weighted by their counts (what a user without histoscope would write).
- Large (``--large-dir DIR``): ``compare`` of two runs of ``large_logdir.py``'s
  1 GB log directory (25 keys x 150 steps, about 550 buckets a histogram, 34 MB a run).

Each contender runs in a fresh subprocess; its time is the best of ``--repeat`` calls,
its memory the subprocess's peak resident set, and that peak minus the peak after
the imports.
Targets (printed, never failed): the wide case in well under a second, and
``compare`` at least 10x faster than by hand.

How to run
----------
    pip install -r benches/requirements.txt    # and histoscope itself, built --release
    python benches/bench_diff.py                          # the wide case, ~1 min
    python benches/bench_diff.py --large-dir /tmp/hs-large   # and the 1 GB directory
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

KEYS = 1000
STEPS = 5
CHANGED = ("key0100", "key0500", "key0900")

CHILD = r"""
import json, resource, sys, time
kind, logdir, a, b, repeat = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
if kind == "histoscope":
    import histoscope
    def run():
        table = histoscope.compare(logdir, a=a, b=b)
        return [row.key for row in table[:3]]
else:
    import numpy as np
    import scipy.stats
    from tensorboard.backend.event_processing import event_accumulator
    def load(run):
        acc = event_accumulator.EventAccumulator(f"{logdir}/{run}", size_guidance={"histograms": 0})
        acc.Reload()
        return {tag: acc.Histograms(tag)[-1].histogram_value for tag in acc.Tags()["histograms"]}
    def centres(h):
        limits = np.array(h.bucket_limit)
        lefts = np.concatenate([[h.min], limits[:-1]])
        return (lefts + np.minimum(limits, h.max)) / 2, np.array(h.bucket)
    def run():
        first, second = load(a), load(b)
        scores = {}
        for tag in first.keys() & second.keys():
            (va, wa), (vb, wb) = centres(first[tag]), centres(second[tag])
            scale = max(np.sqrt(np.cov(va, aweights=wa)), np.sqrt(np.cov(vb, aweights=wb)))
            scores[tag] = scipy.stats.wasserstein_distance(va, vb, wa, wb) / scale
        return sorted(scores, key=scores.get, reverse=True)[:3]
imported = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
best = float("inf")
for _ in range(repeat):
    start = time.perf_counter()
    top = run()
    best = min(best, time.perf_counter() - start)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": best, "peak_mb": (peak - imported) / 1024, "rss_mb": peak / 1024,
                  "top": top}))
"""


def write_wide(root: Path) -> Path:
    """Two runs of KEYS keys, the second with CHANGED scaled by 2."""
    import numpy as np

    import histoscope as hs

    for run in ("base", "changed"):
        with hs.init("wide", run_name=run, logdir=str(root)) as logged:
            for step in range(STEPS):
                for k in range(KEYS):
                    key = f"key{k:04d}"
                    values = np.random.default_rng(k * 10 + step).normal(size=2000)
                    if run == "changed" and key in CHANGED:
                        values = values * 2
                    logged.add_histogram(key, values, step=step)
    return root / "wide"


def measure(kind: str, logdir: Path, a: str, b: str, repeat: int) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, kind, str(logdir), a, b, str(repeat)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--large-dir", type=Path, help="build (or reuse) the 1 GB directory here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        wide = write_wide(Path(scratch))
        ours = measure("histoscope", wide, "base", "changed", args.repeat)
        theirs = measure("by-hand", wide, "base", "changed", 1)
        print(f"wide: {KEYS} keys x 2 runs, ranking the last step")
        print(f"{'contender':38} {'time s':>8} {'peak MB':>8}  top 3")
        for name, got in (("histoscope.compare", ours), ("EventAccumulator + scipy", theirs)):
            print(f"{name:38} {got['seconds']:8.3f} {got['peak_mb']:8.1f}  {', '.join(got['top'])}")
        ratio = theirs["seconds"] / ours["seconds"]
        print(f"speedup: compare is {ratio:.1f}x the by-hand ranking")
        found = set(ours["top"]) == set(CHANGED)
        print("targets")
        print(f"  {'PASS' if found else 'FAIL'}  the 3 changed keys ranked first")
        print(f"  {'PASS' if ours['seconds'] < 1 else 'FAIL'}  {KEYS} keys x 2 runs under 1 s")
        print(f"  {'PASS' if ratio >= 10 else 'FAIL'}  at least 10x the by-hand ranking")
    if args.large_dir:
        sys.path.insert(0, str(Path(__file__).parent))
        from large_logdir import build

        logdir = build(args.large_dir, 1)
        runs = sorted(p.relative_to(logdir).as_posix() for p in logdir.glob("part_*/run_*"))
        ours = measure("histoscope", logdir, runs[0], runs[1], args.repeat)
        theirs = measure("by-hand", logdir, runs[0], runs[1], 1)
        print(f"1 GB directory, {runs[0]} against {runs[1]} (34 MB each):")
        for name, got in (("histoscope.compare", ours), ("EventAccumulator + scipy", theirs)):
            peak = f"peak {got['rss_mb']:.0f} MB ({got['peak_mb']:.1f} MB above the imports)"
            print(f"  {name:28} {got['seconds']:.3f} s, {peak}")
        print(f"  speedup: {theirs['seconds'] / ours['seconds']:.1f}x")


if __name__ == "__main__":
    main()
