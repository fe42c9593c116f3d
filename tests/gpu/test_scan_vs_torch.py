"""Scans against torch in float64, not against baracuda's own reference: random cases (each
reproducible from its seed) of every kind, dtype, direction, axis and layout, forward and
backward, and a few rows of 2^20 to 2^24 elements. The oracle is torch's float64 scan and
its autograd on the same rounded inputs; the logcumsumexp backward's oracle takes the saved
``y`` the user passes (bc's own forward output, in the input's dtype), as torch autograd in
that dtype would. Tolerances scale with each output's sum of absolute terms (the same
computation on |x| and |dy|); a cumprod in f16/bf16, forward and backward, is held to the
op reference's bound, rtol max(1, sqrt(n) / 4), or to 1.5x torch's own error in that dtype,
whichever is larger (a tiled product scan in f32 drifts over long axes: docs/ops.md); the
f32 cumprod, which accumulates in double, is held to the bound of the other ops.
``BARACUDA_VS_TORCH=first:last`` draws the cases of other seeds. ``random_case`` serves the
CPU test of the array-API path too (tests/cpu/test_reference_vs_torch.py)."""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
import pytest

import baracuda as bc
from tests.helpers import torch_scan

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

KINDS = ("cumsum", "cumprod", "cummax", "cummin", "logcumsumexp")
DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "f64": "float64"}
EPS = {"f32": 2e-6, "f16": 2e-3, "bf16": 1.6e-2, "f64": 1e-13}
RTOL = {"f32": 2e-5, "f16": 2e-3, "bf16": 1.6e-2}  # docs/ops.md, the scans' forward bound
TINY = {"f32": 6e-45, "f16": 6e-8, "bf16": 1e-38, "f64": 1e-320}  # underflow to zero
_RANGE = os.environ.get("BARACUDA_VS_TORCH", "0:240").split(":")
SEEDS = range(int(_RANGE[0]), int(_RANGE[1]))


@pytest.fixture(autouse=True)
def _cuda() -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU and torch with CUDA")


def _grad(kind: str, x: Any, dy: Any, axis: int, rev: bool) -> Any:
    xr = x.detach().clone().requires_grad_(True)
    (g,) = torch.autograd.grad(torch_scan(kind, xr, axis, rev)[0], xr, dy)
    return g


def _lse_grad_given_y(x: Any, y: Any, dy: Any, axis: int, rev: bool) -> tuple[Any, Any]:
    """dx_i = sum over j at or after i (in scan order) of dy_j exp(x_i - y_j), float64, with
    the saved ``y`` given; and the same sum of |terms|."""
    f = (lambda t: t.flip(axis)) if rev else (lambda t: t)
    xf, yf, df = f(x), f(y), f(dy)
    e = torch.where(torch.isneginf(yf), torch.zeros_like(yf), torch.exp(-yf))

    def rsum(t: Any) -> Any:
        return t.flip(axis).cumsum(axis).flip(axis)

    ex = torch.where(torch.isneginf(xf), torch.zeros_like(xf), torch.exp(xf))
    return f(ex * rsum(df * e)), f(ex * rsum(df.abs() * e))


def _close(what: str, got: Any, ref: Any, scale: Any, dt: str, n: int) -> None:
    got = got.to(torch.float64)
    fin = torch.isfinite(ref)
    same = (got == ref) | (torch.isnan(got) & torch.isnan(ref))
    assert bool((fin | same).all()), f"{what}: non-finite entries differ"
    tol = EPS[dt] * (4 + 2 * math.log2(max(n, 2))) * scale[fin] + TINY[dt]
    if dt in ("f16", "bf16"):  # the output's own rounding
        tol = tol + EPS[dt] * ref[fin].abs()
    err = (got[fin] - ref[fin]).abs()
    ok = (err <= tol) & ~torch.isnan(got[fin])
    if not bool(ok.all()):
        k = int(torch.argmax(torch.where(ok, 0.0, err / tol)))
        t, b = ref[fin][k].item(), got[fin][k].item()
        pytest.fail(f"{what}: |err| {err[k].item():.3g} > {tol[k].item():.3g}, {t:.7g} vs {b:.7g}")


def _input(rng: np.random.Generator, kind: str, shape: tuple[int, ...], n: int,
           special: bool, device: str = "cuda") -> Any:  # fmt: skip
    """float64 values on ``device``: products of factors near 1 (their range kept over n),
    integers with ties (cummax/cummin), offsets of +-80 (logcumsumexp); ``special``: zeros,
    NaN, -inf."""
    if kind == "cumprod":
        a = min(0.3, 3 / math.sqrt(max(n, 1)))
        v = rng.uniform(1 - a, 1 + a, size=shape) * rng.choice([-1, 1], size=shape)
        if special:
            v[rng.random(shape) < 0.02] = 0.0
    elif kind in ("cummax", "cummin"):
        v = rng.integers(-20, 20, size=shape).astype(np.float64)
        if special:
            v[rng.random(shape) < 0.01] = np.nan
    elif kind == "logcumsumexp":
        v = rng.normal(0, 3, size=shape) + float(rng.choice([0, 80, -80]))
        if special:
            v[rng.random(shape) < 0.05] = -np.inf
    else:
        v = rng.normal(size=shape)
    return torch.from_numpy(v).to(device)


def _layout(rng: np.random.Generator, x: Any) -> Any:
    """The values of ``x`` in a random layout: as is, permuted storage, a window of a larger
    buffer, or every other element (the buffers around the view poisoned with NaN)."""
    how = int(rng.integers(0, 4)) if x.dim() else 0
    if how == 1 and x.dim() > 1:
        p = [int(i) for i in rng.permutation(x.dim())]
        return x.permute(p).contiguous().permute(np.argsort(p).tolist())
    if how == 2:
        big = torch.full([s + 3 for s in x.shape], float("nan"), dtype=x.dtype, device=x.device)
        win = tuple(slice(1, 1 + s) for s in x.shape)
        big[win] = x
        return big[win]
    if how == 3:
        big = torch.full([*x.shape[:-1], 2 * x.shape[-1] + 1], float("nan"), dtype=x.dtype,
                         device=x.device)  # fmt: skip
        big[..., 1::2] = x
        return big[..., 1::2]
    return x


def _shape(rng: np.random.Generator) -> tuple[int, ...]:
    family = int(rng.integers(0, 5))
    if family == 0:  # any rank, extents around warp and tile sizes, zero too
        ext = [0, 1, 2, 3, 5, 17, 31, 33, 64, 100, 129, 257]
        shape = tuple(int(rng.choice(ext)) for _ in range(int(rng.integers(1, 5))))
    elif family == 1:  # few long rows
        shape = (int(rng.integers(1, 4)), int(rng.choice([2**16 + 3, 2**18, 300001, 2**20])))
    elif family == 2:  # many short rows, and short axes
        shape = (int(rng.choice([1000, 4097, 65536])), int(rng.choice([1, 2, 3, 4, 5, 8, 9])))
    elif family == 3:  # wide rows
        shape = (int(rng.choice([7, 128, 333])), int(rng.choice([1000, 4096, 8200])))
    else:  # rank 5-8
        shape = tuple(int(rng.integers(1, 40)) for _ in range(int(rng.integers(5, 9))))
    while math.prod(shape) > 400_000:
        shape = tuple(max(1, s // 2) for s in shape)
    return shape


def _lib(a: Any, lib: str) -> Any:
    """The tensor ``a`` as an array of ``lib`` ("torch"; "numpy": a view of a CPU tensor)."""
    return a if lib == "torch" else a.numpy()


def _tensor(a: Any) -> Any:
    """A torch tensor of bc's result ``a`` (a tensor, or a NumPy array: copied, so that its
    strides are fresh: torch refuses negative ones, even over an extent of 1)."""
    return a if isinstance(a, torch.Tensor) else torch.from_numpy(np.array(a, order="C"))


def _check(kind: str, dt: str, x64: Any, axis: int, rev: bool, rng: np.random.Generator,
           what: str, lib: str = "torch") -> None:  # fmt: skip
    """bc's forward and backward of ``x64`` rounded to ``dt`` (in random layouts, as arrays
    of ``lib``) against torch in float64 on the same rounded values."""
    tdt = getattr(torch, DTYPES[dt])
    x = x64.to(tdt)
    x64 = x.to(torch.float64)
    ax = axis % x.dim()
    n = x.shape[ax]
    y64, idx64 = torch_scan(kind, x64, ax, rev)
    xv = _lib(_layout(rng, x), lib)
    if kind in ("cummax", "cummin"):
        y, idx = map(_tensor, getattr(bc, kind)(xv, axis, rev, tie_break="last"))
        assert torch.equal(y.to(torch.float64).nan_to_num(7e7), y64.nan_to_num(7e7)), what
        if not rev:  # torch's tie break: the latest in scan order
            assert torch.equal(idx, idx64), f"{what}: indices"
        if n:
            at = torch.gather(x64, ax, idx)
            assert torch.equal(at.nan_to_num(7e7), y64.nan_to_num(7e7)), f"{what}: index"
    else:
        y = _tensor(getattr(bc, kind)(xv, axis, rev))
        if kind == "cumsum":
            scale = torch_scan(kind, x64.abs(), ax, rev)[0]
        else:
            scale = 1.0 + y64.abs().nan_to_num(0.0, 0.0, 0.0)
        if kind == "cumprod" and dt in ("f16", "bf16"):
            # a product's rounding in f32 grows faster than sqrt(n) in a parallel scan (torch's
            # GPU cumprod alike): held to docs/ops.md's bound, rtol max(1, sqrt(n) / 4) of |y|,
            # or to 1.5x torch's own error in this dtype, whichever is larger
            own = (torch_scan(kind, x, ax, rev)[0].to(torch.float64) - y64).abs()
            doc = RTOL[dt] * max(1.0, math.sqrt(n) / 4) * y64.abs()
            bound = torch.maximum(doc, 1.5 * own.nan_to_num(0.0, 0.0, 0.0))
            scale = torch.maximum(scale, bound / (EPS[dt] * (4 + 2 * math.log2(max(n, 2)))))
        _close(f"{what} forward", y, y64, scale, dt, n)
    dy = torch.from_numpy(rng.normal(size=tuple(x.shape))).to(x.device, tdt)
    dy64 = dy.to(torch.float64)
    kw: dict[str, Any] = {"axis": axis, "reverse": rev}
    if kind in ("cumprod", "logcumsumexp"):
        kw.update(x=xv, y=_lib(_layout(rng, y), lib))
    elif kind in ("cummax", "cummin"):
        kw.update(x=xv, tie_break="last")
    dx = _tensor(bc.scan_backward(kind, _lib(_layout(rng, dy), lib), **kw))
    if kind == "logcumsumexp":
        g, scale = _lse_grad_given_y(x64, y.to(torch.float64), dy64, ax, rev)
        fin = torch.isfinite(g)
        zero = torch.zeros_like(g)
        _close(f"{what} backward", torch.where(fin, dx.to(torch.float64), zero),
               torch.where(fin, g, zero), torch.where(fin, scale, zero), dt, n)  # fmt: skip
        return
    g = _grad(kind, x64, dy64, ax, rev)
    if kind in ("cummax", "cummin") and (rev or bool(torch.isnan(x64).any())):
        # where ties or NaN meet a reversed scan, torch's flips route a gradient to another
        # of the tied positions: each line's total is the same
        _close(f"{what} backward (line sums)", dx.to(torch.float64).sum(ax), g.sum(ax),
               dy64.abs().sum(ax), dt, n)  # fmt: skip
        return
    # each gradient's sum of |terms| (cummax/cummin: routed to the same winners)
    scale = _grad(kind, x64.abs() if kind == "cumprod" else x64, dy64.abs(), ax, rev)
    if kind == "cumprod" and dt in ("f16", "bf16"):  # the bound of the forward it takes y from
        own = (_grad(kind, x, dy, ax, rev).to(torch.float64) - g).abs().nan_to_num(0.0, 0.0, 0.0)
        doc = RTOL[dt] * max(1.0, math.sqrt(n) / 4) * scale
        bound = torch.maximum(doc, 1.5 * own)
        scale = torch.maximum(scale, bound / (EPS[dt] * (4 + 2 * math.log2(max(n, 2)))))
    _close(f"{what} backward", dx, g, scale, dt, n)


def random_case(seed: int, device: str = "cuda", lib: str = "torch") -> None:
    """The case of ``seed``, checked (``lib`` "numpy": bf16 cases stay torch tensors)."""
    rng = np.random.default_rng(seed + 7_000_000)
    kind = str(rng.choice(KINDS))
    dt = str(rng.choice(["f32", "f32", "bf16", "f16", "f64"]))
    shape = _shape(rng)
    axis = int(rng.integers(-len(shape), len(shape)))
    rev = bool(rng.integers(0, 2))
    special = bool(rng.integers(0, 3) == 0)
    x64 = _input(rng, kind, shape, shape[axis], special, device)
    what = f"seed {seed}: {kind} {dt} {shape} axis={axis} reverse={rev} special={special}"
    _check(kind, dt, x64, axis, rev, rng, what, "torch" if dt == "bf16" else lib)


@pytest.mark.parametrize("seed", SEEDS)
def test_random_case_matches_torch(seed: int) -> None:
    random_case(seed)


LONG = [("f32", (1, 2**24 + 5), 1, False), ("bf16", (2**24 + 3,), 0, True),
        ("f32", (3, 5_000_011), -1, True), ("f32", (2**22 + 1, 3), 0, False),
        ("bf16", (2, 2**23), 1, False), ("f16", (2**20, 2), 0, True)]  # fmt: skip


@pytest.mark.parametrize("kind", ["cumsum", "cumprod", "cummax", "logcumsumexp"])
@pytest.mark.parametrize("case", range(len(LONG)))
def test_long_rows_match_torch(kind: str, case: int) -> None:
    dt, shape, axis, rev = LONG[case]
    rng = np.random.default_rng(case)
    x64 = _input(rng, kind, shape, shape[axis], False)
    _check(kind, dt, x64, axis, rev, rng, f"{kind} {dt} {shape} axis={axis} reverse={rev}")
