"""``Stream``: a CUDA stream handle from any source, and the device it belongs to."""

from __future__ import annotations

from typing import Any

from baracuda._cuda.driver import check, driver
from baracuda.errors import InvalidProblem

__all__ = ["Stream"]

# Driver handles with a meaning of their own: the legacy and the per-thread default streams.
_LEGACY = 0x1
_PER_THREAD = 0x2


class Stream:
    """A CUDA stream: the handle ``run`` enqueues on and DLPack producers order before.

    ``Stream.wrap`` takes an object with ``__cuda_stream__`` (torch, cupy, cuda.core
    streams), a raw ``int`` handle (``0`` is the legacy default stream), ``None`` (the
    legacy default stream) or a ``Stream``. ``baracuda`` never owns or destroys the stream.
    """

    __slots__ = ("_cu", "_device_id", "_owner", "handle")

    def __init__(self, handle: int, *, device_id: int | None = None, owner: object = None) -> None:
        if not isinstance(handle, int) or handle < 0:
            raise InvalidProblem(f"Stream: handle must be a non-negative int (got {handle!r})")
        self.handle = handle
        self._device_id = device_id
        self._owner = owner  # keeps a wrapped stream object alive
        self._cu: Any = None

    @classmethod
    def wrap(cls, obj: object) -> Stream:
        if isinstance(obj, Stream):
            return obj
        if obj is None:
            return cls(0)
        if isinstance(obj, bool):
            raise InvalidProblem(f"Stream.wrap: expected a stream, got {obj!r}")
        if isinstance(obj, int):
            return cls(obj)
        proto = getattr(obj, "__cuda_stream__", None)
        if proto is not None:
            version, handle = proto() if callable(proto) else proto
            if version != 0:
                raise InvalidProblem(
                    f"Stream.wrap: __cuda_stream__ version must be 0 (got {version})"
                )
            device = getattr(obj, "device", None)
            device_id = getattr(device, "index", None)
            if not isinstance(device_id, int):
                device_id = getattr(obj, "device_id", None)
            return cls(
                int(handle),
                device_id=device_id if isinstance(device_id, int) else None,
                owner=obj,
            )
        handle = getattr(obj, "ptr", None)  # cupy streams before __cuda_stream__
        if isinstance(handle, int):
            return cls(handle, owner=obj)
        raise InvalidProblem(
            f"Stream.wrap: {type(obj).__name__} is not a stream (no __cuda_stream__, not an int)"
        )

    @classmethod
    def default(cls) -> Stream:
        """The legacy default stream of the current device."""
        return cls(0)

    @property
    def is_default(self) -> bool:
        return self.handle in (0, _LEGACY, _PER_THREAD)

    def __cuda_stream__(self) -> tuple[int, int]:
        return (0, self.handle)

    @property
    def dlpack_stream(self) -> int:
        """The value of ``__dlpack__(stream=...)`` for this stream (DLPack forbids 0)."""
        return _LEGACY if self.handle == 0 else self.handle

    @property
    def cu(self) -> Any:
        """This stream as a ``cuda.bindings`` ``CUstream``."""
        if self._cu is None:
            self._cu = driver().CUstream(self.handle)
        return self._cu

    def device_id(self) -> int | None:
        """The device of a created stream; None for the default streams (any device)."""
        if self._device_id is None and not self.is_default:  # a default stream follows its user
            self._device_id = int(check(driver().cuStreamGetDevice(self.cu), "cuStreamGetDevice"))
        return self._device_id

    def synchronize(self) -> None:
        check(driver().cuStreamSynchronize(self.cu), "cuStreamSynchronize")

    def is_capturing(self) -> bool:
        """Whether work enqueued on this stream now goes into a graph being captured rather
        than to the device; True also where the driver refuses to say (the default stream
        while another thread captures in global mode)."""
        d = driver()
        status, state = d.cuStreamIsCapturing(self.cu)
        return int(status) != 0 or int(state) != 0  # CU_STREAM_CAPTURE_STATUS_NONE is 0

    def order_before(self, consumer: int | None) -> None:
        """Make the work later enqueued on ``consumer`` (a DLPack consumer's ``stream``
        argument: a handle, 1 or None for the legacy default stream, 2 for the per-thread one,
        -1 for no order) wait for the work enqueued on this stream so far, without blocking
        the host: an event recorded here that ``consumer`` waits on. What a DLPack producer
        owes its consumer (the array API's ``__dlpack__``)."""
        if consumer is None:
            consumer = _LEGACY
        if consumer == -1:
            return
        if not isinstance(consumer, int) or consumer < 0:
            raise InvalidProblem(f"__dlpack__: stream must be an int or None (got {consumer!r})")
        mine = _LEGACY if self.handle == 0 else self.handle
        if consumer == mine:
            return  # one stream: already in order
        d = driver()
        flags = int(d.CUevent_flags.CU_EVENT_DISABLE_TIMING)
        event = check(d.cuEventCreate(flags), "cuEventCreate")
        try:
            check(d.cuEventRecord(event, self.cu), "cuEventRecord")
            check(d.cuStreamWaitEvent(d.CUstream(consumer), event, 0), "cuStreamWaitEvent")
        finally:  # released once the device has passed it
            check(d.cuEventDestroy(event), "cuEventDestroy")

    def __repr__(self) -> str:
        return f"Stream(handle={self.handle:#x})"
