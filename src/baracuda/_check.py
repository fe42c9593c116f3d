"""``python -m baracuda check``: every op, forward and backward, against float64 truth."""

from __future__ import annotations

import importlib
import sys
import time
from typing import Any

from baracuda._harness import CheckCase, CheckContext
from baracuda.types import ElementKind

__all__ = ["FAMILIES", "family_cases", "make_context", "run_check"]

FAMILIES = ("elementwise", "scan", "softmax")


def family_cases(attr: str) -> list[Any]:
    """``cases.<attr>()`` of every family that has a ``cases`` module."""
    out: list[Any] = []
    for fam in FAMILIES:
        try:
            mod = importlib.import_module(f"baracuda.{fam}.cases")
        except ModuleNotFoundError as exc:
            if exc.name != f"baracuda.{fam}.cases":
                raise
            continue
        out.extend(getattr(mod, attr)())
    return out


def make_context(backend: str, seed: int = 0) -> CheckContext:
    import numpy as np

    rng = np.random.default_rng(seed)
    if backend == "cuda":
        import torch

        dtypes = {ElementKind.F32: torch.float32, ElementKind.F16: torch.float16,
                  ElementKind.BF16: torch.bfloat16, ElementKind.F64: torch.float64}  # fmt: skip

        def to_device(x: Any, element: ElementKind) -> Any:
            return torch.as_tensor(np.asarray(x, np.float64), device="cuda").to(dtypes[element])

        def to_numpy(x: Any) -> Any:
            return x.detach().to("cpu", torch.float64).numpy()

        return CheckContext("cuda", "torch", to_device, to_numpy, rng)

    import ml_dtypes

    np_dtypes = {ElementKind.F32: np.float32, ElementKind.F16: np.float16,
                 ElementKind.BF16: ml_dtypes.bfloat16, ElementKind.F64: np.float64}  # fmt: skip

    def np_to_device(x: Any, element: ElementKind) -> Any:
        return np.asarray(x, np.float64).astype(np_dtypes[element])

    def np_to_numpy(x: Any) -> Any:
        return np.asarray(x).astype(np.float64)

    return CheckContext("array-api", "numpy", np_to_device, np_to_numpy, rng)


def _default_backend() -> str:
    from baracuda._cuda.driver import gpu_available

    if not gpu_available():
        return "array-api"
    try:
        import torch
    except ImportError:
        return "array-api"
    return "cuda" if torch.cuda.is_available() else "array-api"


def run_check(backend: str | None = None, ops: list[str] | None = None) -> int:
    """Run the cases, print a table, return the number of failures."""
    backend = backend or _default_backend()
    ctx = make_context(backend)
    cases: list[CheckCase] = family_cases("check_cases")
    if ops:
        cases = [c for c in cases if any(c.op == o or c.op.startswith(o + "_") for o in ops)]
    print(f"baracuda check: backend={backend} ({ctx.framework}), {len(cases)} cases")
    header = f"{'op':<28} {'dtype':<5} {'backend':<10} {'max err':>10} {'tol':>9}  result"
    print(header)
    print("-" * len(header))
    failures = 0
    t0 = time.perf_counter()
    for case in cases:
        try:
            err, tol = case.run(ctx)
            ok = err <= tol  # NaN fails
            text = f"{err:10.3e} {tol:9.1e}  {'pass' if ok else 'FAIL'}"
        except Exception as exc:  # a crash is a failure, reported, and the run goes on
            ok = False
            text = f"{'-':>10} {'-':>9}  FAIL ({type(exc).__name__}: {exc})"[:200]
        failures += not ok
        print(f"{case.op:<28} {case.element.value:<5} {backend:<10} {text}")
        sys.stdout.flush()
    dt = time.perf_counter() - t0
    print(f"{len(cases) - failures} passed, {failures} failed ({dt:.1f} s)")
    return failures
