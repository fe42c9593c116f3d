"""``Workspace``: the scratch memory a plan may use, owned by the caller."""

from __future__ import annotations

import threading
from typing import Any

from baracuda._cuda.device import keeps_context
from baracuda._cuda.stream import Stream
from baracuda._cuda.view import view_of
from baracuda.errors import InvalidProblem

__all__ = ["Workspace"]


class Workspace:
    """Device scratch memory for ``plan.run``: ``none()``, ``from_tensor(t)`` or ``allocate``.

    A workspace of ``plan.workspace_size()`` bytes or more is required; its contents on entry
    do not matter. It must stay alive until the work enqueued with it has finished.
    """

    __slots__ = ("_owner", "_pending", "_ptr", "device_id", "nbytes")

    def __init__(self, ptr: int, nbytes: int, device_id: int | None, owner: object = None) -> None:
        self._ptr = ptr
        self.nbytes = nbytes
        self.device_id = device_id
        self._owner = owner
        self._pending: Stream | None = None  # a scratch workspace not allocated yet

    @property
    def ptr(self) -> int:
        """The device address (0 for ``none()``). A ``scratch`` workspace is allocated on its
        stream here, at the first read: launches that need no workspace cost no allocation."""
        if self._pending is not None:
            from baracuda._cuda.driver import check, driver

            s, self._pending = self._pending, None
            pool = _scratch_pool(self.device_id or 0)
            self._ptr = int(check(driver().cuMemAllocFromPoolAsync(self.nbytes, pool, s.cu),
                                  "cuMemAllocFromPoolAsync"))  # fmt: skip
        return self._ptr

    @property
    def allocated(self) -> bool:
        """Whether the memory exists yet (False only for a ``scratch`` workspace whose address
        nothing has read)."""
        return self._pending is None

    @classmethod
    def none(cls) -> Workspace:
        return cls(0, 0, None)

    @classmethod
    def from_tensor(cls, tensor: object, stream: Stream | None = None) -> Workspace:
        """Use a contiguous CUDA tensor (any dtype, any DLPack framework) as scratch bytes."""
        s = stream if stream is not None else Stream.default()
        view = view_of(tensor, s.dlpack_stream)
        if not view.is_cuda:
            raise InvalidProblem(
                f"Workspace.from_tensor: tensor must be in CUDA memory (got device type "
                f"{view.device_type})"
            )
        if not view.is_contiguous():
            raise InvalidProblem(
                f"Workspace.from_tensor: tensor must be contiguous (shape {view.shape}, "
                f"strides {view.strides})"
            )
        return cls(view.ptr, view.size * view.itemsize, view.device_id, owner=view.owner)

    @classmethod
    @keeps_context
    def allocate(cls, nbytes: int, stream: Stream, device_id: int | None = None) -> Workspace:
        """Allocate ``nbytes`` from the device's stream-ordered memory pool on ``stream``."""
        from baracuda._cuda.device import core_device

        if nbytes < 0:
            raise InvalidProblem(f"Workspace.allocate: nbytes must be >= 0 (got {nbytes})")
        if nbytes == 0:
            return cls.none()
        dev = _current_device(stream, device_id)
        device = core_device(dev)
        buf = device.allocate(nbytes, stream=device.create_stream(stream))
        return cls(int(buf.handle), nbytes, dev, owner=buf)

    @classmethod
    def scratch(cls, nbytes: int, stream: Stream) -> Workspace:
        """``nbytes`` (> 0) from the package's own stream-ordered pool of the stream's device
        on ``stream``, owned by the caller until ``release``: for work enqueued right away
        (the functional API). Allocated when ``ptr`` is first read, so that a call whose
        launches use no workspace (a plan sizes it for the most any of its launch paths may
        take) allocates none. The pool keeps up to ``set_scratch_keep`` bytes reserved
        across synchronizations."""
        ws = cls(0, nbytes, _current_device(stream))
        ws._pending = stream
        return ws

    @staticmethod
    def set_scratch_keep(nbytes: int) -> None:
        """Bytes of device memory the functional API's scratch pool of each device keeps
        reserved when the device synchronizes (default 256 MiB; 0 hands everything back at
        each synchronization). Memory past it goes back to the driver at the next stream,
        event or device synchronization. With a pool that hands its memory back, every call
        that needs a workspace maps memory anew: on the H100, a cumsum of (3, 50001) with a
        synchronization after each call took 175-347 us of host time a call instead of
        62-113 us."""
        global _keep
        if not isinstance(nbytes, int) or isinstance(nbytes, bool) or nbytes < 0:
            raise InvalidProblem(
                f"Workspace.set_scratch_keep: nbytes must be an int >= 0 (got {nbytes!r})"
            )
        with _pools_lock:
            _keep = nbytes
            for handle in _pools.values():
                _set_release_threshold(handle, nbytes)

    def release(self, stream: Stream) -> None:
        """Free a ``scratch`` workspace on ``stream``, after the work enqueued there with it."""
        from baracuda._cuda.driver import check, driver

        self._pending = None
        if self._ptr:
            check(driver().cuMemFreeAsync(self._ptr, stream.cu), "cuMemFreeAsync")
            self._ptr = 0

    def __repr__(self) -> str:
        return f"Workspace(ptr={self._ptr:#x}, nbytes={self.nbytes}, device_id={self.device_id})"


def _current_device(stream: Stream, device_id: int | None = None) -> int:
    """``device_id``, else ``stream``'s device (0 for the default streams), made current."""
    from baracuda._cuda.device import ensure_current

    dev = device_id if device_id is not None else stream.device_id()
    dev = 0 if dev is None else dev
    ensure_current(dev)
    return dev


# The functional API's scratch: one pool of the package's own per device (the device's
# default pool gives its memory back to the driver at each synchronization, and changing
# its threshold would change every other user's), kept for the process; bytes each keeps
# reserved (Workspace.set_scratch_keep). Made with cuMemPoolCreate, not cuda.core's
# DeviceMemoryResource: with that, compute-sanitizer reported a cuMemPoolSetAccess call of
# cuda.core's failing with an invalid device ordinal on a one-GPU H100 machine.
_keep = 256 * 2**20
_pools: dict[int, Any] = {}  # device id -> pool handle
_pools_lock = threading.Lock()


def _scratch_pool(device_id: int) -> Any:
    """The handle of the scratch pool of ``device_id`` (made on first use)."""
    pool = _pools.get(device_id)
    if pool is None:
        with _pools_lock:
            pool = _pools.get(device_id)
            if pool is None:
                from baracuda._cuda.driver import check, driver

                drv = driver()
                props = drv.CUmemPoolProps()
                props.allocType = drv.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
                props.handleTypes = drv.CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_NONE
                props.location.type = drv.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
                props.location.id = device_id
                pool = check(drv.cuMemPoolCreate(props), "cuMemPoolCreate")
                _set_release_threshold(pool, _keep)
                _pools[device_id] = pool
    return pool


def _set_release_threshold(handle: Any, nbytes: int) -> None:
    from baracuda._cuda.driver import check, driver

    drv = driver()
    attr = drv.CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD
    check(drv.cuMemPoolSetAttribute(handle, attr, drv.cuuint64_t(nbytes)), "cuMemPoolSetAttribute")
