"""The f32 cumprod's largest relative error over long axes, against torch's float64 cumprod
of the same f32 inputs: baracuda (forward and reverse), torch's f32 cumprod on the GPU, and a
sequential f32 product (NumPy's ``cumprod`` on the CPU). The factors are uniform in
1 ± min(0.3, 3 / sqrt(n)) with random signs, so the product stays within about e^±5 of 1
along the whole axis. Prints a table, writes JSON.

    python benchmarks/cumprod_precision.py [out.json] (on a GPU)

A scan of products that works in tiles (baracuda's kernels, and torch's GPU cumprod) loses
more than a sequential product: in a NumPy model of a tiled scan (tiles of 256 factors of
1 ± 7e-4 with random signs, n = 2^22) each tile's f32 product came out smaller in magnitude
than the exact one by 3.4e-8 on average (0.57 eps), and those drifts add up over the tiles;
the sequential product showed no such drift (docs/benchmarks.md, round 59).
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

import numpy as np
import torch

import baracuda as bc

# (rows, n, axis): rows along dim 1, and three long columns along dim 0
CASES = [(1, 2**16, 1), (3, 2**16, 1), (1, 2**20, 1), (3, 2**20, 1), (1, 2**22, 1),
         (3, 2**22, 1), (1, 2**24 + 5, 1), (3, 2**24 + 5, 1), (1, 5_000_011, 1),
         (3, 5_000_011, 1), (3, 2**22 + 1, 0)]  # fmt: skip


def _rel(y: Any, ref: Any) -> float:
    return float(((y.double() - ref).abs() / ref.abs().clamp_min(1e-30)).max())


def main() -> None:
    rows_out: list[dict[str, Any]] = []
    print(f"f32 cumprod, largest relative error against float64, {torch.cuda.get_device_name()}")
    print("| shape | axis | baracuda | baracuda reverse | torch (GPU) | sequential f32 | "
          "sqrt(n) eps |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |")  # fmt: skip
    for rows, n, axis in CASES:
        rng = np.random.default_rng(n + rows)
        a = min(0.3, 3 / math.sqrt(n))
        shape = (rows, n) if axis == 1 else (n, rows)
        v = rng.uniform(1 - a, 1 + a, size=shape) * rng.choice([-1, 1], size=shape)
        x = torch.from_numpy(v).cuda().float()
        x64 = x.double()
        ref = torch.cumprod(x64, axis)
        refr = torch.cumprod(x64.flip(axis), axis).flip(axis)
        row = {
            "shape": list(shape),
            "axis": axis,
            "baracuda": _rel(bc.cumprod(x, axis), ref),
            "baracuda_reverse": _rel(bc.cumprod(x, axis, True), refr),
            "torch": _rel(torch.cumprod(x, axis), ref),
            "sequential_f32": _rel(torch.from_numpy(np.cumprod(x.cpu().numpy(), axis)), ref.cpu()),
            "sqrt_n_eps": math.sqrt(n) * 2.0**-24,
        }
        rows_out.append(row)
        print(f"| {rows}x{n} | {axis} | {row['baracuda']:.2e} | {row['baracuda_reverse']:.2e} | "
              f"{row['torch']:.2e} | {row['sequential_f32']:.2e} | {row['sqrt_n_eps']:.1e} |",
              flush=True)  # fmt: skip
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            json.dump({"card": torch.cuda.get_device_name(), "rows": rows_out}, f, indent=1)


if __name__ == "__main__":
    main()
