"""Pages from the browser assets (``assets/``): their text, the modules, the lists the
pages are handed, and one-file bundles."""

from __future__ import annotations

import html
import json
import re
from importlib import resources

from .. import _core

#: The ES modules the viewer's page and the report share: app.js and every module it imports.
MODULES = (
    "a11y.js",
    "format.js",
    "names.js",
    "colours.js",
    "state.js",
    "axes.js",
    "ridgeline.js",
    "draw.js",
    "difference.js",
    "spectral.js",
    "keys.js",
    "brush.js",
    "runs.js",
    "sections.js",
    "grid.js",
    "overview.js",
    "cards.js",
    "controls.js",
    "alerts.js",
    "order.js",
    "app.js",
)

#: Severities of findings, least severe first, as the core lists them.
SEVERITIES: tuple[str, ...] = tuple(_core.SEVERITIES)

_IMPORT = re.compile(r'^import (\{[^}]*\}|\* as \w+) from "\./(\w+)\.js";[ \t]*$', re.M)
_EXPORT = re.compile(r"^export (?:async )?(?:function|const|let|class) (\w+)", re.M)


def asset_text(name: str) -> str:
    """The text of ``assets/<name>``.

    Example:
        >>> from histoscope.view.page import asset_text
        >>> asset_text("a11y.js").startswith("//")
        True
    """
    return resources.files(__package__).joinpath("assets").joinpath(name).read_text("utf-8")


def imports(name: str) -> list[str]:
    """The modules ``assets/<name>`` imports, in its order.

    Example:
        >>> imports("viewer.js")
        ['api.js', 'app.js']

        `MODULES` is app.js and every module imported from there, no more:

        >>> {m for n in MODULES for m in imports(n)} == set(MODULES) - {"app.js"}
        True
    """
    return [f"{stem}.js" for _what, stem in _IMPORT.findall(asset_text(name))]


def bundle(names: list[str]) -> str:
    """The ES modules ``names`` and every module they import, each once and after its
    imports, as one script with each module in its own scope.

    A module's ``import {a, b} from "./m.js"`` becomes a read of module ``m``'s
    exports (``import * as m`` all of them), so the page needs no loader and
    works from ``file://``, where browsers refuse to import one file from another.

    Example:
        >>> script = bundle(["axes.js"])
        >>> script.startswith("const __format = (() => {"), "export function" in script
        (True, False)
    """
    order: list[str] = []

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in path:
            raise ValueError(f"the assets import in a circle: {' -> '.join((*path, name))}")
        if name not in order:
            for imported in imports(name):
                visit(imported, (*path, name))
            order.append(name)

    for name in names:
        visit(name, ())
    return "\n".join(_scoped(name) for name in order)


def _scoped(name: str) -> str:
    text = asset_text(name)
    exported = _EXPORT.findall(text)
    body = _IMPORT.sub(_binding, text)
    body = re.sub(r"^export ", "", body, flags=re.M)
    stem = name.removesuffix(".js")
    return f"const __{stem} = (() => {{\n{body}\nreturn {{ {', '.join(exported)} }};\n}})();"


def _binding(match: re.Match[str]) -> str:
    what, stem = match.groups()
    if what.startswith("*"):
        return f"const {what.split()[-1]} = __{stem};"
    return f"const {what} = __{stem};"


def vocabulary_script() -> str:
    """The lists the pages' modules read (``state.js``'s ``readVocabulary``) as a JSON
    block: the statistics a step can store and the severities of findings, both in the
    core's order, the steps an overview thins to (the core's chart rule) and the first
    word of a spectrum's key, so that no page types them again.

    Example:
        >>> vocabulary_script().startswith('<script type="application/json" id="histoscope-voc')
        True
    """
    words = {
        "stats": list(_core.STAT_NAMES),
        "severities": list(SEVERITIES),
        "overviewSteps": _core.CHART_STEPS,
        "spectrumPrefix": _core.SPECTRUM_PREFIX,
    }
    return (
        '<script type="application/json" id="histoscope-vocabulary">'
        f"{json.dumps(words, separators=(',', ':'))}</script>\n"
    )


def widget_module() -> str:
    """The notebook widget's ES module (anywidget's ``_esm``): the viewer's modules and
    ``widget.js`` bundled as for the report, with the two hooks anywidget calls as the
    module's default export.

    Example:
        >>> module = widget_module()
        >>> module.rstrip().endswith("render: __widget.render };"), "import " in module
        (True, False)
    """
    return (
        f"{bundle(['widget.js'])}\n"
        "export default { initialize: __widget.initialize, render: __widget.render };\n"
    )


def widget_page(title: str) -> str:
    """The viewer's page as the widget's shadow root holds it: its styles (scoped to the
    root: ``:root`` becomes ``:host``, ``body`` the page's box), its body and the
    vocabulary, with ``title`` as its heading (escaped here).

    Example:
        >>> page = widget_page("<run>")
        >>> page.count('class="histoscope-page"'), "&lt;run&gt;" in page
        (1, True)
        >>> '<script type="module' in page
        False
    """
    document = asset_text("viewer.html")
    body = document[document.index("<body>") + len("<body>") : document.index("{scripts}")]
    body = body.replace("{title}", html.escape(title))
    # In a notebook the page sits inside the notebook's own main landmark: one region,
    # named for what it shows, with no banner or main of its own.
    for tag, kind in (("header", "page-header"), ("main", "page-main")):
        body = body.replace(f"<{tag}>", f'<div class="{kind}">').replace(f"</{tag}>", "</div>")
    css = re.sub(r"(?m)^(\s*):root\b", r"\1:host", asset_text("viewer.css"))
    css = re.sub(r"(?m)^body \{", ".histoscope-page {", css)
    css = re.sub(r"(?m)^header \{", ".page-header {", css)
    label = html.escape(title, quote=True)
    return (
        f"<style>\n{css}\n.histoscope-page {{ overflow: auto; }}\n</style>\n"
        f'<div class="histoscope-page" role="region" aria-label="{label}">{body}</div>\n'
        f"{vocabulary_script()}"
    )
