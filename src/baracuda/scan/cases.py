"""Check and bench cases of the scan family: every op, forward and backward."""

from __future__ import annotations

from functools import partial
from typing import Any

from baracuda._dtypes import ELEMENTS
from baracuda._harness import (
    COPY_PEER,
    BenchCase,
    BenchSetup,
    CheckCase,
    CheckContext,
    copy_peer,
    max_rel_err,
)
from baracuda.types import ElementKind, ScanKind, TieBreak

__all__ = ["check_cases", "bench_cases"]

_EXTREMA = (ScanKind.CUMMAX, ScanKind.CUMMIN)
_TORCH = {"f32": "float32", "bf16": "bfloat16", "f16": "float16", "f64": "float64"}


def _input(kind: ScanKind, rng: Any, shape: tuple[int, ...]) -> Any:
    import numpy as np

    if kind is ScanKind.CUMPROD:
        x = rng.uniform(0.6, 1.4, shape) * rng.choice([-1.0, 1.0], shape)
        x.reshape(-1)[::97] = 0.0
        return x
    if kind in _EXTREMA:
        return np.round(rng.standard_normal(shape) * 4) / 4
    return rng.standard_normal(shape)


def _case(kind: ScanKind, element: ElementKind, backward: bool) -> CheckCase:
    def run(ctx: CheckContext) -> tuple[float, float]:
        from baracuda.scan import api, reference

        err = 0.0
        for shape, axis, reverse in (((37, 1029), -1, False), ((300, 65), 0, True),
                                     ((3, 20001), 1, False)):  # fmt: skip
            x = ctx.to_device(_input(kind, ctx.rng, shape), element)
            x64 = ctx.to_numpy(x)
            out = api._forward(kind, x, axis, reverse, TieBreak.FIRST, None)
            y = out[0] if kind in _EXTREMA else out
            if not backward:
                ref = reference.scan(kind, x64, axis, reverse)
                ref = ref[0] if kind in _EXTREMA else ref
                err = max(err, max_rel_err(ctx.to_numpy(y), ref))
                continue
            dy = ctx.to_device(ctx.rng.standard_normal(shape), element)
            dx = api.scan_backward(kind, dy, x=x, y=y, axis=axis, reverse=reverse)
            ref = reference.scan_backward(kind, ctx.to_numpy(dy), x=x64, y=ctx.to_numpy(y),
                                          axis=axis, reverse=reverse)  # fmt: skip
            err = max(err, max_rel_err(ctx.to_numpy(dx), ref))
        info = ELEMENTS[element]
        # accumulated errors grow with the row length; 8x the one-rounding tolerance
        return err, 8 * (info.rtol + info.atol)

    name = f"{kind.value}_backward" if backward else kind.value
    return CheckCase(name, element, run)


def check_cases() -> list[CheckCase]:
    return [_case(k, el, bwd) for bwd in (False, True) for k in ScanKind for el in ElementKind]


def _torch_fn(kind: ScanKind) -> Any:
    import torch

    return {
        ScanKind.CUMSUM: torch.cumsum,
        ScanKind.CUMPROD: torch.cumprod,
        ScanKind.LOGCUMSUMEXP: torch.logcumsumexp,
        ScanKind.CUMMAX: torch.cummax,
        ScanKind.CUMMIN: torch.cummin,
    }[kind]


def _forward_setup(kind: ScanKind, shape: tuple[int, ...], axis: int,
                   element: ElementKind) -> BenchSetup:  # fmt: skip
    import torch

    import baracuda as bc
    from baracuda.scan import ScanArgs, ScanDescriptor, ScanPlan

    dt = getattr(torch, _TORCH[element.value])
    x = torch.randn(shape, device="cuda", dtype=dt)
    y = torch.empty_like(x)
    idx = torch.empty(shape, device="cuda", dtype=torch.int64) if kind in _EXTREMA else None
    s = bc.Stream.wrap(torch.cuda.current_stream())
    plan = ScanPlan.select(s, ScanDescriptor(kind, shape, axis, element))
    ws = bc.Workspace.allocate(plan.workspace_size(), s)
    args = ScanArgs(x, y, idx)
    fn = _torch_fn(kind)
    torch._dynamo.reset()  # a fresh compile per case: no recompile limit, no stale guards
    compiled = torch.compile(lambda t: fn(t, axis))
    # I/O: read x, write y (and the int64 indices of cummax/cummin)
    moved = 2 * x.numel() * x.element_size() + (8 * x.numel() if idx is not None else 0)
    return BenchSetup(
        ours=lambda: plan.run(s, ws, args),
        peers={
            "torch": lambda: fn(x, axis),
            "torch.compile": lambda: compiled(x),
            COPY_PEER: copy_peer(moved // 2),
        },
        bytes_moved=moved,
        notes={"workspace_bytes": str(plan.workspace_size())},
    )


def _backward_setup(kind: ScanKind, shape: tuple[int, ...], axis: int, element: ElementKind,
                    zeros: bool = False) -> BenchSetup:  # fmt: skip
    import torch

    import baracuda as bc
    from baracuda.scan import ScanBackwardArgs, ScanBackwardDescriptor, ScanBackwardPlan
    from baracuda.scan.scan_backward import needs_saved_x, needs_saved_y

    dt = getattr(torch, _TORCH[element.value])
    x = torch.randn(shape, device="cuda", dtype=dt)
    if kind is ScanKind.CUMPROD:
        x = 1 + 0.01 * x
        if zeros:
            x.view(-1)[12345] = 0  # PyTorch's slow zero-aware path
    xg = x.clone().requires_grad_(True)
    fn = _torch_fn(kind)
    out = fn(xg, axis)
    y_t = out.values if kind in _EXTREMA else out
    dy = torch.randn(shape, device="cuda", dtype=dt)
    dx = torch.empty_like(dy)
    s = bc.Stream.wrap(torch.cuda.current_stream())
    plan = ScanBackwardPlan.select(s, ScanBackwardDescriptor(kind, shape, axis, element,
                                                             tie_break=TieBreak.LAST))  # fmt: skip
    ws = bc.Workspace.allocate(plan.workspace_size(), s)
    y = y_t.detach()
    args = ScanBackwardArgs(dy, dx, x if needs_saved_x(kind) else None,
                            y if needs_saved_y(kind) else None)  # fmt: skip

    def torch_backward() -> None:
        torch.autograd.grad(y_t, xg, dy, retain_graph=True)

    # I/O: read dy and the saved tensors, write dx
    reads = 1 + int(needs_saved_x(kind)) + int(needs_saved_y(kind))
    return BenchSetup(
        ours=lambda: plan.run(s, ws, args),
        peers={"torch autograd": torch_backward},
        bytes_moved=(reads + 1) * dy.numel() * dy.element_size(),
        notes={"zeros_in_x": str(zeros)},
    )


def bench_cases() -> list[BenchCase]:
    out: list[BenchCase] = []
    big = (4096, 8192)
    fwd, bwd = _forward_setup, _backward_setup
    for el in (ElementKind.F32, ElementKind.BF16):
        for shape, axis in ((big, 1), (big, 0), ((2, 2**23), 1), ((2**20, 2), 0)):
            setup = partial(fwd, ScanKind.CUMSUM, shape, axis, el)
            out.append(BenchCase("cumsum", shape, el, setup, label=f"axis={axis}"))
        for kind in (ScanKind.CUMPROD, ScanKind.CUMMAX, ScanKind.CUMMIN, ScanKind.LOGCUMSUMEXP):
            out.append(BenchCase(kind.value, big, el, partial(fwd, kind, big, 1, el),
                                 label="axis=1"))  # fmt: skip
        for kind in ScanKind:
            out.append(BenchCase(f"{kind.value}_backward", big, el, partial(bwd, kind, big, 1, el),
                                 label="axis=1"))  # fmt: skip
        out.append(BenchCase("cumprod_backward", big, el,
                             partial(bwd, ScanKind.CUMPROD, big, 1, el, True),
                             label="axis=1 zeros"))  # fmt: skip
    return out
