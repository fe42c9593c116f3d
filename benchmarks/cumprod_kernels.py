"""The f32 cumprod over the shapes where its kernels keep double states in registers across a
wait: few long rows (the stream kernel, over rows and over interleaved lines), strided axes
(look-back column tiles: ``lbcols``, ``lbstage``), and the row tiles for reference (``rows1``,
``strip``). Factors 1 + 10^-4 N(0, 1); each case's time with the bench's method (``time_us``:
L2 flushed, median), its largest error against torch's float64 cumprod of the same inputs
(relative, over max(1, |ref|)), and the kernels it launched. Round 62 timed these cases on two
trees (docs/benchmarks.md): run it on each, each with its own kernel cache:

    BARACUDA_CACHE_DIR=/tmp/c-main PYTHONPATH=main/src python benchmarks/cumprod_kernels.py m.json
    BARACUDA_CACHE_DIR=/tmp/c-new PYTHONPATH=src python benchmarks/cumprod_kernels.py n.json
                                                                        (on a GPU)
"""

from __future__ import annotations

import argparse
import json

import torch
from _scan_bench import launched

import baracuda as bc
from baracuda._bench import time_us

# (shape, axis, reverse)
CASES: list[tuple[tuple[int, ...], int, bool]] = [
    ((2, 2**23), 1, False),
    ((1, 2**26), 1, False),
    ((1, 2**26), 1, True),
    ((3, 2**22), 1, False),
    ((2**21, 4), 0, False),
    ((70000, 300), 0, False),
    ((70000, 300), 0, True),
    ((3000, 1029), 1, False),
    ((4096, 8192), 0, False),
    ((2**23 // 16, 16), 0, False),
    ((2**23 // 32, 32), 0, False),
    ((2**23 // 64, 64), 0, False),
    ((2**23 // 1024, 1024), 0, False),
    ((2**18, 33), 0, False),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out", nargs="?", default="cumprod_kernels.json")
    args = ap.parse_args()
    torch.manual_seed(0)
    card = torch.cuda.get_device_name()
    print(f"card: {card}")
    print(f"{'shape':>16} {'axis':>4} {'rev':>3} {'us':>8} {'err':>9}  kernels")
    names = launched()
    rows: list[dict[str, object]] = []
    for shape, axis, rev in CASES:
        x = 1 + 1e-4 * torch.randn(*shape, device="cuda")
        names.clear()
        y = bc.cumprod(x, axis=axis, reverse=rev)
        kernels = list(names)
        xd = x.double().flip(axis) if rev else x.double()
        ref = torch.cumprod(xd, axis)
        ref = ref.flip(axis) if rev else ref
        err = ((y.double() - ref).abs() / ref.abs().clamp(min=1)).max().item()
        t = time_us(lambda: bc.cumprod(x, axis=axis, reverse=rev))
        print(f"{shape!s:>16} {axis:>4} {int(rev):>3} {t:8.1f} {err:9.2e}  {' '.join(kernels)}",
              flush=True)  # fmt: skip
        rows.append({"shape": list(shape), "axis": axis, "reverse": rev, "us": round(t, 2),
                     "err": err, "kernels": kernels})  # fmt: skip
    with open(args.out, "w") as f:
        json.dump({"card": card, "op": "cumprod", "dtype": "float32", "rows": rows}, f, indent=1)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
