"""Functional sparsemax: any framework's arrays in, the same framework's arrays out."""

from __future__ import annotations

from typing import Any

from baracuda._cuda.device import keeps_context
from baracuda._cuda.replay import capturing
from baracuda._functional import (
    BoundCalls,
    FastCall,
    cached_plan,
    check_host_operands,
    element_of,
    empty_like,
    finish,
    int_arg,
    is_cuda_array,
    resolve_stream,
    run_hit,
    run_hit_binary,
    run_plan,
)
from baracuda._interop import torch_empty, torch_out_view, torch_view
from baracuda.errors import InvalidProblem
from baracuda.softmax import reference
from baracuda.softmax.sparsemax import SparsemaxArgs, SparsemaxDescriptor, SparsemaxPlan
from baracuda.softmax.sparsemax_backward import (
    SparsemaxBackwardArgs,
    SparsemaxBackwardDescriptor,
    SparsemaxBackwardPlan,
)

__all__ = ["sparsemax", "sparsemax_backward"]

# calls on plain torch CUDA tensors whose checks passed (baracuda._functional.BoundCalls)
_BOUND = BoundCalls()


@keeps_context
def sparsemax(x: Any, axis: int = -1, *, stream: object = None) -> Any:
    """Sparsemax along ``axis``: the Euclidean projection of each row onto the simplex.

    ``y = max(z - tau, 0)`` with ``z = x - max(x)`` and ``tau`` such that each row sums to 1;
    sparse where softmax is dense. ``-inf`` entries get 0; a row holding NaN or ``+inf``, or
    made only of ``-inf``, gives NaN throughout.

    Parameters
    ----------
    x : array of rank 1-8, f32, f16, bf16 or f64, any strides. CUDA arrays (torch, cupy,
        jax) run the CUDA kernel (no sort: Michelot's fixed point, rows of any length);
        CPU arrays (numpy, torch CPU, any array-API library) run the sort-based reference.
    axis : int, default -1. Negative values count from the end.
    stream : optional stream (``__cuda_stream__`` object or handle); default: the current
        stream of ``x``'s framework (torch, cupy) or the legacy default stream.

    Returns
    -------
    A new contiguous array like ``x``, in ``x``'s framework.

    Precision: f32 math for the half types, f64 for f64; one rounding per output; the
    support and ``tau`` match the sort-based reference up to rounding. Deterministic.

    Raises
    ------
    InvalidProblem: bad axis, 0-d input.  Unsupported: dtype, rank > 8.
    """
    ax = int_arg("sparsemax", "axis", axis)
    key, hit, bound = _BOUND.lookup(stream, ("sparsemax", ax), x)
    if hit is not None:
        sig = bound[0]
        assert sig is not None
        out = torch_empty(x)
        run_hit(hit, (sig[1], out.data_ptr()), sig[0],
                lambda: (torch_view(x, *sig), torch_out_view(out)))  # fmt: skip
        return out
    if not is_cuda_array(x, "sparsemax"):
        check_host_operands("sparsemax", [("x", x)])
        return reference.sparsemax(x, ax)
    s = resolve_stream(stream, x)
    out = empty_like(x, stream=s)
    plan = cached_plan(SparsemaxPlan, s, SparsemaxDescriptor(tuple(x.shape), ax, element_of(x)))
    with capturing(key is not None) as steps:
        run_plan(plan, s, SparsemaxArgs(x, out))
    if key is not None:  # torch tensors
        ptrs = (bound[0][1], out.data_ptr())  # type: ignore[index]
        _BOUND.put(key, (plan, FastCall.bind(plan, steps, ptrs)))
    return finish(out)


@keeps_context
def sparsemax_backward(dy: Any, y: Any, axis: int = -1, *, stream: object = None) -> Any:
    """Gradient of ``sparsemax`` with respect to its input, from the saved output ``y``.

    ``dx = m * (dy - sum(m * dy) / |m|)`` along ``axis`` with ``m = (y > 0)``; ``dy`` outside
    the support is not read. One kernel; same dtypes, layouts, devices and precision as
    ``sparsemax``. ``dy`` and ``y`` must have the same shape and dtype.

    Returns
    -------
    ``dx``: a new contiguous array like ``dy``, in ``dy``'s framework.

    Raises
    ------
    InvalidProblem: shapes, dtypes or devices differ; bad axis.  Unsupported: dtype, rank > 8.
    """
    ax = int_arg("sparsemax_backward", "axis", axis)
    if y is None:
        raise InvalidProblem("baracuda.sparsemax_backward: y, the forward's output, is required")
    key, hit, bound = _BOUND.lookup(stream, ("sparsemax_backward", ax), dy, y)
    if hit is not None:
        return run_hit_binary(hit, bound, dy, y)
    if not is_cuda_array(dy, "sparsemax_backward"):
        check_host_operands("sparsemax_backward", [("dy", dy), ("y", y)])
        return reference.sparsemax_backward(dy, y, ax)
    s = resolve_stream(stream, dy)
    dx = empty_like(dy, stream=s)
    desc = SparsemaxBackwardDescriptor(tuple(dy.shape), ax, element_of(dy))
    plan = cached_plan(SparsemaxBackwardPlan, s, desc)
    with capturing(key is not None) as steps:
        run_plan(plan, s, SparsemaxBackwardArgs(dy, y, dx))
    if key is not None:  # torch tensors
        sd, sy = bound
        assert sd is not None and sy is not None
        _BOUND.put(key, (plan, FastCall.bind(plan, steps, (sd[1], sy[1], dx.data_ptr()))))
    return finish(dx)
