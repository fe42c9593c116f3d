"""The functional API's scratch workspace: a pool of the package's own per device, kept
across synchronizations (``Workspace.set_scratch_keep``), allocated only by calls whose
launches use a workspace; the device's default pool is left as it was."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import baracuda as bc
from baracuda._cuda import memory
from baracuda.scan import reference as scan_ref
from baracuda.types import ElementKind, ScanKind
from tests.helpers import assert_close

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")


def _attr(pool: Any, name: str) -> int:
    from cuda.bindings import driver as d

    err, v = d.cuMemPoolGetAttribute(pool, getattr(d.CUmemPool_attribute, name))
    assert int(err) == 0
    return int(v)


def _check_cumsum(y: Any, x: Any, axis: int, what: str) -> None:
    ref = scan_ref.scan(ScanKind.CUMSUM, x.double().cpu().numpy(), axis)
    scale = max(1.0, math.sqrt(x.shape[axis]) / 4)
    assert_close(y, ref, ElementKind.F32, scale=scale, what=what)


def test_scratch_pool_keeps_its_memory_and_leaves_the_default_pool() -> None:
    from cuda.bindings import driver as d

    dev = torch.cuda.current_device()
    err, default = d.cuDeviceGetDefaultMemPool(dev)
    assert int(err) == 0
    before = _attr(default, "CU_MEMPOOL_ATTR_RELEASE_THRESHOLD")
    # (3, 50001): chunks with carries in the workspace; (64, 1024): a block a row, none
    xw = torch.randn(3, 50001, device="cuda")
    xn = torch.randn(64, 1024, device="cuda")
    try:
        for keep in (0, 256 * 2**20):
            bc.Workspace.set_scratch_keep(keep)
            for _ in range(3):
                yw = bc.cumsum(xw, axis=1)
                yn = bc.cumsum(xn, axis=1)
                torch.cuda.synchronize()
                _check_cumsum(yw, xw, 1, f"(3, 50001) keep {keep}")
                _check_cumsum(yn, xn, 1, f"(64, 1024) keep {keep}")
            pool = memory._scratch_pool(dev)
            assert _attr(pool, "CU_MEMPOOL_ATTR_RELEASE_THRESHOLD") == keep
            assert _attr(pool, "CU_MEMPOOL_ATTR_USED_MEM_CURRENT") == 0  # every scratch freed
            reserved = _attr(pool, "CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT")
            assert (reserved > 0) if keep else (reserved == 0), (keep, reserved)
        # only the calls that use a workspace draw from the pool
        d.cuMemPoolSetAttribute(pool, d.CUmemPool_attribute.CU_MEMPOOL_ATTR_USED_MEM_HIGH,
                                d.cuuint64_t(0))  # fmt: skip
        for _ in range(5):
            bc.cumsum(xn, axis=1)
        torch.cuda.synchronize()
        assert _attr(pool, "CU_MEMPOOL_ATTR_USED_MEM_HIGH") == 0
        bc.cumsum(xw, axis=1)
        torch.cuda.synchronize()
        assert _attr(pool, "CU_MEMPOOL_ATTR_USED_MEM_HIGH") > 0
    finally:
        bc.Workspace.set_scratch_keep(256 * 2**20)
    assert int(pool) != int(default)
    assert _attr(default, "CU_MEMPOOL_ATTR_RELEASE_THRESHOLD") == before


def test_scratch_from_a_side_stream_and_a_workspace_heavy_backward() -> None:
    """Scratch taken on a side stream (torch's current stream) and a backward whose winner
    flags fill the workspace (a byte an element) give the reference's result after the
    pool's memory was handed back (keep 0) and kept."""
    x = torch.randn(257, 4099, device="cuda")
    dy = torch.randn_like(x)
    s = torch.cuda.Stream()
    try:
        for keep in (0, 256 * 2**20):
            bc.Workspace.set_scratch_keep(keep)
            with torch.cuda.stream(s):
                y = bc.cumsum(x, axis=0)
                dx = bc.scan_backward("cummax", dy, x=x, axis=0)
            s.synchronize()
            _check_cumsum(y, x, 0, f"axis 0, keep {keep}")
            xn, dyn = x.double().cpu().numpy(), dy.double().cpu().numpy()
            dref = scan_ref.scan_backward(ScanKind.CUMMAX, dyn, x=xn, axis=0)
            mag = np.abs(scan_ref.scan_backward(ScanKind.CUMMAX, np.abs(dyn), x=xn, axis=0))
            assert_close(dx, dref, ElementKind.F32, scale=max(1.0, math.sqrt(257) / 4),
                         magnitude=mag, what=f"cummax backward, keep {keep}")  # fmt: skip
            # and torch autograd's gradient (random floats hold no ties)
            xt = x.double().cpu().requires_grad_()
            torch.cummax(xt, 0)[0].backward(dy.double().cpu())
            assert_close(dx, xt.grad.numpy(), ElementKind.F32, scale=4.0, magnitude=mag,
                         what="cummax backward vs torch")  # fmt: skip
    finally:
        bc.Workspace.set_scratch_keep(256 * 2**20)
