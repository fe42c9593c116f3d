"""The vocabulary shared by every plan: element kinds, precision, SKUs, preferences."""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = [
    "ElementKind",
    "IndexElementKind",
    "MathPrecision",
    "PrecisionGuarantee",
    "OpCategory",
    "BackendKind",
    "BinaryKind",
    "ScanKind",
    "SoftmaxKind",
    "TieBreak",
    "KernelSku",
    "PlanPreference",
]


# Enum members are singletons, equal only to themselves: identity hashing is correct, and
# cheaper than Enum's (a Python call: 0.3 us of each call's key on the functional path).
_identity_hash = object.__hash__


class ElementKind(enum.Enum):
    """Floating-point element types of values. The value is the short name used in kernels."""

    F32 = "f32"
    F16 = "f16"
    BF16 = "bf16"
    F64 = "f64"

    __hash__ = _identity_hash

    @property
    def itemsize(self) -> int:
        return _ITEMSIZE[self.value]

    @classmethod
    def parse(cls, value: object) -> ElementKind:
        """Accept an ``ElementKind``, its short name, or any dtype whose name is known."""
        from baracuda._dtypes import element_kind_of

        return element_kind_of(value)


_ITEMSIZE = {"f32": 4, "f16": 2, "bf16": 2, "f64": 8, "i32": 4, "i64": 8}


class IndexElementKind(enum.Enum):
    """Integer element types of indices."""

    I32 = "i32"
    I64 = "i64"

    __hash__ = _identity_hash

    @property
    def itemsize(self) -> int:
        return _ITEMSIZE[self.value]


class MathPrecision(enum.Enum):
    """The precision the kernel computes in."""

    F32 = "f32"
    F64 = "f64"

    __hash__ = _identity_hash


@dataclass(frozen=True, slots=True)
class PrecisionGuarantee:
    """What a plan promises about its numbers.

    ``deterministic``: two runs on the same inputs give the same bits on any card.
    ``bit_stable_on_same_hardware``: two runs on the same card give the same bits.
    ``max_ulp_of_accumulator``: worst error of one output in units in the last place of the
    accumulator, where the kernel can bound it; ``None`` where it depends on the data.
    """

    math_precision: MathPrecision
    accumulator: ElementKind
    bit_stable_on_same_hardware: bool
    deterministic: bool


class OpCategory(enum.Enum):
    BINARY_ELEMENTWISE = "binary_elementwise"
    SCAN = "scan"
    SOFTMAX = "softmax"
    SEGMENT = "segment"
    EMBEDDING = "embedding"

    __hash__ = _identity_hash


class BackendKind(enum.Enum):
    """Where a plan's kernel comes from."""

    NVRTC = "nvrtc"
    ARRAY_API = "array_api"

    __hash__ = _identity_hash


class BinaryKind(enum.Enum):
    """Parameterised binary elementwise ops."""

    LERP = "lerp"

    __hash__ = _identity_hash


class ScanKind(enum.Enum):
    """Axis scans."""

    CUMSUM = "cumsum"
    CUMPROD = "cumprod"
    CUMMAX = "cummax"
    CUMMIN = "cummin"
    LOGCUMSUMEXP = "logcumsumexp"

    __hash__ = _identity_hash


class SoftmaxKind(enum.Enum):
    SPARSEMAX = "sparsemax"

    __hash__ = _identity_hash


class TieBreak(enum.Enum):
    """Which of several equal winners receives the gradient (cummax/cummin, segment max/min)."""

    FIRST = "first"
    LAST = "last"

    __hash__ = _identity_hash


@dataclass(frozen=True, slots=True)
class KernelSku:
    """The identity of the kernel a plan runs: enough to tell two plans' binaries apart."""

    category: OpCategory
    op: str
    element: ElementKind
    arch: str
    backend: BackendKind
    variant: str
    precision_guarantee: PrecisionGuarantee

    def __str__(self) -> str:
        return f"{self.category.value}/{self.op}/{self.element.value}/{self.arch}/{self.variant}"


@dataclass(frozen=True, slots=True)
class PlanPreference:
    """What the caller prefers when several kernels could run a problem.

    ``deterministic``: refuse kernels whose result depends on scheduling (atomics).
    ``block_size``: force the threads per block (tuning, tests); ``None`` lets the plan choose.
    """

    deterministic: bool = False
    block_size: int | None = None
