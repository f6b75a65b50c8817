"""Pages from the browser assets (``assets/``): their text, the modules, and one-file bundles."""

from __future__ import annotations

import re
from importlib import resources

__all__ = ["MODULES", "asset_text", "bundle"]

#: The ES modules of the viewer's page, in the order a single-file report concatenates them.
MODULES = ("format.js", "draw.js", "keys.js", "overview.js", "brush.js", "app.js")

_IMPORT = re.compile(r'^import \{([^}]*)\} from "\./(\w+)\.js";[ \t]*$', re.M)
_EXPORT = re.compile(r"^export (?:async )?(?:function|const|let|class) (\w+)", re.M)


def asset_text(name: str) -> str:
    """The text of ``assets/<name>``.

    Example:
        >>> from histoscope.view.page import asset_text
        >>> asset_text("a11y.js").startswith("//")
        True
    """
    return resources.files(__package__).joinpath("assets").joinpath(name).read_text("utf-8")


def bundle(names: list[str]) -> str:
    """The ES modules ``names`` (in dependency order) as one script, each in its own scope.

    A module's ``import {a, b} from "./m.js"`` becomes a read of module ``m``'s
    exports, so the page needs no loader and works from ``file://``, where
    browsers refuse to import one file from another.

    Example:
        >>> script = bundle(["format.js"])
        >>> script.startswith("const __format = (() => {"), "export function" in script
        (True, False)
    """
    parts = []
    for name in names:
        text = asset_text(name)
        stem = name.removesuffix(".js")
        exported = _EXPORT.findall(text)
        body = _IMPORT.sub(lambda m: f"const {{{m.group(1)}}} = __{m.group(2)};", text)
        body = re.sub(r"^export ", "", body, flags=re.M)
        parts.append(
            f"const __{stem} = (() => {{\n{body}\nreturn {{ {', '.join(exported)} }};\n}})();"
        )
    return "\n".join(parts)
