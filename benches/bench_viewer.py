"""Benchmark for `histoscope view` (issues 5, 13 and 20): time to the first page and the
first card, and the server's memory, on a log directory of about 1 GB and on one of 1,000
runs; and on a real network's worth of keys (1,000 keys x 2 runs x 20 steps) and on a
sweep (100 keys x 50 runs x 20 steps): the first card, the page's element count and its
long tasks while scrolling through every card, the server's peak memory, and the size of
`histoscope report` of it.

Writes the log directories with histoscope's logger into a temporary folder (or
--cache-dir), starts `histoscope view` in a subprocess for each, opens the page in
headless Chromium and times, from the server's start: the first page (the HTML
answered), and, from the page's navigation start, the first card drawn (a histogram
path in the page; for the 1,000 keys, and for TensorBoard, the frame that painted it as
the page itself notes it, beside when the bench's polling saw it). Memory is the
server's peak resident set (VmHWM) once the first card is drawn and the reading
has caught up, for the full directory and for one with a quarter of its steps:
it must not grow with the steps nobody looked at.

    python benches/bench_viewer.py                 # both directories, about 1 GB written
    python benches/bench_viewer.py --scale 0.25    # a quarter of the size
    python benches/bench_viewer.py --keys-only     # only the 1,000-key and sweep measurements
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

import histoscope

TARGET_SECONDS = 1.0


def write_big(logdir: Path, steps: int, tags: int = 10, bins: int = 512) -> None:
    """One run, ``tags`` histograms of ``bins`` bins at each of ``steps`` steps."""
    rng = np.random.default_rng(0)
    values = rng.normal(size=4096)
    with histoscope.init("big", run_name="train", logdir=logdir) as run:
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
        with histoscope.init("many", run_name=f"run{index:04d}", logdir=logdir) as run:
            for step in range(steps):
                for tag in range(tags):
                    run.add_histogram(f"layer{tag}/weights", values + index / runs, step=step)


KEYS_TARGETS = {"first_card": 1.5, "elements": 10_000, "long_task": 0.2, "report": 8e6}


def first_drawn(condition: str) -> str:
    """An init script noting, in the page, when ``condition`` (a JavaScript expression) first
    holds at a frame, and then that frame painted: ``window.__drawn``, in ms from navigation.

    Checked once a frame by the page itself, so the time does not include the round trips of
    a harness polling the page, which on a busy machine take a few hundred milliseconds."""
    return (
        "window.__drawn = null; (function check() {"
        f" if ({condition}) setTimeout(() => {{ window.__drawn = performance.now(); }});"
        " else requestAnimationFrame(check); })();"
    )


OUR_CARD = "document.querySelector('svg.panel path.current')"
# the header's icons hold a few paths; one histogram card holds dozens (a ridge a step)
THEIR_CARD = "document.querySelectorAll('svg path').length >= 40"

# The page's own User Timing marks of its startup (app.js), in seconds from navigation.
PAGE_MARKS = """Object.fromEntries(performance.getEntriesByType("mark")
  .filter((m) => m.name.startsWith("histoscope:"))
  .map((m) => [m.name.slice("histoscope:".length), m.startTime / 1000]))"""

LONG_TASKS = """
window.__longtasks = [];
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) window.__longtasks.push(entry.duration);
}).observe({ type: "longtask", buffered: true });
"""


def write_keys(logdir: Path, keys: int = 1000, steps: int = 20) -> None:
    """Two runs of ``keys`` histograms (half ``params/``, half ``grads/``) at ``steps`` steps."""
    rng = np.random.default_rng(0)
    for run_name, scale in [("baseline", 1.0), ("wide", 2.0)]:
        with histoscope.init("keys", run_name=run_name, logdir=logdir) as run:
            for step in range(steps):
                shrink = scale * (1 + step) / steps
                for layer in range(keys // 2):
                    values = rng.normal(size=256) * shrink + layer / keys  # no two alike
                    run.add_histogram(f"params/layer{layer:03d}", values, step=step, bins=20)
                    run.add_histogram(f"grads/layer{layer:03d}", values * 1e-3, step=step, bins=20)


def write_sweep(logdir: Path, runs: int = 50, keys: int = 100, steps: int = 20) -> None:
    """A sweep: ``runs`` runs named by learning rate and seed, each logging ``keys`` keys
    named as PyTorch names parameters (``layers.3.weight``) at ``steps`` steps."""
    rng = np.random.default_rng(2)
    kinds = ["weight", "bias", "weight_grad", "bias_grad"]
    for index in range(runs):
        rate = 10 ** -(1 + 3 * index / runs)
        with histoscope.init(
            "sweep", run_name=f"lr_{rate:.2e}_seed{index % 5}", logdir=logdir
        ) as run:
            for step in range(steps):
                for key in range(keys):
                    values = rng.normal(size=256) * (1 + 10 * step * rate)
                    name = f"layers.{key // 4}.{kinds[key % 4]}"
                    run.add_histogram(name, values, step=step, bins=20)


@contextmanager
def serving(logdir: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """`histoscope view` of ``logdir`` on a free port, and the URL it prints; stopped on exit."""
    server = subprocess.Popen(
        [sys.executable, "-m", "histoscope.cli", "view", str(logdir), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        yield server, re.search(r"http://\S+/", server.stdout.readline()).group(0)
    finally:
        server.terminate()
        server.wait(timeout=10)


def measure_keys(logdir: Path, browser) -> dict[str, Any]:
    """First card, most page elements and longest task while scrolling every card, report size."""
    with serving(logdir) as (server, url):
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        context.add_init_script(LONG_TASKS)
        context.add_init_script(first_drawn(OUR_CARD))
        page = context.new_page()
        page.goto(url)
        page.wait_for_selector("svg.panel path.current", timeout=60000, state="attached")
        seen = page.evaluate("performance.now()") / 1000
        wait_until(page, "window.__drawn !== null")
        first_card = page.evaluate("window.__drawn") / 1000
        marks = page.evaluate(PAGE_MARKS)
        wait_until(page, "!document.getElementById('status').textContent.includes('still')")
        page.evaluate("window.__longtasks = []")
        elements = [page.evaluate("document.getElementsByTagName('*').length")]
        height = page.evaluate("document.body.scrollHeight")
        for _ in range(int(height / 1500) + 1):
            page.mouse.wheel(0, 1500)
            page.wait_for_timeout(120)
            elements.append(page.evaluate("document.getElementsByTagName('*').length"))
        long_tasks = page.evaluate("window.__longtasks")
        drawn = page.locator("article.card.mounted").count()
        memory = peak_rss(server.pid)
        context.close()
    report = logdir.parent / "report.html"
    began = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "histoscope.cli", "report", str(logdir), "-o", str(report)],
        check=True,
        capture_output=True,
    )
    return {
        "first_card": first_card,
        "seen": seen,
        "marks": marks,
        "elements": max(elements),
        "long_task": max(long_tasks, default=0.0) / 1000,
        "long_tasks": len(long_tasks),
        "drawn_at_end": drawn,
        "memory": memory,
        "report": report.stat().st_size,
        "report_seconds": time.perf_counter() - began,
    }


ALL_ELEMENTS = """() => { let count = 0;
  const walk = (root) => { for (const e of root.querySelectorAll('*')) {
    count += 1; if (e.shadowRoot) walk(e.shadowRoot); } };
  walk(document); return count; }"""


def measure_tensorboard(logdir: Path, browser) -> dict[str, float] | None:
    """The competitor on the same log directory: TensorBoard's histograms dashboard, its
    first histogram drawn (from the page's navigation start, once TensorBoard has read the
    runs) and its page elements, shadow roots included. None where TensorBoard is missing."""
    if shutil.which("tensorboard") is None:
        return None
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        ["tensorboard", "--logdir", str(logdir), "--port", str(port), "--host", "127.0.0.1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 300
        while True:  # TensorBoard reads in the background: wait until it lists both runs
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/data/runs") as answer:
                    if len(json.load(answer)) >= 2:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError("TensorBoard listed no runs")
            time.sleep(0.5)
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        context.add_init_script(first_drawn(THEIR_CARD))
        page = context.new_page()
        page.goto(f"http://127.0.0.1:{port}/#histograms")
        wait_until(page, THEIR_CARD)
        seen = page.evaluate("performance.now()") / 1000
        wait_until(page, "window.__drawn !== null")
        first_card = page.evaluate("window.__drawn") / 1000
        page.wait_for_timeout(3000)
        elements = page.evaluate(ALL_ELEMENTS)
        context.close()
        return {"first_card": first_card, "seen": seen, "elements": elements}
    finally:
        server.terminate()
        server.wait(timeout=30)


def report_keys(result: dict[str, Any], name: str = "1,000 keys x 2 runs x 20 steps") -> bool:
    checks = {
        "first_card": result["first_card"] <= KEYS_TARGETS["first_card"],
        "elements": result["elements"] <= KEYS_TARGETS["elements"],
        "long_task": result["long_task"] <= KEYS_TARGETS["long_task"],
        "report": result["report"] <= KEYS_TARGETS["report"],
    }
    verdict = {name: "PASS" if ok else "FAIL" for name, ok in checks.items()}
    print(
        f"{name}: first card painted {result['first_card']:.2f} s "
        f"({verdict['first_card']}: target <= 1.5 s; seen by the bench's polling at "
        f"{result['seen']:.2f} s); at most {result['elements']:,} page "
        f"elements while scrolling every card ({verdict['elements']}: target <= 10,000; "
        f"{result['drawn_at_end']} cards drawn at the end); longest task while scrolling "
        f"{1000 * result['long_task']:.0f} ms of {result['long_tasks']} over 50 ms "
        f"({verdict['long_task']}: target <= 200 ms); report "
        f"{result['report'] / 1e6:.1f} MB in {result['report_seconds']:.1f} s "
        f"({verdict['report']}: target <= 8 MB); server peak memory "
        f"{result['memory'] / 2**20:.0f} MiB"
    )
    marks = result["marks"]
    if marks:  # where the page's time went: its listing, its keys, its first cards placed
        print(
            "  the page's own marks: "
            + ", ".join(f"{name} {seconds:.2f} s" for name, seconds in marks.items())
        )
    return all(checks.values())


def wait_until(page, expression: str, seconds: float = 300.0) -> None:
    """Polls ``expression`` from here: the page's Content-Security-Policy forbids the string
    evaluation Playwright's ``wait_for_function`` does inside the page."""
    deadline = time.monotonic() + seconds
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            raise TimeoutError(f"still false after {seconds:.0f} s: {expression}")
        time.sleep(0.1)


def size_of(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def peak_rss(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1)) * 1024


def measure(logdir: Path, browser) -> dict[str, float]:
    """Seconds to the first page and card from the server's start, and its peak memory."""
    started = time.perf_counter()
    with serving(logdir) as (server, url):
        with urllib.request.urlopen(url, timeout=30) as response:
            response.read()
        first_page = time.perf_counter() - started
        page = browser.new_page()
        page.goto(url)
        page.wait_for_selector("svg.panel path.current", timeout=60000, state="attached")
        first_card = page.evaluate("performance.now()") / 1000
        from_start = time.perf_counter() - started
        card_memory = peak_rss(server.pid)
        wait_until(  # a poll has answered, and nothing is left to read
            page,
            "document.body.dataset.polls"
            " && !document.getElementById('status').textContent.includes('still')",
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
    parser.add_argument(
        "--keys-only", action="store_true", help="only the 1,000-key viewer and report numbers"
    )
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    root = args.cache_dir or Path(tempfile.mkdtemp(prefix="histoscope-bench-viewer-"))
    if args.keys_only:
        try:
            return 0 if bench_keys(root) else 1
        finally:
            if args.cache_dir is None:
                shutil.rmtree(root, ignore_errors=True)
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
            ok &= bench_keys(root, browser)
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


def bench_keys(root: Path, browser=None) -> bool:
    """The 1,000-key and sweep measurements, in ``browser`` or a Chromium of their own."""
    from playwright.sync_api import sync_playwright

    for folder, write in [(root / "keys", write_keys), (root / "sweep", write_sweep)]:
        if not folder.exists():
            began = time.perf_counter()
            write(folder)
            took = time.perf_counter() - began
            print(f"wrote {folder}: {size_of(folder) / 1e6:,.0f} MB in {took:.0f} s")
    if browser is not None:
        return compare_keys(root / "keys" / "keys", browser) & sweep(root, browser)
    with sync_playwright() as playwright:
        own = playwright.chromium.launch(
            executable_path=shutil.which("chromium") or "/usr/bin/chromium", headless=True
        )
        try:
            return compare_keys(root / "keys" / "keys", own) & sweep(root, own)
        finally:
            own.close()


def sweep(root: Path, browser) -> bool:
    """The sweep's numbers: the page shows its first ten runs, as many as it has colours."""
    result = measure_keys(root / "sweep" / "sweep", browser)
    return report_keys(result, "100 keys x 50 runs x 20 steps")


def compare_keys(logdir: Path, browser) -> bool:
    ours = measure_keys(logdir, browser)
    ok = report_keys(ours)
    theirs = measure_tensorboard(logdir, browser)
    if theirs is None:
        print("TensorBoard: not installed, no comparison")
        return ok
    first_ratio = ours["first_card"] / theirs["first_card"]
    print(
        f"TensorBoard {version('tensorboard')} on the same directory: first histogram "
        f"{theirs['first_card']:.2f} s after its runs were read (seen by the bench's polling "
        f"at {theirs['seen']:.2f} s), {theirs['elements']:,} page "
        f"elements; histoscope/TensorBoard: first card x{first_ratio:.2f}, "
        f"elements x{ours['elements'] / theirs['elements']:.2f}"
    )
    return ok


if __name__ == "__main__":
    sys.exit(main())
