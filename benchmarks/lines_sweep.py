"""Scans along dim 0 of (2^23 / L, L) for line counts L from 2 to 1024: the f64 cumsum,
logcumsumexp and cummax backward (whose winner flags are a one-double state) and the f32
cumprod (double states), the ops whose look-back nodes hold a double (scan.cu, StateWord).
Round 61 set ``LB_F64_MAX_LINES`` and kept the f32 cumprod's tiles narrow from these runs
(docs/benchmarks.md). Each case is timed with the bench's method (``time_us``: L2 flushed,
median) through the functional call; the kernels it launched are printed beside it.
``--set NAME=VALUE`` sets a switch of ``baracuda.scan._kernels`` first (a Python literal,
e.g. ``LBCOLS_WIDE=(2,)``). Prints a line a case, writes JSON. For a change to the kernels,
run it on the two trees, each with its own kernel cache:

    BARACUDA_CACHE_DIR=/tmp/c-main PYTHONPATH=main/src python benchmarks/lines_sweep.py m.json
    BARACUDA_CACHE_DIR=/tmp/c-new PYTHONPATH=src python benchmarks/lines_sweep.py n.json
                                                                    (on a GPU)
"""

from __future__ import annotations

import argparse
import ast
import json
from collections.abc import Callable
from typing import Any

import torch

import baracuda as bc
from baracuda._bench import time_us
from baracuda.scan import _kernels

LINES = (2, 4, 8, 16, 32, 64, 300, 1024)
TOTAL = 2**23
CASES = (("cumsum", torch.float64), ("logcumsumexp", torch.float64),
         ("cumprod", torch.float32), ("cummax_backward", torch.float64))  # fmt: skip


def _call(op: str, x: torch.Tensor) -> Callable[[], object]:
    if op == "cummax_backward":
        dy = torch.randn_like(x)
        return lambda: bc.scan_backward("cummax", dy, x=x, axis=0)
    fn = getattr(bc, op)
    return lambda: fn(x, axis=0)


def _kernels_of(fn: Callable[[], object]) -> list[str]:
    """The scan kernels one call launches (not the look-back workspace's zeroing)."""
    names: list[str] = []
    real = _kernels.launch

    def spy(*args: Any, **kw: Any) -> None:
        if args[6] != "scan_zero":
            names.append(args[6])
        real(*args, **kw)

    _kernels.launch = spy  # type: ignore[assignment]
    try:
        fn()
    finally:
        _kernels.launch = real  # type: ignore[assignment]
    return names


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out", nargs="?", default="lines_sweep.json")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    args = ap.parse_args()
    for item in args.set:
        name, _, value = item.partition("=")
        if not hasattr(_kernels, name):
            raise SystemExit(f"--set: baracuda.scan._kernels has no switch {name!r}")
        setattr(_kernels, name, ast.literal_eval(value))
    torch.manual_seed(0)
    card = torch.cuda.get_device_name()
    print(f"card: {card}   switches: {args.set or 'defaults'}")
    rows: list[dict[str, Any]] = []
    for op, dt in CASES:
        for lines in LINES:
            n = TOTAL // lines
            x = torch.randn(n, lines, device="cuda", dtype=dt)
            if op == "cumprod":
                x = 1 + 1e-4 * x  # products that stay finite
            fn = _call(op, x)
            kernels = _kernels_of(fn)
            t = time_us(fn)
            dtype = str(dt).removeprefix("torch.")
            rows.append(dict(op=op, dtype=dtype, lines=lines, n=n, us=round(t, 2),
                             kernels=kernels))  # fmt: skip
            print(f"{op:>15} {dtype:>8} ({n:>8}, {lines:>4}) {t:9.1f} us  {' '.join(kernels)}",
                  flush=True)  # fmt: skip
    with open(args.out, "w") as f:
        json.dump({"card": card, "switches": args.set, "rows": rows}, f, indent=1)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
