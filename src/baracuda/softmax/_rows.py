"""Rows of a tensor along an axis, and the sparsemax kernel variant that runs them.

Both sparsemax plans map their tensors to ``rows`` rows of ``n`` elements (the outer dims
coalesced, one axis stride per tensor) and pick a kernel by ``n`` from one table.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass

from baracuda._cuda.abi import shape_arg, strides_arg
from baracuda._cuda.compiler import KernelSource, register_source
from baracuda._cuda.launch import MAX_GRID_X, MAX_GRID_YZ, launch
from baracuda._cuda.module import LoadedModule
from baracuda._cuda.stream import Stream
from baracuda._cuda.view import TensorView
from baracuda._layout import numel, split_axis
from baracuda.errors import InvalidProblem
from baracuda.types import ElementKind

__all__ = [
    "SPARSEMAX_SOURCE",
    "Variant",
    "VARIANTS",
    "BWD_VARIANTS",
    "variant_for",
    "launch_rows",
    "check_in_place",
    "RowSplit",
    "row_split",
    "FwdSplit",
    "fwd_split",
]


@dataclass(frozen=True, slots=True)
class Variant:
    """A kernel variant: ``per_thread`` values per thread in registers, ``group`` threads per
    row (a warp or the block), ``block`` threads per block; ``max_n`` 0 means any length."""

    name: str
    per_thread: int
    group: int
    block: int

    @property
    def max_n(self) -> int:
        return self.per_thread * self.group

    @property
    def rows_per_block(self) -> int:
        return self.block // self.group


# Smallest first; the last one (streaming, one block per row) takes rows of any length.
VARIANTS: tuple[Variant, ...] = (
    Variant("4x32", 4, 32, 256),
    Variant("32x32", 32, 32, 256),
    Variant("16x512", 16, 512, 512),
    Variant("stream", 0, 512, 512),
)
# The backward's: rows of 129-1024 take two warps (a 64-thread block) of 16 values each.
# On the H100 over 32768 x 1024: f32 120.1 vs 131.9 us, bf16 81.4 vs 84.9 us with a warp of
# 32 values each, while the forward was slower that way (f32 127.3 vs 99.6 us).
BWD_VARIANTS: tuple[Variant, ...] = (VARIANTS[0], Variant("16x64", 16, 64, 64), *VARIANTS[2:])

SPARSEMAX_SOURCE = register_source(
    KernelSource(
        "softmax",
        "sparsemax.cu",
        (
            *(f"sparsemax_fwd_{v.name}" for v in VARIANTS),
            *(f"sparsemax_bwd_{v.name}" for v in BWD_VARIANTS),
            "sparsemax_bwd_split_sum",
            "sparsemax_bwd_split_write",
            *(f"sparsemax_fwd_split_{k}" for k in ("scan", "tau", "write")),
        ),
    )
)

SPLIT_PIECE = 16384  # elements per block of a split row (a multiple of every vector width)

# Switch: the backward loads dy beside y (one memory round trip) instead of only where y > 0
# (two, dependent, but skipping dy off the support). Off: on an H100, loading dy only on the
# support was 10-45 % faster on every benchmark shape (benchmarks/tune_sparsemax.py).
DY_WITH_Y = False

# Itemsizes whose backward register variants run one wave of resident blocks (the occupancy
# calculator's count per SM), each block taking several rows, the next row's y in flight
# while the current one is reduced and written (sparsemax.cu, bwd_reg); the others launch a
# block per row group. On the H100, f32 4096 x 8192 took 104-108 vs 112-116 us with the
# resident grid, bf16 85.5-87.5 vs 84.0-84.3 us. Read at each launch.
BWD_RESIDENT_GRID: tuple[int, ...] = (4, 8)
SPLIT_BLOCK = 512


@dataclass(frozen=True, slots=True)
class RowSplit:
    """Few long rows: each row cut into ``pieces`` of ``piece`` elements, one block each."""

    rows: int
    pieces: int
    piece: int = SPLIT_PIECE

    def workspace_size(self, element: ElementKind) -> int:
        acc = 8 if element is ElementKind.F64 else 4
        return _round16(self.rows * self.pieces * acc) + self.rows * self.pieces * 8

    def count_offset(self, element: ElementKind) -> int:
        acc = 8 if element is ElementKind.F64 else 4
        return _round16(self.rows * self.pieces * acc)


FWD_SPLIT_PIECE = 8192  # elements per block of a split forward row (16 per thread, 512 threads)
FWD_SPLIT_CAND = 512  # values listed per piece (sparsemax.cu kSplitCand)


@dataclass(frozen=True, slots=True)
class FwdSplit:
    """Few long rows, forward: each row cut into ``pieces`` of 8192 elements. Workspace:
    per piece a max (acc), a count (int32) and 512 listed values (acc); per row (m, tau)."""

    rows: int
    pieces: int

    def offsets(self, element: ElementKind) -> tuple[int, int, int, int]:
        """Byte offsets of the maxima, counts, listed values and per-row (m, tau); the end."""
        acc = 8 if element is ElementKind.F64 else 4
        rp = self.rows * self.pieces
        cnt = _round16(rp * acc)
        cand = cnt + _round16(rp * 4)
        row = cand + _round16(rp * FWD_SPLIT_CAND * acc)
        return cnt, cand, row, row + self.rows * 2 * acc

    def workspace_size(self, element: ElementKind) -> int:
        return self.offsets(element)[3]


def fwd_split(shape: Sequence[int], axis: int, sm_count: int) -> FwdSplit | None:
    """The split for the forward when the rows need the streaming kernel (> 8192 long) but
    are too few to fill the GPU (fewer than two per SM), else None."""
    n = shape[axis]
    rows = numel(shape) // n if n else 0
    if rows == 0 or variant_for(n).per_thread or rows >= 2 * sm_count or rows > 65535:
        return None
    pieces = -(-n // FWD_SPLIT_PIECE)
    return FwdSplit(rows, pieces) if pieces >= 2 else None


def _round16(x: int) -> int:
    return (x + 15) // 16 * 16


def row_split(shape: Sequence[int], axis: int, sm_count: int) -> RowSplit | None:
    """The split for the backward when the rows alone cannot fill the GPU (fewer than two
    per SM) and each is long enough to cut, else None."""
    n = shape[axis]
    rows = numel(shape) // n if n else 0
    if rows == 0 or variant_for(n).per_thread or rows >= 2 * sm_count or rows > 65535:
        return None
    pieces = -(-n // SPLIT_PIECE)
    return RowSplit(rows, pieces, SPLIT_PIECE) if pieces >= 2 else None


def variant_for(n: int, direction: str = "fwd") -> Variant:
    """The register variant of ``direction`` ("fwd" or "bwd") that holds a row of ``n``
    elements, else the streaming one."""
    table = BWD_VARIANTS if direction == "bwd" else VARIANTS
    for v in table:
        if v.per_thread and n <= v.max_n:
            return v
    return table[-1]


def check_in_place(plan: str, out: tuple[str, TensorView], *inputs: tuple[str, TensorView]) -> None:
    """An output may be an input itself (same pointer and strides: each element is read
    before the same thread writes it); the same pointer with other strides is refused.
    Partial overlaps at other offsets are not detected: callers must not pass them."""
    oname, o = out
    for name, v in inputs:
        if o.size and v.ptr == o.ptr and v.strides != o.strides:
            raise InvalidProblem(
                f"{plan}: {oname} shares its pointer with {name} but has other strides "
                f"({o.strides} vs {v.strides}); pass the same view (in place) or separate memory"
            )


def _vectorisable(views: Sequence[TensorView], axis: int) -> bool:
    """Axis stride 1 and every row start 16-byte aligned in every tensor."""
    for v in views:
        if v.ptr % 16 or v.strides[axis] != 1:
            return False
        for i, (d, s) in enumerate(zip(v.shape, v.strides, strict=True)):
            if i != axis and d > 1 and (s * v.itemsize) % 16:
                return False
    return True


def launch_rows(
    module: LoadedModule,
    direction: str,
    stream: Stream,
    views: Sequence[TensorView],
    axis: int,
    split: RowSplit | FwdSplit | None = None,
    workspace_ptr: int = 0,
) -> str:
    """Enqueue ``sparsemax_<direction>_<variant>`` over the rows of ``views`` along ``axis``.

    Kernel arguments: the pointers in order, the row count and length, the coalesced outer
    shape, one outer stride set per view, one axis stride per view, the vector flag.
    Returns the variant run ("empty" when there is nothing to write).
    """
    shape = views[0].shape
    n = shape[axis]
    if numel(shape) == 0:
        return "empty"
    oshape, ostrides, _, axis_strides = split_axis(shape, [v.strides for v in views], axis)
    rows = numel(oshape)
    var = variant_for(n, direction)
    vec = _vectorisable(views, axis)
    grid = max(1, min(-(-rows // var.rows_per_block), MAX_GRID_X))
    args: list[object] = [ctypes.c_uint64(v.ptr) for v in views]
    args += [ctypes.c_int64(rows), ctypes.c_int64(n), shape_arg(oshape)]
    args += [strides_arg(s) for s in ostrides]
    args += [ctypes.c_int64(s) for s in axis_strides]
    flags = 1 if vec else 0
    if direction == "bwd" and DY_WITH_Y:
        flags |= 2
    args.append(ctypes.c_int32(flags))
    if isinstance(split, FwdSplit):
        cnt, cand, row, _ = split.offsets(module.element)
        fws: list[object] = [ctypes.c_uint64(workspace_ptr + o) for o in (0, cnt, cand, row)]
        fws.append(ctypes.c_int64(split.pieces))
        sgrid = (min(split.pieces, MAX_GRID_X), min(rows, MAX_GRID_YZ), 1)
        tgrid = (min(rows, MAX_GRID_X), 1, 1)
        for part, g in (("scan", sgrid), ("tau", tgrid), ("write", sgrid)):
            op = f"sparsemax_{direction}_split_{part}"
            launch(module.function(op), g, SPLIT_BLOCK, 0, stream, [*args, *fws], op)
        return f"split{split.pieces}{'/vec16' if vec else ''}"
    if split is not None:
        element = module.element
        ws = [ctypes.c_uint64(workspace_ptr),
              ctypes.c_uint64(workspace_ptr + split.count_offset(element)),
              ctypes.c_int64(split.piece), ctypes.c_int64(split.pieces)]  # fmt: skip
        sgrid = (min(split.pieces, MAX_GRID_X), min(rows, MAX_GRID_YZ), 1)
        for part in ("sum", "write"):
            op = f"sparsemax_{direction}_split_{part}"
            launch(module.function(op), sgrid, SPLIT_BLOCK, 0, stream, [*args, *ws], op)
        return f"split{split.pieces}{'/vec16' if vec else ''}"
    op = f"sparsemax_{direction}_{var.name}"
    if direction == "bwd" and views[0].itemsize in BWD_RESIDENT_GRID:
        grid = min(grid, module.sm_count * module.resident_blocks(op, var.block))
    launch(module.function(op), (grid, 1, 1), var.block, 0, stream, args, op)
    return f"{var.name}{'/vec16' if vec else ''}"
