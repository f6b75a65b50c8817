"""How long ``import histoscope`` takes, against the imports people use today.

What is measured
----------------
Each contender is imported in a fresh interpreter (``python -c``), timed with
``time.perf_counter`` around the import statement alone, so interpreter start-up
is left out; bytecode is compiled by one warm-up run first. The time is the
median of ``--repeat`` runs (the best, and the median CPU time, which other
processes on a busy machine disturb less, are printed too). Contenders:

| contender | what is imported |
| --- | --- |
| numpy | ``import numpy``: the floor, histoscope returns NumPy arrays |
| histoscope | ``import histoscope`` |
| histoscope CLI | ``import histoscope.cli``: what ``histoscope ls`` or ``demo`` loads |
| TensorBoard | ``import tensorboard``, and its ``EventAccumulator`` (how it reads histograms) |
| PyTorch | ``import torch.utils.tensorboard`` (``SummaryWriter``, how most log histograms) |
| tensorboardX | ``import tensorboardX`` |

Contenders that are not installed are listed as such. Ratios are the
contender's median over histoscope's. Each run also lists the heavy packages its
import loaded: histoscope must load neither the viewer's server (starlette,
uvicorn, anyio) nor pandas, pyarrow, fsspec, torch, JAX, TensorFlow or Keras,
which only the features that need them import.

The target, from issue 10 (a benchmark, not a test: it prints PASS or FAIL and
exits 0): ``import histoscope`` within 150 ms, and no server package loaded.

How to run
----------
    python benches/bench_import.py              # histoscope installed
    python benches/bench_import.py --repeat 30
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

TARGET_MS = 150.0
HEAVY = (
    "starlette", "uvicorn", "anyio", "pandas", "pyarrow", "fsspec", "torch", "dask",
    "jax", "tensorflow", "keras",
)  # fmt: skip
SERVER = ("starlette", "uvicorn", "anyio")

CONTENDERS = {
    "numpy": "import numpy",
    "histoscope": "import histoscope",
    "histoscope CLI": "import histoscope.cli",
    "tensorboard": "import tensorboard",
    "TensorBoard EventAccumulator": (
        "from tensorboard.backend.event_processing.event_accumulator import EventAccumulator"
    ),
    "torch.utils.tensorboard": "import torch.utils.tensorboard",
    "tensorboardX": "import tensorboardX",
}

PROBE = """
import json, sys, time
start, cpu = time.perf_counter(), time.process_time()
{statement}
seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
heavy = sorted({{name.split(".")[0] for name in sys.modules}} & set({heavy!r}))
print(json.dumps({{"seconds": seconds, "cpu": cpu, "heavy": heavy}}))
"""


def import_once(statement: str) -> dict | None:
    """Runs the import in a fresh interpreter; None when the package is missing."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(statement=statement, heavy=HEAVY)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        if "ModuleNotFoundError" in done.stderr:
            return None
        raise RuntimeError(f"{statement!r} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(statement: str, repeat: int) -> tuple[float, float, float, list[str]] | None:
    """Median and best wall milliseconds, median CPU milliseconds and the heavy
    packages loaded, or None if the package is missing."""
    if import_once(statement) is None:  # the warm-up run also writes the bytecode
        return None
    runs = [run for run in (import_once(statement) for _ in range(repeat)) if run is not None]
    times = [1000 * run["seconds"] for run in runs]
    cpu = statistics.median(1000 * run["cpu"] for run in runs)
    heavy = sorted({name for run in runs for name in run["heavy"]})
    return statistics.median(times), min(times), cpu, heavy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=15, help="runs per contender (default 15)")
    args = parser.parse_args()
    print(f"Python {sys.version.split()[0]}, median of {args.repeat} fresh interpreters")

    results = {name: measure(statement, args.repeat) for name, statement in CONTENDERS.items()}
    ours = results["histoscope"]
    if ours is None:
        raise SystemExit("histoscope is not installed: pip install . first")
    header = f"{'contender':<30}{'median ms':>10}{'best ms':>9}{'CPU ms':>8}{'x histoscope':>14}"
    print(f"{header}  heavy packages loaded")
    for name, result in results.items():
        if result is None:
            print(f"{name:<30}{'not installed':>41}")
            continue
        median, best, cpu, heavy = result
        ratio = median / ours[0]
        row = f"{name:<30}{median:>10.1f}{best:>9.1f}{cpu:>8.1f}{ratio:>13.2f}x"
        print(f"{row}  {', '.join(heavy) or '-'}")

    median, _, _, heavy = ours
    verdict = "PASS" if median <= TARGET_MS else "FAIL"
    print(f"{verdict}: import histoscope {median:.1f} ms (target <= {TARGET_MS:.0f} ms)")
    cli = results["histoscope CLI"]
    server = sorted(set(SERVER) & set(heavy + (cli[3] if cli else [])))
    verdict = "FAIL" if server else "PASS"
    loaded = ", ".join(server) or "none"
    print(f"{verdict}: the viewer's server packages loaded by import: {loaded}")


if __name__ == "__main__":
    main()
