"""The one dtype table: every per-dtype fact a plan, a kernel or a test needs."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

from baracuda.errors import Unsupported
from baracuda.types import ElementKind, IndexElementKind

__all__ = ["ElementInfo", "ELEMENTS", "INDEX_ELEMENTS", "element_kind_of", "index_kind_of"]


@dataclass(frozen=True, slots=True)
class ElementInfo:
    kind: ElementKind
    c_type: str  # storage type in kernels
    acc_c_type: str  # accumulator / math type in kernels
    numpy_name: str  # numpy / ml_dtypes name
    dlpack: tuple[int, int]  # (type code, bits)
    acc_ctype: type[ctypes.c_float] | type[ctypes.c_double]  # host type of scalar arguments
    rtol: float  # default tolerance against a float64 reference
    atol: float


# DLPack type codes: kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4.
ELEMENTS: dict[ElementKind, ElementInfo] = {
    ElementKind.F32: ElementInfo(
        ElementKind.F32, "float", "float", "float32", (2, 32), ctypes.c_float, 1e-5, 1e-6
    ),
    ElementKind.F16: ElementInfo(
        ElementKind.F16, "__half", "float", "float16", (2, 16), ctypes.c_float, 1e-3, 1e-3
    ),
    ElementKind.BF16: ElementInfo(
        ElementKind.BF16, "__nv_bfloat16", "float", "bfloat16", (4, 16), ctypes.c_float, 8e-3, 8e-3
    ),
    ElementKind.F64: ElementInfo(
        ElementKind.F64, "double", "double", "float64", (2, 64), ctypes.c_double, 1e-12, 1e-14
    ),
}

INDEX_ELEMENTS: dict[IndexElementKind, tuple[str, str, tuple[int, int]]] = {
    IndexElementKind.I32: ("int", "int32", (0, 32)),
    IndexElementKind.I64: ("long long", "int64", (0, 64)),
}

_BY_DLPACK = {info.dlpack: info.kind for info in ELEMENTS.values()}
_INDEX_BY_DLPACK = {v[2]: k for k, v in INDEX_ELEMENTS.items()}
_ALIASES = {
    "f32": ElementKind.F32, "float32": ElementKind.F32, "float": ElementKind.F32,
    "f16": ElementKind.F16, "float16": ElementKind.F16, "half": ElementKind.F16,
    "bf16": ElementKind.BF16, "bfloat16": ElementKind.BF16,
    "f64": ElementKind.F64, "float64": ElementKind.F64, "double": ElementKind.F64,
}  # fmt: skip
_INDEX_ALIASES = {
    "i32": IndexElementKind.I32, "int32": IndexElementKind.I32, "int": IndexElementKind.I32,
    "i64": IndexElementKind.I64, "int64": IndexElementKind.I64, "long": IndexElementKind.I64,
}  # fmt: skip


def _dtype_name(value: object) -> str:
    name = getattr(value, "name", None)  # numpy, cupy, jax dtypes; enums
    text = name if isinstance(name, str) else str(value)
    return text.rsplit(".", 1)[-1].lower()  # "torch.float32" -> "float32"


def element_kind_of(value: object) -> ElementKind:
    """The ``ElementKind`` of a dtype-like value (enum, name, numpy/torch/cupy/jax dtype)."""
    if isinstance(value, ElementKind):
        return value
    if isinstance(value, tuple) and value in _BY_DLPACK:
        return _BY_DLPACK[value]
    kind = _ALIASES.get(_dtype_name(value))
    if kind is None:
        raise Unsupported(
            f"element dtype {value!r} is not supported; supported: "
            + ", ".join(k.value for k in ElementKind)
        )
    return kind


def index_kind_of(value: object) -> IndexElementKind:
    """The ``IndexElementKind`` of a dtype-like value."""
    if isinstance(value, IndexElementKind):
        return value
    if isinstance(value, tuple) and value in _INDEX_BY_DLPACK:
        return _INDEX_BY_DLPACK[value]
    kind = _INDEX_ALIASES.get(_dtype_name(value))
    if kind is None:
        raise Unsupported(f"index dtype {value!r} is not supported; supported: i32, i64")
    return kind
