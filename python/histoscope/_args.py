"""Every argument rule of the public API, in one place: bins, ranges, steps, names, paths, tensors.

Each check returns the value in the form the rest of the package uses, or
raises the exception a Python user expects, naming the argument and what was
expected. Limits are the Rust core's (`_core.MAX_BINS`, `_core.check_bin_count`,
`_core.check_edges`, `_core.check_range`); nothing here restates them.

Example:
    >>> from histoscope import _args
    >>> _args.whole_number(3, "every", minimum=1), _args.bin_count(30)
    (3, 30)
    >>> _args.whole_number(0, "every", minimum=1)
    Traceback (most recent call last):
    ...
    ValueError: every must be an int >= 1, got 0
"""

from __future__ import annotations

import math
import numbers
import operator
import os
import reprlib
import time
from collections.abc import Collection, Iterable
from typing import Any, TypeVar, Union

import numpy as np

from . import _core
from .errors import NotWholeNumberError

Bins = Union[int, np.ndarray]
"""What `bins_or_edges` returns: a number of equal bins, or read-only float64 edges."""

_T = TypeVar("_T")


def whole_number(value: object, name: str, minimum: int) -> int:
    """``value`` as an int of at least ``minimum``; a bool is refused.

    A float such as 2.5 is both the wrong type and the wrong value: it raises
    `NotWholeNumberError`, caught as TypeError or ValueError alike.

    Example:
        >>> whole_number(2.5, "step", minimum=0)
        Traceback (most recent call last):
        ...
        histoscope.errors.NotWholeNumberError: step must be an int >= 0, got 2.5
    """
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an int >= {minimum}, got a bool")
    try:
        number = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        if isinstance(value, numbers.Real):
            raise NotWholeNumberError(
                f"{name} must be an int >= {minimum}, got {value!r}"
            ) from None
        raise TypeError(f"{name} must be an int >= {minimum}, got {type(value).__name__}") from None
    if number < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {number}")
    return number


#: The viewer's default cap on decoded histograms kept, in megabytes (``--cache-mb``).
DEFAULT_CACHE_MB = 512


def cache_megabytes(text: str) -> int:
    """A cache's cap in megabytes (2**20 bytes), as written on a command line: a whole
    number of at least 1.

    Example:
        >>> cache_megabytes("512")
        512
        >>> cache_megabytes("0")
        Traceback (most recent call last):
        ...
        ValueError: --cache-mb must be a whole number of megabytes, at least 1, got '0'
    """
    try:
        megabytes = int(text)
    except ValueError:
        megabytes = 0
    if megabytes < 1:
        raise ValueError(
            f"--cache-mb must be a whole number of megabytes, at least 1, got {text!r}"
        )
    return megabytes


#: The fewest characters of a viewer's token (``--token``): the length of 16 random bytes
#: (128 bits) written in base64url, as ``secrets.token_urlsafe(16)`` writes them.
MIN_TOKEN_LENGTH = 22

#: The characters a token may hold: those a URL and a cookie carry as they are.
TOKEN_CHARACTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def token(text: str, name: str = "--token") -> str:
    """A viewer's secret as its user gave it (``name`` says where): at least
    `MIN_TOKEN_LENGTH` characters of `TOKEN_CHARACTERS`. The error never repeats the
    text, which may be a secret meant for another use.

    Example:
        >>> token("Kq7vR2mX9pLs4TnW8yZb3c")
        'Kq7vR2mX9pLs4TnW8yZb3c'
        >>> token("hunter2")
        Traceback (most recent call last):
        ...
        ValueError: --token must be at least 22 characters, got 7
    """
    if len(text) < MIN_TOKEN_LENGTH:
        raise ValueError(f"{name} must be at least {MIN_TOKEN_LENGTH} characters, got {len(text)}")
    if not set(text) <= TOKEN_CHARACTERS:
        raise ValueError(
            f"{name} may hold only letters, digits and - . _ ~ (characters a URL and a "
            "cookie carry as they are)"
        )
    return text


def host_name(text: str, name: str = "--allow-host") -> str:
    """A host name a viewer answers to (``--allow-host``), as a ``Host`` header carries
    it without its port: letters, digits, ``-`` and ``.``, or an IPv6 address in brackets.

    Example:
        >>> host_name("Hub.Example.org")
        'hub.example.org'
        >>> host_name("https://hub.example.org:443")
        Traceback (most recent call last):
        ...
        ValueError: --allow-host must be a host name without scheme or port, e.g. hub.example.org
    """
    text = text.strip().lower()
    plain = text and all(c.isascii() and (c.isalnum() or c in "-.") for c in text)
    bracketed = len(text) > 2 and text[0] == "[" and text[-1] == "]"
    if not (plain or (bracketed and all(c in "0123456789abcdef:." for c in text[1:-1]))):
        raise ValueError(f"{name} must be a host name without scheme or port, e.g. hub.example.org")
    return text


def bin_count(value: object, name: str = "bins") -> int:
    """A number of equal bins, from 1 to the core's `MAX_BINS`.

    Example:
        >>> bin_count(513)
        Traceback (most recent call last):
        ...
        ValueError: bins must be from 1 to 512, got 513
    """
    count = whole_number(value, name, minimum=1)
    _core.check_bin_count(count)
    return count


def bins_or_edges(bins: Any) -> Bins:
    """``bins`` as a number of equal bins from 1 to `MAX_BINS`, or as read-only float64 edges.

    Raises ValueError naming ``bins`` for anything else.

    Example:
        >>> bins_or_edges(50), bins_or_edges([0, 1, 10])
        (50, array([ 0.,  1., 10.]))
    """
    problem = ValueError(
        f"bins must be an int from 1 to {_core.MAX_BINS} or increasing edges, "
        f"got {reprlib.repr(bins)}"
    )
    if isinstance(bins, (bool, np.bool_)):
        raise problem
    if isinstance(bins, (int, np.integer)):
        try:
            _core.check_bin_count(int(bins))
        except (ValueError, OverflowError):
            raise problem from None
        return int(bins)
    try:
        edges = np.array(bins, dtype=np.float64)
    except (TypeError, ValueError):
        raise problem from None
    if edges.ndim != 1:
        raise problem
    try:
        _core.check_edges(edges)
    except ValueError:
        raise problem from None
    edges.setflags(write=False)
    return edges


def value_range(range: Any, bins: Bins) -> tuple[float, float] | None:
    """``range`` as two finite floats ``lo < hi``, or None; not allowed with edges.

    Example:
        >>> value_range((-1, 1), 50)
        (-1.0, 1.0)
    """
    if range is None:
        return None
    if not isinstance(bins, int):
        raise ValueError("range cannot be given with bin edges: the edges set the range")
    problem = ValueError(f"range must be (lo, hi) with lo < hi, finite, got {reprlib.repr(range)}")
    try:
        lo, hi = (float(end) for end in range)
    except (TypeError, ValueError):
        raise problem from None
    try:
        _core.check_range(lo, hi)
    except ValueError:
        raise problem from None
    return lo, hi


def names(values: Iterable[str] | None, name: str) -> list[str] | None:
    """A string or strings as a list without repeats (None stays None: no selection).

    Example:
        >>> names("loss", "tags"), names(["a", "b", "a"], "runs")
        (['loss'], ['a', 'b'])
    """
    if values is None:
        return None
    if isinstance(values, str):
        return [values]
    if not isinstance(values, Iterable):
        raise TypeError(f"{name} must be a list of strings, got {type(values).__name__}")
    out = list(values)
    for value in out:
        if not isinstance(value, str):
            raise TypeError(f"{name} must hold strings, got {type(value).__name__}: {value!r}")
    return list(dict.fromkeys(out))


def one_of(value: _T, name: str, choices: Collection[_T]) -> _T:
    """``value`` if it is one of ``choices``.

    Example:
        >>> one_of("drop", "on_full", ("wait", "drop"))
        'drop'
    """
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")
    return value


def flag(value: object, name: str) -> bool:
    """``value`` if it is True or False.

    Example:
        >>> flag(True, "activations")
        True
    """
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__}")
    return value


def key(value: object) -> str:
    """A key to log under: a non-empty str.

    Example:
        >>> key("loss")
        'loss'
    """
    if not isinstance(value, str):
        raise TypeError(f"key must be a str, got {type(value).__name__}")
    if not value:
        raise ValueError("key must not be empty")
    return value


def folder_name(value: object, what: str) -> str:
    """A project or run name: one folder, no slashes.

    Example:
        >>> folder_name("mnist", "project")
        'mnist'
    """
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, got {type(value).__name__}")
    if not value or value in (".", "..") or "/" in value or "\\" in value or "\0" in value:
        raise ValueError(f"{what} must be a non-empty folder name without slashes, got {value!r}")
    return value


def wall_time(value: object) -> float:
    """Seconds since the epoch, now when None.

    Example:
        >>> wall_time(1.5)
        1.5
    """
    if value is None:
        return time.time()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"time must be seconds since the epoch (a number), got {type(value).__name__}"
        )
    if not math.isfinite(float(value)):
        raise ValueError(f"time must be finite, got {value!r}")
    return float(value)


def seconds(value: object, name: str) -> float:
    """A length of time in seconds: a finite number > 0.

    Example:
        >>> seconds(0, "timeout")
        Traceback (most recent call last):
        ...
        ValueError: timeout must be a number of seconds > 0, got 0
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number of seconds > 0, got {type(value).__name__}")
    number = float(value)
    if not (math.isfinite(number) and number > 0):
        raise ValueError(f"{name} must be a number of seconds > 0, got {value!r}")
    return number


def text_path(item: object, name: str = "logdir") -> str:
    """A path (str or os.PathLike) as text; bytes paths are refused.

    Example:
        >>> from pathlib import Path
        >>> text_path(Path("logs"))
        'logs'
    """
    if not isinstance(item, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path (str or os.PathLike), got {type(item).__name__}")
    path = os.fspath(item)
    if not isinstance(path, str):
        raise TypeError(f"{name} must be a text path, not bytes")
    return path


def logdir_path(logdir: object) -> str:
    """A local log directory (or one events file, read as a run) that exists, as text.

    Example:
        >>> logdir_path("no/such/dir")
        Traceback (most recent call last):
        ...
        FileNotFoundError: log directory not found: 'no/such/dir' does not exist
    """
    path = text_path(logdir)
    if not os.path.exists(path):
        raise FileNotFoundError(f"log directory not found: {path!r} does not exist")
    return path


def usable_weights(usable: bool) -> None:
    """Raises the one ValueError every path gives for negative or nonfinite weights.

    Example:
        >>> usable_weights(True)
    """
    if not usable:
        raise ValueError("weights must be finite and not negative")


def is_tensor(values: Any) -> bool:
    """Whether ``values`` is a torch tensor, checked without importing torch for other types.

    Example:
        >>> is_tensor(np.zeros(2))
        False
    """
    if not type(values).__module__.startswith("torch"):
        return False
    import torch

    return isinstance(values, torch.Tensor)
