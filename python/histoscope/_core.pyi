"""Type stubs for histoscope's native module (Rust, built by maturin)."""

from __future__ import annotations

import os

import numpy as np
import numpy.typing as npt
from typing_extensions import Self, final

STAT_NAMES: list[str]
BASIS_POINTS: list[int]

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

_Logdirs = str | os.PathLike[str] | list[tuple[str, str | os.PathLike[str]]]

def load_histograms(
    logdir: _Logdirs,
    runs: list[str] | None = None,
    tags: list[str] | None = None,
) -> tuple[list[str], list[_Series], list[_Report]]: ...
def read_charts(
    logdir: _Logdirs,
    bins: int,
    max_steps: int | None,
    runs: list[str] | None = None,
    tags: list[str] | None = None,
) -> tuple[list[str], list[_Chart], list[_Report]]: ...
def rebin(
    steps: list[npt.NDArray[np.float64]], bins: int
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], int, float]: ...
def thin_indices(n: int, max_steps: int | None) -> npt.NDArray[np.int64]: ...
def histogram(
    values: npt.NDArray[np.generic],
    bins: int | None = None,
    edges: list[float] | None = None,
    range: tuple[float, float] | None = None,
    weights: npt.NDArray[np.float64] | None = None,
    float16: bool = False,
    bfloat16: bool = False,
) -> tuple[
    npt.NDArray[np.float64],
    npt.NDArray[np.float64],
    tuple[float, float, float, float, float, float, float, float],
]: ...

@final
class DecodedFile:
    def __len__(self) -> int: ...
    def drop_buckets(self) -> None: ...
    def keep(self, keep: npt.NDArray[np.bool_]) -> None: ...

@final
class EventStream:
    def __new__(cls, path: str, size: int | None = None, tags: list[str] | None = None) -> Self: ...
    def feed(self, chunk: bytes) -> None: ...
    def finish(self) -> DecodedFile: ...

def decode_file(path: str | os.PathLike[str], tags: list[str] | None = None) -> DecodedFile: ...
def merge_files(run: str, files: list[DecodedFile]) -> tuple[list[_Series], list[_Report]]: ...
def surviving_entries(files: list[DecodedFile]) -> list[npt.NDArray[np.bool_]]: ...
def discover_runs(logdir: str | os.PathLike[str]) -> list[tuple[str, list[os.PathLike[str]]]]: ...

_Segment = tuple[int, list[int], list[_Series], _Report, dict[str, str]]
_StepIndex = tuple[
    str,
    npt.NDArray[np.int64],
    npt.NDArray[np.float64],
    npt.NDArray[np.float64],
    npt.NDArray[np.float64],
]
_SegmentIndex = tuple[int, list[int], list[_StepIndex], _Report, dict[str, str]]

def index_segment(
    run: str,
    path: str | os.PathLike[str],
    start: int,
    max_bytes: int,
    plugins: dict[str, str],
) -> _SegmentIndex: ...
def read_segment(
    run: str,
    path: str | os.PathLike[str],
    start: int,
    max_bytes: int,
    plugins: dict[str, str],
    tags: list[str] | None = None,
) -> _Segment: ...

@final
class EventFileWriter:
    def __new__(cls, dir: str, wall_time: float, host: str) -> Self: ...
    @property
    def path(self) -> os.PathLike[str]: ...
    def write_histogram(
        self,
        tag: str,
        step: int,
        wall_time: float,
        edges: npt.NDArray[np.float64],
        counts: npt.NDArray[np.float64],
        stats: list[float],
    ) -> None: ...
    def write_scalar(self, tag: str, step: int, wall_time: float, value: float) -> None: ...
    def write_layout(
        self, pattern: str, section: str | None, hidden: bool, wall_time: float
    ) -> None: ...
    def flush(self) -> None: ...
    def close(self) -> None: ...

@final
class LayoutRecord:
    @property
    def pattern(self) -> str: ...
    @property
    def section(self) -> str | None: ...
    @property
    def hidden(self) -> bool: ...

def read_layout(
    path: str | os.PathLike[str], start: int = 0
) -> tuple[int, list[LayoutRecord]]: ...
class FindingRecord:
    @property
    def kind(self) -> str: ...
    @property
    def run(self) -> str: ...
    @property
    def key(self) -> str: ...
    @property
    def role(self) -> str: ...
    @property
    def first_step(self) -> int: ...
    @property
    def last_step(self) -> int: ...
    @property
    def severity(self) -> str: ...
    @property
    def evidence(self) -> list[tuple[str, float]]: ...
    @property
    def message(self) -> str: ...

def diagnose_logdir(
    logdir: _Logdirs,
    kinds: list[str] | None = None,
    roles: list[tuple[str, str]] | None = None,
    runs: list[str] | None = None,
    tags: list[str] | None = None,
) -> tuple[list[FindingRecord], list[_Report]]: ...
def diagnose_series(
    series: list[
        tuple[
            str,
            str,
            npt.NDArray[np.int64],
            npt.NDArray[np.float64],
            npt.NDArray[np.int64],
            npt.NDArray[np.float64],
        ]
    ],
    kinds: list[str] | None = None,
    roles: list[tuple[str, str]] | None = None,
) -> list[FindingRecord]: ...
class BinnedHistogram:
    @property
    def edges(self) -> npt.NDArray[np.float64]: ...
    @property
    def counts(self) -> npt.NDArray[np.float64]: ...
    @property
    def stats(self) -> npt.NDArray[np.float64]: ...

def histograms(
    values: list[npt.NDArray[np.generic]],
    bins: int,
    encodings: list[str] | None = None,
) -> list[BinnedHistogram]: ...
