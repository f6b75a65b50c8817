"""Log directories larger than memory (issue 23): time and peak memory of
``check``, ``report``, ``export`` and ``view`` on 1 GB and 10 GB, beside TensorBoard.

What is measured
----------------
The log directories of ``large_logdir.py``: one run of 25 tags x 150 steps
written by PyTorch's ``SummaryWriter`` with its default bins (about 34 MB),
copied to 32 runs per GB. For each size, each command runs as a subprocess of
this interpreter (``python -m histoscope.cli``, so whichever histoscope it
imports is measured), one after another, page cache warm:

- ``check DIR``, ``report DIR -o FILE``, ``export DIR -o FILE``: wall time, and
  peak resident memory (the child's ``ru_maxrss`` from ``wait4``, what
  ``/usr/bin/time -f %M`` prints);
- ``view DIR --port 0``: the time from starting it until the first card's JSON
  answers (asked as the page asks: the page, the keys of the runs it shows
  first, the card of the first key), the server's memory then (VmRSS, VmHWM);
  then, once it has read the shown runs, every card of them with its series
  (as the steps view pages through them) and the first run's overview, and its
  memory after that;
- ``load_histograms``, the reference ``check`` is held against: in a
  subprocess, on each 1 GB part of the log directory in turn (on the 1 GB one,
  the whole of it), time summed, peak memory of the largest part;
- TensorBoard (1 GB only): ``tensorboard --logdir DIR --load_fast=true``, its
  Python process and its Rust data server, memory once every run lists its
  histogram tags, the shown runs' histograms have been asked for and the data
  server's memory has stopped growing.

A command whose resident memory passes ``--memory-limit-gb`` (by default
60 % of the memory available when the script starts) is stopped and shown as
over that limit, so that the machine is not driven into its OOM killer.

Targets (printed beside the figures, met or not met; the script never fails
on a miss): each command's peak at most 0.5 GB at 1 GB and 1 GB at 10 GB;
``check`` at most 2x ``load_histograms``; the first card within 1.5 s.

How to run
----------
    pip install -r benches/requirements.txt    # and histoscope itself, built --release
    python benches/bench_large.py                        # 1 GB and 10 GB, about 12 GB of disk
    python benches/bench_large.py --sizes 1              # 1 GB only
    python benches/bench_large.py --data-dir /tmp/hs-large   # keep the log directories, reuse them
    python benches/bench_large.py --skip tensorboard,load

Without ``--data-dir`` the log directories go to a fresh temporary folder,
removed at the end; with it, they are built once and reused.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from large_logdir import RUNS_PER_PART, logdir_of, size_of  # noqa: E402

GB = 10**9
FIRST_SHOWN = 10  # runs the viewer's page shows at first (MAX_SHOWN in app.js)
CHECK_OVER_LOAD = 2.0
FIRST_CARD_S = 1.5
POLL_S = 0.05


def memory_target(size_gb: int) -> float:
    return 0.5 * GB if size_gb <= 1 else 1.0 * GB


# --- Processes and their memory ---------------------------------------------


def status(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of ``pid`` in bytes; empty once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as lines:
            return {
                key: int(value.split()[0]) * 1024
                for key, value in (line.split(":", 1) for line in lines)
                if key in ("VmRSS", "VmHWM")
            }
    except (OSError, ValueError):
        return {}


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            pass
    return found


@dataclass
class Measured:
    """One command's wall time, peak resident memory and outcome."""

    seconds: float
    peak: int
    note: str = ""
    extra: dict[str, float] = field(default_factory=dict)


def guard(pid: int, limit: int, stopped: list[bool]) -> None:
    """Kills ``pid`` if its resident memory passes ``limit``."""
    while True:
        rss = status(pid).get("VmRSS")
        if rss is None:
            return
        if rss > limit:
            stopped.append(True)
            os.kill(pid, 9)
            return
        time.sleep(POLL_S)


def measured_run(argv: list[str], limit: int) -> Measured:
    """``argv`` run to its end: its time and peak memory, stopped past ``limit``."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        process = subprocess.Popen(argv, stdout=out, stderr=err, text=True)
        stopped: list[bool] = []
        threading.Thread(target=guard, args=(process.pid, limit, stopped), daemon=True).start()
        _, code, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(code)
        out.seek(0)
        err.seek(0)
        printed, complaint = out.read().strip(), err.read().strip()
    peak = usage.ru_maxrss * 1024
    if stopped:
        return Measured(seconds, peak, f"stopped: over the {limit / GB:.1f} GB limit")
    if process.returncode not in (0, 1):
        last = complaint.splitlines()[-1:] or ["no message"]
        return Measured(seconds, peak, f"failed ({process.returncode}): {last[0]}")
    return Measured(seconds, peak, printed.splitlines()[0] if printed else "")


def histoscope(*args: str) -> list[str]:
    return [sys.executable, "-m", "histoscope.cli", *args]


# --- The contenders ----------------------------------------------------------


LOAD_SCRIPT = """
import sys, time, histoscope
took = 0.0
for logdir in sys.argv[1:]:
    start = time.perf_counter()
    loaded = histoscope.load_histograms(logdir)
    took += time.perf_counter() - start
    del loaded
print(took)
"""


def load_reference(logdir: Path, limit: int) -> Measured:
    """``load_histograms`` on each 1 GB part in turn: the summed time, the largest peak."""
    parts = sorted(p for p in logdir.iterdir() if p.is_dir())
    result = measured_run([sys.executable, "-c", LOAD_SCRIPT, *map(str, parts)], limit)
    try:
        result.seconds, result.note = float(result.note), f"{len(parts)} part(s) in turn"
    except ValueError:
        pass
    return result


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def get_json(url: str, path: str, **query: object) -> object:
    address = url + path + ("?" + urllib.parse.urlencode(query, doseq=True) if query else "")
    with urllib.request.urlopen(address, timeout=600) as answer:
        return json.load(answer)


def measure_view(logdir: Path, limit: int) -> Measured:
    """The viewer: time to the first card, memory then and after every shown card."""
    start = time.perf_counter()
    server = subprocess.Popen(
        histoscope("view", str(logdir), "--port", "0"), stdout=subprocess.PIPE, text=True
    )
    stopped: list[bool] = []
    threading.Thread(target=guard, args=(server.pid, limit, stopped), daemon=True).start()
    try:
        line = server.stdout.readline() if server.stdout else ""
        url = line[line.index("http://") :].split()[0] if "http://" in line else ""
        if not url:
            return Measured(time.perf_counter() - start, 0, f"no address printed: {line!r}")
        if not url.endswith("/"):
            url += "/"
        with urllib.request.urlopen(url, timeout=600):
            pass
        runs = get_json(url, "api/runs")["runs"][:FIRST_SHOWN]
        keys = get_json(url, "api/tags", run=runs)
        first_tag = keys["tags"][0]["tag"]
        get_json(url, "api/card", tag=first_tag, run=runs)
        first_card = time.perf_counter() - start
        at_first = status(server.pid)
        read_all = wait_until_read(url, runs)
        # Every run's index, read in the background after the shown runs', before scrolling.
        wait_until_read(url, get_json(url, "api/runs")["runs"])
        for entry in get_json(url, "api/tags", run=runs)["tags"]:
            get_json(url, "api/card", tag=entry["tag"], run=runs)
            page_series(url, entry["tag"], runs)
        get_json(url, "api/overview", run=runs[0], stat="std")
        after = status(server.pid)
        return Measured(
            first_card,
            after.get("VmHWM", 0),
            f"{len(runs)} runs shown, {len(keys['tags'])} keys",
            {
                "rss_first": at_first.get("VmRSS", 0),
                "hwm_first": at_first.get("VmHWM", 0),
                "rss_after": after.get("VmRSS", 0),
                "read_shown_s": read_all,
            },
        )
    except (OSError, KeyError, IndexError, ValueError) as error:
        note = f"over the {limit / GB:.1f} GB limit" if stopped else f"failed: {error}"
        return Measured(time.perf_counter() - start, 0, f"stopped: {note}")
    finally:
        server.terminate()
        server.wait(timeout=30)


def wait_until_read(url: str, runs: list[str], timeout: float = 900) -> float:
    """Seconds until the viewer says it has read every run shown."""
    start = time.perf_counter()
    while get_json(url, "api/tags", run=runs)["reading"]:
        if time.perf_counter() - start > timeout:
            break
        time.sleep(0.5)
    return time.perf_counter() - start


def page_series(url: str, tag: str, runs: list[str]) -> None:
    """Every step of ``tag``'s series in ``runs``, page by page, as cards.js asks for them."""
    held: dict[str, tuple[int, int]] = {}
    while True:
        since = [f"{held[r][0]}:{held[r][1]}" if r in held else "" for r in runs]
        answer = get_json(url, "api/series", tag=tag, run=runs, since=since)
        more = False
        for entry in answer["series"]:
            count = entry["from"] + len(entry["steps"])
            held[entry["run"]] = (entry["generation"], count)
            more = more or entry["more"]
        if not more:
            return


def measure_tensorboard(logdir: Path, runs: int, limit: int) -> Measured | None:
    """TensorBoard --load_fast=true: memory of its Python process and data server once loaded."""
    try:
        import tensorboard  # noqa: F401
    except ImportError:
        return None
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    start = time.perf_counter()
    server = subprocess.Popen(
        [sys.executable, "-m", "tensorboard.main", "--logdir", str(logdir), "--port", str(port),
         "--host", "127.0.0.1", "--load_fast=true"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        tags = wait_for_tensorboard(url, runs)
        loaded = time.perf_counter() - start
        shown = sorted(tags)[:FIRST_SHOWN]
        for run in shown:
            for tag in tags[run]:
                get_json(url, "data/plugin/histograms/histograms", run=run, tag=tag)
        python, data_server = settle(server.pid)
        return Measured(
            loaded,
            python.get("VmHWM", 0) + data_server.get("VmHWM", 0),
            "",
            {
                "python_hwm": python.get("VmHWM", 0),
                "server_hwm": data_server.get("VmHWM", 0),
                "python_rss": python.get("VmRSS", 0),
                "server_rss": data_server.get("VmRSS", 0),
            },
        )
    except (OSError, TimeoutError, ValueError) as error:
        return Measured(time.perf_counter() - start, 0, f"failed: {error}")
    finally:
        server.terminate()
        server.wait(timeout=30)


def wait_for_tensorboard(url: str, runs: int, timeout: float = 900) -> dict[str, list[str]]:
    """Each run's histogram tags, once every run lists all of them."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            tags = get_json(url, "data/plugin/histograms/tags")
            if len(tags) >= runs and all(
                len(t) == len(next(iter(tags.values()))) for t in tags.values()
            ):
                return {run: sorted(t) for run, t in tags.items()}
        except OSError:
            pass
        time.sleep(1)
    raise TimeoutError("TensorBoard did not list every run's histograms")


def settle(pid: int, quiet_s: float = 5, timeout: float = 300) -> tuple[dict, dict]:
    """Memory of TensorBoard and its data server once the data server stops growing."""
    start, last, since = time.monotonic(), -1, time.monotonic()
    while time.monotonic() - start < timeout:
        servers = children(pid)
        rss = sum(status(c).get("VmRSS", 0) for c in servers)
        if rss != last:
            last, since = rss, time.monotonic()
        elif time.monotonic() - since > quiet_s:
            break
        time.sleep(0.5)
    data_server = {}
    for child in children(pid):
        for key, value in status(child).items():
            data_server[key] = data_server.get(key, 0) + value
    return status(pid), data_server


# --- One size, and the table -------------------------------------------------


def measure_size(logdir: Path, size_gb: int, work: Path, args: argparse.Namespace) -> dict:
    """Every contender on ``logdir``, ``--repeat`` rounds taking turns: the best time and
    the highest peak of each."""
    runs = size_gb * RUNS_PER_PART
    report, parquet = work / "report.html", work / "export.parquet"
    contenders = {
        "load": lambda: load_reference(logdir, args.limit),
        "check": lambda: measured_run(histoscope("check", str(logdir)), args.limit),
        "report": lambda: measured_run(
            histoscope("report", str(logdir), "-o", str(report)), args.limit
        ),
        "export": lambda: measured_run(
            histoscope("export", str(logdir), "-o", str(parquet)), args.limit
        ),
        "view": lambda: measure_view(logdir, args.limit),
        "tensorboard": lambda: measure_tensorboard(logdir, runs, args.limit),
    }
    chosen = [k for k in contenders if k not in args.skip and (k != "tensorboard" or size_gb == 1)]
    found: dict[str, Measured | None] = {}
    for round in range(args.repeat):
        for key in chosen:
            got = contenders[key]()
            for path in (report, parquet):
                path.unlink(missing_ok=True)
            if got is not None:
                print(f"  round {round + 1} {key}: {got.seconds:.2f} s, {got.peak / GB:.2f} GB")
            found[key] = best(found.get(key), got)
    return found


def best(old: Measured | None, new: Measured | None) -> Measured | None:
    """The faster of two rounds, with the higher of their peaks."""
    if old is None or new is None:
        return new or old
    faster = min(old, new, key=lambda m: m.seconds)
    extra = {k: max(old.extra.get(k, 0), new.extra.get(k, 0)) for k in faster.extra}
    if "read_shown_s" in faster.extra:
        extra["read_shown_s"] = faster.extra["read_shown_s"]
    return Measured(faster.seconds, max(old.peak, new.peak), faster.note, extra)


def verdict(met: bool) -> str:
    return "met" if met else "NOT MET"


def print_size(size_gb: int, on_disk: int, found: dict) -> list[str]:
    """The table of one size; returns its lines, for the summary at the end."""
    target = memory_target(size_gb)
    lines = [
        f"\n{on_disk / GB:.2f} GB, {size_gb * RUNS_PER_PART} runs "
        f"(target: at most {target / GB:.1f} GB each)",
        f"{'command':34} {'time':>9} {'peak GB':>8}  {'memory':8} note",
    ]

    def row(label: str, got: Measured, memory: str, note: str = "") -> None:
        peak = f"{got.peak / GB:8.2f}" if got.peak else f"{'-':>8}"
        lines.append(f"{label:34} {got.seconds:8.2f}s {peak}  {memory:8} {note or got.note}"[:150])

    for key in ("check", "report", "export"):
        got = found[key]
        stopped = got.note.startswith(("stopped", "failed"))
        row(f"histoscope {key}", got, verdict(not stopped and got.peak <= target))
    view = found.get("view")
    if view is not None:
        extra = view.extra
        if extra:
            row(
                "histoscope view: first card",
                view,
                "",
                f"time {verdict(view.seconds <= FIRST_CARD_S)}"
                f" (<= {FIRST_CARD_S} s); RSS {extra['rss_first'] / GB:.2f} GB, "
                f"HWM {extra['hwm_first'] / GB:.2f} GB",
            )
            row(
                "histoscope view: every shown card",
                view,
                verdict(view.peak <= target),
                f"RSS {extra['rss_after'] / GB:.2f} GB; shown runs read in "
                f"{extra['read_shown_s']:.1f} s; {view.note}",
            )
        else:
            row("histoscope view", view, verdict(False))
    load = found.get("load")
    if load is not None:
        row("load_histograms (reference)", load, "", load.note)
        check = found["check"]
        if load.seconds and not check.note.startswith(("stopped", "failed")):
            ratio = check.seconds / load.seconds
            lines.append(
                f"check / load_histograms: {ratio:.2f}x, "
                f"{verdict(ratio <= CHECK_OVER_LOAD)} (<= {CHECK_OVER_LOAD:.0f}x)"
            )
    board = found.get("tensorboard")
    if board is not None:
        extra = board.extra
        if extra:
            row(
                "TensorBoard --load_fast=true",
                board,
                "",
                f"Python {extra['python_hwm'] / GB:.2f} GB + data server "
                f"{extra['server_hwm'] / GB:.2f} GB (peaks; now {extra['python_rss'] / GB:.2f} + "
                f"{extra['server_rss'] / GB:.2f}); time: until every run listed its tags",
            )
        else:
            row("TensorBoard --load_fast=true", board, "")
    print("\n".join(lines), flush=True)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,10", help="GB, comma-separated (default 1,10)")
    parser.add_argument(
        "--data-dir", type=Path, help="build the log directories here and keep them"
    )
    parser.add_argument("--skip", default="", help="any of load,view,tensorboard, comma-separated")
    parser.add_argument("--memory-limit-gb", type=float, help="stop a command past this")
    parser.add_argument("--repeat", type=int, default=1, help="rounds, taking turns (default 1)")
    args = parser.parse_args()
    args.skip = [s for s in args.skip.split(",") if s]
    available = status_available()
    args.limit = int(args.memory_limit_gb * GB) if args.memory_limit_gb else int(0.6 * available)
    sizes = [int(s) for s in args.sizes.split(",")]
    print(
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}, "
        f"{available / GB:.1f} GB available, commands stopped past {args.limit / GB:.1f} GB; "
        f"{sys.executable}"
    )
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="hs-bench-large-"))
    summary: list[str] = []
    try:
        for size in sizes:
            start = time.perf_counter()
            logdir = build(data_dir, size)
            on_disk = size_of(logdir)
            print(
                f"\n{logdir}: {on_disk / GB:.2f} GB, ready in {time.perf_counter() - start:.0f} s"
            )
            with tempfile.TemporaryDirectory(dir=data_dir) as work:
                found = measure_size(logdir, size, Path(work), args)
            summary += print_size(size, on_disk, found)
            print(f"load average now {os.getloadavg()[0]:.1f}")
        if len(sizes) > 1:
            print("\nAll sizes:" + "\n".join(summary))
    finally:
        if args.data_dir is None:
            shutil.rmtree(data_dir, ignore_errors=True)


def build(data_dir: Path, size_gb: int) -> Path:
    """The log directory of ``size_gb`` GB, built (or found) by ``large_logdir.py`` in a
    process of its own: a child's peak memory as ``wait4`` reports it starts from its
    parent's at the fork, and writing the run takes torch into this one."""
    script = Path(__file__).resolve().parent / "large_logdir.py"
    subprocess.run(
        [sys.executable, str(script), str(data_dir), "--sizes", str(size_gb)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return logdir_of(data_dir, size_gb)


def status_available() -> int:
    with open("/proc/meminfo") as lines:
        for line in lines:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 8 * GB


if __name__ == "__main__":
    main()
