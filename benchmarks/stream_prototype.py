"""The stream kernel's standalone prototype against the package, on few long rows: cumsum
over (2, 2^23) and (1, 2^21) in f32 and bf16, timed with the bench's method (``time_us``: L2
flushed, median) in one process: a copy of the same bytes (``copy_``), the package's
cooperative kernel (``STREAM_ROWS`` off) and stream kernel (on, for both itemsizes) through
``plan.run`` with its workspace made once, and the prototype (``stream_prototype.cu``,
launched through CuPy: 32 KiB tiles, 3 stages, 2 blocks an SM, 8 scanning warps), whose
output is checked against float64 and for bit-equal reruns before it is timed, and against
float64 again after. Prints a table, writes JSON.

    python benchmarks/stream_prototype.py [out.json]        (on an sm_90 GPU, with CuPy)
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import cupy as cp
import numpy as np
import torch

import baracuda as bc
from baracuda._bench import time_us
from baracuda.scan import ScanArgs, ScanDescriptor, ScanPlan
from baracuda.scan import _kernels as K
from baracuda.types import ElementKind, ScanKind

with open(os.path.join(os.path.dirname(__file__), "stream_prototype.cu")) as _f:
    SRC = _f.read()
TILE, STAGES, WAVE, WARPS = 32768, 3, 256, 8


def prototype(x: Any, y: Any, elt: str) -> Any:
    """A launcher of the prototype over the rows of ``x`` into ``y`` (each launch a new
    epoch, so its workspace is zeroed once)."""
    opts = ("-std=c++17", "-arch=sm_90", f"-DELT={elt}", f"-DTILE_BYTES={TILE}",
            f"-DSTAGES={STAGES}", f"-DWAVE={WAVE}", f"-DNT={32 * WARPS}", "-DEVICT_FIRST=1")
    kernel = cp.RawKernel(SRC, "lbscan", options=opts)
    kernel.max_dynamic_shared_size_bytes = STAGES * TILE
    rows, n = x.shape
    tpr = n * x.element_size() // TILE
    assert tpr * TILE == n * x.element_size(), "rows of whole tiles"
    ntiles, waves = rows * tpr, -(-tpr // WAVE)
    grid = 2 * torch.cuda.get_device_properties(0).multi_processor_count
    ws = torch.zeros(ntiles + rows * waves + 2, dtype=torch.int64, device="cuda")
    agg = ws.data_ptr()
    wave_pre, counter = agg + 8 * ntiles, agg + 8 * (ntiles + rows * waves)
    epoch = [0]

    def run() -> None:
        epoch[0] += 1
        base = ((epoch[0] - 1) * (ntiles + grid)) & 0xFFFFFFFF  # one failed claim a block
        kernel((grid,), (32 * WARPS + 64,),
               (np.uint64(x.data_ptr()), np.uint64(y.data_ptr()), np.int64(n), np.int32(tpr),
                np.int32(ntiles), np.uint64(agg), np.uint64(wave_pre), np.uint64(counter),
                np.uint32(epoch[0]), np.uint32(base)), shared_mem=STAGES * TILE)

    def claims_in_step() -> bool:
        """Whether the tile counter holds every launch's claims so far (one a tile and one
        failed claim a block each): each launch's claim base was right."""
        torch.cuda.synchronize()
        return int(ws[-2].item()) & 0xFFFFFFFF == (epoch[0] * (ntiles + grid)) & 0xFFFFFFFF

    run.claims_in_step = claims_in_step  # type: ignore[attr-defined]
    return run


def main() -> None:
    dev = torch.cuda.get_device_name()
    s = bc.Stream.wrap(torch.cuda.current_stream())
    rows: list[dict[str, Any]] = []
    print(f"{dev}: cumsum, µs (time_us)")
    print(f"{'shape':>12} {'dtype':>5} {'copy_':>7} {'coop':>7} {'stream':>7} {'proto':>7}"
          f" {'proto rel. err':>14} {'reruns equal':>12}")
    with cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
        for dt, el, elt in ((torch.float32, ElementKind.F32, "float"),
                            (torch.bfloat16, ElementKind.BF16, "unsigned short")):
            for shape in ((2, 2**23), (1, 2**21)):
                x = torch.randn(*shape, device="cuda", dtype=dt)
                y = torch.empty_like(x)
                plan = ScanPlan.select(s, ScanDescriptor(ScanKind.CUMSUM, shape, 1, el))
                ws = bc.Workspace.allocate(plan.workspace_size(), s)
                args = ScanArgs(x, y)
                r: dict[str, Any] = {"device": dev, "shape": shape, "dtype": el.value}
                r["copy_"] = time_us(lambda: y.copy_(x))
                switches = K.STREAM_ROWS, K.STREAM_ITEMSIZES
                K.STREAM_ITEMSIZES = (2, 4)
                for name, on in (("coop", False), ("stream", True)):
                    K.STREAM_ROWS = on
                    r[name] = time_us(lambda: plan.run(s, ws, args))
                K.STREAM_ROWS, K.STREAM_ITEMSIZES = switches
                run = prototype(x, y, elt)
                ref = torch.cumsum(x.double(), 1)
                scale = ref.abs().amax(1, keepdim=True)

                def rel_err() -> float:
                    y.fill_(float("nan"))
                    run()
                    return float(((y.double() - ref).abs() / scale).amax())

                r["proto_rel_err"] = rel_err()
                r["proto_claims_ok_before"] = run.claims_in_step()  # type: ignore[attr-defined]
                first = y.clone()
                run()
                r["proto_reruns_equal"] = bool(torch.equal(first, y))
                r["proto"] = time_us(run)
                r["proto_claims_ok_after"] = run.claims_in_step()  # type: ignore[attr-defined]
                r["proto_rel_err_after"] = rel_err()  # the timed launches left it working
                rows.append(r)
                print(f"{'x'.join(map(str, shape)):>12} {el.value:>5} {r['copy_']:7.1f}"
                      f" {r['coop']:7.1f} {r['stream']:7.1f} {r['proto']:7.1f}"
                      f" {max(r['proto_rel_err'], r['proto_rel_err_after']):14.2e}"
                      f" {r['proto_reruns_equal']!s:>12}"
                      f" claims {r['proto_claims_ok_before']}/{r['proto_claims_ok_after']}")
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
