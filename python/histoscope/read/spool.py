"""Remote log directories followed as local ones: their events files spooled by byte ranges.

The viewer (and a notebook widget or `compare` on a URL) follows a log directory
through the core's run loader, which keeps each file's byte offset and reads its
segments again, by random access, for the buckets of a card. Behind an fsspec URL,
a `Spool` keeps,
for each remote events file, the bytes fetched so far in a file of the same
relative path in a private temporary directory, deleted on close. Events files
are append-only, so each fetch asks for the range past what the spool holds, a
chunk of `storage.CHUNK_BYTES` at a time, and appends it: the local readers see
a file that grows as a writer's does, a record cut at its end included.

`RemoteLogdir` follows a directory for the viewer: each `sync` is one listing
of the whole directory (fsspec's ``find`` with sizes) and one ranged read per
chunk of what grew. What reads a directory once (``load_histograms``, ``check``,
``report``) needs no spool: the core reads it through fsspec itself
(`storage.LogdirRef.core`).

Example:
    >>> import fsspec, glob
    >>> source = sorted(glob.glob("examples/logdir/*/*tfevents*"))[0]
    >>> fsspec.filesystem("memory").put(source, "/spool-doc/run/events.out.tfevents.1")
    >>> with RemoteLogdir.open("memory://spool-doc") as remote:
    ...     runs = remote.sync()
    ...     [run.name for run in _core.discover_runs(remote.root)], remote.listings
    (['run'], 1)
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .. import _core
from . import storage
from .storage import LogdirRef, RunRef

_FETCH_THREADS = _core.FETCH_PARALLEL_READS


def is_url(logdir: object) -> bool:
    """Whether ``logdir`` names a log directory behind an fsspec URL (``s3://``, ``gs://``...).

    Example:
        >>> is_url("s3://bucket/logs"), is_url("runs/"), is_url(os.path.join("C:", "runs"))
        (True, False, False)
    """
    return isinstance(logdir, str) and storage._URL.match(logdir) is not None


def remote_logdir(url: str, storage_options: Mapping[str, Any] | None = None) -> LogdirRef:
    """The one log directory ``url`` names, its filesystem made with ``storage_options``.

    Raises ImportError naming the package a protocol needs, FileNotFoundError when
    nothing is there (a bucket that does not exist, an empty prefix), ValueError for
    a pattern naming several directories.
    """
    logdirs, several = storage.resolve_logdirs(url, storage_options)
    if several and len(logdirs) != 1:
        names = ", ".join(ref.name for ref in logdirs[:3])
        raise ValueError(f"{url!r} names {len(logdirs)} log directories ({names}...); name one")
    return logdirs[0]


def _relative(root: str, path: str) -> str:
    return path[len(root) :].lstrip("/")


class Spool:
    """A private temporary directory holding the bytes fetched so far of remote events
    files, each under its path relative to ``root`` on ``fs``; deleted on `close`.

    ``fetches`` counts the ranged reads made, ``fetched_bytes`` their bytes.
    """

    def __init__(self, fs: Any, root: str) -> None:
        self.fs, self.remote_root = fs, root.rstrip("/")
        self._dir = tempfile.TemporaryDirectory(prefix="histoscope-spool-")
        self.root = self._dir.name
        self.fetches = 0
        self.fetched_bytes = 0
        self._held: dict[str, int] = {}
        self._count = threading.Lock()

    def local(self, path: str) -> str:
        """Where the remote file ``path`` is spooled."""
        return os.path.join(self.root, *_relative(self.remote_root, path).split("/"))

    def fetch(self, files: Sequence[tuple[str, int]]) -> None:
        """Brings each ``(path, size)`` up to ``size`` bytes, several files at once: only
        the range past what is held is read, a chunk at a time; a file now shorter than
        what is held was rewritten, and is fetched again from its start."""
        jobs = []
        for path, size in files:
            held = self._held.get(path, 0)
            if size < held:
                held = 0
                with open(self.local(path), "wb"):
                    pass
            if size > held or path not in self._held:
                jobs.append((path, held, size))
        workers = max(1, min(_FETCH_THREADS, len(jobs)))
        with ThreadPoolExecutor(workers, thread_name_prefix="histoscope-spool") as pool:
            for path, end in pool.map(lambda job: self._append(*job), jobs):
                self._held[path] = end

    def _append(self, path: str, start: int, end: int) -> tuple[str, int]:
        local = self.local(path)
        os.makedirs(os.path.dirname(local), exist_ok=True)
        with open(local, "ab") as out:
            at = start
            while at < end:
                stop = min(end, at + storage.CHUNK_BYTES)
                chunk = self.fs.cat_file(path, start=at, end=stop)
                with self._count:
                    self.fetches += 1
                    self.fetched_bytes += len(chunk)
                if not chunk:  # shorter than listed: what came is what there is
                    break
                out.write(chunk)
                out.flush()
                at += len(chunk)
        return path, at

    def drop(self, paths: Sequence[str]) -> None:
        """Deletes the spooled copies of ``paths``."""
        for path in paths:
            self._held.pop(path, None)
            try:
                os.remove(self.local(path))
            except OSError:
                pass

    @property
    def held(self) -> dict[str, int]:
        """The bytes held of each remote file spooled."""
        return dict(self._held)

    def close(self) -> None:
        """Deletes the spool and everything in it."""
        self._dir.cleanup()


class RemoteLogdir:
    """A remote log directory followed into a `Spool`, as a local directory at ``root``.

    Each `sync` lists the directory once (``listings`` counts them) and appends to
    each spooled events file the bytes it grew by; a file gone from the listing
    is deleted from the spool, as a file removed locally is gone.
    """

    def __init__(self, ref: LogdirRef) -> None:
        self.ref = ref
        self.url = ref.name
        self.spool = Spool(ref.fs, ref.path)
        self.root = self.spool.root
        self.listings = 0
        self._lock = threading.Lock()

    @classmethod
    def open(cls, url: str, storage_options: Mapping[str, Any] | None = None) -> RemoteLogdir:
        """Follows the log directory ``url`` (see `remote_logdir` for the errors)."""
        return cls(remote_logdir(url, storage_options))

    def list_runs(self) -> list[RunRef]:
        """The runs as the directory holds them now: one listing, sizes included."""
        fs, root = self.ref.fs, self.ref.path.rstrip("/")
        fs.invalidate_cache(root)
        self.listings += 1
        return storage.find_runs([self.ref], False)

    def sync(self) -> list[RunRef]:
        """Lists the directory and fetches what grew since; returns the runs listed."""
        with self._lock:
            runs = self.list_runs()
            files = [(f.path, f.size or 0) for run in runs for f in run.files]
            listed = {path for path, _ in files}
            self.spool.drop([path for path in self.spool.held if path not in listed])
            self.spool.fetch(files)
            return runs

    def close(self) -> None:
        """Deletes the spool."""
        self.spool.close()

    def __enter__(self) -> RemoteLogdir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
