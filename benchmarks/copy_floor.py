"""The copy floor of the scan benchmark shapes: what a plain copy of the same bytes costs at
each size, against the time the 85 % target asks for. Times torch's ``copy_`` and a 16-byte
vector copy kernel (1, 2, 4 or 8 vectors a thread, streaming loads and stores) with the
bench's method (``time_device``: L2 flushed, median). A scan reads and writes the same
bytes as a copy, so where the fastest copy is slower than the target, no scan meets it.
Beside the copies, ``torch.cumsum`` of the same bytes as one flat 1-D tensor of the case's
dtype: ATen runs a 1-D scan through CUB's ``DeviceScan`` (single pass, decoupled
look-back), the reference of what a general single-pass scan reaches on the card. Prints a
table, writes JSON.

    python benchmarks/copy_floor.py [out.json]        (on a GPU, with CuPy for the kernel)
"""

from __future__ import annotations

import json
import sys
from typing import Any

import cupy as cp
import torch

from baracuda._bench import copy_bandwidth, time_us

KERNEL = r"""
extern "C" __global__ void copy16(const int4* __restrict__ a, int4* __restrict__ b,
                                  long long n) {
  const long long i = (long long)blockIdx.x * blockDim.x * UNROLL + threadIdx.x;
  int4 v[UNROLL];
#pragma unroll
  for (int u = 0; u < UNROLL; ++u)
    if (i + u * blockDim.x < n) v[u] = __ldcs(a + i + u * blockDim.x);
#pragma unroll
  for (int u = 0; u < UNROLL; ++u)
    if (i + u * blockDim.x < n) __stcs(b + i + u * blockDim.x, v[u]);
}
"""
UNROLLS = (1, 2, 4, 8)
# (case, bytes each way): the cumsum targets of the scan issue, and the sparsemax backward's
# y -> dx stream at 64 x 131072 bf16
CASES = (
    ("(2^20, 2) bf16", 2**22),
    ("(2^20, 2) f32", 2**23),
    ("(2, 2^23) bf16", 2**25),
    ("(2, 2^23) f32", 2**26),
    ("4096x8192 bf16", 2**26),
    ("4096x8192 f32", 2**27),
)


def _us(fn: Any) -> float:
    return round(time_us(fn), 1)


def main() -> None:
    dev = torch.cuda.get_device_name()
    bw = copy_bandwidth()
    kernels = {u: cp.RawKernel(KERNEL.replace("UNROLL", str(u)), "copy16") for u in UNROLLS}
    print(f"{dev}: copy bandwidth {bw / 1e9:.0f} GB/s (1 GiB fp32 copy_)")
    heads = " ".join(f"{'v16x' + str(u):>7}" for u in UNROLLS)
    print(f"{'case':<16} {'MiB':>5} {'copy_':>7} {heads} {'85 % bar':>9} {'best, % of bw':>14} "
          f"{'CUB scan':>9}")  # fmt: skip
    rows: list[dict[str, Any]] = []
    for name, nbytes in CASES:
        a = torch.randn(nbytes // 4, device="cuda")
        b = torch.empty_like(a)
        ca, cb = cp.from_dlpack(a), cp.from_dlpack(b)
        n16 = nbytes // 16
        rec: dict[str, Any] = {"device": dev, "case": name, "bytes_each_way": nbytes,
                               "copy_bandwidth_GBps": bw / 1e9}  # fmt: skip
        rec["torch_copy_us"] = _us(lambda: b.copy_(a))
        for u, k in kernels.items():
            blocks = (n16 + 256 * u - 1) // (256 * u)
            args = (ca, cb, cp.int64(n16))
            rec[f"v16x{u}_us"] = _us(lambda k=k, g=blocks, a_=args: k((g,), (256,), a_))
        if not torch.equal(a, b):
            raise RuntimeError(f"{name}: the copy kernel is wrong")
        dtype = torch.bfloat16 if "bf16" in name else torch.float32
        # the same bytes, flat: ATen's cumsum of a 1-D tensor is CUB's DeviceScan
        xs = torch.randn(nbytes // (2 if dtype == torch.bfloat16 else 4), device="cuda",
                         dtype=dtype)  # fmt: skip
        ys = torch.empty_like(xs)
        rec["cub_scan_us"] = _us(lambda: torch.cumsum(xs, 0, out=ys))
        best = min(rec["torch_copy_us"], *(rec[f"v16x{u}_us"] for u in UNROLLS))
        rec["target_85_us"] = round(2 * nbytes / (0.85 * bw) * 1e6, 1)
        rec["best_copy_pct_of_bw"] = round(100 * 2 * nbytes / (best * 1e-6) / bw, 1)
        rows.append(rec)
        cols = " ".join(f"{rec[f'v16x{u}_us']:>7}" for u in UNROLLS)
        print(f"{name:<16} {nbytes >> 20:>5} {rec['torch_copy_us']:>7} {cols} "
              f"{rec['target_85_us']:>9} {rec['best_copy_pct_of_bw']:>13}% "
              f"{rec['cub_scan_us']:>9}", flush=True)
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
