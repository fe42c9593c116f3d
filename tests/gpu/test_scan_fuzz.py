"""Scan cases drawn at random on the GPU, each reproducible from its seed.

Each seed picks an op, a dtype, a direction, a tie break, a family of shapes (any rank, wide
rows along a strided axis, few long rows, 2-4 interleaved lines, many short rows), an axis
(negative too), and layouts for the input (contiguous, transposed storage, every other
element, an offset start, broadcast), the saved tensors and the outputs. The outputs are
views into poisoned buffers. Forward values, the int64 indices and the backward are checked
against the float64 reference. Nothing outside an output view may be written.
``BARACUDA_SCAN_FUZZ=first:last`` draws the cases of other seeds.
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
import pytest

import baracuda as bc
from baracuda.scan import (
    ScanArgs,
    ScanBackwardArgs,
    ScanBackwardDescriptor,
    ScanBackwardPlan,
    ScanDescriptor,
    ScanPlan,
)
from baracuda.scan import reference as R
from baracuda.types import ElementKind, ScanKind, TieBreak
from tests.gpu.test_scan import _magnitude
from tests.helpers import _np64, assert_close, torch_dtype

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

EXTREMA = (ScanKind.CUMMAX, ScanKind.CUMMIN)
# BARACUDA_SCAN_FUZZ=first:last runs the seeds first..last-1 instead (more cases, one run)
_RANGE = os.environ.get("BARACUDA_SCAN_FUZZ", "0:160").split(":")
SEEDS = range(int(_RANGE[0]), int(_RANGE[1]))
CAP = 1 << 20  # elements of the largest case
# extents the random family draws from: around warp, block, vector and tile sizes
EXTENTS = (0, 1, 2, 3, 4, 5, 7, 8, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257, 500,
           1000, 1024, 1025, 2048, 4095, 4096, 4097, 8192, 8200, 16384, 50001, 65536)  # fmt: skip


def _shape(rng: np.random.Generator) -> tuple[str, tuple[int, ...], int]:
    """(family, shape, axis) for one case."""
    family = str(rng.choice(["random", "random", "wide", "long", "lines", "short"]))
    if family == "wide":  # strided axis: strips, look-back columns
        shape: tuple[int, ...] = (int(rng.choice([2, 3, 63, 64, 65, 100])),
                                  int(rng.choice([4096, 8192, 8200, 12288])))  # fmt: skip
        return family, shape, int(rng.choice([0, -2]))
    if family == "long":  # few long rows: cooperative kernel, stream kernel, rounds
        rows = int(rng.choice([1, 2, 3]))
        n = int(rng.choice([2**17 + 8, 2**18, 100_003, CAP // rows - 8]))
        return family, (rows, n), int(rng.choice([1, -1]))
    if family == "lines":  # 2-4 interleaved lines along dim 0
        g = int(rng.choice([2, 3, 4]))
        return family, (int(rng.choice([2**16, 2**18 + 8, 100_000])), g), 0
    if family == "short":  # many short rows
        n = int(rng.choice([1, 2, 3, 5, 17, 33, 64, 100]))
        return family, (int(rng.choice([1000, 5000, 20000])), n), int(rng.choice([1, -1]))
    rank = int(rng.choice([1, 2, 2, 3, 3, 4]))
    dims: list[int] = []
    for _ in range(rank):
        room = CAP // max(1, math.prod(dims))
        fits = [e for e in EXTENTS if e <= room and (e > 0 or rng.random() < 0.3)]
        dims.append(int(rng.choice(fits)))
    return family, tuple(dims), int(rng.integers(-rank, rank))


def _values(kind: ScanKind, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """float64 values suited to each op, with the special values each must handle."""
    if kind is ScanKind.CUMPROD:
        x = rng.uniform(0.6, 1.4, shape) * rng.choice([-1.0, 1.0], shape)
        x[rng.random(shape) < 0.01] = 0.0
        return x
    if kind in EXTREMA:  # quarters: ties everywhere; NaN in some cases
        x = np.round(rng.standard_normal(shape) * 4) / 4
        if rng.random() < 0.3:
            x[rng.random(shape) < 0.002] = np.nan
        return x
    if kind is ScanKind.CUMSUM:
        return rng.uniform(-1.0, 1.0, shape) + 0.25
    x = rng.standard_normal(shape) * 3
    if rng.random() < 0.3:
        x[rng.random(shape) < 0.01] = -np.inf
    return x


def _input(vals: np.ndarray, dt: Any, style: str, rng: np.random.Generator,
           keep: int | None = None) -> Any:  # fmt: skip
    """A CUDA tensor of ``vals`` in layout ``style`` (``keep``: a dim never broadcast)."""
    shape = vals.shape
    if style == "transposed" and len(shape) >= 2:
        perm = rng.permutation(len(shape))
        base = torch.from_numpy(np.ascontiguousarray(vals.transpose(perm))).to("cuda", dt)
        return base.permute(*np.argsort(perm).tolist())
    if style == "every other" and vals.size:
        d = int(rng.integers(len(shape)))
        big = np.repeat(vals, 2, axis=d)
        t = torch.from_numpy(big).to("cuda", dt)
        return t[(slice(None),) * d + (slice(None, None, 2),)]
    if style == "offset":
        flat = torch.from_numpy(np.concatenate([[0.5], vals.ravel()])).to("cuda", dt)
        return flat[1:].view(shape)
    dims = [d for d in range(len(shape)) if d != keep]
    if style == "broadcast" and vals.size and len(shape) >= 2 and dims:
        d = int(rng.choice(dims))
        one = torch.from_numpy(np.ascontiguousarray(vals.take([0], axis=d))).to("cuda", dt)
        return one.expand(*shape)
    return torch.from_numpy(vals).to("cuda", dt)


def _output(shape: tuple[int, ...], dt: Any, fill: float, style: str,
            rng: np.random.Generator) -> tuple[Any, Any, Any]:  # fmt: skip
    """(buffer, view, mask): an output view of ``shape`` into a buffer full of ``fill``, and
    a boolean mask of the buffer that is True where the view lies."""
    if style == "transposed" and len(shape) >= 2:
        perm = rng.permutation(len(shape))
        buf = torch.full(tuple(shape[p] for p in perm), fill, dtype=dt, device="cuda")
        inv = np.argsort(perm).tolist()
        mask = torch.zeros(buf.shape, dtype=torch.bool, device="cuda")
        mask.permute(*inv).fill_(True)
        return buf, buf.permute(*inv), mask
    if style == "inside" and len(shape) >= 1:
        d = int(rng.integers(len(shape)))
        big = list(shape)
        big[d] = 2 * shape[d] + 1
        buf = torch.full(tuple(big), fill, dtype=dt, device="cuda")
        at = (slice(None),) * d + (slice(1, None, 2),)
        mask = torch.zeros(buf.shape, dtype=torch.bool, device="cuda")
        mask[at] = True
        return buf, buf[at], mask
    buf = torch.full(shape, fill, dtype=dt, device="cuda")
    return buf, buf, torch.ones(shape, dtype=torch.bool, device="cuda")


def _untouched(buf: Any, mask: Any, fill: float, what: str) -> None:
    """Every element of ``buf`` outside ``mask`` still holds ``fill``."""
    rest = buf[~mask]
    same = rest.isnan() if math.isnan(fill) else rest == fill
    assert bool(same.all()), f"{what}: {int((~same).sum())} elements written outside the view"


@pytest.mark.parametrize("seed", SEEDS)
def test_random_scan_case(seed: int) -> None:
    rng = np.random.default_rng(1000 + seed)
    kind = list(ScanKind)[int(rng.integers(len(ScanKind)))]
    element = list(ElementKind)[int(rng.integers(len(ElementKind)))]
    reverse, tie = bool(rng.integers(2)), [TieBreak.FIRST, TieBreak.LAST][int(rng.integers(2))]
    family, shape, axis = _shape(rng)
    styles = ["contiguous", "contiguous", "transposed", "every other", "offset", "broadcast"]
    in_style = str(rng.choice(styles))
    out_styles = [str(rng.choice(["contiguous", "transposed", "inside"])) for _ in range(3)]
    what = (f"seed {seed}: {kind.value} {element.value} {family} {shape} axis={axis} "
            f"reverse={reverse} tie={tie.value} x {in_style}, outputs {out_styles}")  # fmt: skip
    dt = torch_dtype(element)
    # cumprod of one value along the whole axis (broadcast along it) overflows where |x| > 1
    keep = axis % len(shape) if kind is ScanKind.CUMPROD else None
    x = _input(_values(kind, shape, rng), dt, in_style, rng, keep)
    xn = _np64(x)
    n = shape[axis] if shape else 1

    # forward, values and (cummax/cummin) indices into poisoned views
    ybuf, y, ymask = _output(shape, dt, math.nan, out_styles[0], rng)
    idx = ibuf = imask = None
    if kind in EXTREMA:
        ibuf, idx, imask = _output(shape, torch.int64, -7, out_styles[1], rng)
    plan = ScanPlan.select(torch.cuda.current_stream(),
                           ScanDescriptor(kind, shape, axis, element, reverse, tie))  # fmt: skip
    # workspaces from torch.empty: whatever an earlier allocation left in them
    ws = torch.empty(max(1, plan.workspace_size()), dtype=torch.uint8, device="cuda")
    plan.run(torch.cuda.current_stream(), bc.Workspace.from_tensor(ws), ScanArgs(x, y, idx))
    torch.cuda.synchronize()
    ref = R.scan(kind, xn, axis, reverse, tie)
    if kind in EXTREMA:
        np.testing.assert_array_equal(idx.cpu().numpy(), np.asarray(ref[1]), err_msg=what)
        _untouched(ibuf, imask, -7, f"{what} indices")
        ref = ref[0]
    scale = 1.0 if kind in EXTREMA else max(1.0, math.sqrt(n) / 4)
    assert_close(y, ref, element, scale=scale, what=f"forward {what}")
    _untouched(ybuf, ymask, math.nan, f"{what} y")

    # backward from the forward's own y (as the caller saves it), dy of its own
    dy = torch.from_numpy(rng.standard_normal(shape)).to("cuda", dt)
    dxbuf, dx, dxmask = _output(shape, dt, math.nan, out_styles[2], rng)
    bplan = ScanBackwardPlan.select(
        torch.cuda.current_stream(),
        ScanBackwardDescriptor(kind, shape, axis, element, reverse, tie),
    )
    bws = torch.empty(max(1, bplan.workspace_size()), dtype=torch.uint8, device="cuda")
    bplan.run(torch.cuda.current_stream(), bc.Workspace.from_tensor(bws),
              ScanBackwardArgs(dy, dx, x, y))  # fmt: skip
    torch.cuda.synchronize()
    dyn, yn = _np64(dy), _np64(y)
    dref = R.scan_backward(kind, dyn, x=xn, y=yn, axis=axis, reverse=reverse, tie_break=tie)
    mag = _magnitude(kind, dyn, xn, yn, axis, reverse, tie)  # the terms' magnitudes summed
    bscale = max(1.0, math.sqrt(n) / 4) * (2.0 if kind is ScanKind.CUMPROD else 1.0)
    assert_close(dx, dref, element, scale=bscale, magnitude=mag, what=f"backward {what}")
    _untouched(dxbuf, dxmask, math.nan, f"{what} dx")
