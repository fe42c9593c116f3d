"""Scan plans without a GPU: descriptor validation, chunking, layouts, kernels compile."""

from __future__ import annotations

import ctypes
import itertools
import math
from typing import Any

import numpy as np
import pytest

import baracuda.scan.api as api
from baracuda._cuda import replay
from baracuda._cuda.compiler import KernelSource, compile_cubin, kernel_name
from baracuda._cuda.memory import Workspace
from baracuda._cuda.replay import Step
from baracuda._layout import contiguous_strides
from baracuda.errors import (
    CompileError,
    InvalidProblem,
    MisalignedOperand,
    Unsupported,
    WorkspaceTooSmall,
)
from baracuda.scan import (
    ScanBackwardDescriptor,
    ScanBackwardPlan,
    ScanDescriptor,
    ScanPlan,
)
from baracuda.scan._kernels import (
    COLS_STATES_OPS,
    LINES_GROUPS,
    LINES_KINDS,
    LINES_OPS,
    OPS,
    PAIR_OPS,
    PIPE_AUX_OPS,
    PIPE_OPS,
    RING_OPS,
    ROUNDS_GROUPS,
    ROUNDS_KINDS,
    ROUNDS_OPS,
    ROWREG_KINDS,
    ROWREG_MAX_KINDS,
    ROWREG_OPS,
    SCAN_GROUPS,
    SCAN_SOURCES,
    SEG1_OPS,
    SEG_OPS,
    SHORT_MANY_ENTRY_OPS,
    STREAM_GROUPS,
    STREAM_KINDS,
    STREAM_OPS,
    STRIP_512_ENTRY_OPS,
    STRIP_MANY_ENTRY_OPS,
    STRIP_NARROW_ENTRY_OPS,
    STRIP_STAGED,
    Params,
    Slot,
    chunking,
    flag_strides,
    launch_max_backward,
    state_bytes,
)
from baracuda.types import ElementKind, ScanKind, TieBreak

F32 = ElementKind.F32


def _patch(monkeypatch: pytest.MonkeyPatch, name: str, fn: object) -> None:
    """Patch ``launch`` or ``memset_zero`` where the scan launches call it: launch_scan's
    first launches (_kernels) and the prepared steps' replays (replay)."""
    from baracuda.scan import _kernels as K

    monkeypatch.setattr(K, name, fn, raising=name == "launch")
    monkeypatch.setattr(replay, name, fn)


@pytest.mark.parametrize(("plan", "desc_cls"), [(ScanPlan, ScanDescriptor),
                                           (ScanBackwardPlan, ScanBackwardDescriptor)])  # fmt: skip
def test_descriptor_validation(plan: type, desc_cls: type) -> None:
    bad = [
        (desc_cls(ScanKind.CUMSUM, (3, 4), 2, F32), InvalidProblem, "axis"),
        (desc_cls(ScanKind.CUMSUM, (3, 4), -3, F32), InvalidProblem, "axis"),
        (desc_cls(ScanKind.CUMSUM, (3, -4), 0, F32), InvalidProblem, "non-negative"),
        (desc_cls(ScanKind.CUMSUM, (), 0, F32), Unsupported, "rank"),
        (desc_cls(ScanKind.CUMSUM, (1,) * 9, 0, F32), Unsupported, "rank"),
        (desc_cls("cumsum", (3, 4), 0, F32), Unsupported, "ScanKind"),
        (desc_cls(ScanKind.CUMSUM, (3, 4), 0, "f32"), Unsupported, "ElementKind"),
        (desc_cls(ScanKind.CUMMAX, (3, 4), 0, F32, tie_break="last"), InvalidProblem,
         "tie_break"),
        (desc_cls(ScanKind.CUMMAX, (3, 4), 0, F32, reverse=1), InvalidProblem, "reverse"),
    ]  # fmt: skip
    for desc, exc, text in bad:
        with pytest.raises(exc, match=text) as info:
            plan.select(None, desc)
        assert plan.NAME in str(info.value)


def test_chunking_covers_rows_and_stays_aligned() -> None:
    for layout in ("rows", "cols"):
        for rows, n in [(1, 2**26), (2, 2**23), (4096, 8192), (8192, 4096), (2, 2**20),
                        (10**6, 3), (1, 1), (3, 1000), (7, 123457)]:  # fmt: skip
            for itemsize in (2, 4, 8):
                ch = chunking(layout, rows, n, itemsize, 132, lookback_rows=True)
                assert ch.nchunks >= 1 and ch.chunk_len >= 1
                assert (ch.nchunks - 1) * ch.chunk_len < n <= ch.nchunks * ch.chunk_len
                if ch.layout == "rows8" and ch.nchunks > 1:
                    assert ch.chunk_len % (256 * 8) == 0 or ch.chunk_len % (256 * 4) == 0
                if ch.layout.startswith("lb"):
                    assert ch.width * ch.groups >= rows > ch.width * (ch.groups - 1)
                    assert ch.width & (ch.width - 1) == 0 and ch.width <= 32
                    # radix 32 / width (at least 2): every level until one node would
                    # cover the line
                    radix = max(2, 32 // ch.width)
                    per_line, cnt = 0, ch.nchunks
                    while True:
                        per_line += cnt
                        if cnt == 1:
                            break
                        cnt = -(-cnt // radix)
                    nodes = ch.groups * per_line
                    assert ch.nodes <= nodes and ch.nodes >= ch.tiles
                    assert state_bytes((rows, n), 1, itemsize, 132) >= (
                        128 + 4 * ch.nodes + 16 * ch.nodes * ch.width)
                elif ch.nchunks > 1:
                    assert state_bytes((rows, n), 1, itemsize, 132) >= rows * ch.nchunks * 16


def test_long_rows_are_split_across_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    ch = chunking("rows", 1, 2**26, 4, 132)
    assert ch.layout == "rows8" and ch.nchunks >= 132  # three passes (LOOKBACK_ROWS off)
    ch = chunking("rows", 1, 2**26, 4, 132, lookback_rows=True)
    assert ch.layout == "lbrows" and ch.nchunks >= 132
    ch = chunking("cols", 8192, 4096, 4, 132)
    assert ch.layout == "lbcols" and ch.nchunks > 1 and ch.width == 32
    ch = chunking("cols", 2, 2**20, 4, 132)
    assert ch.layout == "lbcols" and ch.width == 2 and ch.tiles >= 132
    from baracuda.scan import _kernels as K

    monkeypatch.setattr(K, "LOOKBACK", False)
    assert chunking("rows", 1, 2**26, 4, 132).layout == "rows8"
    assert chunking("cols", 8192, 4096, 4, 132).layout == "cols"


class _FakeModule:
    """What coop_split reads of a LoadedModule: an H100-like device (132 SMs)."""

    device_id = 0
    sm_count = 132
    cooperative = True

    def __init__(self, resident: int) -> None:
        self.resident = resident
        self.asked: list[str] = []  # the kernels whose resources were read

    def static_smem(self, op: str) -> int:
        self.asked.append(op)
        return 1536

    def resident_blocks(self, op: str, block: int, dynamic_smem: int = 0) -> int:
        self.asked.append(op)
        assert dynamic_smem + 1536 <= 232448, dynamic_smem
        return self.resident


def test_pipe_chunks() -> None:
    """The three passes of PIPE_CHUNK_OPS on pipe1: whole pipe1 tiles a chunk, about 32
    warps an SM over the rows, the last chunk non-empty, no more than _MAX_CHUNKS a row,
    and the workspace holds every chunk's carry (for any op: state_bytes has no op)."""
    from baracuda.scan import _kernels as K

    assert K.PIPE_CHUNK_OPS == ("lse",)
    for itemsize in (2, 4, 8):
        tile = 1024 // itemsize
        for rows, n in [(1, 2**26 // itemsize), (2, 2**20 + 8), (3, 3 * tile + 16),
                        (100, 2**16), (1, 2**31)]:  # fmt: skip
            ch = K._pipe_chunks(rows, n, itemsize, 132)
            assert ch.layout == "rows1" and ch.chunk_len % tile == 0
            assert (ch.nchunks - 1) * ch.chunk_len < n <= ch.nchunks * ch.chunk_len
            assert ch.nchunks <= K._MAX_CHUNKS
            assert ch.nchunks >= min(-(-132 * 32 // rows), -(-n // tile), K._MAX_CHUNKS) // 2
            if K.chunking("rows", rows, n, itemsize, 132, False, False).nchunks > 1:
                assert state_bytes((rows, n), 1, itemsize, 132) >= rows * ch.nchunks * 16


def test_segmented_rows_condition() -> None:
    """_seg_rows: short rows (at most SEG_MAX_BYTES) of SEG_OPS whose x and y (and cummax's
    indices) are each one aligned run of all rows, of any rank and extent-1 dims; reverse
    only over whole 16-byte vectors; never for sliced, strided, broadcast, misaligned or
    extra operands, long rows or empty shapes; the backward's ops with their own operands
    (dy, x, y; the winner flags, written only by ``maxflag``)."""
    from baracuda.scan import _kernels as K

    def slots(shape: tuple[int, ...], strides: tuple[int, ...] | None = None,
              ptr: int = 1 << 20) -> list[K.Slot | None]:  # fmt: skip
        st = strides if strides is not None else contiguous_strides(shape)
        return [K.Slot(ptr, st), None, None, K.Slot(1 << 21, st), None]

    assert K.SEG_ROWS
    for itemsize in (2, 4, 8):
        lanes, most = 16 // itemsize, K.SEG_MAX_BYTES // itemsize
        yes = [((1000, most), 1, False), ((7, 1), 1, False), ((3, 5, 16), 2, False),
               ((3, 1, 16), 2, False), ((8, 64, 1), 1, False), ((lanes, 3), 1, True)]
        no = [((1000, most + 1), 1, False), ((7, 3), 1, True), ((0, 4), 1, False)]
        for shape, axis, rev in yes:
            ok = K._seg_rows("sum", shape, axis, slots(shape), itemsize, rev)
            assert ok, (shape, axis, rev)
        for shape, axis, rev in no:
            ok = K._seg_rows("sum", shape, axis, slots(shape), itemsize, rev)
            assert not ok, (shape, axis, rev)
        # rows sliced from wider ones, a strided axis, a broadcast, misaligned, transposed
        assert not K._seg_rows("sum", (100, 8), 1, slots((100, 8), (10, 1)), itemsize, False)
        assert not K._seg_rows("sum", (100, 8), 1, slots((100, 8), (16, 2)), itemsize, False)
        assert not K._seg_rows("sum", (100, 8), 1, slots((100, 8), (0, 1)), itemsize, False)
        assert not K._seg_rows("sum", (100, 8), 1, slots((100, 8), ptr=(1 << 20) + itemsize),
                               itemsize, False)  # fmt: skip
        assert not K._seg_rows("sum", (8, 100), 0, slots((8, 100)), itemsize, False)
        # cummax's indices: one run like x and y, 16-byte aligned; not its backward's flags
        ops = slots((100, 8))
        ops[K.AUX] = K.Slot(1 << 22, (8, 1))
        assert K._seg_rows("max", (100, 8), 1, ops, itemsize, False)
        assert not K._seg_rows("max", (100, 8), 1, ops, itemsize, False, mode=4)
        assert not K._seg_rows("sum", (100, 8), 1, ops, itemsize, False)
        ops[K.AUX] = K.Slot(1 << 22, (16, 1))
        assert not K._seg_rows("max", (100, 8), 1, ops, itemsize, False)
        ops[K.AUX] = K.Slot((1 << 22) + 8, (8, 1))
        assert not K._seg_rows("max", (100, 8), 1, ops, itemsize, False)
        assert K._seg_rows("max", (100, 8), 1, slots((100, 8)), itemsize, True)
        # cummax/cummin: rows of at most SEG_MAX_BYTES, as the others
        assert K._seg_rows("max", (64, most), 1, slots((64, most)), itemsize, False)
        assert not K._seg_rows("max", (64, most + 1), 1, slots((64, most + 1)), itemsize, False)
        # the backward's ops, each with its own operands only
        three = slots((100, 8))
        three[K.IN1], three[K.IN2] = K.Slot(1 << 23, (8, 1)), K.Slot(1 << 24, (8, 1))
        flags = K.Slot(1 << 25, (8, 1))  # uint8 winner flags: one run too
        for op in ("prod_bwd", "lse_bwd"):
            assert K._seg_rows(op, (100, 8), 1, three, itemsize, False), op
            assert K._seg_rows(op, (100, 8), 1, three, itemsize, True), op
            assert not K._seg_rows(op, (100, 8), 1, slots((100, 8)), itemsize, False), op
            sliced = list(three)
            sliced[K.IN2] = K.Slot(1 << 24, (10, 1))  # y sliced from wider rows
            assert not K._seg_rows(op, (100, 8), 1, sliced, itemsize, False), op
        assert not K._seg_rows("sum", (100, 8), 1, three, itemsize, False)
        xf: list[K.Slot | None] = [three[K.IN0], None, None, None, flags]
        assert K._seg_rows("maxflag", (100, 8), 1, xf, itemsize, False, mode=4)
        assert K._seg_rows("maxflag", (100, 8), 1, xf, itemsize, True, mode=5)
        assert not K._seg_rows("maxflag", (100, 8), 1, xf, itemsize, False)  # indices: no
        assert not K._seg_rows("maxflag", (100, 8), 1, slots((100, 8)), itemsize, False, mode=4)
        xf[K.AUX] = K.Slot((1 << 25) + 8, (8, 1))  # misaligned flags
        assert not K._seg_rows("maxflag", (100, 8), 1, xf, itemsize, False, mode=4)
        dyf = slots((100, 8))
        dyf[K.AUX] = flags
        assert K._seg_rows("seg_bwd", (100, 8), 1, dyf, itemsize, True)
        assert not K._seg_rows("seg_bwd", (100, 8), 1, slots((100, 8)), itemsize, False)
        assert not K._seg_rows("seg_bwd", (100, 8), 1, dyf, itemsize, False, mode=4)


@pytest.mark.parametrize("resident", [1, 2])
def test_cooperative_pieces(monkeypatch: pytest.MonkeyPatch, resident: int) -> None:
    """coop_split: whole 512-byte rows, at least 2 pieces a line of a row a warp, no more
    blocks than resident (at most 2 an SM), the workspace holds every piece's total (two
    rounds' where there are rounds); one round up to COOP_ONE_ROUND times what the blocks
    keep (and no more than that and L2), else as few rounds as what the blocks keep holds,
    each with a piece of every block but the last; interleaved lines in one round only, None
    where they would not fit in shared memory and L2; None where the device lacks
    cooperative launches."""
    from baracuda._cuda.device import DeviceInfo
    from baracuda.scan import _kernels as K

    info = DeviceInfo(0, "H100", "sm_90", 132, 232448, 50 * 2**20, True)
    monkeypatch.setattr(K, "device_info", lambda device_id: info)
    mod = _FakeModule(resident)
    for itemsize in (2, 4, 8):
        tile = 512 // itemsize
        warps = 16 if itemsize == 2 else 8
        held = 229376 + K.coop_reg_rows(itemsize) * warps * 512  # a block's
        kept = 132 * min(resident, 2) * held
        cap = kept + info.l2_bytes
        one = min(K.COOP_ONE_ROUND * kept, cap)  # the most one round takes
        for forced in (0, 3):
            monkeypatch.setattr(K, "COOP_ROUNDS", forced)
            for rows, n in [(1, 2**20), (2, 2**23 // itemsize * 2), (3, 100_008), (65, 40_000),
                            (2, 20_000), (66, 2**16), (132, 2**16), (1, 3 * tile),
                            (2, cap // (2 * itemsize)), (2, cap // (2 * itemsize) + tile),
                            (2, int(one) // (2 * itemsize)), (1, 2**28 // itemsize)]:  # fmt: skip
                sp = K.coop_split(mod, "sum", rows, n, itemsize)  # type: ignore[arg-type]
                # the reverse entry's resources (scan_sum_cooprev), here the same sizes
                mod.asked.clear()
                assert K.coop_split(mod, "sum", rows, n, itemsize, True) == sp  # type: ignore[arg-type]
                assert set(mod.asked) <= {"scan_sum_cooprev"}, mod.asked
                nbytes = rows * n * itemsize
                want = forced or (1 if nbytes <= one else -(-nbytes // kept))
                if sp is None:
                    assert min(132 * resident // rows, -(-n // want) // (warps * tile)) < 2, n
                    continue
                assert 1 <= sp.rounds <= want and sp.rounds > want // 2, (rows, n, sp, want)
                assert sp.warps == warps and sp.keep == 229376 // (warps * 512)
                assert sp.smem == 229376
                assert sp.chunk_len % tile == 0 and sp.nchunks >= 2
                per_round = sp.nchunks * sp.chunk_len  # positions
                assert (sp.rounds - 1) * per_round < n <= sp.rounds * per_round
                if sp.rounds == 1:
                    assert (sp.nchunks - 1) * sp.chunk_len < n
                assert rows * per_round * itemsize <= cap + rows * sp.nchunks * 512
                assert sp.chunk_len >= warps * tile
                assert rows * sp.nchunks <= 132 * min(resident, 2)
                states = rows * sp.nchunks * 16 * (2 if sp.rounds > 1 else 1)
                assert state_bytes((rows, n), 1, itemsize, 132) >= states
                assert sp.tag == ("" if sp.rounds == 1 else f"r{sp.rounds}")
    monkeypatch.setattr(K, "COOP_ROUNDS", 0)
    sp = K.coop_split(mod, "sum", 2, 2**26, 4)  # type: ignore[arg-type]
    assert sp is not None and sp.rounds == -(-2**29 // (132 * min(resident, 2) * (229376 + 2**17)))
    assert K.coop_split(mod, "max", 2, 2**20, 4) is None  # not a pipelined op
    # logcumsumexp: the itemsizes of COOP_LSE_ITEMSIZES only (none by default), in rounds like
    # cumsum
    assert K.COOP_LSE_ITEMSIZES == ()
    for itemsize in (2, 4, 8):
        assert K.coop_split(mod, "lse", 2, 2**20, itemsize) is None  # type: ignore[arg-type]
    monkeypatch.setattr(K, "COOP_LSE_ITEMSIZES", (2,))
    lse = K.coop_split(mod, "lse", 2, 2**26, 2)  # type: ignore[arg-type]
    assert lse == K.coop_split(mod, "sum", 2, 2**26, 2)  # type: ignore[arg-type]
    assert lse is not None and lse.rounds > 1
    monkeypatch.setattr(K, "COOP_ROUNDS", 3)
    sp = K.coop_split(mod, "lse", 2, 2**20, 2)  # type: ignore[arg-type]
    assert sp is not None and sp.rounds == 3
    monkeypatch.setattr(K, "COOP_LSE_ITEMSIZES", (2, 4))
    sp = K.coop_split(mod, "lse", 2, 2**20, 4)  # type: ignore[arg-type]
    assert sp is not None and sp.rounds == 3
    monkeypatch.setattr(K, "COOP_ROUNDS", 0)
    assert K.coop_kernel("sum", False) == "scan_sum_coop"
    assert K.coop_kernel("lse", True) == "scan_lse_cooprev"
    assert K.coop_kernel("prod", False, 2) == "scan_prod_coop2"
    assert K.coop_kernel("sum", True, 4) == "scan_sum_coop4rev"
    assert K.coop_kernel("sum", False, 1, 3) == "scan_sum_rounds"
    assert K.coop_kernel("prod", True, 1, 2) == "scan_prod_roundsrev"
    # interleaved lines: a position is `lines` elements, pieces are whole rows of positions
    # (one round, also with rounds forced; None past shared memory and L2)
    monkeypatch.setattr(K, "COOP_ROUNDS", 2)
    for itemsize, lines in ((4, 2), (4, 4), (2, 2), (2, 4), (8, 2)):
        row = 512 // (itemsize * lines)
        for n in (2**20, 64 * row, 100 * row, 2**28 // (itemsize * lines)):
            sp = K.coop_split(mod, "sum", 1, n, itemsize, False, lines)  # type: ignore[arg-type]
            held = 229376 + K.coop_reg_rows(itemsize) * K.coop_warps(itemsize) * 512
            if n * itemsize * lines > 132 * min(resident, 2) * held + info.l2_bytes:
                assert sp is None
                continue
            if sp is None:
                assert n // (K.coop_warps(itemsize) * row) < 2
                continue
            assert sp.rounds == 1
            assert sp.chunk_len % row == 0 and sp.nchunks >= 2
            assert (sp.nchunks - 1) * sp.chunk_len < n <= sp.nchunks * sp.chunk_len
            assert sp.nchunks <= 132 * min(resident, 2)
    mod.cooperative = False
    assert K.coop_split(mod, "sum", 2, 2**20, 4) is None
    mod.cooperative = True
    monkeypatch.setattr(K, "COOP_ROWS", False)
    assert K.coop_split(mod, "sum", 2, 2**20, 4) is None


def test_interleaved_lines_on_the_cooperative_kernel() -> None:
    """coop_lines: 2 or 4 adjacent lines of x and y whose positions interleave (axis stride
    = line count, line stride 1), a position's bytes dividing 16, the run whole 512-byte
    rows and 16-byte aligned; 0 (not taken) otherwise."""
    from baracuda.scan import _kernels as K

    def lines(shape: tuple[int, ...], axis: int, itemsize: int = 4,
              strides: tuple[int, ...] | None = None, ptr: int = 256,
              out_strides: tuple[int, ...] | None = None, extra: bool = False) -> int:  # fmt: skip
        st = strides or tuple(int(np.prod(shape[i + 1:])) for i in range(len(shape)))
        ops: list[Slot | None] = [None] * 5
        ops[K.IN0], ops[K.OUT] = Slot(ptr, st), Slot(512, out_strides or st)
        if extra:
            ops[K.AUX] = Slot(1024, st)
        return K.coop_lines(shape, axis, ops, itemsize)

    assert lines((2**20, 2), 0) == 2 and lines((2**19, 4), 0) == 4
    assert lines((2**20, 2), 0, itemsize=2) == 2 and lines((2**20, 4), 0, itemsize=2) == 4
    assert lines((2**20, 2), 0, itemsize=8) == 2
    assert lines((1, 2**20, 2), 1) == 2  # dims of extent 1 do not count
    assert lines((2**20, 1, 4), 0) == 4
    assert lines((2**20, 4), 0, itemsize=8) == 0  # 32 bytes a position
    assert lines((2**20, 3), 0) == 0 and lines((2**20, 8), 0) == 0
    assert lines((2**20 + 8, 2), 0) == 0  # the run is not whole 512-byte rows
    assert lines((2**20 + 64, 2), 0) == 2  # 2^23 + 512 bytes
    assert lines((2**20, 2), 0, ptr=264) == 0  # misaligned
    assert lines((2**20, 2), 0, strides=(4, 1)) == 0  # the lines of a wider tensor
    assert lines((2**20, 2), 0, strides=(2, -1)) == 0
    assert lines((2**20, 2), 0, out_strides=(1, 2**20)) == 0  # the output transposed
    assert lines((2, 2**20), 1) == 0  # a contiguous axis
    assert lines((3, 2**20, 2), 1) == 0  # several groups
    assert lines((2**20, 2), 0, extra=True) == 0  # x and y only
    assert lines((0, 2), 0) == 0
    K_switch = K.COOP_LINES
    try:
        K.COOP_LINES = False
        assert lines((2**20, 2), 0) == 0
    finally:
        K.COOP_LINES = K_switch


def test_interleaved_lines_launch(monkeypatch: pytest.MonkeyPatch) -> None:
    """launch_scan sends (2^20, 2) along dim 0 to scan_<op>_coop2 (cooprev for reverse): one
    line of 2^20 positions (outer shape (1,)), 16-byte vectors, pieces of whole 512-byte rows
    (64 positions in f32), the pieces' totals in the workspace; without cooperative launches
    it stays on staged look-back tiles (STREAM_LINES off: sm_90 takes the stream kernel,
    test_stream_lines_launch)."""
    from baracuda._cuda.device import DeviceInfo
    from baracuda.scan import _kernels as K

    info = DeviceInfo(0, "H100", "sm_90", 132, 232448, 50 * 2**20, True)
    monkeypatch.setattr(K, "device_info", lambda device_id: info)
    monkeypatch.setattr(K, "STREAM_LINES", False)
    mod = _FakeModule(1)
    mod.arch = "sm_90"  # type: ignore[attr-defined]
    mod.function = lambda name, smem=0: name  # type: ignore[attr-defined]
    calls: list[tuple[str, tuple[int, int, int], object, bool]] = []

    def spy(fn: str, grid: tuple[int, int, int], block: int, smem: int, st: object,
            args: list[object], name: str = "", *, dependent: bool = False,
            cooperative: bool = False) -> None:  # fmt: skip
        calls.append((fn, grid, args[0], cooperative))

    _patch(monkeypatch, "launch", spy)
    _patch(monkeypatch, "memset_zero", lambda *a: None)
    ws = 1 << 20
    for reverse, lanes, itemsize in ((False, 2, 4), (True, 2, 4), (False, 4, 2), (True, 4, 8)):
        calls.clear()
        n = 2**20
        x, y = Slot(1 << 30, (lanes, 1)), Slot(1 << 31, (lanes, 1))
        variant = K.launch_scan(mod, "sum", None, (n, lanes), 0, reverse=reverse, mode=0,  # type: ignore[arg-type]
                                operands=[x, None, None, y, None], vec_slots=(0, 3),
                                itemsize=itemsize, layout="cols", sm_count=132,
                                states_ptr=ws, lines=mod)  # type: ignore[arg-type]  # fmt: skip
        if lanes * itemsize > 16:
            assert not variant.startswith("coop"), variant
            continue
        (fn, grid, params, coop), = calls
        assert coop and fn == K.coop_kernel("sum", reverse, lanes)
        assert variant == f"coop{lanes}x{grid[0]}"
        p = params
        assert (p.rows, p.n, p.vec, p.reverse, p.agg) == (1, n, 1, int(reverse), ws)  # type: ignore[attr-defined]
        assert p.outer.rank == 1 and p.outer.v[0] == 1  # type: ignore[attr-defined]
        assert (p.op[K.IN0].ptr, p.op[K.OUT].ptr) == (1 << 30, 1 << 31)  # type: ignore[attr-defined]
        row = 512 // (itemsize * lanes)
        assert p.chunk_len % row == 0 and p.nchunks == grid[0] >= 2  # type: ignore[attr-defined]
        assert (p.nchunks - 1) * p.chunk_len < n <= p.nchunks * p.chunk_len  # type: ignore[attr-defined]
    x, y = Slot(1 << 30, (2, 1)), Slot(1 << 31, (2, 1))
    for op, lines, cooperative in (("sum", None, True), ("lse", mod, True), ("sum", mod, False)):
        mod.cooperative = cooperative  # type: ignore[misc]
        variant = K.launch_scan(mod, op, None, (2**20, 2), 0, reverse=False, mode=0,  # type: ignore[arg-type]
                                operands=[x, None, None, y, None], vec_slots=(0, 3),
                                itemsize=4, layout="cols", sm_count=132, states_ptr=ws,
                                lines=lines)  # type: ignore[arg-type]  # fmt: skip
        assert variant.startswith("lbstage"), (op, lines, cooperative, variant)


def test_lines_program_only_for_shapes_that_may_take_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """lines_module loads the program over interleaved lines of an op of LINES_OPS only for
    shapes of 2 or 4 lines whose run is whole 512-byte rows (lines_shape)."""
    from baracuda.scan import _kernels as K

    loaded: list[tuple[str, ElementKind, int]] = []

    def load(source: KernelSource, element: ElementKind, device_id: int) -> str:
        loaded.append((source.name, element, device_id))
        return "module"

    monkeypatch.setattr(K, "load_module", load)
    assert K.lines_module("sum", (2**20, 2), 0, F32, 1) == "module"  # type: ignore[comparison-overlap]
    assert loaded == [("scan/scan.cu:sum_lines", F32, 1)]
    assert K.lines_module("prod", (2**18, 4), 0, ElementKind.BF16, 0) == "module"  # type: ignore[comparison-overlap]
    loaded.clear()
    assert K.lines_module("lse", (2**20, 2), 0, F32, 0) is None  # no program over lines
    assert K.lines_module("prod_bwd", (2**20, 2), 0, F32, 0) is None
    assert K.lines_module("sum", (2**20, 3), 0, F32, 0) is None
    assert K.lines_module("sum", (2**20 + 8, 2), 0, F32, 0) is None  # partial rows
    assert K.lines_module("sum", (2**20, 4), 0, ElementKind.F64, 0) is None  # 32-byte positions
    assert K.lines_module("sum", (0, 2), 0, F32, 0) is None
    assert loaded == []
    assert K.lines_shape((1, 2**20, 2), 1, 4) == 2 and K.lines_shape((2, 2**20), 1, 4) == 2


def test_flag_strides_match_layouts() -> None:
    assert flag_strides((3, 5, 7), 1, "rows") == (35, 1, 5)
    assert flag_strides((3, 5, 7), 1, "cols") == (7, 21, 1)
    assert flag_strides((3, 5, 7), 2, "rows") == (35, 7, 1)


def test_fused_extrema_backward_only_where_a_group_takes_a_whole_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The one-kernel cummax/cummin backward is taken only for contiguous lines that rows1
    (a warp per line: scan_max_bwd_rows) or rows8 in one chunk a line (a block per line:
    scan_max_bwd_rows8) scans; elsewhere nothing is enqueued and the two passes run. (With the
    ring switched off: test_max_backward_ring.)"""
    from baracuda.scan import _kernels as K

    log = _LaunchLog("sm_90")
    grid = _record_grids(log, monkeypatch)
    monkeypatch.setattr(K, "RING_MAX_BACKWARD", False)

    def fused(shape: tuple[int, ...], layout: str = "rows", itemsize: int = 4) -> str | None:
        sl = Slot(0, (shape[1], 1))
        log.calls.clear()
        v = launch_max_backward(log, None, shape, 1, reverse=False, mode=0,  # type: ignore[arg-type]
                                dy=sl, x=sl, dx=sl, flags=sl, layout=layout, itemsize=itemsize,
                                sm_count=132)  # fmt: skip
        assert [c[0] for c in log.calls] == ([] if v is None else [f"scan_{v}"])
        return v

    monkeypatch.setattr(K, "SEG_ROWS", False)
    assert chunking("rows", 70, 300, 4, 132).layout == "rows1"
    assert fused((70, 300)) == "max_bwd_rows"  # a warp per line
    for shape, itemsize in (((33, 1500), 4), ((1024, 8192), 4), ((1024, 8192), 2)):
        ch = chunking("rows", shape[0], shape[1], itemsize, 132)
        assert (ch.layout, ch.nchunks) == ("rows8", 1)
        assert fused(shape, itemsize=itemsize) == "max_bwd_rows8"  # a block per line
    assert fused((1024, 8192)) == "max_bwd_rows8" and grid[-1] == ((1024, 1, 1), 0)  # a line each
    assert fused((4096, 8192)) == "max_bwd_rows" and grid[-1] == ((512, 1, 1), 0)  # 8 a block
    assert fused((132 * 65 * 8, 64)) == "max_bwd_rows" and grid[-1] == ((132 * 64, 1, 1), 0)
    assert chunking("rows", 4, 2**20, 4, 132, lookback_rows=False).nchunks > 1
    assert fused((4, 2**20)) is None  # lines cut into chunks
    assert fused((4096, 8192), "cols") is None  # strided axis
    assert fused((0, 8)) is None  # empty
    monkeypatch.setattr(K, "FUSED_MAX_BACKWARD_BLOCKS", False)
    assert fused((1024, 8192)) is None
    assert fused((4096, 8192)) == "max_bwd_rows"
    monkeypatch.setattr(K, "FUSED_MAX_BACKWARD", False)
    assert fused((70, 300)) is None


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("itemsize", [2, 4, 8])
def test_max_backward_ring(itemsize: int, reverse: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cummax/cummin backward takes one ring launch (scan_max_bwd_ring: x as IN0, dy as
    IN1, dx as OUT, the forward's direction and mode, no flags) where x, dy and dx allow
    16-byte vectors along a contiguous axis, the rows are of one stride, at least one chunk
    long (scan_max_bwd_ring8: half a chunk) and whole vectors, and many enough to fill the
    launch; elsewhere the warp and block kernels or the two passes, as before."""
    from baracuda.scan import _kernels as K

    assert K.RING_MAX_BACKWARD_SHORT_ITEMSIZES == (2,)
    log = _LaunchLog("sm_90")
    grids = _record_grids(log, monkeypatch)
    monkeypatch.setattr(K, "_smem_room", lambda module, kernel: 1 << 30)
    monkeypatch.setattr(K, "RING_MAX_BACKWARD_SHORT_ITEMSIZES", (2, 4, 8))
    params: list[Params] = []
    real = K._params

    def spy(*a: Any, **kw: Any) -> Params:
        params.append(real(*a, **kw))
        return params[-1]

    monkeypatch.setattr(K, "_params", spy)

    def run(shape: tuple[int, int], *, dy: Slot | None = None, x: Slot | None = None,
            dx: Slot | None = None, mode: int = 2) -> str | None:  # fmt: skip
        dense = (shape[1], 1)
        log.calls.clear()
        grids.clear()
        params.clear()
        return launch_max_backward(
            log, None, shape, 1, reverse=reverse, mode=mode,  # type: ignore[arg-type]
            dy=dy or Slot(1 << 28, dense), x=x or Slot(2 << 28, dense),
            dx=dx or Slot(3 << 28, dense), flags=Slot(4 << 28, dense), layout="rows",
            itemsize=itemsize, sm_count=132,
        )  # fmt: skip

    n = K.RING_MAX_BACKWARD_CHUNK // itemsize  # rows of one chunk
    lanes = 16 // itemsize
    assert run((4096, n), mode=3) == "max_bwd_ring/264"
    assert [c[0] for c in log.calls] == ["scan_max_bwd_ring"]
    assert grids == [((264, 1, 1), K.RING_SMEM)]
    p = params[0]
    assert (p.op[K.IN0].ptr, p.op[K.IN1].ptr, p.op[K.OUT].ptr) == (2 << 28, 1 << 28, 3 << 28)
    assert not p.op[K.IN2].ptr and not p.op[K.AUX].ptr  # no flags
    assert (p.reverse, p.mode, p.vec, p.n, p.rows) == (int(reverse), 3, 1, n, 4096)
    assert run((132, 3 * n + lanes)) == "max_bwd_ring/132"  # a partial last chunk
    # rows of half a chunk to one: the ring in half chunks (RING_MAX_BACKWARD_SHORT_ITEMSIZES)
    assert run((4096, n - lanes)) == "max_bwd_ring8/264"
    assert run((4096, n // 2)) == "max_bwd_ring8/264"
    assert [c[0] for c in log.calls] == ["scan_max_bwd_ring8"]
    assert grids == [((264, 1, 1), K.RING_SMEM)]
    # and where the ring cannot take the rows
    assert "ring" not in str(run((4096, n // 2 - lanes)))  # under half a chunk
    if itemsize < 8:
        assert "ring" not in str(run((4096, n + 1), x=Slot(2 << 28, (n + 8, 1))))  # odd rows
    assert "ring" not in str(run((4096, n), dy=Slot((1 << 28) + itemsize, (n, 1))))  # misaligned
    assert "ring" not in str(run((4096, n), x=Slot(2 << 28, (2 * n, 2))))  # strided x
    assert "ring" not in str(run((64, n)))  # too few rows to fill the launch
    assert all("ring" not in c[0] for c in log.calls)
    monkeypatch.setattr(K, "RING_MAX_BACKWARD_SHORT_ITEMSIZES", ())
    assert "ring" not in str(run((4096, n // 2)))
    assert run((4096, n)) == "max_bwd_ring/264"
    monkeypatch.setattr(K, "RING_MAX_BACKWARD", False)
    assert "ring" not in str(run((4096, n)))


class _LaunchLog:
    """A stand-in for the module and the launch functions of _kernels: records each call."""

    def __init__(self, arch: str) -> None:
        self.arch = arch
        self.cooperative = False
        self.calls: list[tuple[str, object, bool]] = []
        self.resident = 2  # blocks an SM for resident_blocks
        self.resident_of: dict[str, int] = {}  # ... of the kernels named here

    def resident_blocks(self, name: str, block: int, dynamic_smem: int = 0) -> int:
        return self.resident_of.get(name, self.resident)

    def function(self, name: str, dynamic_smem: int = 0) -> str:
        return name

    def launch(self, fn: str, grid: object, block: int, smem: int, stream: object,
               args: list[object], name: str = "", *, dependent: bool = False,
               cooperative: bool = False) -> None:  # fmt: skip
        # scalars: ctypes scalars, or 8 bytes of a prepared launch (scan_zero's arguments)
        vals = tuple(int.from_bytes(bytes(a), "little") if isinstance(a, ctypes.Array)
                     and len(a) == 8 else getattr(a, "value", None) for a in args)  # fmt: skip
        self.calls.append((fn, vals, dependent))

    def memset(self, ptr: int, nbytes: int, stream: object) -> None:
        self.calls.append(("memset", (ptr, nbytes), False))


_ZEROING = [("sm_90", True, True), ("sm_80", True, False), ("sm_90", False, False)]


@pytest.mark.parametrize(("arch", "switch", "dependent"), _ZEROING)
def test_lookback_zeroing_then_dependent_launch(
    arch: str, switch: bool, dependent: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One-pass look-back launches zero the workspace first: on sm_90 with LB_DEPENDENT, with
    the op's zero kernel and the look-back kernel as its programmatic dependent; otherwise with
    a memset and a plain launch. Either way the zeroed bytes are the tile counter and words."""
    from baracuda.scan import _kernels as K

    log = _LaunchLog(arch)
    _patch(monkeypatch, "launch", log.launch)
    _patch(monkeypatch, "memset_zero", log.memset)
    monkeypatch.setattr(K, "LB_DEPENDENT", switch)
    shape, ws = (2**20, 2), 1 << 20
    x, y = Slot(1 << 30, (2, 1)), Slot(1 << 31, (2, 1))
    variant = K.launch_scan(log, "sum", None, shape, 0, reverse=False, mode=0,  # type: ignore[arg-type]
                            operands=[x, None, None, y, None], vec_slots=(0, 3), itemsize=4,
                            layout="cols", sm_count=132, states_ptr=ws)  # fmt: skip
    assert variant.startswith("lb")
    ch = chunking("cols", 2, 2**20, 4, 132)
    nbytes = K.LB_HEADER + 8 * ch.nodes * ch.width  # the packed words of a one-float state
    first, second = log.calls
    if dependent:
        assert first == ("scan_zero", (ws, nbytes // 4), False)
    else:
        assert first == ("memset", (ws, nbytes), False)
    assert second[0] == f"scan_sum_{variant.split('x')[0]}" and second[2] == dependent


def test_f32_cumprod_states_are_doubles(monkeypatch: pytest.MonkeyPatch) -> None:
    """cumprod accumulates f32 in double (_DOUBLE_F32_OPS): its states are 8 bytes, one
    double, so its look-back nodes are one word each, as f64's are and one float's (the zeroed
    words, not a flag a node); the other ops' f32 states, and every op's 2-byte ones, stay
    one float."""
    from baracuda.scan import _kernels as K

    assert [K.state_size("prod", z) for z in (2, 4, 8)] == [4, 8, 8]
    assert [K.state_size(op, 4) for op in ("sum", "lse", "max", "prod_bwd")] == [4, 4, 4, 4]
    log = _LaunchLog("sm_90")
    _patch(monkeypatch, "launch", log.launch)
    _patch(monkeypatch, "memset_zero", log.memset)
    shape, ws = (2**20, 2), 1 << 20
    x, y = Slot(1 << 30, (2, 1)), Slot(1 << 31, (2, 1))

    def run(op: str, itemsize: int) -> str:
        log.calls.clear()
        return K.launch_scan(log, op, None, shape, 0, reverse=False, mode=0,  # type: ignore[arg-type]
                             operands=[x, None, None, y, None], vec_slots=(0, 3),
                             itemsize=itemsize, layout="cols", sm_count=132,
                             states_ptr=ws)  # fmt: skip

    # the programs compile with the accumulator the host sizes states by: one list decides both
    from baracuda._cuda.compiler import _options

    for group, source in K.SCAN_SOURCES.items():
        for element in source.elements:
            doubles = all(K.state_size(op, element.itemsize) == 8 for op in K._group_ops(group))
            acc = dict(_options(source, element, "sm_90").define_macro)["BC_ACC"]
            assert acc == ("double" if doubles else "float"), (group, element, acc)
    assert K.SCAN_SOURCES["prod"].double_acc == (ElementKind.F32,)
    assert K.SCAN_SOURCES["prod_bwd"].double_acc == ()
    # ... and the plans' guarantee names it (ScanPlanBase.sku passes its program's source)
    from baracuda._plan import deterministic_precision

    f32, f64 = ElementKind.F32, ElementKind.F64
    assert deterministic_precision(f32, K.SCAN_SOURCES["prod"]).accumulator is f64
    assert deterministic_precision(f32, K.SCAN_SOURCES["sum"]).accumulator is f32
    assert deterministic_precision(ElementKind.BF16, K.SCAN_SOURCES["prod"]).accumulator is f32
    assert run("sum", 4).startswith("lb") and run("prod", 2).startswith("lb")
    # LOOKBACK_FLAGGED is off: one-word states take look-back tiles, other states three passes
    assert run("max", 4).startswith("colsx")
    for op, itemsize in (("prod", 4), ("prod", 8), ("sum", 8), ("lse", 8)):
        variant = run(op, itemsize)
        assert variant.startswith("lbstage" if itemsize == 4 else "lbcols"), (op, variant)
        ch = chunking("cols", 2, 2**20, itemsize, 132, True)
        zero = log.calls[0]
        assert zero[:2] == ("scan_zero", (ws, (K.LB_HEADER + 8 * ch.nodes * ch.width) // 4))
    # f64 takes them for a few lines only (LB_F64_MAX_LINES); the f32 cumprod for any (run
    # reads shape, x and y when called)
    shape, x, y = (2**16, 16), Slot(1 << 30, (16, 1)), Slot(1 << 31, (16, 1))
    assert run("sum", 8).startswith("colsx") and run("lse", 8).startswith("colsx")
    assert run("prod", 4).startswith("lbstage")
    # 32-line tiles (64 lines: not one run, never staged): the f32 cumsum's wide (32 positions
    # a thread), the f32 cumprod's narrow (16: its double states spilled wide)
    shape, x, y = (2**16, 64), Slot(1 << 30, (64, 1)), Slot(1 << 31, (64, 1))
    for op, wide in (("sum", True), ("prod", False)):
        ch = chunking("cols", 64, 2**16, 4, 132, True, wide=wide)
        assert ch.chunk_len == K.BLOCK // 32 * (32 if wide else 16)
        assert run(op, 4) == f"lbcolsx{ch.tiles}", op


@pytest.mark.parametrize(("layout", "shape", "axis"), [("cols", (4096, 64), 0),
                                                     ("rows", (64, 8192), 1)])  # fmt: skip
def test_chunked_lse_backward_takes_the_states_of_its_op(
    layout: str, shape: tuple[int, int], axis: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without look-back, lines cut into chunks take three passes. The logcumsumexp backward
    runs one op along contiguous axes and another along strided ones (COLS_STATES_OPS), so the
    chunk states between the passes are those of the strided op (cstates) after a cols pass."""
    from baracuda.scan import _kernels as K

    log = _LaunchLog("sm_90")
    _patch(monkeypatch, "launch", log.launch)
    monkeypatch.setattr(K, "LOOKBACK", False)
    monkeypatch.setattr(K, "RING_BACKWARD", ())
    st = (shape[1], 1)
    dy, x, y, dx = (Slot(a << 30, st) for a in (1, 2, 3, 4))
    variant = K.launch_scan(log, "lse_bwd", None, shape, axis, reverse=True, mode=0,  # type: ignore[arg-type]
                            operands=[dy, x, y, dx, None], vec_slots=(0, 1, 2, 3), itemsize=2,
                            layout=layout, sm_count=132, states_ptr=1 << 20)  # fmt: skip
    kind = "cols" if layout == "cols" else "rows8"
    assert variant.startswith(f"{kind}x")
    states = "cstates" if layout == "cols" else "states"
    names = [c[0] for c in log.calls]
    assert names[0] == names[2] == f"scan_lse_bwd_{kind}"
    assert names[1] in (f"scan_lse_bwd_{states}1", f"scan_lse_bwd_{states}8")


class _StreamModule(_FakeModule):
    """What launch_scan reads of a LoadedModule for few long rows: an H100-like device of
    ``arch``, the stream program loaded as itself."""

    element = ElementKind.F32

    def __init__(self, arch: str) -> None:
        super().__init__(2)
        self.arch = arch

    def function(self, name: str, dynamic_smem: int = 0) -> str:
        return name


def _stream_device(arch: str, monkeypatch: pytest.MonkeyPatch) -> tuple[_StreamModule, list[str]]:
    """An H100-like device of ``arch`` whose programs all load as one _StreamModule, and the
    groups of the programs loaded from then on."""
    from baracuda._cuda.device import DeviceInfo
    from baracuda.scan import _kernels as K

    info = DeviceInfo(0, "H100", arch, 132, 232448, 50 * 2**20, True)
    monkeypatch.setattr(K, "device_info", lambda device_id: info)
    mod = _StreamModule(arch)
    loaded: list[str] = []

    def load(source: KernelSource, element: ElementKind, device_id: int) -> _StreamModule:
        loaded.append(source.group)
        return mod

    monkeypatch.setattr(K, "load_module", load)
    return mod, loaded


@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_stream_lines_launch(arch: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """With STREAM_LINES on, launch_scan sends 2 or 4 interleaved lines (n, G) along dim 0 of
    cumsum/cumprod in f32 on sm_90 to scan_<op>_stream<G> (rev for reverse): one row of n G
    elements, G words a tile and a wave (waves of STREAM_WAVE tiles) in the workspace; 2-byte
    types only where the cooperative kernel over lines would take more than one round or
    cannot take them; not on sm_80, without cooperative launches, with STREAM_LINES off, for
    misaligned data, partial vectors or positions wider than 16 bytes."""
    from baracuda.scan import _kernels as K

    mod, loaded = _stream_device(arch, monkeypatch)
    calls: list[tuple[str, tuple[int, int, int], int, object, bool]] = []

    def spy(fn: str, grid: tuple[int, int, int], block: int, smem: int, st: object,
            args: list[object], name: str = "", *, dependent: bool = False,
            cooperative: bool = False) -> None:  # fmt: skip
        calls.append((fn, grid, block, args[0] if args else None, cooperative))

    _patch(monkeypatch, "launch", spy)
    _patch(monkeypatch, "memset_zero", lambda *a: None)
    ws = 1 << 20

    def run(op: str, n: int, g: int, itemsize: int, reverse: bool = False,
            lines: object = None, at: int = 0) -> str:  # fmt: skip
        calls.clear()
        x, y = Slot((1 << 30) + at, (g, 1)), Slot(1 << 31, (g, 1))
        return K.launch_scan(mod, op, None, (n, g), 0, reverse=reverse, mode=0,  # type: ignore[arg-type]
                             operands=[x, None, None, y, None], vec_slots=(0, 3),
                             itemsize=itemsize, layout="cols", sm_count=132,
                             states_ptr=ws, lines=lines)  # type: ignore[arg-type]  # fmt: skip

    sm90 = arch == "sm_90"
    cases = (("sum", 2**20, 2, False), ("sum", 2**20, 2, True), ("sum", 2**19 + 4, 4, False),
             ("sum", 3 * 2**18, 4, True))  # fmt: skip
    for op, n, g, reverse in cases:
        variant = run(op, n, g, 4, reverse)
        if not sm90:
            assert not variant.startswith("stream"), variant
            continue
        tiles = -(-n * g * 4 // 32768)
        waves = -(-tiles // K.STREAM_WAVE)
        assert variant == f"stream{g}x{tiles}"
        assert loaded[-1] == f"{op}_stream"
        (fn, grid, block, params, coop), = calls
        assert fn == f"scan_{op}_stream{g}{'rev' if reverse else ''}"
        assert (grid, block, coop) == ((min(tiles, 264), 1, 1), 352, True)
        p = params
        assert (p.rows, p.n, p.nchunks, p.lb) == (1, n * g, tiles, ws)  # type: ignore[attr-defined]
        assert (p.op[K.IN0].ptr, p.op[K.OUT].ptr) == (1 << 30, 1 << 31)  # type: ignore[attr-defined]
        assert K.state_bytes((n, g), 0, 4, 132) >= 16 + 8 * g * (tiles + waves)
    if not sm90:
        return
    # not: misaligned data, positions wider than 16 bytes, partial vectors, lse; the f32
    # cumprod does (its states are doubles: state_size), and its 2-byte lines
    assert not run("sum", 2**20, 2, 4, at=8).startswith("stream")
    assert run("prod", 2**19 + 4, 4, 4).startswith("stream4")
    assert run("prod", 2**20 + 8, 2, 2).startswith("stream2")
    assert not run("sum", 2**20, 4, 8).startswith("stream")
    assert not run("sum", 2**20 + 1, 2, 4).startswith("stream")
    assert not run("lse", 2**20, 2, 4).startswith("stream")
    monkeypatch.setattr(K, "STREAM_LINES", False)
    assert not run("sum", 2**20, 2, 4).startswith("stream")
    monkeypatch.setattr(K, "STREAM_LINES", True)
    mod.cooperative = False  # type: ignore[misc]
    assert not run("sum", 2**20, 2, 4).startswith("stream")
    mod.cooperative = True  # type: ignore[misc]
    # 2-byte types: not where the cooperative kernel over lines takes them in one round,
    # but where no program over lines is loaded (lines_module: the run not whole 512-byte rows)
    assert run("sum", 2**20, 2, 2, lines=mod).startswith("coop")
    assert run("sum", 2**20 + 8, 2, 2).startswith("stream2")


@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_stream_rows_launch(arch: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """With STREAM_ROWS on, launch_scan sends few long contiguous rows of cumsum/cumprod
    below f64 on sm_90 to scan_<op>_stream (streamrev for reverse) from the op's stream
    program: one cooperative launch, which zeroes its own workspace (nothing before it),
    tiles of 32 KiB, two blocks an SM (fewer where fewer are resident); not on sm_80, not
    without cooperative launches, not for rows of partial 16-byte vectors, f64,
    logcumsumexp or with STREAM_ROWS off; 2-byte types by default only where the cooperative
    kernel would take rounds; a misaligned workspace is refused."""
    from baracuda.scan import _kernels as K

    monkeypatch.setattr(K, "STREAM_ROWS", True)
    monkeypatch.setattr(K, "STREAM_ITEMSIZES", (2, 4))
    mod, loaded = _stream_device(arch, monkeypatch)
    calls: list[tuple[str, tuple[int, int, int], int, object, bool, bool]] = []

    def spy(fn: str, grid: tuple[int, int, int], block: int, smem: int, st: object,
            args: list[object], name: str = "", *, dependent: bool = False,
            cooperative: bool = False) -> None:  # fmt: skip
        calls.append((fn, grid, block, args[0] if args else None, dependent, cooperative))

    zeroed: list[tuple[int, int]] = []

    def zero_step(self: Step, stream: object, ptrs: object, base: int) -> None:
        zeroed.append((base, int.from_bytes(self.args[1], "little")))

    _patch(monkeypatch, "launch", spy)
    monkeypatch.setattr(Step, "enqueue", zero_step)
    ws = 1 << 20

    def run(op: str, n: int, itemsize: int, reverse: bool = False) -> str:
        calls.clear()
        zeroed.clear()
        x, y = Slot(1 << 30, (n, 1)), Slot(1 << 31, (n, 1))
        return K.launch_scan(mod, op, None, (2, n), 1, reverse=reverse, mode=0,  # type: ignore[arg-type]
                             operands=[x, None, None, y, None], vec_slots=(0, 3),
                             itemsize=itemsize, layout="rows", sm_count=132,
                             states_ptr=ws)  # fmt: skip

    sm90 = arch == "sm_90"
    for op, n, itemsize, reverse in (("sum", 2**23, 4, False), ("sum", 2**23, 4, True),
                                     ("prod", 2**20 + 8, 2, False),
                                     ("prod", 2**20, 4, True)):  # the f32 cumprod: double words
        variant = run(op, n, itemsize, reverse)
        if not sm90:
            assert not variant.startswith("stream"), variant
            continue
        tpr = -(-n * itemsize // 32768)
        waves = -(-tpr // 256)
        assert variant == f"streamx{2 * tpr}"
        assert loaded[-1] == f"{op}_stream"
        (fn, grid, block, params, dependent, coop), = calls
        assert fn == f"scan_{op}_{'streamrev' if reverse else 'stream'}"
        assert (grid, block, dependent, coop) == ((min(2 * tpr, 264), 1, 1), 352, False, True)
        p = params
        assert (p.rows, p.n, p.nchunks, p.lb) == (2, n, tpr, ws)  # type: ignore[attr-defined]
        assert zeroed == []  # the kernel zeroes its words
        # the plan's workspace holds it
        assert K.state_bytes((2, n), 1, itemsize, 132) >= 16 + 8 * 2 * (tpr + waves)
    for op, n, itemsize in (("sum", 2**20 + 1, 4), ("sum", 2**20, 8), ("lse", 2**20, 4),
                            ("prod", 2**20, 8)):  # fmt: skip
        assert not run(op, n, itemsize).startswith("stream")
    if sm90:
        mod.resident = 1  # one block an SM resident: a grid of one an SM
        assert run("sum", 2**23, 4) == "streamx2048" and calls[0][1] == (132, 1, 1)
        mod.resident = 2
        with pytest.raises(MisalignedOperand, match="workspace"):
            K.launch_scan(mod, "sum", None, (2, 2**23), 1, reverse=False, mode=0,  # type: ignore[arg-type]
                          operands=[Slot(1 << 30, (2**23, 1)), None, None,
                                    Slot(1 << 31, (2**23, 1)), None],
                          vec_slots=(0, 3), itemsize=4, layout="rows", sm_count=132,
                          states_ptr=ws + 8)  # fmt: skip
        mod.cooperative = False  # type: ignore[misc]
        assert not run("sum", 2**23, 4).startswith("stream")
        mod.cooperative = True  # type: ignore[misc]
    # the plan's workspace holds its words only where rows would be cut into chunks
    monkeypatch.setattr(K, "_stream_bytes", lambda rows, n, itemsize, lines=1: 1 << 40)
    assert K.state_bytes((2, 2**23), 1, 4, 132) == 1 << 40
    for shape in ((65536, 1024), (2, 2**23 + 1), (600, 2**16)):
        assert K.state_bytes(shape, 1, 4, 132) < 1 << 40, shape
    monkeypatch.setattr(K, "STREAM_ITEMSIZES", (4,))  # the default: 4-byte types
    assert run("prod", 2**20 + 8, 2).startswith("stream") is False
    assert run("sum", 2**23, 4).startswith("stream") == sm90
    # 2-byte types (STREAM_ROUNDS_ITEMSIZES) only where the cooperative kernel would take
    # more than one round: 2 rows of 2^23 fit one round, 2 rows of 2^25 do not
    assert K.STREAM_ROUNDS_ITEMSIZES == (2,)
    one = K.coop_split(mod, "sum", 2, 2**23, 2)  # type: ignore[arg-type]
    more = K.coop_split(mod, "sum", 2, 2**25, 2)  # type: ignore[arg-type]
    assert one is not None and one.rounds == 1 and more is not None and more.rounds > 1
    # not where the cooperative kernel cannot take them at all (coop_split None: too many rows
    # for 2 pieces each): the kernels before, unmeasured against the stream kernel there
    with monkeypatch.context() as m:
        m.setattr(K, "coop_split", lambda *a, **kw: None)
        assert not run("sum", 2**25, 2).startswith("stream")
        assert run("sum", 2**25, 4).startswith("stream") == sm90
    assert run("sum", 2**23, 2).startswith("coop")
    assert run("sum", 2**25, 2) == ("streamx4096" if sm90 else "coopx132r2")  # 32 KiB tiles
    assert run("sum", 2**25, 2, reverse=True).startswith("stream") == sm90
    monkeypatch.setattr(K, "STREAM_ROUNDS_ITEMSIZES", ())
    assert run("sum", 2**25, 2).startswith("coop")
    monkeypatch.setattr(K, "STREAM_ROWS", False)
    assert not run("sum", 2**23, 4).startswith("stream")


def test_wide_lookback_tiles_for_32_lines() -> None:
    """Strided cumsum/cumprod/logcumsumexp tiles of 32 lines take 32 positions per thread
    for the itemsizes of LBCOLS_WIDE (fewer, longer tiles), 16 otherwise; f64 takes 8."""
    from baracuda.scan import _kernels as K

    for itemsize in (2, 4, 8):
        narrow = chunking("cols", 8192, 4096, itemsize, 132)
        wide = chunking("cols", 8192, 4096, itemsize, 132, wide=True)
        assert narrow.layout == wide.layout == "lbcols" and narrow.width == 32
        per = 8 if itemsize == 8 else 16
        assert narrow.chunk_len == 8 * per
        assert wide.chunk_len == (8 * 32 if itemsize in K.LBCOLS_WIDE else narrow.chunk_len)
        two = chunking("cols", 2, 2**20, itemsize, 132, wide=True)
        assert two.width == 2 and two.chunk_len == 128 * per  # 2 lines: never wide


def test_line_pairs_need_adjacent_aligned_pairs() -> None:
    """2-byte lbcols tiles take line pairs only where every pair 2k, 2k + 1 is adjacent and
    4-byte aligned in IN0 and OUT, with at least 32 lines (scan.cu, scan_lb_pairs)."""
    from baracuda.scan._kernels import IN0, OUT, Slot, _pairable

    def ok(shape: tuple[int, ...], axis: int, strides: tuple[int, ...] | None = None,
           ptr: int = 256, itemsize: int = 2, out_strides: tuple[int, ...] | None = None,
           ) -> bool:  # fmt: skip
        st = strides or tuple(int(np.prod(shape[i + 1:])) for i in range(len(shape)))
        ops: list[Slot | None] = [None] * 5
        ops[IN0], ops[OUT] = Slot(ptr, st), Slot(256, out_strides or st)
        return _pairable(shape, axis, ops, itemsize)

    assert ok((4096, 8192), 0)
    assert ok((5, 777, 40), 1)  # outer (5, 40): pairs never straddle the outer dims
    assert ok((300, 64), 0) and ok((3000, 34), 0)
    assert not ok((4096, 8192), 0, itemsize=4)  # 2-byte types only
    assert not ok((777, 33), 0)  # an odd line count
    assert not ok((1000, 30), 0)  # fewer than 32 lines
    assert not ok((600, 96), 0, strides=(192, 2))  # lines 2 apart
    assert not ok((600, 96), 0, ptr=258)  # a misaligned start
    assert not ok((600, 96), 0, strides=(97, 1))  # odd axis stride: pairs misaligned
    assert not ok((600, 96), 0, out_strides=(1, 600))  # the output transposed
    assert not ok((4096, 8192), 1)  # a contiguous axis has no line pairs (lines 8192 apart)
    assert not ok((0, 64), 0)


def test_functional_cpu_path() -> None:
    x = np.random.default_rng(0).standard_normal((5, 6)).astype(np.float32)
    np.testing.assert_allclose(api.cumsum(x, 0), np.cumsum(x, 0), rtol=1e-6)
    np.testing.assert_allclose(api.cumsum(x, 1, reverse=True),
                               np.cumsum(x[:, ::-1], 1)[:, ::-1], rtol=1e-5)  # fmt: skip
    v, i = api.cummax(x, 1)
    np.testing.assert_array_equal(v, np.maximum.accumulate(x, 1))
    assert i.dtype == np.int64
    v, i = api.cummin(x, 0, tie_break="last")
    np.testing.assert_array_equal(v, np.minimum.accumulate(x, 0))
    np.testing.assert_allclose(api.cumprod(x, 1), np.cumprod(x, 1), rtol=1e-5)
    np.testing.assert_allclose(api.logcumsumexp(x, 1),
                               np.logaddexp.accumulate(x, 1), rtol=1e-5)  # fmt: skip
    dx = api.scan_backward("cumsum", x, axis=1)
    np.testing.assert_allclose(dx, np.cumsum(x[:, ::-1], 1)[:, ::-1], rtol=1e-5)
    with pytest.raises(InvalidProblem, match="kind"):
        api.scan_backward("cumfoo", x)
    with pytest.raises(InvalidProblem, match="tie_break"):
        api.cummax(x, tie_break="middle")
    with pytest.raises(InvalidProblem, match="saved"):
        api.scan_backward(ScanKind.CUMPROD, x, x=x)
    with pytest.raises(InvalidProblem, match="axis"):
        api.cumsum(x, axis=5)


def test_tie_break_enum_accepted() -> None:
    x = np.array([[1.0, 1.0]])
    _, i = api.cummax(x, tie_break=TieBreak.LAST)
    np.testing.assert_array_equal(i, [[0, 1]])


# every kernel scan.cu defines: each op on every layout and over short strided axes, the
# pipelined, cooperative and staged kernels of PIPE_OPS, the pipelined kernel of
# PIPE_AUX_OPS, the segmented tiles of SEG_OPS, the line pairs of PAIR_OPS, the strips of
# STRIP_STAGED (and the narrow and 6-stage strips of STRIP_NARROW_ENTRY_OPS and
# STRIP_MANY_ENTRY_OPS), the rings of RING_OPS, the fused cummax backward;
# and the look-back workspace's zeroing, which every program holds
_SHARED = "scan_zero"
_LAYOUTS = ("rows1", "rows8", "cols", "states1", "states8", "lbrows", "lbcols")
_PIPE_KINDS = ("pipe1", "coop", "cooprev", "lbstage")
_KINDS = (*_LAYOUTS, *_PIPE_KINDS, "pipe1w", "cstates1", "cstates8", "seg", "seg1", "lbpair",
          "strip", "strip512", "strip_narrow", "strip6", "ring", "short", "short1",
          "shortx2", "shortx4", "short1x4", "short1x8", "short1x8b3", "short1l",
          "short1lw", *ROWREG_KINDS)  # fmt: skip
_ALL_ENTRIES = (
    {f"scan_{op}_{k}" for op in OPS for k in (*_LAYOUTS, "short", "short1")}
    | {f"scan_{op}_{k}" for k, ops in SHORT_MANY_ENTRY_OPS.items() for op in ops}
    | {f"scan_{op}_{k}" for op in PIPE_OPS for k in _PIPE_KINDS}
    | {f"scan_{op}_{k}" for op in PIPE_AUX_OPS for k in ("pipe1", "pipe1w")}
    | {f"scan_{op}_{k}" for op in COLS_STATES_OPS for k in ("cstates1", "cstates8")}
    | {f"scan_{op}_seg" for op in SEG_OPS}
    | {f"scan_{op}_seg1" for op in SEG1_OPS}
    | {f"scan_{op}_lbpair" for op in PAIR_OPS}
    | {f"scan_{op}_strip" for op in STRIP_STAGED}
    | {f"scan_{op}_strip512" for op in STRIP_512_ENTRY_OPS}
    | {f"scan_{op}_strip_narrow" for op in STRIP_NARROW_ENTRY_OPS}
    | {f"scan_{op}_strip6" for op in STRIP_MANY_ENTRY_OPS}
    | {f"scan_{op}_ring" for op in RING_OPS}
    | {f"scan_{op}_{k}" for op in ROWREG_OPS
       for k in (ROWREG_MAX_KINDS if op == "max" else ROWREG_KINDS)}
    | {"scan_max_bwd_rows", "scan_max_bwd_rows8", "scan_max_bwd_ring", "scan_max_bwd_ring8",
       _SHARED}
    | {f"scan_{op}_{k}" for op in LINES_OPS for k in LINES_KINDS}
    | {f"scan_{op}_{k}" for op in STREAM_OPS for k in STREAM_KINDS}
    | {f"scan_{op}_{k}" for op in ROUNDS_OPS for k in ROUNDS_KINDS}
)  # fmt: skip


def test_scan_programs_hold_every_kernel_once() -> None:
    seen = [e for src in SCAN_SOURCES.values() for e in src.entries if e != _SHARED]
    assert len(seen) == len(set(seen))
    assert set(seen) | {_SHARED} == _ALL_ENTRIES
    assert all(_SHARED in src.entries for src in SCAN_SOURCES.values())
    assert sorted(op for ops in SCAN_GROUPS.values() for op in ops) == sorted(OPS)


# what each plan launches (scan.py's _FORWARD_OP, scan_backward.py's _launch)
_FORWARD_OPS = {ScanKind.CUMSUM: ("sum",), ScanKind.CUMPROD: ("prod",), ScanKind.CUMMAX: ("max",),
                ScanKind.CUMMIN: ("max",), ScanKind.LOGCUMSUMEXP: ("lse",)}  # fmt: skip
_BACKWARD_OPS = {ScanKind.CUMSUM: ("sum",), ScanKind.CUMPROD: ("prod_bwd",),
                 ScanKind.CUMMAX: ("maxflag", "seg_bwd", "max_bwd_rows", "max_bwd_rows8",
                                   "max_bwd_strip"),
                 ScanKind.CUMMIN: ("maxflag", "seg_bwd", "max_bwd_rows", "max_bwd_rows8",
                                   "max_bwd_strip"),
                 ScanKind.LOGCUMSUMEXP: ("lse_bwd",)}  # fmt: skip


@pytest.mark.parametrize("kind", list(ScanKind), ids=lambda k: k.value)
def test_each_plan_loads_the_program_of_its_kernels(kind: ScanKind) -> None:
    for plan, ops in ((ScanPlan, _FORWARD_OPS), (ScanBackwardPlan, _BACKWARD_OPS)):
        entries = SCAN_SOURCES[plan.GROUPS[kind]].entries
        for op in ops[kind]:
            mine = _ALL_ENTRIES & ({f"scan_{op}"} | {f"scan_{op}_{k}" for k in _KINDS})
            assert mine and mine <= set(entries), (plan.NAME, kind, op)
        assert _SHARED in entries
        group = plan.GROUPS[kind]
        if group in LINES_GROUPS:  # its kernels over interleaved lines: a program of their own
            assert group in ops[kind]  # the group of an op of LINES_OPS holds that op alone
            lines = SCAN_SOURCES[LINES_GROUPS[group]].entries
            assert set(lines) == {_SHARED} | {f"scan_{group}_{k}" for k in LINES_KINDS}
        if group in ROUNDS_GROUPS:  # its kernels in rounds: a program of their own
            assert group in ops[kind]
            rounds = SCAN_SOURCES[ROUNDS_GROUPS[group]].entries
            assert set(rounds) == {_SHARED} | {f"scan_{group}_{k}" for k in ROUNDS_KINDS}
        if group in STREAM_GROUPS:  # its few-long-rows kernels: a program of their own
            assert group in ops[kind]
            streamed = SCAN_SOURCES[STREAM_GROUPS[group]].entries
            assert set(streamed) == {_SHARED} | {f"scan_{group}_{k}" for k in STREAM_KINDS}


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("element", list(ElementKind), ids=lambda e: e.value)
def test_every_scan_program_compiles_with_its_own_kernels(arch: str, element: ElementKind) -> None:
    for group, src in SCAN_SOURCES.items():
        cubin = compile_cubin(src, element, arch)
        for entry in _ALL_ENTRIES:
            inside = kernel_name(entry, element).encode() in cubin
            assert inside == (entry in src.entries), (group, entry)


def test_scan_file_without_a_group_does_not_build(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BARACUDA_DISABLE_CACHE", "1")
    whole = KernelSource("scan", "scan.cu", ("scan_sum_rows1",))
    with pytest.raises(CompileError) as info:
        compile_cubin(whole, F32, "sm_90")
    assert "BC_SCAN_GROUP_" in info.value.log
    both = (("BC_SCAN_GROUP_SUM", "1"), ("BC_SCAN_GROUP_MAX", "1"))
    two = KernelSource("scan", "scan.cu", ("scan_sum_rows1",), group="two", defines=both)
    with pytest.raises(CompileError):
        compile_cubin(two, F32, "sm_90")




def _dense(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d
    return tuple(reversed(strides))


def _record_grids(log: _LaunchLog, monkeypatch: pytest.MonkeyPatch) -> list[tuple[object, int]]:
    """Launches go to ``log``; returns the list their (grid, shared memory) are appended to."""

    grids: list[tuple[object, int]] = []

    def launch(fn: str, grid: object, block: int, smem: int, *a: object, **kw: object) -> None:
        grids.append((grid, smem))
        log.launch(fn, grid, block, smem, *a, **kw)  # type: ignore[arg-type]

    _patch(monkeypatch, "launch", launch)
    return grids


def _launch_big(log: _LaunchLog, op: str, axis: int, *, reverse: bool = False,
                x: Slot | None = None, itemsize: int = 4) -> str:  # fmt: skip
    """One launch_scan of a 4096 x 8192 tensor along ``axis`` on 132 SMs (x dense at 1 GiB
    unless given, y dense at 2 GiB); returns the variant."""
    from baracuda.scan import _kernels as K

    x = x or Slot(1 << 30, (8192, 1))
    y = Slot(1 << 31, (8192, 1))
    return K.launch_scan(log, op, None, (4096, 8192), axis, reverse=reverse, mode=0,  # type: ignore[arg-type]
                         operands=[x, None, None, y, None], vec_slots=(0, 3), itemsize=itemsize,
                         layout="cols" if axis == 0 else "rows", sm_count=132,
                         states_ptr=1 << 20)  # fmt: skip


# the blocks an SM that the driver gives f32 cummax's pipe1 (80 registers) and pipe1w (64)
_PIPE_MAX_F32 = {"scan_max_pipe1": 3, "scan_max_pipe1w": 4}


@pytest.mark.parametrize("reverse", [False, True])
def test_cummax_pipelined_rows(reverse: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """cummax/cummin rows that a warp takes one each run on pipe1 where x, y and the int64
    indices are contiguous with every row on 16 bytes (or there are no indices); misaligned or
    strided indices, and the backward's winner flags (mode bit 2), keep rows1. (Rows of 32
    KiB take the registers: ROWREG off here, test_rows_in_registers_entry.)"""
    from baracuda.scan import _kernels as K

    monkeypatch.setattr(K, "ROWREG", False)

    def launch(idx: Slot | None, mode: int = 0) -> str:
        log = _LaunchLog("sm_90")
        log.resident_of = dict(_PIPE_MAX_F32)
        _record_grids(log, monkeypatch)
        variant = K.launch_scan(log, "max", None, (4096, 8192), 1, reverse=reverse, mode=mode,  # type: ignore[arg-type]
                                operands=[Slot(1 << 30, (8192, 1)), None, None,
                                          Slot(1 << 31, (8192, 1)), idx],
                                vec_slots=(0, 3), itemsize=4, layout="rows", sm_count=132,
                                states_ptr=0)  # fmt: skip
        assert [c[0] for c in log.calls] == [f"scan_max_{variant}"], log.calls
        return variant

    # 4096 rows on 132 SMs: one wave of 4 blocks an SM, not of 3 (PIPE_MAX_WAVE)
    assert launch(Slot(1 << 32, (8192, 1))) == "pipe1w"
    assert launch(None) == "pipe1w"
    assert launch(Slot(1 << 32, (8194, 1))) == "pipe1w"  # padded rows, each on 16 bytes
    monkeypatch.setattr(K, "PIPE_MAX_WAVE", False)
    assert launch(Slot(1 << 32, (8192, 1))) == "pipe1"
    assert launch(None) == "pipe1"
    assert launch(Slot((1 << 32) + 8, (8192, 1))) == "rows1"  # misaligned by one index
    assert launch(Slot(1 << 32, (8193, 1))) == "rows1"  # odd rows: every other one misaligned
    assert launch(Slot(1 << 32, (1, 4096))) == "rows1"  # strided along the axis
    assert launch(Slot(1 << 32, (8192, 1)), mode=4) == "rows1"  # winner flags
    assert K._pipe_aux((2, 2**31), 1, None, 0) is False  # int indices: rows below 2^31


def test_cummax_rows_in_one_wave(monkeypatch: pytest.MonkeyPatch) -> None:
    """f32 cummax rows on pipe1 take pipe1w (4 blocks an SM) exactly where one wave of 32 warps
    an SM holds them and one of 24 does not (the driver's blocks an SM); other types and row
    counts keep pipe1."""
    from baracuda.scan import _kernels as K

    def launch(rows: int, itemsize: int = 4, sm_count: int = 132,
               resident: dict[str, int] = _PIPE_MAX_F32) -> str:  # fmt: skip
        log = _LaunchLog("sm_90")
        log.resident_of = dict(resident)
        _record_grids(log, monkeypatch)
        n = 1024
        variant = K.launch_scan(log, "max", None, (rows, n), 1, reverse=False, mode=0,  # type: ignore[arg-type]
                                operands=[Slot(1 << 30, (n, 1)), None, None,
                                          Slot(1 << 36, (n, 1)), Slot(1 << 37, (n, 1))],
                                vec_slots=(0, 3), itemsize=itemsize, layout="rows",
                                sm_count=sm_count, states_ptr=0)  # fmt: skip
        assert [c[0] for c in log.calls] == [f"scan_max_{variant}"], log.calls
        return variant

    assert [launch(r) for r in (24 * 132, 24 * 132 + 1, 32 * 132, 32 * 132 + 1)] == [
        "pipe1", "pipe1w", "pipe1w", "pipe1"]
    assert launch(3000, sm_count=100) == "pipe1w"  # 2400 < 3000 <= 3200
    assert launch(4096, itemsize=2) == "pipe1" and launch(4096, itemsize=8) == "pipe1"
    # the waves are the driver's: where pipe1w fits no more blocks than pipe1, never pipe1w
    same = {"scan_max_pipe1": 3, "scan_max_pipe1w": 3}
    assert [launch(r, resident=same) for r in (3000, 4096, 5000)] == ["pipe1"] * 3
    monkeypatch.setattr(K, "PIPE_MAX_WAVE", False)
    assert launch(4096) == "pipe1"


@pytest.mark.parametrize("resident", [2, 3, 4])
def test_segmented_launch(resident: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Segmented tiles are one launch of blocks of 8 warps, SEG_WARPS_PER_SM warps an SM or as
    many as fit (the backward's three-input kernels hold fewer), each warp a stretch of whole
    tiles; the cummax/cummin backward takes two of them (winner flags, then the segmented
    sums) where both passes may, and the fused warp-per-row kernel otherwise."""
    from baracuda.scan import _kernels as K

    log = _LaunchLog("sm_90")
    log.resident = resident
    grids = _record_grids(log, monkeypatch)
    shape, st = (2**20, 16), (16, 1)
    dy, x, y, dx = (Slot(k << 30, st) for k in (1, 2, 3, 4))
    variant = K.launch_scan(log, "prod_bwd", None, shape, 1, reverse=True, mode=0,  # type: ignore[arg-type]
                            operands=[dy, x, y, dx, None], vec_slots=(0, 1, 2, 3), itemsize=4,
                            layout="rows", sm_count=132, states_ptr=0)  # fmt: skip
    tiles = 2**24 // 256  # 1 KiB tiles of f32
    per_sm = min(K.SEG_WARPS_PER_SM, 8 * resident)
    per = -(-tiles // (132 * per_sm))
    warps = -(-tiles // per)
    assert variant == f"seg{warps}x{per}"
    assert log.calls[-1][0] == "scan_prod_bwd_seg"
    assert grids[-1] == ((-(-warps // 8), 1, 1), 0)
    # the cummax backward: flags and segmented sums on segmented tiles, else fused
    flags = Slot(5 << 30, K.flag_strides(shape, 1, "rows"))
    args = dict(reverse=False, mode=0, dy=dy, x=x, dx=dx, flags=flags, layout="rows",
                itemsize=4, sm_count=132)  # fmt: skip
    assert K.launch_max_backward(log, None, shape, 1, **args) is None  # type: ignore[arg-type]
    odd = Slot((2 << 30) + 4, st)  # x misaligned: the flags' pass would not take seg
    assert K.launch_max_backward(log, None, shape, 1, **{**args, "x": odd}) == "max_bwd_rows"  # type: ignore[arg-type]



@pytest.mark.parametrize("op", ["sum", "max", "lse", "prod", "prod_bwd"])
@pytest.mark.parametrize("itemsize", [2, 4, 8])
def test_segmented_one_vector_launch(op: str, itemsize: int,
                                     monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Runs of SEG1_OPS whose 512-byte tiles a wave of warps holds, one each, take
    scan_<op>_seg1 (one vector a lane; 3 blocks of 8 warps an SM); larger runs, the
    backward's ops and SEG_ONE_VECTOR off take scan_<op>_seg's 1 KiB tiles."""
    from baracuda.scan import _kernels as K

    log = _LaunchLog("sm_90")
    log.resident = 3
    grids = _record_grids(log, monkeypatch)
    wave = 132 * 24  # 512-byte tiles a wave of warps takes, one each

    def launch(rows: int, n: int, reverse: bool = False) -> str:
        st = (n, 1)
        ops = [Slot(1 << 30, st), None, None, Slot(2 << 30, st), None]
        if op == "prod_bwd":
            ops = [Slot(k << 30, st) for k in (1, 2, 3, 4)] + [None]
        variant = K.launch_scan(log, op, None, (rows, n), 1, reverse=reverse, mode=0,  # type: ignore[arg-type]
                                operands=ops, vec_slots=(0, 1, 2, 3), itemsize=itemsize,
                                layout="rows", sm_count=132, states_ptr=0)  # fmt: skip
        return variant

    n = 64 // itemsize * 4  # 256-byte rows
    one = op in SEG1_OPS
    for rows, fits in ((1, True), (wave * 2, True), (wave * 2 + 1, False), (2**20, False)):
        for reverse in (False, True):
            variant = launch(rows, n, reverse)
            tiles = -(-rows * n * itemsize // 512)
            if one and fits:
                assert variant == f"seg1:{tiles}x1", (rows, variant)
                assert log.calls[-1][0] == f"scan_{op}_seg1"
                wpb = max(1, min(8, tiles // 132))
                assert grids[-1] == ((-(-tiles // wpb), 1, 1), 0)
            else:
                assert variant.startswith("seg") and ":" not in variant, variant
                assert log.calls[-1][0] == f"scan_{op}_seg"
    monkeypatch.setattr(K, "SEG_ONE_VECTOR", False)
    assert ":" not in launch(2, n)
    assert log.calls[-1][0] == f"scan_{op}_seg"
_STRIP_CASES = [
    # (shape, axis, itemsize, x strides or None (dense), x pointer offset, width)
    ((4096, 8192), 0, 4, None, 0, 256),  # 128 strips of 256 B: three quarters of 132 SMs
    ((4096, 8192), 0, 2, None, 0, 128),  # 64 of 256 B are too few; 128 of 128 B
    ((4096, 4096), 0, 2, None, 0, 64),  # 64 strips of 128 B: under half the SMs; 128 of 64 B
    ((4096, 2048), 0, 2, None, 0, 32),  # 32 of 128 B, 64 of 64 B; 128 of 32 B (2-byte types)
    ((4096, 1024), 0, 4, None, 0, 0),  # f32: 64 of 64 B; no 32-byte strips
    ((4096, 1024), 0, 2, None, 0, 0),  # bf16: 64 of 32 B
    ((4096, 8192), 0, 8, None, 0, 256),  # f64
    ((16, 512, 1024), 1, 4, None, 0, 256),  # two outer dims
    ((512, 1024, 16), 1, 4, None, 0, 64),  # 64-byte runs of lines
    ((512, 1024, 8), 1, 4, None, 0, 0),  # 32-byte runs of f32 lines
    ((512, 1024, 16), 1, 2, None, 0, 32),  # 32-byte runs of bf16 lines
    ((512, 1024, 8), 1, 2, None, 0, 0),  # 16-byte runs
    ((300, 8192), 0, 4, (8196, 1), 0, 256),  # padded rows, 16-byte multiples
    ((300, 8192), 0, 4, (8193, 1), 0, 0),  # rows not 16-byte aligned
    ((300, 8192), 0, 4, None, 4, 0),  # misaligned pointer
    ((300, 8192), 0, 4, (16384, 2), 0, 0),  # every other line
    ((300, 8190), 0, 2, None, 0, 0),  # lines not a whole number of strips
]
# where the cumprod backward's strips differ: fewer lines fill enough SMs (STRIP_MIN_FILL_OF),
# and it takes no strips narrower than 128 bytes (STRIP_NARROW_OPS)
_PROD_BWD_WIDTH = {((4096, 4096), 2): 128, ((4096, 2048), 2): 128, ((4096, 1024), 4): 128,
                   ((512, 1024, 16), 4): 0, ((512, 1024, 16), 2): 0}  # fmt: skip


@pytest.mark.parametrize(("shape", "axis", "itemsize", "strides", "offset", "width"),
                         _STRIP_CASES)  # fmt: skip
def test_strips_need_whole_aligned_runs_of_lines(
    shape: tuple[int, ...], axis: int, itemsize: int, strides: tuple[int, ...] | None,
    offset: int, width: int,
) -> None:  # fmt: skip
    """A strided cumsum/cumprod takes strips (scan_strip) only where IN0 and OUT come in whole,
    16-byte aligned 256-, 128-, 64- or (2-byte types) 32-byte runs of adjacent lines, enough
    of them for the SMs, the widest such (the cumprod backward no narrower than 128 bytes,
    and in 2-byte types over fewer lines: _PROD_BWD_WIDTH)."""
    from baracuda.scan import _kernels as K

    x = Slot(4096 + offset, strides or _dense(shape))
    y = Slot(1 << 30, _dense(shape))
    assert K._strip_width("sum", shape, axis, [x, None, None, y, None], itemsize, 132) == width
    # never with an operand the op does not take, nor with the switch off
    assert K._strip_width("sum", shape, axis, [x, y, None, y, None], itemsize, 132) == 0
    # the staged operands of the cumprod backward (dy, x, y) each meet the same condition
    dy = Slot(1 << 31, _dense(shape))
    ops = [dy, x, y, dy, None]
    prod_width = _PROD_BWD_WIDTH.get((shape, itemsize), width)
    assert K._strip_width("prod_bwd", shape, axis, ops, itemsize, 132) == prod_width
    assert K._strip_width("prod_bwd", shape, axis, [x, dy, y, dy, None], itemsize,
                          132) == prod_width  # fmt: skip


def test_strip_switch_off(monkeypatch: pytest.MonkeyPatch) -> None:
    from baracuda.scan import _kernels as K

    monkeypatch.setattr(K, "STRIP", False)
    x, y = Slot(4096, (8192, 1)), Slot(1 << 30, (8192, 1))
    assert K._strip_width("sum", (4096, 8192), 0, [x, None, None, y, None], 4, 132) == 0


def _strip_slots(op: str, aux: Slot | None = None, lines: int = 8192) -> list[Slot | None]:
    """Dense n x ``lines`` operands (4096 x 8192 by default) at their own addresses, in the
    slots a strip of ``op`` takes (AUX: ``aux``, or dense flags where the op needs them)."""
    dense = [Slot((k + 1) << 30, (lines, 1)) for k in range(5)]
    staged = STRIP_STAGED[op]
    slots: list[Slot | None] = [dense[k] if k < staged else None for k in range(3)]
    slots.append(None if op == "maxflag" else dense[3])
    slots.append(aux if aux is not None or op not in ("maxflag", "seg_bwd") else dense[4])
    return slots


@pytest.mark.parametrize("op", sorted(STRIP_STAGED))
def test_strip_operands(op: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each op's strips take its own operands only (its staged inputs, OUT but for the winner
    flags alone, AUX where it has one), AUX with adjacent lines (any other stride), and no
    op outside STRIP_OPS."""
    from baracuda.scan import _kernels as K

    monkeypatch.setattr(K, "STRIP_OPS", tuple((o, (4,)) for o in STRIP_STAGED))
    shape = (4096, 8192)
    slots = _strip_slots(op)
    assert K._strip_width(op, shape, 0, slots, 4, 132) == 256
    if op == "max":  # the indices are optional: any outer stride, but lines adjacent
        assert K._strip_width(op, shape, 0, _strip_slots(op, Slot(7 << 30, (9000, 1))), 4,
                              132) == 256  # fmt: skip
        assert K._strip_width(op, shape, 0, _strip_slots(op, Slot(7 << 30, (1, 4096))), 4,
                              132) == 0  # fmt: skip
        # positions as int in the strips below 8-byte types (scan.cu MaxStripOp): an axis
        # of 2^31 takes none; f64 keeps int64
        for n, width in ((2**31 - 1, 256), (2**31, 0)):
            assert K._strip_width(op, (n, 8192), 0, slots, 4, 132) == width
        monkeypatch.setattr(K, "STRIP_OPS", tuple((o, (4, 8)) for o in STRIP_STAGED))
        assert K._strip_width(op, (2**31, 8192), 0, slots, 8, 132) == 256
        monkeypatch.setattr(K, "STRIP_OPS", tuple((o, (4,)) for o in STRIP_STAGED))
    if op in ("seg_bwd", "maxflag"):  # the flags that are read are staged in 16-byte pieces
        for flags in (Slot((5 << 30) + 4, (8192, 1)), Slot(5 << 30, (8200, 1))):
            other = [*slots[:4], flags]
            assert K._strip_width(op, shape, 0, other, 4, 132) == (256 if op == "maxflag" else 0)
    for k in range(5):  # one operand more or fewer
        other = list(slots)
        other[k] = None if other[k] is not None else Slot(6 << 30, (8192, 1))
        if op == "max" and k == 4:
            continue
        assert K._strip_width(op, shape, 0, other, 4, 132) == 0, k
    assert K._strip_width(op, shape, 0, slots, 2, 132) == 0  # not in this itemsize
    monkeypatch.setattr(K, "STRIP_OPS", tuple((o, (4,)) for o in STRIP_STAGED if o != op))
    assert K._strip_width(op, shape, 0, slots, 4, 132) == 0


def test_strip_ops_by_itemsize() -> None:
    """By default every op with a strip entry takes strips in every type but logcumsumexp,
    in f32, f16 and bf16 (not f64); blocks of 512 threads: the logcumsumexp backward's in
    every type, cummax/cummin's in f32 only."""
    from baracuda.scan import _kernels as K

    for op in STRIP_STAGED:
        for size in (2, 4, 8):
            assert K._listed(K.STRIP_OPS, op, size) == (op != "lse" or size < 8), (op, size)
            wide = K._listed(K.STRIP_512_OPS, op, size)
            assert wide == (op == "lse_bwd" or (op == "max" and size == 4)), (op, size)


@pytest.mark.parametrize("itemsize", [2, 4, 8])
def test_max_backward_strip_launch(itemsize: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Along a strided axis whose lines come in strips, the cummax/cummin backward is one
    launch of a block per strip (scan_max_bwd_strip: x as IN0, dy as IN1, dx as OUT, the
    forward's direction and mode) with MAX_BWD_STRIP_STAGES chunks of MAX_BWD_STRIP_CHUNK
    bytes of x and of dy, no workspace; over fewer lines than most ops' strips below 8-byte
    types (STRIP_MIN_FILL_OF). Nothing is enqueued (the two passes run) where
    STRIP_MAX_BACKWARD is off, x's lines do not come in strips, or the ring does not fit."""
    from baracuda.scan import _kernels as K

    log = _LaunchLog("sm_90")
    seen: list[tuple[object, int, int, object]] = []

    def launch(fn: str, grid: object, block: int, smem: int, stream: object,
               args: list[object], name: str = "", **kw: object) -> None:  # fmt: skip
        seen.append((grid, block, smem, args[0]))
        log.launch(fn, grid, block, smem, stream, args, name)

    _patch(monkeypatch, "launch", launch)
    monkeypatch.setattr(K, "_smem_room", lambda module, kernel: 1 << 30)
    shape, dense_x = (4096, 8192), Slot(1 << 30, (8192, 1))

    def run(x: Slot = dense_x) -> str | None:
        log.calls.clear()
        return launch_max_backward(log, None, shape, 0, reverse=True, mode=3,  # type: ignore[arg-type]
                                   dy=Slot(2 << 30, (8192, 1)), x=x, dx=Slot(3 << 30, (8192, 1)),
                                   flags=Slot(4 << 30, (8192, 1)), layout="cols",
                                   itemsize=itemsize, sm_count=132)  # fmt: skip

    def lines(count: int) -> str | None:  # (16384, count), dense
        d = Slot(1 << 30, (count, 1))
        return launch_max_backward(log, None, (16384, count), 0, reverse=False, mode=0,  # type: ignore[arg-type]
                                   dy=d, x=d, dx=d, flags=d, layout="cols", itemsize=itemsize,
                                   sm_count=132)  # fmt: skip

    # 8192 lines: 256-byte strips fill 3/4 of the SMs in f32 and f64, 128-byte ones in bf16
    width = 128 if itemsize == 2 else 256
    strips = 8192 * itemsize // width
    assert run() == f"max_bwd_strip{width}x{strips}"
    assert [c[0] for c in log.calls] == ["scan_max_bwd_strip"]
    smem = K.strip_smem("max_bwd", itemsize)
    assert smem == 2 * K.MAX_BWD_STRIP_CHUNK * K.MAX_BWD_STRIP_STAGES == 128 * 1024
    grid, block, got_smem, params = seen[-1]
    assert (grid, block, got_smem) == ((strips, 1, 1), 256, smem)
    assert [params.op[k].ptr for k in range(4)] == [1 << 30, 2 << 30, 0, 3 << 30]  # type: ignore[attr-defined]
    assert (params.reverse, params.mode, params.width) == (1, 3, width)  # type: ignore[attr-defined]
    assert run(Slot(1 << 30, (16384, 2))) is None  # x every other line: no strips
    assert run(Slot((1 << 30) + itemsize, (8192, 1))) is None  # x misaligned
    # 4 KiB of lines: 32 strips of 128 bytes (a quarter of the SMs) below 8-byte types only
    assert lines(4096 // itemsize) == (None if itemsize == 8 else "max_bwd_strip128x32")
    assert lines(2048 // itemsize) is None  # 16 strips
    monkeypatch.setattr(K, "_smem_room", lambda module, kernel: smem - 1)
    assert run() is None
    monkeypatch.setattr(K, "_smem_room", lambda module, kernel: 1 << 30)
    monkeypatch.setattr(K, "STRIP_MAX_BACKWARD", False)
    assert run() is None and log.calls == []


def test_strips_over_fewer_lines() -> None:
    """Where STRIP_MIN_FILL_OF lists an op in an itemsize, its 128-byte strips need fill only
    that share of the SMs (else STRIP_MIN_FILL): along dim 0 over 8 KiB of lines (64 strips
    of 128 bytes, 0.48 of 132 SMs) and over 4 KiB (32 strips, 0.24). Where they are too few,
    the ops of STRIP_NARROW_OPS take 64-byte strips (STRIP_32_OPS: or 32-byte ones) that fill
    that share."""
    from baracuda.scan import _kernels as K

    for op in STRIP_STAGED:
        for size in (2, 4, 8):
            fill = K._strip_min_fill(op, size)
            for kib, strips in ((8, 64), (4, 32)):
                lines = kib * 1024 // size
                slots = _strip_slots(op, lines=lines)
                want = 128 if K._listed(K.STRIP_OPS, op, size) and strips >= fill * 132 else 0
                if not want and K._listed(K.STRIP_NARROW_OPS, op, size):  # narrower strips
                    if 2 * strips >= fill * 132:
                        want = 64
                    elif K._listed(K.STRIP_32_OPS, op, size) and 4 * strips >= fill * 132:
                        want = 32
                got = K._strip_width(op, (16384, lines), 0, slots, size, 132)
                assert got == want, (op, size, kib)
    # the measured cases (docs/benchmarks.md, round 45)
    for op, size, kib, width in (("max_bwd", 2, 4, 128), ("max_bwd", 4, 4, 128),
                                 ("max_bwd", 8, 4, 0), ("max_bwd", 8, 8, 128),
                                 ("prod_bwd", 2, 4, 128), ("max", 2, 8, 128), ("max", 2, 4, 0),
                                 ("lse_bwd", 2, 8, 128), ("lse", 2, 8, 0), ("max", 4, 8, 0)):
        lines = kib * 1024 // size
        assert K._strip_width(op, (16384, lines), 0, _strip_slots(op, lines=lines), size,
                              132) == width, (op, size, kib)  # fmt: skip


@pytest.mark.parametrize("op", sorted(set(STRIP_STAGED) - {"max_bwd"}))
def test_strip_launch(op: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Strips are one launch of a block per strip with a ring of STRIP_STAGES chunks of each
    staged operand (128 KiB for one, 192 for three) and no workspace; of 512 threads where
    STRIP_512_OPS lists the op."""
    from baracuda.scan import _kernels as K

    monkeypatch.setattr(K, "STRIP_OPS", tuple((o, (4,)) for o in STRIP_STAGED))
    monkeypatch.setattr(K, "STRIP_512_OPS", ())
    log = _LaunchLog("sm_90")
    grids = _record_grids(log, monkeypatch)
    _patch(monkeypatch, "memset_zero", log.memset)
    monkeypatch.setattr(K, "_smem_room", lambda module, kernel: 1 << 30)

    def launch() -> str:  # 4096 x 8192 along dim 0, reverse, f32
        return K.launch_scan(log, op, None, (4096, 8192), 0, reverse=True, mode=0,  # type: ignore[arg-type]
                             operands=_strip_slots(op), vec_slots=(0, 3), itemsize=4,
                             layout="cols", sm_count=132, states_ptr=1 << 20)  # fmt: skip

    assert launch() == "strip256x128"
    assert [c[0] for c in log.calls] == [f"scan_{op}_strip"]
    smem = K.strip_smem(op, 4)
    # 128 KiB for one operand, 192 for three; the flags of seg_bwd: 32 KiB more in f32
    assert smem == ((128 if STRIP_STAGED[op] == 1 else 192) + (32 if op == "seg_bwd" else 0)) * 1024
    assert grids == [((128, 1, 1), smem)]
    if op in STRIP_512_ENTRY_OPS:
        monkeypatch.setattr(K, "STRIP_512_OPS", ((op, (4,)),))
        log.calls.clear()
        assert launch() == "strip256x128"
        assert [c[0] for c in log.calls] == [f"scan_{op}_strip512"]
        assert grids[-1] == ((128, 1, 1), smem)
    # too little shared memory on the device: not taken
    monkeypatch.setattr(K, "_smem_room", lambda module, kernel: smem - 1)
    assert "strip" not in launch()


@pytest.mark.parametrize("op", ["sum", "prod"])
def test_narrow_strip_launch(op: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Narrow strips (STRIP_NARROW_OPS, STRIP_32_OPS) are one launch of their own entry
    (scan_<op>_strip_narrow), a block per strip of the width the variant names, with the
    padded ring (a row of padding a row group: BLOCK 4-byte words a chunk more); none where
    the device lacks that shared memory, nor where the tables leave the op or itemsize out."""
    from baracuda.scan import _kernels as K

    log = _LaunchLog("sm_90")
    grids = _record_grids(log, monkeypatch)
    monkeypatch.setattr(K, "_smem_room", lambda module, kernel: 1 << 30)
    pad = (K.STRIP_CHUNK + K.BLOCK * 4) * K.STRIP_STAGES

    def launch(lines: int, itemsize: int) -> str:  # (8192, lines) along dim 0
        slots = _strip_slots(op, lines=lines)
        return K.launch_scan(log, op, None, (8192, lines), 0, reverse=False, mode=0,  # type: ignore[arg-type]
                             operands=slots, vec_slots=(0, 3), itemsize=itemsize,
                             layout="cols", sm_count=132, states_ptr=1 << 20)  # fmt: skip

    for lines, itemsize, width in ((4096, 2, 64), (2048, 4, 64), (2048, 2, 32)):
        log.calls.clear()
        assert launch(lines, itemsize) == f"strip{width}x128", (lines, itemsize)
        assert [c[0] for c in log.calls] == [f"scan_{op}_strip_narrow"]
        assert grids[-1] == ((128, 1, 1), pad)
        assert K.strip_smem(op, itemsize, width) == pad
    monkeypatch.setattr(K, "_smem_room", lambda module, kernel: pad - 1)
    assert "strip" not in launch(4096, 2)
    monkeypatch.setattr(K, "_smem_room", lambda module, kernel: 1 << 30)
    monkeypatch.setattr(K, "STRIP_32_OPS", ())
    assert "strip" not in launch(2048, 2)
    monkeypatch.setattr(K, "STRIP_NARROW_OPS", ())
    assert "strip" not in launch(4096, 2)
    # never in 8-byte types (their narrow entries are empty), nor for an op without the entry
    monkeypatch.setattr(K, "STRIP_NARROW_OPS", ((op, (2, 4, 8)), ("lse", (2, 4))))
    assert "strip" not in launch(1024, 8)
    lse = _strip_slots("lse", lines=4096)
    assert K._strip_width("lse", (8192, 4096), 0, lse, 2, 132) == 0


@pytest.mark.parametrize("op", ["sum", "prod"])
def test_strips_two_an_sm(op: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Strips at least STRIP_MANY_PER_SM an SM (STRIP_MANY_OPS) take scan_<op>_strip6 with
    STRIP_MANY_STAGES chunks of shared memory where the device holds two of its blocks an SM;
    fewer strips, a device that holds one, an itemsize or op the table leaves out, and narrow
    strips keep their own entries."""
    from baracuda.scan import _kernels as K

    log = _LaunchLog("sm_90")
    grids = _record_grids(log, monkeypatch)
    monkeypatch.setattr(K, "_smem_room", lambda module, kernel: 1 << 30)
    many = K.STRIP_CHUNK * K.STRIP_MANY_STAGES
    assert many * 2 <= 227 * 1024  # two blocks an SM on an H100 / H200

    def launch(shape: tuple[int, int], itemsize: int) -> str:  # along dim 0
        slots = _strip_slots(op, lines=shape[1])
        log.calls.clear()
        return K.launch_scan(log, op, None, shape, 0, reverse=False, mode=0,  # type: ignore[arg-type]
                             operands=slots, vec_slots=(0, 3), itemsize=itemsize,
                             layout="cols", sm_count=132, states_ptr=1 << 20)  # fmt: skip

    assert launch((512, 65536), 2) == "strip256x512"
    assert [c[0] for c in log.calls] == [f"scan_{op}_strip6"] and grids[-1][1] == many
    assert launch((512, 65536), 4) == "strip256x1024"
    assert [c[0] for c in log.calls] == [f"scan_{op}_strip6"] and grids[-1][1] == many
    assert launch((512, 64 * 265), 2) == "strip128x265"  # an odd count: 128-byte strips
    assert [c[0] for c in log.calls] == [f"scan_{op}_strip6"]
    assert launch((512, 128 * 264), 2) == "strip256x264"  # two an SM exactly
    assert [c[0] for c in log.calls] == [f"scan_{op}_strip6"]
    assert launch((512, 64 * 263), 2) == "strip128x263"
    assert [c[0] for c in log.calls] == [f"scan_{op}_strip"]
    assert launch((4096, 8192), 2) == "strip128x128"  # a block an SM
    assert [c[0] for c in log.calls] == [f"scan_{op}_strip"]
    assert launch((512, 65536), 8) == "strip256x2048"  # f64: not in the table
    assert [c[0] for c in log.calls] == [f"scan_{op}_strip"]
    log.resident_of[f"scan_{op}_strip6"] = 1  # a device that holds one
    assert launch((512, 65536), 2) == "strip256x512"
    assert [c[0] for c in log.calls] == [f"scan_{op}_strip"]
    del log.resident_of[f"scan_{op}_strip6"]
    monkeypatch.setattr(K, "STRIP_MANY_OPS", ())
    assert launch((512, 65536), 2) == "strip256x512"
    assert [c[0] for c in log.calls] == [f"scan_{op}_strip"]
    monkeypatch.setattr(K, "STRIP_MANY_OPS", ((op, (2, 4)),))
    monkeypatch.setattr(K, "STRIP_NARROW_OPS", ((op, (2, 4)),))
    monkeypatch.setattr(K, "STRIP_WIDE_FILL", 10.0)  # no 256-byte strips
    monkeypatch.setattr(K, "STRIP_MIN_FILL", 3.0)  # 128-byte strips need 3 an SM: 64-byte ones
    assert launch((512, 64 * 200), 2) == "strip64x400"
    assert [c[0] for c in log.calls] == [f"scan_{op}_strip_narrow"]


_RING_CASES = [
    # (shape, axis, itemsize, x strides or None (dense), x pointer offset, ring)
    ((4096, 8192), 1, 2, None, 0, True),  # rows of one chunk
    ((4096, 8192), 1, 4, None, 0, True),  # two chunks a row
    ((4096, 8192), 1, 8, None, 0, True),  # f64
    ((8, 512, 8192), 2, 4, None, 0, True),  # two outer dims that coalesce
    ((4096, 8192 + 24), 1, 2, None, 0, True),  # a partial last chunk
    ((300, 8192), 1, 4, (8196, 1), 0, True),  # padded rows
    ((4096, 4096), 1, 2, None, 0, False),  # rows of 8 KiB
    ((4096, 8193), 1, 4, (8196, 1), 0, False),  # rows not whole 16-byte vectors
    ((2, 3, 8192), 2, 4, (4 * 8200, 8200, 1), 0, False),  # outer dims that do not coalesce
]


@pytest.mark.parametrize(("shape", "axis", "itemsize", "strides", "offset", "ring"),
                         _RING_CASES)  # fmt: skip
def test_ring_needs_long_rows_of_one_stride(
    shape: tuple[int, ...], axis: int, itemsize: int, strides: tuple[int, ...] | None,
    offset: int, ring: bool, monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """A contiguous cumsum/cumprod may take the ring (scan_ring) only with IN0 and OUT and rows
    of one stride, at least 16 KiB long and whole 16-byte vectors; never with a third operand
    or with the switch off."""
    from baracuda.scan import _kernels as K

    x = Slot(4096 + offset, strides or _dense(shape))
    y = Slot(1 << 30, _dense(shape))

    def rows_ok(ops: list[Slot | None], op: str = "sum") -> bool:
        params = K._params(shape, axis, ops, (0, 3), itemsize, "rows", False, 0)
        return K._ring_rows(op, params, ops, itemsize)

    assert rows_ok([x, None, None, y, None]) == ring
    assert rows_ok([x, None, None, y, None], "prod") == ring
    assert not rows_ok([x, y, None, y, None])
    assert not rows_ok([x, None, None, y, None], "lse")
    monkeypatch.setattr(K, "RING_ROWS", False)
    assert not rows_ok([x, None, None, y, None])


_ROWREG_CASES = [
    # (shape, itemsize, x strides or None (dense), x pointer offset, the rowreg kind or None)
    ((4096, 8192), 2, None, 0, "rowreg4"),  # rows of 16 KiB
    ((4096, 2048), 8, None, 0, "rowreg4"),
    ((4096, 8000), 2, None, 0, "rowreg4"),  # fewer vectors than the block's
    ((4096, 4096), 2, None, 0, "rowreg2"),  # 8 KiB
    ((4096, 2056), 2, None, 0, "rowreg2"),  # 4 KiB and a vector
    ((8, 512, 3000), 4, None, 0, "rowreg4"),  # outer dims that coalesce
    ((300, 3000), 4, (3004, 1), 0, "rowreg4"),  # padded rows
    ((4096, 2048), 2, None, 0, None),  # 4 KiB: warp rows
    ((4096, 8200), 2, None, 0, "rowreg8"),  # 16 KiB and a vector
    ((4096, 16392), 2, None, 0, None),  # past 32 KiB: the ring
    ((4096, 8192), 4, None, 0, "rowreg8"),  # rows of 32 KiB
    ((4096, 4100), 4, None, 0, "rowreg8"),  # 16 KiB and a vector
    ((300, 2048), 8, (2050, 1), 0, "rowreg4"),  # f64 padded rows of 16 KiB
    ((300, 3000), 8, (3002, 1), 0, "rowreg8"),  # ... of 23.4 KiB
    ((4096, 8196), 4, None, 0, None),  # past 32 KiB
    ((4096, 3001), 4, (3004, 1), 0, None),  # rows not whole 16-byte vectors
    ((4096, 4096), 2, None, 2, None),  # misaligned
    ((2, 3, 3000), 4, (4 * 3004, 3004, 1), 0, None),  # outer dims that do not coalesce
]


@pytest.mark.parametrize(("shape", "itemsize", "strides", "offset", "kind"), _ROWREG_CASES)
def test_rows_in_registers_entry(shape: tuple[int, ...], itemsize: int,
                                 strides: tuple[int, ...] | None, offset: int, kind: str | None,
                                 monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Contiguous cumsum/cumprod rows of more than 4 KiB and at most 32 KiB, of one stride and
    whole 16-byte vectors, take a block a row in registers
    (rowreg2 up to 8 KiB, rowreg4 up to 16 KiB, rowreg8 up to 32 KiB): with IN0 and OUT only
    (cummax/cummin: and their int64 indices, aligned and contiguous along the axis;
    logcumsumexp: f64 rows, long and many enough), never with the switch off; one
    launch of a block a row, in both directions, whose blocks ask L2 for the row as many rows
    on as the SMs hold blocks (ROWREG_PREFETCH; none when off)."""
    from baracuda.scan import _kernels as K

    axis = len(shape) - 1
    x = Slot(4096 + offset, strides or _dense(shape))
    y = Slot(1 << 30, _dense(shape))

    def entry(ops: list[Slot | None], op: str = "sum", mode: int = 0,
              reverse: bool = False) -> str | None:  # fmt: skip
        params = K._params(shape, axis, ops, (0, 3), itemsize, "rows", reverse, mode)
        return K._rowreg(op, params, ops, itemsize, 132)

    assert entry([x, None, None, y, None]) == (kind and f"scan_sum_{kind}")
    assert entry([x, None, None, y, None], "prod") == (kind and f"scan_prod_{kind}")
    assert entry([x, y, None, y, None]) is None
    # logcumsumexp (ROWREG_LSE_*): f64 rows of at least 8 KiB where they would take warp rows
    # (16 an SM, 132 SMs here), IN0 and OUT only; every f64 row and count with those opened
    rows_all = math.prod(shape) // shape[-1]
    lse = kind if itemsize == 8 and shape[-1] * 8 >= 8192 and rows_all >= 132 * 16 else None
    assert entry([x, None, None, y, None], "lse") == (lse and f"scan_lse_{lse}")
    assert entry([x, None, None, y, None], "lse", reverse=True) == (lse and f"scan_lse_{lse}")
    assert entry([x, y, None, y, None], "lse") is None
    monkeypatch.setattr(K, "ROWREG_LSE_MIN_BYTES", 0)
    monkeypatch.setattr(K, "WARP_ROWS_PER_SM", 0)
    f64 = kind if itemsize == 8 else None  # the kernels exist in f64 alone
    assert entry([x, None, None, y, None], "lse") == (f64 and f"scan_lse_{f64}")
    # cummax/cummin (rows of more than 8 KiB, ROWREG_MAX): values alone, or with int64
    # indices contiguous along the axis, every row on 16 bytes; not misaligned or strided
    # indices, nor the backward's winner flags; not 2-byte rows of up to 16 KiB in reverse
    mx = kind if kind != "rowreg2" else None
    assert entry([x, None, None, y, None], "max") == (mx and f"scan_max_{mx}")
    idx = Slot(1 << 34, _dense(shape))
    assert entry([x, None, None, y, idx], "max") == (mx and f"scan_max_{mx}")
    assert entry([x, None, None, y, idx], "max", mode=3) == (mx and f"scan_max_{mx}")
    assert entry([x, None, None, y, idx], "max", mode=4) is None
    assert entry([x, None, None, y, Slot((1 << 34) + 8, _dense(shape))], "max") is None
    rev = entry([x, None, None, y, idx], "max", reverse=True)
    assert rev == (None if itemsize == 2 and kind == "rowreg4" else mx and f"scan_max_{mx}")
    if len(shape) == 2:
        rows, n = shape
        assert entry([x, None, None, y, Slot(1 << 34, (n + 2, 1))], "max") == (
            mx and f"scan_max_{mx}")  # padded rows, each on 16 bytes
        assert entry([x, None, None, y, Slot(1 << 34, (n + 1, 1))], "max") is None
        assert entry([x, None, None, y, Slot(1 << 34, (1, rows))], "max") is None
    monkeypatch.setattr(K, "ROWREG_MAX", False)
    assert entry([x, None, None, y, idx], "max") is None
    monkeypatch.setattr(K, "ROWREG_MAX", True)
    assert entry([x, None, None, y, idx], "sum") is None
    if kind:
        log = _LaunchLog("sm_90")
        log.resident_of[f"scan_prod_{kind}"] = 3
        grids = _record_grids(log, monkeypatch)
        ahead: list[int] = []
        real = K.__dict__["launch"]

        def launch(fn: str, grid: object, block: int, smem: int, st: object, args: list[object],
                   *a: object, **kw: object) -> None:  # fmt: skip
            ahead.append(args[0].chunk_len)  # type: ignore[attr-defined]
            real(fn, grid, block, smem, st, args, *a, **kw)

        _patch(monkeypatch, "launch", launch)
        for reverse, prefetch in ((False, True), (True, True), (False, False)):
            monkeypatch.setattr(K, "ROWREG_PREFETCH", prefetch)
            log.calls.clear()
            variant = K.launch_scan(log, "prod", None, shape, axis, reverse=reverse, mode=0,  # type: ignore[arg-type]
                                    operands=[x, None, None, y, None], vec_slots=(0, 3),
                                    itemsize=itemsize, layout="rows", sm_count=132,
                                    states_ptr=1 << 20)  # fmt: skip
            rows = math.prod(shape) // shape[-1]
            assert variant == f"{kind}x{rows}"
            assert [c[0] for c in log.calls] == [f"scan_prod_{kind}"]
            assert grids[-1] == ((rows, 1, 1), 0)
            assert ahead[-1] == (3 * 132 if prefetch else 0)
    monkeypatch.setattr(K, "ROWREG", False)
    assert entry([x, None, None, y, None]) is None


def test_rows_in_registers_before_the_ring(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows of up to 32 KiB take the registers where the ring would take them too, in every
    itemsize and for cumsum and cumprod; longer rows take the ring."""
    from baracuda.scan import _kernels as K

    log = _LaunchLog("sm_90")
    _record_grids(log, monkeypatch)
    monkeypatch.setattr(K, "_smem_room", lambda module, kernel: 1 << 30)

    def launch(op: str, n: int, itemsize: int) -> str:
        x, y = Slot(1 << 30, (n, 1)), Slot(1 << 31, (n, 1))
        return K.launch_scan(log, op, None, (4096, n), 1, reverse=False, mode=0,  # type: ignore[arg-type]
                             operands=[x, None, None, y, None], vec_slots=(0, 3),
                             itemsize=itemsize, layout="rows", sm_count=132,
                             states_ptr=1 << 20)  # fmt: skip

    for op in ("sum", "prod"):
        assert launch(op, 4096, 4) == "rowreg4x4096"
        assert launch(op, 8192, 4) == "rowreg8x4096"
        assert launch(op, 16384, 2) == "rowreg8x4096"
        assert launch(op, 4096, 8) == "rowreg8x4096"
        assert launch(op, 8196, 4) == "ring264"  # past 32 KiB
        assert launch(op, 2048, 4) == "rowreg2x4096"
    monkeypatch.setattr(K, "ROWREG", False)
    assert launch("sum", 4096, 4) == "ring264"


_RING_BACKWARD_CASES = [
    # (shape, itemsize, dy strides or None (dense), whether the rows fit the ring)
    ((4096, 8192), 2, None, True),  # rows of two chunks
    ((4096, 4096), 2, None, True),  # rows of one chunk (8 KiB)
    ((4096, 4096 + 24), 2, None, True),  # a partial last chunk
    ((300, 4096), 2, (4104, 1), True),  # padded rows
    ((4096, 8192), 4, None, True),
    ((4096, 8192), 8, None, True),  # f64: in neither switch
    ((4096, 4088), 2, None, False),  # rows under one chunk
    ((4096, 8193), 2, (8200, 1), False),  # rows not whole 16-byte vectors
]


@pytest.mark.parametrize(("shape", "itemsize", "strides", "fits"), _RING_BACKWARD_CASES)
def test_ring_backward_rows(shape: tuple[int, int], itemsize: int,
                            strides: tuple[int, int] | None, fits: bool,
                            monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """The cumprod and logcumsumexp backward take the ring with dy, x, y and dx (rows of at
    least RING_BACKWARD_CHUNK bytes of one stride, whole 16-byte vectors, the itemsizes of
    their switches: 2 and 4 for cumprod's, 2 for logcumsumexp's); not with an operand missing,
    not with the switches off; cumsum's backward (IN0 and OUT) never with three operands."""
    from baracuda.scan import _kernels as K

    dy = Slot(1 << 28, strides or _dense(shape))
    x, y, dx = (Slot(k << 30, _dense(shape)) for k in (1, 2, 3))

    def rows_ok(ops: list[Slot | None], op: str = "prod_bwd") -> bool:
        params = K._params(shape, 1, ops, (0, 1, 2, 3), itemsize, "rows", False, 0)
        return K._ring_rows(op, params, ops, itemsize)

    ops = [dy, x, y, dx, None]
    assert K.RING_BACKWARD == (("prod_bwd", (2, 4)), ("lse_bwd", (2, 4, 8)))
    assert rows_ok(ops) == (fits and itemsize != 8)
    assert rows_ok(ops, "lse_bwd") == fits
    assert not rows_ok([dy, None, y, dx, None])
    assert not rows_ok([dy, None, y, dx, None], "lse_bwd")
    assert not rows_ok(ops, "sum")
    monkeypatch.setattr(K, "RING_BACKWARD", (("prod_bwd", (2, 4, 8)), ("lse_bwd", (2, 4, 8))))
    assert rows_ok(ops) == fits and rows_ok(ops, "lse_bwd") == fits
    monkeypatch.setattr(K, "RING_BACKWARD", (("lse_bwd", (2, 4, 8)),))  # the cumprod's off
    assert not rows_ok(ops) and rows_ok(ops, "lse_bwd") == fits
    monkeypatch.setattr(K, "RING_BACKWARD", ())
    assert not rows_ok(ops) and not rows_ok(ops, "lse_bwd")


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize(("op", "itemsize"), [("prod_bwd", 2), ("prod_bwd", 4), ("lse_bwd", 2)])
def test_ring_backward_launch(op: str, itemsize: int, reverse: bool,
                              monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """A bf16 or f32 cumprod backward, or a bf16 logcumsumexp backward, over 4096 x 8192 is one
    ring launch of two blocks an SM with the ring's shared memory and no workspace, both
    directions; a misaligned operand keeps the earlier kernels."""
    from baracuda.scan import _kernels as K

    log = _LaunchLog("sm_90")
    grids = _record_grids(log, monkeypatch)
    monkeypatch.setattr(K, "_smem_room", lambda module, kernel: 1 << 30)

    def launch(dy: Slot) -> str:
        ops = [dy, *(Slot(k << 30, (8192, 1)) for k in (1, 2, 3)), None]  # dy, x, y, dx
        return K.launch_scan(log, op, None, (4096, 8192), 1, reverse=reverse, mode=0,  # type: ignore[arg-type]
                             operands=ops, vec_slots=(0, 1, 2, 3), itemsize=itemsize, layout="rows",
                             sm_count=132, states_ptr=1 << 20)  # fmt: skip

    assert launch(Slot(1 << 28, (8192, 1))) == "ring264"
    assert [c[0] for c in log.calls] == [f"scan_{op}_ring"]
    assert grids == [((264, 1, 1), K.RING_SMEM)]
    log.calls.clear()
    variant = launch(Slot((1 << 28) + itemsize, (8192, 1)))
    assert "ring" not in variant and all("ring" not in c[0] for c in log.calls)


@pytest.mark.parametrize(("rows", "per_sm", "grid"), [
    (4096, 2, 264),  # 15.5 rows a block: 97 % of 16 rounds
    (4096, 1, 132),
    (512, 2, 264),  # 97 % of 2 rounds
    (131, 2, 131),  # a row for 131 of 132 SMs
    (250, 2, 250),  # one round, 2 blocks on 118 SMs: 95 % of the slots
    (200, 2, 0),  # 2 blocks on 68 SMs, 1 on 64: 76 %; a block an SM, 2 rounds: 76 %
    (300, 2, 0),  # 57 % (two rounds of 264) or 76 % (three of 132)
    (110, 2, 0),  # fewer rows than 90 % of the SMs
    (520, 2, 264),  # 2 rounds of 264: 98 %
])  # fmt: skip
def test_ring_grid_balances_the_slots(rows: int, per_sm: int, grid: int) -> None:
    from baracuda.scan import _kernels as K

    assert K._ring_grid(rows, 132, per_sm) == grid


@pytest.mark.parametrize(("op", "reverse"), [("sum", False), ("sum", True), ("prod", False),
                                             ("lse", False)])  # fmt: skip
def test_ring_launch(op: str, reverse: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Contiguous cumsum/cumprod rows of 16 KiB or more, enough of them, are one launch of two
    blocks an SM with the ring's shared memory and no workspace (both directions);
    logcumsumexp keeps the warp rows (pipe1), and so do misaligned rows. (Rows in registers
    off: they take the f32 cumprod's rows of 32 KiB.)"""
    from baracuda.scan import _kernels as K

    log = _LaunchLog("sm_90")
    grids = _record_grids(log, monkeypatch)
    monkeypatch.setattr(K, "_smem_room", lambda module, kernel: 1 << 30)
    monkeypatch.setattr(K, "ROWREG", False)
    variant = _launch_big(log, op, 1, reverse=reverse)
    if op == "lse":
        assert variant == "pipe1" and [c[0] for c in log.calls] == ["scan_lse_pipe1"]
        return
    assert variant == "ring264"
    assert [c[0] for c in log.calls] == [f"scan_{op}_ring"]
    assert grids == [((264, 1, 1), K.RING_SMEM)]
    log.calls.clear()
    log.resident = 1  # a device that holds one ring a block: a block an SM
    _launch_big(log, op, 1, reverse=reverse)
    assert grids[-1] == ((132, 1, 1), K.RING_SMEM)
    log.calls.clear()
    # misaligned: pipe1's vectors are off too
    variant = _launch_big(log, op, 1, reverse=reverse, x=Slot((1 << 30) + 4, (8192, 1)))
    assert "ring" not in variant and all("ring" not in c[0] for c in log.calls)


def test_ring_needs_the_shared_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """A device without RING_SMEM of shared memory a block keeps the warp rows."""
    from baracuda.scan import _kernels as K

    log = _LaunchLog("sm_90")
    _record_grids(log, monkeypatch)
    monkeypatch.setattr(K, "_smem_room", lambda module, kernel: K.RING_SMEM - 1)
    monkeypatch.setattr(K, "ROWREG", False)
    assert _launch_big(log, "sum", 1, itemsize=4) == "pipe1"
    # the rows in registers need no shared memory
    monkeypatch.setattr(K, "ROWREG", True)
    monkeypatch.setattr(K, "_smem_room", lambda module, kernel: 0)
    log.calls.clear()
    assert _launch_big(log, "sum", 1, itemsize=4) == "rowreg8x4096"


def test_host_mirrors_of_the_kernel_constants() -> None:
    """The host's sizes of the strip, ring, stream and cooperative launches (their shared
    memory, block size and what a cooperative block keeps) are the constants scan.cu
    compiles with."""
    import re
    from pathlib import Path

    from baracuda.scan import _kernels as K

    text = (Path(K.__file__).parent / "scan.cu").read_text()

    def const(name: str) -> int:
        m = re.search(rf"constexpr int {name} = (\d+);", text)
        assert m, name
        return int(m.group(1))

    assert (const("kStripChunk"), const("kStripStages")) == (K.STRIP_CHUNK, K.STRIP_STAGES)
    assert const("kStripStagesMany") == K.STRIP_MANY_STAGES
    # the stream kernel: a block of other than kStreamThreads threads would leave a role's
    # warp out and its mbarriers never complete (a hang)
    assert (const("kStreamTile"), const("kStreamStages"), const("kStreamWave")) == (
        K.STREAM_TILE, K.STREAM_STAGES, K.STREAM_WAVE)  # fmt: skip
    assert "kStreamThreads = 32 * (kStreamWarps + 3);" in text  # scanning warps, 3 roles
    assert 32 * (const("kStreamWarps") + 3) == K.STREAM_THREADS
    assert K.STREAM_STAGES * K.STREAM_TILE == K.STREAM_SMEM
    assert (const("kRingChunk"), const("kRingStages")) == (K.RING_CHUNK, K.RING_STAGES)
    m = re.search(r"kRingChunkOf = NIN == 1 \? kRingChunk : NIN == 2 \? (\d+) : (\d+);", text)
    assert m and (int(m.group(1)), int(m.group(2))) == (K.RING_MAX_BACKWARD_CHUNK,
                                                        K.RING_BACKWARD_CHUNK)  # fmt: skip
    # the rows in registers: rowregV holds V 16-byte vectors a lane of a 256-thread block
    kinds = dict(re.findall(r"BC_SCAN_ROWREG_ENTRY1\(name, OP, (rowreg\d), (\d), \d\)", text))
    assert set(kinds) == set(K.ROWREG_KINDS)
    # cummax/cummin's entries of their own (their blocks an SM), the same vectors a lane
    max_kinds = dict(re.findall(r"BC_SCAN_ROWREG_ENTRY1\(max, MaxOp32, (rowreg\d), (\d), ", text))
    assert set(max_kinds) == set(K.ROWREG_MAX_KINDS)
    assert all(kinds[k] == v for k, v in max_kinds.items())
    # logcumsumexp's, the same vectors a lane, compiled in the itemsizes the host takes
    lse_kinds = dict(re.findall(r"BC_SCAN_ROWREG_LSE_ENTRY1\((rowreg\d), (\d)\)", text))
    assert lse_kinds == kinds
    m = re.search(r"BC_ENTRY\(scan_lse_##kind\)\(\s*\\\s*bc::scan::Params p\) \{\s*\\\s*"
                  r"if constexpr \(sizeof\(BC_T\) == (\d)\)", text)  # fmt: skip
    assert m and (int(m.group(1)),) == K.ROWREG_LSE_ITEMSIZES
    assert 16 * K.BLOCK * int(kinds["rowreg2"]) + 16 == K.ROWREG_MAX_MIN_BYTES  # no rowreg2
    assert 16 * K.BLOCK * int(kinds["rowreg8"]) == K.ROWREG_MAX_BYTES
    assert 16 * K.BLOCK * int(kinds["rowreg4"]) == 16384  # _rowreg's rowreg4 bound
    assert 16 * K.BLOCK * int(kinds["rowreg2"]) == 8192  # _rowreg's rowreg2 bound
    assert "kRingStagesOf = kRingStages * kRingChunk / (NIN * CH);" in text
    assert "template <int NIN, int CH = kRingChunkOf<NIN>>" in text
    for nin, chunk, stages in ((2, K.RING_MAX_BACKWARD_CHUNK, K.RING_MAX_BACKWARD_STAGES),
                               (3, K.RING_BACKWARD_CHUNK, K.RING_BACKWARD_STAGES)):  # fmt: skip
        assert K.RING_STAGES * K.RING_CHUNK // (nin * chunk) == stages
    assert K.strip_smem("sum", 4) == K.STRIP_CHUNK * K.STRIP_STAGES  # 128 KiB, one operand
    # narrow strips: a row of padding after each row group's rows, NT 4-byte words a chunk
    assert "constexpr int GP = SW < 128 ? SW : 0, CHS = CH + G * GP;" in text
    for width in (64, 32):
        for size in (2, 4):
            assert K.strip_smem("sum", size, width) == (
                K.STRIP_CHUNK + K.BLOCK * 4) * K.STRIP_STAGES  # fmt: skip
    # the ring of a strip: kStripStages chunks of kStripChunkOf<NS> bytes of each operand
    assert "kStripChunkOf = NS == 1 ? kStripChunk : kStripChunk / 2;" in text
    for op, staged in STRIP_STAGED.items():
        chunk = K.STRIP_CHUNK if staged == 1 else K.STRIP_CHUNK // 2
        for size in (2, 4, 8):
            flags = chunk // size if op == "seg_bwd" else 0
            assert K.strip_smem(op, size) == (staged * chunk + flags) * K.STRIP_STAGES
    assert K.RING_SMEM == K.RING_CHUNK * K.RING_STAGES
    w, r = K.coop_warps, K.coop_reg_rows
    assert f"constexpr int kCoopWarps = sizeof(T) == 2 ? {w(2)} : {w(4)};" in text
    assert w(4) == w(8)
    assert f"kCoopRegRows = sizeof(T) == 2 ? {r(2)} : sizeof(T) == 4 ? {r(4)} : {r(8)};" in text


def _own_programs(mod: _FakeModule, monkeypatch: pytest.MonkeyPatch) -> None:
    """``mod`` (f32) stands for every program launch_scan loads (the stream, rounds and
    lines programs), so their launches are logged as its own."""
    from baracuda.scan import _kernels as K

    mod.element = ElementKind.F32  # type: ignore[attr-defined]
    monkeypatch.setattr(K, "load_module", lambda source, element, device_id: mod)


def _logged_h100(monkeypatch: pytest.MonkeyPatch) -> tuple[_FakeModule, list[tuple[object, ...]]]:
    """A fake H100 module (132 SMs, cooperative; ``function`` names its kernel) and the log
    of every launch and memset the scan code makes (first launches and replays alike): each
    launch's kernel, grid, block, shared memory, name, flags and argument bytes."""
    from baracuda._cuda.device import DeviceInfo
    from baracuda.scan import _kernels as K

    info = DeviceInfo(0, "H100", "sm_90", 132, 232448, 50 * 2**20, True)
    monkeypatch.setattr(K, "device_info", lambda device_id: info)
    mod = _FakeModule(1)
    mod.arch = "sm_90"  # type: ignore[attr-defined]
    mod.function = lambda name, smem=0: f"fn:{name}"  # type: ignore[attr-defined]
    _own_programs(mod, monkeypatch)
    log: list[tuple[object, ...]] = []

    def spy(fn: str, grid: tuple[int, int, int], block: int, smem: int, st: object,
            args: list[object], name: str = "", *, dependent: bool = False,
            cooperative: bool = False) -> None:  # fmt: skip
        log.append((fn, grid, block, smem, name, dependent, cooperative,
                    tuple(bytes(a) for a in args)))  # type: ignore[call-overload]  # fmt: skip

    _patch(monkeypatch, "launch", spy)
    _patch(monkeypatch, "memset_zero", lambda p, n, s: log.append(("memset", p, n)))
    return mod, log


def test_launch_recipes_replay_what_launch_scan_enqueues(monkeypatch: pytest.MonkeyPatch) -> None:
    """LaunchCache: a second call with other addresses (same strides and alignment) enqueues
    exactly what launch_scan enqueues for them (kernels, grids, shared memory, parameter
    bytes, zeroing and memsets), over the layouts' paths; other strides, alignment or
    switches record anew."""
    from baracuda.scan import _kernels as K

    mod, log = _logged_h100(monkeypatch)

    def enqueue(cache: K.LaunchCache | None, shape: tuple[int, ...], axis: int,
                strides: tuple[int, ...], base: int, ws: int, op: str = "sum",
                reverse: bool = False) -> tuple[str, list[tuple[object, ...]]]:  # fmt: skip
        log.clear()
        x, y = Slot(base, strides), Slot(base + (1 << 36), strides)
        layout = "rows" if shape[axis] <= 1 or strides[axis] == 1 else "cols"
        kw = dict(reverse=reverse, mode=0, operands=[x, None, None, y, None], vec_slots=(0, 3),
                  itemsize=4, layout=layout, sm_count=132, lines=mod)  # fmt: skip
        if cache is None:
            v = K.launch_scan(mod, op, None, shape, axis, states_ptr=ws, **kw)  # type: ignore[arg-type]
        else:
            v = cache.launch_scan(mod, op, None, shape, axis,  # type: ignore[arg-type]
                                  workspace=Workspace(ws, 1 << 20, None), **kw)  # fmt: skip
        return v, list(log)

    cases = [((64, 1024), 1, (1024, 1)), ((4096, 8192), 1, (8192, 1)),
             ((4096, 8192), 0, (8192, 1)), ((2, 2**23), 1, (2**23, 1)),
             ((2**20, 2), 0, (2, 1)), ((2**19, 3), 0, (3, 1)), ((3, 50001), 1, (50001, 1)),
             ((300, 65), 0, (65, 1)), ((7, 5), 0, (1, 7))]  # fmt: skip
    for lookback, dependent in ((True, True), (True, False), (False, True)):
        monkeypatch.setattr(K, "LOOKBACK", lookback)
        monkeypatch.setattr(K, "LB_DEPENDENT", dependent)  # else a memset zeroes the tiles
        for shape, axis, strides in cases:
            for op, reverse in (("sum", False), ("prod", True), ("lse", False)):
                cache = K.LaunchCache()
                first = enqueue(cache, shape, axis, strides, 1 << 30, 1 << 20, op, reverse)
                assert first == enqueue(None, shape, axis, strides, 1 << 30, 1 << 20, op, reverse)
                again = enqueue(cache, shape, axis, strides, 1 << 31, 3 << 20, op, reverse)
                assert len(cache._recipes) == 1  # replayed
                want = enqueue(None, shape, axis, strides, 1 << 31, 3 << 20, op, reverse)
                assert again == want, (shape, axis, op, first[0])
                # another alignment: recorded anew
                enqueue(cache, shape, axis, strides, (1 << 31) + 4, 3 << 20, op, reverse)
                assert len(cache._recipes) == 2
    cache = K.LaunchCache()
    enqueue(cache, (2, 2**23), 1, (2**23, 1), 1 << 30, 1 << 20)
    monkeypatch.setattr(K, "COOP_ROWS", False)  # a switch: recorded anew
    v, _ = enqueue(cache, (2, 2**23), 1, (2**23, 1), 1 << 30, 1 << 20)
    assert not v.startswith("coop") and len(cache._recipes) == 2


def test_launch_recipes_know_every_switch() -> None:
    """Every upper-case global of _kernels is a switch the recipes are keyed on, or a
    constant (a new switch must join _SWITCHES)."""
    from baracuda.scan import _kernels as K

    names = {n for n in vars(K) if n.isupper() and not n.startswith("_")}
    assert names <= set(K._SWITCHES) | set(K._FIXED), names - set(K._SWITCHES) - set(K._FIXED)
    assert not set(K._SWITCHES) & set(K._FIXED)


class _CountingWorkspace:
    """A workspace whose address reads are counted (a scratch workspace allocates on the
    first)."""

    def __init__(self, ptr: int) -> None:
        self._ptr, self.nbytes, self.reads = ptr, 1 << 20, 0

    @property
    def ptr(self) -> int:
        self.reads += 1
        return self._ptr


def test_launch_recipes_read_the_workspace_only_where_they_use_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A replayed recipe whose launches use no workspace (rows that fit a block or warp,
    strips of strided lines) never reads its address, so a functional call's scratch is
    never allocated; one that does (chunk carries, look-back tiles, the cooperative kernel's
    totals) reads it and patches the new address in."""
    from baracuda._cuda.device import DeviceInfo
    from baracuda.scan import _kernels as K

    info = DeviceInfo(0, "H100", "sm_90", 132, 232448, 50 * 2**20, True)
    monkeypatch.setattr(K, "device_info", lambda device_id: info)
    mod = _FakeModule(1)
    mod.arch = "sm_90"  # type: ignore[attr-defined]
    mod.function = lambda name, smem=0: f"fn:{name}"  # type: ignore[attr-defined]
    _own_programs(mod, monkeypatch)
    log: list[bytes] = []
    _patch(monkeypatch, "launch", lambda fn, grid, block, smem, st, args, name="", **kw:
                        log.append(b"".join(bytes(a) for a in args)))  # fmt: skip
    _patch(monkeypatch, "memset_zero", lambda p, n, s: log.append(p.to_bytes(8, "little")))
    # (variants on this fake H100: rows8, pipe1, strip, strip; lbcols, coop, rows8 chunks with
    # carries, coop over two interleaved lines)
    for shape, axis, strides, uses in (((64, 1024), 1, (1024, 1), False),
                                       ((8, 128), 1, (128, 1), False),
                                       ((8, 300000), 0, (300000, 1), False),
                                       ((4096, 8192), 0, (8192, 1), False),
                                       ((4096, 64), 0, (64, 1), True),
                                       ((2, 2**23), 1, (2**23, 1), True),
                                       ((3, 50001), 1, (50001, 1), True),
                                       ((2**20, 2), 0, (2, 1), True)):  # fmt: skip
        cache = K.LaunchCache()
        layout = "rows" if strides[axis] == 1 else "cols"
        for call, base in enumerate((1 << 30, 1 << 31)):
            ws = _CountingWorkspace(base + (1 << 34))
            log.clear()
            x, y = Slot(base, strides), Slot(base + (1 << 33), strides)
            cache.launch_scan(mod, "sum", None, shape, axis, reverse=False, mode=0,  # type: ignore[arg-type]
                              operands=[x, None, None, y, None], vec_slots=(0, 3), itemsize=4,
                              layout=layout, sm_count=132, workspace=ws, lines=mod)  # type: ignore[arg-type]  # fmt: skip
            assert log, shape
            if call == 0:
                assert ws.reads == 1  # recorded with the address
            else:
                assert ws.reads == (1 if uses else 0), shape
                # the address reaches the launches exactly where it is used
                hit = any(ws._ptr.to_bytes(8, "little") in b for b in log)
                assert hit == uses, shape


class _PoolDriver:
    """The driver calls of the scratch pool, recorded."""

    class CUmemPool_attribute:
        CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = "release_threshold"

    class CUmemAllocationType:
        CU_MEM_ALLOCATION_TYPE_PINNED = "pinned"

    class CUmemAllocationHandleType:
        CU_MEM_HANDLE_TYPE_NONE = "none"

    class CUmemLocationType:
        CU_MEM_LOCATION_TYPE_DEVICE = "device"

    class CUmemPoolProps:
        def __init__(self) -> None:
            from types import SimpleNamespace

            self.allocType = self.handleTypes = None
            self.location = SimpleNamespace(type=None, id=None)

    def __init__(self) -> None:
        self.calls: list[tuple[object, ...]] = []

    def cuMemPoolCreate(self, props: _PoolDriver.CUmemPoolProps) -> tuple[int, str]:
        assert (props.allocType, props.handleTypes, props.location.type) == (
            "pinned", "none", "device")  # fmt: skip
        self.calls.append(("pool", props.location.id))
        return 0, f"pool{100 + props.location.id}"

    def cuuint64_t(self, v: int) -> int:
        return v

    def cuMemPoolSetAttribute(self, pool: str, attr: str, v: int) -> tuple[int]:
        self.calls.append(("set", pool, attr, v))
        return (0,)

    def cuMemAllocFromPoolAsync(self, n: int, pool: str, s: object) -> tuple[int, int]:
        self.calls.append(("alloc", n, pool))
        return 0, 0x7000_0000

    def cuMemFreeAsync(self, p: int, s: object) -> tuple[int]:
        self.calls.append(("free", p))
        return (0,)


@pytest.fixture
def pool_driver(monkeypatch: pytest.MonkeyPatch) -> _PoolDriver:
    """A recording driver (a device's pool handle: "pool" + 100 + its id), no scratch pool
    made yet."""
    from baracuda._cuda import driver as drv
    from baracuda._cuda import memory

    d = _PoolDriver()
    monkeypatch.setattr(memory, "_pools", {})
    monkeypatch.setattr(memory, "_keep", memory._keep)
    monkeypatch.setattr(memory, "_current_device", lambda stream: stream.dev)
    monkeypatch.setattr(drv, "driver", lambda: d)
    monkeypatch.setattr(drv, "check", lambda r, what: r[1] if len(r) > 1 else None)
    return d


class _FakeStream:
    cu = 0

    def __init__(self, dev: int = 0) -> None:
        self.dev = dev


def test_scratch_workspace_is_allocated_at_its_first_address_read(pool_driver: _PoolDriver) -> None:
    """Workspace.scratch allocates from its device's scratch pool on its stream when its
    address is first read, once; a release frees only what was allocated; Plan.run's checks
    of a workspace do not allocate it."""
    from types import SimpleNamespace

    from baracuda._plan import Plan

    calls = pool_driver.calls
    ws = Workspace.scratch(4096, _FakeStream())  # type: ignore[arg-type]
    assert not ws.allocated and calls == [] and "0x0" in repr(ws)
    Plan._check_workspace(SimpleNamespace(NAME="P", device_id=0), ws, 4096)  # type: ignore[arg-type]
    with pytest.raises(WorkspaceTooSmall, match="4096 bytes, needs 4097"):
        Plan._check_workspace(SimpleNamespace(NAME="P", device_id=0), ws, 4097)  # type: ignore[arg-type]
    assert calls == []
    ws.release(_FakeStream())  # type: ignore[arg-type]
    assert calls == []
    ws = Workspace.scratch(4096, _FakeStream())  # type: ignore[arg-type]
    assert ws.ptr == 0x7000_0000 and ws.ptr == 0x7000_0000 and ws.allocated
    assert calls == [("pool", 0), ("set", "pool100", "release_threshold", 256 * 2**20),
                     ("alloc", 4096, "pool100")]  # fmt: skip
    ws.release(_FakeStream())  # type: ignore[arg-type]
    assert calls[-1] == ("free", 0x7000_0000) and ws.ptr == 0


def test_scratch_pool_one_per_device_and_its_threshold(pool_driver: _PoolDriver) -> None:
    """One scratch pool per device, made on first use with the kept bytes as its release
    threshold; set_scratch_keep changes every pool's threshold and the later pools', and
    names the field and the value when it is not an int >= 0."""
    calls = pool_driver.calls
    for dev in (0, 1, 0, 1):
        assert Workspace.scratch(64, _FakeStream(dev)).ptr  # type: ignore[arg-type]
    assert [c for c in calls if c[0] == "pool"] == [("pool", 0), ("pool", 1)]
    assert [c[2] for c in calls if c[0] == "alloc"] == ["pool100", "pool101"] * 2
    calls.clear()
    Workspace.set_scratch_keep(0)
    assert sorted(calls) == [("set", "pool100", "release_threshold", 0),
                             ("set", "pool101", "release_threshold", 0)]  # fmt: skip
    calls.clear()
    assert Workspace.scratch(64, _FakeStream(2)).ptr  # type: ignore[arg-type]
    assert calls[:2] == [("pool", 2), ("set", "pool102", "release_threshold", 0)]
    for bad in (-1, 1.5, True, "64"):
        with pytest.raises(InvalidProblem, match=r"set_scratch_keep: nbytes must be an int >= 0"):
            Workspace.set_scratch_keep(bad)  # type: ignore[arg-type]


def test_bound_steps_replay_a_plan_run_for_other_arrays(monkeypatch: pytest.MonkeyPatch) -> None:
    """The functional API's prepared launches (``capturing``, ``bind_steps``): the steps of a
    run, their pointers bound to the call's arrays and workspace, enqueue for other arrays and
    another workspace exactly what launch_scan (and the fused cummax backward, flags in the
    workspace) enqueue for those addresses; they are refused where two arrays share an
    address, or an operand is neither an array nor in the workspace."""
    from baracuda.scan import _kernels as K

    mod, log = _logged_h100(monkeypatch)
    offset, ws_bytes = 4096, 1 << 20  # the states after 4 KiB of the workspace (the flags')
    for lookback in (True, False):
        monkeypatch.setattr(K, "LOOKBACK", lookback)
        for shape, axis, strides in (((64, 1024), 1, (1024, 1)), ((2, 2**23), 1, (2**23, 1)),
                                     ((2**20, 2), 0, (2, 1)), ((3, 50001), 1, (50001, 1)),
                                     ((300, 65), 0, (65, 1)), ((7, 5), 0, (1, 7))):  # fmt: skip
            layout = "rows" if strides[axis] == 1 else "cols"
            kw = dict(reverse=False, mode=0, vec_slots=(0, 3), itemsize=4, layout=layout,
                      sm_count=132, lines=mod)  # fmt: skip

            def direct(x: int, y: int, ws: int) -> list[tuple[object, ...]]:
                log.clear()
                K.launch_scan(mod, "sum", None, shape, axis, states_ptr=ws + offset,  # type: ignore[arg-type]
                              operands=[Slot(x, strides), None, None, Slot(y, strides), None],
                              **kw)  # type: ignore[arg-type]  # fmt: skip
                return list(log)

            cache = K.LaunchCache()
            for _ in range(2):  # recorded, then replayed: both captured
                with replay.capturing() as cap:
                    cache.launch_scan(mod, "sum", None, shape, axis,  # type: ignore[arg-type]
                                      operands=[Slot(1 << 30, strides), None, None,
                                                Slot(1 << 31, strides), None],
                                      workspace=Workspace(1 << 20, ws_bytes, None),
                                      offset=offset, **kw)  # type: ignore[arg-type]  # fmt: skip
                bound = replay.bind_steps(cap, (1 << 30, 1 << 31, 0), ws_bytes)
                assert bound is not None
                steps, uses = bound
                log.clear()
                for st in steps:
                    st.enqueue(0, (3 << 30, 5 << 30, 0), 7 << 20)
                got = list(log)
                assert got == direct(3 << 30, 5 << 30, 7 << 20), (shape, axis)
                assert uses == any(e[0] == "memset" or e[0] == "fn:scan_zero" or
                                   (7 << 20) + offset in _words(e) for e in got)  # fmt: skip
            assert replay.bind_steps(cap, (1 << 30, 1 << 30, 0), ws_bytes) is None  # shared
            assert replay.bind_steps(cap, (1 << 29, 1 << 31, 0), ws_bytes) is None  # x unknown
    # the fused cummax backward: the flags are the workspace's first bytes
    shape, st = (4096, 32), (32, 1)
    flags = K.flag_strides(shape, 1, "rows")
    kw2 = dict(reverse=False, mode=1, layout="rows", itemsize=4, sm_count=132)

    def direct_max(dy: int, x: int, dx: int, ws: int) -> list[tuple[object, ...]]:
        log.clear()
        K.launch_max_backward(mod, None, shape, 1, dy=Slot(dy, st), x=Slot(x, st),  # type: ignore[arg-type]
                              dx=Slot(dx, st), flags=Slot(ws, flags), **kw2)  # type: ignore[arg-type]  # fmt: skip
        return list(log)

    monkeypatch.setattr(K, "SEG_ROWS", False)  # the fused kernel, not the two segmented passes
    assert direct_max(1 << 30, 2 << 30, 3 << 30, 1 << 20)
    cache = K.LaunchCache()
    for _ in range(2):
        with replay.capturing() as cap:
            v = cache.launch_max_backward(mod, None, shape, 1, dy=Slot(1 << 30, st),  # type: ignore[arg-type]
                                          x=Slot(2 << 30, st), dx=Slot(3 << 30, st),
                                          flags=Slot(1 << 20, flags),
                                          workspace=Workspace(1 << 20, ws_bytes, None),
                                          **kw2)  # type: ignore[arg-type]  # fmt: skip
        assert v == "max_bwd_rows" and len(cache._recipes) == 1
        bound = replay.bind_steps(cap, (1 << 30, 3 << 30, 2 << 30, 0), ws_bytes)
        assert bound is not None and bound[1]  # the flags are in the workspace
        log.clear()
        for s in bound[0]:
            s.enqueue(0, (5 << 30, 6 << 30, 4 << 30, 0), 9 << 20)
        got = list(log)
        assert got == direct_max(5 << 30, 4 << 30, 6 << 30, 9 << 20)


def _words(entry: tuple[object, ...]) -> set[int]:
    """Every 8-byte word of a logged launch's arguments."""
    args = entry[-1]
    if not isinstance(args, tuple):
        return set()
    return {int.from_bytes(a[i:i + 8], "little") for a in args for i in range(0, len(a) - 7, 8)}


def _short_slots(op: str, shape: tuple[int, ...], strides: tuple[int, ...] | None = None,
                 offset: int = 0, aux_offset: int = 0) -> list[Slot | None]:  # fmt: skip
    """The operands of ``op`` over ``shape`` (strip slots: _strip_slots), dense at their own
    16-byte aligned addresses; the staged inputs with ``strides`` and ``offset`` bytes past
    their address where given; AUX (cummax/cummin's indices where ``op`` is "max", flags)
    ``aux_offset`` elements past its address."""
    dense = _dense(shape)
    slots: list[Slot | None] = []
    for k, s in enumerate(_strip_slots(op)):
        if s is None:
            slots.append(None)
        elif k < 3:
            slots.append(Slot(s.ptr + offset, strides or dense))
        else:
            slots.append(Slot(s.ptr + (aux_offset if k == 4 else 0), dense))
    if op == "max":
        slots[4] = Slot((5 << 30) + aux_offset * 8, dense)
    return slots


# (shape, axis, itemsize, x strides or None (dense), x byte offset, cumsum's entry, its lines a
# thread)
_SHORT_CASES = [
    ((2, 2**23), 0, 2, None, 0, "shortx4", 32),  # four 16-byte vectors a thread
    ((2, 2**23), 0, 4, None, 0, "shortx4", 16),
    ((3, 4096), 0, 4, None, 0, "shortx2", 8),  # two vectors over 3 and 4 positions
    ((4, 4096), 0, 8, None, 0, "shortx2", 4),
    ((5, 4096), 0, 2, None, 0, "short", 8),  # a vector a thread
    ((64, 4096), 0, 4, None, 0, "short", 4),
    ((6, 7, 64), 1, 2, None, 0, "short", 8),  # rank 3, the middle axis
    ((6, 2, 64), 1, 4, None, 0, "short", 4),  # outer dims that do not coalesce: one word
    ((3, 4, 64), 1, 2, None, 0, "short", 8),
    ((2, 5, 64), 0, 4, None, 0, "shortx4", 16),  # ... where they do (dims 1 and 2)
    ((65, 4096), 0, 4, None, 0, "", 0),  # past SHORT_MAX
    ((1, 4096), 0, 4, None, 0, "", 0),  # one position (the rows' layout's: never strided here)
    ((8, 4095), 0, 4, None, 0, "short1", 1),  # lines not whole vectors: a line a thread
    ((3, 4095), 0, 4, None, 0, "short1x8b3", 8),  # ... eight over 4 positions or fewer
    ((4, 4095), 0, 2, None, 0, "short1x8", 8),  # (three positions a batch over 3, else two)
    # more lines than the short kinds' grid cap (132 SMs x 64 blocks x 256 threads) takes: the
    # others walk them in turn, cummax/cummin's short1l takes every line in the grid
    ((2, 2**23 - 1), 0, 2, None, 0, "short1x8", 8),
    # cummax/cummin's lines: every line on the SMs at once (at most 2048 an SM) takes short1l,
    # over more than 32 positions of more than 1536 an SM short1l1; more lines short1lw over
    # more than 4 positions
    ((8, 132 * 2048 - 1), 0, 4, None, 0, "short1", 1),
    ((8, 132 * 2048 + 1), 0, 4, None, 0, "short1", 1),
    ((2, 132 * 2048 + 1), 0, 4, None, 0, "short1x8", 8),
    ((33, 132 * 2048 - 1), 0, 2, None, 0, "short1", 1),
    ((33, 132 * 1536 - 1), 0, 2, None, 0, "short1", 1),
    ((32, 132 * 2048 - 1), 0, 2, None, 0, "short1", 1),
    ((8, 4096), 0, 4, None, 4, "short1", 1),  # a misaligned pointer
    ((8, 2048), 0, 4, (8192, 2), 0, "short1", 1),  # every other line
    ((2, 2048), 0, 2, (8192, 2), 0, "short1x8", 8),
    ((8, 4096), 0, 4, (4098, 1), 0, "short1", 1),  # rows not whole vectors
    ((3, 2, 4096), 1, 4, (2 * 4098, 4098, 1), 0, "short1", 1),  # outer dims that do not coalesce
    ((8, 4096), 0, 4, (4104, 1), 0, "short", 4),  # padded rows of whole vectors
]
# the defaults (_kernels.SHORT_MANY, SHORT1_MANY) as measured: the kinds of NV words a thread
# over at most the given positions, where the outer dims coalesce to one
_SHORT_MANY_DEFAULTS = {
    **{op: ((2, "shortx4"), (4, "shortx2")) for op in ("sum", "prod", "maxflag", "seg_bwd")},
    "lse": ((4, "shortx2"),),
    "max": ((4, "shortx4"), (1 << 30, "shortx2")),
}
_SHORT1_MANY_DEFAULTS = {
    **{op: ((2, "short1x8"), (3, "short1x8b3"), (4, "short1x8")) for op in ("sum", "prod")},
    "max": ((4, "short1l"), (1 << 30, "short1lw")),
}
# ... before them (at most n positions, at most lines an SM, kind) (_kernels.SHORT1_RESIDENT)
_SHORT1_RESIDENT_DEFAULTS = {
    "max": ((32, 2048, "short1l"), (1 << 30, 1536, "short1l"), (1 << 30, 2048, "short1l1")),
}
_SHORT_NV = {"short": 1, "short1": 1, "shortx2": 2, "shortx4": 4, "short1x4": 4, "short1x8": 8,
             "short1x8b3": 8, "short1l": 1, "short1lw": 1, "short1l1": 1}  # fmt: skip


def _expected_short(op: str, n: int, vector: bool, one_dim: bool, itemsize: int,
                    lines_per_sm: float) -> tuple[str, int]:  # fmt: skip
    """The entry and lines a thread of ``op`` by the defaults: a 16-byte vector's word (cummax:
    two lines) or a line, NV of them where the outer dims coalesce to one, cummax/cummin's
    lines a thread where they all fit on the SMs at once."""
    kind = "short" if vector else "short1"
    if one_dim:
        table = _SHORT_MANY_DEFAULTS if vector else _SHORT1_MANY_DEFAULTS
        resident = () if vector else _SHORT1_RESIDENT_DEFAULTS.get(op, ())
        kind = next((k for most, per_sm, k in resident if n <= most and lines_per_sm <= per_sm),
                    next((k for most, k in table.get(op, ()) if n <= most), kind))  # fmt: skip
    word = (2 if op == "max" else 16 // itemsize) if vector else 1
    return kind, _SHORT_NV[kind] * word


@pytest.mark.parametrize("op", sorted(set(OPS)))
@pytest.mark.parametrize(("shape", "axis", "itemsize", "strides", "offset", "kind", "per"),
                         _SHORT_CASES)  # fmt: skip
def test_short_axis_launch(op: str, shape: tuple[int, ...], axis: int, itemsize: int,
                           strides: tuple[int, ...] | None, offset: int, kind: str, per: int,
                           monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """A strided axis of 2 to SHORT_MAX positions is one launch of scan_<op>_<kind>, no
    workspace, a thread for every ``per`` lines (cummax/cummin: two lines a 16-byte vector's
    word, for their indices; NV vectors only for the ops of SHORT_TWO_OPS / SHORT_FOUR_OPS),
    P.vec where AUX is 16-byte aligned with strides of whole vectors; none with the switch
    off."""
    from baracuda.scan import _kernels as K

    log = _LaunchLog("sm_90")
    seen: list[tuple[str, object, int, int]] = []

    def spy(fn: str, grid: object, block: int, smem: int, st: object, args: list[object],
            name: str = "", **kw: object) -> None:  # fmt: skip
        p = args[0]
        seen.append((name, grid, smem, int(p.vec)))  # type: ignore[attr-defined]
        log.launch(fn, grid, block, smem, st, args, name, **kw)  # type: ignore[arg-type]

    _patch(monkeypatch, "launch", spy)
    _patch(monkeypatch, "memset_zero", log.memset)
    monkeypatch.setattr(K, "_smem_room", lambda module, kernel: 1 << 30)

    def launch(aux_offset: int = 0) -> str:
        slots = _short_slots(op, shape, strides, offset, aux_offset)
        mode = 4 if op == "maxflag" else 0  # the winner flags' bit
        return K.launch_scan(log, op, None, shape, axis, reverse=False, mode=mode,  # type: ignore[arg-type]
                             operands=slots, vec_slots=(0, 3), itemsize=itemsize,
                             layout="cols", sm_count=132, states_ptr=1 << 20)  # fmt: skip

    n = shape[axis]
    lines = math.prod(shape) // n
    vector = not kind.startswith("short1")
    one_dim = len(shape) == 2 or axis == 0  # the outer dims coalesce to one
    if kind:
        per_sm = lines / 132
        assert _expected_short("sum", n, vector, one_dim, itemsize, per_sm) == (kind, per)
        kind, per = _expected_short(op, n, vector, one_dim, itemsize, per_sm)
        assert K.short_kind(op, n, vector, one_dim, per_sm) == kind
    variant = launch()
    if not kind:
        assert not variant.startswith("short"), variant
        return
    # the short kinds' cap of 64 blocks an SM, but for a line a thread of cummax/cummin
    cap = 2**31 - 1 if kind in ("short1l", "short1lw", "short1l1") else 132 * 64
    grid = max(1, min(-(-lines // (K.BLOCK * per)), cap))
    if (op, shape) == ("max", (2, 2**23 - 1)):
        assert grid == 32768 > 132 * 64, grid
    assert variant == f"{kind}x{grid}"
    assert seen == [(f"scan_{op}_{kind}", (grid, 1, 1), 0, int(vector))]
    if op in ("max", "maxflag", "seg_bwd") and vector:
        # AUX 8 bytes past a 16-byte boundary: moved an element at a time
        seen.clear()
        assert launch(aux_offset=1 if op == "max" else 8).startswith(kind)
        assert seen[0][3] == 0, seen
    monkeypatch.setattr(K, "SHORT", False)
    seen.clear()
    assert not launch().startswith("short")


@pytest.mark.parametrize("op", ["max", "sum"])
def test_short_axis_positions_fit_an_int(op: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """scan_short's cummax/cummin states hold int indices: with SHORT_MAX raised past 2^31, an
    axis of 2^31 positions does not take it, one of 2^31 - 1 still does."""
    from baracuda.scan import _kernels as K

    monkeypatch.setattr(K, "SHORT_MAX", 1 << 40)
    for n, takes in ((2**31 - 1, True), (2**31, False), (2**33, False)):
        shape = (n, 64)
        got = K._short_launch(op, shape, 0, _short_slots(op, shape), 4)
        assert (got is not None) == takes, (n, got)


@pytest.mark.parametrize("itemsize", [2, 4, 8])
def test_max_backward_over_short_axes_is_two_passes(itemsize: int,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Along a strided axis of 2 to SHORT_MAX positions the cummax/cummin backward enqueues
    nothing of its own (its two passes take scan_short: launch_scan), whatever the layout;
    from SHORT_MAX + 1 positions on, or with SHORT off, its one-pass strips as before."""
    from baracuda.scan import _kernels as K

    log = _LaunchLog("sm_90")
    _patch(monkeypatch, "launch", log.launch)
    monkeypatch.setattr(K, "_smem_room", lambda module, kernel: 1 << 30)

    def run(n: int, lines: int = 8192, x_strides: tuple[int, ...] | None = None) -> str | None:
        d = (lines, 1)
        return launch_max_backward(log, None, (n, lines), 0, reverse=False, mode=0,  # type: ignore[arg-type]
                                   dy=Slot(2 << 30, d), x=Slot(1 << 30, x_strides or d),
                                   dx=Slot(3 << 30, d), flags=Slot(4 << 30, d), layout="cols",
                                   itemsize=itemsize, sm_count=132)  # fmt: skip

    for n in (2, 3, K.SHORT_MAX):
        assert run(n) is None, n
        assert run(n, 8191) is None, n  # lines not whole vectors: short1
        assert run(n, 4096, (8192, 2)) is None, n  # x every other line
    assert log.calls == []
    assert (run(K.SHORT_MAX + 1) or "").startswith("max_bwd_strip")
    monkeypatch.setattr(K, "SHORT", False)
    assert (run(K.SHORT_MAX) or "").startswith("max_bwd_strip")


def test_short_entries_exist() -> None:
    """Every entry short_kind names is in its op's program, for every op, axis length and
    layout, whatever SHORT_MANY, SHORT1_MANY and SHORT1_RESIDENT list (SHORT_MANY_ENTRY_OPS
    bounds them)."""
    from baracuda.scan import _kernels as K

    groups = {op: g for g, ops in SCAN_GROUPS.items() for op in ops}

    def check() -> None:
        for op in OPS:
            entries = SCAN_SOURCES[groups[op]].entries
            for n in range(2, K.SHORT_MAX + 1):
                for vector, one_dim, per_sm in itertools.product((False, True), (False, True),
                                                                  (0, math.inf)):  # fmt: skip
                    kind = K.short_kind(op, n, vector, one_dim, per_sm)
                    assert f"scan_{op}_{kind}" in entries, (op, n, vector, one_dim, per_sm)
                    assert kind in ("short", "short1") or one_dim, (op, n, kind)

    check()
    old = (K.SHORT_MANY, K.SHORT1_MANY, K.SHORT1_RESIDENT)
    every = tuple((m, k) for m in (2, 4, 64) for k in SHORT_MANY_ENTRY_OPS)
    try:
        K.SHORT_MANY = K.SHORT1_MANY = {op: every for op in OPS}
        check()
        K.SHORT1_RESIDENT = {op: tuple((m, 2048, k) for m, k in every) for op in OPS}
        check()
    finally:
        K.SHORT_MANY, K.SHORT1_MANY, K.SHORT1_RESIDENT = old
