"""Time one forward scan (default: logcumsumexp) on the shapes of docs/benchmarks.md's round
20, f32 and bf16, against torch in the same run, with the error of each output against
torch's float64 result (max |y - ref| / max(1, |ref|)). ``--op logcumsumexp_backward`` times
the logcumsumexp backward instead (``scan_backward`` with ``dy`` and the saved ``x`` and ``y``
tensors of their own, ``y`` the forward's output) on BACKWARD_CASES against torch's autograd,
its error against the float64 sum ``exp(x_i) sum_{j>=i} dy_j exp(-y_j)`` of the same rounded
inputs, and its GB/s (dy, x, y read, dx written) as % of the copy bandwidth.
``--set NAME=VALUE`` sets a switch of ``baracuda.scan._kernels`` first (a Python literal,
e.g. ``COOP_LSE_ITEMSIZES=(2,)`` or ``PIPE_CHUNK_OPS=()``); the time is the bench's
(``time_us``: L2 flushed, median). Prints a table, writes JSON.

    python benchmarks/scan_shapes.py [out.json] [--op logcumsumexp] [--set NAME=VALUE ...]
        [--dtypes float32,bfloat16]   (on a GPU)
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

import torch
from _scan_bench import set_switches

import baracuda as bc
from baracuda._bench import copy_bandwidth, time_us

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
# the backward's: rows the block ring takes (aligned rows of 8 KiB or more) and rows it does not
# (odd lengths, reverse), short rows, strided axes, few long rows
BACKWARD_CASES: list[tuple[tuple[int, ...], int, bool]] = [
    ((4096, 8192), 1, False),
    ((4096, 8192), 1, True),
    ((1024, 8192), 1, False),
    ((4096, 4096), 1, False),
    ((512, 16384), 1, False),
    ((1000, 8200), 1, False),
    ((3000, 1029), 1, False),
    ((2**16, 64), 1, False),
    ((4096, 8192), 0, False),
    ((2, 2**23), 1, False),
    ((2**20, 2), 0, False),
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
    ap.add_argument("--op", choices=[*sorted(OPS), "logcumsumexp_backward"],
                    default="logcumsumexp")  # fmt: skip
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--dtypes", default="float32,bfloat16", help="torch dtypes, comma-separated")
    args = ap.parse_args()
    set_switches(args.set)
    dtypes = [getattr(torch, d) for d in args.dtypes.split(",")]
    if args.op == "logcumsumexp_backward":
        backward(args.out, args.set, dtypes)
        return
    ours, theirs = OPS[args.op]
    torch.manual_seed(0)
    card = torch.cuda.get_device_name()
    rows: list[dict[str, Any]] = []
    print(f"card: {card}   op: {args.op}   switches: {args.set or 'defaults'}")
    print(f"{'shape':>14} {'axis':>4} {'rev':>3} {'dtype':>8} {'baracuda us':>12} "
          f"{'torch us':>10} {'speed-up':>8} {'err':>9}")  # fmt: skip
    for dt in dtypes:
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


def backward(out: str, switches: list[str], dtypes: list[torch.dtype]) -> None:
    """The logcumsumexp backward on BACKWARD_CASES (see the module's text)."""
    torch.manual_seed(0)
    card = torch.cuda.get_device_name()
    bw = copy_bandwidth()
    rows: list[dict[str, Any]] = []
    print(f"card: {card}   op: logcumsumexp_backward   switches: {switches or 'defaults'}   "
          f"copy bandwidth {bw / 1e9:.0f} GB/s")  # fmt: skip
    print(f"{'shape':>14} {'axis':>4} {'rev':>3} {'dtype':>8} {'baracuda us':>12} {'GB/s':>6} "
          f"{'% copy':>6} {'autograd us':>11} {'speed-up':>8} {'err':>9}")  # fmt: skip
    for dt in dtypes:
        for shape, axis, rev in BACKWARD_CASES:
            x = (torch.randn(*shape, device="cuda") * 4.0).to(dt)
            dy = torch.randn(*shape, device="cuda").to(dt)
            y = bc.logcumsumexp(x, axis=axis, reverse=rev)
            dx = bc.scan_backward("logcumsumexp", dy, x=x, y=y, axis=axis, reverse=rev)
            x64, dy64, y64 = x.double(), dy.double(), y.double()
            terms = dy64 * torch.exp(-y64)
            if not rev:  # the sum over j >= i (reverse: j <= i)
                terms = terms.flip(axis)
            suffix = torch.cumsum(terms, axis)
            suffix = suffix if rev else suffix.flip(axis)
            ref = torch.exp(x64) * suffix
            err = ((dx.double() - ref).abs() / ref.abs().clamp(min=1)).max().item()
            del x64, dy64, y64, terms, suffix, ref
            t = time_us(lambda: bc.scan_backward("logcumsumexp", dy, x=x, y=y, axis=axis,
                                                 reverse=rev))  # fmt: skip
            # torch has no reverse: the same work forward
            xr = x.detach().clone().requires_grad_(True)
            fwd = torch.logcumsumexp(xr, axis)
            tt = time_us(lambda: torch.autograd.grad(fwd, xr, dy, retain_graph=True))
            gbs = 4 * x.numel() * x.element_size() / (t * 1e-6) / 1e9
            pct = 100 * gbs * 1e9 / bw
            rows.append(dict(shape=list(shape), axis=axis, reverse=rev, dtype=str(dt)[6:],
                             us=round(t, 2), gb_s=round(gbs), copy_pct=round(pct, 1),
                             torch_us=round(tt, 2), err=err))  # fmt: skip
            print(f"{shape!s:>14} {axis:>4} {int(rev):>3} {str(dt)[6:]:>8} {t:12.1f} {gbs:6.0f} "
                  f"{pct:5.1f}% {tt:11.1f} {tt / t:7.2f}x {err:9.2e}",
                  flush=True)  # fmt: skip
    with open(out, "w") as f:
        json.dump({"card": card, "op": "logcumsumexp_backward", "copy_bw": bw,
                   "switches": switches, "rows": rows}, f, indent=1)  # fmt: skip
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
