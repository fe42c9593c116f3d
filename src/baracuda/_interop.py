"""Framework adapters: which framework an array comes from, its current stream, outputs in
its own type, and fast paths around DLPack. Nothing here imports a framework: it looks in
``sys.modules`` for the ones the caller already imported.
"""

from __future__ import annotations

import sys
from typing import Any

from baracuda._cuda.device import ensure_current
from baracuda._cuda.stream import Stream
from baracuda._cuda.view import DL_CUDA, TensorView, check_span, dlpack_dtype
from baracuda.errors import Unsupported

__all__ = [
    "framework_of",
    "fast_view",
    "current_stream_handle",
    "reject_tracer",
    "torch_signature",
    "torch_view",
    "torch_out_view",
    "torch_stream",
    "torch_empty",
    "same_stream",
    "cupy_signature",
    "array_signature",
]

_TORCH_DTYPES: dict[Any, tuple[int, int]] = {}


def framework_of(x: object) -> str:
    """ "torch", "cupy", "jax", "numpy" or the top-level module name of ``type(x)``."""
    mod = type(x).__module__.split(".", 1)[0]
    if mod in ("jaxlib", "jax"):
        return "jax"
    return mod


def _torch_dtypes(torch: Any) -> dict[Any, tuple[int, int]]:
    if not _TORCH_DTYPES:
        _TORCH_DTYPES.update({
            torch.float32: (2, 32), torch.float16: (2, 16), torch.bfloat16: (4, 16),
            torch.float64: (2, 64), torch.int32: (0, 32), torch.int64: (0, 64),
            torch.uint8: (1, 8), torch.int8: (0, 8),
        })  # fmt: skip
    return _TORCH_DTYPES


def _torch_stream(torch: Any, device: int) -> int:
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    return (
        int(raw(device)) if raw is not None else int(torch.cuda.current_stream(device).cuda_stream)
    )


def _cupy_stream(cupy: Any, device: int) -> int:
    with cupy.cuda.Device(device):
        return int(cupy.cuda.get_current_stream().ptr)


def same_stream(cur: int, dlpack_stream: int) -> bool:
    """Whether DLPack's ordering of the producer's current stream ``cur`` before
    ``dlpack_stream`` would be a no-op (1 is the legacy default stream, which CuPy and torch
    report as 0). Callers skip it where no ordering is asked for (``dlpack_stream`` -1)."""
    return cur == dlpack_stream or (cur == 0 and dlpack_stream == 1)


def _cupy_dtype(obj: Any) -> tuple[int, int] | None:
    """The DLPack dtype of the CuPy array ``obj`` where its view can be read off its
    attributes (a dtype with a DLPack code, strides in whole elements), else None."""
    dtype = dlpack_dtype(obj.dtype)
    item = obj.dtype.itemsize
    if dtype[0] < 0 or any(s % item for s in obj.strides):
        return None
    return dtype


def _cupy_view(cupy: Any, obj: Any, dlpack_stream: int) -> TensorView | None:
    """A CuPy array read off its attributes: ``data.ptr`` and its byte strides, negative
    ones included (CuPy's own DLPack export turned a negative stride into 2^62 - 1 until
    cupy/cupy#10228, and views built from it are refused as corrupt)."""
    dtype = _cupy_dtype(obj)
    if dtype is None:
        return None  # DLPack's path raises the error for a dtype it has no code for
    item = obj.dtype.itemsize
    dev = int(obj.device.id)
    other = dlpack_stream != -1 and _order_before(_cupy_stream(cupy, dev), dev, dlpack_stream)
    shape = tuple(int(d) for d in obj.shape)
    strides = tuple(int(s) // item for s in obj.strides)
    check_span(shape, strides, item)
    return TensorView(
        ptr=int(obj.data.ptr),
        shape=shape,
        strides=strides,
        dtype=dtype,
        device_type=DL_CUDA,
        device_id=dev,
        readonly=False,
        owner=obj,
        keep=other,
    )


def _order_before(current: int, device: int, dlpack_stream: int) -> bool:
    """Where the run's stream (DLPack's ``dlpack_stream``) is not the framework's
    ``current`` stream: order the work enqueued there so far before the run's stream, as the
    framework's ``__dlpack__(stream=...)`` would (an event the run's stream waits on), and
    return True: the run holds the array until its kernels have completed
    (``TensorView.keep``), since its framework hands freed memory out again in the order
    of its current stream. The array is read off its attributes as on its current stream
    (CuPy's negative strides too, which its DLPack export corrupts)."""
    if same_stream(current, dlpack_stream):
        return False
    ensure_current(device)  # the event is made in, and recorded on a stream of, this device
    Stream(current, device_id=device).order_before(dlpack_stream)
    return True


def fast_view(obj: object, dlpack_stream: int) -> TensorView | None:
    """A view of a torch CUDA tensor or a CuPy array read off its attributes, else None.
    Where the run's stream is not the array's current stream, the current one's pending work
    is ordered before it (``_order_before``) and the view is held by the run."""
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(obj, torch.Tensor) or not obj.is_cuda:
        cupy = sys.modules.get("cupy")
        if cupy is not None and isinstance(obj, cupy.ndarray):
            return _cupy_view(cupy, obj, dlpack_stream)
        return None
    if obj.dtype not in _torch_dtypes(torch):
        return None
    dev = obj.get_device()
    other = dlpack_stream != -1 and _order_before(_torch_stream(torch, dev), dev, dlpack_stream)
    ptr = obj.data_ptr()
    view = torch_view(obj, _signature(obj, dev, ptr), ptr)
    return view._replace(keep=True) if other else view


# -- torch tensors on the functional API's cached path (baracuda._functional.BoundCalls) ----


def torch_signature(x: Any) -> tuple[tuple[Any, ...], int] | None:
    """``(signature, data pointer)`` of a plain ``torch.Tensor`` on a CUDA device, else None
    (other frameworks, subclasses, CPU tensors, dtypes without a DLPack code). The signature,
    (dtype, shape, strides, device, pointer mod 16), decides every check a plan makes of
    the tensor: two tensors of one signature are both accepted or both refused."""
    torch = sys.modules.get("torch")
    if torch is None or type(x) is not torch.Tensor:
        return None
    dev = x.get_device()
    if dev < 0 or x.dtype not in _torch_dtypes(torch):
        return None
    ptr = x.data_ptr()
    return _signature(x, dev, ptr), ptr


def cupy_signature(x: Any) -> tuple[tuple[Any, ...], int] | None:
    """``torch_signature`` for a ``cupy.ndarray`` (of a dtype with a DLPack code and strides
    in whole elements: what ``_cupy_view`` reads off its attributes), else None: (dtype,
    shape, byte strides, device, pointer mod 16), and the data pointer."""
    cupy = sys.modules.get("cupy")
    if cupy is None or type(x) is not cupy.ndarray:
        return None
    if _cupy_dtype(x) is None:
        return None
    ptr = int(x.data.ptr)
    return (x.dtype, x.shape, x.strides, int(x.device.id), ptr & 15), ptr


def array_signature(x: Any) -> tuple[str, tuple[Any, ...], int] | None:
    """(framework, signature, data pointer) of a plain torch CUDA tensor or a CuPy array
    (``torch_signature``, ``cupy_signature``), else None."""
    got = torch_signature(x)
    if got is not None:
        return "torch", got[0], got[1]
    got = cupy_signature(x)
    if got is not None:
        return "cupy", got[0], got[1]
    return None


def _signature(x: Any, dev: int, ptr: int) -> tuple[Any, ...]:
    return x.dtype, x.shape, x.stride(), dev, ptr & 15  # torch.Size is a tuple


def torch_view(x: Any, signature: tuple[Any, ...], ptr: int) -> TensorView:
    """The view of the torch CUDA tensor ``x`` (a dtype with a DLPack code) from its
    signature (``torch_signature``) and data pointer."""
    dtype, shape, strides, dev, _ = signature
    return TensorView(ptr, shape, strides, _TORCH_DTYPES[dtype], DL_CUDA, dev, False, x)


def torch_out_view(out: Any) -> TensorView:
    """The view of an output allocated by ``torch_empty`` (a plain torch CUDA tensor)."""
    sig = torch_signature(out)
    assert sig is not None, "an output of torch_empty"
    return torch_view(out, *sig)


def torch_stream(device: int) -> int:
    """torch's current stream on ``device`` (torch is imported: a torch tensor was passed)."""
    return _torch_stream(sys.modules["torch"], device)


def torch_empty(like: Any, dtype: str | None = None,
                shape: tuple[int, ...] | None = None) -> Any:  # fmt: skip
    """A contiguous uninitialised tensor on ``like``'s device, of ``like``'s shape (or
    ``shape``) and dtype (or torch's ``dtype``, by name: "int64", "bfloat16")."""
    torch = sys.modules["torch"]
    if shape is None:  # empty_like: about half the host time of empty(shape, device=...)
        if dtype is None:
            return torch.empty_like(like, memory_format=torch.contiguous_format)
        return torch.empty_like(like, dtype=getattr(torch, dtype),
                                memory_format=torch.contiguous_format)  # fmt: skip
    return torch.empty(shape, dtype=like.dtype if dtype is None else getattr(torch, dtype),
                       device=like.device)  # fmt: skip


def current_stream_handle(x: object, device: int) -> int | None:
    """The caller's framework's current stream on ``device`` (torch, cupy), else None."""
    fw = framework_of(x)
    if fw == "torch":
        return _torch_stream(sys.modules["torch"], device)
    if fw == "cupy":
        return _cupy_stream(sys.modules["cupy"], device)
    return None


def reject_tracer(x: object, op: str) -> None:
    """JAX tracers (inside ``jax.jit``) have no memory to hand to a kernel."""
    if framework_of(x) == "jax":
        jax = sys.modules.get("jax")
        core = getattr(jax, "core", None)
        tracer = getattr(core, "Tracer", None)
        if tracer is not None and isinstance(x, tracer):
            raise Unsupported(
                f"baracuda.{op}: called inside jax.jit (got a {type(x).__name__}); calls from "
                "traced JAX code need an XLA FFI binding, which baracuda does not provide yet. "
                "Call it eagerly, outside jit."
            )
