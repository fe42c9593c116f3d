"""The per-call host path's shortcuts, checked without a GPU: switches read again only after
an assignment, identity-hashed enums, parameter spellings by lookup, and stream handles
wrapped once."""

from __future__ import annotations

import enum
import sys

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
