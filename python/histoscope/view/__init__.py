"""Seeing: accessible chart pages, the live viewer, the offline report, and their assets.

`render` and `save_html` make one chart's page, which `histoscope.show` shows
(`html.show_chart`); `viewer` serves a log directory (imported by ``histoscope view``
only, since it needs Starlette); `report` writes one offline file. Every page draws
with the ES modules in ``assets/``.

Example:
    >>> from histoscope.view import render
    >>> callable(render)
    True
"""

from __future__ import annotations

from .._deprecated import module_aliases
from .html import render as render
from .html import save_html as save_html
from .html import show_chart

# ``histoscope.view.show`` showed a chart only, beside `histoscope.show`, which shows
# everything (a chart through the same `html.show_chart`): one ``show`` now.
__getattr__ = module_aliases("histoscope.view", {"show": ("histoscope.show", lambda: show_chart)})
