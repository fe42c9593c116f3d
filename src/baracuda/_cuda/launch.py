"""The one kernel launch: ``cuLaunchKernel`` with a ``void**`` of ctypes arguments.

``cuda.core.launch`` cannot pass a struct by value (our rank-8 ``Shape``/``Strides``), and
``cuLaunchKernel`` with a ctypes pointer array is also the cheaper host path.
"""

from __future__ import annotations

import ctypes
import functools
import struct
import threading
from collections.abc import Sequence
from typing import Any

from baracuda._cuda.driver import check, driver
from baracuda._cuda.stream import Stream
from baracuda._switches import watch

__all__ = [
    "launch",
    "cu_stream",
    "PreparedArgs",
    "launch_packed",
    "memset_zero",
    "dependent_launches",
    "MAX_GRID_X",
    "MAX_GRID_YZ",
]

MAX_GRID_X = 2**31 - 1
MAX_GRID_YZ = 65535


def launch(
    function: Any,
    grid: tuple[int, int, int],
    block: int,
    shared_bytes: int,
    stream: Stream | int,
    args: Sequence[Any],
    name: str = "kernel",
    *,
    dependent: bool = False,
    cooperative: bool = False,
) -> None:
    """Enqueue ``function`` on ``stream`` (a ``Stream``, or a raw handle). ``args`` are ctypes
    scalars, structures or arrays, in order.

    ``dependent``: a programmatic dependent launch (sm_90 and later; the caller checks): the
    kernel may start while the stream's previous kernel drains, so it must execute
    ``bc::pdl_wait()`` (common.cuh) before any global memory access.

    ``cooperative``: every block of the grid is resident at once, or the launch fails
    (``CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE``; the caller sizes the grid by occupancy), so
    the kernel may synchronise its whole grid (``bc::grid_arrive`` / ``bc::grid_wait``,
    common.cuh).

    ``args`` may be ``PreparedArgs``: buffers whose ``void*`` array was built once."""
    if type(args) is PreparedArgs:
        params = args.params
    else:  # the array lives to the end of the call (the driver reads the arguments there)
        pointers = pointer_array(len(args))(*map(ctypes.addressof, args))
        params = ctypes.addressof(pointers)
    cu = stream.cu if isinstance(stream, Stream) else cu_stream(stream)
    if dependent or cooperative:
        cfg = _configs.get(dependent, cooperative)
        cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = grid
        cfg.blockDimX = block
        cfg.sharedMemBytes = shared_bytes
        cfg.hStream = cu
        check(driver().cuLaunchKernelEx(cfg, function, params, 0),
              f"cuLaunchKernelEx({name})")  # fmt: skip
        return
    # the plain launch inline: this is on every call's path
    (err,) = driver().cuLaunchKernel(
        function, grid[0], grid[1], grid[2], block, 1, 1, shared_bytes, cu, params, 0,
    )  # fmt: skip
    if err:
        check(err, f"cuLaunchKernel({name})")


_CU_STREAMS: dict[int, Any] = {}


def cu_stream(handle: int) -> Any:
    """The ``CUstream`` of the raw stream handle ``handle``, made once (of at most 256
    handles; all dropped when full): ``cuLaunchKernel`` takes one about 0.6 us faster than
    an int on an H200's host."""
    cu = _CU_STREAMS.get(handle)
    if cu is None:
        if len(_CU_STREAMS) >= 256:
            _CU_STREAMS.clear()
        cu = _CU_STREAMS[handle] = driver().CUstream(handle)
    return cu


@functools.cache
def pointer_array(n: int) -> Any:
    """The ctypes type of ``n`` argument addresses (``void*[n]``), made once."""
    return ctypes.c_void_p * n


class PreparedArgs(list[Any]):
    """A launch's ctypes argument buffers with their ``void*`` array built once (``params``:
    its address), for a caller that launches them again and again, rewriting some bytes in
    between (``replay.Step``): the driver copies the arguments at each launch, so reusing
    them is safe, and building the array took about 1.5 us of the H200 host's time a
    launch. Not to be shared between threads."""

    __slots__ = ("_array", "params")

    def __init__(self, bufs: Sequence[Any]) -> None:
        super().__init__(bufs)
        self._array = pointer_array(len(bufs))(*map(ctypes.addressof, bufs))
        self.params: int = ctypes.addressof(self._array)


class _Configs(threading.local):
    """Per-thread ``CUlaunchConfig`` of each attribute set, built once and refilled by every
    launch (building one took 1.4 us of host time a launch, refilling it 0.5 us)."""

    def __init__(self) -> None:
        self.configs: dict[tuple[bool, bool], Any] = {}
        self.attrs: list[Any] = []  # every attribute a config points to, kept alive

    def get(self, dependent: bool, cooperative: bool) -> Any:
        cfg = self.configs.get((dependent, cooperative))
        if cfg is None:
            drv = driver()
            attrs = []
            if dependent:
                a = drv.CUlaunchAttribute()
                a.id = drv.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
                a.value.programmaticStreamSerializationAllowed = 1
                attrs.append(a)
            if cooperative:
                a = drv.CUlaunchAttribute()
                a.id = drv.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_COOPERATIVE
                a.value.cooperative = 1
                attrs.append(a)
            cfg = drv.CUlaunchConfig()
            cfg.blockDimY = cfg.blockDimZ = 1
            cfg.attrs = attrs
            cfg.numAttrs = len(attrs)
            self.attrs += attrs
            self.configs[(dependent, cooperative)] = cfg
        return cfg


_configs = _Configs()


@functools.cache
def arch_number(arch: str) -> int:
    """The number of an arch name: 90 for ``sm_90`` (and ``sm_90a``)."""
    return int(arch.removeprefix("sm_").rstrip("af"))


def dependent_launches(arch: str) -> bool:
    """Whether kernels for ``arch`` ("sm_90") take programmatic dependent launches (Hopper
    and later) and the switch ``DEPENDENT_LAUNCH`` is on (read at each launch; the arch's
    number is parsed once)."""
    return DEPENDENT_LAUNCH and arch_number(arch) >= 90


# Switch: the later kernels of a multi-kernel plan start while the previous one drains
# (programmatic dependent launch; their blocks wait in bc::pdl_wait until it has finished and
# its writes are visible). Read at each launch.
DEPENDENT_LAUNCH = True


class _ArgBuffer(threading.local):
    """Per-thread scratch for ``launch_packed``: the driver copies the arguments during
    ``cuLaunchKernel``, so one buffer per thread is reused by every launch."""

    def __init__(self) -> None:
        self.buf = ctypes.create_string_buffer(1024)
        self.base = ctypes.addressof(self.buf)
        self.pointers: dict[str, Any] = {}


_args = _ArgBuffer()


@functools.lru_cache(maxsize=64)
def _offsets(fmt: str) -> tuple[int, ...]:
    """Byte offset of each field of a native-aligned ``struct`` format (C's layout)."""
    return tuple(
        struct.calcsize("@" + fmt[: i + 1]) - struct.calcsize("@" + c) for i, c in enumerate(fmt)
    )


def launch_packed(
    function: Any,
    grid: tuple[int, int, int],
    block: int,
    shared_bytes: int,
    stream: Stream,
    fmt: str,
    values: Sequence[int | float],
    name: str = "kernel",
) -> None:
    """``launch`` for scalar-only argument lists, the per-call fast path: ``values`` are
    packed by ``struct`` format ``fmt`` ("Q" pointer, "q" int64, "f" float, "d" double...)
    into a reused per-thread buffer instead of one ctypes object per argument."""
    st = _args
    struct.pack_into("@" + fmt, st.buf, 0, *values)
    ptrs = st.pointers.get(fmt)
    if ptrs is None:
        offs = _offsets(fmt)
        ptrs = (ctypes.c_void_p * len(offs))(*[st.base + o for o in offs])
        st.pointers[fmt] = ptrs
    check(
        driver().cuLaunchKernel(
            function, grid[0], grid[1], grid[2], block, 1, 1, shared_bytes, stream.cu,
            ctypes.addressof(ptrs), 0,
        ),
        f"cuLaunchKernel({name})",
    )  # fmt: skip


def memset_zero(ptr: int, nbytes: int, stream: Stream | int) -> None:
    """Enqueue zeroing ``nbytes`` (a multiple of 4) at device address ``ptr`` (4-byte aligned)
    on ``stream`` (a ``Stream``, or a raw handle)."""
    if nbytes <= 0:
        return
    assert nbytes % 4 == 0 and ptr % 4 == 0
    cu = stream.cu if isinstance(stream, Stream) else cu_stream(stream)
    check(driver().cuMemsetD32Async(ptr, 0, nbytes // 4, cu), "cuMemsetD32Async")


watch(__name__)  # its switches are read through baracuda._switches.memo
