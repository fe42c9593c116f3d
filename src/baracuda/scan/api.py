"""Functional axis scans: any framework's arrays in, the same framework's arrays out."""

from __future__ import annotations

from typing import Any, TypeVar

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
    run_plan,
)
from baracuda._interop import torch_empty, torch_out_view, torch_view
from baracuda.errors import InvalidProblem
from baracuda.scan import reference
from baracuda.scan.scan import ScanArgs, ScanDescriptor, ScanPlan
from baracuda.scan.scan_backward import (
    ScanBackwardArgs,
    ScanBackwardDescriptor,
    ScanBackwardPlan,
    needs_saved_x,
    needs_saved_y,
)
from baracuda.types import IndexElementKind, ScanKind, TieBreak

__all__ = ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "scan_backward"]


# the parameters' spellings, by value: a dict lookup, not an Enum call, on every call's path
_KINDS: dict[object, ScanKind] = {**{k: k for k in ScanKind}, **{k.value: k for k in ScanKind}}
_TIES: dict[object, TieBreak] = {**{t: t for t in TieBreak}, **{t.value: t for t in TieBreak}}


E = TypeVar("E", ScanKind, TieBreak)


def _spelled(table: dict[object, E], cls: type[E], op: str, field: str, value: object,
             must: str) -> E:  # fmt: skip
    """The member of ``cls`` that ``value`` spells (a member, its value, any case), else an
    ``InvalidProblem`` that ``field`` ``must`` be so."""
    try:
        got = table.get(value)
    except TypeError:  # an unhashable value: the message below
        got = None
    if got is not None:
        return got
    try:
        return cls(str(value).lower())
    except ValueError:
        raise InvalidProblem(f"baracuda.{op}: {field} must be {must} (got {value!r})") from None


_KIND_MUST = f"a ScanKind or one of {', '.join(k.value for k in ScanKind)}"


def _kind(op: str, kind: object) -> ScanKind:
    return _spelled(_KINDS, ScanKind, op, "kind", kind, _KIND_MUST)


def _tie(op: str, tie_break: object) -> TieBreak:
    return _spelled(_TIES, TieBreak, op, "tie_break", tie_break, "'first' or 'last'")


def _check_reverse(op: str, reverse: object) -> None:
    """Both paths take a bool only (the plans' descriptors refuse anything else; a truthy
    value must not find a bound call made with ``True``)."""
    if not isinstance(reverse, bool):
        raise InvalidProblem(f"baracuda.{op}: reverse must be a bool (got {reverse!r})")


# the calls on plain torch CUDA tensors whose checks passed: (op, parameters, signatures) ->
# (the plan, its launches prepared as a FastCall or None) (BoundCalls; bc.cumsum of a
# (64, 1024) f32 tensor on the H100: 46.0 -> 31.4 us of host time a call through the plan,
# docs/benchmarks.md, round 17)
_BOUND = BoundCalls()


def _forward(kind: ScanKind, x: Any, axis: int, reverse: bool, tie_break: TieBreak,
             stream: object) -> Any:  # fmt: skip
    extremum = kind in (ScanKind.CUMMAX, ScanKind.CUMMIN)
    axis = int_arg(kind.value, "axis", axis)
    _check_reverse(kind.value, reverse)
    key, hit, bound = _BOUND.lookup(stream, (kind, axis, reverse, tie_break), x)
    if hit is not None:
        sig = bound[0]
        assert sig is not None
        y = torch_empty(x)
        idx = torch_empty(x, "int64") if extremum else None
        run_hit(hit, (sig[1], y.data_ptr(), 0 if idx is None else idx.data_ptr()), sig[0],
                lambda: (torch_view(x, *sig), torch_out_view(y),
                         None if idx is None else torch_out_view(idx)))  # fmt: skip
        return (y, idx) if extremum else y
    if not is_cuda_array(x, kind.value):
        check_host_operands(kind.value, [("x", x)])
        return reference.scan(kind, x, axis, reverse, tie_break)
    s = resolve_stream(stream, x)
    desc = ScanDescriptor(kind, tuple(x.shape), axis, element_of(x), reverse, tie_break)
    plan = cached_plan(ScanPlan, s, desc)
    y = empty_like(x, stream=s)
    idx = empty_like(x, dtype=IndexElementKind.I64, stream=s) if extremum else None
    with capturing(key is not None) as steps:
        run_plan(plan, s, ScanArgs(x, y, idx))
    if key is not None:  # torch tensors: y and idx too
        ptrs = (bound[0][1], y.data_ptr(), 0 if idx is None else idx.data_ptr())  # type: ignore[index]
        _BOUND.put(key, (plan, FastCall.bind(plan, steps, ptrs)))
    return (finish(y), finish(idx)) if extremum else finish(y)


_DOC = """

    Parameters
    ----------
    x : array (f32, f16, bf16, f64), rank 1-8, any strides. CUDA arrays (torch, cupy, jax)
        run the CUDA kernels; CPU arrays (numpy, torch CPU, any array-API library) run the
        array-API reference.
    axis : int, the scan axis (negative counts from the end).
    reverse : bool, scan from the last element of the axis to the first.
    stream : optional stream (``__cuda_stream__`` object or handle); default: the current
        stream of ``x``'s framework, or the legacy default stream.

    Precision: f16/bf16 accumulate in f32, f64 in f64; one rounding per output;
    deterministic. Raises ``InvalidProblem`` (axis, shapes) and ``Unsupported`` (dtype,
    rank).
    """


@keeps_context
def cumsum(x: Any, axis: int = -1, reverse: bool = False, *, stream: object = None) -> Any:
    return _forward(ScanKind.CUMSUM, x, axis, reverse, TieBreak.FIRST, stream)


@keeps_context
def cumprod(x: Any, axis: int = -1, reverse: bool = False, *, stream: object = None) -> Any:
    return _forward(ScanKind.CUMPROD, x, axis, reverse, TieBreak.FIRST, stream)


@keeps_context
def logcumsumexp(x: Any, axis: int = -1, reverse: bool = False, *,
                 stream: object = None) -> Any:  # fmt: skip
    return _forward(ScanKind.LOGCUMSUMEXP, x, axis, reverse, TieBreak.FIRST, stream)


@keeps_context
def cummax(x: Any, axis: int = -1, reverse: bool = False, *, tie_break: object = "first",
           stream: object = None) -> tuple[Any, Any]:  # fmt: skip
    out: tuple[Any, Any] = _forward(ScanKind.CUMMAX, x, axis, reverse,
                                    _tie("cummax", tie_break), stream)  # fmt: skip
    return out


@keeps_context
def cummin(x: Any, axis: int = -1, reverse: bool = False, *, tie_break: object = "first",
           stream: object = None) -> tuple[Any, Any]:  # fmt: skip
    out: tuple[Any, Any] = _forward(ScanKind.CUMMIN, x, axis, reverse,
                                    _tie("cummin", tie_break), stream)  # fmt: skip
    return out


cumsum.__doc__ = "Inclusive cumulative sum along ``axis``: a new array like ``x``." + _DOC
cumprod.__doc__ = "Inclusive cumulative product along ``axis``: a new array like ``x``." + _DOC
logcumsumexp.__doc__ = (
    "``log(cumsum(exp(x)))`` along ``axis``, computed stably (``-inf`` is the identity)."
    + _DOC
)
cummax.__doc__ = (
    "Running maximum along ``axis``: ``(values, indices)``, indices int64 positions along the"
    " axis of the running winner. ``tie_break``: 'first' (earliest in scan order) or 'last'"
    " (latest, as ``torch.cummax``). NaN wins and sticks; the index is the latest NaN's." + _DOC
)
cummin.__doc__ = (cummax.__doc__ or "").replace("maximum", "minimum").replace("cummax", "cummin")


@keeps_context
def scan_backward(kind: object, dy: Any, *, x: Any = None, y: Any = None, axis: int = -1,
                  reverse: bool = False, tie_break: object = "first",
                  stream: object = None) -> Any:  # fmt: skip
    """Gradient of an axis scan with respect to its input: ``dx`` from ``dy``.

    Parameters
    ----------
    kind : ScanKind or its name ("cumsum", "cumprod", "cummax", "cummin", "logcumsumexp").
    dy : upstream gradient, the shape and dtype of the forward output.
    x, y : the saved forward input (cumprod, cummax, cummin, logcumsumexp) and output
        (cumprod, logcumsumexp); None where not needed.
    axis, reverse : as in the forward call.
    tie_break : cummax/cummin: 'first' sends the gradient of tied extrema to the earliest
        occurrence in scan order, 'last' to the latest (PyTorch's choice).

    Returns
    -------
    ``dx``, a new array like ``dy``.

    cumprod is exact with zeros in ``x`` (no division, no host synchronisation);
    logcumsumexp is stable for large ``|x|`` and gives 0 at ``x = -inf``. Deterministic.
    Raises ``InvalidProblem`` (missing saved tensor, shape mismatch, axis).
    """
    k = _kind("scan_backward", kind)
    tb = _tie("scan_backward", tie_break)
    axis = int_arg("scan_backward", "axis", axis)
    _check_reverse("scan_backward", reverse)
    key, hit, bound = _BOUND.lookup(stream, (k, axis, reverse, tb), dy, x, y)
    bd, bx, by = bound if bound else (None, None, None)
    bx = bx if needs_saved_x(k) else None  # the saved tensors' signatures the kind reads
    by = by if needs_saved_y(k) else None

    def ptrs(dx: Any) -> tuple[int, ...]:  # the plan's arrays, in the order of its views
        assert bd is not None
        return bd[1], dx.data_ptr(), 0 if bx is None else bx[1], 0 if by is None else by[1]

    if hit is not None:
        assert bd is not None
        dx = torch_empty(dy)
        run_hit(hit, ptrs(dx), bd[0],
                lambda: (torch_view(dy, *bd), torch_out_view(dx),
                         None if bx is None else torch_view(x, *bx),
                         None if by is None else torch_view(y, *by)))  # fmt: skip
        return dx
    if not is_cuda_array(dy, "scan_backward"):
        check_host_operands(f"scan_backward({k.value})",
                            [("dy", dy), ("x", x if needs_saved_x(k) else None),
                             ("y", y if needs_saved_y(k) else None)])  # fmt: skip
        return reference.scan_backward(k, dy, x=x, y=y, axis=axis, reverse=reverse,
                                       tie_break=tb)  # fmt: skip
    s = resolve_stream(stream, dy)
    desc = ScanBackwardDescriptor(k, tuple(dy.shape), axis, element_of(dy), reverse, tb)
    plan = cached_plan(ScanBackwardPlan, s, desc)
    dx = empty_like(dy, stream=s)
    with capturing(key is not None) as steps:
        run_plan(plan, s, ScanBackwardArgs(dy, dx, x, y))
    if key is not None:  # torch tensors
        _BOUND.put(key, (plan, FastCall.bind(plan, steps, ptrs(dx))))
    return finish(dx)
