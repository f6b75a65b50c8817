"""How fast histoscope bins values and computes their statistics, against its competitors.

What is measured
----------------
For 1 M and 16 M normal float32 and float64 values, the time to get 50 equal
bins over the values' range together with their count, minimum, maximum,
mean, standard deviation and number of finite values, the numbers a logged
histogram stores:

- ``floor``: one ``np.max`` pass over the array, the least a pass can cost;
- ``histoscope``: ``bin_prepared(values, 50)``, the Rust core that
  ``Run.add_histogram`` runs in its background thread (two passes, threads);
- ``histoscope Histogram()``: ``Histogram(values, bins=50)``, which also
  copies the values first, as ``add_histogram`` does in the caller's thread;
- ``numpy``: ``np.histogram(values, 50)`` plus ``min``, ``max``, ``mean``,
  ``std`` and ``np.isfinite(values).sum()``;
- ``fast-histogram``: ``histogram1d`` over ``(min, max)`` plus the same NumPy
  statistics (it computes none itself), and ``fast-histogram (bins only)``;
- ``boost-histogram``: a ``Regular(50, min, max)`` axis filled, plus the NumPy
  statistics (its last bin is open, so its counts differ at the maximum);
- ``torch.histc``: on a CPU tensor sharing the array, with torch's
  ``min``, ``max``, ``mean``, ``std`` and ``isfinite().sum()``.

Each time is the best of several calls. Ratios are the contender's time over
histoscope's. The targets (a benchmark, not a test: it prints PASS or FAIL
and exits 0): histoscope at least 10x faster than NumPy and 4x faster than
fast-histogram, for the same numbers. histoscope's counts are checked equal
to ``numpy.histogram``'s on every array before timing.

How to run
----------
    pip install -r benches/requirements.txt   # and histoscope itself
    python benches/bench_binning.py            # about a minute
    python benches/bench_binning.py --sizes 1000000 --repeat 3
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Callable

import numpy as np

from histoscope.write.histogram import Histogram, bin_prepared

BINS = 50
TARGETS = {"numpy": 10.0, "fast-histogram": 4.0}


def numpy_stats(x: np.ndarray) -> tuple[float, ...]:
    return x.min(), x.max(), x.mean(), x.std(), np.isfinite(x).sum()


def contenders(x: np.ndarray) -> dict[str, Callable[[], object]]:
    found: dict[str, Callable[[], object]] = {
        "floor": lambda: np.max(x),
        "histoscope": lambda: bin_prepared(x, BINS),
        "histoscope Histogram()": lambda: Histogram(x, bins=BINS),
        "numpy": lambda: (np.histogram(x, BINS), numpy_stats(x)),
    }
    try:
        import fast_histogram

        def fast() -> object:
            lo, hi = x.min(), x.max()
            return fast_histogram.histogram1d(x, BINS, (lo, hi)), numpy_stats(x)

        found["fast-histogram"] = fast
        lo, hi = float(x.min()), float(x.max())
        found["fast-histogram (bins only)"] = lambda: fast_histogram.histogram1d(x, BINS, (lo, hi))
    except ImportError:
        print("fast-histogram is not installed: pip install fast-histogram")
    try:
        import boost_histogram as bh

        def boost() -> object:
            lo, hi = x.min(), x.max()
            h = bh.Histogram(bh.axis.Regular(BINS, float(lo), float(hi)))
            return h.fill(x).view(), numpy_stats(x)

        found["boost-histogram"] = boost
    except ImportError:
        print("boost-histogram is not installed: pip install boost-histogram")
    try:
        import torch

        t = torch.from_numpy(x)

        def histc() -> object:
            lo, hi = t.min(), t.max()
            counts = torch.histc(t, BINS, float(lo), float(hi))
            return counts, lo, hi, t.mean(), t.std(unbiased=False), t.isfinite().sum()

        found["torch.histc"] = histc
    except ImportError:
        print("torch is not installed: pip install torch")
    return found


def best_time(call: Callable[[], object], repeat: int) -> float:
    call()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return min(times)


def check_equal_to_numpy(x: np.ndarray) -> None:
    h = bin_prepared(x, BINS)
    counts, edges = np.histogram(x.astype(np.float64), bins=h.edges)
    if not np.array_equal(h.counts, counts):
        raise SystemExit(f"histoscope's counts differ from numpy.histogram's for {x.dtype}")
    if x.dtype == np.float64:
        if not np.array_equal(h.edges, np.histogram(x, BINS)[1]):
            raise SystemExit("histoscope's edges differ from numpy.histogram's")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000000,16000000", help="comma-separated sizes")
    parser.add_argument("--repeat", type=int, default=0, help="calls per contender (0: by size)")
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs; numpy {np.__version__}; {BINS} bins; best of several calls")
    rng = np.random.default_rng(0)
    verdicts: list[tuple[str, bool]] = []
    for size in (int(s) for s in args.sizes.split(",")):
        base = rng.standard_normal(size)
        for dtype in (np.float32, np.float64):
            x = base.astype(dtype)
            check_equal_to_numpy(x)
            repeat = args.repeat or (20 if size <= 2_000_000 else 5)
            times = {name: best_time(call, repeat) for name, call in contenders(x).items()}
            ours = times["histoscope"]
            print(f"\n{size:,} {np.dtype(dtype).name} values")
            print(f"  {'contender':<28}{'ms':>10}{'x histoscope':>15}")
            for name, seconds in times.items():
                print(f"  {name:<28}{seconds * 1e3:>10.2f}{seconds / ours:>15.2f}")
            for name, target in TARGETS.items():
                if name in times:
                    ratio = times[name] / ours
                    ok = ratio >= target
                    label = f"{size:,} {np.dtype(dtype).name}: {ratio:.1f}x {name} (>= {target:g}x)"
                    verdicts.append((label, ok))
    print("\nTargets (histoscope = bin_prepared, the binning and statistics):")
    for label, ok in verdicts:
        print(f"  {'PASS' if ok else 'FAIL'}  {label}")


if __name__ == "__main__":
    main()
