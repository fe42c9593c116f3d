"""Loaded kernels: one module per (device, source, element), kept for the process's life."""

from __future__ import annotations

import threading
from typing import Any

from baracuda._cuda.compiler import KernelSource, compile_cubin, kernel_name
from baracuda._cuda.device import device_info, ensure_current
from baracuda._cuda.driver import check, driver
from baracuda.types import ElementKind

__all__ = ["LoadedModule", "load_module"]


class LoadedModule:
    """The kernels of one source for one element type on one device, as driver functions."""

    __slots__ = (
        "_dyn_smem",
        "_functions",
        "_object_code",
        "_resident",
        "_static_smem",
        "arch",
        "cooperative",
        "device_id",
        "element",
        "sm_count",
        "source",
    )

    def __init__(self, source: KernelSource, element: ElementKind, device_id: int) -> None:
        self.source = source
        self.element = element
        self.device_id = device_id
        info = device_info(device_id)
        self.arch = info.arch
        self.sm_count = info.sm_count
        self.cooperative = info.cooperative
        ensure_current(device_id)
        self._functions: dict[str, Any] = {}
        try:
            self._load(compile_cubin(source, element, self.arch))
        except Exception:  # a cached image the driver refuses: compile afresh, once
            self._load(compile_cubin(source, element, self.arch, refresh=True))
        self._dyn_smem: dict[str, int] = {}
        self._resident: dict[tuple[str, int, int], int] = {}
        self._static_smem: dict[str, int] = {}

    def _load(self, cubin: bytes) -> None:
        from cuda.core import ObjectCode

        name = f"{self.source.name}[{self.element.value}]"
        self._object_code = ObjectCode.from_cubin(cubin, name=name)
        drv = driver()
        for op in self.source.entries:
            kernel = self._object_code.get_kernel(kernel_name(op, self.element))
            self._functions[op] = check(
                drv.cuKernelGetFunction(kernel.handle), f"cuKernelGetFunction({op})"
            )

    def function(self, op: str, dynamic_smem: int = 0) -> Any:
        """The ``CUfunction`` of entry ``op``, allowed ``dynamic_smem`` bytes of shared memory."""
        fn = self._functions[op]
        if dynamic_smem > 48 * 1024 and self._dyn_smem.get(op, 0) < dynamic_smem:
            drv = driver()
            attr = drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            check(drv.cuFuncSetAttribute(fn, attr, dynamic_smem), f"cuFuncSetAttribute({op})")
            self._dyn_smem[op] = dynamic_smem
        return fn

    def static_smem(self, op: str) -> int:
        """Bytes of static shared memory of entry ``op`` (the driver's function attribute)."""
        n = self._static_smem.get(op)
        if n is None:
            drv = driver()
            attr = drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES
            n = int(check(drv.cuFuncGetAttribute(attr, self._functions[op]),
                          f"cuFuncGetAttribute({op})"))  # fmt: skip
            self._static_smem[op] = n
        return n

    def resident_blocks(self, op: str, block: int, dynamic_smem: int = 0) -> int:
        """Blocks of ``block`` threads of entry ``op`` that one SM holds at once (the driver's
        occupancy calculator; at least 1), cached per (op, block, shared memory)."""
        key = (op, block, dynamic_smem)
        n = self._resident.get(key)
        if n is None:
            fn = self.function(op, dynamic_smem)
            n = check(
                driver().cuOccupancyMaxActiveBlocksPerMultiprocessor(fn, block, dynamic_smem),
                f"cuOccupancyMaxActiveBlocksPerMultiprocessor({op})",
            )
            n = max(1, int(n))
            self._resident[key] = n
        return n


_modules: dict[tuple[int, str, ElementKind], LoadedModule] = {}
_lock = threading.Lock()


def load_module(source: KernelSource, element: ElementKind, device_id: int) -> LoadedModule:
    key = (device_id, source.name, element)
    mod = _modules.get(key)
    if mod is None:
        with _lock:
            mod = _modules.get(key)
            if mod is None:
                mod = LoadedModule(source, element, device_id)
                _modules[key] = mod
    return mod
