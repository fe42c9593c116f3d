"""Check and bench cases of the elementwise family."""

from __future__ import annotations

import functools

from baracuda._dtypes import ELEMENTS
from baracuda._harness import BenchCase, BenchSetup, CheckCase, CheckContext, max_rel_err
from baracuda.types import ElementKind

__all__ = ["check_cases", "bench_cases"]

_W = (0.3, 0.75)  # both branches of the lerp formula


def _lerp_case(element: ElementKind) -> CheckCase:
    def run(ctx: CheckContext) -> tuple[float, float]:
        import baracuda as bc

        err = 0.0
        for w in _W:
            a = ctx.to_device(ctx.rng.standard_normal((37, 1029)), element)
            b = ctx.to_device(ctx.rng.standard_normal((37, 1029)), element)
            a64, b64 = ctx.to_numpy(a), ctx.to_numpy(b)
            err = max(err, max_rel_err(ctx.to_numpy(bc.lerp(a, b, w)), a64 + w * (b64 - a64)))
            # a strided view: every other column, transposed
            at, bt = a[:, ::2].T, b[:, ::2].T
            truth = ctx.to_numpy(at) + w * (ctx.to_numpy(bt) - ctx.to_numpy(at))
            err = max(err, max_rel_err(ctx.to_numpy(bc.lerp(at, bt, w)), truth))
        return err, 2 * ELEMENTS[element].rtol + ELEMENTS[element].atol

    return CheckCase("lerp", element, run)


def _lerp_backward_case(element: ElementKind) -> CheckCase:
    def run(ctx: CheckContext) -> tuple[float, float]:
        import baracuda as bc

        err = 0.0
        for w in _W:
            dy = ctx.to_device(ctx.rng.standard_normal((1031, 17)), element)
            g = ctx.to_numpy(dy)
            da, db = bc.lerp_backward(dy, w)
            err = max(err, max_rel_err(ctx.to_numpy(da), (1 - w) * g))
            err = max(err, max_rel_err(ctx.to_numpy(db), w * g))
        return err, 2 * ELEMENTS[element].rtol + ELEMENTS[element].atol

    return CheckCase("lerp_backward", element, run)


def check_cases() -> list[CheckCase]:
    out = []
    for el in ElementKind:
        out += [_lerp_case(el), _lerp_backward_case(el)]
    return out


_TORCH = {"f32": "float32", "bf16": "bfloat16", "f16": "float16", "f64": "float64"}


def _lerp_setup(shape: tuple[int, ...], element: ElementKind) -> BenchSetup:
    import torch

    import baracuda as bc

    dt = getattr(torch, _TORCH[element.value])
    a = torch.randn(shape, device="cuda", dtype=dt)
    b = torch.randn(shape, device="cuda", dtype=dt)
    out = torch.empty_like(a)
    s = bc.Stream.wrap(torch.cuda.current_stream())
    plan = bc.BinaryParamPlan.select(s, bc.BinaryParamDescriptor(shape, element, 0.3))
    args = bc.BinaryParamArgs(a, b, out)
    ws = bc.Workspace.none()
    # I/O: read a, b; write out
    return BenchSetup(
        ours=lambda: plan.run(s, ws, args),
        peers={"torch.lerp": lambda: torch.lerp(a, b, 0.3, out=out)},
        bytes_moved=3 * a.numel() * a.element_size(),
    )


def _lerp_backward_setup(shape: tuple[int, ...], element: ElementKind) -> BenchSetup:
    import torch

    import baracuda as bc

    dt = getattr(torch, _TORCH[element.value])
    a = torch.randn(shape, device="cuda", dtype=dt, requires_grad=True)
    b = torch.randn(shape, device="cuda", dtype=dt, requires_grad=True)
    dy = torch.randn(shape, device="cuda", dtype=dt)
    da, db = torch.empty_like(dy), torch.empty_like(dy)
    s = bc.Stream.wrap(torch.cuda.current_stream())
    desc = bc.BinaryParamBackwardDescriptor(shape, element, 0.3)
    plan = bc.BinaryParamBackwardPlan.select(s, desc)
    args = bc.BinaryParamBackwardArgs(dy, da, db)
    ws = bc.Workspace.none()
    y = torch.lerp(a, b, 0.3)

    def torch_backward() -> None:
        torch.autograd.grad(y, (a, b), dy, retain_graph=True)

    # I/O: read dy; write da, db
    return BenchSetup(
        ours=lambda: plan.run(s, ws, args),
        peers={"torch autograd": torch_backward},
        bytes_moved=3 * dy.numel() * dy.element_size(),
    )


def bench_cases() -> list[BenchCase]:
    shapes = [(4096, 8192), (2**28,)]
    out = []
    for el in (ElementKind.F32, ElementKind.BF16):
        for shp in shapes:
            out.append(BenchCase("lerp", shp, el, functools.partial(_lerp_setup, shp, el)))
            out.append(BenchCase("lerp_backward", shp, el,
                                 functools.partial(_lerp_backward_setup, shp, el)))  # fmt: skip
    return out
