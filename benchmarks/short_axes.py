"""Scans along a short strided axis (round 48, docs/benchmarks.md): every op and backward over
2^24 elements along dim 0 of 2 to 64 positions, where strips scan one partial chunk a block
(``scan_<op>_short``: a thread per word of adjacent lines). Each case is checked against
float64 (torch's own ops in float64; the backward against torch autograd, whose cummax ties
go to the last occurrence: bf16 cummax backward differs there), then timed with the bench's
method (``time_us``: L2 flushed, median) through the functional call, with a ``copy_`` of the
input's bytes and torch's own call (autograd for the backward) in the same process
(``--peers``). ``--off`` times the kernels taken before (SHORT off). ``--odd`` times instead
lines that are not whole 16-byte vectors (round 51: an odd number of them, over 2, 3, 4 and
8 positions) in cumsum, cumprod, the cumsum backward and (since round 53) cummax (since round
55 also over 16 and 64), bf16, f32 and f64; ``--before`` times cummax there on the kernels
taken before round 55 (short1x4, short1), ``--round55`` on those of round 55 (short1l,
short1lw: no SHORT1_RESIDENT). ``--ops`` times only the ops named. Prints a line a
case (the kernels and their grids), writes JSON:

    python benchmarks/short_axes.py short short.json --peers
    python benchmarks/short_axes.py off off.json --off
    python benchmarks/short_axes.py odd odd.json --odd --peers          (on a GPU)
    python benchmarks/short_axes.py before before.json --odd --ops cummax --before
    python benchmarks/short_axes.py r55 r55.json --odd --ops cummax --round55
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import torch
from _scan_bench import launched, measure, peers_text, scan_input, write_json

import baracuda as bc
from baracuda.scan import _kernels as K

BF16, F32, F64 = torch.bfloat16, torch.float32, torch.float64
_NAMES = {BF16: "bf16", F32: "f32", F64: "f64"}
# (op, dtype, positions along dim 0); 2^24 elements each (over 3 positions 2^24 // 3 lines, not
# whole 16-byte vectors)
CASES: list[tuple[str, torch.dtype, int]] = [
    *((op, dt, n) for op, ns in (("cumsum", (2, 3, 4, 8, 64)), ("cummax", (2, 3, 4, 8, 64)),
                                 ("logcumsumexp", (2, 4, 64)), ("cumprod", (2, 3, 64)))
      for n in ns for dt in (BF16, F32)),
    *((f"{op}_backward", dt, n) for op in ("cumsum", "cumprod", "cummax", "logcumsumexp")
      for n in (2, 3, 64) for dt in (BF16, F32)),
]  # fmt: skip
# --odd: lines that are not whole vectors (about 2^24 elements, an odd number of lines), where
# the outer dims coalesce to one: short1x8 / short1x8b3 over 2 to 4 positions, short1 over 8
# (cummax: short1x4, short1)
ODD_CASES: list[tuple[str, torch.dtype, int]] = [
    (op, dt, n) for op in ("cumsum", "cumprod", "cumsum_backward", "cummax")
    for dt in (BF16, F32, F64) for n in ((2, 3, 4, 8, 16, 64) if op == "cummax" else (2, 3, 4, 8))
]  # fmt: skip
# --before: cummax/cummin over lines that are not whole vectors on the kinds taken before round
# 55 (short1x4 over 2 to 4 positions, short1 over more) instead of short1l
_MAX_BEFORE: tuple[tuple[int, str], ...] = ((4, "short1x4"),)
_OPS: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "cumsum": (bc.cumsum, torch.cumsum),
    "cumprod": (bc.cumprod, torch.cumprod),
    "logcumsumexp": (bc.logcumsumexp, torch.logcumsumexp),
    "cummax": (lambda x, a: bc.cummax(x, a)[0], lambda x, a: torch.cummax(x, a)[0]),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tag")
    ap.add_argument("json_out", nargs="?")
    ap.add_argument("--peers", action="store_true", help="time copy_ and torch too")
    ap.add_argument("--off", action="store_true", help="SHORT off: the kernels before")
    ap.add_argument("--odd", action="store_true", help="lines that are not whole vectors")
    ap.add_argument("--ops", nargs="+", help="only these ops (cumsum, cummax_backward, ...)")
    ap.add_argument(
        "--before",
        action="store_true",
        help="cummax over lines not whole vectors: the kinds before short1l",
    )
    ap.add_argument("--round55", action="store_true",
                    help="cummax over lines not whole vectors: round 55's kinds")  # fmt: skip
    args = ap.parse_args()
    if args.off:
        K.__dict__["SHORT"] = False
    if args.before:  # a new dict: switch_values tells the tables apart by identity
        K.__dict__["SHORT1_MANY"] = {**K.SHORT1_MANY, "max": _MAX_BEFORE}
    if args.before or args.round55:
        K.__dict__["SHORT1_RESIDENT"] = {}
    names = launched()
    g = torch.Generator(device="cuda").manual_seed(0)
    rows = []
    for op, dt, n in ODD_CASES if args.odd else CASES:
        if args.ops and op not in args.ops:
            continue
        lines = 2**24 // n
        shape = (n, lines - 1 + lines % 2 if args.odd else lines)
        base = op.removesuffix("_backward")
        x = scan_input(base, shape, dt, g)
        ours, theirs = _OPS[base]
        if op.endswith("_backward"):
            dy = torch.randn(shape, device="cuda", generator=g).to(dt)
            xr = x.double().requires_grad_()
            ref = torch.autograd.grad(theirs(xr, 0), xr, dy.double())[0]
            y = ours(x, 0)
            fn: Callable[[], Any] = lambda: bc.scan_backward(base, dy, x=x, y=y, axis=0)  # noqa: E731
            xt = x.clone().requires_grad_()
            yt = theirs(xt, 0)
            tfn: Callable[[], Any] = lambda: torch.autograd.grad(yt, xt, dy, retain_graph=True)  # noqa: E731
        else:
            ref = theirs(x.double(), 0)
            fn = lambda: ours(x, 0)  # noqa: E731
            tfn = lambda: theirs(x, 0)  # noqa: E731
        row = {"op": op, "dtype": _NAMES[dt], "shape": list(shape),
               **measure(fn, tfn, ref, x, names, args.peers)}  # fmt: skip
        del ref
        rows.append(row)
        print(f"{op:22s} {_NAMES[dt]:4s} {n:>3}x{shape[1]:<8} {row['us']:8.1f} us"
              f"{peers_text(row)}  {row['kernel']}  err {row['err']:.1e}", flush=True)  # fmt: skip
    write_json(args.json_out, args.tag, rows)


if __name__ == "__main__":
    main()
