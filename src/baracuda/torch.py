"""PyTorch adapter: baracuda ops as ``torch.library`` custom ops with autograd and fake
(meta) implementations, so they work under ``torch.autograd`` and ``torch.compile``.

Import it explicitly (``import baracuda.torch as bct``); ``import baracuda`` never imports
torch. CUDA tensors run the CUDA kernels on torch's current stream; CPU tensors run the
array-API reference. The ops are registered under the ``baracuda::`` namespace::

    y = bct.cumsum(x, dim=1)                 # differentiable
    y.backward(dy)                           # runs baracuda::scan_backward
    torch.compile(lambda t: bct.sparsemax(t, -1), fullgraph=True)(x)

Outputs are contiguous (the fake kernels promise it; the CUDA path allocates them so, the
CPU reference may need a copy). The eager functional API (``baracuda.cumsum``...) skips
the ``torch.library`` dispatcher and is the cheaper call where autograd is not needed.
"""

from typing import Any

import torch

from baracuda.elementwise import api as _ew
from baracuda.scan import api as _scan
from baracuda.softmax import api as _sm

__all__ = [
    "lerp",
    "cumsum",
    "cumprod",
    "cummax",
    "cummin",
    "logcumsumexp",
    "sparsemax",
]

Tensor = torch.Tensor


# ---- lerp ----------------------------------------------------------------------------
@torch.library.custom_op("baracuda::lerp", mutates_args=())
def _lerp(a: Tensor, b: Tensor, weight: float) -> Tensor:
    out: Tensor = _ew.lerp(a, b, weight)
    return out.contiguous()


@_lerp.register_fake
def _lerp_fake(a: Tensor, b: Tensor, weight: float) -> Tensor:
    return torch.empty_like(a, memory_format=torch.contiguous_format)


@torch.library.custom_op("baracuda::lerp_backward", mutates_args=())
def _lerp_backward(dy: Tensor, weight: float) -> tuple[Tensor, Tensor]:
    da, db = _ew.lerp_backward(dy, weight)
    return da.contiguous(), db.contiguous()


@_lerp_backward.register_fake
def _lerp_backward_fake(dy: Tensor, weight: float) -> tuple[Tensor, Tensor]:
    fmt = torch.contiguous_format
    return torch.empty_like(dy, memory_format=fmt), torch.empty_like(dy, memory_format=fmt)


def _lerp_setup(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
    ctx.weight = inputs[2]


def _lerp_grad(ctx: Any, grad: Tensor) -> tuple[Tensor, Tensor, None]:
    da, db = _lerp_backward(grad.contiguous(), ctx.weight)
    return da, db, None


_lerp.register_autograd(_lerp_grad, setup_context=_lerp_setup)


def lerp(a: Tensor, b: Tensor, weight: float) -> Tensor:
    """``a + weight * (b - a)``, differentiable in ``a`` and ``b`` (see ``baracuda.lerp``)."""
    out: Tensor = _lerp(a, b, float(weight))
    return out


# ---- scans ---------------------------------------------------------------------------
@torch.library.custom_op("baracuda::scan", mutates_args=())
def _scan_op(
    x: Tensor, kind: str, dim: int, reverse: bool, tie_break: str
) -> tuple[Tensor, Tensor]:
    """Forward scan; the second output is the int64 winner index (cummax/cummin) or an
    empty tensor."""
    if kind in ("cummax", "cummin"):
        fn = _scan.cummax if kind == "cummax" else _scan.cummin
        values, indices = fn(x, dim, reverse, tie_break=tie_break)
        return values.contiguous(), indices.contiguous()
    y = getattr(_scan, kind)(x, dim, reverse)
    return y.contiguous(), torch.empty(0, dtype=torch.int64, device=x.device)


@_scan_op.register_fake
def _scan_fake(x: Tensor, kind: str, dim: int, reverse: bool,
               tie_break: str) -> tuple[Tensor, Tensor]:  # fmt: skip
    y = torch.empty_like(x, memory_format=torch.contiguous_format)
    if kind in ("cummax", "cummin"):
        return y, torch.empty_like(y, dtype=torch.int64)
    return y, torch.empty(0, dtype=torch.int64, device=x.device)


@torch.library.custom_op("baracuda::scan_backward", mutates_args=())
def _scan_backward(dy: Tensor, x: Tensor, y: Tensor, kind: str, dim: int, reverse: bool,
                   tie_break: str) -> Tensor:  # fmt: skip
    dx: Tensor = _scan.scan_backward(kind, dy, x=x, y=y, axis=dim, reverse=reverse,
                                     tie_break=tie_break)  # fmt: skip
    return dx.contiguous()


@_scan_backward.register_fake
def _scan_backward_fake(dy: Tensor, x: Tensor, y: Tensor, kind: str, dim: int, reverse: bool,
                        tie_break: str) -> Tensor:  # fmt: skip
    return torch.empty_like(dy, memory_format=torch.contiguous_format)


def _scan_setup(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
    x, kind, dim, reverse, tie_break = inputs
    ctx.kind, ctx.dim, ctx.reverse, ctx.tie_break = kind, dim, reverse, tie_break
    ctx.save_for_backward(x, output[0])


def _scan_grad(ctx: Any, dy: Tensor, _didx: Tensor) -> tuple[Tensor, None, None, None, None]:
    x, y = ctx.saved_tensors
    dx = _scan_backward(dy.contiguous(), x, y, ctx.kind, ctx.dim, ctx.reverse, ctx.tie_break)
    return dx, None, None, None, None


_scan_op.register_autograd(_scan_grad, setup_context=_scan_setup)


def cumsum(x: Tensor, dim: int = -1, reverse: bool = False) -> Tensor:
    """Differentiable ``baracuda.cumsum``."""
    y: Tensor = _scan_op(x, "cumsum", dim, reverse, "first")[0]
    return y


def cumprod(x: Tensor, dim: int = -1, reverse: bool = False) -> Tensor:
    """Differentiable ``baracuda.cumprod``: exact gradients when ``x`` holds zeros."""
    y: Tensor = _scan_op(x, "cumprod", dim, reverse, "first")[0]
    return y


def logcumsumexp(x: Tensor, dim: int = -1, reverse: bool = False) -> Tensor:
    """Differentiable ``baracuda.logcumsumexp``."""
    y: Tensor = _scan_op(x, "logcumsumexp", dim, reverse, "first")[0]
    return y


def cummax(x: Tensor, dim: int = -1, reverse: bool = False,
           tie_break: str = "last") -> tuple[Tensor, Tensor]:  # fmt: skip
    """Differentiable ``baracuda.cummax`` -> (values, indices). ``tie_break`` defaults to
    "last" here, so values, indices and gradients equal ``torch.cummax``'s."""
    out: tuple[Tensor, Tensor] = _scan_op(x, "cummax", dim, reverse, tie_break)
    return out


def cummin(x: Tensor, dim: int = -1, reverse: bool = False,
           tie_break: str = "last") -> tuple[Tensor, Tensor]:  # fmt: skip
    """Differentiable ``baracuda.cummin`` -> (values, indices); see ``cummax``."""
    out: tuple[Tensor, Tensor] = _scan_op(x, "cummin", dim, reverse, tie_break)
    return out


# ---- sparsemax -----------------------------------------------------------------------
@torch.library.custom_op("baracuda::sparsemax", mutates_args=())
def _sparsemax(x: Tensor, dim: int) -> Tensor:
    y: Tensor = _sm.sparsemax(x, dim)
    return y.contiguous()


@_sparsemax.register_fake
def _sparsemax_fake(x: Tensor, dim: int) -> Tensor:
    return torch.empty_like(x, memory_format=torch.contiguous_format)


@torch.library.custom_op("baracuda::sparsemax_backward", mutates_args=())
def _sparsemax_backward(dy: Tensor, y: Tensor, dim: int) -> Tensor:
    dx: Tensor = _sm.sparsemax_backward(dy, y, dim)
    return dx.contiguous()


@_sparsemax_backward.register_fake
def _sparsemax_backward_fake(dy: Tensor, y: Tensor, dim: int) -> Tensor:
    return torch.empty_like(dy, memory_format=torch.contiguous_format)


def _sparsemax_setup(ctx: Any, inputs: tuple[Any, ...], output: Tensor) -> None:
    ctx.dim = inputs[1]
    ctx.save_for_backward(output)


def _sparsemax_grad(ctx: Any, dy: Tensor) -> tuple[Tensor, None]:
    (y,) = ctx.saved_tensors
    return _sparsemax_backward(dy.contiguous(), y, ctx.dim), None


_sparsemax.register_autograd(_sparsemax_grad, setup_context=_sparsemax_setup)


def sparsemax(x: Tensor, dim: int = -1) -> Tensor:
    """Differentiable ``baracuda.sparsemax`` along ``dim``."""
    out: Tensor = _sparsemax(x, dim)
    return out
