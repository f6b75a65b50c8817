"""Every warning and error histoscope raises of its own, in one place.

Each warning is a `HistoscopeWarning` and each error a `HistoscopeError`, so one
filter or one ``except`` catches them all. Bad arguments raise the exception a
Python user expects (`ValueError`, `TypeError`, `FileNotFoundError`); those are
not wrapped.

Example:
    >>> import warnings
    >>> from histoscope.errors import DamagedFileWarning, HistoscopeWarning
    >>> issubclass(DamagedFileWarning, HistoscopeWarning)
    True
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warnings.warn("a record was cut short", DamagedFileWarning)
    >>> caught[0].category.__name__
    'DamagedFileWarning'
"""

from __future__ import annotations

from typing import Any

from ._deprecated import renamed_keywords, warn_renamed

__all__ = [
    "DamagedFileWarning",
    "DroppedHistogramWarning",
    "HistoscopeAlert",
    "HistoscopeError",
    "HistoscopeWarning",
    "NotFoundWarning",
    "NotWholeNumberError",
    "RequestError",
    "RequestNotFoundError",
    "ShardedWarning",
    "SharedTagWarning",
    "TrainingProblem",
    "UnloggedWarning",
    "UnsupportedTrainingError",
    "UnwrittenWarning",
]


class HistoscopeWarning(UserWarning):
    """Something asked for was not there, or some data could not be used."""


class DamagedFileWarning(HistoscopeWarning):
    """Part of an events file was damaged and skipped; the message gives the byte offsets."""


class SharedTagWarning(HistoscopeWarning):
    """One tag held several values in each step of a file (Keras 3 before keras#22317 names
    every layer's weights by their short name): each position was kept as its own series,
    ``tag``, ``tag (2)``, ..., and the message names them."""


class NotFoundWarning(HistoscopeWarning):
    """A run or histogram tag that was asked for is not in the log directory."""


class UnloggedWarning(HistoscopeWarning):
    """A tensor a watch captured could not be binned: only its histogram is lost, said once."""


class DroppedHistogramWarning(HistoscopeWarning):
    """``on_full="drop"``: histograms were dropped while the writer was behind."""


class UnwrittenWarning(HistoscopeWarning):
    """`Run.finish` ran out of time, or the writer stopped, before everything was written."""


class _CarriesFinding:
    """A warning or an exception about one problem: ``finding`` holds its record, the
    `histoscope.Finding` (``alert``, its name before 1.0, warns for one release)."""

    finding: Any

    @property
    def alert(self) -> Any:
        warn_renamed(f"{type(self).__name__}.alert", f"{type(self).__name__}.finding")
        return self.finding


class HistoscopeAlert(_CarriesFinding, HistoscopeWarning):
    """A run's live diagnosis found a problem while it trains (``init(alerts="warn")``): the
    message names the key, the kind, the step and the evidence; ``finding`` holds them all."""

    @renamed_keywords(alert="finding")
    def __init__(self, message: str, finding: Any = None) -> None:
        super().__init__(message)
        self.finding = finding


class HistoscopeError(Exception):
    """An error of histoscope's own (argument errors are Python's own classes)."""


class TrainingProblem(_CarriesFinding, HistoscopeError, RuntimeError):
    """A finding of a kind the run was told to stop on (``alerts="raise"``, ``stop_on=``),
    raised in the training thread at its next call into the run; ``finding`` holds it."""

    @renamed_keywords(alert="finding")
    def __init__(self, message: str, finding: Any = None) -> None:
        super().__init__(message)
        self.finding = finding


class NotWholeNumberError(HistoscopeError, TypeError, ValueError):
    """A number with a fraction where a whole number is needed: a TypeError and a ValueError."""


class UnsupportedTrainingError(HistoscopeError, RuntimeError):
    """A training a trainer callback cannot log, such as Keras's NNX mode with
    ``jit_compile``: raised as training starts, before a step runs or a run is made."""


class RequestError(HistoscopeError):
    """A viewer request whose query is missing or malformed: HTTP 400."""


class RequestNotFoundError(RequestError):
    """A viewer request for a run or tag that does not exist: HTTP 404."""


class ShardedWarning(HistoscopeWarning):
    """A watch could not log a sharded parameter whole: its sharding scheme is not supported,
    or the ranks' collectives failed or timed out. Named once; training goes on."""
