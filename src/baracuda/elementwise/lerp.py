"""Lerp forward: ``out = a + weight * (b - a)`` with a scalar weight."""

from __future__ import annotations

from dataclasses import dataclass

from baracuda._cuda.compiler import KernelSource, register_source
from baracuda._cuda.device import keeps_context
from baracuda._cuda.memory import Workspace
from baracuda._cuda.module import LoadedModule
from baracuda._cuda.stream import Stream
from baracuda._cuda.view import TensorView
from baracuda._dtypes import ELEMENTS
from baracuda._plan import (
    Plan,
    Switches,
    check_element,
    check_shape,
    deterministic_precision,
    no_switches,
)
from baracuda.elementwise._launch import ElementwiseLauncher
from baracuda.errors import InvalidProblem, Unsupported
from baracuda.types import (
    BackendKind,
    BinaryKind,
    ElementKind,
    KernelSku,
    OpCategory,
    PlanPreference,
)

__all__ = ["LERP_SOURCE", "BinaryParamDescriptor", "BinaryParamArgs", "BinaryParamPlan"]

# the vec kernels: a 16-byte vector of each input a thread, 128 threads a block (lerp.cu's
# kFwdBlock and kBwdBlock, their launch bounds, and kFwdUnroll and kBwdUnroll); the backward
# of a dy of at most BWD_SMALL_BYTES takes lerp_bwd_vec4 (kBwdSmallBlock, kBwdSmallUnroll)
FWD_BLOCK, FWD_UNROLL = 128, 1
BWD_BLOCK, BWD_UNROLL = 128, 1
BWD_SMALL_BLOCK, BWD_SMALL_UNROLL = 256, 4
BWD_SMALL_BYTES = 16 << 20

LERP_SOURCE = register_source(
    KernelSource(
        "elementwise",
        "lerp.cu",
        ("lerp_fwd_vec", "lerp_fwd_strided", "lerp_bwd_vec", "lerp_bwd_vec4", "lerp_bwd_strided"),
    )
)


def check_binary_param(plan: str, kind: object, shape: object, element: object,
                       weight: object) -> None:  # fmt: skip
    if kind is not BinaryKind.LERP:
        raise Unsupported(f"{plan}: kind must be BinaryKind.LERP (got {kind!r})")
    check_shape(plan, "shape", shape)
    check_element(plan, "element", element)
    if not isinstance(weight, int | float) or isinstance(weight, bool):
        raise InvalidProblem(f"{plan}: weight must be a real number (got {weight!r})")


@dataclass(frozen=True, slots=True)
class BinaryParamDescriptor:
    """A parameterised binary elementwise op over tensors of ``shape`` (rank <= 8)."""

    shape: tuple[int, ...]
    element: ElementKind
    weight: float
    kind: BinaryKind = BinaryKind.LERP


@dataclass(frozen=True, slots=True)
class BinaryParamArgs:
    """``a``, ``b`` (inputs) and ``out`` (output): DLPack CUDA tensors of the descriptor's
    shape and element type, any strides; ``out`` must not overlap itself."""

    a: object
    b: object
    out: object


class BinaryParamPlan(Plan[BinaryParamDescriptor, BinaryParamArgs, tuple[TensorView, ...]]):
    """Lerp forward, ``out = a + w (b - a)`` (computed as ``b - (b - a)(1 - w)`` for
    ``|w| >= 0.5``, as PyTorch does, so ``w = 1`` gives ``b`` exactly).

    Dtypes: f32, f16, bf16, f64; f16/bf16 are computed in f32, f64 in f64.
    Shapes: rank 0-8, any strides (negative too); contiguous 16-byte-aligned tensors take a
    vectorised path. Empty tensors launch nothing.
    Precision: one rounding of the f32 (f64) result to the output type; deterministic.
    Workspace: none.
    Raises: ``Unsupported`` (kind, dtype, rank > 8), ``InvalidProblem`` (shape, dtype,
    device, overlapping output), ``MisalignedOperand``.
    """

    NAME = "BinaryParamPlan"

    def __init__(self, desc: BinaryParamDescriptor, stream: Stream, device_id: int,
                 pref: PlanPreference, module: LoadedModule) -> None:  # fmt: skip
        super().__init__(desc, stream, device_id, pref)
        self._module = module
        self._weight = float(desc.weight)
        fmt = "d" if ELEMENTS[desc.element].acc_c_type == "double" else "f"
        self._launcher = ElementwiseLauncher(module, "lerp_fwd", 3, fmt, block=FWD_BLOCK,
                                             unroll=FWD_UNROLL)  # fmt: skip

    @classmethod
    @keeps_context
    def select(cls, stream: object, desc: BinaryParamDescriptor,
               pref: PlanPreference | None = None) -> BinaryParamPlan:  # fmt: skip
        check_binary_param(cls.NAME, desc.kind, desc.shape, desc.element, desc.weight)
        s, device_id, module = cls._open(stream, LERP_SOURCE, desc.element)
        return cls(desc, s, device_id, pref or PlanPreference(), module)

    def _switches(self) -> Switches:
        return no_switches

    def sku(self) -> KernelSku:
        return KernelSku(OpCategory.BINARY_ELEMENTWISE, "lerp", self.desc.element,
                         self._module.arch, BackendKind.NVRTC, "vec16|strided",
                         deterministic_precision(self.desc.element))  # fmt: skip

    def _bind(self, args: BinaryParamArgs, stream: Stream) -> tuple[TensorView, ...]:
        shape, el = self.desc.shape, self.desc.element
        return (
            self._view("a", args.a, stream, shape, el),
            self._view("b", args.b, stream, shape, el),
            self._view("out", args.out, stream, shape, el, output=True),
        )

    def _launch(self, stream: Stream, workspace: Workspace,
                views: tuple[TensorView, ...]) -> None:  # fmt: skip
        self._launcher(stream, views, self._weight)
