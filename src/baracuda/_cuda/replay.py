"""Prepared launches: what a plan enqueued, enqueued again for other addresses.

A launch's arguments depend on a plan and on its arrays' signatures (shapes, strides,
alignment); only the addresses change from one call to the next. A ``Step`` keeps each
argument's bytes with the places its pointers go, and ``enqueue`` patches new addresses in:
no layout logic and no parameter construction on the per-call path. Inside ``capturing``, a
plan's launch code hands what it enqueued to ``capture``; ``bind_steps`` then binds the
pointers to the call's arrays and workspace, for the functional API's bound calls
(``baracuda._functional.FastCall``).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import struct
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from baracuda._cuda.launch import PreparedArgs, launch, memset_zero
from baracuda._cuda.stream import Stream

__all__ = [
    "Step", "U64", "char_array", "Captured", "capturing", "active", "capture", "capture_launch",
    "bind_steps", "BoundSteps",
]  # fmt: skip

U64 = struct.Struct("@Q")  # a pointer argument's bytes


@functools.cache
def char_array(nbytes: int) -> Any:
    """The ctypes array type of ``nbytes`` bytes (made once: a prepared launch's argument)."""
    return ctypes.c_char * nbytes


@dataclass(frozen=True, slots=True)
class Step:
    """One enqueued operation, to enqueue again with other addresses: a kernel of ``args``
    (each argument's bytes), whose pointers are patched at each enqueue: ``ops`` (argument,
    byte offset, index into the pointers given), ``states`` (argument, byte offset, delta
    from the base address given); or, ``fn`` None, a memset of ``count`` words at the base
    address plus ``at``."""

    fn: Any
    grid: tuple[int, int, int]
    block: int
    smem: int
    name: str
    args: tuple[bytes, ...]
    ops: tuple[tuple[int, int, int], ...]
    states: tuple[tuple[int, int, int], ...]
    dependent: bool
    cooperative: bool
    count: int = 0
    at: int = 0
    # each thread's argument buffers (``bufs``: a copy of ``args`` each, whose pointers every
    # enqueue rewrites; building them at each call took about 2.4 us of the H200 host's
    # time), made at the thread's first enqueue and dropped with the thread; not a field of
    # the constructor, so ``replace`` (``bind_steps``) gives a step buffers of its own
    _prepared: threading.local = field(default_factory=threading.local, init=False,
                                       repr=False, compare=False)  # fmt: skip

    def enqueue(self, stream: Stream | int, ptrs: Sequence[int], base: int) -> None:
        """Enqueue on ``stream`` (a ``Stream`` or a raw handle) with the pointers ``ptrs``
        and the base address ``base`` (the workspace, or the launch's states)."""
        if self.fn is None:
            memset_zero(base + self.at, 4 * self.count, stream)
            return
        bufs = getattr(self._prepared, "bufs", None)
        if bufs is None:  # this thread's first enqueue of the step
            bufs = PreparedArgs([char_array(len(a)).from_buffer_copy(a) for a in self.args])
            self._prepared.bufs = bufs
        for k, off, i in self.ops:
            U64.pack_into(bufs[k], off, ptrs[i])
        for k, off, delta in self.states:
            U64.pack_into(bufs[k], off, base + delta)
        launch(self.fn, self.grid, self.block, self.smem, stream, bufs, self.name,
               dependent=self.dependent, cooperative=self.cooperative)  # fmt: skip

    @property
    def uses_base(self) -> bool:
        return self.fn is None or bool(self.states)


# What a plan run on this thread enqueued, while ``capturing``: each (steps, the pointers
# their ``ops`` index, the base address their ``states`` are relative to, the workspace's
# address or 0 where it was not allocated).
Captured = list[tuple[tuple[Step, ...], tuple[int, ...], int, int]]
_capture = threading.local()


@contextlib.contextmanager
def _collect() -> Iterator[Captured]:
    prev = getattr(_capture, "list", None)
    out: Captured = []
    _capture.list = out
    try:
        yield out
    finally:
        _capture.list = prev


def capturing(on: bool = True) -> contextlib.AbstractContextManager[Captured]:
    """Collect every ``capture`` on this thread inside the block (for ``bind_steps``).
    ``on`` False: open no block (a call that will not be bound: an explicit stream, other
    frameworks' arrays), so the plan's launch code skips what ``capture`` would need."""
    return _collect() if on else contextlib.nullcontext([])


def active() -> bool:
    """Whether a ``capturing`` block is open on this thread (what ``capture`` needs may then
    be computed)."""
    return getattr(_capture, "list", None) is not None


def capture(steps: tuple[Step, ...], ptrs: tuple[int, ...], base: int, workspace: int) -> None:
    """Hand ``steps``, enqueued with ``ptrs`` and ``base`` (``workspace``: the address of
    the run's workspace, 0 where none was allocated), to the ``capturing`` block around this
    run, if any."""
    cap = getattr(_capture, "list", None)
    if cap is not None:
        cap.append((steps, ptrs, base, workspace))


def capture_launch(fn: Any, grid: tuple[int, int, int], block: int, name: str,
                   args: Sequence[bytes], ptrs: Sequence[int],
                   states: tuple[tuple[int, int, int], ...] = (), base: int = 0, *,
                   dependent: bool = False, cooperative: bool = False) -> None:  # fmt: skip
    """``capture`` of one kernel launched with ``args`` (each argument's bytes) whose first
    ``len(ptrs)`` arguments are the pointers ``ptrs``; ``states``: (argument, byte offset,
    delta from ``base``) of its pointers into the workspace at ``base`` (0: none)."""
    ops = tuple((k, 0, k) for k in range(len(ptrs)))
    step = Step(fn, grid, block, 0, name, tuple(args), ops, states, dependent, cooperative)
    capture((step,), tuple(ptrs), base, base)


def bind_steps(captured: Captured, arrays: Sequence[int],
               ws_bytes: int) -> tuple[tuple[Step, ...], bool] | None:  # fmt: skip
    """The steps of ``captured`` with their pointers taken from the addresses of a plan's
    arrays (``arrays``, in the order given, 0 for an absent one) and of its workspace of
    ``ws_bytes`` (the base address given to ``Step.enqueue``), and whether they use the
    workspace; None where a pointer is neither (or two arrays share an address, so that
    which one it was is not known)."""
    given = [a for a in arrays if a]
    if len(set(given)) != len(given):
        return None
    out: list[Step] = []
    for steps, ptrs, base, ws in captured:
        for st in steps:
            ops, states = [], []
            for k, off, i in st.ops:
                p = ptrs[i]
                if p and p in given:
                    ops.append((k, off, arrays.index(p)))
                elif ws and ws <= p < ws + ws_bytes:
                    states.append((k, off, p - ws))
                else:
                    return None
            if st.uses_base and not ws:
                return None
            states += [(k, off, base - ws + d) for k, off, d in st.states]
            out.append(replace(st, ops=tuple(ops), states=tuple(states),
                               at=st.at + (base - ws if st.fn is None else 0)))  # fmt: skip
    return tuple(out), any(st.uses_base for st in out)


class BoundSteps:
    """The steps a checked call or run of a plan enqueued, bound to its arrays and workspace
    (``bind_steps``), for calls of the same signatures: the functional API's bound calls
    (``baracuda._functional.FastCall``) and the plans' bound runs (``Plan.run``). Valid while
    the switches the steps were chosen under (``switches()``) keep their values."""

    __slots__ = ("device_id", "note", "steps", "switches", "uses_workspace", "values")

    def __init__(self, steps: tuple[Step, ...], uses_workspace: bool,
                 switches: Callable[[], tuple[object, ...]], device_id: int,
                 note: object = None) -> None:  # fmt: skip
        self.steps = steps
        self.uses_workspace = uses_workspace
        self.switches = switches
        self.values = switches()
        self.device_id = device_id
        self.note = note  # what the checked run left on its plan (Plan._note)

    @classmethod
    def bind(cls, captured: Captured, arrays: Sequence[int], ws_bytes: int,
             switches: Callable[[], tuple[object, ...]], device_id: int,
             note: object = None) -> BoundSteps | None:  # fmt: skip
        """``bind_steps(captured, arrays, ws_bytes)`` under the switches' values now; None
        where a pointer is neither an array's nor the workspace's."""
        got = bind_steps(captured, arrays, ws_bytes)
        if got is None:
            return None
        return cls(got[0], got[1], switches, device_id, note)

    def current(self) -> bool:
        """Whether the switches still have the values the steps were chosen under (the same
        tuple while none was assigned: ``baracuda._switches.memo``)."""
        now = self.switches()
        return now is self.values or now == self.values

    def enqueue(self, stream: Stream | int, ptrs: Sequence[int], base: int) -> None:
        """Enqueue every step on ``stream`` for the arrays at ``ptrs`` and the workspace at
        ``base`` (the device's context current)."""
        for step in self.steps:
            step.enqueue(stream, ptrs, base)
