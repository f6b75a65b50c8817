"""The `histoscope` command line."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from . import __version__, _args, _core
from .view.access import ENVIRONMENT_VARIABLE, chosen_token


def _ls(args: argparse.Namespace) -> int:
    """Lists the runs, tags and steps of a log directory, and what was skipped."""
    return _list_logdir(args.logdir, sys.stdout, dict(args.storage_option) or None)


def _list_logdir(logdir: str, out: TextIO, storage_options: dict[str, object] | None = None) -> int:
    """Prints each run, its histogram tags with their steps, and what was skipped."""
    loaded, path = _listed(logdir, storage_options)
    by_run: dict[str, list[_core.SeriesRecord]] = {run: [] for run in loaded.runs}
    for series in loaded.series:
        by_run[series.run].append(series)
    if not loaded.runs:
        print(f"no runs (no events files) under {path}", file=out)
    for run, tags in by_run.items():
        kind = f"{len(tags)} histogram tag{_s(len(tags))}" if tags else "no histograms"
        superseded = loaded.superseded.get(run, 0)
        if superseded:
            kind += f"; {superseded} step{_s(superseded)} superseded by a restart"
        print(f"run {run}: {kind}", file=out)
        width = max((len(s.tag) for s in tags), default=0)
        for s in tags:
            steps = s.steps
            print(
                f"  {s.tag:<{width}}  steps {steps[0]}..{steps[-1]} ({len(steps)} steps)",
                file=out,
            )
    damaged = [report.summary for report in loaded.reports if report.has_problems]
    if damaged:
        print("skipped as damaged:", file=out)
        for summary in damaged:
            print(f"  {summary}", file=out)
    for report in loaded.reports:
        if report.tail_note:
            print(report.tail_note, file=out)
        if report.shared_note:
            print(report.shared_note, file=out)
    return 0


def _listed(
    logdir: str, storage_options: dict[str, object] | None
) -> tuple[_core.LogdirRecord, str]:
    """Every series of a local log directory or one behind an fsspec URL, and its name."""
    from .read.spool import is_url

    if not is_url(logdir):
        path = _args.logdir_path(logdir)
        return _core.load_histograms(path), str(path)
    from .read.storage import core_logdirs, resolve_logdirs

    logdirs, several = resolve_logdirs(logdir, storage_options)
    return _core.load_histograms(core_logdirs(logdirs, several)), logdir


def _s(count: int) -> str:
    return "" if count == 1 else "s"


def _export(args: argparse.Namespace) -> int:
    """Streams the histograms of the log directories into a Parquet file."""
    from .read.export import export_parquet, print_summary

    logdirs = args.logdir[0] if len(args.logdir) == 1 else args.logdir
    summary = export_parquet(
        logdirs,
        args.output,
        tags=args.tags,
        runs=args.runs,
        storage_options=dict(args.storage_option) or None,
        progress=sys.stderr if sys.stderr.isatty() else None,
    )
    print_summary(summary, sys.stderr)
    return 0


def _storage_option(text: str) -> tuple[str, object]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def _view(args: argparse.Namespace) -> int:
    """Serves the viewer of a log directory until interrupted."""
    from .view.viewer import serve

    # `demo --view` comes without --cache-mb or the token's options: the viewer's defaults.
    cache = {"cache_bytes": args.cache_mb << 20} if getattr(args, "cache_mb", None) else {}
    storage_options = dict(getattr(args, "storage_option", None) or []) or None
    token = chosen_token(getattr(args, "token", None), getattr(args, "no_token", False), os.environ)
    try:
        serve(
            args.logdir, host=args.host, port=args.port, storage_options=storage_options,
            token=token or False, allow_hosts=getattr(args, "allow_host", ()), **cache,
        )  # fmt: skip
    except KeyboardInterrupt:
        pass
    return 0


def _cache_mb(text: str) -> int:
    try:
        return _args.cache_megabytes(text)
    except ValueError as error:
        # argparse names the argument itself: "argument --cache-mb: must be ...".
        raise argparse.ArgumentTypeError(str(error).replace("--cache-mb ", "", 1)) from None


def _token(text: str) -> str:
    try:
        return _args.token(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error).replace("--token ", "", 1)) from None


def _host_name(text: str) -> str:
    try:
        return _args.host_name(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error).replace("--allow-host ", "", 1)) from None


def _report(args: argparse.Namespace) -> int:
    """Writes the offline HTML report of a log directory."""
    from .view.report import write_report

    path = write_report(
        args.logdir,
        args.output,
        max_steps=args.max_steps,
        progress=sys.stderr,
        storage_options=dict(args.storage_option) or None,
    )
    size = path.stat().st_size
    print(f"wrote {path} ({size / 1e6:.1f} MB); open it in a browser, no server needed")
    return 0


def _demo(args: argparse.Namespace) -> int:
    """Trains a small model, logs its histograms, writes their report and maybe serves them."""
    from .demo import run_demo

    logdir = run_demo(args.out, steps=args.steps, spectral=args.spectral)
    if args.view:
        return _view(argparse.Namespace(logdir=logdir, host="127.0.0.1", port=args.port))
    return 0


def _check(args: argparse.Namespace) -> int:
    """Diagnoses a log directory; exit status 1 when a warning or error was found, else 0."""
    from .diagnose import diagnose

    findings = diagnose(
        args.logdir,
        kinds=args.kinds,
        progress=sys.stderr,
        storage_options=dict(args.storage_option) or None,
    )
    if args.json:
        json.dump([f.to_dict() for f in findings], sys.stdout, indent=2)
        print()
    else:
        _print_findings(findings, args.logdir, sys.stdout)
    return 1 if any(f.severity != "info" for f in findings) else 0


def _print_findings(findings: Sequence, logdir: str, out: TextIO) -> None:
    """One block per finding: severity, kind, run, key and steps, then the message."""
    if not findings:
        print(f"no problems found in {logdir}", file=out)
        return
    rows = [
        (f.severity.upper(), f.kind, f.run, f.key, f"steps {f.first_step}..{f.last_step}")
        for f in findings
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row, finding in zip(rows, findings):
        cells = "  ".join(cell.ljust(width) for cell, width in zip(row, widths))
        print(f"{cells}  {row[4]}", file=out)
        print(f"    {finding.message}", file=out)
    counts = {s: sum(f.severity == s for f in findings) for s in ("error", "warning", "info")}
    summary = ", ".join(f"{n} {s}{'s' if n != 1 else ''}" for s, n in counts.items() if n)
    print(f"{len(findings)} finding{'s' if len(findings) != 1 else ''}: {summary}", file=out)


def _diff(args: argparse.Namespace) -> int:
    """Prints the keys that differ most between two runs, or two steps of one run."""
    from .compare import compare

    steps = tuple(args.steps) if args.steps else None
    table = compare(
        args.logdir, a=args.a, b=args.b, step=args.step, steps=steps,
        storage_options=dict(args.storage_option) or None,
    )  # fmt: skip
    if args.json:
        json.dump(table.to_dict(), sys.stdout, indent=2)
        print()
    else:
        print(table.to_text(top=args.top or None))
    return 0


@dataclasses.dataclass(frozen=True)
class _Command:
    """One subcommand: what ``--help`` says of it, its arguments, and what runs it."""

    name: str
    help: str
    run: Callable[[argparse.Namespace], int]
    arguments: tuple[tuple[tuple[str, ...], dict[str, Any]], ...]
    description: str | None = None
    #: Arguments of which at most one may be given.
    exclusive: tuple[tuple[tuple[str, ...], dict[str, Any]], ...] = ()


def _arg(*flags: str, **options: Any) -> tuple[tuple[str, ...], dict[str, Any]]:
    return flags, options


_LOGDIR_OR_URL = _arg("logdir", help="a TensorBoard log directory or fsspec URL (s3://, gs://...)")
_STORAGE_OPTION = _arg(
    "--storage-option", action="append", default=[], type=_storage_option,
    metavar="KEY=VALUE",
    help="an fsspec storage option, e.g. endpoint_url=http://127.0.0.1:9000 (repeatable)",
)  # fmt: skip

_COMMANDS = (
    _Command(
        "ls",
        "list runs, histogram tags, step ranges and damaged files of a log directory",
        _ls,
        (_LOGDIR_OR_URL, _STORAGE_OPTION),
    ),
    _Command(
        "export",
        "stream the histograms of log directories into a Parquet file, one row per step",
        _export,
        (
            _arg("logdir", nargs="+", help="log directories, glob patterns or fsspec URLs"),
            _arg("-o", "--output", required=True, help="the Parquet file to write"),
            _arg("--tags", nargs="+", metavar="TAG", help="only these histogram tags"),
            _arg("--runs", nargs="+", metavar="RUN", help="only these runs"),
            _STORAGE_OPTION,
        ),
        "Writes one row per (run, tag, step) with wall_time, the buckets as lists "
        "(left, right, count) and the statistics, one row group per events file. With several "
        "log directories (or a quoted glob pattern) runs are named <logdir>/<run>.",
    ),
    _Command(
        "view",
        "serve a web page that shows the histograms of a log directory as it grows",
        _view,
        (
            _LOGDIR_OR_URL,
            _STORAGE_OPTION,
            _arg("--port", type=int, default=6006, help="the port (default 6006; 0: any)"),
            _arg(
                "--host", default="127.0.0.1",
                help="the address to listen on (default 127.0.0.1, this machine only)",
            ),
            _arg(
                "--allow-host", action="append", default=[], type=_host_name, metavar="NAME",
                help="another host name to answer to (repeatable): the one a reverse proxy "
                "passes on from the browser, e.g. your JupyterHub's",
            ),
            _arg(
                "--cache-mb", type=_cache_mb, default=_args.DEFAULT_CACHE_MB, metavar="N",
                help="the most megabytes of decoded histograms kept for all runs together "
                f"(default {_args.DEFAULT_CACHE_MB}); cards read the rest again from the files",
            ),
        ),
        "Serves the runs, histograms and distributions of LOGDIR on a local web "
        "page that follows the files as they grow, and prints its address. The address "
        "holds a random token (?token=...) that the page trades for a cookie; without it "
        "the page and its data are refused. A LOGDIR behind "
        "an fsspec URL is listed once per refresh and only the bytes its files grew by are "
        "fetched, into a private spool deleted when the server stops.",
        (
            _arg(
                "--token", type=_token, metavar="TOKEN",
                help="the secret the address carries, instead of a random one (also "
                f"${ENVIRONMENT_VARIABLE}): at least {_args.MIN_TOKEN_LENGTH} letters, digits "
                "or - . _ ~, e.g. from python -c 'import secrets; print(secrets.token_urlsafe())'",
            ),
            _arg(
                "--no-token", action="store_true",
                help="serve without a token: anyone who reaches the address reads the "
                "histograms (warned about off loopback)",
            ),
        ),
    ),
    _Command(
        "report",
        "write one self-contained offline HTML file of a whole log directory",
        _report,
        (
            _LOGDIR_OR_URL,
            _STORAGE_OPTION,
            _arg("-o", "--output", required=True, help="the HTML file to write"),
            _arg(
                "--max-steps", type=int, default=_core.CHART_STEPS,
                help=f"the most steps kept per series, thinned evenly"
                f" (default {_core.CHART_STEPS})",
            ),
        ),
        "Writes the overview, the sections and every card of LOGDIR, with the "
        "viewer's keys, speech, sound and braille, into one HTML file that opens from disk "
        "and makes no network request.",
    ),
    _Command(
        "demo",
        "train a small network, log its histograms and write the offline report",
        _demo,
        (
            _arg("--out", default="histoscope-demo", help="the folder to write (%(default)s)"),
            _arg("--steps", type=int, default=300, help="training steps (default 300)"),
            _arg("--spectral", action="store_true", help="log each weight matrix's spectrum too"),
            _arg("--view", action="store_true", help="then serve the log directory"),
            _arg("--port", type=int, default=6006, help="the port for --view"),
        ),
        "Trains a three-layer perceptron on synthetic data at two learning rates "
        "(PyTorch with run.watch when installed, else NumPy), logs its parameters, gradients "
        "and activations, and writes one offline HTML report of them.",
    ),
    _Command(
        "check",
        "find vanishing or exploding gradients, NaN, dead or saturated units, collapse",
        _check,
        (
            _arg("logdir", help="a TensorBoard log directory, glob pattern or fsspec URL"),
            _STORAGE_OPTION,
            _arg("--json", action="store_true", help="print a JSON list of findings"),
            _arg(
                "--kinds", nargs="+", choices=_core.KINDS, metavar="KIND",
                help=f"only these kinds of finding: {', '.join(_core.KINDS)}",
            ),
        ),
        "Diagnoses every histogram of LOGDIR and prints the findings. Exit status: "
        "0 when nothing above info was found, 1 when a warning or error was, 2 for usage errors, "
        "so that a training pipeline can use it as a gate.",
    ),
    _Command(
        "diff",
        "rank the keys that differ most between two runs, or two steps of one run",
        _diff,
        (
            _LOGDIR_OR_URL,
            _STORAGE_OPTION,
            _arg("--a", metavar="RUN", help="the first run (may be left out with one run)"),
            _arg("--b", metavar="RUN", help="the second run (default: the first, with --steps)"),
            _arg("--step", type=int, help="each side's last step at or before N (default: last)"),
            _arg("--steps", type=int, nargs=2, metavar=("A", "B"), help="step A of a, step B of b"),
            _arg("--top", type=int, default=20, help="the keys shown (default 20; 0: all)"),
            _arg("--json", action="store_true", help="print the whole table as JSON"),
        ),
        "Compares each key's histogram on the two sides exactly, from the stored buckets: "
        "Wasserstein-1 distance (in the key's units and in standard deviations), "
        "Kolmogorov-Smirnov distance, and the change of mean and standard deviation. Keys are "
        "ranked by the Wasserstein distance in standard deviations, farthest first.",
    ),
)  # fmt: skip


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="histoscope", description="Read, log and show the histograms of ML training."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    for command in _COMMANDS:
        sub = commands.add_parser(command.name, help=command.help, description=command.description)
        for flags, options in command.arguments:
            sub.add_argument(*flags, **options)
        if command.exclusive:  # an empty group breaks argparse's usage line
            group = sub.add_mutually_exclusive_group()
            for flags, options in command.exclusive:
                group.add_argument(*flags, **options)
        sub.set_defaults(run=command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        return int(args.run(args))
    except (FileNotFoundError, OSError, ImportError, ValueError) as error:
        print(f"histoscope: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
