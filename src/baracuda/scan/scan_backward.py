"""Axis scan backward: the gradient of each scan with respect to its input.

Every backward is one scan in the direction opposite to the forward's, plus an elementwise
epilogue (cummax/cummin: a forward pass recomputing the winners first):

| op           | saved  | dx                                                            |
|--------------|--------|---------------------------------------------------------------|
| cumsum       | -      | reverse cumsum of dy                                          |
| cumprod      | x, y   | y_{i-1} (dy_i + Q_{i+1}), Q_i = x_i (dy_i + Q_{i+1}) (no division) |
| cummax/min   | x      | dy summed into the running winner's position                  |
| logcumsumexp | x, y   | sum_{j>=i} dy_j exp(x_i - y_j), carried as s exp(-r), r = min y |
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from baracuda._cuda.memory import Workspace
from baracuda._cuda.module import LoadedModule
from baracuda._cuda.stream import Stream
from baracuda._cuda.view import TensorView
from baracuda._layout import numel
from baracuda.errors import InvalidProblem
from baracuda.scan._kernels import (
    IN0,
    IN1,
    IN2,
    OUT,
    Slot,
    flag_strides,
    layout_of,
    slot,
)
from baracuda.scan.scan import EXTREMA, ScanPlanBase, max_mode
from baracuda.types import (
    ElementKind,
    PlanPreference,
    ScanKind,
    TieBreak,
)

__all__ = [
    "ScanBackwardDescriptor",
    "ScanBackwardArgs",
    "ScanBackwardPlan",
    "needs_saved_x",
    "needs_saved_y",
]


def needs_saved_x(kind: ScanKind) -> bool:
    """Whether the backward of ``kind`` reads the saved forward input ``x``."""
    return kind is not ScanKind.CUMSUM


def needs_saved_y(kind: ScanKind) -> bool:
    """Whether the backward of ``kind`` reads the saved forward output ``y``."""
    return kind in (ScanKind.CUMPROD, ScanKind.LOGCUMSUMEXP)


_FLAG_ALIGN = 256


@dataclass(frozen=True, slots=True)
class ScanBackwardDescriptor:
    """The backward of ``ScanDescriptor``: same kind, shape, axis, element and direction.

    ``tie_break`` (cummax/cummin): FIRST sends the gradient of a tied running extremum to its
    earliest occurrence in scan order (the seed), LAST to the latest (PyTorch).
    """

    kind: ScanKind
    shape: tuple[int, ...]
    axis: int
    element: ElementKind
    reverse: bool = False
    tie_break: TieBreak = TieBreak.FIRST


@dataclass(frozen=True, slots=True)
class ScanBackwardArgs:
    """``dy`` (upstream gradient), ``dx`` (output), and the saved forward tensors: ``x`` for
    cumprod/cummax/cummin/logcumsumexp, ``y`` for cumprod/logcumsumexp (None otherwise)."""

    dy: object
    dx: object
    x: object = None
    y: object = None


_Views = tuple[TensorView, TensorView, TensorView | None, TensorView | None]


class ScanBackwardPlan(ScanPlanBase[ScanBackwardDescriptor, ScanBackwardArgs, _Views]):
    """Gradient of an axis scan with respect to its input, ``dx`` from ``dy``.

    cumsum: reverse cumsum of ``dy``. cumprod: exact with any zeros in ``x`` (one, several,
    all), no division, no host synchronisation. cummax/cummin: each ``dy`` goes to the
    running winner's position (ties per ``tie_break``; NaN sticks, the latest NaN wins, as
    PyTorch). logcumsumexp: stable for large ``|x|``; ``x = -inf`` entries get 0 (PyTorch
    gives NaN where a whole prefix is ``-inf``).
    Dtypes: f32, f16, bf16, f64 (f32 math for the half types). Shapes: rank 1-8, any axis,
    any strides, empty tensors. ``dx`` must not overlap the inputs.
    Precision: deterministic; cumprod and logcumsumexp read the saved ``y`` as given (its
    rounding to f16/bf16 enters the result, as in PyTorch).
    Workspace: ``workspace_size()`` bytes: look-back tiles, plus one byte per element
    (winner flags) for cummax/cummin.
    Raises: ``InvalidProblem`` (missing saved tensor, shapes, dtypes, devices),
    ``Unsupported``, ``MisalignedOperand``, ``WorkspaceTooSmall``.
    """

    NAME = "ScanBackwardPlan"
    OP_SUFFIX = "_backward"
    GROUPS: ClassVar[Mapping[ScanKind, str]] = {
        ScanKind.CUMSUM: "sum",  # a reverse cumsum
        ScanKind.CUMPROD: "prod_bwd",
        ScanKind.CUMMAX: "max_bwd",
        ScanKind.CUMMIN: "max_bwd",
        ScanKind.LOGCUMSUMEXP: "lse_bwd",
    }

    def __init__(self, desc: ScanBackwardDescriptor, stream: Stream, device_id: int,
                 pref: PlanPreference, module: LoadedModule, axis: int) -> None:  # fmt: skip
        super().__init__(desc, stream, device_id, pref, module, axis)
        self._flags = 0  # winner flags (cummax/cummin) come first in the workspace
        if desc.kind in EXTREMA and numel(desc.shape) > 0:
            self._flags = -(-numel(desc.shape) // _FLAG_ALIGN) * _FLAG_ALIGN
        self._ws += self._flags

    def _bind(self, args: ScanBackwardArgs, stream: Stream) -> _Views:
        shape, el, kind = self.desc.shape, self.desc.element, self.desc.kind
        dy = self._view("dy", args.dy, stream, shape, el)
        dx = self._view("dx", args.dx, stream, shape, el, output=True)
        x = y = None
        if needs_saved_x(kind):
            if args.x is None:
                raise InvalidProblem(
                    f"{self.NAME}: the {kind.value} backward needs the saved forward input x "
                    "(got None)"
                )
            x = self._view("x", args.x, stream, shape, el)
        if needs_saved_y(kind):
            if args.y is None:
                raise InvalidProblem(
                    f"{self.NAME}: the {kind.value} backward needs the saved forward output y "
                    "(got None)"
                )
            y = self._view("y", args.y, stream, shape, el)
        return dy, dx, x, y

    def _launch(self, stream: Stream, workspace: Workspace, views: _Views) -> None:
        dy, dx, x, y = views
        d, ax = self.desc, self._axis
        if numel(d.shape) == 0:
            return
        layout = layout_of(dy, ax)

        def run(op: str, reverse: bool, mode: int, operands: list[Slot | None],
                vec_slots: tuple[int, ...]) -> None:  # fmt: skip
            self._launches.launch_scan(
                self._module, op, stream, d.shape, ax, reverse=reverse, mode=mode,
                operands=operands, vec_slots=vec_slots, itemsize=d.element.itemsize,
                layout=layout, sm_count=self._sm_count, workspace=workspace,
                offset=self._flags, lines=self._lines,
            )  # fmt: skip

        back = not d.reverse
        if d.kind is ScanKind.CUMSUM:
            run("sum", back, 0, [slot(dy), None, None, slot(dx), None], (IN0, OUT))
        elif d.kind is ScanKind.CUMPROD:
            run("prod_bwd", back, 0,
                [slot(dy), slot(x), slot(y), slot(dx), None], (IN0, IN1, IN2, OUT))  # fmt: skip
        elif d.kind is ScanKind.LOGCUMSUMEXP:
            run("lse_bwd", back, 0,
                [slot(dy), slot(x), slot(y), slot(dx), None], (IN0, IN1, IN2, OUT))  # fmt: skip
        else:
            assert x is not None  # checked by _bind
            mode = max_mode(d.kind, d.tie_break)
            flags = Slot(workspace.ptr, flag_strides(d.shape, ax, layout))
            fused = self._launches.launch_max_backward(
                self._module, stream, d.shape, ax, reverse=d.reverse, mode=mode,
                dy=slot(dy), x=slot(x), dx=slot(dx), flags=flags, layout=layout,
                itemsize=d.element.itemsize, sm_count=self._sm_count, workspace=workspace,
            )
            if fused is not None:
                return
            # pass 1: forward winners of x, as per-element "own winner" flags
            run("maxflag", d.reverse, mode | 4,
                [slot(x), None, None, None, flags], (IN0,))  # fmt: skip
            # pass 2: segmented suffix sums of dy, each segment ending at a winner
            run("seg_bwd", back, 0, [slot(dy), None, None, slot(dx), flags], (IN0, OUT))
