# Stubs for the part of cuda.core (>= 1.2) that baracuda uses; cuda.core ships no py.typed.
from collections.abc import Sequence
from typing import Any

class ProgramOptions:
    arch: str | None
    def __init__(
        self,
        name: str | None = ...,
        arch: str | None = ...,
        *,
        std: str | None = ...,
        include_path: str | Sequence[str] | None = ...,
        define_macro: str | tuple[str, str] | Sequence[str | tuple[str, str]] | None = ...,
        **kwargs: Any,
    ) -> None: ...

class Kernel:
    @property
    def handle(self) -> Any: ...

class ObjectCode:
    @property
    def code(self) -> bytes: ...
    @staticmethod
    def from_cubin(module: bytes, *, name: str = ...) -> ObjectCode: ...
    def get_kernel(self, name: str) -> Kernel: ...

class Program:
    def __init__(self, code: str, code_type: str, options: ProgramOptions | None = ...) -> None: ...
    def compile(
        self, target_type: str, name_expressions: Sequence[str] = ..., logs: Any = ...
    ) -> ObjectCode: ...

class Stream:
    @property
    def handle(self) -> Any: ...

class Buffer:
    @property
    def handle(self) -> Any: ...
    @property
    def size(self) -> int: ...

class DeviceProperties:
    multiprocessor_count: int
    max_shared_memory_per_block_optin: int
    l2_cache_size: int

class Device:
    def __init__(self, device_id: int | None = ...) -> None: ...
    @property
    def name(self) -> str: ...
    @property
    def arch(self) -> str: ...
    @property
    def properties(self) -> DeviceProperties: ...
    def set_current(self) -> None: ...
    def allocate(self, size: int, *, stream: Any) -> Buffer: ...
    def create_stream(self, obj: Any = ...) -> Stream: ...
