"""Tune the scan layouts on the issue's four cumsum shapes (plus cummax and the cumsum
backward): one-pass look-back tiles (``LOOKBACK``, ``LOOKBACK_ROWS``, ``LOOKBACK_FLAGGED``
on) vs the three-pass chunked scan, beside torch eager, torch.compile and a copy of the same bytes.
Prints a table, writes JSON.

    python benchmarks/tune_scan.py [out.json]        (on a GPU)
"""

from __future__ import annotations

import json
import sys
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
from baracuda.types import ScanKind

SHAPES = [((4096, 8192), 1), ((4096, 8192), 0), ((2, 2**23), 1), ((2**20, 2), 0)]
SETTINGS = {
    "lookback": {"LOOKBACK": True, "LOOKBACK_ROWS": True, "LOOKBACK_FLAGGED": True},
    "3-pass": {"LOOKBACK": False, "LOOKBACK_ROWS": False, "LOOKBACK_FLAGGED": False},
}
DEFAULTS = {k: getattr(_kernels, k) for k in ("LOOKBACK", "LOOKBACK_ROWS", "LOOKBACK_FLAGGED")}



def main() -> None:
    dev = torch.cuda.get_device_name()
    bw = copy_bandwidth()
    print(f"{dev}: copy bandwidth {bw / 1e9:.0f} GB/s")
    s = bc.Stream.wrap(torch.cuda.current_stream())
    rows: list[dict[str, Any]] = []
    for dt, el in ((torch.float32, bc.ElementKind.F32), (torch.bfloat16, bc.ElementKind.BF16)):
        for shape, axis in SHAPES:
            for kind in (ScanKind.CUMSUM, ScanKind.CUMMAX, "cumsum_backward"):
                if kind != ScanKind.CUMSUM and shape != (4096, 8192):
                    continue
                x = torch.randn(shape, device="cuda", dtype=dt)
                y = torch.empty_like(x)
                idx = torch.empty(shape, device="cuda", dtype=torch.int64)
                if kind == "cumsum_backward":
                    name, nbytes = kind, 2 * x.numel() * x.element_size()
                    xg = x.clone().requires_grad_(True)
                    out = torch.cumsum(xg, axis)
                    peers = {"torch": lambda o=out: torch.autograd.grad(o, xg, x,
                                                                        retain_graph=True)}
                else:
                    name = kind.value
                    nbytes = 2 * x.numel() * x.element_size()
                    fn = getattr(torch, name)
                    torch._dynamo.reset()
                    comp = torch.compile(lambda t, f=fn: f(t, axis))
                    peers = {"torch": lambda f=fn: f(x, axis), "torch.compile": lambda: comp(x)}
                rec: dict[str, Any] = {"device": dev, "op": name, "shape": list(shape),
                                       "axis": axis, "dtype": el.value}  # fmt: skip
                for label, fn2 in peers.items():
                    rec[label] = time_us(fn2)
                # a copy of the same bytes: the bandwidth reachable at this size
                rec["copy"] = time_us(lambda: y.copy_(x))
                for label, setting in SETTINGS.items():
                    for k, v in setting.items():
                        setattr(_kernels, k, v)
                    if kind == "cumsum_backward":
                        plan: Any = ScanBackwardPlan.select(
                            s, ScanBackwardDescriptor(ScanKind.CUMSUM, shape, axis, el))
                        args: Any = ScanBackwardArgs(x, y, None, None)
                    else:
                        plan = ScanPlan.select(s, ScanDescriptor(kind, shape, axis, el))
                        args = ScanArgs(x, y, idx if kind is ScanKind.CUMMAX else None)
                    ws = bc.Workspace.allocate(plan.workspace_size(), s)
                    rec[label] = time_us(lambda p=plan, w=ws, a=args: p.run(s, w, a))
                for k, v in DEFAULTS.items():
                    setattr(_kernels, k, v)
                best = min(rec[k] for k in SETTINGS)
                rec["bw_frac"] = nbytes / (best * 1e-6) / bw
                rec["copy_frac"] = rec["copy"] / best
                rows.append(rec)
                cols = "  ".join(f"{k} {rec[k]:8.1f}" for k in ("copy", *peers, *SETTINGS))
                print(f"{el.value:<4} {name:<16} {tuple(shape)!s:<14} ax{axis}  {cols}  "
                      f"best {rec['bw_frac'] * 100:5.1f}% of copy bw, "
                      f"{rec['copy_frac'] * 100:5.1f}% of a same-size copy")  # fmt: skip
                sys.stdout.flush()
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            json.dump({"device": dev, "copy_bw": bw, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
