"""The torch adapter (``baracuda.torch``): custom ops with autograd and fake kernels, on CPU
tensors (the array-API path). The same checks run on CUDA in tests/gpu."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

torch = pytest.importorskip("torch")
bct = pytest.importorskip("baracuda.torch")

F64 = torch.float64

UNARY: dict[str, Callable[[Any, int], Any]] = {
    "cumsum": lambda t, d: bct.cumsum(t, d),
    "cumsum_rev": lambda t, d: bct.cumsum(t, d, reverse=True),
    "cumprod": lambda t, d: bct.cumprod(t, d),
    "logcumsumexp": lambda t, d: bct.logcumsumexp(t, d),
    "cummax": lambda t, d: bct.cummax(t, d)[0],
    "cummin_rev": lambda t, d: bct.cummin(t, d, reverse=True)[0],
    "sparsemax": lambda t, d: bct.sparsemax(t, d),
}


@pytest.mark.parametrize("name", list(UNARY))
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gradcheck(name: str, dim: int) -> None:
    # a seeded draw: sparsemax is piecewise linear, and an input within gradcheck's step of
    # its support's edge fails the finite differences (it did once in a run of the suite)
    g = torch.Generator().manual_seed(2026)
    x = torch.randn(5, 9, dtype=F64, generator=g, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: UNARY[name](t, dim), (x,))


@pytest.mark.parametrize("name", list(UNARY))
def test_one_position_axes(name: str) -> None:
    """An axis of one position: the custom ops refuse outputs that alias their inputs, and
    every output here is a new tensor equal to the input (sparsemax: 1)."""
    x = torch.randn(4, 1, 3, dtype=F64, requires_grad=True)
    y = UNARY[name](x, 1)
    want = torch.ones_like(x) if name == "sparsemax" else x
    assert torch.equal(y, want.detach())
    assert y.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
    assert torch.autograd.gradcheck(lambda t: UNARY[name](t, 1), (x,))


def test_cumprod_gradcheck_with_zeros() -> None:
    x = torch.randn(4, 8, dtype=F64)
    x[0, 3] = 0.0
    x[1, 2] = x[1, 5] = 0.0
    x[2] = 0.0
    x.requires_grad_(True)
    ours = torch.autograd.grad(bct.cumprod(x, 1).sum(), x)[0]
    ref = torch.autograd.grad(torch.cumprod(x, 1).sum(), x)[0]
    torch.testing.assert_close(ours, ref)


def test_lerp_gradcheck() -> None:
    a = torch.randn(3, 5, dtype=F64, requires_grad=True)
    b = torch.randn(3, 5, dtype=F64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: bct.lerp(a, b, 0.7), (a, b))


def test_matches_torch_ops() -> None:
    x = torch.round(torch.randn(6, 11, dtype=F64) * 2) / 2  # ties
    torch.testing.assert_close(bct.cumsum(x, 1), torch.cumsum(x, 1))
    torch.testing.assert_close(bct.logcumsumexp(x, 0), torch.logcumsumexp(x, 0))
    v, i = bct.cummax(x, 1)
    ref = torch.cummax(x, 1)
    torch.testing.assert_close(v, ref.values)
    assert torch.equal(i, ref.indices)  # tie_break="last" by default, as torch
    torch.testing.assert_close(bct.lerp(x, 2 * x, 0.25), torch.lerp(x, 2 * x, 0.25))


@pytest.mark.parametrize(
    ("op", "args"),
    [
        ("lerp", lambda: (torch.randn(3, 4), torch.randn(3, 4), 0.3)),
        ("lerp_backward", lambda: (torch.randn(3, 4), 0.3)),
        ("scan", lambda: (torch.randn(3, 4), "cumsum", 1, False, "first")),
        ("scan", lambda: (torch.randn(3, 4), "cummax", 0, True, "last")),
        (
            "scan_backward",
            lambda: (
                torch.randn(3, 4),
                torch.randn(3, 4),
                torch.randn(3, 4),
                "cumprod",
                1,
                False,
                "first",
            ),
        ),
        ("sparsemax", lambda: (torch.randn(3, 4), -1)),
        ("sparsemax_backward", lambda: (torch.randn(3, 4), torch.rand(3, 4), -1)),
    ],
)
def test_opcheck(op: str, args: Callable[[], tuple[Any, ...]]) -> None:
    """torch's own registration checks: schema, fake kernel, autograd registration."""
    a = args()
    if op in ("lerp", "scan", "sparsemax"):
        a = (a[0].requires_grad_(True), *a[1:])
    torch.library.opcheck(getattr(torch.ops.baracuda, op).default, a)


def test_torch_compile_fullgraph() -> None:
    """Fake kernels let dynamo and AOTAutograd trace the ops without a graph break."""

    def f(x: Any, a: Any) -> Any:
        y = bct.sparsemax(bct.cumsum(x, 1) * 0.1, -1)
        return bct.lerp(y, a, 0.5).sum() + bct.cummax(x, 0)[0].sum()

    x = torch.randn(4, 16, dtype=F64, requires_grad=True)
    a = torch.randn(4, 16, dtype=F64, requires_grad=True)
    compiled = torch.compile(f, backend="aot_eager", fullgraph=True)
    out_c = compiled(x, a)
    gx_c, ga_c = torch.autograd.grad(out_c, (x, a))
    out_e = f(x, a)
    gx_e, ga_e = torch.autograd.grad(out_e, (x, a))
    torch.testing.assert_close(out_c, out_e)
    torch.testing.assert_close(gx_c, gx_e)
    torch.testing.assert_close(ga_c, ga_e)
