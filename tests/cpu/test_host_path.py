"""The per-call host path's shortcuts, checked without a GPU: switches read again only after
an assignment, identity-hashed enums, parameter spellings by lookup, and stream handles
wrapped once."""

from __future__ import annotations

import dataclasses
import enum
import struct
import sys
import types
from typing import Any

import pytest

import baracuda.types as types_module
from baracuda import _switches
from baracuda.errors import InvalidProblem
from baracuda.types import ScanKind, TieBreak

SWITCH_MODULES = ("baracuda.scan._kernels", "baracuda.softmax._rows", "baracuda._cuda.launch")


@pytest.mark.parametrize("name", SWITCH_MODULES)
def test_switch_modules_are_watched(name: str) -> None:
    """Every module whose globals a prepared launch depends on counts assignments to them."""
    __import__(name)
    module = sys.modules[name]
    before = _switches.generation()
    module.SOME_TEST_ATTRIBUTE = 1  # type: ignore[attr-defined]
    assert _switches.generation() == before + 1
    del module.SOME_TEST_ATTRIBUTE  # type: ignore[attr-defined]
    assert _switches.generation() == before + 2


def test_memo_reads_again_only_after_an_assignment(monkeypatch: pytest.MonkeyPatch) -> None:
    from baracuda._cuda import launch

    reads: list[int] = []

    def read() -> tuple[object, ...]:
        reads.append(1)
        return (launch.DEPENDENT_LAUNCH,)

    values = _switches.memo(read)
    first = values()
    assert values() is first and values() is first and len(reads) == 1
    monkeypatch.setattr(launch, "DEPENDENT_LAUNCH", not launch.DEPENDENT_LAUNCH)
    second = values()
    assert len(reads) == 2 and second == (not first[0],)
    assert values() is second
    monkeypatch.undo()  # the old value again: read again, equal to the first
    assert values() == first and len(reads) == 3


@pytest.mark.parametrize("module_name", ["baracuda.scan._kernels", "baracuda.softmax._rows"])
def test_switch_values_follow_every_switch(module_name: str,
                                           monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """The memoised values change with each switch of the module and with the launch
    module's dependent-launch switch, and stay one object while none changes (the bound
    calls compare them by identity first)."""
    __import__(module_name)
    module = sys.modules[module_name]
    from baracuda._cuda import launch

    values = module.switch_values
    base = values()
    assert values() is base
    assert base[: len(module._SWITCHES)] == tuple(getattr(module, n) for n in module._SWITCHES)
    for name in module._SWITCHES:
        old = getattr(module, name)
        monkeypatch.setattr(module, name, object())  # a value equal to no other
        assert values() != base, name
        monkeypatch.setattr(module, name, old)
        assert values() == base, name
    monkeypatch.setattr(launch, "DEPENDENT_LAUNCH", not launch.DEPENDENT_LAUNCH)
    assert values() != base


def test_enums_hash_by_identity() -> None:
    """Every enum of the public vocabulary hashes by identity (Enum's own hash is a Python
    call on each key of the functional path); members stay equal only to themselves."""
    enums = [v for v in vars(types_module).values()
             if isinstance(v, type) and issubclass(v, enum.Enum)
             and v.__module__ == types_module.__name__]  # fmt: skip
    assert len(enums) >= 9
    for cls in enums:
        for member in cls:
            assert hash(member) == object.__hash__(member), member
            assert member != member.value and {member: 1}[cls(member.value)] == 1


def test_scan_parameters_by_their_spellings() -> None:
    from baracuda.scan import api

    assert api._kind("op", "CumSum") is ScanKind.CUMSUM
    assert api._kind("op", ScanKind.CUMMAX) is ScanKind.CUMMAX
    assert api._tie("op", "LAST") is TieBreak.LAST and api._tie("op", "first") is TieBreak.FIRST
    assert api._tie("op", TieBreak.LAST) is TieBreak.LAST
    for bad in (["first"], {}, 1, None, "median"):
        with pytest.raises(InvalidProblem, match="tie_break must be 'first' or 'last'"):
            api._tie("op", bad)
        with pytest.raises(InvalidProblem, match="kind must be a ScanKind"):
            api._kind("op", bad)


def test_stream_handles_are_wrapped_once() -> None:
    pytest.importorskip("cuda.bindings")
    from baracuda._cuda.launch import _CU_STREAMS, cu_stream

    a = cu_stream(0x1234)
    assert cu_stream(0x1234) is a and int(a) == 0x1234 and int(cu_stream(0)) == 0
    for h in range(300):  # bounded: dropped when full
        assert int(cu_stream(h + 1)) == h + 1
    assert len(_CU_STREAMS) <= 256


def _fake_plan(monkeypatch: pytest.MonkeyPatch, current_stream: list[int],
               need: int = 0) -> tuple[Any, Any]:  # fmt: skip
    """A plan whose checked path records (``_bind``) and captures (``_run_bound``) one launch
    of its args' addresses (and, ``need`` > 0, of a pointer 64 bytes into its workspace of
    ``need`` bytes), over stand-in torch tensors (objects with a signature), with the launch
    itself logged: the bound path's bookkeeping without a GPU."""
    from baracuda import _plan
    from baracuda._cuda import replay
    from baracuda._cuda.memory import Workspace

    launched: list[tuple[str, tuple[bytes, ...]]] = []

    def fake_launch(fn: object, grid: tuple[int, int, int], block: int, smem: int,
                    stream: object, args: Any, name: str = "", **kw: bool) -> None:  # fmt: skip
        launched.append((f"{name}@{stream}", tuple(bytes(a) for a in args)))

    monkeypatch.setattr(replay, "launch", fake_launch)
    monkeypatch.setattr(_plan, "ensure_current", lambda dev: None)
    monkeypatch.setattr(_plan, "current_stream_handle",
                        lambda a, dev: current_stream[0] if a.fw == "torch" else 0x99)
    monkeypatch.setattr(_plan, "array_signature",
                        lambda a: (a.fw, a.sig, a.ptr) if isinstance(a, FakeTensor) else None)
    switch = [0]

    class Plan(_plan.Plan[None, Args, tuple[int, ...]]):
        NAME = "FakePlan"
        checked = 0

        def sku(self) -> Any:
            raise NotImplementedError

        def workspace_size(self) -> int:
            return need

        def _switches(self) -> _plan.Switches:
            return lambda: (switch[0],)

        def _bind(self, args: Args, stream: Any) -> tuple[int, ...]:
            Plan.checked += 1
            if args.a.sig[1] != args.out.sig[1]:
                raise InvalidProblem("FakePlan: out must be like a")
            return (args.a.ptr, args.out.ptr, 0 if args.b is None else args.b.ptr)

        def _note(self) -> object:
            return self.variant

        def _replayed(self, note: object) -> None:
            self.variant = note

        def _launch(self, stream: Any, workspace: Workspace, views: tuple[int, ...]) -> None:
            name = f"k{switch[0]}" + ("" if views[2] else "-no-b")
            self.variant = name
            given = [p for p in views if p]  # an absent b's null is not a pointer to bind
            raws = [struct.pack("@Q", p) for p in given]
            states: tuple[tuple[int, int, int], ...] = ()
            if need:  # a pointer into the workspace, after the arrays'
                states = ((len(raws), 0, 64),)
                raws.append(struct.pack("@Q", workspace.ptr + 64))
            fake_launch(None, (1, 1, 1), 32, 0, stream.handle, raws, name)
            replay.capture_launch("fn", (1, 1, 1), 32, name, raws, given, states,
                                  workspace.ptr)  # fmt: skip

    plan = Plan(None, None, 0, None)  # type: ignore[arg-type]
    plan.switch = switch  # type: ignore[attr-defined]
    plan.launched = launched  # type: ignore[attr-defined]
    return plan, Workspace.none()


class FakeTensor:
    def __init__(self, ptr: int, shape: tuple[int, ...] = (4, 8), fw: str = "torch") -> None:
        self.ptr = ptr
        self.fw = fw
        self.sig = ("f32", shape, (shape[1], 1), 0, ptr & 15)


@dataclasses.dataclass(frozen=True)
class Args:
    a: Any
    out: Any
    b: Any = None


def test_plan_runs_bind_and_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    """A plan's run on torch tensors of signatures a checked run accepted, on torch's
    current stream, replays that run's launches with the new addresses; other signatures,
    streams, a shared address, an open capture or a changed switch take the checks."""
    from baracuda._cuda import replay
    from baracuda._cuda.stream import Stream

    current = [0x77]
    plan, ws = _fake_plan(monkeypatch, current)
    launched = plan.launched
    s = Stream(0x77, device_id=0)

    def run(a: int, out: int, b: int | None = None, stream: Any = s,
            shape: tuple[int, ...] = (4, 8)) -> tuple[int, tuple[bytes, ...]]:  # fmt: skip
        before = type(plan).checked
        plan.run(stream, ws, Args(FakeTensor(a, shape), FakeTensor(out, shape),
                                  None if b is None else FakeTensor(b, shape)))  # fmt: skip
        return type(plan).checked - before, launched[-1]

    def ptrs(*p: int) -> tuple[bytes, ...]:
        return tuple(struct.pack("@Q", x) for x in p)

    assert run(1 << 20, 2 << 20) == (1, ("k0-no-b@119", ptrs(1 << 20, 2 << 20)))
    assert run(5 << 20, 6 << 20) == (0, ("k0-no-b@119", ptrs(5 << 20, 6 << 20)))  # replayed
    assert run(5 << 20, 6 << 20, 7 << 20)[0] == 1  # b given: another key
    assert run(8 << 20, 9 << 20, 3 << 20) == (0, ("k0@119", ptrs(8 << 20, 9 << 20, 3 << 20)))
    assert plan.variant == "k0"
    assert run(5 << 20, 6 << 20)[0] == 0 and plan.variant == "k0-no-b"  # the replayed run's
    assert run(8 << 20 | 4, 9 << 20)[0] == 1  # another alignment: another signature
    assert run(8 << 20, 8 << 20)[0] == 1  # in place: never replayed
    assert run(8 << 20, 8 << 20)[0] == 1
    assert run(3 << 20, 4 << 20, shape=(2, 16))[0] == 1  # another shape
    assert run(3 << 20, 4 << 20)[0] == 0
    assert run(3 << 20, 4 << 20, stream=0x77)[0] == 0  # the raw handle of the same stream
    current[0] = 0x55  # torch's current stream is another: DLPack orders it, so checked
    assert run(3 << 20, 4 << 20)[0] == 1 and run(3 << 20, 4 << 20)[0] == 1
    current[0] = 0x77
    plan.switch[0] = 1  # a switch changed: checked again, and bound anew
    assert run(1 << 24, 2 << 24) == (1, ("k1-no-b@119", ptrs(1 << 24, 2 << 24)))
    assert run(3 << 24, 4 << 24) == (0, ("k1-no-b@119", ptrs(3 << 24, 4 << 24)))
    with replay.capturing() as cap:  # the functional API's capture: not bound here
        assert run(3 << 24, 4 << 24)[0] == 1
    assert len(cap) == 1
    mixed = Args(FakeTensor(1 << 20), FakeTensor(2 << 20, fw="cupy"))  # two frameworks
    before = type(plan).checked
    plan.run(s, ws, mixed)
    plan.run(s, ws, mixed)
    assert type(plan).checked == before + 2
    cupy_stream = Stream(0x99, device_id=0)  # CuPy's current stream: bound on its own key
    both = [Args(FakeTensor(p << 20, fw="cupy"), FakeTensor(q << 20, fw="cupy")) for p, q in
            ((1, 2), (3, 4))]  # fmt: skip
    for a in both:
        plan.run(cupy_stream, ws, a)
    assert type(plan).checked == before + 3 and launched[-1][1] == ptrs(3 << 20, 4 << 20)
    plan.run(s, ws, both[0])  # not CuPy's current stream: checked
    assert type(plan).checked == before + 4
    with pytest.raises(InvalidProblem, match="out must be like a"):
        plan.run(s, ws, Args(FakeTensor(1 << 20), FakeTensor(2 << 20, (2, 16))))
    before = type(plan).checked
    plan.run(s, ws, types.SimpleNamespace(a=FakeTensor(1 << 20), out=FakeTensor(2 << 20), b=None))
    plan.run(s, ws, types.SimpleNamespace(a=FakeTensor(1 << 20), out=FakeTensor(2 << 20), b=None))
    assert type(plan).checked == before + 2  # args that are not a dataclass: checked


def test_cupy_signatures(monkeypatch: pytest.MonkeyPatch) -> None:
    """A CuPy array's signature is what its view is read off (dtype, shape, byte strides,
    device, pointer mod 16); arrays its view is not read off (a dtype without a DLPack code,
    strides in parts of elements) have none, and neither has anything else. ``fast_view``
    reads the view off the same arrays."""
    import numpy as np

    from baracuda import _interop

    class ndarray:  # CuPy's class name
        def __init__(self, ptr: int, dtype: str, shape: tuple[int, ...],
                     strides: tuple[int, ...]) -> None:  # fmt: skip
            self.data = types.SimpleNamespace(ptr=ptr)
            self.device = types.SimpleNamespace(id=1)
            self.dtype, self.shape, self.strides = np.dtype(dtype), shape, strides

    fake = types.ModuleType("cupy")
    fake.ndarray = ndarray  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cupy", fake)
    f32 = np.dtype("float32")
    a = ndarray(0x1004, "float32", (3, 4), (4, 12))
    assert _interop.array_signature(a) == ("cupy", (f32, (3, 4), (4, 12), 1, 4), 0x1004)
    assert _interop.array_signature(ndarray(0x1000, "float32", (3, 4), (16, 2))) is None
    assert _interop.array_signature(ndarray(0x1000, "complex64", (3,), (8,))) is None
    assert _interop.array_signature(np.zeros(3)) is None
    # the view is read off the same arrays, and refused for the same ones
    v = _interop.fast_view(a, -1)
    assert v is not None and (v.ptr, v.shape, v.strides, v.device_id) == (0x1004, (3, 4), (1, 3), 1)
    assert _interop.fast_view(ndarray(0x1000, "float32", (3, 4), (16, 2)), -1) is None
    assert _interop.fast_view(ndarray(0x1000, "complex64", (3,), (8,)), -1) is None


def test_host_time_is_the_median_round(monkeypatch: pytest.MonkeyPatch) -> None:
    """``_bench.host_time``: ``warmup`` calls, then ``rounds`` rounds of ``calls`` calls, the
    GPU drained after each (here a stand-in), and the median round's time a call."""
    import time

    import torch

    from baracuda import _bench

    syncs: list[int] = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: syncs.append(1))
    clock = iter([0.0, 0.003, 1.0, 1.001, 2.0, 2.002])  # rounds of 3, 1 and 2 ms
    monkeypatch.setattr(time, "perf_counter", lambda: next(clock))
    calls: list[int] = []
    got = _bench.host_time(lambda: calls.append(1), calls=10, rounds=3, warmup=5)
    assert len(calls) == 5 + 30 and len(syncs) == 4
    assert got == pytest.approx(200.0)  # 2 ms / 10 calls, in µs


def test_bound_runs_check_their_workspace(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bound run patches the workspace's address into its launches and checks the
    workspace as a checked run does: another address is fine, a misaligned one or one too
    small is refused with the plan's typed error."""
    from baracuda._cuda.memory import Workspace
    from baracuda._cuda.stream import Stream
    from baracuda.errors import MisalignedOperand, WorkspaceTooSmall

    plan, _ = _fake_plan(monkeypatch, [0x77], need=512)
    s = Stream(0x77, device_id=0)

    def run(ws: Workspace, a: int = 1 << 20) -> tuple[int, tuple[bytes, ...]]:
        before = type(plan).checked
        plan.run(s, ws, Args(FakeTensor(a), FakeTensor(a + (1 << 20))))
        return type(plan).checked - before, plan.launched[-1][1]

    def args(a: int, ws: int) -> tuple[bytes, ...]:
        return tuple(struct.pack("@Q", p) for p in (a, a + (1 << 20), ws + 64))

    assert run(Workspace(1 << 32, 512, 0)) == (1, args(1 << 20, 1 << 32))
    assert run(Workspace(3 << 32, 512, 0), 5 << 20) == (0, args(5 << 20, 3 << 32))  # replayed
    with pytest.raises(MisalignedOperand, match="256-byte aligned"):
        run(Workspace((3 << 32) + 16, 512, 0))
    with pytest.raises(WorkspaceTooSmall):
        run(Workspace(3 << 32, 256, 0))
    with pytest.raises(WorkspaceTooSmall):
        run(Workspace.none())
    assert run(Workspace(7 << 32, 4096, 0)) == (1, args(1 << 20, 7 << 32))  # another size


@pytest.mark.parametrize("need", [0, 512])
def test_fast_calls_replay_their_steps(need: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The functional API's bound calls (``FastCall``) share the plans' ``BoundSteps``: bound
    under the plan's own switches, they enqueue the steps with the new addresses on torch's
    current stream (and a scratch workspace where a step uses one), and refuse once a switch
    changed."""
    from baracuda import _functional
    from baracuda._cuda import replay
    from baracuda._cuda.memory import Workspace

    launched: list[tuple[object, tuple[bytes, ...]]] = []
    monkeypatch.setattr(replay, "launch", lambda fn, grid, block, smem, stream, args, name="",
                        **kw: launched.append((stream, tuple(bytes(a) for a in args))))
    monkeypatch.setattr(_functional, "ensure_current", lambda dev: None)
    monkeypatch.setattr(_functional, "torch_stream", lambda dev: 0x77)
    scratch: list[int] = []

    def fake_scratch(nbytes: int, stream: Any) -> Workspace:
        scratch.append(nbytes)
        return Workspace(5 << 32, nbytes, 0)

    monkeypatch.setattr(Workspace, "scratch", staticmethod(fake_scratch))
    monkeypatch.setattr(Workspace, "release", lambda self, stream: None)
    switch = [0]
    plan = types.SimpleNamespace(device_id=0, workspace_size=lambda: need,
                                 _switches=lambda: lambda: (switch[0],))  # fmt: skip
    ws = 3 << 32  # the checked call's workspace
    given = [1 << 20, 2 << 20]
    raws = [struct.pack("@Q", p) for p in given]
    states: tuple[tuple[int, int, int], ...] = ()
    if need:
        states = ((2, 0, 64),)
        raws.append(struct.pack("@Q", ws + 64))
    with replay.capturing() as cap:
        replay.capture_launch("fn", (1, 1, 1), 32, "k", raws, given, states, ws if need else 0)
    fast = _functional.FastCall.bind(plan, cap, given)  # type: ignore[arg-type]
    assert fast is not None
    assert fast.run((7 << 20, 9 << 20))
    want = [struct.pack("@Q", 7 << 20), struct.pack("@Q", 9 << 20)]
    if need:
        want.append(struct.pack("@Q", (5 << 32) + 64))
    assert launched[-1] == (0x77, tuple(want)) and scratch == ([need] if need else [])
    switch[0] = 1
    assert not fast.run((7 << 20, 9 << 20)) and len(launched) == 1
    never = types.SimpleNamespace(device_id=0, workspace_size=lambda: 0, _switches=lambda: None)
    assert _functional.FastCall.bind(never, cap, given) is None  # type: ignore[arg-type]
