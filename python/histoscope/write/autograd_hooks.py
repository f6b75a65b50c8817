"""Where a watch meets autograd: a parameter's gradient hook, a callback at the end of the
backward pass, forward hooks kept out of compiled graphs, and a module's output tensors.

Example:
    >>> import torch
    >>> [t.shape for t in tensors_of((torch.ones(2), "not a tensor"))]
    [torch.Size([2])]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch


def outside_compiled_graphs(hook: Callable[..., None]) -> Callable[..., None]:
    """``hook`` run by Python even inside ``torch.compile``d code: a graph break at each
    watched leaf instead of a recompilation at every step (the hook reads the step)."""
    import torch

    disable = getattr(getattr(torch, "compiler", None), "disable", None)
    return hook if disable is None else disable(hook)


def on_gradient(param: torch.Tensor, hook: Callable[[Any], None]) -> Any:
    """Calls ``hook`` once a gradient of ``param`` is accumulated (or computed, on older torch)."""
    if hasattr(param, "register_post_accumulate_grad_hook"):
        return param.register_post_accumulate_grad_hook(hook)
    return param.register_hook(lambda grad: hook(param))


def queue_callback(callback: Callable[[], None]) -> None:
    """Runs ``callback`` when the backward pass in progress ends, as DDP does."""
    from torch.autograd import Variable

    Variable._execution_engine.queue_callback(callback)


def tensors_of(output: Any) -> list[torch.Tensor]:
    """The tensors a module returned: itself, or those in a list or tuple."""
    import torch

    if isinstance(output, torch.Tensor):
        return [output]
    if isinstance(output, (list, tuple)):
        return [t for t in output if isinstance(t, torch.Tensor)]
    return []
