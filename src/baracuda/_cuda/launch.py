"""The one kernel launch: ``cuLaunchKernel`` with a ``void**`` of ctypes arguments.

``cuda.core.launch`` cannot pass a struct by value (our rank-8 ``Shape``/``Strides``), and
``cuLaunchKernel`` with a ctypes pointer array is also the cheaper host path.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

from baracuda._cuda.driver import check, driver
from baracuda._cuda.stream import Stream

__all__ = ["launch", "MAX_GRID_X", "MAX_GRID_YZ"]

MAX_GRID_X = 2**31 - 1
MAX_GRID_YZ = 65535


def launch(
    function: Any,
    grid: tuple[int, int, int],
    block: int,
    shared_bytes: int,
    stream: Stream,
    args: Sequence[Any],
    name: str = "kernel",
) -> None:
    """Enqueue ``function`` on ``stream``. ``args`` are ctypes scalars or structures, in order."""
    pointers = (ctypes.c_void_p * len(args))(*[ctypes.addressof(a) for a in args])
    check(
        driver().cuLaunchKernel(
            function,
            grid[0],
            grid[1],
            grid[2],
            block,
            1,
            1,
            shared_bytes,
            stream.cu,
            ctypes.addressof(pointers),
            0,
        ),
        f"cuLaunchKernel({name})",
    )
