"""Sparsemax backward: the Jacobian-vector product, from the saved forward output."""

from __future__ import annotations

from dataclasses import dataclass

from baracuda._cuda.stream import Stream
from baracuda._cuda.view import TensorView
from baracuda.softmax._rows import (
    RowSplit,
    check_in_place,
    row_split,
)
from baracuda.softmax.sparsemax import SparsemaxPlanBase
from baracuda.types import ElementKind

__all__ = ["SparsemaxBackwardDescriptor", "SparsemaxBackwardArgs", "SparsemaxBackwardPlan"]


@dataclass(frozen=True, slots=True)
class SparsemaxBackwardDescriptor:
    """The backward of ``SparsemaxDescriptor``: same ``input_shape``, ``axis``, ``element``."""

    input_shape: tuple[int, ...]
    axis: int
    element: ElementKind


@dataclass(frozen=True, slots=True)
class SparsemaxBackwardArgs:
    """``dy`` (upstream gradient), ``y`` (the saved forward output) and ``dx`` (output,
    overwritten): DLPack CUDA tensors of the descriptor's shape and element type, any
    strides. ``dx`` may be ``dy`` or ``y`` itself (same pointer and strides) but must not
    otherwise share memory with them."""

    dy: object
    y: object
    dx: object


class SparsemaxBackwardPlan(SparsemaxPlanBase[SparsemaxBackwardDescriptor, SparsemaxBackwardArgs]):
    """Sparsemax backward along one axis, for rows of any length, in one kernel.

    Semantics (per row along ``axis``): with ``m = (y > 0)`` the support of the forward
    output, ``dx = m * (dy - sum(m * dy) / |m|)``. ``dy`` is read only on the support (a
    16-byte vector of it is loaded when any of its ``y`` is positive), so outside the support
    its values, NaN included, do not matter; a row with an empty support (NaN ``y``) gets 0.

    Layout: rows of <= 8192 elements are read once into registers, on the smallest variant
    that holds them (a thread per row up to 8, a group of 2-16 lanes up to 128, a warp up to
    512, a block of 64-512 threads up to 8192), each
    thread keeping the support as a bit mask and loading ``dy`` again on it for the write;
    for f32/f64 rows of 513-1024 and 4097-8192 the staged kernel keeps ``dy`` in registers
    instead and copies the next row's ``y`` to shared memory while the current one is
    written, over one wave of resident blocks. Longer rows
    take one block each and read ``y`` (and ``dy`` on the support) twice, the second time
    mostly from L2. When such rows are too few to fill the GPU (fewer than 2 per SM), each
    is cut into as many pieces as one wave of the split kernels holds (at least 2), one
    block each: in one cooperative kernel where the device allows it and the grid is
    resident (partial sums to the workspace, a grid-wide barrier, then the write of the
    support), else in two kernels (partial sums, then the write; pieces of 128 KiB or more:
    the first kernel also writes dx off the support and lists the support, the second writes
    the listed positions only).
    Dtypes: f32, f16, bf16, f64; f32 math for the half types, f64 for f64.
    Shapes: rank 1-8, any axis, any strides; empty tensors launch nothing.
    Precision: sum over the support in f32 (f64), one rounding per output. Deterministic
    on a given card (fixed reduction order, no atomic sums; the split's piece count follows
    the SM count).
    Workspace: ``workspace_size()`` bytes: 0 unless rows are split (then about 4 KiB per
    piece: partial sum, counts and the support list), 16-byte alignment suffices (256
    checked by ``run``).

    Raises
    ------
    Unsupported: element not an ``ElementKind``, rank outside 1-8, no GPU.
    InvalidProblem: negative dims, axis out of range; tensors of the wrong shape, dtype or
    device, an overlapping output. MisalignedOperand: a pointer not element-aligned.
    """

    NAME = "SparsemaxBackwardPlan"
    OP = "sparsemax_backward"
    DIRECTION = "bwd"

    @staticmethod
    def _split_for(shape: tuple[int, ...], axis: int, sm_count: int) -> RowSplit | None:
        return row_split(shape, axis, sm_count)

    def workspace_size(self) -> int:
        """Bytes of workspace: 0, or for few long rows (fewer than 2 per SM, > 16384 long)
        ``rows * ceil(n / 16384)`` partial (sum, count) pairs."""
        return super().workspace_size()

    def _bind(self, args: SparsemaxBackwardArgs, stream: Stream) -> tuple[TensorView, ...]:
        shape, el = self.desc.input_shape, self.desc.element
        dy = self._view("dy", args.dy, stream, shape, el)
        y = self._view("y", args.y, stream, shape, el)
        dx = self._view("dx", args.dx, stream, shape, el, output=True)
        check_in_place(self.NAME, ("dx", dx), ("dy", dy), ("y", y))
        return dy, y, dx
