"""Type stubs for histoscope's native module (Rust, built by maturin)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Final, Literal, Protocol

import numpy as np
import numpy.typing as npt
from typing_extensions import Self, final

STAT_NAMES: list[str]
DEFAULT_BINS: int
CHART_BINS: int
CHART_STEPS: int
LIVE_STEPS: int
STEP_FIGURES: int
CARD_BINS: int
CARD_STEPS: int
KINDS: list[str]
WORST_SEVERITIES: dict[str, str]
ROLES: list[str]
SEVERITIES: list[str]
BASIS_POINTS: list[int]

_Dir = str | os.PathLike[str] | "FsspecLogdir"
_Logdirs = _Dir | Sequence[tuple[str, _Dir]]
_F64 = npt.NDArray[np.float64]
_I64 = npt.NDArray[np.int64]
_Encoding = Literal["float16", "bfloat16"]

@final
class Stats:
    count: Final[float]
    min: Final[float]
    max: Final[float]
    mean: Final[float]
    std: Final[float]
    nonfinite: Final[float]
    below: Final[float]
    above: Final[float]
    def __new__(
        cls,
        *,
        count: float,
        min: float,
        max: float,
        mean: float,
        std: float,
        nonfinite: float,
        below: float,
        above: float,
    ) -> Self: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __getnewargs_ex__(self) -> tuple[tuple[()], dict[str, float]]: ...

@final
class SeriesRecord:
    run: Final[str]
    tag: Final[str]
    steps: Final[_I64]
    wall_times: Final[_F64]
    buckets: Final[_F64]
    offsets: Final[_I64]
    stats: Final[_F64]
    def __new__(
        cls,
        run: str,
        tag: str,
        steps: _I64,
        wall_times: _F64,
        buckets: _F64,
        offsets: _I64,
        stats: _F64,
    ) -> Self: ...

@final
class ChartRecord:
    run: Final[str]
    tag: Final[str]
    steps: Final[_I64]
    wall_times: Final[_F64]
    edges: Final[_F64]
    counts: Final[_F64]
    nonfinite_buckets: Final[int]
    nonfinite_count: Final[float]

@final
class FileReport:
    path: Final[str]
    summary: Final[str]
    has_problems: Final[bool]
    incomplete_tail: Final[int | None]
    newest: Final[bool]
    tail_note: Final[str | None]
    shared_note: Final[str | None]

@final
class LogdirRecord:
    runs: Final[list[str]]
    series: Final[list[SeriesRecord]]
    reports: Final[list[FileReport]]
    superseded: Final[dict[str, int]]

@final
class ChartsRecord:
    runs: Final[list[str]]
    charts: Final[list[ChartRecord]]
    reports: Final[list[FileReport]]
    superseded: Final[dict[str, int]]

@final
class MergedRecord:
    series: Final[list[SeriesRecord]]
    reports: Final[list[FileReport]]
    superseded: Final[int]

@final
class RunFiles:
    name: Final[str]
    files: Final[list[str]]
    sizes: Final[list[int | None]]

def load_histograms(
    logdir: _Logdirs,
    runs: list[str] | None = None,
    tags: list[str] | None = None,
) -> LogdirRecord: ...
def read_charts(
    logdir: _Logdirs,
    bins: int,
    max_steps: int | None,
    runs: list[str] | None = None,
    tags: list[str] | None = None,
) -> ChartsRecord: ...
def thin_indices(n: int, max_steps: int | None) -> _I64: ...
def histogram(
    values: npt.NDArray[np.generic],
    bins: int | None = None,
    edges: _F64 | None = None,
    range: tuple[float, float] | None = None,
    weights: npt.NDArray[np.float64] | None = None,
    encoding: _Encoding | None = None,
) -> BinnedHistogram: ...

FETCH_CHUNK_BYTES: int
FETCH_PARALLEL_READS: int

def stop_fetching() -> None: ...

@final
class FsspecLogdir:
    def __new__(cls, fs: Any, root: str | os.PathLike[str], chunk_bytes: int = ...) -> Self: ...
    @property
    def root(self) -> str: ...

@final
class DecodedFile:
    def __len__(self) -> int: ...

@final
class EventStream:
    def __new__(cls, path: str, size: int | None = None, tags: list[str] | None = None) -> Self: ...
    def feed(self, chunk: bytes) -> None: ...
    def finish(self) -> DecodedFile: ...

class _Readable(Protocol):
    def read(self, size: int, /) -> bytes: ...

@final
class FilePieces:
    def __new__(
        cls, path: str | os.PathLike[str], budget: int, tags: list[str] | None = None
    ) -> Self: ...
    @staticmethod
    def fed(
        path: str | os.PathLike[str],
        size: int | None,
        source: _Readable,
        budget: int,
        tags: list[str] | None = None,
    ) -> FilePieces: ...
    def __iter__(self) -> Self: ...
    def __next__(self) -> DecodedFile: ...
    @property
    def finished(self) -> bool: ...

def decode_file(path: str | os.PathLike[str], tags: list[str] | None = None) -> DecodedFile: ...
def merge_files(run: str, files: list[DecodedFile]) -> MergedRecord: ...
def discover_runs(logdir: _Dir, prefix: str | None = None) -> list[RunFiles]: ...

@final
class RunPlanner:
    def __new__(cls) -> Self: ...
    def add(self, file: DecodedFile, continues: bool = False) -> None: ...
    def finish(self) -> RunPlan: ...

@final
class RunPlan:
    def __new__(cls, keep: list[list[bool]], superseded: int) -> Self: ...
    def __len__(self) -> int: ...
    @property
    def superseded(self) -> int: ...
    def keep(self, index: int) -> list[bool]: ...
    def share(self, run: str, index: int, file: DecodedFile) -> MergedRecord: ...
    def __reduce__(self) -> tuple[type[RunPlan], tuple[list[list[bool]], int]]: ...

@final
class TagIndexRecord:
    generation: Final[int]
    steps: Final[_I64]
    wall_times: Final[_F64]
    stats: Final[_F64]
    percentiles: Final[_F64]
    segments: Final[_I64]
    zero_shares: Final[_F64]

@final
class BucketCache:
    def __new__(cls, cap_bytes: int) -> Self: ...
    @property
    def cap_bytes(self) -> int: ...
    @property
    def used_bytes(self) -> int: ...
    def __len__(self) -> int: ...

@final
class RunLoader:
    def __new__(cls, name: str, cache: BucketCache) -> Self: ...
    @property
    def name(self) -> str: ...
    @property
    def version(self) -> int: ...
    @property
    def segment_count(self) -> int: ...
    @property
    def offsets(self) -> dict[str, int]: ...
    @property
    def tags(self) -> list[str]: ...
    def read(
        self, files: list[str | os.PathLike[str]], max_bytes: int, budget_seconds: float
    ) -> bool: ...
    def index(self, tag: str, start: int = 0, stop: int | None = None) -> TagIndexRecord | None: ...
    def buckets(self, tag: str, steps: list[int]) -> list[_F64 | None]: ...

@final
class Distance:
    key: Final[str]
    step_a: Final[int]
    step_b: Final[int]
    wasserstein: Final[float]
    scaled: Final[float]
    ks: Final[float]
    mean_shift: Final[float]
    std_change: Final[float]
    nonfinite_a: Final[float]
    nonfinite_b: Final[float]

@final
class Comparison:
    ranked: Final[list[Distance]]
    only_a: Final[list[str]]
    only_b: Final[list[str]]
    unmatched: Final[list[str]]

def compare_runs(
    a: RunLoader, b: RunLoader, step_a: int | None = None, step_b: int | None = None
) -> Comparison: ...
def compare_series(
    a: Sequence[SeriesRecord],
    b: Sequence[SeriesRecord],
    step_a: int | None = None,
    step_b: int | None = None,
) -> Comparison: ...

@final
class DistanceTrack:
    key: Final[str]
    scaled: Final[npt.NDArray[np.float64]]

def compare_tracks(a: RunLoader, b: RunLoader, columns: list[int]) -> list[DistanceTrack]: ...

@final
class CountedStep:
    step: Final[int]
    counts: Final[_F64]
    stats: Final[_F64]

@final
class CardRun:
    run: Final[str]
    steps: Final[_I64]
    counts: Final[_F64]
    current: Final[CountedStep | None]
    previous: Final[CountedStep | None]
    first: Final[int]
    last: Final[int]

@final
class CardFailure:
    run: Final[str]
    error: Final[str]

@final
class Card:
    edges: Final[_F64 | None]
    runs: Final[list[CardRun]]
    errors: Final[list[CardFailure]]

def read_card(
    runs: list[RunLoader],
    tag: str,
    *,
    step: int | None = None,
    from_step: int | None = None,
    to_step: int | None = None,
    max_steps: int | None = None,
    bins: int | None = None,
) -> Card: ...

@final
class SharedCharts:
    def __new__(cls, bins: int, max_steps: int | None) -> Self: ...
    def keep(self, series: SeriesRecord) -> _I64: ...
    def counts(self, series: SeriesRecord, steps: _I64) -> _F64 | None: ...
    def edges(self, tag: str) -> _F64: ...

@final
class AlertRecord:
    @property
    def step(self) -> int: ...
    @property
    def finding(self) -> FindingRecord: ...

@final
class EventFileWriter:
    def __new__(
        cls, dir: str, wall_time: float, host: str, diagnosed_as: str | None = None
    ) -> Self: ...
    def show_in(self, chart: LiveChart, run: str) -> None: ...
    def hide_from(self, chart: LiveChart) -> None: ...
    @property
    def path(self) -> os.PathLike[str]: ...
    def write_histogram(
        self,
        tag: str,
        step: int,
        wall_time: float,
        edges: npt.NDArray[np.float64],
        counts: npt.NDArray[np.float64],
        stats: Stats,
    ) -> None: ...
    def write_batch(
        self, tags: list[str], step: int, wall_time: float, batch: BinnedBatch
    ) -> None: ...
    def bin_and_write(
        self,
        tag: str,
        step: int,
        wall_time: float,
        values: npt.NDArray[np.generic],
        bins: int | None = None,
        edges: npt.NDArray[np.float64] | None = None,
        range: tuple[float, float] | None = None,
        weights: npt.NDArray[np.float64] | None = None,
        encoding: _Encoding | None = None,
    ) -> None: ...
    def write_scalar(self, tag: str, step: int, wall_time: float, value: float) -> None: ...
    def write_layout(
        self, pattern: str, section: str | None, hidden: bool, wall_time: float
    ) -> None: ...
    def write_optimizer(self, classes: list[str], wall_time: float) -> None: ...
    def flush(self) -> None: ...
    def close(self) -> None: ...
    def settle(self) -> None: ...
    def take_alerts(self) -> list[AlertRecord]: ...
    def live_findings(self) -> list[FindingRecord]: ...

MAX_BINS: int

def check_bin_count(count: int) -> None: ...
def check_edges(edges: npt.NDArray[np.float64]) -> None: ...
def check_range(lo: float, hi: float) -> None: ...
def default_range(min: float, max: float) -> tuple[float, float]: ...
def uniform_edges(lo: float, hi: float, count: int) -> npt.NDArray[np.float64]: ...

@final
class LayoutRecord:
    @property
    def pattern(self) -> str: ...
    @property
    def section(self) -> str | None: ...
    @property
    def hidden(self) -> bool: ...

def read_layout(path: str | os.PathLike[str], start: int = 0) -> tuple[int, list[LayoutRecord]]: ...

@final
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

READ_BUDGET_BYTES: int

@final
class RunRecord:
    run: Final[str]
    files: Final[int]
    bytes: Final[int]
    reports: Final[list[FileReport]]
    superseded: Final[int]
    series: Final[list[SeriesRecord]]
    findings: Final[list[FindingRecord]]
    layout: Final[list[LayoutRecord]]

@final
class RunStream:
    def __new__(
        cls,
        logdir: _Logdirs,
        *,
        runs: list[str] | None = None,
        tags: list[str] | None = None,
        budget_bytes: int | None = ...,
        diagnose: bool = False,
        kinds: list[str] | None = None,
        roles: list[tuple[str, str]] | None = None,
        series: bool = True,
    ) -> RunStream: ...
    @property
    def runs(self) -> list[str]: ...
    @property
    def files(self) -> int: ...
    @property
    def bytes(self) -> int: ...
    def __iter__(self) -> Self: ...
    def __next__(self) -> RunRecord: ...

def zero_shares(series: SeriesRecord) -> _F64: ...
def diagnose_series(
    series: list[SeriesRecord],
    kinds: list[str] | None = None,
    roles: list[tuple[str, str]] | None = None,
) -> list[FindingRecord]: ...

@final
class BinnedHistogram:
    @property
    def edges(self) -> npt.NDArray[np.float64]: ...
    @property
    def counts(self) -> npt.NDArray[np.float64]: ...
    @property
    def stats(self) -> Stats: ...

def histograms(
    values: list[npt.NDArray[np.generic]],
    bins: int,
    encodings: list[_Encoding | None] | None = None,
) -> list[BinnedHistogram]: ...

@final
class BinnedBatch:
    @staticmethod
    def of(
        edges: Sequence[npt.NDArray[np.float64]],
        counts: Sequence[npt.NDArray[np.float64]],
        stats: Sequence[Stats],
    ) -> BinnedBatch: ...
    def joined(self, other: BinnedBatch) -> BinnedBatch: ...
    def __len__(self) -> int: ...
    def histogram(self, index: int) -> BinnedHistogram: ...

def bin_batch(
    values: list[npt.NDArray[np.generic]],
    bins: int,
    encodings: list[_Encoding | None] | None = None,
) -> BinnedBatch: ...

SPECTRUM_MIN_EIGENVALUES: Final[int]
ALPHA_BAND: Final[tuple[float, float]]
SPECTRUM_PREFIX: Final[str]

@final
class PowerLaw:
    alpha: Final[float]
    xmin: Final[float]
    ks: Final[float]
    tail: Final[int]
    sigma: Final[float]

@final
class Spectrum:
    @property
    def eigenvalues(self) -> npt.NDArray[np.float64]: ...
    lambda_max: Final[float]
    stable_rank: Final[float]
    power_law: Final[PowerLaw | None]
    histogram: Final[BinnedHistogram]

def spectrum(singular_values: npt.NDArray[np.float64], n: int, bins: int) -> Spectrum: ...
def spectra(
    singular_values: list[npt.NDArray[np.float64]], dims: list[int], bins: int
) -> list[Spectrum | str]: ...

@final
class ScalarPoint:
    tag: Final[str]
    step: Final[int]
    value: Final[float]

def read_scalars(
    path: str | os.PathLike[str], start: int = 0, prefix: str = ""
) -> tuple[int, list[ScalarPoint]]: ...

@final
class SeriesChangeRecord:
    @property
    def tag(self) -> str: ...
    @property
    def run(self) -> str: ...
    @property
    def edges(self) -> bool: ...
    @property
    def full(self) -> bool: ...
    @property
    def masked(self) -> bool: ...
    @property
    def keep(self) -> int: ...
    @property
    def rows(self) -> int: ...

@final
class LiveUpdateRecord:
    @property
    def changes(self) -> list[SeriesChangeRecord]: ...
    @property
    def edges(self) -> npt.NDArray[np.float64]: ...
    @property
    def steps(self) -> npt.NDArray[np.float64]: ...
    @property
    def counts(self) -> npt.NDArray[np.float32]: ...
    @property
    def figures(self) -> npt.NDArray[np.float32]: ...
    @property
    def mask(self) -> npt.NDArray[np.uint8]: ...
    @property
    def bytes(self) -> int: ...

@final
class LiveChart:
    def __new__(cls, bins: int = ..., keep: int = ...) -> Self: ...
    def add(
        self, tag: str, run: str, step: int, buckets: npt.NDArray[np.float64], stats: Stats
    ) -> None: ...
    def drop_from(self, tag: str, run: str, step: int = ...) -> None: ...
    def take_update(self, budget_bytes: int) -> LiveUpdateRecord: ...
    def whole(self) -> LiveUpdateRecord: ...
    @property
    def pending(self) -> bool: ...
    @property
    def bins(self) -> int: ...
