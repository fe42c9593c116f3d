"""The one funnel for CUDA driver statuses, and GPU discovery that never raises."""

from __future__ import annotations

import functools
from typing import Any

from baracuda.errors import CudaError

__all__ = ["check", "driver", "gpu_available", "device_count"]


@functools.cache
def driver() -> Any:
    """``cuda.bindings.driver``, imported on first use so ``import baracuda`` stays light."""
    from cuda.bindings import driver as drv

    return drv


def _error_name(result: Any) -> str:
    drv = driver()
    err, name = drv.cuGetErrorName(result)
    if err == drv.CUresult.CUDA_SUCCESS and name:
        return name.decode() if isinstance(name, bytes) else str(name)
    return str(result)


def check(ret: Any, what: str) -> Any:
    """Unpack a ``cuda.bindings`` return tuple, raising ``CudaError`` naming ``what`` on failure."""
    if isinstance(ret, tuple):
        status, rest = ret[0], ret[1:]
    else:
        status, rest = ret, ()
    if int(status) != 0:
        raise CudaError(f"{what} failed", name=_error_name(status))
    if not rest:
        return None
    return rest[0] if len(rest) == 1 else rest


@functools.cache
def device_count() -> int:
    """Number of CUDA devices; 0 when there is no driver, no device, or cuda-python is absent."""
    try:
        drv = driver()
        (err,) = drv.cuInit(0)
        if int(err) != 0:
            return 0
        err, n = drv.cuDeviceGetCount()
        return int(n) if int(err) == 0 else 0
    except Exception:  # no libcuda.so, no cuda-python: a CPU machine
        return 0


def gpu_available() -> bool:
    return device_count() > 0
