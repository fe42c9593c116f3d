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


def test_bound_calls_from_threads(monkeypatch: Any) -> None:
    """Bound calls of one signature from eight threads at once: a prepared launch keeps its
    argument buffers a thread (``replay.Step``), so each call's output is its own input's
    scan (cumsum, and the cumprod backward with its three inputs) and sparsemax, never
    another thread's; every call ran the prepared launches."""
    from concurrent.futures import ThreadPoolExecutor

    from baracuda.scan import api as scan_api
    from baracuda.scan import reference as scan_ref
    from baracuda.types import ScanKind

    fast = count_fast_runs(monkeypatch)
    n_threads, calls = 8, 40
    g = torch.Generator(device="cuda").manual_seed(31)
    # positive terms for cumsum; cumprod's factors near 1, so its products stay finite
    xs = [torch.rand(37, 1029, device="cuda", generator=g) + i for i in range(n_threads)]
    ps = [1 + 0.01 * torch.randn(37, 1029, device="cuda", generator=g) for _ in xs]
    dys = [torch.randn(37, 1029, device="cuda", generator=g) for _ in xs]
    ys = [torch.cumprod(p, 1) for p in ps]
    scan_api._BOUND.clear()
    sm_api._BOUND.clear()
    bc.cumsum(xs[0], axis=1)  # checked calls bind the signatures
    bc.scan_backward("cumprod", dys[0], x=ps[0], y=ys[0], axis=1)
    bc.sparsemax(xs[0], 1)
    fast.clear()

    def work(i: int) -> list[tuple[Any, Any, Any]]:
        stream = torch.cuda.Stream()  # a stream a thread: the calls overlap on the GPU too
        with torch.cuda.stream(stream):
            out = [(bc.cumsum(xs[i], axis=1),
                    bc.scan_backward("cumprod", dys[i], x=ps[i], y=ys[i], axis=1),
                    bc.sparsemax(xs[i], 1)) for _ in range(calls)]  # fmt: skip
        stream.synchronize()
        return out

    with ThreadPoolExecutor(n_threads) as pool:
        results = list(pool.map(work, range(n_threads)))
    assert len(fast) == 3 * n_threads * calls and all(fast), "a call took the plan's path"
    for i, outs in enumerate(results):
        x64, p64, dy64, y64 = _np64(xs[i]), _np64(ps[i]), _np64(dys[i]), _np64(ys[i])
        first = outs[0]
        assert_close(first[0], scan_ref.scan(ScanKind.CUMSUM, x64, 1), ElementKind.F32,
                     what=f"thread {i} cumsum")  # fmt: skip
        assert_close(first[1], scan_ref.scan_backward(ScanKind.CUMPROD, dy64, x=p64, y=y64, axis=1),
                     ElementKind.F32, what=f"thread {i} cumprod backward",
                     magnitude=scan_ref.scan_backward(ScanKind.CUMPROD, np.abs(dy64), x=p64,
                                                      y=y64, axis=1))  # fmt: skip
        assert_close(first[2], sm_ref.sparsemax(x64, 1), ElementKind.F32,
                     what=f"thread {i} sparsemax")  # fmt: skip
        for out in outs[1:]:
            for got, ref in zip(out, first, strict=True):
                torch.testing.assert_close(got, ref, rtol=0, atol=0)
