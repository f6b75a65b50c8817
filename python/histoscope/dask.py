"""``histoscope.dask``, as documented before the package had rooms: now `histoscope.read.dask`.

Example:
    >>> import histoscope.dask, histoscope.read.dask
    >>> histoscope.dask.load_histograms is histoscope.read.dask.load_histograms
    True
"""

from __future__ import annotations

from .read.dask import load_histograms

__all__ = ["load_histograms"]
