"""PyTorch tensors and NumPy arrays as the core takes them: snapshots and flat host views.

A tensor is copied on its own device (`snapshot_tensor`); one on the CPU
reaches the core as a flat NumPy view (`host_array`), 16-bit floats as their
bits with the encoding named. Tensors on other devices are binned there
(`device`).

Example:
    >>> import torch
    >>> from histoscope.write import _torch
    >>> array, encoding = _torch.host_array(torch.ones(2, dtype=torch.bfloat16))
    >>> array.dtype.name, encoding
    ('uint16', 'bfloat16')
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from .. import _args

if TYPE_CHECKING:
    import torch

NUMPY_DTYPES = frozenset(
    {
        "float64",
        "float32",
        "float16",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "bool",
    }
)
"""The torch dtypes that NumPy holds as they are (bfloat16 is not among them)."""

Encoding = Literal["float16", "bfloat16"]
"""The 16-bit float whose bits a host array's uint16s hold: the core's ``encoding``."""


def snapshot_tensor(tensor: torch.Tensor, name: str) -> torch.Tensor:
    """A detached, dense, contiguous clone of ``tensor`` on its own device.

    Example:
        >>> import torch
        >>> snapshot_tensor(torch.ones(2), "values").tolist()
        [1.0, 1.0]
    """
    import torch

    if tensor.is_complex():
        raise TypeError(f"{name} must be real numbers, got a {tensor.dtype} tensor")
    with torch.no_grad():
        if tensor.layout != torch.strided:
            tensor = tensor.to_dense()
        return tensor.detach().clone(memory_format=torch.contiguous_format)


def device_type(tensor: torch.Tensor) -> str:
    """The kind of device a tensor is on: "cpu", "cuda", "mps", ...

    Example:
        >>> import torch
        >>> device_type(torch.zeros(1))
        'cpu'
    """
    return str(tensor.device).split(":")[0]


def flat_numpy(tensor: torch.Tensor) -> tuple[np.ndarray, Encoding | None]:
    """A flat NumPy view of a CPU tensor, and "bfloat16" when its uint16s hold those bits.

    Example:
        >>> import torch
        >>> flat_numpy(torch.ones(2, 2))[0].shape
        (4,)
    """
    import torch

    flat = tensor.detach().resolve_neg().reshape(-1).cpu()
    if flat.dtype == torch.bfloat16:
        return flat.view(torch.int16).numpy().view(np.uint16), "bfloat16"
    if str(flat.dtype).removeprefix("torch.") not in NUMPY_DTYPES:
        flat = flat.to(torch.float64)
    return flat.numpy(), None


def flat_numpy_weights(weights: torch.Tensor) -> np.ndarray:
    """A tensor's weights as flat float64 on the host, checked to be usable.

    Example:
        >>> import torch
        >>> flat_numpy_weights(torch.ones(2)).tolist()
        [1.0, 1.0]
    """
    flat = weights.detach().reshape(-1).to("cpu").double()
    _args.usable_weights(bool((flat.isfinite() & (flat >= 0)).all()))
    return flat.numpy()


def host_array(values: Any) -> tuple[np.ndarray, Encoding | None]:
    """A flat NumPy view of a NumPy array or CPU tensor, and the 16-bit float its uint16s hold.

    Example:
        >>> host_array(np.zeros((2, 2), dtype=np.float16))[1]
        'float16'
    """
    if isinstance(values, np.ndarray):
        array = values.reshape(-1)
    else:
        array, half = flat_numpy(values)
        if half is not None:
            return array, half
    if array.dtype == np.float16:
        return array.view(np.uint16), "float16"
    # ml_dtypes' bfloat16 (JAX's) is a void-kind dtype. A dtype's name takes microseconds
    # to make, a watched step asks for hundreds, so it is only asked of such dtypes.
    if array.dtype.kind == "V" and array.dtype.name == "bfloat16":
        return array.view(np.uint16), "bfloat16"
    return array, None
