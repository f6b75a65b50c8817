"""What `Run.log` and `Run.add_histogram` accept, checked in the caller's thread."""

from __future__ import annotations

import numbers
from typing import Any

from .. import _args
from .histogram import Histogram


def snapshot_nbytes(values: Any) -> int:
    """The bytes a snapshot of ``values`` takes, known before copying them (0 if not known)."""
    if _args.is_tensor(values):
        return int(values.numel()) * int(values.element_size())
    nbytes = getattr(values, "nbytes", None)
    return int(nbytes) if isinstance(nbytes, numbers.Integral) else 0


def loggable(key: str, value: Any) -> Any:
    if isinstance(value, Histogram):
        return value
    if isinstance(value, (list, tuple)) and any(isinstance(v, Histogram) for v in value):
        raise TypeError(
            f"{key!r}: log one Histogram per key; use separate keys for several histograms"
        )
    if isinstance(value, bool) or not _is_number(value):
        raise TypeError(
            f"{key!r}: run.log takes a histoscope.Histogram or a number, got {type(value).__name__}"
        )
    return float(value)


def _is_number(value: Any) -> bool:
    if isinstance(value, numbers.Real):
        return True
    shape = getattr(value, "shape", None)
    return shape is not None and len(tuple(shape)) == 0 and hasattr(value, "__float__")
