"""A zoo of short CPU trainings, healthy and broken, that measures `histoscope check`.

What it is
----------
Every case is one small training, written by one of three writers with one of
the key styles people use, and labelled by the generator itself with the
problem it was built to have:

- families: an MLP; a CNN with BatchNorm and residual blocks; a Transformer
  encoder with LayerNorm, GELU and AdamW; a BERT-style model built from a
  ``BertConfig`` and trained by the Hugging Face ``Trainer``; a GRU and an LSTM; an
  RL agent (policy and critic) whose returns and critic loss grow as it learns;
- conditions (and `zoo_optimizer`'s, issue 41): healthy (``fp16`` under a loss
  scaler whose first steps overflow; ``accumulate`` over micro-batches), skipped (a
  scaler that skips every step from `OVERFLOW_FROM`), stuck (an optimizer over a
  copy's parameters), vanishing (a deep sigmoid net), exploding (too high a
  learning rate, or the spikes below unclipped under SGD with momentum), NaN
  (a batch normalized by its own zero spread), dead ReLUs (a large negative
  bias), saturated tanh and sigmoid (inputs 30 times too large), collapsed
  (weight decay far too strong, SGD's or AdamW's, or under ``early`` so strong that
  it is mostly done by the second logged step); and spikes, a healthy run
  with a few batches whose loss, and so whose gradients, are `SPIKE_FACTOR`
  times larger, clipped to a norm of `SPIKE_CLIP` after they are logged (as
  LLM training does): spikes the loss comes back from;
- writers: PyTorch's ``SummaryWriter``, tensorboardX's, and histoscope's
  ``run.watch`` (or its ``transformers`` callback);
- key styles: ``run.watch``'s (``parameters/<name>``, ``gradients/<name>``,
  ``activations/<module>``); tutorial (``<name>``, ``<name>.grad``);
  ``weights/<name>`` and ``grads/<name>``; Lightning-style bare parameter names
  (``net.0.weight``, ``net.0.weight_grad``); activations as ``<layer>/activations``
  in every style but ``run.watch``'s.

Every training logs its loss as a scalar every step and its histograms every
`LOG_EVERY` steps. A healthy case must learn: the generator fails unless its
loss fell. A broken case must break as built: the generator checks the raw
tensors (the share of exact zeros, of values at the ends of ±1 or [0, 1], NaN
in the loss, the growth of the weights) and fails otherwise. What it found is
written beside the case, in ``labels.json``.

How it is scored
----------------
Each case says which kinds of finding it must give (``expected``: recall) and
which it may give as consequences of its problem (``allowed``: the gradients
behind dead or saturated units vanish; a diverged run turns NaN). A finding of
``warning`` or ``error`` whose kind is neither is a false alarm (precision).
The cases are split once, by hand, into a ``tune`` half (thresholds are chosen
on it) and a ``held-out`` half (what is reported); see ``docs/diagnosis.md``.

The cases histoscope writes are also diagnosed live as they train; their live
findings at the end must equal `check` on the files (printed last).

How to run
----------
    python benches/diagnosis_zoo.py                   # generate all (< 3 min), score both halves
    python benches/diagnosis_zoo.py --jobs 1          # one training at a time
    python benches/diagnosis_zoo.py --out /tmp/zoo    # keep the trainings there
    python benches/diagnosis_zoo.py --out /tmp/zoo --score-only   # score again, no training
    python benches/diagnosis_zoo.py --only mlp-dead-tbx-bare --show

``tests/test_diagnose.py`` generates a few cases (`PYTEST_CASES`) and checks them.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import shutil
import sys
import tempfile
import time
import warnings
import zlib
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from zoo_optimizer import (  # noqa: E402
    Precision,
    grew,
    micro_batches,
    streak_to_end,
    stuck,
    train_rl,
)

STEPS = 100
LOG_EVERY = 5
BATCH = 64

#: What a broken run may also show, besides its own kind: real consequences of
#: its problem, which are neither counted as found nor as false alarms.
CONSEQUENCES: dict[str, frozenset[str]] = {
    "healthy": frozenset(),
    # Units behind a saturated or dead layer get (almost) no gradient.
    "vanishing": frozenset({"saturated", "dead", "collapsed"}),
    # Diverged values turn NaN; weights pushed far out kill or saturate units behind them.
    "exploding": frozenset({"nonfinite", "dead", "saturated", "vanishing", "collapsed"}),
    # Values that were finite before the NaN may have grown first.
    "nonfinite": frozenset({"exploding"}),
    "dead": frozenset({"vanishing", "collapsed"}),
    "saturated": frozenset({"vanishing", "collapsed"}),
    # Weights decayed to nothing pass nothing on: dead units, vanishing gradients.
    "collapsed": frozenset({"vanishing", "dead"}),
    # A scaler that skips every step leaves the weights where they were.
    "skipped": frozenset({"stuck"}),
    "stuck": frozenset(),
}

KEY_STYLES = ("watch", "tutorial", "slashes", "bare")
WRITERS = ("torch", "tensorboardx", "histoscope")


@dataclass(frozen=True)
class Case:
    """One training of the zoo: what it is, how it is written, and which half it belongs to."""

    family: str
    condition: str
    writer: str
    keys: str
    half: str
    variant: str = ""

    @property
    def name(self) -> str:
        short = {"tensorboardx": "tbx", "histoscope": "hs"}.get(self.writer, self.writer)
        parts = [self.family, self.condition + (f"_{self.variant}" if self.variant else ""), short]
        return "-".join(parts + ([] if self.keys == "watch" else [self.keys]))

    @property
    def kind(self) -> str | None:
        """The kind of finding this case must give; None for a healthy case (spikes
        the loss comes back from are healthy: worth an ``info`` at most)."""
        if self.condition in ("healthy", "spikes"):
            return None
        return {"nan": "nonfinite"}.get(self.condition, self.condition)

    @property
    def allowed(self) -> frozenset[str]:
        return CONSEQUENCES["healthy" if self.kind is None else self.kind]


def _case(spec: str) -> Case:
    family, condition, writer, keys, half, *variant = spec.split()
    return Case(family, condition, writer, keys, half, *variant)


# family condition writer keys half [variant]
CASES: list[Case] = [
    _case(line)
    for line in """
    mlp healthy torch tutorial tune relu_adam
    mlp healthy tensorboardx slashes held-out tanh_sgd
    mlp healthy histoscope watch held-out relu_sgd
    mlp healthy torch bare tune sigmoid_adam
    mlp vanishing torch tutorial tune
    mlp vanishing histoscope watch held-out
    mlp vanishing tensorboardx slashes held-out
    cnn vanishing torch tutorial tune
    mlp exploding tensorboardx slashes tune sgd
    mlp exploding torch tutorial held-out adam
    mlp exploding tensorboardx bare tune spike
    mlp nan torch tutorial tune
    mlp nan histoscope watch held-out
    mlp dead tensorboardx bare tune
    mlp dead histoscope watch held-out
    mlp saturated torch tutorial tune tanh
    mlp saturated tensorboardx slashes held-out sigmoid
    mlp saturated histoscope watch held-out sigmoid
    mlp collapsed torch slashes tune
    mlp collapsed tensorboardx tutorial held-out
    mlp collapsed histoscope watch tune adamw
    mlp collapsed torch bare held-out adamw
    mlp spikes torch tutorial tune
    mlp spikes histoscope watch held-out
    cnn healthy torch tutorial tune
    cnn healthy histoscope watch held-out
    cnn healthy tensorboardx bare held-out sgd
    cnn exploding histoscope watch tune
    cnn exploding tensorboardx slashes held-out
    cnn exploding torch tutorial held-out spike
    cnn dead torch bare held-out
    cnn collapsed histoscope watch tune
    cnn collapsed tensorboardx slashes held-out adamw
    cnn nan tensorboardx slashes held-out
    cnn spikes tensorboardx bare held-out
    transformer healthy histoscope watch tune
    transformer healthy torch tutorial held-out
    transformer exploding tensorboardx slashes held-out
    transformer exploding histoscope watch held-out spike
    transformer nan torch bare tune
    transformer dead torch slashes tune
    transformer collapsed histoscope watch held-out
    transformer collapsed torch tutorial tune adamw
    transformer collapsed histoscope watch held-out adamw
    transformer spikes histoscope watch tune
    transformer spikes torch slashes held-out
    bert healthy histoscope watch tune
    bert healthy histoscope watch held-out deeper
    bert healthy torch tutorial held-out
    bert exploding histoscope watch held-out
    rnn healthy tensorboardx slashes tune gru
    rnn healthy histoscope watch held-out lstm
    rnn saturated torch tutorial tune gru
    rnn saturated histoscope watch held-out gru
    rnn exploding tensorboardx bare tune lstm
    rnn exploding torch slashes held-out gru
    rnn spikes tensorboardx bare tune lstm
    rnn spikes histoscope watch held-out gru
    mlp healthy histoscope watch tune fp16
    mlp healthy torch tutorial held-out fp16
    cnn healthy histoscope watch held-out fp16
    transformer healthy tensorboardx slashes tune fp16
    transformer healthy histoscope watch held-out fp16
    mlp healthy histoscope watch held-out accumulate
    transformer healthy histoscope watch tune accumulate
    mlp skipped histoscope watch tune
    cnn skipped histoscope watch held-out
    mlp stuck histoscope watch tune
    mlp stuck torch tutorial held-out
    cnn stuck histoscope watch held-out
    mlp collapsed histoscope watch held-out early
    cnn collapsed torch tutorial tune early
    rl healthy histoscope watch held-out
    rl healthy tensorboardx slashes tune
    rl healthy torch bare held-out
    """.strip().splitlines()
]

#: The cases tests/test_diagnose.py generates: one for each of issue 19's classes of
#: miss, and issue 28's two blind spots.
PYTEST_CASES = [
    "rnn-exploding_lstm-tbx-bare",
    "mlp-nan-torch-tutorial",
    "mlp-saturated_sigmoid-tbx-slashes",
    "bert-healthy-hs",
    "transformer-spikes-hs",
    "mlp-collapsed_adamw-torch-bare",
]

CASES_BY_NAME = {case.name: case for case in CASES}


# --- The writers ---------------------------------------------------------------


class Logger:
    """Where a training's histograms and loss go, under the case's writer and key style."""

    def __init__(self, case: Case, logdir: Path, model: nn.Module) -> None:
        self.case = case
        self.model = model
        self.logdir = logdir
        self.activations: dict[str, torch.Tensor] = {}
        self.run: Any = None
        self.writer: Any = None
        self._hooks: list[Any] = []
        if case.writer == "histoscope":
            import histoscope as hs

            self.run = hs.init("zoo", run_name=case.name, logdir=logdir)
            self.run.watch(model, log="all", activations=True, every=LOG_EVERY)
            return
        if case.writer == "torch":
            from torch.utils.tensorboard import SummaryWriter
        else:
            from tensorboardX import SummaryWriter  # type: ignore[no-redef]
        self.writer = SummaryWriter(str(logdir / case.name))
        for name, module in model.named_modules():
            if isinstance(module, ACTIVATION_MODULES):
                self._hooks.append(module.register_forward_hook(self._keep(name)))

    def _keep(self, name: str) -> Callable[..., None]:
        def hook(_module: nn.Module, _inputs: Any, output: Any) -> None:
            out = output[0] if isinstance(output, tuple) else output
            self.activations[name] = out.detach()

        return hook

    def histograms(self, step: int) -> None:
        """Logs parameters, gradients and activations at ``step``, after the backward pass."""
        if self.writer is None or step % LOG_EVERY:
            return
        param, grad, act = {
            "tutorial": ("{}", "{}.grad", "{}/activations"),
            "slashes": ("weights/{}", "grads/{}", "{}/activations"),
            "bare": ("{}", "{}_grad", "{}/activations"),
        }[self.case.keys]
        for name, p in self.model.named_parameters():
            self._histogram(param.format(name), p.detach(), step)
            if p.grad is not None:
                self._histogram(grad.format(name), p.grad, step)
        for name, out in self.activations.items():
            self._histogram(act.format(name), out, step)

    def _histogram(self, key: str, values: torch.Tensor, step: int) -> None:
        # Both writers raise on a tensor they cannot bin (no finite value at
        # all): the series just stops there, as it does for their users.
        try:
            self.writer.add_histogram(key, values, step)
        except ValueError:
            pass

    def loss(self, value: float, step: int) -> None:
        self.scalars({"loss": value}, step)

    def scalars(self, values: dict[str, float], step: int) -> None:
        if self.run is not None:
            self.run.log(values, step=step)
            return
        for key, value in values.items():
            self.writer.add_scalar(key, value, step)

    def metric_histogram(self, key: str, values: torch.Tensor, step: int) -> None:
        """A distribution that is no tensor of the model (an RL agent's returns)."""
        if self.run is not None:
            self.run.add_histogram(key, values, step=step)
        else:
            self._histogram(key, values, step)

    def close(self) -> None:
        for hook in self._hooks:
            hook.remove()
        if self.run is not None:
            self.run.finish()
            save_live_findings(self.run, self.logdir)
        else:
            self.writer.close()


def save_live_findings(run: Any, case_dir: Path) -> None:
    """What the run's live diagnosis found by its end, beside the case (``live.json``), for
    `score` to hold against `check` on the files."""
    found = [f.to_dict() for f in run.findings()]
    (case_dir / "live.json").write_text(json.dumps(found, indent=1) + "\n")


ACTIVATION_MODULES = (nn.ReLU, nn.Tanh, nn.Sigmoid, nn.GELU, nn.GRU, nn.LSTM)


# --- The families ----------------------------------------------------------------


@dataclass
class Setup:
    """A model, its batches, its loss and its optimizer: what one training needs."""

    model: nn.Module
    batch: Callable[[int], tuple[torch.Tensor, torch.Tensor]]
    optimizer: torch.optim.Optimizer
    loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = nn.functional.cross_entropy
    #: Applied to each input batch before the model: scaling, or the NaN of a zero spread.
    inputs: Callable[[torch.Tensor, int], torch.Tensor] = lambda x, _step: x
    watched: list[str] = field(default_factory=list)


def classes_of(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Four classes: which of four fixed directions ``x`` points most along."""
    return (x.flatten(1) @ w).argmax(1)


def mlp_setup(case: Case, gen: torch.Generator) -> Setup:
    act = {"tanh": nn.Tanh, "sigmoid": nn.Sigmoid}.get(case.variant.split("_")[0], nn.ReLU)
    if case.condition == "vanishing":
        act = nn.Sigmoid
    depth = 7 if case.condition == "vanishing" else 3
    widths = [16] + [48] * (depth - 1) + [4]
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(widths[:-1], widths[1:])):
        layers.append(nn.Linear(a, b))
        if i < len(widths) - 2:
            layers.append(act())
    model = nn.Sequential(*layers)
    if case.condition == "dead":
        nn.init.constant_(model[0].bias, -10.0)
    w = torch.randn(16, 4, generator=gen)
    scale = 30.0 if case.condition == "saturated" else 1.0

    def batch(_step: int) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.randn(BATCH, 16, generator=gen)
        return x, classes_of(x, w)

    optimizer = mlp_optimizer(case, model)
    return Setup(model, batch, optimizer, inputs=_inputs(case, scale))


def mlp_optimizer(case: Case, model: nn.Module) -> torch.optim.Optimizer:
    params = model.parameters()
    if case.condition == "exploding":
        if case.variant == "adam":
            return torch.optim.Adam(params, lr=1.0)
        if case.variant == "spike":
            return unclipped(params)
        return torch.optim.SGD(params, lr=10.0)
    if case.condition == "collapsed":
        return decaying(case, params)
    if case.condition == "vanishing" or case.variant.endswith("sgd"):
        return torch.optim.SGD(params, lr=0.1, momentum=0.9 if case.variant else 0.0)
    return torch.optim.Adam(params, lr=3e-3)


def decaying(case: Case, params: Iterable[nn.Parameter]) -> torch.optim.Optimizer:
    """Weight decay far too strong: SGD's (every step shrinks the weights by 30%), or
    under ``adamw`` AdamW's (`ADAMW_DECAY`), decoupled, which takes 7% of every weight
    a step while Adam's own steps stay near ``lr`` whatever the gradient: the weights
    settle 10^2 to 10^3 below their start, not at a point, and the loss at chance."""
    if case.variant == "adamw":
        lr, decay = ADAMW_DECAY
        return torch.optim.AdamW(params, lr=lr, weight_decay=decay)
    if case.variant == "early":  # 90% of every weight a step: gone by the second log
        return torch.optim.SGD(params, lr=0.5, weight_decay=1.8)
    return torch.optim.SGD(params, lr=0.1, weight_decay=3.0)


ADAMW_DECAY = (1e-3, 70.0)


def unclipped(params: Iterable[nn.Parameter]) -> torch.optim.Optimizer:
    """Under ``exploding`` ``spike``: the ``spikes`` batches without clipping, under SGD
    with momentum, whose step grows with the gradient (Adam's would not): a spike that
    throws the weights far and does not heal."""
    return torch.optim.SGD(params, lr=0.05, momentum=0.9)


def _inputs(case: Case, scale: float) -> Callable[[torch.Tensor, int], torch.Tensor]:
    """The batch as the model sees it: scaled, and under ``nan`` normalized by its own
    spread, which one constant batch (step `NAN_STEP`) makes 0/0."""
    if case.condition != "nan":
        return lambda x, _step: x * scale

    def normalized(x: torch.Tensor, step: int) -> torch.Tensor:
        if step == NAN_STEP:
            x = torch.ones_like(x)
        return (x - x.mean()) / x.std()

    return normalized


NAN_STEP = 7


class Residual(nn.Module):
    """Two 3x3 convolutions with BatchNorm, and the skip connection around them; under
    ``plain``, sigmoid units with neither normalization nor skip (a 1990s CNN)."""

    def __init__(self, channels: int, plain: bool = False) -> None:
        super().__init__()
        self.plain = plain
        act: type[nn.Module] = nn.Sigmoid if plain else nn.ReLU
        norm: Callable[[int], nn.Module] = (lambda _c: nn.Identity()) if plain else nn.BatchNorm2d
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=plain)
        self.bn1 = norm(channels)
        self.relu1 = act()
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=plain)
        self.bn2 = norm(channels)
        self.relu2 = act()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu1(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu2(out if self.plain else x + out)


class SmallCNN(nn.Module):
    def __init__(self, plain: bool = False) -> None:
        super().__init__()
        self.stem = nn.Conv2d(1, 8, 3, padding=1)
        self.bn = nn.Identity() if plain else nn.BatchNorm2d(8)
        self.relu = nn.Sigmoid() if plain else nn.ReLU()
        self.blocks = nn.Sequential(*(Residual(8, plain) for _ in range(3 if plain else 2)))
        self.pool = nn.AdaptiveAvgPool2d(2)
        self.head = nn.Linear(32, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.blocks(self.relu(self.bn(self.stem(x))))
        return self.head(self.pool(out).flatten(1))


def cnn_setup(case: Case, gen: torch.Generator) -> Setup:
    model = SmallCNN(plain=case.condition == "vanishing")
    if case.condition == "dead":
        nn.init.constant_(model.bn.bias, -10.0)

    def batch(_step: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The class is the quadrant of the image with the largest sum."""
        x = torch.randn(32, 1, 8, 8, generator=gen)
        quadrants = x.unfold(2, 4, 4).unfold(3, 4, 4).sum((-1, -2)).flatten(1)
        return x, quadrants.argmax(1)

    params = model.parameters()
    optimizer: torch.optim.Optimizer
    if case.condition == "exploding":
        optimizer = (
            unclipped(params) if case.variant == "spike" else torch.optim.Adam(params, lr=2.0)
        )
    elif case.condition == "collapsed":
        optimizer = decaying(case, params)
    elif case.variant == "sgd" or case.condition == "vanishing":
        optimizer = torch.optim.SGD(params, lr=0.05, momentum=0.9)
    else:
        optimizer = torch.optim.Adam(params, lr=3e-3)
    return Setup(model, batch, optimizer, inputs=_inputs(case, 1.0))


class SmallTransformer(nn.Module):
    def __init__(self, activation: nn.Module, vocab: int = 16, width: int = 32) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.position = nn.Parameter(torch.randn(8, width) * 0.02)
        layer = nn.TransformerEncoderLayer(
            width, 4, 64, dropout=0.0, activation=activation, batch_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, 4)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        hidden = self.encoder(self.embed(tokens) + self.position)
        return self.head(self.norm(hidden.mean(1)))


def token_batch(gen: torch.Generator, size: int = BATCH) -> tuple[torch.Tensor, torch.Tensor]:
    """Eight tokens of 16; the class is the most frequent token modulo 4."""
    tokens = torch.randint(0, 16, (size, 8), generator=gen)
    counts = nn.functional.one_hot(tokens % 4, 4).sum(1)
    return tokens, counts.argmax(1)


def transformer_setup(case: Case, gen: torch.Generator) -> Setup:
    if case.condition == "dead":
        # The feed-forward layers' ReLUs behind a bias of -10: dead from the start.
        model = SmallTransformer(nn.ReLU())
        for layer in model.encoder.layers:
            nn.init.constant_(layer.linear1.bias, -10.0)
    else:
        model = SmallTransformer(nn.GELU())
    params = model.parameters()
    optimizer: torch.optim.Optimizer
    if case.condition == "exploding":
        optimizer = (
            unclipped(params) if case.variant == "spike" else torch.optim.AdamW(params, lr=1.0)
        )
    elif case.condition == "collapsed":
        optimizer = decaying(case, params)
    else:
        optimizer = torch.optim.AdamW(params, lr=3e-3)
    if case.condition == "nan":
        # The NaN comes from the model: a zero-spread normalization of the embeddings.
        model.embed.register_forward_hook(_nan_at(NAN_STEP, model))
    return Setup(model, lambda _step: token_batch(gen), optimizer)


def _nan_at(step: int, model: nn.Module) -> Callable[..., torch.Tensor | None]:
    calls = {"n": 0}

    def hook(_module: nn.Module, _inputs: Any, output: torch.Tensor) -> torch.Tensor | None:
        calls["n"] += 1
        if calls["n"] - 1 == step and model.training:
            flat = torch.zeros_like(output)
            return (flat - flat.mean()) / flat.std()
        return None

    return hook


class Recurrent(nn.Module):
    def __init__(self, cell: str) -> None:
        super().__init__()
        kind = nn.GRU if cell == "gru" else nn.LSTM
        self.rnn = kind(4, 32, batch_first=True)
        self.head = nn.Linear(32, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _state = self.rnn(x)
        return self.head(out[:, -1])


def rnn_setup(case: Case, gen: torch.Generator) -> Setup:
    model = Recurrent(case.variant)

    def batch(_step: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The class is the input channel with the largest sum over the sequence."""
        x = torch.randn(32, 12, 4, generator=gen)
        return x, x.sum(1).argmax(1)

    params = model.parameters()
    optimizer: torch.optim.Optimizer
    if case.condition == "exploding":
        optimizer = torch.optim.SGD(params, lr=50.0)
    else:
        optimizer = torch.optim.Adam(params, lr=1e-2)
    scale = 100.0 if case.condition == "saturated" else 1.0
    return Setup(model, batch, optimizer, inputs=_inputs(case, scale))


SETUPS: dict[str, Callable[[Case, torch.Generator], Setup]] = {
    "mlp": mlp_setup,
    "cnn": cnn_setup,
    "transformer": transformer_setup,
    "rnn": rnn_setup,
}


# --- Training ------------------------------------------------------------------


@dataclass
class Trace:
    """What the generator saw of a training, to check that it went as built."""

    losses: list[float] = field(default_factory=list)
    zero_share: float = 0.0
    end_share: float = 0.0
    weight_growth: float = 1.0
    weight_shrink: float = 1.0
    gradient_spread: float = math.nan
    #: The gradient's norm before clipping at each step, where the case clips.
    gradient_norms: list[float] = field(default_factory=list)
    #: The steps the loss scaler skipped, under fp16.
    skipped: list[int] = field(default_factory=list)
    #: An RL case's mean return at each step.
    returns: list[float] = field(default_factory=list)

    def loss_fell(self) -> bool:
        n = max(1, len(self.losses) // 10)
        first, last = self.losses[:n], self.losses[-n:]
        return all(map(math.isfinite, first + last)) and sum(last) < 0.85 * sum(first)

    def spike_growth(self) -> float:
        """The smallest gradient norm of the `SPIKE_STEPS` over the median of the others."""
        spikes = [self.gradient_norms[s] for s in SPIKE_STEPS if s < len(self.gradient_norms)]
        others = sorted(n for s, n in enumerate(self.gradient_norms) if s not in SPIKE_STEPS)
        if not spikes or not others:
            return math.nan
        return min(spikes) / others[len(others) // 2]


#: The steps of a ``spikes`` case whose loss is `SPIKE_FACTOR` times larger: logged
#: steps (multiples of `LOG_EVERY`), so that the histograms show them, none the last.
SPIKE_STEPS = (30, 55, 80)
SPIKE_FACTOR = 1e4
#: The gradient norm a ``spikes`` case clips to, every step, after logging.
SPIKE_CLIP = 1.0


def train(case: Case, logdir: Path) -> Trace:
    """Trains ``case`` with its writer into ``logdir``; returns what it saw."""
    gen = torch.Generator().manual_seed(zlib.crc32(case.name.encode()))
    torch.manual_seed(gen.initial_seed())
    setup = SETUPS[case.family](case, gen)
    if case.condition == "stuck":
        setup.optimizer = stuck(setup.optimizer, setup.model)
    logger = Logger(case, logdir, setup.model)
    trace = Trace()
    watcher = Watcher(setup.model)
    start = weight_scales(setup.model)
    precision = Precision.of(case.condition, case.variant)
    micro = micro_batches(case.variant)
    for step in range(STEPS):
        setup.optimizer.zero_grad()
        for _ in range(micro):
            x, y = setup.batch(step)
            x = precision.overflowing(setup.inputs(x, step), step, case.condition)
            with precision.autocast():
                loss = setup.loss(setup.model(x).float(), y) / micro
            if step in SPIKE_STEPS and (case.condition == "spikes" or case.variant == "spike"):
                loss = loss * SPIKE_FACTOR
            precision.backward(loss)
        precision.unscale(setup.optimizer)
        logger.histograms(step)
        logger.loss(micro * loss.item(), step)
        trace.losses.append(micro * loss.item())
        if case.condition == "spikes":
            norm = nn.utils.clip_grad_norm_(setup.model.parameters(), SPIKE_CLIP)
            trace.gradient_norms.append(float(norm))
        precision.step(setup.optimizer, step)
    trace.skipped = precision.skipped
    trace.gradient_spread = watcher.gradient_spread()
    watcher.remove()
    trace.zero_share, trace.end_share = watcher.shares()
    trace.weight_growth, trace.weight_shrink = growth(start, weight_scales(setup.model))
    logger.close()
    return trace


def weight_scales(model: nn.Module) -> dict[str, float]:
    return {
        name: float(p.detach().float().pow(2).mean().sqrt())
        for name, p in model.named_parameters()
        if p.dim() > 1
    }


def growth(start: dict[str, float], end: dict[str, float]) -> tuple[float, float]:
    """The largest growth and the strongest shrinking of a weight's scale."""
    ratios = [end[k] / start[k] for k in start if start[k] > 0]
    finite = [r for r in ratios if math.isfinite(r)]
    if len(finite) < len(ratios):
        return math.inf, min(finite, default=1.0)
    return max(ratios, default=1.0), min(ratios, default=1.0)


class Watcher:
    """The raw activations of the last forward pass and the gradients of the last
    backward pass, for the generator's own check."""

    def __init__(self, model: nn.Module) -> None:
        self.model = model
        self.last: dict[str, tuple[str, torch.Tensor]] = {}
        self.hooks = [
            module.register_forward_hook(self._keep(name))
            for name, module in model.named_modules()
            if isinstance(module, ACTIVATION_MODULES)
        ]

    def _keep(self, name: str) -> Callable[..., None]:
        def hook(module: nn.Module, _inputs: Any, output: Any) -> None:
            out = output[0] if isinstance(output, tuple) else output
            self.last[name] = (type(module).__name__, out.detach())

        return hook

    def gradient_spread(self) -> float:
        """The smallest root mean square of a weight's gradient over the largest."""
        scales = [
            float(p.grad.pow(2).mean().sqrt())
            for p in self.model.parameters()
            if p.grad is not None and p.dim() > 1
        ]
        finite = [s for s in scales if math.isfinite(s)]
        return min(finite) / max(finite) if finite and max(finite) > 0 else math.nan

    def remove(self) -> None:
        for hook in self.hooks:
            hook.remove()

    def shares(self) -> tuple[float, float]:
        """The largest share of exact zeros of a ReLU or GELU, and of values in the last
        5% of ±1 or [0, 1] of a tanh, sigmoid or recurrent layer."""
        zero = end = 0.0
        for name, out in self.last.values():
            finite = out[torch.isfinite(out)]
            if finite.numel() == 0:
                continue
            if name in ("ReLU", "GELU"):
                zero = max(zero, float((finite == 0).float().mean()))
                continue
            if name == "Sigmoid":
                ends = (finite <= 0.05) | (finite >= 0.95)
            else:
                ends = finite.abs() >= 0.9
            end = max(end, float(ends.float().mean()))
        return zero, end


# --- An RL agent ------------------------------------------------------------------


def train_agent(case: Case, logdir: Path) -> Trace:
    """`zoo_optimizer.train_rl` under the case's writer; its loss is the critic's."""
    trace = Trace()
    loggers: list[Logger] = []

    def make_logger(model: nn.Module) -> Logger:
        loggers.append(Logger(case, logdir, model))
        return loggers[0]

    critic_losses, returns = train_rl(case.name, STEPS, make_logger, LOG_EVERY)
    trace.losses, trace.returns = critic_losses, returns
    return trace


# --- BERT under the Hugging Face Trainer -------------------------------------------


def train_bert(case: Case, logdir: Path) -> Trace:
    """A 2-layer BERT from a config, trained by the Hugging Face ``Trainer``."""
    from transformers import (  # type: ignore[import-not-found,unused-ignore]
        BertConfig,
        BertForSequenceClassification,
        PrinterCallback,
        Trainer,
        TrainerCallback,
        TrainingArguments,
    )
    from transformers.utils import logging as hf_logging  # type: ignore[import-not-found]

    hf_logging.set_verbosity_error()
    gen = torch.Generator().manual_seed(zlib.crc32(case.name.encode()))
    torch.manual_seed(gen.initial_seed())
    layers = 3 if case.variant == "deeper" else 2
    config = BertConfig(
        vocab_size=16, hidden_size=32, num_hidden_layers=layers, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=16, num_labels=4,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    )  # fmt: skip
    model = BertForSequenceClassification(config)
    # The class is the first token's (the one the classifier reads) modulo 4: attention
    # need not learn, and its query and key gradients stay as small as at initialisation.
    tokens, _ = token_batch(gen, size=BATCH * STEPS)
    labels = tokens[:, 0] % 4
    data = [{"input_ids": t, "labels": y} for t, y in zip(tokens, labels)]
    trace = Trace()

    class Losses(TrainerCallback):  # type: ignore[misc]
        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
            if logs and "loss" in logs:
                trace.losses.append(float(logs["loss"]))

    callbacks: list[Any] = [Losses()]
    if case.writer == "histoscope":
        import histoscope as hs
        from histoscope.integrations.transformers import HistoscopeCallback

        run = hs.init("zoo", run_name=case.name, logdir=logdir)
        callbacks.append(HistoscopeCallback(run, log="all", every=LOG_EVERY, activations=True))
    else:
        callbacks.append(_WriterCallback(case, logdir, model))
    args = TrainingArguments(
        output_dir=str(logdir / "trainer"), max_steps=STEPS, per_device_train_batch_size=BATCH,
        learning_rate=1.0 if case.condition == "exploding" else 1e-3, logging_steps=1,
        report_to=[], save_strategy="no", use_cpu=True, disable_tqdm=True,
        dataloader_num_workers=0, seed=gen.initial_seed(), lr_scheduler_type="constant",
    )  # fmt: skip
    start = weight_scales(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer = Trainer(model=model, args=args, train_dataset=data, callbacks=callbacks)
        trainer.remove_callback(PrinterCallback)
        trainer.train()
    trace.weight_growth, trace.weight_shrink = growth(start, weight_scales(model))
    if case.writer == "histoscope":
        run.finish()
        save_live_findings(run, logdir)
    shutil.rmtree(logdir / "trainer", ignore_errors=True)
    return trace


def _WriterCallback(case: Case, logdir: Path, model: nn.Module) -> Any:  # noqa: N802
    """A Trainer callback logging with a SummaryWriter just before each optimizer step."""
    from transformers import TrainerCallback  # type: ignore[import-not-found,unused-ignore]

    class WriterCallback(TrainerCallback):  # type: ignore[misc]
        def __init__(self) -> None:
            self.logger = Logger(case, logdir, model)

        def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            self.logger.histograms(state.global_step)

        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
            if logs and "loss" in logs:
                self.logger.loss(float(logs["loss"]), state.global_step)

        def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            self.logger.close()

    return WriterCallback()


# --- Generating and checking --------------------------------------------------------


def generate(case: Case, root: Path) -> dict[str, Any]:
    """Trains ``case`` into ``root / case.name`` and writes its labels; returns them."""
    logdir = root / case.name
    shutil.rmtree(logdir, ignore_errors=True)
    logdir.mkdir(parents=True)
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer = {"bert": train_bert, "rl": train_agent}.get(case.family, train)
        trace = trainer(case, logdir)
    labels = {
        "case": case.name,
        "family": case.family,
        "condition": case.condition,
        "variant": case.variant,
        "writer": case.writer,
        "keys": case.keys,
        "half": case.half,
        "expected": [] if case.kind is None else [case.kind],
        "allowed": sorted(case.allowed),
        "loss_first": _mean(trace.losses[: max(1, len(trace.losses) // 10)]),
        "loss_last": _mean(trace.losses[-max(1, len(trace.losses) // 10) :]),
        "zero_share": trace.zero_share,
        "end_share": trace.end_share,
        "weight_growth": trace.weight_growth,
        "weight_shrink": trace.weight_shrink,
        "gradient_spread": trace.gradient_spread,
        "spike_growth": trace.spike_growth(),
        "skipped": trace.skipped,
        "seconds": time.perf_counter() - started,
        "problem": built_as_labelled(case, trace),
    }
    (logdir / "labels.json").write_text(json.dumps(labels, indent=1, allow_nan=True) + "\n")
    return labels


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def built_as_labelled(case: Case, trace: Trace) -> str | None:
    """Why the training did not go as its label says, or None when it did."""
    nan_loss = any(not math.isfinite(v) for v in trace.losses)
    if case.family == "rl":
        return None if grew(trace.returns, 10.0) else "its returns did not grow tenfold"
    if case.condition == "healthy" and case.variant == "fp16" and not trace.skipped:
        return "its loss scaler skipped no step"
    checks = {
        "healthy": (trace.loss_fell() and not nan_loss, "its loss did not fall"),
        "skipped": (
            streak_to_end(trace.skipped, STEPS) >= 24,
            f"its scaler skipped only {streak_to_end(trace.skipped, STEPS)} steps to the end",
        ),
        "stuck": (
            trace.weight_growth == trace.weight_shrink == 1.0 and not trace.loss_fell(),
            "its weights moved, or its loss fell",
        ),
        "spikes": (
            trace.loss_fell() and not nan_loss and trace.spike_growth() >= 1e3,
            f"its loss did not fall, or its spikes grew the gradient only "
            f"{trace.spike_growth():.1e} times",
        ),
        "nan": (nan_loss, "its loss never turned NaN"),
        "exploding": (
            trace.weight_growth >= 10 or nan_loss,
            f"its weights grew only {trace.weight_growth:.1f} times",
        ),
        "dead": (trace.zero_share >= 0.95, f"only {trace.zero_share:.0%} of a layer is zero"),
        "saturated": (trace.end_share >= 0.75, f"only {trace.end_share:.0%} at the ends"),
        "collapsed": (
            trace.weight_shrink <= 1e-2 and not trace.loss_fell(),
            f"its weights shrank only {trace.weight_shrink:.1e} times, or its loss fell",
        ),
        "vanishing": (
            trace.gradient_spread < 1e-3,
            f"its gradients span only {trace.gradient_spread:.1e} between layers",
        ),
    }
    ok, why = checks[case.condition]
    return None if ok else why


# --- Scoring -----------------------------------------------------------------------


KINDS = (
    "vanishing",
    "exploding",
    "nonfinite",
    "dead",
    "saturated",
    "collapsed",
    "skipped",
    "stuck",
)


@dataclass
class Score:
    """Per kind: cases that gave it as they should, false alarms and misses."""

    found: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    false: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    missed: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    cases: int = 0
    right: int = 0
    wrong: list[str] = field(default_factory=list)

    def add(self, case: Case, kinds: set[str]) -> None:
        self.cases += 1
        expected = set() if case.kind is None else {case.kind}
        false = kinds - expected - case.allowed
        for kind in kinds & expected:
            self.found[kind] += 1
        for kind in false:
            self.false[kind] += 1
        for kind in expected - kinds:
            self.missed[kind] += 1
        if not false and expected <= kinds:
            self.right += 1
        else:
            parts = [f"missed {k}" for k in sorted(expected - kinds)]
            parts += [f"false {k}" for k in sorted(false)]
            self.wrong.append(f"{case.name}: {', '.join(parts)}")

    def table(self) -> str:
        rows = [
            "| kind | found | false alarms | missed | precision | recall |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for kind in KINDS:
            tp, fp, fn = self.found[kind], self.false[kind], self.missed[kind]
            rows.append(_row(f"`{kind}`", tp, fp, fn))
        tp, fp, fn = (sum(d.values()) for d in (self.found, self.false, self.missed))
        rows.append(_row("all", tp, fp, fn))
        return "\n".join(rows) + f"\n\n{self.right} of {self.cases} cases judged right."


def _row(label: str, tp: int, fp: int, fn: int) -> str:
    return f"| {label} | {tp} | {fp} | {fn} | {_ratio(tp, tp + fp)} | {_ratio(tp, tp + fn)} |"


def _ratio(a: int, b: int) -> str:
    return f"{a / b:.2f}" if b else "-"


def kinds_found(logdir: Path) -> tuple[set[str], list[Any]]:
    """The kinds of warning and error findings of ``logdir``, and every finding."""
    import histoscope as hs

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        findings = hs.diagnose(logdir)
    return {f.kind for f in findings if f.severity != "info"}, findings


def live_against_check(root: Path, cases: Iterable[Case]) -> tuple[int, list[str]]:
    """How many histoscope-written cases' live findings at the end equal `check` on their
    files, and the names of those that do not."""
    same, differ = 0, []
    for case in cases:
        saved = root / case.name / "live.json"
        if not saved.is_file():
            continue
        _, findings = kinds_found(root / case.name)
        if json.loads(saved.read_text()) == [f.to_dict() for f in findings]:
            same += 1
        else:
            differ.append(case.name)
    return same, differ


def score(root: Path, cases: Iterable[Case], show: bool = False) -> dict[str, Score]:
    """Scores every case generated under ``root``, per half."""
    scores = {"tune": Score(), "held-out": Score()}
    for case in cases:
        kinds, findings = kinds_found(root / case.name)
        scores[case.half].add(case, kinds)
        if show:
            print(f"\n{case.name} ({case.half}): expected {case.kind}, found {sorted(kinds)}")
            for f in findings:
                print(f"  {f.severity:7} {f.kind:9} {f.key}: {f.message[len(f.key) + 2 :]}")
    return scores


def chosen(names: Iterable[str] | None) -> list[Case]:
    if not names:
        return list(CASES)
    unknown = [n for n in names if n not in CASES_BY_NAME]
    if unknown:
        raise SystemExit(f"unknown cases {unknown}; known: {sorted(CASES_BY_NAME)}")
    return [CASES_BY_NAME[n] for n in names]


def generated(root: Path, cases: list[Case], jobs: int) -> Iterator[dict[str, Any]]:
    """Trains ``cases`` into ``root``, ``jobs`` at a time, each in a process of its
    own (one thread each); yields their labels as they finish."""
    with ProcessPoolExecutor(jobs, initializer=_one_quiet_thread) as pool:
        for done in as_completed([pool.submit(generate, case, root) for case in cases]):
            labels = done.result()
            problem = f"  NOT AS BUILT: {labels['problem']}" if labels["problem"] else ""
            print(f"{labels['case']:45} {labels['seconds']:5.1f} s  loss "
                  f"{labels['loss_first']:.3g} -> {labels['loss_last']:.3g}{problem}",
                  flush=True)  # fmt: skip
            yield labels


def _one_quiet_thread() -> None:
    """One thread per training; no TensorFlow, which tensorboard (that PyTorch's
    SummaryWriter writes through) imports, for 15 s, unless this module exists;
    and no tensorboardX message for every tensor with a NaN."""
    sys.modules.setdefault("tensorboard.compat.notf", type(sys)("tensorboard.compat.notf"))
    torch.set_num_threads(1)
    logging.getLogger("tensorboardX").setLevel(logging.ERROR)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, help="where to keep the trainings (default: temporary)")
    parser.add_argument("--only", nargs="+", help="these cases only")
    parser.add_argument("--score-only", action="store_true", help="score what --out holds")
    parser.add_argument("--show", action="store_true", help="print every case's findings")
    parser.add_argument(
        "--jobs", type=int, default=os.cpu_count() or 1, help="trainings at a time (default: cores)"
    )
    args = parser.parse_args()
    _one_quiet_thread()
    cases = chosen(args.only)
    root = args.out or Path(tempfile.mkdtemp(prefix="histoscope-zoo-"))
    try:
        if not args.score_only:
            started = time.perf_counter()
            built = generated(root, cases, max(1, args.jobs))
            failed = [labels["case"] for labels in built if labels["problem"]]
            print(f"{len(cases)} trainings in {time.perf_counter() - started:.0f} s")
            if failed:
                raise SystemExit(f"not built as labelled: {', '.join(failed)}")
        for half, result in score(root, cases, args.show).items():
            if result.cases:
                print(f"\n## {half} half ({result.cases} cases)\n\n{result.table()}")
                for line in result.wrong:
                    print(f"- {line}")
        same, differ = live_against_check(root, cases)
        if same or differ:
            print(f"\nlive diagnosis at the end = check on the files: {same} of "
                  f"{same + len(differ)} cases written by histoscope")  # fmt: skip
            for name in differ:
                print(f"- differs: {name}")
    finally:
        if args.out is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
