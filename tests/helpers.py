"""Test helpers: dtype tables, poisoned outputs, comparisons that show the mismatches."""

from __future__ import annotations

from typing import Any

import numpy as np

from baracuda.types import ElementKind

# (rtol, atol) against a float64 reference, per element type
TOLERANCES: dict[ElementKind, tuple[float, float]] = {
    ElementKind.F32: (2e-5, 2e-6),
    ElementKind.F16: (2e-3, 2e-3),
    ElementKind.BF16: (1.6e-2, 1.6e-2),
    ElementKind.F64: (1e-12, 1e-13),
}

TORCH_NAMES = {ElementKind.F32: "float32", ElementKind.F16: "float16",
               ElementKind.BF16: "bfloat16", ElementKind.F64: "float64"}  # fmt: skip


def torch_scan(kind: str, x: Any, axis: int, reverse: bool) -> tuple[Any, Any]:
    """torch's own scan of ``kind`` ("cumsum", ... a ScanKind's value) along ``axis``: values
    and the int64 indices of cummax/cummin (else None); ``reverse`` through flips, the indices
    physical positions."""
    import torch

    xx = x.flip(axis) if reverse else x
    idx = None
    if kind in ("cummax", "cummin"):
        y, idx = getattr(torch, kind)(xx, axis)
    else:
        y = getattr(torch, kind)(xx, axis)
    if reverse:
        y = y.flip(axis)
        idx = None if idx is None else (x.shape[axis] - 1 - idx).flip(axis)
    return y, idx


def torch_dtype(element: ElementKind) -> Any:
    import torch

    return getattr(torch, TORCH_NAMES[element])


def poisoned(shape: tuple[int, ...], element: ElementKind, *, like_strides_of: Any = None) -> Any:
    """A CUDA tensor of NaN: every element a kernel fails to write stays NaN."""
    import torch

    t = torch.full(shape, float("nan"), dtype=torch_dtype(element), device="cuda")
    return t


# largest finite value of each element type: a float64 reference beyond it rounds to inf
FINITE_MAX = {ElementKind.F32: 3.4028234663852886e38, ElementKind.F16: 65504.0,
              ElementKind.BF16: 3.3895313892515355e38, ElementKind.F64: np.inf}  # fmt: skip


def assert_close(out: Any, ref: Any, element: ElementKind, *, scale: float = 1.0,
                 what: str = "", magnitude: Any = None) -> None:  # fmt: skip
    """``out`` (any tensor/array) against a float64 ``ref``; reports the worst mismatches.

    ``magnitude``: for results that are sums of terms of both signs, the same sum over the
    terms' absolute values; the relative tolerance applies to it (cancellation is not the
    kernel's error). A reference beyond the element type's range must come out as inf.
    """
    o = _np64(out)
    r = _np64(ref)
    assert o.shape == r.shape, f"{what}: shape {o.shape} != reference {r.shape}"
    rtol, atol = TOLERANCES[element]
    rtol, atol = rtol * scale, atol * scale
    size = np.abs(r) if magnitude is None else np.maximum(np.abs(r), _np64(magnitude))
    with np.errstate(invalid="ignore"):
        bad = ~(np.abs(o - r) <= atol + rtol * size)
    bad &= ~(np.isnan(o) & np.isnan(r))
    bad &= ~((o == r) & np.isinf(r))
    overflow = np.abs(r) > FINITE_MAX[element]
    bad &= ~(overflow & np.isinf(o) & (np.sign(o) == np.sign(r)))
    if bad.any():
        idx = np.argwhere(bad)[:8]
        lines = [f"  at {tuple(int(j) for j in i)}: got {o[tuple(i)]!r}, want {r[tuple(i)]!r}"
                 for i in idx]  # fmt: skip
        raise AssertionError(
            f"{what}: {int(bad.sum())} of {o.size} elements differ (rtol {rtol}, atol {atol}):\n"
            + "\n".join(lines)
        )


def _np64(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):
        import torch

        return x.detach().to("cpu", torch.float64).numpy()
    if type(x).__module__.startswith("cupy"):
        return np.asarray(x.get(), dtype=np.float64)
    return np.asarray(x).astype(np.float64)


def count_fast_runs(monkeypatch: Any) -> list[bool]:
    """Record what each bound call's prepared launches (``FastCall.run``) returned, from now
    on (False: a switch changed, the call took the plan's path)."""
    from baracuda._functional import FastCall

    ran: list[bool] = []
    real = FastCall.run

    def spy(self: FastCall, ptrs: Any) -> bool:
        ran.append(real(self, ptrs))
        return ran[-1]

    monkeypatch.setattr(FastCall, "run", spy)
    return ran
