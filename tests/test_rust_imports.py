"""The Rust core's shape: no import circle between its files.

A file imports another when it names something of that file's module by a path: a
``use`` (``use crate::a::b::Item``, ``use super::x::{y, z}``, ``pub use`` included) or a
path in its code (``crate::a::b::f(...)``, ``super::x::Item``, ``child::f`` for a module
the file declares). A path goes to the file of its longest prefix that is a module kept
in a file: ``crate::logdir::storage::Dir`` is ``rust/logdir/storage.rs``, ``super::Kind``
in ``rust/diagnose/rules.rs`` is ``rust/diagnose/mod.rs``.

Two choices:

- ``#[cfg(test)]`` code is not the file's. An inline ``mod tests`` that imports its
  parent (``use super::*``) or a helper elsewhere tests the file and is no import of it.
  A test file (``#[cfg(test)] mod tests;``) is a file of its own in the graph: nothing
  but tests imports it, so it closes no circle with the code it tests.
- A file is the door of the modules it declares (a ``mod.rs``, ``lib.rs``, or
  ``x.rs`` with ``mod y;``): what it names of its own modules and theirs (declaring them,
  re-exporting their items, dispatching to them) is not counted; what they name of it
  is (``super::Finding``). A room's shared pieces may live in its door, which
  dispatches to its files; a sibling that dispatches to the files that import it is
  a circle (``rules.rs`` calling each rule while each rule used ``rules.rs``'s
  helpers): what they share belongs in a leaf file of the room.

The files are found from the crate roots (``rust/lib.rs`` and each ``[[test]]`` in
``Cargo.toml``) through their ``mod`` declarations, ``#[path]`` included, so every file
the compiler builds is read, and a ``.rs`` file none declares fails the test. A circle
found is printed file by file, back to the first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from test_layout import find_cycle

ROOT = Path(__file__).resolve().parent.parent
RUST = ROOT / "rust"

TOKEN = re.compile(r"#!?\[|\$?\w+|::|\S")
# Block comments are taken as unnested: none in the crate nests one.
LITERAL_OR_COMMENT = re.compile(
    r"//[^\n]*|/\*.*?\*/"
    r'|b?r(#*)".*?"\1|b?"(?:\\.|[^"\\])*"'
    r"|b?'(?:\\(?:x..|u\{[0-9a-fA-F]+\}|.)|[^\\'])'",
    re.DOTALL,
)
OPENING = {"(", "[", "{", "#[", "#!["}
CLOSING = {")", "]", "}"}
PATH_ATTRIBUTE = re.compile(r'#\[path\s*=\s*"([^"]*)"\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;')


def code_of(source: str) -> str:
    """The source with its comments, strings and char literals blanked out."""

    def blank(lexeme: re.Match[str]) -> str:
        text = lexeme.group()
        return " " if text[0] == "/" else "' '" if text[-1] == "'" else '""'

    return LITERAL_OR_COMMENT.sub(blank, source)


@dataclass
class Declared:
    """A child module a file declares: ``mod name;``, its ``#[path]`` if it has one."""

    name: str
    path_attribute: str | None


@dataclass
class Scanned:
    named: list[tuple[str, ...]] = field(default_factory=list)  # absolute from the root
    declared: list[Declared] = field(default_factory=list)


def use_paths(tokens: list[str], i: int, prefix: list[str]) -> tuple[list[list[str]], int]:
    """The paths of the use tree at ``tokens[i]`` and the index after the tree."""
    path = list(prefix)
    while i < len(tokens):
        tok = tokens[i]
        if tok == "{":
            paths: list[list[str]] = []
            i += 1
            while tokens[i] != "}":
                sub, i = use_paths(tokens, i, path)
                paths.extend(sub)
                i += tokens[i] == ","
            return paths, i + 1
        if tok in {",", "}", ";", "*"}:
            break
        if tok == "as":
            i += 2
            break
        if tok != "::" and not (tok == "self" and path):
            path.append(tok)
        i += 1
    return [path], i + (tokens[i] == "*" if i < len(tokens) else 0)


def after_brackets(tokens: list[str], i: int) -> int:
    """The index after the brackets that open at ``tokens[i]``."""
    level = 0
    while True:
        level += 1 if tokens[i] in OPENING else -(tokens[i] in CLOSING)
        i += 1
        if level == 0:
            return i


def item_end(tokens: list[str], i: int) -> int:
    """The index after the item (or statement) starting at ``tokens[i]``."""
    is_use = "use" in tokens[i : i + 6] and tokens[i] in {"pub", "use"}
    level = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok in OPENING:
            level += 1
        elif tok in CLOSING:
            level -= 1
            if level == 0 and tok == "}" and not is_use:
                return i + 1
        elif tok == ";" and level == 0:
            return i + 1
        i += 1
    return i


def scan(source: str, module: tuple[str, ...]) -> Scanned:
    """The paths a file of module ``module`` names, and the child files it declares."""
    tokens = TOKEN.findall(code_of(source))
    # Strings are blanked in the code, so `#[path = "..."]` is read from the source.
    path_attributes = {name: path for path, name in PATH_ATTRIBUTE.findall(source)}
    found = Scanned()
    children: set[str] = set()
    scopes: list[tuple[str, int]] = []  # inline modules: name, brace depth inside them
    depth = 0
    attributes: list[str] = []

    def absolute(path: list[str]) -> tuple[str, ...] | None:
        here = list(module) + [name for name, _ in scopes]
        head = path[0].lstrip("$")
        if head == "crate":
            return tuple(path[1:])
        if head == "self":
            return tuple(here + path[1:])
        if head == "super":
            while path and path[0] == "super":
                here, path = here[:-1], path[1:]
            return tuple(here + path)
        if head in children and not scopes:
            return tuple(here + path)
        return None  # std, an external crate, a local name

    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok in {"#[", "#!["}:
            end = after_brackets(tokens, i)
            attributes.append(" ".join(tokens[i:end]))
            i = end
            continue
        # Test code is skipped; a test file it declares is still a file of the crate.
        test_only = "#[ cfg ( test ) ]" in attributes
        if test_only and not (tok == "mod" and tokens[i + 2] == ";") and tok != "pub":
            i = item_end(tokens, i)
        elif tok == "pub":  # its attributes are the item's that follows
            i = after_brackets(tokens, i + 1) if tokens[i + 1] == "(" else i + 1
            continue
        elif tok == "mod" and tokens[i + 2] == ";":
            name = tokens[i + 1]
            found.declared.append(Declared(name, path_attributes.get(name)))
            children.add(name)
            i += 3
        elif tok == "mod" and tokens[i + 2] == "{":
            depth += 1
            scopes.append((tokens[i + 1], depth))
            i += 3
        elif tok == "use":
            end = item_end(tokens, i)
            for path in use_paths(tokens[i + 1 : end], 0, [])[0]:
                if path and (target := absolute(path)) is not None:
                    found.named.append(target)
            i = end
        elif re.fullmatch(r"\$?\w+", tok) and tokens[i - 1] != "::" and tokens[i + 1] == "::":
            path = [tok]
            while tokens[i + 1] == "::" and re.fullmatch(r"\w+", tokens[i + 2]):
                path.append(tokens[i + 2])
                i += 2
            if (target := absolute(path)) is not None:
                found.named.append(target)
            i += 1
        else:
            if tok == "{":
                depth += 1
            elif tok == "}":
                if scopes and scopes[-1][1] == depth:
                    scopes.pop()
                depth -= 1
            i += 1
        attributes = []
    return found


@dataclass
class RustFile:
    path: Path
    module: tuple[str, ...]
    scanned: Scanned


def crate_roots() -> list[Path]:
    """The ``path`` of ``Cargo.toml``'s ``[lib]`` and of each ``[[test]]``."""
    roots: list[Path] = []
    section = ""
    for line in (ROOT / "Cargo.toml").read_text(encoding="utf-8").splitlines():
        if line.startswith("["):
            section = line.strip()
        elif section in {"[lib]", "[[test]]"} and (path := re.match(r'path = "(.*)"', line)):
            roots.append(ROOT / path.group(1))
    return roots


def crate_files(root: Path) -> dict[tuple[str, ...], RustFile]:
    """Every file of the crate rooted at ``root``, by module path."""
    files: dict[tuple[str, ...], RustFile] = {}

    def visit(path: Path, module: tuple[str, ...], owns_folder: bool) -> None:
        scanned = scan(path.read_text(encoding="utf-8"), module)
        files[module] = RustFile(path, module, scanned)
        folder = path.parent if owns_folder else path.parent / path.stem
        for child in scanned.declared:
            if child.path_attribute is not None:
                child_path, owns = path.parent / child.path_attribute, False
            elif (folder / child.name / "mod.rs").exists():
                child_path, owns = folder / child.name / "mod.rs", True
            else:
                child_path, owns = folder / f"{child.name}.rs", False
            visit(child_path, module + (child.name,), owns)

    visit(root, (), True)
    return files


def import_graph() -> dict[str, set[str]]:
    """Each ``.rs`` file (relative to the repository) to the files it imports."""
    graph: dict[str, set[str]] = {}
    for root in crate_roots():
        files = crate_files(root)
        for module, rust_file in files.items():
            name = rust_file.path.relative_to(ROOT).as_posix()
            imports = graph.setdefault(name, set())
            for path in rust_file.scanned.named:
                target = next(
                    files[path[:k]] for k in range(len(path), -1, -1) if path[:k] in files
                )
                if target.module[: len(module)] == module:
                    continue  # the file itself, or one of its own modules
                imports.add(target.path.relative_to(ROOT).as_posix())
    return graph


def test_the_rust_files_have_no_import_circle() -> None:
    graph = import_graph()
    on_disk = {path.relative_to(ROOT).as_posix() for path in RUST.rglob("*.rs")}
    assert set(graph) == on_disk, "files no crate declares, or declared and missing"
    assert len(crate_roots()) >= 2, "the lib and the fuzz harness, from Cargo.toml"
    assert sum(map(len, graph.values())) > 150, "too few imports: is the parser reading?"
    cycle = find_cycle(graph)
    assert cycle is None, "import circle between Rust files: " + " -> ".join(cycle or [])


def imports_of(source: str, module: tuple[str, ...] = ("room", "file")) -> set[str]:
    return {"::".join(path) for path in scan(source, module).named}


def test_use_trees_and_paths_in_code_are_imports() -> None:
    source = """
        use std::fmt;
        use crate::a::{b::{self, C}, d as e};
        pub(crate) use super::{sibling::*, Shared};
        fn f() -> crate::x::y::Z { super::other::make(b"crate::no", "super::no") }
        // crate::commented::out
        macro_rules! m { () => { $crate::m::n::f() } }
    """
    assert imports_of(source) == {
        "a::b",
        "a::b::C",
        "a::d",
        "room::sibling",
        "room::Shared",
        "x::y::Z",
        "room::other::make",
        "m::n::f",
    }


def test_test_code_is_not_the_files_but_a_test_file_is_declared() -> None:
    source = """
        mod child;
        #[cfg(test)]
        mod tests_file;
        #[cfg(test)]
        pub(crate) mod tests {
            use super::*;
            #[derive(Debug)]
            struct S { f: [u8; 2] }
            fn g() { crate::elsewhere::helper() }
        }
        #[cfg(test)]
        use crate::only::in_tests;
        fn h() { child::f(); not_a_child::g(); }
        mod inline { use super::up::Thing; }
    """
    assert [d.name for d in scan(source, ("room", "file")).declared] == ["child", "tests_file"]
    assert imports_of(source) == {"room::file::child::f", "room::file::up::Thing"}


def test_a_file_naming_its_own_modules_does_not_import_them() -> None:
    graph = import_graph()
    # diagnose/mod.rs re-exports live.rs and dispatches to its rules, which name its types.
    assert "rust/diagnose/mod.rs" in graph["rust/diagnose/live.rs"]
    assert not any(f.startswith("rust/diagnose/") for f in graph["rust/diagnose/mod.rs"])
