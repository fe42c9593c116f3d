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
import json
from collections.abc import Callable

import torch
from _scan_bench import launched, set_switches

import baracuda as bc
from baracuda._bench import time_us

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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out", nargs="?", default="lines_sweep.json")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    args = ap.parse_args()
    set_switches(args.set)
    torch.manual_seed(0)
    card = torch.cuda.get_device_name()
    print(f"card: {card}   switches: {args.set or 'defaults'}")
    names = launched()  # name/grid of each launch (a call's first run records them)
    rows: list[dict[str, object]] = []
    for op, dt in CASES:
        for lines in LINES:
            n = TOTAL // lines
            x = torch.randn(n, lines, device="cuda", dtype=dt)
            if op == "cumprod":
                x = 1 + 1e-4 * x  # products that stay finite
            fn = _call(op, x)
            names.clear()
            fn()
            kernels = [k.split("/")[0] for k in names if not k.startswith("scan_zero/")]
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
