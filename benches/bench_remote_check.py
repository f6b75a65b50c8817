"""`histoscope check` on a log directory in an S3 bucket: time and peak memory, batched
against reading the whole directory first.

The log directory is ``--runs`` copies of ``large_logdir.py``'s seed run (about 30 MB
each, PyTorch's default buckets), uploaded to a moto S3 server in a process of its own on
127.0.0.1, so the bucket's memory is not counted. Each contender runs in a fresh process;
its peak is the high-water mark of its resident memory (VmHWM, Rust's allocations
included), polled while it runs: ``ru_maxrss`` would start from this script's own, which
has PyTorch loaded to write the seed run.

- check, bucket: `histoscope check s3://... --storage-option ...`, the runs fetched
  a batch of 160 MB at a time;
- load, then diagnose: `diagnose(load_histograms(url))`, the whole directory fetched
  first, as `check` did before;
- check, local: `histoscope check LOGDIR` on the same files on disk.

    python benches/bench_remote_check.py                  # 24 runs, about 0.7 GB
    python benches/bench_remote_check.py --runs 64 --data-dir /tmp/hs-large
"""

from __future__ import annotations

import argparse
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_large import GB, POLL_S, Measured, histoscope, status  # noqa: E402
from large_logdir import seed_run  # noqa: E402

BUCKET = "bench"
CREDENTIALS = {"key": "testing", "secret": "testing"}

WHOLE_SCRIPT = """
import sys, time, warnings, histoscope
warnings.simplefilter("ignore")
url, endpoint = sys.argv[1:]
options = {"endpoint_url": endpoint, "key": "testing", "secret": "testing",
           "client_kwargs": {"region_name": "us-east-1"}}
start = time.perf_counter()
findings = histoscope.diagnose(histoscope.load_histograms(url, storage_options=options))
print(time.perf_counter() - start, len(findings))
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_bucket(logdir: Path) -> tuple[subprocess.Popen, str]:
    """A moto S3 server holding ``logdir`` under ``s3://bench/logs``, and its address."""
    import boto3

    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id=CREDENTIALS["key"],
        aws_secret_access_key=CREDENTIALS["secret"],
    )
    for _ in range(100):
        try:
            client.create_bucket(Bucket=BUCKET)
            break
        except Exception:  # the server is still starting
            time.sleep(0.1)
    for path in sorted(logdir.rglob("*tfevents*")):
        client.upload_file(str(path), BUCKET, f"logs/{path.relative_to(logdir).as_posix()}")
    return server, endpoint


def build(data_dir: Path, runs: int) -> Path:
    seed = seed_run(data_dir)
    logdir = data_dir / f"remote_{runs}runs"
    if len(list(logdir.rglob("*tfevents*"))) != runs:
        shutil.rmtree(logdir, ignore_errors=True)
        for run in range(runs):
            (logdir / f"run_{run:02d}").mkdir(parents=True)
            shutil.copyfile(seed, logdir / f"run_{run:02d}" / seed.name)
    return logdir


def measured_run(argv: list[str], limit: int) -> Measured:
    """``argv`` run to its end: its time, its VmHWM and the first line it printed."""
    with tempfile.TemporaryFile("w+") as out:
        start = time.perf_counter()
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.DEVNULL, text=True)
        peak = 0
        while process.poll() is None:
            seen = status(process.pid)
            peak = max(peak, seen.get("VmHWM", 0))
            if seen.get("VmRSS", 0) > limit:
                process.kill()
            time.sleep(POLL_S)
        seconds = time.perf_counter() - start
        out.seek(0)
        printed = out.read().strip()
    note = printed.splitlines()[0] if printed else f"exit status {process.returncode}"
    return Measured(seconds, peak, note)


def contenders(logdir: Path, endpoint: str, limit: int) -> dict[str, Measured]:
    url = f"s3://{BUCKET}/logs"
    options = [f"endpoint_url={endpoint}", *(f"{k}={v}" for k, v in CREDENTIALS.items())]
    batched = histoscope("check", url, *(a for o in options for a in ("--storage-option", o)))
    whole = [sys.executable, "-c", WHOLE_SCRIPT, url, endpoint]
    return {
        "check, bucket": measured_run(batched, limit),
        "load, then diagnose": measured_run(whole, limit),
        "check, local": measured_run(histoscope("check", str(logdir)), limit),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=24, help="copies of the seed run (24)")
    parser.add_argument("--data-dir", type=Path, help="keep the log directory here")
    parser.add_argument("--memory-limit-gb", type=float, default=8.0)
    args = parser.parse_args()
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="hs-remote-"))
    logdir = build(data_dir, args.runs)
    size = sum(p.stat().st_size for p in logdir.rglob("*tfevents*"))
    server, endpoint = start_bucket(logdir)
    try:
        found = contenders(logdir, endpoint, int(args.memory_limit_gb * GB))
    finally:
        server.terminate()
        server.wait()
        if args.data_dir is None:
            shutil.rmtree(data_dir, ignore_errors=True)
    print(f"{args.runs} runs, {size / GB:.2f} GB, in a moto bucket on 127.0.0.1")
    print(f"{'contender':<22}{'time':>9}{'peak':>10}  note")
    for name, got in found.items():
        print(f"{name:<22}{got.seconds:>8.2f}s{got.peak / GB:>8.2f}GB  {got.note[:60]}")
    bucket, whole = found["check, bucket"], found["load, then diagnose"]
    print(
        f"check, bucket against load, then diagnose: {whole.peak / bucket.peak:.1f}x less memory,"
        f" {bucket.seconds / whole.seconds:.2f}x the time"
    )


if __name__ == "__main__":
    main()
