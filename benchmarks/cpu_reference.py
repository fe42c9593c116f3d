"""The array-API path (the scan reference, what a CPU array takes) against the array
library's own scan, on NumPy and torch CPU arrays: every forward scan and every backward, f32,
one shape, along one axis. Time: the median of ``--reps`` calls after one warm-up call (wall
clock, one process). Prints a table, writes JSON.

    python benchmarks/cpu_reference.py [out.json] [--shape 512,4096] [--axis 1] [--reps 5]
        (any machine)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

import baracuda as bc

FORWARD = ("cumsum", "cumprod", "cummax", "cummin", "logcumsumexp")


def median_ms(fn: Callable[[], object], reps: int) -> float:
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def natives(lib: str, op: str, x: Any, axis: int) -> Callable[[], object] | None:
    """The library's own forward scan along ``axis`` (None where it has none)."""
    if lib == "numpy":
        fns: dict[str, Callable[[], object]] = {
            "cumsum": lambda: np.cumsum(x, axis), "cumprod": lambda: np.cumprod(x, axis),
            "cummax": lambda: np.maximum.accumulate(x, axis),
            "cummin": lambda: np.minimum.accumulate(x, axis),
        }  # fmt: skip
        return fns.get(op)
    return lambda: getattr(torch, op)(x, axis)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", nargs="?", default="cpu_reference.json")
    ap.add_argument("--shape", default="512,4096")
    ap.add_argument("--axis", type=int, default=1)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    shape = tuple(int(s) for s in a.shape.split(","))
    host = f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs"
    ax = a.axis
    print(f"array-API path vs the library's own scan, f32 {shape} along axis {ax}, {host} (ms)")
    print(f"{'lib':<6} {'op':<22} {'baracuda':>9} {'native':>9} {'ratio':>6}")
    rows: list[dict[str, Any]] = []
    rng = np.random.default_rng(0)
    xn = rng.standard_normal(shape).astype(np.float32)
    dyn = rng.standard_normal(shape).astype(np.float32)
    for lib in ("numpy", "torch"):
        x, dy = (xn, dyn) if lib == "numpy" else (torch.from_numpy(xn), torch.from_numpy(dyn))
        for op in FORWARD:
            ours = median_ms(lambda: getattr(bc, op)(x, ax), a.reps)
            nat = natives(lib, op, x, ax)
            theirs = median_ms(nat, a.reps) if nat is not None else None
            rows.append({"lib": lib, "op": op, "ms": ours, "native_ms": theirs})
            ratio = f"{ours / theirs:5.1f}x" if theirs else "     -"
            print(f"{lib:<6} {op:<22} {ours:9.2f} {theirs or float('nan'):9.2f} {ratio}")
        for op in FORWARD:
            y = getattr(bc, op)(x, ax)
            y = y[0] if isinstance(y, tuple) else y
            saved = {"x": x, "y": y} if op in ("cumprod", "logcumsumexp") else {"x": x}
            ours = median_ms(lambda: bc.scan_backward(op, dy, axis=ax, **saved), a.reps)
            rows.append({"lib": lib, "op": f"{op}_backward", "ms": ours, "native_ms": None})
            print(f"{lib:<6} {op + '_backward':<22} {ours:9.2f} {'':>9} {'':>6}")
    with open(a.out, "w") as f:
        json.dump({"host": host, "shape": list(shape), "axis": ax, "dtype": "float32",
                   "rows": rows}, f, indent=1)  # fmt: skip
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
