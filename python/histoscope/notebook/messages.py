"""The core's live-chart updates as the notebook widget receives them: a JSON header and
binary buffers (``widget.js`` applies them), packed into one ``bytes`` for the snapshot a
saved notebook keeps.

Example:
    >>> import numpy as np
    >>> from histoscope import _core
    >>> chart = _core.LiveChart(bins=4)
    >>> stats = _core.Stats(count=2, min=0, max=1, mean=.5, std=.5, nonfinite=0, below=0, above=0)
    >>> chart.add("w", "run", 0, np.array([[0.0, 1.0, 2.0]]), stats)
    >>> header, buffers = message(chart.take_update(1 << 20), chart.bins)
    >>> header["changes"][0]["rows"], [len(b) for b in buffers]
    (1, [40, 8, 16, 36, 0])
"""

from __future__ import annotations

import json
import struct
from typing import Any

import numpy as np

from .. import _core

#: What each step carries besides its counts, in the core's order (`_core.STEP_FIGURES`).
FIGURES: tuple[str, ...] = (*_core.STAT_NAMES, "zeros")
assert len(FIGURES) == _core.STEP_FIGURES


def message(
    update: _core.LiveUpdateRecord, bins: int, findings: dict[str, Any] | None = None
) -> tuple[dict[str, Any], list[bytes]]:
    """The widget's message for ``update`` of a chart on ``bins`` bins: the changes, and
    the findings when they changed (``{"findings": [...], "notes": [...]}``); numbers
    only in the buffers."""
    header: dict[str, Any] = {
        "kind": "update",
        "bins": bins,
        "figures": list(FIGURES),
        "changes": [
            {
                "tag": c.tag,
                "run": c.run,
                "edges": c.edges,
                "full": c.full,
                "masked": c.masked,
                "keep": c.keep,
                "rows": c.rows,
            }
            for c in update.changes
        ],
    }
    if findings is not None:
        header["findings"] = findings.get("findings", [])
        header["notes"] = findings.get("notes", [])
    buffers = [
        np.ascontiguousarray(a).tobytes()
        for a in (update.edges, update.steps, update.counts, update.figures, update.mask)
    ]
    return header, buffers


def pack(header: dict[str, Any], buffers: list[bytes]) -> bytes:
    """One message as one ``bytes``: the header's length (4 bytes, little-endian), the
    header with each buffer's ``[offset, size]``, then the buffers, each at an offset
    that is a multiple of 8.

    Example:
        >>> blob = pack({"kind": "update"}, [b"12345678", b"x"])
        >>> length = int.from_bytes(blob[:4], "little")
        >>> json.loads(blob[4 : 4 + length])["buffers"]
        [[48, 8], [56, 1]]
    """
    offsets: list[list[int]] = []
    head = b""
    # The offsets depend on the header's own length: grow until it stands still.
    for _ in range(8):
        start = _aligned(4 + len(head))
        offsets, at = [], start
        for buffer in buffers:
            offsets.append([at, len(buffer)])
            at = _aligned(at + len(buffer))
        encoded = json.dumps({**header, "buffers": offsets}, separators=(",", ":")).encode()
        if len(encoded) == len(head):
            break
        head = encoded
    out = bytearray(struct.pack("<I", len(head)) + head)
    for (offset, _size), buffer in zip(offsets, buffers):
        out.extend(b"\0" * (offset - len(out)))
        out.extend(buffer)
    return bytes(out)


def _aligned(n: int) -> int:
    return (n + 7) // 8 * 8
