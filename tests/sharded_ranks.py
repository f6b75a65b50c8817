"""The ranks of test_sharded's process groups: real gloo groups of fresh processes on the CPU.

Each scenario builds a small model sharded one way, watches it on every rank
(rank 0 alone with a run: the others get a watch that only takes part),
trains two steps, and after each backward pass gathers every parameter and
gradient whole by the framework's own means (``full_tensor()``,
``summon_full_params``, an all-gather of FSDP1's flat gradient). Rank 0
saves what it gathered beside its run (``expected*.npz``, keyed
``"<step>:<key>"``) and how many collectives the watch ran
(``collectives.json``), for test_sharded to hold the histograms against.
"""

from __future__ import annotations

import json
import os
import time
import traceback
import warnings
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn

import histoscope as hs
from histoscope.write.shards import original_name

STEPS = 2


def start(world: int, target: Callable[..., None], args: tuple, timeout: float) -> list[int]:
    """Runs ``target(rank, world, *args)`` in ``world`` fresh processes and returns their exit
    codes; a process still running after ``timeout`` seconds is killed (exit code None)."""
    context = mp.get_context("spawn")
    processes = [
        context.Process(target=_guarded, args=(target, rank, world, *args)) for rank in range(world)
    ]
    for process in processes:
        process.start()
    deadline = time.monotonic() + timeout
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
    codes = []
    for process in processes:
        if process.is_alive():
            process.kill()
            process.join()
            codes.append(None)
        else:
            codes.append(process.exitcode)
    return codes


def ran_in(
    folder: Path, world: int, target: Callable[..., None], timeout: float, *extra: Any
) -> tuple[list[int], str]:
    """`start`s ``target(rank, world, init_file, folder, *extra)``, its init file in
    ``folder``; returns the exit codes, and the tracebacks the ranks that failed left there."""
    codes = start(world, target, (str(folder / "init"), str(folder), *extra), timeout)
    return codes, "\n".join(p.read_text() for p in sorted(folder.glob("rank*.error")))


def _guarded(target: Callable[..., None], rank: int, world: int, *args: Any) -> None:
    """Runs one rank, its traceback saved as ``<out>/rank<r>.error`` if it fails."""
    out = Path(args[1])
    try:
        target(rank, world, *args)
    except BaseException:
        (out / f"rank{rank}.error").write_text(traceback.format_exc())
        raise


def scenarios(rank: int, world: int, init_file: str, out: str, names: list[str]) -> None:
    """Every scenario in ``names``, one after another in one process group."""
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    for name in names:
        folder = Path(out) / name
        folder.mkdir(parents=True, exist_ok=True)
        {**SCENARIOS, **CHECKS}[name](rank, folder)
        dist.barrier()
    dist.destroy_process_group()


def mlp(dtype: torch.dtype = torch.float32, hidden: int = 7) -> nn.Sequential:
    """Rows that four ranks share unevenly (7: 2, 2, 2, 1; 3: 1, 1, 1, 0) and a LayerNorm."""
    torch.manual_seed(0)
    layers = [nn.Linear(5, hidden), nn.ReLU(), nn.Linear(hidden, 3), nn.LayerNorm(3)]
    return nn.Sequential(*layers).to(dtype)


def batch(step: int, seed: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    generator = torch.Generator().manual_seed(1000 * step + seed)
    return torch.randn(6, 5, generator=generator).to(dtype)


def train_watched(
    rank: int,
    out: Path,
    model: nn.Module,
    gather: Callable[[nn.Module], dict[str, torch.Tensor]],
    *,
    dtype: torch.dtype = torch.float32,
    seed: int | None = None,
    inputs: Callable[[int], torch.Tensor] | None = None,
    saved_as: Path | None = None,
    **options: Any,
) -> None:
    """Trains ``model`` two steps under ``hs.watch(log="all", every=1)`` on ``inputs``
    (by default each step's `batch` for this rank, or for ``seed``), saving what
    ``gather`` gathers after each backward pass as ``saved_as`` (by default
    ``expected.npz``, on rank 0)."""

    def own_batch(step: int) -> torch.Tensor:
        return batch(step, rank if seed is None else seed, dtype)

    inputs = inputs or own_batch
    if saved_as is None and rank == 0:
        saved_as = out / "expected.npz"
    if rank == 0:
        hs.init("p", run_name="r", logdir=out)
    watch = hs.watch(model, log="all", every=1, **options)
    calls = _count_collectives(watch)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    expected: dict[str, np.ndarray] = {}
    collectives = []
    for step in range(STEPS):
        calls.clear()
        model(inputs(step)).float().pow(2).mean().backward()
        collectives.append(len(calls))
        for key, tensor in gather(model).items():
            expected[f"{step}:{key}"] = tensor.detach().double().numpy()
        optimizer.step()
        optimizer.zero_grad()
    if saved_as is not None:
        np.savez(saved_as, **expected)
    if rank == 0:
        hs.finish()
        (out / "collectives.json").write_text(json.dumps(collectives))
    watch.remove()


def _count_collectives(watch: Any) -> list[str]:
    """The watch's own collectives from now on: calls on its gloo groups."""
    calls: list[str] = []
    for name in ("all_reduce", "reduce"):
        original = getattr(dist, name)

        def counted(*args: Any, _original: Any = original, _name: str = name, **kwargs: Any) -> Any:
            if kwargs.get("group") is watch._merge.group:
                calls.append(_name)
            return _original(*args, **kwargs)

        setattr(dist, name, counted)
    return calls


def dtensors(model: nn.Module) -> dict[str, torch.Tensor]:
    """Every DTensor parameter and gradient, whole."""
    whole = {}
    for name, parameter in model.named_parameters():
        whole[f"parameters/{name}"] = parameter.detach().full_tensor()
        if parameter.grad is not None:
            whole[f"gradients/{name}"] = parameter.grad.full_tensor()
    return whole


def fsdp2_model(dtype: torch.dtype = torch.float32, **policy: Any) -> nn.Sequential:
    from torch.distributed.fsdp import fully_shard

    model = mlp(dtype)
    fully_shard(model[0], **policy)
    fully_shard(model[2], **policy)
    fully_shard(model, **policy)
    return model


def fsdp2(rank: int, out: Path, dtype: torch.dtype = torch.float32, **policy: Any) -> None:
    model = fsdp2_model(dtype, **policy)
    activations = dtype == torch.float32 and not policy
    train_watched(rank, out, model, dtensors, dtype=dtype, activations=activations)


def fsdp2_mixed_precision(rank: int, out: Path) -> None:
    from torch.distributed.fsdp import MixedPrecisionPolicy

    mixed = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    fsdp2(rank, out, mp_policy=mixed)


def fsdp2_bfloat16(rank: int, out: Path) -> None:
    fsdp2(rank, out, dtype=torch.bfloat16)


def hsdp(rank: int, out: Path) -> None:
    """FSDP2 on a 2 x 2 mesh: replicated along the first dimension, sharded along the second."""
    from torch.distributed.device_mesh import init_device_mesh

    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("replicate", "shard"))
    fsdp2(rank, out, mesh=mesh)


def tensor_parallel(rank: int, out: Path) -> None:
    """``parallelize_module`` along "tp" of a 2 x 2 mesh, then FSDP2 along "dp": the row-wise
    layer's bias is replicated along "tp", the LayerNorm (not parallelized) lives on "dp"."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        RowwiseParallel,
        parallelize_module,
    )

    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
    model = mlp(hidden=8)  # tensor parallelism wants even shards
    parallelize_module(model, mesh["tp"], {"0": ColwiseParallel(), "2": RowwiseParallel()})
    fully_shard(model, mesh=mesh["dp"])
    # The ranks of one "tp" group see the same batch, as tensor parallelism needs.
    train_watched(rank, out, model, dtensors, seed=mesh.get_coordinate()[0])


def pipeline_stages(rank: int, out: Path) -> None:
    """Two pipeline stages of two ranks each (a "pp" x "dp" mesh), FSDP2 within each stage:
    every rank watches its own stage, and rank 0 logs the other stage's tensors too. The
    first rank of each stage saves what it gathered (the stages train apart here: what
    passes between them is not what is watched)."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("pp", "dp"))
    stage, dp_rank = mesh.get_coordinate()
    kept = ("0", "2")[stage]
    model = nn.Sequential(OrderedDict([(kept, mlp().get_submodule(kept))]))
    fully_shard(model, mesh=mesh["dp"])
    # Stage 1's input stands in for what stage 0 would send it.
    inputs = (lambda step: batch(step, rank)) if stage == 0 else (lambda _: torch.randn(6, 7))
    saved_as = out / f"expected-stage{stage}.npz" if dp_rank == 0 else None
    train_watched(rank, out, model, dtensors, inputs=inputs, saved_as=saved_as)


def partial_and_replicate(rank: int, out: Path) -> None:
    """DTensor parameters made by hand: a Partial one (the sum of every rank's values) and a
    Replicate one, captured at step 0 without training."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor, Partial, Replicate

    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    model = nn.Module()
    mine = torch.Generator().manual_seed(rank)
    summed = DTensor.from_local(torch.randn(4, 3, generator=mine), mesh, [Partial()])
    same = DTensor.from_local(torch.arange(6.0).reshape(2, 3), mesh, [Replicate()])
    model.summed = nn.Parameter(summed)
    model.same = nn.Parameter(same)
    if rank == 0:
        hs.init("p", run_name="r", logdir=out)
    watch = hs.watch(model, log="parameters", every=1)
    watch.capture(0)
    whole = {f"0:{key}": t.double().numpy() for key, t in dtensors(model).items()}
    if rank == 0:
        hs.finish()
        np.savez(out / "expected.npz", **whole)
    watch.remove()


def fsdp1(rank: int, out: Path, use_orig_params: bool, strategy: str) -> None:
    from torch.distributed.fsdp import FullyShardedDataParallel, ShardingStrategy
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy

    mesh = None
    if strategy == "HYBRID_SHARD":
        from torch.distributed.device_mesh import init_device_mesh

        mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("replicate", "shard"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # FSDP1 is deprecated for FSDP2
        model = FullyShardedDataParallel(
            mlp(),
            auto_wrap_policy=ModuleWrapPolicy({nn.Linear}),
            use_orig_params=use_orig_params,
            sharding_strategy=getattr(ShardingStrategy, strategy),
            device_id=torch.device("cpu"),
            device_mesh=mesh,
        )
    train_watched(rank, out, model, _fsdp1_whole)


def _fsdp1_whole(model: nn.Module) -> dict[str, torch.Tensor]:
    """FSDP1's parameters by ``summon_full_params``; gradients by an all-gather of each flat
    gradient's shards, cut at the flat parameter's own numels."""
    from torch.distributed.fsdp import FullyShardedDataParallel, ShardingStrategy

    whole = {}
    with FullyShardedDataParallel.summon_full_params(model):
        for name, parameter in model.named_parameters():
            whole[f"parameters/{original_name(name)}"] = parameter.detach().clone()
    for path, module in model.named_modules():
        handle = getattr(module, "_handle", None)
        if not isinstance(module, FullyShardedDataParallel) or handle is None:
            continue
        flat = handle.flat_param
        grad = flat.grad.detach()
        if module.sharding_strategy != ShardingStrategy.NO_SHARD:
            size = dist.get_world_size(module.process_group)
            pieces = [torch.empty_like(grad) for _ in range(size)]
            dist.all_gather(pieces, grad, group=module.process_group)
            grad = torch.cat(pieces)
        views = grad[: sum(flat._numels_with_padding)].split(flat._numels_with_padding)
        views = [v for v, padding in zip(views, flat._is_padding_mask) if not padding]
        for fqn, view, shape in zip(flat._fqns, views, flat._shapes):
            whole[f"gradients/{original_name(f'{path}.{fqn}')}"] = view.reshape(shape)
    return whole


SCENARIOS: dict[str, Callable[[int, Path], None]] = {
    "fsdp2": fsdp2,
    "fsdp2_mixed_precision": fsdp2_mixed_precision,
    "fsdp2_bfloat16": fsdp2_bfloat16,
    "hsdp": hsdp,
    "tensor_parallel": tensor_parallel,
    "pipeline_stages": pipeline_stages,
    "partial_and_replicate": partial_and_replicate,
    "fsdp1_use_orig_params": lambda rank, out: fsdp1(rank, out, True, "FULL_SHARD"),
    "fsdp1_flat_parameters": lambda rank, out: fsdp1(rank, out, False, "FULL_SHARD"),
    "fsdp1_no_shard": lambda rank, out: fsdp1(rank, out, False, "NO_SHARD"),
    "fsdp1_hybrid_shard": lambda rank, out: fsdp1(rank, out, True, "HYBRID_SHARD"),
}


def refused(rank: int, out: Path) -> None:
    """A parameter that DeepSpeed ZeRO-3 partitioned with no ZeRO-3 optimizer to read it
    through (here each rank holds an empty tensor and its ``ds_tensor``, as
    ``deepspeed.zero.Init`` leaves them) beside an ordinary one: rank 0 saves the warnings
    it was given."""
    model = nn.Module()
    model.partitioned = nn.Parameter(torch.empty(0))
    model.partitioned.ds_tensor = torch.randn(3)
    model.plain = nn.Parameter(torch.ones(2))
    if rank == 0:
        hs.init("p", run_name="r", logdir=out)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        watch = hs.watch(model, log="parameters", every=1)
        watch.capture(0)
    if rank == 0:
        hs.finish()
        said = [f"{w.category.__name__}: {w.message}" for w in caught]
        (out / "warnings.json").write_text(json.dumps(said))
    watch.remove()


SCALED_STEPS = 8


def fsdp2_fp16_scaler(rank: int, out: Path) -> None:
    """FSDP2 in fp16 under a ``GradScaler`` whose first scale overflows: the whole
    gradients as the scaler unscales them, gathered by the test's own wrapper of its
    ``unscale_`` on every rank, saved for the steps it applied; the skipped steps beside."""
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    model = mlp()
    mixed = MixedPrecisionPolicy(param_dtype=torch.float16, reduce_dtype=torch.float32)
    for part in (model[0], model[2], model):
        fully_shard(part, mp_policy=mixed)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**20)
    unscaled: dict[str, np.ndarray] = {}
    own_unscale = scaler.unscale_

    def unscale_(opt: torch.optim.Optimizer) -> None:
        own_unscale(opt)
        for key, tensor in dtensors(model).items():  # full_tensor(): every rank gathers
            if key.startswith("gradients/"):
                unscaled[key] = tensor.detach().double().numpy()

    scaler.unscale_ = unscale_  # type: ignore[method-assign]
    if rank == 0:
        hs.init("p", run_name="r", logdir=out)
    watch = hs.watch(model, log="gradients", every=1)
    expected: dict[str, np.ndarray] = {}
    skipped: list[int] = []
    for step in range(SCALED_STEPS):
        scaler.scale(model(batch(step, rank)).float().pow(2).mean()).backward()
        scale = scaler.get_scale()
        scaler.step(optimizer)
        scaler.update()
        if scaler.get_scale() < scale:
            skipped.append(step)
        else:
            expected.update({f"{step}:{key}": v for key, v in unscaled.items()})
        optimizer.zero_grad()
    watch.remove()
    if rank == 0:
        hs.finish()
        np.savez(out / "expected.npz", **expected)
        (out / "skipped.json").write_text(json.dumps(skipped))
    # A training with no scaler while this one's is still alive, with its scale: it is
    # not taken for the new model's (no optimizer of that model is unscaled by it).
    after = out / "no_scaler_after"
    after.mkdir(exist_ok=True)
    train_watched(rank, after, fsdp2_model(), dtensors)
    assert scaler.get_scale() > 0


CHECKS: dict[str, Callable[[int, Path], None]] = {
    "refused": refused,
    "fsdp2_fp16_scaler": fsdp2_fp16_scaler,
}
"""Scenarios checked apart from the whole-tensor comparison."""


TIMEOUT = 5.0


def faults(rank: int, world: int, init_file: str, out: str) -> None:
    """Two models sharded over both ranks, one after the other, put through
    `fault_drill`."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard, distribute_tensor

    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    mesh = init_device_mesh("cpu", (world,))

    def sharded() -> nn.Module:
        model = nn.Module()
        weight = torch.arange(12.0).reshape(6, 2)
        model.weight = nn.Parameter(distribute_tensor(weight, mesh, [Shard(0)]))
        return model

    fault_drill(rank, out, sharded)
    os._exit(0)  # the group's peer is gone: its teardown at exit could abort this rank


def drilled(target: Callable[..., None], folder: Path, seconds: float, model: str) -> dict:
    """Runs `target` (a `fault_drill` on two ranks) in `folder` and checks what every
    drill must show: rank 0 outlives its peer's death and returns normally; the step
    the peer missed fails within the watch's timeout, later steps and finish() do not
    wait; both runs read without a warning; and one ShardedWarning per watch of
    `model` names the failed collectives. Returns each fault's run, by tag."""
    codes, errors = ran_in(folder, 2, target, seconds)
    assert codes == [0, 3], errors or f"exit codes {codes}"
    said = json.loads((folder / "rank0.json").read_text())
    times, warned = said["times"], said["warnings"]
    runs = {}
    for fault in ("hang", "death"):
        assert times[f"{fault}: capture 1"] < TIMEOUT + 5.0, times
        assert times[f"{fault}: capture 2"] < 0.5 and times[f"{fault}: finish"] < 3.0, times
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            loaded = hs.load_histograms(folder / "p", runs=[fault])
        runs[fault] = {tag: by_run[fault] for tag, by_run in loaded.items()}
    assert len(warned) == 2, warned
    for warning in warned:
        assert warning.startswith(f"ShardedWarning: histoscope watch of {model}: step 1: ")
        assert "the collectives over the 2 ranks failed" in warning
    return runs


def fault_drill(rank: int, out: str, make: Callable[[], Any]) -> None:
    """Two models from `make` (made by every rank together), one after the other, with
    a run each on rank 0. Step 0 of each is logged by both ranks; then rank 1 stops
    taking part in the first (it sleeps past the timeout, then comes back) and dies
    after step 0 of the second, while rank 0 goes on capturing and finishes both runs.
    Rank 0 saves how long each of its calls took, and the warnings it was given."""
    times: dict[str, float] = {}
    said: list[str] = []
    for fault in ("hang", "death"):
        model = make()
        run = hs.init("p", run_name=fault, logdir=out) if rank == 0 else None
        watcher: Callable[..., Any] = hs.watch if run is None else run.watch
        watch = watcher(model, log="parameters", every=1, timeout=TIMEOUT)
        watch.capture(0)
        if rank == 1:
            if fault == "death":
                os._exit(3)
            time.sleep(2 * TIMEOUT)
        else:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                for step in (1, 2):
                    began = time.monotonic()
                    watch.capture(step)
                    times[f"{fault}: capture {step}"] = time.monotonic() - began
                began = time.monotonic()
                run.finish(timeout=TIMEOUT)
                times[f"{fault}: finish"] = time.monotonic() - began
            said += [f"{w.category.__name__}: {w.message}" for w in caught]
        if fault == "hang":
            dist.barrier()  # the second model is made by both ranks together
    (Path(out) / "rank0.json").write_text(json.dumps({"times": times, "warnings": said}))
