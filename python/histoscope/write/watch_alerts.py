"""How a watch brings its run's alerts to the training loop.

A watched model's training forward pass is a call into the run: the alerts
found since the last one are delivered there, so a `TrainingProblem` leaves
``model(x)`` in the loop that trains, never the backward pass.

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
    from .alerts import Alert

__all__ = ["WatchAlerts", "agrees_across_ranks"]


def agrees_across_ranks(options: WatchOptions) -> bool:
    """Whether ranks must agree on stopping: ``alerts="raise"`` under ``torch.distributed``."""
    if options.alerts != "raise":
        return False
    import torch.distributed as dist

    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


class WatchAlerts:
    """A watch's side of its run's alerts (see the module's doc).

    Example:
        >>> from histoscope.write.watch import NO_SINK
        >>> alerts = WatchAlerts(NO_SINK, WatchOptions())
        >>> alerts.agreed, alerts.before_forward()
        (False, None)
    """

    def __init__(self, sink: Any, options: WatchOptions) -> None:
        self.sink = sink
        self.agreed = agrees_across_ranks(options)
        self.source = options.rank
        self.problem: Alert | None = None
        if self.agreed and hasattr(sink, "hold_problems"):
            sink.hold_problems()

    def before_forward(self) -> None:
        """Delivers the run's alerts, or raises the problem the ranks agreed on."""
        if not self.agreed:
            check = getattr(self.sink, "check_alerts", None)
            if check is not None:
                check()
            return
        if self.problem is not None:
            problem, self.problem = self.problem, None
            raise TrainingProblem(problem.describe(), problem)

    def at_logged_step(self) -> None:
        """Every rank, at each logged step: learns whether the writing rank holds a problem."""
        if not self.agreed:
            return
        import torch.distributed as dist

        take = getattr(self.sink, "take_problem", None)
        held = [take() if take is not None else None]
        dist.broadcast_object_list(held, src=self.source)
        if held[0] is not None and self.problem is None:
            self.problem = held[0]
