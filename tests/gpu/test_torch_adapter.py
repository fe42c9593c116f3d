"""The torch adapter on CUDA: gradients equal torch autograd's; torch.compile (Inductor)
traces the custom ops without a graph break."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
bct = pytest.importorskip("baracuda.torch")

PAIRS = [
    (lambda t: bct.cumsum(t, 1), lambda t: torch.cumsum(t, 1)),
    (lambda t: bct.cumprod(t, 0), lambda t: torch.cumprod(t, 0)),
    (lambda t: bct.logcumsumexp(t, 1), lambda t: torch.logcumsumexp(t, 1)),
    (lambda t: bct.cummax(t, 1)[0], lambda t: torch.cummax(t, 1).values),
    (lambda t: bct.cummin(t, 0)[0], lambda t: torch.cummin(t, 0).values),
]


@pytest.mark.parametrize("i", range(len(PAIRS)))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_autograd_matches_torch(i: int, dtype: str) -> None:
    ours_fn, ref_fn = PAIRS[i]
    dt = getattr(torch, dtype)
    x = torch.randn(33, 257, device="cuda", dtype=dt)
    x[5, 7] = 0.0
    x.requires_grad_(True)
    dy = torch.randn(33, 257, device="cuda", dtype=dt)
    y = ours_fn(x)
    (g,) = torch.autograd.grad(y, x, dy)
    y_ref = ref_fn(x)
    (g_ref,) = torch.autograd.grad(y_ref, x, dy)
    tol = {"rtol": 1e-4, "atol": 1e-4} if dt == torch.float32 else {}
    torch.testing.assert_close(y, y_ref, **tol)
    torch.testing.assert_close(g, g_ref, **tol)


def test_sparsemax_and_lerp_autograd() -> None:
    x = torch.randn(64, 1000, device="cuda", dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: bct.sparsemax(t, -1), (x[:4, :50].detach()
                                    .requires_grad_(True),))  # fmt: skip
    a = torch.randn(9, 31, device="cuda", dtype=torch.float64, requires_grad=True)
    b = torch.randn(9, 31, device="cuda", dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: bct.lerp(a, b, 0.3), (a, b))


def test_inductor_fullgraph() -> None:
    def f(x: Any) -> Any:
        return bct.sparsemax(bct.cumsum(x, 1) * 0.01, -1).square().sum()

    x = torch.randn(16, 512, device="cuda", requires_grad=True)
    compiled = torch.compile(f, fullgraph=True)
    out = compiled(x)
    (g,) = torch.autograd.grad(out, x)
    out_e = f(x)
    (g_e,) = torch.autograd.grad(out_e, x)
    torch.testing.assert_close(out, out_e)
    torch.testing.assert_close(g, g_e)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64"])
def test_one_position_axes(dtype: str) -> None:
    """An axis of one position on CUDA: every scan's output equals its input and its gradient
    ``dy``, in new tensors (the custom ops refuse outputs that alias their inputs), forward
    and reverse, along a middle axis of a strided view."""
    dt = getattr(torch, dtype)
    base = torch.randn(4, 1, 6, device="cuda", dtype=dt)
    for fn in ("cumsum", "cumprod", "logcumsumexp", "cummax", "cummin"):
        for reverse in (False, True):
            x = base[:, :, ::2].requires_grad_(True)  # strides (6, 6, 2)
            out = getattr(bct, fn)(x, 1, reverse)
            y = out[0] if isinstance(out, tuple) else out
            dy = torch.randn_like(y)
            (g,) = torch.autograd.grad(y, x, dy)
            assert torch.equal(y, x.detach()), (fn, reverse)
            assert torch.equal(g, dy), (fn, reverse)
            assert y.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
            if isinstance(out, tuple):
                assert torch.equal(out[1], torch.zeros_like(out[1]))
