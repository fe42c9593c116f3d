"""A/B timing of one switch of ``baracuda.scan._kernels`` (for example ``LB_DEPENDENT``) on
the scan benchmark cases: each case is timed with the switch on and off, alternating,
``--rounds`` times, in one process on one card, with the bench's method (``time_device``: L2
flushed, median). Both settings' outputs are checked against each other: bit for bit, or with
``--rounding`` (a switch that changes the order of the sums) within 1e-5 (f32) / 1e-2 (bf16)
of the largest magnitude. A switch that is not a boolean takes its two settings from ``--on``
and ``--off`` (Python literals). Prints a table, writes JSON.

    python benchmarks/ab_scan_switch.py LB_DEPENDENT [out.json] [--rounds 3] [--more]
        [--rounding] [--extrema-backward | --backward | --strided] [--only OP[,OP]] [--torch]
        [--on V --off V | --drop OP:SIZE[,OP:SIZE]] [--dtypes f32,bf16,f16,f64]
        [--shapes 8192x4096,16384x2048]   (on a GPU)

``--shapes`` times the chosen cases' ops over these shapes instead, along dim 0.

A table switch of (op, itemsizes) pairs (STRIP_OPS, STRIP_512_OPS, RING_BACKWARD) can take
``--drop``: on is its default, off the default without those itemsizes of those ops (for
example ``STRIP_OPS --drop lse_bwd:4``).
"""

from __future__ import annotations

import argparse
import ast
import json
from typing import Any

import torch

import baracuda as bc
from baracuda._bench import copy_bandwidth, time_us
from baracuda.scan import (
    ScanArgs,
    ScanBackwardArgs,
    ScanBackwardDescriptor,
    ScanBackwardPlan,
    ScanDescriptor,
    ScanPlan,
    _kernels,
)
from baracuda.scan.scan_backward import needs_saved_x, needs_saved_y
from baracuda.types import ScanKind

# (op, shape, axis): the four cumsum shapes, the cumsum backward along dim 0, and
# cummax along dim 0 (three passes unless LOOKBACK_FLAGGED)
CASES: list[tuple[str, tuple[int, ...], int]] = [
    ("cumsum", (4096, 8192), 1),
    ("cumsum", (4096, 8192), 0),
    ("cumsum", (2, 2**23), 1),
    ("cumsum", (2**20, 2), 0),
    ("cumsum", (2048, 4096), 0),
    ("cumsum_backward", (4096, 8192), 0),
    ("logcumsumexp", (4096, 8192), 0),
    ("cummax", (4096, 8192), 0),
]
# more shapes (--more): other line counts and axis lengths along strided and contiguous axes,
# cumprod, a rank-3 tensor
MORE: list[tuple[str, tuple[int, ...], int]] = [
    ("cumsum", (8192, 4096), 0),
    ("cumsum", (1024, 8192), 0),
    ("cumsum", (16384, 2048), 0),
    ("cumsum", (512, 65536), 0),
    ("cumprod", (4096, 8192), 0),
    ("cumsum", (16, 512, 1024), 1),
    ("cumsum", (1024, 32768), 1),
    ("cumsum", (512, 16384), 1),
    ("cumprod", (4096, 8192), 1),
    ("cumsum_backward", (4096, 8192), 1),
]
# the cummax backward (--extrema-backward: these cases alone): rows a block takes whole
# (FUSED_MAX_BACKWARD_BLOCKS), odd lengths, many rows (a warp each), long rows; the ring
# (RING_MAX_BACKWARD) takes the rows of whole vectors and at least 8 KiB
EXTREMA_BACKWARD: list[tuple[str, tuple[int, ...], int]] = [
    ("cummax_backward", (1024, 8192), 1),
    ("cummax_backward", (1500, 2048), 1),
    ("cummax_backward", (600, 4104), 1),
    ("cummax_backward", (64, 4096), 1),
    ("cummax_backward", (16, 3001), 1),
    ("cummax_backward", (4096, 8192), 1),
    ("cummax_backward", (8192, 4096), 1),
    ("cummax_backward", (8192, 2048), 1),
    ("cummax_backward", (256, 65536), 1),
]
# the cumprod and logcumsumexp backward along a contiguous axis (--backward: these cases alone)
BACKWARD: list[tuple[str, tuple[int, ...], int]] = [
    (op, shape, 1)
    for op in ("cumprod_backward", "logcumsumexp_backward")
    for shape in ((4096, 8192), (1024, 8192), (4096, 4096), (512, 16384), (1000, 8200))
]
# every op but cumsum along a strided axis (--strided: these cases alone): lines that fill the
# SMs with strips of 256 bytes (f32) or 128 (bf16), fewer lines, longer lines
STRIDED: list[tuple[str, tuple[int, ...], int]] = [
    (op, shape, 0)
    for op in ("logcumsumexp", "cummax", "cumprod_backward", "logcumsumexp_backward",
               "cummax_backward")
    for shape in ((4096, 8192), (1024, 8192), (512, 32768))
]
DTYPES = {
    "f32": (torch.float32, bc.ElementKind.F32), "bf16": (torch.bfloat16, bc.ElementKind.BF16),
    "f16": (torch.float16, bc.ElementKind.F16), "f64": (torch.float64, bc.ElementKind.F64),
}  # fmt: skip
# --rounding: the largest difference between the settings' outputs, relative to the largest
# output, that still counts as rounding
ROUNDING = {torch.float32: 1e-5, torch.float64: 1e-10}



def _drop(table: Any, spec: str) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """``table`` (a tuple of (op, itemsizes) pairs) without the (op, itemsize) entries of
    ``spec`` ("op:itemsize,op:itemsize"); an op left with no itemsize keeps an empty tuple."""
    drops = set()
    for item in spec.split(","):
        op, _, size = item.partition(":")
        if not size.isdigit() or op not in {o for o, _ in table}:
            raise SystemExit(f"--drop {item!r}: give OP:ITEMSIZE of an op the table lists")
        drops.add((op, int(size)))
    return tuple((o, tuple(z for z in sizes if (o, z) not in drops)) for o, sizes in table)


def _plan(op: str, shape: tuple[int, ...], axis: int, el: bc.ElementKind, s: bc.Stream,
          x: torch.Tensor, y: torch.Tensor, idx: torch.Tensor, dy: torch.Tensor,
          saved_y: torch.Tensor) -> Any:  # fmt: skip
    if op.endswith("_backward"):  # dy, and the saved x and y it takes: three tensors
        kind = ScanKind(op.removesuffix("_backward"))
        plan: Any = ScanBackwardPlan.select(s, ScanBackwardDescriptor(kind, shape, axis, el))
        args: Any = ScanBackwardArgs(dy, y, x if needs_saved_x(kind) else None,
                                     saved_y if needs_saved_y(kind) else None)  # fmt: skip
    else:
        kind = ScanKind(op)
        plan = ScanPlan.select(s, ScanDescriptor(kind, shape, axis, el))
        args = ScanArgs(x, y, idx if kind is ScanKind.CUMMAX else None)
    ws = bc.Workspace.allocate(plan.workspace_size(), s)
    return lambda: plan.run(s, ws, args)


def _torch(op: str, axis: int, x: torch.Tensor, dy: torch.Tensor) -> Any:
    """torch's call for the same work: the op, or for a backward autograd's."""
    if not op.endswith("_backward"):
        fn = getattr(torch, op)
        return lambda: fn(x, axis)
    xr = x.detach().clone().requires_grad_(True)
    out = getattr(torch, op.removesuffix("_backward"))(xr, axis)
    out = out[0] if isinstance(out, tuple) else out
    return lambda: torch.autograd.grad(out, xr, dy, retain_graph=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("switch", help="a switch of baracuda.scan._kernels")
    ap.add_argument("json", nargs="?", help="write the results here")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--more", action="store_true", help="also the MORE shapes")
    ap.add_argument("--rounding", action="store_true",
                    help="outputs may differ by rounding (not bit for bit)")  # fmt: skip
    ap.add_argument("--torch", action="store_true", help="also time torch's call (autograd's)")
    ap.add_argument("--extrema-backward", action="store_true",
                    help="only the cummax backward's cases (EXTREMA_BACKWARD)")  # fmt: skip
    ap.add_argument("--backward", action="store_true",
                    help="only the cumprod/logcumsumexp backward's cases (BACKWARD)")  # fmt: skip
    ap.add_argument("--strided", action="store_true",
                    help="only the other ops along a strided axis (STRIDED)")  # fmt: skip
    ap.add_argument("--only", default="", metavar="OP[,OP]",
                    help="only the cases of these ops (e.g. cummax_backward)")  # fmt: skip
    ap.add_argument("--on", type=ast.literal_eval, default=True, help="the switch's first value")
    ap.add_argument("--off", type=ast.literal_eval, default=False, help="its second value")
    ap.add_argument("--drop", default="", metavar="OP:SIZE[,OP:SIZE]",
                    help="a table switch: on its default, off without these")  # fmt: skip
    ap.add_argument("--shapes", default="", metavar="AxB[,AxB]",
                    help="the cases' ops over these shapes along dim 0 instead")  # fmt: skip
    ap.add_argument("--dtypes", default="f32,bf16", metavar="DT[,DT]",
                    help=f"the dtypes timed, of {', '.join(DTYPES)} (default f32,bf16)")
    a = ap.parse_args()
    unknown = [d for d in a.dtypes.split(",") if d not in DTYPES]
    if unknown:
        raise SystemExit(f"--dtypes: {unknown} are not of {', '.join(DTYPES)}")
    default = getattr(_kernels, a.switch)
    if a.drop:
        a.on, a.off = default, _drop(default, a.drop)
    if isinstance(default, bool) != isinstance(a.on, bool) or type(a.on) is not type(a.off):
        raise SystemExit(f"{a.switch} = {default!r}: give --on and --off of its type")
    setting = {True: a.on, False: a.off}
    dev = torch.cuda.get_device_name()
    bw = copy_bandwidth()
    print(f"{dev}: copy bandwidth {bw / 1e9:.0f} GB/s; {a.switch} {a.on!r} (on) vs "
          f"{a.off!r} (off), "
          f"{a.rounds} alternating rounds (µs, median of each)")  # fmt: skip
    s = bc.Stream.wrap(torch.cuda.current_stream())
    rows: list[dict[str, Any]] = []
    try:
        for dt, el in (DTYPES[d] for d in a.dtypes.split(",")):
            cases = (EXTREMA_BACKWARD if a.extrema_backward else BACKWARD if a.backward
                     else STRIDED if a.strided else CASES + (MORE if a.more else []))  # fmt: skip
            if a.only:
                cases = [c for c in cases if c[0] in a.only.split(",")]
            if a.shapes:
                shapes = [tuple(int(d) for d in s.split("x")) for s in a.shapes.split(",")]
                ops = list(dict.fromkeys(c[0] for c in cases))
                cases = [(op, shape, 0) for op in ops for shape in shapes]
            for op, shape, axis in cases:
                x = torch.randn(shape, device="cuda", dtype=dt)
                # a backward's dy and saved y: tensors of their own (one tensor read as two
                # operands would be read from memory once)
                dy = torch.randn(shape, device="cuda", dtype=dt)
                saved_y = torch.randn(shape, device="cuda", dtype=dt).abs_().add_(1)
                y = {v: torch.full_like(x, float("nan")) for v in (True, False)}
                idx = {v: torch.empty(shape, device="cuda", dtype=torch.int64)
                       for v in (True, False)}  # fmt: skip
                times: dict[bool, list[float]] = {True: [], False: []}
                run = {}
                for v in (True, False):
                    setattr(_kernels, a.switch, setting[v])
                    run[v] = _plan(op, shape, axis, el, s, x, y[v], idx[v], dy, saved_y)
                for _ in range(a.rounds):
                    for v in (True, False):
                        setattr(_kernels, a.switch, setting[v])
                        times[v].append(time_us(run[v]))
                torch_us = time_us(_torch(op, axis, x, dy)) if a.torch else None
                same = exact = torch.equal(y[True], y[False])
                if not same and a.rounding:
                    on64, off64 = y[True].double(), y[False].double()
                    scale = float(off64.abs().max()) or 1.0
                    diff = float((on64 - off64).abs().max()) / scale
                    same = diff <= ROUNDING.get(dt, 1e-2)
                rec = {"device": dev, "op": op, "shape": list(shape), "axis": axis,
                       "dtype": el.value, "on_us": times[True], "off_us": times[False],
                       "outputs_equal": same, "bitwise_equal": exact,
                       "torch_us": torch_us}  # fmt: skip
                rows.append(rec)
                on = " ".join(f"{t:7.1f}" for t in times[True])
                off = " ".join(f"{t:7.1f}" for t in times[False])
                verdict = "equal" if exact else "close" if same else "OUTPUTS DIFFER"
                peer = f"   torch {torch_us:7.1f}" if torch_us is not None else ""
                print(f"{el.value:<4} {op:<16} {shape!s:<14} ax{axis}  on {on}   off {off}"
                      f"{peer}   {verdict}", flush=True)  # fmt: skip
    finally:
        setattr(_kernels, a.switch, default)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": dev, "copy_bw": bw, "switch": a.switch, "on": repr(a.on),
                       "off": repr(a.off), "rows": rows}, f, indent=1)  # fmt: skip
    if not all(r["outputs_equal"] for r in rows):
        raise SystemExit("the two settings gave different outputs")


if __name__ == "__main__":
    main()
