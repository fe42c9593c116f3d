"""Rows of a tensor along an axis, and the sparsemax kernel variant that runs them.

Both sparsemax plans map their tensors to ``rows`` rows of ``n`` elements (the outer dims
coalesced, one axis stride per tensor) and pick a kernel by ``n`` from one table.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass

from baracuda._cuda import launch as _launch_module
from baracuda._cuda.abi import shape_arg, strides_arg
from baracuda._cuda.compiler import KernelSource, register_source
from baracuda._cuda.launch import MAX_GRID_X, MAX_GRID_YZ, dependent_launches, launch
from baracuda._cuda.module import LoadedModule
from baracuda._cuda.replay import active, capture_launch
from baracuda._cuda.stream import Stream
from baracuda._cuda.view import TensorView
from baracuda._layout import numel, split_axis
from baracuda._switches import memo, watch
from baracuda.errors import InvalidProblem
from baracuda.types import ElementKind

__all__ = [
    "SPARSEMAX_SOURCE",
    "Variant",
    "VARIANTS",
    "BWD_VARIANTS",
    "variant_for",
    "launch_rows",
    "switch_values",
    "check_in_place",
    "RowSplit",
    "row_split",
    "FwdSplit",
    "fwd_split",
]


@dataclass(frozen=True, slots=True)
class Variant:
    """A kernel variant: ``per_thread`` values per thread in registers, ``group`` threads per
    row (1-32 aligned lanes of a warp, or the block), ``block`` threads per block; ``max_n`` 0
    means any length."""

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


# Smallest first; the last one (streaming, one block per row) takes rows of any length. A row
# takes the smallest variant that holds it, so past 1024 elements at most half of its group's
# threads idle: a row of 2048 on the 512-thread variant left three quarters of them idle and
# took 2-4x longer.
# Rows of up to 128 take a thread or a group of 2-16 lanes of a warp, 8 values a lane (one
# 16-byte vector of a 2-byte type). A warp of 4 values a lane took every row up to 128 before:
# on the H100 its bf16 backward over 262144 x 128 took 196.4 us (8x16: 83.2), over
# 1048576 x 32 610.7 us (8x4: 85.1); 4 values a lane left bf16 on scalar loads.
VARIANTS: tuple[Variant, ...] = (
    Variant("8x1", 8, 1, 256),
    Variant("8x2", 8, 2, 256),
    Variant("8x4", 8, 4, 256),
    Variant("8x8", 8, 8, 256),
    Variant("8x16", 8, 16, 256),
    Variant("8x32", 8, 32, 256),
    Variant("16x32", 16, 32, 256),
    Variant("32x32", 32, 32, 256),
    Variant("16x128", 16, 128, 128),
    Variant("16x256", 16, 256, 256),
    Variant("16x512", 16, 512, 512),
    Variant("stream", 0, 512, 512),
)
# The backward's keep 16 values a thread (a 32-bit support mask, sparsemax.cu bwd_reg): a warp
# per row up to 512, then a block of 64-512 threads per row. Over 32768 x 1024 on the H100
# a warp of 32 values per row was slower (f32 131.9 vs 120.1 us, bf16 84.9 vs 81.4 us).
BWD_VARIANTS: tuple[Variant, ...] = (
    *VARIANTS[:7],  # 8x1 to 8x32, 16x32
    Variant("16x64", 16, 64, 64),
    *VARIANTS[8:],  # 16x128, 16x256, 16x512, stream
)

# The backward variants that run their staged kernel (sparsemax.cu bwd_reg_staged, entry
# "<name>_staged": the next row's y in flight while a row is written, over one wave of resident
# blocks) for the itemsizes of BWD_STAGED_ITEMSIZES; the others run bwd_reg, a block per row
# group. On the H100 the staged kernel was faster for f32 (32768 x 1024: 109.1 vs 115.9 us,
# 4096 x 8192: 108.7 vs 119.5 us) and slower for bf16 (78.4 vs 67.9, 85.2 vs 75.4 us). Read at
# each launch.
BWD_STAGED: tuple[str, ...] = ("16x64", "16x512")
BWD_STAGED_ITEMSIZES: tuple[int, ...] = (4, 8)

SPARSEMAX_SOURCE = register_source(
    KernelSource(
        "softmax",
        "sparsemax.cu",
        (
            *(f"sparsemax_fwd_{v.name}" for v in VARIANTS),
            *(f"sparsemax_bwd_{v.name}" for v in BWD_VARIANTS),
            *(f"sparsemax_bwd_{name}_staged" for name in BWD_STAGED),
            "sparsemax_bwd_split_sum",
            "sparsemax_bwd_split_write",
            "sparsemax_bwd_split_zero",
            "sparsemax_bwd_split_fix",
            "sparsemax_bwd_split_coop",
            *(f"sparsemax_fwd_split_{k}" for k in ("scan", "tau", "write")),
        ),
    )
)

# The backward's split (few long rows, RowSplit): as many pieces a row as one wave of the split
# kernels holds (SPLIT_BLOCKS_PER_SM blocks of 512 an SM), none shorter than SPLIT_MIN_PIECE
# elements, at least 2. On the H100 over 64 x 131072 (4 pieces of 32768 against 8 of 16384):
# f32 39.1-39.2 vs 42.0-47.5 us, bf16 24.7-26.8 vs 32.0-40.1 us; over 32 x 262144 (8 against
# 16 pieces) f32 39.9-40.1 vs 42.5-42.6, bf16 24.2-24.6 vs 28.1-31.9 us.
SPLIT_BLOCKS_PER_SM = 2
SPLIT_MIN_PIECE = 8192

# Switch: the backward loads dy beside y (one memory round trip) instead of only where y > 0
# (two, dependent, but skipping dy off the support). Off: on an H100, loading dy only on the
# support was 10-45 % faster on every benchmark shape (benchmarks/tune_sparsemax.py).
DY_WITH_Y = False

SPLIT_BLOCK = 512

# Switch: the split backward's first kernel writes dx off the support and lists each piece's
# support (up to SPLIT_LIST_LEN positions, sparsemax.cu kSplitList); the second writes the
# listed positions only (a piece whose support overflows is rescanned). False: the second
# kernel rereads y and writes every element. Read at each launch.
# Taken for pieces of at least SPLIT_LIST_MIN_BYTES: on the H100 (median us, listed vs not,
# the second kernel a dependent launch) f32 64 x 131072 36.6 vs 40.2 and 16 x 2^20 61.5 vs
# 77.5, bf16 16 x 2^20 38.1 vs 40.8 (pieces of 128 KiB), but bf16 64 x 131072 25.7 vs 24.8
# (64 KiB).
SPLIT_LIST = True
SPLIT_LIST_LEN = 1024
SPLIT_LIST_MIN_BYTES = 128 * 1024


# Switch: the split backward runs as one cooperative kernel (sparsemax.cu bwd_split_coop: a
# grid-wide barrier between the pieces' sums and the write) where pieces hold at most
# SPLIT_COOP_PIECE elements (kCoopPiece) and the whole grid is resident; otherwise two kernels
# as above. It loads dy only on the support (DY_WITH_Y does not apply). Read at each launch.
SPLIT_COOP = True
SPLIT_COOP_PIECE = 65536


@dataclass(frozen=True, slots=True)
class RowSplit:
    """Few long rows: each row cut into ``pieces`` of ``piece`` elements, one block each."""

    rows: int
    pieces: int
    piece: int

    def workspace_size(self, element: ElementKind) -> int:
        return self.list_offset(element) + self.rows * self.pieces * SPLIT_LIST_LEN * 4

    def count_offset(self, element: ElementKind) -> int:
        acc = 8 if element is ElementKind.F64 else 4
        return _round16(self.rows * self.pieces * acc)

    def listed_offset(self, element: ElementKind) -> int:
        """The support count of each piece (int32), after the (sum, count) pairs."""
        return self.count_offset(element) + self.rows * self.pieces * 8

    def list_offset(self, element: ElementKind) -> int:
        """Each piece's support positions (``SPLIT_LIST_LEN`` int32 a piece)."""
        return self.listed_offset(element) + _round16(self.rows * self.pieces * 4)


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
    if rows == 0 or variant_for(n, "bwd").per_thread or rows >= 2 * sm_count or rows > 65535:
        return None
    wave = SPLIT_BLOCKS_PER_SM * sm_count
    pieces = max(2, min(-(-n // SPLIT_MIN_PIECE), wave // rows))
    piece = (-(-n // pieces) + 7) // 8 * 8  # a multiple of every vector width
    return RowSplit(rows, -(-n // piece), piece)


def _coop(module: LoadedModule, split: RowSplit) -> bool:
    """Whether the split backward takes the one cooperative kernel (SPLIT_COOP)."""
    if not (SPLIT_COOP and module.cooperative and split.piece <= SPLIT_COOP_PIECE):
        return False
    # row_split keeps rows <= 65535 (grid y) and pieces to one wave (grid x)
    resident = module.resident_blocks("sparsemax_bwd_split_coop", SPLIT_BLOCK)
    return split.rows * split.pieces <= resident * module.sm_count


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
        fws: list[object] = [_WsPtr.at(workspace_ptr, o) for o in (0, cnt, cand, row)]
        fws.append(ctypes.c_int64(split.pieces))
        sgrid = (min(split.pieces, MAX_GRID_X), min(rows, MAX_GRID_YZ), 1)
        tgrid = (min(rows, MAX_GRID_X), 1, 1)
        # not dependent launches: on the H100 they were slower here (64 x 131072 f32 78.1 vs
        # 73.6 us, 16 x 2^20 269.9 vs 239.9 us)
        for part, g in (("scan", sgrid), ("tau", tgrid), ("write", sgrid)):
            op = f"sparsemax_{direction}_split_{part}"
            _launch(module, op, g, SPLIT_BLOCK, stream, [*args, *fws], views, workspace_ptr)
        return f"split{split.pieces}{'/vec16' if vec else ''}"
    if split is not None and _coop(module, split):
        op = "sparsemax_bwd_split_coop"
        cws = [_WsPtr.at(workspace_ptr, 0),
               _WsPtr.at(workspace_ptr, split.count_offset(module.element)),
               ctypes.c_int64(split.piece), ctypes.c_int64(split.pieces)]  # fmt: skip
        _launch(module, op, (split.pieces, rows, 1), SPLIT_BLOCK, stream, [*args, *cws], views,
                workspace_ptr, cooperative=True)  # fmt: skip
        return f"split{split.pieces}/coop{'/vec16' if vec else ''}"
    if split is not None:
        element = module.element
        ws: list[object] = [_WsPtr.at(workspace_ptr, 0),
                            _WsPtr.at(workspace_ptr, split.count_offset(element))]  # fmt: skip
        parts = ("sum", "write")
        if SPLIT_LIST and split.piece * views[0].itemsize >= SPLIT_LIST_MIN_BYTES:
            parts = ("zero", "fix")
            ws += [_WsPtr.at(workspace_ptr, split.listed_offset(element)),
                   _WsPtr.at(workspace_ptr, split.list_offset(element))]  # fmt: skip
            if views[2].ptr == views[1].ptr:  # dx is y: the first kernel keeps y on the support
                args[-1] = ctypes.c_int32(flags | 4)
        ws += [ctypes.c_int64(split.piece), ctypes.c_int64(split.pieces)]
        sgrid = (min(split.pieces, MAX_GRID_X), min(rows, MAX_GRID_YZ), 1)
        dep = dependent_launches(module.arch)
        for part in parts:
            op = f"sparsemax_{direction}_split_{part}"
            _launch(module, op, sgrid, SPLIT_BLOCK, stream, [*args, *ws], views, workspace_ptr,
                    dependent=dep and part == parts[1])  # fmt: skip
        return f"split{split.pieces}{'/vec16' if vec else ''}"
    op = f"sparsemax_{direction}_{var.name}"
    staged = (direction == "bwd" and var.name in BWD_STAGED
              and views[0].itemsize in BWD_STAGED_ITEMSIZES)  # fmt: skip
    if staged:
        op += "_staged"
        grid = min(grid, module.sm_count * module.resident_blocks(op, var.block))
    _launch(module, op, (grid, 1, 1), var.block, stream, args, views, workspace_ptr)
    return f"{var.name}{'/staged' if staged else ''}{'/vec16' if vec else ''}"


class _WsPtr(ctypes.c_uint64):
    """A kernel argument that points into the workspace, ``offset`` bytes in (a prepared
    launch patches it from the workspace's address: ``replay``)."""

    offset: int

    @classmethod
    def at(cls, workspace_ptr: int, offset: int) -> _WsPtr:
        p = cls(workspace_ptr + offset)
        p.offset = offset
        return p


def _launch(module: LoadedModule, op: str, grid: tuple[int, int, int], block: int,
            stream: Stream, args: list[object], views: Sequence[TensorView], workspace_ptr: int,
            **flags: bool) -> None:  # fmt: skip
    """Launch ``op`` with ``args`` (the views' pointers first, the workspace's as _WsPtr;
    ``flags``: ``launch``'s dependent and cooperative) and hand it to the ``capturing``
    block around it, if any."""
    fn = module.function(op)
    launch(fn, grid, block, 0, stream, args, op, **flags)
    if active():
        states = tuple((k, 0, a.offset) for k, a in enumerate(args) if isinstance(a, _WsPtr))
        capture_launch(fn, grid, block, op, [bytes(a) for a in args],  # type: ignore[call-overload]
                       [v.ptr for v in views], states, workspace_ptr, **flags)  # fmt: skip


# The module's switches that launch_rows reads at each launch: a prepared launch (the
# functional API's bound calls) holds while they keep the values it was made under.
_SWITCHES = ("BWD_STAGED", "BWD_STAGED_ITEMSIZES", "DY_WITH_Y", "SPLIT_LIST",
             "SPLIT_LIST_MIN_BYTES", "SPLIT_COOP")  # fmt: skip
# the others: the variants' tables, sizes mirrored by sparsemax.cu, and what a plan reads once
# (the splits)
_FIXED = ("VARIANTS", "BWD_VARIANTS", "SPARSEMAX_SOURCE", "SPLIT_BLOCKS_PER_SM",
          "SPLIT_MIN_PIECE", "SPLIT_BLOCK", "SPLIT_LIST_LEN", "SPLIT_COOP_PIECE",
          "FWD_SPLIT_PIECE", "FWD_SPLIT_CAND", "MAX_GRID_X", "MAX_GRID_YZ")  # fmt: skip


@memo
def switch_values() -> tuple[object, ...]:
    """The values of ``_SWITCHES`` and of the dependent-launch switch, now (read again only
    after an assignment to this module's or the launch module's attributes:
    ``baracuda._switches``)."""
    g = globals()
    return (*(g[n] for n in _SWITCHES), _launch_module.DEPENDENT_LAUNCH)


watch(__name__)  # its switches are read through baracuda._switches.memo
