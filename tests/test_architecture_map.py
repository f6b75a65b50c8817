"""The map of the code, ``docs/architecture.md``, names only what is there, and names
every source file there is.

Three checks read the map's backticked spans and the words of its fenced diagram, and
each lists every miss at once:

- Every path the map names exists among the repository's files (``git ls-files``): a
  bare file name (``chart.rs``) as some file's name, a relative one (``bins/chart.rs``,
  ``view/assets/``) as the end of some file's path or folder's, one with ``../`` from
  ``docs/``. A path is a span ending in ``/`` or in a file's extension; ``api/...`` are
  the viewer's URLs, not files.
- Every name shaped like a code symbol is defined in the code (``rust/``,
  ``python/histoscope/`` and its assets), not merely mentioned: a CamelCase or
  capitalised name, one with an underscore, a lowerCamel or ALL-CAPS one, ``name()``,
  ``Type::item`` or ``Type.item``, ``module.name`` or ``module::name``. A definition is
  Rust's ``fn``, ``struct``, ``enum`` and its variants, ``trait``, ``type``,
  ``const``, ``static``, ``mod``, a field or parameter, a pyo3 ``name = "..."`` or
  ``m.add("...")``; Python's ``def``, ``class``, a module- or class-level assignment,
  an attribute assigned, a parameter, a module; JavaScript's ``function``, ``class``,
  ``const``/``let``/``var``, a method or property. A name right after a file's name
  (```stream.rs` `RunStream::next_batch```) must be defined in that file; one under a
  module of ours (``storage.core_logdirs``, ``optimizer_note::PLUGIN``) in that
  module; ``_core.X`` in the bindings (``rust/py/``). An ALL-CAPS name may instead be
  a string the code holds whole (an environment variable's: ``HISTOSCOPE_TOKEN``).
- Every Rust file under ``rust/`` and every Python module under
  ``python/histoscope/`` is named by the map, by its path or its file name, so that a
  new file cannot be left off.

Not looked for, by rule: spans with a space (command lines: ``histoscope view``),
starting with ``-`` (options), holding ``=``, quotes or braces (literals, keyword
arguments), or other than ASCII; plain lowercase words (prose and commands: ``ls``)
unless right after a file's name; Python's built-ins (``ValueError``); names of
another project, dotted under a module that is not ours (``torch.linalg.svdvals``) or
written right after that project's name and ``'s`` (Keras's ``LossScaleOptimizer``).
"""

from __future__ import annotations

import ast
import builtins
import fnmatch
import posixpath
import re
import subprocess
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MAP = "docs/architecture.md"
PACKAGE = "python/histoscope/"

EXTENSIONS = ("rs", "py", "pyi", "js", "css", "html", "md", "toml", "json", "txt", "yml")
IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
SPAN = re.compile(r"`([^`\n]+)`")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
# A word of the diagram: a path, or a name with its qualifiers.
DIAGRAM_WORD = re.compile(r"[A-Za-z_.][\w./]*(?:::\w+)*")
POSSESSIVE = re.compile(r"\b[A-Z][\w-]*'s\s+$")


@dataclass
class Code:
    """What the code defines, and where."""

    files: list[str]
    defined: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    literals: set[str] = field(default_factory=set)

    def add(self, name: str, path: str) -> None:
        self.defined[name].add(path)

    def where(self, name: str) -> set[str]:
        if "*" in name:
            return {p for n in fnmatch.filter(self.defined, name) for p in self.defined[n]}
        return self.defined.get(name, set())


# Definitions, language by language.

RUST_ITEM = re.compile(
    r"\b(?:fn|struct|enum|trait|type|const|static|mod|union)\s+(" + IDENT + ")"
    r"|macro_rules!\s*(" + IDENT + ")"
)
RUST_BINDING = re.compile(  # a field, a parameter, a field of a variant
    r"(?:^|[(,{<])\s*(?:pub(?:\([^)]*\))?\s+)?(?:mut\s+)?(" + IDENT + r")\s*:(?!:)", re.M
)
PYO3_NAME = re.compile(r"#\[py\w+\([^\]]*?\bname\s*=\s*\"(" + IDENT + r")\"", re.S)
CORE_ADD = re.compile(r"\.add\(\s*\"(" + IDENT + r")\"")
ENUM_HEAD = re.compile(r"\benum\s+" + IDENT + r"[^{;]*\{")
VARIANT = re.compile(r"(?:^|,)\s*(?:#\[[^\]]*\]\s*)*([A-Z]\w*)\s*(?=[,({=]|$)", re.M)
JS_ITEM = re.compile(
    r"\b(?:function\*?|class|const|let|var)\s+(" + IDENT + ")"
    r"|^\s*(?:async\s+|static\s+|get\s+|set\s+)?(" + IDENT + r")\s*\([^)]*\)\s*\{"
    r"|^\s*(" + IDENT + r")\s*:",
    re.M,
)
JS_DESTRUCTURED = re.compile(r"\b(?:const|let|var)\s*\{([^}]*)\}")
JS_PARAMETERS = re.compile(r"\bfunction\*?\s*\w*\s*\(([^)]*)\)|\(([^()]*)\)\s*=>")
JS_KEYWORDS = {"if", "for", "while", "switch", "catch", "function", "return"}


def strip_rust_comments(text: str) -> str:
    return re.sub(r"^\s*//.*$", "", text, flags=re.M)


def enum_bodies(text: str) -> list[str]:
    bodies = []
    for head in ENUM_HEAD.finditer(text):
        depth, at = 1, head.end()
        start = at
        while depth and at < len(text):
            depth += {"{": 1, "}": -1}.get(text[at], 0)
            at += 1
        # Only the variants' own lines: what is nested deeper is their fields.
        body, level, top = text[start : at - 1], 0, []
        for ch in body:
            level += {"{": 1, "}": -1, "(": 1, ")": -1}.get(ch, 0)
            top.append(ch if level == 0 or ch in "{(" else " ")
        bodies.append("".join(top))
    return bodies


def rust_definitions(text: str) -> set[str]:
    text = strip_rust_comments(text)
    found = {a or b for a, b in RUST_ITEM.findall(text)}
    found |= set(RUST_BINDING.findall(text))
    found |= set(PYO3_NAME.findall(text)) | set(CORE_ADD.findall(text))
    for body in enum_bodies(text):
        found |= set(VARIANT.findall(body))
    return found


def python_definitions(text: str) -> tuple[set[str], set[str]]:
    """The names a module defines, and the ALL-CAPS strings it holds whole."""
    tree = ast.parse(text)
    found: set[str] = set()
    literals: set[str] = set()

    def targets(node: ast.AST) -> list[ast.AST]:
        if isinstance(node, ast.Assign):
            return list(node.targets)
        if isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            return [node.target]
        return []

    def bound(target: ast.AST, top: bool) -> None:
        if isinstance(target, ast.Name) and top:
            found.add(target.id)
        elif isinstance(target, ast.Attribute):
            found.add(target.attr)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for item in target.elts:
                bound(item, top)

    def visit(node: ast.AST, top: bool) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            a = node.args
            every = a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x]
            found.update(arg.arg for arg in every)
        for target in targets(node):
            bound(target, top)
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if re.fullmatch(r"[A-Z][A-Z0-9_]+", node.value):
                literals.add(node.value)
        # Module and class bodies define names; a function's locals do not.
        inner = top and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        for child in ast.iter_child_nodes(node):
            visit(child, inner)

    visit(tree, True)
    return found, literals


def js_definitions(text: str) -> set[str]:
    found = {next(g for g in groups if g) for groups in JS_ITEM.findall(text)} - JS_KEYWORDS
    for names in JS_DESTRUCTURED.findall(text):
        found.update(re.findall(IDENT, names))
    for listed in JS_PARAMETERS.findall(text):
        found.update(re.findall(IDENT, "".join(listed)))
    return found


def tracked_files() -> list[str]:
    try:
        listed = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the map is checked against the repository's files")
    return sorted({p for p in listed.splitlines() if (REPO / p).is_file()})


def read_code(files: list[str], read: Callable[[str], str] | None = None) -> Code:
    """What ``files`` define, read by ``read`` (from the repository by default)."""
    read = read or (lambda path: (REPO / path).read_text(encoding="utf-8"))
    code = Code(files)
    for path in files:
        if path.startswith("rust/") and path.endswith(".rs"):
            names = rust_definitions(read(path))
        elif path.startswith(PACKAGE) and path.endswith(".py"):
            names, literals = python_definitions(read(path))
            code.literals |= literals
        elif path.startswith(PACKAGE) and path.endswith(".js"):
            names = js_definitions(read(path))
        else:
            continue
        for name in names:
            code.add(name, path)
    return code


@lru_cache(maxsize=1)
def repository() -> Code:
    return read_code(tracked_files())


# The map's words.


@dataclass(frozen=True)
class Word:
    text: str
    diagram: bool  # a word of the fenced diagram, not a backticked span
    before: str  # what comes between it and the word before it
    after_file: str | None  # the file named just before it, if any


def words(text: str) -> list[Word]:
    """The backticked spans of the prose and the words of the diagram, in order."""
    found: list[Word] = []

    def scan(part: str, pattern: re.Pattern[str], diagram: bool) -> None:
        previous: str | None = None
        last_end = 0
        for m in pattern.finditer(part):
            before = part[last_end : m.start()]
            word = m.group(1).strip() if m.lastindex else m.group().rstrip(".")
            # A file's name followed by nothing but space: the word is that file's.
            found.append(Word(word, diagram, before, None if before.strip() else previous))
            previous = word if is_path(word) and not word.endswith("/") else None
            last_end = m.end()

    at = 0
    for block in FENCE.finditer(text):
        scan(text[at : block.start()], SPAN, False)
        for line in block.group().splitlines()[1:-1]:
            scan(line, DIAGRAM_WORD, True)
        at = block.end()
    scan(text[at:], SPAN, False)
    return found


def is_path(word: str) -> bool:
    """Whether a word names a file (by its extension) or a folder (by its ``/``)."""
    if word.startswith(("api/", "-")) or not word.isascii():
        return False
    if word.endswith("/") and re.fullmatch(r"[\w./-]+", word):
        return True
    return bool(re.fullmatch(r"[\w./-]+\.(?:" + "|".join(EXTENSIONS) + ")", word))


def path_exists(word: str, files: list[str]) -> bool:
    if word.startswith("../"):
        word = posixpath.normpath(posixpath.join(posixpath.dirname(MAP), word))
        if word.startswith("../"):
            return False
    word = word.removeprefix("./")
    if word.endswith("/"):
        return any(f.startswith(word) or f"/{word}" in f for f in files)
    if "/" in word:
        return any(f == word or f.endswith(f"/{word}") for f in files)
    return any(posixpath.basename(f) == word for f in files)


def files_named(word: str, files: list[str]) -> list[str]:
    if "/" in word:
        return [f for f in files if f == word or f.endswith(f"/{word}")]
    return [f for f in files if posixpath.basename(f) == word]


def type_like(name: str) -> bool:
    return bool(re.fullmatch(r"[A-Z]\w*[a-z]\w*", name))


def symbol_like(name: str, diagram: bool) -> bool:
    if not re.fullmatch(IDENT, name):
        return False
    if "_" in name or re.fullmatch(r"[a-z][a-z0-9]*[A-Z]\w*", name):
        return True
    if diagram:  # prose and units in the diagram: only names of two or more humps
        return bool(re.fullmatch(r"[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+", name))
    return type_like(name) or bool(re.fullmatch(r"[A-Z][A-Z0-9]+", name))


def name_of(word: str) -> tuple[str, bool] | None:
    """The qualified name a word gives, and whether it is written as a call; None for a
    word that is no name (a command line, an option, a literal)."""
    if word.startswith("-") or not word.isascii():
        return None
    called = re.fullmatch(r"([\w.:*]+)\((.*)\)", word, re.S)
    if called:
        word = called.group(1)
    if not re.fullmatch(r"\.?[\w*]+(?:(?:\.|::)[\w*]+)*", word):
        return None
    return word.lstrip("."), bool(called)


def units(code: Code, sep: str) -> tuple[str, dict[str, list[str]]]:
    """The file extension of a language, and its module names to their units: a
    file (``rust/logdir/load.rs``) or a folder (``rust/logdir/``)."""
    root, ext = ("rust/", ".rs") if sep == "::" else (PACKAGE, ".py")
    found: dict[str, set[str]] = defaultdict(set)
    for path in code.files:
        if not (path.startswith(root) and path.endswith(ext)):
            continue
        parts = path[len(root) :].split("/")
        for depth, folder in enumerate(parts[:-1]):
            found[folder].add(root + "/".join(parts[: depth + 1]) + "/")
        stem = parts[-1][: -len(ext)]
        if stem not in ("mod", "__init__", "lib"):
            found[stem].add(path)
    return ext, {name: sorted(places) for name, places in found.items()}


def resolve(parts: list[str], sep: str, code: Code) -> tuple[list[str], list[str]] | None:
    """The files of the module the leading parts of ``parts`` name, and the parts after
    it; None where the first part is no module of ours."""
    ext, known = units(code, sep)
    if parts[0] not in known:
        return None
    found, rest = known[parts[0]], parts[1:]
    while rest:
        inner = [
            unit
            for folder in found
            if folder.endswith("/")
            for unit in (folder + rest[0] + ext, folder + rest[0] + "/")
            if any(f == unit or f.startswith(unit) for f in code.files)
        ]
        if not inner:
            break
        found, rest = inner, rest[1:]
    files = [
        f
        for f in code.files
        if any(f == u or (u.endswith("/") and f.startswith(u) and f.endswith(ext)) for u in found)
    ]
    return files, rest


def undefined(name: str, called: bool, word: Word, code: Code) -> str | None:
    """Why ``name`` is not found as the map uses it, or None where it is (or is not
    looked for)."""
    sep = "::" if "::" in name else "."
    parts = name.split(sep)
    head = parts[0]

    def defined(part: str, within: list[str] | None = None) -> bool:
        places = code.where(part)
        if within is not None:
            places = places & set(within)
        return bool(places) or (part.isupper() and part in code.literals and within is None)

    if word.after_file is not None and (not word.diagram or symbol_like(head, True)):
        files = files_named(word.after_file, code.files)
        if files and not defined(head, files):
            return f"`{name}` is not defined in `{word.after_file}`"
    if len(parts) == 1:
        if not (called or symbol_like(head, word.diagram)) or head in vars(builtins):
            return None
        if POSSESSIVE.search(word.before):
            return None
        if defined(head) or head in units(code, "::")[1] or head in units(code, ".")[1]:
            return None
        return f"`{name}` is defined nowhere in the code"
    if sep == "." and head in ("_core", "hs", "histoscope"):
        # The package's names are its modules' and its bindings' (`histoscope._core`).
        within = [f for f in code.files if f.startswith("rust/py/")]
        if head != "_core":
            within += [f for f in code.files if f.startswith(PACKAGE)]
        missing = [p for p in parts[1:] if not defined(p, within)]
        return f"`{name}`: no {', '.join(missing)} in the bindings" if missing else None
    resolved = resolve(parts, sep, code)
    if resolved is not None:
        files, rest = resolved
        if rest and not defined(rest[0], files):
            return f"`{name}`: no `{rest[0]}` in {', '.join(files[:3])}"
        missing = [p for p in rest[1:] if not defined(p)]
        return f"`{name}`: {', '.join(missing)} defined nowhere" if missing else None
    if type_like(head) and head not in vars(builtins):
        missing = [p for p in parts if not defined(p)]
        return f"`{name}`: {', '.join(missing)} defined nowhere" if missing else None
    return None  # another project's module, or a value: `torch.linalg.svdvals`, `py.detach`


def misses(text: str, code: Code) -> list[str]:
    """Every path the map names that is not there, and every name not defined."""
    found: list[str] = []
    for word in words(text):
        if is_path(word.text):
            if not path_exists(word.text, code.files):
                found.append(f"no such file or folder: `{word.text}`")
            continue
        named = name_of(word.text)
        if named is None:
            continue
        why = undefined(*named, word, code)
        if why:
            found.append(why)
    return list(dict.fromkeys(found))


def unnamed(text: str, files: list[str]) -> list[str]:
    """The Rust files and Python modules the map does not name."""
    paths = [w.text for w in words(text) if is_path(w.text) and not w.text.endswith("/")]
    sources = [
        f
        for f in files
        if (f.startswith("rust/") and f.endswith(".rs"))
        or (f.startswith(PACKAGE) and f.endswith(".py"))
    ]
    return [f for f in sources if not any(f in files_named(p, [f]) for p in paths)]


def map_text() -> str:
    return (REPO / MAP).read_text(encoding="utf-8")


def test_the_map_names_only_what_is_there() -> None:
    found = misses(map_text(), repository())
    assert not found, f"{MAP} names what the code does not hold:\n" + "\n".join(found)


def test_the_map_names_every_source_file() -> None:
    left_off = unnamed(map_text(), repository().files)
    assert not left_off, f"{MAP} leaves these files off:\n" + "\n".join(left_off)


def test_the_checks_see_what_is_wrong() -> None:
    files = [
        "rust/bins/chart.rs",
        "rust/bins/mod.rs",
        "rust/logdir/load.rs",
        "python/histoscope/read/storage.py",
        "python/histoscope/view/assets/embedded.js",
        "docs/architecture.md",
    ]
    sources = {
        "rust/bins/chart.rs": "pub const CHART_BINS: usize = 30;\npub fn charts() {}\n"
        "pub enum Pick { Last, At(i64) }\n",
        "rust/bins/mod.rs": "pub mod chart;\n",
        "rust/logdir/load.rs": "pub struct Logdir { pub runs: Vec<String> }\n",
        "python/histoscope/read/storage.py": 'VARIABLE = "HISTOSCOPE_X"\ndef core_logdirs(refs):\n'
        "    pass\n",
        "python/histoscope/view/assets/embedded.js": "function thin(n, most) {}\n",
    }
    code = read_code(files, read=sources.__getitem__)
    good = (
        "`rust/bins/chart.rs` `charts`, `chart.rs`, `bins/`, `view/assets/` `CHART_BINS`\n"
        "`Pick::At`, `logdir::load::Logdir`, `Logdir.runs`, `storage.core_logdirs`, "
        "`HISTOSCOPE_X`, `embedded.js` `thin`, `histoscope view`, `--token`, `api/card`, "
        "`torch.linalg.svdvals`, `ValueError`, Keras's `LossScaleOptimizer`, `alerts=`\n"
        "```\n load.rs Logdir ──► bins/chart.rs charts (MiB)\n```\n"
    )
    assert misses(good, code) == []
    bad = (
        "`rust/bins/nothing.rs`, `nothing.rs`, `view/nothing/`, `../outside/OLD_MAP.md`\n"
        "`rust/bins/chart.rs` `logdir_charts`, `embedded.js` `percentiles`, `NoSuchType`,\n"
        "`no_such_fn()`, `Pick::Never`, `logdir::load::Nothing`, `storage.nothing_here`,\n"
        "`HISTOSCOPE_Y`, `overviewValue`\n"
        "```\n read/tf_record.rs RecordReader ──► Decoder::value\n```\n"
    )
    assert misses(bad, code) == [
        "no such file or folder: `rust/bins/nothing.rs`",
        "no such file or folder: `nothing.rs`",
        "no such file or folder: `view/nothing/`",
        "no such file or folder: `../outside/OLD_MAP.md`",
        "`logdir_charts` is not defined in `rust/bins/chart.rs`",
        "`percentiles` is not defined in `embedded.js`",
        "`NoSuchType` is defined nowhere in the code",
        "`no_such_fn` is defined nowhere in the code",
        "`Pick::Never`: Never defined nowhere",
        "`logdir::load::Nothing`: no `Nothing` in rust/logdir/load.rs",
        "`storage.nothing_here`: no `nothing_here` in python/histoscope/read/storage.py",
        "`HISTOSCOPE_Y` is defined nowhere in the code",
        "`overviewValue` is defined nowhere in the code",
        "no such file or folder: `read/tf_record.rs`",
        "`RecordReader` is defined nowhere in the code",
        "`Decoder::value`: Decoder, value defined nowhere",
    ]
    assert unnamed("`chart.rs` and `rust/logdir/load.rs`", files) == [
        "rust/bins/mod.rs",
        "python/histoscope/read/storage.py",
    ]
