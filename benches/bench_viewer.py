"""Benchmark for `histoscope view` (issue 5): time to the first page and the first card, and
the server's memory, on a log directory of about 1 GB and on one of 1,000 runs.

Writes the log directories with histoscope's logger into a temporary folder (or
--cache-dir), starts `histoscope view` in a subprocess for each, opens the page in
headless Chromium and times, from the server's start: the first page (the HTML
answered), and, from the page's navigation start, the first card drawn (a histogram
path in the page). Memory is the
server's peak resident set (VmHWM) once the first card is drawn and the reading
has caught up, for the full directory and for one with a quarter of its steps:
it must not grow with the steps nobody looked at.

    python benches/bench_viewer.py                 # both directories, about 1 GB written
    python benches/bench_viewer.py --scale 0.25    # a quarter of the size
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np

import histoscope

TARGET_SECONDS = 1.0


def write_big(logdir: Path, steps: int, tags: int = 10, bins: int = 512) -> None:
    """One run, ``tags`` histograms of ``bins`` bins at each of ``steps`` steps."""
    rng = np.random.default_rng(0)
    values = rng.normal(size=4096)
    with histoscope.init("big", run_name="train", dir=logdir) as run:
        for step in range(steps):
            for tag in range(tags):
                run.add_histogram(
                    f"layer{tag}/weights", values * (1 + step / steps), step=step, bins=bins
                )


def write_many(logdir: Path, runs: int = 1000, steps: int = 50, tags: int = 6) -> None:
    """``runs`` runs of ``tags`` small histograms at each of ``steps`` steps."""
    rng = np.random.default_rng(1)
    values = rng.normal(size=512)
    for index in range(runs):
        with histoscope.init("many", run_name=f"run{index:04d}", dir=logdir) as run:
            for step in range(steps):
                for tag in range(tags):
                    run.add_histogram(f"layer{tag}/weights", values + index / runs, step=step)


def size_of(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def peak_rss(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1)) * 1024


def measure(logdir: Path, browser) -> dict[str, float]:
    """Seconds to the first page and card from the server's start, and its peak memory."""
    started = time.perf_counter()
    server = subprocess.Popen(
        [sys.executable, "-m", "histoscope.cli", "view", str(logdir), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        url = re.search(r"http://\S+/", server.stdout.readline()).group(0)
        with urllib.request.urlopen(url, timeout=30) as response:
            response.read()
        first_page = time.perf_counter() - started
        page = browser.new_page()
        page.goto(url)
        page.wait_for_selector("svg.panel path.current", timeout=60000, state="attached")
        first_card = page.evaluate("performance.now()") / 1000
        from_start = time.perf_counter() - started
        card_memory = peak_rss(server.pid)
        page.wait_for_function(  # a poll has answered, and nothing is left to read
            "document.body.dataset.polls"
            " && !document.getElementById('status').textContent.includes('still')",
            timeout=300000,
        )
        caught_up = time.perf_counter() - started
        page.close()
        return {
            "first_page": first_page,
            "first_card": first_card,
            "from_start": from_start,
            "caught_up": caught_up,
            "card_memory": card_memory,
            "memory": peak_rss(server.pid),
        }
    finally:
        server.terminate()
        server.wait(timeout=10)


def report(name: str, logdir: Path, result: dict[str, float]) -> bool:
    ok = result["first_card"] < TARGET_SECONDS
    print(
        f"{name}: {size_of(logdir) / 1e6:,.0f} MB; first page {result['first_page']:.2f} s, "
        f"first card {result['first_card']:.2f} s ({'PASS' if ok else 'FAIL'}: target "
        f"< {TARGET_SECONDS:.0f} s; {result['from_start']:.2f} s from the server's start), "
        f"all read {result['caught_up']:.2f} s; server peak memory "
        f"{result['card_memory'] / 2**20:.0f} MiB at the first card, "
        f"{result['memory'] / 2**20:.0f} MiB when all read"
    )
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of the 1 GB to write")
    parser.add_argument("--cache-dir", type=Path, help="keep the log directories here")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    root = args.cache_dir or Path(tempfile.mkdtemp(prefix="histoscope-bench-viewer-"))
    steps = max(4, int(12_000 * args.scale))
    big, quarter, many = root / "big", root / "quarter", root / "many"
    for folder, write in [
        (big, lambda: write_big(big, steps)),
        (quarter, lambda: write_big(quarter, steps // 4)),
        (many, lambda: write_many(many)),
    ]:
        if not folder.exists():
            began = time.perf_counter()
            write()
            print(
                f"wrote {folder}: {size_of(folder) / 1e6:,.0f} MB "
                f"in {time.perf_counter() - began:.0f} s"
            )
    ok = True
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=shutil.which("chromium") or "/usr/bin/chromium", headless=True
            )
            measure(many / "many", browser)  # warm the page cache and the imports
            results = {}
            for name, folder in [
                ("1 GB, one run", big / "big"),
                ("a quarter of its steps", quarter / "big"),
                ("1,000 runs", many / "many"),
            ]:
                results[name] = measure(folder, browser)
                ok &= report(name, folder, results[name])
            browser.close()
        full, part = results["1 GB, one run"]["memory"], results["a quarter of its steps"]["memory"]
        grown = (full - part) / 2**20
        data = (size_of(big) - size_of(quarter)) / 2**20
        flat = grown < 0.1 * data
        print(
            f"memory for 4x the steps: +{grown:.0f} MiB for +{data:.0f} MiB of events "
            f"({'PASS' if flat else 'FAIL'}: target under a tenth of the data added)"
        )
        ok &= flat
    finally:
        if args.cache_dir is None:
            shutil.rmtree(root, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
