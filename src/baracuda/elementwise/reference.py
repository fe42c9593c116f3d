"""Lerp and its backward against the array API standard: the CPU path and the test oracle.

Half types are computed in float32 and rounded once, as the kernels do.
"""

from __future__ import annotations

from typing import Any

from baracuda._xp import from_acc, namespace, to_acc

__all__ = ["lerp", "lerp_backward"]


def lerp(a: Any, b: Any, weight: float) -> Any:
    """``a + w (b - a)``; ``b - (b - a)(1 - w)`` where ``|w| >= 0.5`` (PyTorch's form)."""
    xp = namespace(a, b)
    x, y = to_acc(xp, a), to_acc(xp, b)
    d = y - x
    out = x + weight * d if abs(weight) < 0.5 else y - d * (1.0 - weight)
    return from_acc(xp, out, a)


def lerp_backward(dy: Any, weight: float) -> tuple[Any, Any]:
    """``(da, db) = ((1 - w) dy, w dy)``."""
    xp = namespace(dy)
    g = to_acc(xp, dy)
    return from_acc(xp, (1.0 - weight) * g, dy), from_acc(xp, weight * g, dy)
