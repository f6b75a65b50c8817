"""Logging runs: `Run.watch`, `Run.add_histogram`, `Run.log`, as TensorBoard events files
(`session.init` starts one).

The caller's thread only checks arguments and takes a snapshot of the values;
binning and writing happen on one background Python thread per run, which
calls the Rust core; the core releases the GIL while it bins and writes.
Records are flushed every few seconds and at the end.

The snapshots waiting for that thread are bounded (``max_pending_bytes`` of
`init`, 256 MiB by default): when they reach it, `Run.add_histogram` waits
for the writer, or with ``on_full="drop"`` drops the histogram and counts
it. `Run.finish` waits a bounded time and says what was not written.
"""

from __future__ import annotations

import atexit
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import _args, _core
from .._deprecated import warn_renamed
from ..diagnose import Finding
from .alerts import AlertPolicy, Alerts, RunAlerts
from .histogram import Histogram, prepare_weights
from .loggable import loggable, snapshot_nbytes
from .optimizer import optimizer_classes
from .options import DEFAULT_BINS, WatchOptions
from .spectrum import log_spectrum as _log_spectrum
from .tree import log_tree as _log_tree
from .watch import Watch, unwrap
from .writer import Backlog, Flush, ReadyBatch, ReadyHistogram, Scalar, Snapshot, Writer

if TYPE_CHECKING:
    import torch
    from typing_extensions import Unpack

    from .options import WatchArguments

DEFAULT_MAX_PENDING_BYTES = 256 << 20
FINISH_TIMEOUT_SECONDS = 120.0
ON_FULL_CHOICES = ("wait", "drop")
_POLL_SECONDS = 0.5

_open_runs: weakref.WeakSet[Run] = weakref.WeakSet()


class Run:
    """A run being logged: a folder of TensorBoard events files.

    Make one with `histoscope.init`; use it as a context manager, or call
    `finish` at the end (open runs are also finished at interpreter exit).

    Example:
        >>> import tempfile, numpy as np, histoscope as hs
        >>> with hs.init("demo", run_name="first", logdir=tempfile.mkdtemp()) as run:
        ...     run.add_histogram("weights", np.random.randn(1000), step=0)
        ...     run.log({"loss": 0.3, "grads": hs.Histogram(np.random.randn(100))}, step=0)
        >>> sorted(hs.load_histograms(run.path))
        ['grads', 'weights']
    """

    def __init__(
        self,
        project: str,
        run_name: str,
        dir: Path,
        *,
        max_pending_bytes: int = DEFAULT_MAX_PENDING_BYTES,
        on_full: str = "wait",
        alerts: Alerts = "warn",
        stop_on: Sequence[str] | None = None,
    ) -> None:
        self.project = project
        self.name = run_name
        self.dir = dir
        self.max_pending_bytes = max_pending_bytes
        self.on_full = on_full
        policy = AlertPolicy(alerts, stop_on)
        self._writer = Writer(
            dir,
            f"{project}/{run_name}",
            max_pending_bytes=max_pending_bytes,
            on_full=on_full,
            diagnosed=policy.live,
        )
        self._alerts = RunAlerts(policy, self._writer.alerts, policy.live)
        self._last_step: dict[str, int] = {}
        self._watches: list[Watch] = []
        #: The notebook widget showing this run, once one is shown (`histoscope.show`).
        self._widget: Any = None
        _open_runs.add(self)

    @property
    def path(self) -> Path:
        """The events file this run writes."""
        return Path(self._writer.file.path)

    @property
    def closed(self) -> bool:
        """Whether `finish` was called: nothing more can be logged."""
        return self._writer.closed

    @property
    def backlog(self) -> Backlog:
        """What the writer has not done yet: pending bytes, waiting threads, drops, unwritten."""
        return self._writer.backlog()

    def watch(self, model: torch.nn.Module, **options: Unpack[WatchArguments]) -> Watch:
        """Logs histograms of ``model``'s gradients, parameters or both every ``every`` steps.

        ``log`` is ``"gradients"``, ``"parameters"`` or ``"all"``; keys are
        ``gradients/<name>`` and ``parameters/<name>`` (names as
        ``model.named_parameters()`` gives them, inside any ``DataParallel``
        or ``DistributedDataParallel``), and with ``activations=True``
        ``activations/<module name>`` for the output of each leaf module.
        ``filter`` keeps the tensors whose name a regular expression matches
        (``re.search``), or for which ``filter(name, tensor)`` is true.
        Parameters that do not require grad are logged as parameters only.
        Under ``torch.distributed`` only rank 0 logs, unless ``all_ranks``.

        A step is a backward pass through the model, counted from 0, or
        ``step()`` when given: see `histoscope.watch.Watch` for how steps line up
        with `log`. Every tensor of a logging step is binned together, in
        ``bins`` equal bins, before training goes on.

        Example:
            >>> import tempfile, torch, histoscope as hs
            >>> from torch import nn
            >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
            >>> optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            >>> run = hs.init("mnist", logdir=tempfile.mkdtemp())
            >>> watching = run.watch(model, log="all", every=10, filter=r"^0[.]")
            >>> for i in range(20):
            ...     loss = model(torch.randn(16, 4)).pow(2).mean()
            ...     loss.backward()  # step i is logged here when i % 10 == 0
            ...     optimizer.step(); optimizer.zero_grad()
            ...     run.log({"loss": loss.item()}, step=i)
            >>> run.finish()
            >>> data = hs.load_histograms(run.path)
            >>> sorted(data)
            ['gradients/0.bias', 'gradients/0.weight', 'parameters/0.bias', 'parameters/0.weight']
            >>> data["gradients/0.weight"]["."].steps.tolist()
            [0, 10]
        """
        if self.closed:
            raise RuntimeError(
                f"run {self.project}/{self.name} is finished; start another with init()"
            )
        checked = WatchOptions(**options)
        if checked.alerts is not None or checked.stop_on is not None:
            self._alerts.replace(checked.alerts, checked.stop_on)
        watch = Watch(self, model, checked)
        self._watches.append(watch)
        return watch

    def unwatch(self, model: torch.nn.Module | None = None) -> None:
        """Stops watching ``model`` (every model, without one): its hooks are removed.

        Example:
            >>> import tempfile, torch, histoscope as hs
            >>> model = torch.nn.Linear(4, 1)
            >>> run = hs.init("demo", logdir=tempfile.mkdtemp())
            >>> watching = run.watch(model)
            >>> run.unwatch(model)
            >>> run.finish()
        """
        inner = None if model is None else unwrap(model)
        for watch in [w for w in self._watches if inner is None or w.model is inner]:
            watch.remove()
            self._watches.remove(watch)

    def add_histogram(
        self,
        key: str,
        values: Any,
        step: int | None = None,
        *,
        bins: int | Any = DEFAULT_BINS,
        range: tuple[float, float] | None = None,
        weights: Any = None,
        time: float | None = None,
    ) -> None:
        """Logs the histogram of ``values`` (any shape, flattened) under ``key``.

        Returns once the values are copied: binning and writing happen in the
        background, so later in-place changes (``optimizer.step()``) don't
        leak in. NaN and infinite values are counted as ``nonfinite``, never
        binned; values outside ``range`` are counted as ``below``/``above``.

        Example:
            >>> import tempfile, numpy as np, histoscope as hs
            >>> run = hs.init("demo", logdir=tempfile.mkdtemp())
            >>> grads = np.random.default_rng(0).normal(0, 0.01, 1000)
            >>> run.add_histogram("grads/fc", grads, step=10, bins=80, range=(-0.05, 0.05))
            >>> run.finish()
            >>> hs.load_histograms(run.path)["grads/fc"]["."].buckets[0].shape
            (80, 3)
        """
        self._alerts.deliver()
        key = _args.key(key)
        checked_bins = _args.bins_or_edges(bins)
        checked_range = _args.value_range(range, checked_bins)
        wall_time = _args.wall_time(time)
        if step is not None:
            step = _args.whole_number(step, "step", minimum=0)
        size = snapshot_nbytes(values) + (0 if weights is None else snapshot_nbytes(weights))
        if not self._writer.reserve(key, size):
            return
        try:
            snapshot = self._writer.pool.snapshot(values, "values")
            weight_snapshot = prepare_weights(weights, snapshot)
            step = self._next_step(key, step)
            self._writer.submit(
                Snapshot(
                    key,
                    step,
                    wall_time,
                    snapshot,
                    checked_bins,
                    checked_range,
                    weight_snapshot,
                    size,
                )
            )
        except BaseException:
            self._writer.give_back(size)
            raise

    def log(self, data: Mapping[str, Any], step: int | None = None) -> None:
        """Logs a `Histogram` or a number under each key of ``data``.

        Example:
            >>> import tempfile, numpy as np, histoscope as hs
            >>> run = hs.init("demo", logdir=tempfile.mkdtemp())
            >>> w = np.random.default_rng(0).normal(size=500)
            >>> run.log({"weights": hs.Histogram(w, bins=64), "loss": 0.31}, step=100)
            >>> run.finish()
            >>> hs.load_histograms(run.path)["weights"]["."].steps.tolist()
            [100]
        """
        if not isinstance(data, Mapping):
            raise TypeError(
                f"data must be a dict of key -> Histogram or number, got {type(data).__name__}"
            )
        self._alerts.deliver()
        wall_time = time.time()
        items = [(_args.key(key), loggable(key, value)) for key, value in data.items()]
        if step is not None:
            step = _args.whole_number(step, "step", minimum=0)
        for key, value in items:
            this_step = self._next_step(key, step)
            if isinstance(value, Histogram):
                self._writer.submit(ReadyHistogram(key, this_step, wall_time, value))
            else:
                self._writer.submit(Scalar(key, this_step, wall_time, value))

    def _log_batch(self, keys: Sequence[str], batch: _core.BinnedBatch, step: int) -> None:
        """Logs histograms the core has binned (`batched.bin_batch`) under ``keys``, at
        ``step``: written in one call, with no Python object per histogram. `watch` and
        `log_tree` log this way; it is their protocol with the run, not the user's.

        Example:
            >>> import tempfile, numpy as np, histoscope as hs
            >>> from histoscope import _core
            >>> batch = _core.bin_batch([np.arange(10.0), np.ones(3)], 4)
            >>> with hs.init("demo", logdir=tempfile.mkdtemp()) as run:
            ...     run._log_batch(["a", "b"], batch, step=0)
            >>> sorted(hs.load_histograms(run.path))
            ['a', 'b']
        """
        # A watch logs from inside the backward pass: nothing is raised there.
        self._alerts.deliver(can_raise=False)
        if len(keys) != len(batch):
            raise ValueError(f"{len(keys)} keys for {len(batch)} histograms; give one key each")
        step = _args.whole_number(step, "step", minimum=0)
        checked = [_args.key(key) for key in keys]
        for key in checked:
            self._next_step(key, step)
        self._writer.submit(ReadyBatch(checked, step, time.time(), batch))

    # A JAX pytree's array leaves, binned at once: see histoscope.write.tree.
    log_tree = _log_tree

    # A weight matrix's spectrum, α, stable rank and λ_max: see histoscope.write.spectrum.
    log_spectrum = _log_spectrum

    def define_metric(
        self, pattern: str, *, section: str | None = None, hidden: bool = False
    ) -> None:
        """Puts the keys matching the glob ``pattern`` (``*``, ``?``) in ``section``, or hides them.

        Stored in the events file, so ``histoscope view`` and ``histoscope
        report`` honour it: matching cards go under the ``section`` heading
        instead of their key's prefix, and ``hidden`` cards are listed
        collapsed, shown on demand. A later declaration wins over an earlier one.

        Example:
            >>> import tempfile, histoscope as hs
            >>> run = hs.init("demo", logdir=tempfile.mkdtemp())
            >>> run.define_metric("grads/*", section="Gradients")
            >>> run.define_metric("debug/*", hidden=True)
            >>> run.finish()
        """
        if not isinstance(pattern, str) or not pattern:
            raise ValueError(f"pattern must be a non-empty glob string, got {pattern!r}")
        if section is not None and (not isinstance(section, str) or not section.strip()):
            raise ValueError(f"section must be a non-empty string or None, got {section!r}")
        self._writer.locked(
            lambda: self._writer.file.write_layout(pattern, section, bool(hidden), time.time())
        )

    def note_optimizer(self, optimizer: Any) -> None:
        """Notes the optimizer that trains this run, for ``histoscope check`` (``watch`` does).

        Example:
            >>> import tempfile, torch, histoscope as hs
            >>> run = hs.init("demo", logdir=tempfile.mkdtemp())
            >>> run.note_optimizer(torch.optim.AdamW(torch.nn.Linear(4, 1).parameters()))
            >>> run.finish()
        """
        classes = optimizer_classes(optimizer)
        self._writer.locked(lambda: self._writer.file.write_optimizer(classes, time.time()))

    def flush(self) -> None:
        """Waits until everything logged so far is written and flushed to the operating system.

        Returns at once, with a warning, if the writer thread has stopped.
        """
        done = threading.Event()
        self._writer.submit(Flush(done))
        while not done.wait(_POLL_SECONDS):
            if not self._writer.alive:
                self._writer.warn_once(
                    "flush", "the writer thread has stopped; nothing more is written"
                )
                return
        self._alerts.deliver()

    def check_alerts(self) -> None:
        """Delivers the alerts found so far (see `histoscope.init`'s ``alerts``): warns,
        calls the handler, or raises `TrainingProblem`. Logging calls and a watched
        model's forward pass do this; call it where neither happens."""
        self._alerts.deliver()

    @property
    def prompt_alerts(self) -> bool:
        """Whether alerts must come within one logging interval (``alerts="raise"`` or a
        callable): a watch then waits for the writer to judge each logged step."""
        alerts = self._alerts.policy.alerts
        return callable(alerts) or alerts == "raise"

    def on_alert(self, listener: Callable[[Finding], Any]) -> None:
        """Also hands each alert to ``listener`` when it is delivered, whatever ``alerts`` does."""
        self._alerts.listeners.append(listener)

    def _hold_problems(self) -> None:
        """Never raises `TrainingProblem` itself: a watch agreeing with other ranks does."""
        self._alerts.raise_here = False

    def _take_problem(self) -> Finding | None:
        """The alert that should stop the training, if one is held, handed over once."""
        self._alerts.deliver(can_raise=False)
        return self._alerts.held.pop(0) if self._alerts.held else None

    # The watch's protocol was public before 1.0; the old names warn for one release.
    def log_batch(self, keys: Sequence[str], batch: _core.BinnedBatch, step: int) -> None:
        """Deprecated: the watch's protocol, now private (`log` takes histograms)."""
        warn_renamed("Run.log_batch", "Run.log; Run._log_batch is the watch's, private")
        self._log_batch(keys, batch, step)

    def hold_problems(self) -> None:
        """Deprecated: the watch's protocol, now private."""
        warn_renamed("Run.hold_problems", "nothing; Run._hold_problems is the watch's, private")
        self._hold_problems()

    def take_problem(self) -> Finding | None:
        """Deprecated: the watch's protocol, now private (`check_alerts` delivers alerts)."""
        warn_renamed(
            "Run.take_problem", "Run.check_alerts; Run._take_problem is the watch's, private"
        )
        return self._take_problem()

    def findings(self) -> list[Finding]:
        """The run's findings so far, by the rules of `histoscope check`, up to the last
        step written (all of them once finished); empty with ``alerts="off"``.

        Example:
            >>> import tempfile, numpy as np, histoscope as hs
            >>> seen = []
            >>> with hs.init("demo", logdir=tempfile.mkdtemp(), alerts=seen.append) as run:
            ...     for step in range(3):
            ...         run.add_histogram("activations/relu", np.zeros(100), step=step)
            ...     run.flush()
            ...     [f.kind for f in run.findings()], [a.step for a in seen]
            (['dead'], [0])
        """
        return [Finding._of(record) for record in self._writer.file.live_findings()]

    def finish(self, timeout: float | None = FINISH_TIMEOUT_SECONDS) -> None:
        """Writes what is pending, flushes and closes the file. Safe to call twice.

        Waits at most ``timeout`` seconds (None: as long as it takes) for the
        writer thread; if it is stuck or has died, warns with what was not
        written. Also warns with the number of histograms that
        ``on_full="drop"`` dropped, if any.
        """
        for watch in self._watches:
            watch.remove()
        self._watches = []
        if not self._writer.stop(timeout):
            return
        self._alerts.finish()
        _open_runs.discard(self)
        self._writer.report_losses(f"histoscope run {self.project}/{self.name}", self.path, timeout)

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.finish()

    def __repr__(self) -> str:
        state = "finished" if self.closed else "open"
        return f"Run(project={self.project!r}, name={self.name!r}, dir={str(self.dir)!r}, {state})"

    def _next_step(self, key: str, step: int | None) -> int:
        step = self._last_step.get(key, -1) + 1 if step is None else step
        self._last_step[key] = step
        return step


@atexit.register
def _finish_open_runs() -> None:
    for run in list(_open_runs):
        run.finish()
