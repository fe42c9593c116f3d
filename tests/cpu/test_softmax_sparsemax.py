"""Sparsemax on the CPU: the array-API reference against independent oracles, the kernel's
algorithm (Michelot with candidate lists) modelled in numpy, validation, compilation."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from baracuda.errors import InvalidProblem, Unsupported
from baracuda.softmax import (
    SparsemaxBackwardDescriptor,
    SparsemaxBackwardPlan,
    SparsemaxDescriptor,
    SparsemaxPlan,
    reference,
)
from baracuda.softmax._rows import (
    BWD_VARIANTS,
    VARIANTS,
    FwdSplit,
    RowSplit,
    fwd_split,
    row_split,
    variant_for,
)
from baracuda.softmax.api import sparsemax, sparsemax_backward
from baracuda.softmax.cases import make_rows
from baracuda.types import ElementKind

torch = pytest.importorskip("torch")


def torch_sparsemax(x: torch.Tensor, dim: int) -> torch.Tensor:
    """Independent oracle: the sort-based formula in torch (autograd gives the backward)."""
    from baracuda.softmax.cases import torch_sparsemax_sort

    return torch_sparsemax_sort(x, dim)


SHAPES_AXES = [((1,), 0), ((2,), -1), ((6, 7), -1), ((6, 7), 0), ((3, 1000), 1),
               ((4, 5, 6), 1), ((4, 5, 6), -3), ((2, 3, 2, 129), 3), ((1, 1, 1), 1)]  # fmt: skip
KINDS = ["normal", "ties", "inf", "flat"]


@pytest.mark.parametrize(("shape", "axis"), SHAPES_AXES, ids=str)
@pytest.mark.parametrize("kind", KINDS)
def test_reference_matches_torch_sort_oracle(shape: tuple[int, ...], axis: int, kind: str) -> None:
    rng = np.random.default_rng(hash((shape, axis, kind)) % 2**32)
    x = make_rows(rng, shape, kind)
    if kind == "inf":  # keep one finite value per row so no row is all -inf
        idx = [slice(None)] * len(shape)
        idx[axis] = 0  # type: ignore[call-overload]
        x[tuple(idx)] = 0.5
    y = reference.sparsemax(x, axis)
    want = torch_sparsemax(torch.from_numpy(x), axis).numpy()
    np.testing.assert_allclose(y, want, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(y.sum(axis=axis), 1.0, rtol=1e-12)
    assert (y >= 0).all()
    # the torch-CPU array-API path gives the same
    yt = reference.sparsemax(torch.from_numpy(x), axis)
    np.testing.assert_allclose(yt.numpy(), y, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize(("shape", "axis"), SHAPES_AXES, ids=str)
def test_backward_reference_matches_torch_autograd(shape: tuple[int, ...], axis: int) -> None:
    # random (tie-free) rows: with a z exactly equal to tau, torch's clamp passes a gradient
    # to an entry whose y is 0, a choice of subgradient the seed (m = y > 0) does not make
    rng = np.random.default_rng(7)
    x = torch.from_numpy(make_rows(rng, shape, "normal")).requires_grad_()
    dy = torch.from_numpy(rng.standard_normal(shape))
    y = torch_sparsemax(x, axis)
    (want,) = torch.autograd.grad(y, x, dy)
    got = reference.sparsemax_backward(dy.numpy(), y.detach().numpy(), axis)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-12, atol=1e-13)


def test_reference_matches_entmax_where_installed() -> None:
    entmax = pytest.importorskip("entmax")
    rng = np.random.default_rng(3)
    x = torch.from_numpy(rng.standard_normal((17, 300))).requires_grad_()
    want = entmax.sparsemax(x, dim=-1)
    np.testing.assert_allclose(reference.sparsemax(x.detach().numpy(), -1),
                               want.detach().numpy(), rtol=1e-10, atol=1e-12)  # fmt: skip
    dy = torch.randn(17, 300, dtype=torch.float64)
    (g,) = torch.autograd.grad(want, x, dy)
    got = reference.sparsemax_backward(dy.numpy(), want.detach().numpy(), -1)
    np.testing.assert_allclose(got, g.numpy(), rtol=1e-10, atol=1e-12)


def test_special_rows() -> None:
    inf, nan = np.inf, np.nan
    x = np.array([
        [1.0, 1.0, 1.0, 1.0],           # all equal: uniform
        [-inf, 0.0, -inf, -inf],        # -inf entries get 0
        [nan, 1.0, 2.0, 3.0],           # NaN row
        [inf, 1.0, 2.0, 3.0],           # +inf: NaN row
        [-inf, -inf, -inf, -inf],       # only -inf: NaN row (documented)
        [1e300, 1e300, 0.0, -1e300],    # huge magnitudes: the tied maxima share
        [3.0, 3.0, 2.5, -1.0],          # ties at the top, one more in the support
    ])  # fmt: skip
    y = reference.sparsemax(x, -1)
    np.testing.assert_allclose(y[0], 0.25)
    np.testing.assert_array_equal(y[1], [0, 1, 0, 0])
    assert np.isnan(y[2:5]).all()
    np.testing.assert_allclose(y[5], [0.5, 0.5, 0, 0])
    np.testing.assert_allclose(y[6], [0.5, 0.5, 0.0, 0.0])
    assert reference.sparsemax(np.array([[-3.0], [7.5]]), 1).tolist() == [[1.0], [1.0]]


def test_half_types_compute_in_f32_and_round_once() -> None:
    import ml_dtypes

    rng = np.random.default_rng(5)
    x64 = rng.standard_normal((8, 100))
    for dt in (np.float16, ml_dtypes.bfloat16, np.float32):
        x = x64.astype(dt)
        y = reference.sparsemax(x, -1)
        assert y.dtype == x.dtype
        want = reference.sparsemax(x.astype(np.float32), -1).astype(dt)
        np.testing.assert_array_equal(y.astype(np.float64), want.astype(np.float64))


def test_empty_inputs() -> None:
    assert reference.sparsemax(np.zeros((0, 4)), -1).shape == (0, 4)
    assert reference.sparsemax(np.zeros((4, 0)), -1).shape == (4, 0)
    assert reference.sparsemax_backward(np.zeros((3, 0)), np.zeros((3, 0)), 1).shape == (3, 0)


# --- the kernel's algorithm, modelled in numpy ---------------------------------------------
def michelot_model(z: np.ndarray, list_cap: int | None) -> float:
    """The streaming kernel's loop: Michelot from tau = -1 over the whole row until the
    candidates z > tau fit the list (``list_cap``), then over the list; stop when the
    support stops shrinking. Returns tau (for z = x - max(x))."""
    tau, prev, listed = -1.0, z.size + 1, None
    while True:
        pool = z if listed is None else listed
        sup = pool[pool > tau]
        if listed is None and list_cap is not None and sup.size <= list_cap:
            listed = sup
        c = sup.size
        if c >= prev:
            return tau
        prev, tau = c, (float(sup.sum()) - 1.0) / c


@pytest.mark.parametrize("kind", ["normal", "ties", "inf", "flat", "huge"])
@pytest.mark.parametrize("n", [1, 2, 7, 1000, 4096, 40000])
@pytest.mark.parametrize("cap", [None, 16, 4096])
def test_michelot_model_equals_sort_reference(kind: str, n: int, cap: int | None) -> None:
    rng = np.random.default_rng(n)
    x = make_rows(rng, (4, n), kind)
    x[:, 0] = np.maximum(x[:, 0], 0.0)  # at least one finite entry per row
    y = reference.sparsemax(x, -1)
    for r in range(4):
        z = x[r] - x[r].max()
        tau = michelot_model(z, cap)
        got = np.where(z > tau, z - tau, 0.0)
        np.testing.assert_allclose(got, y[r], rtol=1e-9, atol=1e-12)
        np.testing.assert_array_equal(got > 0, y[r] > 0)  # same support, ties included


def test_variant_table() -> None:
    fwd = {1: "8x1", 8: "8x1", 9: "8x2", 16: "8x2", 17: "8x4", 32: "8x4", 33: "8x8", 64: "8x8",
           65: "8x16", 128: "8x16", 129: "8x32",
           256: "8x32", 257: "16x32", 512: "16x32",
           513: "32x32", 1024: "32x32", 1025: "16x128",
           2048: "16x128", 2049: "16x256", 4096: "16x256", 4097: "16x512", 8192: "16x512",
           8193: "stream", 2**40: "stream"}  # fmt: skip
    assert {n: variant_for(n).name for n in fwd} == fwd
    bwd = {1: "8x1", 8: "8x1", 9: "8x2", 16: "8x2", 17: "8x4", 32: "8x4", 33: "8x8", 64: "8x8",
           65: "8x16", 128: "8x16", 129: "8x32",
           256: "8x32", 257: "16x32", 512: "16x32",
           513: "16x64", 1024: "16x64",
           1025: "16x128", 2048: "16x128", 2049: "16x256", 4096: "16x256", 4097: "16x512",
           8192: "16x512", 8193: "stream"}  # fmt: skip
    assert {n: variant_for(n, "bwd").name for n in bwd} == bwd
    for table in (VARIANTS, BWD_VARIANTS):
        # a group is aligned lanes of a warp or the whole block (group reductions); past
        # 1024, a row uses more than half of its group's threads (the smallest that holds it)
        assert all(v.block % v.group == 0 and (v.group <= 32 or v.group == v.block)
                   for v in table)  # fmt: skip
        sized = [v for v in table if v.per_thread]
        assert sized == sorted(sized, key=lambda v: v.max_n)
        for small, big in itertools.pairwise(sized):
            if big.max_n > 1024:
                assert big.max_n == 2 * small.max_n, (small, big)
        assert table[-1].name == "stream" and not table[-1].per_thread


def test_register_variants_launch_a_block_per_row_group(monkeypatch: Any) -> None:
    """Register variants launch ceil(rows / rows per block) blocks of the variant's size, but
    the backward's staged kernels (BWD_STAGED, for 4- and 8-byte types) launch at most one
    wave of resident blocks. A stand-in module: no GPU needed."""
    from baracuda._cuda.view import TensorView
    from baracuda.softmax import _rows

    grids: list[tuple[str, int, int]] = []

    def fake_launch(fn: object, grid: tuple[int, int, int], block: int, smem: int,
                    stream: object, args: object, name: str) -> None:  # fmt: skip
        grids.append((name, grid[0], block))

    class FakeModule:
        sm_count = 132

        def function(self, op: str, dynamic_smem: int = 0) -> str:
            return op

        def resident_blocks(self, op: str, block: int, dynamic_smem: int = 0) -> int:
            assert op.endswith("_staged"), op
            return {64: 16, 512: 2}[block]

    monkeypatch.setattr(_rows, "launch", fake_launch)
    mod: Any = FakeModule()
    shapes = ((32768, 1024), (4096, 8192), (100, 1000), (16384, 2048), (65536, 512),
              (50, 3000), (7, 100))  # fmt: skip
    for bits, code in ((32, 2), (16, 4), (64, 2)):
        for rows, n in shapes:
            v = TensorView(256, (rows, n), (n, 1), (code, bits), 2, 0)
            for direction, views in (("bwd", (v, v, v)), ("fwd", (v, v))):
                grids.clear()
                _rows.launch_rows(mod, direction, None, views, 1)  # type: ignore[arg-type]
                var = variant_for(n, direction)
                op, grid = f"sparsemax_{direction}_{var.name}", -(-rows // var.rows_per_block)
                if direction == "bwd" and bits >= 32 and var.name in ("16x64", "16x512"):
                    op += "_staged"
                    grid = min(grid, 132 * mod.resident_blocks(op, var.block))
                assert grids == [(op, grid, var.block)], (bits, rows, n, direction)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("listed", [True, False])
def test_split_launches(monkeypatch: pytest.MonkeyPatch, arch: str, listed: bool) -> None:
    """Split rows run their kernels in order on a (pieces, rows) grid (the forward's tau on
    one block a row); on sm_90 the backward's second kernel is a dependent launch. Pieces of
    128 KiB or more list their support."""
    from baracuda._cuda.view import TensorView
    from baracuda.softmax import _rows

    calls: list[tuple[str, tuple[int, int, int], bool]] = []

    def fake_launch(fn: object, grid: tuple[int, int, int], block: int, smem: int,
                    stream: object, args: object, name: str, *, dependent: bool = False,
                    ) -> None:  # fmt: skip
        assert block == _rows.SPLIT_BLOCK
        calls.append((name, grid, dependent))

    class FakeModule:
        sm_count = 132
        element = ElementKind.F32
        cooperative = False

        def __init__(self) -> None:
            self.arch = arch

        def function(self, op: str, dynamic_smem: int = 0) -> str:
            return op

    monkeypatch.setattr(_rows, "launch", fake_launch)
    monkeypatch.setattr(_rows, "SPLIT_LIST", listed)
    mod: Any = FakeModule()
    v = TensorView(256, (64, 131072), (131072, 1), (2, 32), 4, 0)
    dep = arch == "sm_90"
    split = row_split((64, 131072), 1, 132)
    assert _rows.launch_rows(mod, "bwd", None, (v, v, v), 1, split, 4096) == "split4/vec16"
    first, second = ("zero", "fix") if listed else ("sum", "write")  # pieces of 128 KiB
    assert calls == [(f"sparsemax_bwd_split_{first}", (4, 64, 1), False),
                     (f"sparsemax_bwd_split_{second}", (4, 64, 1), dep)]  # fmt: skip
    calls.clear()
    half = TensorView(256, (64, 131072), (131072, 1), (4, 16), 2, 0)  # bf16: 64 KiB pieces
    _rows.launch_rows(mod, "bwd", None, (half, half, half), 1, split, 4096)
    assert [c[0] for c in calls] == ["sparsemax_bwd_split_sum", "sparsemax_bwd_split_write"]
    calls.clear()
    fsplit = _rows.fwd_split((64, 131072), 1, 132)
    assert _rows.launch_rows(mod, "fwd", None, (v, v), 1, fsplit, 4096) == "split16/vec16"
    assert calls == [("sparsemax_fwd_split_scan", (16, 64, 1), False),
                     ("sparsemax_fwd_split_tau", (64, 1, 1), False),
                     ("sparsemax_fwd_split_write", (16, 64, 1), False)]  # fmt: skip


def test_split_backward_in_one_cooperative_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """The split backward is one cooperative launch on a (pieces, rows) grid where the device
    takes cooperative launches, pieces hold at most SPLIT_COOP_PIECE elements and the whole
    grid is resident; two kernels otherwise."""
    from baracuda._cuda.view import TensorView
    from baracuda.softmax import _rows

    calls: list[tuple[str, tuple[int, int, int], bool]] = []

    def fake_launch(fn: object, grid: tuple[int, int, int], block: int, smem: int,
                    stream: object, args: list[Any], name: str, *, dependent: bool = False,
                    cooperative: bool = False) -> None:  # fmt: skip
        assert block == _rows.SPLIT_BLOCK
        calls.append((name, grid, cooperative))

    class FakeModule:
        sm_count = 132
        element = ElementKind.BF16
        arch = "sm_90"
        cooperative = True

        def function(self, op: str, dynamic_smem: int = 0) -> str:
            return op

        def resident_blocks(self, op: str, block: int, dynamic_smem: int = 0) -> int:
            assert (op, block) == ("sparsemax_bwd_split_coop", 512)
            return 2

    monkeypatch.setattr(_rows, "launch", fake_launch)
    mod: Any = FakeModule()

    def run(shape: tuple[int, int]) -> str:
        calls.clear()
        v = TensorView(256, shape, (shape[1], 1), (4, 16), 2, 0)
        split = row_split(shape, 1, 132)
        assert split is not None
        return _rows.launch_rows(mod, "bwd", None, (v, v, v), 1, split, 4096)

    assert run((64, 131072)) == "split4/coop/vec16"
    assert calls == [("sparsemax_bwd_split_coop", (4, 64, 1), True)]
    assert run((16, 2**20)) == "split16/coop/vec16"  # pieces of 65536: the most it takes
    assert run((1, 2**24)) == "split264/coop/vec16"  # 264 blocks: one per resident slot
    assert run((1, 2**26)).startswith("split264/vec16")  # pieces of 254208: two kernels
    assert not any(c[2] for c in calls)
    assert run((200, 8200)) == "split2/vec16"  # 400 blocks: more than 264 resident
    monkeypatch.setattr(mod, "cooperative", False)
    assert run((64, 131072)) == "split4/vec16"
    monkeypatch.setattr(mod, "cooperative", True)
    monkeypatch.setattr(_rows, "SPLIT_COOP", False)
    assert run((64, 131072)) == "split4/vec16"
    # the piece limit mirrors the kernel's shared-memory mask (sparsemax.cu, kCoopPiece)
    cu = (Path(_rows.__file__).parent / "sparsemax.cu").read_text()
    assert f"constexpr int kCoopPiece = {_rows.SPLIT_COOP_PIECE};" in cu
    # the GPU test test_backward_coop_support_list_boundary brackets the support list's size
    assert "constexpr int kCoopList = 512;" in cu


def test_row_split_for_few_long_rows() -> None:
    # one wave of 2 blocks an SM: 264 blocks on 132 SMs, pieces of at least 8192 elements
    assert row_split((64, 131072), 1, 132) == RowSplit(64, 4, 32768)
    assert row_split((131072, 64), 0, 132) == RowSplit(64, 4, 32768)
    assert row_split((32, 262144), 1, 132) == RowSplit(32, 8, 32768)
    assert row_split((64, 40000), 1, 132) == RowSplit(64, 4, 10000)
    assert row_split((2, 2**20 + 1), -1, 132) == RowSplit(2, 129, 8136)
    assert row_split((1, 2**26), -1, 132) == RowSplit(1, 264, 254208)
    assert row_split((200, 8193), 1, 132) == RowSplit(200, 2, 4104)  # at least 2 pieces
    assert row_split((1024, 32768), 1, 132) is None  # enough rows to fill the GPU
    assert row_split((8, 8192), 1, 132) is None  # register variant
    assert row_split((0, 40000), 1, 132) is None
    assert row_split((3, 0), 1, 132) is None
    for shape in ((7, 8193), (3, 10**6 + 3), (100, 65537), (1, 2**20 + 9)):
        sp = row_split(shape, 1, 114)
        assert sp is not None and sp.piece % 8 == 0 and sp.pieces >= 2
        assert (sp.pieces - 1) * sp.piece < shape[1] <= sp.pieces * sp.piece  # no empty piece
        assert sp.rows * sp.pieces <= max(2 * 114, 2 * sp.rows)
    sp = RowSplit(64, 8, 16384)
    # per piece: sum (acc), count (i64), listed support count (i32), 1024 listed positions
    assert sp.workspace_size(ElementKind.BF16) == 64 * 8 * (4 + 8 + 4 + 1024 * 4)
    assert sp.count_offset(ElementKind.F64) % 16 == 0


def test_forward_split_for_few_long_rows() -> None:
    assert fwd_split((64, 131072), 1, 132) == FwdSplit(64, 16)
    assert fwd_split((131072, 64), 0, 132) == FwdSplit(64, 16)
    assert fwd_split((3, 8193), -1, 132) == FwdSplit(3, 2)
    assert fwd_split((1024, 32768), 1, 132) is None  # enough rows to fill the GPU
    assert fwd_split((8, 8192), 1, 132) is None  # register variant
    assert fwd_split((70000, 1, 9000), 0, 132) is None  # enough rows
    assert fwd_split((0, 40000), 1, 132) is None
    assert fwd_split((3, 0), 1, 132) is None
    sp = FwdSplit(64, 5)
    cnt, cand, row, end = sp.offsets(ElementKind.F32)
    assert (cnt, cand, row) == (1280, 2560, 2560 + 320 * 512 * 4)
    assert end == sp.workspace_size(ElementKind.F32) == row + 64 * 2 * 4
    assert all(o % 16 == 0 for o in FwdSplit(3, 7).offsets(ElementKind.F64)[:3])


# --- functional API on CPU arrays ----------------------------------------------------------
def test_functional_cpu_paths() -> None:
    rng = np.random.default_rng(11)
    x = rng.standard_normal((5, 9, 3))
    y = sparsemax(x, axis=1)
    np.testing.assert_allclose(y, reference.sparsemax(x, 1))
    yt = sparsemax(torch.from_numpy(x), axis=-2)
    assert isinstance(yt, torch.Tensor)
    np.testing.assert_allclose(yt.numpy(), y)
    dy = rng.standard_normal(x.shape)
    np.testing.assert_allclose(sparsemax_backward(dy, y, axis=1),
                               reference.sparsemax_backward(dy, y, 1))  # fmt: skip
    with pytest.raises(InvalidProblem, match="axis"):
        sparsemax(x, axis=3)
    with pytest.raises(InvalidProblem, match="axis"):
        sparsemax(x, axis=1.0)  # type: ignore[arg-type]
    with pytest.raises(InvalidProblem, match="rank"):
        sparsemax(np.float64(1.0) * np.ones(()), axis=-1)
    with pytest.raises(InvalidProblem, match="shape"):
        sparsemax_backward(dy[:, :3], y, axis=1)


# --- plan validation (raised before any GPU is touched) -------------------------------------
@pytest.mark.parametrize(("plan", "desc_cls"), [(SparsemaxPlan, SparsemaxDescriptor),
                                           (SparsemaxBackwardPlan, SparsemaxBackwardDescriptor)])
def test_descriptor_validation(plan: type, desc_cls: type) -> None:
    f32 = ElementKind.F32
    with pytest.raises(InvalidProblem, match=rf"{plan.NAME}: axis must be in \[-2, 2\) \(got 2\)"):
        plan.select(0, desc_cls((3, 4), 2, f32))
    with pytest.raises(InvalidProblem, match="non-negative"):
        plan.select(0, desc_cls((3, -4), 0, f32))
    with pytest.raises(Unsupported, match="rank"):
        plan.select(0, desc_cls((1,) * 9, 0, f32))
    with pytest.raises(Unsupported, match="rank"):
        plan.select(0, desc_cls((), 0, f32))
    with pytest.raises(Unsupported, match="element"):
        plan.select(0, desc_cls((3, 4), 0, "f32"))
    with pytest.raises(InvalidProblem, match="tuple of ints"):
        plan.select(0, desc_cls([3, 4], 0, f32))
    with pytest.raises(InvalidProblem, match="axis must be an int"):
        plan.select(0, desc_cls((3, 4), True, f32))


def test_descriptors_are_frozen_and_hashable() -> None:
    d = SparsemaxDescriptor((4, 32000), -1, ElementKind.BF16)
    assert hash(d) == hash(SparsemaxDescriptor((4, 32000), -1, ElementKind.BF16))
    with pytest.raises(AttributeError):
        d.axis = 0  # type: ignore[misc]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_kernels_compile(arch: str) -> None:
    from baracuda._cuda.compiler import compile_cubin, kernel_name
    from baracuda.softmax._rows import SPARSEMAX_SOURCE

    for el in ElementKind:
        cubin = compile_cubin(SPARSEMAX_SOURCE, el, arch)
        for op in SPARSEMAX_SOURCE.entries:
            assert kernel_name(op, el).encode() in cubin, (op, el)


def test_import_pulls_no_framework() -> None:
    code = ("import sys, baracuda.softmax, baracuda.softmax.api, baracuda.softmax.cases; "
            "bad = [m for m in ('torch', 'cupy', 'jax') if m in sys.modules]; "
            "assert not bad, bad")  # fmt: skip
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize(
    ("direction", "shape", "coop"),
    [("fwd", (64, 1024), False), ("bwd", (300, 65), False), ("fwd", (64, 131072), False),
     ("bwd", (64, 131072), False), ("bwd", (64, 131072), True)],
)  # fmt: skip
def test_prepared_launches_replay_launch_rows(direction: str, shape: tuple[int, int], coop: bool,
                                              monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Inside ``capturing``, launch_rows hands what it enqueued to the functional API's
    prepared launches (``replay``): bound to the views and the workspace, they enqueue for
    other views and another workspace exactly what launch_rows enqueues for those (the
    register rows, the split forward's three kernels, the split backward's two kernels and
    its cooperative kernel, with their workspace pointers)."""
    from baracuda._cuda import replay
    from baracuda._cuda.view import TensorView
    from baracuda.softmax import _rows

    log: list[tuple[object, ...]] = []

    def spy(fn: object, grid: tuple[int, int, int], block: int, smem: int, stream: object,
            args: list[Any], name: str = "", **kw: bool) -> None:  # fmt: skip
        log.append((fn, grid, block, smem, name, kw.get("dependent", False),
                    kw.get("cooperative", False), tuple(bytes(a) for a in args)))  # fmt: skip

    class FakeModule:
        sm_count = 132
        element = ElementKind.F32
        arch = "sm_90"
        cooperative = coop

        def function(self, op: str, dynamic_smem: int = 0) -> str:
            return f"fn:{op}"

        def resident_blocks(self, op: str, block: int, dynamic_smem: int = 0) -> int:
            return 2

    monkeypatch.setattr(_rows, "launch", spy)
    monkeypatch.setattr(replay, "launch", spy)
    mod: Any = FakeModule()
    n = shape[1]
    nviews = 2 if direction == "fwd" else 3
    split = (_rows.fwd_split(shape, 1, 132) if direction == "fwd"
             else row_split(shape, 1, 132))  # fmt: skip
    ws_bytes = split.workspace_size(ElementKind.F32) if split is not None else 0

    def views(base: int) -> tuple[TensorView, ...]:
        return tuple(TensorView(base + (k << 32), shape, (n, 1), (2, 32), 2, 0)
                     for k in range(nviews))  # fmt: skip

    def direct(base: int, ws: int) -> list[tuple[object, ...]]:
        log.clear()
        _rows.launch_rows(mod, direction, None, views(base), 1, split, ws)  # type: ignore[arg-type]
        return list(log)

    with replay.capturing() as cap:
        variant = _rows.launch_rows(mod, direction, None, views(1 << 36), 1, split,  # type: ignore[arg-type]
                                    (1 << 20) if split else 0)  # fmt: skip
    assert variant.startswith("split") == (split is not None)
    assert ("coop" in variant) == coop
    bound = replay.bind_steps(cap, [v.ptr for v in views(1 << 36)], ws_bytes)
    assert bound is not None
    steps, uses = bound
    assert uses == (split is not None)
    log.clear()
    for st in steps:
        st.enqueue(0, [v.ptr for v in views(1 << 40)], 7 << 20)
    got = list(log)
    assert got == direct(1 << 40, (7 << 20) if split else 0), variant
    assert len(got) == (3 if direction == "fwd" and split else 2 if split and not coop else 1)


def test_launch_rows_switches_are_known() -> None:
    """Every upper-case global of _rows that launch_rows reads at each launch is one of the
    switches a prepared launch is checked against (_SWITCHES); the others are fixed."""
    from baracuda.softmax import _rows

    names = {n for n in vars(_rows) if n.isupper() and not n.startswith("_")}
    assert names <= set(_rows._SWITCHES) | set(_rows._FIXED), (
        names - set(_rows._SWITCHES) - set(_rows._FIXED))  # fmt: skip
    assert not set(_rows._SWITCHES) & set(_rows._FIXED)
    assert _rows.switch_values()[: len(_rows._SWITCHES)] == tuple(
        getattr(_rows, n) for n in _rows._SWITCHES)  # fmt: skip
