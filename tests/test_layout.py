"""The package's shape: no import circles among its modules, lazy and type-only imports
included, and rooms of a readable size.

The imports are read from the source (every ``import`` and ``from ... import``
anywhere in a module, inside functions and ``if TYPE_CHECKING:`` blocks too), not
from ``sys.modules``, so an import that only runs on some path still counts, and so
does a class named only in an annotation.

``from . import x`` is an edge to ``x`` when ``x`` is a module, and to the package in
any case: the statement imports the package first, and inside a room whose ``__init__``
imports its modules, that closes a circle. The one package left out is the root,
``histoscope``: its ``__init__`` is the public face that imports every room, and the
rooms reach the leaves beside it (``_core``, ``_args``, ``errors``) through it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import histoscope

PACKAGE = Path(histoscope.__file__).resolve().parent
ROOT = "histoscope"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imported(name: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules that module ``name`` imports, wherever in it."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # `from . import x` imports the package, then the module x if there is one.
            if node.level and not node.module and base != ROOT:
                found.add(base)
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return {m for m in found if m in known and m != name}


def import_graph() -> dict[str, set[str]]:
    found = modules()
    # The native module is a leaf: known by its stub, importing nothing of the package.
    known = set(found) | {module_name(stub) for stub in PACKAGE.rglob("*.pyi")}
    return {name: imported(name, path, known) for name, path in found.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_the_package_has_no_import_circle() -> None:
    graph = import_graph()
    assert len(graph) > 30, "the walk found too few modules to be looking at the package"
    cycle = find_cycle(graph)
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


def test_the_walk_finds_a_circle_when_there_is_one() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_lazy_and_type_only_imports_are_seen(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from histoscope import errors\n"
        "def f():\n    from histoscope.read import reader\n    from . import _args\n"
    )
    known = {"histoscope.read.reader", "histoscope.read", "histoscope._args", "histoscope.errors"}
    assert imported("histoscope.m", source, known) == {
        "histoscope.read.reader",
        "histoscope._args",
        "histoscope.errors",
    }


def test_a_name_from_a_package_init_is_an_edge_to_the_package(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("from .. import _core, load_histograms\n")
    known = {"histoscope", "histoscope._core", "histoscope.read", "histoscope.read.sibling"}
    assert imported("histoscope.read.m", source, known) == {"histoscope", "histoscope._core"}


def test_a_sibling_imported_through_its_room_is_an_edge_to_the_room(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("from . import sibling\nfrom .other import name\n")
    known = {"histoscope.write", "histoscope.write.sibling", "histoscope.write.other"}
    assert imported("histoscope.write.m", source, known) == {
        "histoscope.write",
        "histoscope.write.sibling",
        "histoscope.write.other",
    }
    assert find_cycle(
        {"histoscope.write": {"histoscope.write.m"}, "histoscope.write.m": {"histoscope.write"}}
    )


@pytest.mark.parametrize(("suffix", "limit"), [(".py", 500), (".js", 400)])
def test_no_module_is_too_long_to_read(suffix: str, limit: int) -> None:
    long = {
        str(path.relative_to(PACKAGE)): n
        for path in PACKAGE.rglob(f"*{suffix}")
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > limit
    }
    assert not long, f"split these by topic (over {limit} lines): {long}"
