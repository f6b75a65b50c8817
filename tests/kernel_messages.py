"""The widget messages a real kernel sends: cells run in a fresh IPython kernel through
jupyter_client, and every comm message it published on IOPub recorded in order (its
data, and how many binary buffers it carried, each as base64). In a child process:
jupyter_client leaves an asyncio loop that Playwright's sync API then refuses.

Run as a script: ``python kernel_messages.py CELLS.json OUT.json``.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

#: The comm messages a front end gets from a kernel.
COMM_TYPES = ("comm_open", "comm_msg", "comm_close")


def recorded(
    cells: list[str], folder: Path, path_first: Path | None = None, timeout: int = 120
) -> list[dict[str, Any]]:
    """The comm messages of running ``cells`` in order, each ``{"type", "comm_id",
    "data", "buffers"}``; ``path_first`` goes first on the kernel's ``PYTHONPATH``."""
    cells_path, out_path = folder / "cells.json", folder / "messages.json"
    cells_path.write_text(json.dumps(cells))
    env = dict(os.environ)
    if path_first is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(path_first), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, __file__, str(cells_path), str(out_path), str(timeout)],
        capture_output=True, text=True, timeout=timeout * len(cells) + 60, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    return json.loads(out_path.read_text())


#: A step of `run_steps` that is a front end's word, on the last widget's comm, that it
#: drew a view of the widget (as its module says in render).
DRAWN = "drawn"


def run_steps(
    steps: list[str | float], kinds: tuple[str, ...], timeout: float = 120
) -> list[dict[str, Any]]:
    """The IOPub messages of ``kinds`` a fresh kernel published running ``steps``, in
    order: each its content, with ``type``, ``cell`` (the step it came in, None while the
    kernel idled) and ``buffers`` (base64). A step is a cell's code, a number of seconds
    the kernel is left idle, or `DRAWN`. A cell's error fails the test."""
    import queue

    from jupyter_client.manager import start_new_kernel

    manager, client = start_new_kernel(kernel_name="python3")
    seen: list[dict[str, Any]] = []

    def record(msg: dict[str, Any], cell: int | None) -> None:
        kind, content = msg["msg_type"], msg["content"]
        if kind == "error":
            raise AssertionError("\n".join(content["traceback"]))
        if kind == "stream":
            print(content["text"], end="")
        if kind in kinds:
            buffers = [base64.b64encode(bytes(b)).decode() for b in msg["buffers"]]
            seen.append({"type": kind, "cell": cell, "buffers": buffers, **content})

    try:
        for index, step in enumerate(steps):
            if step == DRAWN:
                comm = [m["comm_id"] for m in seen if m["type"] == "comm_open"][-1]
                data = {"method": "custom", "content": {"kind": "drawn"}}
                client.shell_channel.send(
                    client.session.msg("comm_msg", {"comm_id": comm, "data": data})
                )
            elif isinstance(step, (int, float)):
                until = time.monotonic() + step
                while (left := until - time.monotonic()) > 0:
                    try:
                        record(client.get_iopub_msg(timeout=left), None)
                    except queue.Empty:
                        break
            else:
                asked = client.execute(step)
                while True:
                    msg = client.get_iopub_msg(timeout=timeout)
                    record(msg, index)
                    if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                        if msg["parent_header"].get("msg_id") == asked:
                            break
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    return seen


def _run(cells: list[str], timeout: float) -> list[dict[str, Any]]:
    return [
        {"type": m["type"], "comm_id": m.get("comm_id"), "data": m.get("data", {}),
         "buffers": m["buffers"]}
        for m in run_steps(cells, COMM_TYPES, timeout)
    ]  # fmt: skip


if __name__ == "__main__":
    cells_file, out_file, seconds = sys.argv[1:4]
    messages = _run(json.loads(Path(cells_file).read_text()), float(seconds))
    Path(out_file).write_text(json.dumps(messages))
