"""The package's browser assets (``_assets/``), read from wherever it is installed."""

from __future__ import annotations

from importlib import resources

__all__ = ["asset_text"]


def asset_text(name: str) -> str:
    """The text of ``_assets/<name>``.

    Example:
        >>> from histoscope._resources import asset_text
        >>> asset_text("a11y.js").startswith("//")
        True
    """
    return resources.files(__package__).joinpath("_assets").joinpath(name).read_text("utf-8")
