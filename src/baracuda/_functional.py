"""What every functional op shares: CPU or CUDA, the stream, outputs in the caller's
framework, a plan cache and workspaces."""

from __future__ import annotations

import contextlib
import numbers
import operator
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from baracuda._cuda.device import ensure_current
from baracuda._cuda.memory import Workspace
from baracuda._cuda.replay import BoundSteps, Captured
from baracuda._cuda.stream import Stream
from baracuda._cuda.view import DL_CUDA, DL_CUDA_MANAGED, TensorView
from baracuda._dtypes import ELEMENTS, INDEX_ELEMENTS, element_kind_of
from baracuda._interop import (
    current_stream_handle,
    framework_of,
    reject_tracer,
    torch_empty,
    torch_out_view,
    torch_signature,
    torch_stream,
    torch_view,
)
from baracuda._plan import check_shape
from baracuda._xp import namespace
from baracuda.errors import InvalidProblem, Unsupported
from baracuda.types import ElementKind, IndexElementKind

__all__ = [
    "is_cuda_array",
    "check_host_operands",
    "int_arg",
    "real_arg",
    "device_of",
    "resolve_stream",
    "element_of",
    "empty_like",
    "finish",
    "cached_plan",
    "plan_for",
    "run_plan",
    "BoundCalls",
    "FastCall",
    "run_hit",
    "run_hit_binary",
    "bound_args",
    "bound_stream",
    "run_bound",
]


def device_of(x: object) -> tuple[int, int]:
    """(DLPack device type, device id) of ``x``; (1, 0) for arrays without DLPack."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return (DL_CUDA, x.get_device()) if x.is_cuda else (1, 0)
    dev = getattr(x, "__dlpack_device__", None)
    if dev is None:
        return (1, 0)
    t, i = dev()
    return int(t), int(i)


def is_cuda_array(x: object, op: str = "op") -> bool:
    reject_tracer(x, op)
    return device_of(x)[0] in (DL_CUDA, DL_CUDA_MANAGED)


def int_arg(op: str, name: str, value: object) -> int:
    """``value`` as an int: a Python int or an integer scalar of numpy, torch... (anything with
    ``__index__``), never a bool; else ``InvalidProblem`` naming the argument."""
    if type(value) is int:  # the usual case, first
        return value
    if not isinstance(value, bool):
        with contextlib.suppress(TypeError):
            return operator.index(value)  # type: ignore[arg-type]
    raise InvalidProblem(f"baracuda.{op}: {name} must be an int (got {value!r})")


def real_arg(op: str, name: str, value: object) -> float:
    """``value`` as a float: a real number of Python, numpy... (``numbers.Real``), never a bool;
    else ``InvalidProblem`` naming the argument."""
    if type(value) is float:
        return value
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    raise InvalidProblem(f"baracuda.{op}: {name} must be a real number (got {value!r})")


def check_host_operands(op: str, operands: Sequence[tuple[str, Any]]) -> None:
    """The array-API path's checks of a call's arrays, those the CUDA path's plans make: each
    an array of one array library, on the first one's device, of a supported element type
    (f32, f16, bf16, f64: the references compute in f32 or f64 and round back, which would
    truncate integers and drop imaginary parts), the first of rank at most 8 (the references
    refuse rank 0 where the op needs an axis), the others of its shape and dtype.
    ``operands``: (field name, array) pairs; None (a saved tensor the op does not read) is
    skipped."""
    name = f"baracuda.{op}"
    given = [(f, a) for f, a in operands if a is not None]
    for f, a in given:
        try:
            namespace(a)
        except TypeError:
            raise InvalidProblem(
                f"{name}: {f} must be an array (numpy, torch, cupy, jax or another array-API "
                f"library) (got {type(a).__name__})"
            ) from None
    try:
        namespace(*(a for _, a in given))
    except TypeError:
        raise InvalidProblem(
            f"{name}: {', '.join(f for f, _ in given)} must be arrays of one library (got "
            f"{', '.join(type(a).__module__ + '.' + type(a).__name__ for _, a in given)})"
        ) from None
    (f0, a0), rest = given[0], given[1:]
    for f, a in given:
        try:
            element_kind_of(a.dtype)  # not element_of's memo: keys of other libraries' dtypes
        except Unsupported:
            raise Unsupported(
                f"{name}: {f} dtype {a.dtype} is not supported; supported: "
                + ", ".join(k.value for k in ElementKind)
            ) from None
    shape = check_shape(name, f"{f0}.shape", tuple(a0.shape))
    dev = device_of(a0)
    for f, a in rest:
        if device_of(a) != dev:
            raise InvalidProblem(
                f"{name}: {f} is on DLPack device {device_of(a)}, {f0} on {dev}; they must be on "
                "one device"
            )
        if tuple(a.shape) != shape:
            raise InvalidProblem(
                f"{name}: {f}.shape must equal {f0}.shape {shape} (got {tuple(a.shape)})"
            )
        if a.dtype != a0.dtype:
            raise InvalidProblem(
                f"{name}: {f} dtype must equal {f0}'s ({a0.dtype}) (got {a.dtype})"
            )


def resolve_stream(stream: object, like: object) -> Stream:
    """``stream`` wrapped; when None, the current stream of ``like``'s framework on its device
    (torch, cupy) or the legacy default stream (JAX, others)."""
    dev = device_of(like)[1]
    if stream is not None:
        return Stream.wrap(stream)
    handle = current_stream_handle(like, dev)
    return Stream(handle if handle is not None else 0, device_id=dev)


_KINDS: dict[Any, ElementKind] = {}


def element_of(x: Any) -> ElementKind:
    """``x``'s ``ElementKind`` (memoised per dtype object: this is on every call's path)."""
    dt = x.dtype
    try:
        return _KINDS[dt]
    except (KeyError, TypeError):
        kind = element_kind_of(dt)
        with contextlib.suppress(TypeError):  # an unhashable dtype is not memoised
            _KINDS[dt] = kind
        return kind


A = TypeVar("A", contravariant=True)
V = TypeVar("V", contravariant=True)


class _RunnablePlan(Protocol[A]):
    def workspace_size(self) -> int: ...
    def run(self, stream: object, workspace: Workspace, args: A) -> None: ...


_plans: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
_plans_lock = threading.Lock()
_MAX_PLANS = 512


def cached_plan(cls: Any, stream: Stream, desc: Any) -> Any:
    """``cls.select(stream, desc)`` once per (class, descriptor, device); LRU-bounded."""
    return plan_for(cls, stream, desc, lambda: desc)


def plan_for(cls: Any, stream: Stream, key: Any, make_desc: Any) -> Any:
    """Like ``cached_plan`` with a cheaper key (e.g. shape, framework dtype, parameters) from
    which ``make_desc()`` builds the descriptor only on a miss."""
    full = (cls, key, stream.device_id())
    plan = _plans.get(full)
    if plan is not None:
        return plan
    plan = cls.select(stream, make_desc())
    with _plans_lock:
        _plans[full] = plan
        if len(_plans) > _MAX_PLANS:
            _plans.popitem(last=False)
    return plan


def run_plan(plan: _RunnablePlan[A], stream: Stream, args: A) -> None:
    """``plan.run(stream, workspace, args)`` with a workspace of ``plan.workspace_size()``
    bytes from the package's stream-ordered scratch pool of the device, freed on ``stream``
    right after the launches (the pool hands it out again only to work ordered after them).
    It is allocated only if a launch reads its address (``Workspace.scratch``): a plan sizes
    its workspace for the most any launch path of its shape may take, and a call whose
    launches need none (a row a block or warp, strips of strided lines) skips both driver
    calls, about 10 us of host time a call on the H100's host."""
    _with_scratch(plan.workspace_size(), stream, plan.run, args)


class _BoundPlan(Protocol[V]):
    device_id: int

    def workspace_size(self) -> int: ...
    def _switches(self) -> Callable[[], tuple[object, ...]] | None: ...
    def _run_bound(self, stream: Stream, workspace: Workspace, views: V) -> None: ...


def run_bound(plan: _BoundPlan[V], stream: Stream, views: V) -> None:
    """``run_plan`` for views of arguments whose signatures a ``run`` of ``plan`` accepted
    before (``BoundCalls``): no checks, the same workspace."""
    _with_scratch(plan.workspace_size(), stream, plan._run_bound, views)


T = TypeVar("T")


def _with_scratch(need: int, stream: Stream, enqueue: Callable[[Stream, Workspace, T], None],
                  arg: T) -> None:  # fmt: skip
    """``enqueue(stream, workspace, arg)`` with a scratch workspace of ``need`` bytes."""
    if need <= 0:
        enqueue(stream, Workspace.none(), arg)
        return
    ws = Workspace.scratch(need, stream)
    try:
        enqueue(stream, ws, arg)
    finally:
        ws.release(stream)


Signed = tuple[tuple[Any, ...], int]  # torch_signature's (signature, data pointer)


def bound_args(stream: object, *arrays: Any) -> list[Signed | None] | None:
    """The ``torch_signature`` of each of a call's arrays, for its bound path; None where the
    call must take the checks: an explicit ``stream``, or an array (other than an absent
    optional one, after the first) that is not a plain torch CUDA tensor."""
    if stream is not None:
        return None
    out: list[Signed | None] = []
    for i, a in enumerate(arrays):
        sig = None if a is None and i else torch_signature(a)
        if sig is None and (a is not None or not i):
            return None
        out.append(sig)
    return out


def bound_stream(signature: tuple[Any, ...]) -> Stream:
    """The stream of a bound call: torch's current stream on the device of the tensor of
    ``signature`` (``torch_signature``), as ``resolve_stream`` gives it for that tensor."""
    dev: int = signature[3]
    return Stream(torch_stream(dev), device_id=dev)


class BoundCalls:
    """The plans of functional calls on plain torch CUDA tensors whose checks passed, by the
    op's parameters and the tensors' signatures (``baracuda._interop.torch_signature``). A
    later call with the same key would be accepted as the first was: it skips the checks, the
    framework dispatch, the descriptor and the plan lookup, and enqueues through
    ``run_bound`` (on the H100's host: bc.cumsum of (64, 1024) f32 46.0 -> 31.4 us a call,
    bc.sparsemax 51.8 -> 41.0 us). Calls with an explicit stream, other frameworks' arrays and
    torch subclasses always take the checked path. At most ``limit`` keys (all dropped when
    full)."""

    __slots__ = ("_calls", "_limit")

    def __init__(self, limit: int = 1024) -> None:
        self._calls: dict[tuple[Any, ...], Any] = {}
        self._limit = limit

    def lookup(self, stream: object, params: tuple[Any, ...],
               *arrays: Any) -> tuple[tuple[Any, ...] | None, Any, list[Signed | None]]:
        """``(key, plan, signatures)`` of a call with ``params`` on ``arrays``: the key None
        (and no plan) where the call must take the checks (``bound_args``), the plan None
        until a checked call of that key has been ``put``."""
        if len(arrays) == 1:  # the forward ops: one array, no loop
            sig = torch_signature(arrays[0]) if stream is None else None
            if sig is None:
                return None, None, []
            key = (*params, sig[0])
            return key, self._calls.get(key), [sig]
        sigs = bound_args(stream, *arrays)
        if sigs is None:
            return None, None, []
        key = params + tuple([None if a is None else a[0] for a in sigs])
        return key, self._calls.get(key), sigs

    def get(self, key: tuple[Any, ...]) -> Any:
        return self._calls.get(key)

    def put(self, key: tuple[Any, ...] | None, value: Any) -> None:
        """Remember ``value`` (the plan a checked call ran) under ``key``; nothing for a key
        of None (a call that is never bound)."""
        if key is None:
            return
        if len(self._calls) >= self._limit:
            self._calls.clear()
        self._calls[key] = value

    def clear(self) -> None:
        self._calls.clear()

    def __len__(self) -> int:
        return len(self._calls)


class FastCall:
    """A bound call's launches, prepared: the steps a checked call of a plan enqueued (their
    pointers taken from the call's arrays and from the workspace: ``replay.BoundSteps``),
    enqueued again for arrays of the same signatures on torch's current stream, with a
    scratch workspace where a step uses one. It skips the plan's per-call path (views, the
    launch recipes' keys, the parameters' construction): on an H100's host, bc.cumsum of a
    (64, 1024) f32 tensor took 26.1 us a call through ``run_bound`` and 14.9 this way, against
    10.2 for torch.cumsum (docs/benchmarks.md, round 24); with each step's argument buffers
    kept a thread, 11.5 on an H200's host against 14.8 (round 32). Valid while the switches
    the plan's launch code reads (``Plan._switches``) keep their values."""

    __slots__ = ("_bound", "_ws_bytes")

    def __init__(self, bound: BoundSteps, ws_bytes: int) -> None:
        """``bound``: the steps; ``ws_bytes`` the scratch workspace they need (0 where none of
        them uses one)."""
        self._bound = bound
        self._ws_bytes = ws_bytes

    @classmethod
    def bind(cls, plan: _BoundPlan[Any], captured: Captured,
             ptrs: Sequence[int]) -> FastCall | None:  # fmt: skip
        """The launches ``plan`` enqueued for the arrays at ``ptrs`` (``captured`` by
        ``replay.capturing`` around a checked call), prepared for later calls of the same
        signatures; None where they cannot be bound to those arrays, or the plan's runs are
        never bound (``_switches()`` None)."""
        switches = plan._switches()
        if switches is None:
            return None
        need = plan.workspace_size()
        bound = BoundSteps.bind(captured, ptrs, need, switches, plan.device_id)
        if bound is None:
            return None
        return cls(bound, need if bound.uses_workspace else 0)

    def run(self, ptrs: Sequence[int]) -> bool:
        """Enqueue the steps for arrays at ``ptrs`` (in the order the steps were bound to)
        on torch's current stream; False, with nothing enqueued, where a switch changed since
        (take ``run_bound``)."""
        bound = self._bound
        if not bound.current():
            return False
        dev = bound.device_id
        ensure_current(dev)
        if not self._ws_bytes:  # the usual case: the raw handle, no Stream or Workspace
            bound.enqueue(torch_stream(dev), ptrs, 0)
            return True
        _with_scratch(self._ws_bytes, Stream(torch_stream(dev), device_id=dev), self._enqueue,
                      ptrs)  # fmt: skip
        return True

    def _enqueue(self, stream: Stream, workspace: Workspace, ptrs: Sequence[int]) -> None:
        # the scratch is allocated here (its address read), if any
        self._bound.enqueue(stream.handle, ptrs, workspace.ptr)


def run_hit(hit: tuple[Any, FastCall | None], ptrs: Sequence[int], signature: tuple[Any, ...],
            views: Callable[[], Any]) -> None:  # fmt: skip
    """Enqueue a bound call (``hit``: the plan and its prepared launches, from
    ``BoundCalls``): the prepared launches for the arrays at ``ptrs`` (in the order of the
    plan's views), else the plan's path for ``views()`` (``run_bound``, on the stream of the
    tensor of ``signature``)."""
    plan, fast = hit
    if fast is None or not fast.run(ptrs):
        run_bound(plan, bound_stream(signature), views())


def run_hit_binary(hit: tuple[Any, FastCall | None],
                   bound: Sequence[tuple[tuple[Any, ...], int] | None], a: Any,
                   b: Any) -> Any:  # fmt: skip
    """``run_hit`` for an op of two torch inputs ``a`` and ``b`` (``bound``: their
    signatures, from ``BoundCalls.lookup``) and one output like ``a``; the output."""
    sa, sb = bound
    assert sa is not None and sb is not None
    out = torch_empty(a)
    run_hit(hit, (sa[1], sb[1], out.data_ptr()), sa[0],
            lambda: (torch_view(a, *sa), torch_view(b, *sb), torch_out_view(out)))  # fmt: skip
    return out


class JaxOutput:
    """An output buffer baracuda allocates for a JAX caller (JAX arrays are immutable),
    handed to JAX through DLPack by ``finish``."""

    __slots__ = ("_buffer", "_stream", "_view", "dtype_name", "shape")

    def __init__(self, shape: tuple[int, ...], dtype_name: str, device_id: int,
                 dlpack: tuple[int, int], stream: Stream) -> None:  # fmt: skip
        from baracuda._cuda.device import core_device, ensure_current
        from baracuda._layout import contiguous_strides, numel

        ensure_current(device_id)
        dev = core_device(device_id)
        nbytes = max(numel(shape) * dlpack[1] // 8, 1)
        self._buffer = dev.allocate(nbytes, stream=dev.create_stream(stream))
        self._stream = stream  # the stream the kernels write the buffer on
        self.shape = shape
        self.dtype_name = dtype_name
        self._view = TensorView(int(self._buffer.handle), shape, contiguous_strides(shape),
                                dlpack, DL_CUDA, device_id, False, self._buffer)  # fmt: skip

    def __baracuda_view__(self) -> TensorView:
        return self._view

    def to_jax(self) -> Any:
        import jax.dlpack
        import numpy as np
        from cuda.core.utils import StridedMemoryView

        def view(dtype: Any) -> Any:
            smv = StridedMemoryView.from_buffer(self._buffer, self.shape, dtype=np.dtype(dtype))
            return jax.dlpack.from_dlpack(_OrderedExport(smv, self._stream))

        if self.dtype_name != "bfloat16":
            return view(self.dtype_name)
        return _bf16_export(
            lambda: view(_bf16()),
            lambda: jax.lax.bitcast_convert_type(view(np.uint16), jax.numpy.bfloat16),
        )


class _OrderedExport:
    """A DLPack producer that orders the consumer's stream after ``stream`` (where the
    kernels that wrote the memory ran) before it exports ``inner``. JAX passes its own stream
    to ``__dlpack__`` and reads the array there; cuda.core's export of a buffer does not know
    the stream that wrote it, so without this JAX could read an output before it was written
    (seen on an H200 with the GPU busy: a bf16 lerp returned the previous call's result)."""

    __slots__ = ("_inner", "_stream")

    def __init__(self, inner: Any, stream: Stream) -> None:
        self._inner = inner
        self._stream = stream

    def __dlpack_device__(self) -> Any:
        return self._inner.__dlpack_device__()

    def __dlpack__(self, *, stream: int | None = None, **kwargs: Any) -> Any:
        self._stream.order_before(stream)
        return self._inner.__dlpack__(stream=stream, **kwargs)


# Whether cuda.core exports bfloat16 through DLPack; False after its first refusal (the
# installed cuda.core does not change while the process runs).
_BF16_EXPORT = [True]


def _bf16_export(native: Callable[[], Any], bits: Callable[[], Any]) -> Any:
    """A bfloat16 output for JAX: ``native()`` (a zero-copy view) where cuda.core exports
    bfloat16, else ``bits()``: the bits as uint16, reinterpreted by JAX (a device copy). Releases
    without that export (cuda.core 1.2.0) raise ``BufferError``; the refusal is remembered, so
    later calls go straight to ``bits``."""
    if _BF16_EXPORT[0]:
        try:
            return native()
        except BufferError:
            _BF16_EXPORT[0] = False
    return bits()


def _bf16() -> Any:
    import ml_dtypes

    return ml_dtypes.bfloat16


def empty_like(x: Any, shape: tuple[int, ...] | None = None, dtype: object = None,
               stream: Stream | None = None) -> Any:  # fmt: skip
    """An uninitialised array on ``x``'s device in ``x``'s framework (a ``JaxOutput`` for JAX,
    see ``finish``). ``dtype``: None (``x``'s), an ``ElementKind``, or "int64"/"int32"."""
    shp = tuple(x.shape) if shape is None else shape
    fw = framework_of(x)
    if dtype is None:
        name = ELEMENTS[element_of(x)].numpy_name
    elif isinstance(dtype, ElementKind):
        name = ELEMENTS[dtype].numpy_name
    elif isinstance(dtype, IndexElementKind):
        name = INDEX_ELEMENTS[dtype][1]
    else:
        name = str(dtype)
    if fw == "torch":
        return torch_empty(x, None if dtype is None else name, shape)
    if fw == "cupy":
        cupy = sys.modules["cupy"]
        with cupy.cuda.Device(x.device.id):
            return cupy.empty(shp, dtype=name if name != "bfloat16" else _bf16())
    if fw == "jax":
        dev = device_of(x)[1]
        s = stream if stream is not None else Stream(0, device_id=dev)
        dl = {**{ELEMENTS[k].numpy_name: ELEMENTS[k].dlpack for k in ELEMENTS},
              **{v[1]: v[2] for v in INDEX_ELEMENTS.values()}}[name]  # fmt: skip
        return JaxOutput(shp, name, dev, dl, s)
    xp = namespace(x)
    return xp.empty(shp, dtype=getattr(xp, name))


def finish(out: Any) -> Any:
    """The array handed back to the caller: JAX outputs become JAX arrays, others pass."""
    return out.to_jax() if isinstance(out, JaxOutput) else out
