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

With ``--odd``, over lines that are not whole vectors (an odd number of lines L: each row
starts at another offset modulo 16 bytes) instead, with ``line`` and two kernels that move the
indices as 16-byte pairs all the same: ``line pairs`` (a thread a line, a pair stored by its
first lane, the other line's index through a shuffle) and ``odd pairs NV=k`` (two lines a
thread as ``pairs``, a row's words whole where they are aligned and an element at a time where
not, there the index pairs taken one line on, across lanes by a shuffle).

In both layouts (round 55), and in f64 too: ``linek K=k NB=b`` (torch's layout, a line a word,
with k lines a thread and b positions' loads issued before their scan: the design of the
package's ``short1l`` kernels) and ``tile E=e`` (a block a tile of lines over every position
through shared memory, e elements: each row's part loaded with cp.async and stored as the
16-byte words it overlaps, whatever its alignment). ``line pairs`` and ``odd pairs`` hold 4
positions and run only up to 4.

Prints a line a case, writes JSON:

    python benchmarks/cummax_floor.py [out.json] [--odd] [--positions 2 3 4 8]
        (on a GPU, with CuPy for the kernels)
"""

from __future__ import annotations

import argparse
from typing import Any

import cupy as cp
import torch
from _scan_bench import CUMMAX_PRELUDE, write_json

import baracuda as bc
from baracuda._bench import time_us

SOURCE = CUMMAX_PRELUDE + r"""
__device__ __forceinline__ void st16(void* p, int4 v) {
  asm volatile("st.global.v4.b32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z),
               "r"(v.w) : "memory");
}
__device__ __forceinline__ int4 pair(i64 a, i64 b) {
  return make_int4((int)a, (int)(a >> 32), (int)b, (int)(b >> 32));
}
// torch's rule: the latest NaN, else the latest of equal maxima
template <typename K> __device__ __forceinline__ bool wins(K f, K m) {
  return f != f || (m == m && f >= m);
}
template <int B> struct Word { typedef int4 T; };
template <> struct Word<8> { typedef unsigned long long T; };
template <> struct Word<4> { typedef unsigned T; };
template <> struct Word<2> { typedef unsigned short T; };

// a thread a line, a position at a time
template <typename T>
__global__ void line(const T* x, T* y, i64* ix, i64 L, int n) {
  const i64 l = (i64)blockIdx.x * blockDim.x + threadIdx.x;
  if (l >= L) return;
  typename Key<T>::K m = (typename Key<T>::K)__int_as_float(0xff800000); i64 mi = 0;
  for (int p = 0; p < n; ++p) {
    const auto f = tf(x[p * L + l]);
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
// Lines that are not whole vectors (L odd: row p starts at p L elements, so the rows' pairs
// of lines alternate between aligned and not). Warp-uniform loops: every lane reaches the
// shuffles. `line_pairs`: a thread a line, the index stores as 16-byte pairs of two lanes' lines
// (the pair's first lane stores it, one shuffle), 8-byte stores at the warp's edges.
// `odd_pairs<NV>`: two lines a thread as `words`, each row's words loaded and stored whole where
// aligned, else an element at a time, its index pairs taken one line on (the next lane's first
// line through a shuffle) where the row is not aligned.
__device__ __forceinline__ void st8(i64* p, i64 v) { *p = v; }
__device__ __forceinline__ bool al16(const void* p) { return ((unsigned long long)p & 15) == 0; }
template <typename T>
__global__ void __launch_bounds__(256) line_pairs(const T* x, T* y, i64* ix, i64 L, int n) {
  const int lane = threadIdx.x & 31;
  const i64 l = (i64)blockIdx.x * blockDim.x + threadIdx.x;
  const bool live = l < L, next = l + 1 < L && lane < 31;
  if (l - lane >= L) return;  // the whole warp
  T raw[4];
#pragma unroll
  for (int p = 0; p < 4; ++p)
    if (p < n && live) raw[p] = x[p * L + l];
  typename Key<T>::K m = (typename Key<T>::K)__int_as_float(0xff800000); int mi = 0;
#pragma unroll
  for (int p = 0; p < 4; ++p) {
    if (p >= n) break;
    const auto f = tf(raw[p]);
    if (wins(f, m)) { m = f; mi = p; }
    const int nmi = __shfl_down_sync(0xffffffff, mi, 1);
    if (!live) continue;
    y[p * L + l] = (T)m;
    i64* a = ix + p * L + l;
    if (al16(a)) {
      if (next) st16(a, pair(mi, nmi)); else st8(a, mi);
    } else if (lane == 0) {
      st8(a, mi);
    }
  }
}
template <typename T, int NV>
__global__ void __launch_bounds__(256) odd_pairs(const T* x, T* y, i64* ix, i64 L, int n) {
  constexpr int BY = 2 * sizeof(T);
  typedef typename Word<BY>::T Wd;
  const int lane = threadIdx.x & 31;
  const i64 words = (L + 1) / 2;  // the last one a line where L is odd
  const i64 first = (i64)blockIdx.x * blockDim.x * NV + threadIdx.x;
  if (first - lane >= words) return;  // the whole warp
  T raw[NV][4][2];
#pragma unroll
  for (int k = 0; k < NV; ++k) {
    const i64 l = 2 * (first + (i64)k * blockDim.x);
#pragma unroll
    for (int p = 0; p < 4; ++p) {
      if (p >= n) break;
      const T* s = x + p * L + l;
      if (l + 1 < L && ((unsigned long long)s & (BY - 1)) == 0) {
        const Wd w = *reinterpret_cast<const Wd*>(s);
        memcpy(raw[k][p], &w, BY);
      } else if (l < L) {
        raw[k][p][0] = s[0];
        if (l + 1 < L) raw[k][p][1] = s[1];
      }
    }
  }
#pragma unroll
  for (int k = 0; k < NV; ++k) {
    const i64 l = 2 * (first + (i64)k * blockDim.x);
    const bool live0 = l < L, live1 = l + 1 < L, next = l + 2 < L && lane < 31;
    float m[2]; int mi[2];
#pragma unroll
    for (int e = 0; e < 2; ++e) { m[e] = __int_as_float(0xff800000); mi[e] = 0; }
#pragma unroll
    for (int p = 0; p < 4; ++p) {
      if (p >= n) break;
      T o[2];
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float f = tf(raw[k][p][e]);
        if (wins(f, m[e])) { m[e] = f; mi[e] = p; }
        o[e] = (T)m[e];
      }
      const int nmi = __shfl_down_sync(0xffffffff, mi[0], 1);
      if (!live0) continue;
      T* d = y + p * L + l;
      if (live1 && ((unsigned long long)d & (BY - 1)) == 0) {
        Wd w;
        memcpy(&w, o, BY);
        *reinterpret_cast<Wd*>(d) = w;
      } else {
        d[0] = o[0];
        if (live1) d[1] = o[1];
      }
      i64* a = ix + p * L + l;
      if (al16(a)) {
        if (live1) st16(a, pair(mi[0], mi[1])); else st8(a, mi[0]);
      } else {
        if (lane == 0) st8(a, mi[0]);
        if (live1) { if (next) st16(a + 1, pair(mi[1], nmi)); else st8(a + 1, mi[1]); }
      }
    }
  }
}
// `tile<T>`: a block takes TC lines over all n positions through shared memory. Each row's
// part is loaded (cp.async) and stored as the 16-byte words of memory it overlaps, an element
// at a time only at the part's two ends, whatever the row's alignment; the scan walks the
// staged rows a line a thread. Shared memory: x and y rows of TC + V elements, int index rows
// of TC + 4; each row's part starts at its own offset (its address modulo 16 bytes).
__device__ __forceinline__ void cpa16(void* s, const void* g) {
  const unsigned sa = (unsigned)__cvta_generic_to_shared(s);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(sa), "l"(g) : "memory");
}
template <typename T>
__global__ void __launch_bounds__(256) tile(const T* x, T* y, i64* ix, i64 L, int n, int TC) {
  constexpr int V = 16 / sizeof(T);
  typedef typename Key<T>::K K;
  extern __shared__ int4 smem[];
  const int rowx = TC + V, rowi = TC + 4;
  T* xs = reinterpret_cast<T*>(smem);
  T* ys = xs + (size_t)n * rowx;
  int* is = reinterpret_cast<int*>(ys + (size_t)n * rowx);
  const i64 c0 = (i64)blockIdx.x * TC;
  const int cols = (int)min((i64)TC, L - c0);
  for (int p = 0; p < n; ++p) {
    const T* src = x + p * L + c0;
    const int h = (int)(((unsigned long long)src & 15) / sizeof(T));
    T* d = xs + p * rowx;
    const int nw = (h + cols + V - 1) / V;
    for (int w = threadIdx.x; w < nw; w += blockDim.x) {
      const int j0 = w * V - h;
      if (j0 >= 0 && j0 + V <= cols) {
        cpa16(d + w * V, src + j0);
      } else {
#pragma unroll
        for (int e = 0; e < V; ++e)
          if (j0 + e >= 0 && j0 + e < cols) d[w * V + e] = src[j0 + e];
      }
    }
  }
  asm volatile("cp.async.wait_all;" ::: "memory");
  __syncthreads();
  const unsigned long long ux = (unsigned long long)(x + c0), uy = (unsigned long long)(y + c0),
                           ui = (unsigned long long)(ix + c0);
  for (int j = threadIdx.x; j < cols; j += blockDim.x) {
    K m = (K)__int_as_float(0xff800000);
    int mi = 0;
    for (int p = 0; p < n; ++p) {
      const unsigned long long off = (unsigned long long)p * L;
      const int hx = (int)(((ux + off * sizeof(T)) & 15) / sizeof(T));
      const int hy = (int)(((uy + off * sizeof(T)) & 15) / sizeof(T));
      const int hi = (int)(((ui + off * 8) & 15) / 8);
      const K f = (K)xs[p * rowx + hx + j];
      if (wins(f, m)) { m = f; mi = p; }
      ys[p * rowx + hy + j] = (T)m;
      is[p * rowi + hi + j] = mi;
    }
  }
  __syncthreads();
  for (int p = 0; p < n; ++p) {
    T* dst = y + p * L + c0;
    const int h = (int)(((unsigned long long)dst & 15) / sizeof(T));
    const T* s = ys + p * rowx;
    const int nw = (h + cols + V - 1) / V;
    for (int w = threadIdx.x; w < nw; w += blockDim.x) {
      const int j0 = w * V - h;
      if (j0 >= 0 && j0 + V <= cols) {
        st16(dst + j0, *reinterpret_cast<const int4*>(s + w * V));
      } else {
#pragma unroll
        for (int e = 0; e < V; ++e)
          if (j0 + e >= 0 && j0 + e < cols) dst[j0 + e] = s[w * V + e];
      }
    }
  }
  for (int p = 0; p < n; ++p) {
    i64* dst = ix + p * L + c0;
    const int h = (int)(((unsigned long long)dst & 15) / 8);
    const int* s = is + p * rowi;
    const int nw = (h + cols + 1) / 2;
    for (int w = threadIdx.x; w < nw; w += blockDim.x) {
      const int j0 = 2 * w - h;
      if (j0 >= 0 && j0 + 2 <= cols) {
        const int2 v = *reinterpret_cast<const int2*>(s + 2 * w);
        st16(dst + j0, make_int4(v.x, 0, v.y, 0));
      } else {
        if (j0 >= 0 && j0 < cols) dst[j0] = s[2 * w];
        if (j0 + 1 >= 0 && j0 + 1 < cols) dst[j0 + 1] = s[2 * w + 1];
      }
    }
  }
}
// `linek<K, NB>`: torch's layout (a line a thread's word, an element at a time) with K lines a
// thread (a block's width apart) and NB positions' loads of all K lines issued before their
// scan, so that a thread has K NB loads in flight and few registers.
template <typename T, int K, int NB>
__global__ void __launch_bounds__(256) linek(const T* x, T* y, i64* ix, i64 L, int n) {
  typedef typename Key<T>::K KT;
  const i64 l0 = (i64)blockIdx.x * 256 * K + threadIdx.x;
  KT m[K];
  int mi[K];
#pragma unroll
  for (int k = 0; k < K; ++k) { m[k] = (KT)__int_as_float(0xff800000); mi[k] = 0; }
  for (int p0 = 0; p0 < n; p0 += NB) {
    T raw[K][NB];
#pragma unroll
    for (int u = 0; u < NB; ++u) {
      if (p0 + u >= n) break;
#pragma unroll
      for (int k = 0; k < K; ++k)
        if (l0 + k * 256 < L) raw[k][u] = x[(i64)(p0 + u) * L + l0 + k * 256];
    }
#pragma unroll
    for (int u = 0; u < NB; ++u) {
      const int p = p0 + u;
      if (p >= n) break;
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const i64 l = l0 + k * 256;
        if (l >= L) continue;
        const KT f = tf(raw[k][u]);
        if (wins(f, m[k])) { m[k] = f; mi[k] = p; }
        y[(i64)p * L + l] = (T)m[k];
        ix[(i64)p * L + l] = mi[k];
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
_TYPES = {torch.bfloat16: ("__nv_bfloat16", "bf16"), torch.float32: ("float", "f32"),
          torch.float64: ("double", "f64")}
# linek's (lines a thread, positions a batch)
_LINEK = ((1, 2), (2, 2), (4, 2), (2, 4), (4, 4))
# elements a block of `tile` takes (its lines times the positions)
_TILE_ELEMS = (4096,)
# (label, lines a word, words a thread, staged); the vector's lines per type at run time
_VARIANTS: list[tuple[str, int, int, int]] = [
    ("pairs NV=1", 2, 1, 0), ("pairs NV=4", 2, 4, 0), ("vec staged", 0, 1, 1),
]  # fmt: skip


def _names() -> list[str]:
    out = ["write16"]
    for t, _ in _TYPES.values():
        out += [f"tile<{t}>", f"line<{t}>", f"line_pairs<{t}>"]
        out += [f"linek<{t},{k},{nb}>" for k, nb in _LINEK]
        if t == "double":
            continue
        out += [f"odd_pairs<{t},1>", f"odd_pairs<{t},4>"]
        for _, w, nv, st in _VARIANTS:
            out.append(f"words<{t},{w or (16 // (2 if 'bf' in t else 4))},{nv},{st}>")
    return out


def _case(mod: Any, ext: Any, dt: torch.dtype, n: int, g: torch.Generator,
          odd: bool) -> dict[str, Any]:  # fmt: skip
    """One (n, L) case of ``dt``: the write floor, torch, baracuda and the stand-alone kernels;
    ``odd``: L odd (lines that are not whole vectors), else whole 16-byte vectors of lines."""
    t, label = _TYPES[dt]
    lines = 2**24 // n
    lines = lines - 1 + lines % 2 if odd else lines // 16 * 16  # odd, or whole 16-byte vectors
    x = torch.randn((n, lines), device="cuda", generator=g).to(dt)
    ref_v, ref_i = torch.cummax(x, 0)
    y, ix = torch.empty_like(x), torch.empty((n, lines), dtype=torch.int64, device="cuda")
    moved = x.numel() * (2 * x.element_size() + 8)
    sink = torch.empty(moved // 4, dtype=torch.float32, device="cuda")
    row: dict[str, Any] = {"dtype": label, "shape": [n, lines], "bytes": moved}

    def launch(name: str, grid: int, block: int, args: tuple[Any, ...], smem: int = 0) -> None:
        fn = mod.get_function(name)
        if smem > 48 * 1024 and fn.max_dynamic_shared_size_bytes < smem:
            fn.max_dynamic_shared_size_bytes = smem
        with ext:
            fn((grid,), (block,), args, shared_mem=smem)

    fill = (sink.data_ptr(), cp.int64(moved // 16))
    sms = torch.cuda.get_device_properties(x.device).multi_processor_count
    row["write"] = time_us(lambda: launch("write16", sms * 16, 256, fill))
    row["torch"] = time_us(lambda: torch.cummax(x, 0))
    row["bc"] = time_us(lambda: bc.cummax(x, axis=0, tie_break="last"))
    args = (x.data_ptr(), y.data_ptr(), ix.data_ptr(), cp.int64(lines), cp.int32(n))
    kernels: list[tuple[str, str, int, int, tuple[Any, ...], int]] = []
    for elems in _TILE_ELEMS:
        tc = max(16, elems // n // 16 * 16)
        v = 16 // x.element_size()
        smem = n * (tc + v) * x.element_size() * 2 + n * (tc + 4) * 4
        kernels.append((f"tile E={elems}", f"tile<{t}>", (lines + tc - 1) // tc, 256,
                        (*args, cp.int32(tc)), smem))  # fmt: skip
    for k, nb in _LINEK:
        grid = (lines + 256 * k - 1) // (256 * k)
        kernels.append((f"linek K={k} NB={nb}", f"linek<{t},{k},{nb}>", grid, 256, args, 0))
    if odd:
        kernels.append(("line", f"line<{t}>", (lines + 511) // 512, 512, args, 0))
        if n <= 4:  # line_pairs and odd_pairs hold 4 positions
            kernels.append(("line pairs", f"line_pairs<{t}>", (lines + 255) // 256, 256, args, 0))
        for nv in (1, 4) if n <= 4 and dt != torch.float64 else ():
            grid = ((lines + 1) // 2 + 256 * nv - 1) // (256 * nv)
            kernels.append((f"odd pairs NV={nv}", f"odd_pairs<{t},{nv}>", grid, 256, args, 0))
    else:
        kernels.append(("line", f"line<{t}>", (lines + 511) // 512, 512, args, 0))
        for name, w, nv, st in _VARIANTS if dt != torch.float64 else ():
            w = w or 16 // x.element_size()
            grid = (lines // w + 256 * nv - 1) // (256 * nv)
            kernels.append((name, f"words<{t},{w},{nv},{st}>", grid, 256, args, 0))
    for name, fn, grid, block, kargs, smem in kernels:
        y.fill_(float("nan"))
        ix.fill_(-7)
        launch(fn, grid, block, kargs, smem)
        torch.cuda.synchronize()
        if not (torch.equal(y, ref_v) and torch.equal(ix, ref_i)):
            print(f"{fn} differs from torch.cummax on {label} {n}x{lines}: not timed", flush=True)
            row[name] = "differs"
            continue
        row[name] = time_us(lambda fn=fn, grid=grid, block=block, kargs=kargs, smem=smem:
                            launch(fn, grid, block, kargs, smem))
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", nargs="?", help="write the results here")
    ap.add_argument("--odd", action="store_true", help="lines that are not whole vectors")
    ap.add_argument("--positions", type=int, nargs="+", default=[2, 3, 4],
                    help="the axis lengths n (default 2 3 4)")  # fmt: skip
    a = ap.parse_args()
    mod = cp.RawModule(code=SOURCE, options=("-std=c++17",), name_expressions=_names())
    ext = cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
    g = torch.Generator(device="cuda").manual_seed(0)
    rows: list[dict[str, Any]] = []
    for dt in _TYPES:
        for n in a.positions:
            row = _case(mod, ext, dt, n, g, a.odd)
            rows.append(row)
            times = "  ".join(f"{k} {v:.1f}" for k, v in row.items() if isinstance(v, float))
            print(f"cummax {row['dtype']:4s} {n}x{row['shape'][1]:<8d} "
                  f"{row['bytes'] / 1e6:5.0f} MB  {times}", flush=True)  # fmt: skip
            torch.cuda.empty_cache()
    write_json(a.json, "cummax_floor_odd" if a.odd else "cummax_floor", rows)


if __name__ == "__main__":
    main()
