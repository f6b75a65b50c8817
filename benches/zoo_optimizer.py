"""The zoo's trainings as people run them (issue 41), for `diagnosis_zoo`: fp16 under a
loss scaler, gradient accumulation, weights no optimizer moves, and a reinforcement-
learning agent whose returns grow as it learns.

- `Precision`: fp16 autocast on the CPU under ``torch.amp.GradScaler``, from a scale
  (2^24) that overflows the first steps, as a GPU training from GradScaler's default
  does on larger gradients; the other writers log the gradients after ``unscale_``, as
  their users' loops do, so the skipped steps' are infinite. Under ``skipped`` the
  inputs overflow fp16 from `OVERFLOW_FROM` on, so that the scaler skips every step.
- `stuck`: the optimizer built over a copy's parameters, a real bug: the model's
  weights never move while their gradients are those of a model that learns nothing.
- `train_rl`: REINFORCE with a learned baseline on a chain that goes on while the
  agent acts right: returns grow from about 2 to `CHAIN` as it learns, and the critic's
  loss grows with them. The returns are logged as a histogram each logged step.
"""

from __future__ import annotations

import contextlib
import copy
import zlib
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

#: The step from which a ``skipped`` case's inputs overflow fp16 (65504) at every step.
OVERFLOW_FROM = 60
#: The first loss scale of the fp16 cases.
INITIAL_SCALE = 2.0**24
#: Micro-batches per optimizer step under the ``accumulate`` variant.
MICRO_BATCHES = 4
#: The longest episode of the RL chain.
CHAIN = 100


class Precision:
    """How a case's steps run: in fp32, or in fp16 under a loss scaler."""

    def __init__(self, fp16: bool) -> None:
        self.scaler = torch.amp.GradScaler("cpu", init_scale=INITIAL_SCALE) if fp16 else None
        #: The steps the scaler skipped.
        self.skipped: list[int] = []

    @classmethod
    def of(cls, condition: str, variant: str) -> Precision:
        return cls(condition == "skipped" or variant == "fp16")

    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        if self.scaler is None:
            return contextlib.nullcontext()
        return torch.autocast("cpu", dtype=torch.float16)

    def backward(self, loss: torch.Tensor) -> None:
        (loss if self.scaler is None else self.scaler.scale(loss)).backward()

    def unscale(self, optimizer: torch.optim.Optimizer) -> None:
        """The gradients as the optimizer will apply them, for the writers that log them."""
        if self.scaler is not None:
            self.scaler.unscale_(optimizer)

    def step(self, optimizer: torch.optim.Optimizer, step: int) -> None:
        if self.scaler is None:
            optimizer.step()
            return
        scale = self.scaler.get_scale()
        self.scaler.step(optimizer)
        self.scaler.update()
        if self.scaler.get_scale() < scale:
            self.skipped.append(step)

    def overflowing(self, x: torch.Tensor, step: int, condition: str) -> torch.Tensor:
        """``x``, beyond fp16's range from `OVERFLOW_FROM` on under ``skipped``."""
        return x * 6e4 if condition == "skipped" and step >= OVERFLOW_FROM else x


def streak_to_end(skipped: list[int], steps: int) -> int:
    """How many skipped steps end the training one after the other."""
    n = 0
    while n < len(skipped) and skipped[-1 - n] == steps - 1 - n:
        n += 1
    return n


def stuck(optimizer: torch.optim.Optimizer, model: nn.Module) -> torch.optim.Optimizer:
    """``optimizer``'s kind and settings, over a copy of ``model``'s parameters."""
    return type(optimizer)(copy.deepcopy(model).parameters(), **optimizer.defaults)


def micro_batches(variant: str) -> int:
    return MICRO_BATCHES if variant == "accumulate" else 1


class Chain:
    """Episodes of a chain, run side by side: at each step the agent sees 8 numbers and
    must pick the action the first says (its sign); a wrong action ends the episode."""

    def __init__(self, gen: torch.Generator, episodes: int = 32) -> None:
        self.gen = gen
        self.episodes = episodes

    def run(self, policy: nn.Module) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Each episode's first observation, its summed log-probabilities and its return."""
        alive = torch.ones(self.episodes, dtype=torch.bool)
        returns = torch.zeros(self.episodes)
        log_probs = torch.zeros(self.episodes)
        first = None
        for _ in range(CHAIN):
            obs = torch.randn(self.episodes, 8, generator=self.gen)
            first = obs if first is None else first
            dist = torch.distributions.Categorical(logits=policy(obs))
            action = dist.sample()
            right = action == (obs[:, 0] > 0).long()
            log_probs = log_probs + dist.log_prob(action) * alive
            returns = returns + (right & alive).float()
            alive = alive & right
            if not alive.any():
                break
        assert first is not None
        return first, log_probs, returns


def train_rl(
    name: str,
    steps: int,
    make_logger: Callable[[nn.Module], Any],
    log_every: int,
) -> tuple[list[float], list[float]]:
    """REINFORCE with a learned baseline on the `Chain`; returns the critic's losses and
    the mean return at each step. ``make_logger(model)`` gives the case's `Logger`."""
    gen = torch.Generator().manual_seed(zlib.crc32(name.encode()))
    torch.manual_seed(gen.initial_seed())
    model = nn.ModuleDict(
        {
            "policy": nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 2)),
            "critic": nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1)),
        }
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    logger = make_logger(model)
    chain = Chain(gen)
    critic_losses: list[float] = []
    mean_returns: list[float] = []
    for step in range(steps):
        first, log_probs, returns = chain.run(model["policy"])
        value = model["critic"](first).squeeze(1)
        advantage = returns - value.detach()
        policy_loss = -(log_probs * advantage).mean()
        critic_loss = nn.functional.mse_loss(value, returns)
        optimizer.zero_grad()
        (policy_loss + critic_loss).backward()
        logger.histograms(step)
        if step % log_every == 0:
            logger.metric_histogram("episode_return", returns, step)
        logger.scalars({"critic_loss": critic_loss.item(), "policy_loss": policy_loss.item(),
                        "episode_return_mean": returns.mean().item()}, step)  # fmt: skip
        optimizer.step()
        critic_losses.append(critic_loss.item())
        mean_returns.append(returns.mean().item())
    logger.close()
    return critic_losses, mean_returns


def grew(values: list[float], factor: float) -> bool:
    """Whether the last tenth of ``values`` is ``factor`` times the first tenth or more."""
    n = max(1, len(values) // 10)
    return sum(values[-n:]) >= factor * sum(values[:n]) > 0


__all__ = [
    "CHAIN",
    "INITIAL_SCALE",
    "OVERFLOW_FROM",
    "Precision",
    "grew",
    "micro_batches",
    "streak_to_end",
    "stuck",
    "train_rl",
]
