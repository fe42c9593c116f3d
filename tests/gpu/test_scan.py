"""Axis scans on the GPU: every op x dtype x layout against the float64 reference (poisoned
outputs), and gradients against torch autograd."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import baracuda as bc
from baracuda._layout import split_axis
from baracuda.scan import (
    ScanArgs,
    ScanBackwardArgs,
    ScanBackwardDescriptor,
    ScanBackwardPlan,
    ScanDescriptor,
    ScanPlan,
    api,
)
from baracuda.scan import reference as R
from baracuda.types import ElementKind, ScanKind, TieBreak
from tests.helpers import assert_close, count_fast_runs, poisoned, torch_dtype

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

KINDS = list(ScanKind)
ELEMENTS = list(ElementKind)
EXTREMA = (ScanKind.CUMMAX, ScanKind.CUMMIN)


def _np64(t: Any) -> np.ndarray:
    if hasattr(t, "detach"):
        return t.detach().to("cpu", torch.float64).numpy()
    if type(t).__module__.startswith("cupy"):
        return np.asarray(t.get(), dtype=np.float64)
    return np.asarray(t).astype(np.float64)  # JAX, NumPy


def make_input(kind: ScanKind, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    """float64 values suited to each op (no overflow in cumprod, ties for extrema)."""
    rng = np.random.default_rng(seed)
    if kind is ScanKind.CUMPROD:
        x = rng.uniform(0.6, 1.4, shape) * rng.choice([-1.0, 1.0], shape)
        if x.size > 3:
            x.reshape(-1)[:: max(1, x.size // 5)] = 0.0  # a few zeros
        return x
    if kind in EXTREMA:
        return np.round(rng.standard_normal(shape) * 4) / 4
    if kind is ScanKind.CUMSUM:
        return rng.uniform(-1.0, 1.0, shape) + 0.25
    return rng.standard_normal(shape) * 3


def scale_of(kind: ScanKind, n: int) -> float:
    return 1.0 if kind in EXTREMA else max(1.0, math.sqrt(n) / 4)


def stream() -> bc.Stream:
    return bc.Stream.wrap(torch.cuda.current_stream())


def run_forward(kind: ScanKind, x: Any, axis: int, reverse: bool,
                tie: TieBreak = TieBreak.FIRST) -> tuple[Any, Any]:  # fmt: skip
    el = ElementKind.parse(x.dtype)
    s = stream()
    plan = ScanPlan.select(s, ScanDescriptor(kind, tuple(x.shape), axis, el, reverse, tie))
    y = poisoned(tuple(x.shape), el)
    idx = None
    if kind in EXTREMA:
        idx = torch.full(tuple(x.shape), -7, dtype=torch.int64, device="cuda")
    ws = bc.Workspace.allocate(plan.workspace_size(), s)
    plan.run(s, ws, ScanArgs(x, y, idx))
    torch.cuda.synchronize()
    return y, idx


def run_backward(kind: ScanKind, dy: Any, x: Any, y: Any, axis: int, reverse: bool,
                 tie: TieBreak = TieBreak.FIRST) -> Any:  # fmt: skip
    el = ElementKind.parse(dy.dtype)
    s = stream()
    desc = ScanBackwardDescriptor(kind, tuple(dy.shape), axis, el, reverse, tie)
    plan = ScanBackwardPlan.select(s, desc)
    dx = poisoned(tuple(dy.shape), el)
    ws = bc.Workspace.allocate(plan.workspace_size(), s)
    plan.run(s, ws, ScanBackwardArgs(dy, dx, x, y))
    torch.cuda.synchronize()
    return dx


def check_op(kind: ScanKind, element: ElementKind, x: Any, axis: int, reverse: bool,
             what: str) -> None:  # fmt: skip
    """Forward and backward of one op on one (possibly strided) input."""
    n = x.shape[axis] if x.dim() else 1
    sc = scale_of(kind, n)
    xn = _np64(x)
    y, idx = run_forward(kind, x, axis, reverse)
    ref = R.scan(kind, xn, axis, reverse)
    if kind in EXTREMA:
        np.testing.assert_array_equal(idx.cpu().numpy(), np.asarray(ref[1]), err_msg=what)
        ref = ref[0]
    assert_close(y, ref, element, scale=sc, what=f"{kind.value} {what}")
    dy = torch.from_numpy(np.random.default_rng(1).standard_normal(tuple(x.shape))).to(
        device="cuda", dtype=x.dtype)  # fmt: skip
    dx = run_backward(kind, dy, x, y, axis, reverse)
    check_backward(kind, element, dx, dy, x, y, axis, reverse, what)


def check_backward(kind: ScanKind, element: ElementKind, dx: Any, dy: Any, x: Any, y: Any,
                   axis: int, reverse: bool, what: str) -> None:  # fmt: skip
    """dx of one backward against the float64 reference on the same (rounded) dy, x, y."""
    n = x.shape[axis] if x.dim() else 1
    dyn, xn, yn = _np64(dy), _np64(x), _np64(y)
    dref = R.scan_backward(kind, dyn, x=xn, y=yn, axis=axis, reverse=reverse)
    # backward passes are sums over the scanned axis: tolerance scales with sqrt(n) and
    # applies to the sum of the terms' magnitudes
    mag = _magnitude(kind, dyn, xn, yn, axis, reverse)
    bsc = max(1.0, math.sqrt(n) / 4) * (2.0 if kind is ScanKind.CUMPROD else 1.0)
    assert_close(dx, dref, element, scale=bsc, magnitude=mag,
                 what=f"{kind.value}_backward {what}")  # fmt: skip


def _magnitude(kind: ScanKind, dy: np.ndarray, x: np.ndarray, y: np.ndarray | None,
               axis: int, reverse: bool, tie: TieBreak = TieBreak.FIRST) -> np.ndarray:  # fmt: skip
    """The backward's sum with every term made non-negative (cummax/cummin: routed by
    ``tie``)."""
    with np.errstate(all="ignore"):
        if kind is ScanKind.CUMPROD:
            ax = np.abs(x)
            ay = R.scan(kind, ax, axis, reverse)
            return np.abs(R.scan_backward(kind, np.abs(dy), x=ax, y=ay, axis=axis,
                                          reverse=reverse))  # fmt: skip
        return np.abs(R.scan_backward(kind, np.abs(dy), x=x, y=y, axis=axis, reverse=reverse,
                                      tie_break=tie))  # fmt: skip


def launched_kernels(monkeypatch: Any) -> list[str]:
    """The names of the scan kernels launched from now on (appended as they launch), without
    the look-back workspace's zeroing (``scan_zero``, before each look-back launch)."""
    from baracuda.scan import _kernels as K

    names: list[str] = []
    real_launch = K.launch

    def spy(fn: Any, grid: Any, block: Any, smem: Any, st: Any, args: Any, name: str,
            **kw: Any) -> None:  # fmt: skip
        if name != "scan_zero":
            names.append(name)
        real_launch(fn, grid, block, smem, st, args, name, **kw)

    monkeypatch.setattr(K, "launch", spy)
    return names


def layouts(shape: tuple[int, ...], dt: Any, kind: ScanKind) -> dict[str, Any]:
    """The same logical shape as contiguous, transposed-storage and sliced views."""
    base = torch.from_numpy(make_input(kind, shape)).to("cuda", dt)
    out = {"contiguous": base}
    if len(shape) >= 2:
        t = torch.from_numpy(make_input(kind, shape[::-1], 2)).to("cuda", dt)
        out["transposed"] = t.permute(*reversed(range(len(shape))))
    big = torch.from_numpy(make_input(kind, tuple(2 * d + 1 for d in shape), 3)).to("cuda", dt)
    out["sliced"] = big[tuple(slice(1, 2 * d + 1, 2) for d in shape)]
    flat = torch.from_numpy(make_input(kind, (math.prod(shape) + 1,), 4)).to("cuda", dt)
    out["offset"] = flat[1:].view(shape)
    return out


# (shape, axis): short rows (warp), block rows, long rows in look-back tiles, non-innermost
# axes (look-back tiles of 32 / 4 / 2 adjacent rows, several chunks, a partial group), rank 4
CASES = [
    ((37, 129), -1),
    ((33, 1500), 1),
    ((3, 50001), 1),
    ((300, 65), 0),
    ((5000, 3), 0),
    ((9000, 2), 0),
    ((5, 40, 33), 1),
    ((2, 3, 4, 70), -2),
    ((1000,), 0),
]
# cases that take the multi-tile paths (look-back, or three passes with LOOKBACK off)
CHUNKED = [((3, 50001), 1), ((300, 65), 0), ((5000, 3), 0)]


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.value)
@pytest.mark.parametrize("element", ELEMENTS, ids=lambda e: e.value)
@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("reverse", [False, True])
def test_scan_layouts(kind: ScanKind, element: ElementKind, case: tuple[tuple[int, ...], int],
                      reverse: bool) -> None:  # fmt: skip
    shape, axis = case
    for name, x in layouts(shape, torch_dtype(element), kind).items():
        check_op(kind, element, x, axis, reverse, f"{name} {shape} axis={axis} rev={reverse}")


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.value)
@pytest.mark.parametrize("element", [ElementKind.F32, ElementKind.BF16], ids=lambda e: e.value)
@pytest.mark.parametrize("case", CHUNKED, ids=str)
def test_scan_three_pass_chunks(kind: ScanKind, element: ElementKind,
                                case: tuple[tuple[int, ...], int],
                                monkeypatch: Any) -> None:  # fmt: skip
    """The three-pass chunked scan (LOOKBACK off) on the shapes that would take look-back."""
    from baracuda.scan import _kernels as K

    monkeypatch.setattr(K, "LOOKBACK", False)
    monkeypatch.setattr(K, "COOP_ROWS", False)
    shape, axis = case
    for reverse in (False, True):
        for name, x in layouts(shape, torch_dtype(element), kind).items():
            check_op(kind, element, x, axis, reverse, f"3-pass {name} {shape} rev={reverse}")


@pytest.mark.parametrize("shape_axis", [((3, 2**20), 1), ((2048, 4096), 0), ((2**18, 2), 0)],
                         ids=str)  # fmt: skip
@pytest.mark.parametrize("kind", [ScanKind.CUMSUM, ScanKind.LOGCUMSUMEXP], ids=lambda k: k.value)
def test_lookback_is_deterministic(shape_axis: tuple[tuple[int, ...], int], kind: ScanKind,
                                   monkeypatch: Any) -> None:  # fmt: skip
    """Look-back folds carries in one fixed order: repeated runs agree bit for bit."""
    from baracuda.scan import _kernels as K

    monkeypatch.setattr(K, "LOOKBACK_ROWS", True)
    monkeypatch.setattr(K, "COOP_ROWS", False)
    shape, axis = shape_axis
    x = torch.from_numpy(make_input(kind, shape, 9)).to("cuda", torch.float32)
    first, _ = run_forward(kind, x, axis, False)
    for _ in range(5):
        again, _ = run_forward(kind, x, axis, False)
        assert torch.equal(first, again)
    ref = R.scan(kind, _np64(x), axis, False)
    assert_close(first, ref, ElementKind.F32, scale=scale_of(kind, shape[axis]), what="lookback")


# StateWord<double>'s empty pattern (a signalling NaN) and its negation (cummin's key of it)
_SNAN = (0xFFF0000000000001, 0x7FF0000000000001)


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.value)
def test_lookback_words_take_every_double(kind: ScanKind, monkeypatch: Any) -> None:
    """An f64 look-back node is one word, the double's bits XORed with a signalling NaN, so
    that a zero word is one not yet written (scan.cu, StateWord); an input holding that very
    NaN, or its negation (cummin's keys negate), where it becomes a tile's total (a state
    that copies its input: cummax's keys in the backward's winner flags), must neither hang
    nor be lost: NaN where the reference has NaN, the other lines exact; along a strided axis
    (lbcols) and contiguous rows (lbrows), forward and backward, both ways."""
    from baracuda.scan import _kernels as K

    monkeypatch.setattr(K, "LOOKBACK_ROWS", True)
    monkeypatch.setattr(K, "COOP_ROWS", False)
    monkeypatch.setattr(K, "STREAM_ROWS", False)
    names = launched_kernels(monkeypatch)
    for shape, axis in (((2**17 + 3, 3), 0), ((3, 50_001), 1)):
        if kind is ScanKind.CUMPROD:  # random signs: exact products through every carry
            xn = np.random.default_rng(41).choice([-1.0, 1.0], shape)
        else:
            xn = make_input(kind, shape, 41)
        n = shape[axis]
        lines = np.moveaxis(xn.view(np.uint64), axis, -1)  # a view: lines[line, position]
        lines[1, n // 2], lines[1, n // 2 + 1000] = _SNAN
        lines[2, [0, n - 1]] = _SNAN  # a line's first and last tiles
        x = torch.from_numpy(xn).to("cuda")
        assert torch.equal(x.view(torch.int64).cpu(), torch.from_numpy(xn.view(np.int64)))
        for reverse in (False, True):
            names.clear()
            check_op(kind, ElementKind.F64, x, axis, reverse,
                     f"signalling NaNs {shape} axis={axis} rev={reverse}")  # fmt: skip
            if kind not in EXTREMA or axis == 0:  # (cummax's winner flags: lbcols)
                assert any("_lb" in nm for nm in names), names


# look-back lines of more than 32 and more than 1024 tiles (joins at radix levels 1 and 2):
# a block row, tiles of 4 adjacent lines and of 2 (f32 tiles: 4096, 1024 and 2048 positions)
RADIX = [((2, 33 * 4096 + 5), 1), ((2**17 + 3, 3), 0), ((2**21 + 7, 2), 0)]


@pytest.mark.parametrize("kind", [ScanKind.CUMSUM, ScanKind.CUMMAX, ScanKind.LOGCUMSUMEXP,
                                  ScanKind.CUMPROD], ids=lambda k: k.value)  # fmt: skip
@pytest.mark.parametrize("element", [ElementKind.F32, ElementKind.F64], ids=lambda e: e.value)
@pytest.mark.parametrize("case", RADIX, ids=str)
def test_lookback_radix_levels(kind: ScanKind, element: ElementKind,
                               case: tuple[tuple[int, ...], int],
                               monkeypatch: Any) -> None:  # fmt: skip
    """Look-back states over several tree levels: one-word nodes (a float, or a double: f64
    and the f32 cumprod) and flagged ones (cummax's value and index)."""
    from baracuda.scan import _kernels as K

    monkeypatch.setattr(K, "LOOKBACK_ROWS", True)
    monkeypatch.setattr(K, "LOOKBACK_FLAGGED", True)
    shape, axis = case
    x = torch.from_numpy(make_input(kind, shape, 13)).to("cuda", torch_dtype(element))
    for reverse in (False, True):
        check_op(kind, element, x, axis, reverse, f"radix {shape} axis={axis} rev={reverse}")


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.value)
@pytest.mark.parametrize("element", ELEMENTS, ids=lambda e: e.value)
@pytest.mark.parametrize("case", [((3, 50001), 1), ((4, 5, 8200), -1)], ids=str)
@pytest.mark.parametrize("on", [True, False], ids=["lbrows", "3-pass"])
def test_lookback_rows(kind: ScanKind, element: ElementKind, case: tuple[tuple[int, ...], int],
                       on: bool, monkeypatch: Any) -> None:  # fmt: skip
    """Contiguous rows too few to fill the GPU: look-back tiles (LOOKBACK_ROWS and
    LOOKBACK_FLAGGED on) or the three passes (off, the defaults); rows in registers off (they
    take the rows of 16 KiB and more, up to 32 KiB)."""
    from baracuda.scan import _kernels as K

    monkeypatch.setattr(K, "ROWREG", False)
    monkeypatch.setattr(K, "LOOKBACK_ROWS", on)
    monkeypatch.setattr(K, "LOOKBACK_FLAGGED", on)
    monkeypatch.setattr(K, "COOP_ROWS", False)
    monkeypatch.setattr(K, "STREAM_ROWS", False)
    names = launched_kernels(monkeypatch)
    shape, axis = case
    for reverse in (False, True):
        for name, x in layouts(shape, torch_dtype(element), kind).items():
            names.clear()
            check_op(kind, element, x, axis, reverse, f"{name} {shape} rev={reverse}")
            if name in ("contiguous", "offset"):  # the axis is contiguous: rows layout
                assert any(nm.endswith("_lbrows") for nm in names) == on, (name, names)


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.value)
@pytest.mark.parametrize("element", [ElementKind.F32, ElementKind.BF16], ids=lambda e: e.value)
def test_scan_one_long_row(kind: ScanKind, element: ElementKind) -> None:
    n = 2**24
    rng = np.random.default_rng(5)
    if kind is ScanKind.CUMPROD:
        xn = rng.choice([-1.0, 1.0], n)  # exact products
    elif kind is ScanKind.CUMSUM:
        xn = rng.uniform(0.0, 1.0, n)  # no cancellation: errors stay relative
    else:
        xn = make_input(kind, (n,), 5)
    x = torch.from_numpy(xn).to("cuda", torch_dtype(element))
    for reverse in (False, True):
        check_op(kind, element, x, 0, reverse, f"long row rev={reverse}")


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.value)
@pytest.mark.parametrize("element", ELEMENTS, ids=lambda e: e.value)
def test_scan_empty(kind: ScanKind, element: ElementKind) -> None:
    dt = torch_dtype(element)
    for shape, axis in [((0, 5), 1), ((4, 0), 1), ((4, 0), 0), ((0,), 0)]:
        x = torch.zeros(shape, dtype=dt, device="cuda")
        y, _idx = run_forward(kind, x, axis, False)
        assert y.shape == shape
        dx = run_backward(kind, x, x, x, axis, False)
        assert dx.shape == shape


def _torch_forward(kind: ScanKind) -> Callable[[Any, int], Any]:
    return {
        ScanKind.CUMSUM: torch.cumsum,
        ScanKind.CUMPROD: torch.cumprod,
        ScanKind.LOGCUMSUMEXP: torch.logcumsumexp,
        ScanKind.CUMMAX: lambda t, d: torch.cummax(t, d).values,
        ScanKind.CUMMIN: lambda t, d: torch.cummin(t, d).values,
    }[kind]


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.value)
@pytest.mark.parametrize("element", ELEMENTS, ids=lambda e: e.value)
@pytest.mark.parametrize("dim", [0, 1])
def test_gradients_match_torch_autograd(kind: ScanKind, element: ElementKind, dim: int) -> None:
    dt = torch_dtype(element)
    shape = (64, 300)
    x = torch.from_numpy(make_input(kind, shape, 7)).to("cuda", dt)
    if kind is ScanKind.CUMPROD:
        x[3, :] = 0  # all zeros along dim 1
        x[:, 5] = 0
        x[7, 11] = 0  # a single zero
    if kind in EXTREMA:
        x[2, 40] = float("nan")
        x[9, 3] = float("nan")
    if kind is ScanKind.LOGCUMSUMEXP:
        x[4, 10:20] = -float("inf")
    gen = torch.Generator(device="cuda").manual_seed(11)
    dy = torch.randn(shape, device="cuda", dtype=dt, generator=gen)
    # torch autograd on the same (rounded) inputs, in float64
    x64 = x.double().requires_grad_(True)
    y64 = _torch_forward(kind)(x64, dim)
    (g64,) = torch.autograd.grad(y64, x64, dy.double())
    y = api._forward(kind, x, dim, False, TieBreak.LAST, None)
    y = y[0] if kind in EXTREMA else y
    dx = api.scan_backward(kind, dy, x=x, y=y, axis=dim, tie_break="last")
    truth = _np64(g64)
    sc = 3.0 if element in (ElementKind.F16, ElementKind.BF16) else 1.0
    if kind is ScanKind.LOGCUMSUMEXP and element in (ElementKind.F16, ElementKind.BF16):
        # the saved y is rounded to the element type: each exp(x - y) term carries |y| eps
        finite = _np64(y)[np.isfinite(_np64(y))]
        sc *= max(1.0, float(np.abs(finite).max()) / 2)
    # dx is a sum of terms of both signs: the tolerance applies to the sum of their magnitudes
    mag = _magnitude(kind, _np64(dy), _np64(x), _np64(y), dim, False)
    assert_close(dx, truth, element, scale=sc * max(1.0, math.sqrt(shape[dim]) / 4),
                 magnitude=mag, what=f"{kind.value} grad dim={dim}")  # fmt: skip
    if kind in EXTREMA:  # indices equal torch's exactly with tie_break='last'
        _, idx = (api.cummax if kind is ScanKind.CUMMAX else api.cummin)(x, dim, tie_break="last")
        ref = (torch.cummax if kind is ScanKind.CUMMAX else torch.cummin)(x, dim).indices
        assert torch.equal(idx, ref)


def test_functional_returns_torch_tensors() -> None:
    x = torch.randn(8, 1000, device="cuda")
    y = bc.cumsum(x, 1) if hasattr(bc, "cumsum") else api.cumsum(x, 1)
    assert isinstance(y, torch.Tensor) and y.is_cuda
    torch.testing.assert_close(y, torch.cumsum(x.double(), 1).float(), rtol=1e-5, atol=1e-4)
    v, i = api.cummax(x, 0, tie_break="last")
    ref = torch.cummax(x, 0)
    assert torch.equal(v, ref.values) and torch.equal(i, ref.indices)


def test_missing_saved_tensor_and_shape_errors() -> None:
    s = stream()
    x = torch.randn(4, 5, device="cuda")
    plan = ScanBackwardPlan.select(s, ScanBackwardDescriptor(ScanKind.CUMPROD, (4, 5), 1,
                                                             ElementKind.F32))  # fmt: skip
    ws = bc.Workspace.allocate(plan.workspace_size(), s)
    with pytest.raises(bc.InvalidProblem, match="saved forward input x"):
        plan.run(s, ws, ScanBackwardArgs(x, torch.empty_like(x)))
    with pytest.raises(bc.InvalidProblem, match="saved forward output y"):
        plan.run(s, ws, ScanBackwardArgs(x, torch.empty_like(x), x=x))
    with pytest.raises(bc.InvalidProblem, match="shape"):
        plan.run(s, ws, ScanBackwardArgs(x, torch.empty(5, 4, device="cuda"), x=x, y=x))
    fplan = ScanPlan.select(s, ScanDescriptor(ScanKind.CUMSUM, (4, 5), 1, ElementKind.F32))
    with pytest.raises(bc.InvalidProblem, match="indices"):
        fplan.run(s, bc.Workspace.none(), ScanArgs(x, torch.empty_like(x),
                                                   torch.empty(4, 5, dtype=torch.int64,
                                                               device="cuda")))  # fmt: skip


def test_precision_guarantee_names_the_accumulator() -> None:
    """Each plan's guarantee names its accumulator: f32 for f16, bf16 and f32 (and the f32
    cumprod backward), f64 for f64 and the f32 cumprod forward (BC_ACC double)."""
    s = stream()
    F32, F64 = ElementKind.F32, ElementKind.F64
    for kind, element, acc in [(ScanKind.CUMPROD, F32, F64), (ScanKind.CUMPROD, F64, F64),
                               (ScanKind.CUMPROD, ElementKind.BF16, F32),
                               (ScanKind.CUMSUM, F32, F32), (ScanKind.LOGCUMSUMEXP, F32, F32),
                               (ScanKind.CUMMAX, ElementKind.F16, F32)]:  # fmt: skip
        g = ScanPlan.select(s, ScanDescriptor(kind, (4, 5), 1, element)).precision_guarantee()
        assert g.accumulator is acc and g.deterministic, (kind, element, g)
    g = ScanBackwardPlan.select(s, ScanBackwardDescriptor(ScanKind.CUMPROD, (4, 5), 1,
                                                          F32)).precision_guarantee()  # fmt: skip
    assert g.accumulator is F32, g


def test_workspace_too_small() -> None:
    s = stream()
    desc = ScanDescriptor(ScanKind.CUMSUM, (1, 2**22), 1, ElementKind.F32)
    plan = ScanPlan.select(s, desc)
    assert plan.workspace_size() > 0
    x = torch.randn(1, 2**22, device="cuda")
    with pytest.raises(bc.WorkspaceTooSmall):
        plan.run(s, bc.Workspace.none(), ScanArgs(x, torch.empty_like(x)))


@pytest.mark.parametrize(
    ("kind", "element", "per_sm"),
    [(k, e, 0) for e in ELEMENTS for k in ScanKind]
    + [(k, ElementKind.F32, 28) for k in EXTREMA],
    ids=lambda v: v.value if hasattr(v, "value") else ("one-wave" if v else "rows"),
)
def test_scan_pipelined_rows(kind: ScanKind, element: ElementKind, per_sm: int,
                             monkeypatch: Any) -> None:  # fmt: skip
    """Enough rows for a warp per row with long rows, on the pipelined kernel (pipe1): n is
    9.5 tiles + one vector (tile = 1 KiB of the dtype), so the prefetch registers (scan.cu,
    kPipe) are refilled several times, and the last tile has whole-vector lanes, a lane
    straddling the end and empty lanes; both ways. cummax/cummin (their int64 indices stored
    by whole warps) with ties, NaN and +-inf rows, both tie-breaks, and indices in padded rows
    (pipe1) and misaligned ones (rows1). ``one-wave``: 28 rows an SM, which f32 cummax/cummin
    take on pipe1w (4 blocks an SM, PIPE_MAX_WAVE)."""
    from baracuda._cuda.device import device_info
    from baracuda.scan import _kernels as K

    assert K.PIPELINED_ROWS
    monkeypatch.setattr(K, "ROWREG", False)  # rows of 9.5 KiB: pipe1, not rows in registers
    names = launched_kernels(monkeypatch)
    sm_count = device_info(torch.cuda.current_device()).sm_count
    rows = sm_count * per_sm if per_sm else sm_count * K.WARP_ROWS_PER_SM + 3
    pipe = "pipe1w" if per_sm else "pipe1"
    tile = 1024 // element.itemsize
    n = 9 * tile + tile // 2 + 16 // element.itemsize
    xn = make_input(kind, (rows, n), 11)
    if kind in EXTREMA:
        xn[1, 7] = np.nan
        xn[2, 3 * tile + 5 : 5 * tile] = np.nan
        xn[3, :] = -np.inf
        xn[4, 0] = -np.inf
        xn[4, 1:] = np.inf
        xn[5, :] = 2.0  # all tied
    x = torch.from_numpy(xn).to("cuda", torch_dtype(element))
    el = element
    for reverse in (False, True):
        label = f"pipe1 ({rows}, {n}) rev={reverse}"
        names.clear()
        check_op(kind, element, x, 1, reverse, label)
        assert any(nm.endswith(f"_{pipe}") for nm in names), names
        if kind not in EXTREMA:
            continue
        assert names[0] == f"scan_max_{pipe}", names
        s = stream()
        for tie in TieBreak:
            v, r = R.scan(kind, _np64(x), 1, reverse, tie)
            plan = ScanPlan.select(s, ScanDescriptor(kind, (rows, n), 1, el, reverse, tie))
            ws = bc.Workspace.allocate(plan.workspace_size(), s)
            # indices in rows padded by 2 (each on 16 bytes: pipe1), and one index off
            for pad, off, kernel in ((2, 0, f"scan_max_{pipe}"), (0, 1, "scan_max_rows1")):
                buf = torch.full((rows * (n + pad) + off,), -7, dtype=torch.int64, device="cuda")
                idx = buf[off:].view(rows, n + pad)[:, :n]
                y = poisoned((rows, n), el)
                names.clear()
                plan.run(s, ws, ScanArgs(x, y, idx))
                torch.cuda.synchronize()
                what = f"{label} {tie.value} pad={pad} off={off}"
                assert names == [kernel], (what, names)
                np.testing.assert_array_equal(idx.cpu().numpy(), np.asarray(r), err_msg=what)
                assert_close(y, v, element, what=what)
                if pad:  # the padding untouched
                    assert bool((buf.view(rows, n + pad)[:, n:] == -7).all()), what


@pytest.mark.parametrize("element", ELEMENTS, ids=lambda e: e.value)
def test_logcumsumexp_warp_rows(element: ElementKind, monkeypatch: Any) -> None:
    """logcumsumexp below f64 takes a warp a row (pipe1) from 6 rows an SM, where the other
    ops take a block a row (rows8) up to 16 (WARP_ROWS_PER_SM_OP), and f64 from 16 too.
    Rows of 12.5 tiles and a vector at that count and one row under it, both directions,
    forward and backward against float64, on poisoned outputs."""
    from baracuda._cuda.device import device_info
    from baracuda.scan import _kernels as K

    kind = ScanKind.LOGCUMSUMEXP
    monkeypatch.setattr(K, "ROWREG", False)
    names = launched_kernels(monkeypatch)
    sm_count = device_info(torch.cuda.current_device()).sm_count
    per_sm = K.warp_rows_per_sm("lse", element.itemsize)
    assert per_sm == (16 if element.itemsize == 8 else 6)
    tile = 1024 // element.itemsize
    n = 12 * tile + tile // 2 + 16 // element.itemsize  # whole vectors, a partial tile
    for rows, want in ((sm_count * per_sm, "pipe1"), (sm_count * per_sm - 1, "rows8")):
        x = torch.from_numpy(make_input(kind, (rows, n), 17)).to("cuda", torch_dtype(element))
        for reverse in (False, True):
            names.clear()
            check_op(kind, element, x, 1, reverse, f"({rows}, {n}) rev={reverse}")
            assert names[0] == f"scan_lse_{want}", (rows, names)


def _lane_lines(rows: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """(rows, n) float64 lines that take both of a lane's ways (scan.cu,
    LseOp::lane_outputs), by line modulo 8: spread 1 (sums), spread 100 (lanes at a line's
    start and after a jump push), a ramp rising 8 a position (pushes wherever the ramp
    outgrows the carry; a saw of 4096 positions, within f16's range), a falling one, -inf
    before a ramp, a +inf, a NaN, and every 16th line all -inf."""
    x = rng.standard_normal((rows, n))
    k = np.arange(n)
    ramp = 8.0 * ((k % 4096) - min(n, 4096) / 2)
    c = np.arange(rows) % 8
    x[c == 1] *= 100
    x[c == 2] += ramp
    x[c == 3] = -x[c == 3] * 0.01 - ramp  # falling: a ramp in reverse
    four = np.flatnonzero(c == 4)
    x[np.ix_(four, k < n // 3)] = -np.inf
    x[np.ix_(four, k >= n // 3)] += ramp[n // 3 :] * 0.5
    for kind, value in ((5, np.inf), (6, np.nan)):
        at = np.flatnonzero(c == kind)
        x[at] *= 30
        x[at, rng.integers(n, size=at.size)] = value
    x[np.arange(rows) % 16 == 7] = -np.inf
    return x


def _assert_lse_tight(y: Any, ref: np.ndarray, element: ElementKind, what: str) -> None:
    """f32 and f64 logcumsumexp within a few of their rounding units of float64's (what the
    lanes' floor keeps, scan.cu LseOp::lane_outputs): 1.5e-6 and 1e-13 of max(1, |ref|), NaN and the
    infinities where the reference has them; beyond the suite's bound. f16/bf16: nothing."""
    if element not in (ElementKind.F32, ElementKind.F64):
        return
    got = _np64(y)
    fin = np.isfinite(ref)
    assert np.array_equal(np.isnan(got), np.isnan(ref)), what
    assert np.array_equal(got[np.isinf(ref)], ref[np.isinf(ref)]), what
    err = float(np.max(np.abs(got[fin] - ref[fin]) / np.maximum(1.0, np.abs(ref[fin]))))
    assert err <= (1.5e-6 if element is ElementKind.F32 else 1e-13), (what, err)


@pytest.mark.parametrize("element", ELEMENTS, ids=lambda e: e.value)
def test_logcumsumexp_pipelined_lanes(element: ElementKind, monkeypatch: Any) -> None:
    """logcumsumexp on the pipelined rows (pipe1) takes a lane's values in two passes (the
    lane's run, then its outputs from the sums of its exps against its maximum) unless the
    lane's first sum falls under a floor, where it pushes them one by one (scan.cu,
    LseOp::lane_outputs). Rows that take either way, and both within a warp (``_lane_lines``);
    both directions, on poisoned outputs, against float64 (the forward: the backward
    takes no lanes of this kind). f32 and f64 within a few of their rounding units (the
    floor's purpose), beyond the suite's bound."""
    from baracuda._cuda.device import device_info
    from baracuda.scan import _kernels as K

    kind = ScanKind.LOGCUMSUMEXP
    monkeypatch.setattr(K, "ROWREG", False)
    names = launched_kernels(monkeypatch)
    rows = device_info(torch.cuda.current_device()).sm_count * K.WARP_ROWS_PER_SM + 5
    tile = 1024 // element.itemsize
    n = 9 * tile + tile // 2 + 16 // element.itemsize
    x = torch.from_numpy(_lane_lines(rows, n, np.random.default_rng(5))).to(
        "cuda", torch_dtype(element))  # fmt: skip
    for reverse in (False, True):
        what = f"pipe1 lanes ({rows}, {n}) rev={reverse}"
        names.clear()
        y, _ = run_forward(kind, x, 1, reverse)
        assert names == ["scan_lse_pipe1"], names
        ref = np.asarray(R.scan(kind, _np64(x), 1, reverse))
        assert_close(y, ref, element, scale=scale_of(kind, n), what=what)
        _assert_lse_tight(y, ref, element, what)


# (shape, axis) of short rows stored back to back: rows of 1 to 256 positions (SEG_MAX_BYTES
# decides by dtype which take segmented tiles), rows across lane and tile bounds, a last tile
# partial, rank 3, and runs long enough that warps take stretches of several tiles
SEG_CASES = [
    ((70000, 1), -1),
    ((7, 3), -1),
    ((33333, 3), 1),
    ((4099, 16), 1),
    ((1000, 31), 1),
    ((3, 5, 64), -1),
    ((20000, 100), 1),
    ((513, 128), 1),
    ((301, 256), 1),
    ((2**18, 16), 1),
    ((1_000_003, 3), 1),
]


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.value)
@pytest.mark.parametrize("element", ELEMENTS, ids=lambda e: e.value)
def test_scan_segmented_rows(kind: ScanKind, element: ElementKind, monkeypatch: Any) -> None:
    """Short contiguous rows on segmented tiles (SEG_ROWS, scan_seg) where a row is at most
    SEG_MAX_BYTES and, in reverse, the run is whole vectors; both directions, forward and
    backward (cumsum's backward is a reverse cumsum of dy and takes them too), on poisoned
    outputs against the float64 reference (cummax/cummin: values and indices, ties to the
    first and to the last), and bitwise equal on a second run. Small runs of SEG1_OPS take
    one vector a lane (scan_seg1), large ones two; the small runs again with SEG_ONE_VECTOR
    off take two. Rows that are not one aligned run (a view starting one element in, rows
    sliced from wider ones) take the other kernels."""
    from baracuda.scan import _kernels as K

    assert K.SEG_ROWS
    names = launched_kernels(monkeypatch)
    dt = torch_dtype(element)
    lanes = 16 // element.itemsize
    op = "max" if kind in EXTREMA else _op_of(kind)
    seg = f"scan_{op}_seg"
    segs = (seg, f"scan_{op}_seg1")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for i, (shape, axis) in enumerate(SEG_CASES):
        n, total = shape[axis], math.prod(shape)
        x = torch.from_numpy(make_input(kind, shape, 40 + i)).to("cuda", dt)
        # 512-byte tiles: one each for a warp of every SM (seg1), more than a wave of 24 (seg)
        tiles = -(-total * element.itemsize // 512)
        one_vec = op in K.SEG1_OPS and tiles <= sms
        two_vec = op not in K.SEG1_OPS or tiles > sms * K.SEG_WARPS_PER_SM
        for reverse in (False, True):
            want = n * element.itemsize <= K.SEG_MAX_BYTES and (not reverse or total % lanes == 0)
            label = f"{shape} axis={axis} rev={reverse}"
            names.clear()
            y, _ = run_forward(kind, x, axis, reverse)
            assert (len(names) == 1 and names[0] in segs) == want, (label, names)
            assert not want or not one_vec or names == [segs[1]], (label, names)
            assert not want or not two_vec or names == [seg], (label, names)
            y2, _ = run_forward(kind, x, axis, reverse)
            assert torch.equal(y.nan_to_num(), y2.nan_to_num()), f"a second run differs: {label}"
            if kind in EXTREMA:  # ties to the last (torch's choice)
                y3, i3 = run_forward(kind, x, axis, reverse, TieBreak.LAST)
                v3, r3 = R.scan(kind, _np64(x), axis, reverse, TieBreak.LAST)
                np.testing.assert_array_equal(i3.cpu().numpy(), np.asarray(r3), err_msg=label)
                assert_close(y3, v3, element, what=f"seg last {label}")
            names.clear()
            check_op(kind, element, x, axis, reverse, f"seg {label}")
            # the backward scans the other way; cummax/cummin's takes two seg passes (winner
            # flags in the forward's direction, then segmented sums) where both may
            fits = n * element.itemsize <= K.SEG_MAX_BYTES
            back = fits and (reverse or total % lanes == 0)
            if kind is ScanKind.CUMSUM:
                assert sum(map(names.count, segs)) == want + back, (label, names)
            elif kind in EXTREMA:
                both = back and (not reverse or total % lanes == 0)
                two = ["scan_maxflag_seg", "scan_seg_bwd_seg"]
                assert all((k in names) == both for k in two), (label, names)
                # ties to the last, on poisoned outputs, against float64
                dy = torch.from_numpy(np.random.default_rng(2).standard_normal(shape)).to(
                    "cuda", dt)  # fmt: skip
                dx = run_backward(kind, dy, x, None, axis, reverse, TieBreak.LAST)
                ref = R.scan_backward(kind, _np64(dy), x=_np64(x), axis=axis, reverse=reverse,
                                      tie_break=TieBreak.LAST)  # fmt: skip
                mag = np.abs(R.scan_backward(kind, np.abs(_np64(dy)), x=_np64(x), axis=axis,
                                             reverse=reverse, tie_break=TieBreak.LAST))  # fmt: skip
                assert_close(dx, ref, element, scale=max(1.0, math.sqrt(n) / 4), magnitude=mag,
                             what=f"seg backward last {label}")  # fmt: skip
            else:
                bwd = f"scan_{_op_of(kind)}_bwd_seg"
                assert names.count(bwd) == back, (label, names)
    # the small runs with one vector a lane off: 1 KiB tiles (scan_seg), partial ones too
    if op in K.SEG1_OPS:
        monkeypatch.setattr(K, "SEG_ONE_VECTOR", False)
        for i, (shape, axis) in enumerate(SEG_CASES):
            n, total = shape[axis], math.prod(shape)
            if total * element.itemsize > 2**20 or n * element.itemsize > K.SEG_MAX_BYTES:
                continue
            x = torch.from_numpy(make_input(kind, shape, 40 + i)).to("cuda", dt)
            for reverse in (False, True) if total % lanes == 0 else (False,):
                label = f"two vectors a lane: {shape} axis={axis} rev={reverse}"
                names.clear()
                run_forward(kind, x, axis, reverse)
                assert names == [seg], (label, names)
                check_op(kind, element, x, axis, reverse, label)
        monkeypatch.setattr(K, "SEG_ONE_VECTOR", True)
    # not one aligned run: a view one element in, rows sliced from wider rows
    flat = torch.from_numpy(make_input(kind, (4099 * 16 + 1,), 60)).to("cuda", dt)
    wide = torch.from_numpy(make_input(kind, (4099, 20), 61)).to("cuda", dt)
    for what, v in (("offset", flat[1:].view(4099, 16)), ("sliced", wide[:, :16])):
        names.clear()
        y, _ = run_forward(kind, v, 1, False)
        assert names and seg not in names, (what, names)
        ref = R.scan(kind, _np64(v), 1, False)
        assert_close(y, ref[0] if kind in EXTREMA else ref, element, scale=scale_of(kind, 16),
                     what=f"not seg: {what}")  # fmt: skip
        check_op(kind, element, v, 1, False, f"not seg: {what}")  # dy is contiguous: seg


def _coop_input(kind: ScanKind, element: ElementKind, shape: tuple[int, ...], seed: int) -> Any:
    """An input of the cooperative kernel's tests: make_input's values, and for cumprod random
    signs (exact products that depend on every carry)."""
    if kind is ScanKind.CUMPROD:
        xn = np.random.default_rng(seed).choice([-1.0, 1.0], shape)
    else:
        xn = make_input(kind, shape, seed)
    return torch.from_numpy(xn).to("cuda", torch_dtype(element))


def _coop_cases(kind: ScanKind, element: ElementKind) -> list[tuple[str, Any]]:
    """Inputs of the cooperative kernel (scan_coop) for one op and dtype: 3 lines of 24-44
    pieces (by dtype, on an H100) with a partial last row and warps of 1-5 rows of 512
    bytes (all in registers), a view whose lines start 8 elements into longer rows, 65 lines
    of 2 pieces, one line of 2^20 + 8 positions, and for cumsum 2 lines of 32 MiB (4- and
    8-byte types) or 20 MiB (2-byte types), where every warp keeps its first rows in
    registers, the next in shared memory, and reads the rest again (the row logic is the
    same for every op). cumprod takes random
    signs (exact products that depend on every carry)."""
    def make(shape: tuple[int, ...], seed: int) -> Any:
        return _coop_input(kind, element, shape, seed)

    cases = [
        ("3 x 100008", make((3, 100_008), 22)),
        ("sliced 3 x 100008", make((3, 100_016), 23)[:, 8:]),
        ("65 x 40000", make((65, 40_000), 24)),
        ("1 x (2^20 + 8)", make((2**20 + 8,), 25)),
    ]
    if kind is ScanKind.CUMSUM:  # tiles past registers and shared memory
        mib = 32 if element.itemsize >= 4 else 20
        cases.append((f"2 lines of {mib} MiB", make((2, mib * 2**20 // element.itemsize), 21)))
    return cases


def _repeatable_then_switched_off(kind: ScanKind, x: Any, what: str, names: list[str],
                                  monkeypatch: Any, switch: str, marker: str) -> tuple[Any, Any]:
    """The forward along the last axis twice, bit for bit equal, then once more with the
    ``_kernels`` switch off (no kernel whose name holds ``marker`` launched; the switch on
    again): (the first output, the one with the switch off)."""
    from baracuda.scan import _kernels as K

    first, _ = run_forward(kind, x, -1, False)
    again, _ = run_forward(kind, x, -1, False)
    assert torch.equal(first, again), what
    monkeypatch.setattr(K, switch, False)
    names.clear()
    other, _ = run_forward(kind, x, -1, False)
    assert not any(marker in nm for nm in names), names
    monkeypatch.setattr(K, switch, True)
    return first, other


@pytest.mark.parametrize("kind", [ScanKind.CUMSUM, ScanKind.CUMPROD, ScanKind.LOGCUMSUMEXP],
                         ids=lambda k: k.value)  # fmt: skip
@pytest.mark.parametrize("element", ELEMENTS, ids=lambda e: e.value)
def test_scan_cooperative_pieces(kind: ScanKind, element: ElementKind, monkeypatch: Any) -> None:
    """Few long contiguous lines on the cooperative kernel (COOP_ROWS), both ways, forward
    and backward against the float64 reference; the cumsum forward also bit for bit
    repeatable, and the three passes (COOP_ROWS off) within the same tolerance. In one round
    (COOP_ROUNDS 1): the largest case would take rounds on some types."""
    from baracuda.scan import _kernels as K

    assert K.COOP_ROWS
    monkeypatch.setattr(K, "STREAM_ROWS", False)  # sm_90 takes the stream kernel (below)
    monkeypatch.setattr(K, "COOP_ROUNDS", 1)
    monkeypatch.setattr(K, "COOP_LSE_ITEMSIZES", (2, 4, 8))  # every type's kernel
    names = launched_kernels(monkeypatch)
    for what, x in _coop_cases(kind, element):
        for reverse in (False, True):
            names.clear()
            check_op(kind, element, x, -1, reverse, f"coop {what} rev={reverse}")
            # the forward's entry for this direction (scan_<op>_coop or _cooprev)
            assert K.coop_kernel(_op_of(kind), reverse) in names, (what, names)
        if kind is ScanKind.CUMSUM:
            _, three = _repeatable_then_switched_off(kind, x, what, names, monkeypatch,
                                                     "COOP_ROWS", "_coop")  # fmt: skip
            ref = R.scan(kind, _np64(x), x.dim() - 1, False)
            assert_close(three, ref, element, scale=scale_of(kind, x.shape[-1]), what=what)


def _rounds_cases(kind: ScanKind, element: ElementKind) -> list[tuple[str, Any, int]]:
    """(what, input, rounds) for the cooperative kernel in rounds (scan_<op>_rounds): rounds
    forced (COOP_ROUNDS) on 3 lines with a partial last row, a view whose lines start 8
    elements into longer rows, one line of 2^20 + 8 and 2 lines of 3 * 2^20 + 40; for cumsum
    also 2 lines of 72 MiB (4- and 8-byte types) or 48 MiB (2-byte types) in automatic rounds
    (0: more than one round of what the blocks keep on an H100)."""
    def make(shape: tuple[int, ...], seed: int) -> Any:
        return _coop_input(kind, element, shape, seed)

    cases = [
        ("3 x 100008", make((3, 100_008), 40), 2),
        ("sliced 3 x 100008", make((3, 100_016), 41)[:, 8:], 3),
        ("1 x (2^20 + 8)", make((2**20 + 8,), 42), 5),
        ("2 x (3 * 2^20 + 40)", make((2, 3 * 2**20 + 40), 43), 3),
    ]
    if kind is ScanKind.CUMSUM:
        mib = 72 if element.itemsize >= 4 else 48
        cases.append((f"2 lines of {mib} MiB", make((2, mib * 2**20 // element.itemsize), 44), 0))
    return cases


@pytest.mark.parametrize("kind", [ScanKind.CUMSUM, ScanKind.CUMPROD, ScanKind.LOGCUMSUMEXP],
                         ids=lambda k: k.value)  # fmt: skip
@pytest.mark.parametrize("element", ELEMENTS, ids=lambda e: e.value)
def test_scan_cooperative_rounds(kind: ScanKind, element: ElementKind, monkeypatch: Any) -> None:
    """Long lines on the cooperative kernel in rounds (COOP_ROUNDS; cumsum and cumprod,
    ROUNDS_OPS), both ways, forward and backward against the float64 reference; the cumsum
    forward also bit for bit repeatable, and within tolerance of one round or the three
    passes."""
    from baracuda.scan import _kernels as K

    monkeypatch.setattr(K, "COOP_LSE_ITEMSIZES", (2, 4, 8))  # every type's kernel
    monkeypatch.setattr(K, "STREAM_ROWS", False)
    names = launched_kernels(monkeypatch)
    for what, x, rounds in _rounds_cases(kind, element):
        monkeypatch.setattr(K, "COOP_ROUNDS", rounds)
        for reverse in (False, True):
            names.clear()
            check_op(kind, element, x, -1, reverse, f"rounds {rounds} {what} rev={reverse}")
            # the forward's entry in rounds for this direction (scan_<op>_rounds[rev])
            assert K.coop_kernel(_op_of(kind), reverse, 1, 2) in names, (what, names)
        if kind is ScanKind.CUMSUM:
            first, _ = run_forward(kind, x, -1, False)
            again, _ = run_forward(kind, x, -1, False)
            assert torch.equal(first, again), what
            monkeypatch.setattr(K, "COOP_ROUNDS", 1)
            one, _ = run_forward(kind, x, -1, False)
            ref = R.scan(kind, _np64(x), x.dim() - 1, False)
            assert_close(one, ref, element, scale=scale_of(kind, x.shape[-1]), what=what)
            assert_close(first, _np64(one), element, scale=scale_of(kind, x.shape[-1]),
                         what=f"rounds vs one round {what}")  # fmt: skip


def _sm90() -> bool:
    return torch.cuda.get_device_capability()[0] >= 9


def _stream_cases(kind: ScanKind, element: ElementKind) -> list[tuple[str, Any, bool]]:
    """(what, input, whether the stream kernel takes it on sm_90) for few long contiguous
    rows of cumsum/cumprod: rows whose last tile (32 KiB) is partial, a view whose rows start
    8 elements into longer rows, one row of 2^20 + 8, rows of exactly 2 and 3 tiles, rows of
    a tile and one vector, the benchmark's (2, 2^23) for cumsum; and rows it must not take:
    rows not of whole 16-byte vectors, a row view with a step, f64. (The f32 cumprod takes
    it with double states.)"""

    lanes = 16 // element.itemsize
    tile = 32768 // element.itemsize

    def make(shape: tuple[int, ...], seed: int) -> Any:
        return _coop_input(kind, element, shape, seed)

    ok = element.itemsize != 8
    cases = [
        ("3 x 100008", make((3, 100_008), 60), ok),
        ("sliced 3 x 100008", make((3, 100_016), 61)[:, 8:], ok),
        ("1 x (2^20 + 8)", make((2**20 + 8,), 62), ok),
        ("2 x 2 tiles", make((2, 2 * tile), 63), ok),
        ("2 x (tile + 1 vector)", make((2, tile + lanes), 64), ok),
        ("4 x 3 tiles", make((4, 3 * tile), 66), ok),
        ("3 x 100001: rows not of whole vectors", make((3, 100_001), 65), False),
        ("every other element of 2 x 200016", make((2, 200_016), 67)[:, ::2], False),
    ]
    if kind is ScanKind.CUMSUM:
        cases.append(("2 x 2^23", make((2, 2**23), 68), ok))
    return cases


@pytest.mark.parametrize("kind", [ScanKind.CUMSUM, ScanKind.CUMPROD], ids=lambda k: k.value)
@pytest.mark.parametrize("element", ELEMENTS, ids=lambda e: e.value)
def test_scan_stream_rows(kind: ScanKind, element: ElementKind, monkeypatch: Any) -> None:
    """Few long contiguous rows on the stream kernel (STREAM_ROWS on for 2- and 4-byte types,
    sm_90 and later), both ways, forward and backward against the float64 reference; shapes
    it must not take run elsewhere; the forward is bit for bit repeatable and within
    tolerance of the cooperative kernel (STREAM_ROWS off)."""
    from baracuda.scan import _kernels as K

    monkeypatch.setattr(K, "STREAM_ROWS", True)
    monkeypatch.setattr(K, "STREAM_ITEMSIZES", (2, 4))
    names = launched_kernels(monkeypatch)
    op = _op_of(kind)
    for what, x, takes in _stream_cases(kind, element):
        takes = takes and _sm90()
        for reverse in (False, True):
            names.clear()
            check_op(kind, element, x, -1, reverse, f"stream {what} rev={reverse}")
            entry = f"scan_{op}_{'streamrev' if reverse else 'stream'}"
            assert (entry in names) == takes, (what, reverse, names)
        if takes:
            first, other = _repeatable_then_switched_off(kind, x, what, names, monkeypatch,
                                                         "STREAM_ROWS", "_stream")  # fmt: skip
            assert_close(first, _np64(other), element, scale=scale_of(kind, x.shape[-1]),
                         what=f"stream vs other kernels {what}")  # fmt: skip


@pytest.mark.parametrize("kind", [ScanKind.CUMSUM, ScanKind.CUMPROD], ids=lambda k: k.value)
@pytest.mark.parametrize("element", [ElementKind.BF16, ElementKind.F16], ids=lambda e: e.value)
def test_scan_stream_rows_past_one_round(kind: ScanKind, element: ElementKind,
                                         monkeypatch: Any) -> None:  # fmt: skip
    """By default (STREAM_ROUNDS_ITEMSIZES) a 2-byte row too long for one round of the
    cooperative kernel takes the stream kernel on sm_90 and later, both ways, forward and
    backward against the float64 reference; without the switch the same row takes the
    cooperative kernel in rounds, and the two agree within tolerance."""
    from baracuda.scan import _kernels as K

    assert K.STREAM_ROWS and K.STREAM_ROUNDS_ITEMSIZES == (2,)
    op = _op_of(kind)
    names = launched_kernels(monkeypatch)
    x = _coop_input(kind, element, (2**26,), 69)  # 128 MiB: more than one round holds
    for reverse in (False, True):
        names.clear()
        check_op(kind, element, x, -1, reverse, f"one row of 2^26 rev={reverse}")
        entry = f"scan_{op}_{'streamrev' if reverse else 'stream'}"
        assert (entry in names) == _sm90(), (reverse, names)
    first = run_forward(kind, x, -1, False)[0].clone()
    monkeypatch.setattr(K, "STREAM_ROUNDS_ITEMSIZES", ())
    names.clear()
    other = run_forward(kind, x, -1, False)[0]
    assert f"scan_{op}_rounds" in names, names
    assert_close(first, _np64(other), element, scale=scale_of(kind, x.shape[-1]),
                 what="stream vs rounds, one row of 2^26")  # fmt: skip


@pytest.mark.parametrize(("kind", "element"), [(ScanKind.CUMSUM, ElementKind.F32),
                                               (ScanKind.CUMSUM, ElementKind.BF16),
                                               (ScanKind.CUMPROD, ElementKind.F32)],
                         ids=lambda v: v.value)  # fmt: skip
def test_scan_stream_zeroes_its_workspace(kind: ScanKind, element: ElementKind,
                                          monkeypatch: Any) -> None:  # fmt: skip
    """The stream kernel zeroes its own workspace (no step before it): on a workspace of 0xff
    bytes (every word ready: a float's flag beside a NaN, a double's denormal; the tile
    counter at its largest) cumsum, and the f32 cumprod in double words, over rows of two
    waves and a partial tile match the float64 reference both ways, and again on new input
    over the words the first run left."""
    if not _sm90():
        pytest.skip("the stream kernel runs on sm_90 and later")
    from baracuda.scan import _kernels as K

    monkeypatch.setattr(K, "STREAM_ROWS", True)
    monkeypatch.setattr(K, "STREAM_ITEMSIZES", (2, 4))
    variants: list[str] = []  # what plan.run records (replays do not launch through K.launch)
    real = K.launch_scan

    def spy(*a: Any, **kw: Any) -> str:
        variants.append(real(*a, **kw))
        return variants[-1]

    monkeypatch.setattr(K, "launch_scan", spy)
    shape = (2, 2**23 // element.itemsize + 8)  # 257 tiles a row, the last partial
    st = torch.cuda.current_stream()
    for reverse in (False, True):
        plan = ScanPlan.select(st, ScanDescriptor(kind, shape, 1, element, reverse))
        buf = torch.full((plan.workspace_size(),), 0xFF, dtype=torch.uint8, device="cuda")
        ws = bc.Workspace.from_tensor(buf)
        for seed in (3, 4):
            x = _coop_input(kind, element, shape, seed)  # cumprod: random signs
            y = poisoned(shape, element)
            plan.run(st, ws, ScanArgs(x, y))
            ref = R.scan(kind, _np64(x), 1, reverse)
            assert_close(y, ref, element, scale=scale_of(kind, shape[1]),
                         what=f"garbage workspace rev={reverse} seed={seed}")  # fmt: skip
    assert variants == ["streamx514"] * 2, variants  # recorded once a direction


def _lse_special_lines(lines: int, n: int, seed: int) -> np.ndarray:
    """float64 lines of n values for logcumsumexp with what its kernels must get right,
    cycling over 8 kinds of line: plain, a leading run of -inf, all -inf, a -inf block and a
    +inf, a NaN, values of 1e4 (exp overflows), +inf first then -inf, tiny exps (-90 with
    one 40)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((lines, n)) * 3
    for i in range(lines):
        row, kind = x[i], i % 8
        if kind == 1:
            row[: n // 3 + 1] = -np.inf
        elif kind == 2:
            row[:] = -np.inf
        elif kind == 3:
            row[n // 4 : n // 2] = -np.inf
            row[n // 2] = np.inf
        elif kind == 4:
            row[n // 4] = np.nan
        elif kind == 5:
            row *= 1e4
        elif kind == 6:
            row[0] = np.inf
            row[1::7] = -np.inf
        elif kind == 7:
            row[:] = -90.0 + rng.standard_normal(n)
            row[n // 3] = 40.0
    return x


# logcumsumexp's rows in registers (f64: ROWREG_LSE_ITEMSIZES) of every length and count:
# they take the rows that would take warp rows, here from any count of rows
_ROWREG_LSE_ANY: dict[str, Any] = {"ROWREG_LSE_MIN_BYTES": 0, "WARP_ROWS_PER_SM": 0}


def _lse_paths(element: ElementKind) -> list[tuple[str, tuple[int, ...], int, dict[str, Any],
                                                   str]]:  # fmt: skip
    """(what, shape, axis, switches, kernel) for logcumsumexp's forward kernels: the launch
    of shape along axis with the switches set must run the named kernel (either direction,
    ``scan_lse_`` + kernel)."""
    from baracuda._cuda.device import device_info
    from baracuda.scan import _kernels as K

    many = device_info(torch.cuda.current_device()).sm_count * K.WARP_ROWS_PER_SM + 3
    lanes = 16 // element.itemsize
    wide = 2**20 + 8 * lanes  # a few long aligned lines: the cooperative kernel
    any_size = (2, 4, 8)  # COOP_LSE_ITEMSIZES: the cooperative kernel for every type
    return [
        ("many aligned rows", (many, 32 * lanes), -1, {"SEG_ROWS": False}, "pipe1"),
        # f64 rows in registers (of any length and count: _ROWREG_LSE_ANY), 2, 4 and 8 vectors
        # a lane, whole or fewer; by default many rows of at least 8 KiB
        *[(f"rows of {kib} KiB{' less a vector' if less else ''} in registers",
           (rows, kib * 1024 // element.itemsize - less * lanes), -1, _ROWREG_LSE_ANY, kernel)
          for rows, kib, less, kernel in ((37, 8, 0, "rowreg2"), (300, 16, 1, "rowreg4"),
                                          (29, 32, 0, "rowreg8"))
          if element.itemsize in K.ROWREG_LSE_ITEMSIZES],
        ("rows of 16 KiB, default", (many, 16384 // element.itemsize), -1, {},
         "rowreg4" if element.itemsize in K.ROWREG_LSE_ITEMSIZES else "pipe1"),
        ("many short rows, segmented", (many - 3, 24), -1, {"SEG_ONE_VECTOR": False}, "seg"),
        ("many short rows, segmented, a vector a lane", (many - 3, 24), -1, {}, "seg1"),
        ("short odd rows", (37, 129), -1, {"SEG_ROWS": False}, "rows1"),
        ("few long odd rows", (3, 50_001), 1, {}, "rows8"),
        ("few long aligned rows", (2, wide), 1, {"COOP_ROUNDS": 1, "COOP_LSE_ITEMSIZES": any_size},
         "coop"),
        ("few long aligned rows in rounds", (2, wide), 1,
         {"COOP_ROUNDS": 3, "COOP_LSE_ITEMSIZES": any_size}, "rounds"),
        # 4- and 8-byte types take the three passes there, a chunk a warp (PIPE_CHUNK_OPS)
        ("few long aligned rows, default", (2, wide), 1, {},
         "coop" if element.itemsize in K.COOP_LSE_ITEMSIZES else "pipe1"),
        ("few long aligned rows, three passes of blocks", (2, wide), 1,
         {"COOP_ROWS": False, "PIPE_CHUNK_OPS": ()}, "rows8"),
        # look-back tiles, staged below f64; f64 takes them for a few lines only
        # (LB_F64_MAX_LINES), three passes here
        ("strided lines", (300, 65), 0, {}, "cols" if element.itemsize == 8 else "lbcols"),
        ("strided lines, staged", (4096, 32), 0, {},
         "cols" if element.itemsize == 8 else "lbstage"),
        ("a few strided lines", (3000, 5), 0, {}, "lbcols"),
        # f32, f16 and bf16 take strips there (STRIP_OPS), f64 three passes
        ("many strided lines", (40, 140_032), 0, {"SHORT": False},
         "strip" if K._listed(K.STRIP_OPS, "lse", element.itemsize) else "cols"),
        ("strided lines, several chunks of strips", (700, 8192), 0, {},
         "strip" if K._listed(K.STRIP_OPS, "lse", element.itemsize) else "cols"),
        # short strided axes: a vector of lines a thread, two over 4 positions or fewer (shortx2,
        # SHORT_MANY), a line a thread where the lines are not whole vectors (short1)
        ("short strided lines", (40, 140_032), 0, {}, "short"),
        ("three strided positions", (3, 4096), 0, {}, "shortx2"),
        ("short strided odd lines", (5, 1001), 0, {}, "short1"),
        ("strided, three passes", (3000, 64), 0, {"LOOKBACK": False}, "cols"),
    ]


def _lse_path_runs(element: ElementKind, monkeypatch: Any,
                   make_x: Callable[[tuple[int, ...], int], Any]) -> Any:  # fmt: skip
    """logcumsumexp forward on each launch of ``_lse_paths`` with its switches set, both
    directions, on outputs poisoned beforehand: yields (label, x, ax, reverse, y) once the
    launch is checked to have run the path's kernel. ``make_x(shape, ax)``: the input."""
    from baracuda.scan import _kernels as K

    names = launched_kernels(monkeypatch)
    for what, shape, axis, switches, kernel in _lse_paths(element):
        for key, value in switches.items():
            monkeypatch.setattr(K, key, value)
        ax = axis % len(shape)
        x = make_x(shape, ax)
        for reverse in (False, True):
            names.clear()
            y, _ = run_forward(ScanKind.LOGCUMSUMEXP, x, axis, reverse)
            assert f"scan_lse_{kernel}" in names or (
                kernel in ("coop", "rounds") and f"scan_lse_{kernel}rev" in names
            ), (what, names)
            yield f"{what} {shape} axis {axis} rev={reverse}", x, ax, reverse, y
        monkeypatch.undo()  # the switches and the spy
        names = launched_kernels(monkeypatch)


@pytest.mark.parametrize("element", ELEMENTS, ids=lambda e: e.value)
def test_logcumsumexp_special_values(element: ElementKind, monkeypatch: Any) -> None:
    """logcumsumexp on every forward kernel (each case asserts the kernel it runs), both
    directions, on lines of -inf runs, all -inf, +inf, NaN, huge and tiny exps: equal to
    torch's float64 logcumsumexp of the same values (NaN and infinities in the same places,
    finite values within tolerance), on outputs poisoned beforehand."""
    dt = torch_dtype(element)

    def make(shape: tuple[int, ...], ax: int) -> Any:
        n = shape[ax]
        other = tuple(d for i, d in enumerate(shape) if i != ax)
        lines = _lse_special_lines(math.prod(other), n, 50)
        xn = np.moveaxis(lines.reshape(*other, n), -1, ax)
        return torch.from_numpy(np.ascontiguousarray(xn)).to("cuda", dt)

    for label, x, ax, reverse, y in _lse_path_runs(element, monkeypatch, make):
        xd = x.to("cpu", torch.float64)
        ref = torch.logcumsumexp(xd.flip(ax), ax).flip(ax) if reverse else \
            torch.logcumsumexp(xd, ax)  # fmt: skip
        assert_close(y, ref, element, scale=scale_of(ScanKind.LOGCUMSUMEXP, x.shape[ax]),
                     what=label)  # fmt: skip


@pytest.mark.parametrize("element", ELEMENTS, ids=lambda e: e.value)
def test_logcumsumexp_lanes_every_kernel(element: ElementKind, monkeypatch: Any) -> None:
    """Every logcumsumexp forward kernel of ``_lse_paths`` (each case asserts the kernel it
    runs) on lines that take either of a lane's ways, and both within a warp
    (``_lane_lines``): where a kernel takes a lane's values in two passes (pipe1, rows8 and
    the look-back rows below f64, the staged look-back column tiles, f64 rows in registers:
    scan.cu, LseOp::lane_outputs), the sums or the pushes where they fall under the floor;
    the other kernels push. Both directions, on poisoned outputs, against float64; f32 and
    f64 within a few of their rounding units."""
    dt = torch_dtype(element)
    kind = ScanKind.LOGCUMSUMEXP
    rng = np.random.default_rng(7)

    def make(shape: tuple[int, ...], ax: int) -> Any:
        n = shape[ax]
        other = tuple(d for i, d in enumerate(shape) if i != ax)
        xn = np.moveaxis(_lane_lines(math.prod(other), n, rng).reshape(*other, n), -1, ax)
        return torch.from_numpy(np.ascontiguousarray(xn)).to("cuda", dt)

    for label, x, ax, reverse, y in _lse_path_runs(element, monkeypatch, make):
        ref = np.asarray(R.scan(kind, _np64(x), ax, reverse))
        assert_close(y, ref, element, scale=scale_of(kind, x.shape[ax]), what=label)
        _assert_lse_tight(y, ref, element, label)


# mantissa bits of each type (the unit in the last place of v is 2^(exponent - bits))
_MANTISSA = {ElementKind.F32: 23, ElementKind.F64: 52, ElementKind.F16: 10, ElementKind.BF16: 7}


@pytest.mark.parametrize("element", ELEMENTS, ids=lambda e: e.value)
def test_logcumsumexp_of_equal_values(element: ElementKind, monkeypatch: Any) -> None:
    """logcumsumexp of lines of zeros is log k at the k-th position of the scan: each output
    is the log of a sum that is a whole number, so this measures the outputs' log (in f32,
    scan.cu's log_sum; in f16/bf16 the hardware log) on every forward kernel, both directions:
    within 8 ulps of float64's log k in f32 and f64 (where pieces of a line pass their totals
    as logs, each rounded: the cooperative kernel measured 7.6 ulps in f32 and 5.0 in f64),
    and within 1 ulp of the stored type in f16 and bf16 (its rounding), on outputs poisoned
    beforehand."""
    dt = torch_dtype(element)
    bound = 8.0 if element.itemsize >= 4 else 1.0

    def zeros(shape: tuple[int, ...], ax: int) -> Any:
        return torch.zeros(shape, device="cuda", dtype=dt)

    for label, x, ax, reverse, y in _lse_path_runs(element, monkeypatch, zeros):
        want = np.log(np.arange(1, x.shape[ax] + 1, dtype=np.float64))
        want = want[::-1] if reverse else want
        got = np.moveaxis(_np64(y), ax, -1)
        # the ulp of log k (k >= 2; log 1 = 0 must come out exactly)
        ulp = np.exp2(np.floor(np.log2(np.maximum(want, 1e-300))) - _MANTISSA[element])
        err = np.abs(got - want) / ulp
        worst = float(err.max()) if err.size else 0.0
        assert worst <= bound and not np.isnan(got).any(), (
            f"{label}: {worst:.2f} ulps at {np.unravel_index(int(err.argmax()), err.shape)}")


def _lines_cases(kind: ScanKind, element: ElementKind) -> list[tuple[str, Any, int]]:
    """(what, input, lines taken: 2, 4 or 0 for none) for the cooperative kernel over
    interleaved lines: (2^20, 2) (the benchmark's shape), (n, 4) with n positions of whole
    512-byte rows, a view starting 16 bytes into its buffer, and for cumsum 64 MiB (4- and
    8-byte types) or 40 MiB (2-byte) of 2 lines, past registers and shared memory; and
    shapes it must not take: a run of partial rows, 3 lines, 4 lines of f64, the first 2
    lines of 4."""
    lanes = 16 // element.itemsize

    def make(shape: tuple[int, ...], seed: int) -> Any:
        return _coop_input(kind, element, shape, seed)

    n4 = 100_096  # whole 512-byte rows for 4 lines of any type (a multiple of 256)
    flat = make((2 * 2**19 + lanes,), 32)
    cases = [
        ("(2^20, 2)", make((2**20, 2), 30), 2),
        (f"({n4}, 4)", make((n4, 4), 31), 0 if element.itemsize == 8 else 4),
        ("offset (2^19, 2)", flat[lanes:].view(2**19, 2), 2),
        ("(100008, 2): partial rows", make((100_008, 2), 33), 0),
        ("(2^18, 3)", make((2**18, 3), 34), 0),
        ("first 2 of (2^18, 4)", make((2**18, 4), 35)[:, :2], 0),
    ]
    if kind is ScanKind.CUMSUM:
        mib = 64 if element.itemsize >= 4 else 40
        cases.append((f"2 lines of {mib} MiB", make((mib * 2**19 // element.itemsize, 2), 36), 2))
    return cases


@pytest.mark.parametrize("kind", [ScanKind.CUMSUM, ScanKind.CUMPROD, ScanKind.LOGCUMSUMEXP],
                         ids=lambda k: k.value)  # fmt: skip
@pytest.mark.parametrize("element", ELEMENTS, ids=lambda e: e.value)
def test_scan_cooperative_lines(kind: ScanKind, element: ElementKind, monkeypatch: Any) -> None:
    """2 or 4 interleaved lines (a tensor (n, 2) or (n, 4) along dim 0) on the cooperative
    kernel as one run of memory (COOP_LINES; cumsum and cumprod, LINES_OPS), both ways,
    forward and backward against the float64 reference; shapes it must not take, and
    logcumsumexp, run elsewhere; the cumsum forward is bit for bit repeatable and within
    tolerance of the look-back tiles (COOP_LINES off)."""
    from baracuda.scan import _kernels as K

    assert K.COOP_LINES
    monkeypatch.setattr(K, "STREAM_LINES", False)  # sm_90 takes the stream kernel (below)
    names = launched_kernels(monkeypatch)
    for what, x, lines in _lines_cases(kind, element):
        if _op_of(kind) not in K.LINES_OPS:  # logcumsumexp: look-back tiles
            lines = 0
        for reverse in (False, True):
            check_op(kind, element, x, 0, reverse, f"lines {what} rev={reverse}")
            names.clear()
            run_forward(kind, x, 0, reverse)  # (the backward's dy is contiguous)
            if lines:
                assert names == [K.coop_kernel(_op_of(kind), reverse, lines)], (what, names)
            else:
                assert not any("_coop" in nm for nm in names), (what, names)
        if kind is ScanKind.CUMSUM and lines:
            first, _ = run_forward(kind, x, 0, False)
            again, _ = run_forward(kind, x, 0, False)
            assert torch.equal(first, again), what
            monkeypatch.setattr(K, "COOP_LINES", False)
            names.clear()
            tiles, _ = run_forward(kind, x, 0, False)
            assert not any("_coop" in nm for nm in names), names
            monkeypatch.setattr(K, "COOP_LINES", True)
            assert_close(tiles, _np64(first), element, scale=scale_of(kind, x.shape[0]),
                         what=f"look-back tiles vs lines {what}")  # fmt: skip


@pytest.mark.parametrize("kind", [ScanKind.CUMSUM, ScanKind.CUMPROD], ids=lambda k: k.value)
@pytest.mark.parametrize("element", ELEMENTS, ids=lambda e: e.value)
def test_scan_stream_lines(kind: ScanKind, element: ElementKind, monkeypatch: Any) -> None:
    """2 or 4 interleaved lines on the stream kernel (STREAM_LINES, sm_90 and later) as one
    row whose elements belong to line (index mod G), both ways, forward and backward against
    the float64 reference, on the cooperative kernel's cases and a run of partial 512-byte
    rows; f32 takes it wherever the lines are one run of whole vectors, 2-byte types where
    no program over lines takes them ((100008, 2)), f64 never (the f32 cumprod does, in
    double states); the cumsum forward is bit for bit repeatable and within tolerance of the
    cooperative kernel (STREAM_LINES off)."""
    from baracuda.scan import _kernels as K

    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("the stream kernel runs on sm_90 and later")
    names = launched_kernels(monkeypatch)
    op = _op_of(kind)
    for what, x, lines in _lines_cases(kind, element):
        if element.itemsize == 8:
            lines = 0  # the stream kernel takes 2- and 4-byte types
        elif what == "(100008, 2): partial rows":
            lines = 2  # whole 16-byte vectors, no coop program
        elif element.itemsize != 4:
            lines = -1  # 2-byte types: the stream kernel where coop takes rounds
        for reverse in (False, True):
            check_op(kind, element, x, 0, reverse, f"stream lines {what} rev={reverse}")
            names.clear()
            run_forward(kind, x, 0, reverse)
            mine = f"scan_{op}_stream{lines}{'rev' if reverse else ''}"
            if lines > 0:
                assert names == [mine], (what, names)
            elif lines == 0:
                assert not any("_stream" in nm for nm in names), (what, names)
        if kind is ScanKind.CUMSUM and lines > 0:
            first, _ = run_forward(kind, x, 0, False)
            again, _ = run_forward(kind, x, 0, False)
            assert torch.equal(first, again), what
            monkeypatch.setattr(K, "STREAM_LINES", False)
            other, _ = run_forward(kind, x, 0, False)
            monkeypatch.setattr(K, "STREAM_LINES", True)
            assert_close(other, _np64(first), element, scale=scale_of(kind, x.shape[0]),
                         what=f"other kernels vs stream lines {what}")  # fmt: skip


def test_cupy_and_jax_arrays_on_the_stream_kernel(monkeypatch: Any) -> None:
    """Other frameworks' arrays on the stream kernel (sm_90 and later). CuPy f32 through
    ``ScanPlan`` on a CuPy stream of its own: rows along dim 1, 2 and 4 interleaved lines
    along dim 0, both ways, each launch's kernel checked by name, outputs poisoned
    beforehand. Then the functional API: CuPy cumsum and its backward inside a CuPy stream,
    JAX f32 lines along dim 0 both ways. Results come back as the caller's type and match
    the float64 reference."""
    cupy = pytest.importorskip("cupy")
    if not _sm90():
        pytest.skip("the stream kernel runs on sm_90 and later")
    names = launched_kernels(monkeypatch)
    rng = np.random.default_rng(8)
    cs = cupy.cuda.Stream(non_blocking=True)
    s = bc.Stream.wrap(cs)
    cases = [((3, 100_008), 1, "stream"), ((2**20, 2), 0, "stream2"), ((100_096, 4), 0, "stream4")]
    for shape, axis, entry in cases:
        x64 = rng.uniform(-1.0, 1.0, shape) + 0.25
        with cs:
            x = cupy.asarray(x64, dtype=cupy.float32)
        for reverse in (False, True):
            plan = ScanPlan.select(s, ScanDescriptor(ScanKind.CUMSUM, shape, axis,
                                                     ElementKind.F32, reverse))  # fmt: skip
            ws = bc.Workspace.allocate(plan.workspace_size(), s)
            with cs:
                y = cupy.full(shape, cupy.nan, dtype=cupy.float32)
            names.clear()
            plan.run(s, ws, ScanArgs(x, y))
            cs.synchronize()
            assert names == [f"scan_sum_{entry}{'rev' if reverse else ''}"], (shape, names)
            assert_close(y, R.scan(ScanKind.CUMSUM, _np64(x), axis, reverse), ElementKind.F32,
                         scale=scale_of(ScanKind.CUMSUM, shape[axis]),
                         what=f"cupy plan {shape} rev={reverse}")  # fmt: skip
    xr = cupy.asarray(rng.uniform(-1.0, 1.0, (2, 2**20)) + 0.25, dtype=cupy.float32)
    dy = cupy.asarray(rng.standard_normal((2, 2**20)), dtype=cupy.float32)
    cupy.cuda.Device().synchronize()
    with cs:
        y = bc.cumsum(xr, 1, True)
        dx = bc.scan_backward("cumsum", dy, axis=1)
    cs.synchronize()
    assert isinstance(y, cupy.ndarray) and isinstance(dx, cupy.ndarray)
    assert_close(y, R.scan(ScanKind.CUMSUM, _np64(xr), 1, True), ElementKind.F32,
                 scale=scale_of(ScanKind.CUMSUM, 2**20), what="cupy functional rows")
    assert_close(dx, R.scan_backward(ScanKind.CUMSUM, _np64(dy), axis=1, reverse=False),
                 ElementKind.F32, scale=scale_of(ScanKind.CUMSUM, 2**20),
                 what="cupy functional backward")  # fmt: skip
    jax = pytest.importorskip("jax")
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("jax has no GPU backend here")
    jnp = jax.numpy
    xj = jnp.asarray(rng.uniform(-1.0, 1.0, (2**19, 4)) + 0.25, dtype=jnp.float32)
    for reverse in (False, True):
        yj = bc.cumsum(xj, 0, reverse)
        assert type(yj).__module__.startswith("jax")
        assert_close(yj, R.scan(ScanKind.CUMSUM, _np64(xj), 0, reverse), ElementKind.F32,
                     scale=scale_of(ScanKind.CUMSUM, 2**19), what=f"jax lines rev={reverse}")


@pytest.mark.parametrize("shape_axis", [((3, 50001), 1), ((300, 65), 0), ((2, 2**20), 1)],
                         ids=str)  # fmt: skip
@pytest.mark.parametrize("streamed", [False, True], ids=["coop", "stream"])
def test_lookback_in_cuda_graph(shape_axis: tuple[tuple[int, ...], int], streamed: bool,
                                monkeypatch: Any) -> None:  # fmt: skip
    """A look-back scan (workspace zeroing + kernel) captured in a CUDA graph and replayed
    twice on new inputs: the tile counter and flags are reset by every replay. (2, 2^20)
    takes the cooperative kernel (a cooperative launch in a graph), or with STREAM_ROWS on
    (sm_90 and later) the stream kernel (a cooperative launch that zeroes its own
    workspace); both ways."""
    from baracuda.scan import _kernels as K

    monkeypatch.setattr(K, "STREAM_ROWS", streamed)
    names = launched_kernels(monkeypatch)
    shape, axis = shape_axis
    x = torch.randn(shape, device="cuda")
    y = torch.empty_like(x)
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        plan = ScanPlan.select(s, ScanDescriptor(ScanKind.CUMSUM, shape, axis, ElementKind.F32))
        assert plan.workspace_size() > 0
        ws = bc.Workspace.allocate(plan.workspace_size(), bc.Stream.wrap(s))
        plan.run(s, ws, ScanArgs(x, y))  # warm
        with torch.cuda.graph(g, stream=s):
            plan.run(s, ws, ScanArgs(x, y))
    torch.cuda.current_stream().wait_stream(s)
    long_rows = "scan_sum_stream" if _sm90() and K.STREAM_ROWS else "scan_sum_coop"
    assert (long_rows in names) == (shape == (2, 2**20)), names
    for seed in (1, 2):
        x.copy_(torch.from_numpy(make_input(ScanKind.CUMSUM, shape, seed)).to("cuda"))
        y.fill_(float("nan"))
        g.replay()
        torch.cuda.synchronize()
        ref = R.scan(ScanKind.CUMSUM, _np64(x), axis, False)
        assert_close(y, ref, ElementKind.F32, scale=scale_of(ScanKind.CUMSUM, shape[axis]),
                     what=f"graph replay {seed}")  # fmt: skip


@pytest.mark.parametrize("shape_axis", [((3, 50001), 1), ((2**20, 2), 0)], ids=str)
def test_functional_calls_in_cuda_graph(shape_axis: tuple[tuple[int, ...], int]) -> None:
    """bc.cumsum and its backward captured in a CUDA graph and replayed on new inputs: the
    output (torch's graph pool) and the stream-ordered workspace (allocated and freed inside
    the capture) are the graph's own. (2^20, 2) takes the interleaved lines' kernel, (3,
    50001) look-back tiles; both need a workspace."""
    shape, axis = shape_axis
    x = torch.randn(shape, device="cuda")
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        bc.cumsum(x, axis=axis)  # warm: the plans and their launch recipes
        bc.scan_backward("cumsum", x, axis=axis)
        with torch.cuda.graph(g, stream=s):
            y = bc.cumsum(x, axis=axis)
            dx = bc.scan_backward("cumsum", x, axis=axis)
    torch.cuda.current_stream().wait_stream(s)
    for seed in (1, 2):
        x.copy_(torch.from_numpy(make_input(ScanKind.CUMSUM, shape, seed)).to("cuda"))
        g.replay()
        torch.cuda.synchronize()
        xn = _np64(x)
        sc = scale_of(ScanKind.CUMSUM, shape[axis])
        assert_close(y, R.scan(ScanKind.CUMSUM, xn, axis, False), ElementKind.F32, scale=sc,
                     what=f"graph replay {seed}")  # fmt: skip
        assert_close(dx, R.scan(ScanKind.CUMSUM, xn, axis, True), ElementKind.F32, scale=sc,
                     what=f"graph replay backward {seed}")  # fmt: skip


def _same_signature(x: Any, kind: ScanKind, seed: int) -> Any:
    """A tensor of ``x``'s signature (dtype, shape, strides, storage offset, so its address
    mod 16) holding other values, in a storage of its own."""
    n = x.untyped_storage().nbytes() // x.element_size()
    flat = torch.from_numpy(make_input(kind, (n,), seed)).to("cuda", x.dtype)
    return flat.as_strided(tuple(x.shape), x.stride(), x.storage_offset())


def _poison_pool(shape: tuple[int, ...], dt: Any) -> None:
    """Freed blocks of torch's caching allocator filled with NaN (and -7 for int64), so the
    outputs the functional API allocates next most likely start poisoned."""
    bufs = [torch.full(shape, float("nan"), dtype=dt, device="cuda") for _ in range(3)]
    bufs += [torch.full(shape, -7, dtype=torch.int64, device="cuda") for _ in range(3)]
    del bufs


def _same(a: Any, b: Any, what: str) -> None:
    torch.testing.assert_close(a, b, rtol=0, atol=0, equal_nan=True, msg=lambda m: f"{what}: {m}")


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.value)
@pytest.mark.parametrize("element", [ElementKind.F32, ElementKind.BF16], ids=lambda e: e.value)
def test_functional_bound_calls(kind: ScanKind, element: ElementKind, monkeypatch: Any) -> None:
    """A functional call on plain torch tensors whose signatures a checked call accepted takes
    the bound path (no checks, no descriptor: api._BOUND). On new tensors of those signatures
    (other values, other addresses), on another current stream, for every layout and both
    directions, forward and backward: bit for bit what the checked path gives (a call with an
    explicit stream always takes it), and the float64 reference. Every bound call runs its
    prepared launches (FastCall), whose steps include the workspace's (chunk carries,
    look-back tiles, the cooperative kernel's totals, the cummax backward's flags)."""
    checked: list[str] = []
    real = api.run_plan

    def spy(plan: Any, s: Any, args: Any) -> None:
        checked.append(type(plan).__name__)
        real(plan, s, args)

    monkeypatch.setattr(api, "run_plan", spy)
    fast = count_fast_runs(monkeypatch)
    dt = torch_dtype(element)
    fwd = getattr(bc, kind.value)
    ties = ("first", "last") if kind in EXTREMA else ("first",)
    for shape, axis in (((37, 129), -1), ((300, 65), 0), ((3, 50001), 1), ((2, 1 << 20), 1)):
        for rev in (False, True):
            for name, x0 in layouts(shape, dt, kind).items():
                what = f"{name} {shape} axis={axis} rev={rev}"
                tie = ties[len(name) % len(ties)]
                kw: dict[str, Any] = {"tie_break": tie} if kind in EXTREMA else {}
                api._BOUND.clear()
                checked.clear()
                out0 = fwd(x0, axis, rev, **kw)  # checked, then bound
                x1 = _same_signature(x0, kind, 7)
                _poison_pool(shape, dt)
                fast.clear()
                out1 = fwd(x1, axis, rev, **kw)  # bound
                assert checked == ["ScanPlan"], what
                assert fast == [True], what
                cur = torch.cuda.current_stream()
                ref1 = fwd(x1, axis, rev, stream=cur, **kw)  # checked
                assert checked == ["ScanPlan"] * 2, what
                side = torch.cuda.Stream()
                side.wait_stream(cur)
                with torch.cuda.stream(side):
                    out2 = fwd(x1, axis, rev, **kw)  # bound, on the side stream
                side.synchronize()
                assert checked == ["ScanPlan"] * 2, what
                xn = _np64(x1)
                ref = R.scan(kind, xn, axis, rev, TieBreak(tie))
                if kind in EXTREMA:
                    for k, part in enumerate(("values", "indices")):
                        _same(out1[k], ref1[k], f"{what} bound {part}")
                        _same(out2[k], ref1[k], f"{what} side stream {part}")
                    np.testing.assert_array_equal(out1[1].cpu().numpy(), np.asarray(ref[1]),
                                                  err_msg=what)  # fmt: skip
                    y1, ref, y0 = out1[0], ref[0], out0[0]
                else:
                    _same(out1, ref1, f"{what} bound")
                    _same(out2, ref1, f"{what} side stream")
                    y1, y0 = out1, out0
                assert_close(y1, ref, element, scale=scale_of(kind, shape[axis]), what=what)
                # backward: bind on (dy0, x0, y0), then new dy and saved tensors
                dy0 = _same_signature(x0, ScanKind.CUMSUM, 8)
                saved: dict[str, Any] = {"x": x0, "y": y0}
                bc.scan_backward(kind, dy0, axis=axis, reverse=rev, tie_break=tie, **saved)
                dy1 = _same_signature(x0, ScanKind.CUMSUM, 9)
                _poison_pool(shape, dt)
                fast.clear()
                dx1 = bc.scan_backward(kind, dy1, x=x1, y=y1, axis=axis, reverse=rev,
                                       tie_break=tie)  # fmt: skip
                assert checked == ["ScanPlan"] * 2 + ["ScanBackwardPlan"], what
                assert fast == [True], what
                dxc = bc.scan_backward(kind, dy1, x=x1, y=y1, axis=axis, reverse=rev,
                                       tie_break=tie, stream=cur)  # fmt: skip
                _same(dx1, dxc, f"{what} bound backward")
                dyn, yn = _np64(dy1), _np64(y1)
                dref = R.scan_backward(kind, dyn, x=xn, y=yn, axis=axis, reverse=rev,
                                       tie_break=TieBreak(tie))  # fmt: skip
                mag = _magnitude(kind, dyn, xn, yn, axis, rev)
                bsc = max(1.0, math.sqrt(shape[axis]) / 4) * (2.0 if kind is ScanKind.CUMPROD
                                                              else 1.0)  # fmt: skip
                assert_close(dx1, dref, element, scale=bsc, magnitude=mag,
                             what=f"backward {what}")  # fmt: skip


def test_functional_bound_calls_follow_the_switches(monkeypatch: Any) -> None:
    """A bound call's prepared launches hold while the switches they were chosen under keep
    their values: after a switch changes, the call takes the plan's path (the launches the
    switch now chooses), and is right either way."""
    from baracuda.scan import _kernels as K

    api._BOUND.clear()
    x = torch.randn(4096, 16, device="cuda")  # segmented tiles
    bc.cummax(x, 1, tie_break="last")
    ran = count_fast_runs(monkeypatch)
    want = torch.cummax(x, 1)
    for seg in (True, False, True):
        monkeypatch.setattr(K, "SEG_ROWS", seg)
        v, i = bc.cummax(x, 1, tie_break="last")
        _same(v, want.values, f"SEG_ROWS={seg}")
        _same(i, want.indices, f"SEG_ROWS={seg} indices")
    assert ran == [True, False, True]


def test_functional_bound_calls_keep_their_checks() -> None:
    """The bound path serves only the signatures a checked call accepted: an input of another
    dtype, shape, strides or alignment, a CPU tensor, a subclass or a missing saved tensor
    goes through the checks again (typed errors included)."""
    api._BOUND.clear()
    x = torch.randn(64, 1000, device="cuda")
    bc.cumsum(x, 1)
    n = len(api._BOUND)
    assert n == 1
    flat = torch.randn(64 * 1000 + 1, device="cuda")
    for other in (x.double(), x.t().contiguous().t(), flat[1:].view(64, 1000), x[:32],
                  x[:, :999]):  # fmt: skip
        torch.testing.assert_close(bc.cumsum(other, 1), torch.cumsum(other, 1), rtol=1e-5,
                                   atol=1e-3)  # fmt: skip
    assert len(api._BOUND) == n + 5
    p = torch.nn.Parameter(x.clone())
    torch.testing.assert_close(bc.cumsum(p, 1), torch.cumsum(x, 1), rtol=1e-5, atol=1e-3)
    assert len(api._BOUND) == n + 5  # a subclass is never bound
    cpu = bc.cumsum(x.cpu(), 1)
    assert not cpu.is_cuda
    with pytest.raises(bc.InvalidProblem, match="axis"):
        bc.cumsum(x, 2)
    bc.scan_backward("cumprod", x, x=x, y=x, axis=1)
    with pytest.raises(bc.InvalidProblem, match="saved forward output y"):
        bc.scan_backward("cumprod", x, x=x, axis=1)
    with pytest.raises(bc.InvalidProblem, match="shape"):
        bc.scan_backward("cumprod", x, x=x, y=x[:32], axis=1)


@pytest.mark.parametrize("kind", EXTREMA, ids=lambda k: k.value)
@pytest.mark.parametrize("element", ELEMENTS, ids=lambda e: e.value)
def test_fused_extrema_backward(kind: ScanKind, element: ElementKind, monkeypatch: Any) -> None:
    """The one-kernel cummax/cummin backward (a warp per line, or a block per line where rows8
    takes whole lines: winner flags, then segmented sums; the ring where it takes the rows) on
    short lines and lines of several tiles with a partial last one, ties, NaN (one and
    several), +-inf, all-equal lines, inf and NaN in dy, a strided x, both tie-breaks and
    directions: equal to the float64 reference and to the two
    launches (flags, then the segmented scan). Where x and dy are each one aligned run of
    short rows, the two passes take segmented tiles instead, on the same special values;
    where rows8 cuts lines into chunks, the two launches run."""
    from baracuda._cuda.device import device_info
    from baracuda.scan import _kernels as K

    assert K.FUSED_MAX_BACKWARD
    names = launched_kernels(monkeypatch)
    dt = torch_dtype(element)
    many = device_info(torch.cuda.current_device()).sm_count * K.WARP_ROWS_PER_SM + 5
    shapes = ((70, 64), (33, 37), (9, 300), (many, 1100), (many, 8), (4 * many, 8), (40, 3001),
              (600, 4100), (7, 2**14 + 3))  # fmt: skip
    for shape in shapes:
        rng = np.random.default_rng(shape[1])
        xn = np.round(rng.standard_normal(shape) * 3) / 4
        xn[1, 7] = np.nan
        xn[2, 5:9] = np.nan
        xn[3, :] = -np.inf
        xn[4, 0] = -np.inf
        xn[4, 1:] = np.inf
        xn[5, :] = 2.0  # all tied
        big = torch.from_numpy(np.repeat(xn, 2, axis=1)).to("cuda", dt)
        for xname, x in (("contiguous", big[:, ::2].contiguous()), ("strided x", big[:, ::2])):
            dyn = rng.standard_normal(shape)
            dyn[0, 1::7] = np.inf  # in their own winners' segments only
            dyn[6, 2::5] = np.nan
            dy = torch.from_numpy(dyn).to("cuda", dt)
            sm = device_info(torch.cuda.current_device()).sm_count
            lanes = 16 // element.itemsize

            def expect(names: list[str], what: str) -> None:
                seg = (xname == "contiguous" and shape[1] * element.itemsize <= K.SEG_MAX_BYTES
                       and math.prod(shape) % lanes == 0)  # fmt: skip
                ring = max_ring_kernel(shape, element.itemsize, sm)
                if xname == "contiguous" and ring:
                    assert names == [ring], (what, names)
                elif seg:  # both passes on segmented tiles (x and dy one aligned run)
                    assert names == ["scan_maxflag_seg", "scan_seg_bwd_seg"], (what, names)
                elif (ch := K.chunking("rows", shape[0], shape[1], element.itemsize,
                                       sm)).layout == "rows1":  # a warp per line  # fmt: skip
                    assert names == ["scan_max_bwd_rows"], (what, names)
                elif ch.layout == "rows8" and ch.nchunks == 1:  # a block per line
                    assert names == ["scan_max_bwd_rows8"], (what, names)
                else:  # two launches
                    fused = [k for k in names if k.startswith("scan_max_bwd")]
                    assert not fused, (what, names)

            check_max_backward(kind, element, dy, x, f"{kind.value} {shape} {xname}", expect,
                               names, monkeypatch)  # fmt: skip


@pytest.mark.parametrize("kind", EXTREMA, ids=lambda k: k.value)
@pytest.mark.parametrize("element", [ElementKind.F32, ElementKind.BF16], ids=lambda e: e.value)
def test_fused_extrema_backward_operands_of_other_layouts(kind: ScanKind, element: ElementKind,
                                                          monkeypatch: Any) -> None:  # fmt: skip
    """The one-kernel cummax/cummin backward over rank-3 tensors where x, dy and dx differ in
    which outer dims merge: dx a view into a larger buffer (every other row of dim 1), x such
    a view, dy every other element of dim 0. The winner flags (x) and the segmented sums (dy,
    dx) then have outer dims of their own, and each pass must find its row in its own. Both
    tie breaks and directions, against the float64 reference; the rest of dx's buffer stays
    poisoned."""
    from baracuda._cuda.device import device_info
    from baracuda.scan import _kernels as K

    names = launched_kernels(monkeypatch)
    dt = torch_dtype(element)
    sm = device_info(torch.cuda.current_device()).sm_count
    for shape in ((33, 2, 37), (5, 8, 3001), (3, 2, 1)):
        rng = np.random.default_rng(shape[2])
        xn = np.round(rng.standard_normal(shape) * 3) / 4
        xn[0, 1, 0] = np.nan
        dyn = rng.standard_normal(shape)

        def inside(vals: np.ndarray, d: int, fill: float) -> tuple[Any, Any]:
            """A view of ``vals`` as every other row of dim ``d`` of a buffer of ``fill``."""
            big = list(vals.shape)
            big[d] = 2 * big[d] + 1
            buf = torch.full(tuple(big), fill, dtype=dt, device="cuda")
            at = (slice(None),) * d + (slice(1, None, 2),)
            buf[at] = torch.from_numpy(vals).to("cuda", dt)
            return buf, buf[at]

        x0 = torch.from_numpy(xn).to("cuda", dt)
        dy0 = torch.from_numpy(dyn).to("cuda", dt)
        layouts = {
            "dx inside": (x0, dy0, 1),
            "x inside": (inside(xn, 1, 0.0)[1], dy0, None),
            "dy every other of dim 0": (x0, inside(dyn, 0, 0.0)[1], None),
        }
        for what, (x, dy, dx_dim) in layouts.items():
            for tie in (TieBreak.FIRST, TieBreak.LAST):
                for reverse in (False, True):
                    label = f"{kind.value} {shape} {what} tie={tie.value} reverse={reverse}"
                    if dx_dim is None:
                        buf = dx = poisoned(shape, element)
                    else:
                        buf, dx = inside(np.full(shape, np.nan), dx_dim, math.nan)
                    desc = ScanBackwardDescriptor(kind, shape, -1, element, reverse, tie)
                    plan = ScanBackwardPlan.select(stream(), desc)
                    ws = bc.Workspace.allocate(plan.workspace_size(), stream())
                    names.clear()
                    plan.run(stream(), ws, ScanBackwardArgs(dy, dx, x, None))
                    torch.cuda.synchronize()
                    ch = K.chunking("rows", shape[0] * shape[1], shape[2], element.itemsize, sm)
                    if ch.layout == "rows1" or (ch.layout == "rows8" and ch.nchunks == 1):
                        assert names[0].startswith("scan_max_bwd_rows"), (label, names)
                    ref = R.scan_backward(kind, _np64(dy), x=_np64(x), axis=-1,
                                          reverse=reverse, tie_break=tie)  # fmt: skip
                    mag = _magnitude(kind, _np64(dy), _np64(x), None, -1, reverse, tie)
                    assert_close(dx, ref, element, scale=max(1.0, math.sqrt(shape[2]) / 4),
                                 magnitude=mag, what=label)  # fmt: skip
                    if dx_dim is not None:
                        rest = torch.ones(buf.shape, dtype=torch.bool, device="cuda")
                        rest[(slice(None),) * dx_dim + (slice(1, None, 2),)] = False
                        assert bool(buf[rest].isnan().all()), f"{label}: written outside dx"


def check_max_backward(kind: ScanKind, element: ElementKind, dy: Any, x: Any, what: str,
                       expect: Callable[[list[str], str], None], names: list[str],
                       monkeypatch: Any, axis: int = -1) -> None:  # fmt: skip
    """The cummax/cummin backward of ``dy`` and ``x`` along ``axis`` (the last by default),
    both tie-breaks and directions: ``expect(kernels, what)`` checks the kernels it ran
    (``names``, from ``launched_kernels``); dx (poisoned beforehand) against the float64
    reference and against the two launches (flags, then the segmented scan)."""
    from baracuda.scan import _kernels as K

    axis %= x.dim()
    sc = max(1.0, math.sqrt(x.shape[axis]) / 4)
    x64, dy64 = _np64(x), _np64(dy)
    for tie in TieBreak:
        for reverse in (False, True):
            w = f"{what} {tie.value} rev={reverse}"
            names.clear()
            dx = run_backward(kind, dy, x, None, axis, reverse, tie)
            expect(list(names), w)
            with np.errstate(invalid="ignore"):  # inf - inf where a segment holds both
                ref = R.scan_backward(kind, dy64, x=x64, axis=axis, reverse=reverse,
                                      tie_break=tie)  # fmt: skip
                mag = np.abs(R.scan_backward(kind, np.abs(dy64), x=x64, axis=axis,
                                             reverse=reverse, tie_break=tie))  # fmt: skip
            assert_close(dx, ref, element, scale=sc, magnitude=mag, what=w)
            monkeypatch.setattr(K, "FUSED_MAX_BACKWARD", False)
            names.clear()
            two = run_backward(kind, dy, x, None, axis, reverse, tie)
            monkeypatch.setattr(K, "FUSED_MAX_BACKWARD", True)
            assert names and not any(k.startswith("scan_max_bwd") for k in names), (w, names)
            assert_close(dx, _np64(two), element, scale=sc, magnitude=mag,
                         what=f"{w} vs two passes")  # fmt: skip


@pytest.mark.parametrize("kind", EXTREMA, ids=lambda k: k.value)
@pytest.mark.parametrize("element", ELEMENTS, ids=lambda e: e.value)
def test_max_backward_strips(kind: ScanKind, element: ElementKind, monkeypatch: Any) -> None:
    """The cummax/cummin backward along a strided axis in one pass of strips
    (scan_max_bwd_strip, STRIP_MAX_BACKWARD; the fill thresholds at 0 so that small tensors
    take them): 256- and 128-byte strips, axes of two positions, around a chunk and past the
    ring, a rank-3 tensor along its middle dim. Its lines hold winners that pend over every
    chunk (the first position the extremum), a winner at every position (rising, falling, all
    tied under either tie break), NaN, infinities, and inf and NaN in dy. Both tie breaks and
    directions, dx poisoned beforehand, against the float64 reference and against the two
    passes."""
    from baracuda.scan import _kernels as K

    monkeypatch.setattr(K, "SHORT", False)  # strips over short axes too
    monkeypatch.setattr(K, "STRIP_MIN_FILL", 0.0)
    monkeypatch.setattr(K, "STRIP_WIDE_FILL", 0.0)
    monkeypatch.setattr(K, "STRIP_MIN_FILL_OF", ())
    names = launched_kernels(monkeypatch)
    kernel = "scan_max_bwd_strip"
    dt = torch_dtype(element)
    w128, w256 = 128 // element.itemsize, 256 // element.itemsize  # lines in a strip
    chunk = K.MAX_BWD_STRIP_CHUNK
    r256, r128 = chunk // 256, chunk // 128  # positions a chunk
    ring = K.MAX_BWD_STRIP_STAGES * r256  # positions in flight (256-byte strips)
    cases = [((n, 2 * w256), 0, 256) for n in (2, r256 - 1, r256, r256 + 1, ring + 3, 1500)]
    cases += [((n, 3 * w128), 0, 128) for n in (r128 + 1, 1300)]
    cases.append(((3, 300, 2 * w256), 1, 256))
    for shape, axis, width in cases:
        rng = np.random.default_rng(shape[axis] + width)
        xn = np.moveaxis(np.round(rng.standard_normal(shape) * 3) / 4, axis, 0)  # a view
        n = xn.shape[0]
        xn[:, ..., 0] = 2.0  # all tied
        xn[:, ..., 1] = np.arange(n)[:, None] if xn.ndim == 3 else np.arange(n)  # rising
        xn[:, ..., 2] = -xn[:, ..., 1]  # falling
        xn[0, ..., 3] = np.inf  # cummax's extremum first: its winner pends to the end
        xn[0, ..., 4] = -np.inf  # cummin's
        xn[:, ..., 5] = -np.inf
        xn[n // 2, ..., 6] = np.nan
        xn[n // 3:, ..., 7] = np.nan
        xn[1:, ..., 8] = np.inf
        dyn = np.moveaxis(rng.standard_normal(shape), axis, 0)
        dyn[n // 3, ..., 9] = np.inf
        dyn[n // 2, ..., 10] = np.nan
        x = torch.from_numpy(np.ascontiguousarray(np.moveaxis(xn, 0, axis))).to("cuda", dt)
        dy = torch.from_numpy(np.ascontiguousarray(np.moveaxis(dyn, 0, axis))).to("cuda", dt)

        def expect(seen: list[str], what: str, shape: tuple[int, ...] = shape, axis: int = axis,
                   width: int = width) -> None:  # fmt: skip
            assert seen == [kernel], (what, seen)
            slots = [K.Slot(x.data_ptr(), tuple(x.stride())),
                     K.Slot(dy.data_ptr(), tuple(dy.stride())), None,
                     K.Slot(dy.data_ptr(), tuple(dy.stride())), None]  # fmt: skip
            assert K._strip_width("max_bwd", shape, axis, slots, element.itemsize, 132) == width

        check_max_backward(kind, element, dy, x, f"{kind.value} {shape} axis={axis}", expect,
                           names, monkeypatch, axis)  # fmt: skip


def max_ring_kernel(shape: tuple[int, ...], itemsize: int, sm: int) -> str | None:
    """The ring kernel that the cummax/cummin backward of dense, aligned operands of ``shape``
    along the last axis takes, or None (``_kernels._max_ring``; two blocks an SM fit on
    sm_80+)."""
    from baracuda.scan import _kernels as K

    rowb = shape[-1] * itemsize
    if not K.RING_MAX_BACKWARD or rowb % 16:
        return None
    if K._ring_grid(math.prod(shape[:-1]), sm, K.RING_BLOCKS_PER_SM) == 0:
        return None
    if rowb >= K.RING_MAX_BACKWARD_CHUNK:
        return "scan_max_bwd_ring"
    short = rowb >= K.RING_MAX_BACKWARD_CHUNK // 2
    return "scan_max_bwd_ring8" if short and itemsize in K.RING_MAX_BACKWARD_SHORT_ITEMSIZES \
        else None


def _max_ring_input(shape: tuple[int, ...], ce: int, seed: int) -> np.ndarray:
    """x for the ring's backward: ties, and lines whose winners test the chunks' carries and
    the pending winner (``ce`` positions a chunk; lines of at least one)."""
    rng = np.random.default_rng(seed)
    x = np.round(rng.standard_normal(shape) * 4) / 4
    v = x.reshape(-1, shape[-1])
    n = shape[-1]
    v[0, min(ce + 7, n - 1)] = np.nan  # one NaN, past the first chunk
    v[1, ce - 3: ce + 5] = np.nan  # several, across a chunk boundary
    v[1, 3 * n // 4] = np.nan
    v[2, :] = -np.inf  # every position ties at -inf
    v[3, 0] = np.inf  # one winner, pending over every chunk
    v[4, 0] = -np.inf  # a new winner at every position
    v[4, 1:] = np.arange(1, n)
    v[5, :] = 2.0  # all tied
    v[6, :] = -np.arange(n)  # decreasing: cummin's winners everywhere, cummax's at 0
    v[7, :] = -1e3  # winners at the chunks' first positions only
    v[7, ::ce] = np.arange(len(v[7, ::ce]))
    v[8, :] = -1e3  # ... at their last positions
    v[8, ce - 1:: ce] = np.arange(len(v[8, ce - 1:: ce]))
    v[9, 1:] = np.inf  # inf after a finite first position
    return x


@pytest.mark.parametrize("kind", EXTREMA, ids=lambda k: k.value)
@pytest.mark.parametrize("element", ELEMENTS, ids=lambda e: e.value)
def test_max_backward_ring(kind: ScanKind, element: ElementKind, monkeypatch: Any) -> None:
    """The cummax/cummin backward through a ring (scan_max_bwd_ring: one pass, the chunk's
    winner flags and segmented sums in registers, the last winner of a chunk pending into the
    next ones): rows of half chunks (scan_max_bwd_ring8), of one chunk, of several, with a
    partial last chunk, long rows, rank 3, padded rows; NaN (one, several, across a chunk
    boundary), +-inf, ties, winners at every position, at the chunks' first or last
    positions only, one winner for a whole row; dy with inf and NaN; both tie-breaks and
    directions. Against the float64 reference (dx poisoned beforehand) and the two launches
    (flags, then the segmented scan)."""
    from baracuda._cuda.device import device_info
    from baracuda.scan import _kernels as K

    assert K.RING_MAX_BACKWARD and K.FUSED_MAX_BACKWARD
    monkeypatch.setattr(K, "RING_MAX_BACKWARD_SHORT_ITEMSIZES", (2, 4, 8))  # every dtype's
    names = launched_kernels(monkeypatch)
    dt = torch_dtype(element)
    it = element.itemsize
    ce = K.RING_MAX_BACKWARD_CHUNK // it  # positions a chunk
    lanes = 16 // it
    sm = device_info(torch.cuda.current_device()).sm_count
    cases: list[tuple[str, tuple[int, ...], int]] = [  # name, shape, row stride (0: dense)
        ("half chunks", (2 * sm, ce // 2 + lanes), 0),
        ("one chunk", (2 * sm, ce), 0),
        ("chunks", (sm, 4 * ce), 0),
        ("partial last chunk", (2 * sm, 3 * ce + lanes), 0),
        ("long rows", (sm, 12 * ce + 5 * lanes), 0),
        ("rank 3", (2, sm, 2 * ce + 3 * lanes), 0),
        ("padded rows", (sm, 2 * ce + lanes), 2 * ce + 4 * lanes),
    ]
    for name, shape, stride in cases:
        xn = _max_ring_input(shape, ce, len(shape) + shape[-1])
        rng = np.random.default_rng(shape[-1])
        dyn = rng.standard_normal(shape)
        dyr = dyn.reshape(-1, shape[-1])
        dyr[9, 5::97] = np.inf
        dyr[9, 11::89] = np.nan
        dyr[10, -3:] = -np.inf
        if stride:
            wide = torch.zeros((shape[0], stride), dtype=dt, device="cuda")
            x = wide[:, : shape[1]]
            x.copy_(torch.from_numpy(xn))
        else:
            x = torch.from_numpy(xn).to("cuda", dt)
        dy = torch.from_numpy(dyn).to("cuda", dt)

        def expect(names: list[str], what: str) -> None:
            want = "scan_max_bwd_ring" if shape[-1] >= ce else "scan_max_bwd_ring8"
            assert names == [want], (what, names)

        check_max_backward(kind, element, dy, x, f"{kind.value} {element.value} {name} {shape}",
                           expect, names, monkeypatch)  # fmt: skip


@pytest.mark.parametrize("kind", [ScanKind.CUMSUM, ScanKind.CUMPROD, ScanKind.LOGCUMSUMEXP],
                         ids=lambda k: k.value)  # fmt: skip
@pytest.mark.parametrize("element", [ElementKind.F32, ElementKind.F16, ElementKind.BF16],
                         ids=lambda e: e.value)  # fmt: skip
def test_lookback_staged_tiles(kind: ScanKind, element: ElementKind, monkeypatch: Any) -> None:
    """Strided look-back tiles moved through shared memory in 16-byte vectors (LBCOLS_STAGED)
    where a tile is one run (2, 8 or 32 interleaved lines, axis stride == width; wide and
    narrow tiles, a partial last tile; the f32 cumprod's tiles of double words); and layouts that
    must not stage (length not whole vectors, misaligned, several groups, a rank-3 tensor);
    both directions, forward and backward, against the float64 reference and the unstaged
    kernel."""
    from baracuda.scan import _kernels as K

    assert K.LBCOLS_STAGED
    monkeypatch.setattr(K, "STREAM_LINES", False)  # sm_90 takes (n, 2) on the stream kernel
    seen = launched_kernels(monkeypatch)
    lanes = 16 // element.itemsize
    dt = torch_dtype(element)
    cases = [((40 * lanes, 2), 0, True), ((300 * lanes, 8), 0, True),
             ((150 * lanes, 32), 0, True), ((40 * lanes + 1, 2), 0, False),
             ((300, 64), 0, False), ((7, 40 * lanes, 2), 1, False)]  # fmt: skip
    for shape, axis, staged in cases:
        x = torch.from_numpy(make_input(kind, shape, 5)).to("cuda", dt)
        views = {"contiguous": x}
        if staged:
            flat = torch.from_numpy(make_input(kind, (x.numel() + 1,), 6)).to("cuda", dt)
            views["misaligned"] = flat[1:].view(shape)
        for name, v in views.items():
            for wide in (True, False):
                monkeypatch.setattr(K, "LBCOLS_WIDE", K.LBCOLS_WIDE if wide else ())
                for reverse in (False, True):
                    seen.clear()
                    what = f"{name} {shape} axis={axis} wide={wide} rev={reverse}"
                    check_op(kind, element, v, axis, reverse, what)
                    op = _op_of(kind)
                    tiles = ("lbcols", "lbstage", "lbpair")
                    fwd = [nm for nm in seen if nm.rsplit("_", 1)[1] in tiles]
                    assert fwd, (what, seen)
                    want = "lbstage" if staged and name == "contiguous" else "lbcols"
                    if shape == (300, 64) and element.itemsize == 2 and op in K.PAIR_OPS:
                        want = "lbpair"  # line pairs adjacent and aligned
                    assert fwd[0] == f"scan_{op}_{want}", (what, seen)
                    # the same launch unstaged gives the same values within tolerance
                    monkeypatch.setattr(K, "LBCOLS_STAGED", False)
                    y_plain, _ = run_forward(kind, v, axis, reverse)
                    monkeypatch.setattr(K, "LBCOLS_STAGED", True)
                    y, _ = run_forward(kind, v, axis, reverse)
                    assert_close(y, _np64(y_plain), element, scale=scale_of(kind, shape[axis]),
                                 what=f"staged vs unstaged {what}")  # fmt: skip


@pytest.mark.parametrize("kind", [ScanKind.CUMSUM, ScanKind.CUMPROD], ids=lambda k: k.value)
@pytest.mark.parametrize("element", [ElementKind.F16, ElementKind.BF16], ids=lambda e: e.value)
def test_lookback_line_pairs(kind: ScanKind, element: ElementKind, monkeypatch: Any) -> None:
    """Strided look-back tiles of a 2-byte type over two groups of 32 lines, a thread per two
    adjacent lines (LBCOLS_PAIRS, scan_lb_pairs): several groups (an odd count: the last tile
    has one) and chunks, a partial last group (34 lines) and chunk, a rank-3 tensor whose
    line pairs never straddle its outer dims; and layouts that must not take pairs (an odd
    line count, lines 2 apart, a misaligned start), both directions, forward and backward,
    against the float64 reference and the per-line tiles."""
    from baracuda.scan import _kernels as K

    assert K.LBCOLS_PAIRS
    seen = launched_kernels(monkeypatch)
    dt = torch_dtype(element)
    op = _op_of(kind)
    cases = [((1000, 64), 0, "contiguous"), ((3000, 34), 0, "contiguous"),
             ((5, 777, 40), 1, "contiguous"), ((513, 96), 0, "contiguous"),
             ((300, 160), 0, "contiguous"),
             ((777, 33), 0, "odd"), ((600, 96), 0, "every other"),
             ((600, 96), 0, "misaligned")]  # fmt: skip
    for shape, axis, layout in cases:
        if layout == "every other":
            big = torch.from_numpy(make_input(kind, (shape[0], 2 * shape[1]), 7)).to("cuda", dt)
            x = big[:, ::2]
        elif layout == "misaligned":
            flat = torch.from_numpy(make_input(kind, (math.prod(shape) + 1,), 8)).to("cuda", dt)
            x = flat[1:].view(shape)
        else:
            x = torch.from_numpy(make_input(kind, shape, 9)).to("cuda", dt)
        for reverse in (False, True):
            seen.clear()
            what = f"{layout} {shape} axis={axis} rev={reverse}"
            check_op(kind, element, x, axis, reverse, what)
            want = "lbpair" if layout == "contiguous" else "lbcols"
            assert seen[0] == f"scan_{op}_{want}", (what, seen)
            monkeypatch.setattr(K, "LBCOLS_PAIRS", False)
            y_line, _ = run_forward(kind, x, axis, reverse)
            assert seen[-1] == f"scan_{op}_lbcols", (what, seen)
            monkeypatch.setattr(K, "LBCOLS_PAIRS", True)
            y, _ = run_forward(kind, x, axis, reverse)
            assert_close(y, _np64(y_line), element, scale=scale_of(kind, shape[axis]),
                         what=f"pairs vs per-line tiles {what}")  # fmt: skip


@pytest.mark.parametrize("element", [ElementKind.F32, ElementKind.BF16, ElementKind.F16])
def test_jax_arrays_every_scan_op(element: ElementKind) -> None:
    """Every scan op on JAX arrays through the functional API, along each axis and in both
    directions: the values (and the running winners' positions, whatever integer type JAX
    gives them) against the float64 reference, and every backward from JAX arrays of ``dy``
    and the saved tensors; results come back as JAX arrays."""
    jax = pytest.importorskip("jax")
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("jax has no GPU backend here")
    jnp = jax.numpy
    dt = {ElementKind.F32: jnp.float32, ElementKind.BF16: jnp.bfloat16,
          ElementKind.F16: jnp.float16}[element]  # fmt: skip
    shape = (67, 1029)
    rng = np.random.default_rng(23)
    for kind in KINDS:
        xj = jnp.asarray(make_input(kind, shape, seed=3), dtype=dt)
        x64 = _np64(xj)
        dy = jnp.asarray(rng.standard_normal(shape), dtype=dt)
        for axis in (1, 0, -2):
            n = shape[axis]
            for reverse in (False, True):
                what = f"jax {element.value} {kind.value} axis={axis} rev={reverse}"
                got = getattr(bc, kind.value)(xj, axis, reverse)
                want = R.scan(kind, x64, axis, reverse)
                if kind in EXTREMA:
                    (yj, ij), (wy, wi) = got, want
                    assert type(ij).__module__.startswith("jax"), what
                    np.testing.assert_array_equal(np.asarray(ij).astype(np.int64), wi,
                                                  err_msg=what)  # fmt: skip
                else:
                    yj, wy = got, want
                assert type(yj).__module__.startswith("jax") and yj.dtype == dt, what
                assert_close(yj, wy, element, scale=scale_of(kind, n), what=what)
                dx = bc.scan_backward(kind.value, dy, x=xj, y=yj, axis=axis, reverse=reverse)
                assert type(dx).__module__.startswith("jax") and dx.dtype == dt, what
                dyn, yn = _np64(dy), _np64(yj)
                wdx = R.scan_backward(kind, dyn, x=x64, y=yn, axis=axis, reverse=reverse)
                bsc = max(1.0, math.sqrt(n) / 4) * (2.0 if kind is ScanKind.CUMPROD else 1.0)
                assert_close(dx, wdx, element, scale=bsc, what=what + " dx",
                             magnitude=_magnitude(kind, dyn, x64, yn, axis, reverse))  # fmt: skip


def test_cupy_and_jax_arrays_on_lookback_tiles() -> None:
    """Other frameworks' arrays through the functional API on the strided look-back tiles:
    CuPy f16 cumsum / cumprod along dim 0 (line pairs), a CuPy f32 view two columns apart,
    JAX bf16 cumsum along dim 0 and its backward; results come back as the caller's type."""
    cupy = pytest.importorskip("cupy")
    rng = np.random.default_rng(5)
    x64 = rng.uniform(-1.0, 1.0, (3000, 96)) + 0.25
    xc = cupy.asarray(x64, dtype=cupy.float16)
    for kind, fn in ((ScanKind.CUMSUM, bc.cumsum), (ScanKind.CUMPROD, bc.cumprod)):
        for reverse in (False, True):
            y = fn(xc, 0, reverse)
            assert isinstance(y, cupy.ndarray)
            assert_close(y, R.scan(kind, _np64(xc), 0, reverse), ElementKind.F16,
                         scale=scale_of(kind, 3000), what=f"cupy {kind.value} rev={reverse}")
    big = cupy.asarray(rng.standard_normal((4000, 130)), dtype=cupy.float32)
    xs = big[:, ::2]
    assert_close(bc.cumsum(xs, 0), R.scan(ScanKind.CUMSUM, _np64(xs), 0, False),
                 ElementKind.F32, scale=scale_of(ScanKind.CUMSUM, 4000), what="cupy strided")
    jax = pytest.importorskip("jax")
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("jax has no GPU backend here")
    jnp = jax.numpy
    xj = jnp.asarray(x64[:2048, :64], dtype=jnp.bfloat16)
    yj = bc.cumsum(xj, 0)
    assert type(yj).__module__.startswith("jax")
    assert_close(yj, R.scan(ScanKind.CUMSUM, _np64(xj), 0, False), ElementKind.BF16,
                 scale=scale_of(ScanKind.CUMSUM, 2048), what="jax cumsum")
    dy = jnp.asarray(rng.standard_normal((2048, 64)), dtype=jnp.bfloat16)
    dx = bc.scan_backward("cumsum", dy, axis=0)
    assert type(dx).__module__.startswith("jax")
    assert_close(dx, R.scan_backward(ScanKind.CUMSUM, _np64(dy), axis=0, reverse=False),
                 ElementKind.BF16, scale=scale_of(ScanKind.CUMSUM, 2048), what="jax backward")


def _op_of(kind: ScanKind) -> str:
    return {ScanKind.CUMSUM: "sum", ScanKind.CUMPROD: "prod", ScanKind.LOGCUMSUMEXP: "lse",
            ScanKind.CUMMAX: "max", ScanKind.CUMMIN: "max"}[kind]  # fmt: skip


# the ops of each backward's launches in strips, and whether each reads the saved x (else
# only dy and the forward's y, laid out like the shape's contiguous tensor). The cummax/cummin
# backward is one pass (max_bwd, STRIP_MAX_BACKWARD); where x takes no strips it is two, and
# the second (seg_bwd: dy, dx and the winner flags) takes them where the shape's layout does.
_BACKWARD_OPS: dict[ScanKind, tuple[tuple[str, bool], ...]] = {
    ScanKind.CUMSUM: (("sum", False),),
    ScanKind.CUMPROD: (("prod_bwd", True),),
    ScanKind.LOGCUMSUMEXP: (("lse_bwd", True),),
    ScanKind.CUMMAX: (("max_bwd", True),),
    ScanKind.CUMMIN: (("max_bwd", True),),
}


def _strip_cases(element: ElementKind, dt: Any, kind: ScanKind) -> list[tuple[str, Any, int, str]]:
    """(what, view, axis, want) for the strip tests: ``want`` is the strip width the launch
    must take ("strip256" / "strip128") or "" where it must not take strips."""
    w128, w256 = 128 // element.itemsize, 256 // element.itemsize  # lines in a strip
    lanes = 16 // element.itemsize

    def make(shape: tuple[int, ...], seed: int) -> Any:
        return torch.from_numpy(make_input(kind, shape, seed)).to("cuda", dt)

    cases: list[tuple[str, Any, int, str]] = []
    # 256-byte strips (R = 64 positions a chunk, 8 chunks in flight): two positions, a
    # partial chunk, one chunk, one and a bit, more chunks than the ring holds
    for n in (2, 63, 64, 65, 700):
        cases.append((f"({n}, 3 strips of 256 B)", make((n, 3 * w256), 10 + n), 0, "strip256"))
    # 128-byte strips (lines a whole number of 128 but not of 256 bytes; R = 128)
    for n in (127, 128, 2500):
        cases.append((f"({n}, 3 strips of 128 B)", make((n, 3 * w128), 20 + n), 0, "strip128"))
    # rank 3: two outer dims, the scan along the middle one
    cases.append(("rank 3 (3, 300, 2 strips)", make((3, 300, 2 * w256), 31), 1, "strip256"))
    # rows padded: a slice of wider rows (axis stride a whole number of vectors)
    wide = make((400, 2 * w128 + 4 * lanes), 32)
    cases.append(("padded rows", wide[:, : 2 * w128], 0, "strip256"))
    # layouts that must not take strips
    flat = make((300 * 2 * w256 + 1,), 33)
    cases.append(("misaligned", flat[1:].view(300, 2 * w256), 0, ""))
    cases.append(("lines not whole strips", make((300, w128 + lanes), 34), 0, ""))
    every = make((300, 4 * w256), 35)
    cases.append(("every other line", every[:, ::2], 0, ""))
    return cases


@pytest.mark.parametrize("wide", [False, True], ids=["256", "512"])
@pytest.mark.parametrize("element", [ElementKind.BF16, ElementKind.F16], ids=lambda e: e.value)
def test_strip_indices_of_any_alignment(element: ElementKind, wide: bool,
                                        monkeypatch: Any) -> None:  # fmt: skip
    """cummax/cummin in strips of a 2-byte type store a lane's two int64 indices in one
    16-byte store where they are aligned, else one store each: indices in a view 8 bytes into
    its buffer (none aligned) and in rows of an odd stride (every other row aligned), both
    tie breaks and directions, with ties in x, in blocks of 256 and of 512 threads
    (STRIP_512_OPS): values and indices exact against the float64 reference, and nothing
    written outside the view."""
    n, lines = 300, 128 * 3
    x = torch.randint(-6, 7, (n, lines), device="cuda").to(torch_dtype(element))
    xn = _np64(x)
    seen = launched_kernels(monkeypatch)
    from baracuda.scan import _kernels as K

    monkeypatch.setattr(K, "SHORT", False)  # strips over short axes too
    monkeypatch.setattr(K, "STRIP_MIN_FILL", 0.0)
    monkeypatch.setattr(K, "STRIP_WIDE_FILL", 0.0)
    monkeypatch.setattr(K, "STRIP_MIN_FILL_OF", ())
    monkeypatch.setattr(K, "STRIP_512_OPS", (("max", (2,)),) if wide else ())
    want = "scan_max_strip512" if wide else "scan_max_strip"
    s = stream()
    for layout in ("8 bytes in", "odd row stride"):
        for kind in (ScanKind.CUMMAX, ScanKind.CUMMIN):
            for tie in (TieBreak.FIRST, TieBreak.LAST):
                for reverse in (False, True):
                    label = f"{layout} {kind.value} {tie.value} rev={reverse}"
                    buf = torch.full((n * (lines + 1) + 1,), -7, dtype=torch.int64, device="cuda")
                    if layout == "8 bytes in":
                        idx = buf[1:1 + n * lines].view(n, lines)
                    else:
                        idx = buf[:n * (lines + 1)].view(n, lines + 1)[:, :lines]
                    y = poisoned((n, lines), element)
                    desc = ScanDescriptor(kind, (n, lines), 0, element, reverse, tie)
                    plan = ScanPlan.select(s, desc)
                    ws = bc.Workspace.allocate(plan.workspace_size(), s)
                    seen.clear()
                    plan.run(s, ws, ScanArgs(x, y, idx))
                    torch.cuda.synchronize()
                    assert seen == [want], (label, seen)
                    rv, ri = R.scan(kind, xn, 0, reverse, tie)
                    np.testing.assert_array_equal(_np64(y), np.asarray(rv), err_msg=label)
                    np.testing.assert_array_equal(idx.cpu().numpy(), np.asarray(ri),
                                                  err_msg=label)  # fmt: skip
                    outside = torch.ones_like(buf, dtype=torch.bool)
                    outside[idx.storage_offset() + torch.arange(n, device="cuda")[:, None]
                            * idx.stride(0) + torch.arange(lines, device="cuda")] = False
                    assert bool((buf[outside] == -7).all()), label


@pytest.mark.parametrize("wide", [False, True], ids=["256", "512"])
@pytest.mark.parametrize("kind", list(ScanKind), ids=lambda k: k.value)
@pytest.mark.parametrize("element", ELEMENTS, ids=lambda e: e.value)
def test_scan_strips(kind: ScanKind, element: ElementKind, wide: bool, monkeypatch: Any) -> None:
    """Strided scans in strips of adjacent lines (STRIP, scan_strip; the fill thresholds set
    to 0 so that small tensors take them), every op forward and backward: 256- and 128-byte
    strips, axis lengths around a chunk and past the ring, a rank-3 tensor, padded rows; both
    directions, on poisoned outputs against the float64 reference (cummax/cummin's indices
    exactly) and against the same launch without strips; and layouts that must not take
    strips. Each backward launch takes strips where its operands allow: those that read the
    saved x where x's layout does, the others where the shape's contiguous layout does.
    ``wide``: the ops with a strip512 entry take it (STRIP_512_OPS)."""
    from baracuda.scan import _kernels as K

    monkeypatch.setattr(K, "SHORT", False)  # strips over short axes too
    assert K.STRIP
    op = _op_of(kind)
    if wide and op not in K.STRIP_512_ENTRY_OPS and not any(
            o in K.STRIP_512_ENTRY_OPS for o, _ in _BACKWARD_OPS[kind]):  # fmt: skip
        pytest.skip("no strip512 entry among this op's launches")
    monkeypatch.setattr(K, "STRIP_MIN_FILL", 0.0)
    monkeypatch.setattr(K, "STRIP_WIDE_FILL", 0.0)
    monkeypatch.setattr(K, "STRIP_MIN_FILL_OF", ())
    every = (2, 4, 8)  # every op with a strip entry, in every type
    monkeypatch.setattr(K, "STRIP_OPS", tuple((o, every) for o in K.STRIP_STAGED))
    monkeypatch.setattr(K, "STRIP_512_OPS",
                        tuple((o, every) for o in K.STRIP_512_ENTRY_OPS) if wide else ())
    seen = launched_kernels(monkeypatch)

    def strip_of(o: str) -> str:
        return f"scan_{o}_strip{'512' if wide and o in K.STRIP_512_ENTRY_OPS else ''}"

    strip = strip_of(op)
    for what, x, axis, want in _strip_cases(element, torch_dtype(element), kind):
        shape = tuple(x.shape)
        dense = K.Slot(1 << 20, tuple(torch.empty(0).new_empty(shape, device="meta").stride()))
        dense_ok = K._strip_width("sum", shape, axis, [dense, None, None, dense, None],
                                  element.itemsize, 132) > 0  # fmt: skip
        for reverse in (False, True):
            label = f"{what} {shape} axis={axis} rev={reverse}"
            seen.clear()
            y, idx = run_forward(kind, x, axis, reverse)
            assert (seen == [strip]) == bool(want), (label, seen)
            ref = R.scan(kind, _np64(x), axis, reverse)
            if kind in EXTREMA:
                np.testing.assert_array_equal(idx.cpu().numpy(), np.asarray(ref[1]),
                                              err_msg=label)  # fmt: skip
                ref = ref[0]
            assert_close(y, ref, element, scale=scale_of(kind, x.shape[axis]),
                         what=f"{op} {label}")  # fmt: skip
            seen.clear()
            check_op(kind, element, x, axis, reverse, label)  # forward and backward
            expect = [strip] if want else []
            expect += [strip_of(o) for o, reads_x in _BACKWARD_OPS[kind]
                       if dense_ok and (want or not reads_x)]  # fmt: skip
            if kind in EXTREMA and dense_ok and not want:  # two passes, the second in strips
                expect.append(strip_of("seg_bwd"))
            assert [k for k in seen if "_strip" in k] == expect, (label, seen)
            if want:
                # the width the host chose (the kernel reads it from params.width)
                slots = [K.Slot(x.data_ptr(), tuple(x.stride())), None, None,
                         K.Slot(y.data_ptr(), tuple(y.stride())), None]
                sw = K._strip_width(op, shape, axis, slots, element.itemsize, 132)
                assert f"strip{sw}" == want, (label, sw)
                monkeypatch.setattr(K, "STRIP", False)
                y_lb, idx_lb = run_forward(kind, x, axis, reverse)
                monkeypatch.setattr(K, "STRIP", True)
                assert_close(y, _np64(y_lb), element, scale=scale_of(kind, x.shape[axis]),
                             what=f"strips vs look-back {label}")  # fmt: skip
                if kind in EXTREMA:
                    assert torch.equal(idx, idx_lb), label


@pytest.mark.parametrize("kind", [ScanKind.CUMSUM, ScanKind.CUMPROD], ids=lambda k: k.value)
@pytest.mark.parametrize("element", [ElementKind.F32, ElementKind.BF16, ElementKind.F16],
                         ids=lambda e: e.value)  # fmt: skip
def test_scan_narrow_strips(kind: ScanKind, element: ElementKind, monkeypatch: Any) -> None:
    """Strided cumsum and cumprod (and the cumsum backward) in strips of 64 bytes
    (STRIP_NARROW_OPS) and, in 2-byte types, of 32 bytes (STRIP_32_OPS): several row groups
    a warp, each group's rows padded in shared memory. The fill thresholds at 0 so that small
    tensors take them: axis lengths around a chunk (256 and 512 positions) and past the ring,
    a rank-3 tensor, padded rows in and out; both directions, on poisoned outputs against the
    float64 reference and against the same launch without strips, and nothing written outside
    the output view. f64 and the ops outside those tables never take them."""
    from baracuda.scan import _kernels as K

    monkeypatch.setattr(K, "SHORT", False)  # strips over short axes too
    monkeypatch.setattr(K, "STRIP_MIN_FILL", 0.0)
    monkeypatch.setattr(K, "STRIP_WIDE_FILL", 0.0)
    monkeypatch.setattr(K, "STRIP_MIN_FILL_OF", ())
    seen = launched_kernels(monkeypatch)
    op = _op_of(kind)
    strip = f"scan_{op}_strip_narrow"
    dt = torch_dtype(element)
    lanes = 16 // element.itemsize

    def make(shape: tuple[int, ...], seed: int) -> Any:
        return torch.from_numpy(make_input(kind, shape, seed)).to("cuda", dt)

    cases: list[tuple[str, Any, int, int]] = []
    narrow32 = K._listed(K.STRIP_32_OPS, op, element.itemsize)
    for sw, lengths in ((64, (2, 255, 256, 257, 2300)), (32, (511, 512, 513, 4500))):
        if sw == 32 and not narrow32:
            continue
        w = sw // element.itemsize  # lines in a strip; 3 strips: not a whole 128 bytes
        for n in lengths:
            cases.append((f"({n}, 3 strips of {sw} B)", make((n, 3 * w), 50 + n), 0, sw))
    w64 = 64 // element.itemsize
    cases.append(("rank 3 (3, 700, 5 strips)", make((3, 700, 5 * w64), 51), 1, 64))
    wide = make((600, 3 * w64 + 4 * lanes), 52)
    cases.append(("padded rows", wide[:, : 3 * w64], 0, 64))
    s = stream()
    for what, x, axis, sw in cases:
        shape = tuple(x.shape)
        for reverse in (False, True):
            label = f"{what} {shape} axis={axis} rev={reverse}"
            # the output a view of padded rows in a poisoned buffer
            big = poisoned((*shape[:-1], shape[-1] + 2 * lanes), element)
            y = big[..., : shape[-1]]
            plan = ScanPlan.select(s, ScanDescriptor(kind, shape, axis, element, reverse))
            ws = bc.Workspace.allocate(plan.workspace_size(), s)
            seen.clear()
            plan.run(s, ws, ScanArgs(x, y, None))
            torch.cuda.synchronize()
            assert seen == [strip], (label, seen)
            slots = [K.Slot(x.data_ptr(), tuple(x.stride())), None, None,
                     K.Slot(y.data_ptr(), tuple(y.stride())), None]
            assert K._strip_width(op, shape, axis, slots, element.itemsize, 132) == sw, label
            assert bool(torch.isnan(big[..., shape[-1]:].float()).all()), label
            assert_close(y, R.scan(kind, _np64(x), axis, reverse), element,
                         scale=scale_of(kind, shape[axis]), what=f"{op} {label}")  # fmt: skip
            monkeypatch.setattr(K, "STRIP", False)
            y_other, _ = run_forward(kind, x, axis, reverse)
            monkeypatch.setattr(K, "STRIP", True)
            assert_close(y, _np64(y_other), element, scale=scale_of(kind, shape[axis]),
                         what=f"strips vs other kernels {label}")  # fmt: skip
            seen.clear()
            check_op(kind, element, x, axis, reverse, label)  # forward and backward
            if kind is ScanKind.CUMSUM:  # the backward is a cumsum the other way, in strips
                assert seen == [strip, strip], (label, seen)
    # f64 and ops outside STRIP_NARROW_OPS: no narrow strips (the lines are 3 strips of 64 B),
    # and no 32-byte strips outside STRIP_32_OPS
    others = [(8, "sum", 64), (element.itemsize, "max", 64), (element.itemsize, "lse", 64)]
    if not narrow32:
        others.append((element.itemsize, op, 32))
    for size, o, sw in others:
        lines = 3 * sw // size
        slots = [K.Slot(1 << 20, (lines, 1)), None, None, K.Slot(1 << 30, (lines, 1)), None]
        assert K._strip_width(o, (300, lines), 0, slots, size, 132) == 0, (o, size, sw)


@pytest.mark.parametrize("kind", [ScanKind.CUMSUM, ScanKind.CUMPROD], ids=lambda k: k.value)
@pytest.mark.parametrize("element", [ElementKind.F32, ElementKind.BF16, ElementKind.F16],
                         ids=lambda e: e.value)  # fmt: skip
def test_scan_strips_two_an_sm(kind: ScanKind, element: ElementKind, monkeypatch: Any) -> None:
    """Strided cumsum and cumprod (and the cumsum backward) over strips at least two an SM
    take scan_<op>_strip6 (STRIP_MANY_OPS: 6 chunks in flight, two blocks an SM): axis
    lengths around a chunk and past the ring, a rank-3 tensor, both directions, on poisoned
    outputs against the float64 reference and against the same launch on scan_<op>_strip."""
    from baracuda._cuda.device import device_info
    from baracuda.scan import _kernels as K

    monkeypatch.setattr(K, "SHORT", False)  # strips over short axes too
    sm = device_info(torch.cuda.current_device()).sm_count
    seen = launched_kernels(monkeypatch)
    op = _op_of(kind)
    dt = torch_dtype(element)
    lines = 64 * (K.STRIP_MANY_PER_SM * sm + 1)  # 64 elements a strip (256 B f32, 128 B 2-byte)
    r = K.STRIP_CHUNK // (64 * element.itemsize)  # positions a chunk

    def make(shape: tuple[int, ...], seed: int) -> Any:
        return torch.from_numpy(make_input(kind, shape, seed)).to("cuda", dt)

    cases = [(f"({n}, {lines})", make((n, lines), 60 + n), 0)
             for n in (2, r - 1, r + 1, K.STRIP_MANY_STAGES * r + 5)]  # fmt: skip
    cases.append((f"rank 3 (2, 300, {lines})", make((2, 300, lines), 61), 1))
    for what, x, axis in cases:
        for reverse in (False, True):
            label = f"{what} axis={axis} rev={reverse}"
            seen.clear()
            y, _ = run_forward(kind, x, axis, reverse)
            assert seen == [f"scan_{op}_strip6"], (label, seen)
            assert_close(y, R.scan(kind, _np64(x), axis, reverse), element,
                         scale=scale_of(kind, x.shape[axis]), what=f"{op} {label}")  # fmt: skip
            monkeypatch.setattr(K, "STRIP_MANY_OPS", ())
            seen.clear()
            y_one, _ = run_forward(kind, x, axis, reverse)
            assert seen == [f"scan_{op}_strip"], (label, seen)
            monkeypatch.setattr(K, "STRIP_MANY_OPS", ((op, (2, 4)),))
            assert torch.equal(y, y_one), label  # the same sums in the same order
            seen.clear()
            check_op(kind, element, x, axis, reverse, label)
            if kind is ScanKind.CUMSUM:
                assert seen == ["scan_sum_strip6"] * 2, (label, seen)


# the ops of each op's launches over short strided axes (scan_short), forward and backward
# (the cummax/cummin backward in two passes there: winner flags, then the segmented sums), and
# the backward's ops that read the saved x (the others read dy and y, laid out densely here)
_SHORT_OPS: dict[ScanKind, tuple[tuple[str, ...], tuple[str, ...]]] = {
    ScanKind.CUMSUM: (("sum",), ("sum",)),
    ScanKind.CUMPROD: (("prod",), ("prod_bwd",)),
    ScanKind.LOGCUMSUMEXP: (("lse",), ("lse_bwd",)),
    ScanKind.CUMMAX: (("max",), ("maxflag", "seg_bwd")),
    ScanKind.CUMMIN: (("max",), ("maxflag", "seg_bwd")),
}
_SHORT_READS_X = ("prod_bwd", "lse_bwd", "maxflag")


@pytest.mark.parametrize("limit", [0, 203], ids=["default", "203"])
@pytest.mark.parametrize("kind", list(ScanKind), ids=lambda k: k.value)
@pytest.mark.parametrize("element", ELEMENTS, ids=lambda e: e.value)
def test_scan_short_axes(kind: ScanKind, element: ElementKind, limit: int,
                         monkeypatch: Any) -> None:  # fmt: skip
    """Strided axes of 2 to SHORT_MAX positions take scan_short, forward and every backward
    launch: a word of lines a thread where the lines come in 16-byte vectors, else a line
    (short1: lines that are not whole vectors, a misaligned view, every other line), NV words a
    thread where short_kind says so (over few positions, outer dims that coalesce to one, not
    where they do not: rank 3 along dim 1); axis lengths 2, 3, 4, 7 and SHORT_MAX,
    odd numbers of vectors, rank 3 along dims 0 and 1, padded rows in and out; both
    directions, on poisoned outputs against the float64 reference (cummax/cummin's indices
    exactly, also into a view that is not 16-byte aligned and into every other element of a
    buffer, an element at a time), the backward again with AUX moved an element at a time,
    nothing written outside the output view, and against the same launch without it. One
    position and a longer axis take other kernels. ``limit``: SHORT_MAX set to it (203: many
    batches, the last one partial, and cummax/cummin's lines one position a load);
    cummax/cummin also over more lines than the SMs hold at once (SHORT1_RESIDENT)."""
    from baracuda._cuda.device import device_info
    from baracuda.scan import _kernels as K

    if limit:
        monkeypatch.setattr(K, "SHORT_MAX", limit)
        # cummax/cummin's lines one position a load over more than 4 positions (short1l1)
        monkeypatch.setattr(K, "SHORT1_RESIDENT", {"max": ((4, 1 << 30, "short1l"),
                                                           (1 << 30, 2048, "short1l1"))})
    seen = launched_kernels(monkeypatch)
    sm = device_info(torch.cuda.current_device()).sm_count
    dt = torch_dtype(element)
    lanes = 16 // element.itemsize
    m = K.SHORT_MAX
    fwd_ops, bwd_ops = _SHORT_OPS[kind]

    def make(shape: tuple[int, ...], seed: int) -> Any:
        return torch.from_numpy(make_input(kind, shape, seed)).to("cuda", dt)

    padded = make((10, 9 * lanes), 71)
    # (what, x, axis, the launches: "vector" every one in words of lines, "x" those that read
    # x a line a thread, "lines" every one a line a thread, "" none of them short)
    cases: list[tuple[str, Any, int, str]] = [
        (f"({n}, {v} vectors)", make((n, v * lanes), 70 + n), 0, "vector")
        for n, v in ((2, 37), (3, 11), (4, 13), (7, 65), (m, 9))
    ]
    cases += [
        ("rank 3 along dim 0", make((4, 5, 3 * lanes), 72), 0, "vector"),
        ("rank 3 along dim 1", make((6, 9, 2 * lanes), 73), 1, "vector"),
        ("rank 3 along dim 1, 2 positions", make((3, 2, 5 * lanes), 78), 1, "vector"),
        ("rank 3 along dim 1, 4 positions", make((3, 4, 3 * lanes), 79), 1, "vector"),
        ("padded rows", padded[:, : 7 * lanes], 0, "vector"),
        ("lines not whole vectors", make((5, 3 * lanes + 1), 74), 0, "lines"),
        ("lines not whole vectors, 2 positions", make((2, 7 * lanes + 3), 77), 0, "lines"),
        ("lines not whole vectors, 3 positions", make((3, 300 * lanes + 5), 80), 0, "lines"),
        ("lines not whole vectors, 4 positions", make((4, 41 * lanes + 7), 81), 0, "lines"),
        ("lines not whole vectors, 8 positions", make((8, 5 * lanes + 3), 83), 0, "lines"),
        (f"lines not whole vectors, {m} positions", make((m, 2 * lanes + 1), 84), 0, "lines"),
        ("misaligned view", padded[:, 1 : 1 + 4 * lanes], 0, "x"),
        ("every other line", padded[:, ::2], 0, "lines"),  # (dy: lines not whole vectors)
        ("one position", make((1, 5 * lanes), 76), 0, ""),
        (f"({m + 1}, 4 vectors)", make((m + 1, 4 * lanes), 75), 0, ""),
    ]
    if kind in EXTREMA:  # more lines than SHORT1_RESIDENT's 2048 an SM: short1lw
        wave = 2048 * sm
        cases.append(("lines not whole vectors, past one wave", make((8, wave + 2 * lanes + 1), 85),
                      0, "lines"))  # fmt: skip
    taken: set[str] = set()  # the kernels of every short launch checked
    for what, x, axis, want in cases:
        shape = tuple(x.shape)
        n = shape[axis]

        dense = torch.empty(shape, device="meta").stride()

        def one_dim(*strides: tuple[int, ...], shape: tuple[int, ...] = shape,
                    axis: int = axis, dense: tuple[int, ...] = dense) -> bool:  # fmt: skip
            """Whether the outer dims of these operands and dense ones coalesce to one (NV
            words a thread)."""
            return len(split_axis(shape, [dense, *strides], axis)[0]) == 1

        def name(o: str, lines: bool, one: bool, n: int = n, shape: tuple[int, ...] = shape) -> str:
            return f"scan_{o}_{K.short_kind(o, n, not lines, one, math.prod(shape) // n / sm)}"

        # check_op's launches: outputs, dy and y dense
        fwd = [name(o, want in ("x", "lines"), one_dim(x.stride())) for o in fwd_ops]
        bwd = [name(o, want == "lines" or (want == "x" and o in _SHORT_READS_X),
                    one_dim(x.stride()) if o in _SHORT_READS_X else one_dim())
               for o in bwd_ops]  # fmt: skip
        for reverse in (False, True):
            label = f"{what} {shape} axis={axis} rev={reverse}"
            # the output a view of padded rows in a poisoned buffer
            big = poisoned((*shape[:-1], shape[-1] + 2 * lanes), element)
            y = big[..., : shape[-1]]
            idx = None
            if kind in EXTREMA:
                idx = torch.full(tuple(shape), -7, dtype=torch.int64, device="cuda")
            s = stream()
            plan = ScanPlan.select(s, ScanDescriptor(kind, shape, axis, element, reverse))
            ws = bc.Workspace.allocate(plan.workspace_size(), s)
            seen.clear()
            plan.run(s, ws, ScanArgs(x, y, idx))
            torch.cuda.synchronize()
            # x into the padded output
            fwd_padded = [name(o, want in ("x", "lines"), one_dim(x.stride(), y.stride()))
                          for o in fwd_ops]  # fmt: skip
            assert (seen == fwd_padded) == bool(want), (label, seen, fwd_padded)
            assert bool(torch.isnan(big[..., shape[-1]:].float()).all()), label
            ref = R.scan(kind, _np64(x), axis, reverse)
            if kind in EXTREMA:
                np.testing.assert_array_equal(idx.cpu().numpy(), np.asarray(ref[1]),
                                              err_msg=label)  # fmt: skip
                # indices 8 bytes past a 16-byte boundary: written an element at a time
                buf = torch.full((x.numel() + 1,), -7, dtype=torch.int64, device="cuda")
                idx8 = buf[1:].view(shape)
                plan.run(s, ws, ScanArgs(x, y, idx8))
                torch.cuda.synchronize()
                assert torch.equal(idx8, idx) and int(buf[0]) == -7, label
                # indices into every other element (AUX's lines not adjacent): one at a time
                buf2 = torch.full((*shape[:-1], 2 * shape[-1]), -7, dtype=torch.int64,
                                  device="cuda")  # fmt: skip
                idx2 = buf2[..., ::2]
                plan.run(s, ws, ScanArgs(x, y, idx2))
                torch.cuda.synchronize()
                assert torch.equal(idx2, idx), label
                assert bool((buf2[..., 1::2] == -7).all()), label
                ref = ref[0]
            assert_close(y, ref, element, scale=scale_of(kind, n), what=f"{kind.value} {label}")
            if want:
                monkeypatch.setattr(K, "SHORT", False)
                y_other, idx_other = run_forward(kind, x, axis, reverse)
                monkeypatch.setattr(K, "SHORT", True)
                assert_close(y, _np64(y_other), element, scale=scale_of(kind, n),
                             what=f"short vs other kernels {label}")  # fmt: skip
                if kind in EXTREMA:
                    assert torch.equal(idx, idx_other), label
            seen.clear()
            check_op(kind, element, x, axis, reverse, label)  # forward and backward
            if want:
                assert seen == fwd + bwd, (label, seen, fwd + bwd)
                taken.update(seen)
                if kind in EXTREMA:  # the winner flags an element at a time
                    with monkeypatch.context() as mp:
                        mp.setattr(K, "_vector_aux", lambda *a: False)
                        check_op(kind, element, x, axis, reverse, f"{label}, AUX by element")
    if kind in EXTREMA:  # each kind of a line a thread was checked above
        lines = {"scan_max_short1l", "scan_max_short1lw"}
        if limit:
            lines.add("scan_max_short1l1")
        assert lines <= taken, (lines, taken)


@pytest.mark.parametrize(("element", "shape", "width"), [
    (ElementKind.BF16, (8192, 4096), 64),
    (ElementKind.F16, (4096, 4096), 64),
    (ElementKind.F32, (8192, 2048), 64),
    (ElementKind.BF16, (16384, 2048), 32),
    (ElementKind.F32, (16384, 1024), 0),
], ids=lambda v: (v.value if hasattr(v, "value")
                  else "x".join(map(str, v)) if isinstance(v, tuple) else f"w{v}"))  # fmt: skip
def test_narrow_strips_at_default_thresholds(element: ElementKind, shape: tuple[int, int],
                                             width: int, monkeypatch: Any) -> None:  # fmt: skip
    """At the default thresholds, cumsum and cumprod along dim 0 of shapes whose 128-byte
    strips are too few take narrower ones exactly where _strip_width says (on 132 SMs the
    given ``width``; 0: f32 takes no 32-byte strips), forward and the cumsum backward, both
    directions, against the float64 reference."""
    from baracuda._cuda.device import device_info
    from baracuda.scan import _kernels as K

    seen = launched_kernels(monkeypatch)
    sm = device_info(torch.cuda.current_device()).sm_count
    dense = K.Slot(1 << 20, (shape[1], 1))
    slots = [dense, None, None, dense, None]
    for kind in (ScanKind.CUMSUM, ScanKind.CUMPROD):
        op = _op_of(kind)
        sw = K._strip_width(op, shape, 0, slots, element.itemsize, sm)
        if sm == 132:
            assert sw == width, (op, sw)
        x = torch.from_numpy(make_input(kind, shape, 43)).to("cuda", torch_dtype(element))
        for reverse in (False, True):
            seen.clear()
            check_op(kind, element, x, 0, reverse, f"{op} {shape} dim 0 rev={reverse}")
            narrow = f"scan_{op}_strip_narrow"
            assert (seen[0] == narrow) == (0 < sw < 128), (sw, seen)
            if kind is ScanKind.CUMSUM:  # its backward is a cumsum: the same launch
                assert seen[-1] == seen[0], seen


@pytest.mark.parametrize("kind", list(ScanKind), ids=lambda k: k.value)
@pytest.mark.parametrize("element", [ElementKind.F32, ElementKind.BF16], ids=lambda e: e.value)
def test_strips_on_the_benchmark_shape(kind: ScanKind, element: ElementKind,
                                       monkeypatch: Any) -> None:  # fmt: skip
    """Every op over 4096 x 8192 along dim 0 (the benchmark's case) takes strips at the
    default thresholds on this card (256-byte strips in f32, 128 in bf16 on an H100), forward
    and backward, for the ops of STRIP_OPS, and matches the float64 reference in both
    directions."""
    from baracuda.scan import _kernels as K

    seen = launched_kernels(monkeypatch)
    x = torch.from_numpy(make_input(kind, (4096, 8192), 40)).to("cuda", torch_dtype(element))
    ops = [_op_of(kind)] + [o for o, _ in _BACKWARD_OPS[kind]]
    for reverse in (False, True):
        seen.clear()
        check_op(kind, element, x, 0, reverse, f"4096x8192 dim 0 rev={reverse}")
        size = element.itemsize
        want = [f"scan_{o}_strip{'512' if K._listed(K.STRIP_512_OPS, o, size) else ''}"
                for o in ops if K.STRIP and K._listed(K.STRIP_OPS, o, size)]  # fmt: skip
        assert [k for k in seen if "_strip" in k] == want, seen


@pytest.mark.parametrize(("kind", "element", "shape"), [
    (ScanKind.CUMMAX, ElementKind.BF16, (8192, 4096)),
    (ScanKind.CUMMAX, ElementKind.F32, (16384, 1024)),
    (ScanKind.CUMMAX, ElementKind.F64, (16384, 1024)),
    (ScanKind.CUMPROD, ElementKind.BF16, (16384, 2048)),
    (ScanKind.LOGCUMSUMEXP, ElementKind.BF16, (8192, 4096)),
], ids=lambda v: v.value if hasattr(v, "value") else "x".join(map(str, v)))  # fmt: skip
def test_strips_over_fewer_lines(kind: ScanKind, element: ElementKind, shape: tuple[int, int],
                                 monkeypatch: Any) -> None:  # fmt: skip
    """At the default thresholds on this card, each op takes strips along dim 0 of a shape
    with few lines (32 or 64 strips of 128 bytes on 132 SMs) exactly where _strip_width says,
    which follows STRIP_MIN_FILL_OF for the ops it lists (here the cummax backward in bf16,
    f32 and f64, the cumprod backward, bf16 cummax and the bf16 logcumsumexp backward) and
    gives the forward cumprod narrower strips (STRIP_NARROW_OPS), and at least one of each
    case's launches does; forward and backward against the float64 reference."""
    from baracuda._cuda.device import device_info
    from baracuda.scan import _kernels as K

    seen = launched_kernels(monkeypatch)
    sm = device_info(torch.cuda.current_device()).sm_count
    x = torch.from_numpy(make_input(kind, shape, 41)).to("cuda", torch_dtype(element))
    check_op(kind, element, x, 0, False, f"{shape} dim 0")
    dense = K.Slot(1 << 20, (shape[1], 1))
    size = element.itemsize
    want = []
    for o in [_op_of(kind)] + [o for o, _ in _BACKWARD_OPS[kind]]:
        staged = K.STRIP_STAGED[o]
        slots = [dense if k < staged else None for k in range(3)] + [dense, None]
        sw = K._strip_width(o, shape, 0, slots, size, sm)
        if sw:
            wide = K._listed(K.STRIP_512_OPS, o, size)
            want.append(f"scan_{o}_strip{'512' if wide else '_narrow' if sw < 128 else ''}")
    assert want and [k for k in seen if "_strip" in k] == want, (want, seen)


def test_cupy_and_jax_arrays_on_strips() -> None:
    """CuPy f32 and JAX bf16 arrays through the functional API on strips (8192 lines along
    dim 0): results come back as the caller's type and match the float64 reference."""
    cupy = pytest.importorskip("cupy")
    rng = np.random.default_rng(6)
    x64 = rng.uniform(-1.0, 1.0, (300, 8192)) + 0.25
    xc = cupy.asarray(x64, dtype=cupy.float32)
    for reverse in (False, True):
        y = bc.cumsum(xc, 0, reverse)
        assert isinstance(y, cupy.ndarray)
        assert_close(y, R.scan(ScanKind.CUMSUM, _np64(xc), 0, reverse), ElementKind.F32,
                     scale=scale_of(ScanKind.CUMSUM, 300), what=f"cupy strips rev={reverse}")
    yl = bc.logcumsumexp(xc, 0)
    assert_close(yl, R.scan(ScanKind.LOGCUMSUMEXP, _np64(xc), 0, False), ElementKind.F32,
                 scale=scale_of(ScanKind.LOGCUMSUMEXP, 300), what="cupy logcumsumexp lbcols")
    jax = pytest.importorskip("jax")
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("jax has no GPU backend here")
    jnp = jax.numpy
    xj = jnp.asarray(x64, dtype=jnp.bfloat16)
    xp = jnp.asarray(make_input(ScanKind.CUMPROD, (300, 8192), 41), dtype=jnp.bfloat16)
    yj = bc.cumprod(xp, 0)
    assert type(yj).__module__.startswith("jax")
    assert_close(yj, R.scan(ScanKind.CUMPROD, _np64(xp), 0, False), ElementKind.BF16,
                 scale=scale_of(ScanKind.CUMPROD, 300), what="jax cumprod strips")  # fmt: skip
    yj = bc.cumsum(xj, 0)
    assert_close(yj, R.scan(ScanKind.CUMSUM, _np64(xj), 0, False), ElementKind.BF16,
                 scale=scale_of(ScanKind.CUMSUM, 300), what="jax cumsum strips")


def _ring_cases(element: ElementKind, dt: Any, kind: ScanKind, chunk_bytes: int = 16384,
                seed: int = 50) -> list[tuple[str, Any, bool]]:  # fmt: skip
    """(what, view, ring) for the ring tests, the scan along the last axis, chunks of
    ``chunk_bytes`` an operand: ``ring`` says whether the launch must take the ring."""
    lanes = 16 // element.itemsize
    chunk = chunk_bytes // element.itemsize  # positions a chunk
    seeds = iter(range(seed, seed + 20))

    def make(shape: tuple[int, ...], seed: int) -> Any:
        return torch.from_numpy(make_input(kind, shape, seed)).to("cuda", dt)

    cases: list[tuple[str, Any, bool]] = [
        ("one chunk", make((5, chunk), next(seeds)), True),
        ("two chunks and a partial one", make((3, 2 * chunk + 3 * lanes), next(seeds)), True),
        ("a partial second chunk", make((4, chunk + lanes), next(seeds)), True),
        # more chunks than the ring holds, in one row and over many rows a block
        ("rows of 20 chunks and a bit", make((2, 20 * chunk + 5 * lanes), next(seeds)), True),
        ("many rows a block", make((1000, chunk + lanes), next(seeds)), True),
        ("rank 3", make((2, 3, chunk + 5 * lanes), next(seeds)), True),  # outer dims coalesce
    ]
    wide = make((3, chunk + 8 * lanes), next(seeds))
    cases.append(("padded rows", wide[:, : chunk + 2 * lanes], True))
    cut = make((2, 4, chunk + lanes), next(seeds))
    cases.append(("outer dims that do not coalesce", cut[:, :3], False))
    flat = make((3 * (chunk + lanes) + 1,), next(seeds))
    cases.append(("misaligned", flat[1:].view(3, chunk + lanes), False))
    cases.append(("not whole vectors", make((3, chunk + 1), next(seeds)), False))
    cases.append(("shorter than a chunk", make((3, chunk - lanes), next(seeds)), False))
    return cases


@pytest.mark.parametrize("kind", [ScanKind.CUMSUM, ScanKind.CUMPROD], ids=lambda k: k.value)
@pytest.mark.parametrize("element", ELEMENTS, ids=lambda e: e.value)
def test_scan_ring_rows(kind: ScanKind, element: ElementKind, monkeypatch: Any) -> None:
    """Contiguous rows through the block ring (RING_ROWS, scan_ring; the balance threshold set
    to 0 so that a few rows take it): one chunk a row, whole and partial last chunks, more
    chunks than the ring holds (in a row, and over many rows a block), a rank-3 tensor,
    padded rows; both directions, forward and backward (cumsum's backward takes the ring too),
    on poisoned outputs against the float64 reference and the same launch without the ring;
    and layouts that must not take it."""
    from baracuda.scan import _kernels as K

    assert K.RING_ROWS
    monkeypatch.setattr(K, "RING_MIN_BALANCE", 0.0)
    monkeypatch.setattr(K, "ROWREG", False)  # rows of one chunk: the ring, not registers
    seen = launched_kernels(monkeypatch)
    ring = f"scan_{_op_of(kind)}_ring"
    for what, x, want in _ring_cases(element, torch_dtype(element), kind):
        for reverse in (False, True):
            label = f"{what} {tuple(x.shape)} rev={reverse}"
            seen.clear()
            y, _ = run_forward(kind, x, -1, reverse)
            assert (seen == [ring]) == want, (label, seen)
            assert_close(y, R.scan(kind, _np64(x), -1, reverse), element,
                         scale=scale_of(kind, x.shape[-1]), what=f"ring {label}")  # fmt: skip
            seen.clear()
            check_op(kind, element, x, -1, reverse, label)  # forward and backward
            if kind is ScanKind.CUMSUM:  # the backward: a reverse cumsum of the contiguous dy
                shape = tuple(x.shape)
                dense = K.Slot(1 << 20, tuple(torch.empty(0).new_empty(shape, device="meta")
                                              .stride()))  # fmt: skip
                ops = [dense, None, None, dense, None]
                params = K._params(shape, x.dim() - 1, ops, (0, 3), element.itemsize, "rows",
                                   True, 0)  # fmt: skip
                back = K._ring_rows("sum", params, ops, element.itemsize)
                assert seen.count(ring) == want + back, (label, seen)
            if want:
                monkeypatch.setattr(K, "RING_ROWS", False)
                y_plain, _ = run_forward(kind, x, -1, reverse)
                monkeypatch.setattr(K, "RING_ROWS", True)
                assert_close(y, _np64(y_plain), element, scale=scale_of(kind, x.shape[-1]),
                             what=f"ring vs warp rows {label}")  # fmt: skip


def _rowreg_cases(element: ElementKind, kind: ScanKind) -> list[tuple[str, Any, str | None]]:
    """(what, view, kernel) for rows held in registers along the last axis: ``kernel`` the
    rowreg entry the launch must take, or None where it must not take one."""
    dt = torch_dtype(element)
    lanes = 16 // element.itemsize
    kib = 1024 // element.itemsize  # positions a KiB
    seeds = iter(range(140, 170))
    op = _op_of(kind)

    def make(shape: tuple[int, ...]) -> Any:
        return torch.from_numpy(make_input(kind, shape, next(seeds))).to("cuda", dt)

    r8 = f"scan_{op}_rowreg8"
    cases: list[tuple[str, Any, str | None]] = [
        ("4 KiB and a vector", make((7, 4 * kib + lanes)), f"scan_{op}_rowreg2"),
        ("8 KiB", make((9, 8 * kib)), f"scan_{op}_rowreg2"),
        ("8 KiB and a vector", make((5, 8 * kib + lanes)), f"scan_{op}_rowreg4"),
        ("16 KiB less 5 vectors", make((300, 16 * kib - 5 * lanes)), f"scan_{op}_rowreg4"),
        ("16 KiB, few rows", make((3, 16 * kib)), f"scan_{op}_rowreg4"),  # no ring: too few
        ("rank 3", make((2, 3, 12 * kib + 3 * lanes)), f"scan_{op}_rowreg4"),
        ("4 KiB", make((6, 4 * kib)), None),
        ("16 KiB and a vector", make((4, 16 * kib + lanes)), r8),
        ("32 KiB, few rows", make((3, 32 * kib)), r8),
        ("24 KiB less a vector", make((70, 24 * kib - lanes)), r8),
        ("32 KiB and a vector", make((4, 32 * kib + lanes)), None),
        ("not whole vectors", make((3, 10 * kib + 1)), None),
        # more rows than the SMs hold blocks: each block asks L2 for a row further on
        ("many rows of 2 vectors a lane", make((1500, 6 * kib)), f"scan_{op}_rowreg2"),
        ("many rows of 4 vectors a lane", make((1100, 14 * kib + lanes)), f"scan_{op}_rowreg4"),
        ("many rows of 8 vectors a lane", make((700, 20 * kib)), r8),
    ]
    wide = make((4, 16 * kib))
    cases.append(("padded rows", wide[:, : 10 * kib + lanes], f"scan_{op}_rowreg4"))
    tall = make((1300, 16 * kib))
    cases.append(("many padded rows", tall[:, : 12 * kib], f"scan_{op}_rowreg4"))
    cases.append(("every other row", tall[::2, : 8 * kib + lanes], f"scan_{op}_rowreg4"))
    cut = make((2, 4, 6 * kib))
    cases.append(("outer dims that do not coalesce", cut[:, :3], None))
    flat = make((3 * 6 * kib + 1,))
    cases.append(("misaligned", flat[1:].view(3, 6 * kib), None))
    return cases


def _extrema_rows(kind: ScanKind, x: Any, reverse: bool, label: str, want: str,
                  seen: list[str]) -> None:  # fmt: skip
    """cummax/cummin over rows in registers (each launch taking ``want``): NaNs (they stick,
    the index the latest NaN) and both tie breaks, against the float64 reference; the values
    alone (no indices) equal the values of the launch with indices."""
    el = ElementKind.parse(x.dtype)
    rows = x.clone().reshape(-1, x.shape[-1])  # contiguous, rows one stride apart
    rows[0, 5] = float("nan")  # near the start: every later output of the row NaN
    if rows.shape[0] > 1:
        rows[1, 3::97] = float("nan")
        rows[1, -1] = float("nan")
    if rows.shape[0] > 2:
        rows[2] = 1.5  # every position a tie
    xs = rows.reshape(x.shape)
    for tie in (TieBreak.FIRST, TieBreak.LAST):
        seen.clear()
        y, idx = run_forward(kind, xs, -1, reverse, tie)
        assert seen == [want], (label, seen)
        v, r = R.scan(kind, _np64(xs), -1, reverse, tie)
        assert_close(y, v, el, what=f"{label} NaN {tie.value}")
        np.testing.assert_array_equal(idx.cpu().numpy(), np.asarray(r), err_msg=f"{label} {tie}")
    s = stream()
    plan = ScanPlan.select(s, ScanDescriptor(kind, tuple(x.shape), -1, el, reverse))
    y = poisoned(tuple(x.shape), el)
    seen.clear()
    plan.run(s, bc.Workspace.allocate(plan.workspace_size(), s), ScanArgs(x, y))
    torch.cuda.synchronize()
    assert seen == [want], (label, "values alone", seen)
    y_idx, _ = run_forward(kind, x, -1, reverse)
    assert torch.equal(y, y_idx), f"{label}: values alone differ"


@pytest.mark.parametrize("kind", [ScanKind.CUMSUM, ScanKind.CUMPROD, ScanKind.LOGCUMSUMEXP,
                                  *EXTREMA], ids=lambda k: k.value)  # fmt: skip
@pytest.mark.parametrize("element", ELEMENTS, ids=lambda e: e.value)
def test_scan_rows_in_registers(kind: ScanKind, element: ElementKind, monkeypatch: Any) -> None:
    """Contiguous rows of more than 4 KiB and at most 32 KiB held in registers, a block a row
    (ROWREG, scan_rowreg): rows of 2, 4 and 8 vectors a lane, whole and with fewer vectors, few
    rows and more rows than the SMs hold blocks (each block asks L2 for a row further on:
    ROWREG_PREFETCH), a rank-3 tensor, padded rows; both directions, forward and backward (the
    cumsum backward is a reverse cumsum of dy: rowreg too), on poisoned outputs against the
    float64 reference, bit for bit repeatable, and within rounding of the same launch without
    ROWREG (cummax/cummin: the same values and indices); and layouts that must not take it.
    Rows of 16 and 32 KiB take the registers where the ring would take them too, longer ones
    the ring (cummax/cummin: not the registers). cummax/cummin take rows of more than 8 KiB
    (ROWREG_MAX_MIN_BYTES), not 2-byte rows of up to 16 KiB in reverse, and are checked with
    NaNs, both tie breaks, and without indices too (``_extrema_rows``). logcumsumexp takes
    them in f64 alone (by default many rows of at least 8 KiB, here every shape: ROWREG_LSE_*;
    its special values and lanes of both ways on every kernel: ``_lse_paths``)."""
    from baracuda.scan import _kernels as K

    assert K.ROWREG
    if kind is ScanKind.LOGCUMSUMEXP:
        for key, value in _ROWREG_LSE_ANY.items():
            monkeypatch.setattr(K, key, value)
    seen = launched_kernels(monkeypatch)
    extrema = kind in EXTREMA
    for what, x, want in _rowreg_cases(element, kind):
        for reverse in (False, True):
            label = f"rowreg {what} {tuple(x.shape)} rev={reverse}"
            expect = want
            if extrema and want and (want.endswith("rowreg2") or (
                    reverse and element.itemsize == 2 and want.endswith("rowreg4"))):  # fmt: skip
                expect = None  # rows of 8 KiB or less; 2-byte ones of 16 KiB in reverse
            if kind is ScanKind.LOGCUMSUMEXP and element.itemsize not in K.ROWREG_LSE_ITEMSIZES:
                expect = None
            seen.clear()
            y, idx = run_forward(kind, x, -1, reverse)
            got = [k for k in seen if "rowreg" in k]
            assert got == ([expect] if expect else []), (label, seen)
            sc = scale_of(kind, x.shape[-1])
            ref = R.scan(kind, _np64(x), -1, reverse)
            if extrema:
                np.testing.assert_array_equal(idx.cpu().numpy(), np.asarray(ref[1]), err_msg=label)
                ref = ref[0]
            assert_close(y, ref, element, scale=sc, what=label)
            again, idx2 = run_forward(kind, x, -1, reverse)
            assert torch.equal(y, again), f"{label}: a second run differs"
            check_op(kind, element, x, -1, reverse, label)  # forward and backward
            if expect:
                monkeypatch.setattr(K, "ROWREG", False)
                seen.clear()
                y_plain, idx_plain = run_forward(kind, x, -1, reverse)
                monkeypatch.setattr(K, "ROWREG", True)
                assert not any("rowreg" in k for k in seen), seen
                assert_close(y, _np64(y_plain), element, scale=sc, what=f"{label} vs without")
                if extrema:
                    assert torch.equal(y, y_plain) and torch.equal(idx, idx_plain), label
                    assert torch.equal(idx, idx2), f"{label}: a second run's indices differ"
                    _extrema_rows(kind, x, reverse, label, expect, seen)
    lanes = 16 // element.itemsize
    for kib, kernel in ((16, "rowreg4"), (32, "rowreg8"), (32 + 16 / 1024, "ring")):
        n = int(kib * 1024) // element.itemsize
        x = torch.from_numpy(make_input(kind, (1200, n), 171)).to("cuda", torch_dtype(element))
        assert n % lanes == 0
        seen.clear()
        y, idx = run_forward(kind, x, -1, False)
        lse = kind is ScanKind.LOGCUMSUMEXP
        if (extrema or lse) and kernel == "ring":  # no ring, nor registers
            assert len(seen) == 1 and "rowreg" not in seen[0], seen
        elif lse and element.itemsize not in K.ROWREG_LSE_ITEMSIZES:  # warp rows
            assert seen and not any("rowreg" in k for k in seen), seen
        else:
            assert seen == [f"scan_{_op_of(kind)}_{kernel}"], seen
        ref = R.scan(kind, _np64(x), -1, False)
        if extrema:
            np.testing.assert_array_equal(idx.cpu().numpy(), np.asarray(ref[1]))
            ref = ref[0]
        assert_close(y, ref, element, scale=scale_of(kind, n),
                     what=f"1200 rows of {kib} KiB")  # fmt: skip


def _ring_backward_cases(element: ElementKind, kind: ScanKind) -> list[tuple[str, Any, bool]]:
    """(what, x, ring) for the ring of the cumprod/logcumsumexp backward along the last axis
    (``ring``: whether the backward must take it): the forward ring's cases with the
    backward's chunks, and special values at and around the chunk boundaries (cumprod: zeros,
    where the neighbour comes from the next chunk; logcumsumexp: -inf runs, huge and tiny
    exps)."""
    from baracuda.scan import _kernels as K

    dt = torch_dtype(element)
    cases = _ring_cases(element, dt, kind, K.RING_BACKWARD_CHUNK, 70)
    lanes = 16 // element.itemsize
    chunk = K.RING_BACKWARD_CHUNK // element.itemsize  # positions of an operand a chunk
    n = 3 * chunk + lanes
    sp = torch.from_numpy(make_input(kind, (6, n), 90)).to("cuda", dt)
    if kind is ScanKind.CUMPROD:
        sp[0, chunk - 1] = 0  # the last of a chunk
        sp[1, chunk] = 0  # the first of the next
        sp[2, [chunk - 1, chunk, 2 * chunk, 2 * chunk + 1, n - 1]] = 0
        sp[3, :] = 0
        sp[4, 0] = 0
        sp[5, chunk - lanes : chunk + lanes] = 0
    else:
        inf = float("inf")
        sp *= 3
        sp[0, chunk - 4 : chunk + 4] = -inf  # a -inf run across a chunk boundary
        sp[1, : chunk + 1] = -inf  # a leading run past the first chunk
        sp[2, :] = -inf
        sp[3, :] *= 1e4  # exps far out of range
        sp[4, 1::7] = -inf
        sp[5, :] = -90.0
        sp[5, chunk] = 40.0  # one large term right after a boundary
    cases.append(("special values at the chunk boundaries", sp, True))
    return cases


@pytest.mark.parametrize("kind", [ScanKind.CUMPROD, ScanKind.LOGCUMSUMEXP],
                         ids=lambda k: k.value)  # fmt: skip
@pytest.mark.parametrize("element", ELEMENTS, ids=lambda e: e.value)
def test_scan_ring_backward(kind: ScanKind, element: ElementKind, monkeypatch: Any) -> None:
    """The cumprod and logcumsumexp backward through the block ring (scan_<op>_bwd_ring, every
    itemsize switched on, the balance threshold 0 so that a few rows take it):
    whole and partial chunks, more chunks than the ring holds, many rows a block, a rank-3
    tensor, padded rows, special values at the chunk boundaries; both directions, on
    poisoned outputs, against the float64 reference, torch autograd in float64 on the same
    inputs, and the same backward without the ring; and layouts that must not take it."""
    from baracuda.scan import _kernels as K

    every = tuple((o, (2, 4, 8)) for o in K.RING_BACKWARD_OPS)
    monkeypatch.setattr(K, "RING_MIN_BALANCE", 0.0)
    monkeypatch.setattr(K, "RING_BACKWARD", every)
    seen = launched_kernels(monkeypatch)
    ring = f"scan_{_op_of(kind)}_bwd_ring"
    gen = torch.Generator(device="cuda").manual_seed(12)
    for what, x, want in _ring_backward_cases(element, kind):
        for reverse in (False, True):
            label = f"{what} {tuple(x.shape)} rev={reverse}"
            y, _ = run_forward(kind, x, -1, reverse)
            dy = torch.randn(tuple(x.shape), device="cuda", dtype=x.dtype, generator=gen)
            seen.clear()
            dx = run_backward(kind, dy, x, y, -1, reverse)
            assert (seen == [ring]) == want, (label, seen)
            check_backward(kind, element, dx, dy, x, y, -1, reverse, f"ring {label}")
            mag = _magnitude(kind, _np64(dy), _np64(x), _np64(y), -1, reverse)
            sc = max(1.0, math.sqrt(x.shape[-1]) / 4) * 2.0
            if kind is ScanKind.CUMPROD or "special" not in what:  # torch: NaN at -inf
                # torch autograd in float64 on the same rounded inputs
                x64 = x.double().requires_grad_(True)
                xf = x64.flip(-1) if reverse else x64
                y64 = _torch_forward(kind)(xf, x.dim() - 1)
                y64 = y64.flip(-1) if reverse else y64
                (g64,) = torch.autograd.grad(y64, x64, dy.double())
                tsc = sc
                if kind is ScanKind.LOGCUMSUMEXP and element.itemsize == 2:
                    # the saved y is rounded to the element type: each term carries |y| eps
                    finite = _np64(y)[np.isfinite(_np64(y))]
                    tsc *= max(1.0, float(np.abs(finite).max()) / 2)
                assert_close(dx, _np64(g64), element, scale=tsc, magnitude=mag,
                             what=f"ring vs torch autograd {label}")  # fmt: skip
            if want:
                monkeypatch.setattr(K, "RING_BACKWARD", ())
                dx_plain = run_backward(kind, dy, x, y, -1, reverse)
                monkeypatch.setattr(K, "RING_BACKWARD", every)
                assert "ring" not in seen[-1], seen
                assert_close(dx, _np64(dx_plain), element, scale=sc, magnitude=mag,
                             what=f"ring vs rows {label}")  # fmt: skip


@pytest.mark.parametrize("kind", [ScanKind.CUMPROD, ScanKind.LOGCUMSUMEXP],
                         ids=lambda k: k.value)  # fmt: skip
@pytest.mark.parametrize("element", [ElementKind.F32, ElementKind.BF16], ids=lambda e: e.value)
def test_ring_backward_on_the_benchmark_shape(kind: ScanKind, element: ElementKind,
                                              monkeypatch: Any) -> None:  # fmt: skip
    """The cumprod/logcumsumexp backward over 4096 x 8192 along dim 1 at the default switches:
    through the ring where RING_BACKWARD lists the op in the type; both directions, against
    the float64 reference."""
    from baracuda.scan import _kernels as K

    seen = launched_kernels(monkeypatch)
    x = torch.from_numpy(make_input(kind, (4096, 8192), 82)).to("cuda", torch_dtype(element))
    if kind is ScanKind.CUMPROD:
        x[::97, 4095:4097] = 0  # zeros either side of a bf16 chunk boundary
        x[1::97, 2047:2049] = 0  # ... and an f32 one
    for reverse in (False, True):
        y, _ = run_forward(kind, x, 1, reverse)
        dy = torch.randn(tuple(x.shape), device="cuda", dtype=x.dtype)
        seen.clear()
        dx = run_backward(kind, dy, x, y, 1, reverse)
        op = f"{_op_of(kind)}_bwd"
        ring = K._listed(K.RING_BACKWARD, op, element.itemsize)
        assert (seen == [f"scan_{op}_ring"]) == ring and len(seen) == 1, seen
        check_backward(kind, element, dx, dy, x, y, 1, reverse, f"(4096, 8192) rev={reverse}")


@pytest.mark.parametrize("element", [ElementKind.F32, ElementKind.BF16], ids=lambda e: e.value)
def test_ring_on_the_benchmark_shapes(element: ElementKind, monkeypatch: Any) -> None:
    """cumsum over 4096 x 8192 and 1024 x 32768 along dim 1 takes the ring (rows of up to 32
    KiB: rows in registers) at the default thresholds, matches the float64 reference in both
    directions, and so does its backward; CuPy and JAX arrays through the functional API
    too."""
    from baracuda.scan import _kernels as K

    seen = launched_kernels(monkeypatch)
    for shape in ((4096, 8192), (1024, 32768)):
        x64 = make_input(ScanKind.CUMSUM, shape, 61)
        x = torch.from_numpy(x64).to("cuda", torch_dtype(element))
        # rows of up to 16 KiB (bf16 4096 x 8192) are held in registers (ROWREG)
        rowb = shape[1] * element.itemsize
        kernel = ("ring" if not K.ROWREG or rowb > K.ROWREG_MAX_BYTES
                  else "rowreg4" if rowb <= 16384 else "rowreg8")  # fmt: skip
        for reverse in (False, True):
            seen.clear()
            check_op(ScanKind.CUMSUM, element, x, 1, reverse, f"{shape} dim 1 rev={reverse}")
            if K.RING_ROWS:
                assert seen == [f"scan_sum_{kernel}"] * 2, seen
    cupy = pytest.importorskip("cupy")
    xc = cupy.asarray(make_input(ScanKind.CUMPROD, (300, 8192), 62), dtype=cupy.float32)
    monkeypatch.setattr(K, "RING_MIN_BALANCE", 0.0)
    yc = bc.cumprod(xc, 1)
    assert isinstance(yc, cupy.ndarray)
    assert_close(yc, R.scan(ScanKind.CUMPROD, _np64(xc), 1, False), ElementKind.F32,
                 scale=scale_of(ScanKind.CUMPROD, 8192), what="cupy cumprod ring")  # fmt: skip
    jax = pytest.importorskip("jax")
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("jax has no GPU backend here")
    jnp = jax.numpy
    xj = jnp.asarray(make_input(ScanKind.CUMSUM, (300, 16384), 63), dtype=jnp.bfloat16)
    yj = bc.cumsum(xj, 1, True)
    assert type(yj).__module__.startswith("jax")
    assert_close(yj, R.scan(ScanKind.CUMSUM, _np64(xj), 1, True), ElementKind.BF16,
                 scale=scale_of(ScanKind.CUMSUM, 16384), what="jax reverse cumsum ring")


@pytest.mark.parametrize("kind", [ScanKind.CUMSUM, ScanKind.CUMPROD], ids=lambda k: k.value)
@pytest.mark.parametrize("element", [ElementKind.F32, ElementKind.BF16], ids=lambda e: e.value)
def test_ring_matches_torch_autograd(kind: ScanKind, element: ElementKind,
                                     monkeypatch: Any) -> None:  # fmt: skip
    """On the ring (rows of two and a bit chunks, zeros in cumprod's input): values equal
    torch's float64 scan and gradients equal torch autograd's in float64 on the same rounded
    inputs, in both directions (torch's reverse by flipping); a second run is bitwise equal;
    and a CUDA graph of the forward replays on new inputs."""
    from baracuda.scan import _kernels as K

    monkeypatch.setattr(K, "RING_MIN_BALANCE", 0.0)
    seen = launched_kernels(monkeypatch)
    dt = torch_dtype(element)
    lanes = 16 // element.itemsize
    n = 2 * 16384 // element.itemsize + 3 * lanes
    shape = (150, n)
    x = torch.from_numpy(make_input(kind, shape, 70)).to("cuda", dt)
    if kind is ScanKind.CUMPROD:
        x[5, :] = 0  # a row of zeros
        x[7, n // 2] = 0  # a single zero mid-row
    dy = torch.randn(shape, device="cuda", dtype=dt, generator=torch.Generator(device="cuda")
                     .manual_seed(71))  # fmt: skip
    fwd = torch.cumsum if kind is ScanKind.CUMSUM else torch.cumprod
    for reverse in (False, True):
        seen.clear()
        fn = bc.cumsum if kind is ScanKind.CUMSUM else bc.cumprod
        y = fn(x, 1, reverse)
        assert seen == [f"scan_{_op_of(kind)}_ring"], seen
        assert torch.equal(y, fn(x, 1, reverse)), "a second run differs"
        x64 = x.double().requires_grad_(True)
        y64 = fwd(x64.flip(1), 1).flip(1) if reverse else fwd(x64, 1)
        (g64,) = torch.autograd.grad(y64, x64, dy.double())
        assert_close(y, y64.detach(), element, scale=scale_of(kind, n),
                     what=f"{kind.value} vs torch rev={reverse}")  # fmt: skip
        dx = api.scan_backward(kind, dy, x=x, y=y, axis=1, reverse=reverse)
        mag = _magnitude(kind, _np64(dy), _np64(x), _np64(y), 1, reverse)
        bsc = max(1.0, math.sqrt(n) / 4) * (2.0 if kind is ScanKind.CUMPROD else 1.0)
        bsc *= 3.0 if element is ElementKind.BF16 else 1.0
        assert_close(dx, g64, element, scale=bsc, magnitude=mag,
                     what=f"{kind.value} grad vs torch autograd rev={reverse}")  # fmt: skip
    # a CUDA graph of the forward (no workspace), replayed on new inputs
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    out = torch.empty_like(x)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.stream(s):
        plan = ScanPlan.select(s, ScanDescriptor(kind, shape, 1, element))
        ws = bc.Workspace.allocate(plan.workspace_size(), bc.Stream.wrap(s))
        plan.run(s, ws, ScanArgs(x, out))
        with torch.cuda.graph(g, stream=s):
            plan.run(s, ws, ScanArgs(x, out))
    torch.cuda.current_stream().wait_stream(s)
    for seed in (72, 73):
        x.copy_(torch.from_numpy(make_input(kind, shape, seed)).to("cuda", dt))
        out.fill_(float("nan"))
        g.replay()
        torch.cuda.synchronize()
        assert_close(out, R.scan(kind, _np64(x), 1, False), element, scale=scale_of(kind, n),
                     what=f"graph replay {seed}")  # fmt: skip


# the logcumsumexp backward's paths: the ring (aligned rows of 8 KiB or more), rows of odd
# length, segmented tiles (short rows), look-back rows (few long rows), strided axes
_LSE_BACKWARD_SHAPES = [((4096, 8192), 1), ((512, 16384), 1), ((3000, 1029), 1),
                        ((65536, 64), 1), ((2, 2**20), 1), ((2048, 1024), 0),
                        ((1500, 8192), 0), ((4096, 8192), 0)]  # fmt: skip
# the shapes whose backward takes strips at the default thresholds on an H100 or H200, and
# the bound there in f32: the carry runs along the whole axis in double (LseBwdGroupOp; an
# H200 measured 3-7e-6, where the same chain in f32 gave 2.1e-4)
_LSE_BACKWARD_STRIPS = [((1500, 8192), 0), ((4096, 8192), 0)]
_LSE_BACKWARD_STRIP_BOUND = {ElementKind.F32: 3e-5}
# ... and those that take the ring, whose lanes' runs are groups the same way in f32 (an H200
# measured 0.7-1.3e-5 over 4096 x 8192 and 1024 x 32768; warp rows 1.3-2.1e-5)
_LSE_BACKWARD_RING = [((4096, 8192), 1), ((512, 16384), 1)]
# max |dx - ref| / max(1, |ref|): about twice the stored type's rounding (f32: its sums)
_LSE_BACKWARD_BOUND = {ElementKind.F32: 1e-4, ElementKind.F16: 1e-3, ElementKind.BF16: 8e-3}


@pytest.mark.parametrize("element", list(_LSE_BACKWARD_BOUND), ids=lambda e: e.value)
def test_logcumsumexp_backward_per_element(element: ElementKind, monkeypatch: Any) -> None:
    """Every element of the logcumsumexp backward within about two roundings of the stored
    type of the float64 sum ``exp(x_i) sum_{j >= i} dy_j exp(-y_j)`` of the same inputs,
    relative to max(1, |dx|), on every path, both directions. y is the forward's own output
    (in 2-byte types it steps down by an ulp here and there), then the same y with positions
    set well below the one before them: the sum holds for any y, and the linear recurrence
    (2-byte rows, and the row groups of strips) must not assume that y never decreases. The
    strided shapes of _LSE_BACKWARD_STRIPS must take strips and those of _LSE_BACKWARD_RING
    the ring, and meet the strips' bound."""
    torch = pytest.importorskip("torch")
    from baracuda.scan import _kernels as K

    seen = launched_kernels(monkeypatch)
    gen = torch.Generator(device="cuda").manual_seed(5)
    dt = torch_dtype(element)
    for shape, axis in _LSE_BACKWARD_SHAPES:
        strips = (shape, axis) in _LSE_BACKWARD_STRIPS and K._listed(K.STRIP_OPS, "lse_bwd",
                                                                    element.itemsize)
        ring = (shape, axis) in _LSE_BACKWARD_RING and K._listed(K.RING_BACKWARD, "lse_bwd",
                                                                element.itemsize)
        bound = (_LSE_BACKWARD_STRIP_BOUND.get(element, _LSE_BACKWARD_BOUND[element])
                 if strips or ring else _LSE_BACKWARD_BOUND[element])  # fmt: skip
        x = (torch.randn(shape, device="cuda", generator=gen) * 4).to(dt)
        dy = torch.randn(shape, device="cuda", generator=gen).to(dt)
        for reverse in (False, True):
            y, _ = run_forward(ScanKind.LOGCUMSUMEXP, x, axis, reverse)
            bent = y.clone()
            low = bent.movedim(axis, -1)[..., 1::37]  # a view: below their neighbours
            low.copy_(low.double() - low.double().abs() * 0.05 - 0.05)
            for yy, what in ((y, "forward's y"), (bent, "bent y")):
                seen.clear()
                dx = run_backward(ScanKind.LOGCUMSUMEXP, dy, x, yy, axis, reverse)
                if strips:
                    assert any("_strip" in k for k in seen), (shape, seen)
                if ring:
                    assert seen == ["scan_lse_bwd_ring"], (shape, seen)
                x64, y64, dy64 = x.double(), yy.double(), dy.double()
                terms = dy64 * torch.exp(-y64)
                suffix = (torch.cumsum(terms, axis) if reverse
                          else torch.cumsum(terms.flip(axis), axis).flip(axis))  # fmt: skip
                ref = torch.exp(x64) * suffix
                err = ((dx.double() - ref).abs() / ref.abs().clamp(min=1)).max().item()
                assert err <= bound, (shape, axis, reverse, what, err)


def _cummax_last_rows(x: Any, c: int) -> tuple[Any, Any]:
    """torch.cummax of a 1-D ``x`` without NaN (ties to the latest), from rows of ``c``: each
    row's own cummax against the running maximum of everything before the row (torch's
    kernel walks a row a thread, too slow for 2^31 elements)."""
    import torch

    m = x.numel() // c * c
    parts = [p for p in (x[:m].view(-1, c), x[m:].view(1, -1)) if p.numel()]
    vals, idxs = [], []
    top, at, start = -math.inf, -1, 0  # the running maximum before the part, and its index
    for rows in parts:
        rv, ri = torch.cummax(rows, 1)
        ri = ri + start + torch.arange(rows.shape[0], device=x.device)[:, None] * rows.shape[1]
        pv, pj = torch.cummax(rv[:, -1], 0)  # the running maximum of the rows' maxima
        pi = ri[pj, -1]
        before = top > pv  # ties go to the later element: the rows'
        pv, pi = torch.where(before, top, pv), torch.where(before, at, pi)
        prev_v = torch.cat([pv.new_full((1,), top), pv[:-1]])  # before each row
        prev_i = torch.cat([pi.new_full((1,), at), pi[:-1]])
        take = rv >= prev_v[:, None]
        vals.append(torch.where(take, rv, prev_v[:, None]).view(-1))
        idxs.append(torch.where(take, ri, prev_i[:, None]).view(-1))
        top, at, start = float(vals[-1][-1]), int(idxs[-1][-1]), start + rows.numel()
    return torch.cat(vals), torch.cat(idxs)


@pytest.mark.slow
def test_scans_past_2_31_elements() -> None:
    """More than 2^31 elements (64-bit offsets and int64 indices past 2^31): one long row,
    forward, reverse and the backward, a short axis along dim 0 and two long rows along dim
    1, exact against torch on integer-valued f32 (every partial sum is exact); cummax of one
    bf16 row whose winner sits past 2^31, values and indices equal to torch's rule."""
    torch = pytest.importorskip("torch")
    g = torch.Generator(device="cuda").manual_seed(7)
    n = 2**31 + 37

    def tern(shape: tuple[int, ...]) -> Any:
        return torch.randint(-1, 2, shape, device="cuda", generator=g,
                             dtype=torch.int8).to(torch.float32)  # fmt: skip

    cases = (((n,), 0, False, False), ((n,), 0, True, False), ((n,), 0, False, True),
             ((3, 715827901), 0, False, False), ((2, 2**30 + 19), 1, True, False))  # fmt: skip
    try:
        for shape, axis, reverse, backward in cases:
            x = tern(shape)
            ref = torch.cumsum(x.flip(axis) if reverse else x, axis, dtype=torch.int64)
            ref = (ref.flip(axis) if reverse else ref).to(torch.float32)
            if backward:  # the cumsum backward: the reverse-direction cumsum of dy
                y = bc.scan_backward("cumsum", x, axis=axis, reverse=not reverse)
            else:
                y = bc.cumsum(x, axis=axis, reverse=reverse)
            assert torch.equal(y, ref), (shape, axis, reverse, backward)
            del x, y, ref
            torch.cuda.empty_cache()
        x = torch.randn(n, device="cuda", generator=g).to(torch.bfloat16)
        x[n - 5] = 1e4  # bf16 holds 9984: compare with what x holds
        v, i = bc.cummax(x, tie_break="last")
        assert int(i[-1]) == n - 5 and float(v[-1]) == float(x[n - 5])
        rv, ri = _cummax_last_rows(x, 2**15)
        assert torch.equal(v, rv) and torch.equal(i, ri)
    except torch.OutOfMemoryError:
        pytest.skip("not enough GPU memory")
    finally:
        torch.cuda.empty_cache()
