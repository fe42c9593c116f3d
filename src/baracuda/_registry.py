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


def compile_job(job: tuple[str, ElementKind, str],
                syntax_only: bool = False) -> tuple[str, str, str, int, float]:  # fmt: skip
    """Compile one (source name, element, arch) into the cache, or with ``syntax_only`` run
    NVRTC's front end alone on it (``check_syntax``: nothing cached); a picklable worker for
    ``python -m baracuda compile --jobs [--syntax-only]``. Returns (name, dtype, arch, bytes
    of cubin or 0, seconds)."""
    from baracuda._cuda.compiler import check_syntax, compile_cubin, registered_sources

    import_families()
    name, el, arch = job
    src = next(s for s in registered_sources() if s.name == name)
    t = time.perf_counter()
    if syntax_only:
        check_syntax(src, el, arch)
        return name, el.value, arch, 0, time.perf_counter() - t
    cubin = compile_cubin(src, el, arch)
    return name, el.value, arch, len(cubin), time.perf_counter() - t
