"""logcumsumexp over contiguous rows too few for a warp a row at the other ops' count
(WARP_ROWS_PER_SM, 16 rows an SM): a block a row (rows8) against a warp a row (pipe1), by
the settings of ``WARP_ROWS_PER_SM_OP`` for logcumsumexp, alternating ``--rounds`` times in
one process on one card with the bench's method (``time_us``: L2 flushed, median; the best
round kept), with a same-bytes ``copy_``. Each setting's outputs are checked against
``torch.logcumsumexp`` in float64 (``_scan_bench.lse_check``: the largest error of
``max(1, |ref|)``). Prints a table,
writes JSON.

    python benchmarks/lse_warp_rows.py [out.json] [--rounds 2]   (on a GPU)

Settings: ``block`` (16 rows an SM for every type: a block a row below), ``default`` (the
package's), ``warp4`` (4 rows an SM for every type).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import torch
from _scan_bench import DTYPES, kernel_kind, launched, lse_check

import baracuda as bc
from baracuda._bench import time_us
from baracuda.scan import _kernels as K

# (dtype, rows, n, reverse)
CASES: list[tuple[str, int, int, bool]] = [
    ("bf16", 1024, 65536, False),
    ("f16", 1024, 65536, False),
    ("f32", 1024, 65536, False),
    ("f32", 1024, 65536, True),
    ("bf16", 800, 32768, False),
    ("f32", 800, 32768, False),
    ("bf16", 600, 32768, False),
    ("f32", 600, 32768, False),
    ("bf16", 2000, 16384, False),
    ("f32", 2000, 16384, True),
    ("bf16", 1500, 4096, False),
    ("f32", 1500, 2048, False),
    ("bf16", 792, 1024, False),
    ("f32", 1200, 100000, False),
    ("bf16", 300, 65536, False),
    ("f64", 1024, 32768, False),
    ("f64", 2000, 8192, False),
    ("f64", 800, 16384, False),
]


def settings() -> dict[str, dict[Any, int]]:
    default = dict(K.WARP_ROWS_PER_SM_OP)
    rest = {k: v for k, v in default.items() if not (k == "lse" or (isinstance(k, tuple)
                                                                   and k[0] == "lse"))}  # fmt: skip
    return {"block": {**rest, "lse": 16}, "default": default, "warp4": {**rest, "lse": 4}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", nargs="?", default="lse_warp_rows.json")
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    dev = torch.cuda.get_device_name()
    sets = settings()
    default = K.WARP_ROWS_PER_SM_OP
    names = launched()
    g = torch.Generator(device="cuda").manual_seed(0)
    rows: list[dict[str, Any]] = []
    print(dev)
    print(f"{'dtype':<5} {'shape':<14} {'copy_':>7}  "
          + "  ".join(f"{s:>7} {'kernel':<14} {'err':>7}" for s in sets))  # fmt: skip
    try:
        for dt, m, n, rev in CASES:
            x = torch.randn((m, n), device="cuda", generator=g).to(DTYPES[dt])
            o = torch.empty_like(x)
            rec: dict[str, Any] = {"device": dev, "dtype": dt, "shape": [m, n], "reverse": rev,
                                   "copy_us": time_us(lambda: o.copy_(x))}  # fmt: skip
            for _ in range(a.rounds):
                for s, table in sets.items():
                    K.WARP_ROWS_PER_SM_OP = table
                    names.clear()
                    y = bc.logcumsumexp(x, 1, rev)
                    torch.cuda.synchronize()
                    if names:  # the first call of a setting dispatches; later ones replay
                        rec[f"{s}_kernel"] = ",".join(sorted({kernel_kind(q) for q in names}))
                    err, _ = lse_check(x, y, 1, rev)
                    rec[f"{s}_err"] = max(err, rec.get(f"{s}_err", 0.0))
                    t = time_us(lambda: bc.logcumsumexp(x, 1, rev))
                    rec[f"{s}_us"] = min(t, rec.get(f"{s}_us", float("inf")))
            rows.append(rec)
            print(f"{dt:<5} {f'{m}x{n}' + ('r' if rev else ''):<14} {rec['copy_us']:7.2f}  "
                  + "  ".join(f"{rec[s + '_us']:7.2f} {rec.get(s + '_kernel', '?'):<14} "
                              f"{rec[s + '_err']:7.1e}" for s in sets), flush=True)  # fmt: skip
    finally:
        K.WARP_ROWS_PER_SM_OP = default
    with open(a.out, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
