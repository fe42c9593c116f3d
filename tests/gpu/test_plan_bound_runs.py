"""``Plan.run``'s bound runs: after a checked run on plain torch CUDA tensors, runs on new
tensors of the same signatures (other storage, other values) replay its launches. Each must
equal, bit for bit, a fresh plan's checked run on the same inputs, for every plan family,
layout and a changed switch; an in-place sparsemax after a bound out-of-place one takes the
checks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import baracuda as bc
from baracuda.scan import _kernels as K
from baracuda.types import ElementKind, ScanKind, TieBreak
from tests.helpers import assert_close, torch_dtype

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

SHAPE = (37, 300)


def _input(layout: str, dt: Any, seed: int, positive: bool = False) -> Any:
    """A tensor of SHAPE in ``layout``, values from ``seed``, in a storage of its own."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    r = lambda *s: torch.randn(*s, device="cuda", generator=g)  # noqa: E731
    m, n = SHAPE
    t = {"contiguous": lambda: r(m, n), "transposed": lambda: r(n, m).t(),
         "sliced": lambda: r(2 * m + 1, 2 * n + 1)[1::2, 1::2],
         "offset": lambda: r(m * n + 1)[1:].view(m, n)}[layout]()  # fmt: skip
    if positive:
        t = t.abs() + 0.5
    return t.to(dt)


def _nan(dt: Any, like: Any = None) -> Any:
    if like is not None:
        return torch.full_like(like, float("nan"))
    return torch.full(SHAPE, float("nan"), dtype=dt, device="cuda")


# each case: (select(stream, element) -> plan, make(layout, dt, seed) -> (args, outputs))
Case = tuple[Callable[[Any, ElementKind], Any], Callable[[str, Any, int], tuple[Any, list[Any]]]]


def _scan(kind: ScanKind, indices: bool = False) -> Case:
    def select(s: Any, el: ElementKind) -> Any:
        return bc.ScanPlan.select(s, bc.ScanDescriptor(kind, SHAPE, 1, el, False, TieBreak.LAST))

    def make(layout: str, dt: Any, seed: int) -> tuple[Any, list[Any]]:
        y = _nan(dt)
        idx = torch.full(SHAPE, -7, dtype=torch.int64, device="cuda") if indices else None
        outs = [y] if idx is None else [y, idx]
        return bc.ScanArgs(_input(layout, dt, seed), y, idx), outs

    return select, make


def _scan_backward(kind: ScanKind) -> Case:
    def select(s: Any, el: ElementKind) -> Any:
        return bc.ScanBackwardPlan.select(
            s, bc.ScanBackwardDescriptor(kind, SHAPE, 1, el, True, TieBreak.FIRST))

    def make(layout: str, dt: Any, seed: int) -> tuple[Any, list[Any]]:
        x = _input(layout, dt, seed, positive=True)
        y = torch.flip(torch.cumprod(torch.flip(x.double(), [1]), 1), [1]).to(dt)
        dx = _nan(dt)
        return bc.ScanBackwardArgs(_input(layout, dt, seed + 99), dx, x, y), [dx]

    return select, make


def _lerp(s: Any, el: ElementKind) -> Any:
    return bc.BinaryParamPlan.select(s, bc.BinaryParamDescriptor(SHAPE, el, 0.3))


def _lerp_make(layout: str, dt: Any, seed: int) -> tuple[Any, list[Any]]:
    out = _nan(dt)
    return bc.BinaryParamArgs(_input(layout, dt, seed), _input(layout, dt, seed + 1), out), [out]


def _lerp_bwd(s: Any, el: ElementKind) -> Any:
    return bc.BinaryParamBackwardPlan.select(s, bc.BinaryParamBackwardDescriptor(SHAPE, el, 0.3))


def _lerp_bwd_make(layout: str, dt: Any, seed: int) -> tuple[Any, list[Any]]:
    da, db = _nan(dt), _nan(dt)
    return bc.BinaryParamBackwardArgs(_input(layout, dt, seed), da, db), [da, db]


def _sparsemax(s: Any, el: ElementKind) -> Any:
    return bc.SparsemaxPlan.select(s, bc.SparsemaxDescriptor(SHAPE, 1, el))


def _sparsemax_make(layout: str, dt: Any, seed: int) -> tuple[Any, list[Any]]:
    y = _nan(dt)
    return bc.SparsemaxArgs(_input(layout, dt, seed), y), [y]


def _sparsemax_bwd(s: Any, el: ElementKind) -> Any:
    return bc.SparsemaxBackwardPlan.select(s, bc.SparsemaxBackwardDescriptor(SHAPE, 1, el))


def _sparsemax_bwd_make(layout: str, dt: Any, seed: int) -> tuple[Any, list[Any]]:
    y = bc.sparsemax(_input(layout, dt, seed) * 3, 1)
    dx = _nan(dt)
    return bc.SparsemaxBackwardArgs(_input(layout, dt, seed + 5), y, dx), [dx]


CASES: dict[str, Case] = {
    "lerp": (_lerp, _lerp_make),
    "lerp_backward": (_lerp_bwd, _lerp_bwd_make),
    "cumsum": _scan(ScanKind.CUMSUM),
    "cummax": _scan(ScanKind.CUMMAX, indices=True),
    "logcumsumexp": _scan(ScanKind.LOGCUMSUMEXP),
    "cumprod_backward": _scan_backward(ScanKind.CUMPROD),
    "cummin_backward": _scan_backward(ScanKind.CUMMIN),
    "sparsemax": (_sparsemax, _sparsemax_make),
    "sparsemax_backward": (_sparsemax_bwd, _sparsemax_bwd_make),
}


def _workspace(plan: Any) -> Any:
    n = plan.workspace_size()
    if n == 0:
        return bc.Workspace.none()
    return bc.Workspace.from_tensor(torch.empty(n, dtype=torch.uint8, device="cuda"))


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced", "offset"])
@pytest.mark.parametrize("element", [ElementKind.F32, ElementKind.BF16])
@pytest.mark.parametrize("case", list(CASES))
def test_bound_runs_equal_checked_runs(case: str, element: ElementKind, layout: str,
                                       monkeypatch: Any) -> None:  # fmt: skip
    select, make = CASES[case]
    dt = torch_dtype(element)
    s = bc.Stream.wrap(torch.cuda.current_stream())
    plan = select(s, element)
    ws = _workspace(plan)
    for seed in range(4):
        if seed == 2 and case.startswith(("cum", "logcum")):  # a switch: recorded anew
            monkeypatch.setattr(K, "STREAM_ROWS", not K.STREAM_ROWS)
        args, outs = make(layout, dt, 10 * seed)
        plan.run(s, ws, args)
        fresh = select(s, element)  # a new plan: a checked run
        fargs, fouts = make(layout, dt, 10 * seed)
        fresh.run(s, _workspace(fresh), fargs)
        torch.cuda.synchronize()
        assert getattr(plan, "last_variant", None) == getattr(fresh, "last_variant", None)
        for o, f in zip(outs, fouts, strict=True):
            assert not (o.isnan() & ~f.isnan()).any(), f"{case} run {seed}: unwritten"
            assert torch.equal(o.view(torch.uint8) if o.is_floating_point() else o,
                               f.view(torch.uint8) if f.is_floating_point() else f), (
                f"{case} run {seed}: the bound run differs from a checked one")  # fmt: skip
    assert len(plan._bound) == 1  # bound at its first run, replayed after (the switch: anew)


@pytest.mark.parametrize("element", [ElementKind.F32, ElementKind.BF16])
def test_in_place_sparsemax_after_bound_runs(element: ElementKind) -> None:
    """Tensors of a bound run's signatures at one address (in place) take the checks: the
    out-of-place launches are never replayed over them."""
    dt = torch_dtype(element)
    s = bc.Stream.wrap(torch.cuda.current_stream())
    for op in ("sparsemax", "sparsemax_backward"):
        select, make = CASES[op]
        plan = select(s, element)
        for seed in range(3):
            args, _ = make("contiguous", dt, seed)
            plan.run(s, bc.Workspace.none(), args)
        for seed in range(3, 5):
            args, _ = make("contiguous", dt, seed)
            want, _ = make("contiguous", dt, seed)
            if op == "sparsemax":
                args = bc.SparsemaxArgs(args.x, args.x)  # in place
                wantv = bc.sparsemax(want.x, 1)
                got = args.x
            else:
                args = bc.SparsemaxBackwardArgs(args.dy, args.y, args.dy)  # dx is dy
                wantv = bc.sparsemax_backward(want.dy, want.y, 1)
                got = args.dy
            plan.run(s, bc.Workspace.none(), args)
            torch.cuda.synchronize()
            assert_close(got, wantv, element, what=f"{op} in place, run {seed}")


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("case", ["lerp", "cumsum", "cummax", "cumprod_backward", "sparsemax"])
def test_cupy_bound_runs_equal_checked_runs(case: str, layout: str) -> None:
    """Runs on CuPy arrays on CuPy's current stream are bound the same way."""
    cupy = pytest.importorskip("cupy")
    try:
        cupy.zeros(1).sum()
    except Exception as e:  # a CuPy built for another CUDA major version
        pytest.skip(f"CuPy cannot run here: {type(e).__name__}")
    select, make = CASES[case]
    s = bc.Stream(int(cupy.cuda.get_current_stream().ptr), device_id=0)
    plan = select(s, ElementKind.F32)
    ws = _workspace(plan)

    def to_cupy(args: Any) -> tuple[Any, list[Any]]:
        conv = {f: (None if v is None else cupy.asarray(v)) for f, v in vars_of(args).items()}
        return type(args)(**conv), [conv[f] for f in conv]

    for seed in range(3):
        args, _ = make(layout, torch.float32, 10 * seed)
        cargs, carrays = to_cupy(args)
        torch.cuda.synchronize()
        plan.run(s, ws, cargs)
        fresh = select(s, ElementKind.F32)
        fargs, _ = make(layout, torch.float32, 10 * seed)
        fcargs, farrays = to_cupy(fargs)
        torch.cuda.synchronize()
        fresh.run(s, _workspace(fresh), fcargs)
        cupy.cuda.get_current_stream().synchronize()
        for o, f in zip(carrays, farrays, strict=True):
            if o is not None:
                assert cupy.array_equal(o, f, equal_nan=True), f"{case} run {seed}"
    assert len(plan._bound) == 1


def vars_of(args: Any) -> dict[str, Any]:
    import dataclasses

    return {f.name: getattr(args, f.name) for f in dataclasses.fields(args)}
