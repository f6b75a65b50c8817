"""Shared test setup: where the real TensorBoard fixtures live (tests/fixtures)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Test modules import helpers from browser.py as well as load it as a plugin:
# rewrite its asserts before the first import.
pytest.register_assert_rewrite("browser")

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get("HISTOSCOPE_FIXTURES", REPO / "tests" / "fixtures"))


@pytest.fixture(scope="session")
def fixtures() -> Path:
    """The real log directories of tests/fixtures, each with its TensorBoard oracle."""
    if not (FIXTURES / "README.md").is_file():
        pytest.fail(f"TensorBoard fixtures not found at {FIXTURES} (set HISTOSCOPE_FIXTURES)")
    return FIXTURES
