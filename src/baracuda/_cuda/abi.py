"""Host mirrors of the structs in ``include/baracuda/common.cuh`` (passed to kernels by value)."""

from __future__ import annotations

import ctypes
from collections.abc import Sequence

__all__ = ["MAX_RANK", "Shape", "Strides", "shape_arg", "strides_arg"]

MAX_RANK = 8


class Shape(ctypes.Structure):
    _fields_ = (("v", ctypes.c_int64 * MAX_RANK), ("rank", ctypes.c_int32))


class Strides(ctypes.Structure):
    _fields_ = (("v", ctypes.c_int64 * MAX_RANK),)


def shape_arg(shape: Sequence[int]) -> Shape:
    s = Shape()
    s.v[: len(shape)] = shape
    s.rank = len(shape)
    return s


def strides_arg(strides: Sequence[int]) -> Strides:
    s = Strides()
    s.v[: len(strides)] = strides
    return s
