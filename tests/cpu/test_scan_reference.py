"""The scan reference (CPU path and oracle) against torch CPU autograd, and its errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from baracuda.errors import InvalidProblem
from baracuda.scan import reference as R
from baracuda.types import ScanKind, TieBreak
from tests.helpers import torch_scan

torch = pytest.importorskip("torch")

KINDS = list(ScanKind)


def special_input(kind: ScanKind, shape: tuple[int, ...], seed: int) -> Any:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, dtype=torch.float64, generator=g)
    if kind is ScanKind.CUMPROD:  # one zero, several zeros, an all-zero line
        x.view(-1)[3] = 0
        x[..., 2] = 0
        x[1] = 0
    elif kind in (ScanKind.CUMMAX, ScanKind.CUMMIN):  # ties and NaN
        x = torch.round(x * 2) / 2
        x.view(-1)[5] = float("nan")
        x.view(-1)[17] = float("nan")
    elif kind is ScanKind.LOGCUMSUMEXP:  # -inf inside rows, and large |x|
        x[..., 3] = -float("inf")
        x.view(-1)[7] = 80.0
        x.view(-1)[8] = -90.0
    return x


def _lib(a: Any, lib: str) -> Any:
    """``a`` (a NumPy array or a CPU tensor) as an array of ``lib``."""
    a = a.detach().numpy() if isinstance(a, torch.Tensor) else np.asarray(a)
    return torch.from_numpy(a.copy()) if lib == "torch" else a


def _spy_on(monkeypatch: pytest.MonkeyPatch, name: str) -> list[bool]:
    """Wraps the reference's fast path ``name`` (one that returns None where the caller takes
    its general path); returns the list that records, call by call, whether it took the
    input."""
    taken: list[bool] = []
    real = getattr(R, name)

    def spy(*a: Any) -> Any:
        out = real(*a)
        taken.append(out is not None)
        return out

    monkeypatch.setattr(R, name, spy)
    return taken


@pytest.mark.parametrize("lib", ["numpy", "torch"])
@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.value)
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_forward_and_backward_match_torch(kind: ScanKind, reverse: bool, dim: int,
                                          lib: str) -> None:  # fmt: skip
    """The reference on NumPy and on torch arrays (which take torch's own scans in places)
    against torch autograd."""
    x = special_input(kind, (4, 6, 9), 1).requires_grad_(True)
    y, idx = torch_scan(kind.value, x, dim, reverse)
    dy = torch.randn(y.shape, dtype=torch.float64)
    (gx,) = torch.autograd.grad(y, x, dy)
    xn, yn = _lib(x, lib), _lib(y, lib)
    out = R.scan(kind, xn, dim, reverse, TieBreak.LAST)
    if idx is not None:
        np.testing.assert_array_equal(np.asarray(out[1]), idx.numpy())
        out = out[0]
    np.testing.assert_allclose(np.asarray(out), y.detach().numpy(), rtol=1e-12, atol=1e-12,
                               equal_nan=True)  # fmt: skip
    dx = R.scan_backward(kind, _lib(dy, lib), x=xn, y=yn, axis=dim, reverse=reverse,
                         tie_break=TieBreak.LAST)  # fmt: skip
    dx = np.asarray(dx)
    truth = gx.numpy()
    if kind is ScanKind.LOGCUMSUMEXP:
        # PyTorch gives NaN where the whole prefix is -inf; we give 0 (no inf - inf)
        nan = np.isnan(truth)
        assert np.all(np.asarray(dx)[nan] == 0)
        truth = np.where(nan, 0.0, truth)
    np.testing.assert_allclose(dx, truth, rtol=1e-10, atol=1e-10, equal_nan=True)


@pytest.mark.parametrize("lib", ["numpy", "torch"])
@pytest.mark.parametrize("kind", [ScanKind.CUMMAX, ScanKind.CUMMIN], ids=lambda k: k.value)
@pytest.mark.parametrize("reverse", [False, True])
def test_tie_break_first(kind: ScanKind, reverse: bool, lib: str) -> None:
    x = np.array([[1.0, 3.0, 3.0, 0.0, 3.0, 5.0, 5.0]])
    if kind is ScanKind.CUMMIN:
        x = -x
    if reverse:
        x = x[:, ::-1].copy()
    _, idx = R.scan(kind, _lib(x, lib), -1, reverse, TieBreak.FIRST)
    want = np.array([[0, 1, 1, 1, 1, 5, 5]])
    if reverse:
        want = (6 - want)[:, ::-1]
    np.testing.assert_array_equal(np.asarray(idx), want)
    dy = np.arange(1.0, 8.0)[None, :]
    if reverse:
        dy = dy[:, ::-1].copy()
    dx = np.asarray(R.scan_backward(kind, _lib(dy, lib), x=_lib(x, lib), axis=-1,
                                    reverse=reverse))  # fmt: skip
    want_dx = np.array([[1.0, 2 + 3 + 4 + 5, 0, 0, 0, 6 + 7, 0]])
    if reverse:
        want_dx = want_dx[:, ::-1]
    np.testing.assert_array_equal(dx, want_dx)


@pytest.mark.parametrize("lib", ["numpy", "torch"])
@pytest.mark.parametrize("kind", [ScanKind.CUMMAX, ScanKind.CUMMIN], ids=lambda k: k.value)
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("n", [4, 37, 300, 1100])
def test_extremum_backward_keeps_inf_and_nan_of_dy_in_their_segment(
    kind: ScanKind, reverse: bool, n: int, lib: str
) -> None:
    """An infinite or NaN upstream gradient reaches its own running winner only: torch's
    scatter-add of dy into the winners, where a segmented sum carried as a linear recurrence
    would multiply it by the 0 of a later winner (0 * inf = NaN) and spread NaN to the winners
    before it."""
    g = torch.Generator().manual_seed(n)
    x = (torch.round(torch.randn((5, n), dtype=torch.float64, generator=g) * 2) / 2)
    x.requires_grad_(True)
    dy = torch.randn((5, n), dtype=torch.float64, generator=g)
    dy[0, 2::7] = float("inf")
    dy[1, 1::5] = float("nan")
    dy[2, 3::3] = -float("inf")
    dy[3, -1] = float("inf")
    dy[3, -2] = -float("inf")  # inf - inf in the last winner's segment only (if they share it)
    y, _ = torch_scan(kind.value, x, 1, reverse)
    (gx,) = torch.autograd.grad(y, x, dy)
    with np.errstate(invalid="ignore"):  # inf - inf where a segment holds both
        dx = R.scan_backward(kind, _lib(dy, lib), x=_lib(x, lib), axis=1, reverse=reverse,
                             tie_break=TieBreak.LAST)  # fmt: skip
    dx, truth = np.asarray(dx), gx.numpy()
    np.testing.assert_array_equal(np.isnan(dx), np.isnan(truth))
    np.testing.assert_array_equal(np.isinf(dx) * np.sign(dx), np.isinf(truth) * np.sign(truth))
    np.testing.assert_allclose(dx, truth, rtol=1e-12, atol=1e-12, equal_nan=True)


def _extremum_by_loop(x: np.ndarray, is_min: bool, last: bool) -> tuple[np.ndarray, np.ndarray]:
    """The kernels' monoid, one position at a time along the last axis: a NaN wins, then the
    comparison of the tie break; the first position is its own winner."""
    v, idx = x.copy(), np.zeros(x.shape, dtype=np.int64)
    for r in np.ndindex(x.shape[:-1]):
        cur, at = x[r][0], 0
        for i in range(1, x.shape[-1]):
            t = x[r][i]
            cmp = (t <= cur if last else t < cur) if is_min else (t >= cur if last else t > cur)
            if np.isnan(t) or (not np.isnan(cur) and cmp):
                cur, at = t, i
            v[r][i], idx[r][i] = cur, at
    return v, idx


class _Wrapped:
    """Another array namespace: NumPy's functions behind an object that array-api-compat does
    not take for NumPy's (so the reference takes its generic path), less ``hide``."""

    def __init__(self, xp: Any, hide: tuple[str, ...] = ()) -> None:
        self._xp, self._hide = xp, hide

    def __getattr__(self, name: str) -> Any:
        if name in self._hide:  # e.g. take_along_axis: a namespace before the 2024.12 standard
            raise AttributeError(name)
        return getattr(self._xp, name)


def _untied(rng: Any, n: int) -> Any:
    """Rows of distinct values (one zero, one of each infinity) with NaN among them: no value
    equals another, so none ties the running extremum before it."""
    x = np.stack([rng.permutation(n).astype(np.float64) - n // 2 for _ in range(3)])
    x[0, rng.integers(0, n, 2)] = np.nan
    if n >= 4:
        x[1, 1], x[1, 3] = np.inf, -np.inf
        x[2, rng.integers(0, n, 3)] = np.nan
    return x


def test_torch_first_tie_break_without_ties_takes_torchs_own(
        monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """On torch arrays, cummax/cummin with the first tie break take torch's own result where
    no value ties the running extremum before it (the same winners), else the two scans:
    both against the monoid position by position."""
    calls: list[int] = []
    real = R._wins_along

    def spy(*a: Any, **k: Any) -> Any:
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(R, "_wins_along", spy)
    rng = np.random.default_rng(7)
    tied = rng.integers(-2, 3, (3, 50)).astype(np.float64)
    for x, scans in ((_untied(rng, 50), False), (tied, True),
                     (np.array([[-0.0, 0.0, 0.0, -0.0]]), True)):  # fmt: skip
        for kind in (ScanKind.CUMMAX, ScanKind.CUMMIN):
            for reverse in (False, True):
                calls.clear()
                v, idx = R.scan(kind, torch.from_numpy(x.copy()), -1, reverse, TieBreak.FIRST)
                assert bool(calls) == scans, (x, kind, reverse)
                xs = x[:, ::-1] if reverse else x
                wv, wi = _extremum_by_loop(xs, kind is ScanKind.CUMMIN, False)
                if reverse:
                    wv, wi = wv[:, ::-1], (x.shape[1] - 1 - wi)[:, ::-1]
                np.testing.assert_array_equal(idx.numpy(), wi)
                np.testing.assert_array_equal(v.numpy(), wv)
                assert np.array_equal(np.signbit(v.numpy()), np.signbit(wv))


@pytest.mark.parametrize("space", ["numpy", "torch", "generic", "without_take_along_axis"])
@pytest.mark.parametrize("n", [1, 2, 17, 64, 65, 300])
def test_extremum_matches_the_monoid_one_position_at_a_time(
    n: int, space: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """cummax/cummin's values (signed zeros included) and indices against the monoid applied
    position by position, over ties, NaN, infinities and signed zeros, both tie breaks and
    directions (and ties without zeros or NaN, whose values need no take from ``x``): on
    NumPy and torch arrays (their own running extremum, ``_running``), on a
    namespace of neither (the blocked scan) and on one without ``take_along_axis`` (the
    monoid on the values). The reference takes two scans: the extremum, then the latest
    win."""
    if space in ("generic", "without_take_along_axis"):
        real = R.namespace
        hide = ("take_along_axis",) if space != "generic" else ()
        monkeypatch.setattr(R, "namespace", lambda *a: _Wrapped(real(*a), hide))
    rng = np.random.default_rng(n)
    specials = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 0.5])
    for x in (specials[rng.integers(0, len(specials), (3, n))],
              rng.integers(-2, 3, (3, n)).astype(np.float64), _untied(rng, n),
              rng.integers(1, 4, (3, n)).astype(np.float64)):  # fmt: skip
        xin = torch.from_numpy(x.copy()) if space == "torch" else x
        for kind in (ScanKind.CUMMAX, ScanKind.CUMMIN):
            for tie in TieBreak:
                for reverse in (False, True):
                    v, idx = R.scan(kind, xin, -1, reverse, tie)
                    xs = x[:, ::-1] if reverse else x
                    wv, wi = _extremum_by_loop(xs, kind is ScanKind.CUMMIN, tie is TieBreak.LAST)
                    if reverse:
                        wv, wi = wv[:, ::-1], (n - 1 - wi)[:, ::-1]
                    np.testing.assert_array_equal(np.asarray(idx), wi)
                    np.testing.assert_array_equal(np.asarray(v), wv)
                    assert np.array_equal(np.signbit(np.asarray(v)), np.signbit(wv))


def test_cumprod_all_zeros_and_single_zero() -> None:
    for x in ([0.0, 0.0, 0.0], [2.0, 0.0, 3.0], [0.0, 2.0, 3.0], [2.0, 3.0, 0.0]):
        xt = torch.tensor([x], dtype=torch.float64, requires_grad=True)
        y = torch.cumprod(xt, 1)
        dy = torch.tensor([[1.0, 2.0, 3.0]], dtype=torch.float64)
        (g,) = torch.autograd.grad(y, xt, dy)
        dx = R.scan_backward(ScanKind.CUMPROD, dy.numpy(), x=xt.detach().numpy(),
                             y=y.detach().numpy())  # fmt: skip
        np.testing.assert_allclose(dx, g.numpy(), rtol=0, atol=1e-14)


def test_logcumsumexp_large_values_are_stable() -> None:
    x = np.array([[1000.0, 1000.0, -1000.0, 999.0]])
    y = R.logcumsumexp(x)
    np.testing.assert_allclose(y, [[1000.0, 1000 + np.log(2), 1000 + np.log(2),
                                    1000 + np.log(2 + np.exp(-1))]])  # fmt: skip
    dx = R.scan_backward(ScanKind.LOGCUMSUMEXP, np.ones_like(x), x=x, y=y)
    assert np.all(np.isfinite(dx))


def test_log_add_exp_special_values() -> None:
    """The combine of logcumsumexp on every pair of -inf, inf, NaN and finite values, against
    NumPy's logaddexp: the same infinities and NaN, finite values within an ulp or two."""
    vals = np.array([-np.inf, np.inf, np.nan, -1e30, -90.0, 0.0, 3.5, 1e30])
    a, b = (v.ravel() for v in np.meshgrid(vals, vals))
    with np.errstate(invalid="ignore"):
        want = np.logaddexp(a, b)
        got = R._log_add_exp(np, a, b)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[np.isinf(want)], want[np.isinf(want)])
    np.testing.assert_allclose(got, want, rtol=1e-15, atol=0)


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.value)
def test_numpy_floating_point_warnings_stay_inside(kind: ScanKind) -> None:
    """On NumPy arrays with infinities, NaN and overflow, no op warns (the ops define those
    cases), and the caller's floating-point error settings are as they were."""
    x = np.array([[-np.inf, -np.inf, 2.0, np.inf, 1e30, np.nan, 3.0, np.inf, -np.inf, 0.0]] * 3)
    x[1] = np.abs(x[1])
    dy = np.where(np.arange(10) % 4 == 1, np.inf, 1.0) * np.ones_like(x)
    before = np.geterr()
    with np.errstate(all="raise"):
        inner = np.geterr()
        for reverse in (False, True):
            out = R.scan(kind, x, -1, reverse)
            y = out[0] if isinstance(out, tuple) else out
            R.scan_backward(kind, dy, x=x, y=y, reverse=reverse)
        assert np.geterr() == inner
    assert np.geterr() == before


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.value)
def test_array_api_strict_gives_numpy_values(kind: ScanKind) -> None:
    """Every op, forward and backward, on array-api-strict arrays (the standard alone: no
    NumPy accumulations) returns its own array type with NumPy's values, bit for bit,
    indices included, along every axis both ways, with ties, NaN and infinities; neither
    warns (NumPy's errors raised)."""
    xp = pytest.importorskip("array_api_strict")
    rng = np.random.default_rng(7)
    x = np.round(rng.standard_normal((5, 300)) * 2) / 2
    x[1, 7], x[2, 40], x[3, 100], x[4, 3] = np.nan, np.inf, -np.inf, -np.inf
    if kind is ScanKind.CUMPROD:
        x = 1 + x / 64
    dy = rng.standard_normal(x.shape)
    with np.errstate(all="raise"):
        for dtype in (np.float32, np.float64):
            xn, dyn = x.astype(dtype), dy.astype(dtype)
            xs, dys = xp.asarray(xn), xp.asarray(dyn)
            for axis in (0, 1):
                for reverse in (False, True):
                    want = R.scan(kind, xn, axis, reverse)
                    got = R.scan(kind, xs, axis, reverse)
                    pairs = list(zip(want, got, strict=True)) if isinstance(want, tuple) else [
                        (want, got)]  # fmt: skip
                    for w, g in pairs:
                        assert type(g) is type(xs)
                        np.testing.assert_array_equal(np.asarray(g), w)
                    yn = want[0] if isinstance(want, tuple) else want
                    ys = got[0] if isinstance(got, tuple) else got
                    dx_n = R.scan_backward(kind, dyn, x=xn, y=yn, axis=axis, reverse=reverse)
                    dx_s = R.scan_backward(kind, dys, x=xs, y=ys, axis=axis, reverse=reverse)
                    assert type(dx_s) is type(xs)
                    np.testing.assert_array_equal(np.asarray(dx_s), dx_n)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_half_types_accumulate_in_f32(dtype: str) -> None:
    x = np.full((1, 4096), 0.1, dtype=dtype)
    y = np.asarray(R.cumsum(x), np.float64)
    assert y.dtype == np.float64
    assert abs(y[0, -1] - 409.6) / 409.6 < 2e-3


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_torch_extremum_backward_rounds_once(dtype: str) -> None:
    """The cummax/cummin backward on torch arrays (torch's scatter-add, in double) gives the
    float64 reference of the same values rounded once to the array's type, every tie break,
    direction and axis of a rank-3 array with ties."""
    g = torch.Generator().manual_seed(3)
    dt = getattr(torch, dtype)
    x = (torch.round(torch.randn((6, 40, 5), generator=g) * 3) / 4).to(dt)
    dy = torch.randn((6, 40, 5), generator=g).to(dt)
    for kind in (ScanKind.CUMMAX, ScanKind.CUMMIN):
        for tie in TieBreak:
            for reverse in (False, True):
                for axis in (0, 1, 2):
                    dx = R.scan_backward(kind, dy, x=x, axis=axis, reverse=reverse,
                                         tie_break=tie)  # fmt: skip
                    want = R.scan_backward(kind, dy.double().numpy(), x=x.double().numpy(),
                                           axis=axis, reverse=reverse, tie_break=tie)  # fmt: skip
                    assert dx.dtype == dt
                    want = torch.from_numpy(np.ascontiguousarray(want)).to(dt)
                    torch.testing.assert_close(dx, want, rtol=0, atol=0)


def test_torch_logcumsumexp_backward_in_one_rescaling(monkeypatch: pytest.MonkeyPatch) -> None:
    """The logcumsumexp backward on torch arrays: in double with one rescaling a line where
    every line's y is finite and spreads at most _LSE_SPAN (x too), else the rescaling scan;
    both against the float64 reference, every axis both ways, with -inf in x (whole lines
    too: y -inf, the scan), a saved y that steps down, and f32 and bf16 inputs rounded once."""
    taken = _spy_on(monkeypatch, "_lse_gradient")
    rng = np.random.default_rng(11)
    kind = ScanKind.LOGCUMSUMEXP
    for scale, fast in ((1.0, True), (4.0, True), (400.0, False)):
        x = rng.standard_normal((3, 70, 5)) * scale
        x[1, 4::9, 1] = -np.inf  # inside every line (y stays finite)
        for axis in (0, 1, 2):
            for reverse in (False, True):
                y = np.ascontiguousarray(R.scan(kind, x, axis, reverse))
                y[2, 5, 3] -= 0.25  # a saved y that steps down
                dy = rng.standard_normal(x.shape)
                want = np.asarray(R.scan_backward(kind, dy, x=x, y=y, axis=axis,
                                                  reverse=reverse))  # fmt: skip
                taken.clear()
                got = R.scan_backward(kind, _lib(dy, "torch"), x=_lib(x, "torch"),
                                      y=_lib(y, "torch"), axis=axis, reverse=reverse)  # fmt: skip
                assert taken == [fast], (scale, axis, reverse)
                np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
                for dt in (torch.float32, torch.bfloat16):
                    t = [torch.from_numpy(a).to(dt) for a in (dy, x, y)]
                    low = R.scan_backward(kind, t[0], x=t[1], y=t[2], axis=axis, reverse=reverse)
                    ref = R.scan_backward(kind, *(a.double().numpy() for a in t[:1]),
                                          x=t[1].double().numpy(), y=t[2].double().numpy(),
                                          axis=axis, reverse=reverse)  # fmt: skip
                    ref_t = torch.from_numpy(np.ascontiguousarray(ref)).to(dt)
                    assert low.dtype == dt
                    # in double, rounded once: within an ulp of the stored type; the scan
                    # accumulates f32 (a half type's) in f32
                    ulp = 2**-7 if dt is torch.bfloat16 else 2**-23
                    tol = ulp * (ref_t.double().abs() if fast else
                                 torch.maximum(torch.ones(()), ref_t.double().abs()) * 64)
                    assert bool(((low.double() - ref_t.double()).abs() <= tol).all()), (
                        scale, axis, reverse, dt)  # fmt: skip
    # a spread of y along the line past _LSE_SPAN: the scan; within it: one rescaling
    for step, fast in ((R._LSE_SPAN / 49 * 1.05, False), (R._LSE_SPAN / 49 * 0.95, True)):
        x = np.tile(np.arange(50.0) * step, (2, 1))
        y = np.asarray(R.scan(kind, x, 1))
        dy = rng.standard_normal(x.shape) * 1e-100
        taken.clear()
        got = R.scan_backward(kind, _lib(dy, "torch"), x=_lib(x, "torch"), y=_lib(y, "torch"),
                              axis=1)  # fmt: skip
        assert taken == [fast]
        want = np.asarray(R.scan_backward(kind, dy, x=x, y=y, axis=1))
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=0)
    # a NaN in x or y, or an infinite x or y, in one line: the scan for the whole call (the
    # one test on the lines' extremes), with the reference's NaN and infinities
    for where, poke in (("x nan", (0, 1, 7, np.nan)), ("x inf", (0, 2, 9, np.inf)),
                        ("y nan", (1, 0, 3, np.nan)), ("y inf", (1, 1, 29, np.inf))):
        x = rng.standard_normal((3, 30))
        y = np.array(R.scan(kind, x, 1))
        (x, y)[poke[0]][poke[1], poke[2]] = poke[3]
        dy = rng.standard_normal(x.shape)
        taken.clear()
        got = R.scan_backward(kind, _lib(dy, "torch"), x=_lib(x, "torch"), y=_lib(y, "torch"),
                              axis=1)  # fmt: skip
        assert taken == [False], where
        want = np.asarray(R.scan_backward(kind, dy, x=x, y=y, axis=1))
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12, err_msg=where)
    # whole lines of -inf (y -inf there): the scan
    x = rng.standard_normal((4, 30))
    x[1] = -np.inf
    y = np.asarray(R.scan(kind, x, 1))
    taken.clear()
    dx = R.scan_backward(kind, _lib(np.ones_like(x), "torch"), x=_lib(x, "torch"),
                         y=_lib(y, "torch"), axis=1)  # fmt: skip
    assert taken == [False]
    assert bool((dx[1] == 0).all())


def test_logcumsumexp_backward_in_one_rescaling_standard(
        monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """The logcumsumexp backward on NumPy and array-api-strict arrays: in double with one
    rescaling a line in the standard's operations where every line's y is finite and spreads
    at most _LSE_SPAN (x too, and no NaN), else the rescaling scan. Both namespaces give the
    same bits; in float64 within 1e-12 of the rescaling scan forced; f32 within an ulp of
    that (rounded once); every axis both ways, with -inf in x."""
    xps = pytest.importorskip("array_api_strict")
    taken = _spy_on(monkeypatch, "_lse_gradient_std")
    rng = np.random.default_rng(13)
    kind = ScanKind.LOGCUMSUMEXP
    x = rng.standard_normal((3, 70, 5)) * 3
    x[1, 4::9, 1] = -np.inf
    dy = rng.standard_normal(x.shape)
    for axis in (0, 1, 2):
        for reverse in (False, True):
            y = np.ascontiguousarray(R.scan(kind, x, axis, reverse))
            with monkeypatch.context() as m:  # the rescaling scan, forced
                m.setattr(R, "_lse_gradient_std", lambda *a: None)
                scan64 = np.asarray(R.scan_backward(kind, dy, x=x, y=y, axis=axis,
                                                    reverse=reverse))  # fmt: skip
            taken.clear()
            got = np.asarray(R.scan_backward(kind, dy, x=x, y=y, axis=axis, reverse=reverse))
            assert taken == [True], (axis, reverse)
            np.testing.assert_allclose(got, scan64, rtol=1e-12, atol=1e-12)
            for dt in (np.float32, np.float64):
                a = [v.astype(dt) for v in (dy, x, y)]
                taken.clear()
                dx_n = R.scan_backward(kind, a[0], x=a[1], y=a[2], axis=axis, reverse=reverse)
                dx_s = R.scan_backward(kind, *(xps.asarray(v) for v in a[:1]),
                                       x=xps.asarray(a[1]), y=xps.asarray(a[2]), axis=axis,
                                       reverse=reverse)  # fmt: skip
                assert taken == [True, True]
                np.testing.assert_array_equal(np.asarray(dx_s), dx_n)
                if dt is np.float32:
                    ref = R.scan_backward(kind, *(v.astype(np.float64) for v in a[:1]),
                                          x=a[1].astype(np.float64), y=a[2].astype(np.float64),
                                          axis=axis, reverse=reverse)  # fmt: skip
                    ref32 = np.asarray(ref).astype(np.float32)
                    ulp = np.spacing(np.abs(ref32))
                    assert bool(np.all(np.abs(dx_n - ref32) <= ulp)), (axis, reverse)
    # NaN in x, an infinite y, or a spread past _LSE_SPAN: the scan
    for what, poke in (("x nan", lambda x, y: x.__setitem__((0, 3), np.nan)),
                       ("y inf", lambda x, y: y.__setitem__((1, 5), np.inf)),
                       ("spread", lambda x, y: x.__setitem__((2, 0), 400.0))):
        x = rng.standard_normal((3, 30))
        y = np.array(R.scan(kind, x, 1))
        poke(x, y)
        taken.clear()
        R.scan_backward(kind, rng.standard_normal(x.shape), x=x, y=y, axis=1)
        assert taken == [False], what


def test_torch_cumprod_backward_in_double(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cumprod backward on torch arrays: in double from the running products of x where
    no zero is in x and every running product stays in double's normal range, else the
    linear recurrence (zeros, underflow, overflow, NaN, f64 arrays); against the float64
    reference of the same inputs (the saved y read as given, one stepped off), every axis of
    a rank-3 array both ways, f32 and bf16 rounded once (within an ulp)."""
    taken = _spy_on(monkeypatch, "_prod_gradient")
    rng = np.random.default_rng(5)
    kind = ScanKind.CUMPROD
    x = 1 + 0.3 * rng.standard_normal((3, 70, 5))
    x[np.abs(x) < 1e-3] = 0.5
    dy = rng.standard_normal(x.shape)
    for axis in (0, 1, 2):
        for reverse in (False, True):
            y = np.ascontiguousarray(R.scan(kind, x, axis, reverse))
            y[2, 5, 3] *= 1.25  # a saved y that steps off
            for dt in (torch.float32, torch.bfloat16):
                t = [torch.from_numpy(a).to(dt) for a in (dy, x, y)]
                taken.clear()
                got = R.scan_backward(kind, t[0], x=t[1], y=t[2], axis=axis, reverse=reverse)
                assert taken == [True], (axis, reverse, dt)
                d64, x64, y64 = (a.double().numpy() for a in t)
                ref = R.scan_backward(kind, d64, x=x64, y=y64, axis=axis, reverse=reverse)
                ref_t = torch.from_numpy(np.ascontiguousarray(ref))
                assert got.dtype == dt
                ulp = 2**-7 if dt is torch.bfloat16 else 2**-23
                err = (got.double() - ref_t).abs()
                assert bool((err <= ulp * ref_t.abs() + 1e-30).all()), (axis, reverse, dt)
    # zeros (one, several, a whole line), a running product past double's normal range
    # either way, NaN, and f64 arrays: the recurrence, exact with zeros
    cases = {"one zero": (lambda a: a.__setitem__((1, 7), 0.0), torch.float32),
             "zeros": (lambda a: a.__setitem__((slice(None), slice(3, 40, 9)), 0.0),
                       torch.float32),
             "a line of zeros": (lambda a: a.__setitem__(2, 0.0), torch.float32),
             "underflow": (lambda a: a.__setitem__(0, 1e-3), torch.float32),
             "overflow": (lambda a: a.__setitem__(0, 1e3), torch.float32),
             "nan": (lambda a: a.__setitem__((1, 9), np.nan), torch.float32),
             "f64": (lambda a: None, torch.float64)}  # fmt: skip
    for what, (poke, dt) in cases.items():
        xn = 1 + 0.3 * rng.standard_normal((4, 120))
        poke(xn)
        for reverse in (False, True):
            yn = np.asarray(R.scan(kind, xn, 1, reverse))
            dyn = rng.standard_normal(xn.shape)
            taken.clear()
            t = [torch.from_numpy(np.ascontiguousarray(a)).to(dt) for a in (dyn, xn, yn)]
            got = R.scan_backward(kind, t[0], x=t[1], y=t[2], axis=1, reverse=reverse)
            assert taken == [False], (what, reverse)
            want = R.scan_backward(kind, *(a.numpy() for a in t[:1]), x=t[1].numpy(),
                                   y=t[2].numpy(), axis=1, reverse=reverse)  # fmt: skip
            np.testing.assert_array_equal(got.numpy(), np.asarray(want), err_msg=what)


def test_empty_and_zero_length_axis() -> None:
    for shape in [(0, 5), (3, 0), (0,)]:
        x = np.zeros(shape, np.float32)
        for kind in KINDS:
            out = R.scan(kind, x, -1)
            y = out[0] if isinstance(out, tuple) else out
            assert y.shape == shape
            dx = R.scan_backward(kind, x, x=x, y=x)
            assert dx.shape == shape


@pytest.mark.parametrize("lib", ["numpy", "torch"])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_one_position_lines_are_new_arrays(lib: str, dtype: str) -> None:
    """A line of one position is its own scan, and ``dy`` its gradient: the results are new
    arrays all the same (the reference once returned its input itself, and the PyTorch
    adapter's custom op refused the alias), whatever the axis and direction."""
    rng = np.random.default_rng(5)
    for shape, axis in [((3, 1), 1), ((1,), 0), ((1, 4), 0), ((2, 1, 3), -2)]:
        base = rng.standard_normal(shape).astype(dtype)
        for kind in KINDS:
            for reverse in (False, True):
                x = base.copy() if lib == "numpy" else torch.from_numpy(base.copy())
                dy = 2 * x - 1
                out = R.scan(kind, x, axis, reverse)
                y = out[0] if isinstance(out, tuple) else out
                dx = R.scan_backward(kind, dy, x=x, y=y, axis=axis, reverse=reverse)
                what = f"{kind} {shape} axis={axis} reverse={reverse}"
                np.testing.assert_array_equal(np.asarray(y), np.asarray(x), err_msg=what)
                np.testing.assert_array_equal(np.asarray(dx), np.asarray(dy), err_msg=what)
                y[...] = 7  # writing into the results leaves the inputs alone
                dx[...] = 7
                np.testing.assert_array_equal(np.asarray(x), base, err_msg=what)
                np.testing.assert_array_equal(np.asarray(dy), 2 * base - 1, err_msg=what)


def test_errors() -> None:
    x = np.zeros((3, 4))
    with pytest.raises(InvalidProblem, match="axis"):
        R.cumsum(x, axis=2)
    with pytest.raises(InvalidProblem, match="saved forward tensor x"):
        R.scan_backward(ScanKind.CUMMAX, x)
    with pytest.raises(InvalidProblem, match="saved forward tensor y"):
        R.scan_backward(ScanKind.CUMPROD, x, x=x)
    with pytest.raises(InvalidProblem, match="shape"):
        R.scan_backward(ScanKind.LOGCUMSUMEXP, x, x=x, y=np.zeros((4, 3)))


def test_torch_sums_and_products_accumulate_in_double() -> None:
    """On torch CPU arrays cumsum, cumprod and the cumsum backward are torch's own, which
    accumulates in double and rounds once: over rows of 2^18 float32 values, both ways,
    within 1e-6 of float64's scan of the same float32 values (of max(1, |ref|)), where the
    blocked float32 scan was off by 7.7e-5; bf16 inputs give float64's values rounded to bf16
    (through float32, which changes none of these)."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 2**18))
    p = 1 + rng.standard_normal((2, 2**12)) / 256
    for kind, xd in ((ScanKind.CUMSUM, x), (ScanKind.CUMPROD, p)):
        xf = torch.from_numpy(xd).float()
        for reverse in (False, True):
            ref = R.scan(kind, xf.double().numpy(), 1, reverse)  # of the rounded inputs
            got = R.scan(kind, xf, 1, reverse)
            err = np.abs(got.double().numpy() - ref) / np.maximum(1.0, np.abs(ref))
            assert err.max() < 1e-6, (kind, reverse, err.max())
            half = R.scan(kind, torch.from_numpy(xd).bfloat16(), 1, reverse)
            xb = torch.from_numpy(xd).bfloat16().double().numpy()
            want = torch.from_numpy(np.ascontiguousarray(R.scan(kind, xb, 1, reverse))).bfloat16()
            assert torch.equal(half, want), (kind, reverse)
    dy = torch.from_numpy(x).float()
    dx = R.scan_backward(ScanKind.CUMSUM, dy, axis=1)
    ref = R.scan_backward(ScanKind.CUMSUM, dy.double().numpy(), axis=1)
    assert (np.abs(dx.double().numpy() - ref) / np.maximum(1.0, np.abs(ref))).max() < 1e-6


def test_numpy_win_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """cummax/cummin's winner positions on NumPy arrays: each win's position repeated over
    its run where at most an eighth of the positions win, else the running maximum of the
    wins' positions; both equal a line-by-line count on sparse and dense wins, the bound's
    two sides, a rank-3 array, a strided view and lines of one position. End to end, NumPy's
    cummax/cummin indices (either path, contiguous or strided axes, both ways, both tie
    breaks, with NaN) equal array-api-strict's, which always scan."""
    taken = _spy_on(monkeypatch, "_win_runs")
    rng = np.random.default_rng(11)

    def by_line(won: Any) -> Any:
        at = np.zeros(won.shape, dtype=np.int64)
        for idx in np.ndindex(won.shape[:-1]):
            last = 0
            for q in range(won.shape[-1]):
                last = q if won[(*idx, q)] else last
                at[(*idx, q)] = last
        return at

    n = 96
    eighth = np.zeros((4, n), dtype=bool)
    eighth[:, :: n // (n // 8)] = True  # exactly an eighth
    above = eighth.copy()
    above[0, 5] = True  # one more
    wide = rng.random((6, 2 * n)) < 0.05
    cases = {
        "sparse": (rng.random((5, n)) < 0.03, True),
        "an eighth": (eighth, True),
        "one more": (above, False),
        "dense": (rng.random((5, n)) < 0.5, False),
        "all": (np.ones((3, n), dtype=bool), False),
        "rank 3": (rng.random((2, 3, n)) < 0.02, True),
        "strided view": (wide[:, ::2], True),
        "lines of one": (np.ones((7, 1), dtype=bool), False),
    }
    for what, (won, fast) in cases.items():
        won[..., 0] = True  # every line's first position wins
        taken.clear()
        at = R._win_positions(np, won)
        assert taken == [fast], what
        assert at.dtype == np.int64 and at.shape == won.shape, what
        np.testing.assert_array_equal(at, by_line(won), err_msg=what)
    xps = pytest.importorskip("array_api_strict")
    x = np.round(rng.standard_normal((40, 300)) * 3).astype(np.float32)
    x[3, 50], x[7, 0] = np.nan, np.nan
    x[:20, 100:] = np.arange(200)  # rows whose last two thirds rise: most positions win
    paths = set()
    for op in ("cummax", "cummin"):
        for axis in (0, 1):
            for reverse in (False, True):
                for tie in (TieBreak.FIRST, TieBreak.LAST):
                    want = getattr(R, op)(xps.asarray(x), axis, reverse, tie)
                    taken.clear()
                    got = getattr(R, op)(x, axis, reverse, tie)
                    paths.update(taken)
                    for w, g in zip(want, got, strict=True):
                        np.testing.assert_array_equal(g, np.asarray(w), err_msg=op)
    assert paths == {True, False}  # NumPy's calls took both paths
