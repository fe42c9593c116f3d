"""Cumsum over long contiguous rows: the stream kernel (one pass, ``scan_sum_stream``)
against the cooperative kernel (one round, or in rounds where the line is longer than what
its blocks keep), both directions, f32, f16 and bf16, with a copy of the same bytes
(``copy_``) and ``torch.cumsum`` in the same run. Each launch goes through ``plan.run`` with
its workspace made once, its output checked against float64 first, then timed with the
bench's method (``time_us``: L2 flushed, median). The kernel each one launched is read from
the profiler. Prints a table, writes JSON.

    python benchmarks/long_rows.py [out.json]        (on an sm_90 GPU)
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile

import baracuda as bc
from baracuda._bench import time_us
from baracuda.scan import ScanArgs, ScanDescriptor, ScanPlan
from baracuda.scan import _kernels as K
from baracuda.types import ElementKind, ScanKind

SHAPES = [(1, 2**26), (2, 2**25), (1, 2**25), (2, 2**24), (2, 2**23)]
ELEMENTS = [(torch.bfloat16, ElementKind.BF16), (torch.float16, ElementKind.F16),
            (torch.float32, ElementKind.F32)]  # fmt: skip
# the switches of each column: (STREAM_ITEMSIZES, STREAM_ROUNDS_ITEMSIZES)
COLUMNS = {"cooperative": ((), ()), "stream": ((2, 4), ())}


def kernel_of(fn: Callable[[], object]) -> str:
    """The name of the (last) kernel ``fn`` launches."""
    with warnings.catch_warnings():  # "Profiler clears events at the end of each cycle"
        warnings.simplefilter("ignore", UserWarning)
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn()
            torch.cuda.synchronize()
        names = [e.key for e in prof.key_averages() if e.key.startswith("baracuda_")]
    return names[-1] if names else "?"


def main() -> None:
    s = bc.Stream.wrap(torch.cuda.current_stream())
    switches = K.STREAM_ITEMSIZES, K.STREAM_ROUNDS_ITEMSIZES
    rows: list[dict[str, Any]] = []
    print(f"card: {torch.cuda.get_device_name()}  (cumsum, µs; f = forward, r = reverse)")
    print(f"{'shape':>12} {'dtype':>5} {'copy_':>7} {'torch':>9} {'coop f':>8} {'coop r':>8}"
          f" {'stream f':>9} {'stream r':>9}  cooperative kernel")
    try:
        for dt, el in ELEMENTS:
            for shape in SHAPES:
                x = torch.randn(*shape, device="cuda", dtype=dt)
                y = torch.empty_like(x)
                x64 = x.double()
                refs = {False: torch.cumsum(x64, 1),
                        True: torch.cumsum(x64.flip(1), 1).flip(1)}  # fmt: skip
                r: dict[str, Any] = {"card": torch.cuda.get_device_name(), "shape": shape,
                                     "dtype": el.value,
                                     "copy_": time_us(lambda: y.copy_(x)),
                                     "torch": time_us(lambda: torch.cumsum(x, 1))}  # fmt: skip
                for col, (items, rounds_items) in COLUMNS.items():
                    K.STREAM_ITEMSIZES, K.STREAM_ROUNDS_ITEMSIZES = items, rounds_items
                    for reverse in (False, True):
                        key = f"{col} {'r' if reverse else 'f'}"
                        desc = ScanDescriptor(ScanKind.CUMSUM, shape, 1, el, reverse)
                        plan = ScanPlan.select(s, desc)
                        ws = bc.Workspace.allocate(plan.workspace_size(), s)
                        args = ScanArgs(x, y)

                        def run(plan: ScanPlan = plan, ws: bc.Workspace = ws,
                                args: ScanArgs = args) -> None:  # fmt: skip
                            plan.run(s, ws, args)

                        y.fill_(float("nan"))
                        run()
                        torch.cuda.synchronize()
                        ref = refs[reverse]
                        err = float(((y.double() - ref).abs() / ref.abs().amax()).amax())
                        tol = 1e-5 if el is ElementKind.F32 else 1e-2
                        if not err <= tol:
                            raise AssertionError(f"{key} {shape} {el.value}: error {err:.2e}")
                        r[key] = time_us(run)
                        r[key + " kernel"] = kernel_of(run)
                        r[key + " rel_err"] = err
                rows.append(r)
                coop = r["cooperative f kernel"].removeprefix("baracuda_scan_sum_")
                print(f"{'x'.join(map(str, shape)):>12} {el.value:>5} {r['copy_']:7.1f}"
                      f" {r['torch']:9.1f} {r['cooperative f']:8.1f} {r['cooperative r']:8.1f}"
                      f" {r['stream f']:9.1f} {r['stream r']:9.1f}  {coop}")
    finally:
        K.STREAM_ITEMSIZES, K.STREAM_ROUNDS_ITEMSIZES = switches
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
