"""Lerp backward: ``da = (1 - weight) * dy``, ``db = weight * dy`` (no saved tensors)."""

from __future__ import annotations

from dataclasses import dataclass

from baracuda._cuda.device import keeps_context
from baracuda._cuda.memory import Workspace
from baracuda._cuda.module import LoadedModule
from baracuda._cuda.stream import Stream
from baracuda._cuda.view import TensorView
from baracuda._dtypes import ELEMENTS
from baracuda._layout import numel
from baracuda._plan import Plan, Switches, deterministic_precision, no_switches
from baracuda.elementwise._launch import ElementwiseLauncher
from baracuda.elementwise.lerp import (
    BWD_BLOCK,
    BWD_SMALL_BLOCK,
    BWD_SMALL_BYTES,
    BWD_SMALL_UNROLL,
    BWD_UNROLL,
    LERP_SOURCE,
    check_binary_param,
)
from baracuda.types import (
    BackendKind,
    BinaryKind,
    ElementKind,
    KernelSku,
    OpCategory,
    PlanPreference,
)

__all__ = ["BinaryParamBackwardDescriptor", "BinaryParamBackwardArgs", "BinaryParamBackwardPlan"]


@dataclass(frozen=True, slots=True)
class BinaryParamBackwardDescriptor:
    """The backward of ``BinaryParamDescriptor``: same shape, element and weight."""

    shape: tuple[int, ...]
    element: ElementKind
    weight: float
    kind: BinaryKind = BinaryKind.LERP


@dataclass(frozen=True, slots=True)
class BinaryParamBackwardArgs:
    """``dy`` (upstream gradient), ``da`` and ``db`` (outputs, overwritten)."""

    dy: object
    da: object
    db: object


class BinaryParamBackwardPlan(
    Plan[BinaryParamBackwardDescriptor, BinaryParamBackwardArgs, tuple[TensorView, ...]]
):
    """Lerp backward in one pass: reads ``dy`` once, writes ``da`` and ``db``.

    ``da = (1 - w) dy``, ``db = w dy``; ``w`` is a constant, so no gradient flows to it.
    Dtypes: f32, f16, bf16, f64 (f32 math for the half types). Any strides, rank 0-8,
    empty tensors. Precision: one rounding per output; deterministic. Workspace: none.
    """

    NAME = "BinaryParamBackwardPlan"

    def __init__(self, desc: BinaryParamBackwardDescriptor, stream: Stream, device_id: int,
                 pref: PlanPreference, module: LoadedModule) -> None:  # fmt: skip
        super().__init__(desc, stream, device_id, pref)
        self._module = module
        self._weight = float(desc.weight)
        fmt = "d" if ELEMENTS[desc.element].acc_c_type == "double" else "f"
        # a dy of at most BWD_SMALL_BYTES: 4 vectors a thread (lerp_bwd_vec4), else 1
        small = numel(desc.shape) * desc.element.itemsize <= BWD_SMALL_BYTES
        self._launcher = ElementwiseLauncher(
            module, "lerp_bwd", 3, fmt, block=BWD_SMALL_BLOCK if small else BWD_BLOCK,
            unroll=BWD_SMALL_UNROLL if small else BWD_UNROLL,
            vec="lerp_bwd_vec4" if small else "lerp_bwd_vec")  # fmt: skip

    @classmethod
    @keeps_context
    def select(cls, stream: object, desc: BinaryParamBackwardDescriptor,
               pref: PlanPreference | None = None) -> BinaryParamBackwardPlan:  # fmt: skip
        check_binary_param(cls.NAME, desc.kind, desc.shape, desc.element, desc.weight)
        s, device_id, module = cls._open(stream, LERP_SOURCE, desc.element)
        return cls(desc, s, device_id, pref or PlanPreference(), module)

    def _switches(self) -> Switches:
        return no_switches

    def sku(self) -> KernelSku:
        return KernelSku(OpCategory.BINARY_ELEMENTWISE, "lerp_backward", self.desc.element,
                         self._module.arch, BackendKind.NVRTC, "vec16|strided",
                         deterministic_precision(self.desc.element))  # fmt: skip

    def _bind(self, args: BinaryParamBackwardArgs, stream: Stream) -> tuple[TensorView, ...]:
        shape, el = self.desc.shape, self.desc.element
        return (
            self._view("dy", args.dy, stream, shape, el),
            self._view("da", args.da, stream, shape, el, output=True),
            self._view("db", args.db, stream, shape, el, output=True),
        )

    def _launch(self, stream: Stream, workspace: Workspace,
                views: tuple[TensorView, ...]) -> None:  # fmt: skip
        self._launcher(stream, views, self._weight)
