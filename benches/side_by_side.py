"""Side by side (issue 20): the same log directories in histoscope and in TensorBoard, as
screenshots of their first screen at 1400 x 900, for a reviewer to compare.

Two log directories: histoscope's demo (two runs of a perceptron, parameters, gradients
and activations), and a PyTorch CNN logged by PyTorch's own ``SummaryWriter`` as a
tutorial does: five runs named as ``SummaryWriter`` names them by default (time, machine,
comment) under ``lesson-19-tensorboard/runs/``, 54 keys such as ``conv1.weight_grad``, the
first run stopped after its first step. Each is shown by ``histoscope view`` and by
``tensorboard --logdir`` (its histograms dashboard, offset mode), and TensorBoard's
HISTOSCOPE tab on the CNN; the screenshots go to tests/output/side_*.png.

    python benches/side_by_side.py                # needs PyTorch, TensorBoard and Chromium
"""

from __future__ import annotations

import argparse
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

OUTPUT = Path(__file__).resolve().parents[1] / "tests" / "output"
SCREEN = {"width": 1400, "height": 900}
RUNS = [
    ("Nov16_13-55-02_DESKTOP-VRDPFUI", 0.01, 1),
    ("Nov16_14-18-08_DESKTOP-VRDPFUItest_your_comment", 0.01, 8),
    ("Nov16_14-31-40_DESKTOP-VRDPFUIlr_0.05", 0.05, 8),
    ("Nov16_15-02-17_DESKTOP-VRDPFUIlr_0.001", 0.001, 8),
    ("Nov16_15-44-51_DESKTOP-VRDPFUIbatch_size_64", 0.01, 8),
]


def write_cnn(root: Path) -> Path:
    """The CNN's log directory, written by PyTorch's SummaryWriter; returns it."""
    # The writer needs no TensorFlow, and TensorFlow and PyTorch in one process abort on
    # LLVM options registered twice: TensorBoard's writer falls back to its own stubs.
    sys.modules.setdefault("tensorflow", None)
    import torch
    from torch import nn
    from torch.utils.tensorboard import SummaryWriter

    torch.manual_seed(0)
    images = torch.randn(512, 1, 16, 16)
    labels = (images[:, 0, 4:12, 4:12].mean((1, 2)) > 0).long() + 2 * (images[:, 0].std((1, 2)) > 1)
    for name, rate, epochs in RUNS:
        model = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
            nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 16, 3, padding=1), nn.BatchNorm2d(16), nn.PReLU(), nn.Flatten(),
            nn.Linear(256, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 4),
        )  # fmt: skip
        names = _module_names(model)
        optimizer = torch.optim.SGD(model.parameters(), lr=rate, momentum=0.9)
        writer = SummaryWriter(log_dir=str(root / "lesson-19-tensorboard" / "runs" / name))
        for epoch in range(epochs):
            for batch in range(0, len(images), 64):
                optimizer.zero_grad()
                loss = nn.functional.cross_entropy(
                    model(images[batch : batch + 64]), labels[batch : batch + 64]
                )
                loss.backward()
                optimizer.step()
            for key, parameter in model.named_parameters():
                tag = names[key]
                writer.add_histogram(tag, parameter, epoch)
                writer.add_histogram(tag + "_grad", parameter.grad, epoch)
                if epochs == 1:  # the run that stopped: two keys at its one step
                    break
        writer.close()
    return root


def _module_names(model) -> dict[str, str]:
    """Parameter names as a tutorial's model names them: conv1.weight, bn1.bias, fc2.weight."""
    counts: dict[str, int] = {}
    out = {}
    kinds = {"Conv2d": "conv", "BatchNorm2d": "bn", "Linear": "fc", "PReLU": "prelu"}
    for index, module in enumerate(model):
        kind = kinds.get(type(module).__name__)
        if kind is None:
            continue
        counts[kind] = counts.get(kind, 0) + 1
        label = kind if kind == "prelu" else f"{kind}{counts[kind]}"
        for part, _ in module.named_parameters():
            out[f"{index}.{part}"] = f"{label}.{part}"
    return out


@contextmanager
def histoscope_view(logdir: Path) -> Iterator[str]:
    server = subprocess.Popen(
        [sys.executable, "-m", "histoscope.cli", "view", str(logdir), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        yield re.search(r"http://\S+/", server.stdout.readline()).group(0)
    finally:
        server.terminate()
        server.wait(timeout=10)


def plugin_path(folder: Path) -> str:
    """A folder for PYTHONPATH declaring histoscope's TensorBoard plugin as an installed
    histoscope does (left empty where the installed one declares it): a checkout built in
    place has no entry points."""
    import importlib.metadata

    if any(
        e.name == "histoscope" for e in importlib.metadata.entry_points(group="tensorboard_plugins")
    ):
        return str(folder)
    info = folder / "histoscope_tab-0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: histoscope-tab\nVersion: 0\n")
    (info / "entry_points.txt").write_text(
        "[tensorboard_plugins]\nhistoscope = histoscope.view.tensorboard_plugin:HistoscopePlugin\n"
    )
    return str(folder)


@contextmanager
def tensorboard(logdir: Path) -> Iterator[str]:
    env = {**os.environ, "PYTHONPATH": plugin_path(logdir.parent / "plugin")}
    server = subprocess.Popen(
        [sys.executable, "-m", "tensorboard.main", "--logdir", str(logdir)]
        + ["--port", "0", "--host", "127.0.0.1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        for line in server.stderr:
            found = re.search(r"TensorBoard \S+ at (http://\S+/)", line)
            if found:
                time.sleep(5)  # TensorBoard reads the runs in the background after it starts
                yield found.group(1)
                break
    finally:
        server.terminate()
        server.wait(timeout=30)


def shoot(browser, url: str, name: str, wait_for: str, frame: bool = False) -> None:
    page = browser.new_page(viewport=SCREEN)
    page.goto(url)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        targets = page.frames if frame else [page.main_frame]
        if any(target.locator(wait_for).count() for target in targets):
            break
        page.wait_for_timeout(250)
    page.wait_for_timeout(3000)
    OUTPUT.mkdir(exist_ok=True)
    page.screenshot(path=str(OUTPUT / f"side_{name}.png"))
    page.close()
    print(f"wrote {OUTPUT / f'side_{name}.png'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-dir", type=Path, help="keep the log directories here")
    parser.add_argument("--write-cnn", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.write_cnn:
        write_cnn(args.write_cnn)
        return 0
    from playwright.sync_api import sync_playwright

    from histoscope.demo import run_demo

    root = args.cache_dir or Path(tempfile.mkdtemp(prefix="histoscope-side-"))
    demo, cnn = root / "demo", root / "cnn"
    if not demo.exists():
        run_demo(demo, stream=io.StringIO())
    if not cnn.exists():  # in a process of its own: PyTorch beside Chromium crashed at exit
        subprocess.run([sys.executable, __file__, "--write-cnn", str(cnn)], check=True)
    histograms = "svg path"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=shutil.which("chromium") or "/usr/bin/chromium", headless=True
            )
            for name, logdir in [("demo", demo / "logs" / "demo"), ("cnn", cnn)]:
                with histoscope_view(logdir) as url:
                    shoot(browser, url, f"{name}_histoscope", "svg.panel path.current")
                with tensorboard(logdir) as url:
                    shoot(browser, url + "#histograms", f"{name}_tensorboard", histograms)
                    if name == "cnn":
                        shoot(browser, url + "#histoscope", "cnn_tensorboard_tab",
                              "svg.panel path.current", frame=True)  # fmt: skip
            browser.close()
    finally:
        if args.cache_dir is None:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
