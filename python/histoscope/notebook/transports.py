"""How the widget's updates and snapshot travel to the front end. ``buffers``, the fastest,
carries the numbers as the binary buffers of each widget message. ``base64`` carries the
same bytes as base64 text inside the JSON message, for front ends whose widget manager
drops binary buffers: Colab's does (googlecolab/colab-cdn-widget-manager#8 and #33), so a
kernel where ``google.colab`` is importable gets ``base64``. The data and the updates are
the same either way; ``widget.js`` reads both.

Example:
    >>> chosen_transport(None, environ={}, colab=False)
    'buffers'
    >>> chosen_transport(None, environ={}, colab=True)
    'base64'
    >>> chosen_transport(None, environ={ENVIRONMENT_VARIABLE: "base64"}, colab=False)
    'base64'
    >>> header, buffers = carried({"kind": "update"}, [b"\\x01\\x02", b""], "base64")
    >>> header["encoded"], buffers
    (['AQI=', ''], [])
"""

from __future__ import annotations

import base64
import importlib.util
import os
from collections.abc import Mapping
from typing import Any

#: The transports, the fastest first.
TRANSPORTS: tuple[str, ...] = ("buffers", "base64")
#: Chooses the transport of every widget shown where no ``transport=`` is given.
ENVIRONMENT_VARIABLE = "HISTOSCOPE_WIDGET_TRANSPORT"


def in_colab() -> bool:
    """Whether this kernel is Colab's: ``google.colab`` can be imported."""
    try:
        return importlib.util.find_spec("google.colab") is not None
    except (ImportError, ValueError):  # no ``google`` package at all, or a broken one
        return False


def chosen_transport(
    asked: str | None,
    *,
    environ: Mapping[str, str] | None = None,
    colab: bool | None = None,
) -> str:
    """The transport asked for, else the environment's (`ENVIRONMENT_VARIABLE`), else
    ``base64`` in Colab and ``buffers`` elsewhere.

    Example:
        >>> chosen_transport("json")
        Traceback (most recent call last):
        ...
        ValueError: transport must be one of 'buffers', 'base64', got 'json'
    """
    environ = os.environ if environ is None else environ
    chosen = asked or environ.get(ENVIRONMENT_VARIABLE) or None
    if chosen is None:
        return "base64" if (in_colab() if colab is None else colab) else "buffers"
    if chosen not in TRANSPORTS:
        names = ", ".join(repr(t) for t in TRANSPORTS)
        raise ValueError(f"transport must be one of {names}, got {chosen!r}")
    return chosen


def budget_for(transport: str, budget_bytes: int) -> int:
    """The raw bytes an update may take so that, carried, it stays within ``budget_bytes``:
    base64 writes 4 characters for every 3 bytes.

    Example:
        >>> budget_for("buffers", 900), budget_for("base64", 900)
        (900, 675)
    """
    return budget_bytes if transport == "buffers" else budget_bytes * 3 // 4


def carried(
    header: dict[str, Any], buffers: list[bytes], transport: str
) -> tuple[dict[str, Any], list[bytes]]:
    """One message as ``transport`` carries it: unchanged for ``buffers``; for ``base64``,
    every buffer as text in the header's ``encoded`` list, in order, and no buffers."""
    if transport == "buffers":
        return header, buffers
    return {**header, "encoded": [base64.b64encode(b).decode("ascii") for b in buffers]}, []


def snapshot_to_json(value: bytes, widget: Any) -> bytes | str:
    """The ``_snapshot`` trait as the widget's transport sends it (ipywidgets' ``to_json``):
    bytes travel as a buffer, so a ``base64`` widget sends them as text."""
    if getattr(widget, "transport", "buffers") == "buffers":
        return value
    return base64.b64encode(value).decode("ascii")
