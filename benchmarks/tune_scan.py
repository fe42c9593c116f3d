"""Tune the scan layout heuristic: warp-per-row (rows1) vs block-per-row (rows8) on long
rows, per WARP_ROWS_PER_SM setting, beside torch eager and torch.compile.

    python benchmarks/tune_scan.py        (on a GPU; prints a table)
"""

from __future__ import annotations

import torch

import baracuda as bc
from baracuda._bench import time_device
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


def main() -> None:
    print(torch.cuda.get_device_name())
    s = bc.Stream.wrap(torch.cuda.current_stream())
    shape = (4096, 8192)
    for dt, el in ((torch.float32, bc.ElementKind.F32), (torch.bfloat16, bc.ElementKind.BF16)):
        x = torch.randn(shape, device="cuda", dtype=dt)
        y = torch.empty_like(x)
        dx = torch.empty_like(x)
        idx = torch.empty(shape, device="cuda", dtype=torch.int64)
        torch._dynamo.reset()
        comp = torch.compile(lambda t: torch.cumsum(t, 1))
        t_c = time_device(lambda: comp(x))["ms"] * 1e3
        t_e = time_device(lambda: torch.cumsum(x, 1))["ms"] * 1e3
        print(f"{el.value} cumsum torch {t_e:.1f} us, torch.compile {t_c:.1f} us")
        for setting in (16, 1 << 30):
            _kernels.WARP_ROWS_PER_SM = setting
            row = []
            for kind in ScanKind:
                plan = ScanPlan.select(s, ScanDescriptor(kind, shape, 1, el))
                ws = bc.Workspace.allocate(plan.workspace_size(), s)
                ix = idx if kind in (ScanKind.CUMMAX, ScanKind.CUMMIN) else None
                a = ScanArgs(x, y, ix)
                t = time_device(lambda p=plan, w=ws, a=a: p.run(s, w, a))["ms"] * 1e3
                row.append(f"{kind.value} {t:6.1f}")
            bplan = ScanBackwardPlan.select(
                s, ScanBackwardDescriptor(ScanKind.CUMSUM, shape, 1, el)
            )
            bws = bc.Workspace.allocate(bplan.workspace_size(), s)
            ba = ScanBackwardArgs(x, dx, None, None)
            row.append(f"cumsum_bwd {time_device(lambda: bplan.run(s, bws, ba))['ms'] * 1e3:6.1f}")
            print(f"{el.value} WARP_ROWS_PER_SM={setting:>10}: " + "  ".join(row))


if __name__ == "__main__":
    main()
