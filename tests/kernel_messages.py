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


def _run(cells: list[str], timeout: float) -> list[dict[str, Any]]:
    from jupyter_client.manager import start_new_kernel

    manager, client = start_new_kernel(kernel_name="python3")
    out: list[dict[str, Any]] = []
    try:
        for cell in cells:
            asked = client.execute(cell)
            while True:
                msg = client.get_iopub_msg(timeout=timeout)
                kind, content = msg["msg_type"], msg["content"]
                if kind in COMM_TYPES:
                    out.append({
                        "type": kind, "comm_id": content.get("comm_id"),
                        "data": content.get("data", {}),
                        "buffers": [base64.b64encode(bytes(b)).decode() for b in msg["buffers"]],
                    })  # fmt: skip
                elif kind == "error":
                    raise RuntimeError("\n".join(content["traceback"]))
                elif kind == "stream":
                    print(content["text"], end="")
                elif kind == "status" and content["execution_state"] == "idle":
                    if msg["parent_header"].get("msg_id") == asked:
                        break
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    return out


if __name__ == "__main__":
    cells_file, out_file, seconds = sys.argv[1:4]
    messages = _run(json.loads(Path(cells_file).read_text()), float(seconds))
    Path(out_file).write_text(json.dumps(messages))
