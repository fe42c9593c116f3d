"""Per-device facts (arch, SM count, shared memory) and making a device's context current."""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass
from typing import Any

from baracuda._cuda.driver import device_count, driver
from baracuda.errors import InvalidProblem, Unsupported

__all__ = ["DeviceInfo", "device_info", "ensure_current", "core_device"]


@dataclass(frozen=True, slots=True)
class DeviceInfo:
    device_id: int
    name: str
    arch: str  # "sm_90"
    sm_count: int
    max_smem_per_block_optin: int
    l2_bytes: int
    cooperative: bool  # takes cooperative launches (every block of a grid resident at once)


@functools.cache
def core_device(device_id: int) -> Any:
    from cuda.core import Device

    return Device(device_id)


def _check_id(device_id: int) -> None:
    n = device_count()
    if n == 0:
        raise Unsupported("no CUDA device is available (no driver, or no GPU)")
    if not 0 <= device_id < n:
        raise InvalidProblem(f"device_id must be in [0, {n}) (got {device_id})")


@functools.cache
def device_info(device_id: int) -> DeviceInfo:
    _check_id(device_id)
    dev = core_device(device_id)
    props = dev.properties
    return DeviceInfo(
        device_id=device_id,
        name=str(dev.name),
        arch=f"sm_{dev.arch}",
        sm_count=int(props.multiprocessor_count),
        max_smem_per_block_optin=int(props.max_shared_memory_per_block_optin),
        l2_bytes=int(props.l2_cache_size),
        cooperative=bool(props.cooperative_launch),
    )


_current = threading.local()
_contexts: dict[int, int] = {}  # device -> its primary context's handle (machines of 2+ GPUs)


def ensure_current(device_id: int) -> None:
    """Make ``device_id``'s primary context current on this thread. Remembered a thread; on a
    machine of several devices the driver's current context is compared too, since the
    caller's framework may have made another device's current since (a block of
    ``torch.cuda.device(i)`` restores the device before it on exit): one driver call there,
    none on a machine of one device."""
    if getattr(_current, "device_id", None) == device_id and (
        not _current.several or _context_now() == _contexts.get(device_id)
    ):
        return
    _check_id(device_id)
    core_device(device_id).set_current()
    _current.device_id = device_id
    _current.several = device_count() > 1  # read here, not on the path above (2 driver calls)
    if _current.several:
        _contexts[device_id] = _context_now()


def _context_now() -> int:
    """The handle of this thread's current context (0 where none or the query fails)."""
    err, ctx = driver().cuCtxGetCurrent()
    return int(ctx) if int(err) == 0 else 0
