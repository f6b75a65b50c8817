"""Spectral health of weight matrices: `spectrum` of one matrix, `Run.log_spectrum`, and the
spectra `Run.watch(model, spectral=True)` logs.

A weight matrix ``W`` (``N x M``, ``N`` the larger dimension) is judged by the
eigenvalues of ``WᵀW / N``, the squared singular values over ``N``, as
WeightWatcher does: its stable rank ``Σ λ / λ_max``, its largest eigenvalue
``λ_max`` and α, the exponent of a power law fitted to the tail of the
eigenvalues (WeightWatcher's maximum-likelihood fit, its lower end chosen by
the Kolmogorov–Smirnov distance, as weightwatcher 0.7.7 fits it, with its
bias-corrected fit below 20 eigenvalues; the core's `spectral`). A convolution kernel
``(out, in, kh, kw)`` is read as WeightWatcher reads it: the ``kh * kw``
matrices ``W[:, :, i, j]`` (or, where ``out + in < kh + kw``, the ``out * in``
matrices ``W[o, c]``), their eigenvalues pooled into one spectrum; a 1-D or 3-D
convolution's kernel positions likewise.

The singular values are computed where the tensor is (``torch.linalg.svdvals``,
on the GPU for a tensor there, in float32 at least; NumPy's SVD for arrays);
only they come to the host. A sharded parameter (a DTensor, FSDP1) is never
gathered for its spectrum: a watch names such parameters once and skips them,
and `spectrum` refuses a DTensor.

Keys, for a layer ``<name>``: ``spectrum/<name>``, the eigenvalues' histogram
between log-spaced edges, and the scalars ``spectrum/<name>/alpha`` (where at
least 8 eigenvalues are positive), ``spectrum/<name>/stable_rank`` and
``spectrum/<name>/lambda_max``.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from .. import _args, _core
from ..errors import ShardedWarning, UnloggedWarning
from .histogram import Histogram
from .options import DEFAULT_BINS
from .said_once import SaidOnce

if TYPE_CHECKING:
    import torch

PREFIX = _core.SPECTRUM_PREFIX
"""What every spectral key starts with: the histogram ``spectrum/<name>``, its figures after
it (the core's, which the diagnosis and the viewer read them by)."""

FIGURES = ("alpha", "stable_rank", "lambda_max")
"""The scalars logged beside each spectrum, as ``spectrum/<name>/<figure>``."""

MIN_EIGENVALUES: int = _core.SPECTRUM_MIN_EIGENVALUES
"""Fewer positive eigenvalues than this get no α (WeightWatcher skips such layers)."""


class ScalarSink(Protocol):
    """Where a spectrum is logged: a `Run` (its ``log``)."""

    def log(self, data: Mapping[str, Any], step: int | None = None) -> None:
        """Writes ``data`` (key -> `Histogram` or number) at ``step``."""
        ...


@dataclasses.dataclass(frozen=True)
class Spectrum:
    """The spectrum of one weight matrix: the eigenvalues of ``WᵀW / N`` and their figures.

    ``alpha``, ``xmin`` and ``ks`` are NaN (and ``tail`` 0) where fewer than
    `MIN_EIGENVALUES` eigenvalues are positive.

    Example:
        >>> import numpy as np, histoscope as hs
        >>> s = hs.spectrum(np.diag([3.0, 1.0, 1.0]))
        >>> s.eigenvalues.tolist(), s.lambda_max, round(s.stable_rank, 3)
        ([0.3333333333333333, 0.3333333333333333, 3.0], 3.0, 1.222)
    """

    eigenvalues: np.ndarray
    """Increasing, float64: the squared singular values over ``N`` (a convolution's pooled)."""
    lambda_max: float
    """The largest eigenvalue: the squared spectral norm over ``N``."""
    stable_rank: float
    """``Σ λ / λ_max``: from 1 (one direction holds everything) to the number of eigenvalues."""
    alpha: float
    """The power-law exponent of the tail (WeightWatcher's α); NaN where not fitted."""
    xmin: float
    """Where the fitted tail starts."""
    ks: float
    """The Kolmogorov–Smirnov distance between the tail and the fitted power law."""
    tail: int
    """The number of eigenvalues at or above ``xmin``."""
    n: int
    """``N``: the larger dimension of the matrix (of each slice, for a convolution)."""
    histogram: Histogram
    """The eigenvalues between log-spaced edges, from the smallest positive one to the largest."""

    @property
    def figures(self) -> dict[str, float]:
        """``alpha`` (where fitted), ``stable_rank`` and ``lambda_max``, by name, as logged."""
        figures = {"alpha": self.alpha} if math.isfinite(self.alpha) else {}
        return {**figures, "stable_rank": self.stable_rank, "lambda_max": self.lambda_max}


def spectrum(matrix: Any, *, bins: int = DEFAULT_BINS) -> Spectrum:
    """The spectrum of ``matrix``: a 2-D array or tensor, or a convolution kernel.

    Singular values are computed on the tensor's own device (``torch.linalg.svdvals``,
    float32 at least) or by NumPy; the figures and the ``bins`` log-spaced bins
    by the core. Raises ValueError for a matrix with NaN or infinite values, or
    all zeros, and for a DTensor (sharded: never gathered here).

    Example:
        >>> import numpy as np, histoscope as hs
        >>> rng = np.random.default_rng(0)
        >>> s = hs.spectrum(rng.standard_t(3, size=(400, 200)))
        >>> s.eigenvalues.shape, s.n, 1.0 <= s.stable_rank <= 200, s.alpha > 1
        ((200,), 400, True, True)
    """
    bins = _args.whole_number(bins, "bins", minimum=1)
    values, n = singular_values(matrix)
    return _wrapped(_core.spectrum(values, n, bins), n)


def singular_values(matrix: Any) -> tuple[np.ndarray, int]:
    """The singular values of ``matrix`` (its slices' pooled, for a convolution kernel) as
    float64 on the host, and ``N``, the larger dimension of a slice.

    Example:
        >>> import torch
        >>> values, n = singular_values(torch.ones(8, 3, 1, 1))
        >>> values.round(6).tolist(), n
        ([4.898979, 0.0, 0.0], 8)
    """
    if _is_dtensor(matrix):
        raise ValueError(
            "matrix is a DTensor, sharded over ranks: its spectrum needs the whole matrix, "
            "which histoscope does not gather; pass matrix.full_tensor() if it fits in memory"
        )
    if _is_torch(matrix):
        return _torch_singular_values(matrix)
    array = np.asarray(matrix)
    if array.dtype.kind not in "fiub":
        raise TypeError(f"matrix must hold real numbers, got dtype {array.dtype}")
    slices = _slices(array.astype(np.float64, copy=False), np.transpose)
    if not np.isfinite(slices).all():
        raise ValueError("matrix holds NaN or infinite values: it has no spectrum")
    values = np.linalg.svd(slices, compute_uv=False)
    return np.ascontiguousarray(values, dtype=np.float64).ravel(), max(slices.shape[-2:])


def spectrum_key(name: str) -> str:
    """The key of ``name``'s spectrum: ``spectrum/<name>`` (a key already under it kept).

    Example:
        >>> spectrum_key("fc.weight"), spectrum_key("spectrum/fc")
        ('spectrum/fc.weight', 'spectrum/fc')
    """
    return name if name.startswith(PREFIX) else PREFIX + name


def figure_key(key: str, figure: str) -> str:
    """The key of a spectrum's figure: ``spectrum/<name>/<figure>``.

    Example:
        >>> figure_key("spectrum/fc.weight", "alpha")
        'spectrum/fc.weight/alpha'
    """
    return f"{key}/{figure}"


def log_spectrum(
    self: ScalarSink, key: str, matrix: Any, step: int | None = None, *, bins: int = DEFAULT_BINS
) -> Spectrum:
    """Logs the spectrum of ``matrix`` (2-D, or a convolution kernel) under ``spectrum/<key>``:
    the eigenvalues' log-binned histogram, and its α, stable rank and λ_max as scalars
    ``spectrum/<key>/alpha`` (where fitted), ``/stable_rank`` and ``/lambda_max``.
    Returns the `Spectrum`.

    The singular values are computed now, where the tensor is; a DTensor is refused.

    Example:
        >>> import tempfile, numpy as np, histoscope as hs
        >>> w = np.random.default_rng(0).normal(size=(64, 32))
        >>> with hs.init("demo", logdir=tempfile.mkdtemp()) as run:
        ...     s = run.log_spectrum("fc.weight", w, step=0)
        >>> sorted(hs.load_histograms(run.path))
        ['spectrum/fc.weight']
    """
    key = spectrum_key(_args.key(key))
    found = spectrum(matrix, bins=bins)
    self.log(_logged(key, found), step=step)
    return found


class SpectralCapture:
    """The spectra a watch logs: every kept parameter of two dimensions or more, every
    ``every`` steps; sharded ones named once and skipped."""

    def __init__(
        self,
        model: str,
        named: Sequence[tuple[str, torch.Tensor]],
        sharded: Sequence[tuple[str, Any]],
        *,
        every: int,
        bins: int,
    ) -> None:
        self.model = model
        self.every = every
        self.bins = bins
        self.matrices = [(name, p) for name, p in named if p.dim() >= 2]
        self._said = SaidOnce()
        refused = [name for name, tensor in sharded if len(tensor.shape) >= 2]
        if refused:
            shown = ", ".join(refused[:10]) + (
                f" and {len(refused) - 10} more" if len(refused) > 10 else ""
            )
            warnings.warn(
                f"histoscope watch of {model}: spectral=True: the spectra of these sharded "
                f"parameters are not logged, since a spectrum needs the whole matrix and "
                f"histoscope never gathers one: {shown}",
                ShardedWarning,
                stacklevel=4,
            )

    @property
    def keys(self) -> list[str]:
        """The spectrum keys logged (their figures' keys follow from them)."""
        return [spectrum_key(name) for name, _ in self.matrices]

    def due(self, step: int) -> bool:
        """Whether spectra are logged at ``step``."""
        return bool(self.matrices) and step % self.every == 0

    def logged(self, step: int) -> dict[str, Any]:
        """Every matrix's histogram and figures at ``step``, by key; a matrix with no
        spectrum (NaN values, all zeros) is named once and left out."""
        import torch

        values: list[np.ndarray] = []
        dims: list[int] = []
        kept: list[str] = []
        with torch.no_grad():
            for name, p in self.matrices:
                try:
                    sv, n = _torch_singular_values(p.detach())
                except Exception as error:  # noqa: BLE001 - reported once, training goes on
                    self._warn_once(f"{spectrum_key(name)}: {error}", step)
                    continue
                values.append(sv)
                dims.append(n)
                kept.append(name)
        logged: dict[str, Any] = {}
        for name, n, done in zip(kept, dims, _core.spectra(values, dims, self.bins)):
            key = spectrum_key(name)
            if isinstance(done, str):
                self._warn_once(f"{key}: {done}", step)
                continue
            logged.update(_logged(key, _wrapped(done, n)))
        return logged

    def _warn_once(self, message: str, step: int) -> None:
        said = f"histoscope watch of {self.model}: step {step}: {message} (not logged; said once)"
        self._said.warn(message, said, UnloggedWarning, stacklevel=2)


def _logged(key: str, found: Spectrum) -> Mapping[str, Any]:
    figures = {figure_key(key, name): value for name, value in found.figures.items()}
    return {key: found.histogram, **figures}


def _wrapped(record: _core.Spectrum, n: int) -> Spectrum:
    fit = record.power_law
    h = record.histogram
    nan = float("nan")
    return Spectrum(
        eigenvalues=record.eigenvalues,
        lambda_max=record.lambda_max,
        stable_rank=record.stable_rank,
        alpha=nan if fit is None else fit.alpha,
        xmin=nan if fit is None else fit.xmin,
        ks=nan if fit is None else fit.ks,
        tail=0 if fit is None else fit.tail,
        n=n,
        histogram=Histogram._of(h.edges, h.counts, h.stats),
    )


def _slices(matrix: Any, transpose: Any) -> Any:
    """``matrix`` as a stack of 2-D slices, WeightWatcher's way for a convolution kernel:
    ``(out, in, *kernel)`` to ``(positions, out, in)``; for a 2-D kernel whose channels
    are fewer than its size (``out + in < kh + kw``), ``(out * in, kh, kw)``. Each slice
    is stood upright (rows >= columns): LAPACK's SVD of a wide matrix can take a hundred
    times as long as of its transpose (5.5 s against 0.04 s for 256 x 9216 in torch)."""
    shape = tuple(matrix.shape)
    if len(shape) < 2:
        raise ValueError(
            f"a spectrum needs a matrix (2-D) or a convolution kernel (3-D or more), "
            f"got shape {shape}"
        )
    out, into, kernel = shape[0], shape[1], shape[2:]
    if len(shape) == 2:
        slices = matrix.reshape(1, out, into)
    elif len(kernel) == 2 and out + into < kernel[0] + kernel[1]:
        slices = matrix.reshape(out * into, *kernel)
    else:
        positions = math.prod(kernel)
        moved = transpose(matrix.reshape(out, into, positions), (2, 0, 1))
        slices = moved.reshape(positions, out, into)
    rows, columns = slices.shape[-2:]
    return transpose(slices, (0, 2, 1)) if rows < columns else slices


def _torch_singular_values(tensor: torch.Tensor) -> tuple[np.ndarray, int]:
    import torch

    if tensor.is_complex():
        raise TypeError(f"matrix must hold real numbers, got dtype {tensor.dtype}")
    with torch.no_grad():
        slices = _slices(tensor.detach(), lambda t, order: t.permute(*order))
        wide = torch.float64 if slices.dtype == torch.float64 else torch.float32
        values = torch.linalg.svdvals(slices.to(wide))
        n = max(slices.shape[-2:])
        return values.to(torch.float64).cpu().numpy().ravel(), int(n)


def _is_torch(value: Any) -> bool:
    torch = _loaded("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def _is_dtensor(value: Any) -> bool:
    return type(value).__name__ == "DTensor" and _is_torch(value)


def _loaded(name: str) -> Any:
    import sys

    return sys.modules.get(name)
