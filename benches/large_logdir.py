"""The log directories of ``bench_large.py``: one run written by PyTorch, copied.

One run of 25 tags x 150 steps is written with ``SummaryWriter.add_histogram``
and its default bins (PyTorch's 'tensorflow' buckets: about 550 per
histogram, most of them the narrow ones around zero), about 30 MB. A log
directory of N GB is ``32 * N`` copies of it, as real files (not links, so the
page cache and the disk see N GB), in parts of 32 runs: ``part_00/run_00``,
``part_00/run_01``, ... Each part is itself a log directory of about 1 GB,
which is how ``load_histograms`` is timed on the larger ones.

    python benches/large_logdir.py /tmp/hs-large --sizes 1,10   # build (or reuse) only
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

TAGS = [
    f"layer{layer}/{kind}"
    for layer in range(5)
    for kind in ("weight", "bias", "grad", "bias_grad", "out")
]
STEPS = 150
VALUES = 4096
RUNS_PER_PART = 32
FORMAT = 1  # bump when the seed run changes


def seed_run(data_dir: Path) -> Path:
    """The events file of the one run every log directory is copied from."""
    run_dir, stamp = data_dir / "seed", data_dir / "seed.json"
    wanted = {"format": FORMAT, "tags": len(TAGS), "steps": STEPS, "values": VALUES}
    files = sorted(run_dir.glob("*tfevents*"))
    if stamp.exists() and json.loads(stamp.read_text()) == wanted and len(files) == 1:
        return files[0]
    shutil.rmtree(run_dir, ignore_errors=True)
    write_seed_run(run_dir)
    stamp.write_text(json.dumps(wanted))
    (file,) = sorted(run_dir.glob("*tfevents*"))
    return file


def write_seed_run(run_dir: Path) -> None:
    """25 tags x 150 steps of training-like values, centred near zero and widening."""
    import numpy as np
    import torch
    from torch.utils.tensorboard import SummaryWriter

    rng = np.random.default_rng(23)
    writer = SummaryWriter(str(run_dir))
    for step in range(STEPS):
        for i, tag in enumerate(TAGS):
            scale = 0.02 * (1 + i % 5) * (1 + step / STEPS)
            values = rng.standard_normal(VALUES).astype(np.float32) * scale + 1e-4 * step
            writer.add_histogram(tag, torch.from_numpy(values), step)
        writer.add_scalar("loss", 2.3 / (1 + step / 30), step)
    writer.close()


def build(data_dir: Path, size_gb: int) -> Path:
    """The log directory of about ``size_gb`` GB under ``data_dir``, copied unless there."""
    seed = seed_run(data_dir)
    logdir = logdir_of(data_dir, size_gb)
    stamp = logdir.with_name(logdir.name + ".json")
    wanted = {"format": FORMAT, "seed_bytes": seed.stat().st_size, "parts": size_gb}
    if stamp.exists() and json.loads(stamp.read_text()) == wanted:
        return logdir
    shutil.rmtree(logdir, ignore_errors=True)
    for part in range(size_gb):
        for run in range(RUNS_PER_PART):
            run_dir = logdir / f"part_{part:02d}" / f"run_{run:02d}"
            run_dir.mkdir(parents=True)
            shutil.copyfile(seed, run_dir / seed.name)
    stamp.write_text(json.dumps(wanted))
    return logdir


def logdir_of(data_dir: Path, size_gb: int) -> Path:
    return data_dir / f"logdir_{size_gb}gb"


def size_of(logdir: Path) -> int:
    return sum(p.stat().st_size for p in logdir.rglob("*tfevents*"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--sizes", default="1", help="GB, comma-separated (default 1)")
    args = parser.parse_args()
    for size in (int(s) for s in args.sizes.split(",")):
        start = time.perf_counter()
        logdir = build(args.data_dir, size)
        took = time.perf_counter() - start
        print(f"{logdir}: {size_of(logdir) / 1e9:.2f} GB ({took:.0f} s)")


if __name__ == "__main__":
    main()
