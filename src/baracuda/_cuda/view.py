"""``TensorView``: what a plan sees of a tensor (pointer, shape, strides, dtype, device)."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, NamedTuple

from baracuda.errors import InvalidProblem

__all__ = ["TensorView", "view_of", "DL_CPU", "DL_CUDA", "DL_CUDA_HOST", "DL_CUDA_MANAGED"]

DL_CPU, DL_CUDA, DL_CUDA_HOST, DL_CUDA_MANAGED = 1, 2, 3, 13


class TensorView(NamedTuple):
    """A strided tensor in device memory. Strides are in elements; ``ptr`` includes the offset.

    ``owner`` keeps the producer alive while the view is in use; ``keep``: a run keeps
    ``owner`` until its kernels have completed (``baracuda._cuda.retain``), because the
    producer may hand the memory out again in another stream's order than the run's once
    ``owner`` is dropped (a DLPack import; a torch tensor or CuPy array on a stream other
    than their current one). (A named tuple: built on every ``run``, so it must be cheap
    to make.)
    """

    ptr: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: tuple[int, int]  # DLPack (type code, bits)
    device_type: int
    device_id: int
    readonly: bool = False
    owner: object = None
    keep: bool = False

    @property
    def itemsize(self) -> int:
        return self.dtype[1] // 8

    @property
    def size(self) -> int:
        return _numel(self.shape)

    @property
    def is_cuda(self) -> bool:
        return self.device_type in (DL_CUDA, DL_CUDA_MANAGED)

    def is_contiguous(self) -> bool:
        return _layout_flags(self.shape, self.strides)[0]

    def is_non_overlapping(self) -> bool:
        """No two in-bounds coordinates share an address (writable outputs must be so)."""
        return _layout_flags(self.shape, self.strides)[1]


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


@functools.lru_cache(maxsize=4096)
def _layout_flags(shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[bool, bool]:
    """(contiguous, non-overlapping) of a layout; cached, as the same layouts recur."""
    expected, contiguous = 1, True
    for d, s in zip(reversed(shape), reversed(strides), strict=True):
        if d != 1 and s != expected:
            contiguous = False
            break
        expected *= d
    if contiguous or _numel(shape) <= 1:
        return contiguous, True
    dims = sorted((abs(s), d) for d, s in zip(shape, strides, strict=True) if d > 1)
    span = 1  # elements covered by the smaller dims
    for stride, extent in dims:
        if stride < span:
            return False, False
        span = stride * (extent - 1) + span
    return False, True


# No device allocation spans this many bytes (GPU virtual addresses have at most 49 bits).
MAX_SPAN_BYTES = 1 << 48


@functools.lru_cache(maxsize=4096)
def check_span(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> None:
    """Raise ``InvalidProblem`` for strides whose addresses span more bytes than any device
    allocation: a producer's corrupt strides (CuPy's DLPack export turned a negative stride
    into 2^62 - 1 until cupy/cupy#10228) would otherwise send a kernel far outside the
    buffer."""
    if _numel(shape) == 0:
        return
    span = sum(abs(s) * (d - 1) for d, s in zip(shape, strides, strict=True)) * itemsize
    if span >= MAX_SPAN_BYTES:
        raise InvalidProblem(
            f"tensor of shape {shape} with strides {strides} (elements of {itemsize} bytes) "
            f"spans {span} bytes, more than any device allocation: corrupt strides from "
            "the producer's __dlpack__?"
        )


def dlpack_dtype(dt: Any) -> tuple[int, int]:
    """A NumPy-style dtype (NumPy's, CuPy's, ml_dtypes' bfloat16) as DLPack's (type code,
    bits); type code -1 where DLPack has none for it."""
    kind = {"f": 2, "i": 0, "u": 1, "b": 1}.get(dt.kind, -1)
    if dt.name == "bfloat16":
        kind = 4
    return kind, dt.itemsize * 8


def _from_dlpack(obj: Any, dlpack_stream: int) -> TensorView:
    from cuda.core.utils import StridedMemoryView

    if not hasattr(obj, "__dlpack__"):
        raise InvalidProblem(f"{type(obj).__name__} does not implement __dlpack__")
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(obj, torch.Tensor) and obj.requires_grad:
        obj = obj.detach()  # DLPack refuses it; torch's fast path (_interop) reads it as is
    dev_type, dev_id = obj.__dlpack_device__()
    # host memory needs no stream order: -1 (cuda.core 1.2 refuses None, "ambiguous")
    stream = dlpack_stream if dev_type in (DL_CUDA, DL_CUDA_MANAGED) else -1
    try:
        smv = StridedMemoryView.from_dlpack(obj, stream_ptr=stream)
    except BufferError as e:  # the producer refused the export (e.g. a conjugate tensor)
        raise InvalidProblem(f"{type(obj).__name__} refused DLPack export: {e}") from None
    shape = tuple(int(d) for d in smv.shape)
    strides = smv.strides
    if strides is None:
        acc, out = 1, []
        for d in reversed(shape):
            out.append(acc)
            acc *= d
        strides = tuple(reversed(out))
    dt = smv.dtype
    strides = tuple(int(s) for s in strides)
    check_span(shape, strides, dt.itemsize)
    return TensorView(
        ptr=int(smv.ptr),
        shape=shape,
        strides=strides,
        dtype=dlpack_dtype(dt),
        device_type=int(dev_type),
        device_id=int(dev_id),
        readonly=bool(smv.readonly),
        owner=smv,
        keep=dev_type in (DL_CUDA, DL_CUDA_MANAGED),
    )


def view_of(obj: object, dlpack_stream: int) -> TensorView:
    """A ``TensorView`` of ``obj``; the producer orders its pending work before ``dlpack_stream``.

    Framework fast paths (no DLPack capsule) live in ``baracuda._interop``.
    """
    if isinstance(obj, TensorView):
        return obj
    own = getattr(obj, "__baracuda_view__", None)  # outputs baracuda allocated itself (JAX)
    if own is not None:
        view: TensorView = own()
        return view
    fast = _fast_view()(obj, dlpack_stream)
    if fast is not None:
        return fast
    return _from_dlpack(obj, dlpack_stream)


@functools.cache
def _fast_view() -> Callable[[object, int], TensorView | None]:
    """``baracuda._interop.fast_view``, imported once (it imports this module; an import
    statement in ``view_of`` cost about 0.6 us a view, three views a lerp ``run``)."""
    from baracuda._interop import fast_view

    return fast_view
