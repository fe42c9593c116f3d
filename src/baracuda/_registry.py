"""Every kernel source of the package: importing the plan modules registers them."""

from __future__ import annotations

import importlib
import pkgutil
import time

from baracuda._check import FAMILIES
from baracuda.types import ElementKind

__all__ = ["import_families", "compile_job"]


def import_families() -> None:
    """Import every plan module, so every kernel source is registered."""
    for fam in FAMILIES:
        try:
            pkg = importlib.import_module(f"baracuda.{fam}")
        except ModuleNotFoundError:
            continue
        for info in pkgutil.iter_modules(pkg.__path__):
            importlib.import_module(f"baracuda.{fam}.{info.name}")


def compile_job(job: tuple[str, ElementKind, str]) -> tuple[str, str, str, int, float]:
    """Compile one (source name, element, arch) into the cache; a picklable worker for
    ``python -m baracuda compile --jobs``. Returns (name, dtype, arch, bytes, seconds)."""
    from baracuda._cuda.compiler import compile_cubin, registered_sources

    import_families()
    name, el, arch = job
    src = next(s for s in registered_sources() if s.name == name)
    t = time.perf_counter()
    cubin = compile_cubin(src, el, arch)
    return name, el.value, arch, len(cubin), time.perf_counter() - t


def syntax_job(job: tuple[str, ElementKind, str]) -> tuple[str, str, str, int, float]:
    """``compile_job`` through NVRTC's front end alone (``check_syntax``: nothing cached;
    ``python -m baracuda compile --syntax-only``). Returns (name, dtype, arch, 0, seconds)."""
    from baracuda._cuda.compiler import check_syntax, registered_sources

    import_families()
    name, el, arch = job
    src = next(s for s in registered_sources() if s.name == name)
    t = time.perf_counter()
    check_syntax(src, el, arch)
    return name, el.value, arch, 0, time.perf_counter() - t
