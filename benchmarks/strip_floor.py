"""How fast a walk along dim 0 can move its bytes: plain copies of a (rows, 8192) bf16 array
in tiles, a block a tile of W contiguous bytes of each of its segment's rows (W = 128: the
strips of ``scan_strip``, a block walking the whole axis; wider tiles and more segments: the
layouts a scan along dim 0 with carries between segments would read), each thread keeping U
16-byte loads in flight (streaming loads, or with the L2 evict-first policy), against torch's
``copy_`` of the same bytes (a contiguous ``copy_`` of one dtype is the driver's device-to-
device memcpy) and ``baracuda.cumsum`` along dim 0. All with the bench's method
(``time_device``: L2 flushed, median), every copy checked. Prints a table, writes JSON.

    python benchmarks/strip_floor.py [out.json]        (on a GPU, with CuPy for the kernels)
"""

from __future__ import annotations

import json
import sys
from typing import Any

import cupy as cp
import torch

import baracuda as bc
from baracuda._bench import copy_bandwidth, time_us

KERNEL = r"""
template <int W, int NT, int U, bool EF>
__device__ void tiled(const int4* __restrict__ a, int4* __restrict__ b, int seg_rows,
                      int pitch16, int strips) {
  constexpr int LPR = W / 16, G = NT / LPR;
  const int t = threadIdx.x, col = t % LPR, g = t / LPR;
  const int strip = blockIdx.x % strips, seg = blockIdx.x / strips;
  const long long r0 = (long long)seg * seg_rows;
  const int4* src = a + r0 * pitch16 + strip * LPR + col;
  int4* dst = b + r0 * pitch16 + strip * LPR + col;
  unsigned long long pol = 0;
  if (EF) asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
  for (int r = 0; r < seg_rows; r += G * U) {
    int4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int4* p = src + (long long)(r + u * G + g) * pitch16;
      if (EF)
        asm volatile("ld.global.nc.L2::cache_hint.v4.s32 {%0,%1,%2,%3}, [%4], %5;"
                     : "=r"(v[u].x), "=r"(v[u].y), "=r"(v[u].z), "=r"(v[u].w)
                     : "l"(p), "l"(pol));
      else
        v[u] = __ldcs(p);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) dst[(long long)(r + u * G + g) * pitch16] = v[u];
  }
}
#define K(W, NT, U, EF)                                                                   \
  extern "C" __global__ void __launch_bounds__(NT)                                       \
      tiled_##W##_##NT##_##U##_##EF(const int4* a, int4* b, int sr, int p, int s) {      \
    tiled<W, NT, U, EF>(a, b, sr, p, s);                                                 \
  }
K(128, 1024, 8, 0) K(128, 1024, 8, 1) K(128, 512, 8, 1) K(256, 512, 8, 1) K(512, 512, 8, 1)
K(1024, 512, 8, 1) K(2048, 512, 8, 1)
"""
# (W, threads, U, evict-first, segments)
TILES = [(128, 1024, 8, 0, 1), (128, 1024, 8, 1, 1), (128, 512, 8, 1, 4), (256, 512, 8, 1, 2),
         (256, 512, 8, 1, 8), (512, 512, 8, 1, 4), (512, 512, 8, 1, 16), (1024, 512, 8, 1, 8),
         (1024, 512, 8, 1, 32), (2048, 512, 8, 1, 32)]  # fmt: skip
ROWS = (2048, 4096, 8192)
COLS = 8192


def main() -> None:
    dev = torch.cuda.get_device_name()
    bw = copy_bandwidth()
    print(f"{dev}: copy bandwidth {bw / 1e9:.0f} GB/s (1 GiB fp32 copy_)")
    mod = cp.RawModule(code=KERNEL, options=("-std=c++17",))
    stream = cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
    rows_out: list[dict[str, Any]] = []
    for rows in ROWS:
        x = torch.randn(rows, COLS, device="cuda").to(torch.bfloat16)
        o = torch.empty_like(x)
        cx, co = cp.from_dlpack(x), cp.from_dlpack(o)
        copy_us = time_us(lambda: o.copy_(x))
        scan_us = time_us(lambda: bc.cumsum(x, axis=0))
        print(f"\n{rows}x{COLS} bf16 ({2 * x.numel() * 2 / 2**20:.0f} MiB moved): "
              f"copy_ {copy_us:.1f} us; baracuda.cumsum along dim 0 {scan_us:.1f} us "
              f"({copy_us / scan_us:.3f} of copy_)")  # fmt: skip
        print(f"{'tile bytes':>10} {'threads':>7} {'loads':>12} {'segments':>8} {'blocks':>6} "
              f"{'us':>7} {'of copy_':>8}")  # fmt: skip
        rec: dict[str, Any] = {"rows": rows, "cols": COLS, "dtype": "bf16", "copy_us": copy_us,
                               "cumsum_dim0_us": scan_us, "tiles": []}  # fmt: skip
        for w, nt, u, ef, segs in TILES:
            fn = mod.get_function(f"tiled_{w}_{nt}_{u}_{ef}")
            strips = COLS * 2 // w
            args = (cx, co, cp.int32(rows // segs), cp.int32(COLS * 2 // 16), cp.int32(strips))

            def launch(fn: Any = fn, nt: int = nt, grid: int = strips * segs,
                       args: tuple[Any, ...] = args) -> None:  # fmt: skip
                with stream:
                    fn((grid,), (nt,), args)

            o.zero_()
            launch()
            torch.cuda.synchronize()
            if not torch.equal(o, x):
                raise SystemExit(f"tile copy {w} B x {segs} segments: wrong output")
            us = time_us(launch)
            loads = "evict-first" if ef else "streaming"
            print(f"{w:>10} {nt:>7} {loads:>12} {segs:>8} {strips * segs:>6} {us:7.1f} "
                  f"{copy_us / us:8.3f}")  # fmt: skip
            rec["tiles"].append({"width": w, "threads": nt, "loads_in_flight": u,
                                 "evict_first": bool(ef), "segments": segs,
                                 "blocks": strips * segs, "us": us})  # fmt: skip
        rows_out.append(rec)
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            json.dump(
                {"device": dev, "copy_bandwidth_gbps": bw / 1e9, "cases": rows_out}, f, indent=1
            )


if __name__ == "__main__":
    main()
