"""Readable run names, made up when `histoscope.init` is given none: ``brisk-comet-3``."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

_ADJECTIVES = (
    "amber", "brisk", "calm", "bold", "crisp", "deft", "eager", "fair", "gentle", "hardy",
    "keen", "lively", "mellow", "nimble", "quiet", "rapid", "steady", "sunny", "swift", "vivid",
)  # fmt: skip
_NOUNS = (
    "brook", "cedar", "comet", "delta", "ember", "fjord", "grove", "harbor", "island", "lagoon",
    "meadow", "nebula", "orchid", "prairie", "quartz", "river", "summit", "tundra", "valley",
    "willow",
)  # fmt: skip


def new_run_name(root: Path) -> str:
    taken = {p.name for p in root.iterdir()} if root.is_dir() else set()
    rng = random.Random()
    for n in itertools.count(len(taken) + 1):
        name = f"{rng.choice(_ADJECTIVES)}-{rng.choice(_NOUNS)}-{n}"
        if name not in taken:
            return name
    raise AssertionError("unreachable")
