"""Seeing: accessible chart pages, the live viewer, the offline report, and their assets.

`render`, `save_html` and `show` make one chart's page; `viewer` serves a log
directory (imported by ``histoscope view`` only, since it needs Starlette);
`report` writes one offline file. Every page draws with the ES modules in
``assets/``.

Example:
    >>> from histoscope.view import render
    >>> callable(render)
    True
"""

from __future__ import annotations

from .html import render as render
from .html import save_html as save_html
from .html import show as show
