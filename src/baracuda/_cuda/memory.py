"""``Workspace``: the scratch memory a plan may use, owned by the caller."""

from __future__ import annotations

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
            self._ptr = int(check(driver().cuMemAllocAsync(self.nbytes, s.cu), "cuMemAllocAsync"))
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
        """``nbytes`` (> 0) from the current device's stream-ordered pool on ``stream``, owned
        by the caller until ``release``: for work enqueued right away (the functional API).
        Allocated when ``ptr`` is first read, so that a call whose launches use no workspace
        (a plan sizes it for the most any of its launch paths may take) allocates none."""
        ws = cls(0, nbytes, _current_device(stream))
        ws._pending = stream
        return ws

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
