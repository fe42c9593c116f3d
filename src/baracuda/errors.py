"""The error hierarchy. Every message names the plan (or function), the field and the values."""

from __future__ import annotations

from typing import Any

__all__ = [
    "BaracudaError",
    "Unsupported",
    "InvalidProblem",
    "BufferTooSmall",
    "MisalignedOperand",
    "WorkspaceTooSmall",
    "CompileError",
    "CudaError",
]


def _rebuild(cls: type[BaracudaError], message: str, fields: dict[str, Any]) -> BaracudaError:
    return cls(message, **fields)


class BaracudaError(Exception):
    """Base class of every error raised by baracuda. Errors pickle with their keyword fields
    (they cross process pools: ``python -m baracuda compile -j N``)."""

    _fields: tuple[str, ...] = ()

    def __reduce__(self) -> tuple[Any, ...]:
        message = getattr(self, "_message", self.args[0] if self.args else "")
        fields = {f: getattr(self, f) for f in self._fields}
        return (_rebuild, (type(self), message, fields))


class Unsupported(BaracudaError, NotImplementedError):
    """The problem is well formed but this build has no kernel for it (dtype, rank, arch...)."""


class InvalidProblem(BaracudaError, ValueError):
    """The descriptor or the tensors describe an ill-formed problem (shape, axis, device...)."""


class BufferTooSmall(InvalidProblem):
    """A tensor's memory holds fewer bytes than its shape and strides address."""

    _fields = ("needed", "got")

    def __init__(self, message: str, *, needed: int, got: int) -> None:
        super().__init__(message)
        self.needed = needed
        self.got = got


class MisalignedOperand(InvalidProblem):
    """A pointer is not aligned to its element size."""


class WorkspaceTooSmall(InvalidProblem):
    """The workspace given to ``run`` is smaller than ``plan.workspace_size()``."""

    _fields = ("needed", "got")

    def __init__(self, message: str, *, needed: int, got: int) -> None:
        super().__init__(message)
        self.needed = needed
        self.got = got


class CompileError(BaracudaError):
    """NVRTC refused a kernel source. ``log`` holds NVRTC's log, ``source`` the program."""

    _fields = ("log", "source")

    def __init__(self, message: str, *, log: str, source: str) -> None:
        self._message = message
        super().__init__(f"{message}\n--- NVRTC log ---\n{log}")
        self.log = log
        self.source = source

    def dump(self) -> str:
        """The source with line numbers, to read beside the log."""
        return "\n".join(f"{i:5d} {line}" for i, line in enumerate(self.source.splitlines(), 1))


class CudaError(BaracudaError):
    """A CUDA driver call failed. ``name`` is the driver's error name (``CUDA_ERROR_...``)."""

    _fields = ("name",)

    def __init__(self, message: str, *, name: str) -> None:
        self._message = message
        super().__init__(f"{message}: {name}")
        self.name = name
