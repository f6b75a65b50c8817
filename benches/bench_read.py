"""How fast histoscope reads a TensorBoard log directory, against its competitors.

What is measured
----------------
A log directory of at least 100 MB is written with PyTorch's
``SummaryWriter.add_histogram`` (default 'tensorflow' bins): four runs, each a
few layers' weights and biases at many steps, with scalars mixed in. Then, in
the same run of this script, each contender reads it:

- ``read floor``: every event file read fully from the page cache (after a
  warm-up read), the least any reader can cost;
- ``layout floor``: the same reads, plus writing as many float64s into fresh
  memory as ``load_histograms`` returns buckets, on every core: the least any
  reader returning histoscope's (left, right, count) rows can cost, as the
  kernel zeroes every fresh page handed out;
- ``histoscope.load_histograms(logdir)``, and every series' ``buckets``;
- ``histoscope.read_tensorboard_histograms(logdir, max_steps=None)``;
- TensorBoard's ``EventAccumulator``: one per run, histograms and tensors kept
  in full (size guidance 0), ``Reload()``, then ``Histograms(tag)`` per tag;
- maidr's ``maidr.tensorboard.load_histograms(logdir)`` and
  ``maidr.read_tensorboard_histograms(logdir, max_steps=None)``.

Each contender runs in a fresh subprocess. Its time is the best of a few
calls (one call for the slow competitors); its memory is the peak resident
set (``ru_maxrss``) of that subprocess minus the peak after its imports, which
also counts what Rust allocates. MB are 10**6 bytes; MB/s counts the bytes of
the event files the contender actually read, and every ratio is one of MB/s,
so a contender timed on a subset of the runs compares fairly.

The targets (a benchmark, not a test: it prints PASS or FAIL and exits 0):
``load_histograms`` within 2x of the read floor, and within 1.2x (the layout
floor's own ratio to the read floor is what the size of the result leaves of
that), at least 10x maidr's loader and 100x EventAccumulator;
``read_tensorboard_histograms(max_steps=None)`` at least 100x maidr's; the
peak memory of ``load_histograms`` below the size of the buckets it returns
plus 50 MB.

How to run
----------
    pip install -r benches/requirements.txt   # and histoscope itself
    python benches/bench_read.py                          # everything, ~5 min
    python benches/bench_read.py --quick                  # competitors on one run
    python benches/bench_read.py --cache-dir /tmp/hs-bench    # keep the log dir
    python benches/bench_read.py --contenders floor,hs-load   # only these

Without ``--cache-dir`` (or ``HISTOSCOPE_BENCH_CACHE``) the log directory is
written to a fresh temporary folder and removed at the end; with it, it is
written once and reused.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import mmap
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

MB = 10**6
# run -> learning rate
RUNS = {"adam/lr_1e-3": 1e-3, "adam/lr_1e-4": 1e-4, "sgd/lr_0.01": 0.01, "sgd/lr_0.1": 0.1}
LAYERS = {
    "conv1/weight": (64, 3, 3, 3),
    "conv1/bias": (64,),
    "conv2/weight": (128, 64, 3, 3),
    "fc1/weight": (256, 512),
    "fc1/bias": (256,),
    "fc2/weight": (10, 256),
}
FLUSH_EVERY = 25  # steps between checks of a run's size
LOGDIR_FORMAT = 2  # bump when the generated log directory changes


# --- The log directory ------------------------------------------------------


def prepare_logdir(cache_dir: Path, size_mb: float) -> tuple[Path, float | None]:
    """The log directory under `cache_dir`, written unless a matching one is there.

    Returns the directory and the seconds spent writing it (None if reused).
    """
    logdir, stamp = cache_dir / "logdir", cache_dir / "logdir.json"
    wanted = {"format": LOGDIR_FORMAT, "size_mb": size_mb, "runs": list(RUNS)}
    if stamp.exists() and json.loads(stamp.read_text()) == wanted:
        return logdir, None
    shutil.rmtree(logdir, ignore_errors=True)
    start = time.perf_counter()
    for seed, (run, learning_rate) in enumerate(RUNS.items()):
        write_run(logdir / run, size_mb * MB / len(RUNS), learning_rate, seed)
    stamp.write_text(json.dumps(wanted))
    return logdir, time.perf_counter() - start


def write_run(run_dir: Path, target_bytes: float, learning_rate: float, seed: int) -> None:
    """Log training-like steps to one run until its event file reaches `target_bytes`."""
    import numpy as np
    from torch.utils.tensorboard import SummaryWriter

    rng = np.random.default_rng(seed)
    initial = {tag: rng.standard_normal(shape).astype(np.float32) for tag, shape in LAYERS.items()}
    writer = SummaryWriter(str(run_dir))
    for step in itertools.count():
        log_step(writer, step, initial, learning_rate, rng)
        if (step + 1) % FLUSH_EVERY == 0:
            writer.flush()
            if run_bytes(run_dir) >= target_bytes:
                break
    writer.close()


def log_step(writer, step: int, initial: dict, learning_rate: float, rng) -> None:
    """One step: every layer's histogram and the scalars.

    The weights start normal around zero, so torch's default bins give each
    histogram hundreds of buckets, and widen and drift as training goes on.
    """
    import numpy as np
    import torch

    spread = 0.05 * (1 + step * learning_rate)
    for tag, weights in initial.items():
        noise = rng.standard_normal(weights.shape).astype(np.float32)
        values = spread * weights + 0.01 * noise + 1e-4 * step
        writer.add_histogram(tag, torch.from_numpy(values), step)
    writer.add_scalar("loss", 2.3 / (1 + step / 100) + 0.01 * rng.random(), step)
    writer.add_scalar("learning_rate", learning_rate, step)


def event_files(directory: Path) -> list[Path]:
    """Every event file under `directory`, in name order."""
    return sorted(p for p in directory.rglob("*") if "tfevents" in p.name and p.is_file())


def run_bytes(run_dir: Path) -> int:
    return sum(path.stat().st_size for path in event_files(run_dir))


# --- The contenders, each called in its own subprocess ----------------------


@dataclass(frozen=True)
class Contender:
    """One way of reading the log directory."""

    key: str
    label: str
    # given the log directory and the runs to read, the call to time
    setup: Callable[[Path, list[str]], Callable[[Path, list[str]], object]]
    competitor: bool = False  # --quick times it on one run only
    slow: bool = False  # called once rather than --repeat times


def setup_floor(logdir: Path, runs: list[str]):
    def read_floor(logdir, runs):
        for run in runs:
            for path in event_files(logdir / run):
                with open(path, "rb") as file:
                    file.read()

    return read_floor


def setup_layout_floor(logdir: Path, runs: list[str]):
    """The reads of the read floor, plus fresh float64 arrays the size of every
    series' buckets filled with ones, the work split over every core as
    histoscope splits it. The sizes come from one untimed `load_histograms`
    (so this contender's peak memory is not its own)."""
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np

    import histoscope

    loaded = histoscope.load_histograms(logdir, runs=runs)
    sizes = [s.flat_buckets.size for by_run in loaded.values() for s in by_run.values()]
    del loaded
    files = [path for run in runs for path in event_files(logdir / run)]
    workers = os.cpu_count() or 1
    pool = ThreadPoolExecutor(workers)

    def share(worker: int) -> list:
        for path in files[worker::workers]:
            with open(path, "rb") as file:
                file.read()
        # Mapped afresh, as a large allocation is (malloc could hand back pages a
        # freed array left faulted in, which histoscope's buffers never get), and
        # on huge pages where the kernel has them, as histoscope asks for.
        arrays = [
            np.frombuffer(fresh_pages(8 * size), np.float64) for size in sizes[worker::workers]
        ]
        for array in arrays:
            array.fill(1.0)  # NumPy lets go of the GIL here
        return arrays

    return lambda logdir, runs: list(pool.map(share, range(workers)))


def fresh_pages(size: int) -> mmap.mmap:
    """`size` bytes of anonymous memory mapped now, advised onto huge pages."""
    # Private, as malloc's are: a shared mapping is never given huge pages.
    pages = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    if hasattr(mmap, "MADV_HUGEPAGE"):
        pages.madvise(mmap.MADV_HUGEPAGE)
    return pages


def touch_buckets(histograms: dict) -> dict:
    """`histograms`, after asking every series for its buckets as a caller would.

    histoscope makes a series' list of bucket arrays on first access, so
    getting at the data includes that.
    """
    sum(len(series.buckets) for by_run in histograms.values() for series in by_run.values())
    return histograms


def setup_hs_load(logdir: Path, runs: list[str]):
    import histoscope

    return lambda logdir, runs: touch_buckets(histoscope.load_histograms(logdir))


def setup_hs_read(logdir: Path, runs: list[str]):
    import histoscope

    return lambda logdir, runs: histoscope.read_tensorboard_histograms(logdir, max_steps=None)


def setup_event_accumulator(logdir: Path, runs: list[str]):
    from tensorboard.backend.event_processing import event_accumulator as ea

    keep_all = {ea.HISTOGRAMS: 0, ea.TENSORS: 0}

    def read_event_accumulator(logdir, runs):
        histograms = {}
        for run in runs:
            accumulator = ea.EventAccumulator(str(logdir / run), size_guidance=keep_all)
            accumulator.Reload()
            for tag in accumulator.Tags()[ea.HISTOGRAMS]:
                histograms.setdefault(tag, {})[run] = accumulator.Histograms(tag)
        return histograms

    return read_event_accumulator


def setup_maidr_load(logdir: Path, runs: list[str]):
    from maidr.tensorboard import load_histograms

    return lambda logdir, runs: touch_buckets(load_histograms(logdir, runs=runs))


def setup_maidr_read(logdir: Path, runs: list[str]):
    import maidr

    return lambda logdir, runs: maidr.read_tensorboard_histograms(logdir, runs=runs, max_steps=None)


CONTENDERS = {
    contender.key: contender
    for contender in (
        Contender("floor", "read floor (page cache)", setup_floor),
        Contender("layout-floor", "layout floor (read + fresh buckets)", setup_layout_floor),
        Contender("hs-load", "histoscope.load_histograms", setup_hs_load),
        Contender("hs-read", "histoscope.read_tensorboard_histograms", setup_hs_read),
        Contender(
            "ea",
            "tensorboard EventAccumulator",
            setup_event_accumulator,
            competitor=True,
            slow=True,
        ),
        Contender("maidr-load", "maidr load_histograms", setup_maidr_load, competitor=True),
        Contender(
            "maidr-read",
            "maidr.read_tensorboard_histograms",
            setup_maidr_read,
            competitor=True,
            slow=True,
        ),
    )
}


def bucket_bytes(result: object) -> int | None:
    """Bytes of the bucket arrays in a `load_histograms` result, else None."""
    if not isinstance(result, dict):
        return None
    series = [s for by_run in result.values() for s in by_run.values()]
    if not all(hasattr(s, "buckets") for s in series):
        return None
    return sum(buckets.nbytes for s in series for buckets in s.buckets)


def count_histograms(result: object) -> int | None:
    """How many histograms (tag, run, step) a result holds, where it says."""
    if isinstance(result, dict):
        series = [s for by_run in result.values() for s in by_run.values()]
        return sum(len(s.steps) if hasattr(s, "steps") else len(s) for s in series)
    if isinstance(result, list) and all(hasattr(chart, "steps") for chart in result):
        return sum(len(chart.steps) for chart in result)
    return None


def peak_rss_bytes() -> int:
    """This process's peak resident set (Linux's VmHWM), Rust's allocations included.

    Not ``ru_maxrss``: getrusage(2) carries it over from the parent across
    exec, so a subprocess of a big parent would start at the parent's peak.
    """
    status = Path("/proc/self/status").read_text()
    line = next(line for line in status.splitlines() if line.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024


def worker(key: str, logdir: Path, runs: list[str], repeat: int) -> dict:
    """Time one contender here; the peak memory is above what its imports took."""
    read = CONTENDERS[key].setup(logdir, runs)
    baseline = peak_rss_bytes()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        result = read(logdir, runs)
        best = min(best, time.perf_counter() - start)
        returned = {"bucket_bytes": bucket_bytes(result), "histograms": count_histograms(result)}
        del result
        gc.collect()
    return {"seconds": best, "peak_bytes": peak_rss_bytes() - baseline, **returned}


# --- Running them and reporting ----------------------------------------------


@dataclass
class Measurement:
    contender: Contender
    runs: list[str]
    bytes_read: int
    seconds: float | None = None
    peak_bytes: int | None = None
    bucket_bytes: int | None = None
    histograms: int | None = None
    error: str | None = None

    @property
    def mb_per_s(self) -> float | None:
        return None if self.seconds is None else self.bytes_read / MB / self.seconds


def measure(contender: Contender, logdir: Path, runs: list[str], repeat: int) -> Measurement:
    """Run `contender` in a fresh subprocess and collect what it reports."""
    measurement = Measurement(contender, runs, sum(run_bytes(logdir / run) for run in runs))
    command = [sys.executable, __file__, "--worker", contender.key, "--logdir", str(logdir)]
    command += ["--runs", json.dumps(runs), "--repeat", str(repeat)]
    done = subprocess.run(command, check=False, capture_output=True, text=True)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or [f"exit status {done.returncode}"]
        measurement.error = lines[-1]
        return measurement
    reported = json.loads(done.stdout.strip().splitlines()[-1])
    measurement.seconds = reported["seconds"]
    measurement.peak_bytes = reported["peak_bytes"]
    measurement.bucket_bytes = reported["bucket_bytes"]
    measurement.histograms = reported["histograms"]
    return measurement


def warm_page_cache(logdir: Path) -> None:
    for path in event_files(logdir):
        path.read_bytes()


def print_logdir(logdir: Path, written_in: float | None) -> None:
    files = event_files(logdir)
    total = sum(path.stat().st_size for path in files)
    how = "reused" if written_in is None else f"written in {written_in:.0f} s"
    print(f"log directory: {logdir} ({how})")
    print(
        f"  {len(RUNS)} runs, {len(files)} event files, {total / MB:.1f} MB; per run "
        f"{len(LAYERS)} histogram tags (torch default bins) and 2 scalars"
    )


def print_table(measurements: list[Measurement]) -> None:
    print(
        f"\n{'contender':<40} {'runs':>5} {'MB':>7} {'time s':>9} {'MB/s':>9} "
        f"{'peak MB':>8} {'histograms':>10}"
    )
    for m in measurements:
        runs = f"{len(m.runs)}/{len(RUNS)}"
        head = f"{m.contender.label:<40} {runs:>5} {m.bytes_read / MB:>7.1f}"
        if m.error:
            print(f"{head}  unavailable: {m.error}")
            continue
        histograms = "-" if m.histograms is None else m.histograms
        print(
            f"{head} {m.seconds:>9.3f} {m.mb_per_s:>9.1f} {m.peak_bytes / MB:>8.1f} "
            f"{histograms:>10}"
        )


def speedup(results: dict[str, Measurement], key: str, versus: str) -> float | None:
    """How many times `key`'s MB/s is `versus`'s, or None if one is missing."""
    ours, theirs = results.get(key), results.get(versus)
    if not ours or not theirs or ours.mb_per_s is None or theirs.mb_per_s is None:
        return None
    return ours.mb_per_s / theirs.mb_per_s


COMPARISONS = {
    "layout-floor": ("floor",),
    "hs-load": ("floor", "layout-floor", "ea", "maidr-load"),
    "hs-read": ("floor", "maidr-read"),
}

# (what, histoscope's contender, the other one, the least speedup that passes)
TARGETS = (
    ("load_histograms within 2x of the read floor", "hs-load", "floor", 0.5),
    ("load_histograms within 1.2x of the read floor", "hs-load", "floor", 1 / 1.2),
    ("load_histograms >= 10x maidr's loader", "hs-load", "maidr-load", 10),
    ("load_histograms >= 100x EventAccumulator", "hs-load", "ea", 100),
    ("read_tensorboard_histograms(max_steps=None) >= 100x maidr's", "hs-read", "maidr-read", 100),
)


def print_ratios(results: dict[str, Measurement]) -> None:
    print("\nspeedups (histoscope's MB/s over the other's; 0.5x means half as fast)")
    for ours, others in COMPARISONS.items():
        for versus in others:
            ratio = speedup(results, ours, versus)
            if ratio is not None:
                label = f"{CONTENDERS[ours].label} vs {CONTENDERS[versus].label}"
                print(f"  {label:<76} {ratio:>9.2f}x")


def print_targets(results: dict[str, Measurement]) -> None:
    print("\ntargets")
    for name, ours, versus, goal in TARGETS:
        ratio = speedup(results, ours, versus)
        shown = "missing" if ratio is None else f"{ratio:.2f}x, need >= {goal:.3g}x"
        print(f"  {verdict(ratio, goal)}  {name} ({shown})")
    print_memory_target(results.get("hs-load"))


def print_memory_target(load: Measurement | None) -> None:
    name = "load_histograms peak memory < buckets returned + 50 MB"
    if not load or load.peak_bytes is None or load.bucket_bytes is None:
        print(f"  SKIP  {name} (missing)")
        return
    limit = load.bucket_bytes + 50 * MB
    state = "PASS" if load.peak_bytes < limit else "FAIL"
    print(
        f"  {state}  {name} ({load.peak_bytes / MB:.1f} MB peak, buckets "
        f"{load.bucket_bytes / MB:.1f} MB, limit {limit / MB:.1f} MB)"
    )


def verdict(ratio: float | None, goal: float) -> str:
    if ratio is None:
        return "SKIP"
    return "PASS" if ratio >= goal else "FAIL"


def benchmark(args: argparse.Namespace, cache_dir: Path) -> None:
    logdir, written_in = prepare_logdir(cache_dir, args.size_mb)
    print_logdir(logdir, written_in)
    warm_page_cache(logdir)
    all_runs = list(RUNS)
    competitor_runs = all_runs[:1] if args.quick else all_runs
    results = {}
    for key in args.contenders:
        contender = CONTENDERS[key]
        runs = competitor_runs if contender.competitor else all_runs
        repeat = 1 if contender.slow else args.repeat
        print(f"  timing {contender.label} ...", flush=True)
        results[key] = measure(contender, logdir, runs, repeat)
    print_table(list(results.values()))
    if args.quick:
        print(
            f"--quick: the competitors read only run {all_runs[0]!r}; their MB/s counts the bytes "
            "of that run, and every ratio below compares MB/s"
        )
    print_ratios(results)
    print_targets(results)


def logdir_parser(description: str) -> argparse.ArgumentParser:
    """The arguments of every benchmark on the generated log directory: where to keep it,
    and its size."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=os.environ.get("HISTOSCOPE_BENCH_CACHE"),
        help="keep the generated log directory here and reuse it (shared by the benchmarks)",
    )
    parser.add_argument(
        "--size-mb",
        type=float,
        default=105,
        help="size of the log directory in MB (default 105, over 100 MiB)",
    )
    return parser


def parse_args() -> argparse.Namespace:
    parser = logdir_parser(__doc__.split("\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="time the slow competitors on one run only"
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=5,
        help="calls per fast contender; the best is kept (default 5)",
    )
    parser.add_argument(
        "--contenders",
        type=lambda s: s.split(","),
        default=list(CONTENDERS),
        help=f"comma-separated, from {','.join(CONTENDERS)} (default all)",
    )
    parser.add_argument("--worker", choices=list(CONTENDERS), help=argparse.SUPPRESS)
    parser.add_argument("--logdir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--runs", type=json.loads, help=argparse.SUPPRESS)
    args = parser.parse_args()
    unknown = set(args.contenders) - set(CONTENDERS)
    if unknown:
        parser.error(f"--contenders: unknown {sorted(unknown)}, choose from {list(CONTENDERS)}")
    return args


def main() -> None:
    args = parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.logdir, args.runs, args.repeat)))
    else:
        in_folder(args.cache_dir, lambda folder: benchmark(args, folder))


def in_folder(cache_dir: Path | None, run: Callable[[Path], None]) -> None:
    """Runs ``run`` in ``cache_dir`` (created, and kept for the next run) or in a
    temporary folder removed at the end."""
    if cache_dir:
        cache_dir.mkdir(parents=True, exist_ok=True)
        run(cache_dir)
    else:
        with tempfile.TemporaryDirectory(prefix="histoscope-bench-") as scratch:
            run(Path(scratch))


if __name__ == "__main__":
    main()
