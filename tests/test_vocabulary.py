"""The 1.0 API in one vocabulary: ``__all__`` only in the modules a user imports, and the
vocabulary table in the docs."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import histoscope

PACKAGE = Path(histoscope.__file__).resolve().parent
#: The repository: the docs are there, not beside an installed package.
REPO = Path(__file__).resolve().parents[1]

#: The modules the README and docs tell a user to import: the only ones with ``__all__``.
PUBLIC_MODULES = {
    "histoscope",
    "histoscope.dask",
    "histoscope.errors",
    "histoscope.integrations.keras",
    "histoscope.integrations.lightning",
    "histoscope.integrations.transformers",
}


def declares_all(path: Path) -> bool:
    for node in ast.parse(path.read_text()).body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            return True
    return False


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_only_public_modules_declare_all() -> None:
    declaring = {module_name(p) for p in PACKAGE.rglob("*.py") if declares_all(p)}
    assert declaring == PUBLIC_MODULES


@pytest.mark.parametrize("name", sorted(PUBLIC_MODULES - {"histoscope.integrations.keras"}))
def test_every_name_a_public_module_lists_is_there(name: str) -> None:
    module = importlib.import_module(name)
    assert [n for n in module.__all__ if not hasattr(module, n)] == []


def test_the_vocabulary_table_is_in_the_docs() -> None:
    text = (REPO / "docs" / "vocabulary.md").read_text()
    assert "| Concept | The one word | What it means | Old names it replaces |" in text
    for word in (
        "`logdir`",
        "`key`",
        "`step`",
        "`DEFAULT_BINS`",
        "`Finding`",
        "read_tensorboard_histograms",
    ):
        assert word in text
    for module in PUBLIC_MODULES:
        assert f"`{module}`" in text
