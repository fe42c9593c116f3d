"""Launching an elementwise kernel pair (``<op>_vec`` / ``<op>_strided``) over same-shape views."""

from __future__ import annotations

import ctypes
import math
import struct
from collections.abc import Sequence

from baracuda._cuda.abi import shape_arg, strides_arg
from baracuda._cuda.launch import launch, launch_packed
from baracuda._cuda.module import LoadedModule
from baracuda._cuda.replay import active, capture_launch
from baracuda._cuda.stream import Stream
from baracuda._cuda.view import TensorView
from baracuda._layout import coalesce

__all__ = ["ElementwiseLauncher", "BLOCK", "VEC_UNROLL"]

BLOCK = 256  # threads a block (the strided kernels; the vec kernels' default)
VEC_UNROLL = 4  # vectors per thread per iteration (the vec kernels' default; kUnroll in lerp.cu)
# Grid cap in blocks per SM (the kernels loop grid-stride past it). Measured on H100: an
# uncapped grid (each thread one unrolled step, as torch does) is fastest on large tensors.
WAVES = 1 << 20


class ElementwiseLauncher:
    """Runs an elementwise kernel pair (``<op>_vec`` / ``<op>_strided``) over same-shape views.

    ``<op>_vec`` (or the entry ``vec``) runs when every view is contiguous and 16-byte
    aligned, in blocks of
    ``block`` threads each taking ``unroll`` 16-byte vectors of each view a step (the kernel's
    launch bounds and unroll), else ``<op>_strided`` in blocks of ``BLOCK``. Kernel arguments:
    the pointers in order, the scalar (a C ``float`` or ``double``, by ``scalar_fmt`` "f" or
    "d"), the element count and, for the strided kernel, the coalesced shape and one stride set
    per view. Everything that does not depend on the tensors is fixed here, once per plan.
    """

    __slots__ = ("_block", "_cap", "_fmt", "_module", "_op", "_scalar_fmt", "_unroll", "_vec",
                 "_vec_name")  # fmt: skip

    def __init__(self, module: LoadedModule, op: str, nviews: int, scalar_fmt: str, *,
                 block: int = BLOCK, unroll: int = VEC_UNROLL,
                 vec: str | None = None) -> None:  # fmt: skip
        self._module = module
        self._block = block
        self._unroll = unroll
        self._op = op
        self._scalar_fmt = scalar_fmt
        self._vec_name = vec or f"{op}_vec"
        self._vec = module.function(self._vec_name)
        self._fmt = "Q" * nviews + scalar_fmt + "q"
        self._cap = min(module.sm_count * WAVES, 2**31 - 1)

    def __call__(self, stream: Stream, views: Sequence[TensorView], scalar: float) -> str:
        """Enqueue the kernel; returns the variant run ("vec16", "strided" or "empty")."""
        n = math.prod(views[0].shape)
        if n == 0:
            return "empty"
        if all(not v.ptr & 15 and v.is_contiguous() for v in views):
            lanes = 16 // views[0].itemsize
            grid = max(1, min(-(-(n // lanes) // (self._block * self._unroll)), self._cap))
            values = [*(v.ptr for v in views), scalar, n]
            launch_packed(self._vec, (grid, 1, 1), self._block, 0, stream, self._fmt, values,
                          self._vec_name)  # fmt: skip
            if active():  # each argument's bytes
                args = [struct.pack("@" + f, x) for f, x in zip(self._fmt, values, strict=True)]
                capture_launch(self._vec, (grid, 1, 1), self._block, self._vec_name, args,
                               [v.ptr for v in views])  # fmt: skip
            return "vec16"
        shape, strides = coalesce(views[0].shape, [v.strides for v in views])
        grid = max(1, min(-(-n // BLOCK), self._cap))
        ptrs = [ctypes.c_uint64(v.ptr) for v in views]
        c_scalar = ctypes.c_double(scalar) if self._scalar_fmt == "d" else ctypes.c_float(scalar)
        cargs = [*ptrs, c_scalar, ctypes.c_int64(n), shape_arg(shape),
                 *(strides_arg(s) for s in strides)]  # fmt: skip
        name = f"{self._op}_strided"
        fn = self._module.function(name)
        launch(fn, (grid, 1, 1), BLOCK, 0, stream, cargs, name)
        if active():
            capture_launch(fn, (grid, 1, 1), BLOCK, name, [bytes(a) for a in cargs],
                           [v.ptr for v in views])  # fmt: skip
        return "strided"
