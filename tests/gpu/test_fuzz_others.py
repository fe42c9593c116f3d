"""Sparsemax and lerp cases drawn at random on the GPU, each reproducible from its seed (the
scans' own are in test_scan_fuzz.py, whose layouts these share).

Each seed picks a dtype, a shape, an axis and layouts for every input (contiguous, transposed
storage, every other element, an offset start, broadcast) and every output (a view inside a
poisoned buffer). Forward and backward are checked against the float64 reference, and
nothing outside an output view may be written. ``BARACUDA_OTHERS_FUZZ=first:last`` draws the
cases of other seeds.
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
import pytest

import baracuda as bc
from baracuda.elementwise import (
    BinaryParamArgs,
    BinaryParamBackwardArgs,
    BinaryParamBackwardDescriptor,
    BinaryParamBackwardPlan,
    BinaryParamDescriptor,
    BinaryParamPlan,
)
from baracuda.elementwise import reference as lerp_ref
from baracuda.softmax import (
    SparsemaxArgs,
    SparsemaxBackwardArgs,
    SparsemaxBackwardDescriptor,
    SparsemaxBackwardPlan,
    SparsemaxDescriptor,
    SparsemaxPlan,
)
from baracuda.softmax import reference as sparse_ref
from baracuda.types import ElementKind
from tests.gpu.test_scan_fuzz import _input, _output, _untouched
from tests.gpu.test_softmax_sparsemax import _check
from tests.helpers import _np64, assert_close, torch_dtype

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

_RANGE = os.environ.get("BARACUDA_OTHERS_FUZZ", "0:120").split(":")
SEEDS = range(int(_RANGE[0]), int(_RANGE[1]))
STYLES = ("contiguous", "contiguous", "transposed", "every other", "offset", "broadcast")
OUTS = ("contiguous", "transposed", "inside")


def _pick(rng: np.random.Generator, seq: Any) -> Any:
    return seq[int(rng.integers(len(seq)))]


def _sparsemax_shape(rng: np.random.Generator) -> tuple[tuple[int, ...], int]:
    n = int(_pick(rng, (1, 2, 3, 7, 31, 32, 33, 100, 1000, 1025, 4096, 8193, 32768, 131072)))
    rows = max(1, min(int(_pick(rng, (1, 3, 64, 1000, 20000))), (1 << 20) // n))
    rank = int(_pick(rng, (1, 2, 2, 3)))
    if rank == 1:
        return (n,), int(_pick(rng, (0, -1)))
    if rank == 2:
        axis = int(_pick(rng, (0, 1, -1)))
        return ((rows, n) if axis % 2 else (n, rows)), axis
    a = int(_pick(rng, (1, 2, 5)))
    b = max(1, rows // a)
    axis = int(_pick(rng, (0, 1, 2, -1)))
    dims = [a, b]
    dims.insert(axis % 3, n)
    return tuple(dims), axis


@pytest.mark.parametrize("seed", SEEDS)
def test_random_sparsemax_case(seed: int) -> None:
    rng = np.random.default_rng(5000 + seed)
    element = _pick(rng, list(ElementKind))
    shape, axis = _sparsemax_shape(rng)
    in_styles = [str(_pick(rng, STYLES)) for _ in range(3)]
    out_styles = [str(_pick(rng, OUTS)) for _ in range(2)]
    what = (f"seed {seed}: {element.value} {shape} axis={axis} inputs {in_styles} "
            f"outputs {out_styles}")  # fmt: skip
    dt = torch_dtype(element)
    scale = float(_pick(rng, (0.1, 1.0, 4.0)))
    vals = rng.standard_normal(shape) * scale
    if rng.random() < 0.3:
        vals = np.round(vals * 4) / 4  # ties
    if rng.random() < 0.2:
        vals[rng.random(shape) < 0.05] = -np.inf
    # broadcast along the axis would make every row of one value: keep the axis whole
    x = _input(vals, dt, in_styles[0], rng, axis % len(shape))
    xn = _np64(x)
    s = bc.Stream.wrap(torch.cuda.current_stream())

    ybuf, y, ymask = _output(shape, dt, math.nan, out_styles[0], rng)
    plan = SparsemaxPlan.select(s, SparsemaxDescriptor(shape, axis, element))
    plan.run(s, bc.Workspace.allocate(plan.workspace_size(), s), SparsemaxArgs(x, y))
    torch.cuda.synchronize()
    want = sparse_ref.sparsemax(xn, axis)
    _check(y, want, element, f"sparsemax {what}")
    _untouched(ybuf, ymask, math.nan, f"{what} y")

    # backward from the rounded reference y, in a layout of its own; dy NaN off the support
    yr = want.astype(np.float64)
    ysaved = _input(yr, dt, in_styles[1] if in_styles[1] != "broadcast" else "offset", rng)
    on = _np64(ysaved) > 0
    dyv = np.where(on, rng.standard_normal(shape), np.nan)
    dy = _input(dyv, dt, in_styles[2] if in_styles[2] != "broadcast" else "contiguous", rng)
    dxbuf, dx, dxmask = _output(shape, dt, math.nan, out_styles[1], rng)
    bplan = SparsemaxBackwardPlan.select(s, SparsemaxBackwardDescriptor(shape, axis, element))
    bplan.run(s, bc.Workspace.allocate(bplan.workspace_size(), s),
              SparsemaxBackwardArgs(dy, ysaved, dx))  # fmt: skip
    torch.cuda.synchronize()
    dwant = sparse_ref.sparsemax_backward(_np64(dy), _np64(ysaved), axis)
    _check(dx, dwant, element, f"sparsemax_backward {what}")
    _untouched(dxbuf, dxmask, math.nan, f"{what} dx")


@pytest.mark.parametrize("seed", SEEDS)
def test_random_lerp_case(seed: int) -> None:
    rng = np.random.default_rng(9000 + seed)
    element = _pick(rng, list(ElementKind))
    rank = int(_pick(rng, (0, 1, 2, 3, 4)))
    dims: list[int] = []
    for _ in range(rank):
        room = (1 << 20) // max(1, math.prod(dims))
        dims.append(int(_pick(rng, [e for e in (0, 1, 2, 3, 5, 8, 17, 64, 129, 1000, 4099)
                                     if e <= room])))
    shape = tuple(dims)
    w = float(_pick(rng, (0.0, 0.25, 0.5, 0.7, 1.0, -0.3, 1.5)))
    styles = [str(_pick(rng, STYLES)) if rank else "contiguous" for _ in range(3)]
    outs = [str(_pick(rng, OUTS)) if rank else "contiguous" for _ in range(3)]
    what = f"seed {seed}: {element.value} {shape} w={w} inputs {styles} outputs {outs}"
    dt = torch_dtype(element)
    a = _input(np.asarray(rng.standard_normal(shape)), dt, styles[0], rng)
    b = _input(np.asarray(rng.standard_normal(shape) * 2), dt, styles[1], rng)
    s = bc.Stream.wrap(torch.cuda.current_stream())

    obuf, out, omask = _output(shape, dt, math.nan, outs[0], rng)
    plan = BinaryParamPlan.select(s, BinaryParamDescriptor(shape, element, w))
    plan.run(s, bc.Workspace.none(), BinaryParamArgs(a, b, out))
    torch.cuda.synchronize()
    assert_close(out, lerp_ref.lerp(_np64(a), _np64(b), w), element, what=f"lerp {what}")
    _untouched(obuf, omask, math.nan, f"{what} out")

    dy = _input(np.asarray(rng.standard_normal(shape)), dt, styles[2], rng)
    dabuf, da, damask = _output(shape, dt, math.nan, outs[1], rng)
    dbbuf, db, dbmask = _output(shape, dt, math.nan, outs[2], rng)
    bplan = BinaryParamBackwardPlan.select(s, BinaryParamBackwardDescriptor(shape, element, w))
    bplan.run(s, bc.Workspace.none(), BinaryParamBackwardArgs(dy, da, db))
    torch.cuda.synchronize()
    wa, wb = lerp_ref.lerp_backward(_np64(dy), w)
    assert_close(da, wa, element, what=f"lerp_backward da {what}")
    assert_close(db, wb, element, what=f"lerp_backward db {what}")
    _untouched(dabuf, damask, math.nan, f"{what} da")
    _untouched(dbbuf, dbmask, math.nan, f"{what} db")
