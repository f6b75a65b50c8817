"""The optimizer that trains a watched model, noted in its run for ``histoscope check``.

Under SGD a gradient 10⁴ times smaller than the other layers' moves its
parameter 10⁴ times less; under Adam and its kin it moves it as far, so
diagnosis judges small gradients by the run's optimizer (``docs/diagnosis.md``).
A watch learns which one from the first optimizer step that updates one of the
model's parameters, through PyTorch's hook on every optimizer's step, and
notes it once; ``Run.note_optimizer`` notes one by hand. The note holds the
optimizer's class names; which of them adapt is the core's rule.

Example:
    >>> import torch
    >>> optimizer_classes(torch.optim.SGD(torch.nn.Linear(2, 1).parameters(), lr=0.1))
    ['torch.optim.sgd.SGD']
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable
from typing import Any

from ..errors import UnloggedWarning


def optimizer_classes(optimizer: Any) -> list[str]:
    """``optimizer``'s class and those it derives from, most derived first, as
    ``module.QualifiedName``, up to PyTorch's ``Optimizer`` (left out).

    Example:
        >>> import torch
        >>> class Mine(torch.optim.SGD): pass
        >>> optimizer_classes(Mine(torch.nn.Linear(2, 1).parameters(), lr=0.1))[1]
        'torch.optim.sgd.SGD'
    """
    import torch

    return [
        f"{cls.__module__}.{cls.__qualname__}"
        for cls in type(optimizer).__mro__
        if cls not in (torch.optim.Optimizer, object)
    ]


class OptimizerWatch:
    """Waits for the first step of an optimizer that updates one of ``parameters``,
    then calls ``note(optimizer)`` once and stops waiting; `remove` takes it off.
    A ``note`` that raises (a finished run) is an `UnloggedWarning`, not an error.

    Example:
        >>> import torch
        >>> model = torch.nn.Linear(2, 1)
        >>> seen = []
        >>> watch = OptimizerWatch(model.parameters(), seen.append)
        >>> optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        >>> model(torch.ones(1, 2)).sum().backward(); optimizer.step()
        >>> seen == [optimizer]
        True
    """

    def __init__(self, parameters: Iterable[Any], note: Callable[[Any], None]) -> None:
        from torch.optim.optimizer import register_optimizer_step_post_hook

        self._ids = {id(p) for p in parameters}
        self._note = note
        self._noted = False
        self._handle: Any = register_optimizer_step_post_hook(self._stepped)

    def _stepped(self, optimizer: Any, _args: Any, _kwargs: Any) -> None:
        if self._noted:
            return
        groups = getattr(optimizer, "param_groups", [])
        if not any(id(p) in self._ids for group in groups for p in group["params"]):
            return
        # The hook stays until `remove`, a no-op: torch is iterating over the hooks now,
        # and taking one out would break that loop for the next (another watch's).
        self._noted = True
        try:
            self._note(optimizer)
        except Exception as error:  # noqa: BLE001 - said once, training goes on
            warnings.warn(
                f"histoscope: the optimizer {type(optimizer).__name__} was not noted: {error}",
                UnloggedWarning,
                stacklevel=2,
            )

    def remove(self) -> None:
        """Stops waiting; safe to call twice."""
        if self._handle is not None:
            self._handle.remove()
            self._handle = None
