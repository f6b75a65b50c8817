"""What a watch captures and how often: one options object for `Run.watch`, `histoscope.watch`
and the trainer integrations, checked once when it is made.

Example:
    >>> from histoscope.write.options import WatchOptions
    >>> WatchOptions(log="all", every=10).bins
    64
    >>> WatchOptions(every=0)
    Traceback (most recent call last):
    ...
    ValueError: every must be an int >= 1, got 0
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from typing import Any, TypedDict, Union

from .. import _args, _core
from .._deprecated import warn_renamed
from .alerts import AlertPolicy, Alerts

LOG_CHOICES = ("gradients", "parameters", "all")

DEFAULT_BINS: int = _core.DEFAULT_BINS
"""The bins of a histogram when none are asked for: the core's default, for every entry point."""

DEFAULT_TIMEOUT_SECONDS = 300.0
"""How long a rank waits for the others at a logged step of a sharded watch: far longer
than a step between ranks that are in step, far shorter than torch's own collective timeouts."""

Filter = Union[str, "re.Pattern[str]", Callable[[str, Any], bool], None]
"""Which tensors a watch logs: a regular expression searched in the name, or
``(name, tensor) -> bool``; None logs every one."""


@dataclasses.dataclass(frozen=True)
class WatchOptions:
    """What a watch logs, as `Run.watch` takes it: arguments checked when made.

    ``log`` is ``"gradients"``, ``"parameters"`` or ``"all"``, every
    ``every`` steps, in ``bins`` equal bins; ``filter`` keeps the tensors
    whose name a regular expression matches (``re.search``) or for which
    ``filter(name, tensor)`` is true; ``activations`` adds each leaf
    module's output; ``step_fn`` is a function returning your own step; ``all_ranks`` logs on
    every rank of ``torch.distributed``, not rank 0 alone. ``spectral`` adds,
    every ``spectral_every`` steps (default: ``every``), the spectrum of each
    kept parameter of two dimensions or more (`histoscope.write.spectrum`).
    ``optimizer`` names the optimizer whose steps are captured (by default, any
    optimizer that steps a watched parameter; `histoscope.write.optimizer_steps`).

    Sharded parameters (DTensors, FSDP1) are logged whole by rank ``rank`` of
    ``torch.distributed``; every rank takes part, and waits at most
    ``timeout`` seconds for the others at a logged step.

    Example:
        >>> options = WatchOptions(log="parameters", filter=r"^fc")
        >>> options.keeps("fc.weight", None), options.keeps("conv.weight", None)
        (True, False)
    """

    log: str = "gradients"
    every: int = 100
    filter: Filter = None
    bins: int = DEFAULT_BINS
    activations: bool = False
    step_fn: Callable[[], int] | None = None
    all_ranks: bool = False
    rank: int = 0
    timeout: float = DEFAULT_TIMEOUT_SECONDS
    spectral: bool = False
    spectral_every: int | None = None
    alerts: Alerts | None = None
    stop_on: Sequence[str] | None = None
    optimizer: Any = None
    _keep: Callable[[str, Any], bool] | None = dataclasses.field(
        default=None, init=False, repr=False, compare=False
    )
    #: Deprecated: ``step_fn`` (a step is a number; this is a function).
    step: dataclasses.InitVar[Callable[[], int] | None] = None

    def __post_init__(self, step: Callable[[], int] | None) -> None:
        if step is not None:
            if self.step_fn is not None:
                raise TypeError("watch() got both 'step_fn' and its old name 'step'")
            warn_renamed("the keyword 'step' of watch()", "'step_fn'", stacklevel=4)
            object.__setattr__(self, "step_fn", step)
        _args.one_of(self.log, "log", LOG_CHOICES)
        _args.whole_number(self.every, "every", minimum=1)
        if not isinstance(_args.bins_or_edges(self.bins), int):
            raise ValueError("bins of a watch must be a number of equal bins, not edges")
        _args.flag(self.activations, "activations")
        _args.flag(self.all_ranks, "all_ranks")
        _args.whole_number(self.rank, "rank", minimum=0)
        object.__setattr__(self, "timeout", _args.seconds(self.timeout, "timeout"))
        _args.flag(self.spectral, "spectral")
        if self.spectral_every is not None:
            _args.whole_number(self.spectral_every, "spectral_every", minimum=1)
        if self.step_fn is not None and not callable(self.step_fn):
            raise TypeError(
                f"step_fn must be None or a function returning an int, got {self.step_fn!r}"
            )
        object.__setattr__(self, "_keep", _compile(self.filter))
        if self.optimizer is not None and not hasattr(self.optimizer, "param_groups"):
            raise TypeError(
                "optimizer must be a torch.optim.Optimizer (the one that steps the model), "
                f"got {type(self.optimizer).__name__}"
            )
        if self.alerts is not None or self.stop_on is not None:
            AlertPolicy("warn" if self.alerts is None else self.alerts, self.stop_on)

    def keeps(self, name: str, tensor: Any) -> bool:
        """Whether the filter keeps the tensor ``name``."""
        return self._keep is None or bool(self._keep(name, tensor))

    @property
    def spectral_interval(self) -> int:
        """Steps between two spectra: ``spectral_every``, else ``every``."""
        return self.every if self.spectral_every is None else self.spectral_every

    @property
    def parameters(self) -> bool:
        """Whether parameters are logged."""
        return self.log in ("parameters", "all")

    @property
    def gradients(self) -> bool:
        """Whether gradients are logged."""
        return self.log in ("gradients", "all")


class WatchArguments(TypedDict, total=False):
    """`WatchOptions`' fields as keyword arguments, for ``**options`` signatures."""

    log: str
    every: int
    filter: Filter
    bins: int
    activations: bool
    step_fn: Callable[[], int] | None
    step: Callable[[], int] | None  # deprecated: step_fn
    all_ranks: bool
    rank: int
    timeout: float
    spectral: bool
    spectral_every: int | None
    alerts: Alerts | None
    stop_on: Sequence[str] | None
    optimizer: Any


def _compile(filter: Filter) -> Callable[[str, Any], bool] | None:
    if filter is None:
        return None
    if isinstance(filter, (str, re.Pattern)):
        try:
            pattern = re.compile(filter)
        except re.error as error:
            raise ValueError(f"filter is not a regular expression: {error}") from None
        return lambda name, _tensor: pattern.search(name) is not None
    if callable(filter):
        return filter
    raise TypeError(
        "filter must be a regular expression or a function (name, tensor) -> bool, "
        f"got {type(filter).__name__}"
    )
