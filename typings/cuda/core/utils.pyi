# Stubs for the part of cuda.core.utils (>= 1.2) that baracuda uses.
from collections.abc import Sequence
from typing import Any

from cuda.core import Buffer, ProgramOptions

class FileStreamProgramCache:
    def __init__(self, path: str | None = ..., *, max_size_bytes: int | None = ...) -> None: ...
    def get(self, key: bytes | str, default: bytes | None = ...) -> bytes | None: ...
    def __getitem__(self, key: bytes | str) -> bytes: ...
    def __setitem__(self, key: bytes | str, value: bytes) -> None: ...
    def close(self) -> None: ...

def make_program_cache_key(
    *,
    code: str | bytes,
    code_type: str,
    options: ProgramOptions,
    target_type: str,
    name_expressions: Sequence[str] = ...,
    extra_digest: bytes | None = ...,
) -> bytes: ...

class StridedMemoryView:
    @property
    def ptr(self) -> int: ...
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def strides(self) -> tuple[int, ...] | None: ...
    @property
    def dtype(self) -> Any: ...
    @property
    def readonly(self) -> bool: ...
    @property
    def device_id(self) -> int: ...
    @classmethod
    def from_dlpack(cls, obj: object, stream_ptr: int | None = ...) -> StridedMemoryView: ...
    @classmethod
    def from_buffer(
        cls,
        buffer: Buffer,
        shape: tuple[int, ...],
        strides: tuple[int, ...] | None = ...,
        *,
        dtype: Any = ...,
    ) -> StridedMemoryView: ...
