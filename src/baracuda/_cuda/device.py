"""Per-device facts (arch, SM count, shared memory) and making a device's context current."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

from baracuda._cuda.driver import check, device_count, driver
from baracuda.errors import InvalidProblem, Unsupported

__all__ = ["DeviceInfo", "device_info", "ensure_current", "keeps_context", "core_device"]


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
_NO_CONTEXT = -1  # _current.restore: nothing to restore
_one_device = False  # known to be a machine of one device (set by ensure_current, with the memo)

P = ParamSpec("P")
R = TypeVar("R")


def ensure_current(device_id: int) -> None:
    """Make ``device_id``'s primary context current on this thread. Remembered a thread; on a
    machine of several devices the driver's current context is compared too, since the
    caller's framework may have made another device's current since (a block of
    ``torch.cuda.device(i)`` restores the device before it on exit): one driver call there,
    none on a machine of one device. Inside a public entry point (``keeps_context``) on a
    machine of several devices, the context it replaces is remembered, to be made current
    again when the entry point returns."""
    global _one_device
    now = _NO_CONTEXT
    if getattr(_current, "device_id", None) == device_id:
        if _one_device:  # known once a thread has a memo
            return
        now = _context_now()
        if now == _contexts.get(device_id):
            return
    _check_id(device_id)
    several = device_count() > 1
    guarded = several and getattr(_current, "guarded", False)
    if guarded and getattr(_current, "restore", _NO_CONTEXT) == _NO_CONTEXT:
        _current.restore = _context_now() if now == _NO_CONTEXT else now  # the caller's
    core_device(device_id).set_current()
    _current.device_id = device_id
    _one_device = not several  # read here, not on the path above (2 driver calls)
    if several:
        _contexts[device_id] = _context_now()


def keeps_context(fn: Callable[P, R]) -> Callable[P, R]:
    """The package's public entry points (functional ops, ``select``, ``run``,
    ``can_implement``, ``Workspace.allocate``) leave the thread's current context as they
    found it. A run on another device's arrays makes that device's context current for its
    launches; torch, CuPy and JAX read their current device from the driver's current
    context, so the caller's is made current again on return (as torch's device guards do),
    also where the call raised. Nested entry points leave it to the outermost. On a machine
    of one device this costs a global's read (every run there uses the one context)."""

    @functools.wraps(fn)
    def guarded(*args: P.args, **kwargs: P.kwargs) -> R:
        if _one_device or getattr(_current, "guarded", False):
            return fn(*args, **kwargs)
        _current.guarded = True
        try:
            return fn(*args, **kwargs)
        finally:
            _current.guarded = False
            ctx = getattr(_current, "restore", _NO_CONTEXT)
            if ctx != _NO_CONTEXT:
                _current.restore = _NO_CONTEXT
                _set_context(ctx)

    return guarded


def _set_context(ctx: int) -> None:
    """Make the context of handle ``ctx`` current on this thread (0: none)."""
    drv = driver()
    check(drv.cuCtxSetCurrent(drv.CUcontext(ctx)), "cuCtxSetCurrent")


def _context_now() -> int:
    """The handle of this thread's current context (0 where none or the query fails)."""
    err, ctx = driver().cuCtxGetCurrent()
    return int(ctx) if int(err) == 0 else 0
