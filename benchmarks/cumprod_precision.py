"""The cumprod's largest relative error over long axes, against torch's float64 cumprod of the
same rounded inputs: baracuda (forward and reverse), torch's cumprod in the same dtype on the
GPU, a sequential f32 product (NumPy's ``cumprod`` on the CPU, f32 only) and the float64
result rounded to the dtype (the best any kernel can return). The factors are uniform in
1 ± min(0.3, 3 / sqrt(n)) with random signs in f32, so the product stays within about e^±5
of 1 along the whole axis; f16 and bf16 (whose rounding would push such factors to exactly 1,
or drift the product out of range) take pairs of factors that nearly cancel, each exact in
the dtype: u rounded from 1 + U(0, max(min(0.3, 3 / sqrt(n)), 8 eps)), and 1 / u rounded up or
down at random in proportion (so that the pair's product is 1 on average), in random order,
with random signs. Prints a table, writes JSON.

    python benchmarks/cumprod_precision.py [out.json] [--dtypes float32,bfloat16,float16]
        (on a GPU)

A scan of products that works in tiles loses more than a sequential product when it
multiplies in f32: in a NumPy model of a tiled scan (tiles of 256 factors of 1 ± 7e-4 with
random signs, n = 2^22) each tile's f32 product came out smaller in magnitude than the exact
one by 3.4e-8 on average (0.57 eps), and those drifts add up over the tiles; the sequential
product showed no such drift (docs/benchmarks.md, round 59). baracuda's f32 cumprod
accumulates in double; f16 and bf16 accumulate in f32 (round 60).
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

import numpy as np
import torch

import baracuda as bc

# (rows, n, axis): rows along dim 1, and three long columns along dim 0
CASES = [(1, 2**16, 1), (3, 2**16, 1), (1, 2**20, 1), (3, 2**20, 1), (1, 2**22, 1),
         (3, 2**22, 1), (1, 2**24 + 5, 1), (3, 2**24 + 5, 1), (1, 5_000_011, 1),
         (3, 5_000_011, 1), (3, 2**22 + 1, 0)]  # fmt: skip
EPS = {torch.float32: 2.0**-23, torch.bfloat16: 2.0**-7, torch.float16: 2.0**-10}  # in [1, 2)


def _two_byte(rng: np.random.Generator, dt: torch.dtype, n: int) -> Any:
    """A line of ``n`` factors exact in the 2-byte ``dt`` whose product stays near 1."""
    below = EPS[dt] / 2  # the spacing in [0.5, 1)
    m = -(-n // 2)
    a = max(min(0.3, 3 / math.sqrt(n)), 8 * EPS[dt])
    u = torch.from_numpy(1 + rng.uniform(0, a, m)).to(dt).double().numpy()
    lo = np.floor(1 / u / below) * below
    low = np.where(rng.uniform(size=m) < (1 / u - lo) / below, lo + below, lo)
    swap = rng.integers(0, 2, m).astype(bool)
    pairs = np.stack([np.where(swap, low, u), np.where(swap, u, low)], 1).reshape(-1)[:n]
    return pairs * rng.choice([-1.0, 1.0], size=n)


def _rel(y: Any, ref: Any) -> float:
    return float(((y.double() - ref).abs() / ref.abs().clamp_min(1e-30)).max())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", nargs="?")
    ap.add_argument("--dtypes", default="float32,bfloat16,float16")
    args = ap.parse_args()
    card = torch.cuda.get_device_name()
    rows_out: list[dict[str, Any]] = []
    print(f"cumprod, largest relative error against float64, {card}")
    print("| dtype | shape | axis | baracuda | baracuda reverse | torch (GPU) | sequential f32 | "
          "float64 rounded | sqrt(n) eps |\n"
          "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")  # fmt: skip
    for dt in (getattr(torch, d) for d in args.dtypes.split(",")):
        name = str(dt).removeprefix("torch.")
        for rows, n, axis in CASES:
            rng = np.random.default_rng(n + rows)
            a = min(0.3, 3 / math.sqrt(n))
            shape = (rows, n) if axis == 1 else (n, rows)
            if dt == torch.float32:
                v = rng.uniform(1 - a, 1 + a, size=shape) * rng.choice([-1, 1], size=shape)
            else:
                v = np.stack([_two_byte(rng, dt, n) for _ in range(rows)], 1 - axis)
            x = torch.from_numpy(v).cuda().to(dt)
            x64 = x.double()
            ref = torch.cumprod(x64, axis)
            refr = torch.cumprod(x64.flip(axis), axis).flip(axis)
            seq = (_rel(torch.from_numpy(np.cumprod(x.cpu().numpy(), axis)), ref.cpu())
                   if dt == torch.float32 else None)  # fmt: skip
            row = {
                "dtype": name,
                "shape": list(shape),
                "axis": axis,
                "baracuda": _rel(bc.cumprod(x, axis), ref),
                "baracuda_reverse": _rel(bc.cumprod(x, axis, True), refr),
                "torch": _rel(torch.cumprod(x, axis), ref),
                "sequential_f32": seq,
                "rounded": _rel(ref.to(dt), ref),
                "sqrt_n_eps": math.sqrt(n) * EPS[dt] / 2,
            }
            rows_out.append(row)
            s = "-" if seq is None else f"{seq:.2e}"
            print(f"| {name} | {rows}x{n} | {axis} | {row['baracuda']:.2e} | "
                  f"{row['baracuda_reverse']:.2e} | {row['torch']:.2e} | {s} | "
                  f"{row['rounded']:.2e} | {row['sqrt_n_eps']:.1e} |", flush=True)  # fmt: skip
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"card": card, "rows": rows_out}, f, indent=1)


if __name__ == "__main__":
    main()
