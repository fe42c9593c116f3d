"""Sparsemax forward: the Euclidean projection of each row onto the probability simplex."""

from __future__ import annotations

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
from baracuda.softmax._rows import (
    SPARSEMAX_SOURCE,
    FwdSplit,
    RowSplit,
    check_in_place,
    fwd_split,
    launch_rows,
    switch_values,
    variant_for,
)
from baracuda.types import BackendKind, ElementKind, KernelSku, OpCategory, PlanPreference

__all__ = [
    "SparsemaxDescriptor",
    "SparsemaxArgs",
    "SparsemaxPlan",
    "SparsemaxPlanBase",
    "check_sparsemax",
]


def check_sparsemax(plan: str, input_shape: object, axis: object, element: object) -> int:
    """Validate a sparsemax descriptor's fields; the axis, normalised to ``[0, rank)``."""
    shape = check_shape(plan, "input_shape", input_shape, min_rank=1)
    check_element(plan, "element", element)
    return normalize_axis(plan, "axis", axis, len(shape))


@dataclass(frozen=True, slots=True)
class SparsemaxDescriptor:
    """Sparsemax over ``axis`` of tensors of ``input_shape`` (rank 1-8, any dims >= 0).

    ``axis`` may be negative; plans normalise it. ``element``: f32, f16, bf16 or f64.
    """

    input_shape: tuple[int, ...]
    axis: int
    element: ElementKind


@dataclass(frozen=True, slots=True)
class SparsemaxArgs:
    """``x`` (input) and ``y`` (output, overwritten): DLPack CUDA tensors of the descriptor's
    shape and element type, any strides. ``y`` must not overlap itself; it may be ``x``
    itself (same pointer and strides: in place) but must not otherwise share memory with it."""

    x: object
    y: object


class _SparsemaxFields(Protocol):
    """What the forward and backward sparsemax descriptors share."""

    @property
    def input_shape(self) -> tuple[int, ...]: ...
    @property
    def axis(self) -> int: ...
    @property
    def element(self) -> ElementKind: ...


DS = TypeVar("DS", bound=_SparsemaxFields)
AS = TypeVar("AS")
PS = TypeVar("PS", bound="SparsemaxPlanBase[Any, Any]")


class SparsemaxPlanBase(Plan[DS, AS, tuple[TensorView, ...]]):
    """What the forward and backward sparsemax plans share: ``select``, the row split for
    few long rows (and its workspace), the SKU and the launch over rows."""

    OP: ClassVar[str]  # the SKU's op name
    DIRECTION: ClassVar[str]  # "fwd" or "bwd": the kernels of sparsemax.cu

    def __init__(self, desc: DS, stream: Stream, device_id: int, pref: PlanPreference,
                 module: LoadedModule, axis: int) -> None:  # fmt: skip
        super().__init__(desc, stream, device_id, pref)
        self._module = module
        self.axis = axis
        self.last_variant = ""
        self._split = self._split_for(desc.input_shape, axis, device_info(device_id).sm_count)

    @staticmethod
    def _split_for(shape: tuple[int, ...], axis: int,
                   sm_count: int) -> FwdSplit | RowSplit | None:  # fmt: skip
        """How few long rows are cut into pieces, or None."""
        raise NotImplementedError

    @classmethod
    @keeps_context
    def select(cls: type[PS], stream: object, desc: _SparsemaxFields,
               pref: PlanPreference | None = None) -> PS:  # fmt: skip
        axis = check_sparsemax(cls.NAME, desc.input_shape, desc.axis, desc.element)
        s, device_id, module = cls._open(stream, SPARSEMAX_SOURCE, desc.element)
        return cls(desc, s, device_id, pref or PlanPreference(), module, axis)

    def sku(self) -> KernelSku:
        n = self.desc.input_shape[self.axis]
        variant = (f"split{self._split.pieces}" if self._split
                   else variant_for(n, self.DIRECTION).name)  # fmt: skip
        return KernelSku(OpCategory.SOFTMAX, self.OP, self.desc.element, self._module.arch,
                         BackendKind.NVRTC, variant,
                         deterministic_precision(self.desc.element))  # fmt: skip

    def workspace_size(self) -> int:
        return self._split.workspace_size(self.desc.element) if self._split else 0

    def _switches(self) -> Switches:
        return switch_values

    def _note(self) -> object:
        return self.last_variant

    def _replayed(self, note: object) -> None:
        self.last_variant = str(note)

    def _launch(self, stream: Stream, workspace: Workspace,
                views: tuple[TensorView, ...]) -> None:  # fmt: skip
        self.last_variant = launch_rows(self._module, self.DIRECTION, stream, views, self.axis,
                                        self._split, workspace.ptr)  # fmt: skip


class SparsemaxPlan(SparsemaxPlanBase[SparsemaxDescriptor, SparsemaxArgs]):
    """Sparsemax forward along one axis, for rows of any length.

    Semantics: for each row ``x`` along ``axis``, ``y = argmin ||y - x||^2`` over the
    probability simplex, i.e. ``y = max(z - tau, 0)`` with ``z = x - max(x)`` and ``tau``
    chosen so the row sums to 1. The support is ``{z > tau}``; ties are all in or all out.
    Special values: ``-inf`` entries get 0; a row holding NaN or ``+inf``, or made only of
    ``-inf``, gives NaN throughout (as softmax does). A row of one element gives 1.

    Algorithm: no sort. ``tau`` by Michelot's fixed point from ``tau0 = -1``:
    ``tau <- (sum_{z > tau} z - 1) / |{z > tau}|``; it rises monotonically and stops exactly
    when the support stops changing (at most n + 1 steps; a handful in practice). Rows of
    <= 8192 elements stay in registers (a thread per row up to 8, a group of 2-16 lanes up to
    128, a warp up to 1024, then a block of 128, 256 or 512 threads, the smallest that holds
    the row); longer rows take one block each, re-read from
    global memory (L2), with the candidates ``z > -1`` compacted into shared memory once they
    fit (4096 of them). When such rows are too few to fill the GPU (fewer than 2 per SM), each
    is cut into pieces of 8192 elements, one block each, in three kernels: per piece the max and
    the values within 1 of it (to the workspace), per row ``tau`` from those lists (from the
    whole row if a piece listed more than 512), then the write.

    Dtypes: f32, f16, bf16, f64 in and out; f32 math for the half types, f64 for f64.
    Shapes: rank 1-8, any axis, any strides (16-byte vectors when the axis is contiguous and
    every row starts 16-byte aligned); rows of length 1 to 2^48; empty tensors launch nothing.
    Precision: ``tau`` and the support equal the sort-based reference's up to rounding of
    the f32 (f64) sums; one rounding per output. Deterministic (no atomics; fixed reduction
    order). Workspace: ``workspace_size()`` bytes, 0 unless rows are split (then about
    2 KiB (4 KiB for f64) per piece of 8192 elements); 16-byte alignment suffices.

    Raises
    ------
    Unsupported: element not an ``ElementKind``, rank outside 1-8, no GPU.
    InvalidProblem: negative dims, axis out of range; tensors of the wrong shape, dtype or
    device, or an overlapping output. MisalignedOperand: a pointer not element-aligned.
    """

    NAME = "SparsemaxPlan"
    OP = "sparsemax"
    DIRECTION = "fwd"

    @staticmethod
    def _split_for(shape: tuple[int, ...], axis: int, sm_count: int) -> FwdSplit | None:
        return fwd_split(shape, axis, sm_count)

    def workspace_size(self) -> int:
        """Bytes of workspace: 0, or for few long rows (fewer than 2 per SM, > 8192 long)
        the per-piece maxima, counts and lists and the per-row (max, tau)."""
        return super().workspace_size()

    def _bind(self, args: SparsemaxArgs, stream: Stream) -> tuple[TensorView, ...]:
        shape, el = self.desc.input_shape, self.desc.element
        x = self._view("x", args.x, stream, shape, el)
        y = self._view("y", args.y, stream, shape, el, output=True)
        check_in_place(self.NAME, ("y", y), ("x", x))
        return x, y
