"""Where log directories live: local paths, glob patterns and fsspec URLs, and their runs' files.

A local directory is read by the Rust core directly. One behind a URL (``s3://``,
``gs://``, ``az://``, ``hf://``, ``file://``: any protocol fsspec knows) is handed
to the core as a `histoscope._core.FsspecLogdir` (`LogdirRef.core`): the core lists
it once and reads its files through fsspec in chunks of `CHUNK_BYTES`, several at
once, decoding each as it arrives, so nothing is downloaded whole to disk. Export
and Dask read remote files piece by piece here (`EventFileRef.decode`).
"""

from __future__ import annotations

import atexit
import glob
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

from .. import _args, _core

PathLike = Union[str, "os.PathLike[str]"]

# Before Python finalizes, the core's fetch threads stop taking the GIL (see
# `_core.stop_fetching`): one coming back then would crash the exiting process.
atexit.register(_core.stop_fetching)

#: How much of a remote events file is fetched at a time.
CHUNK_BYTES = _core.FETCH_CHUNK_BYTES

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_GLOB = re.compile(r"[*?[]")


@dataclass(frozen=True)
class EventFileRef:
    """One events file: a local path (``fs`` None) or a path on an fsspec filesystem."""

    path: str
    size: int | None = None
    fs: Any = field(default=None, compare=False, repr=False)

    @property
    def nbytes(self) -> int:
        """The file's size as listed, else as on disk now; 0 when it cannot be known."""
        if self.size is not None:
            return self.size
        try:
            return os.path.getsize(self.path) if self.fs is None else 0
        except OSError:
            return 0

    @property
    def display(self) -> str:
        """The file as named in reports: the local path or the URL."""
        return self.path if self.fs is None else self.fs.unstrip_protocol(self.path)

    def decode(self, tags: list[str] | None = None) -> _core.DecodedFile:
        """Reads the file, streaming it in chunks when it is remote."""
        if self.fs is None:
            return _core.decode_file(self.path, tags)
        stream = _core.EventStream(self.display, self.size, tags)
        self._feed(stream)
        return stream.finish()

    def _feed(self, stream: _core.EventStream) -> None:
        opened = (
            open(self.path, "rb")
            if self.fs is None
            else self.fs.open(self.path, "rb", block_size=CHUNK_BYTES)
        )
        with opened as source:
            while chunk := source.read(CHUNK_BYTES):
                stream.feed(chunk)


@dataclass(frozen=True)
class RunRef:
    """A run: its name and its events files in reading order."""

    name: str
    files: tuple[EventFileRef, ...]


@dataclass(frozen=True)
class LogdirRef:
    """One log directory: ``name`` prefixes its runs when several are read together."""

    name: str
    path: str
    fs: Any = field(default=None, compare=False, repr=False)

    @property
    def is_local(self) -> bool:
        return self.fs is None

    @property
    def core(self) -> str | _core.FsspecLogdir:
        """The directory as the core's readers take it: a local path, or the fsspec
        filesystem and root they list and read through."""
        if self.fs is None:
            return self.path
        return _core.FsspecLogdir(self.fs, self.path, chunk_bytes=CHUNK_BYTES)


def core_logdirs(
    logdirs: Sequence[LogdirRef], several: bool
) -> str | _core.FsspecLogdir | list[tuple[str, str | _core.FsspecLogdir]]:
    """The ``logdir`` argument of the core's readers: one directory, or (name, directory)
    pairs whose runs are named ``name/run``.

    Example:
        >>> core_logdirs([LogdirRef("a", "logs/a"), LogdirRef("b", "logs/b")], several=True)
        [('a', 'logs/a'), ('b', 'logs/b')]
    """
    return [(ref.name, ref.core) for ref in logdirs] if several else logdirs[0].core


def resolve_logdirs(
    logdir: PathLike | Sequence[PathLike], storage_options: Mapping[str, Any] | None = None
) -> tuple[list[LogdirRef], bool]:
    """The log directories named by ``logdir``, and whether several were asked for.

    ``logdir`` is a path or URL, a glob pattern of them, or a list of either.
    Several are asked for by a list or a pattern (even when it matches one
    directory), so run names do not depend on how many directories matched.
    """
    items: list[object]
    several = not isinstance(logdir, (str, os.PathLike))
    if several:
        if not isinstance(logdir, Iterable):
            raise TypeError(
                "logdir must be a path (str or os.PathLike) or a list of them, "
                f"got {type(logdir).__name__}"
            )
        items = list(logdir)
        if not items:
            raise ValueError("logdir must name at least one log directory, got an empty list")
    else:
        items = [logdir]
    found: list[LogdirRef] = []
    for item in items:
        path = _args.text_path(item)
        matches, pattern = _expand(path, storage_options)
        several = several or pattern
        found.extend(matches)
    unique = list({ref.name: ref for ref in found}.values())
    if several:
        _check_disjoint(unique)
    return unique, several


def _expand(path: str, storage_options: Mapping[str, Any] | None) -> tuple[list[LogdirRef], bool]:
    """The directories ``path`` names (a pattern may name several), and whether it was a pattern."""
    if _URL.match(path):
        fs, root = _filesystem(path, storage_options)
        if _GLOB.search(root) and not fs.isdir(root):
            matches = sorted(p for p in fs.glob(root) if fs.isdir(p))
            if not matches:
                raise FileNotFoundError(f"no log directory matches {path!r}")
            return [LogdirRef(fs.unstrip_protocol(p).rstrip("/"), p, fs) for p in matches], True
        if not fs.isdir(root):
            _check_bucket(fs, root, path)
            raise FileNotFoundError(f"log directory not found: {path!r} is not a directory")
        return [LogdirRef(path.rstrip("/"), root, fs)], False
    if _GLOB.search(path) and not os.path.exists(path):
        matches = sorted(p for p in glob.glob(path) if os.path.isdir(p))
        if not matches:
            raise FileNotFoundError(f"no log directory matches {path!r}")
        return [LogdirRef(_local_name(p), p) for p in matches], True
    if not os.path.exists(path):
        raise FileNotFoundError(f"log directory not found: {path!r} does not exist")
    # A path to one events file is read as a log directory holding it alone.
    return [LogdirRef(_local_name(path), path)], False


def _check_bucket(fs: Any, root: str, url: str) -> None:
    """Raises FileNotFoundError naming the bucket (the first part of ``root``) of ``url``
    when it is not there, which says more than that the directory is not."""
    bucket, sep, _ = root.strip("/").partition("/")
    if not (bucket and sep):
        return
    try:
        found = fs.exists(bucket)
    except OSError:  # not allowed to look: the directory's own message stands
        return
    if not found:
        scheme = _URL.match(url)
        name = f"{scheme.group(1)}://{bucket}" if scheme else bucket
        raise FileNotFoundError(
            f"log directory not found: the bucket {name!r} of {url!r} does not exist "
            "(or these storage options cannot see it)"
        )


def _local_name(path: str) -> str:
    return os.path.normpath(path).replace(os.sep, "/")


def _filesystem(url: str, storage_options: Mapping[str, Any] | None) -> tuple[Any, str]:
    try:
        import fsspec
    except ImportError as error:
        raise ImportError(
            f"reading {url!r} needs fsspec and the filesystem for its scheme: "
            "pip install 'histoscope[cloud]'"
        ) from error
    try:
        fs, root = fsspec.core.url_to_fs(url, **dict(storage_options or {}))
    except ImportError as error:  # fsspec's own words name the package: "Install s3fs to ..."
        raise ImportError(
            f"reading {url!r} needs the filesystem for its scheme ({error}): "
            "pip install 'histoscope[cloud]'"
        ) from None
    return fs, root.rstrip("/") or root


def _check_disjoint(logdirs: list[LogdirRef]) -> None:
    """Refuses a directory inside another: its files would be read twice, as two runs."""
    keys = sorted(
        (_identity(ref), ref.name) for ref in logdirs
    )  # a parent sorts right before its children
    for (outer, outer_name), (inner, inner_name) in zip(keys, keys[1:]):
        if inner.startswith(outer.rstrip("/") + "/"):
            raise ValueError(
                f"log directories overlap: {inner_name!r} is inside {outer_name!r}; "
                "pass only the outer one"
            )


def _identity(ref: LogdirRef) -> str:
    if ref.fs is None:
        return os.path.realpath(ref.path).replace(os.sep, "/")
    return ref.fs.unstrip_protocol(ref.path).rstrip("/")


def find_runs(logdirs: Sequence[LogdirRef], several: bool) -> list[RunRef]:
    """Every run of ``logdirs``, sorted by name; with ``several``, named ``<logdir>/<run>``."""
    runs = [run for ref in logdirs for run in _runs_of(ref, ref.name if several else None)]
    return sorted(runs, key=lambda r: r.name)


def _runs_of(ref: LogdirRef, prefix: str | None) -> list[RunRef]:
    """The runs of one log directory, found by the core as every reader finds them (a
    remote one listed once, with sizes); with ``prefix``, named as runs of several log
    directories are. A local file's size is read when it is needed: it may grow."""
    return [
        RunRef(
            run.name,
            tuple(
                EventFileRef(f) if ref.is_local else EventFileRef(f, size, ref.fs)
                for f, size in zip(run.files, run.sizes)
            ),
        )
        for run in _core.discover_runs(ref.core, prefix)
    ]
