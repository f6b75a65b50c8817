"""A notebook run headless by nbclient and saved, then read as the places that show a
saved notebook with no script read it: GitHub's notebook view, nbviewer's static mode
and a code review strip scripts, frames and styles, and keep plain HTML and inline SVG."""

from __future__ import annotations

import copy
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat

#: The widget's output in a saved notebook: its view of the model, its HTML fallback.
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

_EXECUTE = """
import sys, nbformat
from nbclient import NotebookClient
notebook = nbformat.read(sys.argv[1], as_version=4)
NotebookClient(notebook, timeout=int(sys.argv[2]), kernel_name="python3").execute()
nbformat.write(notebook, sys.argv[1])
"""

# What GitHub's sanitizer drops: elements that run or style, and the attributes that do.
_STRIPPED = (
    re.compile(r"<(script|style|iframe)\b.*?</\1\s*>", re.S | re.I),
    re.compile(r"<(script|style|iframe)\b[^>]*/?>", re.I),
    re.compile(r"""\s(style|on\w+|srcdoc)\s*=\s*("[^"]*"|'[^']*'|[^\s>]+)""", re.I),
)


def execute(cells: list[str], path: Path, timeout: int = 300) -> Any:
    """Runs the cells in a fresh kernel as a saved notebook at ``path``, and reads it back.
    In a child process, whose kernel inherits this environment (PYTHONPATH included):
    nbclient leaves an asyncio loop that Playwright's sync API then refuses."""
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nbformat.write(notebook, path)
    done = subprocess.run(
        [sys.executable, "-c", _EXECUTE, str(path), str(timeout)],
        capture_output=True, text=True, timeout=timeout + 60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    return nbformat.read(path, as_version=4)


def strip(text: str) -> str:
    """``text`` as GitHub shows it: no script, style or frame, no style or event attribute."""
    for pattern in _STRIPPED:
        text = pattern.sub("", text)
    return text


def widget_outputs(notebook: Any) -> list[dict[str, Any]]:
    """Every output of a shown widget, in the order of the cells."""
    return [
        output
        for cell in notebook.cells
        for output in cell.get("outputs", [])
        if WIDGET_VIEW in output.get("data", {})
    ]


def printed(cell: Any) -> str:
    """What a cell printed."""
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


def static_page(notebook: Any, title: str) -> str:
    """Every HTML output of ``notebook``, stripped, as one page whose details are open
    (so that axe reads the tables in them)."""
    parts = [
        strip(output["data"]["text/html"])
        for cell in notebook.cells
        for output in cell.get("outputs", [])
        if "text/html" in output.get("data", {})
    ]
    body = "\n".join(parts).replace("<details>", "<details open>")
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
        f"</head><body><main><h1>{title}</h1>\n{body}\n</main></body></html>\n"
    )


def bytes_added(notebook: Any, output: dict[str, Any]) -> int:
    """The bytes ``output`` adds to the saved ``.ipynb`` (its JSON as nbformat writes it)."""
    without = copy.deepcopy(notebook)
    for cell in without.cells:
        cell["outputs"] = [o for o in cell.get("outputs", []) if o != output]
    return len(nbformat.writes(notebook).encode()) - len(nbformat.writes(without).encode())


def state_bytes(notebook: Any) -> int:
    """The bytes the saved widget state (nbclient keeps it) adds to the ``.ipynb``."""
    without = copy.deepcopy(notebook)
    without.metadata.pop("widgets", None)
    return len(nbformat.writes(notebook).encode()) - len(nbformat.writes(without).encode())
