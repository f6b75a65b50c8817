"""Diagnosis: what went wrong in a training, found from its histograms and scalars (the rules
run in Rust).

`diagnose` reads a log directory (or takes histograms already loaded) and
returns one `Finding` per problem: vanishing or exploding gradients, NaN or
infinite values, dead ReLUs, saturated tanh or sigmoid units, and weights or
activations that collapsed to a point or decayed far below their start. A log
directory's scalars are evidence too: a NaN loss, a loss that diverged, a
series that stops while the run goes on, a loss that came back after a spike
(an ``info``, as gradient clipping's healed spikes are) or never improved; and
so is the optimizer `watch` noted. ``docs/diagnosis.md`` lists each
rule, its threshold and why, and how they do on a zoo of trainings they were
not tuned on.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, TextIO, Union

from .. import _args, _core
from .._deprecated import warn_renamed
from ..progress import each_counted
from ..read.reader import HistogramSeries, _warn_reports
from ..read.storage import core_logdirs, resolve_logdirs

#: The kinds of finding, in the order the rules run.
KINDS: tuple[str, ...] = tuple(_core.KINDS)
#: The roles a key can have; `diagnose`'s ``roles`` maps keys to these.
ROLES: tuple[str, ...] = tuple(_core.ROLES)
#: Severities from least to most severe.
SEVERITIES: tuple[str, ...] = tuple(_core.SEVERITIES)

PathLike = Union[str, "os.PathLike[str]"]
Loaded = Mapping[str, Mapping[str, HistogramSeries]]
Source = Union[PathLike, Sequence[PathLike], Loaded, HistogramSeries, Iterable[HistogramSeries]]


@dataclass(frozen=True)
class Finding:
    """One problem found in one series (a key of a run), from ``first_step`` to ``last_step``:
    histoscope's one record of a problem, whether `diagnose` read it from the files or a
    run's live diagnosis alerted it while training.

    ``severity`` is ``"info"`` (worth knowing, harmless), ``"warning"`` or
    ``"error"`` (training is broken); ``evidence`` holds the numbers that
    triggered the rule; ``message`` says what was seen and what to do. ``step``
    is set on an alert only (see `histoscope.init`'s ``alerts``): the last step
    written when the live rules first gave it, the data up to which `diagnose`
    would have judged so; None for a finding read from the files.

    Example:
        >>> import tempfile, numpy as np, histoscope
        >>> with histoscope.init("demo", logdir=tempfile.mkdtemp()) as run:
        ...     for step in range(10):
        ...         acts = np.maximum(np.random.default_rng(step).normal(size=1000) - 6, 0)
        ...         run.add_histogram("activations/relu", acts, step=step)
        >>> (finding,) = histoscope.diagnose(run.path)
        >>> finding.kind, finding.severity, finding.first_step, finding.last_step
        ('dead', 'warning', 0, 9)
    """

    kind: str
    run: str
    key: str
    first_step: int
    last_step: int
    severity: str
    evidence: dict[str, float] = field(hash=False)
    message: str
    role: str = "other"
    step: int | None = None

    @classmethod
    def _of(cls, record: _core.FindingRecord, step: int | None = None) -> Finding:
        values = {f.name: getattr(record, f.name) for f in fields(cls) if f.name != "step"}
        return cls(**{**values, "evidence": dict(record.evidence)}, step=step)

    @classmethod
    def _alerted(cls, record: _core.AlertRecord) -> Finding:
        """An alert of a run's live diagnosis: its finding, at the step it was found."""
        return cls._of(record.finding, step=record.step)

    def describe(self) -> str:
        """One line: what was found where (at which step, for an alert), the evidence and
        what to do; an alert's warning and `TrainingProblem` say this."""
        evidence = ", ".join(f"{name}={value:.3g}" for name, value in self.evidence.items())
        at = "" if self.step is None else f"histoscope alert at step {self.step}: "
        return (
            f"{at}{self.kind} ({self.severity}) in {self.run}/{self.key} "
            f"from step {self.first_step} [{evidence}]: {self.message}"
        )

    @property
    def finding(self) -> Finding:
        """Deprecated: an alert was a step and a finding; it is the `Finding` itself now."""
        warn_renamed("Alert.finding", "the alert itself, a Finding")
        return self

    @property
    def level(self) -> int:
        """The severity as a number: 0 info, 1 warning, 2 error."""
        return SEVERITIES.index(self.severity)

    def to_dict(self) -> dict[str, Any]:
        """The finding as plain JSON-ready values (a non-finite number of evidence becomes None).

        Example:
            >>> f = Finding("dead", "train", "activations/relu", 0, 9, "warning",
            ...             {"zero_share": 0.99}, "activations/relu: 99% ...", "activation")
            >>> f.to_dict()["evidence"]
            {'zero_share': 0.99}
        """
        return {
            "kind": self.kind,
            "run": self.run,
            "key": self.key,
            "role": self.role,
            "first_step": self.first_step,
            "last_step": self.last_step,
            "severity": self.severity,
            "evidence": {k: (v if math.isfinite(v) else None) for k, v in self.evidence.items()},
            "message": self.message,
            **({} if self.step is None else {"step": self.step}),
        }


def diagnose(
    source: Source,
    *,
    kinds: Iterable[str] | None = None,
    roles: Mapping[str, str] | None = None,
    progress: TextIO | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> list[Finding]:
    """Finds what went wrong in the histograms of ``source``, sorted by run, key and kind.

    ``source`` is anything `load_histograms` accepts (a log directory, several,
    a glob pattern or an fsspec URL) or what it returned, a `HistogramSeries`
    or a list of them. Log directories are read with their scalars and the
    optimizer ``watch`` noted, in the same pass; histograms already loaded are
    judged without them. ``kinds`` keeps only those kinds
    (see `KINDS`). A key's role (gradient, parameter, activation or loss)
    decides which rules apply; it is read from the key's words (``grad``,
    ``gradients``, ``param``, ``weights``, ``activations``, ``act``,
    ``outputs``, ``loss``, and the ``parameters/``, ``gradients/`` and
    ``activations/`` keys of ``run.watch``); ``roles`` maps keys, histogram or
    scalar, to a role of `ROLES` where the name does not say it.

    Log directories are read a few runs at a time, each step reduced to the
    profile the rules read as it is decoded and each run to its findings
    before the next is read, so that memory follows the largest run, not the
    directory. Remote ones (``storage_options`` as for `load_histograms`) are
    fetched so too, up to `histoscope._core.READ_BUDGET_BYTES` of files at
    once (or one larger run), and judged with their scalars as local ones are.
    On ``progress``, if it is a terminal, a one-line progress is drawn as runs
    are read.

    Example:
        >>> import histoscope
        >>> histoscope.diagnose("examples/logdir", kinds=["dead", "nonfinite"])
        []
    """
    kind_list = _checked_kinds(kinds)
    role_pairs = _checked_roles(roles)
    series = _loaded_series(source)
    if series is not None:
        records = _core.diagnose_series([s.record for s in series], kind_list, role_pairs)
        return [Finding._of(r) for r in records]
    logdirs, several = resolve_logdirs(source, storage_options)  # type: ignore[arg-type]
    stream = _core.RunStream(
        core_logdirs(logdirs, several),
        budget_bytes=_core.READ_BUDGET_BYTES,
        diagnose=True,
        kinds=kind_list,
        roles=role_pairs,
        series=False,
    )
    diagnosis = diagnose_runs(stream, progress)
    _warn_reports(diagnosis.reports)
    return diagnosis.findings


@dataclass
class Diagnosis:
    """What a stream of runs read with ``diagnose=True`` found, and what its files reported."""

    findings: list[Finding] = field(default_factory=list)
    reports: list[_core.FileReport] = field(default_factory=list)

    def add(self, run: _core.RunRecord) -> None:
        """Adds a run's findings and reports; runs come in name order, each's findings
        sorted, so the whole stays sorted by run, key and kind as the core sorts them."""
        self.findings += [Finding._of(r) for r in run.findings]
        self.reports += run.reports


def diagnose_runs(stream: _core.RunStream, progress: TextIO | None = None) -> Diagnosis:
    """The findings of every run of ``stream`` (read with ``diagnose=True``), drawing a
    one-line progress on ``progress`` if it is a terminal.

    Example:
        >>> runs = _core.RunStream("examples/logdir", diagnose=True, series=False)
        >>> diagnose_runs(runs).findings
        []
    """
    diagnosis = Diagnosis()
    for run in each_counted(stream, stream, progress, "checking"):
        diagnosis.add(run)
    return diagnosis


def _checked_kinds(kinds: Iterable[str] | None) -> list[str] | None:
    names = _args.names(kinds, "kinds")
    for name in names or []:
        if name not in KINDS:
            raise ValueError(f"kinds: unknown kind {name!r}, expected some of {', '.join(KINDS)}")
    return names


def _checked_roles(roles: Mapping[str, str] | None) -> list[tuple[str, str]] | None:
    if roles is None:
        return None
    if not isinstance(roles, Mapping):
        raise TypeError(f"roles must map keys to roles, got {type(roles).__name__}")
    for key, role in roles.items():
        if not isinstance(key, str) or role not in ROLES:
            raise ValueError(f"roles[{key!r}] must be one of {', '.join(ROLES)}, got {role!r}")
    return list(roles.items())


def _loaded_series(source: object) -> list[HistogramSeries] | None:
    """The series of ``source`` if it holds loaded histograms, None if it names log directories."""
    if isinstance(source, HistogramSeries):
        return [source]
    if isinstance(source, Mapping):
        out: list[HistogramSeries] = []
        for tag, by_run in source.items():
            if not isinstance(by_run, Mapping):
                raise TypeError(
                    f"source[{tag!r}] must map runs to HistogramSeries, as load_histograms "
                    f"returns, got {type(by_run).__name__}"
                )
            out.extend(_series(s) for s in by_run.values())
        return out
    if isinstance(source, (str, os.PathLike)) or not isinstance(source, Iterable):
        return None
    items = list(source)
    if items and all(isinstance(s, HistogramSeries) for s in items):
        return items
    return None


def _series(value: object) -> HistogramSeries:
    if not isinstance(value, HistogramSeries):
        raise TypeError(f"expected a HistogramSeries, got {type(value).__name__}")
    return value
