"""Check and bench cases of the softmax family (sparsemax forward and backward)."""

from __future__ import annotations

from functools import partial
from typing import Any

from baracuda._harness import (
    COPY_PEER,
    BenchCase,
    BenchSetup,
    CheckCase,
    CheckContext,
    copy_peer,
    max_rel_err,
)
from baracuda.types import ElementKind

__all__ = ["check_cases", "bench_cases", "TOLERANCE", "torch_sparsemax_sort", "make_rows"]

# Max |out - truth| / max(1, |truth|) against the float64 reference on the same (rounded)
# inputs: one output rounding plus f32 sums over the support.
TOLERANCE = {ElementKind.F32: 2e-5, ElementKind.F16: 2e-3, ElementKind.BF16: 1e-2,
             ElementKind.F64: 1e-12}  # fmt: skip

# Row lengths that reach every register variant (forward 8x1, 8x2, 8x4, 8x8, 8x16, 8x32, 16x32,
# 32x32, 16x128, 16x256, 16x512; backward the same to 16x32, then 16x64 and up) and streaming
# (with a candidate list that fits, and one that does not).
_CHECK_SHAPES = ((33, 7), (40, 13), (23, 30), (13, 50), (21, 100), (9, 200), (11, 300),
                 (19, 1000), (9, 2000), (7, 2500), (5, 5000), (3, 40000))  # fmt: skip
_CHECK_KINDS = ("ties", "inf", "normal", "normal", "inf", "ties", "normal", "inf", "ties", "inf",
                "normal", "flat")  # fmt: skip


def make_rows(rng: Any, shape: tuple[int, ...], kind: str = "normal") -> Any:
    """Test rows (float64 numpy, last axis): "normal", "ties" (values on a coarse grid, so
    many equal maxima), "inf" (normal with -inf entries), "flat" (uniform in [0, 1): a
    support too large for the streaming kernel's candidate list), "huge" (1e30 scale)."""
    import numpy as np

    if kind == "ties":
        return np.round(rng.standard_normal(shape) * 2.0) / 4.0
    if kind == "flat":
        return rng.random(shape)
    if kind == "huge":
        return np.round(rng.standard_normal(shape)) * 1e30
    x = rng.standard_normal(shape) * 2.0
    if kind == "inf":
        x[rng.random(shape) < 0.2] = -np.inf
    return x


def _sparsemax_case(element: ElementKind) -> CheckCase:
    def run(ctx: CheckContext) -> tuple[float, float]:
        from baracuda.softmax import reference
        from baracuda.softmax.api import sparsemax

        err = 0.0
        for shape, kind in zip(_CHECK_SHAPES, _CHECK_KINDS, strict=True):
            x = ctx.to_device(make_rows(ctx.rng, shape, kind), element)
            truth = reference.sparsemax(ctx.to_numpy(x), -1)
            err = max(err, max_rel_err(ctx.to_numpy(sparsemax(x, -1)), truth))
            # the other axis of a strided view
            xt = x[:, ::2]
            truth = reference.sparsemax(ctx.to_numpy(xt), 0)
            err = max(err, max_rel_err(ctx.to_numpy(sparsemax(xt, 0)), truth))
        return err, TOLERANCE[element]

    return CheckCase("sparsemax", element, run)


def _sparsemax_backward_case(element: ElementKind) -> CheckCase:
    def run(ctx: CheckContext) -> tuple[float, float]:
        from baracuda.softmax import reference
        from baracuda.softmax.api import sparsemax_backward

        err = 0.0
        for shape in _CHECK_SHAPES:
            x = make_rows(ctx.rng, shape, "normal")
            y = ctx.to_device(reference.sparsemax(x, -1), element)
            dy = ctx.to_device(ctx.rng.standard_normal(shape), element)
            truth = reference.sparsemax_backward(ctx.to_numpy(dy), ctx.to_numpy(y), -1)
            err = max(err, max_rel_err(ctx.to_numpy(sparsemax_backward(dy, y, -1)), truth))
        return err, TOLERANCE[element]

    return CheckCase("sparsemax_backward", element, run)


def check_cases() -> list[CheckCase]:
    out = []
    for el in ElementKind:
        out += [_sparsemax_case(el), _sparsemax_backward_case(el)]
    return out


def torch_sparsemax_sort(x: Any, dim: int = -1) -> Any:
    """The usual PyTorch sparsemax (entmax's sort-based formula), differentiable by
    autograd: the peer the issue measures against, and the tests' GPU oracle."""
    import torch

    z = x - x.amax(dim=dim, keepdim=True)
    zs, _ = torch.sort(z, dim=dim, descending=True)
    cs = zs.cumsum(dim)
    shape = [1] * z.dim()
    shape[dim] = z.shape[dim]
    k = torch.arange(1, z.shape[dim] + 1, device=z.device, dtype=z.dtype).view(shape)
    support = (1 + k * zs) > cs
    ks = support.sum(dim=dim, keepdim=True)
    tau = (cs.gather(dim, ks - 1) - 1) / ks.to(z.dtype)
    return torch.clamp(z - tau, min=0)


_TORCH = {"f32": "float32", "bf16": "bfloat16", "f16": "float16", "f64": "float64"}
BENCH_SHAPES = ((32768, 1024), (4096, 8192), (1024, 32768), (64, 131072))


def _forward_setup(shape: tuple[int, ...], element: ElementKind) -> BenchSetup:
    import torch

    import baracuda as bc
    from baracuda.softmax import SparsemaxArgs, SparsemaxDescriptor, SparsemaxPlan

    dt = getattr(torch, _TORCH[element.value])
    x = torch.randn(shape, device="cuda", dtype=dt)
    y = torch.empty_like(x)
    s = bc.Stream.wrap(torch.cuda.current_stream())
    plan = SparsemaxPlan.select(s, SparsemaxDescriptor(shape, -1, element))
    args = SparsemaxArgs(x, y)
    ws = bc.Workspace.allocate(plan.workspace_size(), s)
    plan.run(s, ws, args)  # records the variant

    def softmax() -> None:
        torch.softmax(x, dim=-1, out=y)

    def sort_based() -> None:
        torch_sparsemax_sort(x, -1)

    # I/O: read x; write y
    return BenchSetup(
        ours=lambda: plan.run(s, ws, args),
        peers={"torch.softmax": softmax, "torch sort-based": sort_based},
        bytes_moved=2 * x.numel() * x.element_size(),
        notes={"variant": plan.last_variant},
    )


def _backward_setup(shape: tuple[int, ...], element: ElementKind) -> BenchSetup:
    import torch

    import baracuda as bc
    from baracuda.softmax import (
        SparsemaxBackwardArgs,
        SparsemaxBackwardDescriptor,
        SparsemaxBackwardPlan,
    )

    dt = getattr(torch, _TORCH[element.value])
    x = torch.randn(shape, device="cuda", dtype=dt, requires_grad=True)
    yt = torch_sparsemax_sort(x, -1)
    y = yt.detach().contiguous()
    dy = torch.randn(shape, device="cuda", dtype=dt)
    dx = torch.empty_like(dy)
    s = bc.Stream.wrap(torch.cuda.current_stream())
    plan = SparsemaxBackwardPlan.select(s, SparsemaxBackwardDescriptor(shape, -1, element))
    args = SparsemaxBackwardArgs(dy, y, dx)
    ws = bc.Workspace.allocate(plan.workspace_size(), s)
    plan.run(s, ws, args)

    def torch_backward() -> None:
        torch.autograd.grad(yt, x, dy, retain_graph=True)

    # I/O: read dy, y; write dx (dy is only read on the support: a lower bound is 2 numel)
    return BenchSetup(
        ours=lambda: plan.run(s, ws, args),
        peers={
            "torch autograd (sort-based)": torch_backward,
            # the same bytes as the op: 1.5 numel read, 1.5 numel written
            COPY_PEER: copy_peer(dy.numel() * 3 // 2 * dy.element_size()),
        },
        bytes_moved=3 * dy.numel() * dy.element_size(),
        notes={
            "variant": plan.last_variant,
            "support": f"{float((y > 0).sum(-1).float().mean()):.1f} per row",
        },
    )


def bench_cases() -> list[BenchCase]:
    out = []
    for el in (ElementKind.F32, ElementKind.BF16):
        for shp in BENCH_SHAPES:
            label = f"{shp[0]}x{shp[1]}"
            out.append(BenchCase("sparsemax", shp, el, partial(_forward_setup, shp, el), label))
            out.append(BenchCase("sparsemax_backward", shp, el,
                                 partial(_backward_setup, shp, el), label))  # fmt: skip
    return out
