"""Array-API helpers shared by the references (the CPU path and the test oracle)."""

from __future__ import annotations

from typing import Any

import array_api_compat

__all__ = ["namespace", "acc_dtype", "to_acc", "from_acc"]


def namespace(*arrays: Any) -> Any:
    """The array-API namespace of ``arrays`` (array-api-compat wraps numpy, torch, cupy...)."""
    return array_api_compat.array_namespace(*arrays)


def acc_dtype(xp: Any, x: Any) -> Any:
    """The accumulator dtype for ``x``: float64 stays float64, everything else float32."""
    return xp.float64 if x.dtype == xp.float64 else xp.float32


def to_acc(xp: Any, x: Any) -> Any:
    dt = acc_dtype(xp, x)
    return x if x.dtype == dt else xp.astype(x, dt)


def from_acc(xp: Any, y: Any, like: Any) -> Any:
    """Round ``y`` back to ``like``'s dtype (one rounding, as the kernels do)."""
    return y if y.dtype == like.dtype else xp.astype(y, like.dtype)
