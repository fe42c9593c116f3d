"""Launching an elementwise kernel pair (``<op>_vec`` / ``<op>_strided``) over same-shape views."""

from __future__ import annotations

import ctypes
import math
from collections.abc import Sequence
from typing import Any

from baracuda._cuda.abi import shape_arg, strides_arg
from baracuda._cuda.launch import launch
from baracuda._cuda.module import LoadedModule
from baracuda._cuda.stream import Stream
from baracuda._cuda.view import TensorView
from baracuda._layout import coalesce

__all__ = ["launch_elementwise", "BLOCK", "VEC_UNROLL"]

BLOCK = 256
VEC_UNROLL = 4  # vectors per thread per iteration (kUnroll in the .cu files)
# Grid cap in blocks per SM (the kernels loop grid-stride past it). Measured on H100: an
# uncapped grid (each thread one unrolled step, as torch does) is fastest on large tensors.
WAVES = 1 << 20


def launch_elementwise(
    module: LoadedModule,
    op: str,
    stream: Stream,
    views: Sequence[TensorView],
    scalar: Any,
) -> str:
    """Run ``<op>_vec`` when every view is contiguous and 16-byte aligned, else ``<op>_strided``.

    Kernel arguments: the pointers in order, ``scalar``, the element count and, for the
    strided kernel, the coalesced shape and one stride set per view. Returns the variant run.
    """
    n = math.prod(views[0].shape)
    if n == 0:
        return "empty"
    cap = min(module.sm_count * WAVES, 2**31 - 1)
    ptrs = [ctypes.c_uint64(v.ptr) for v in views]
    count = ctypes.c_int64(n)
    if all(not v.ptr & 15 and v.is_contiguous() for v in views):
        lanes = 16 // views[0].itemsize
        per_block = BLOCK * VEC_UNROLL
        grid = max(1, min(-(-(n // lanes) // per_block), cap))
        launch(module.function(f"{op}_vec"), (grid, 1, 1), BLOCK, 0, stream,
               [*ptrs, scalar, count], f"{op}_vec")  # fmt: skip
        return "vec16"
    shape, strides = coalesce(views[0].shape, [v.strides for v in views])
    grid = max(1, min(-(-n // BLOCK), cap))
    args = [*ptrs, scalar, count, shape_arg(shape), *(strides_arg(s) for s in strides)]
    launch(module.function(f"{op}_strided"), (grid, 1, 1), BLOCK, 0, stream, args,
           f"{op}_strided")  # fmt: skip
    return "strided"
