"""logcumsumexp over the shapes of its kernels, on data that takes a lane's two ways (scan.cu,
``LseOp::lane_outputs``): a lane's outputs from the sums of its exps (one log an output), or pushed
one by one where a lane's values rise far above what came before them.
Times ``baracuda.logcumsumexp`` (the bench's method, ``time_us``: L2 flushed, median) with a
same-bytes ``copy_`` in the same process, names the kernels each case launches, and checks
the outputs against ``torch.logcumsumexp`` in float64 (the largest error of ``max(1, |ref|)``
over finite references, and whether NaN and the infinities land where the reference's do).
Run it once a tree to compare trees. Prints a table, writes JSON.

    python benchmarks/lse_lanes.py [out.json] [--data randn big ramp special neginf]
                                   [--match "bf16 (4096, 8192) 0" ...]

Data (along the scan's axis): ``randn`` standard normal; ``big`` normal x 100; ``ramp``
rising 8 a position (every lane of a 2-byte type pushes); ``special`` x 30 with -inf (5 %),
+inf and NaN sprinkled; ``neginf`` the first third of each line -inf. Only ``randn``,
``big`` and ``ramp`` are timed.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import torch
from _scan_bench import kernel_kind, launched, lse_check, lse_data

import baracuda as bc
from baracuda._bench import copy_bandwidth, time_us

# (dtype, shape, axis, reverse): the pipelined rows (pipe1, also a chunk a warp over (2, 2^23)),
# rows1, rows8, strips, the look-back column tiles (lbcols, lbstage) and the three passes
# along dim 0 (cols, f64)
CASES: list[tuple[str, tuple[int, ...], int, bool]] = [
    ("f32", (4096, 8192), 1, False),
    ("bf16", (4096, 8192), 1, False),
    ("f16", (4096, 8192), 1, False),
    ("bf16", (4096, 8192), 1, True),
    ("f32", (4096, 8192), 1, True),
    ("bf16", (3000, 1029), 1, False),
    ("f32", (3000, 1029), 1, False),
    ("bf16", (2, 2**23), 1, False),
    ("f32", (2, 2**23), 1, False),
    ("bf16", (1024, 65536), 1, False),
    ("f32", (65536, 512), 1, False),
    ("f64", (4096, 4096), 1, False),
    ("bf16", (4096, 8192), 0, False),
    ("bf16", (4096, 8192), 0, True),
    ("f16", (4096, 8192), 0, False),
    ("f32", (4096, 8192), 0, False),
    ("f64", (4096, 4096), 0, False),
    ("f64", (3000, 1029), 1, False),
    ("f32", (8, 1_000_003), 1, False),
    ("bf16", (8, 1_000_003), 1, False),
    ("f32", (70_000, 300), 0, False),
    ("bf16", (70_000, 300), 0, False),
    ("bf16", (262_144, 32), 0, False),
    ("f32", (1_000_000, 5), 0, False),
]
TIMED = ("randn", "big", "ramp")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", nargs="?", default="lse_lanes.json")
    ap.add_argument("--data", nargs="+", default=["randn", "big", "ramp", "special", "neginf"])
    ap.add_argument("--match", nargs="+", default=[""],
                    help="only the cases whose 'dtype shape axis' holds one of these")
    a = ap.parse_args()
    bw = copy_bandwidth()
    dev = torch.cuda.get_device_name()
    names = launched()
    g = torch.Generator(device="cuda").manual_seed(0)
    rows: list[dict[str, Any]] = []
    print(f"{dev}, copy bandwidth {bw / 1e9:.0f} GB/s")
    print(f"{'dtype':<5} {'shape':<14} {'axis':<5} {'data':<8} {'us':>8} {'copy_ us':>9} "
          f"{'err':>8}  nonfinite  kernels")  # fmt: skip
    for dt, shape, axis, rev in CASES:
        if not any(m in f"{dt} {shape} {axis}" for m in a.match):
            continue
        for kind in a.data:
            x = lse_data(kind, shape, axis, dt, g)
            names.clear()
            y = bc.logcumsumexp(x, axis, rev)
            torch.cuda.synchronize()
            kern = ",".join(sorted({kernel_kind(n) for n in names}))
            err, same = lse_check(x, y, axis, rev)
            r: dict[str, Any] = {"device": dev, "copy_bandwidth_GBps": bw / 1e9, "dtype": dt,
                                 "shape": list(shape), "axis": axis, "reverse": rev,
                                 "data": kind, "err": err, "nonfinite_match": same,
                                 "kernels": kern}  # fmt: skip
            if kind in TIMED:
                r["us"] = time_us(lambda: bc.logcumsumexp(x, axis, rev))
                o = torch.empty_like(x)
                r["copy_us"] = time_us(lambda: o.copy_(x))
            rows.append(r)
            print(f"{dt:<5} {shape!s:<14} {axis}{'r' if rev else ' ':<4} {kind:<8} "
                  f"{r.get('us', float('nan')):8.2f} {r.get('copy_us', float('nan')):9.2f} "
                  f"{err:8.1e}  {'same' if same else 'DIFFER':<9}  {kern}", flush=True)  # fmt: skip
    with open(a.out, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
