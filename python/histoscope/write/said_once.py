"""Warnings said once each: a training meets the same problem at every step, and its
user is told once."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from ..errors import HistoscopeWarning


class SaidOnce:
    """Which warnings were said, by key.

    Example:
        >>> import warnings
        >>> said = SaidOnce()
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     for step in range(3):
        ...         said.warn("fc: NaN", f"step {step}: fc: NaN", UserWarning, stacklevel=1)
        >>> [str(w.message) for w in caught]
        ['step 0: fc: NaN']
    """

    def __init__(self) -> None:
        self._said: set[str] = set()

    def warn(self, key: str, message: str, category: type[Warning], stacklevel: int) -> None:
        """Warns ``message`` unless a warning of ``key`` was said before; ``stacklevel``
        counts from the caller, as `warnings.warn`'s does."""
        if key in self._said:
            return
        self._said.add(key)
        warnings.warn(message, category, stacklevel=stacklevel + 1)

    def guard(self, source: str, what: str, action: Callable[[], Any]) -> None:
        """Runs ``action``; an error is warned once for each message (as a
        `HistoscopeWarning` naming ``source`` and ``what`` it was doing) and the caller
        goes on: a thread that follows a run keeps following it.

        Example:
            >>> import warnings
            >>> said = SaidOnce()
            >>> with warnings.catch_warnings(record=True) as caught:
            ...     warnings.simplefilter("always")
            ...     for _ in range(2):
            ...         said.guard("a view", "reading", lambda: 1 / 0)
            >>> [str(w.message) for w in caught]
            ['a view: reading: ZeroDivisionError: division by zero']
        """
        try:
            action()
        except Exception as error:  # noqa: BLE001 - one warning, the caller goes on
            said = f"{what}: {type(error).__name__}: {error}"
            self.warn(said, f"{source}: {said}", HistoscopeWarning, stacklevel=2)
