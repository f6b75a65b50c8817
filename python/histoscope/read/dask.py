"""Tidy histogram rows as a Dask DataFrame, read by the workers of any Dask cluster.

Each partition is one events file, read by a worker with histoscope's Rust
reader; Dask schedules the partitions, so the same call runs on a laptop
(threads or a ``LocalCluster``) and on a cluster of many machines. The workers
need histoscope installed and, for URLs, the filesystem's package
(``pip install 'histoscope[dask,cloud]'``); the log directories are listed
once, where `load_histograms` is called.

Columns are those of `histoscope.tidy`; the bucket lists are
``pandas.ArrowDtype`` columns (``frame["count"].list`` has Arrow's list methods)
and text follows Dask's string setting. Damaged records are skipped, as
everywhere in histoscope; ``histoscope ls`` or ``histoscope export`` list them.

Restarts: a later file of a run can drop steps written by an earlier one (the
run restarted from a checkpoint), so a file's rows are not final on their own.
For a run of several files one task first reads all of them for their steps
alone (no buckets) and the core plans which values survive; each file's
partition then keeps only those. The result is row for row that of
``histoscope.to_pandas(histoscope.load_histograms(...))``. Runs of one file,
the common case, are read once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .. import _args, _core
from .._deprecated import renamed_keywords
from .export import file_share, plan_run
from .reader import Logdirs
from .storage import EventFileRef, RunRef, find_runs, resolve_logdirs
from .tidy import table_of_records

if TYPE_CHECKING:
    import dask.dataframe
    import pandas


@renamed_keywords(paths="logdir", tags="keys")
def load_histograms(
    logdir: Logdirs,
    *,
    keys: Iterable[str] | None = None,
    runs: Iterable[str] | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> dask.dataframe.DataFrame:
    """The histograms under ``logdir`` as a lazy Dask DataFrame of tidy rows (see
    `histoscope.tidy` for the columns), one partition per events file.

    ``logdir``, ``keys``, ``runs`` and ``storage_options`` are as for
    `histoscope.load_histograms`: a log directory, several, glob patterns or
    fsspec URLs. Call ``.compute()`` (or any Dask operation) to read them on the
    current Dask scheduler, e.g. a ``dask.distributed.Client``'s cluster.

    Example:
        >>> import histoscope.dask
        >>> frame = histoscope.dask.load_histograms("examples/logdir")
        >>> frame.npartitions, len(frame.compute())
        (3, 47)

        On a cluster:

        >>> from dask.distributed import Client  # doctest: +SKIP
        >>> client = Client("tcp://scheduler:8786")  # doctest: +SKIP
        >>> frame = histoscope.dask.load_histograms("s3://bucket/sweep/*")  # doctest: +SKIP
        >>> frame.groupby("run")["std"].max().compute()  # doctest: +SKIP
    """
    try:
        import dask.dataframe as dd
        from dask import delayed
    except ImportError as error:
        raise ImportError("histoscope.dask needs dask: pip install 'histoscope[dask]'") from error
    logdirs, several = resolve_logdirs(logdir, storage_options)
    tag_list, run_list = _args.names(keys, "keys"), _args.names(runs, "runs")
    chosen = [r for r in find_runs(logdirs, several) if run_list is None or r.name in run_list]
    meta = _frame([])
    partitions = []
    for run in chosen:
        if len(run.files) == 1:
            partitions.append(delayed(_single_file_frame)(run, tag_list))
            continue
        plan = delayed(plan_run)(run, tag_list)
        partitions.extend(
            delayed(_file_share_frame)(run.name, plan, i, file, tag_list)
            for i, file in enumerate(run.files)
        )
    if not partitions:
        return dd.from_pandas(meta, npartitions=1)
    return dd.from_delayed(partitions, meta=meta, verify_meta=False)


def _single_file_frame(run: RunRef, tags: list[str] | None) -> pandas.DataFrame:
    (file,) = run.files
    return _frame(_core.merge_files(run.name, [file.decode(tags)]).series)


def _file_share_frame(
    run: str, plan: _core.RunPlan, index: int, file: EventFileRef, tags: list[str] | None
) -> pandas.DataFrame:
    return _frame(file_share(run, plan, index, file, tags).series)


def _frame(series: list[_core.SeriesRecord]) -> pandas.DataFrame:
    """The partition's rows; bucket lists stay Arrow-backed, as Dask would otherwise take
    an object column for text and convert it (its ``dataframe.convert-string`` setting)."""
    import pandas as pd

    table = table_of_records(series)
    lists = {table.schema.field(c).type for c in ("left", "right", "count")}
    return table.to_pandas(types_mapper=lambda t: pd.ArrowDtype(t) if t in lists else None)
