"""Reading: log directories (local or through fsspec) to histogram series and charts.

`load_histograms` keeps every bucket; `read_tensorboard_histograms` thins and
rebins, as maidr's does. Tidy rows (`to_arrow`, `to_pandas`), Parquet export
(`export`) and Dask (`dask`) build on the same core records.

Example:
    >>> from histoscope.read import load_histograms, read_tensorboard_histograms
    >>> callable(load_histograms) and callable(read_tensorboard_histograms)
    True
"""

from __future__ import annotations

from .chart import TensorBoardChart as TensorBoardChart
from .reader import (
    load_histograms as load_histograms,
)
from .reader import (
    read_tensorboard_histograms as read_tensorboard_histograms,
)
from .series import HistogramSeries as HistogramSeries
from .tidy import to_arrow as to_arrow
from .tidy import to_pandas as to_pandas
