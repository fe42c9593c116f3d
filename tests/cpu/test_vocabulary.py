"""Vocabulary, dtype table, layouts and every validation error that needs no GPU."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import baracuda as bc
from baracuda._cuda.stream import Stream
from baracuda._cuda.view import TensorView
from baracuda._dtypes import ELEMENTS, element_kind_of, index_kind_of
from baracuda._layout import coalesce, contiguous_strides, split_axis
from baracuda._plan import check_element, check_shape, normalize_axis


def test_element_kinds() -> None:
    assert [e.value for e in bc.ElementKind] == ["f32", "f16", "bf16", "f64"]
    assert [e.itemsize for e in bc.ElementKind] == [4, 2, 2, 8]
    assert {e.itemsize for e in bc.IndexElementKind} == {4, 8}
    for e in bc.ElementKind:
        assert ELEMENTS[e].kind is e


@pytest.mark.parametrize(
    ("value", "kind"),
    [("f32", bc.ElementKind.F32), ("float16", bc.ElementKind.F16), (np.float64, None),
     (np.dtype("float32"), bc.ElementKind.F32), ("torch.bfloat16", bc.ElementKind.BF16),
     ((4, 16), bc.ElementKind.BF16), (bc.ElementKind.F64, bc.ElementKind.F64)],
)  # fmt: skip
def test_element_kind_of(value: object, kind: bc.ElementKind | None) -> None:
    if kind is None:  # numpy scalar types: name via the dtype
        assert element_kind_of(np.dtype(value)) is bc.ElementKind.F64  # type: ignore[call-overload]
    else:
        assert element_kind_of(value) is kind


def test_element_kind_of_torch() -> None:
    torch = pytest.importorskip("torch")
    assert element_kind_of(torch.bfloat16) is bc.ElementKind.BF16
    assert element_kind_of(torch.float16) is bc.ElementKind.F16
    assert index_kind_of(torch.int64) is bc.IndexElementKind.I64
    with pytest.raises(bc.Unsupported, match="int8"):
        element_kind_of(torch.int8)


def test_unsupported_dtype_message() -> None:
    with pytest.raises(bc.Unsupported, match=r"'complex64'.*f32, f16, bf16, f64"):
        element_kind_of("complex64")
    with pytest.raises(bc.Unsupported, match="i32, i64"):
        index_kind_of("float32")


def test_error_hierarchy() -> None:
    assert issubclass(bc.InvalidProblem, ValueError)
    for cls in (bc.Unsupported, bc.InvalidProblem, bc.BufferTooSmall, bc.MisalignedOperand,
                bc.WorkspaceTooSmall, bc.CompileError, bc.CudaError):  # fmt: skip
        assert issubclass(cls, bc.BaracudaError)
    e = bc.WorkspaceTooSmall("x", needed=10, got=2)
    assert (e.needed, e.got) == (10, 2)
    c = bc.CompileError("failed", log="error: boom", source="int x\nint y")
    assert "error: boom" in str(c) and "    2 int y" in c.dump()
    assert bc.CudaError("cuLaunchKernel", name="CUDA_ERROR_INVALID_VALUE").name.endswith("VALUE")


def test_descriptors_are_frozen_and_hashable() -> None:
    d = bc.BinaryParamDescriptor((4, 5), bc.ElementKind.F32, 0.5)
    assert hash(d) == hash(bc.BinaryParamDescriptor((4, 5), bc.ElementKind.F32, 0.5))
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.weight = 1.0  # type: ignore[misc]
    assert not hasattr(d, "__dict__")


def test_check_shape_and_axis() -> None:
    assert check_shape("P", "shape", (2, 0, 3)) == (2, 0, 3)
    with pytest.raises(
        bc.InvalidProblem, match=r"P: shape dims must be non-negative \(got \(2, -1\)\)"
    ):
        check_shape("P", "shape", (2, -1))
    with pytest.raises(bc.Unsupported, match=r"rank of shape must be in \[0, 8\] \(got 9\)"):
        check_shape("P", "shape", (1,) * 9)
    with pytest.raises(bc.InvalidProblem, match="tuple of ints"):
        check_shape("P", "shape", [2, 3])
    assert normalize_axis("P", "axis", -1, 3) == 2
    with pytest.raises(bc.InvalidProblem, match=r"P: axis must be in \[-3, 3\) \(got 3\)"):
        normalize_axis("P", "axis", 3, 3)
    with pytest.raises(bc.Unsupported, match="element must be an ElementKind"):
        check_element("P", "element", "f32")


def test_select_without_gpu_is_a_typed_error() -> None:
    from baracuda._cuda.driver import gpu_available

    if gpu_available():
        pytest.skip("a GPU is present")
    d = bc.BinaryParamDescriptor((4,), bc.ElementKind.F32, 0.5)
    with pytest.raises(bc.Unsupported, match="no CUDA device"):
        bc.BinaryParamPlan.select(None, d)


def test_select_validates_descriptor_first() -> None:
    with pytest.raises(bc.InvalidProblem, match="dims must be non-negative"):
        bc.BinaryParamPlan.select(None, bc.BinaryParamDescriptor((-1,), bc.ElementKind.F32, 0.5))
    with pytest.raises(bc.InvalidProblem, match="weight must be a real number"):
        bc.BinaryParamBackwardPlan.select(
            None,
            bc.BinaryParamBackwardDescriptor((1,), bc.ElementKind.F32, "a"),  # type: ignore[arg-type]
        )
    with pytest.raises(bc.Unsupported, match="element must be an ElementKind"):
        bc.BinaryParamPlan.select(None, bc.BinaryParamDescriptor((1,), "f32", 0.5))  # type: ignore[arg-type]


def test_stream_wrap() -> None:
    assert Stream.wrap(None).handle == 0
    assert Stream.wrap(0).dlpack_stream == 1  # DLPack forbids 0: legacy default is 1
    assert Stream.wrap(0x1234).handle == 0x1234

    class Proto:
        def __cuda_stream__(self) -> tuple[int, int]:
            return (0, 0xABC)

    s = Stream.wrap(Proto())
    assert s.handle == 0xABC and s.__cuda_stream__() == (0, 0xABC)
    assert Stream.wrap(s) is s
    with pytest.raises(bc.InvalidProblem, match="not a stream"):
        Stream.wrap("stream")
    with pytest.raises(bc.InvalidProblem, match="non-negative"):
        Stream.wrap(-5)


def test_workspace_none() -> None:
    ws = bc.Workspace.none()
    assert ws.nbytes == 0 and ws.ptr == 0
    with pytest.raises(bc.InvalidProblem, match="nbytes must be >= 0"):
        bc.Workspace.allocate(-1, Stream.default())


def test_layouts() -> None:
    assert contiguous_strides((2, 3, 4)) == (12, 4, 1)
    assert coalesce((2, 3, 4), [(12, 4, 1), (12, 4, 1)]) == ((24,), [(1,), (1,)])
    assert coalesce((2, 3, 4), [(1, 8, 2)]) == ((2, 12), [(1, 2)])
    assert coalesce((2, 3, 4), [(1, 9, 2)]) == ((2, 3, 4), [(1, 9, 2)])
    assert coalesce((1, 1), [(5, 7)]) == ((1,), [(1,)])
    assert coalesce((4, 1, 5), [(5, 99, 1)]) == ((20,), [(1,)])
    assert split_axis((2, 3, 4), [(12, 4, 1)], 1) == ((2, 4), [(12, 1)], 3, [4])
    assert split_axis((2, 3, 4), [(12, 4, 1)], 2) == ((6,), [(4,)], 4, [1])


def test_view_layout_flags() -> None:
    v = TensorView(0, (3, 4), (4, 1), (2, 32), 2, 0)
    assert v.is_contiguous() and v.is_non_overlapping() and v.size == 12 and v.itemsize == 4
    t = TensorView(0, (4, 3), (1, 4), (2, 32), 2, 0)
    assert not t.is_contiguous() and t.is_non_overlapping()
    b = TensorView(0, (4, 3), (0, 1), (2, 32), 2, 0)  # broadcast: overlapping
    assert not b.is_non_overlapping()
    o = TensorView(0, (3, 3), (2, 1), (2, 32), 2, 0)  # rows overlap by one element
    assert not o.is_non_overlapping()
    n = TensorView(0, (3, 2), (-2, 1), (2, 32), 2, 0)  # negative strides, disjoint
    assert n.is_non_overlapping()


def test_view_span_check() -> None:
    """Strides that span more bytes than any device allocation (a producer's corrupt DLPack
    strides) are a typed error naming the shape and strides, before any kernel sees them."""
    from baracuda._cuda.view import check_span
    from baracuda.errors import InvalidProblem

    check_span((4096, 8192), (8192, 1), 4)
    check_span((3, 2), (-2, 1), 4)  # negative strides
    check_span((0, 5), (2**62 - 1, 1), 4)  # empty: nothing is addressed
    check_span((1, 5), (2**62 - 1, 1), 4)  # one row: its stride is never used
    with pytest.raises(InvalidProblem, match=r"strides \(4611686018427387903, 4\)"):
        check_span((4, 3), (2**62 - 1, 4), 4)  # CuPy's negative-stride export bug
