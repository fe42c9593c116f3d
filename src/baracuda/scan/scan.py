"""Axis scan forward: cumsum, cumprod, cummax, cummin, logcumsumexp (reverse flag)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TypeVar

from baracuda._cuda.device import device_info, keeps_context
from baracuda._cuda.memory import Workspace
from baracuda._cuda.module import LoadedModule
from baracuda._cuda.stream import Stream
from baracuda._cuda.view import TensorView
from baracuda._plan import (
    Plan,
    Switches,
    check_element,
    check_shape,
    deterministic_precision,
    normalize_axis,
)
from baracuda.errors import InvalidProblem, Unsupported
from baracuda.scan._kernels import (
    IN0,
    OUT,
    LaunchCache,
    layout_of,
    lines_module,
    scan_source,
    slot,
    state_bytes,
    switch_values,
)
from baracuda.types import (
    BackendKind,
    ElementKind,
    IndexElementKind,
    KernelSku,
    OpCategory,
    PlanPreference,
    ScanKind,
    TieBreak,
)

__all__ = ["ScanDescriptor", "ScanArgs", "ScanPlan", "ScanPlanBase", "check_scan", "max_mode"]

_FORWARD_OP = {
    ScanKind.CUMSUM: "sum",
    ScanKind.CUMPROD: "prod",
    ScanKind.CUMMAX: "max",
    ScanKind.CUMMIN: "max",
    ScanKind.LOGCUMSUMEXP: "lse",
}
EXTREMA = (ScanKind.CUMMAX, ScanKind.CUMMIN)


def max_mode(kind: ScanKind, tie_break: TieBreak) -> int:
    """The ``mode`` bits of the MaxOp kernel: bit0 cummin, bit1 ties to the latest."""
    return (1 if kind is ScanKind.CUMMIN else 0) | (2 if tie_break is TieBreak.LAST else 0)


def check_scan(plan: str, kind: object, shape: object, axis: object, element: object,
               reverse: object, tie_break: object) -> int:  # fmt: skip
    """Validate a scan descriptor's fields; return the normalised axis."""
    if not isinstance(kind, ScanKind):
        raise Unsupported(
            f"{plan}: kind must be a ScanKind (one of "
            f"{', '.join(k.name for k in ScanKind)}) (got {kind!r})"
        )
    shp = check_shape(plan, "shape", shape, min_rank=1)
    ax = normalize_axis(plan, "axis", axis, len(shp))
    check_element(plan, "element", element)
    if not isinstance(reverse, bool):
        raise InvalidProblem(f"{plan}: reverse must be a bool (got {reverse!r})")
    if not isinstance(tie_break, TieBreak):
        raise InvalidProblem(
            f"{plan}: tie_break must be a TieBreak (FIRST or LAST) (got {tie_break!r})"
        )
    return ax


@dataclass(frozen=True, slots=True)
class ScanDescriptor:
    """An inclusive scan of ``kind`` along ``axis`` of tensors of ``shape``.

    ``axis`` may be negative; ``reverse`` scans from the end of the axis to its start;
    ``tie_break`` picks which of equal running extrema cummax/cummin report in ``indices``
    (FIRST: the earliest in scan order, LAST: the latest, as ``torch.cummax``).
    """

    kind: ScanKind
    shape: tuple[int, ...]
    axis: int
    element: ElementKind
    reverse: bool = False
    tie_break: TieBreak = TieBreak.FIRST


@dataclass(frozen=True, slots=True)
class ScanArgs:
    """``x`` (input), ``y`` (output), and for cummax/cummin optionally ``indices`` (int64
    output, the physical position along the axis of each running winner)."""

    x: object
    y: object
    indices: object = None


class _ScanFields(Protocol):
    """What the forward and backward scan descriptors share."""

    @property
    def kind(self) -> ScanKind: ...
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def axis(self) -> int: ...
    @property
    def element(self) -> ElementKind: ...
    @property
    def reverse(self) -> bool: ...
    @property
    def tie_break(self) -> TieBreak: ...


DS = TypeVar("DS", bound=_ScanFields)
AS = TypeVar("AS")
VS = TypeVar("VS")
PS = TypeVar("PS", bound="ScanPlanBase[Any, Any, Any]")  # typing.Self needs Python 3.11


class ScanPlanBase(Plan[DS, AS, VS]):
    """What the forward and backward scan plans share: ``select`` (checks, stream, device,
    the scan kernels), the axis, the look-back / chunk workspace and the SKU."""

    OP_SUFFIX: ClassVar[str] = ""  # appended to the kind in the SKU
    # the program of scan.cu (a group of baracuda.scan._kernels.SCAN_GROUPS) per kind
    GROUPS: ClassVar[Mapping[ScanKind, str]]

    def __init__(self, desc: DS, stream: Stream, device_id: int, pref: PlanPreference,
                 module: LoadedModule, axis: int) -> None:  # fmt: skip
        super().__init__(desc, stream, device_id, pref)
        self._module = module
        self._axis = axis
        self._sm_count = device_info(device_id).sm_count
        self._ws = state_bytes(desc.shape, axis, desc.element.itemsize, self._sm_count)
        # the group's kernels over interleaved lines, where it has them and the shape may take
        # them (cumsum, cumprod, the cumsum backward)
        self._lines = lines_module(self.GROUPS[desc.kind], desc.shape, axis, desc.element,
                                   device_id)  # fmt: skip
        self._launches = LaunchCache()  # what each call enqueues, by layout

    @classmethod
    @keeps_context
    def select(cls: type[PS], stream: object, desc: _ScanFields,
               pref: PlanPreference | None = None) -> PS:  # fmt: skip
        axis = check_scan(cls.NAME, desc.kind, desc.shape, desc.axis, desc.element,
                          desc.reverse, desc.tie_break)  # fmt: skip
        s, device_id, module = cls._open(stream, scan_source(cls.GROUPS[desc.kind]), desc.element)
        return cls(desc, s, device_id, pref or PlanPreference(), module, axis)

    def workspace_size(self) -> int:
        return self._ws

    def _switches(self) -> Switches:
        return switch_values

    def sku(self) -> KernelSku:
        d = self.desc
        return KernelSku(OpCategory.SCAN, d.kind.value + self.OP_SUFFIX, d.element,
                         self._module.arch, BackendKind.NVRTC, "rows|cols|lookback",
                         deterministic_precision(d.element, self._module.source))  # fmt: skip


class ScanPlan(
    ScanPlanBase[ScanDescriptor, ScanArgs, tuple[TensorView, TensorView, TensorView | None]]
):
    """Inclusive axis scan: ``y[..., i, ...] = x[..., 0, ...] (op) ... (op) x[..., i, ...]``.

    Ops: cumsum, cumprod, cummax, cummin (optionally with the int64 index of the running
    winner; NaN wins and sticks, the latest NaN's index), logcumsumexp (``-inf`` is the
    identity, ``inf`` and ``inf`` give ``inf``). ``reverse`` scans from the last element.
    Dtypes: f32, f16, bf16, f64; f16/bf16 accumulate in f32, f64 in f64, and the f32
    cumprod in f64 (a tiled f32 product drifts over long axes); one rounding of each output.
    Shapes: rank 1-8, any axis (negative too), any strides, empty tensors and zero-length
    axes (nothing launched). Outputs must not overlap the input.
    Kernels: a warp or block per row when the axis is contiguous (16-byte vectors when
    aligned), a thread per row walking the axis otherwise; rows too few to fill the GPU are
    cut into tiles scanned in one pass, each tile taking its carry by decoupled look-back over
    a tree of the totals of the tiles before it (fixed combination order: deterministic).
    Precision: deterministic (fixed combination order for a given shape and layout).
    Workspace: ``workspace_size()`` bytes (look-back tiles; zeroed in part by each run on
    the stream), 0 when every row fits one block or warp.
    Raises: ``Unsupported`` (kind, dtype, rank), ``InvalidProblem`` (axis, shapes, dtypes,
    devices, indices for a non-extremum op), ``MisalignedOperand``, ``WorkspaceTooSmall``.
    """

    NAME = "ScanPlan"
    # each forward op's kernels are the group of that name
    GROUPS: ClassVar[Mapping[ScanKind, str]] = _FORWARD_OP

    def _bind(self, args: ScanArgs,
              stream: Stream) -> tuple[TensorView, TensorView, TensorView | None]:  # fmt: skip
        shape, el = self.desc.shape, self.desc.element
        x = self._view("x", args.x, stream, shape, el)
        y = self._view("y", args.y, stream, shape, el, output=True)
        idx = None
        if args.indices is not None:
            if self.desc.kind not in EXTREMA:
                raise InvalidProblem(
                    f"{self.NAME}: indices are only produced by cummax/cummin "
                    f"(got indices for {self.desc.kind.value})"
                )
            idx = self._view("indices", args.indices, stream, shape, IndexElementKind.I64,
                             output=True)  # fmt: skip
        return x, y, idx

    def _launch(self, stream: Stream, workspace: Workspace,
                views: tuple[TensorView, TensorView, TensorView | None]) -> None:  # fmt: skip
        x, y, idx = views
        d = self.desc
        mode = max_mode(d.kind, d.tie_break) if d.kind in EXTREMA else 0
        self._launches.launch_scan(
            self._module, _FORWARD_OP[d.kind], stream, d.shape, self._axis,
            reverse=d.reverse, mode=mode,
            operands=[slot(x), None, None, slot(y), slot(idx)], vec_slots=(IN0, OUT),
            itemsize=d.element.itemsize, layout=layout_of(x, self._axis),
            sm_count=self._sm_count, workspace=workspace, lines=self._lines,
        )  # fmt: skip
