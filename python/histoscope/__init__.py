"""histoscope: the distributions of machine-learning training, read fast and shown to everyone.

Example:
    >>> import histoscope
    >>> charts = histoscope.read_tensorboard_histograms("runs/")  # doctest: +SKIP
    >>> charts[0]  # doctest: +SKIP
    TensorBoardChart(tag='weights/dense', run='train', steps 0..19 (20 shown), 30 bins, ...)
"""

from __future__ import annotations

try:
    from . import _core  # noqa: F401
except ImportError as error:  # pragma: no cover - only without a built extension
    raise ImportError(
        "histoscope's native module is missing: install the package with `pip install .` "
        "(or `maturin develop`) from a source checkout, which builds it with Rust"
    ) from error

from .chart import TensorBoardChart
from .diagnose import Finding, diagnose
from .histogram import Histogram
from .html import render, save_html, show
from .reader import (
    DamagedFileWarning,
    HistogramSeries,
    HistoscopeWarning,
    load_histograms,
    read_tensorboard_histograms,
)
from .run import Run, finish, init, log
from .tidy import to_arrow, to_pandas
from .watch import watch

__all__ = [
    "DamagedFileWarning",
    "Finding",
    "Histogram",
    "HistogramSeries",
    "HistoscopeWarning",
    "Run",
    "TensorBoardChart",
    "diagnose",
    "finish",
    "init",
    "load_histograms",
    "log",
    "read_tensorboard_histograms",
    "render",
    "save_html",
    "show",
    "to_arrow",
    "to_pandas",
    "watch",
]

__version__ = "0.1.0"
