"""Alerts while a run trains: each new finding of its live diagnosis, warned, raised, or
handed to a callable, in the training thread.

The core diagnoses every value as it is written (`_core.EventFileWriter` with
``diagnosed_as``), with the rules `histoscope check` applies to the files, and keeps
each (key, kind) it found with the severity it was found at. A finding that is new, or
more severe than before, is an alert: that `Finding`, with the ``step`` it was found at.
The writer thread only collects them; they are delivered at the training thread's next
call into the run (`Run.log`, `Run.add_histogram`, `Run.flush`, the next forward pass of
a watched model, `Run.finish`), so that a handler runs where it may save a checkpoint
and a `TrainingProblem` stops the loop that trains.
"""

from __future__ import annotations

import collections
import warnings
from collections.abc import Callable, Iterable
from typing import Any, Union

from .. import _core
from ..diagnose import KINDS, Finding
from ..errors import HistoscopeAlert, TrainingProblem

#: What ``alerts=`` takes besides a callable.
ALERT_MODES = ("warn", "off", "raise")

#: ``alerts=``: one of `ALERT_MODES`, or a callable that receives each alert (a `Finding`).
Alerts = Union[str, Callable[[Finding], Any]]


class AlertPolicy:
    """What a run does with its alerts: ``alerts`` and ``stop_on`` as `histoscope.init` takes them.

    Only findings of severity ``warning`` or ``error`` alert; ``info`` ones are
    in `Run.findings`. Under ``"raise"``, an alert that `stops_training` raises
    `TrainingProblem` once; the others are warned.

    Example:
        >>> AlertPolicy("raise", stop_on=["nonfinite"]).stops_on
        ('nonfinite',)
        >>> AlertPolicy("shout")
        Traceback (most recent call last):
        ...
        ValueError: alerts must be 'warn', 'off', 'raise' or a callable, got 'shout'
    """

    def __init__(self, alerts: Alerts = "warn", stop_on: Iterable[str] | None = None) -> None:
        if not callable(alerts) and alerts not in ALERT_MODES:
            raise ValueError(f"alerts must be 'warn', 'off', 'raise' or a callable, got {alerts!r}")
        self.alerts = alerts
        self.stops_on = _checked_kinds(stop_on)
        if self.stops_on is not None and alerts != "raise":
            raise ValueError(
                f"stop_on={list(self.stops_on)} needs alerts='raise' (got alerts={alerts!r}); "
                "a callable decides for itself"
            )
        self.raised = False

    @property
    def live(self) -> bool:
        """Whether the run is diagnosed as it trains at all."""
        return self.alerts != "off"

    def stops(self, alert: Finding) -> bool:
        """Whether ``alert`` stops the training under ``"raise"``."""
        return self.alerts == "raise" and stops_training(alert, self.stops_on)

    def deliver(self, alerts: list[Finding], *, can_raise: bool) -> list[Finding]:
        """Warns, raises or hands on each of ``alerts``; returns those that would stop the
        training but could not be raised here (``can_raise=False``), to deliver later."""
        held: list[Finding] = []
        problem: Finding | None = None
        for alert in alerts:
            if alert.level < 1:
                continue
            if callable(self.alerts):
                self.alerts(alert)
            elif self.stops(alert) and not self.raised:
                if can_raise:
                    problem = problem or alert
                else:
                    held.append(alert)
            elif self.alerts != "off":
                warnings.warn(HistoscopeAlert(alert.describe(), alert), stacklevel=4)
        if problem is not None:
            self.raised = True
            raise TrainingProblem(problem.describe(), problem)
        return held

    def finish(self, alerts: list[Finding]) -> None:
        """Delivers the alerts found at the end: nothing is left to stop, so all are warned."""
        for alert in alerts:
            if alert.level < 1:
                continue
            if callable(self.alerts):
                self.alerts(alert)
            elif self.alerts != "off":
                warnings.warn(HistoscopeAlert(alert.describe(), alert), stacklevel=4)


def stops_training(alert: Finding, kinds: Iterable[str] | None) -> bool:
    """Whether ``alert`` stops a training told to stop on ``kinds``: a finding of one of
    them at the most severe it can be (`_core.WORST_SEVERITIES`: an error for nonfinite,
    exploding and collapsed, a warning for vanishing, dead and saturated), so that a
    spike on the last step written, a warning until the next step or the loss says
    more, stops nothing. Without ``kinds``: any finding of severity error.

    Example:
        >>> from histoscope.diagnose import Finding
        >>> spike = Finding("exploding", "r", "gradients/w", 5, 5, "warning", {}, "...", step=5)
        >>> stops_training(spike, ["exploding"])
        False
    """
    if kinds is None:
        return alert.severity == "error"
    return alert.kind in kinds and alert.severity == _core.WORST_SEVERITIES[alert.kind]


def _checked_kinds(kinds: Iterable[str] | None) -> tuple[str, ...] | None:
    if kinds is None:
        return None
    if isinstance(kinds, str):
        kinds = [kinds]
    checked = tuple(kinds)
    unknown = [k for k in checked if k not in KINDS]
    if unknown:
        raise ValueError(f"stop_on: unknown kinds {unknown}; expected some of {list(KINDS)}")
    if "spectral" in checked:
        raise ValueError(
            "stop_on: spectral findings are context (info: α outside WeightWatcher's "
            "published band), never a reason to stop training"
        )
    return checked


class RunAlerts:
    """A run's alerts on their way from the writer thread to the training thread.

    ``found`` is the writer's queue of the core's alert records; alerts that
    should stop the training but were found where nothing may be raised (a
    watch logs inside the backward pass) wait in ``held`` for the next call
    that may raise.
    """

    def __init__(
        self, policy: AlertPolicy, found: collections.deque[_core.AlertRecord], diagnosed: bool
    ) -> None:
        self.policy = policy
        self.found = found
        self.diagnosed = diagnosed
        self.held: list[Finding] = []
        #: False where a watch agreeing with other ranks raises instead.
        self.raise_here = True
        #: Also handed each alert before the policy acts (a trainer callback's ``stop_on``).
        self.listeners: list[Callable[[Finding], Any]] = []

    def replace(self, alerts: Alerts | None, stop_on: Iterable[str] | None) -> None:
        """Takes the policy a watch was given (``alerts=``, ``stop_on=``) from now on."""
        alerts = self.policy.alerts if alerts is None else alerts
        if alerts != "off" and not self.diagnosed:
            raise ValueError(
                "this run was started with alerts='off', so it is not diagnosed; "
                "give alerts= to histoscope.init instead"
            )
        self.policy = AlertPolicy(alerts, stop_on)

    def deliver(self, *, can_raise: bool = True) -> None:
        """Hands on what was found since the last call (see `AlertPolicy.deliver`)."""
        can_raise = can_raise and self.raise_here
        fresh = self._drained()
        if not fresh and not (can_raise and self.held):
            return
        alerts, self.held = self.held + fresh, []
        self.held = self.policy.deliver(alerts, can_raise=can_raise)

    def finish(self) -> None:
        """Hands on the rest once the run's last step is written and judged."""
        alerts, self.held = self.held + self._drained(), []
        self.policy.finish(alerts)

    def _drained(self) -> list[Finding]:
        alerts = []
        while self.found:
            alert = Finding._alerted(self.found.popleft())
            if alert.level >= 1:
                for listener in self.listeners:
                    listener(alert)
            alerts.append(alert)
        return alerts
