"""Reading at scale: many runs, Parquet export and Dask, against tbparse and TensorBoard.

What is measured
----------------
Two log directories are generated (legacy ``histo`` HistogramProtos, written
with TensorBoard's own protos and record writer, as PyTorch writes them):

- ``sweep``: 1,000 small runs (``run0000`` ... ``run0999``), each one events
  file with 3 histogram tags of 30 buckets at 20 steps and a scalar;
- ``big``: about 100 MB, 32 runs of 200 steps of a 1,000-bucket histogram.

Then, in the same run of this script:

1. the 1,000 runs read by ``histoscope.load_histograms``, by tbparse's
   ``SummaryReader(...).histograms`` and by TensorBoard's ``EventMultiplexer``
   (histograms kept in full, ``AddRunsFromDirectory`` + ``Reload`` + every
   histogram tag's tensors);
2. ``big`` exported to Parquet by ``histoscope export`` (``export_parquet``)
   and by tbparse's DataFrame plus ``DataFrame.to_parquet``;
3. ``histoscope.dask.load_histograms`` on the 1,000 runs (one partition per
   file) computed on a ``LocalCluster`` of two worker processes and of one
   (one thread each), the whole frame brought back; the in-process
   ``to_pandas(load_histograms(...))`` is printed for reference.

histoscope's times are the best of ``--repeat`` calls; the competitors' one
call. Targets (a benchmark, not a test: it prints PASS or FAIL and exits 0):
histoscope at least 50x tbparse on reading the runs and on the export; Dask on
two workers at least 1.5x one.

How to run
----------
    pip install -r benches/requirements.txt   # and histoscope with [arrow,dask]
    python benches/bench_batch.py
    python benches/bench_batch.py --cache-dir /tmp/hs-batch   # keep the generated data
    python benches/bench_batch.py --skip tbparse,multiplexer  # histoscope and Dask only
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
import warnings
from pathlib import Path
from typing import Callable

import numpy as np

import histoscope
import histoscope.dask
from histoscope.read.export import export_parquet
from histoscope.read.tidy import to_pandas


def _write_run(path: Path, rng: np.random.Generator, tags: int, steps: int, buckets: int) -> None:
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.record_writer import RecordWriter

    path.mkdir(parents=True, exist_ok=True)
    with open(path / "events.out.tfevents.1700000000.bench.1.0", "wb") as f:
        writer = RecordWriter(f)
        writer.write(
            event_pb2.Event(wall_time=1.7e9, file_version="brain.Event:2").SerializeToString()
        )
        for step in range(steps):
            values = []
            for t in range(tags):
                counts, edges = np.histogram(rng.normal(0.01 * step, 1 + t, 4 * buckets), buckets)
                histo = summary_pb2.HistogramProto(
                    min=float(edges[0]),
                    max=float(edges[-1]),
                    num=float(counts.sum()),
                    sum=0.0,
                    sum_squares=0.0,
                    bucket_limit=edges[1:].tolist(),
                    bucket=counts.astype(float).tolist(),
                )
                values.append(summary_pb2.Summary.Value(tag=f"layer{t}/weight", histo=histo))
            values.append(summary_pb2.Summary.Value(tag="loss", simple_value=1.0 / (step + 1)))
            event = event_pb2.Event(
                wall_time=1.7e9 + step, step=step, summary=summary_pb2.Summary(value=values)
            )
            writer.write(event.SerializeToString())


def _generate(root: Path) -> tuple[Path, Path]:
    sweep, big = root / "sweep", root / "big"
    rng = np.random.default_rng(0)
    if not (sweep / "run0999").is_dir():
        shutil.rmtree(sweep, ignore_errors=True)
        for i in range(1000):
            _write_run(sweep / f"run{i:04d}", rng, tags=3, steps=20, buckets=30)
    if not (big / "run31").is_dir():
        shutil.rmtree(big, ignore_errors=True)
        for i in range(32):
            _write_run(big / f"run{i:02d}", rng, tags=1, steps=200, buckets=1000)
    return sweep, big


def _size(logdir: Path) -> int:
    return sum(f.stat().st_size for f in logdir.rglob("*tfevents*"))


def _best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def _once(fn: Callable[[], object]) -> float:
    return _best(fn, 1)


def _tbparse_histograms(logdir: Path) -> object:
    from tbparse import SummaryReader

    return SummaryReader(str(logdir), extra_columns={"dir_name"}).histograms


def _multiplexer(logdir: Path) -> int:
    from tensorboard.backend.event_processing import plugin_event_multiplexer

    mux = plugin_event_multiplexer.EventMultiplexer(size_guidance={"histograms": 0, "tensors": 0})
    mux.AddRunsFromDirectory(str(logdir))
    mux.Reload()
    values = 0
    for run, tags in mux.PluginRunToTagToContent("histograms").items():
        for tag in tags:
            values += len(mux.Tensors(run, tag))
    return values


def _dask_time(logdir: Path, workers: int, repeat: int) -> float:
    from dask.distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster),
    ):
        frame = histoscope.dask.load_histograms(logdir)
        frame.compute()  # warm the workers' imports
        return _best(frame.compute, repeat)


def _verdict(name: str, ratio: float, target: float) -> None:
    print(f"  target {name}: {ratio:.1f}x (>= {target:g}x) {'PASS' if ratio >= target else 'FAIL'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache-dir", default=os.environ.get("HISTOSCOPE_BENCH_CACHE"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip", default="", help="comma-separated: tbparse, multiplexer, dask")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    root = Path(args.cache_dir) if args.cache_dir else Path(tempfile.mkdtemp(prefix="hs-batch-"))
    warnings.simplefilter("ignore")
    try:
        start = time.perf_counter()
        sweep, big = _generate(root)
        print(f"generated in {time.perf_counter() - start:.1f} s under {root}")
        sweep_mb, big_mb = _size(sweep) / 1e6, _size(big) / 1e6

        print(f"\n1,000 runs ({sweep_mb:.1f} MB)")
        hs = _best(lambda: histoscope.load_histograms(sweep), args.repeat)
        print(f"  histoscope.load_histograms  {hs:8.3f} s  {sweep_mb / hs:8.1f} MB/s")
        if "multiplexer" not in skip:
            mux = _once(lambda: _multiplexer(sweep))
            print(f"  TensorBoard EventMultiplexer {mux:7.3f} s  ({mux / hs:.0f}x histoscope)")
        if "tbparse" not in skip:
            tbp = _once(lambda: _tbparse_histograms(sweep))
            print(f"  tbparse SummaryReader       {tbp:8.3f} s  ({tbp / hs:.0f}x histoscope)")
            _verdict("load_histograms vs tbparse", tbp / hs, 50)

        print(f"\nexport of {big_mb:.1f} MB to Parquet")
        out = root / "out.parquet"
        ex = _best(lambda: export_parquet(big, out), args.repeat)
        print(f"  histoscope export           {ex:8.3f} s  {big_mb / ex:8.1f} MB/s")
        if "tbparse" not in skip:
            tbp = _once(lambda: _tbparse_histograms(big).to_parquet(root / "tbparse.parquet"))
            print(f"  tbparse + to_parquet        {tbp:8.3f} s  ({tbp / ex:.0f}x histoscope)")
            _verdict("export vs tbparse + to_parquet", tbp / ex, 50)

        if "dask" not in skip:
            print("\nDask on the 1,000 runs (one partition per events file)")
            local = _best(lambda: to_pandas(histoscope.load_histograms(sweep)), args.repeat)
            print(f"  in process (to_pandas)      {local:8.3f} s  (reference)")
            one = _dask_time(sweep, 1, args.repeat)
            print(f"  LocalCluster, 1 worker      {one:8.3f} s")
            two = _dask_time(sweep, 2, args.repeat)
            print(f"  LocalCluster, 2 workers     {two:8.3f} s")
            _verdict("Dask 2 workers vs 1", one / two, 1.5)
    finally:
        if not args.cache_dir:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
