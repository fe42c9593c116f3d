"""Time one forward scan (default: logcumsumexp) on the shapes of docs/benchmarks.md's round
20, f32 and bf16, against torch in the same run, with the error of each output against
torch's float64 result (max |y - ref| / max(1, |ref|)). ``--set NAME=VALUE`` sets a switch of
``baracuda.scan._kernels`` first (a Python literal, e.g. ``COOP_LSE_ITEMSIZES=(2,)`` or
``PIPE_CHUNK_OPS=()``); the time is the bench's (``time_us``: L2 flushed, median). Prints a
table, writes JSON.

    python benchmarks/scan_shapes.py [out.json] [--op logcumsumexp] [--set NAME=VALUE ...]
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

# (shape, axis, reverse): many rows along either axis, few long rows (one line of 2^26 in
# both directions), interleaved lines, odd rows, many short strided lines
CASES: list[tuple[tuple[int, ...], int, bool]] = [
    ((4096, 8192), 1, False),
    ((4096, 8192), 0, False),
    ((2, 2**23), 1, False),
    ((1, 2**26), 1, False),
    ((1, 2**26), 1, True),
    ((2**20, 2), 0, False),
    ((3000, 1029), 1, False),
    ((70000, 300), 0, False),
]
OPS: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "logcumsumexp": (bc.logcumsumexp, torch.logcumsumexp),
    "cumsum": (bc.cumsum, torch.cumsum),
    "cumprod": (bc.cumprod, torch.cumprod),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out", nargs="?", default="scan_shapes.json")
    ap.add_argument("--op", choices=sorted(OPS), default="logcumsumexp")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    args = ap.parse_args()
    for item in args.set:
        name, _, value = item.partition("=")
        if not hasattr(_kernels, name):
            raise SystemExit(f"--set: baracuda.scan._kernels has no switch {name!r}")
        setattr(_kernels, name, ast.literal_eval(value))
    ours, theirs = OPS[args.op]
    torch.manual_seed(0)
    card = torch.cuda.get_device_name()
    rows: list[dict[str, Any]] = []
    print(f"card: {card}   op: {args.op}   switches: {args.set or 'defaults'}")
    print(f"{'shape':>14} {'axis':>4} {'rev':>3} {'dtype':>8} {'baracuda us':>12} "
          f"{'torch us':>10} {'speed-up':>8} {'err':>9}")  # fmt: skip
    for dt in (torch.float32, torch.bfloat16):
        for shape, axis, rev in CASES:
            scale = 4.0 if args.op == "logcumsumexp" else 1.0
            x = (torch.randn(*shape, device="cuda") * scale).to(dt)
            if args.op == "cumprod":
                x = (1 + 1e-4 * x.float()).to(dt)  # products that stay finite
            y = ours(x, axis=axis, reverse=rev)
            xd = x.double().flip(axis) if rev else x.double()
            ref = theirs(xd, axis)
            ref = ref.flip(axis) if rev else ref
            err = ((y.double() - ref).abs() / ref.abs().clamp(min=1)).max().item()
            del ref, xd
            t = time_us(lambda: ours(x, axis=axis, reverse=rev))
            # torch has no reverse: the same work forward
            tt = time_us(lambda: theirs(x, axis))
            rows.append(dict(shape=list(shape), axis=axis, reverse=rev, dtype=str(dt)[6:],
                             us=round(t, 2), torch_us=round(tt, 2), err=err))  # fmt: skip
            print(f"{shape!s:>14} {axis:>4} {int(rev):>3} {str(dt)[6:]:>8} {t:12.1f} "
                  f"{tt:10.1f} {tt / t:7.2f}x {err:9.2e}")  # fmt: skip
    with open(args.out, "w") as f:
        json.dump({"card": card, "op": args.op, "switches": args.set, "rows": rows}, f,
                  indent=1)  # fmt: skip
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
