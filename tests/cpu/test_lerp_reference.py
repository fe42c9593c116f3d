"""The lerp reference (the CPU path and the GPU oracle) against torch CPU autograd, and the
functional API on numpy, array-api-strict and torch CPU."""

from __future__ import annotations

import numpy as np
import pytest

import baracuda as bc
from baracuda.elementwise import reference

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("w", [0.0, 0.2, 0.5, 0.9, 1.0, -1.5, 2.5])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
def test_reference_matches_torch(w: float, dtype: torch.dtype) -> None:
    a = torch.randn(33, 17, dtype=dtype, requires_grad=True)
    b = torch.randn(33, 17, dtype=dtype, requires_grad=True)
    y = torch.lerp(a, b, w)
    dy = torch.randn(33, 17, dtype=dtype)
    ga, gb = torch.autograd.grad(y, (a, b), dy)
    ours = reference.lerp(a.detach(), b.detach(), w)
    assert ours.dtype == dtype
    torch.testing.assert_close(ours, y.detach())  # same formula; torch may fuse (FMA)
    da, db = reference.lerp_backward(dy, w)
    torch.testing.assert_close(da, ga)
    torch.testing.assert_close(db, gb)


def test_functional_numpy_and_torch_cpu() -> None:
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((5, 7)), rng.standard_normal((5, 7))
    out = bc.lerp(a, b, 0.3)
    assert isinstance(out, np.ndarray) and out.dtype == np.float64
    np.testing.assert_allclose(out, a + 0.3 * (b - a), rtol=1e-15)
    da, db = bc.lerp_backward(a.astype(np.float32), 0.25)
    assert da.dtype == np.float32
    np.testing.assert_allclose(db, 0.25 * a.astype(np.float32), rtol=1e-7)
    t = bc.lerp(torch.from_numpy(a), torch.from_numpy(b), 0.3)
    assert isinstance(t, torch.Tensor)
    np.testing.assert_allclose(t.numpy(), out, rtol=1e-15)
    # strided CPU views
    np.testing.assert_allclose(
        bc.lerp(a.T, b.T, 0.6), (a + 0.6 * (b - a)).T, rtol=1e-14, atol=1e-15
    )


def test_functional_array_api_strict() -> None:
    xp = pytest.importorskip("array_api_strict")
    a = xp.asarray([[1.0, 2.0], [3.0, 4.0]], dtype=xp.float32)
    b = xp.asarray([[3.0, 2.0], [1.0, 0.0]], dtype=xp.float32)
    out = bc.lerp(a, b, 0.5)
    assert type(out) is type(a)
    assert xp.all(out == xp.asarray([[2.0, 2.0], [2.0, 2.0]], dtype=xp.float32))
    da, db = bc.lerp_backward(a, 0.25)
    assert xp.all(db == a * 0.25)
    assert xp.all(da == a * 0.75)


def test_functional_errors() -> None:
    with pytest.raises(bc.InvalidProblem, match="weight must be a real number"):
        bc.lerp(np.ones(3), np.ones(3), np.ones(3))  # type: ignore[arg-type]
    with pytest.raises(bc.InvalidProblem, match="weight"):
        bc.lerp_backward(np.ones(3), True)
