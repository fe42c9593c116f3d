"""NVRTC compilation to cubin, through ``cuda.core``, with its persistent program cache.

One program is compiled per (kernel source, element type, arch). A kernel source is a
family's ``.cu`` file, or one group of its entries (``KernelSource.group``: the file compiled
with the group's macros, so a plan compiles only the kernels it launches). The text is
``include/baracuda/common.cuh`` followed by the ``.cu`` file, so the source hash covers our
own header; the CUDA headers come through an include path whose contents are
fingerprinted into ``extra_digest`` (``cuda.core`` cannot see them itself).
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
import threading
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from baracuda._dtypes import ELEMENTS
from baracuda._version import __version__
from baracuda.errors import CompileError
from baracuda.types import ElementKind

__all__ = [
    "KernelSource",
    "register_source",
    "registered_sources",
    "kernel_name",
    "cache_dir",
    "compile_cubin",
    "nvrtc_version",
]

_HEADER = "include/baracuda/common.cuh"


@dataclass(frozen=True, slots=True)
class KernelSource:
    """A family's ``.cu`` file and the entry points it defines (without the dtype suffix).

    ``group`` names one program of a file compiled in parts: the file is compiled with the
    preprocessor ``defines`` (``(name, value)`` pairs) that select the group's entries, and
    ``entries`` lists exactly those. ``double_acc``: the elements this program accumulates in
    double (``BC_ACC``) whatever the dtype table's accumulator (the f32 cumprod).
    """

    family: str  # package folder, e.g. "elementwise"
    filename: str  # e.g. "lerp.cu"
    entries: tuple[str, ...]  # e.g. ("lerp_fwd_vec", "lerp_fwd_strided")
    elements: tuple[ElementKind, ...] = tuple(ElementKind)
    group: str = ""  # e.g. "sum" for the cumsum kernels of scan.cu
    defines: tuple[tuple[str, str], ...] = ()
    double_acc: tuple[ElementKind, ...] = ()

    def acc_c_type(self, element: ElementKind) -> str:
        """The accumulator's C type of ``element`` in this program (``BC_ACC``)."""
        return "double" if element in self.double_acc else ELEMENTS[element].acc_c_type

    @property
    def name(self) -> str:
        base = f"{self.family}/{self.filename}"
        return f"{base}:{self.group}" if self.group else base

    def text(self) -> str:
        return _source_text(self.family, self.filename)


def kernel_name(op: str, element: ElementKind) -> str:
    """The ``extern "C"`` symbol of one instantiation: ``baracuda_<op>_<dtype>``."""
    return f"baracuda_{op}_{element.value}"


_SOURCES: dict[str, KernelSource] = {}


def register_source(source: KernelSource) -> KernelSource:
    """Record a kernel source so ``python -m baracuda compile`` can build every instantiation."""
    _SOURCES[source.name] = source
    return source


def registered_sources() -> tuple[KernelSource, ...]:
    return tuple(_SOURCES.values())


@functools.cache
def _source_text(family: str, filename: str) -> str:
    pkg = resources.files("baracuda")
    header = (pkg / "_cuda" / _HEADER).read_text()
    body = (pkg / family / filename).read_text()
    return f'{header}\n#line 1 "{family}/{filename}"\n{body}'


def cache_dir() -> Path:
    """``$BARACUDA_CACHE_DIR``, else ``$XDG_CACHE_HOME/baracuda``, else ``~/.cache/baracuda``."""
    explicit = os.environ.get("BARACUDA_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "baracuda"


@functools.cache
def cuda_include_dir() -> str:
    from cuda import pathfinder

    located = pathfinder.locate_nvidia_header_directory("cudart")
    if located is None:
        raise CompileError(
            "the CUDA runtime headers (cuda_fp16.h) were not found; "
            "install the 'nvidia-cuda-runtime' wheel (pip install 'cuda-toolkit[cudart]')",
            log="",
            source="",
        )
    return str(located.abs_path)


@functools.cache
def _extra_digest() -> bytes:
    """Fingerprint of what the include path brings in, plus our version."""
    h = hashlib.sha256(f"baracuda {__version__}\n".encode())
    inc = Path(cuda_include_dir())
    for name in ("cuda_fp16.h", "cuda_fp16.hpp", "cuda_bf16.h", "cuda_bf16.hpp"):
        p = inc / name
        h.update(name.encode())
        h.update(p.read_bytes() if p.exists() else b"<absent>")
    return h.digest()


@functools.cache
def nvrtc_version() -> tuple[int, int]:
    from cuda.bindings import nvrtc

    from baracuda._cuda.driver import check

    major, minor = check(nvrtc.nvrtcVersion(), "nvrtcVersion")
    return int(major), int(minor)


_cache_lock = threading.Lock()
_key_locks: dict[bytes, threading.Lock] = {}
_program_cache: Any = None


def _persistent_cache() -> Any:
    """The process-wide ``FileStreamProgramCache``, or None when disabled / unavailable."""
    global _program_cache
    if os.environ.get("BARACUDA_DISABLE_CACHE") == "1":
        return None
    with _cache_lock:
        if _program_cache is None:
            from cuda.core.utils import FileStreamProgramCache

            path = cache_dir()
            path.mkdir(parents=True, exist_ok=True)
            _program_cache = FileStreamProgramCache(str(path), max_size_bytes=512 * 2**20)
        return _program_cache


def _options(source: KernelSource, element: ElementKind, arch: str) -> Any:
    from cuda.core import ProgramOptions

    info = ELEMENTS[element]
    return ProgramOptions(
        name=f"{source.name}[{element.value}]",
        arch=arch,
        std="c++17",
        include_path=[cuda_include_dir()],
        define_macro=[
            ("BC_T", info.c_type),
            ("BC_ACC", source.acc_c_type(element)),
            ("BC_SUFFIX", element.value),
            *source.defines,
        ],
    )


_ELF_MAGIC = b"\x7fELF"


def _valid(entry: bytes | None) -> bool:
    """A cache entry that can be a cubin (an ELF image); anything else is recompiled."""
    return entry is not None and len(entry) > 64 and bytes(entry[:4]) == _ELF_MAGIC


def compile_cubin(
    source: KernelSource, element: ElementKind, arch: str, *, refresh: bool = False
) -> bytes:
    """The cubin of ``source`` for ``element`` on ``arch`` (``"sm_90"``), from cache or NVRTC.

    Needs no GPU. A cache entry that is not an ELF image, or ``refresh=True`` (the driver
    refused the cached image), is compiled again and overwritten. Raises ``CompileError``
    with NVRTC's log when the source does not compile.
    """
    from cuda.core.utils import make_program_cache_key

    text = source.text()
    options = _options(source, element, arch)
    key = make_program_cache_key(
        code=text,
        code_type="c++",
        options=options,
        target_type="cubin",
        extra_digest=_extra_digest(),
    )
    cache = _persistent_cache()
    if cache is not None and not refresh:
        hit = cache.get(key)
        if _valid(hit):
            return bytes(hit)
    with _cache_lock:
        lock = _key_locks.setdefault(key, threading.Lock())
    with lock:  # one compile per key in this process; other processes are safe by os.replace
        if cache is not None and not refresh:
            hit = cache.get(key)
            if _valid(hit):
                return bytes(hit)
        data = _nvrtc_compile(text, options, f"{source.name} for {element.value} on {arch}")
        if cache is not None:
            cache[key] = data
        return data


def check_syntax(source: KernelSource, element: ElementKind, arch: str) -> None:
    """Run NVRTC's front end alone on ``source`` for ``element`` on ``arch``
    (``--fdevice-syntax-only``: parsing and every template the entries instantiate, no NVVM
    or ptxas, no cache). Needs no GPU; about 1 s for the largest program, against 10-60 s for
    a cubin. Raises ``CompileError`` with NVRTC's log where the front end rejects it."""
    import dataclasses

    options = dataclasses.replace(_options(source, element, arch), fdevice_syntax_only=True)
    _nvrtc_compile(source.text(), options, f"{source.name} for {element.value} on {arch}")


def _nvrtc_compile(text: str, options: Any, what: str) -> bytes:
    """One NVRTC compilation to cubin (no cache)."""
    from cuda.core import Program

    log = io.StringIO()
    try:
        obj = Program(text, "c++", options=options).compile("cubin", logs=log)
    except Exception as exc:
        raise CompileError(
            f"NVRTC failed to compile {what}", log=log.getvalue() or str(exc), source=text
        ) from exc
    return bytes(obj.code)
