"""Peak memory of logging large histograms as fast as possible: the bound on pending snapshots.

Logs one 64 MB float32 array (16 M values) 600 times in a row with
``run.add_histogram``, in a fresh subprocess per setting, and reports the
peak resident memory of that process (VmHWM: NumPy's, Rust's and the
snapshots' allocations all count), the time, and how many histograms were
written or dropped:

| setting | what it is |
| --- | --- |
| wait (default) | ``hs.init(...)``: 256 MiB of pending snapshots at most; ``add_histogram`` waits |
| drop | ``hs.init(..., on_full="drop")``: over the bound, histograms are dropped and counted |
| unbounded | ``max_pending_bytes`` of 1 TiB: how it was before the bound (``--unbounded`` only) |

    python benches/bench_log_memory.py [--count 600] [--megabytes 64] [--unbounded]

Target (issue 11): the default setting peaks under 1 GB (it was 2.4 to 2.6 GB
without a bound). ``--unbounded`` can take several GB: run it only on a
machine with the memory to spare. Logs go to a temporary folder removed at
the end.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap

CHILD = textwrap.dedent(
    """
    import json, sys, time, warnings
    import numpy as np
    import histoscope as hs

    def peak_bytes():
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        return 0

    count, megabytes, dir, setting = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    values = np.random.default_rng(0).standard_normal(megabytes * 2**20 // 4, dtype=np.float32)
    kwargs = {
        "wait": {},
        "drop": {"on_full": "drop"},
        "unbounded": {"max_pending_bytes": 1 << 40},
    }[setting]
    before = peak_bytes()
    warnings.simplefilter("ignore")
    start = time.perf_counter()
    run = hs.init("bench", run_name=setting, logdir=dir, **kwargs)
    for step in range(count):
        run.add_histogram("x", values, step=step)
    logged = time.perf_counter() - start
    dropped = run.backlog.dropped
    run.finish()
    total = time.perf_counter() - start
    written = len(hs.load_histograms(dir + "/bench", runs=[setting])["x"][setting])
    print(json.dumps({
        "peak": peak_bytes(), "before": before, "logged": logged, "total": total,
        "written": written, "dropped": dropped,
    }))
    """
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=600)
    parser.add_argument("--megabytes", type=int, default=64)
    parser.add_argument("--unbounded", action="store_true", help="also without a bound")
    args = parser.parse_args()

    settings = ["wait", "drop"] + (["unbounded"] if args.unbounded else [])
    print(f"{args.count} histograms of a {args.megabytes} MiB float32 array, logged in a row\n")
    print(
        f"{'setting':<10} {'peak RSS':>9} {'array':>6} {'calls':>8} {'finish':>8} "
        f"{'written':>8} {'dropped':>8}"
    )
    results = {}
    with tempfile.TemporaryDirectory(prefix="histoscope-bench-memory-") as tmp:
        for setting in settings:
            done = subprocess.run(
                [sys.executable, "-c", CHILD, str(args.count), str(args.megabytes), tmp, setting],
                capture_output=True,
                text=True,
                check=True,
            )
            r = json.loads(done.stdout.strip().splitlines()[-1])
            results[setting] = r
            print(
                f"{setting:<10} {r['peak'] / 1e9:7.2f} GB {args.megabytes:4d} MiB "
                f"{r['logged']:7.1f} s {r['total'] - r['logged']:7.1f} s "
                f"{r['written']:8d} {r['dropped']:8d}"
            )
    peak = results["wait"]["peak"]
    print(
        f"\ntarget: peak under 1 GB with the default bound: {peak / 1e9:.2f} GB "
        f"{'PASS' if peak < 1e9 else 'FAIL'}"
    )


if __name__ == "__main__":
    main()
