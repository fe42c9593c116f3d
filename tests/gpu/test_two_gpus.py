"""Two GPUs: every op on the second device's arrays while torch's current device is the first
(and the other way round), calls that alternate devices on the bound path, a stream, a plan
and a thread of each device, CuPy arrays of the second device, the scans that take a
workspace (the scratch pool is per device), and arrays of two devices refused by name.
Skipped on a machine of fewer than two GPUs."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

import baracuda as bc
from baracuda.scan import ScanArgs, ScanDescriptor, ScanPlan
from baracuda.softmax import reference as sm_ref
from baracuda.types import ElementKind, ScanKind

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs"),
]


def _close(got: Any, want: Any, what: str, atol: float = 1e-4, rtol: float = 1e-4) -> None:
    g = torch.as_tensor(got).double().cpu()
    w = torch.as_tensor(want).double().cpu()
    torch.testing.assert_close(g, w, atol=atol, rtol=rtol, msg=lambda m: f"{what}: {m}")


def _every_op(dev: int, seed: int = 0) -> None:
    """Each functional op on arrays of device ``dev``: outputs on ``dev``, values right."""
    g = torch.Generator(device=f"cuda:{dev}").manual_seed(seed)
    x = torch.randn(37, 1000, device=f"cuda:{dev}", generator=g)
    xd = x.double()
    cases: dict[str, tuple[Any, Any]] = {
        "cumsum": (bc.cumsum(x, 1), torch.cumsum(xd, 1)),
        "cumsum dim 0": (bc.cumsum(x, 0), torch.cumsum(xd, 0)),
        "cumsum reverse": (bc.cumsum(x, 1, True), torch.cumsum(xd.flip(1), 1).flip(1)),
        "cumprod": (bc.cumprod(1 + x / 100, 1), torch.cumprod(1 + xd / 100, 1)),
        "logcumsumexp": (bc.logcumsumexp(x, 1), torch.logcumsumexp(xd, 1)),
        "scan_backward cumsum": (bc.scan_backward("cumsum", x, axis=1),
                                 torch.cumsum(xd.flip(1), 1).flip(1)),
        "sparsemax": (bc.sparsemax(x, 1), sm_ref.sparsemax(xd.cpu().numpy(), 1)),
        "lerp": (bc.lerp(x, 2 * x + 1, 0.25), torch.lerp(xd, 2 * xd + 1, 0.25)),
    }
    v, i = bc.cummax(x, 1, tie_break="last")
    tv, ti = torch.cummax(x, 1)
    cases["cummax values"] = (v, tv)
    assert torch.equal(i, ti), "cummax indices"
    assert i.device == x.device
    for what, (got, want) in cases.items():
        assert got.device == x.device, (what, got.device)
        _close(got, want, f"{what} on cuda:{dev}")


def test_every_op_on_the_other_device() -> None:
    torch.cuda.set_device(0)
    _every_op(1)
    assert torch.cuda.current_device() == 0  # a call leaves torch's current device alone
    torch.cuda.set_device(1)
    try:
        _every_op(0)
        assert torch.cuda.current_device() == 1
    finally:
        torch.cuda.set_device(0)


def test_calls_alternate_devices() -> None:
    """The same signature but for the device, back and forth: the bound path (remembered
    calls) keys on the device and runs each call on its own device's kernels."""
    xs = [torch.randn(64, 4096, device=f"cuda:{d}") for d in (0, 1)]
    refs = [torch.cumsum(x.double(), 1) for x in xs]
    for rep in range(4):
        for d in (0, 1, 1, 0):
            y = bc.cumsum(xs[d], 1)
            assert y.device == xs[d].device
            _close(y, refs[d], f"rep {rep} cuda:{d}", atol=1e-3)
    with torch.cuda.device(1):  # torch's current device changed inside a block and restored
        _close(bc.cumsum(xs[0], 1), refs[0], "cuda:0 inside device(1)", atol=1e-3)
        _close(bc.cumsum(xs[1], 1), refs[1], "cuda:1 inside device(1)", atol=1e-3)
    _close(bc.cumsum(xs[0], 1), refs[0], "cuda:0 after the block", atol=1e-3)


@pytest.mark.parametrize(("shape", "axis"), [((2, 2**22), 1), ((3, 50001), 1),
                                            ((4096, 1024), 0), ((2**20, 2), 0)])  # fmt: skip
def test_workspace_scans_on_both_devices(shape: tuple[int, int], axis: int) -> None:
    """Scans whose launches take a workspace (look-back, stream and cooperative kernels):
    each device's scratch comes from that device."""
    for d in (1, 0, 1):
        x = torch.randn(*shape, device=f"cuda:{d}")
        y = bc.cumsum(x, axis)
        ref = torch.cumsum(x.double(), axis)
        scale = float(ref.abs().max()) + 1
        _close(y / scale, ref / scale, f"{shape} axis {axis} cuda:{d}", atol=2e-6, rtol=0)


def test_a_stream_of_the_other_device() -> None:
    s1 = torch.cuda.Stream(device=1)
    x1 = torch.randn(33, 777, device="cuda:1")
    x0 = torch.randn(33, 777, device="cuda:0")
    with torch.cuda.stream(s1):
        x1b = x1 * 2  # written on s1
    y = bc.cumsum(x1b, 1, stream=s1)
    s1.synchronize()
    _close(y, torch.cumsum(x1.double() * 2, 1), "stream of cuda:1", atol=1e-3)
    with pytest.raises(bc.InvalidProblem, match="device"):
        bc.cumsum(x0, 1, stream=s1)


def test_a_plan_of_the_other_device() -> None:
    s1 = bc.Stream.wrap(torch.cuda.current_stream(1))
    plan = ScanPlan.select(s1, ScanDescriptor(ScanKind.CUMSUM, (8, 300), 1, ElementKind.F32))
    x1 = torch.randn(8, 300, device="cuda:1")
    y1 = torch.full_like(x1, float("nan"))
    ws = bc.Workspace.allocate(plan.workspace_size(), s1)
    assert ws.device_id in (None, 1)
    plan.run(s1, ws, ScanArgs(x1, y1))
    torch.cuda.synchronize(1)
    _close(y1, torch.cumsum(x1.double(), 1), "plan on cuda:1")
    x0 = torch.randn(8, 300, device="cuda:0")
    with pytest.raises(bc.InvalidProblem, match=r"on device 0 but the plan was selected for "
                                                r"device 1"):  # fmt: skip
        plan.run(s1, ws, ScanArgs(x0, torch.empty_like(x0)))
    with pytest.raises(bc.InvalidProblem, match="stream is on device 0"):
        plan.run(bc.Stream.wrap(torch.cuda.Stream(device=0)), ws, ScanArgs(x1, y1))
    ws0 = bc.Workspace.allocate(plan.workspace_size(), bc.Stream.wrap(torch.cuda.current_stream(0)))
    with pytest.raises(bc.InvalidProblem, match="workspace is on device 0"):
        plan.run(s1, ws0, ScanArgs(x1, y1))


def test_arrays_of_two_devices_are_refused() -> None:
    torch.cuda.set_device(0)
    a = torch.randn(16, 16, device="cuda:0")
    b = torch.randn(16, 16, device="cuda:1")
    with pytest.raises(bc.InvalidProblem, match="device"):
        bc.lerp(a, b, 0.5)
    with pytest.raises(bc.InvalidProblem, match="device"):
        bc.lerp(b, a, 0.5)
    with pytest.raises(bc.InvalidProblem, match="device"):
        bc.scan_backward("cumprod", a, x=b, y=b, axis=1)
    with pytest.raises(bc.InvalidProblem, match="device"):
        bc.sparsemax_backward(b, a, 1)
    assert torch.cuda.current_device() == 0  # given back after the errors too


def test_a_thread_a_device() -> None:
    errors: list[BaseException] = []

    def work(d: int) -> None:
        try:
            torch.cuda.set_device(d)
            for k in range(20):
                x = torch.randn(128, 2048 + k, device=f"cuda:{d}")
                y = bc.cumsum(x, 1)
                _close(y, torch.cumsum(x.double(), 1), f"thread of cuda:{d}, call {k}",
                       atol=1e-3)  # fmt: skip
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(d,)) for d in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_cupy_arrays_of_the_other_device() -> None:
    cp = pytest.importorskip("cupy")
    with cp.cuda.Device(1):
        x = cp.random.standard_normal((50, 3000), dtype=cp.float32)
    y = bc.cumsum(x, 1)  # CuPy's current device is 0 here
    assert isinstance(y, cp.ndarray) and y.device.id == 1
    assert cp.cuda.runtime.getDevice() == 0
    with cp.cuda.Device(1):
        got = cp.asnumpy(y)
    want = np.cumsum(cp.asnumpy(x).astype(np.float64), 1)
    _close(torch.from_numpy(got), torch.from_numpy(want), "CuPy on device 1", atol=1e-3)
