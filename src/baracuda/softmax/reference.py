"""Sparsemax and its backward against the array API standard: the CPU path and the oracle.

Sort-based (Martin & Astudillo 2016): sort each shifted row ``z = x - max(x)`` in
decreasing order, ``k* = max{k : 1 + k z_(k) > sum_{j<=k} z_(j)}``,
``tau = (sum_{j<=k*} z_(j) - 1) / k*``, ``y = max(z - tau, 0)``. Half types are computed in
float32 and rounded once, as the kernels do; float64 stays float64.
"""

from __future__ import annotations

import math
from typing import Any

from array_api_compat import device

from baracuda._xp import acc_dtype, from_acc, namespace, to_acc

__all__ = ["sparsemax", "sparsemax_backward"]


def _rows_last(xp: Any, x: Any, axis: int) -> Any:
    return xp.moveaxis(x, axis, -1) if axis not in (-1, x.ndim - 1) else x


def _back(xp: Any, x: Any, axis: int) -> Any:
    return xp.moveaxis(x, -1, axis) if axis not in (-1, x.ndim - 1) else x


def _check_axis(op: str, x: Any, axis: int) -> int:
    from baracuda.errors import InvalidProblem

    if not isinstance(axis, int) or isinstance(axis, bool):
        raise InvalidProblem(f"baracuda.{op}: axis must be an int (got {axis!r})")
    if x.ndim < 1:
        raise InvalidProblem(f"baracuda.{op}: input must have rank >= 1 (got a 0-d array)")
    if not -x.ndim <= axis < x.ndim:
        raise InvalidProblem(f"baracuda.{op}: axis must be in [{-x.ndim}, {x.ndim}) (got {axis})")
    return axis % int(x.ndim)


def sparsemax(x: Any, axis: int = -1) -> Any:
    """Sparsemax of ``x`` along ``axis``: ``max(z - tau, 0)``, ``z = x - max(x)``.

    A row holding NaN or ``+inf``, or made only of ``-inf``, gives NaN; ``-inf`` entries get 0.
    """
    xp = namespace(x)
    ax = _check_axis("sparsemax", x, axis)
    if math.prod(x.shape) == 0:
        return xp.zeros(x.shape, dtype=x.dtype, device=device(x))
    z = _rows_last(xp, to_acc(xp, x), ax)
    dt = acc_dtype(xp, x)
    n = z.shape[-1]
    m = xp.max(z, axis=-1, keepdims=True)
    finite = xp.isfinite(m)
    z = z - xp.where(finite, m, xp.zeros_like(m))
    zs = xp.flip(xp.sort(z, axis=-1), axis=-1)  # decreasing; -inf last
    zs_safe = xp.where(xp.isfinite(zs), zs, xp.full_like(zs, -1.0))  # keep cumsum finite
    cs = xp.cumulative_sum(zs_safe, axis=-1)
    k = xp.arange(1, n + 1, dtype=dt, device=device(x))
    in_support = (1.0 + k * zs) > cs
    count = xp.sum(xp.astype(in_support, dt), axis=-1, keepdims=True)
    idx = xp.astype(xp.clip(count - 1.0, 0.0, float(n - 1)), xp.int64)
    tau = (xp.take_along_axis(cs, idx, axis=-1) - 1.0) / xp.maximum(count, xp.ones_like(count))
    y = xp.where(z > tau, z - tau, xp.zeros_like(z))
    y = xp.where(finite, y, xp.full_like(y, float("nan")))
    return from_acc(xp, _back(xp, y, ax), x)


def sparsemax_backward(dy: Any, y: Any, axis: int = -1) -> Any:
    """``dx = m * (dy - sum(m * dy) / |m|)`` along ``axis``, ``m = (y > 0)``; ``dy`` outside
    the support is never used (NaN there does not propagate)."""
    xp = namespace(dy, y)
    ax = _check_axis("sparsemax_backward", y, axis)
    if tuple(dy.shape) != tuple(y.shape):
        from baracuda.errors import InvalidProblem

        raise InvalidProblem(
            f"baracuda.sparsemax_backward: dy.shape must equal y.shape {tuple(y.shape)} "
            f"(got {tuple(dy.shape)})"
        )
    g = to_acc(xp, dy)
    on = to_acc(xp, y) > 0
    g = xp.where(on, g, xp.zeros_like(g))
    s = xp.sum(g, axis=ax, keepdims=True)
    c = xp.sum(xp.astype(on, g.dtype), axis=ax, keepdims=True)
    mean = s / xp.maximum(c, xp.ones_like(c))
    dx = xp.where(on, g - mean, xp.zeros_like(g))
    return from_acc(xp, dx, dy)
