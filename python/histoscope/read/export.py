"""Streaming log directories into one Parquet file of tidy rows, one events file at a time.

Each events file is read, turned into rows (see `histoscope.tidy`) and written
as its own row group, so memory holds a few files' histograms (the one being
written and `READ_AHEAD` being read meanwhile), however large the log
directories are. A run of several files is read twice:
first for its steps alone, to know which values its restarts drop (a later
file can drop steps of an earlier one), then file by file for the buckets.
"""

from __future__ import annotations

import os
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TextIO

from .. import _args, _core
from ..progress import Progress
from .reader import Logdirs
from .storage import EventFileRef, RunRef, find_runs, resolve_logdirs
from .tidy import STAT_COLUMNS, schema, table_of_records

__all__ = ["ExportSummary", "export_parquet"]

#: How many events files are read ahead of the one being written.
READ_AHEAD = 2
#: Columns worth min/max statistics (for filters on read); the bucket lists are not.
_STATISTICS = ("run", "tag", "step", "wall_time", *STAT_COLUMNS)


@dataclass
class ExportSummary:
    """What an export wrote and what it had to skip."""

    path: str
    runs: int = 0
    files: int = 0
    rows: int = 0
    bytes_read: int = 0
    #: One line per file with damaged records skipped: the file, the records, the byte offsets.
    damaged: list[str] = field(default_factory=list)
    #: (file, byte offset) of each file whose last record was cut off (still being written?).
    incomplete: list[tuple[str, int]] = field(default_factory=list)
    #: One line per such file, saying what the cut means (see `FileReport.tail_note`).
    tail_notes: list[str] = field(default_factory=list)
    #: Per run, how many histogram values a restart dropped or logged again.
    superseded: dict[str, int] = field(default_factory=dict)


def export_parquet(
    logdir: Logdirs,
    out: str | os.PathLike[str],
    *,
    tags: Iterable[str] | None = None,
    runs: Iterable[str] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    progress: TextIO | None = None,
) -> ExportSummary:
    """Writes every histogram under ``logdir`` to the Parquet file ``out``, one row per
    (run, tag, step), one row group per events file.

    ``logdir``, ``tags``, ``runs`` and ``storage_options`` are as for
    `histoscope.load_histograms`. ``progress``, if given, is a terminal to draw a
    progress line on (see `histoscope.progress`). The file is written under a
    temporary name and renamed when complete. Needs ``pip install 'histoscope[arrow]'``.
    """
    from .tidy import _pyarrow

    _pyarrow()
    import pyarrow.parquet as pq

    logdirs, several = resolve_logdirs(logdir, storage_options)
    tag_list, run_list = _args.names(tags, "tags"), _args.names(runs, "runs")
    chosen = [r for r in find_runs(logdirs, several) if run_list is None or r.name in run_list]
    out = os.fspath(out)
    summary = ExportSummary(path=out, runs=len(chosen))
    files = [f for run in chosen for f in run.files]
    bar = (
        Progress(progress, "exporting", files=len(files), total_bytes=sum(map(_size, files)))
        if progress
        else None
    )
    partial_path = f"{out}.partial"
    try:
        with pq.ParquetWriter(
            partial_path,
            schema(),
            compression="snappy",
            # Dictionaries pay off for the repeated names only; trying them on
            # the bucket values costs most of the writing time for nothing.
            use_dictionary=["run", "tag"],
            write_statistics=list(_STATISTICS),
        ) as writer:
            for run, file, merged in _read_file_by_file(chosen, tag_list):
                if merged.series:
                    table = table_of_records(merged.series)
                    writer.write_table(table)
                    summary.rows += table.num_rows
                summary.files += 1
                summary.bytes_read += _size(file)
                if merged.superseded:
                    summary.superseded[run] = merged.superseded
                for report in merged.reports:
                    if report.has_problems:
                        summary.damaged.append(report.summary)
                    if report.incomplete_tail is not None and report.tail_note:
                        summary.incomplete.append((report.path, report.incomplete_tail))
                        summary.tail_notes.append(report.tail_note)
                if bar:
                    bar.advance(files=1, nbytes=_size(file), extra=f"{summary.rows} rows")
        os.replace(partial_path, out)
    finally:
        if bar:
            bar.close()
        if os.path.exists(partial_path):
            os.remove(partial_path)
    return summary


def plan_run(run: RunRef, tags: list[str] | None) -> _core.RunPlan:
    """For a run of several files, which entries of each survive the run's restarts.

    Each file is decoded and handed to the core at once, which keeps only its
    steps and restarts, so memory holds one file's buckets at a time.
    """
    planner = _core.RunPlanner()
    for file in run.files:
        planner.add(file.decode(tags))
    return planner.finish()


def file_share(
    run: str, plan: _core.RunPlan, index: int, file: EventFileRef, tags: list[str] | None
) -> _core.MergedRecord:
    """The series and reports file ``index`` of a run of several contributes to it."""
    return plan.share(run, index, file.decode(tags))


_FileRead = tuple[str, EventFileRef, _core.MergedRecord]


def _read_file_by_file(runs: Sequence[RunRef], tags: list[str] | None) -> Iterator[_FileRead]:
    """Every file of ``runs`` in order, the next `READ_AHEAD` read while the caller writes one."""
    with ThreadPoolExecutor(READ_AHEAD, thread_name_prefix="histoscope-export") as pool:
        pending: deque[Future[_FileRead]] = deque()
        for job in _file_jobs(runs, tags):
            pending.append(pool.submit(job))
            if len(pending) > READ_AHEAD:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def _file_jobs(runs: Sequence[RunRef], tags: list[str] | None) -> Iterator[Callable[[], _FileRead]]:
    """One job per file, in order; the files of a run of several share its plan."""
    for run in runs:
        if len(run.files) == 1:
            yield partial(_single_file, run, tags)
            continue
        plan = _Once(partial(plan_run, run, tags))
        for i, file in enumerate(run.files):
            yield partial(_share_of_file, run.name, file, plan, i, tags)


def _single_file(run: RunRef, tags: list[str] | None) -> _FileRead:
    (file,) = run.files
    return run.name, file, _core.merge_files(run.name, [file.decode(tags)])


def _share_of_file(
    run: str, file: EventFileRef, plan: _Once, index: int, tags: list[str] | None
) -> _FileRead:
    merged = file_share(run, plan.get(), index, file, tags)
    return run, file, merged


class _Once:
    """A plan computed by the first thread that asks for it; the others wait for it."""

    def __init__(self, compute: Callable[[], _core.RunPlan]) -> None:
        self._compute, self._lock = compute, threading.Lock()
        self._value: _core.RunPlan | None = None

    def get(self) -> _core.RunPlan:
        with self._lock:
            if self._value is None:
                self._value = self._compute()
            return self._value


def _size(file: EventFileRef) -> int:
    if file.size is not None:
        return file.size
    try:
        return os.path.getsize(file.path)
    except OSError:
        return 0


def print_summary(summary: ExportSummary, out: TextIO = sys.stderr) -> None:
    """The lines `histoscope export` ends with."""
    print(
        f"wrote {summary.rows} rows from {summary.files} events files "
        f"({summary.runs} runs, {summary.bytes_read / 1e6:.1f} MB) to {summary.path}",
        file=out,
    )
    if summary.damaged:
        print("skipped as damaged:", file=out)
        for line in summary.damaged:
            print(f"  {line}", file=out)
    for run, count in summary.superseded.items():
        print(f"run {run}: {_superseded(count)}", file=out)
    for note in summary.tail_notes:
        print(note, file=out)


def _superseded(count: int) -> str:
    return f"{count} step{'s' if count != 1 else ''} superseded by a restart"
