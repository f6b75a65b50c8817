"""How long diagnosing a log directory takes, against reading it.

What is measured
----------------
The log directory of ``bench_read.py`` (PyTorch's ``SummaryWriter``, default
'tensorflow' bins: four runs of six layers' weights and biases, hundreds of
buckets per histogram, scalars mixed in), written with the same code and
cached the same way, or any log directory given with ``--logdir``. Then, in
this one run of the script, each contender is timed on it, best of
``--repeat`` calls, page cache warm (the first two taking turns, so that the
machine's other work weighs on both alike):

- ``load_histograms``: ``histoscope.load_histograms(logdir)``, the reading that
  checking is held against;
- ``diagnose(logdir)``: read and diagnose in the core, what ``histoscope
  check`` calls;
- ``diagnose(loaded)``: ``histoscope.diagnose`` of histograms already loaded
  (arrays handed to the core, profiles and rules only);
- ``NumPy profiles``: the same per-step statistics the rules start from
  (scale, spread, share at zero), computed with NumPy over the loaded series,
  one step at a time: what a Python diagnosis would cost on top of reading;
- ``histoscope check --json``: the command, in a subprocess (interpreter start
  and imports included).

The target (a benchmark, not a test: it prints PASS or FAIL and exits 0):
``diagnose(logdir)`` within 2x the time of ``load_histograms``.

How to run
----------
    pip install -r benches/requirements.txt   # and histoscope itself, built --release
    python benches/bench_check.py                         # the 105 MB log dir of bench_read
    python benches/bench_check.py --size-mb 40            # a smaller one
    python benches/bench_check.py --cache-dir /tmp/hs-bench   # shared with bench_read.py
    python benches/bench_check.py --logdir DIR            # any log directory, as it is
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_read import (  # noqa: E402
    MB,
    event_files,
    in_folder,
    logdir_parser,
    prepare_logdir,
    warm_page_cache,
)


def best_of(repeat: int, call: Callable[[], object]) -> tuple[float, object]:
    """The fastest of `repeat` calls, in seconds, and the last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = call()
        best = min(best, time.perf_counter() - start)
    return best, result


def best_of_alternated(
    repeat: int, first: Callable[[], object], second: Callable[[], object]
) -> tuple[tuple[float, object], tuple[float, object]]:
    """`best_of` for two calls taking turns, one of each per round."""
    best = [(float("inf"), None), (float("inf"), None)]
    for _ in range(repeat):
        for i, call in enumerate((first, second)):
            start = time.perf_counter()
            result = call()
            best[i] = (min(best[i][0], time.perf_counter() - start), result)
    return best[0], best[1]


def numpy_profiles(loaded: dict) -> int:
    """Per-step count, mean, spread and share at zero of every series, in NumPy."""
    import numpy as np

    steps = 0
    for by_run in loaded.values():
        for series in by_run.values():
            for buckets in series.buckets:
                left, right, count = buckets[:, 0], buckets[:, 1], buckets[:, 2]
                mid = 0.5 * (left + right)
                total = count.sum()
                mean = (count * mid).sum() / total
                spread = np.sqrt(max((count * mid * mid).sum() / total - mean * mean, 0.0))
                zero = count[(left <= 0) & (right >= 0)].sum() / total
                steps += int(np.isfinite(spread + zero))
    return steps


def check_command(logdir: Path) -> int:
    out = subprocess.run(
        [sys.executable, "-m", "histoscope.cli", "check", str(logdir), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode not in (0, 1):
        raise RuntimeError(f"histoscope check failed: {out.stderr}")
    return out.returncode


def benchmark(args: argparse.Namespace, cache_dir: Path) -> None:
    import histoscope

    if args.logdir is not None:
        logdir, made = args.logdir, "given"
    else:
        logdir, written_in = prepare_logdir(cache_dir, args.size_mb)
        made = f"written in {written_in:.0f} s" if written_in is not None else "reused"
    size = sum(p.stat().st_size for p in event_files(logdir))
    print(f"log directory: {logdir} ({size / MB:.1f} MB, {made}), {os.cpu_count()} cores")
    warm_page_cache(logdir)

    # Alternated, so that the machine's other work, which drifts, weighs on both alike.
    (load_s, loaded), (check_s, findings) = best_of_alternated(
        args.repeat,
        lambda: histoscope.load_histograms(logdir),
        lambda: histoscope.diagnose(logdir),
    )
    series = sum(len(by_run) for by_run in loaded.values())  # type: ignore[union-attr]
    steps = sum(len(s) for by_run in loaded.values() for s in by_run.values())  # type: ignore[union-attr]
    rules_s, again = best_of(args.repeat, lambda: histoscope.diagnose(loaded))
    numpy_s, _ = best_of(1, lambda: numpy_profiles(loaded))  # type: ignore[arg-type]
    command_s, status = best_of(1, lambda: check_command(logdir))
    # Loaded histograms come without the scalars that can add findings or change them.
    print(
        f"{series} series, {steps} steps, {len(findings)} findings "
        f"({len(again)} from the loaded histograms alone); `check` exits {status}"
    )

    rows = [
        ("load_histograms(logdir)", load_s),
        ("diagnose(logdir)", check_s),
        ("diagnose(loaded histograms)", rules_s),
        ("NumPy profiles of loaded histograms", numpy_s),
        ("histoscope check --json (subprocess)", command_s),
    ]
    print(f"\n{'contender':40} {'seconds':>9} {'MB/s':>9} {'x load':>7}")
    for label, seconds in rows:
        print(f"{label:40} {seconds:9.3f} {size / MB / seconds:9.0f} {seconds / load_s:7.2f}")
    ratio = check_s / load_s
    print(f"\nrules alone vs NumPy profiles alone: {numpy_s / rules_s:.0f}x faster")
    verdict = "PASS" if ratio <= 2.0 else "FAIL"
    print(f"target: diagnose(logdir) within 2x load_histograms: {ratio:.2f}x  {verdict}")


def parse_args() -> argparse.Namespace:
    parser = logdir_parser(__doc__.split("\n")[0])
    parser.add_argument(
        "--repeat", type=int, default=5, help="calls per contender; the best is kept (default 5)"
    )
    parser.add_argument(
        "--logdir", type=Path, help="time this log directory instead of writing one"
    )
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    in_folder(args.cache_dir, lambda folder: benchmark(args, folder))


if __name__ == "__main__":
    main()
