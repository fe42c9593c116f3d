"""Sparsemax forward and backward on the GPU against the float64 reference: every dtype, row
lengths 1 to 2^20 (every kernel variant), every axis, strided and misaligned views, ties,
-inf, special rows, poisoned outputs."""

from __future__ import annotations

import numpy as np
import pytest

from baracuda._cuda.memory import Workspace
from baracuda._cuda.stream import Stream
from baracuda.errors import InvalidProblem, WorkspaceTooSmall
from baracuda.softmax import (
    SparsemaxArgs,
    SparsemaxBackwardArgs,
    SparsemaxBackwardDescriptor,
    SparsemaxBackwardPlan,
    SparsemaxDescriptor,
    SparsemaxPlan,
    reference,
)
from baracuda.softmax._rows import row_split
from baracuda.softmax.api import sparsemax, sparsemax_backward
from baracuda.softmax.cases import TOLERANCE, torch_sparsemax_sort
from baracuda.types import ElementKind
from tests.helpers import poisoned, torch_dtype

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

ELEMENTS = list(ElementKind)
# the lengths (1, 2, 7: 8x1), plus one inside each register variant's range the others
# miss (8: 8x1, 13: 8x2, 30: 8x4, 33 and 64: 8x8, 100 and 128: 8x16, 200: 8x32, 300: 16x32,
# 2500: 16x256, 6000 and 8192: 16x512)
LENGTHS = [1, 2, 7, 8, 13, 30, 33, 64, 100, 128, 200, 300, 1000, 1024, 1025, 2500, 4096, 6000,
           8192, 32000, 131072, 2**20]  # fmt: skip
LAYOUTS = ["last", "first", "middle", "strided", "offset"]


def _rows_for(n: int) -> int:
    return max(2, min(40, 2**21 // n))


def _data(rng: np.random.Generator, shape: tuple[int, ...], axis: int) -> np.ndarray:
    """Normal values with ties (a coarse grid on part of each row) and -inf entries, at least
    one finite value per row."""
    x = rng.standard_normal(shape) * 1.5
    grid = rng.random(shape) < 0.3
    x[grid] = np.round(x[grid] * 2.0) / 2.0
    x[rng.random(shape) < 0.1] = -np.inf
    idx = [slice(None)] * len(shape)
    idx[axis] = 0
    x[tuple(idx)] = 1.0
    return x


def _make(layout: str, n: int, rows: int, element: ElementKind,
          rng: np.random.Generator) -> tuple[torch.Tensor, int]:  # fmt: skip
    """An input view of the given layout and the axis to reduce over."""
    dt = torch_dtype(element)
    if layout == "last":
        shape, axis = (rows, n), -1
    elif layout == "first":
        shape, axis = (n, rows), 0
    elif layout == "middle":
        shape, axis = (2, n, max(1, rows // 2)), 1
    elif layout == "strided":  # every other element along the axis, every other row
        base = torch.from_numpy(_data(rng, (2 * rows, 2 * n), 1)).to(dt).cuda()
        return base[::2, ::2], 1
    else:  # "offset": contiguous axis, rows not 16-byte aligned -> scalar path
        flat = torch.empty(rows * n + 1, dtype=dt, device="cuda")
        view = flat[1:].view(rows, n)
        view.copy_(torch.from_numpy(_data(rng, (rows, n), 1)).to(dt))
        return view, -1
    return torch.from_numpy(_data(rng, shape, axis)).to(dt).cuda(), axis


def _check(out: torch.Tensor, want: np.ndarray, element: ElementKind, what: str) -> None:
    o = out.detach().to("cpu", torch.float64).numpy()
    assert o.shape == want.shape, what
    nan_o, nan_w = np.isnan(o), np.isnan(want)
    assert np.array_equal(nan_o, nan_w), f"{what}: NaN where the reference has none " \
        f"(or the reverse) at {np.argwhere(nan_o != nan_w)[:5].tolist()}"
    ok = ~nan_w
    err = np.abs(o[ok] - want[ok]) / np.maximum(1.0, np.abs(want[ok]))
    tol = TOLERANCE[element]
    if err.size and err.max() > tol:
        bad = np.argwhere(ok & (np.abs(o - want) / np.maximum(1.0, np.abs(want)) > tol))[:6]
        lines = [f"  at {tuple(int(j) for j in i)}: got {o[tuple(i)]!r}, want {want[tuple(i)]!r}"
                 for i in bad]  # fmt: skip
        raise AssertionError(f"{what}: max err {err.max():.3g} > {tol}\n" + "\n".join(lines))


def _stream() -> Stream:
    return Stream.wrap(torch.cuda.current_stream())


def _ws(plan: SparsemaxPlan, s: Stream) -> Workspace:
    """The forward's workspace (0 bytes unless its rows are split)."""
    return Workspace.allocate(plan.workspace_size(), s)


@pytest.mark.parametrize("element", ELEMENTS, ids=lambda e: e.value)
@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_forward(element: ElementKind, n: int, layout: str) -> None:
    rng = np.random.default_rng(n * 7 + LAYOUTS.index(layout))
    x, axis = _make(layout, n, _rows_for(n), element, rng)
    s = _stream()
    plan = SparsemaxPlan.select(s, SparsemaxDescriptor(tuple(x.shape), axis, element))
    y = poisoned(tuple(x.shape), element)
    plan.run(s, _ws(plan, s), SparsemaxArgs(x, y))
    x64 = x.to("cpu", torch.float64).numpy()
    want = reference.sparsemax(x64, axis)
    _check(y, want, element, f"sparsemax {layout} n={n} ({plan.last_variant})")
    sums = y.to(torch.float64).sum(dim=axis)
    assert torch.allclose(sums, torch.ones_like(sums), atol=max(1e-4, TOLERANCE[element] * 4))


@pytest.mark.parametrize("element", ELEMENTS, ids=lambda e: e.value)
@pytest.mark.parametrize("n", [5, 1000, 5000, 40000])
def test_forward_special_rows(element: ElementKind, n: int) -> None:
    huge = {ElementKind.F16: 1e4, ElementKind.BF16: 1e30, ElementKind.F32: 1e30,
            ElementKind.F64: 1e300}[element]  # fmt: skip
    rng = np.random.default_rng(n)
    rows = [
        np.full(n, 0.7),                                  # all equal: 1/n each
        np.where(np.arange(n) == n // 2, 2.0, -np.inf),  # one finite entry: 1 there
        np.full(n, -np.inf),                              # only -inf: NaN (documented)
        np.r_[np.nan, rng.standard_normal(n - 1)],        # NaN: NaN row
        np.r_[rng.standard_normal(n - 1), np.inf],        # +inf: NaN row
        np.round(rng.standard_normal(n)) * huge,          # huge magnitudes, tied maxima
        rng.random(n),                                    # flat: large support
        np.arange(n, dtype=np.float64) / n * 4.0,         # sorted: candidates in one warp
        -np.arange(n, dtype=np.float64) / n * 4.0,        # reverse sorted
        np.round(rng.standard_normal(n) * 3) / 8,         # many ties
    ]  # fmt: skip
    x = torch.from_numpy(np.stack(rows)).to(torch_dtype(element)).cuda()
    y = poisoned(tuple(x.shape), element)
    s = _stream()
    plan = SparsemaxPlan.select(s, SparsemaxDescriptor(tuple(x.shape), 1, element))
    plan.run(s, _ws(plan, s), SparsemaxArgs(x, y))
    want = reference.sparsemax(x.to("cpu", torch.float64).numpy(), 1)
    _check(y, want, element, f"special rows n={n} ({plan.last_variant})")
    yc = y.to("cpu", torch.float64).numpy()
    assert np.isnan(yc[2:5]).all()
    assert (yc[[0, 1, 5, 6, 7, 8, 9]] >= 0).all()
    assert np.array_equal(yc[5] > 0, want[5] > 0)  # ties at the max share exactly


@pytest.mark.parametrize("element", ELEMENTS, ids=lambda e: e.value)
@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_backward(element: ElementKind, n: int, layout: str) -> None:
    rng = np.random.default_rng(n * 11 + LAYOUTS.index(layout))
    x, axis = _make(layout, n, _rows_for(n), element, rng)
    y = torch.from_numpy(reference.sparsemax(x.to("cpu", torch.float64).numpy(), axis))
    y = y.to(x.dtype).cuda()
    dy_full, _ = _make(layout, n, _rows_for(n), element, rng)
    dy = dy_full.nan_to_num(neginf=-3.0)
    # dy off the support is never read: NaN there must not propagate
    dy = torch.where(y > 0, dy, torch.full_like(dy, float("nan")))
    if layout in ("strided", "offset"):  # keep dy's own layout
        dy_full.copy_(dy)
        dy = dy_full
    s = _stream()
    desc = SparsemaxBackwardDescriptor(tuple(x.shape), axis, element)
    plan = SparsemaxBackwardPlan.select(s, desc)
    dx = poisoned(tuple(x.shape), element)
    plan.run(s, Workspace.allocate(plan.workspace_size(), s), SparsemaxBackwardArgs(dy, y, dx))
    want = reference.sparsemax_backward(dy.to("cpu", torch.float64).numpy(),
                                        y.to("cpu", torch.float64).numpy(), axis)  # fmt: skip
    _check(dx, want, element, f"sparsemax_backward {layout} n={n} ({plan.last_variant})")


@pytest.mark.parametrize("element", ELEMENTS, ids=lambda e: e.value)
@pytest.mark.parametrize(("rows", "n", "pad"), [(30001, 5, 3), (20000, 16, 0), (7777, 29, 3),
                                                (12345, 40, 0), (9000, 100, 0),
                                                (20000, 500, 2), (20000, 1000, 0),
                                                (7000, 1020, 4), (5000, 2040, 0), (3000, 3001, 1),
                                                (1500, 8190, 2), (700, 8192, 0)])  # fmt: skip
@pytest.mark.parametrize("in_place", [False, True], ids=["out", "dx_is_dy"])
def test_backward_many_rows(element: ElementKind, rows: int, n: int, pad: int,
                            in_place: bool) -> None:  # fmt: skip
    """Many rows on every register variant of the backward (rows padded to 16-byte starts with
    a partial last vector where pad > 0); dx may be dy itself: the write loads dy again on
    the support, before the same thread stores dx there."""
    rng = np.random.default_rng(rows + n)
    dt = torch_dtype(element)
    x = torch.from_numpy(_data(rng, (rows, n + pad), -1))[:, :n]
    y = torch.from_numpy(reference.sparsemax(x.numpy(), -1)).to(dt).cuda()
    y = torch.nn.functional.pad(y, (0, pad))[:, :n] if pad else y
    dy = torch.from_numpy(rng.standard_normal((rows, n + pad))).to(dt).cuda()[:, :n]
    want = reference.sparsemax_backward(dy.to("cpu", torch.float64).numpy(),
                                        y.to("cpu", torch.float64).numpy(), -1)  # fmt: skip
    s = _stream()
    plan = SparsemaxBackwardPlan.select(s, SparsemaxBackwardDescriptor((rows, n), -1, element))
    dx = dy if in_place else poisoned((rows, n), element)
    plan.run(s, Workspace.allocate(plan.workspace_size(), s), SparsemaxBackwardArgs(dy, y, dx))
    _check(dx, want, element, f"sparsemax_backward {rows}x{n} ({plan.last_variant})")


@pytest.mark.parametrize("element", ELEMENTS, ids=lambda e: e.value)
@pytest.mark.parametrize("layout", ["last", "first"])
@pytest.mark.parametrize("in_place", ["out", "dx_is_dy", "dx_is_y"])
@pytest.mark.parametrize("coop", [True, False], ids=["coop", "two_kernels"])
def test_backward_split_support_lists(
    element: ElementKind, layout: str, in_place: str, coop: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Few long rows (split backward), in one cooperative kernel (the support kept as a bit
    mask) or in two (each piece lists its support for the second kernel, up to
    SPLIT_LIST_LEN positions; pieces whose support is wider are rescanned). Row 0 has pieces
    far over the list, near it (about 1024 of 7696) and nearly empty; row 1 is all support;
    row 2 has none; row 3 has one element. dx may be dy or y itself."""
    from baracuda.softmax import _rows

    monkeypatch.setattr(_rows, "SPLIT_COOP", coop)
    rng = np.random.default_rng(7)
    rows, n = 4, 100_003
    dt = torch_dtype(element)
    mask = np.zeros((rows, n), dtype=bool)
    third = n // 3
    mask[0, :third] = rng.random(third) < 0.5
    mask[0, third : 2 * third] = rng.random(third) < 5 / 7696
    mask[0, 2 * third :] = rng.random(n - 2 * third) < 1024 / 7696
    mask[1] = True
    mask[3, n // 2] = True
    y64 = np.where(mask, rng.random((rows, n)) + 0.01, 0.0)
    dy64 = rng.standard_normal((rows, n))
    if layout == "first":  # the axis strided: scalar loads
        y = torch.from_numpy(y64.T.copy()).to(dt).cuda().T
        dy = torch.from_numpy(dy64.T.copy()).to(dt).cuda().T
    else:
        y = torch.from_numpy(y64).to(dt).cuda()
        dy = torch.from_numpy(dy64).to(dt).cuda()
    want = reference.sparsemax_backward(dy.to("cpu", torch.float64).numpy(),
                                        y.to("cpu", torch.float64).numpy(), -1)  # fmt: skip
    s = _stream()
    plan = SparsemaxBackwardPlan.select(s, SparsemaxBackwardDescriptor((rows, n), -1, element))
    assert plan.sku().variant.startswith("split")
    if in_place == "dx_is_dy":
        dx = dy
    elif in_place == "dx_is_y":
        dx = y
    else:
        dx = poisoned((n, rows), element).T if layout == "first" else poisoned((rows, n), element)
    plan.run(s, Workspace.allocate(plan.workspace_size(), s), SparsemaxBackwardArgs(dy, y, dx))
    _check(dx, want, element, f"split backward {layout} {in_place} ({plan.last_variant})")
    assert ("/coop" in plan.last_variant) == coop, plan.last_variant


@pytest.mark.parametrize("element", ELEMENTS, ids=lambda e: e.value)
@pytest.mark.parametrize("rows", [64, 128])
@pytest.mark.parametrize("in_place", ["out", "dx_is_dy"])
def test_backward_coop_rounds(element: ElementKind, rows: int, in_place: str) -> None:
    """The cooperative split backward on pieces longer than one round of loads (8 vectors a
    thread): 64 or 128 rows of 131072 take 4 or 2 pieces of 32768 or 65536 elements a row on
    a 132-SM GPU, 1-8 rounds by dtype. Each round's zeros are stored after the next round's
    loads are issued, the last round's after the block arrives at the grid barrier. Row 0 is
    all support, row 1 has none, row 2 is support on its first half, the rest sparse."""
    n = 131072
    split = row_split((rows, n), -1, torch.cuda.get_device_properties(0).multi_processor_count)
    assert split is not None
    rng = np.random.default_rng(rows)
    mask = rng.random((rows, n)) < 2e-4
    mask[0] = True
    mask[1] = False
    mask[2, : n // 2] = True
    dt = torch_dtype(element)
    y = torch.from_numpy(np.where(mask, rng.random((rows, n)) + 0.01, 0.0)).to(dt).cuda()
    dy = torch.from_numpy(rng.standard_normal((rows, n))).to(dt).cuda()
    want = reference.sparsemax_backward(dy.to("cpu", torch.float64).numpy(),
                                        y.to("cpu", torch.float64).numpy(), -1)  # fmt: skip
    s = _stream()
    plan = SparsemaxBackwardPlan.select(s, SparsemaxBackwardDescriptor((rows, n), -1, element))
    dx = dy if in_place == "dx_is_dy" else poisoned((rows, n), element)
    plan.run(s, Workspace.allocate(plan.workspace_size(), s), SparsemaxBackwardArgs(dy, y, dx))
    _check(dx, want, element, f"coop rounds {rows}x{n} {in_place} ({plan.last_variant})")
    assert plan.last_variant == f"split{split.pieces}/coop/vec16", plan.last_variant


@pytest.mark.parametrize("element", ELEMENTS, ids=lambda e: e.value)
@pytest.mark.parametrize("in_place", ["out", "dx_is_dy"])
def test_backward_coop_support_list_boundary(element: ElementKind, in_place: str) -> None:
    """The cooperative split backward keeps up to 512 support vectors a piece in a shared
    list (sparsemax.cu, kCoopList) and finds wider supports by the mask: pieces holding
    511, 512 and 513 vectors with support (one element each, on every lane in turn), a piece
    of all support and an empty one, around a row of all support."""
    rows, n, pad = 3, 131072 + 27, 5  # rows padded to 16-byte starts, a partial last vector
    split = row_split((rows, n), -1, torch.cuda.get_device_properties(0).multi_processor_count)
    assert split is not None
    lanes = 16 // element.itemsize
    piece = split.piece
    counts = [511, 512, 513, piece // lanes, 0]
    assert split.pieces >= len(counts) and piece // lanes > 513
    rng = np.random.default_rng(11)
    mask = np.zeros((rows, n), dtype=bool)
    for p, k in enumerate(counts):
        v = np.arange(k)
        mask[0, p * piece + v * lanes + v % lanes] = True
    mask[1] = True
    mask[2, -3:] = True  # support only past the last whole vector
    dt = torch_dtype(element)
    y64 = np.pad(np.where(mask, rng.random((rows, n)) + 0.01, 0.0), ((0, 0), (0, pad)))
    y = torch.from_numpy(y64).to(dt).cuda()[:, :n]
    dy = torch.from_numpy(rng.standard_normal((rows, n + pad))).to(dt).cuda()[:, :n]
    want = reference.sparsemax_backward(dy.to("cpu", torch.float64).numpy(),
                                        y.to("cpu", torch.float64).numpy(), -1)  # fmt: skip
    s = _stream()
    plan = SparsemaxBackwardPlan.select(s, SparsemaxBackwardDescriptor((rows, n), -1, element))
    dx = dy if in_place == "dx_is_dy" else poisoned((rows, n + pad), element)[:, :n]
    plan.run(s, Workspace.allocate(plan.workspace_size(), s), SparsemaxBackwardArgs(dy, y, dx))
    _check(dx, want, element, f"coop list boundary {in_place} ({plan.last_variant})")
    assert "/coop" in plan.last_variant and "/vec16" in plan.last_variant, plan.last_variant


@pytest.mark.parametrize("element", ELEMENTS, ids=lambda e: e.value)
@pytest.mark.parametrize("n", [7, 1000, 5000, 40000])
def test_backward_matches_torch_autograd_of_sort_formula(element: ElementKind, n: int) -> None:
    x = torch.randn(6, n, dtype=torch.float64, requires_grad=True)
    y64 = torch_sparsemax_sort(x, -1)
    dy64 = torch.randn(6, n, dtype=torch.float64)
    dt = torch_dtype(element)
    y, dy = y64.detach().to(dt), dy64.to(dt)
    if not torch.equal(y.double() > 0, y64.detach() > 0):
        pytest.skip("rounding to this dtype changed the support")
    got = sparsemax_backward(dy.cuda(), y.cuda(), axis=-1)
    # dy rounded to the dtype: compare with the autograd result on the rounded dy
    (want,) = torch.autograd.grad(y64, x, dy.double(), retain_graph=True)
    _check(got, want.numpy(), element, f"backward vs autograd n={n}")


@pytest.mark.parametrize("element", ELEMENTS, ids=lambda e: e.value)
def test_functional_and_in_place(element: ElementKind) -> None:
    dt = torch_dtype(element)
    x = torch.randn(3, 300, 5, device="cuda").to(dt)
    y = sparsemax(x, axis=1)
    assert isinstance(y, torch.Tensor)
    assert y.dtype == dt
    assert y.shape == x.shape
    want = reference.sparsemax(x.to("cpu", torch.float64).numpy(), 1)
    _check(y, want, element, "functional")
    # in place: y written over x (same view)
    xc = x.clone()
    s = _stream()
    plan = SparsemaxPlan.select(s, SparsemaxDescriptor(tuple(x.shape), -2, element))
    plan.run(s, _ws(plan, s), SparsemaxArgs(xc, xc))
    _check(xc, want, element, "in place")
    dy = torch.randn_like(x)
    dx = sparsemax_backward(dy, y, axis=-2)
    want_dx = reference.sparsemax_backward(dy.to("cpu", torch.float64).numpy(),
                                           y.to("cpu", torch.float64).numpy(), 1)  # fmt: skip
    _check(dx, want_dx, element, "functional backward")


def test_empty_tensors() -> None:
    s = _stream()
    for shape, axis in [((0, 5), 1), ((5, 0), 1), ((5, 0), 0), ((2, 0, 3), 1)]:
        x = torch.empty(shape, device="cuda")
        y = torch.empty(shape, device="cuda")
        SparsemaxPlan.select(s, SparsemaxDescriptor(shape, axis, ElementKind.F32)).run(
            s, Workspace.none(), SparsemaxArgs(x, y))  # fmt: skip
        bdesc = SparsemaxBackwardDescriptor(shape, axis, ElementKind.F32)
        bplan = SparsemaxBackwardPlan.select(s, bdesc)
        bplan.run(s, Workspace.allocate(bplan.workspace_size(), s),
                  SparsemaxBackwardArgs(x, x, y))
        assert sparsemax(x, axis=axis).shape == shape


def test_tensor_validation() -> None:
    s = _stream()
    plan = SparsemaxPlan.select(s, SparsemaxDescriptor((4, 8), -1, ElementKind.F32))
    x = torch.randn(4, 8, device="cuda")
    with pytest.raises(InvalidProblem, match=r"SparsemaxPlan: y.shape must be \(4, 8\)"):
        plan.run(s, Workspace.none(), SparsemaxArgs(x, torch.empty(4, 9, device="cuda")))
    with pytest.raises(InvalidProblem, match="SparsemaxPlan: x dtype"):
        plan.run(s, Workspace.none(), SparsemaxArgs(x.double(), torch.empty_like(x)))
    with pytest.raises(InvalidProblem, match="CUDA device memory"):
        plan.run(s, Workspace.none(), SparsemaxArgs(x.cpu(), torch.empty_like(x)))
    with pytest.raises(InvalidProblem, match="overlapping"):
        plan.run(s, Workspace.none(), SparsemaxArgs(x, torch.empty(4, 1, device="cuda")
                                                    .expand(4, 8)))  # fmt: skip
    buf = torch.randn(32, device="cuda")
    with pytest.raises(InvalidProblem, match="shares its pointer"):
        plan.run(s, Workspace.none(), SparsemaxArgs(buf.as_strided((4, 8), (8, 1)),
                                                    buf.as_strided((4, 8), (1, 4))))  # fmt: skip
    bdesc = SparsemaxBackwardDescriptor((4, 8), 1, ElementKind.F32)
    bplan = SparsemaxBackwardPlan.select(s, bdesc)
    with pytest.raises(InvalidProblem, match="SparsemaxBackwardPlan: dy is required"):
        bplan.run(s, Workspace.none(), SparsemaxBackwardArgs(None, x, torch.empty_like(x)))


def test_deterministic_and_sku() -> None:
    x = torch.randn(64, 40000, device="cuda")
    a, b = sparsemax(x), sparsemax(x)
    assert torch.equal(a, b)
    s = _stream()
    plan = SparsemaxPlan.select(s, SparsemaxDescriptor((64, 40000), -1, ElementKind.F32))
    assert plan.sku().variant == "split5"  # few long rows: 5 pieces of 8192 per row
    assert plan.precision_guarantee().deterministic
    # per piece: max, count, 512 listed values; per row (m, tau)
    assert plan.workspace_size() == 320 * 4 + 320 * 4 + 320 * 512 * 4 + 64 * 2 * 4
    with pytest.raises(WorkspaceTooSmall, match="SparsemaxPlan: workspace has 0 bytes"):
        plan.run(s, Workspace.none(), SparsemaxArgs(x, torch.empty_like(x)))
    many = SparsemaxPlan.select(s, SparsemaxDescriptor((4096, 40000), -1, ElementKind.F32))
    assert many.sku().variant == "stream"
    assert many.workspace_size() == 0
    bdesc = SparsemaxBackwardDescriptor((64, 40000), -1, ElementKind.F32)
    bplan = SparsemaxBackwardPlan.select(s, bdesc)
    # pieces a row: one wave of the split kernels, which depends on the SM count
    split = row_split((64, 40000), 1, torch.cuda.get_device_properties(0).multi_processor_count)
    assert split is not None and split.pieces >= 2
    assert bplan.sku().variant == f"split{split.pieces}"
    assert bplan.workspace_size() == split.workspace_size(ElementKind.F32)
    y = sparsemax(x)
    dy = torch.randn_like(x)
    with pytest.raises(WorkspaceTooSmall, match="SparsemaxBackwardPlan: workspace has 0 bytes"):
        bplan.run(s, Workspace.none(), SparsemaxBackwardArgs(dy, y, torch.empty_like(x)))
    dx1, dx2 = sparsemax_backward(dy, y), sparsemax_backward(dy, y)
    assert torch.equal(dx1, dx2)


def test_graph_capture() -> None:
    x = torch.randn(16, 3000, device="cuda")
    y = torch.empty_like(x)
    s_t = torch.cuda.Stream()
    with torch.cuda.stream(s_t):
        s = Stream.wrap(s_t)
        plan = SparsemaxPlan.select(s, SparsemaxDescriptor((16, 3000), -1, ElementKind.F32))
        plan.run(s, Workspace.none(), SparsemaxArgs(x, y))  # warm-up outside the graph
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=s_t):
            plan.run(s, Workspace.none(), SparsemaxArgs(x, y))
    y.fill_(float("nan"))
    g.replay()
    torch.cuda.synchronize()
    _check(y, reference.sparsemax(x.double().cpu().numpy(), -1), ElementKind.F32, "graph")


@pytest.mark.parametrize("coop", [True, False], ids=["coop", "two_kernels"])
def test_graph_capture_split_backward(coop: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The split backward (a cooperative launch, or two kernels, the second a dependent launch
    on sm_90) is captured by a CUDA graph and replays correctly."""
    from baracuda.softmax import _rows

    monkeypatch.setattr(_rows, "SPLIT_COOP", coop)
    x = torch.randn(8, 200_000, device="cuda")
    y = sparsemax(x)
    dy = torch.randn_like(x)
    dx = torch.empty_like(x)
    s_t = torch.cuda.Stream()
    with torch.cuda.stream(s_t):
        s = Stream.wrap(s_t)
        desc = SparsemaxBackwardDescriptor((8, 200_000), -1, ElementKind.F32)
        plan = SparsemaxBackwardPlan.select(s, desc)
        ws = Workspace.allocate(plan.workspace_size(), s)
        plan.run(s, ws, SparsemaxBackwardArgs(dy, y, dx))  # warm-up outside the graph
        assert ("/coop" in plan.last_variant) == coop, plan.last_variant
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=s_t):
            plan.run(s, ws, SparsemaxBackwardArgs(dy, y, dx))
    dx.fill_(float("nan"))
    g.replay()
    torch.cuda.synchronize()
    want = reference.sparsemax_backward(dy.double().cpu().numpy(), y.double().cpu().numpy(), -1)
    _check(dx, want, ElementKind.F32, "graph, split backward")


def test_cupy_and_jax_arrays() -> None:
    """Other frameworks' arrays through the functional API, on the split paths: few long rows
    (the cooperative backward, the split forward) as CuPy arrays, a strided CuPy view, and
    JAX bf16 arrays; results come back as the caller's array type."""
    cupy = pytest.importorskip("cupy")
    rng = np.random.default_rng(11)
    x64 = rng.standard_normal((16, 200_000))
    dy64 = rng.standard_normal((16, 200_000))
    x = cupy.asarray(x64, dtype=cupy.float32)
    y = sparsemax(x)
    assert isinstance(y, cupy.ndarray)
    y_np = cupy.asnumpy(y).astype(np.float64)
    _check(torch.from_numpy(y_np), reference.sparsemax(x64.astype(np.float32), -1),
           ElementKind.F32, "cupy forward")  # fmt: skip
    dx = sparsemax_backward(cupy.asarray(dy64, dtype=cupy.float32), y)
    assert isinstance(dx, cupy.ndarray)
    want = reference.sparsemax_backward(dy64.astype(np.float32).astype(np.float64), y_np, -1)
    _check(torch.from_numpy(cupy.asnumpy(dx).astype(np.float64)), want, ElementKind.F32,
           "cupy backward")  # fmt: skip
    # a strided view along axis 0 (rows of 100000 two apart)
    big = cupy.asarray(rng.standard_normal((200_000, 8)), dtype=cupy.float32)
    xs = big[::2, 1:5]
    ys = sparsemax(xs, axis=0)
    _check(torch.from_numpy(cupy.asnumpy(ys).astype(np.float64)),
           reference.sparsemax(cupy.asnumpy(xs).astype(np.float64), 0), ElementKind.F32,
           "cupy strided forward")  # fmt: skip
    jax = pytest.importorskip("jax")
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("jax has no GPU backend here")
    jnp = jax.numpy
    xj = jnp.asarray(x64[:4, :131072], dtype=jnp.bfloat16)
    yj = sparsemax(xj)
    assert type(yj).__module__.startswith("jax")
    yj_np = np.asarray(yj).astype(np.float64)
    _check(torch.from_numpy(yj_np), reference.sparsemax(np.asarray(xj).astype(np.float64), -1),
           ElementKind.BF16, "jax forward")  # fmt: skip
    dyj = jnp.asarray(dy64[:4, :131072], dtype=jnp.bfloat16)
    dxj = sparsemax_backward(dyj, yj)
    assert type(dxj).__module__.startswith("jax")
    want = reference.sparsemax_backward(np.asarray(dyj).astype(np.float64), yj_np, -1)
    _check(torch.from_numpy(np.asarray(dxj).astype(np.float64)), want, ElementKind.BF16,
           "jax backward")  # fmt: skip
