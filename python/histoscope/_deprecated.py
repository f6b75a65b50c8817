"""Old names that still work for one release, each with a `DeprecationWarning` naming the new.

Example:
    >>> import warnings
    >>> @renamed_keywords(paths="logdir")
    ... def count(logdir):
    ...     return len(logdir)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     count(paths=["a", "b"])
    2
    >>> print(caught[0].message)  # doctest: +NORMALIZE_WHITESPACE
    histoscope: the keyword 'paths' of count() is deprecated; use 'logdir'
    (it goes in the next release)
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

#: Said in each message, so that a user knows how long the old name lasts.
_UNTIL = "it goes in the next release"


def warn_renamed(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Warns that ``old`` is deprecated in favour of ``new``, pointing at the caller's caller."""
    warnings.warn(
        f"histoscope: {old} is deprecated; use {new} ({_UNTIL})",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def renamed_keywords(**renames: str) -> Callable[[F], F]:
    """Lets a function take each old keyword (``old="new"``) for the new one, with a warning.

    Positional use is unchanged; giving both the old and the new keyword is a `TypeError`.
    """

    def decorate(function: F) -> F:
        @functools.wraps(function)
        def renamed(*args: Any, **kwargs: Any) -> Any:
            for old, new in renames.items():
                if old not in kwargs:
                    continue
                if new in kwargs:
                    raise TypeError(
                        f"{function.__name__}() got both {new!r} and its old name {old!r}"
                    )
                warnings.warn(
                    f"histoscope: the keyword {old!r} of {function.__name__}() is deprecated; "
                    f"use {new!r} ({_UNTIL})",
                    DeprecationWarning,
                    stacklevel=2,
                )
                kwargs[new] = kwargs.pop(old)
            return function(*args, **kwargs)

        return renamed  # type: ignore[return-value]

    return decorate


def module_aliases(module: str, aliases: dict[str, tuple[str, Callable[[], Any]]]) -> Any:
    """A module ``__getattr__`` that gives each old name (old -> (new name, getter)) with a
    warning, for names that are no longer attributes of the module."""

    def __getattr__(name: str) -> Any:
        if name in aliases:
            new, get = aliases[name]
            warn_renamed(f"{module}.{name}", new)
            return get()
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__
