"""The floor of cummax over a short strided axis (round 50, docs/benchmarks.md): what the
bytes of ``cummax`` along dim 0 of an ``(n, L)`` tensor cost outside the library. cummax
writes far more than it reads (its int64 indices), so a ``copy_`` of the input is no floor.
Times, with the bench's method (``time_us``: L2 flushed, median), in one process:

- ``write``: a kernel that only writes as many bytes as cummax moves (16-byte stores);
- ``torch``: ``torch.cummax`` (a thread a line, a position at a time);
- ``bc``: ``baracuda.cummax`` (``scan_short``);
- stand-alone kernels of the same result (torch's rule: ties and NaN to the latest), each
  checked against torch bit for bit: ``line`` (torch's layout, a thread a line), ``pairs
  NV=k`` (two lines a thread, k such words, every load of the axis issued first, 16-byte
  index pairs, as ``scan_short``'s cummax kinds) and ``vec staged`` (a 16-byte vector of
  lines a thread, the warp's indices staged through shared memory so that each store
  instruction covers 512 contiguous bytes).

Prints a line a case, writes JSON:

    python benchmarks/cummax_floor.py [out.json]        (on a GPU, with CuPy for the kernels)
"""

from __future__ import annotations

import sys
from typing import Any

import cupy as cp
import torch
from _scan_bench import write_json

import baracuda as bc
from baracuda._bench import time_us

SOURCE = r"""
#include <cuda_bf16.h>
typedef long long i64;
template <typename T> __device__ __forceinline__ float tf(T v) { return (float)v; }
template <> __device__ __forceinline__ float tf<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
__device__ __forceinline__ void st16(void* p, int4 v) {
  asm volatile("st.global.v4.b32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z),
               "r"(v.w) : "memory");
}
__device__ __forceinline__ int4 pair(i64 a, i64 b) {
  return make_int4((int)a, (int)(a >> 32), (int)b, (int)(b >> 32));
}
// torch's rule: the latest NaN, else the latest of equal maxima
__device__ __forceinline__ bool wins(float f, float m) { return f != f || (m == m && f >= m); }
template <int B> struct Word { typedef int4 T; };
template <> struct Word<8> { typedef unsigned long long T; };
template <> struct Word<4> { typedef unsigned T; };
template <> struct Word<2> { typedef unsigned short T; };

// a thread a line, a position at a time
template <typename T>
__global__ void line(const T* x, T* y, i64* ix, i64 L, int n) {
  const i64 l = (i64)blockIdx.x * blockDim.x + threadIdx.x;
  if (l >= L) return;
  float m = __int_as_float(0xff800000); i64 mi = 0;
  for (int p = 0; p < n; ++p) {
    const float f = tf(x[p * L + l]);
    if (wins(f, m)) { m = f; mi = p; }
    y[p * L + l] = (T)m;
    ix[p * L + l] = mi;
  }
}
// W adjacent lines a thread, NV words a block's width apart, every load of the axis (n <= 4)
// first; ST: indices staged through shared memory a warp (W >= 4)
template <typename T, int W, int NV, int ST>
__global__ void __launch_bounds__(256) words(const T* x, T* y, i64* ix, i64 L, int n) {
  constexpr int BY = W * sizeof(T), C = W / 2;
  typedef typename Word<BY>::T Wd;
  __shared__ int4 sm[ST ? 8 * 32 * C : 1];
  const i64 words = L / W;
  const int lane = threadIdx.x & 31;
  const i64 first = (i64)blockIdx.x * blockDim.x * NV + threadIdx.x;
  Wd raw[NV][4];
#pragma unroll
  for (int k = 0; k < NV; ++k) {
    const i64 w = first + (i64)k * blockDim.x;
#pragma unroll
    for (int p = 0; p < 4; ++p)
      if (p < n && w < words) raw[k][p] = *reinterpret_cast<const Wd*>(x + p * L + w * W);
  }
#pragma unroll
  for (int k = 0; k < NV; ++k) {
    const i64 w = first + (i64)k * blockDim.x;
    const bool live = w < words;
    float m[W]; i64 mi[W];
#pragma unroll
    for (int e = 0; e < W; ++e) { m[e] = __int_as_float(0xff800000); mi[e] = 0; }
#pragma unroll
    for (int p = 0; p < 4; ++p) {
      if (p >= n) break;
      T v[W], o[W];
      memcpy(v, &raw[k][p], BY);
#pragma unroll
      for (int e = 0; e < W; ++e) {
        const float f = tf(v[e]);
        if (wins(f, m[e])) { m[e] = f; mi[e] = p; }
        o[e] = (T)m[e];
      }
      Wd ow;
      memcpy(&ow, o, BY);
      if (live) {
        if constexpr (BY == 16) st16(y + p * L + w * W, *reinterpret_cast<int4*>(&ow));
        else *reinterpret_cast<Wd*>(y + p * L + w * W) = ow;
      }
      if constexpr (ST == 0) {
        if (live) {
#pragma unroll
          for (int c = 0; c < C; ++c)
            st16(ix + p * L + w * W + 2 * c, pair(mi[2 * c], mi[2 * c + 1]));
        }
      } else {
        // pair c of lane l at slot l * C + (c ^ swizzle): 8 lanes of an access in distinct
        // 16-byte bank groups
        int4* s = sm + (threadIdx.x >> 5) * 32 * C;
        constexpr int G = C < 8 ? 8 / C : 1;
#pragma unroll
        for (int c = 0; c < C; ++c)
          s[lane * C + (c ^ ((lane / G) & (C - 1)))] = pair(mi[2 * c], mi[2 * c + 1]);
        __syncwarp();
        const i64 w0 = __shfl_sync(0xffffffff, w, 0);
#pragma unroll
        for (int u = 0; u < C; ++u) {
          const int j = u * 32 + lane, pl = j / C, c = j % C;
          if (w0 + pl < words)
            st16(ix + p * L + w0 * W + 2 * j, s[pl * C + (c ^ ((pl / G) & (C - 1)))]);
        }
        __syncwarp();
      }
    }
  }
}
__global__ void write16(int4* p, i64 n16) {
  const i64 step = (i64)gridDim.x * blockDim.x;
  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n16; i += step)
    st16(p + i, make_int4(0, 0, 0, 0));
}
"""
_TYPES = {torch.bfloat16: ("__nv_bfloat16", "bf16"), torch.float32: ("float", "f32")}
# (label, lines a word, words a thread, staged); the vector's lines per type at run time
_VARIANTS: list[tuple[str, int, int, int]] = [
    ("pairs NV=1", 2, 1, 0), ("pairs NV=4", 2, 4, 0), ("vec staged", 0, 1, 1),
]  # fmt: skip


def _names() -> list[str]:
    out = ["write16"]
    for t, _ in _TYPES.values():
        out.append(f"line<{t}>")
        for _, w, nv, st in _VARIANTS:
            out.append(f"words<{t},{w or (16 // (2 if 'bf' in t else 4))},{nv},{st}>")
    return out


def _case(mod: Any, ext: Any, dt: torch.dtype, n: int, g: torch.Generator) -> dict[str, Any]:
    """One (n, L) case of ``dt``: the write floor, torch, baracuda and the stand-alone kernels."""
    t, label = _TYPES[dt]
    lines = 2**24 // n // 16 * 16  # whole 16-byte vectors of lines
    x = torch.randn((n, lines), device="cuda", generator=g).to(dt)
    ref_v, ref_i = torch.cummax(x, 0)
    y, ix = torch.empty_like(x), torch.empty((n, lines), dtype=torch.int64, device="cuda")
    moved = x.numel() * (2 * x.element_size() + 8)
    sink = torch.empty(moved // 4, dtype=torch.float32, device="cuda")
    row: dict[str, Any] = {"dtype": label, "shape": [n, lines], "bytes": moved}

    def launch(name: str, grid: int, block: int, args: tuple[Any, ...]) -> None:
        with ext:
            mod.get_function(name)((grid,), (block,), args)

    fill = (sink.data_ptr(), cp.int64(moved // 16))
    sms = torch.cuda.get_device_properties(x.device).multi_processor_count
    row["write"] = time_us(lambda: launch("write16", sms * 16, 256, fill))
    row["torch"] = time_us(lambda: torch.cummax(x, 0))
    row["bc"] = time_us(lambda: bc.cummax(x, axis=0, tie_break="last"))
    args = (x.data_ptr(), y.data_ptr(), ix.data_ptr(), cp.int64(lines), cp.int32(n))
    kernels = [("line", f"line<{t}>", (lines + 511) // 512, 512)]
    for name, w, nv, st in _VARIANTS:
        w = w or 16 // x.element_size()
        grid = (lines // w + 256 * nv - 1) // (256 * nv)
        kernels.append((name, f"words<{t},{w},{nv},{st}>", grid, 256))
    for name, fn, grid, block in kernels:
        y.fill_(float("nan"))
        ix.fill_(-7)
        launch(fn, grid, block, args)
        torch.cuda.synchronize()
        if not (torch.equal(y, ref_v) and torch.equal(ix, ref_i)):
            raise SystemExit(f"{fn} differs from torch.cummax on {label} {n}x{lines}")
        row[name] = time_us(lambda fn=fn, grid=grid, block=block: launch(fn, grid, block, args))
    return row


def main() -> None:
    mod = cp.RawModule(code=SOURCE, options=("-std=c++17",), name_expressions=_names())
    ext = cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
    g = torch.Generator(device="cuda").manual_seed(0)
    rows: list[dict[str, Any]] = []
    for dt in _TYPES:
        for n in (2, 3, 4):
            row = _case(mod, ext, dt, n, g)
            rows.append(row)
            times = "  ".join(f"{k} {v:.1f}" for k, v in row.items() if isinstance(v, float))
            print(f"cummax {row['dtype']:4s} {n}x{row['shape'][1]:<8d} "
                  f"{row['bytes'] / 1e6:5.0f} MB  {times}", flush=True)  # fmt: skip
            torch.cuda.empty_cache()
    write_json(sys.argv[1] if len(sys.argv) > 1 else None, "cummax_floor", rows)


if __name__ == "__main__":
    main()
