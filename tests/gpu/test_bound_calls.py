"""The functional API's bound path for sparsemax and lerp, forward and backward (the scans' is
in test_scan.py): a call on plain torch tensors whose signatures (dtype, shape, strides,
device, address mod 16) a checked call accepted skips the checks and the descriptor. On new
tensors of those signatures, on another current stream and for every layout, it must give
what the checked path gives, bit for bit, and the float64 reference."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import baracuda as bc
from baracuda.elementwise import api as ew_api
from baracuda.elementwise import reference as ew_ref
from baracuda.softmax import api as sm_api
from baracuda.softmax import reference as sm_ref
from baracuda.types import ElementKind
from tests.helpers import assert_close, count_fast_runs, torch_dtype

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")


def _layouts(shape: tuple[int, int], dt: Any, seed: int) -> dict[str, Any]:
    g = torch.Generator(device="cuda").manual_seed(seed)
    r = lambda *s: torch.randn(*s, device="cuda", generator=g).to(dt)  # noqa: E731
    big = r(2 * shape[0] + 1, 2 * shape[1] + 1)
    return {
        "contiguous": r(*shape),
        "transposed": r(shape[1], shape[0]).t(),
        "sliced": big[1::2, 1::2],
        "offset": r(shape[0] * shape[1] + 1)[1:].view(shape),
    }


def _same_signature(x: Any, seed: int) -> Any:
    """A tensor of ``x``'s signature holding other values, in a storage of its own."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    n = x.untyped_storage().nbytes() // x.element_size()
    flat = torch.randn(n, device="cuda", generator=g).to(x.dtype)
    return flat.as_strided(tuple(x.shape), x.stride(), x.storage_offset())


def _poison_pool(shape: tuple[int, ...], dt: Any) -> None:
    bufs = [torch.full(shape, float("nan"), dtype=dt, device="cuda") for _ in range(4)]
    del bufs


def _np64(t: Any) -> np.ndarray:
    return t.detach().to("cpu", torch.float64).numpy()


def _bound_and_checked(fn: Callable[..., Any], args: tuple[Any, ...], kw: dict[str, Any],
                       counted: list[int], what: str, fast: list[bool]) -> Any:  # fmt: skip
    """``fn(*args)`` by the bound path (no checked call counted; its prepared launches run:
    ``fast``), on the current stream and on a side stream, each equal bit for bit to the
    checked path (``stream=`` given)."""
    n = len(counted)
    _poison_pool(tuple(args[0].shape), args[0].dtype)
    fast.clear()
    out = fn(*args, **kw)
    assert fast == [True], f"{what}: the prepared launches did not run"
    cur = torch.cuda.current_stream()
    side = torch.cuda.Stream()
    side.wait_stream(cur)
    with torch.cuda.stream(side):
        out_side = fn(*args, **kw)
    side.synchronize()
    assert len(counted) == n, f"{what}: the bound path ran the checks"
    ref = fn(*args, stream=cur, **kw)
    outs = out if isinstance(out, tuple) else (out,)
    sides = out_side if isinstance(out_side, tuple) else (out_side,)
    refs = ref if isinstance(ref, tuple) else (ref,)
    for o, s, r in zip(outs, sides, refs, strict=True):
        torch.testing.assert_close(o, r, rtol=0, atol=0, equal_nan=True)
        torch.testing.assert_close(s, r, rtol=0, atol=0, equal_nan=True)
    return out


def _count_checked(monkeypatch: Any, module: Any) -> list[int]:
    """Count the checked calls (``run_plan``) of a functional API module."""
    counted: list[int] = []
    real = module.run_plan

    def spy(plan: Any, s: Any, args: Any) -> None:
        counted.append(1)
        real(plan, s, args)

    monkeypatch.setattr(module, "run_plan", spy)
    return counted


@pytest.mark.parametrize("element", [ElementKind.F32, ElementKind.BF16, ElementKind.F64],
                         ids=lambda e: e.value)  # fmt: skip
def test_sparsemax_bound_calls(element: ElementKind, monkeypatch: Any) -> None:
    counted = _count_checked(monkeypatch, sm_api)
    fast = count_fast_runs(monkeypatch)
    dt = torch_dtype(element)
    for shape in ((37, 129), (300, 65)):
        lx = _layouts(shape, dt, 6)
        for name in lx:
            for axis in (-1, 0):
                what = f"sparsemax {name} {shape} axis={axis}"
                sm_api._BOUND.clear()
                counted.clear()
                x0 = lx[name].mul_(3)  # sparse rows; in place: the layout stays
                y0 = bc.sparsemax(x0, axis)  # checked, then bound
                x1 = _same_signature(x0, 7).mul_(3)
                y1 = _bound_and_checked(bc.sparsemax, (x1, axis), {}, counted, what, fast)
                assert counted == [1, 1], what  # the first call, and the one with stream=
                want = sm_ref.sparsemax(_np64(x1), axis)
                assert_close(y1, want, element, what=what)
                bc.sparsemax_backward(_same_signature(y0, 8), y0, axis)  # checked, then bound
                dy = _same_signature(y0, 9)
                dx = _bound_and_checked(bc.sparsemax_backward, (dy, y1, axis), {}, counted,
                                        what, fast)  # fmt: skip
                dref = sm_ref.sparsemax_backward(_np64(dy), _np64(y1), axis)
                assert_close(dx, dref, element, what=f"{what} backward")


@pytest.mark.parametrize("element", [ElementKind.F32, ElementKind.BF16, ElementKind.F64],
                         ids=lambda e: e.value)  # fmt: skip
def test_lerp_bound_calls(element: ElementKind, monkeypatch: Any) -> None:
    """lerp and lerp_backward on plain torch tensors: after a checked call, calls of the same
    signatures (both operands' layouts, the weight) run the prepared launch, bit for bit
    the checked path's result on the current and a side stream, and the reference; another
    weight is another call."""
    counted: list[int] = []
    real = ew_api.BinaryParamPlan.run

    def spy(self: Any, s: Any, ws: Any, args: Any) -> None:
        counted.append(1)
        real(self, s, ws, args)

    monkeypatch.setattr(ew_api.BinaryParamPlan, "run", spy)
    fast = count_fast_runs(monkeypatch)
    dt = torch_dtype(element)
    for shape in ((37, 129), (300, 65), (1, 4096)):
        la, lb = _layouts(shape, dt, 11), _layouts(shape, dt, 12)
        for na, nb in (("contiguous", "contiguous"), ("transposed", "sliced"),
                       ("offset", "contiguous"), ("sliced", "transposed")):  # fmt: skip
            for w in (0.3, 0.75):
                what = f"lerp {na}/{nb} {shape} w={w}"
                ew_api._BOUND.clear()
                counted.clear()
                a0, b0 = la[na], lb[nb]
                bc.lerp(a0, b0, w)  # checked, then bound
                a1, b1 = _same_signature(a0, 21), _same_signature(b0, 22)
                out = _bound_and_checked(bc.lerp, (a1, b1, w), {}, counted, what, fast)
                assert counted == [1, 1], what
                want = ew_ref.lerp(_np64(a1), _np64(b1), w)
                assert_close(out, want, element, what=what)
                bc.lerp_backward(b0, w)  # checked, then bound
                da, db = _bound_and_checked(bc.lerp_backward, (b1, w), {}, counted, what, fast)
                wa, wb = ew_ref.lerp_backward(_np64(b1), w)
                assert_close(da, wa, element, what=f"{what} da")
                assert_close(db, wb, element, what=f"{what} db")
