"""Logging: runs, histograms and whole-model capture, written as TensorBoard events files.

`Run` (from `init`) checks arguments and snapshots values on the caller's
thread; a writer thread bins and writes them through the core. `watch`
captures a PyTorch model's parameters, gradients and activations in one
batched binning per step; `log_tree` does the same for a JAX pytree; `spectrum`
and `Run.log_spectrum` judge a weight matrix by its eigenvalues.

Example:
    >>> from histoscope.write import Histogram
    >>> Histogram([0.0, 1.0, 2.0], bins=2).counts.tolist()
    [1.0, 2.0]
"""

from __future__ import annotations

from .histogram import Histogram as Histogram
from .run import Run as Run
from .session import (
    finish as finish,
)
from .session import (
    init as init,
)
from .session import (
    log as log,
)
from .session import (
    log_tree as log_tree,
)
from .session import (
    watch as watch,
)
from .spectrum import Spectrum as Spectrum
from .spectrum import spectrum as spectrum
