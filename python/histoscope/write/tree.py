"""Pytrees logged whole: `Run.log_tree` bins every array leaf of a JAX pytree at once.

Flax parameters, gradients, Optax states and Equinox modules are pytrees.
Their leaves are keyed by their path (``jax.tree_util.tree_flatten_with_path``):
dict keys, sequence indices and attribute names joined by ``/`` after the
prefix, for example ``parameters/Dense_0/kernel``; a final ``value``
attribute (a Flax NNX variable's) is left out. Leaves that are not arrays of
real numbers (functions, None, PRNG keys, complex arrays) are left out too.

All leaves are binned before `log_tree` returns, in one batched call
(`jax_device.bin_jax_batch`): on their accelerator, with only the counts
transferred, or by the core from NumPy views of host buffers. Nothing but the
small histograms waits for the run's writer, as with `Run.watch`.

In a ``jax.jit``-compiled training step, either return the gradients from the
step and log them outside it every ``every`` steps (they stay on the device,
and are binned there), or call `log_tree` from ``jax.debug.callback`` inside
the step, under ``jax.lax.cond`` so that only logging steps pay for it (the
callback receives host copies of the arrays):

    def log_every(step, grads):
        jax.lax.cond(
            step % 100 == 0,
            lambda: jax.debug.callback(
                lambda s, g: run.log_tree(g, prefix="gradients", step=s), step, grads
            ),
            lambda: None,
        )

Call ``jax.effects_barrier()`` before `Run.finish` so that every callback has run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from .. import _args
from .jax_device import bin_jax_batch
from .options import DEFAULT_BINS, Filter, WatchOptions

if TYPE_CHECKING:
    from .sinks import HistogramSink


class TreeArguments(TypedDict, total=False):
    """`log_tree`'s keyword arguments besides ``step``, for ``**options`` signatures."""

    prefix: str
    bins: int
    filter: Filter


def log_tree(
    sink: HistogramSink,
    tree: Any,
    *,
    prefix: str = "parameters",
    step: int,
    bins: int = DEFAULT_BINS,
    filter: Filter = None,
) -> None:
    """Logs every array leaf of a JAX pytree (Flax or Equinox parameters, gradients, an
    Optax state) under ``<prefix>/<path>``, binned in one batched call: as `Run.log_tree`,
    ``sink`` is the run.

    Arrays on an accelerator are binned there and only their counts come to
    the host; CPU arrays reach the core without a copy. ``prefix`` is
    ``"parameters"`` unless given; ``filter`` (a regular expression searched
    in the path, or ``filter(path, leaf) -> bool``) keeps some leaves and
    ``bins`` sets the number of equal bins, as `Run.watch`'s do. See the
    module's doc for paths, leaves and ``jax.jit``-compiled steps.

    Example:
        >>> import tempfile, jax, jax.numpy as jnp, histoscope as hs
        >>> params = {"Dense_0": {"kernel": jnp.ones((3, 4)), "bias": jnp.zeros(4)}}
        >>> grads = jax.grad(lambda p: (p["Dense_0"]["kernel"] ** 2).sum())(params)
        >>> with hs.init("flax", logdir=tempfile.mkdtemp()) as run:
        ...     run.log_tree(params, step=0, filter="kernel")
        ...     run.log_tree(grads, prefix="gradients", step=0)
        >>> sorted(hs.load_histograms(run.path))
        ['gradients/Dense_0/bias', 'gradients/Dense_0/kernel', 'parameters/Dense_0/kernel']
    """
    prefix = _args.key(prefix).rstrip("/")
    if not prefix:
        raise ValueError("prefix must name a key, such as 'parameters' or 'gradients', got '/'")
    step = _args.whole_number(step, "step", minimum=0)
    options = WatchOptions(bins=bins, filter=filter)
    leaves = [(path, leaf) for path, leaf in array_leaves(tree) if options.keeps(path, leaf)]
    if not leaves:
        return
    keys = [f"{prefix}/{path}" if path else prefix for path, _ in leaves]
    batch = bin_jax_batch([leaf for _, leaf in leaves], options.bins, keys)
    sink._log_batch(keys, batch, step=step)


def array_leaves(tree: Any) -> list[tuple[str, Any]]:
    """``(path, leaf)`` for every leaf of ``tree`` that is an array of real numbers.

    Example:
        >>> import jax.numpy as jnp
        >>> [path for path, _ in array_leaves({"a": [jnp.ones(2), None], "b": print})]
        ['a/0']
    """
    try:
        from jax.tree_util import tree_flatten_with_path
    except ImportError:
        raise ImportError(
            "log_tree reads pytrees with JAX: pip install 'histoscope[jax]'"
        ) from None
    flat, _ = tree_flatten_with_path(tree)
    return [(path_name(path), leaf) for path, leaf in flat if _is_real_array(leaf)]


def path_name(path: tuple[Any, ...]) -> str:
    """A pytree path as a key: its parts joined by ``/``, without a final ``value`` attribute.

    Example:
        >>> from jax.tree_util import DictKey, GetAttrKey, SequenceKey
        >>> path_name((DictKey("Dense_0"), SequenceKey(1), GetAttrKey("value")))
        'Dense_0/1'
    """
    parts = [_part(entry) for entry in path]
    if path and type(path[-1]).__name__ == "GetAttrKey" and parts[-1] == "value":
        parts.pop()
    return "/".join(parts)


def _part(entry: Any) -> str:
    for field in ("key", "idx", "name"):
        if hasattr(entry, field):
            return str(getattr(entry, field))
    return str(entry)


def _is_real_array(leaf: Any) -> bool:
    if not hasattr(leaf, "shape") or not hasattr(leaf, "dtype"):
        return False
    try:
        dtype = np.dtype(leaf.dtype)
    except TypeError:  # PRNG key arrays and other extended dtypes
        return False
    # ml_dtypes' bfloat16, float8 and int4 are NumPy dtypes of kind "V".
    return dtype.kind in "biuf" or (
        dtype.kind == "V" and dtype.name.startswith(("bfloat", "float", "int", "uint"))
    )
