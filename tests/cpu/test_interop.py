"""Host-side framework plumbing that needs no GPU and no framework."""

from __future__ import annotations

import pytest

from baracuda import _functional
from baracuda.errors import InvalidProblem


def test_bf16_export_falls_back_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where cuda.core refuses to export bfloat16, the refusal is remembered: later outputs
    go straight to the uint16 bits instead of failing the export again on every call."""
    monkeypatch.setattr(_functional, "_BF16_EXPORT", [True])
    calls: list[str] = []

    def refused() -> str:
        calls.append("native")
        raise BufferError("bfloat16 is not supported")

    def bits() -> str:
        calls.append("bits")
        return "copy"

    assert _functional._bf16_export(refused, bits) == "copy"
    assert _functional._bf16_export(refused, bits) == "copy"
    assert calls == ["native", "bits", "bits"]


def test_bf16_export_native_when_supported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_functional, "_BF16_EXPORT", [True])

    def bits() -> str:
        raise AssertionError("the fallback must not run when the export works")

    assert _functional._bf16_export(lambda: "view", bits) == "view"
    assert _functional._bf16_export(lambda: "view", bits) == "view"
    assert _functional._BF16_EXPORT == [True]


def test_bf16_export_other_errors_propagate(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only BufferError (no bfloat16 export) selects the fallback; other failures surface."""
    monkeypatch.setattr(_functional, "_BF16_EXPORT", [True])

    def broken() -> str:
        raise RuntimeError("device lost")

    with pytest.raises(RuntimeError, match="device lost"):
        _functional._bf16_export(broken, lambda: "copy")
    assert _functional._BF16_EXPORT == [True]


class _FakeCupy:
    """What the CuPy fast path reads of the cupy module and its arrays."""

    class ndarray:
        def __init__(self, shape: tuple[int, ...], strides: tuple[int, ...], dtype: str,
                     ptr: int = 4096, device: int = 0) -> None:  # fmt: skip
            import types

            import numpy as np

            self.shape, self.strides, self.dtype = shape, strides, np.dtype(dtype)
            self.data = types.SimpleNamespace(ptr=ptr)
            self.device = types.SimpleNamespace(id=device)

    class cuda:
        stream = 0

        class Device:
            def __init__(self, dev: int) -> None:
                pass

            def __enter__(self) -> None:
                return None

            def __exit__(self, *exc: object) -> None:
                return None

        @classmethod
        def get_current_stream(cls) -> object:
            import types

            return types.SimpleNamespace(ptr=cls.stream)


def test_cupy_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """CuPy arrays are read off their attributes (no DLPack capsule): byte strides become
    element strides, negative ones included (CuPy's DLPack export corrupts them), and
    anything else (odd strides, a dtype CuPy exports otherwise) takes DLPack. On a stream
    other than CuPy's current one, CuPy's pending work is ordered before the run's stream (an
    event it waits on) and the view is held by the run (``keep``)."""
    import sys

    from baracuda import _interop
    from baracuda._cuda import stream as stream_mod
    from baracuda._interop import fast_view

    fake = _FakeCupy()
    monkeypatch.setitem(sys.modules, "cupy", fake)
    ordered: list[tuple[int, int | None]] = []
    monkeypatch.setattr(stream_mod.Stream, "order_before",
                        lambda self, consumer: ordered.append((self.handle, consumer)))  # fmt: skip
    current: list[int] = []
    monkeypatch.setattr(_interop, "ensure_current", current.append)
    x = fake.ndarray((3, 4), (-16, 4), "float32", ptr=8192)  # x[::-1] of a (3, 4) array
    v = fast_view(x, 0)
    assert v is not None
    assert (v.ptr, v.shape, v.strides, v.dtype, v.device_id) == (8192, (3, 4), (-4, 1), (2, 32), 0)
    assert v.owner is x and not v.keep
    assert fast_view(x, -1) is not None  # no ordering asked for
    assert fast_view(x, 1) is not None  # the legacy default stream is CuPy's stream 0
    assert ordered == []
    fake.cuda.stream = 77
    w = fast_view(x, 55)  # another stream: CuPy's pending work ordered before it, view held
    assert w is not None and w.keep and w.owner is x and w.strides == (-4, 1)
    assert ordered == [(77, 55)] and current == [0]  # in the array's device's context
    got = fast_view(x, 77)
    assert got is not None and not got.keep and ordered == [(77, 55)]
    assert fast_view(fake.ndarray((3,), (6,), "float32"), 77) is None  # not whole elements
    assert fast_view(fake.ndarray((3,), (2,), "complex64"), 77) is None
    h = fast_view(fake.ndarray((5, 2), (2, -10), "float16", device=1), 77)
    assert h is not None and h.strides == (1, -5) and h.dtype == (2, 16) and h.device_id == 1
    with pytest.raises(InvalidProblem, match="spans"):
        fast_view(fake.ndarray((4, 3), (2**62 - 4, 4), "float32"), 77)
    assert fast_view(object(), 77) is None


def test_torch_signature_only_for_plain_cuda_tensors() -> None:
    """The functional API's bound path (BoundCalls) is for plain torch CUDA tensors: CPU
    tensors, subclasses and other arrays have no signature and always take the checks."""
    torch = pytest.importorskip("torch")
    import numpy as np

    from baracuda._interop import torch_signature

    x = torch.ones(4, 5)
    assert torch_signature(x) is None
    assert torch_signature(torch.nn.Parameter(x)) is None
    assert torch_signature(np.ones((4, 5), np.float32)) is None
    assert torch_signature(torch.ones(4, 5, device="meta")) is None
    assert torch_signature(None) is None


def test_bound_calls_are_bounded() -> None:
    calls = _functional.BoundCalls(limit=3)
    for i in range(3):
        calls.put(("k", i), i)
    assert len(calls) == 3 and calls.get(("k", 1)) == 1
    calls.put(("k", 3), 3)  # full: every key dropped, then this one kept
    assert len(calls) == 1 and calls.get(("k", 0)) is None and calls.get(("k", 3)) == 3
    calls.clear()
    assert len(calls) == 0


def test_bound_calls_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    """lookup: no key for a call that must take the checks (an explicit stream, an array
    without a signature, a missing first array); else the op's parameters then each array's
    signature (None for an absent optional one), and the plan once a checked call put it.
    put of no key keeps nothing."""
    monkeypatch.setattr(_functional, "torch_signature",
                        lambda t: None if t in (None, "cupy") else (("sig", t), 7))  # fmt: skip
    calls = _functional.BoundCalls()
    assert calls.lookup(object(), ("op", 1), "x") == (None, None, [])
    assert calls.lookup(None, ("op", 1), "cupy") == (None, None, [])
    assert calls.lookup(None, ("op", 1), None, "x") == (None, None, [])
    assert calls.lookup(None, ("op", 1), "x", "cupy") == (None, None, [])
    key, plan, sigs = calls.lookup(None, ("op", 1), "dy", None, "y")
    assert key == ("op", 1, ("sig", "dy"), None, ("sig", "y")) and plan is None
    assert sigs == [(("sig", "dy"), 7), None, (("sig", "y"), 7)]
    calls.put(key, "plan")
    calls.put(None, "never")
    assert len(calls) == 1 and calls.lookup(None, ("op", 1), "dy", None, "y")[1] == "plan"
    assert calls.lookup(None, ("op", 2), "dy", None, "y")[1] is None


class _Out(str):
    """A stand-in output tensor: its name, and a data pointer."""

    def data_ptr(self) -> int:
        return 64


class _Fast:
    """A stand-in FastCall: records the pointers it is run with; ``ok`` False refuses (a
    switch changed)."""

    def __init__(self, ok: bool) -> None:
        self.ok, self.runs = ok, []  # type: list[tuple[int, ...]]

    def run(self, ptrs: tuple[int, ...]) -> bool:
        self.runs.append(ptrs)
        return self.ok


@pytest.mark.parametrize("kind", ["cumsum", "cumprod", "cummax", "logcumsumexp"])
def test_bound_backward_passes_the_saved_tensors_its_kind_needs(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bound path of scan_backward hands the plan the views ``_bind`` would: dy, dx, and
    x / y only where the kind's backward reads them (the seed's table); its prepared
    launches (FastCall) get the same arrays' pointers, 0 for an array the kind does not
    read, and a FastCall that refuses falls back to the plan."""
    from baracuda.scan import api
    from baracuda.scan.scan_backward import needs_saved_x, needs_saved_y
    from baracuda.types import ScanKind

    k = ScanKind(kind)
    seen: list[tuple[object, ...]] = []
    ptr = {"dy": 16, "x": 32, "y": 48}
    # a signature's fourth field is the device
    monkeypatch.setattr(_functional, "torch_signature", lambda t: (("sig", t, 0, 0), ptr[t]))
    monkeypatch.setattr(_functional, "bound_stream", lambda sig: 0)
    monkeypatch.setattr(api, "torch_empty", lambda like, dtype=None: _Out("dx"))
    monkeypatch.setattr(api, "torch_view", lambda t, sig, p: f"view {t}")
    monkeypatch.setattr(api, "torch_out_view", lambda t: f"out {t}")
    monkeypatch.setattr(_functional, "run_bound", lambda plan, s, views: seen.append(views))
    monkeypatch.setattr(api, "_BOUND", _functional.BoundCalls())
    key = (k, 1, False, api.TieBreak.FIRST, ("sig", "dy", 0, 0), ("sig", "x", 0, 0),
           ("sig", "y", 0, 0))  # fmt: skip
    want = ("view dy", "out dx", "view x" if needs_saved_x(k) else None,
            "view y" if needs_saved_y(k) else None)  # fmt: skip
    ptrs = (16, 64, 32 if needs_saved_x(k) else 0, 48 if needs_saved_y(k) else 0)
    api._BOUND.put(key, ("plan", None))
    assert api.scan_backward(kind, "dy", x="x", y="y", axis=1) == "dx"
    assert seen == [want]
    for ok in (True, False):
        seen.clear()
        fast = _Fast(ok)
        api._BOUND.put(key, ("plan", fast))
        assert api.scan_backward(kind, "dy", x="x", y="y", axis=1) == "dx"
        assert fast.runs == [ptrs]
        assert seen == ([] if ok else [want])


@pytest.mark.parametrize("op", ["lerp", "sparsemax_backward"])
def test_bound_binary_ops_pass_both_inputs(op: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bound path of the two-input ops (lerp: a, b; sparsemax_backward: dy, y; one output
    like the first): the plan gets both inputs' views and the output's, the prepared
    launches (FastCall) the same arrays' pointers, and a FastCall that refuses falls back to
    the plan."""
    from baracuda.elementwise import api as lerp_api
    from baracuda.softmax import api as softmax_api

    api = lerp_api if op == "lerp" else softmax_api
    seen: list[tuple[object, ...]] = []
    ptr = {"a": 16, "b": 32}
    monkeypatch.setattr(_functional, "torch_signature", lambda t: (("sig", t, 0, 0), ptr[t]))
    monkeypatch.setattr(_functional, "bound_stream", lambda sig: 0)
    monkeypatch.setattr(_functional, "torch_empty", lambda like, dtype=None: _Out(f"out of {like}"))
    monkeypatch.setattr(_functional, "torch_view", lambda t, sig, p: f"view {t}")
    monkeypatch.setattr(_functional, "torch_out_view", lambda t: f"out {t}")
    monkeypatch.setattr(_functional, "run_bound", lambda plan, s, views: seen.append(views))
    monkeypatch.setattr(api, "_BOUND", _functional.BoundCalls())
    param = 0.25 if op == "lerp" else 1
    key = (op, param, ("sig", "a", 0, 0), ("sig", "b", 0, 0))

    def call() -> object:
        if op == "lerp":
            return lerp_api.lerp("a", "b", 0.25)
        return softmax_api.sparsemax_backward("a", "b", axis=1)

    want = ("view a", "view b", "out out of a")
    api._BOUND.put(key, ("plan", None))
    assert call() == "out of a"
    assert seen == [want]
    for ok in (True, False):
        seen.clear()
        fast = _Fast(ok)
        api._BOUND.put(key, ("plan", fast))
        assert call() == "out of a"
        assert fast.runs == [(16, 32, 64)]
        assert seen == ([] if ok else [want])


def test_empty_like_torch_outputs() -> None:
    """Outputs in torch's type (one allocator for the checked and the bound path): contiguous,
    of the input's dtype, or of the index dtype, or of another shape."""
    torch = pytest.importorskip("torch")
    from baracuda.types import ElementKind, IndexElementKind

    x = torch.ones(5, 3, dtype=torch.bfloat16).t()
    y = _functional.empty_like(x)
    assert y.shape == (3, 5) and y.dtype == torch.bfloat16 and y.is_contiguous()
    i = _functional.empty_like(x, dtype=IndexElementKind.I64)
    assert i.shape == (3, 5) and i.dtype == torch.int64 and i.is_contiguous()
    f = _functional.empty_like(x, shape=(7,), dtype=ElementKind.F32)
    assert f.shape == (7,) and f.dtype == torch.float32
    assert _functional.empty_like(x, shape=(2, 2)).dtype == torch.bfloat16
