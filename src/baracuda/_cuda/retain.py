"""Arrays kept alive until the kernels that read or write them have run.

An array whose producer reuses its memory in the order of another stream than the run's (a
DLPack import of a JAX array, JAX allocating on its own streams; a torch tensor or CuPy array
run on a stream other than its framework's current one) must stay alive until the run's
kernels are done with it, not only until ``run`` returns: ``run`` only enqueues. If the
caller's array is a temporary (``bc.cumsum(x * 2)``), dropping it at return lets the producer
free the memory and hand it to its next allocation, whose writes on the producer's stream
need not wait for ours.

``hold`` records an event on the run's stream and keeps the arrays with it. The entries whose
events have completed are dropped at the next ``hold`` or ``release_done`` (every checked run
of a plan calls one of them while anything is held), the rest at exit. The host never waits.
"""

from __future__ import annotations

import atexit
import threading
from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from baracuda._cuda.driver import check, driver

if TYPE_CHECKING:
    from baracuda._cuda.stream import Stream

__all__ = ["hold", "release_done", "held"]

# (event, device, owners), oldest first
_held: deque[tuple[Any, int, tuple[object, ...]]] = deque()
_free: dict[int, list[Any]] = {}  # completed events by device, recorded again by later holds
_FREE_MAX = 32
_lock = threading.Lock()
_exit_hook: list[object] = []  # _drop_all, once registered


def hold(stream: Stream, device_id: int, owners: Sequence[object]) -> None:
    """Keep ``owners`` alive until the work enqueued on ``stream`` (of device ``device_id``,
    whose context is current) so far has completed."""
    release_done()
    d = driver()
    with _lock:
        free = _free.get(device_id)
        event = free.pop() if free else None
    if event is None:
        event = check(d.cuEventCreate(int(d.CUevent_flags.CU_EVENT_DISABLE_TIMING)),
                      "cuEventCreate")  # fmt: skip
    try:
        check(d.cuEventRecord(event, stream.cu), "cuEventRecord")
    except BaseException:
        d.cuEventDestroy(event)
        raise
    with _lock:
        if not _exit_hook:
            _exit_hook.append(atexit.register(_drop_all))
        _held.append((event, device_id, tuple(owners)))


def release_done() -> None:
    """Drop the owners of every held entry whose event has completed, oldest first, up to the
    first that has not (events of one stream complete in order; an entry of another stream
    behind it waits for the next call). An event whose query fails (a context lost to an
    error) counts as completed: nothing more runs there. Completed events are kept (up to
    ``_FREE_MAX`` a device) for later holds on their device: a hold then costs one record,
    not a create, a record and a destroy."""
    if not _held:
        return
    d = driver()
    not_ready = d.CUresult.CUDA_ERROR_NOT_READY
    done: list[tuple[object, ...]] = []
    with _lock:
        while _held:
            event, dev, owners = _held[0]
            (status,) = d.cuEventQuery(event)
            if status == not_ready:
                break
            _held.popleft()
            done.append(owners)
            free = _free.setdefault(dev, [])
            if int(status) == 0 and len(free) < _FREE_MAX:
                free.append(event)
            else:
                d.cuEventDestroy(event)
    del done  # the owners go here, outside the lock (their deleters may run)


def held() -> int:
    """How many runs' arrays are held (for tests and diagnostics)."""
    return len(_held)


def _drop_all() -> None:
    """At exit: drop every held array while its producer can still take it back (a JAX
    array released after JAX's backends are gone could crash the exit). Registered at the
    first hold, after the producers' frameworks were imported, so it runs before their own
    exit handlers (last registered, first run)."""
    with _lock:
        items = list(_held)
        _held.clear()
    del items  # outside the lock
