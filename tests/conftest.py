"""Shared test setup: where the real TensorBoard fixtures live (tests/fixtures)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Test modules import helpers from browser.py as well as load it as a plugin:
# rewrite its asserts before the first import.
pytest.register_assert_rewrite("browser")

#: The log directories of tests/fixtures, as tests/fixtures/make_fixtures.py wrote them.
FIXTURE_NAMES = [
    "tf2_summary",
    "tf2_edge",
    "tf1_graph",
    "keras_fit",
    "torch_writer",
    "tensorboardx",
    "restart",
    "truncated",
    "corrupt",
    "many_steps",
    "nested",
    "scalars_only",
]

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get("HISTOSCOPE_FIXTURES", REPO / "tests" / "fixtures"))


@pytest.fixture(scope="session")
def fixtures() -> Path:
    """The real log directories of tests/fixtures, each with its TensorBoard oracle."""
    if not (FIXTURES / "README.md").is_file():
        pytest.fail(f"TensorBoard fixtures not found at {FIXTURES} (set HISTOSCOPE_FIXTURES)")
    return FIXTURES
