"""The runs' colours (viewer.css, --run-0 to --run-9): each stands out from the card it is
drawn on, in light and dark mode, and every two stay apart for normal vision and for the
three kinds of dichromacy, simulated as Machado, Oliveira and Fernandes (2009) do at full
severity, distances measured in Oklab."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from histoscope.view.page import asset_text

#: The simulations' matrices, in linear RGB.
DICHROMACY = {
    "protanopia": [
        [0.152286, 1.052583, -0.204868],
        [0.114503, 0.786281, 0.099216],
        [-0.003882, -0.048116, 1.051998],
    ],
    "deuteranopia": [
        [0.367322, 0.860646, -0.227968],
        [0.280085, 0.672501, 0.047413],
        [-0.011820, 0.042940, 0.968881],
    ],
    "tritanopia": [
        [1.255528, -0.076749, -0.178779],
        [-0.078411, 0.930809, 0.147602],
        [0.004733, 0.691367, 0.303900],
    ],
}
LMS = np.array(
    [
        [0.4122214708, 0.5363325363, 0.0514459929],
        [0.2119034982, 0.6806995451, 0.1073969566],
        [0.0883024619, 0.2817188376, 0.6299787005],
    ]
)
OKLAB = np.array(
    [
        [0.2104542553, 0.7936177850, -0.0040720468],
        [1.9779984951, -2.4285922050, 0.4505937099],
        [0.0259040371, 0.7827717662, -0.8086757660],
    ]
)
#: Oklab distance every two colours keep under every vision: about twice the step at which
#: two flat patches can just be told apart.
LEAST_DISTANCE = 0.05


def linear(hex_colour: str) -> np.ndarray:
    srgb = np.array([int(hex_colour[i : i + 2], 16) for i in (1, 3, 5)]) / 255
    return np.where(srgb <= 0.04045, srgb / 12.92, ((srgb + 0.055) / 1.055) ** 2.4)


def contrast(a: str, b: str) -> float:
    luminance = [float(linear(c) @ [0.2126, 0.7152, 0.0722]) for c in (a, b)]
    return (max(luminance) + 0.05) / (min(luminance) + 0.05)


def oklab(rgb: np.ndarray) -> np.ndarray:
    return OKLAB @ np.cbrt(LMS @ np.clip(rgb, 0, 1))


def theme(mode: str) -> dict[str, str]:
    """The custom properties of viewer.css in ``mode``: "light" (the root's) or "dark"."""
    css = asset_text("viewer.css")
    dark = re.search(r"prefers-color-scheme: dark\)\s*\{\s*:root\s*\{(.*?)\}", css, re.S)
    light = re.search(r":root\s*\{(.*?)\}", css, re.S)
    block = (dark if mode == "dark" else light).group(1)
    return dict(re.findall(r"--([\w-]+):\s*(#[0-9a-fA-F]{6});", block))


@pytest.mark.parametrize("mode", ["light", "dark"])
def test_ten_run_colours_stand_out_from_the_card(mode: str) -> None:
    colours = theme(mode)
    runs = [colours[f"run-{i}"] for i in range(10)]
    assert "run-10" not in colours
    assert re.search(r"PALETTE_SIZE = 10;", asset_text("colours.js"))
    ratios = [contrast(c, colours["panel"]) for c in runs]
    assert min(ratios) >= 3, dict(zip(runs, ratios))  # WCAG's 3:1 for graphics
    assert min(contrast(c, colours["page"]) for c in runs) >= 3


@pytest.mark.parametrize("mode", ["light", "dark"])
@pytest.mark.parametrize("vision", ["normal", *DICHROMACY])
def test_every_two_run_colours_stay_apart(mode: str, vision: str) -> None:
    colours = [linear(theme(mode)[f"run-{i}"]) for i in range(10)]
    seen = [np.array(DICHROMACY[vision]) @ c if vision != "normal" else c for c in colours]
    distances = {
        (i, j): float(np.linalg.norm(oklab(seen[i]) - oklab(seen[j])))
        for i, j in itertools.combinations(range(10), 2)
    }
    closest = min(distances, key=distances.get)
    assert distances[closest] >= LEAST_DISTANCE, (closest, distances[closest])
