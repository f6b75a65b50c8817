"""How long logging a Flax model's parameters takes: log_tree against a loop over the leaves.

A Flax MLP of 9.2 M parameters (784 inputs, six layers of 1280, 10 outputs: 14 leaves)
is initialised on the CPU; each contender logs every leaf at one step, and
the time until the histograms are written (flushed to the file) is the
median of ``--repeat`` steps after one warm-up step:

| contender | what runs |
| --- | --- |
| log_tree | ``run.log_tree(params, step=i)`` then ``run.flush()`` |
| log_tree, device kernel | the same with the accelerator kernel forced on the CPU arrays |
| tensorboardX | ``writer.add_histogram(path, np.asarray(leaf), i)`` for each leaf, ``flush()`` |
| tf.summary | ``tf.summary.histogram(path, leaf, step=i)`` for each leaf, ``flush()`` |

tensorboardX and tf.summary bin in 30 buckets (their default); histoscope in
64. Contenders that are not installed are listed as such.

    python benches/bench_log_tree.py [--repeat 10]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

import histoscope as hs
from histoscope.write import jax_device
from histoscope.write.tree import array_leaves

WIDTH, DEPTH = 1280, 6


class Mlp(nn.Module):
    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        for _ in range(DEPTH):
            x = nn.relu(nn.Dense(WIDTH)(x))
        return nn.Dense(10)(x)


def log_tree(params: dict, logs: str) -> Callable[[int], None]:
    run = hs.init("bench", logdir=logs)

    def step(i: int) -> None:
        run.log_tree(params, step=i)
        run.flush()

    return step


def log_tree_on_device(params: dict, logs: str) -> Callable[[int], None]:
    logged = log_tree(params, logs)

    def step(i: int) -> None:
        forced = jax_device.on_accelerator
        jax_device.on_accelerator = lambda array: True  # type: ignore[assignment]
        try:
            logged(i)
        finally:
            jax_device.on_accelerator = forced  # type: ignore[assignment]

    return step


def tensorboardx(params: dict, logs: str) -> Callable[[int], None]:
    from tensorboardX import SummaryWriter

    writer = SummaryWriter(logs)
    leaves = array_leaves(params)

    def step(i: int) -> None:
        for path, leaf in leaves:
            writer.add_histogram(path, np.asarray(leaf), i)
        writer.flush()

    return step


def tf_summary(params: dict, logs: str) -> Callable[[int], None]:
    import tensorflow as tf

    writer = tf.summary.create_file_writer(logs)
    leaves = array_leaves(params)

    def step(i: int) -> None:
        with writer.as_default():
            for path, leaf in leaves:
                tf.summary.histogram(path, np.asarray(leaf), step=i)
        writer.flush()

    return step


CONTENDERS: dict[str, Callable[[dict, str], Callable[[int], None]]] = {
    "log_tree": log_tree,
    "log_tree, device kernel": log_tree_on_device,
    "tensorboardX": tensorboardx,
    "tf.summary": tf_summary,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    params = Mlp().init(jax.random.key(0), jnp.ones((1, 784)))["params"]
    leaves = array_leaves(params)
    total = sum(int(leaf.size) for _, leaf in leaves)
    print(
        f"Flax MLP: {total / 1e6:.1f} M parameters in {len(leaves)} leaves, "
        f"median of {args.repeat} steps"
    )
    print(f"{'contender':<26}{'ms / step':>10}{'x log_tree':>12}")
    ours = None
    for name, make in CONTENDERS.items():
        try:
            step = make(params, tempfile.mkdtemp())
        except ImportError:
            print(f"{name:<26}{'not installed':>22}")
            continue
        step(0)
        times = []
        for i in range(1, args.repeat + 1):
            start = time.perf_counter()
            step(i)
            times.append(1000 * (time.perf_counter() - start))
        median = statistics.median(times)
        ours = median if ours is None else ours
        print(f"{name:<26}{median:>10.1f}{median / ours:>11.1f}x")


if __name__ == "__main__":
    main()
