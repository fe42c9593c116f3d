"""The array-API path refuses what the CUDA path's plans refuse, with the same typed errors:
element types other than f32/f16/bf16/f64 (the references compute in f32 or f64 and round
back, which truncated integers, summed booleans into True and dropped imaginary parts), rank
past 8, non-arrays, arrays of two libraries or devices, operands of another shape or dtype
(lerp broadcast them), a ``reverse`` that is not a bool; valid calls still run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import baracuda as bc
from baracuda.errors import InvalidProblem, Unsupported

F = np.ones((3, 4), np.float32)

# each op as a call on one array (the others made like it)
ONE: dict[str, Callable[[Any], Any]] = {
    "cumsum": lambda a: bc.cumsum(a, 0),
    "cummax": lambda a: bc.cummax(a, 0),
    "logcumsumexp": lambda a: bc.logcumsumexp(a, 0),
    "scan_backward(cumprod)": lambda a: bc.scan_backward("cumprod", a, x=a, y=a, axis=0),
    "lerp": lambda a: bc.lerp(a, a, 0.3),
    "lerp_backward": lambda a: bc.lerp_backward(a, 0.3),
    "sparsemax": lambda a: bc.sparsemax(a, 0),
    "sparsemax_backward": lambda a: bc.sparsemax_backward(a, a, 0),
}


@pytest.mark.parametrize("op", list(ONE))
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.bool_, np.complex64, np.uint8])
def test_unsupported_dtypes(op: str, dtype: Any) -> None:
    a = np.ones((3, 4), dtype)
    with pytest.raises(Unsupported, match=rf"baracuda\.{op.split('(')[0]}.*dtype .* not supported"):
        ONE[op](a)
    with pytest.raises(Unsupported, match="not supported"):
        ONE[op](torch.ones(3, 4, dtype=torch.int64))


@pytest.mark.parametrize("op", list(ONE))
def test_rank_past_8_and_non_arrays(op: str) -> None:
    with pytest.raises(Unsupported, match=r"rank of .*\[0, 8\] \(got 9\)"):
        ONE[op](np.ones((1,) * 9, np.float32))
    with pytest.raises(InvalidProblem, match=r"must be an array .*\(got list\)"):
        ONE[op]([[1.0, 2.0]])


@pytest.mark.parametrize("op", list(ONE))
def test_valid_calls_still_run(op: str) -> None:
    for a in (F, torch.ones(3, 4, dtype=torch.bfloat16), torch.ones(3, 4, dtype=torch.float16),
              np.ones((3, 4), np.float64)):  # fmt: skip
        out = ONE[op](a)
        first = out[0] if isinstance(out, tuple) else out
        assert type(first) is type(a) and first.dtype == a.dtype and tuple(first.shape) == (3, 4)


def test_operands_of_another_shape_dtype_library() -> None:
    g = np.ones((4,), np.float32)
    with pytest.raises(InvalidProblem,
                       match=r"lerp: b\.shape must equal a\.shape \(3, 4\) \(got \(4,\)\)"):
        bc.lerp(F, g, 0.5)  # no broadcasting, as on the CUDA path
    with pytest.raises(InvalidProblem,
                       match=r"lerp: b dtype must equal a's \(float32\) \(got float64\)"):
        bc.lerp(F, F.astype(np.float64), 0.5)
    with pytest.raises(InvalidProblem, match=r"lerp: a, b must be arrays of one library"):
        bc.lerp(F, torch.ones(3, 4), 0.5)
    with pytest.raises(InvalidProblem, match=r"y dtype must equal dy's \(float32\) \(got float16"):
        bc.sparsemax_backward(F, F.astype(np.float16), 0)
    with pytest.raises(InvalidProblem, match=r"sparsemax_backward: y, the forward's output"):
        bc.sparsemax_backward(F, None, 0)
    with pytest.raises(InvalidProblem, match=r"scan_backward\(cumprod\): x dtype must equal dy's"):
        bc.scan_backward("cumprod", F, x=F.astype(np.float64), y=F, axis=1)
    with pytest.raises(InvalidProblem, match=r"scan_backward\(logcumsumexp\): y\.shape must equal"):
        bc.scan_backward("logcumsumexp", F, x=F, y=F[:, :2], axis=1)
    with pytest.raises(InvalidProblem, match="saved forward tensor x"):
        bc.scan_backward("cummax", F, axis=1)
    # a saved tensor the kind does not read is not checked
    assert bc.scan_backward("cumsum", F, x=np.ones(2, np.int8), axis=1).shape == (3, 4)


def test_reverse_must_be_a_bool() -> None:
    for bad in ("yes", 1, np.True_, None):
        with pytest.raises(InvalidProblem, match=r"cumsum: reverse must be a bool"):
            bc.cumsum(F, 1, reverse=bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidProblem, match=r"scan_backward: reverse must be a bool"):
            bc.scan_backward("cumsum", F, axis=1, reverse=bad)  # type: ignore[arg-type]
    np.testing.assert_allclose(bc.cumsum(F, 1, reverse=True), np.cumsum(F[:, ::-1], 1)[:, ::-1])


def test_host_memory_gets_a_view_that_plans_refuse() -> None:
    """A host array's view is made without stream order (cuda.core 1.2 refuses stream None
    for host memory, a BufferError): plans and workspaces then refuse it by its device."""
    from baracuda._cuda.view import DL_CPU, view_of

    for t in (torch.ones(3, 4), np.ones((3, 4), np.float32)):
        v = view_of(t, 0)
        assert (v.device_type, v.shape, v.strides, v.is_cuda) == (DL_CPU, (3, 4), (4, 1), False)
        with pytest.raises(InvalidProblem, match="Workspace.from_tensor: tensor must be in CUDA"):
            bc.Workspace.from_tensor(t)


def test_tensors_dlpack_refuses() -> None:
    """A torch tensor that requires grad is viewed through its detached self (DLPack refuses
    it; the fast path for torch CUDA tensors reads it as is); a refused export (a conjugate
    tensor) is a typed error, not a BufferError."""
    from baracuda._cuda.view import view_of

    t = torch.ones(3, 4, requires_grad=True)
    assert view_of(t, 0).shape == (3, 4)
    c = torch.ones(3, dtype=torch.complex64).conj()
    with pytest.raises(InvalidProblem, match="refused DLPack export"):
        view_of(c, 0)


def test_numpy_and_torch_scalars_as_axis_and_weight() -> None:
    """An axis may be any integer scalar (``__index__``: numpy, torch), a weight any real
    number (numpy's too); bools and other types are refused, naming the argument."""
    want = np.cumsum(F, 1)
    for ax in (1, np.int64(1), np.int32(-1), torch.tensor(1)):
        np.testing.assert_allclose(bc.cumsum(F, ax), want)  # type: ignore[arg-type]
        np.testing.assert_allclose(bc.scan_backward("cumsum", F, axis=ax), np.cumsum(F[:, ::-1], 1)[:, ::-1])  # type: ignore[arg-type]  # noqa: E501
        assert bc.sparsemax(F, ax).shape == (3, 4)  # type: ignore[arg-type]
    for bad in (True, 1.0, "1", None, np.True_):
        with pytest.raises(InvalidProblem, match=r"baracuda\.cumsum: axis must be an int"):
            bc.cumsum(F, bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidProblem, match=r"baracuda\.sparsemax: axis must be an int"):
            bc.sparsemax(F, bad)  # type: ignore[arg-type]
    for w in (0.25, np.float32(0.25), np.float64(0.25), 1, np.int64(0)):
        np.testing.assert_allclose(bc.lerp(F, 2 * F, w), F + float(w) * F)  # type: ignore[arg-type]
    for bad in (True, np.True_, "0.5", None, np.ones(1)):
        with pytest.raises(InvalidProblem, match=r"baracuda\.lerp: weight must be a real number"):
            bc.lerp(F, F, bad)  # type: ignore[arg-type]


def test_copy_peer_copies_its_bytes() -> None:
    """The bench's same-bytes copy peer reads ``nbytes`` and writes as many (here on the CPU)."""
    import torch

    from baracuda._harness import copy_peer

    run = copy_peer(1000, device="cpu")
    dst = run()
    assert isinstance(dst, torch.Tensor) and dst.dtype == torch.uint8 and dst.numel() == 1000
