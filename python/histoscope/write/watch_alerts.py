"""How a watch brings its run's alerts to the training loop.

A watched model's training forward pass is a call into the run: the alerts
found since the last one are delivered there, so a `TrainingProblem` leaves
``model(x)`` in the loop that trains, never the backward pass. Where alerts
must come promptly (``alerts="raise"`` or a callable), the first forward pass
after a logged step waits for the writer to write and judge it (`Run.flush`),
so that a problem stops the loop within one logging interval.

Under ``torch.distributed`` with ``alerts="raise"``, one rank's findings must
stop every rank at the same step, or the others wait forever in their next
collective. Every rank's watch then takes part: at each logged step, the rank
that writes (``rank=``) tells the others whether it holds a problem (one
``broadcast_object_list``), and each rank raises it at its next training
forward pass. The writing rank's run never raises on its own then.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import TrainingProblem
from .options import WatchOptions

if TYPE_CHECKING:
    from ..diagnose import Finding


def agrees_across_ranks(options: WatchOptions) -> bool:
    """Whether ranks must agree on stopping: ``alerts="raise"`` under ``torch.distributed``."""
    if options.alerts != "raise":
        return False
    import torch.distributed as dist

    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


class WatchAlerts:
    """A watch's side of its run's alerts (see the module's doc).

    Example:
        >>> from histoscope.write.sinks import NO_SINK
        >>> alerts = WatchAlerts(NO_SINK, WatchOptions())
        >>> alerts.agreed, alerts.before_forward()
        (False, None)
    """

    def __init__(self, sink: Any, options: WatchOptions) -> None:
        self.sink = sink
        self.agreed = agrees_across_ranks(options)
        self.source = options.rank
        self.problem: Finding | None = None
        #: A step was logged since alerts were last delivered.
        self.logged = False
        if self.agreed and hasattr(sink, "_hold_problems"):
            sink._hold_problems()

    def before_forward(self) -> None:
        """Delivers the run's alerts, or raises the problem the ranks agreed on."""
        if not self.agreed:
            logged, self.logged = self.logged, False
            if logged and getattr(self.sink, "prompt_alerts", False):
                self.sink.flush()  # the step logged is judged before the next one runs
            elif hasattr(self.sink, "check_alerts"):
                self.sink.check_alerts()
            return
        if self.problem is not None:
            problem, self.problem = self.problem, None
            raise TrainingProblem(problem.describe(), problem)

    def at_logged_step(self) -> None:
        """Every rank, at each logged step: learns whether the writing rank holds a problem."""
        if not self.agreed:
            self.logged = True
            return
        import torch.distributed as dist

        if hasattr(self.sink, "_take_problem"):
            self.sink.flush()  # this step judged, so every rank stops after it
        take = getattr(self.sink, "_take_problem", None)
        held = [take() if take is not None else None]
        dist.broadcast_object_list(held, src=self.source)
        if held[0] is not None and self.problem is None:
            self.problem = held[0]
