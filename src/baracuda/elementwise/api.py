"""Functional lerp: any framework's arrays in, the same framework's arrays out."""

from __future__ import annotations

from typing import Any

from baracuda._cuda.device import keeps_context
from baracuda._cuda.memory import Workspace
from baracuda._cuda.replay import capturing
from baracuda._functional import (
    BoundCalls,
    FastCall,
    check_host_operands,
    element_of,
    empty_like,
    finish,
    is_cuda_array,
    plan_for,
    real_arg,
    resolve_stream,
    run_hit,
    run_hit_binary,
)
from baracuda._interop import torch_empty, torch_out_view, torch_view
from baracuda.elementwise import reference
from baracuda.elementwise.lerp import BinaryParamArgs, BinaryParamDescriptor, BinaryParamPlan
from baracuda.elementwise.lerp_backward import (
    BinaryParamBackwardArgs,
    BinaryParamBackwardDescriptor,
    BinaryParamBackwardPlan,
)

__all__ = ["lerp", "lerp_backward"]

_NO_WORKSPACE = Workspace.none()
# calls on plain torch CUDA tensors whose checks passed: (op, weight, signatures) -> (the plan,
# its launch prepared as a FastCall or None) (baracuda._functional.BoundCalls)
_BOUND = BoundCalls()


@keeps_context
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
    w = real_arg("lerp", "weight", weight)
    key, hit, bound = _BOUND.lookup(stream, ("lerp", w), a, b)
    if hit is not None:
        return run_hit_binary(hit, bound, a, b)
    if not is_cuda_array(a, "lerp"):
        check_host_operands("lerp", [("a", a), ("b", b)])
        return reference.lerp(a, b, w)
    s = resolve_stream(stream, a)
    out = empty_like(a, stream=s)
    plan = plan_for(BinaryParamPlan, s, (a.shape, a.dtype, w),
                    lambda: BinaryParamDescriptor(tuple(a.shape), element_of(a), w))  # fmt: skip
    with capturing(key is not None) as steps:
        plan.run(s, _NO_WORKSPACE, BinaryParamArgs(a, b, out))
    if key is not None:  # torch tensors
        ptrs = (bound[0][1], bound[1][1], out.data_ptr())  # type: ignore[index]
        _BOUND.put(key, (plan, FastCall.bind(plan, steps, ptrs)))
    return finish(out)


@keeps_context
def lerp_backward(dy: Any, weight: float, *, stream: object = None) -> tuple[Any, Any]:
    """Gradients of ``lerp`` with respect to ``a`` and ``b``: ``((1 - w) dy, w dy)``.

    One pass: reads ``dy`` once, writes both gradients. Same dtypes, layouts, devices and
    precision as ``lerp``; no gradient flows to the scalar ``weight``.
    """
    w = real_arg("lerp_backward", "weight", weight)
    key, hit, bound = _BOUND.lookup(stream, ("lerp_backward", w), dy)
    if hit is not None:
        sd = bound[0]
        assert sd is not None
        da, db = torch_empty(dy), torch_empty(dy)
        run_hit(hit, (sd[1], da.data_ptr(), db.data_ptr()), sd[0],
                lambda: (torch_view(dy, *sd), torch_out_view(da), torch_out_view(db)))  # fmt: skip
        return da, db
    if not is_cuda_array(dy, "lerp_backward"):
        check_host_operands("lerp_backward", [("dy", dy)])
        return reference.lerp_backward(dy, w)
    s = resolve_stream(stream, dy)
    da, db = empty_like(dy, stream=s), empty_like(dy, stream=s)
    dy_shape = tuple(dy.shape)
    plan = plan_for(BinaryParamBackwardPlan, s, (dy.shape, dy.dtype, w),
                    lambda: BinaryParamBackwardDescriptor(dy_shape, element_of(dy), w))  # fmt: skip
    with capturing(key is not None) as steps:
        plan.run(s, _NO_WORKSPACE, BinaryParamBackwardArgs(dy, da, db))
    if key is not None:  # torch tensors
        ptrs = (bound[0][1], da.data_ptr(), db.data_ptr())  # type: ignore[index]
        _BOUND.put(key, (plan, FastCall.bind(plan, steps, ptrs)))
    return finish(da), finish(db)
