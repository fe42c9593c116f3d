"""Negative strides through every op family on the GPU: reversed views (what a producer such
as CuPy's ``x[::-1]`` exports through DLPack) built as ``TensorView``s over torch memory, in
inputs, saved tensors and outputs, against float64 references of the reversed data, on
poisoned outputs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import baracuda as bc
from baracuda.elementwise import reference as LR
from baracuda.scan import (
    ScanArgs,
    ScanBackwardArgs,
    ScanBackwardDescriptor,
    ScanBackwardPlan,
    ScanDescriptor,
    ScanPlan,
)
from baracuda.scan import reference as R
from baracuda.softmax import (
    SparsemaxArgs,
    SparsemaxBackwardArgs,
    SparsemaxBackwardDescriptor,
    SparsemaxBackwardPlan,
    SparsemaxDescriptor,
    SparsemaxPlan,
)
from baracuda.softmax import reference as SR
from baracuda.types import ElementKind, ScanKind
from tests.gpu.test_scan import EXTREMA, _magnitude, _np64, make_input, scale_of
from tests.helpers import assert_close, poisoned, torch_dtype

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

_DL = {"float32": (2, 32), "float16": (2, 16), "bfloat16": (4, 16), "float64": (2, 64),
       "int64": (0, 64)}  # fmt: skip


def flipped(t: Any, dims: tuple[int, ...]) -> bc.TensorView:
    """``t`` with ``dims`` reversed, as a view with negative strides over t's memory: its
    logical contents are ``torch.flip(t, dims)``."""
    strides, off = list(t.stride()), 0
    for d in dims:
        off += (t.shape[d] - 1) * strides[d]
        strides[d] = -strides[d]
    dtype = _DL[str(t.dtype).removeprefix("torch.")]
    return bc.TensorView(t.data_ptr() + off * t.element_size(), tuple(t.shape), tuple(strides),
                         dtype, 2, t.get_device(), False, t)  # fmt: skip


def _stream() -> bc.Stream:
    return bc.Stream.wrap(torch.cuda.current_stream())


def _tensor(xn: np.ndarray, element: ElementKind) -> Any:
    return torch.from_numpy(xn).to("cuda", torch_dtype(element))


# (shape, axis, reversed dims of the input, reversed dims of the output): the scan axis
# reversed or not, other dims reversed, short rows, one long row (the cooperative kernel and
# the warp rows take contiguous axes), columns
_SCAN_CASES = [
    ((37, 1000), 1, (1,), ()),
    ((37, 1000), 1, (0,), (0,)),
    ((37, 1000), 1, (0, 1), (1,)),
    ((37, 1000), 0, (0,), ()),
    ((37, 1000), 0, (1,), (0, 1)),
    ((2, 2**20), 1, (1,), ()),
    ((2, 2**20), 1, (0,), (1,)),
    ((4096, 64), 0, (0,), (0,)),
]


@pytest.mark.parametrize("case", _SCAN_CASES, ids=lambda c: f"{c[0]}-ax{c[1]}-in{c[2]}-out{c[3]}")
@pytest.mark.parametrize("kind", list(ScanKind), ids=lambda k: k.value)
@pytest.mark.parametrize("element", [ElementKind.F32, ElementKind.BF16], ids=lambda e: e.value)
@pytest.mark.parametrize("reverse", [False, True], ids=["fwd", "rev"])
def test_scan_negative_strides(case: Any, kind: ScanKind, element: ElementKind,
                               reverse: bool) -> None:  # fmt: skip
    """Forward (values and indices) and backward of every scan op with reversed views in and
    out."""
    shape, axis, din, dout = case
    n = shape[axis]
    x = _tensor(make_input(kind, shape, 3), element)
    xv = flipped(x, din)
    xn = _np64(torch.flip(x, din)) if din else _np64(x)
    s = _stream()
    plan = ScanPlan.select(s, ScanDescriptor(kind, shape, axis, element, reverse))
    y = poisoned(shape, element)
    yv = flipped(y, dout) if dout else y
    idx = idxv = None
    if kind in EXTREMA:
        idx = torch.full(shape, -7, dtype=torch.int64, device="cuda")
        idxv = flipped(idx, dout) if dout else idx
    plan.run(s, bc.Workspace.allocate(plan.workspace_size(), s), ScanArgs(xv, yv, idxv))
    torch.cuda.synchronize()
    got = torch.flip(y, dout) if dout else y
    ref = R.scan(kind, xn, axis, reverse)
    what = f"{kind.value} {shape} axis {axis} in {din} out {dout} rev={reverse}"
    if kind in EXTREMA:
        gi = torch.flip(idx, dout) if dout else idx
        np.testing.assert_array_equal(gi.cpu().numpy(), np.asarray(ref[1]), err_msg=what)
        ref = ref[0]
    assert_close(got, ref, element, scale=scale_of(kind, n), what=what)

    # backward: dy and the saved tensors reversed as the input was, dx as the output
    dyt = _tensor(np.random.default_rng(1).standard_normal(shape), element)
    dyv = flipped(dyt, din) if din else dyt
    yt = _tensor(np.ascontiguousarray(ref, dtype=np.float64), element)  # saved y, logical
    ysave = flipped(torch.flip(yt, din), din) if din else yt
    bplan = ScanBackwardPlan.select(s, ScanBackwardDescriptor(kind, shape, axis, element, reverse))
    dx = poisoned(shape, element)
    dxv = flipped(dx, dout) if dout else dx
    bplan.run(s, bc.Workspace.allocate(bplan.workspace_size(), s),
              ScanBackwardArgs(dyv, dxv, xv, ysave))  # fmt: skip
    torch.cuda.synchronize()
    gdx = torch.flip(dx, dout) if dout else dx
    dyn = _np64(torch.flip(dyt, din)) if din else _np64(dyt)
    yn = _np64(yt)
    dref = R.scan_backward(kind, dyn, x=xn, y=yn, axis=axis, reverse=reverse)
    mag = _magnitude(kind, dyn, xn, yn, axis, reverse)
    bsc = max(1.0, np.sqrt(n) / 4) * (2.0 if kind is ScanKind.CUMPROD else 1.0)
    assert_close(gdx, dref, element, scale=bsc, magnitude=mag, what=f"backward {what}")


@pytest.mark.parametrize("element", [ElementKind.F32, ElementKind.BF16], ids=lambda e: e.value)
@pytest.mark.parametrize("dims", [(0,), (1,), (0, 1)], ids=str)
def test_lerp_negative_strides(element: ElementKind, dims: tuple[int, ...]) -> None:
    """lerp and its backward with reversed views in and out (the vectorised contiguous
    path must not take them)."""
    shape, w = (300, 1030), 0.3
    rng = np.random.default_rng(5)
    a, b = (_tensor(rng.standard_normal(shape), element) for _ in range(2))
    s = _stream()
    out = poisoned(shape, element)
    plan = bc.BinaryParamPlan.select(s, bc.BinaryParamDescriptor(shape, element, w))
    plan.run(s, bc.Workspace.none(), bc.BinaryParamArgs(flipped(a, dims), b, flipped(out, dims)))
    torch.cuda.synchronize()
    want = LR.lerp(_np64(torch.flip(a, dims)), _np64(b), w)
    assert_close(torch.flip(out, dims), want, element, what=f"lerp {dims}")
    dy = _tensor(rng.standard_normal(shape), element)
    da, db = poisoned(shape, element), poisoned(shape, element)
    bdesc = bc.BinaryParamBackwardDescriptor(shape, element, w)
    bplan = bc.BinaryParamBackwardPlan.select(s, bdesc)
    bargs = bc.BinaryParamBackwardArgs(flipped(dy, dims), da, flipped(db, dims))
    bplan.run(s, bc.Workspace.none(), bargs)
    torch.cuda.synchronize()
    wa, wb = LR.lerp_backward(_np64(torch.flip(dy, dims)), w)
    assert_close(da, wa, element, what=f"lerp da {dims}")
    assert_close(torch.flip(db, dims), wb, element, what=f"lerp db {dims}")


@pytest.mark.parametrize("element", [ElementKind.F32, ElementKind.BF16], ids=lambda e: e.value)
@pytest.mark.parametrize("shape", [(64, 1000), (4, 100_000)], ids=str)
@pytest.mark.parametrize("dims", [(0,), (1,), (0, 1)], ids=str)
def test_sparsemax_negative_strides(element: ElementKind, shape: tuple[int, int],
                                    dims: tuple[int, ...]) -> None:  # fmt: skip
    """sparsemax and its backward along the last axis with reversed views in and out."""
    rng = np.random.default_rng(7)
    x = _tensor(rng.standard_normal(shape) * 3, element)
    xn = _np64(torch.flip(x, dims))
    s = _stream()
    y = poisoned(shape, element)
    plan = SparsemaxPlan.select(s, SparsemaxDescriptor(shape, 1, element))
    args = SparsemaxArgs(flipped(x, dims), flipped(y, dims))
    plan.run(s, bc.Workspace.allocate(plan.workspace_size(), s), args)
    torch.cuda.synchronize()
    want = SR.sparsemax(xn, 1)
    assert_close(torch.flip(y, dims), want, element, what=f"sparsemax {shape} {dims}")
    yt = _tensor(np.ascontiguousarray(want), element)
    dy = _tensor(rng.standard_normal(shape), element)
    dx = poisoned(shape, element)
    bplan = SparsemaxBackwardPlan.select(s, SparsemaxBackwardDescriptor(shape, 1, element))
    # dy and y given through reversed views of reversed copies: their logical contents
    bargs = SparsemaxBackwardArgs(flipped(torch.flip(dy, dims), dims),
                                  flipped(torch.flip(yt, dims), dims), dx)  # fmt: skip
    bplan.run(s, bc.Workspace.allocate(bplan.workspace_size(), s), bargs)
    torch.cuda.synchronize()
    wdx = SR.sparsemax_backward(_np64(dy), _np64(yt), 1)
    assert_close(dx, wdx, element, what=f"sparsemax_backward {shape} {dims}")


def test_cupy_reversed_views() -> None:
    """CuPy's reversed views (``x[::-1]``, ``x[:, ::-1]``, both with a step) through the
    functional API: read off the array, so CuPy versions whose DLPack export corrupts
    negative strides give the right results; CuPy arrays out; against NumPy float64."""
    cupy = pytest.importorskip("cupy")
    rng = np.random.default_rng(11)
    base = cupy.asarray(rng.standard_normal((528, 8192)), dtype=cupy.float32)
    for name, view in (("[::-1]", base[::-1]), ("[:, ::-1]", base[:, ::-1]),
                       ("[::-2, ::-3]", base[::-2, ::-3])):  # fmt: skip
        xn = cupy.asnumpy(view).astype(np.float64)
        for axis in (0, 1):
            for reverse in (False, True):
                y = bc.cumsum(view, axis=axis, reverse=reverse)
                assert isinstance(y, cupy.ndarray)
                assert_close(cupy.asnumpy(y), R.scan(ScanKind.CUMSUM, xn, axis, reverse),
                             ElementKind.F32, scale=scale_of(ScanKind.CUMSUM, xn.shape[axis]),
                             what=f"cupy {name} cumsum axis {axis} rev={reverse}")  # fmt: skip
        b = cupy.asarray(rng.standard_normal(view.shape), dtype=cupy.float32)
        out = bc.lerp(view, b, 0.3)
        want = LR.lerp(xn, cupy.asnumpy(b).astype(np.float64), 0.3)
        assert_close(cupy.asnumpy(out), want, ElementKind.F32, what=f"cupy {name} lerp")
        sm = bc.sparsemax(view, axis=-1)
        assert_close(cupy.asnumpy(sm), SR.sparsemax(xn, 1), ElementKind.F32,
                     what=f"cupy {name} sparsemax")  # fmt: skip
