"""logcumsumexp, cummax and the cummax backward along both axes of 4096 x 8192 and along
strided axes of other shapes (the strip kernels), against torch eager (autograd for the
backward) in the same run on one card, with the copy bandwidth measured in it. Prints a table
and writes JSON.

    python benchmarks/scan_axes.py out.json   (on a GPU)

Bytes: ``x`` read and ``y`` written once, cummax with its int64 indices; the backward reads
``dy`` and ``x`` and writes ``dx``.
"""

from __future__ import annotations

import json
import sys

import torch

import baracuda as bc
from baracuda._bench import copy_bandwidth, time_us

CASES: list[tuple[tuple[int, ...], int]] = [
    ((4096, 8192), 0),
    ((4096, 8192), 1),
    ((1024, 8192), 0),
    ((512, 32768), 0),
    ((2, 2**23), 1),
]


def main() -> None:
    bw = copy_bandwidth()
    card = torch.cuda.get_device_name()
    rows: list[dict[str, object]] = []
    g = torch.Generator(device="cuda").manual_seed(0)
    for op in ("logcumsumexp", "cummax", "cummax_backward"):
        for dt in ("float32", "bfloat16"):
            for shape, ax in CASES:
                if op.startswith("cummax") and shape == (2, 2**23):
                    continue
                x = (torch.randn(shape, device="cuda", generator=g) * 4).to(getattr(torch, dt))
                n, size = x.numel(), x.element_size()
                if op == "cummax_backward":
                    dy = torch.randn(shape, device="cuda", generator=g).to(x.dtype)
                    xr = x.clone().requires_grad_(True)
                    out = torch.cummax(xr, ax).values
                    ours = time_us(lambda: bc.scan_backward("cummax", dy, x=x, axis=ax))
                    theirs = time_us(lambda: torch.autograd.grad(out, xr, dy, retain_graph=True))
                    nbytes = 3 * n * size
                else:
                    ours_fn, torch_fn = getattr(bc, op), getattr(torch, op)
                    ours = time_us(lambda: ours_fn(x, axis=ax))
                    theirs = time_us(lambda: torch_fn(x, ax))
                    nbytes = 2 * n * size + (8 * n if op == "cummax" else 0)
                gbs = nbytes / ours / 1e3
                rows.append({"op": op, "dtype": dt, "shape": list(shape), "axis": ax,
                             "us": round(ours, 2), "gbs": round(gbs),
                             "frac": round(gbs * 1e9 / bw, 3), "torch_us": round(theirs, 2),
                             "speedup": round(theirs / ours, 2)})  # fmt: skip
                print(f"{op:15s} {dt:9s} {shape!s:14s} dim {ax}  {ours:8.2f} us {gbs:6.0f} GB/s"
                      f" {100 * gbs * 1e9 / bw:5.1f} %  torch {theirs:9.2f} us"
                      f"  {theirs / ours:6.2f}x", flush=True)  # fmt: skip
    print(card, "copy", round(bw / 1e9), "GB/s")
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            json.dump({"card": card, "copy_bw_GBs": round(bw / 1e9), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
