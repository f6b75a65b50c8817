"""histoscope: the distributions of machine-learning training, read fast and shown to everyone.

Example:
    >>> import tempfile
    >>> import numpy as np
    >>> import histoscope
    >>> logs = tempfile.TemporaryDirectory()
    >>> with histoscope.init("demo", run_name="train", logdir=logs.name) as run:
    ...     for step in range(5):
    ...         weights = np.random.default_rng(step).normal(size=1000)
    ...         run.add_histogram("weights", weights, step=step)
    >>> chart = histoscope.read_tensorboard_histograms(logs.name, bins=30)[0]
    >>> chart.tag, chart.run, chart.steps.tolist()
    ('weights', 'demo/train', [0, 1, 2, 3, 4])
    >>> chart.counts.shape, chart.counts.sum(axis=1).round(6).tolist()
    ((5, 30), [1000.0, 1000.0, 1000.0, 1000.0, 1000.0])
    >>> logs.cleanup()
"""

from __future__ import annotations

from typing import Any

try:
    from . import _core  # noqa: F401
except ImportError as error:  # pragma: no cover - only without a built extension
    raise ImportError(
        "histoscope's native module is missing: install the package with `pip install .` "
        "(or `maturin develop`) from a source checkout, which builds it with Rust"
    ) from error

from ._deprecated import module_aliases
from .compare import Comparison, KeyDistance, compare
from .diagnose import Finding, diagnose
from .errors import DamagedFileWarning, HistoscopeAlert, HistoscopeWarning, TrainingProblem
from .notebook import show
from .read import (
    HistogramSeries,
    TensorBoardChart,
    load_histograms,
    read_tensorboard_histograms,
    to_arrow,
    to_pandas,
)
from .view import render, save_html
from .write import Histogram, Run, Spectrum, finish, init, log, log_tree, spectrum, watch

__all__ = [
    "Comparison",
    "DamagedFileWarning",
    "Finding",
    "Histogram",
    "HistogramSeries",
    "HistoscopeAlert",
    "HistoscopeWarning",
    "KeyDistance",
    "Run",
    "Spectrum",
    "TensorBoardChart",
    "TrainingProblem",
    "compare",
    "diagnose",
    "finish",
    "init",
    "load_histograms",
    "log",
    "log_tree",
    "read_tensorboard_histograms",
    "render",
    "save_html",
    "show",
    "spectrum",
    "to_arrow",
    "to_pandas",
    "watch",
]


#: Names before 1.0 (see docs/vocabulary.md): each warns and gives the new one.
_OLD_NAMES = {"Alert": ("histoscope.Finding", lambda: Finding)}
_old_name = module_aliases("histoscope", _OLD_NAMES)


def __getattr__(name: str) -> Any:
    # The version is written once, in Cargo.toml; the installed metadata carries it.
    # Reading it imports importlib.metadata (15-40 ms), so only on first use.
    if name == "__version__":
        from importlib.metadata import version

        return version("histoscope")
    return _old_name(name)
