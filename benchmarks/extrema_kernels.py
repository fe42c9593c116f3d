"""cummax/cummin forward over shapes that take each of their kernel families (strips along a
strided axis, warp rows, segmented tiles, strided chunks, chunked long rows), in every dtype,
with NaN in the input. Prints one line a case (µs, the kernels launched) and writes JSON with
a checksum of the values and indices of each case, so that two trees of the package can be
compared bit for bit: run it once with each tree first on ``PYTHONPATH``, in separate
processes with separate kernel caches (``BARACUDA_CACHE_DIR``), alternating.

    python benchmarks/extrema_kernels.py TAG out.json [--dtypes f32,bf16,f16,f64]   (on a GPU)
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import torch

import baracuda as bc
from baracuda._bench import time_us
from baracuda._cuda.launch import launch
from baracuda.scan import _kernels as K

# (shape, axis): strips (the first three), warp rows, segmented tiles, chunked long rows,
# strided chunks
CASES: list[tuple[tuple[int, ...], int]] = [
    ((4096, 8192), 0), ((512, 32768), 0), ((1024, 8192), 0), ((4096, 8192), 1),
    ((16384, 2048), 1), ((65536, 64), 1), ((262144, 16), 1), ((4, 2**22), 1),
    ((2**20, 8), 0), ((64, 131072), 1),
]  # fmt: skip
DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16,
          "f64": torch.float64}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tag")
    ap.add_argument("out")
    ap.add_argument("--dtypes", default="f32,bf16,f16,f64")
    a = ap.parse_args()
    names: list[str] = []

    def spy(fn: Any, grid: Any, block: Any, smem: Any, st: Any, args: Any, name: str,
            **kw: Any) -> None:  # fmt: skip
        if name != "scan_zero":
            names.append(name)
        launch(fn, grid, block, smem, st, args, name, **kw)

    vars(K)["launch"] = spy  # every scan kernel is launched through _kernels.launch
    rows: list[dict[str, Any]] = []
    g = torch.Generator(device="cuda").manual_seed(0)
    for d in a.dtypes.split(","):
        for shape, ax in CASES:
            x = (torch.randn(shape, device="cuda", generator=g) * 4).to(DTYPES[d])
            x.view(-1)[7::1001] = float("nan")
            for kind, rev in (("cummax", False), ("cummin", True)):
                if kind == "cummin" and shape != (4096, 8192):
                    continue
                fn = getattr(bc, kind)
                names.clear()
                v, i = fn(x, axis=ax, reverse=rev)
                kernels = ",".join(names)
                vsum = torch.nan_to_num(v.double(), nan=7.0).sum().item()
                checksum = int(i.sum().item()) + int(vsum * 1000)
                us = time_us(lambda: fn(x, axis=ax, reverse=rev))
                row = {"op": kind, "reverse": rev, "dtype": d, "shape": list(shape), "axis": ax,
                       "us": round(us, 1), "kernels": kernels, "checksum": checksum}  # fmt: skip
                rows.append(row)
                print(f"{kind:7s} {'rev' if rev else '   '} {d:5s} {shape!s:16s} dim {ax}"
                      f" {us:9.1f} us  {kernels}", flush=True)  # fmt: skip
    with open(a.out, "w") as f:
        json.dump({"tag": a.tag, "card": torch.cuda.get_device_name(), "rows": rows}, f,
                  indent=1)  # fmt: skip


if __name__ == "__main__":
    main()
