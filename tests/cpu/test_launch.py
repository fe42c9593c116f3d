"""Host-side launch helpers that need no GPU."""

from __future__ import annotations

import struct

import pytest

from baracuda._cuda.launch import _offsets


def test_packed_offsets_follow_c_layout() -> None:
    # pointer, pointer, pointer, float, int64: the float is padded to the next 8 bytes
    assert _offsets("QQQfq") == (0, 8, 16, 24, 32)
    assert _offsets("QQQdq") == (0, 8, 16, 24, 32)
    assert _offsets("fQ") == (0, 8)
    assert _offsets("iiq") == (0, 4, 8)
    buf = bytearray(64)
    struct.pack_into("@QQQfq", buf, 0, 1, 2, 3, 0.5, 7)
    assert struct.unpack_from("<f", buf, 24)[0] == 0.5
    assert struct.unpack_from("<q", buf, 32)[0] == 7


def test_dependent_launches_on_hopper_and_later(monkeypatch: pytest.MonkeyPatch) -> None:
    from baracuda._cuda import launch

    assert [launch.dependent_launches(a) for a in ("sm_80", "sm_86", "sm_89")] == [False] * 3
    assert [launch.dependent_launches(a) for a in ("sm_90", "sm_90a", "sm_100", "sm_120f")] == [
        True
    ] * 4
    monkeypatch.setattr(launch, "DEPENDENT_LAUNCH", False)
    assert not launch.dependent_launches("sm_90")


@pytest.mark.parametrize(
    ("dependent", "cooperative"), [(True, False), (False, True), (True, True)]
)
def test_launch_attributes(dependent: bool, cooperative: bool) -> None:
    """The reused per-thread launch config asks for programmatic stream serialization and/or
    a cooperative launch (cuda.bindings only; no GPU needed to build it)."""
    pytest.importorskip("cuda.bindings")
    from baracuda._cuda.driver import driver
    from baracuda._cuda.launch import _configs

    drv = driver()
    ids = drv.CUlaunchAttributeID
    cfg = _configs.get(dependent, cooperative)
    assert cfg is _configs.get(dependent, cooperative)  # built once a thread
    assert (cfg.blockDimY, cfg.blockDimZ, cfg.numAttrs) == (1, 1, dependent + cooperative)
    got = {int(a.id): a for a in cfg.attrs[: cfg.numAttrs]}
    pss = int(ids.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
    coop = int(ids.CU_LAUNCH_ATTRIBUTE_COOPERATIVE)
    assert set(got) == ({pss} if dependent else set()) | ({coop} if cooperative else set())
    if dependent:
        assert got[pss].value.programmaticStreamSerializationAllowed == 1
    if cooperative:
        assert got[coop].value.cooperative == 1


@pytest.mark.parametrize("contiguous", [True, False])
@pytest.mark.parametrize("fmt", ["f", "d"])
def test_elementwise_prepared_launch(contiguous: bool, fmt: str,
                                     monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Inside ``capturing``, the elementwise launcher hands its launch to the functional API's
    prepared launches (``replay``): bound to the views, it enqueues for other views exactly
    the arguments the launcher gives them (the 16-byte path's packed scalars, the strided
    path's shapes and strides)."""
    import struct
    from typing import Any

    from baracuda._cuda import replay
    from baracuda._cuda.view import TensorView
    from baracuda.elementwise import _launch

    log: list[tuple[object, ...]] = []

    def packed(fn: object, grid: tuple[int, int, int], block: int, smem: int, stream: object,
               f: str, values: list[float], name: str = "") -> None:  # fmt: skip
        log.append((fn, grid, block, smem, name,
                    tuple(struct.pack("@" + c, v) for c, v in zip(f, values, strict=True))))

    def plain(fn: object, grid: tuple[int, int, int], block: int, smem: int, stream: object,
              args: list[Any], name: str = "", **kw: bool) -> None:  # fmt: skip
        assert not kw.get("dependent") and not kw.get("cooperative")
        log.append((fn, grid, block, smem, name, tuple(bytes(a) for a in args)))

    class FakeModule:
        sm_count = 132

        def function(self, name: str) -> str:
            return f"fn:{name}"

    monkeypatch.setattr(_launch, "launch_packed", packed)
    monkeypatch.setattr(_launch, "launch", plain)
    monkeypatch.setattr(replay, "launch", plain)
    launcher = _launch.ElementwiseLauncher(FakeModule(), "lerp_fwd", 3, fmt)  # type: ignore[arg-type]
    shape, item = (37, 129), 8 if fmt == "d" else 4
    strides = (129, 1) if contiguous else (1, 37)
    code = (2, 8 * item)

    def views(base: int) -> list[TensorView]:
        return [TensorView(base + (k << 32), shape, strides, code, 2, 0) for k in range(3)]

    with replay.capturing() as cap:
        variant = launcher(None, views(1 << 36), 0.3)  # type: ignore[arg-type]
    assert variant == ("vec16" if contiguous else "strided")
    bound = replay.bind_steps(cap, [v.ptr for v in views(1 << 36)], 0)
    assert bound is not None and not bound[1]
    log.clear()
    for st in bound[0]:
        st.enqueue(0, [v.ptr for v in views(1 << 40)], 0)
    got = list(log)
    log.clear()
    launcher(None, views(1 << 40), 0.3)  # type: ignore[arg-type]
    assert len(got) == 1 and got == log


def test_steps_reuse_their_argument_buffers_a_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """A prepared launch (``replay.Step``) builds its argument buffers and their ``void*``
    array once a thread and rewrites only the pointers at each enqueue: every launch sees
    the bytes of its own addresses, the step's recorded bytes never change, and another
    thread (or a rebound copy of the step) gets buffers of its own."""
    import ctypes
    import threading
    from dataclasses import replace
    from typing import Any

    from baracuda._cuda import replay
    from baracuda._cuda.launch import PreparedArgs

    seen: list[tuple[Any, tuple[bytes, ...]]] = []

    def fake(fn: object, grid: tuple[int, int, int], block: int, smem: int, stream: object,
             args: Any, name: str = "", **kw: bool) -> None:  # fmt: skip
        assert type(args) is PreparedArgs
        addrs = (ctypes.c_void_p * len(args)).from_address(args.params)
        assert list(addrs) == [ctypes.addressof(a) for a in args]  # the array points at them
        seen.append((args, tuple(bytes(a) for a in args)))

    monkeypatch.setattr(replay, "launch", fake)
    # two arguments: a struct of 24 bytes with a pointer at byte 8 and a state at byte 16,
    # and a pointer alone
    recorded = (bytes(range(24)), bytes(8))
    step = replay.Step("fn", (1, 1, 1), 32, 0, "k", recorded, ((0, 8, 1), (1, 0, 0)),
                       ((0, 16, 4),), False, False)  # fmt: skip

    def expect(p0: int, p1: int, base: int) -> tuple[bytes, bytes]:
        return (bytes(range(8)) + struct.pack("@QQ", p1, base + 4), struct.pack("@Q", p0))

    step.enqueue(0, (1 << 33, 1 << 34), 1 << 40)
    step.enqueue(0, (5 << 33, 7 << 34), 3 << 40)
    assert [b for _, b in seen] == [expect(1 << 33, 1 << 34, 1 << 40),
                                    expect(5 << 33, 7 << 34, 3 << 40)]  # fmt: skip
    assert seen[0][0] is seen[1][0]  # one thread: the same buffers
    assert step.args == recorded
    other: list[Any] = []
    t = threading.Thread(target=lambda: (step.enqueue(0, (9, 10), 0), other.append(seen[-1])))
    t.start()
    t.join()
    assert other[0][0] is not seen[0][0] and other[0][1] == expect(9, 10, 0)
    replace(step, ops=((0, 8, 0), (1, 0, 1))).enqueue(0, (11, 12), 0)
    assert seen[-1][0] is not seen[0][0] and seen[-1][1] == expect(12, 11, 0)


def test_capturing_off_opens_no_block() -> None:
    """``capturing(False)`` (a functional call that will not be bound) opens no block: the
    launch code sees no capture active (``active()``), so it skips what ``capture`` needs,
    and what is captured anyway goes nowhere; ``capturing()`` collects it."""
    from baracuda._cuda import replay

    step = replay.Step("fn", (1, 1, 1), 32, 0, "k", (bytes(8),), ((0, 0, 0),), (), False, False)
    with replay.capturing(False) as cap:
        assert not replay.active()
        replay.capture((step,), (1 << 32,), 0, 0)
    assert cap == [] and not replay.active()
    with replay.capturing() as cap:
        assert replay.active()
        replay.capture((step,), (1 << 32,), 0, 0)
    assert cap == [((step,), (1 << 32,), 0, 0)] and not replay.active()


@pytest.mark.parametrize(("const", "entry", "name"), [
    ("Fwd", "lerp_fwd_vec", "FWD"), ("Bwd", "lerp_bwd_vec", "BWD"),
    ("BwdSmall", "lerp_bwd_vec4", "BWD_SMALL")])  # fmt: skip
def test_lerp_block_matches_its_kernel(const: str, entry: str, name: str) -> None:
    """The lerp plans launch their vec kernels with lerp.cu's block (the kernel's launch
    bounds: a larger block fails to launch) and the vectors a thread it was built with."""
    import re
    from pathlib import Path

    from baracuda.elementwise import lerp

    text = (Path(lerp.__file__).parent / "lerp.cu").read_text()
    m = re.search(rf"constexpr int k{const}Block = (\d+), k{const}Unroll = (\d+);", text)
    assert m is not None
    want = (getattr(lerp, f"{name}_BLOCK"), getattr(lerp, f"{name}_UNROLL"))
    assert (int(m[1]), int(m[2])) == want
    assert re.search(rf"BC_KERNEL\({entry}, bc::k{const}Block\)", text)
    assert f"lerp_{entry.split('_')[1]}_vec<BC_T, BC_ACC, bc::k{const}Unroll>" in text
    assert entry in lerp.LERP_SOURCE.entries


@pytest.mark.parametrize(("shape", "element", "small"), [
    ((2**22,), "F32", True), ((2**22 + 1,), "F32", False), ((2**23,), "BF16", True),
    ((4096, 8192), "BF16", False), ((2**21,), "F64", True), ((7,), "F16", True)])  # fmt: skip
def test_lerp_backward_takes_four_vectors_up_to_16_mib(shape: tuple[int, ...], element: str,
                                                      small: bool) -> None:  # fmt: skip
    """The lerp backward plan of a dy of at most 16 MiB launches ``lerp_bwd_vec4`` (4 vectors
    a thread, blocks of 256), of more ``lerp_bwd_vec`` (one, blocks of 128)."""
    from baracuda.elementwise import lerp
    from baracuda.elementwise.lerp_backward import (
        BinaryParamBackwardDescriptor,
        BinaryParamBackwardPlan,
    )
    from baracuda.types import ElementKind, PlanPreference

    class FakeModule:
        sm_count = 132

        def function(self, name: str) -> str:
            return f"fn:{name}"

    desc = BinaryParamBackwardDescriptor(shape, ElementKind[element], 0.3)
    plan = BinaryParamBackwardPlan(desc, None, 0, PlanPreference(), FakeModule())  # type: ignore[arg-type]
    got = plan._launcher
    want = ("lerp_bwd_vec4", lerp.BWD_SMALL_BLOCK, lerp.BWD_SMALL_UNROLL) if small else (
        "lerp_bwd_vec", lerp.BWD_BLOCK, lerp.BWD_UNROLL)  # fmt: skip
    assert (got._vec_name, got._block, got._unroll) == want
    assert got._vec == f"fn:{want[0]}"


def test_dlpack_exports_order_the_consumer_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    """A DLPack producer orders the consumer's stream after its own: an event recorded on the
    producer's stream that the consumer's waits on (None and 1: the legacy default stream),
    nothing for -1 or for the producer's own stream; a bad stream argument is a typed error.
    The JAX outputs' export goes through it before handing the memory over."""
    import types

    from baracuda._cuda import stream as stream_mod
    from baracuda._cuda.stream import Stream
    from baracuda._functional import _OrderedExport
    from baracuda.errors import InvalidProblem

    calls: list[tuple[str, object]] = []
    fake = types.SimpleNamespace(
        CUevent_flags=types.SimpleNamespace(CU_EVENT_DISABLE_TIMING=2),
        CUstream=lambda h: ("stream", h),
        cuEventCreate=lambda f: (calls.append(("create", f)), (0, "ev"))[1],
        cuEventRecord=lambda e, s: (calls.append(("record", s)), (0,))[1],
        cuStreamWaitEvent=lambda s, e, f: (calls.append(("wait", s)), (0,))[1],
        cuEventDestroy=lambda e: (calls.append(("destroy", e)), (0,))[1],
    )
    monkeypatch.setattr(stream_mod, "driver", lambda: fake)
    producer = Stream(0x5000)
    producer._cu = ("stream", 0x5000)
    for consumer, waits_on in ((None, 1), (1, 1), (2, 2), (0x7000, 0x7000), (-1, None),
                               (0x5000, None)):  # fmt: skip
        calls.clear()
        producer.order_before(consumer)
        if waits_on is None:
            assert calls == []
        else:
            assert calls == [("create", 2), ("record", ("stream", 0x5000)),
                             ("wait", ("stream", waits_on)), ("destroy", "ev")]  # fmt: skip
    calls.clear()
    Stream(0).order_before(None)  # the legacy default stream on both sides
    Stream(0).order_before(1)
    assert calls == []
    with pytest.raises(InvalidProblem, match="stream must be an int or None"):
        producer.order_before("s")  # type: ignore[arg-type]

    class Inner:
        def __dlpack_device__(self) -> tuple[int, int]:
            return (2, 0)

        def __dlpack__(self, *, stream: int | None = None, **kw: object) -> str:
            calls.append(("export", stream))
            return "capsule"

    calls.clear()
    out = _OrderedExport(Inner(), producer)
    assert out.__dlpack_device__() == (2, 0)
    assert out.__dlpack__(stream=0x7000) == "capsule"
    assert [c[0] for c in calls] == ["create", "record", "wait", "destroy", "export"]


def test_arrays_are_held_until_their_kernels_completed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run keeps its arrays marked ``TensorView.keep`` alive with an event recorded
    after its launches, and drops them once that event has completed, oldest first, at a
    later run; the event is then recorded again by a later hold on its device. Fast views
    (the caller's own array on its current stream) are not held, and nothing is held or
    queried while the stream is being captured into a graph."""
    import gc
    import types
    import weakref

    from baracuda._cuda import retain
    from baracuda._cuda import stream as stream_mod
    from baracuda._cuda.stream import Stream
    from baracuda._cuda.view import TensorView
    from baracuda._plan import _keep_arrays

    ready: dict[str, bool] = {}
    calls: list[tuple[str, object]] = []
    made = iter(range(100))
    capturing = [0]

    def create(flags: int) -> tuple[int, str]:
        ev = f"ev{next(made)}"
        calls.append(("create", flags))
        return 0, ev

    def record(e: str, s: object) -> tuple[int]:
        ready[e] = False
        calls.append(("record", (e, s)))
        return (0,)

    fake = types.SimpleNamespace(
        CUevent_flags=types.SimpleNamespace(CU_EVENT_DISABLE_TIMING=2),
        CUresult=types.SimpleNamespace(CUDA_ERROR_NOT_READY=600),
        cuEventCreate=create,
        cuEventRecord=record,
        cuEventQuery=lambda e: (0 if ready[e] else 600,),
        cuEventDestroy=lambda e: (calls.append(("destroy", e)), (0,))[1],
        cuStreamIsCapturing=lambda s: (0, capturing[0]),
    )
    monkeypatch.setattr(retain, "driver", lambda: fake)
    monkeypatch.setattr(stream_mod, "driver", lambda: fake)
    monkeypatch.setattr(retain, "_held", type(retain._held)())
    monkeypatch.setattr(retain, "_free", {})
    monkeypatch.setattr(retain, "_exit_hook", [])
    monkeypatch.setattr(retain.atexit, "register", lambda f: f)  # not this test's process

    class Owner:  # stands for a StridedMemoryView holding the producer's array
        pass

    def view(owner: object, keep: bool) -> TensorView:
        return TensorView(256, (4,), (1,), (2, 32), 2, 0, False, owner, keep)

    s = Stream(0x5000)
    s._cu = "s0"
    a, b, mine = Owner(), Owner(), Owner()
    wa, wb, wmine = weakref.ref(a), weakref.ref(b), weakref.ref(mine)
    _keep_arrays(s, 0, (view(a, True), view(mine, False), None))
    _keep_arrays(s, 0, (view(b, True),))
    assert calls == [("create", 2), ("record", ("ev0", "s0")), ("create", 2),
                     ("record", ("ev1", "s0"))]  # fmt: skip
    assert retain.held() == 2
    del a, b, mine
    gc.collect()
    assert wa() is not None and wb() is not None and wmine() is None
    calls.clear()
    capturing[0] = 1  # a graph capture: nothing held, no event queried or recorded
    ready["ev0"] = ready["ev1"] = True
    _keep_arrays(s, 0, (view(Owner(), True), view(Owner(), False)))
    assert calls == [] and retain.held() == 2
    ready["ev0"] = ready["ev1"] = False
    capturing[0] = 0
    _keep_arrays(s, 0, (view(Owner(), False),))  # nothing to keep: releases what completed
    assert calls == [] and retain.held() == 2
    ready["ev1"] = True  # the second run's event, behind the first: both wait
    retain.release_done()
    assert retain.held() == 2 and wa() is not None and wb() is not None
    ready["ev0"] = True
    _keep_arrays(s, 0, (None,))
    gc.collect()
    assert calls == [] and retain._free == {0: ["ev0", "ev1"]}  # kept, not destroyed
    assert retain.held() == 0 and wa() is None and wb() is None
    c, d = Owner(), Owner()
    wc = weakref.ref(c)
    s1 = Stream(0x6000)
    s1._cu = "s1"
    _keep_arrays(s, 0, view(c, True))  # a plan whose views are one TensorView
    _keep_arrays(s1, 1, (view(d, True),))  # another device: an event of its own
    _keep_arrays(s, 0, (1, 2))  # or not views at all (nothing held)
    assert calls == [("record", ("ev1", "s0")), ("create", 2), ("record", ("ev2", "s1"))]
    del c, d
    assert retain.held() == 2 and wc() is not None
    ready["ev1"] = ready["ev2"] = True
    retain.release_done()
    gc.collect()
    assert retain.held() == 0 and wc() is None
    assert retain._free == {0: ["ev0", "ev1"], 1: ["ev2"]}
    assert retain._exit_hook == [retain._drop_all]  # registered at the first hold, once
    e = Owner()
    we = weakref.ref(e)
    _keep_arrays(s, 0, (view(e, True),))
    del e
    retain._drop_all()  # at exit: everything dropped, completed or not
    gc.collect()
    assert retain.held() == 0 and we() is None


def _fake_contexts(monkeypatch: pytest.MonkeyPatch,
                   first: int) -> tuple[list[int], list[int], list[int]]:  # fmt: skip
    """A driver and devices of fakes for ``baracuda._cuda.device``: device i's primary
    context is the handle 100 + i. Returns the thread's current context (starting at
    ``first``), the devices made current (``set_current``) and the contexts set back
    (``cuCtxSetCurrent``), each a list the fakes update."""
    import threading
    import types

    from baracuda._cuda import device as device_mod

    ctx = [first]
    made: list[int] = []
    sets: list[int] = []

    class FakeDevice:
        def __init__(self, i: int) -> None:
            self.i = i

        def set_current(self) -> None:
            made.append(self.i)
            ctx[0] = 100 + self.i

    def set_ctx(c: int) -> tuple[int]:
        sets.append(c)
        ctx[0] = c
        return (0,)

    fake = types.SimpleNamespace(cuCtxGetCurrent=lambda: (0, ctx[0]), cuCtxSetCurrent=set_ctx,
                                 CUcontext=int)  # fmt: skip
    monkeypatch.setattr(device_mod, "driver", lambda: fake)
    monkeypatch.setattr(device_mod, "core_device", FakeDevice)
    monkeypatch.setattr(device_mod, "_check_id", lambda i: None)
    monkeypatch.setattr(device_mod, "_current", threading.local())
    monkeypatch.setattr(device_mod, "_contexts", {})
    monkeypatch.setattr(device_mod, "_one_device", False)
    return ctx, made, sets


def test_ensure_current_follows_other_frameworks_on_several_devices(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``ensure_current`` remembers the device made current a thread. With one device that is
    all (no driver call when it is already current); with several, the driver's current
    context is compared too, so a device another framework made current since (a
    ``torch.cuda.device(i)`` block's exit) is replaced by the one asked for."""
    import threading

    from baracuda._cuda import device as device_mod

    ctx, made, _ = _fake_contexts(monkeypatch, 0)
    monkeypatch.setattr(device_mod, "device_count", lambda: 1)
    device_mod.ensure_current(0)
    ctx[0] = 555  # one device: the memo alone decides
    counted: list[int] = []
    monkeypatch.setattr(device_mod, "device_count", lambda: counted.append(1) or 1)
    device_mod.ensure_current(0)
    assert made == [0]
    assert not counted  # no driver call at all when the device is already current
    monkeypatch.setattr(device_mod, "device_count", lambda: 2)
    monkeypatch.setattr(device_mod, "_current", threading.local())
    made.clear()
    device_mod.ensure_current(1)
    device_mod.ensure_current(1)  # still current: nothing
    assert made == [1] and device_mod._contexts == {1: 101}
    ctx[0] = 100  # another framework made device 0's context current
    device_mod.ensure_current(1)
    assert made == [1, 1] and ctx[0] == 101
    device_mod.ensure_current(0)
    device_mod.ensure_current(0)
    assert made == [1, 1, 0] and device_mod._contexts == {1: 101, 0: 100}


def test_entry_points_give_the_caller_its_context_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a machine of several devices a public entry point (``keeps_context``) that made
    another device's context current makes the caller's current again on return, also when
    it raised, and with no context at all where the caller had none; nested entry points
    leave it to the outermost. On one device nothing is set back (no driver call)."""
    import threading

    from baracuda._cuda import device as device_mod

    ctx, made, sets = _fake_contexts(monkeypatch, 100)  # the caller's: device 0's
    monkeypatch.setattr(device_mod, "device_count", lambda: 2)
    seen: list[int] = []

    @device_mod.keeps_context
    def run(d: int) -> int:
        device_mod.ensure_current(d)
        seen.append(ctx[0])
        return d

    @device_mod.keeps_context
    def outer() -> None:
        run(1)
        assert ctx[0] == 101  # the inner entry point left it to this one
        run(0)
        run(1)

    @device_mod.keeps_context
    def boom() -> None:
        device_mod.ensure_current(1)
        raise ValueError("in the run")

    assert run(1) == 1 and seen == [101] and ctx[0] == 100 and sets == [100]
    assert run(1) == 1 and ctx[0] == 100 and made == [1, 1]  # made current again, given back
    assert run(0) == 0 and ctx[0] == 100  # the caller's device: nothing to give back
    sets.clear()
    outer()
    assert seen[-3:] == [101, 100, 101] and ctx[0] == 100 and sets == [100]
    with pytest.raises(ValueError, match="in the run"):
        boom()
    assert ctx[0] == 100
    ctx[0] = 0  # a thread with no context current
    run(1)
    assert ctx[0] == 0
    # one device: the primary context is every run's; nothing is given back
    monkeypatch.setattr(device_mod, "device_count", lambda: 1)
    monkeypatch.setattr(device_mod, "_current", threading.local())
    sets.clear()
    ctx[0] = 555
    run(0)
    run(0)
    assert device_mod._one_device and sets == [] and ctx[0] == 100


def test_every_public_entry_point_keeps_the_callers_context() -> None:
    """Every public entry point is wrapped in ``keeps_context`` (the functional ops, each
    plan family's ``select``, ``Plan.run`` and ``can_implement``, ``Workspace.allocate``):
    the decorator sits on each family's ``select``, so a family added later without it
    fails here, not on a machine of two GPUs."""
    import types

    import baracuda as bc
    from baracuda._cuda import device as device_mod
    from baracuda._plan import Plan
    from baracuda._registry import import_families

    import_families()
    wrapped = device_mod.keeps_context(lambda: None).__code__

    def keeps(fn: object) -> bool:
        if isinstance(fn, classmethod | staticmethod):
            fn = fn.__func__
        return isinstance(fn, types.FunctionType) and fn.__code__ is wrapped

    ops = [n for n in bc.__all__ if isinstance(getattr(bc, n), types.FunctionType)
           and getattr(bc, n).__module__.endswith(".api")]  # fmt: skip
    assert len(ops) == 10, ops
    assert [n for n in ops if not keeps(getattr(bc, n))] == []
    assert keeps(Plan.__dict__["run"]) and keeps(Plan.__dict__["can_implement"])
    assert keeps(bc.Workspace.__dict__["allocate"])

    def families(cls: type) -> list[type]:
        return [c for s in cls.__subclasses__() for c in (s, *families(s))]

    plans = [c for c in families(Plan) if not c.__name__.startswith("_")]
    names = {c.__name__ for c in plans}
    assert {"ScanPlan", "ScanBackwardPlan", "SparsemaxPlan", "SparsemaxBackwardPlan",
            "BinaryParamPlan", "BinaryParamBackwardPlan"} <= names  # fmt: skip
    for cls in plans:
        owner = next(k for k in cls.__mro__ if "select" in k.__dict__)
        assert keeps(owner.__dict__["select"]), f"{owner.__name__}.select"
        assert "run" not in cls.__dict__ or keeps(cls.__dict__["run"]), f"{cls.__name__}.run"
