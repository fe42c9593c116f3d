"""Launching the scan skeleton of ``scan.cu``: layout choice, chunking, workspace, passes.

One launch scans every row of a tensor along one axis with one op of ``scan.cu``. The
tensor is split into rows (outer dims, coalesced) of ``n`` elements. Two layouts:

- ``rows``: the axis is contiguous in the primary tensor; a warp (short rows) or a block
  per (row, chunk), 16-byte vectors when aligned.
- ``cols``: the axis is strided; one thread per (row, chunk), adjacent rows on adjacent
  threads (coalesced when the innermost outer dim is contiguous).

Every op (logcumsumexp in f32) and backward along a strided axis whose rows come in whole,
aligned 128- or 256-byte strips of adjacent rows takes a block per strip, walking the whole
axis with chunks staged by ``cp.async`` (``strip``), where the strips are enough for the
SMs; along a contiguous axis,
rows of 16 KiB or more, enough of them, take blocks that each walk a sequence of rows the
same way (``ring``). Otherwise, when rows
alone cannot fill the GPU, each row is cut into tiles. Along a strided axis they are scanned
in one pass with decoupled look-back (``lbcols``: a block per piece of up to 32 adjacent
rows): tiles publish their totals into a tree of aligned blocks per row and take their carry
from a few nodes per level of it (``scan.cu``). Contiguous rows take three passes
(``LOOKBACK_ROWS`` off; on, ``lbrows``: a block per piece of one row): a reduce pass writes
chunk totals to the workspace, ``states`` turns them into exclusive carries in place, and
the final pass rescans each chunk from its carry; so do both with ``LOOKBACK`` off. Strided
tiles that are one run of memory move through shared memory in 16-byte vectors
(``lbstage``); cumsum/cumprod tiles of a 2-byte type whose adjacent lines pair up in 4-byte
words take two groups of 32 lines, a thread per line pair (``lbpair``). The cummax/cummin
backward runs in one kernel through a ring (contiguous rows of whole vectors, as above), in
strips (a strided axis whose lines come in strips), or where a warp or a block takes a whole
row (``launch_max_backward``), else in two launches.
"""

from __future__ import annotations

import ctypes
import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, overload

from baracuda._cuda import launch as _launch_module
from baracuda._cuda.abi import Shape, Strides, shape_arg, strides_arg
from baracuda._cuda.compiler import KernelSource, register_source
from baracuda._cuda.device import device_info
from baracuda._cuda.launch import arch_number, dependent_launches, launch
from baracuda._cuda.memory import Workspace
from baracuda._cuda.module import LoadedModule, load_module
from baracuda._cuda.replay import U64 as _U64
from baracuda._cuda.replay import Step, active, capture
from baracuda._cuda.stream import Stream
from baracuda._cuda.view import TensorView
from baracuda._layout import contiguous_strides, numel, split_axis
from baracuda._switches import memo, watch
from baracuda.errors import MisalignedOperand
from baracuda.types import ElementKind

__all__ = [
    "SCAN_GROUPS",
    "SCAN_SOURCES",
    "scan_source",
    "OPS",
    "Operand",
    "Params",
    "Chunking",
    "chunking",
    "state_bytes",
    "state_size",
    "launch_scan",
    "BLOCK",
    "PIPE_OPS",
    "PIPE_AUX_OPS",
    "PIPE_MAX_WAVE",
    "SEG_OPS",
    "SEG1_OPS",
    "SEG_ONE_VECTOR",
    "PIPELINED_ROWS",
    "SEG_ROWS",
    "SEG_MAX_BYTES",
    "SEG_WARPS_PER_SM",
    "LOOKBACK",
    "LOOKBACK_ROWS",
    "LOOKBACK_FLAGGED",
    "LB_F64_MAX_LINES",
    "LB_DEPENDENT",
    "WARP_ROWS_PER_SM",
    "WARP_ROWS_PER_SM_OP",
    "lb_nodes_per_line",
    "lb_radix_bits",
    "FUSED_MAX_BACKWARD",
    "FUSED_MAX_BACKWARD_BLOCKS",
    "RING_MAX_BACKWARD",
    "RING_MAX_BACKWARD_SHORT_ITEMSIZES",
    "LBCOLS_WIDE",
    "LBCOLS_STAGED",
    "COOP_ROWS",
    "COOP_ROUNDS",
    "COOP_LSE_ITEMSIZES",
    "PIPE_CHUNK_OPS",
    "STRIP",
    "STRIP_OPS",
    "STRIP_STAGED",
    "STRIP_512_OPS",
    "STRIP_512_ENTRY_OPS",
    "STRIP_NARROW_OPS",
    "STRIP_32_OPS",
    "STRIP_NARROW_ENTRY_OPS",
    "STRIP_MANY_OPS",
    "STRIP_MANY_PER_SM",
    "STRIP_MANY_STAGES",
    "STRIP_MANY_ENTRY_OPS",
    "strip_smem",
    "SHORT",
    "SHORT_MAX",
    "SHORT_GRID_PER_SM",
    "SHORT_KINDS",
    "SHORT_MANY",
    "SHORT1_MANY",
    "SHORT1_RESIDENT",
    "SHORT_MANY_ENTRY_OPS",
    "short_kind",
    "RING_ROWS",
    "RING_FORWARD_OPS",
    "ROWREG",
    "ROWREG_KINDS",
    "ROWREG_OPS",
    "ROWREG_MAX",
    "ROWREG_MAX_KINDS",
    "ROWREG_LSE_ITEMSIZES",
    "STREAM_ROWS",
    "STREAM_LINES",
    "STREAM_ITEMSIZES",
    "STREAM_ROUNDS_ITEMSIZES",
    "STREAM_OPS",
    "STREAM_KINDS",
    "STREAM_GROUPS",
    "CoopSplit",
    "coop_split",
    "launch_max_backward",
    "LaunchCache",
    "switch_values",
]

OPS = ("sum", "prod", "max", "lse", "prod_bwd", "lse_bwd", "seg_bwd", "maxflag")
_LAYOUTS = ("rows1", "rows8", "cols", "states1", "states8", "lbrows", "lbcols")
# Ops with a pipelined warp-per-row kernel (scan_<op>_pipe1: one input, no aux operands).
PIPE_OPS = ("sum", "prod", "lse")
# ... and with one that writes int64 indices as well, in rows shorter than 2^31 (cummax/cummin,
# scan_max_pipe1: the indices contiguous along the axis, every row on 16 bytes; ``_pipe_aux``).
# On the H100, cummax over 4096 x 8192 f32 took 221.2 us on pipe1, 246.1 on rows1; over
# 65536 x 1024, 382.8 vs 459.4.
PIPE_AUX_OPS = ("max",)
# Switch: f32 cummax/cummin rows on pipe1 that one wave of scan_max_pipe1w (pipe1 in 4 blocks
# an SM: 64 registers, a few spilled) holds but not one of pipe1 (80 registers: 3 blocks) take
# pipe1w; the blocks an SM are the driver's (``_pipe_max_variant``). The grid takes a warp a
# row, so 4096 rows on 132 SMs ran as 1.29 waves of 3: on an H200 over 4096 x 8192 179.8 ->
# 158.7 us, reverse 184.8 -> 160.0. Where rows fill whole waves anyway the spills cost:
# 16384 x 2048 149.6 -> 158.9, 3000 x 8192 117.9 -> 119.5; 8192 x 4096 and 65536 x 512
# within 2 us. Read at each launch.
PIPE_MAX_WAVE = True
# Ops whose strided axes (cols, lbcols) take another op than their contiguous ones, with chunk
# states of their own (scan_<op>_cstates1 / cstates8): the logcumsumexp backward, a linear
# recurrence along f16/bf16 rows and a running minimum elsewhere (scan.cu, LseBwdRowsOp).
COLS_STATES_OPS = ("lse_bwd",)
# Ops with segmented tiles of short rows (scan_<op>_seg, SEG_ROWS): PIPE_OPS, cummax/cummin,
# and the backward's ops (the cumsum backward is a reverse cumsum).
SEG_OPS = (*PIPE_OPS, "max", "prod_bwd", "lse_bwd", "maxflag", "seg_bwd")

# Switch: run ``rows1`` launches of PIPE_OPS on ``pipe1`` (the next tiles' 16-byte loads in
# flight while a tile is scanned and stored) where its launch condition holds; False keeps
# every launch on ``rows1``. Read at each launch.
PIPELINED_ROWS = True

# Switch: short rows of SEG_OPS stored back to back (every operand: x and y, cummax's indices,
# the backward's dy, dx, saved tensors and winner flags, each one run of rows * n elements,
# 16-byte aligned; ``_seg_rows``) of at most SEG_MAX_BYTES take
# segmented tiles (scan.cu, scan_seg: pipe1's 1 KiB tiles over the run of all rows whatever
# n, a row starting wherever the position is a multiple of n; SEG_WARPS_PER_SM warps an SM,
# each a stretch of consecutive tiles). pipe1 and rows1 take a warp a row and leave the lanes
# past a short row idle: on the H100, cumsum over (2^20, 16) took 54.2 vs 537.5 us in f32,
# over (2^22, 4) 54.0 vs 2230.6 (docs/benchmarks.md, round 21). Read at each launch.
SEG_ROWS = True
SEG_MAX_BYTES = 512
# warps an SM at most: 3 blocks of 8 (scan.cu: at most 80 registers, no spills); fewer where
# the driver fits fewer (the backward's three-input kernels and cummax/cummin's 2-byte
# kernels: 2 blocks)
SEG_WARPS_PER_SM = 24
# Switch: segmented tiles of SEG1_OPS take one 16-byte vector a lane (scan_<op>_seg1: tiles
# of 512 bytes, half the serial steps a lane and about half the code of scan_<op>_seg) where
# the run is small enough for every warp to take one such tile. Read at each launch.
SEG_ONE_VECTOR = True
SEG1_OPS = (*PIPE_OPS, "max")

# Switch: rows too few to fill the GPU are scanned in one pass with decoupled look-back
# (lbrows / lbcols); False takes the three-pass chunked scan. Read at each launch.
LOOKBACK = True

# Switch: contiguous rows too few to fill the GPU take look-back tiles too (lbrows) when
# LOOKBACK is on; off, they take the three passes. Off: the three passes measured faster on
# the H100 for cumsum over (2, 2^23) (f32 90 vs 100 us, bf16 59 vs 64 us; lbrows waits on
# its carries, benchmarks/tune_scan.py), while strided lines gain from lbcols (4096 x 8192
# along dim 0: 111 vs 187 us). Read at each launch (the workspace is sized for either).
LOOKBACK_ROWS = False

# Switch: the look-back workspace is zeroed by a kernel (scan_zero) after which the
# look-back kernel is a programmatic dependent launch on sm_90 and later: its blocks start
# while the zeroing runs and wait for it in their first step, which saves the gap between a
# cuMemsetD32Async and the next kernel. False: cuMemsetD32Async, then a plain launch. Read at
# each launch.
LB_DEPENDENT = True

# Switch: look-back also for ops whose scan state is not one float or one double (cummax and
# cummin, the backward ops' pairs: a flag and a fence per node). Off: on the H100,
# cummax over 4096 x 8192 along dim 0 took 347 us in three passes vs 390 us with lbcols
# (bf16 325 vs 404), while cumsum gains from lbcols (111 vs 188 us). Read at each launch.
LOOKBACK_FLAGGED = False

# Switch: f64 lines (one-double states) take look-back tiles only where there are at most this
# many of them (a tile of at most 8 lines); more take the three passes. On an H200, along dim 0
# of (n, L) f64 holding 2^23 elements, look-back against the three passes (us): logcumsumexp
# L = 4: 188 vs 271, 8: 194 vs 210, 16: 209 vs 195, 64: 185 vs 159, 1024: 154 vs 129; the
# cummax backward's winner flags L = 4: 228 vs 271, 16: 213 vs 199; cumsum L = 4: 75 vs 120,
# 16: 79 vs 76 (docs/benchmarks.md, round 61). The f32 cumprod's double states take look-back
# tiles at every L (its three passes were slower throughout: 300 lines 53 vs 64 us).
LB_F64_MAX_LINES = 8

# Itemsizes whose cumsum/cumprod/logcumsumexp along a strided axis take wide look-back
# tiles: 32 positions per thread (16 otherwise) when a tile holds 32 lines. On the H100,
# cumsum over 4096 x 8192 along dim 0 took 105.6 vs 112.5 us in f32 and 105 vs 136 us in
# bf16; with 2 lines, (2^20, 2), the fewer tiles were slower (bf16 36 vs 28 us), hence 32
# lines only; the cummax backward's flags pass was slower wide (f32 489 vs 454 us), hence
# these ops only. Read at each launch.
LBCOLS_WIDE: tuple[int, ...] = (2, 4)
_WIDE_OPS = ("sum", "prod", "lse")

# Switch: look-back tiles along a strided axis (lbcols) of cumsum/cumprod/logcumsumexp below
# f64 move between global and shared memory in 16-byte vectors where the layout allows
# (``_stageable``; scan.cu, stage_tile) instead of one element per thread and load. Read at
# each launch.
LBCOLS_STAGED = True


def _stageable(shape: tuple[int, ...], axis: int, operands: Sequence[Slot | None],
               itemsize: int) -> bool:  # fmt: skip
    """Whether every lbcols tile of IN0 and OUT would be one run of whole 16-byte vectors: a
    single group of ``width`` lines (all the rows, at most 32), adjacent (innermost outer
    stride 1), with axis stride == ``width`` (each position's lines follow the previous
    position's), the line length a multiple of the vector lanes (tile starts aligned both
    ways) and 16-byte aligned data.
    On the H100 (2^20, 2) cumsum took 23.4 vs 37.5 us (f32) and 21.4 vs 30.1 us (bf16).
    Staging runs of 32 lines per position (many groups, 4096 x 8192 along dim 0) measured
    slower than one element per thread and load (218 vs 109 us): not taken."""
    lanes = 16 // itemsize
    n = shape[axis]
    rows = numel(shape) // n
    width = min(32, _pow2(rows))  # _lb_cols
    if itemsize == 8 or rows != width or n % lanes:
        return False
    return _one_run(shape, axis, operands, width)


def _seg_rows(op: str, shape: tuple[int, ...], axis: int, operands: Sequence[Slot | None],
                 itemsize: int, reverse: bool, mode: int = 0) -> bool:  # fmt: skip
    """Whether segmented tiles (``SEG_ROWS``) take this scan of ``op``: one of SEG_OPS with
    the operands it takes there (``_SEG_OPERANDS``; cummax/cummin with indices or none, the
    winner flags, ``mode`` bit 2, only for ``maxflag``), rows of at most ``SEG_MAX_BYTES``,
    each operand one run of all rows (row-major, no gaps) starting on 16 bytes, and scanning
    in reverse, whole 16-byte vectors in all (scan.cu, scan_seg). Asked only when a launch
    recipe is recorded (LaunchCache), the fused cummax backward's included."""
    n, total = shape[axis], numel(shape)
    used = tuple(i for i, o in enumerate(operands) if o is not None)
    if not SEG_ROWS or op not in SEG_OPS or total == 0 or n * itemsize > SEG_MAX_BYTES:
        return False
    if used not in _SEG_OPERANDS.get(op, ((IN0, OUT),)) or bool(mode & 4) != (op == "maxflag"):
        return False
    if reverse and total % (16 // itemsize):
        return False
    for i in used:
        o = operands[i]
        assert o is not None
        if o.ptr % 16:
            return False
        oshape, ostrides, _, axis_strides = split_axis(shape, [o.strides], axis)
        if n > 1 and axis_strides[0] != 1:
            return False
        run = contiguous_strides(oshape)  # the rows' strides in a run of rows of n
        if any(d > 1 and st != n * c for d, st, c in zip(oshape, ostrides[0], run, strict=True)):
            return False
    return True


def _seg_warps(module: LoadedModule, kernel: str) -> int:
    """Warps an SM of a segmented-tiles kernel: SEG_WARPS_PER_SM, or fewer where fewer fit
    (the backward's three inputs, cummax/cummin's 2-byte kernel)."""
    return min(SEG_WARPS_PER_SM, BLOCK // 32 * module.resident_blocks(kernel, BLOCK))


def _pipe_max_variant(module: LoadedModule, rows: int, sm_count: int) -> str:
    """``pipe1w`` where one wave of it holds ``rows`` (a warp a row) and one of ``pipe1`` does
    not, else ``pipe1`` (``PIPE_MAX_WAVE``; the blocks an SM from the driver, cached)."""
    held, held_w = (sm_count * BLOCK // 32 * module.resident_blocks(f"scan_max_{k}", BLOCK)
                    for k in ("pipe1", "pipe1w"))  # fmt: skip
    return "pipe1w" if held < rows <= held_w else "pipe1"


def _one_run(shape: tuple[int, ...], axis: int, operands: Sequence[Slot | None],
             width: int) -> bool:  # fmt: skip
    """Whether the ``width`` lines of ``shape`` (all of them, ``width`` > 1) are one run of
    memory in IN0 and OUT: adjacent (the one outer dim of extent > 1 has stride 1), axis
    stride ``width`` (each position's lines follow the previous position's), 16-byte aligned
    data (``_stageable``, ``coop_lines``)."""
    if width < 2:
        return False
    for i in (IN0, OUT):
        o = operands[i]
        if o is None or o.ptr % 16:
            return False
        oshape, ostrides, _, axis_strides = split_axis(shape, [o.strides], axis)
        if oshape != (width,) or ostrides[0] != (1,) or axis_strides[0] != width:
            return False
    return True


# Switch: lbcols tiles of a 2-byte type cover two groups of 32 lines, a thread per two adjacent
# lines (scan.cu, scan_lb_pairs: one 4-byte load a position, tiles of 64 lines x 256
# positions) where ``_pairable``, for PAIR_OPS. Read at each launch.
LBCOLS_PAIRS = True
PAIR_OPS = ("sum", "prod")


def _pairable(shape: tuple[int, ...], axis: int, operands: Sequence[Slot | None],
              itemsize: int) -> bool:  # fmt: skip
    """Whether lbcols tiles may take line pairs (``LBCOLS_PAIRS``): a 2-byte type, IN0 and
    OUT only, at least 32 lines, and in both every line pair 2k, 2k + 1 adjacent and 4-byte
    aligned: the innermost coalesced outer dim of stride 1 and even extent, every other
    stride (the axis's too) even, 4-byte aligned data."""
    used = [i for i, o in enumerate(operands) if o is not None]
    if itemsize != 2 or used != [IN0, OUT]:
        return False
    n = shape[axis]
    if n == 0 or numel(shape) // n < 32:
        return False
    oshape, ostrides, _, axis_strides = split_axis(
        shape, [operands[i].strides for i in used], axis  # type: ignore[union-attr]
    )
    last = max((k for k, d in enumerate(oshape) if d > 1), default=-1)
    if last < 0 or oshape[last] % 2:
        return False
    for k, i in enumerate(used):
        if operands[i].ptr % 4 or axis_strides[k] % 2:  # type: ignore[union-attr]
            return False
        for j, (d, st) in enumerate(zip(oshape, ostrides[k], strict=True)):
            if d > 1 and (st != 1 if j == last else st % 2):
                return False
    return True


def _stage_bytes(ch: Chunking, itemsize: int) -> int:
    """Dynamic shared memory of a staged lbcols launch: the tile and one pad row every 16
    rows (scan.cu, scan_lb_cols_r: R = chunk_len * width / BLOCK = 16 positions a thread)."""
    return (ch.chunk_len * ch.width + BLOCK) * itemsize


# Switch: the ops of STRIP_OPS in their itemsizes, along a strided axis whose lines come in
# runs of whole, aligned 128- or 256-byte strips, enough of them to give most SMs one
# (``_strip_width``), take one launch of a block per strip, each walking the whole axis with
# STRIP_STAGES chunks of each staged operand in flight (scan.cu, scan_strip): no look-back, no
# workspace. On the H100, cumsum over 4096 x 8192 along dim 0 took 52.3 vs 62.0 us in bf16
# (look-back line pairs) and 97.5 vs 102.6 us in f32 (lbcols) (docs/benchmarks.md, round 11).
# On an H200 (round 34), over 4096 x 8192 along dim 0 against the kernels before: the cumprod
# backward f32 135.5 vs 299.2 us, bf16 78.2 vs 553.1; cummax 189.8 vs 277.9 and 228.2 vs
# 284.3; the cummax backward (both passes; the flags staged with the chunk) 190.9 vs 355.6
# and 138.5 vs 381.2 (266.7 and 206.4 with the flags loaded at the chunk's scan); the
# logcumsumexp backward bf16 145.4 vs 366.2, f32 356.8 vs 356.8 (round 35, its row groups'
# factors and carry in double: 203.7 vs 357.3, and 5-7e-6 of max(1, |dx|) vs 3.1e-5 against
# float64). logcumsumexp strips took f32 130.8 vs 146.8 us but bf16 132.0 vs 129.7 (an exp
# in each position's chain on 8 warps an SM), so only f32 took them; since round 41 (its
# runs' exp and log without fix-ups, scan.cu lse_exp and log_run) bf16 takes them too:
# 67.8 vs 108.8 us (f16 68.3 vs 108.6), f32 83.3 (129.3 before). f64 keeps three passes:
# its strips (the accurate exp and log in double) took 557.8 vs 416.1 us, 1024 x 8192 155.0 vs
# 135.0, 512 x 32768 303.0 vs 272.0. Read at each launch.
STRIP = True
_ANY_SIZE = (2, 4, 8)
STRIP_OPS: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("sum", _ANY_SIZE), ("prod", _ANY_SIZE), ("max", _ANY_SIZE), ("lse", (2, 4)),
    ("prod_bwd", _ANY_SIZE), ("lse_bwd", _ANY_SIZE), ("maxflag", _ANY_SIZE),
    ("seg_bwd", _ANY_SIZE), ("max_bwd", _ANY_SIZE),
)  # fmt: skip
# the ops with a strip entry, and the operands each stages (IN0 ..: its inputs, and y for the
# cumprod backward's neighbour; scan.cu kInputsY)
# (max_bwd: the cummax/cummin backward's one-pass strips, x and dy: launch_max_backward)
STRIP_STAGED: dict[str, int] = {"sum": 1, "prod": 1, "max": 1, "lse": 1, "prod_bwd": 3,
                                "lse_bwd": 3, "maxflag": 1, "seg_bwd": 1,
                                "max_bwd": 2}  # fmt: skip
# Switch: the ops of STRIP_512_OPS in their itemsizes take strips in blocks of 512 threads
# (scan_strip512: half the positions a thread and a chunk, twice the warps an SM), where
# their work a position is long: the logcumsumexp backward (its exps; bf16 over 4096 x 8192
# along dim 0 on an H200: 145.6 vs 153.2 us, f32 356.6 vs 370.0; round 35, f32 203.9 vs
# 232.1); cummax/cummin (an index a position: f32 189.4 vs 210.8; in 2-byte types since
# their index pairs, round 42: bf16 181.8 vs 209.1, 512 x 32768 86.7 vs 119.2, f16 alike;
# f64 lost, 304.7 vs 291.8; round 43, the indices through the lane's own pointer: f32 154.3
# vs 178.6 in 256, bf16 173.5 vs 190.4, f64 still lost, 284.4 vs 256.5; round 44, with the
# select combine in 2- and 8-byte types, scan.cu MaxOp: bf16 back to 256, 114.7 vs 118.7,
# 1024 x 8192 34.9 vs 36.0, though 512 x 32768 68.5 vs 66.1; f64 still lost, 217.7 vs
# 217.6, 1024 x 8192 63.0 vs 58.7, 512 x 32768 128.4 vs 113.9). The cummax
# backward's two passes have no such entry: since the winner flags' own store (round 42) its
# first pass is faster in 256 threads (f32 139.8 vs 151.7 us, bf16 102.6 vs 118.8, f64 252.4
# vs 296.9), and its second gains nothing in 512 (f32 139.0 vs 140.0, 1024 x 8192 45.8 vs
# 46.0, 512 x 32768 94.1 vs 94.0). logcumsumexp lost in 512 both times (round 34: f32 152.1
# vs 130.2; round 42, with its runs' cheaper exp and log: f32 103.3 vs 83.7, bf16 100.6 vs
# 67.5), and has no such entry.
STRIP_512_OPS: tuple[tuple[str, tuple[int, ...]], ...] = (("max", (4,)), ("lse_bwd", _ANY_SIZE))
STRIP_512_ENTRY_OPS = ("max", "lse_bwd")  # the ops with a strip512 entry
# Switch: the ops of STRIP_NARROW_OPS in their itemsizes (scan.cu kStripNarrow: cumsum and
# cumprod, so the cumsum backward too) also take strips of 64 bytes, and of STRIP_32_OPS of
# 32 bytes, where 128-byte strips would not fill their share of the SMs: a (8192, 4096) bf16
# tensor along dim 0 is 64 strips of 128 bytes but 128 of 64. On an H200 (docs/benchmarks.md,
# round 47), cumsum along dim 0 against the look-back kernels they took before: bf16
# (8192, 4096) 41.5 against 54.1 us, (4096, 4096) 23.6 against 32.5, (16384, 2048) in 32-byte
# strips 49.8 against 56.1; f32 (8192, 2048) 40.1 against 47.3, but (16384, 1024) in 32-byte
# strips 49.4 against 48.9. Read at each launch.
STRIP_NARROW_OPS: tuple[tuple[str, tuple[int, ...]], ...] = (("sum", (2, 4)), ("prod", (2, 4)))
STRIP_32_OPS: tuple[tuple[str, tuple[int, ...]], ...] = (("sum", (2,)), ("prod", (2,)))
STRIP_NARROW_ENTRY_OPS = ("sum", "prod")  # the ops with a strip_narrow entry
# Switch: the ops of STRIP_MANY_OPS in their itemsizes take scan_<op>_strip6 where their 128-
# or 256-byte strips are at least STRIP_MANY_PER_SM an SM and the device holds that many of
# its blocks: STRIP_MANY_STAGES chunks in flight (scan.cu kStripStagesMany: 96 KiB), so that
# two blocks share an SM. On an H200 along dim 0 (docs/benchmarks.md, round 47): bf16 512 x
# 65536 41.3 -> 38.9 us, f32 256 x 131072 79.2 -> 73.9, bf16 64 x 524288 77.2 -> 50.8 (torch
# 73.4); with a block an SM, 8 stages are as fast or faster. Read at each launch.
STRIP_MANY_OPS: tuple[tuple[str, tuple[int, ...]], ...] = (("sum", (2, 4)), ("prod", (2, 4)))
STRIP_MANY_PER_SM = 2
STRIP_MANY_STAGES = 6  # scan.cu kStripStagesMany
STRIP_MANY_ENTRY_OPS = ("sum", "prod")  # the ops with a strip6 entry


def _listed(table: tuple[tuple[str, tuple[int, ...]], ...], op: str, itemsize: int) -> bool:
    """Whether ``table`` (STRIP_OPS, STRIP_512_OPS, RING_BACKWARD) lists ``op`` in
    ``itemsize``."""
    return any(o == op and itemsize in sizes for o, sizes in table)


STRIP_CHUNK = 16384  # scan.cu kStripChunk
STRIP_STAGES = 8  # scan.cu kStripStages: chunks in flight
MAX_BWD_STRIP_CHUNK = 16384  # scan.cu kMaxBwdStripChunk (bytes of x and of dy)
MAX_BWD_STRIP_STAGES = 4  # its chunks in flight (128 KiB of ring)
# strips per SM at least (fewer: a block per strip leaves too many SMs idle), and the share
# of SMs the wider strips must fill before they are taken
STRIP_MIN_FILL = 0.5
STRIP_WIDE_FILL = 0.75
# Switch: (op, itemsize, share): the ops whose 128-byte strips need fill only this share of the
# SMs in that itemsize, where the kernels taken over fewer lines are slower than strips that
# leave SMs idle. On an H200 (docs/benchmarks.md, round 45; along dim 0, strips over 4 KiB of
# lines are 32, over 8 KiB 64), in us, against STRIP_MIN_FILL:
#  - the cummax backward's one pass against two passes: bf16 (8192, 4096) 121.9 against
#    383.5, (16384, 2048) 235.1 against 389.0; f32 (16384, 2048) 151.6 against 360.3,
#    (16384, 1024) 150.0 against 197.8; f64 (16384, 1024) 236.2 against 276.5, but
#    (65536, 512) (32 strips) 921.6 against 510.3;
#  - the cumprod backward: bf16 (8192, 4096) 134.1 against 538.7, (16384, 2048) 258.4 against
#    538.4; f32 (16384, 2048) 150.6 against 298.7, (16384, 1024) 142.7 against 163.7;
#  - 64 strips, not 32, in bf16: cummax (8192, 4096) 209.4 against 287.6 but (16384, 2048)
#    411.5 against 287.9; the logcumsumexp backward 271.0 against 362.6 but 532.9 against
#    361.1.
# logcumsumexp lost in both (bf16 (8192, 4096) 125.8 against 110.2), and so did cummax and the
# logcumsumexp backward in f32 over 64 strips (323.8 against 285.6, 427.3 against 354.4).
# Read at each launch.
STRIP_MIN_FILL_OF: tuple[tuple[str, int, float], ...] = (
    ("max_bwd", 2, 0.2), ("max_bwd", 4, 0.2), ("max_bwd", 8, 0.45), ("prod_bwd", 2, 0.2),
    ("prod_bwd", 4, 0.2), ("max", 2, 0.45), ("lse_bwd", 2, 0.45),
)  # fmt: skip


def _strip_min_fill(op: str, itemsize: int) -> float:
    """The share of the SMs that ``op``'s 128-byte strips in ``itemsize``-byte elements must
    fill: ``STRIP_MIN_FILL_OF``'s entry, else ``STRIP_MIN_FILL``."""
    return next((f for o, z, f in STRIP_MIN_FILL_OF if o == op and z == itemsize),
                STRIP_MIN_FILL)  # fmt: skip


def strip_smem(op: str, itemsize: int, width: int = 128) -> int:
    """The ring of ``op``'s strip launch in ``itemsize``-byte elements: STRIP_STAGES chunks of
    each staged operand, of STRIP_CHUNK bytes for one operand and half that for more
    (scan.cu kStripChunkOf: 128 and 192 KiB), and for the cummax backward's second pass the
    chunk's winner flags (a byte an element: 144 to 192 KiB); the cummax backward's one pass
    (max_bwd) MAX_BWD_STRIP_STAGES chunks of MAX_BWD_STRIP_CHUNK bytes of x and of dy. Strips
    of ``width`` < 128 bytes (STRIP_NARROW_OPS) pad each row group's positions with one
    row: BLOCK 4-byte words more a chunk (scan.cu scan_strip_w, GP)."""
    if op == "max_bwd":
        return 2 * MAX_BWD_STRIP_CHUNK * MAX_BWD_STRIP_STAGES
    staged = STRIP_STAGED[op]
    chunk = STRIP_CHUNK if staged == 1 else STRIP_CHUNK // 2
    flags = chunk // itemsize if op == "seg_bwd" else 0
    pad = BLOCK * 4 if 0 < width < 128 else 0
    return (staged * (chunk + pad) + flags) * STRIP_STAGES


def _strip_entry(module: LoadedModule, op: str, itemsize: int, width: int, strips: int,
                 sm_count: int) -> tuple[str, int, int]:  # fmt: skip
    """The strip entry of ``op`` for ``strips`` strips of ``width`` bytes, its shared memory
    and its threads: scan_<op>_strip512 where STRIP_512_OPS lists the op, _strip_narrow for
    strips under 128 bytes, _strip6 where STRIP_MANY_OPS lists it and the strips are at least
    STRIP_MANY_PER_SM an SM that the device holds, else scan_<op>_strip."""
    if op in STRIP_512_ENTRY_OPS and _listed(STRIP_512_OPS, op, itemsize):
        return f"scan_{op}_strip512", strip_smem(op, itemsize, width), 512
    if 0 < width < 128:
        return f"scan_{op}_strip_narrow", strip_smem(op, itemsize, width), BLOCK
    if (width and op in STRIP_MANY_ENTRY_OPS and _listed(STRIP_MANY_OPS, op, itemsize)
            and strips >= STRIP_MANY_PER_SM * sm_count):  # fmt: skip
        many, smem = f"scan_{op}_strip6", STRIP_CHUNK * STRIP_MANY_STAGES
        if (_smem_room(module, many) >= smem
                and module.resident_blocks(many, BLOCK, smem) >= STRIP_MANY_PER_SM):
            return many, smem, BLOCK
    return f"scan_{op}_strip", strip_smem(op, itemsize, width), BLOCK


def _strip_used(op: str, operands: Sequence[Slot | None]) -> tuple[int, ...] | None:
    """The slots ``operands`` fill, where they are a set that a strip launch (or scan_short)
    of ``op`` takes (``_strip_operands``), else None."""
    used = tuple(i for i, o in enumerate(operands) if o is not None)
    return used if used in _strip_operands(op) else None


def _strip_operands(op: str) -> tuple[tuple[int, ...], ...]:
    """The operand slots a strip launch of ``op`` may take (each a sorted tuple)."""
    staged = tuple(range(STRIP_STAGED[op]))
    if op == "max":  # the indices are optional
        return ((*staged, OUT), (*staged, OUT, AUX))
    if op == "maxflag":  # the winner flags alone
        return ((*staged, AUX),)
    if op == "seg_bwd":  # dy, dx and the flags
        return ((*staged, OUT, AUX),)
    return ((*staged, OUT),)


def _strip_width(op: str, shape: tuple[int, ...], axis: int, operands: Sequence[Slot | None],
                 itemsize: int, sm_count: int) -> int:  # fmt: skip
    """The bytes of a strip (256, 128, 64 or 32) where a strided scan of ``op`` may take strips
    (``STRIP``, ``op`` in ``itemsize`` in STRIP_OPS), else 0: the op's operands
    (``_strip_operands``), the element-typed ones 16-byte aligned with the innermost outer
    dim (extent > 1) of stride 1 and a whole number of strips long and every other outer
    stride and the axis stride whole 16-byte vectors, AUX (indices or flags) with the
    innermost outer dim of stride 1 (the flags the cummax backward's second pass reads also
    16-byte aligned, with every other stride a multiple of 16); 256-byte strips where they
    fill ``STRIP_WIDE_FILL`` of the SMs, else 128-byte strips where they fill the share that
    ``STRIP_MIN_FILL_OF`` gives ``op`` in ``itemsize`` (``STRIP_MIN_FILL`` where it lists
    none), else for the ops of STRIP_NARROW_OPS 64-byte strips (STRIP_32_OPS: then 32-byte
    ones) that fill that share (the scan_<op>_strip_narrow entry). cummax/cummin's strips
    below 8-byte types carry their positions as int (scan.cu MaxStripOp): axes shorter than
    2^31 only."""
    n = shape[axis]
    if n == 0 or not STRIP or not _listed(STRIP_OPS, op, itemsize):
        return 0
    if op == "max" and itemsize < 8 and n >= 2**31:
        return 0
    used = _strip_used(op, operands)
    if used is None:
        return 0
    fill_least = _strip_min_fill(op, itemsize)
    widths = [(256, STRIP_WIDE_FILL), (128, fill_least)]
    # (the narrow entries compile to nothing in 8-byte types: never those, whatever the table)
    if op in STRIP_NARROW_ENTRY_OPS and itemsize <= 4 and _listed(STRIP_NARROW_OPS, op, itemsize):
        widths.append((64, fill_least))
        if _listed(STRIP_32_OPS, op, itemsize):
            widths.append((32, fill_least))
    if numel(shape) // n * itemsize < widths[-1][0] * fill_least * sm_count:
        return 0  # too few lines for enough strips (before the layout's cost)
    lines = _vector_lines(op, shape, axis, operands, used, itemsize)
    if lines is None:
        return 0
    oshape, last = lines
    line_bytes = numel(oshape) * itemsize
    for sw, fill in widths:
        if (oshape[last] * itemsize) % sw == 0 and line_bytes // sw >= fill * sm_count:
            return sw
    return 0


def _vector_lines(op: str, shape: tuple[int, ...], axis: int, operands: Sequence[Slot | None],
                  used: tuple[int, ...], itemsize: int,
                  staged: bool = True) -> tuple[tuple[int, ...], int] | None:  # fmt: skip
    """The outer shape of a strided scan of ``op`` over ``used`` operands and its innermost dim
    of extent > 1, where the lines come in 16-byte vectors (strips and ``scan_short``): the
    element-typed operands 16-byte aligned with that dim of stride 1 and every other outer
    stride and the axis stride whole vectors; AUX (indices or flags) with that dim of stride 1
    (the flags that the cummax backward's second pass stages in strips, ``staged``, also with
    every other stride, and their address, multiples of 16). None where they do not."""
    oshape, ostrides, _, axis_strides = split_axis(
        shape, [operands[i].strides for i in used], axis  # type: ignore[union-attr]
    )
    last = max((k for k, d in enumerate(oshape) if d > 1), default=-1)
    if last < 0:
        return None
    lanes = 16 // itemsize
    for k, i in enumerate(used):
        if i == AUX:  # lines adjacent; the flags that are read are staged in 16-byte pieces
            if ostrides[k][last] != 1:
                return None
            others = [st for j, (d, st) in enumerate(zip(oshape, ostrides[k], strict=True))
                      if d > 1 and j != last]  # fmt: skip
            pieces = [operands[i].ptr, axis_strides[k], *others]  # type: ignore[union-attr]
            if staged and op == "seg_bwd" and any(v % 16 for v in pieces):
                return None
            continue
        if operands[i].ptr % 16 or axis_strides[k] % lanes:  # type: ignore[union-attr]
            return None
        for j, (d, st) in enumerate(zip(oshape, ostrides[k], strict=True)):
            if d > 1 and (st != 1 if j == last else st % lanes):
                return None
    return oshape, last


# Switch: a strided axis of 2 to SHORT_MAX positions (every op but the cummax backward's one
# pass) takes scan_<op>_short: a thread per word of adjacent lines walks the axis (scan.cu,
# scan_short; short_kind). Strips there scan one partial chunk a block and exit, and cols moves
# an element at a time: on an H200 (docs/benchmarks.md, round 48) cumsum over (2, 2^23) along
# dim 0 took 546.7 us in bf16 and 979.7 in f32 (torch 48.9 and 55.0), now 21.6 and 37.5; from
# 128 positions on strips are faster (bf16 128 x 131072: 23.7 against 33.1 us). Read at each
# launch.
SHORT = True
SHORT_MAX = 64
SHORT_KINDS = ("short", "short1")  # every op: a word of lines a thread; a line a thread
# Switch: where the outer dims coalesce to one, the ops that take NV words a thread (scan.cu,
# scan_short: shortx2 / shortx4 two or four 16-byte vectors, cummax/cummin's pairs of lines)
# over at most the given positions, the first that fits, so that a thread still has its loads
# in flight. On an H200 (docs/benchmarks.md, rounds 48 and 49), bf16 cumsum over (2, 2^23) 28.5
# against 37.7 us, (4, 2^22) 24.1 against 26.7; the cummax backward over (2, 2^23) 78.0
# against 91.7; logcumsumexp 37.8 against 46.1 (its shortx4 spilled); cummax bf16 over (2,
# 2^23) 72.2 against 88.8, (64, 2^18) 61.7 against 73.8 (round 49; 57.1 over (2, 2^23) since
# round 50's int indices, torch 68.0). The cumprod and logcumsumexp backward
# (45.9 against 37.9, 68.9 against 55.1) were slower so. Read at each launch (the entries exist
# for SHORT_MANY_ENTRY_OPS only); replace the dict, never change it in place (switch_values).
SHORT_MANY: dict[str, tuple[tuple[int, str], ...]] = {
    "sum": ((2, "shortx4"), (4, "shortx2")),
    "prod": ((2, "shortx4"), (4, "shortx2")),
    "maxflag": ((2, "shortx4"), (4, "shortx2")),
    "seg_bwd": ((2, "shortx4"), (4, "shortx2")),
    "lse": ((4, "shortx2"),),
    "max": ((4, "shortx4"), (1 << 30, "shortx2")),
}  # fmt: skip
# Switch: the same for lines that are not whole vectors (short1x4 / short1x8 / short1x8b3: four
# or eight lines a thread, a word each; short1x8 loads two positions a batch, short1x8b3
# three). On an H200, bf16 cumsum over (3, 5592405) 39.2 against 64.2 us (torch 45.6), (2,
# 8388607) 39.3 against 87.3; over 8 positions and more one line a thread was as fast or faster
# (37.1 against 40.1 over 8, 36.6 against 83.4 over 64; round 51, short1x8 over 8: 36.9 against
# 34.1); cummax over (3, 5592405) 75.8 against 113.3 (torch 68.1). Round 51 (docs/benchmarks.md):
# two positions a batch over 2 and 4 positions (bf16 36.8 and 36.7 us against 45.6 with one),
# three over 3 (38.2 against 39.9 with two, 45.2 with one). cummax/cummin (round 55): a line a
# thread with two positions' loads a batch and every line in the grid (scan.cu, scan_max_lines),
# at 32 registers over up to 4 positions (short1l) and 40 over more (short1lw), in one run on
# an H200: bf16 over (2, 8388607) 59.6 against short1x4's 72.9 (torch 69.3), f32 75.7 against
# 83.0 (80.2), f64 108.8 against 119.4 (109.1); over 16 positions bf16 68.7 against short1's
# 75.2 (69.8). Over 64 positions torch was faster in bf16 and f64 (and short1 in f64: 139.7
# against 145.3). Read at each launch.
SHORT1_MANY: dict[str, tuple[tuple[int, str], ...]] = {
    "sum": ((2, "short1x8"), (3, "short1x8b3"), (4, "short1x8")),
    "prod": ((2, "short1x8"), (3, "short1x8b3"), (4, "short1x8")),
    "max": ((4, "short1l"), (1 << 30, "short1lw")),
}  # fmt: skip
# Switch: before SHORT1_MANY, for the ops it names, kinds of lines that are not whole vectors by
# positions and lines an SM: (at most n positions, at most lines over the SMs, kind), the first
# that fits. cummax/cummin where every line fits on the SMs at once (at most 2048 an SM, 8 blocks
# of BLOCK threads: short1l and short1l1's 32 registers; short1lw's 6 blocks an SM would leave a
# second, partial wave of lines that each walk the whole axis): short1l, but over more than 32
# positions of more than 1536 lines an SM one position a load (short1l1). In one run on an H200
# over 64 positions of 236543 lines (1792 an SM) bf16 64.8 against short1lw's 75.3 us (torch
# 65.1), f32 99.4 against 106.5 (100.4), f64 123.5 against 134.9 (125.5); of 270335 lines (2048 an
# SM) bf16 74.5 against short1l's 79.6 (torch 74.2); over 32 positions of 236543 lines short1l
# 32.0 against 36.5 (33.4). short1l1 was slower with fewer lines (bf16 over 64 positions of 1024
# an SM 45.6 against 38.3), short1l with more (2304 an SM: 97.9 against short1lw's 86.2)
# (docs/benchmarks.md, round 56). Read at each launch; replace the dict, never change it in place
# (switch_values).
SHORT1_RESIDENT: dict[str, tuple[tuple[int, int, str], ...]] = {
    "max": ((32, 2048, "short1l"), (1 << 30, 1536, "short1l"), (1 << 30, 2048, "short1l1")),
}  # fmt: skip
SHORT_MANY_ENTRY_OPS: dict[str, tuple[str, ...]] = {
    "shortx2": ("sum", "prod", "lse", "maxflag", "seg_bwd", "max"),
    "shortx4": ("sum", "prod", "maxflag", "seg_bwd", "max"),
    "short1x8": ("sum", "prod"),
    "short1x8b3": ("sum", "prod"),
    "short1x4": ("max",),
    "short1l": ("max",),
    "short1lw": ("max",),
    "short1l1": ("max",),
}  # fmt: skip
# the words a thread of each kind (scan.cu: NV)
_SHORT_WORDS = {"short": 1, "short1": 1, "shortx2": 2, "shortx4": 4, "short1x4": 4,
                "short1x8": 8, "short1x8b3": 8, "short1l": 1, "short1lw": 1,
                "short1l1": 1}  # fmt: skip
# the short kinds' grid cap, blocks an SM (a thread then takes several of its words in turn);
# cummax/cummin's grid of a line a thread covers every line once (scan.cu, scan_max_lines)
SHORT_GRID_PER_SM = 64
_SHORT_UNCAPPED = ("short1l", "short1lw", "short1l1")


def _has_short_entry(op: str, kind: str) -> bool:
    return op in SHORT_MANY_ENTRY_OPS.get(kind, ())


def short_kind(op: str, n: int, vector: bool = True, one_dim: bool = True,
               lines_per_sm: float = math.inf) -> str:  # fmt: skip
    """The scan_short entry of ``op`` over ``n`` positions: where the outer dims coalesce to
    one (``one_dim``), the first kind of SHORT_MANY (lines in 16-byte vectors) or of
    SHORT1_RESIDENT (any other layout, at most ``lines_per_sm``: the lines over the SMs) and
    SHORT1_MANY for at most ``n`` positions whose entry exists; else a word a thread, ``short``
    (16-byte vectors) or ``short1`` (a line)."""
    if one_dim:
        if not vector:
            for most, per_sm, kind in SHORT1_RESIDENT.get(op, ()):
                if n <= most and lines_per_sm <= per_sm and _has_short_entry(op, kind):
                    return kind
        for most, kind in (SHORT_MANY if vector else SHORT1_MANY).get(op, ()):
            if n <= most and _has_short_entry(op, kind):
                return kind
    return "short" if vector else "short1"


def _short_launch(op: str, shape: tuple[int, ...], axis: int, operands: Sequence[Slot | None],
                  itemsize: int, one_dim: bool = True,
                  sm_count: int = 0) -> tuple[str, int] | None:  # fmt: skip
    """The scan_short entry of a strided scan of ``op`` and the lines a thread takes, or None:
    ``SHORT`` on, an axis of 2 to ``SHORT_MAX`` positions (and fewer than 2^31, whatever
    ``SHORT_MAX`` is set to: cummax/cummin's states there hold int indices) and the op's strip
    operands (``_strip_operands``). Lines in 16-byte vectors (``_vector_lines``, the innermost
    outer dim a whole number of them) go a vector a thread (cummax/cummin: two lines, for their
    indices), any other layout a line (short1), or NV such words where ``one_dim`` (the outer
    dims coalesce to one: ``short_kind``, with the lines over ``sm_count`` SMs where given)."""
    n = shape[axis]
    most = min(SHORT_MAX, 2**31 - 1)
    if not SHORT or not 1 < n <= most or op not in STRIP_STAGED or op == "max_bwd":
        return None
    used = _strip_used(op, operands)
    if used is None:
        return None
    lines = _vector_lines(op, shape, axis, operands, used, itemsize, staged=False)
    vector = lines is not None and lines[0][lines[1]] * itemsize % 16 == 0
    per_sm = numel(shape) // n / sm_count if sm_count else math.inf
    kind = short_kind(op, n, vector, one_dim, per_sm)
    per_word = (2 if op == "max" else 16 // itemsize) if vector else 1
    return kind, _SHORT_WORDS[kind] * per_word


def _vector_aux(shape: tuple[int, ...], axis: int, operands: Sequence[Slot | None],
                itemsize: int) -> bool:  # fmt: skip
    """Whether ``scan_short`` moves AUX (indices, flags) a word of its lines at a time: no AUX,
    or AUX 16-byte aligned with every stride of a dim of extent > 1 (the axis's too) but the
    innermost's 1 a multiple of 16 // itemsize (cummax's two lines a thread need only even
    ones; the one rule serves every op)."""
    aux = operands[AUX]
    if aux is None:
        return True
    lanes = 16 // itemsize
    strides = [st for d, st in zip(shape, aux.strides, strict=True) if d > 1]
    return aux.ptr % 16 == 0 and all(st % lanes == 0 for st in strides if st != 1)


# Switch: cumsum/cumprod (RING_FORWARD_OPS) along a contiguous axis, IN0 and OUT only under
# pipe1's vector condition, rows of one stride (the outer dims coalesce to one) of at least
# RING_CHUNK bytes and whole 16-byte vectors (``_ring_rows``), many enough to fill the
# launch's block slots (``_ring_grid``), take one launch of up to RING_BLOCKS_PER_SM blocks an
# SM, each walking a sequence of rows in chunks of RING_CHUNK bytes with RING_STAGES in
# flight (scan.cu, scan_ring). On the H100 over 4096 x 8192 along dim 1 it took 49.4 vs
# 55.3 us in bf16 and 96.3 vs 102.4 us in f32 against pipe1; 512 x 16384: 15.6 vs 32.5 and
# 26.4 vs 48.6 us (docs/benchmarks.md, round 12). Read at each launch.
RING_ROWS = True
RING_CHUNK = 16384  # scan.cu kRingChunk
RING_STAGES = 6  # scan.cu kRingStages
RING_SMEM = RING_CHUNK * RING_STAGES
# two blocks an SM where they fit (96 KiB of ring each): bf16 4096 x 8192 50.0 vs 51.0 us
RING_BLOCKS_PER_SM = 2
# the share of the launch's (SM x block x round) slots that the rows must fill
RING_MIN_BALANCE = 0.9


# Switch: the backward ops of RING_BACKWARD (of RING_BACKWARD_OPS: the cumprod and
# logcumsumexp backward) in the itemsizes it lists take the ring too, under the same
# conditions with dy, x and y staged (RING_BACKWARD_CHUNK bytes of each a chunk,
# RING_BACKWARD_STAGES chunks in flight: the same 96 KiB), where every operand allows 16-byte
# vectors. On an H200 (docs/benchmarks.md, round 30) the cumprod backward took
# 75.1 vs 129.8 us in bf16 and 135.1 vs 137.4 us in f32 over 4096 x 8192, 26.0 vs 65.5 and
# 42.3 vs 69.5 us over 512 x 16384. The logcumsumexp backward runs there as a linear recurrence
# in 2-byte types since round 31 (bf16 4096 x 8192: 100.0 us, against 147.7 for the running
# minimum through the ring or warp rows); in f32 the running minimum took 300.0 us through
# the ring against 199.3 on warp rows (its combine takes up to two accurate exps), and the
# recurrence is not accurate enough there (scan.cu, LseBwdLinOp). Read at each launch.
# Since round 36 f32/f64 take it too, as the strips do (scan.cu, LseBwdGroupOp): a recurrence
# in each lane's run of positions, whose factor is one exp in double of its end points, with
# the lanes', warps' and chunks' joins in double. On an H200, f32: 4096 x 8192 168.8 vs
# 201.2 us on warp rows, 512 x 16384 52.6 vs 125.0, 1000 x 8200 62.3 vs 93.9; the largest
# error against float64 (x ~ 4 N(0, 1)) 0.7-1.3e-5 of max(1, |dx|), warp rows' 1.3-2.1e-5.
RING_BACKWARD: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("prod_bwd", (2, 4)), ("lse_bwd", (2, 4, 8)),
)  # fmt: skip
RING_BACKWARD_OPS = ("prod_bwd", "lse_bwd")
RING_FORWARD_OPS = ("sum", "prod")
RING_OPS = (*RING_FORWARD_OPS, *RING_BACKWARD_OPS)  # the ops with a ring entry
RING_BACKWARD_CHUNK = 8192  # scan.cu kRingChunkOf<3>
RING_BACKWARD_STAGES = 4  # scan.cu kRingStagesOf<3>
assert RING_BACKWARD_CHUNK * 3 * RING_BACKWARD_STAGES == RING_SMEM


def _ring_rows(op: str, params: Params, operands: Sequence[Slot | None], itemsize: int) -> bool:
    """Whether the rows of ``params`` may take the ring: ``RING_ROWS`` on, the op's operands
    only (IN0 and OUT; dy, x, y and dx for RING_BACKWARD_OPS in the itemsizes RING_BACKWARD
    lists), each allowing 16-byte vectors along a contiguous axis (``params.vec``: the
    ring's callers pass every operand as a vector slot), outer dims that coalesce to one, rows
    of at least one chunk and whole 16-byte vectors."""
    if op in RING_FORWARD_OPS:
        ops, chunk = [IN0, OUT], RING_CHUNK
    elif op in RING_BACKWARD_OPS and _listed(RING_BACKWARD, op, itemsize):
        ops, chunk = [IN0, IN1, IN2, OUT], RING_BACKWARD_CHUNK
    else:
        return False
    return RING_ROWS and _whole_vector_rows(params, operands, ops, itemsize) and (
        params.n * itemsize >= chunk)  # fmt: skip


def _whole_vector_rows(params: Params, operands: Sequence[Slot | None], ops: list[int],
                       itemsize: int) -> bool:  # fmt: skip
    """The ring's and the rows in registers' layout: the operands ``ops`` alone, each allowing
    16-byte vectors along a contiguous axis (``params.vec``), outer dims that coalesce to one
    (rows one stride apart) and rows of whole 16-byte vectors."""
    return (
        [i for i, o in enumerate(operands) if o is not None] == ops
        and bool(params.vec)
        and params.outer.rank == 1
        and params.n * itemsize % 16 == 0
    )


# Switch: contiguous rows of more than 4 KiB and at most 32 KiB of cumsum and cumprod (and so
# the cumsum backward), under the ring's conditions otherwise (``_ring_rows``: one input, rows
# one stride apart, whole 16-byte vectors), take a block a row held in registers (scan.cu,
# scan_rowreg: rowreg2 / rowreg4 / rowreg8 for rows of up to 8 / 16 / 32 KiB): no
# shared-memory stage, every load of a row in flight at once. ROWREG_PREFETCH: each block
# asks L2 for the row as many rows on as the SMs hold blocks (sm_90). On an H200
# (docs/benchmarks.md, rounds 64-65), µs, the ring (rows of 16 KiB or more) or warp rows
# (pipe1, shorter) -> registers without the prefetch (round 64, rows of up to 16 KiB) -> with
# it: bf16 cumsum 4096 x 8192 39.5 -> 38.2 -> 37.0, its backward 39.5 -> 38.3 -> 37.0, f32
# cumsum 4096 x 4096 38.6 -> 38.5 -> 37.2, f32 cumprod 4096 x 4096 40.3 -> 37.2; rows of 32
# KiB (ring -> rowreg8 with the prefetch): f32 cumsum 4096 x 8192 74.0 -> 69.0, f32 cumprod
# 75.7 -> 69.5, f64 cumsum 4096 x 4096 75.2 -> 68.8, bf16 cumsum 2048 x 16384 40.3 -> 37.2;
# bf16 1000 x 8192 12.7 (ring) -> 13.1 -> 12.5. Rows of 4 KiB or less, a vector a lane, were
# slower (round 64: bf16 16384 x 2048 40.0 -> 43.3, 65536 x 1024 75.7 -> 118.8), and so was a
# grid of twice the blocks an SM holds, each taking every grid-th row (bf16 cumsum 41.8 us
# with streaming loads, 39.2 read-only, against 38.2). Read at each launch.
ROWREG = True
ROWREG_PREFETCH = True
ROWREG_MIN_BYTES = 4096 + 16
ROWREG_MAX_BYTES = 32768  # rowreg8: 8 vectors a lane, 256 lanes
ROWREG_KINDS = ("rowreg2", "rowreg4", "rowreg8")
ROWREG_OPS = (*RING_FORWARD_OPS, "max", "lse")
# Switch: cummax/cummin's contiguous rows of more than 8 KiB and at most 32 KiB (values and
# int64 indices, or values alone; rowreg4 and rowreg8: ROWREG_MAX_KINDS) take a block a row in
# registers too, where each lane folds each of its vectors and walks it again for the outputs
# (scan.cu, scan_rowreg_dir's kIdx), except 2-byte rows of at most 16 KiB in reverse. On an
# H200 (docs/benchmarks.md, round 70), µs, warp rows (pipe1, pipe1w; rows8 where the rows fill
# no wave) -> registers: f32 4096 x 8192 160.9 -> 152.9 (reverse 164.5 -> 159.3), 4096 x 4096
# 84.7 -> 74.3; bf16 4096 x 8192 121.3 -> 112.5, 16384 x 8192 446.8 -> 421.9, 1000 x 8192
# 56.0 -> 33.4, 2048 x 16384 197.5 -> 135.9; f64 4096 x 4096 125.5 -> 122.8. Slower in the
# variants' runs: rows of 8 KiB or less (rowreg2: f32 16384 x 2048 147.6 -> 163.5, bf16 8192
# x 4096 117.2 -> 124.6) and bf16 4096 x 8192 in reverse (121.7 -> 127.9). Read at each
# launch.
ROWREG_MAX = True
ROWREG_MAX_MIN_BYTES = 8192 + 16
ROWREG_MAX_KINDS = ("rowreg4", "rowreg8")
# Switch: logcumsumexp's f64 rows (ROWREG_LSE_ITEMSIZES, a mirror of the kernels: scan.cu's
# BC_SCAN_ROWREG_LSE_ENTRY1 compiles them for f64 alone) of at least ROWREG_LSE_MIN_BYTES (and
# at most 32 KiB), where the launch would take warp rows (rows1/pipe1: warp_rows_per_sm rows
# an SM; fewer keep a block a row, rows8, which measured faster), take a block a row in
# registers too, each vector in two passes (scan_rowreg_dir's kRun: LseOp::lane_run, the warp's
# runs joined, LseOp::lane_outputs). On an H200 (docs/benchmarks.md, round 71), µs, warp rows
# (pipe1) -> registers: f64 4096 x 4096 410.6 -> 337.3 (reverse 468.6 -> 305.1), 4096 x 2048
# 210.3 -> 168.1, 8192 x 1024 189.2 -> 147.9; slower: f64 8192 x 520 (rows of 4 KiB and 64
# bytes) 122.4 -> 145.8, and 1000 x 4096 (rows8, under 16 rows an SM) 93.4 -> 113.9. The
# other types, whose exp and log per element bind them, lost to warp rows at 16 warps an SM
# (62-119 registers, a warp scan a vector) against pipe1's up to 32: f32 4096 x 8192 80.2 ->
# 134.0, 4096 x 4096 43.6 -> 69.7; bf16 4096 x 8192 46.8 -> 66.1, 4096 x 4096 28.3 -> 30.1.
# Read at each launch.
ROWREG_LSE_ITEMSIZES = (8,)
ROWREG_LSE_MIN_BYTES = 8192


def _rowreg(op: str, params: Params, operands: Sequence[Slot | None], itemsize: int,
            sm_count: int) -> str | None:  # fmt: skip
    """The rowreg entry that takes the rows of ``params`` (ROWREG), or None. cummax/cummin's
    indices (AUX), where given, lie contiguous along the axis, each row on 16 bytes (int64
    indices, not the backward's winner flags: ``mode`` bit 2 clear). logcumsumexp: the
    itemsizes and row lengths of ROWREG_LSE_*, where its rows would take warp rows."""
    rowb = params.n * itemsize
    slots = [IN0, OUT]
    if op == "max":
        if not ROWREG_MAX or rowb < ROWREG_MAX_MIN_BYTES or (
                params.reverse and itemsize == 2 and rowb <= 16384):  # fmt: skip
            return None
        if operands[AUX] is not None:
            aux = params.op[AUX]
            if params.mode & 4 or aux.axis_stride != 1 or aux.ptr % 16 or aux.outer.v[0] % 2:
                return None
            slots.append(AUX)
    elif op == "lse" and (itemsize not in ROWREG_LSE_ITEMSIZES or rowb < ROWREG_LSE_MIN_BYTES
                          or not takes_warp_rows(params.rows, params.n, itemsize, sm_count,
                                                 warp_rows_per_sm(op, itemsize))):  # fmt: skip
        return None
    if not (ROWREG and op in ROWREG_OPS and ROWREG_MIN_BYTES <= rowb <= ROWREG_MAX_BYTES
            and _whole_vector_rows(params, operands, slots, itemsize)):  # fmt: skip
        return None
    return f"scan_{op}_rowreg{2 if rowb <= 8192 else 4 if rowb <= 16384 else 8}"


def _launch_rowreg(module: LoadedModule, kernel: str, rows: int, stream: Stream,
                   params: Params, sm_count: int, rec: Recorder | None) -> str:  # fmt: skip
    """Enqueues ``kernel`` (a rowreg entry) over ``rows`` rows, a block a row; its variant.
    With ROWREG_PREFETCH, a block asks L2 for the row as many rows on as the SMs hold blocks
    (``params.chunk_len``; where there are fewer rows, none is asked for)."""
    grid = min(rows, 2**31 - 1)
    ahead = module.resident_blocks(kernel, BLOCK) * sm_count if ROWREG_PREFETCH else 0
    params.chunk_len = ahead
    _enqueue(rec, module.function(kernel), (grid, 1, 1), BLOCK, 0, stream, params, kernel)
    return f"{kernel.rsplit('_', 1)[1]}x{grid}"


def _ring_grid(rows: int, sm_count: int, per_sm: int) -> int:
    """Blocks of a ring launch over ``rows`` rows with at most ``per_sm`` blocks an SM, or 0:
    the most blocks an SM (down to one) at which the rows fill RING_MIN_BALANCE of the
    launch's slots. A block takes every grid-th row, so the launch runs ceil(rows / grid)
    rounds, and an SM holding more blocks than another takes longer (block scheduling
    spreads them: ceil(grid / sm_count) an SM)."""
    for k in range(per_sm, 0, -1):
        grid = min(rows, k * sm_count)
        slots = sm_count * _cdiv(grid, sm_count) * _cdiv(rows, grid)
        if rows >= RING_MIN_BALANCE * slots:
            return grid
    return 0


# Switch: few long contiguous lines of PIPE_OPS, which ``chunking`` would cut into chunks,
# take one cooperative launch (scan.cu, scan_coop, an entry a direction (coop_kernel): a
# block an SM, each warp a run of a piece of a line, read once and kept in registers and
# shared memory where it fits, the rest read again from L2; scanned after a grid barrier)
# where the device takes cooperative launches, pipe1's launch condition holds and the input
# fits in what the blocks keep and the L2 cache (more would be read twice from memory). On
# the H100, cumsum over (2, 2^23) took 70.3-70.8 vs 84.6-85.5 us in f32 and 35.8-36.4 vs
# 54.2-54.9 us in bf16 (three passes) in round 7; the registers of round 13, the entry a
# direction of round 14 and the rows of round 15 took it further (docs/benchmarks.md). Read
# at each launch.
COOP_ROWS = True
COOP_ROW_BYTES = 512  # a warp's row: 32 lanes x 16 bytes

# Switch: the rounds of a cooperative launch over long lines of ROUNDS_OPS (0: automatic;
# scan.cu, scan_<op>_rounds, in programs of their own: ROUNDS_GROUPS). A round is a piece of
# each block in turn, the rounds' pieces consecutive stretches of the line, each round with a
# grid barrier of its own; a block loads its next round's piece into the registers and shared
# memory it frees as it stores this round's, so that the reads of one round overlap the writes
# of the round before. Automatic: one round (scan_<op>_coop) up to COOP_ONE_ROUND times what
# the blocks keep (and no more than that and the L2 cache), else as few rounds as what the
# blocks keep holds. On the H100, cumsum over (2, 2^24) f32 took 114.8 us in 3 rounds (164 us
# on the three passes; 120.6 in 2 rounds, 119.9 in 4), (1, 2^26) f32 228 us in 6 rounds (305
# us; 224-241 in 5-10), (2, 2^24) bf16 63.1 us in 2 rounds (68.2 in one); but (2, 2^23) f32
# 62.3 us in 2 rounds against 58.7 in one (docs/benchmarks.md, round 19). Read at each launch.
COOP_ROUNDS = 0
COOP_ONE_ROUND = 1.5

# Switch: the itemsizes whose logcumsumexp takes the cooperative kernel (COOP_ROWS; in rounds
# too, ROUNDS_OPS); none: its exp and log per element bound it, not memory, and the
# cooperative blocks have 16 warps an SM for 2-byte types, 8 for the others, so the three
# passes on pipe1 (PIPE_CHUNK_OPS) are faster. On the H100 (time_us, cooperative vs three
# passes): (2, 2^23) f32 262.4 vs 104.3, bf16 97.9 vs 66.2; (1, 2^26) f32 882.2 (rounds) vs
# 347.6, bf16 324.1 (rounds) vs 208.5; (1, 2^25) f64 1766 vs 1290 (three passes of blocks).
# Read at each launch.
COOP_LSE_ITEMSIZES: tuple[int, ...] = ()

# Switch: ops whose three passes over few long contiguous rows take the pipelined kernel
# (pipe1) with a chunk a warp (``_pipe_chunks``: 32 warps an SM) instead of rows8's chunk a
# block, under pipe1's launch condition: no block barriers between a warp's tiles. For
# logcumsumexp, bound by its exp and log per element; on the H100 (time_us, rows8 vs pipe1):
# (2, 2^23) f32 133.5 vs 104.3, (1, 2^26) f32 472.3 vs 347.6. Read at each launch.
PIPE_CHUNK_OPS: tuple[str, ...] = ("lse",)


def coop_warps(itemsize: int) -> int:
    """Warps of a cooperative block (scan.cu's kCoopWarps)."""
    return 16 if itemsize == 2 else 8


def coop_reg_rows(itemsize: int) -> int:
    """Rows a warp keeps in registers (scan.cu's kCoopRegRows)."""
    return {2: 8, 4: 32}.get(itemsize, 16)


@dataclass(frozen=True, slots=True)
class CoopSplit:
    """A cooperative launch's pieces: ``nchunks`` pieces of ``chunk_len`` positions a line,
    blocks of ``warps`` warps, ``keep`` rows (512 bytes) a warp kept in shared memory."""

    nchunks: int
    chunk_len: int
    keep: int
    warps: int
    rounds: int = 1  # 1: scan_<op>_coop; more: scan_<op>_rounds

    @property
    def smem(self) -> int:
        """Dynamic shared memory of the launch: the kept rows of every warp."""
        return self.keep * self.warps * COOP_ROW_BYTES

    @property
    def tag(self) -> str:
        """The variant's suffix for its rounds: ``r2`` for two, none for one."""
        return f"r{self.rounds}" if self.rounds > 1 else ""


def _smem_room(module: LoadedModule, kernel: str) -> int:
    """Bytes of dynamic shared memory a block of ``kernel`` may take on this device (the
    opt-in limit less the kernel's static shared memory)."""
    return device_info(module.device_id).max_smem_per_block_optin - module.static_smem(kernel)


def coop_kernel(op: str, reverse: bool, lines: int = 1, rounds: int = 1) -> str:
    """The cooperative entry of ``op`` for one direction (scan.cu: an entry a direction), for
    ``lines`` interleaved lines (``coop_lines``), or in ``rounds`` rounds."""
    kind = "rounds" if rounds > 1 else f"coop{lines if lines > 1 else ''}"
    return f"scan_{op}_{kind}{'rev' if reverse else ''}"


def coop_split(module: LoadedModule, op: str, rows: int, n: int, itemsize: int,
               reverse: bool = False, lines: int = 1) -> CoopSplit | None:  # fmt: skip
    """The pieces of a cooperative scan of ``rows`` lines of ``n`` (``COOP_ROWS``), or of one
    run of ``lines`` interleaved lines of ``n`` (``rows`` 1; a position is ``lines``
    elements): as many a round as one block an SM allows (at most 2 an SM), none but the
    last shorter than a row a warp, in rounds (``COOP_ROUNDS``; ROUNDS_OPS only, interleaved
    lines in one). None where it does not apply: no cooperative launches, fewer than 2
    pieces a line, or a round larger than what the blocks keep (registers and shared memory)
    and the L2 cache together."""
    if not (COOP_ROWS and module.cooperative and op in PIPE_OPS):
        return None
    if op == "lse" and itemsize not in COOP_LSE_ITEMSIZES:
        return None
    kernel = coop_kernel(op, reverse, lines)
    warps = coop_warps(itemsize)
    keep = max(0, _smem_room(module, kernel)) // (warps * COOP_ROW_BYTES)
    smem = keep * warps * COOP_ROW_BYTES
    # resident_blocks allows the entry that much shared memory first (module.function)
    blocks = min(2, module.resident_blocks(kernel, 32 * warps, smem)) * module.sm_count
    held = smem + coop_reg_rows(itemsize) * warps * COOP_ROW_BYTES  # a block's
    nbytes, kept = rows * n * lines * itemsize, blocks * held
    l2 = device_info(module.device_id).l2_bytes
    if lines > 1 or op not in ROUNDS_OPS:
        rounds = 1
    elif COOP_ROUNDS:
        rounds = COOP_ROUNDS
    elif nbytes <= min(COOP_ONE_ROUND * kept, kept + l2):
        rounds = 1
    else:
        rounds = _cdiv(nbytes, kept)
    if _cdiv(nbytes, rounds) > kept + l2:
        return None
    row = COOP_ROW_BYTES // (itemsize * lines)  # positions
    pieces = min(blocks // rows, _cdiv(n, rounds) // (warps * row))
    if pieces < 2:
        return None
    chunk_len = _round_up(_cdiv(n, pieces * rounds), row)
    units = _cdiv(n, chunk_len)  # pieces of the line over every round
    nchunks = _cdiv(units, rounds)  # a round's
    return CoopSplit(nchunks, chunk_len, keep, warps, _cdiv(units, nchunks))


# Switch: 2 or 4 interleaved lines (a tensor (n, 2) or (n, 4) along dim 0: axis stride 2 or
# 4, line stride 1; ``coop_lines``) of LINES_OPS take the cooperative kernel as one run of
# memory whose positions hold a value of each line (scan.cu, LinesOp; entries scan_<op>_coop2,
# _coop4 and their reverse, in a program of their own: LINES_GROUPS). On the H100, cumsum over
# (2^20, 2) took 16.1 vs 23.3 us in f32 and 12.5 vs 21.9 us in bf16 (staged look-back tiles,
# lbstage), over (2^19, 4) 17.6 vs 22.0 and 14.1 vs 21.5 us. Read at each launch.
COOP_LINES = True
LINES = (2, 4)


def coop_lines(shape: tuple[int, ...], axis: int, operands: Sequence[Slot | None],
               itemsize: int) -> int:  # fmt: skip
    """The number of interleaved lines (2 or 4) the cooperative kernel may take as one run of
    memory, else 0: x and y only, the lines one group of 2 or 4 (every other dim of extent 1)
    adjacent (stride 1) with axis stride equal to their count, a position's bytes dividing
    16, the run whole rows of 512 bytes and both 16-byte aligned."""
    used = [i for i, o in enumerate(operands) if o is not None]
    g = lines_shape(shape, axis, itemsize)
    if not COOP_LINES or used != [IN0, OUT] or not g:
        return 0
    return g if _one_run(shape, axis, operands, g) else 0


# Switch: the cummax/cummin backward in one kernel (scan_max_bwd_rows: a warp per line scans
# the winner flags, then the segmented sums) where the axis is contiguous and the lines are
# many enough for a warp each; False keeps two launches (flags, then the segmented scan).
# Read at each launch.
FUSED_MAX_BACKWARD = True
# Switch (under FUSED_MAX_BACKWARD): the same with a block per line (scan_max_bwd_rows8) where
# rows8 takes whole lines (one chunk a line); False keeps two launches there. Read at each
# launch.
FUSED_MAX_BACKWARD_BLOCKS = True
# Switch (under FUSED_MAX_BACKWARD): the same through a ring (scan_max_bwd_ring: x and dy
# staged, RING_MAX_BACKWARD_CHUNK bytes of each a chunk, RING_MAX_BACKWARD_STAGES chunks in
# flight, the same 96 KiB as the other rings; one pass, each chunk's winner flags and
# segmented sums in registers, no flag bytes) where the rows meet the ring's conditions
# (``_max_ring``: x, dy and dx allowing 16-byte vectors along a contiguous axis, outer dims
# that coalesce to one, rows of at least one chunk and whole vectors, enough of them to fill
# the launch: ``_ring_grid``), before the warp and block kernels. On an H200
# (docs/benchmarks.md, round 33) over 4096 x 8192 it took f32 135.0 us against the warp per
# line's 147.5, bf16 89.3 against 142.7; over 1024 x 8192 43.1 / 30.7 against the block per
# line's 54.0 / 49.9; over 256 x 65536 72.8 / 50.4 against two launches' 183.4 / 181.9.
# Read at each launch.
RING_MAX_BACKWARD = True
RING_MAX_BACKWARD_CHUNK = 16384  # scan.cu kRingChunkOf<2>
RING_MAX_BACKWARD_STAGES = 3  # scan.cu kRingStagesOf<2>
# Switch (under RING_MAX_BACKWARD): rows of half a chunk to one chunk in the itemsizes listed
# take the ring in chunks of half the size (scan_max_bwd_ring8: RING_MAX_BACKWARD_CHUNK // 2
# bytes, twice the stages). On an H200 (docs/benchmarks.md, round 33) bf16 8192 x 4096 took
# 102.3 us against the warp per line's 132.3, 600 x 4104 21.4 against the block per line's
# 28.6; in f32, 1500 x 2048 gained (24.4 against 26.6) but 8192 x 2048 lost (83.2 against
# the warp per line's 74.0), so 2-byte types only (f64 not measured). Read at each launch.
RING_MAX_BACKWARD_SHORT_ITEMSIZES: tuple[int, ...] = (2,)
assert RING_MAX_BACKWARD_CHUNK * 2 * RING_MAX_BACKWARD_STAGES == RING_SMEM
# Switch (under FUSED_MAX_BACKWARD): along a strided axis whose lines come in strips
# (``_strip_width`` of "max_bwd": x, dy and dx), one pass of a block a strip (scan.cu,
# scan_max_bwd_strip: x and dy staged, each position's winner flag in registers, a line's last
# winner pending across chunks) instead of the two strip passes with a flag byte a position
# through memory. On an H200 over 4096 x 8192 along dim 0 (docs/benchmarks.md, round 45) it
# took f32 106.8 us against 139.9, bf16 67.3 against 102.7, f16 66.2 against 93.4, f64 206.1
# against 250.8; over 512 x 32768, 60.9 / 40.6 / 116.2 against 94.5 / 81.0 / 149.0. Read at
# each launch.
STRIP_MAX_BACKWARD = True

# scan.cu is compiled as one program per group of ops (the macro BC_SCAN_GROUP_<NAME>): a
# plan loads the group of the ops it launches, so a first cumsum compiles the cumsum kernels
# only (bf16 on a 2-core CPU machine: 8 s of NVRTC instead of 113 s). Group names: the
# forward ops, and one group per backward (cumsum's backward is a reverse cumsum).
SCAN_GROUPS: dict[str, tuple[str, ...]] = {
    "sum": ("sum",),
    "prod": ("prod",),
    "max": ("max",),
    "lse": ("lse",),
    "prod_bwd": ("prod_bwd",),
    "lse_bwd": ("lse_bwd",),
    "max_bwd": ("maxflag", "seg_bwd"),
}


# The programs of the cooperative kernel over interleaved lines (coop_lines) of LINES_OPS, one
# an op, loaded by a plan only for shapes that may take it (lines_module): their four entries
# took the cumsum program's compile from 7 to 17 s (f32 on a 2-core CPU machine), and the
# logcumsumexp program's from 52 to about 150 s, so logcumsumexp has none.
LINES_OPS = ("sum", "prod")
LINES_KINDS = ("coop2", "coop2rev", "coop4", "coop4rev")
LINES_GROUPS: dict[str, str] = {op: f"{op}_lines" for op in LINES_OPS}
# The programs of the cooperative kernel in rounds (COOP_ROUNDS), one an op of ROUNDS_OPS,
# loaded at the first launch that takes one (launch_scan). logcumsumexp's only for the
# itemsizes of COOP_LSE_ITEMSIZES (none by default).
ROUNDS_OPS = ("sum", "prod", "lse")
ROUNDS_KINDS = ("rounds", "roundsrev")
ROUNDS_GROUPS: dict[str, str] = {op: f"{op}_rounds" for op in ROUNDS_OPS}

# Switch: few long contiguous rows of STREAM_OPS in the itemsizes of STREAM_ITEMSIZES (the
# kernel takes 2 and 4), which ``chunking`` would cut into chunks, take one pass of
# bulk-copied tiles with look-back on sm_90 and later (scan.cu, scan_<op>_stream /
# _streamrev, in a program of their own: STREAM_GROUPS) instead of the cooperative kernel,
# where IN0 and OUT are the only operands, the outer dims coalesce to one and the rows are
# whole 16-byte vectors (``_stream_rows``). The cooperative kernel reads every piece of a line
# before it writes any; here a tile's total is published as soon as it lands, so reading
# overlaps writing as in a copy. On the H100 (docs/benchmarks.md, round 26) cumsum over
# (2, 2^23) took 56.8 us in f32 against the cooperative kernel's 58.1 (over (1, 2^21): 13.6
# against 14.4), but 32.0 us in bf16 against 31.3 (11.7 against 11.4): 4-byte types
# always, and the itemsizes of STREAM_ROUNDS_ITEMSIZES where the cooperative kernel would take
# more than one round: lines too long for what its blocks keep. On the H100
# (round 27) cumsum over (1, 2^26) took 110.0 us in bf16 against the rounds' 125.4 (f16 110.9
# vs 125.3, f32 210.5 vs 228.0), over (2, 2^24) bf16 58.9 vs 62.7. Read at each launch.
STREAM_ROWS = True
# Switch (under STREAM_ROWS): 2 or 4 interleaved lines (a tensor (n, 2) or (n, 4) along dim 0)
# take the stream kernel as one row of n G elements whose elements belong to line (index mod
# G) (scan_<op>_stream2 / _stream4 and their rev, _stream_lines), in the itemsizes the rows
# take, before the cooperative kernel over lines (coop2 / coop4). Read at each launch.
STREAM_LINES = True
STREAM_ITEMSIZES = (4,)
STREAM_ROUNDS_ITEMSIZES = (2,)
STREAM_OPS = ("sum", "prod")
# the program's kernels: one line a row, and 2 or 4 interleaved lines (_stream_lines)
STREAM_KINDS = ("stream", "streamrev", "stream2", "stream2rev", "stream4", "stream4rev")
STREAM_GROUPS: dict[str, str] = {op: f"{op}_stream" for op in STREAM_OPS}
# mirrors of scan.cu's kStreamTile, kStreamStages, kStreamWave and kStreamThreads
STREAM_TILE = 32768
STREAM_STAGES = 3
STREAM_WAVE = 128
STREAM_THREADS = 352
STREAM_SMEM = STREAM_STAGES * STREAM_TILE
# blocks an SM (scan.cu: __launch_bounds__(kStreamThreads, 2), three 32 KiB stages each)
STREAM_BLOCKS_PER_SM = 2


# Ops that accumulate f32 in double: their programs compile with BC_ACC double for f32
# (KernelSource.double_acc), so every partial product, tile total and carry is a double and
# each output is rounded once. A product's rounding errors do not cancel over the tiles of a
# long axis the way a sum's do: in f32, a tile's product of 256 factors near 1 came out 0.57
# eps smaller in magnitude than the exact one on average, and those drifts added up tile after
# tile (2.2e-2 over 2^24 positions; a sequential f32 product 2.5e-4; docs/benchmarks.md,
# rounds 59 and 60).
_DOUBLE_F32_OPS = ("prod",)


def state_size(op: str, itemsize: int) -> int:
    """Bytes of ``op``'s accumulator in ``itemsize``-byte elements: 8 in f64 and for the ops
    of _DOUBLE_F32_OPS in f32, else 4 (2-byte types accumulate in f32)."""
    return 8 if itemsize == 8 or (itemsize == 4 and op in _DOUBLE_F32_OPS) else 4


def _group_entries(group: str) -> tuple[str, ...]:
    if group in LINES_GROUPS.values():
        op = group.removesuffix("_lines")
        return ("scan_zero", *(f"scan_{op}_{k}" for k in LINES_KINDS))
    if group in ROUNDS_GROUPS.values():
        op = group.removesuffix("_rounds")
        return ("scan_zero", *(f"scan_{op}_{k}" for k in ROUNDS_KINDS))
    if group in STREAM_GROUPS.values():
        op = group.removesuffix("_stream")
        return ("scan_zero", *(f"scan_{op}_{k}" for k in STREAM_KINDS))
    ops = SCAN_GROUPS[group]
    return (
        ("scan_zero",)  # in every program: the look-back workspace's zeroing
        + tuple(f"scan_{op}_{k}" for op in ops for k in _LAYOUTS)
        + tuple(f"scan_{op}_{k}" for op in ops for k in SHORT_KINDS)
        + tuple(f"scan_{op}_{k}" for k, many in SHORT_MANY_ENTRY_OPS.items() for op in ops
                if op in many)
        + tuple(f"scan_{op}_{k}" for op in ops if op in COLS_STATES_OPS
                for k in ("cstates1", "cstates8"))
        + tuple(f"scan_{op}_{k}" for op in ops if op in PIPE_OPS
                for k in ("pipe1", "coop", "cooprev", "lbstage"))
        + tuple(f"scan_{op}_{k}" for op in ops if op in PIPE_AUX_OPS for k in ("pipe1", "pipe1w"))
        + tuple(f"scan_{op}_seg" for op in ops if op in SEG_OPS)
        + tuple(f"scan_{op}_seg1" for op in ops if op in SEG1_OPS)
        + tuple(f"scan_{op}_strip" for op in ops if op in STRIP_STAGED)
        + tuple(f"scan_{op}_strip512" for op in ops if op in STRIP_512_ENTRY_OPS)
        + tuple(f"scan_{op}_strip_narrow" for op in ops if op in STRIP_NARROW_ENTRY_OPS)
        + tuple(f"scan_{op}_strip6" for op in ops if op in STRIP_MANY_ENTRY_OPS)
        + tuple(f"scan_{op}_ring" for op in ops if op in RING_OPS)
        + tuple(f"scan_{op}_{k}" for op in ops if op in ROWREG_OPS
                for k in (ROWREG_MAX_KINDS if op == "max" else ROWREG_KINDS))
        + tuple(f"scan_{op}_lbpair" for op in ops if op in PAIR_OPS)
        + (("scan_max_bwd_rows", "scan_max_bwd_rows8", "scan_max_bwd_ring", "scan_max_bwd_ring8",
            "scan_max_bwd_strip")
           if group == "max_bwd" else ())
    )  # fmt: skip


def _group_ops(group: str) -> tuple[str, ...]:
    """The ops whose kernels the program ``group`` holds."""
    for groups, suffix in ((LINES_GROUPS, "_lines"), (ROUNDS_GROUPS, "_rounds"),
                           (STREAM_GROUPS, "_stream")):  # fmt: skip
        if group in groups.values():
            return (group.removesuffix(suffix),)
    return SCAN_GROUPS[group]


def _group_source(group: str) -> KernelSource:
    define = (f"BC_SCAN_GROUP_{group.upper()}", "1")
    # the f32 cumprod's programs accumulate in double (state_size)
    doubles = all(op in _DOUBLE_F32_OPS for op in _group_ops(group))
    return KernelSource("scan", "scan.cu", _group_entries(group), group=group, defines=(define,),
                        double_acc=(ElementKind.F32,) if doubles else ())  # fmt: skip


SCAN_SOURCES: dict[str, KernelSource] = {
    g: register_source(_group_source(g))
    for g in (*SCAN_GROUPS, *LINES_GROUPS.values(), *ROUNDS_GROUPS.values(),
              *STREAM_GROUPS.values())
}


def scan_source(group: str) -> KernelSource:
    """The program of ``scan.cu`` holding the kernels of ``group`` (a key of SCAN_GROUPS, or
    a value of LINES_GROUPS)."""
    return SCAN_SOURCES[group]


def lines_shape(shape: Sequence[int], axis: int, itemsize: int) -> int:
    """What ``coop_lines`` needs of the shape alone: the line count (2 or 4, a position's
    bytes dividing 16, the run whole 512-byte rows), else 0."""
    n = shape[axis]
    if n == 0:
        return 0
    g = numel(shape) // n
    if g not in LINES or 16 % (g * itemsize) or (n * g * itemsize) % COOP_ROW_BYTES:
        return 0
    return g


def lines_module(group: str, shape: Sequence[int], axis: int, element: ElementKind,
                 device_id: int) -> LoadedModule | None:  # fmt: skip
    """The program over interleaved lines of the op of ``group`` (a key of SCAN_GROUPS; the
    groups of LINES_OPS hold that op alone) on ``device_id``, compiled and loaded where the
    shape may take its kernels (``lines_shape``), else None."""
    if group not in LINES_GROUPS or not lines_shape(shape, axis, element.itemsize):
        return None
    return load_module(SCAN_SOURCES[LINES_GROUPS[group]], element, device_id)


BLOCK = 256
STATE_BYTES = 16  # the largest per-chunk state (MaxIdx<double>, Pair<double>)
_COL_UNROLL = 8
_MAX_CHUNKS = 8192
IN0, IN1, IN2, OUT, AUX = range(5)
# The operands of each op of SEG_OPS on segmented tiles (the others: IN0 and OUT).
_SEG_OPERANDS: dict[str, tuple[tuple[int, ...], ...]] = {
    "max": ((IN0, OUT), (IN0, OUT, AUX)),  # cummax/cummin, with or without indices
    "prod_bwd": ((IN0, IN1, IN2, OUT),),  # dy, x, y
    "lse_bwd": ((IN0, IN1, IN2, OUT),),
    "maxflag": ((IN0, AUX),),  # x, the winner flags
    "seg_bwd": ((IN0, OUT, AUX),),  # dy, dx, the winner flags
}


class Operand(ctypes.Structure):
    _fields_ = (("ptr", ctypes.c_uint64), ("axis_stride", ctypes.c_int64), ("outer", Strides))


class Params(ctypes.Structure):
    _fields_ = (
        ("op", Operand * 5),
        ("outer", Shape),
        ("rows", ctypes.c_int64),
        ("n", ctypes.c_int64),
        ("chunk_len", ctypes.c_int64),
        ("nchunks", ctypes.c_int64),
        ("carry", ctypes.c_uint64),
        ("agg", ctypes.c_uint64),
        ("lb", ctypes.c_uint64),
        ("groups", ctypes.c_int64),
        ("width", ctypes.c_int32),
        ("reverse", ctypes.c_int32),
        ("mode", ctypes.c_int32),
        ("vec", ctypes.c_int32),
    )


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _round_up(a: int, b: int) -> int:
    return _cdiv(a, b) * b


# Rows per SM from which a warp per row (rows1) beats a block per row (rows8) on long rows,
# and the ops that differ: on the H100 over 4096 x 8192 (31 rows per SM), the cumprod
# backward took 187 us with a block per row vs 206 us with a warp (bf16 143 vs 161), while
# logcumsumexp's and cummax's backward and every forward were faster with a warp.
# Keys (op, itemsize) come before op. logcumsumexp below f64 takes a warp a row (pipe1) from
# 6 rows an SM: on an H200 (docs/benchmarks.md, round 68; benchmarks/lse_warp_rows.py), us, a
# block a row -> a warp: bf16 1024 x 65536 185.3 -> 118.8, f32 232.2 -> 223.1, bf16 800 x
# 32768 84.5 -> 61.4, f32 105.0 -> 108.0, f32 2000 x 16384 reverse 120.6 -> 86.1, bf16 1500 x
# 4096 24.2 -> 16.4, f32 1500 x 2048 18.3 -> 15.2, f32 1200 x 100000 427.3 -> 434.1; at 4.5
# rows an SM f32 lost more (600 x 32768: 85.8 -> 105.0, bf16 69.3 -> 60.3), and f64 lost
# everywhere (1024 x 32768 672 -> 804, 2000 x 8192 317 -> 414).
WARP_ROWS_PER_SM = 16
WARP_ROWS_PER_SM_OP: dict[str | tuple[str, int], int] = {
    "prod_bwd": 64, ("lse", 2): 6, ("lse", 4): 6,
}


def warp_rows_per_sm(op: str, itemsize: int) -> int:
    """Rows per SM from which ``op`` in ``itemsize`` takes a warp a row (WARP_ROWS_PER_SM_OP)."""
    t = WARP_ROWS_PER_SM_OP
    return t.get((op, itemsize), t.get(op, WARP_ROWS_PER_SM))


def per_thread(itemsize: int) -> int:
    """Elements a thread owns per tile in the rows kernels (``K`` in scan.cu)."""
    return 4 if itemsize == 8 else 8


def takes_warp_rows(rows: int, n: int, itemsize: int, sm_count: int, warp_rows: int) -> bool:
    """Whether contiguous rows take a warp a row (``rows1``/``pipe1``): short rows, or at
    least ``warp_rows`` rows an SM to keep every SM busy."""
    return n <= 2 * 32 * per_thread(itemsize) or rows >= sm_count * warp_rows


@dataclass(frozen=True, slots=True)
class Chunking:
    layout: str  # "rows1", "rows8", "cols", "lbrows" or "lbcols"
    nchunks: int  # chunks (tiles) per row
    chunk_len: int
    width: int = 1  # lbcols: adjacent rows per tile
    groups: int = 0  # lbcols: tiles across the rows (ceil(rows / width))

    @property
    def tiles(self) -> int:
        """Look-back tiles of the launch (0 for the other layouts)."""
        return self.nchunks * self.groups

    @property
    def nodes(self) -> int:
        """Look-back tree nodes of the launch (scan.cu, LbNodes): ``lb_nodes_per_line`` per
        group."""
        return self.groups * lb_nodes_per_line(self.nchunks, self.width)


def lb_radix_bits(width: int) -> int:
    """log2 of the look-back tree's radix for tiles of ``width`` lines: R - 1 nodes of every
    line fill at most one warp (scan.cu, lb_nodes)."""
    return max(1, 5 - (width.bit_length() - 1))


def lb_nodes_per_line(tiles: int, width: int = 1) -> int:
    """Nodes of a line's look-back tree: ceil(tiles / R^l) for each level l until
    R^levels >= tiles (scan.cu, lb_nodes)."""
    rbits = lb_radix_bits(width)
    nodes, cnt, levels = 0, tiles, 0
    while True:
        nodes += cnt
        levels += 1
        cnt = _cdiv(cnt, 1 << rbits)
        if rbits * levels >= 63 or 1 << (rbits * levels) >= tiles:
            return nodes


LB_HEADER = 128  # scan.cu kLbHeader: the tile counter, padded
_LB_MAX_TILES = 2**32  # tiles per line (scan.cu kLbMaxBits); longer lines take three passes


def _pow2(v: int) -> int:
    """The smallest power of two >= v (1 for v <= 1)."""
    return 1 << max(0, v - 1).bit_length()


def _lb_rows(rows: int, n: int, itemsize: int) -> Chunking | None:
    """Look-back tiles of a block along contiguous rows; None past the tree's tile limit."""
    chunk_len = BLOCK * 2 * per_thread(itemsize)  # a block's tile
    ch = Chunking("lbrows", _cdiv(n, chunk_len), chunk_len, 1, rows)
    return ch if ch.nchunks < _LB_MAX_TILES else None


def _lb_cols(rows: int, n: int, itemsize: int, wide: bool = False,
             pairs: bool = False) -> Chunking | None:  # fmt: skip
    """Look-back tiles of up to 32 adjacent rows along a strided axis; None past the limit.
    ``wide``: 32 positions per thread where ``LBCOLS_WIDE`` lists the itemsize and the tile
    has 32 lines (scan.cu, scan_lb_cols), else 16 (8 for 8-byte types). ``pairs`` (32 lines
    of a 2-byte type, scan_lb_pairs): as wide tiles, each tile two groups."""
    width = min(32, _pow2(rows))
    per = 8 if itemsize == 8 else 32 if wide and width == 32 and itemsize in LBCOLS_WIDE else 16
    if pairs and width == 32:
        per = 32
    chunk_len = BLOCK // width * per
    ch = Chunking("lbcols", _cdiv(n, chunk_len), chunk_len, width, _cdiv(rows, width))
    return ch if ch.nchunks < _LB_MAX_TILES else None


def chunking(layout: str, rows: int, n: int, itemsize: int, sm_count: int,
             lookback: bool | None = None, lookback_rows: bool | None = None,
             warp_rows: int | None = None, wide: bool = False,
             pairs: bool = False) -> Chunking:  # fmt: skip
    """How a launch cuts its rows: the kernel variant, chunks per row and chunk length.
    ``lookback``: one pass with look-back where rows are split (default: ``LOOKBACK``), for
    contiguous rows only with ``lookback_rows`` (default: ``LOOKBACK_ROWS``); ``warp_rows``:
    rows per SM from which a warp takes a row (default: ``WARP_ROWS_PER_SM``)."""
    lb = LOOKBACK if lookback is None else lookback
    if layout == "rows":
        wr = WARP_ROWS_PER_SM if warp_rows is None else warp_rows
        if takes_warp_rows(rows, n, itemsize, sm_count, wr):
            # a warp per row: no block barriers; enough rows keep every SM busy
            return Chunking("rows1", 1, max(n, 1))
        tile = BLOCK * per_thread(itemsize)
        target = sm_count * 4  # blocks of 256 threads
        if rows >= target or n <= 2 * tile:
            return Chunking("rows8", 1, n)
        lb_rows = LOOKBACK_ROWS if lookback_rows is None else lookback_rows
        ch = _lb_rows(rows, n, itemsize) if lb and lb_rows else None
        if ch is not None:
            return ch
        want = min(-(-target // rows), -(-n // tile), _MAX_CHUNKS)
        chunk_len = _round_up(_cdiv(n, want), tile)
        return Chunking("rows8", -(-n // chunk_len), chunk_len)
    target_threads = sm_count * 2048
    if rows * 2 >= target_threads or n <= 4 * _COL_UNROLL:
        return Chunking("cols", 1, max(n, 1))
    ch = _lb_cols(rows, n, itemsize, wide, pairs) if lb else None
    if ch is not None:
        return ch
    want = min(-(-target_threads // rows), -(-n // (2 * _COL_UNROLL)), _MAX_CHUNKS)
    chunk_len = -(-n // want)
    chunk_len = -(-chunk_len // _COL_UNROLL) * _COL_UNROLL
    return Chunking("cols", -(-n // chunk_len), chunk_len)


# Ops whose scan state is one accumulator, a float or a double (``state_size``): their
# look-back nodes are one 64-bit word each, zero until written (scan.cu, StateWord).
_SCALAR_STATE = ("sum", "prod", "lse", "maxflag")


def _lb_zeroed_bytes(ch: Chunking, packed: bool) -> int:
    """The part of the look-back workspace zeroed before a launch: the tile counter, then one
    64-bit word per node and row for packed states, else one flag per node."""
    if packed:
        return LB_HEADER + 8 * ch.nodes * ch.width
    return LB_HEADER + _round_up(4 * ch.nodes, 16)


def _pipe_chunks(rows: int, n: int, itemsize: int, sm_count: int) -> Chunking:
    """The three passes' chunks on pipe1 (PIPE_CHUNK_OPS): a chunk a warp, whole tiles of
    pipe1 (32 lanes x two 16-byte vectors), about 32 warps an SM over the rows."""
    tile = 32 * 32 // itemsize
    want = min(_cdiv(sm_count * 32, rows), _cdiv(n, tile), _MAX_CHUNKS)
    chunk_len = _round_up(_cdiv(n, want), tile)
    return Chunking("rows1", _cdiv(n, chunk_len), chunk_len)


def _state_need(ch: Chunking, rows: int) -> int:
    if ch.layout.startswith("lb"):  # flags and 16-byte slots: more than the packed words
        return _lb_zeroed_bytes(ch, False) + STATE_BYTES * ch.nodes * ch.width
    return rows * ch.nchunks * STATE_BYTES if ch.nchunks > 1 else 0


def state_bytes(shape: Sequence[int], axis: int, itemsize: int, sm_count: int) -> int:
    """Workspace bytes for chunk carries or look-back tiles: the most either layout, with or
    without look-back, may need for this shape (so ``LOOKBACK`` may change after a plan is
    made)."""
    n = shape[axis]
    total = numel(shape)
    if total == 0:
        return 0
    rows = total // n
    # coop_split's block totals, two rounds' (at most 2 blocks an SM)
    coop = 4 * sm_count * STATE_BYTES if rows <= sm_count else 0
    # the pipelined kernel's chunk carries (PIPE_CHUNK_OPS), where rows8 would take chunks
    ch = chunking("rows", rows, n, itemsize, sm_count, False, False)
    pipe = _state_need(_pipe_chunks(rows, n, itemsize, sm_count), rows) if ch.nchunks > 1 else 0
    # the stream kernel's tile counter and words, where rows8 would take chunks (_stream_rows;
    # its ops cut rows with the default WARP_ROWS_PER_SM, as here)
    streamed = 0
    if ch.nchunks > 1 and (n * itemsize) % 16 == 0 and itemsize != 8:
        streamed = _stream_bytes(rows, n, itemsize)
    if rows in LINES and itemsize in (2, 4) and (n * rows * itemsize) % 16 == 0:
        # (n, G) along dim 0 as one row of n G elements (_stream_lines)
        streamed = max(streamed, _stream_bytes(1, n * rows, itemsize, rows))
    return max(coop, pipe, streamed,
               *(_state_need(chunking(lay, rows, n, itemsize, sm_count, lb, lb, wide=w), rows)
                 for lay in ("rows", "cols") for lb in (False, True)
                 for w in (False, True)))  # fmt: skip


def layout_of(primary: TensorView, axis: int) -> str:
    """``rows`` when the axis is contiguous in ``primary`` (or has one element), else ``cols``."""
    return "rows" if primary.shape[axis] <= 1 or abs(primary.strides[axis]) == 1 else "cols"


def flag_strides(shape: Sequence[int], axis: int, layout: str) -> tuple[int, ...]:
    """Strides of the uint8 winner flags in the workspace, matched to the layout's access."""
    n = shape[axis]
    outer = [d for i, d in enumerate(shape) if i != axis]
    ostr = list(contiguous_strides(outer))
    rows = numel(outer)
    if layout == "rows":
        ostr = [s * n for s in ostr]
        axis_stride = 1
    else:
        axis_stride = rows
    out = [*ostr[:axis], axis_stride, *ostr[axis:]]
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Slot:
    """One operand of a launch: a view, or raw (ptr, strides) for workspace flags."""

    ptr: int
    strides: tuple[int, ...]


@overload
def slot(view: TensorView) -> Slot: ...


@overload
def slot(view: None) -> None: ...


def slot(view: TensorView | None) -> Slot | None:
    return None if view is None else Slot(view.ptr, view.strides)


def _vector_rows(ptr: int, axis_stride: int, oshape: Sequence[int], ostrides: Sequence[int],
                 itemsize: int) -> bool:  # fmt: skip
    """Whether an operand of ``itemsize``-byte elements at ``ptr`` (rows of outer shape
    ``oshape``, outer strides ``ostrides``) is contiguous along the axis with every row
    starting on 16 bytes: 16-byte vectors along each row (``_params``' vec, ``_pipe_aux``)."""
    lanes = 16 // itemsize
    rows_aligned = all(s % lanes == 0 for d, s in zip(oshape, ostrides, strict=True) if d > 1)
    return ptr % 16 == 0 and axis_stride == 1 and rows_aligned


def _pipe_aux(shape: tuple[int, ...], axis: int, aux: Slot | None, mode: int) -> bool:
    """pipe1's condition on cummax/cummin's AUX operand (PIPE_AUX_OPS): none, or int64
    indices (``mode`` bit 2 clear) on 16-byte vectors along each row (``_vector_rows``), in
    rows shorter than 2^31 (scan.cu, MaxOp32)."""
    if shape[axis] >= 2**31:
        return False
    if aux is None:
        return True
    oshape, ostrides, _, axis_strides = split_axis(shape, [aux.strides], axis)
    return not mode & 4 and _vector_rows(aux.ptr, axis_strides[0], oshape, ostrides[0], 8)


def _params(shape: tuple[int, ...], axis: int, operands: Sequence[Slot | None],
            vec_slots: Sequence[int], itemsize: int, layout: str, reverse: bool,
            mode: int) -> Params:  # fmt: skip
    """Params of one scan over the rows of ``shape`` along ``axis`` (no chunking yet): the
    operands' pointers and strides, and ``vec`` when every operand of ``vec_slots`` allows
    16-byte vectors along a contiguous axis (``layout`` "rows")."""
    used = [i for i, o in enumerate(operands) if o is not None]
    oshape, ostrides, _, axis_strides = split_axis(
        shape, [operands[i].strides for i in used], axis  # type: ignore[union-attr]
    )
    params = Params()
    params.outer = shape_arg(oshape)
    for k, i in enumerate(used):
        o = operands[i]
        assert o is not None
        params.op[i].ptr = o.ptr
        params.op[i].axis_stride = axis_strides[k]
        params.op[i].outer = strides_arg(ostrides[k])
    vec = layout == "rows"
    for i in vec_slots:
        o = operands[i]
        k = used.index(i) if o is not None else -1
        vec = vec and o is not None and _vector_rows(o.ptr, axis_strides[k], oshape, ostrides[k],
                                                     itemsize)  # fmt: skip
    params.vec = int(vec)
    params.rows = numel(shape) // shape[axis]
    params.n = shape[axis]
    params.reverse, params.mode = int(reverse), mode
    return params


# ---------------------------------------------------------------------------- launch recipes
# What launch_scan enqueues depends on the plan (shape, axis, dtype, module), the call site (op,
# direction, mode, layout), the operands' strides and 16-byte alignment, whether there is a
# workspace, and the switches above; not on the addresses otherwise. A plan keeps what it
# enqueued for each of those (LaunchCache) and enqueues it again with the new addresses, which
# skips the layout logic and the kernel parameters' construction on the per-call path. The
# functional API goes one step further (baracuda._cuda.replay): the steps of a whole plan run,
# their pointers patched from the call's arrays and workspace.

_OP_PTR = tuple(Params.op.offset + i * ctypes.sizeof(Operand) + Operand.ptr.offset
                for i in range(5))  # fmt: skip
_STATE_PTR = (Params.carry.offset, Params.agg.offset, Params.lb.offset)


class Recorder:
    """The steps one launch enqueued, for the operands' pointers ``ptrs`` and the states at
    ``states_ptr`` it was given; ``srcs``: the index into ``ptrs`` of each of the five
    operands of a kernel of one Params (None: unused)."""

    __slots__ = ("ptrs", "srcs", "states_ptr", "steps")

    def __init__(self, ptrs: Sequence[int], states_ptr: int,
                 srcs: Sequence[int | None] = ()) -> None:  # fmt: skip
        self.ptrs = tuple(ptrs)
        self.srcs = tuple(srcs)
        self.states_ptr = states_ptr
        self.steps: list[Step] = []

    def kernel(self, fn: Any, grid: tuple[int, int, int], block: int, smem: int,
               args: Sequence[tuple[Params, Sequence[int | None]]], name: str, dependent: bool,
               cooperative: bool) -> None:  # fmt: skip
        """A kernel of Params ``args``, each with the index into ``ptrs`` of each of its five
        operands (None: unused)."""
        ops, states, raws = [], [], []
        for k, (params, srcs) in enumerate(args):
            raw = bytes(params)
            raws.append(raw)
            ops += [(k, _OP_PTR[i], j) for i, j in enumerate(srcs) if j is not None]
            for off in _STATE_PTR:
                v = _U64.unpack_from(raw, off)[0]
                if v:
                    states.append((k, off, v - self.states_ptr))
        self.steps.append(Step(fn, grid, block, smem, name, tuple(raws), tuple(ops),
                                tuple(states), dependent, cooperative))  # fmt: skip


def _enqueue(rec: Recorder | None, fn: Any, grid: tuple[int, int, int], block: int, smem: int,
             stream: Stream, params: Params, name: str, *, dependent: bool = False,
             cooperative: bool = False,
             srcs: Sequence[int | None] | None = None) -> None:  # fmt: skip
    """Launch a kernel of one Params and record it: its operands those of ``rec``, or where
    ``srcs`` is given, slot k of Params is the recorded pointer ``srcs[k]``."""
    launch(fn, grid, block, smem, stream, [params], name, dependent=dependent,
           cooperative=cooperative)  # fmt: skip
    if rec is not None:
        rec.kernel(fn, grid, block, smem, [(params, rec.srcs if srcs is None else srcs)], name,
                   dependent, cooperative)  # fmt: skip


def _zero(rec: Recorder | None, fn: Any, grid: tuple[int, int, int], stream: Stream,
          states_ptr: int, words: int) -> None:  # fmt: skip
    """Zero ``words`` words of the workspace: with the zeroing kernel ``fn``, or (``fn``
    None) a memset."""
    if fn is None:
        step = Step(None, grid, BLOCK, 0, "memset", (), (), (), False, False, words, 0)
    else:  # scan_zero(unsigned* p, i64 words)
        step = Step(fn, grid, BLOCK, 0, "scan_zero",
                     (bytes(8), _U64.pack(words)), (), ((0, 0, 0),), False, False)  # fmt: skip
    step.enqueue(stream, (), states_ptr)
    if rec is not None:
        rec.steps.append(step)


# The module's switches and tunables that launch_scan reads (a cached recipe is used only under
# the values it was recorded with; the CPU tests check that every upper-case global is here or
# in _FIXED).
_SWITCHES = (
    "PIPELINED_ROWS", "SEG_ROWS", "SEG_MAX_BYTES", "SEG_WARPS_PER_SM", "SEG_ONE_VECTOR",
    "LOOKBACK",
    "LOOKBACK_ROWS", "LB_DEPENDENT", "LOOKBACK_FLAGGED", "LB_F64_MAX_LINES",
    "LBCOLS_WIDE", "LBCOLS_STAGED", "LBCOLS_PAIRS", "STRIP", "STRIP_OPS", "STRIP_512_OPS",
    "STRIP_MIN_FILL", "STRIP_MIN_FILL_OF", "STRIP_NARROW_OPS", "STRIP_32_OPS", "STRIP_MANY_OPS",
    "STRIP_MANY_PER_SM",
    "STRIP_WIDE_FILL", "RING_ROWS", "RING_BLOCKS_PER_SM", "RING_MIN_BALANCE", "COOP_ROWS",
    "COOP_ROUNDS", "COOP_ONE_ROUND", "COOP_LSE_ITEMSIZES", "PIPE_CHUNK_OPS", "COOP_LINES",
    "LINES", "WARP_ROWS_PER_SM", "FUSED_MAX_BACKWARD", "FUSED_MAX_BACKWARD_BLOCKS",
    "STREAM_ROWS", "STREAM_LINES", "STREAM_BLOCKS_PER_SM", "STREAM_ITEMSIZES",
    "STREAM_ROUNDS_ITEMSIZES",
    "RING_BACKWARD", "RING_MAX_BACKWARD",
    "RING_MAX_BACKWARD_SHORT_ITEMSIZES", "PIPE_MAX_WAVE", "STRIP_MAX_BACKWARD", "SHORT",
    "SHORT_MAX", "SHORT_GRID_PER_SM", "ROWREG", "ROWREG_MIN_BYTES", "ROWREG_MAX_BYTES",
    "ROWREG_PREFETCH", "ROWREG_MAX", "ROWREG_MAX_MIN_BYTES", "ROWREG_LSE_MIN_BYTES",
)  # fmt: skip
# constants (mirrors of the kernels' sizes, tables of ops and programs)
_FIXED = (
    "OPS", "SHORT_KINDS", "SHORT_MANY_ENTRY_OPS", "PIPE_OPS", "PIPE_AUX_OPS", "SEG_OPS",
    "SEG1_OPS", "PAIR_OPS", "STRIP_STAGED",
    "STRIP_512_ENTRY_OPS", "STRIP_NARROW_ENTRY_OPS", "STRIP_MANY_ENTRY_OPS", "STRIP_MANY_STAGES",
    "STRIP_CHUNK", "STRIP_STAGES", "MAX_BWD_STRIP_CHUNK", "MAX_BWD_STRIP_STAGES", "RING_CHUNK",
    "RING_STAGES", "RING_SMEM",
    "COOP_ROW_BYTES",
    "SCAN_GROUPS", "LINES_OPS", "LINES_KINDS", "LINES_GROUPS", "ROUNDS_OPS", "ROUNDS_KINDS",
    "ROUNDS_GROUPS", "SCAN_SOURCES", "BLOCK", "STATE_BYTES", "LB_HEADER", "STREAM_OPS",
    "STREAM_KINDS", "STREAM_GROUPS", "STREAM_TILE", "STREAM_STAGES", "STREAM_WAVE",
    "STREAM_THREADS", "STREAM_SMEM", "RING_FORWARD_OPS", "RING_OPS", "RING_BACKWARD_OPS",
    "RING_BACKWARD_CHUNK", "RING_BACKWARD_STAGES", "RING_MAX_BACKWARD_CHUNK",
    "RING_MAX_BACKWARD_STAGES", "COLS_STATES_OPS",
    "IN0", "IN1", "IN2", "OUT", "AUX", "WARP_ROWS_PER_SM_OP", "SHORT_MANY", "SHORT1_MANY",
    "SHORT1_RESIDENT", "ROWREG_KINDS", "ROWREG_OPS", "ROWREG_MAX_KINDS", "ROWREG_LSE_ITEMSIZES",
)  # fmt: skip
_switch_get = operator.itemgetter(*_SWITCHES)
_GLOBALS = globals()


@memo
def switch_values() -> tuple[object, ...]:
    """The switches' values now (a recipe recorded under other values is not replayed),
    read again only after an assignment to this module's or the launch module's attributes
    (``baracuda._switches``)."""
    # the dicts (WARP_ROWS_PER_SM_OP, SHORT_MANY, SHORT1_MANY, SHORT1_RESIDENT) by identity:
    # replaced, never changed in place
    return (*_switch_get(_GLOBALS), id(WARP_ROWS_PER_SM_OP), id(SHORT_MANY), id(SHORT1_MANY),
            id(SHORT1_RESIDENT), _launch_module.DEPENDENT_LAUNCH)  # fmt: skip


def _capture(steps: tuple[Step, ...], ptrs: tuple[int, ...], states_ptr: int,
             workspace: Workspace) -> None:  # fmt: skip
    """``replay.capture`` of a recipe run, inside a ``capturing`` block only (reading a
    scratch workspace's address allocates it)."""
    if active():
        capture(steps, ptrs, states_ptr, workspace.ptr if workspace.allocated else 0)


class LaunchCache:
    """A plan's recipes: what ``launch_scan`` (or ``launch_max_backward``) enqueued for each
    (call site, operands' strides and alignment, workspace or none, switches), enqueued again
    with the new addresses. At most ``limit`` recipes (all dropped when full). A replay reads
    the workspace's address only where the recipe uses the workspace (a functional call's
    scratch is then never allocated)."""

    def __init__(self, limit: int = 64) -> None:
        # key -> (variant, steps, whether a step uses the workspace)
        self._recipes: dict[tuple[object, ...], tuple[str | None, tuple[Step, ...], bool]] = {}
        self._limit = limit

    def _run(self, key: tuple[object, ...], stream: Stream, operands: Sequence[Slot | None],
             workspace: Workspace, offset: int,
             record: Callable[[int, Recorder], str | None]) -> str | None:  # fmt: skip
        """Replay the recipe of ``key``, or run ``record(states_ptr, recorder)`` and keep what
        it enqueued; the variant run."""
        key = (*key, tuple(None if o is None else (o.ptr & 15, o.strides) for o in operands),
               offset & 15, workspace.nbytes == 0, switch_values())  # fmt: skip
        ptrs = tuple(0 if o is None else o.ptr for o in operands)
        hit = self._recipes.get(key)
        if hit is not None:
            variant, steps, uses = hit
            states_ptr = workspace.ptr + offset if uses else 0
            for step in steps:
                step.enqueue(stream, ptrs, states_ptr)
            _capture(steps, ptrs, states_ptr, workspace)
            return variant
        states_ptr = workspace.ptr + offset
        rec = Recorder(ptrs, states_ptr, [None if o is None else i for i, o in enumerate(operands)])
        variant = record(states_ptr, rec)
        if len(self._recipes) >= self._limit:
            self._recipes.clear()
        uses = any(step.uses_base for step in rec.steps)
        steps = tuple(rec.steps)
        self._recipes[key] = (variant, steps, uses)
        _capture(steps, ptrs, states_ptr, workspace)
        return variant

    def launch_scan(self, module: LoadedModule, op: str, stream: Stream,
                    shape: tuple[int, ...], axis: int, *, reverse: bool, mode: int,
                    operands: Sequence[Slot | None], vec_slots: Sequence[int], itemsize: int,
                    layout: str, sm_count: int, workspace: Workspace, offset: int = 0,
                    lines: LoadedModule | None = None) -> str:  # fmt: skip
        """``launch_scan`` with these arguments (``module``, ``shape``, ``axis``,
        ``itemsize``, ``sm_count`` and ``lines`` the plan's own, the same at every call), its
        states at ``offset`` bytes into ``workspace`` (256-byte aligned, as ``Plan.run``
        checks, or none)."""

        def record(states_ptr: int, rec: Recorder) -> str:
            return launch_scan(module, op, stream, shape, axis, reverse=reverse, mode=mode,
                               operands=operands, vec_slots=vec_slots, itemsize=itemsize,
                               layout=layout, sm_count=sm_count, states_ptr=states_ptr,
                               lines=lines, rec=rec)  # fmt: skip

        variant = self._run((op, reverse, mode, tuple(vec_slots), layout), stream, operands,
                            workspace, offset, record)  # fmt: skip
        assert variant is not None
        return variant

    def launch_max_backward(self, module: LoadedModule, stream: Stream, shape: tuple[int, ...],
                            axis: int, *, reverse: bool, mode: int, dy: Slot, x: Slot, dx: Slot,
                            flags: Slot, layout: str, itemsize: int, sm_count: int,
                            workspace: Workspace) -> str | None:  # fmt: skip
        """``launch_max_backward`` with these arguments (``flags`` in ``workspace``)."""

        def record(states_ptr: int, rec: Recorder) -> str | None:
            return launch_max_backward(module, stream, shape, axis, reverse=reverse, mode=mode,
                                       dy=dy, x=x, dx=dx, flags=flags, layout=layout,
                                       itemsize=itemsize, sm_count=sm_count, rec=rec)  # fmt: skip

        return self._run(("max_bwd", reverse, mode, layout), stream, [dy, x, dx, flags],
                         workspace, 0, record)  # fmt: skip


def launch_scan(
    module: LoadedModule,
    op: str,
    stream: Stream,
    shape: tuple[int, ...],
    axis: int,
    *,
    reverse: bool,
    mode: int,
    operands: Sequence[Slot | None],
    vec_slots: Sequence[int],
    itemsize: int,
    layout: str,
    sm_count: int,
    states_ptr: int,
    lines: LoadedModule | None = None,
    rec: Recorder | None = None,
) -> str:
    """Enqueue one scan (1 or 3 kernels). ``operands`` are the 5 slots IN0, IN1, IN2, OUT, AUX
    (None when unused); ``vec_slots`` the slots of element type whose alignment decides the
    vector path; ``lines`` the program of ``op`` over interleaved lines (``lines_module``),
    if loaded; ``rec`` records every launch (``LaunchCache``). Returns the variant run, for
    ``sku``/tests. The program of ``op`` in rounds (ROUNDS_GROUPS) is loaded here, the first
    time a launch takes it."""
    total = numel(shape)
    if total == 0:
        return "empty"
    n = shape[axis]
    rows = total // n
    params = _params(shape, axis, operands, vec_slots, itemsize, layout, reverse, mode)
    lanes = 16 // itemsize
    # the pipelined kernels' launch condition: x and y contiguous along the axis with
    # 16-byte aligned rows, and every full tile made of whole vectors (scan.cu, scan_pipe_dir)
    pipeable = (
        (op in PIPE_OPS or (op in PIPE_AUX_OPS and _pipe_aux(shape, axis, operands[AUX], mode)))
        and bool(params.vec)
        and IN0 in vec_slots
        and OUT in vec_slots
        and (not reverse or n % lanes == 0)
    )
    if _seg_rows(op, shape, axis, operands, itemsize, reverse, mode):
        # one vector a lane (512-byte tiles) where a wave of warps holds them all, one each;
        # else pipe1's 1 KiB tiles over the run of all rows
        kernel, tiles = f"scan_{op}_seg1", _cdiv(total * itemsize, 512)
        per_sm = _seg_warps(module, kernel) if SEG_ONE_VECTOR and op in SEG1_OPS else 0
        if tiles > sm_count * per_sm:
            kernel, tiles = f"scan_{op}_seg", _cdiv(total * itemsize, 1024)
            per_sm = _seg_warps(module, kernel)
        per = _cdiv(tiles, min(tiles, sm_count * per_sm))  # a warp's stretch
        warps = _cdiv(tiles, per)
        # blocks of 8 warps, fewer where that leaves SMs idle (a small run reaches them all)
        wpb = max(1, min(BLOCK // 32, warps // sm_count))
        params.chunk_len, params.nchunks, params.vec = per, 1, 1
        _enqueue(rec, module.function(kernel), (_cdiv(warps, wpb), 1, 1), 32 * wpb, 0,
                 stream, params, kernel)  # fmt: skip
        return f"{'seg1:' if kernel.endswith('1') else 'seg'}{warps}x{per}"
    short = (_short_launch(op, shape, axis, operands, itemsize, params.outer.rank == 1, sm_count)
             if layout == "cols" else None)  # fmt: skip
    if short is not None:
        kind, per_thread = short
        kernel = f"scan_{op}_{kind}"
        params.chunk_len, params.nchunks = n, 1
        params.vec = int(not kind.startswith("short1")
                         and _vector_aux(shape, axis, operands, itemsize))  # fmt: skip
        cap = 2**31 - 1 if kind in _SHORT_UNCAPPED else sm_count * SHORT_GRID_PER_SM
        grid = max(1, min(_cdiv(rows, BLOCK * per_thread), cap))
        _enqueue(rec, module.function(kernel), (grid, 1, 1), BLOCK, 0, stream, params, kernel)
        return f"{kind}x{grid}"
    if layout == "cols" and op in STRIP_STAGED:  # before the other layouts' tests
        sw = _strip_width(op, shape, axis, operands, itemsize, sm_count)
        strips = rows * itemsize // sw if sw else 0
        kernel, smem, threads = _strip_entry(module, op, itemsize, sw, strips, sm_count)
        if sw and _smem_room(module, kernel) >= smem:
            params.width = sw
            _enqueue(rec, module.function(kernel, smem), (strips, 1, 1), threads, smem, stream,
                     params, kernel)  # fmt: skip
            return f"strip{sw}x{strips}"
    rowreg = _rowreg(op, params, operands, itemsize, sm_count)
    if rowreg is not None:
        return _launch_rowreg(module, rowreg, rows, stream, params, sm_count, rec)
    if _ring_rows(op, params, operands, itemsize):
        kernel = f"scan_{op}_ring"
        if _smem_room(module, kernel) >= RING_SMEM:
            per_sm = min(RING_BLOCKS_PER_SM, module.resident_blocks(kernel, BLOCK, RING_SMEM))
            grid = _ring_grid(rows, sm_count, per_sm)
            if grid:
                _enqueue(rec, module.function(kernel, RING_SMEM), (grid, 1, 1), BLOCK,
                         RING_SMEM, stream, params, kernel)  # fmt: skip
                return f"ring{grid}"
    # interleaved lines, one run of memory: the cooperative kernel's split of them (g lines)
    lg, lcoop = 0, None
    if lines is not None and layout == "cols" and op in LINES_OPS:
        lg = coop_lines(shape, axis, operands, itemsize)
        lcoop = coop_split(lines, op, 1, n, itemsize, reverse, lg) if lg else None
    # (dispatch runs once a recipe: _Launches._run replays it at later calls)
    run = [None if o is None else Slot(o.ptr, (1,)) for o in operands]  # the lines' run, if one
    g = numel(shape) // n if layout == "cols" and STREAM_LINES and n else 0
    if g in LINES and _one_run(shape, axis, operands, g):
        # one row of n g elements
        lp = _params((n * g,), 0, run, vec_slots, itemsize, "rows", reverse, mode)
        if _stream_lines(module, op, lp, operands, itemsize, g, lcoop):
            prog = load_module(SCAN_SOURCES[STREAM_GROUPS[op]], module.element, module.device_id)
            tiles = _launch_stream(prog, op, stream, lp, reverse, itemsize, states_ptr, rec, g)
            return f"stream{g}x{tiles}"
    if lcoop is not None and lines is not None:
        # one line of n positions of lg values
        lp = _params((n,), 0, run, vec_slots, itemsize, "rows", reverse, mode)
        lp.vec = 1  # coop_lines: 16-byte aligned, whole rows
        _launch_coop(lines, op, stream, lp, lcoop, 1, reverse, lg, states_ptr, rec)
        return f"coop{lg}x{lcoop.nchunks}{lcoop.tag}"
    packed = op in _SCALAR_STATE  # the state is one float or one double: a word a node
    lb = LOOKBACK and (LOOKBACK_FLAGGED or (packed and (itemsize < 8 or rows <= LB_F64_MAX_LINES)))
    # staged lbcols tiles hold 16 positions a thread (never wide)
    staged = (layout == "cols" and op in _WIDE_OPS and LBCOLS_STAGED
              and _stageable(shape, axis, operands, itemsize))  # fmt: skip
    pairs = (layout == "cols" and op in PAIR_OPS and not staged and LBCOLS_PAIRS
             and _pairable(shape, axis, operands, itemsize))  # fmt: skip
    # (wide tiles of double states spilled: the f32 cumprod over (27962, 300) along dim 0 took
    # 85.7 us wide against 53.2 at 16 positions a thread on an H200, round 61)
    ch = chunking(layout, rows, n, itemsize, sm_count, lb,
                  warp_rows=warp_rows_per_sm(op, itemsize),
                  wide=op in _WIDE_OPS and state_size(op, itemsize) == 4 and not staged,
                  pairs=pairs)
    params.chunk_len, params.nchunks = ch.chunk_len, ch.nchunks
    if ch.layout == "lbcols" and staged:
        params.vec = 1
    variant = ch.layout
    if PIPELINED_ROWS and pipeable and ch.layout == "rows1" and ch.nchunks == 1:
        variant = "pipe1"
        if PIPE_MAX_WAVE and op == "max" and itemsize == 4:
            variant = _pipe_max_variant(module, rows, sm_count)
    if pipeable and ch.nchunks > 1 and ch.layout in ("rows8", "lbrows"):
        coop = coop_split(module, op, rows, n, itemsize, reverse)
        if _stream_rows(module, op, params, operands, itemsize, coop):
            prog = load_module(SCAN_SOURCES[STREAM_GROUPS[op]], module.element, module.device_id)
            tiles = _launch_stream(prog, op, stream, params, reverse, itemsize, states_ptr, rec)
            return f"streamx{tiles}"
        if coop is not None:
            prog = module if coop.rounds == 1 else load_module(
                SCAN_SOURCES[ROUNDS_GROUPS[op]], module.element, module.device_id)
            _launch_coop(prog, op, stream, params, coop, rows, reverse, 1, states_ptr, rec)
            return f"coopx{coop.nchunks}{coop.tag}"
    if pipeable and op in PIPE_CHUNK_OPS and ch.layout == "rows8" and ch.nchunks > 1:
        ch = _pipe_chunks(rows, n, itemsize, sm_count)  # a chunk a warp
        params.chunk_len, params.nchunks = ch.chunk_len, ch.nchunks
        variant = "pipe1"
    if ch.layout == "lbcols" and params.vec:
        variant = "lbstage"
    elif ch.layout == "lbcols" and pairs and ch.width == 32:
        variant = "lbpair"
    kernel = f"scan_{op}_{variant}"
    fn = module.function(kernel)
    if ch.layout.startswith("lb"):
        # one pass: zero the tile counter and flags, then tiles in counter order
        params.lb = states_ptr
        params.groups, params.width = ch.groups, ch.width
        dependent = _zero_lookback(rec, module, stream, states_ptr, _lb_zeroed_bytes(ch, packed),
                                   sm_count)
        tiles = ch.tiles
        if variant == "lbpair":  # a tile holds two groups
            tiles = _cdiv(ch.groups, 2) * ch.nchunks
        grid = max(1, min(tiles, sm_count * 8))
        smem = _stage_bytes(ch, itemsize) if ch.layout == "lbcols" and params.vec else 0
        _enqueue(rec, fn, (grid, 1, 1), BLOCK, smem, stream, params, kernel, dependent=dependent)
        return f"{variant}x{tiles}"
    items = rows * ch.nchunks
    if ch.layout == "cols":
        grid = max(1, min(-(-items // BLOCK), sm_count * 64))
    else:
        per_block = 8 if ch.layout == "rows1" else 1
        grid = max(1, min(-(-items // per_block), sm_count * 64))
    if ch.nchunks == 1:
        _enqueue(rec, fn, (grid, 1, 1), BLOCK, 0, stream, params, kernel)
        return variant
    params.agg = states_ptr
    _enqueue(rec, fn, (grid, 1, 1), BLOCK, 0, stream, params, kernel)
    params.agg = 0
    params.carry = states_ptr
    states = "states8" if ch.nchunks > 128 else "states1"
    if ch.layout == "cols" and op in COLS_STATES_OPS:
        states = f"c{states}"  # the cols kernel's op's states
    sfn = module.function(f"scan_{op}_{states}")
    sgrid = max(1, min(rows if states.endswith("states8") else -(-rows // 8), sm_count * 64))
    # the states and final passes start while the pass before drains (sm_90: scan.cu's chunk
    # kernels wait for it in bc::pdl_wait)
    dep = dependent_launches(module.arch)
    _enqueue(rec, sfn, (sgrid, 1, 1), BLOCK, 0, stream, params, f"scan_{op}_{states}",
             dependent=dep)  # fmt: skip
    # pipe1 (PIPE_CHUNK_OPS) does not wait in bc::pdl_wait: a plain launch after the states
    _enqueue(rec, fn, (grid, 1, 1), BLOCK, 0, stream, params, kernel,
             dependent=dep and variant != "pipe1")  # fmt: skip
    return f"{'pipe1' if variant == 'pipe1' else ch.layout}x{ch.nchunks}"


def _check_aligned(states_ptr: int) -> None:
    """The look-back and stream kernels' words are 8-byte atomics after a 16-byte counter."""
    if states_ptr % 16:
        raise MisalignedOperand(
            f"scan: workspace must be 16-byte aligned (got address {states_ptr:#x})"
        )


def _zero_lookback(rec: Recorder | None, module: LoadedModule, stream: Stream, states_ptr: int,
                   nbytes: int, sm_count: int) -> bool:  # fmt: skip
    """Zero the first ``nbytes`` of a look-back workspace (16-byte aligned) before a one-pass
    launch: with the program's ``scan_zero`` where the launch after it may be dependent
    (``LB_DEPENDENT``, sm_90 and later; returns True), else with a memset."""
    _check_aligned(states_ptr)
    words = nbytes // 4
    if LB_DEPENDENT and dependent_launches(module.arch):
        zgrid = (max(1, min(_cdiv(words, BLOCK), sm_count)), 1, 1)
        _zero(rec, module.function("scan_zero"), zgrid, stream, states_ptr, words)
        return True
    _zero(rec, None, (0, 0, 0), stream, states_ptr, words)
    return False


def _stream_tiles(n: int, itemsize: int) -> tuple[int, int]:
    """The stream kernel's tiles and waves in a row of ``n`` elements (waves of
    STREAM_WAVE tiles, however many interleaved lines a row holds)."""
    tpr = _cdiv(n * itemsize, STREAM_TILE)
    return tpr, _cdiv(tpr, STREAM_WAVE)


def _stream_bytes(rows: int, n: int, itemsize: int, lines: int = 1) -> int:
    """Workspace bytes of the stream kernel: the tile counter (16), a word a tile and a word
    a wave, for each of ``lines`` interleaved lines."""
    tpr, waves = _stream_tiles(n, itemsize)
    return 16 + 8 * lines * rows * (tpr + waves)


def _stream_fits(module: LoadedModule, op: str, params: Params, operands: Sequence[Slot | None],
                 itemsize: int, lines: int = 1) -> bool:  # fmt: skip
    """Whether the stream kernel can take the rows of ``params`` (16-byte aligned rows, axis
    stride 1; ``lines`` interleaved lines a row), whatever the switches' choice of types:
    ``STREAM_ROWS``, a cooperative launch on sm_90 or later, cumsum/cumprod of one input in
    a 2- or 4-byte type (a float or, for the f32 cumprod, a double accumulator: one word a
    line, ``state_size``), rows of whole 16-byte vectors, and the workspace's words
    (``lines`` a tile) indexed by 32-bit ints."""
    used = [i for i, o in enumerate(operands) if o is not None]
    return (
        STREAM_ROWS
        and module.cooperative
        and op in STREAM_OPS
        and itemsize in (2, 4)  # what the kernel takes, whatever the switches list
        and arch_number(module.arch) >= 90
        and used == [IN0, OUT]
        and params.outer.rank == 1
        and (params.n * itemsize) % 16 == 0
        and params.rows * _stream_tiles(params.n, itemsize)[0] * lines < 2**31
    )


def _stream_rows(module: LoadedModule, op: str, params: Params,
                 operands: Sequence[Slot | None], itemsize: int,
                 coop: CoopSplit | None) -> bool:  # fmt: skip
    """Whether the rows of ``params`` (which meet pipe1's launch condition) take the stream
    kernel (``_stream_fits``): 4-byte types (``STREAM_ITEMSIZES``), 2-byte ones where the
    cooperative kernel's split of the same rows (``coop``, ``coop_split``) takes rounds."""
    return (
        itemsize in STREAM_ITEMSIZES
        or (itemsize in STREAM_ROUNDS_ITEMSIZES and coop is not None and coop.rounds > 1)
    ) and _stream_fits(module, op, params, operands, itemsize)


def _stream_lines(module: LoadedModule, op: str, params: Params,
                  operands: Sequence[Slot | None], itemsize: int, lines: int,
                  coop: CoopSplit | None) -> bool:  # fmt: skip
    """Whether ``lines`` (2 or 4) interleaved lines, one run of memory taken as the one row
    of ``params`` (n ``lines`` elements), take the stream kernel (``STREAM_LINES``,
    ``_stream_fits``): 4-byte types, 2-byte ones where the cooperative kernel over the lines
    (``coop``) takes rounds or cannot take them at all."""
    return (
        itemsize in STREAM_ITEMSIZES
        or (itemsize in STREAM_ROUNDS_ITEMSIZES and (coop is None or coop.rounds > 1))
    ) and _stream_fits(module, op, params, operands, itemsize, lines)


def _launch_stream(module: LoadedModule, op: str, stream: Stream, params: Params,
                   reverse: bool, itemsize: int, states_ptr: int,
                   rec: Recorder | None, lines: int = 1) -> int:  # fmt: skip
    """Enqueue the stream kernel over the rows of ``params`` (``_stream_rows``), or over one
    row of ``lines`` interleaved lines (``_stream_lines``): a cooperative launch of at most
    ``STREAM_BLOCKS_PER_SM`` blocks an SM, which zeroes its workspace itself; the number of
    tiles."""
    _check_aligned(states_ptr)
    rows, n = int(params.rows), int(params.n)
    tpr, _ = _stream_tiles(n, itemsize)
    params.nchunks, params.lb = tpr, states_ptr  # tiles a row; the tile counter and words
    kernel = f"scan_{op}_stream{lines if lines > 1 else ''}{'rev' if reverse else ''}"
    fn = module.function(kernel, STREAM_SMEM)
    tiles = rows * tpr
    per_sm = min(STREAM_BLOCKS_PER_SM,
                 module.resident_blocks(kernel, STREAM_THREADS, STREAM_SMEM))  # fmt: skip
    grid = (max(1, min(tiles, per_sm * module.sm_count)), 1, 1)
    _enqueue(rec, fn, grid, STREAM_THREADS, STREAM_SMEM, stream, params, kernel,
             cooperative=True)  # fmt: skip
    return tiles


def _launch_coop(module: LoadedModule, op: str, stream: Stream, params: Params,
                 coop: CoopSplit, rows: int, reverse: bool, lines: int, states_ptr: int,
                 rec: Recorder | None) -> None:  # fmt: skip
    """Enqueue the cooperative kernel over ``rows`` lines (or one run of ``lines``
    interleaved lines) cut as ``coop`` says, the pieces' totals in the workspace."""
    kernel = coop_kernel(op, reverse, lines, coop.rounds)
    params.chunk_len, params.nchunks = coop.chunk_len, coop.nchunks
    params.groups = coop.keep
    params.width = coop.rounds
    params.agg = states_ptr
    fn = module.function(kernel, coop.smem)
    grid, block = (rows * coop.nchunks, 1, 1), 32 * coop.warps
    _enqueue(rec, fn, grid, block, coop.smem, stream, params, kernel, cooperative=True)


def _max_ring(module: LoadedModule, shape: tuple[int, ...], axis: int, *, reverse: bool,
              mode: int, dy: Slot, x: Slot, dx: Slot, itemsize: int,
              sm_count: int) -> tuple[Params, int, str] | None:  # fmt: skip
    """The Params, grid and kernel of the cummax/cummin backward through a ring
    (``scan_max_bwd_ring``: IN0 = x, IN1 = dy, OUT = dx, ``reverse`` and ``mode`` the
    forward's) where ``RING_MAX_BACKWARD`` is on and the rows meet its conditions: x, dy and
    dx allowing 16-byte vectors along a contiguous axis (``layout`` "rows"), outer dims that
    coalesce to one, rows of at least one chunk (``scan_max_bwd_ring8``'s half chunk in the
    itemsizes of RING_MAX_BACKWARD_SHORT_ITEMSIZES) and whole vectors, enough rows to fill the
    launch (``_ring_grid``) and room for the ring on the device; else None."""
    rowb = shape[axis] * itemsize
    if not RING_MAX_BACKWARD or rowb % 16:
        return None
    if rowb >= RING_MAX_BACKWARD_CHUNK:
        kernel = "scan_max_bwd_ring"
    elif rowb >= RING_MAX_BACKWARD_CHUNK // 2 and itemsize in RING_MAX_BACKWARD_SHORT_ITEMSIZES:
        kernel = "scan_max_bwd_ring8"
    else:
        return None
    params = _params(shape, axis, [x, dy, None, dx, None], (IN0, IN1, OUT), itemsize, "rows",
                     reverse, mode)  # fmt: skip
    if not params.vec or params.outer.rank != 1:
        return None
    if _smem_room(module, kernel) < RING_SMEM:
        return None
    per_sm = min(RING_BLOCKS_PER_SM, module.resident_blocks(kernel, BLOCK, RING_SMEM))
    grid = _ring_grid(params.rows, sm_count, per_sm)
    return (params, grid, kernel) if grid else None


# The recorded pointers of the cummax backward's launches are (dy, x, dx, flags); its one-pass
# kernels (ring and strips) take x as IN0, dy as IN1 and dx as OUT.
_MAX_ONE_PASS_SRCS = (1, 0, None, 2, None)


def _max_strip(module: LoadedModule, stream: Stream, shape: tuple[int, ...], axis: int, *,
               reverse: bool, mode: int, dy: Slot, x: Slot, dx: Slot, itemsize: int,
               sm_count: int, rec: Recorder | None) -> str | None:  # fmt: skip
    """Enqueue the cummax/cummin backward in strips of one pass (``scan_max_bwd_strip``:
    IN0 = x, IN1 = dy, OUT = dx, ``reverse`` and ``mode`` the forward's) where
    ``STRIP_MAX_BACKWARD`` is on, the lines come in strips (``_strip_width`` of "max_bwd")
    and the ring fits on the device; returns the variant run, or None (nothing enqueued)."""
    if not STRIP_MAX_BACKWARD:
        return None
    operands: list[Slot | None] = [x, dy, None, dx, None]
    sw = _strip_width("max_bwd", shape, axis, operands, itemsize, sm_count)
    kernel, smem = "scan_max_bwd_strip", strip_smem("max_bwd", itemsize)
    if not sw or _smem_room(module, kernel) < smem:
        return None
    params = _params(shape, axis, operands, (IN0, IN1, OUT), itemsize, "cols", reverse, mode)
    params.width = sw
    strips = numel(shape) // shape[axis] * itemsize // sw
    _enqueue(rec, module.function(kernel, smem), (strips, 1, 1), BLOCK, smem, stream, params,
             kernel, srcs=_MAX_ONE_PASS_SRCS)  # fmt: skip
    return f"max_bwd_strip{sw}x{strips}"


def launch_max_backward(module: LoadedModule, stream: Stream, shape: tuple[int, ...], axis: int,
                        *, reverse: bool, mode: int, dy: Slot, x: Slot, dx: Slot, flags: Slot,
                        layout: str, itemsize: int, sm_count: int,
                        rec: Recorder | None = None) -> str | None:  # fmt: skip
    """Enqueue the cummax/cummin backward in one kernel (``reverse`` and ``mode`` of the
    forward, winner flags in ``flags`` laid out for ``layout``) where it applies:
    ``FUSED_MAX_BACKWARD`` on, and for ``layout`` "cols" strips (``_max_strip``) where both
    passes do not take ``scan_short`` (``_short_launch``); for "rows"
    either a ring (``_max_ring``), or not both passes on segmented tiles (``_seg_rows`` of
    each) and either a warp per line
    (``chunking`` takes ``rows1``: ``scan_max_bwd_rows``) or, with
    ``FUSED_MAX_BACKWARD_BLOCKS``, a block per whole line (``rows8`` in one chunk a line:
    ``scan_max_bwd_rows8``). Returns the variant run, or None
    (nothing enqueued: take two passes)."""
    total = numel(shape)
    if not FUSED_MAX_BACKWARD or total == 0:
        return None
    if layout == "cols":
        if (_short_launch("maxflag", shape, axis, [x, None, None, None, flags], itemsize)
                and _short_launch("seg_bwd", shape, axis, [dy, None, None, dx, flags], itemsize)):
            return None  # both passes over short lines (scan_short)
        return _max_strip(module, stream, shape, axis, reverse=reverse, mode=mode, dy=dy, x=x,
                          dx=dx, itemsize=itemsize, sm_count=sm_count, rec=rec)  # fmt: skip
    if layout != "rows":
        return None
    n = shape[axis]
    ring = _max_ring(module, shape, axis, reverse=reverse, mode=mode, dy=dy, x=x, dx=dx,
                     itemsize=itemsize, sm_count=sm_count)  # fmt: skip
    if ring is not None:
        params, grid, kernel = ring
        _enqueue(rec, module.function(kernel, RING_SMEM), (grid, 1, 1), BLOCK, RING_SMEM, stream,
                 params, kernel, srcs=_MAX_ONE_PASS_SRCS)  # fmt: skip
        return f"{kernel.removeprefix('scan_')}/{grid}"
    if (_seg_rows("maxflag", shape, axis, [x, None, None, None, flags], itemsize, reverse,
                  mode | 4)
            and _seg_rows("seg_bwd", shape, axis, [dy, None, None, dx, flags], itemsize,
                          not reverse)):  # fmt: skip
        return None  # both passes on segmented tiles
    ch = chunking("rows", total // n, n, itemsize, sm_count)
    if ch.layout == "rows1":
        kernel, lines_per_block = "scan_max_bwd_rows", BLOCK // 32
    elif ch.layout == "rows8" and ch.nchunks == 1 and FUSED_MAX_BACKWARD_BLOCKS:
        kernel, lines_per_block = "scan_max_bwd_rows8", 1
    else:
        return None
    fwd = _params(shape, axis, [x, None, None, None, flags], (IN0,), itemsize, layout, reverse,
                  mode | 4)  # fmt: skip
    bwd = _params(shape, axis, [dy, None, None, dx, flags], (IN0, OUT), itemsize, layout,
                  not reverse, 0)  # fmt: skip
    for p in (fwd, bwd):
        p.chunk_len, p.nchunks = ch.chunk_len, ch.nchunks
    grid = max(1, min(_cdiv(fwd.rows, lines_per_block), sm_count * 64))
    fn = module.function(kernel)
    launch(fn, (grid, 1, 1), BLOCK, 0, stream, [fwd, bwd], kernel)
    if rec is not None:  # its pointers: (dy, x, dx, flags)
        rec.kernel(fn, (grid, 1, 1), BLOCK, 0,
                   [(fwd, (1, None, None, None, 3)), (bwd, (0, None, None, 2, 3))],
                   kernel, False, False)  # fmt: skip
    return kernel.removeprefix("scan_")


watch(__name__)  # its switches are read through baracuda._switches.memo
