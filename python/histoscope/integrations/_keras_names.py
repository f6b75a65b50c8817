"""How the Keras callback names a model's weights and leaf layers: by their paths inside it.

Keras names a weight by its layers' path (``my_model/dense_1/kernel``); the
callback drops the model's own name, as `Run.watch` names a module's tensors,
and tells apart two weights of the same path by a count (``dense/kernel:1``).

Example:
    >>> import keras
    >>> from histoscope.write.options import WatchOptions
    >>> model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, name="out")])
    >>> [name for name, _ in named_weights(model, WatchOptions())]
    ['out/kernel', 'out/bias']
    >>> [name for name, _ in named_layers(model)]
    ['out']
"""

from __future__ import annotations

from typing import Any

import keras

from ..write.options import WatchOptions


def named_weights(model: Any, options: WatchOptions) -> list[tuple[str, Any]]:
    """``(name, variable)`` for the model's floating-point weights that the filter keeps."""
    floating = [v for v in model.weights if "float" in str(v.dtype)]
    names = _unique([_inside(model, v.path) for v in floating])
    return [(name, v) for name, v in zip(names, floating) if options.keeps(name, v)]


def named_layers(model: Any) -> list[tuple[str, Any]]:
    """``(name, layer)`` for the layers inside ``model`` that hold no other layer, named by
    the layers that hold them (``block_1/dense``), as Keras names their weights."""
    found: list[tuple[str, Any]] = []
    seen: set[int] = set()

    def visit(layer: Any, name: str) -> None:
        inner = [
            child
            for child in layer._flatten_layers(include_self=False, recursive=False)
            if not isinstance(child, keras.layers.InputLayer) and id(child) not in seen
        ]
        seen.update(id(child) for child in inner)
        if not inner and layer is not model:
            found.append((name, layer))
        for child in inner:
            visit(child, f"{name}/{child.name}" if name else child.name)

    visit(model, "")
    return found


def _inside(model: Any, path: str) -> str:
    """A path as named inside ``model``: without the model's own name in front."""
    return path.removeprefix(f"{model.name}/")


def _unique(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    unique = []
    for name in names:
        count = seen.get(name, 0)
        seen[name] = count + 1
        unique.append(name if count == 0 else f"{name}:{count}")
    return unique
