"""Functional lerp: any framework's arrays in, the same framework's arrays out."""

from __future__ import annotations

from typing import Any

from baracuda._cuda.memory import Workspace
from baracuda._functional import (
    element_of,
    empty_like,
    finish,
    is_cuda_array,
    plan_for,
    resolve_stream,
)
from baracuda.elementwise import reference
from baracuda.elementwise.lerp import BinaryParamArgs, BinaryParamDescriptor, BinaryParamPlan
from baracuda.elementwise.lerp_backward import (
    BinaryParamBackwardArgs,
    BinaryParamBackwardDescriptor,
    BinaryParamBackwardPlan,
)
from baracuda.errors import InvalidProblem

__all__ = ["lerp", "lerp_backward"]

_NO_WORKSPACE = Workspace.none()


def _weight(op: str, weight: object) -> float:
    if isinstance(weight, bool) or not isinstance(weight, int | float):
        raise InvalidProblem(f"baracuda.{op}: weight must be a Python real number (got {weight!r})")
    return float(weight)


def lerp(a: Any, b: Any, weight: float, *, stream: object = None) -> Any:
    """Linear interpolation ``a + weight * (b - a)`` with a scalar weight.

    Parameters
    ----------
    a, b : arrays of the same shape and dtype (f32, f16, bf16, f64), any strides.
        CUDA arrays (torch, cupy, jax) run the CUDA kernel; CPU arrays (numpy, torch CPU,
        any array-API library) run the array-API reference.
    weight : float
    stream : optional stream (``__cuda_stream__`` object or handle); default: the current
        stream of ``a``'s framework (torch, cupy) or the legacy default stream.

    Returns
    -------
    A new array like ``a`` (contiguous), in ``a``'s framework.

    Precision: computed in f32 (f64 for f64) as ``b - (b - a)(1 - w)`` when ``|w| >= 0.5``,
    one rounding to the output type; deterministic.

    Raises
    ------
    InvalidProblem: shapes, dtypes or devices differ.  Unsupported: dtype, rank > 8.
    """
    w = _weight("lerp", weight)
    if not is_cuda_array(a, "lerp"):
        return reference.lerp(a, b, w)
    s = resolve_stream(stream, a)
    out = empty_like(a, stream=s)
    plan = plan_for(BinaryParamPlan, s, (a.shape, a.dtype, w),
                    lambda: BinaryParamDescriptor(tuple(a.shape), element_of(a), w))  # fmt: skip
    plan.run(s, _NO_WORKSPACE, BinaryParamArgs(a, b, out))
    return finish(out)


def lerp_backward(dy: Any, weight: float, *, stream: object = None) -> tuple[Any, Any]:
    """Gradients of ``lerp`` with respect to ``a`` and ``b``: ``((1 - w) dy, w dy)``.

    One pass: reads ``dy`` once, writes both gradients. Same dtypes, layouts, devices and
    precision as ``lerp``; no gradient flows to the scalar ``weight``.
    """
    w = _weight("lerp_backward", weight)
    if not is_cuda_array(dy, "lerp_backward"):
        return reference.lerp_backward(dy, w)
    s = resolve_stream(stream, dy)
    da, db = empty_like(dy, stream=s), empty_like(dy, stream=s)
    dy_shape = tuple(dy.shape)
    key = (dy.shape, dy.dtype, w)
    plan = plan_for(BinaryParamBackwardPlan, s, key,
                    lambda: BinaryParamBackwardDescriptor(dy_shape, element_of(dy), w))  # fmt: skip
    plan.run(s, _NO_WORKSPACE, BinaryParamBackwardArgs(dy, da, db))
    return finish(da), finish(db)
