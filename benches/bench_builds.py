"""Two builds of histoscope, before and after a change, timed interleaved on the same data.

A refactor's promise is "no regression": this script holds two Python interpreters, each
with its own histoscope installed (two virtual environments), and times the same calls in
each, alternating A, B, A, B... in fresh processes, so that the machine's drift lands on
both alike. Each call's time is the best of ``--repeat`` in its process; the table gives
each build's median over ``--rounds`` and after/before, and how many of a build's
processes crashed as they exited (after printing their time).

The calls (the log directory is `bench_read.py`'s, about 100 MB, in the page cache):

- ``load``: ``load_histograms(logdir)``, every series' buckets touched;
- ``check``: ``diagnose(logdir)``, as ``histoscope check`` reads it;
- ``report``: ``build_report(logdir)``, two runs of it (the report's own read);
- ``card``: the viewer's first card: ``LogdirIndex`` over the directory, its first run
  indexed, a card of the first tag of every run;
- ``s3 load`` and ``s3 check``: the same two calls on the same files in an S3 bucket
  served by moto on 127.0.0.1 (a process of its own);
- ``bin``: ``Histogram(values, bins=64)`` of 1 M float32 values, the binning ``watch`` uses;
- ``watch``: what watching costs a step of a 20-layer MLP (``log="all"``, every step):
  20 watched steps and their writing, less 20 plain ones, per step.

    python benches/bench_builds.py --before /tmp/old/bin/python --after .venv/bin/python
    python benches/bench_builds.py --before A --after B --calls load,check --rounds 9
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_read import in_folder, prepare_logdir  # noqa: E402
from bench_remote_check import CREDENTIALS, start_bucket  # noqa: E402

#: Each call as the code a fresh process runs: it prints the best of REPEAT seconds.
CALLS = {
    "load": """
import histoscope as hs
def call():
    loaded = hs.load_histograms(LOGDIR)
    return sum(len(s.buckets) for runs in loaded.values() for s in runs.values())
""",
    "check": """
import histoscope as hs
def call():
    return hs.diagnose(LOGDIR)
""",
    "report": """
from histoscope.view.report import build_report
def call():
    return len(build_report(LOGDIR))
""",
    "card": """
from histoscope.view.follow import LogdirIndex
def call():
    index = LogdirIndex(LOGDIR)
    runs = [index.run(name) for name in index.runs()]
    tag = sorted(runs[0].series)[0]
    return index.card(runs, tag)
""",
    "s3 load": """
import histoscope as hs
def call():
    loaded = hs.load_histograms(URL, storage_options=OPTIONS)
    return sum(len(s.buckets) for runs in loaded.values() for s in runs.values())
""",
    "s3 check": """
import histoscope as hs
def call():
    return hs.diagnose(URL, storage_options=OPTIONS)
""",
    "bin": """
import numpy as np, histoscope as hs
values = np.random.default_rng(0).standard_normal(1_000_000).astype(np.float32)
def call():
    return hs.Histogram(values, bins=64)
""",
    "watch": """
import tempfile, time, torch, histoscope as hs
torch.manual_seed(0)
model = torch.nn.Sequential(*[torch.nn.Linear(128, 128) for _ in range(20)])
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(64, 128)
def steps(n=20):
    start = time.perf_counter()
    for _ in range(n):
        model(x).square().mean().backward()
        opt.step(); opt.zero_grad()
    return time.perf_counter() - start
try:
    run = hs.init("bench", logdir=tempfile.mkdtemp(), alerts="off")
except TypeError:  # a build from before init(logdir=)
    run = hs.init("bench", dir=tempfile.mkdtemp(), alerts="off")
run.watch(model, log="all", every=1)
def measure():
    watched = steps()
    run.flush()
    run.unwatch(model)
    plain = steps()
    run.watch(model, log="all", every=1)
    return (watched - plain) / 20
""",
}

RUNNER = """
import json, sys, time, warnings
warnings.simplefilter("ignore")
LOGDIR, URL, OPTIONS, REPEAT = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])
exec(sys.stdin.read())
if "measure" not in globals():
    def measure():
        start = time.perf_counter()
        call()
        return time.perf_counter() - start
print(json.dumps(min(measure() for _ in range(REPEAT))))
"""


def timed(python: str, code: str, logdir: Path, url: str, options: dict, repeat: int) -> Timed:
    """The best of ``repeat`` calls of ``code`` in a fresh process of ``python``, and
    whether that process crashed as it exited (after printing its time)."""
    done = subprocess.run(
        [python, "-c", RUNNER, str(logdir), url, json.dumps(options), str(repeat)],
        input=code,
        capture_output=True,
        text=True,
        check=False,
    )
    lines = done.stdout.strip().splitlines()
    if not lines:
        raise SystemExit(f"{python}: the call failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return Timed(float(json.loads(lines[-1])), done.returncode != 0)


class Timed(NamedTuple):
    seconds: float
    crashed_at_exit: bool


def benchmark(args: argparse.Namespace, folder: Path) -> None:
    logdir, _ = prepare_logdir(folder, args.size_mb)
    calls = [c.strip() for c in args.calls.split(",")]
    unknown = [c for c in calls if c not in CALLS]
    if unknown:
        raise SystemExit(f"unknown calls {unknown}; choose among {', '.join(CALLS)}")
    server, endpoint = (None, "")
    if any(c.startswith("s3") for c in calls):
        server, endpoint = start_bucket(logdir)
    options = {**CREDENTIALS, "endpoint_url": endpoint}
    url = "s3://bench/logs"
    try:
        size = sum(p.stat().st_size for p in logdir.rglob("*"))
        print(f"log directory {logdir}, {size / 1e6:.0f} MB")
        print(
            f"{'call':<10} {'before (s)':>12} {'after (s)':>12} {'after/before':>13}"
            "   crashed at exit (before, after)"
        )
        for call in calls:
            times: dict[str, list[Timed]] = {"before": [], "after": []}
            for _ in range(args.rounds):
                for build in ("before", "after"):
                    python = getattr(args, build)
                    times[build].append(
                        timed(python, CALLS[call], logdir, url, options, args.repeat)
                    )
            before, after = (
                statistics.median(t.seconds for t in times[b]) for b in ("before", "after")
            )
            crashes = [sum(t.crashed_at_exit for t in times[b]) for b in ("before", "after")]
            print(
                f"{call:<10} {before:>12.4f} {after:>12.4f} {after / before:>13.2f}"
                f"   {crashes[0]}/{args.rounds}, {crashes[1]}/{args.rounds}",
                flush=True,
            )
    finally:
        if server is not None:
            server.terminate()
            server.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", required=True, help="the interpreter of the build before")
    parser.add_argument("--after", required=True, help="the interpreter of the build after")
    parser.add_argument("--calls", default=",".join(CALLS))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--size-mb", type=float, default=100.0)
    parser.add_argument("--cache-dir", type=Path, help="keep the log directory here")
    args = parser.parse_args()
    for build in (args.before, args.after):
        if shutil.which(build) is None and not Path(build).exists():
            raise SystemExit(f"no interpreter at {build}")
    in_folder(args.cache_dir, lambda folder: benchmark(args, folder))


if __name__ == "__main__":
    main()
