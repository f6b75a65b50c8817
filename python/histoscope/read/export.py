"""Streaming log directories into one Parquet file of tidy rows, a bounded piece at a time.

Each events file is read, turned into rows (see `histoscope.tidy`) and written
in row groups of at most `ROW_GROUP_BYTES` of buckets (``row_group_bytes=``);
a file larger than `PIECE_BYTES` (``piece_bytes=``) is read in pieces of about
that many bytes of records. So memory holds two files' or pieces' histograms
(the one being written and `READ_AHEAD` being read meanwhile) and one row
group's table, however large the log directories and their files are. A run
of several files, or of one file read in pieces, is read twice: first for its
steps alone, to know which values its restarts drop (a later file can drop
steps of an earlier one), then piece by piece for the buckets.
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
from .storage import CHUNK_BYTES, EventFileRef, RunRef, find_runs, resolve_logdirs
from .tidy import STAT_COLUMNS, schema, table_of_records

#: How many events files (or pieces of one) are read ahead of the one being written:
#: reading one while writing another keeps two cores busy, and more only holds more.
READ_AHEAD = 1
#: The most bytes of buckets one row group holds, by default.
ROW_GROUP_BYTES = 16 * 1024 * 1024
#: Local events files larger than this are read in pieces of about this many bytes, by
#: default; smaller ones are read whole and once (a file in pieces is read twice).
PIECE_BYTES = 64 * 1024 * 1024
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
    #: One line per file that wrote a tag several times a step, kept apart by position.
    shared_notes: list[str] = field(default_factory=list)


def export_parquet(
    logdir: Logdirs,
    out: str | os.PathLike[str],
    *,
    tags: Iterable[str] | None = None,
    runs: Iterable[str] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    progress: TextIO | None = None,
    row_group_bytes: int = ROW_GROUP_BYTES,
    piece_bytes: int = PIECE_BYTES,
) -> ExportSummary:
    """Writes every histogram under ``logdir`` to the Parquet file ``out``, one row per
    (run, tag, step), in row groups of at most ``row_group_bytes`` of buckets.

    ``logdir``, ``tags``, ``runs`` and ``storage_options`` are as for
    `histoscope.load_histograms`. ``progress``, if given, is a terminal to draw a
    progress line on (see `histoscope.progress`). An events file larger than
    ``piece_bytes`` is read in pieces of about that many bytes of records, so that
    memory stays bounded whatever the files' sizes. The file is
    written under a temporary name and renamed when complete. Needs
    ``pip install 'histoscope[arrow]'``.

    Example:
        >>> import tempfile, os, pyarrow.parquet as pq
        >>> out = os.path.join(tempfile.mkdtemp(), "h.parquet")
        >>> summary = export_parquet("examples/logdir", out, row_group_bytes=4096, piece_bytes=4096)
        >>> meta = pq.read_metadata(out)
        >>> summary.files, meta.num_rows == summary.rows, meta.num_row_groups > summary.files
        (3, True, True)
    """
    from .tidy import _pyarrow

    _pyarrow()
    import pyarrow.parquet as pq

    logdirs, several = resolve_logdirs(logdir, storage_options)
    tag_list, run_list = _args.names(tags, "tags"), _args.names(runs, "runs")
    group_bytes = _args.whole_number(row_group_bytes, "row_group_bytes", minimum=1)
    budget = _args.whole_number(piece_bytes, "piece_bytes", minimum=1)
    chosen = [r for r in find_runs(logdirs, several) if run_list is None or r.name in run_list]
    out = os.fspath(out)
    summary = ExportSummary(path=out, runs=len(chosen))
    files = [f for run in chosen for f in run.files]
    bar = (
        Progress(progress, "exporting", files=len(files), total_bytes=sum(f.nbytes for f in files))
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
            for piece in _read_piece_by_piece(chosen, tag_list, budget):
                merged = piece.merged
                for group in _row_groups(merged.series, group_bytes):
                    table = table_of_records(group)
                    writer.write_table(table)
                    summary.rows += table.num_rows
                    del table
                summary.files += piece.last
                summary.bytes_read += piece.nbytes
                if piece.superseded:
                    summary.superseded[piece.run] = piece.superseded
                for report in merged.reports:
                    if report.has_problems:
                        summary.damaged.append(report.summary)
                    if report.incomplete_tail is not None and report.tail_note:
                        summary.incomplete.append((report.path, report.incomplete_tail))
                        summary.tail_notes.append(report.tail_note)
                    if report.shared_note and report.shared_note not in summary.shared_notes:
                        summary.shared_notes.append(report.shared_note)
                if bar:
                    bar.advance(files=piece.last, nbytes=piece.nbytes, extra=f"{summary.rows} rows")
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


def _row_groups(
    series: Sequence[_core.SeriesRecord], budget: int
) -> Iterator[list[_core.SeriesRecord]]:
    """``series`` in runs of consecutive records of at most ``budget`` bytes of buckets
    (at least one record each), so one row group's table is built at a time."""
    group: list[_core.SeriesRecord] = []
    held = 0
    for record in series:
        size = record.buckets.nbytes
        if group and held + size > budget:
            yield group
            group, held = [], 0
        group.append(record)
        held += size
    if group:
        yield group


@dataclass
class _Piece:
    """One row group's worth: a whole events file or a piece of one, merged into its run."""

    run: str
    merged: _core.MergedRecord
    #: The bytes of the file it covers (about the budget; the rest of the file for its last).
    nbytes: int
    #: Whether it ends its file.
    last: bool
    #: The job reading the file's next piece; None for the last.
    next: Callable[[], _Piece] | None = None
    #: How many values the run's restarts dropped, given with the run's first piece.
    superseded: int = 0


def _read_piece_by_piece(
    runs: Sequence[RunRef], tags: list[str] | None, budget: int
) -> Iterator[_Piece]:
    """Every piece of ``runs`` in order, the next `READ_AHEAD` read while the caller writes one.

    A file's next piece is asked for once its last one is handed over (the core reads a
    file in order), ahead of the files after it.
    """
    jobs = _file_jobs(runs, tags, budget)
    with ThreadPoolExecutor(READ_AHEAD, thread_name_prefix="histoscope-export") as pool:
        pending: deque[Future[_Piece]] = deque()

        def fill() -> None:
            while len(pending) < READ_AHEAD and (job := next(jobs, None)) is not None:
                pending.append(pool.submit(job))

        fill()
        while pending:
            piece = pending.popleft().result()
            if piece.next is not None:
                pending.appendleft(pool.submit(piece.next))
            fill()
            yield piece


def _file_jobs(
    runs: Sequence[RunRef], tags: list[str] | None, budget: int
) -> Iterator[Callable[[], _Piece]]:
    """One job per file, in order; the files of a run of several (or of a file read in
    pieces) share its plan."""
    for run in runs:
        if len(run.files) == 1 and not _in_pieces(run.files[0], budget):
            yield partial(_single_file, run, tags)
            continue
        plan = _Once(partial(_plan_pieces, run, tags, budget))
        for i, file in enumerate(run.files):
            yield partial(_first_piece, run.name, file, plan, i, tags, budget)


def _in_pieces(file: EventFileRef, budget: int) -> bool:
    """Whether ``file`` is read in pieces: a file larger than the budget."""
    return file.nbytes > budget


def _pieces(file: EventFileRef, budget: int, tags: list[str] | None) -> Iterator[_core.DecodedFile]:
    """The file's pieces, or the file whole when it is not read in pieces."""
    if not _in_pieces(file, budget):
        return iter([file.decode(tags)])
    if file.fs is None:
        return _core.FilePieces(file.path, budget, tags)
    return _FetchedPieces(file, budget, tags)


class _FetchedPieces:
    """A remote file's pieces, fetched a chunk at a time as the core reads on; the file
    is closed once its last piece is handed out."""

    def __init__(self, file: EventFileRef, budget: int, tags: list[str] | None) -> None:
        self._source = file.fs.open(file.path, "rb", block_size=CHUNK_BYTES)
        self._pieces = _core.FilePieces.fed(file.display, file.size, self._source, budget, tags)

    def __iter__(self) -> _FetchedPieces:
        return self

    def __next__(self) -> _core.DecodedFile:
        piece = next(self._pieces)  # the last piece comes before the end, never StopIteration
        if self._pieces.finished:
            self._source.close()
        return piece

    @property
    def finished(self) -> bool:
        """Whether the file's last piece was handed out."""
        return self._pieces.finished


@dataclass(frozen=True)
class _PiecePlan:
    """A run's plan over the pieces of its files: file ``i``'s pieces are the plan's
    entries ``starts[i]`` to ``starts[i + 1]``."""

    plan: _core.RunPlan
    starts: tuple[int, ...]


def _plan_pieces(run: RunRef, tags: list[str] | None, budget: int) -> _PiecePlan:
    """`plan_run` for files read in pieces: each piece planned as a file of its own."""
    planner, starts = _core.RunPlanner(), [0]
    for file in run.files:
        count = 0
        for count, piece in enumerate(_pieces(file, budget, tags), 1):
            planner.add(piece, continues=count > 1)
        starts.append(starts[-1] + count)
    return _PiecePlan(planner.finish(), tuple(starts))


def _single_file(run: RunRef, tags: list[str] | None) -> _Piece:
    (file,) = run.files
    merged = _core.merge_files(run.name, [file.decode(tags)])
    return _Piece(run.name, merged, file.nbytes, True, superseded=merged.superseded)


def _first_piece(
    run: str,
    file: EventFileRef,
    plan: _Once,
    index: int,
    tags: list[str] | None,
    budget: int,
) -> _Piece:
    planned = plan.get()  # before the file is opened: planning may run for a while
    pieces = _pieces(file, budget, tags)
    piece = _share_of_piece(run, file, planned, index, pieces, 0, file.nbytes, budget)
    if index == 0:
        piece.superseded = planned.plan.superseded
    return piece


def _share_of_piece(
    run: str,
    file: EventFileRef,
    plan: _PiecePlan,
    index: int,
    pieces: Iterator[_core.DecodedFile],
    position: int,
    left: int,
    budget: int,
) -> _Piece:
    """Piece ``position`` of file ``index`` of ``run``, reduced to its share of the run.

    A piece the plan has no room for (the file grew since it was planned) is read
    and dropped, as a file's entries past its plan are; a file cut or gone since
    gives fewer pieces, the last with the report that says so.
    """
    piece = next(pieces)
    finished = getattr(pieces, "finished", True)  # a file read whole is one piece
    first, planned = plan.starts[index], plan.starts[index + 1] - plan.starts[index]
    if position < planned and (not finished or position == planned - 1):
        merged = plan.plan.share(run, first + position, piece)
    else:
        # Cut or gone since planned (its last piece comes early), or grown (no plan for
        # this piece): shared alone, the run's newest only if the file is its last.
        keep = plan.plan.keep(first + position) if position < planned else []
        newest = index + 2 == len(plan.starts)
        merged = _core.RunPlan([keep] if newest else [keep, []], 0).share(run, 0, piece)
    nbytes = left if finished else min(budget, left)
    out = _Piece(run, merged, nbytes, finished)
    if not finished:
        out.next = partial(
            _share_of_piece, run, file, plan, index, pieces, position + 1, left - nbytes, budget
        )
    return out


class _Once:
    """A plan computed by the first thread that asks for it; the others wait for it."""

    def __init__(self, compute: Callable[[], _PiecePlan]) -> None:
        self._compute, self._lock = compute, threading.Lock()
        self._value: _PiecePlan | None = None

    def get(self) -> _PiecePlan:
        with self._lock:
            if self._value is None:
                self._value = self._compute()
            return self._value


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
    for note in [*summary.tail_notes, *summary.shared_notes]:
        print(note, file=out)


def _superseded(count: int) -> str:
    return f"{count} step{'s' if count != 1 else ''} superseded by a restart"
