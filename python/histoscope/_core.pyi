"""Type stubs for histoscope's native module (Rust, built by maturin)."""

from __future__ import annotations

import os

import numpy as np
import numpy.typing as npt

STAT_NAMES: list[str]

_Report = tuple[str, str, bool, int | None]
_Series = tuple[
    str,
    str,
    npt.NDArray[np.int64],
    npt.NDArray[np.float64],
    npt.NDArray[np.float64],
    npt.NDArray[np.int64],
    npt.NDArray[np.float64],
]
_Chart = tuple[
    str,
    str,
    npt.NDArray[np.int64],
    npt.NDArray[np.float64],
    npt.NDArray[np.float64],
    npt.NDArray[np.float64],
    int,
    float,
]

def load_histograms(
    logdir: str | os.PathLike[str],
    runs: list[str] | None = None,
    tags: list[str] | None = None,
) -> tuple[list[str], list[_Series], list[_Report]]: ...
def read_charts(
    logdir: str | os.PathLike[str],
    bins: int,
    max_steps: int | None,
    runs: list[str] | None = None,
    tags: list[str] | None = None,
) -> tuple[list[str], list[_Chart], list[_Report]]: ...
def rebin(
    steps: list[npt.NDArray[np.float64]], bins: int
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], int, float]: ...
def thin_indices(n: int, max_steps: int | None) -> npt.NDArray[np.int64]: ...
