"""Lerp forward and backward on the GPU against the float64 reference, every dtype and layout."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import baracuda as bc
from baracuda.elementwise import reference
from baracuda.types import ElementKind
from tests.helpers import assert_close, poisoned, torch_dtype

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

ELEMENTS = list(ElementKind)
WEIGHTS = [0.0, 0.3, 0.5, 0.75, 1.0, -0.4, 1.7]


def _ref_lerp(a: torch.Tensor, b: torch.Tensor, w: float) -> np.ndarray:
    return reference.lerp(a.detach().double().cpu().numpy(), b.detach().double().cpu().numpy(), w)


def _views(shape: tuple[int, ...], dt: torch.dtype) -> dict[str, torch.Tensor]:
    """Inputs of several layouts with the same logical shape."""
    base = torch.randn(shape, device="cuda").to(dt)
    big = torch.randn(tuple(2 * d + 1 for d in shape), device="cuda").to(dt)
    sl = tuple(slice(1, 2 * d + 1, 2) for d in shape)
    out = {"contiguous": base, "strided": big[sl]}
    if len(shape) >= 2:
        out["transposed"] = torch.randn(shape[::-1], device="cuda").to(dt).transpose(0, -1)
        if out["transposed"].shape != base.shape:
            del out["transposed"]
    # misaligned by one element: not 16-byte aligned, takes the strided kernel
    flat = torch.randn(base.numel() + 1, device="cuda").to(dt)
    out["offset"] = flat[1:].view(shape)
    return out


SHAPES = [(1,), (7,), (1000,), (1023,), (3, 5), (37, 1029), (4, 1, 9, 5), (2, 3, 4, 5, 6, 7, 2, 3)]


@pytest.mark.parametrize("element", ELEMENTS, ids=lambda e: e.value)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_lerp_forward_layouts(element: ElementKind, shape: tuple[int, ...]) -> None:
    dt = torch_dtype(element)
    views_a, views_b = _views(shape, dt), _views(shape, dt)
    s = bc.Stream.wrap(torch.cuda.current_stream())
    for w in (0.3, 0.75):
        plan = bc.BinaryParamPlan.select(s, bc.BinaryParamDescriptor(shape, element, w))
        for name in views_a:
            a, b = views_a[name], views_b[name]
            out = poisoned(shape, element)
            plan.run(s, bc.Workspace.none(), bc.BinaryParamArgs(a, b, out))
            assert_close(out, _ref_lerp(a, b, w), element, what=f"lerp {name} w={w}")


@pytest.mark.parametrize("element", ELEMENTS, ids=lambda e: e.value)
@pytest.mark.parametrize("w", WEIGHTS)
def test_lerp_weights_and_functional(element: ElementKind, w: float) -> None:
    dt = torch_dtype(element)
    a = torch.randn(513, 33, device="cuda").to(dt)
    b = torch.randn(513, 33, device="cuda").to(dt)
    out = bc.lerp(a, b, w)
    assert isinstance(out, torch.Tensor) and out.dtype == dt and out.device == a.device
    assert_close(out, _ref_lerp(a, b, w), element, what=f"lerp w={w}")
    # torch.lerp computes half types in f32 with the same formula: equal up to FMA contraction
    torch.testing.assert_close(out, torch.lerp(a, b, w))


@pytest.mark.parametrize("element", ELEMENTS, ids=lambda e: e.value)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_lerp_backward_layouts(element: ElementKind, shape: tuple[int, ...]) -> None:
    dt = torch_dtype(element)
    s = bc.Stream.wrap(torch.cuda.current_stream())
    w = 0.3
    plan = bc.BinaryParamBackwardPlan.select(s, bc.BinaryParamBackwardDescriptor(shape, element, w))
    for name, dy in _views(shape, dt).items():
        da, db = poisoned(shape, element), poisoned(shape, element)
        # outputs strided too
        if len(shape) >= 2 and name == "transposed":
            da = poisoned(shape[::-1], element).transpose(0, -1)
        plan.run(s, bc.Workspace.none(), bc.BinaryParamBackwardArgs(dy, da, db))
        g = dy.double().cpu().numpy()
        assert_close(da, (1 - w) * g, element, what=f"da {name}")
        assert_close(db, w * g, element, what=f"db {name}")


@pytest.mark.parametrize("element", ELEMENTS, ids=lambda e: e.value)
def test_lerp_backward_matches_autograd(element: ElementKind) -> None:
    dt = torch_dtype(element)
    a = torch.randn(257, 65, device="cuda", dtype=dt, requires_grad=True)
    b = torch.randn(257, 65, device="cuda", dtype=dt, requires_grad=True)
    dy = torch.randn(257, 65, device="cuda", dtype=dt)
    ga, gb = torch.autograd.grad(torch.lerp(a, b, 0.3), (a, b), dy)
    da, db = bc.lerp_backward(dy, 0.3)
    torch.testing.assert_close(da, ga)
    torch.testing.assert_close(db, gb)


@pytest.mark.parametrize("element", ELEMENTS, ids=lambda e: e.value)
def test_empty(element: ElementKind) -> None:
    dt = torch_dtype(element)
    for shape in [(0,), (3, 0), (0, 5, 2)]:
        a = torch.empty(shape, device="cuda", dtype=dt)
        assert bc.lerp(a, a, 0.5).shape == shape
        da, db = bc.lerp_backward(a, 0.5)
        assert da.shape == db.shape == shape


def test_rank0() -> None:
    a, b = torch.tensor(1.0, device="cuda"), torch.tensor(3.0, device="cuda")
    assert bc.lerp(a, b, 0.25).item() == 1.5


def test_large_64bit_indexing() -> None:
    """More than 2^31 elements of f16 cross the 32-bit index boundary, forward and backward,
    every element checked against torch (the vec kernels and their scalar tail)."""
    n = 2**31 + 123
    try:
        a = torch.empty(n, device="cuda", dtype=torch.float16).uniform_(-2, 2)
        b = torch.empty(n, device="cuda", dtype=torch.float16).uniform_(-2, 2)
    except torch.OutOfMemoryError:
        pytest.skip("not enough GPU memory")
    out = bc.lerp(a, b, 0.3)
    assert torch.equal(out, torch.lerp(a, b, 0.3))  # the same f32 arithmetic as torch
    del out
    a[-1000:] = 2.0
    a[:1000] = 4.0
    da, db = bc.lerp_backward(a, 0.25)
    assert da[-1].item() == 1.5 and db[-1].item() == 0.5 and da[0].item() == 3.0
    assert torch.equal(da, (a.float() * 0.75).half()) and torch.equal(db, (a.float() * 0.25).half())
    del a, b, da, db
    torch.cuda.empty_cache()


def test_cupy_and_jax_inputs() -> None:
    cupy = pytest.importorskip("cupy")
    a = cupy.random.standard_normal((99, 7), dtype=cupy.float32)
    b = cupy.random.standard_normal((99, 7), dtype=cupy.float32)
    out = bc.lerp(a, b, 0.4)
    assert isinstance(out, cupy.ndarray)
    assert_close(
        out,
        reference.lerp(a.get().astype(np.float64), b.get().astype(np.float64), 0.4),
        ElementKind.F32,
    )
    a_s = a[::2, ::3]
    out_s = bc.lerp(a_s, b[::2, ::3], 0.4)
    truth = reference.lerp(a_s.get().astype(np.float64), b[::2, ::3].get().astype(np.float64), 0.4)
    assert_close(out_s, truth, ElementKind.F32)


def test_jax_outputs_wait_for_their_kernels() -> None:
    """JAX reads an output on its own stream: the export must order that stream after the
    kernel that writes the output (on the legacy default stream for JAX callers), here held
    back by a spin of a few milliseconds on that stream, for every op family and for bf16
    outputs (which JAX reinterprets with an op of its own)."""
    jax = pytest.importorskip("jax")
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("jax has no GPU backend here")
    jnp = jax.numpy
    from baracuda.scan import reference as scan_ref
    from baracuda.softmax import reference as sm_ref

    rng = np.random.default_rng(5)
    x64 = rng.standard_normal((64, 4096))
    assert torch.cuda.current_stream().cuda_stream == 0  # the spin holds the legacy stream
    for dt, element in ((jnp.float32, ElementKind.F32), (jnp.bfloat16, ElementKind.BF16)):
        x = jnp.asarray(x64, dtype=dt).block_until_ready()
        xr = np.asarray(x.astype(jnp.float32)).astype(np.float64)
        sums = {"scale": np.sqrt(4096.0) / 4, "magnitude": scan_ref.cumsum(np.abs(xr), axis=1)}
        cases: list[tuple[Any, np.ndarray, dict[str, Any]]] = [
            (lambda: bc.lerp(x, jnp.ones_like(x), 0.25),
             reference.lerp(xr, np.ones_like(xr), 0.25), {}),
            (lambda: bc.cumsum(x, axis=1), scan_ref.cumsum(xr, axis=1), sums),
            (lambda: bc.sparsemax(x), sm_ref.sparsemax(xr, -1), {}),
        ]  # fmt: skip
        for _ in range(3):
            for call, want, tol in cases:
                torch.cuda._sleep(20_000_000)  # ~10 ms before the kernel can start
                out = call()
                assert type(out).__module__.startswith("jax") and out.dtype == dt
                got = np.asarray(out.astype(jnp.float32)).astype(np.float64)  # JAX's stream
                assert_close(got, want, element, what=f"{dt.__name__} {want.shape}", **tol)
    torch.cuda.synchronize()


def _doubled_cases() -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
    """Inputs (64, 4096) and the float64 results of cumsum along dim 1 and of lerp(_, 1,
    0.25) on twice them (exact in f32), with the cumsum's tolerance terms."""
    from baracuda.scan import reference as scan_ref

    x64 = np.random.default_rng(11).standard_normal((64, 4096))
    twice = 2 * x64.astype(np.float32).astype(np.float64)
    want_sum = scan_ref.cumsum(twice, axis=1)
    sums = {"scale": np.sqrt(4096.0) / 4, "magnitude": scan_ref.cumsum(np.abs(twice), axis=1)}
    return x64, want_sum, reference.lerp(twice, np.ones_like(twice), 0.25), sums


def test_torch_arrays_on_another_stream_live_until_their_kernels_ran() -> None:
    """A temporary handed over through DLPack is dropped by the caller when the call returns,
    before the kernels that read it have run (held back here by a spin on the run's stream).
    A torch tensor run on a stream other than torch's current one goes back to torch's cache
    then, and torch writes its next tensors there on its current stream. The run keeps the
    import until its kernels have completed, so they read the caller's values."""
    x64, want_sum, want_lerp, sums = _doubled_cases()
    side = torch.cuda.Stream()
    xt = torch.from_numpy(x64).float().cuda()
    ones = torch.ones_like(xt)
    for _ in range(3):
        with torch.cuda.stream(side):
            torch.cuda._sleep(20_000_000)  # ~10 ms before the kernels can start
        outs = [bc.cumsum(xt * 2, axis=1, stream=side), bc.lerp(xt * 2, ones, 0.25, stream=side)]
        junk = [torch.full_like(xt, 1e6) for _ in range(8)]  # torch reuses freed blocks
        torch.cuda.current_stream().wait_stream(side)
        got = [o.double().cpu().numpy() for o in outs]
        del junk
        assert_close(got[0], want_sum, ElementKind.F32, what="torch cumsum, side stream", **sums)
        assert_close(got[1], want_lerp, ElementKind.F32, what="torch lerp, side stream")


def test_cupy_arrays_on_another_stream_live_until_their_kernels_ran() -> None:
    """As above for CuPy arrays run on a non-blocking stream of their own while CuPy's
    current stream is the legacy default one, where CuPy's pool hands the freed memory out
    again."""
    cupy = pytest.importorskip("cupy")
    x64, want_sum, want_lerp, sums = _doubled_cases()
    side = cupy.cuda.Stream(non_blocking=True)
    spin = torch.cuda.ExternalStream(side.ptr)
    xc = cupy.asarray(x64, dtype=cupy.float32)
    ones = cupy.ones_like(xc)
    assert cupy.cuda.get_current_stream().ptr == 0
    for _ in range(3):
        with torch.cuda.stream(spin):
            torch.cuda._sleep(20_000_000)
        outs = [bc.cumsum(xc * 2, axis=1, stream=side), bc.lerp(xc * 2, ones, 0.25, stream=side)]
        junk = [cupy.full_like(xc, 1e6) for _ in range(8)]  # CuPy's pool reuses freed blocks
        side.synchronize()
        got = [cupy.asnumpy(o).astype(np.float64) for o in outs]
        del junk
        assert_close(got[0], want_sum, ElementKind.F32, what="cupy cumsum, side stream", **sums)
        assert_close(got[1], want_lerp, ElementKind.F32, what="cupy lerp, side stream")


def test_jax_arrays_live_until_their_kernels_ran() -> None:
    """As above for JAX arrays: the kernels run on the legacy default stream, JAX frees a
    dropped temporary and writes its next arrays there on its own stream."""
    jax = pytest.importorskip("jax")
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("jax has no GPU backend here")
    jnp = jax.numpy
    x64, want_sum, want_lerp, sums = _doubled_cases()
    base = jnp.asarray(x64, dtype=jnp.float32).block_until_ready()
    jones = jnp.ones_like(base).block_until_ready()
    assert torch.cuda.current_stream().cuda_stream == 0  # the spin holds the legacy stream
    for _ in range(3):
        torch.cuda._sleep(20_000_000)
        outs = [bc.cumsum(base * 2, axis=1), bc.lerp(base * 2, jones, 0.25)]
        junk = [jnp.full(base.shape, 1e6, jnp.float32) for _ in range(8)]  # JAX reuses memory
        for j in junk:
            j.block_until_ready()  # written on JAX's stream while the spin holds ours
        got = [np.asarray(o).astype(np.float64) for o in outs]
        del junk
        assert_close(got[0], want_sum, ElementKind.F32, what="jax cumsum", **sums)
        assert_close(got[1], want_lerp, ElementKind.F32, what="jax lerp")
    torch.cuda.synchronize()


def test_jax_inputs() -> None:
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("jax has no GPU backend here")
    a = jnp.arange(1000, dtype=jnp.float32) / 7
    b = jnp.ones(1000, dtype=jnp.float32)
    out = bc.lerp(a, b, 0.25)
    assert type(out).__module__.startswith("jax")
    a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
    assert_close(np.asarray(out), reference.lerp(a64, b64, 0.25), ElementKind.F32)
    da, db = bc.lerp_backward(a, 0.25)
    assert_close(np.asarray(db), 0.25 * a64, ElementKind.F32)
    assert_close(np.asarray(da), 0.75 * a64, ElementKind.F32)
    # bf16 outputs come back as JAX bf16 arrays (a device copy where cuda.core cannot export
    # bfloat16 through DLPack)
    ah, bh = a.astype(jnp.bfloat16), b.astype(jnp.bfloat16)
    out = bc.lerp(ah, bh, 0.25)
    assert type(out).__module__.startswith("jax") and out.dtype == jnp.bfloat16
    ah64, bh64 = np.asarray(ah).astype(np.float64), np.asarray(bh).astype(np.float64)
    assert_close(np.asarray(out).astype(np.float64), reference.lerp(ah64, bh64, 0.25),
                 ElementKind.BF16)  # fmt: skip
    # again: the export's outcome is remembered after the first bf16 output
    out = bc.lerp(ah, bh, 0.5)
    assert type(out).__module__.startswith("jax") and out.dtype == jnp.bfloat16
    assert_close(np.asarray(out).astype(np.float64), reference.lerp(ah64, bh64, 0.5),
                 ElementKind.BF16)  # fmt: skip


def test_stream_ordering() -> None:
    """Work pending on the producer's current stream is finished before our kernel reads.

    torch's DLPack export orders the tensor's *current* stream (``side`` here) before the
    consumer's stream (``main``); the run must not read ``a``/``b`` before they are written.
    """
    side = torch.cuda.Stream()
    main = torch.cuda.current_stream()
    n = 1 << 20
    for _ in range(3):
        out = torch.empty(n, device="cuda")
        desc = bc.BinaryParamDescriptor((n,), bc.ElementKind.F32, 0.5)
        plan = bc.BinaryParamPlan.select(main, desc)
        with torch.cuda.stream(side):
            a = torch.empty(n, device="cuda")
            b = torch.empty(n, device="cuda")
            torch.cuda._sleep(50_000_000)  # tens of ms of GPU time before the writes
            a.fill_(2.0)
            b.fill_(4.0)
            plan.run(main, bc.Workspace.none(), bc.BinaryParamArgs(a, b, out))
        torch.cuda.synchronize()
        assert torch.all(out == 3.0)


def test_cuda_graph_capture() -> None:
    a = torch.randn(4096, device="cuda")
    b = torch.randn(4096, device="cuda")
    out = torch.empty_like(a)
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        plan = bc.BinaryParamPlan.select(s, bc.BinaryParamDescriptor((4096,), bc.ElementKind.F32,
                                                                     0.5))  # fmt: skip
        plan.run(s, bc.Workspace.none(), bc.BinaryParamArgs(a, b, out))  # warm
        with torch.cuda.graph(g, stream=s):
            plan.run(s, bc.Workspace.none(), bc.BinaryParamArgs(a, b, out))
    torch.cuda.current_stream().wait_stream(s)
    a.copy_(torch.randn(4096, device="cuda"))
    out.fill_(float("nan"))
    g.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out, torch.lerp(a, b, 0.5))


def test_process_exits_cleanly_with_arrays_held() -> None:
    """A process whose last call left arrays held (JAX arrays, a torch tensor of another
    stream; their kernels still queued behind a spin) exits cleanly: they are dropped at exit
    before JAX's and torch's own exit handlers run."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import torch, baracuda as bc
        from baracuda._cuda import retain
        x = torch.randn(64, 4096, device="cuda")
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            torch.cuda._sleep(50_000_000)
        y = bc.cumsum(x * 2, axis=1, stream=side)
        try:
            import jax
            if any(d.platform == "gpu" for d in jax.devices()):
                torch.cuda._sleep(50_000_000)
                xj = jax.numpy.ones((64, 4096))
                z = bc.cumsum(xj * 2, axis=1)
        except ImportError:
            pass
        assert retain.held() >= 1
        print("held", retain.held())
    """)
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)  # fmt: skip
    assert got.returncode == 0, got.stderr[-2000:]
    assert "held" in got.stdout


def test_graph_capture_while_arrays_are_held() -> None:
    """Arrays still held from an earlier run leave a graph capture that follows alone:
    inside it, a checked run (in place, so never replayed from a bound one) holds nothing
    and queries no event (an event query during a capture is not allowed). The graph replays
    correctly, and the held arrays are released once their kernels have completed."""
    from baracuda._cuda import retain

    side = torch.cuda.Stream()
    x = torch.randn(64, 4096, device="cuda")
    ones = torch.ones_like(x)
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    w = x.clone()
    with torch.cuda.stream(s):  # warm: every module loaded before the spin starts
        plan = bc.BinaryParamPlan.select(s, bc.BinaryParamDescriptor((64, 4096), bc.ElementKind.F32,
                                                                     0.5))  # fmt: skip
        plan.run(s, bc.Workspace.none(), bc.BinaryParamArgs(w, ones, w))
        y = bc.cumsum(x, axis=1)
    bc.lerp(x, ones, 0.25, stream=side)
    torch.cuda.synchronize()
    retain.release_done()
    with torch.cuda.stream(side):
        torch.cuda._sleep(200_000_000)  # ~0.1 s: past the host's work up to the capture's end
    pending = bc.lerp(x * 2, ones, 0.25, stream=side)  # held: another stream than torch's
    want_pending = torch.lerp(x * 2, ones, 0.25)
    assert retain.held() >= 1
    with torch.cuda.stream(s), torch.cuda.graph(g, stream=s):
        assert retain.held() >= 1
        y = bc.cumsum(x, axis=1)
        plan.run(s, bc.Workspace.none(), bc.BinaryParamArgs(w, ones, w))  # checked
        assert retain.held() >= 1
    torch.cuda.current_stream().wait_stream(s)
    x.copy_(torch.randn(64, 4096, device="cuda"))
    w0 = torch.randn(64, 4096, device="cuda")
    w.copy_(w0)
    y.fill_(float("nan"))
    g.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(y, torch.cumsum(x, 1), rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(w, torch.lerp(w0, ones, 0.5))
    retain.release_done()
    assert retain.held() == 0
    torch.testing.assert_close(pending, want_pending)


def test_errors_name_the_field() -> None:
    s = bc.Stream.wrap(torch.cuda.current_stream())
    plan = bc.BinaryParamPlan.select(s, bc.BinaryParamDescriptor((8, 8), bc.ElementKind.F32, 0.5))
    a = torch.randn(8, 8, device="cuda")
    with pytest.raises(bc.InvalidProblem, match=r"b\.shape must be \(8, 8\) \(got \(8, 9\)\)"):
        plan.can_implement(bc.BinaryParamArgs(a, torch.randn(8, 9, device="cuda"), a))
    with pytest.raises(bc.InvalidProblem, match="b dtype must be f32"):
        plan.can_implement(bc.BinaryParamArgs(a, a.double(), a))
    with pytest.raises(bc.InvalidProblem, match="CUDA device memory"):
        plan.can_implement(bc.BinaryParamArgs(a, a.cpu(), a))
    with pytest.raises(bc.InvalidProblem, match="out has overlapping elements"):
        plan.can_implement(bc.BinaryParamArgs(a, a, torch.randn(8, 1, device="cuda").expand(8, 8)))
    with pytest.raises(bc.InvalidProblem, match="b is required"):
        plan.can_implement(bc.BinaryParamArgs(a, None, a))
    with pytest.raises(bc.InvalidProblem, match="shapes|shape"):
        bc.lerp(a, torch.randn(4, device="cuda"), 0.5)
    if torch.cuda.device_count() > 1:
        other = torch.randn(8, 8, device="cuda:1")
        with pytest.raises(bc.InvalidProblem, match="on device 1"):
            plan.can_implement(bc.BinaryParamArgs(a, other, a))


def test_workspace_too_small_and_sku() -> None:
    s = bc.Stream.wrap(torch.cuda.current_stream())
    plan = bc.BinaryParamPlan.select(s, bc.BinaryParamDescriptor((8,), bc.ElementKind.BF16, 0.5))
    assert plan.workspace_size() == 0
    sku = plan.sku()
    assert sku.arch.startswith("sm_") and sku.element is bc.ElementKind.BF16
    assert plan.precision_guarantee().deterministic
    ws = bc.Workspace.allocate(1024, s)
    assert ws.nbytes == 1024
    t = torch.empty(100, dtype=torch.uint8, device="cuda")
    ws2 = bc.Workspace.from_tensor(t)
    assert ws2.nbytes == 100
    with pytest.raises(bc.WorkspaceTooSmall, match="needs 4096"):
        plan._check_workspace(ws2, 4096)
