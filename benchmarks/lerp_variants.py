"""Launch shapes of the contiguous lerp forward and backward against torch
(``tune_elementwise.py`` tunes only the grid cap). Stand-alone kernels of the package's
arithmetic (``a + w (b - a)`` for ``|w| < 0.5``, else ``b - (b - a)(1 - w)``, in f32), each
checked bit for bit against ``torch.lerp`` before it is timed, with the bench's method
(``time_us``: L2 flushed, median), in one process beside ``torch.lerp(out=)`` and the
package's plan:

- ``B=b U=u``: blocks of b threads, each thread u 16-byte vectors of ``a`` and of ``b``, the
  vectors of a thread ``b`` vectors apart (the package's layout: B=128 U=1 since round 57,
  B=256 U=4 before), one step a thread (the grid covers the tensor);
- ``cs``: the same with evict-first (``st.global.cs``) stores.

Then the backward (``da = (1 - w) dy``, ``db = w dy``: one read, two writes) the same way, by
block and vectors a thread, each checked bit for bit against the package's backward (itself
tested against float64), beside ``torch.mul(dy, 1 - w, out=da)`` and ``torch.mul(dy, w,
out=db)`` (the two products autograd computes) and the package's plan (B=128 U=1 where ``dy``
holds more than 16 MiB, B=256 U=4 up to 16 MiB, since round 57; B=256 U=4 before).

Prints a line a case, writes JSON:

    python benchmarks/lerp_variants.py [out.json]      (on a GPU, with CuPy for the kernels)
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
__device__ __forceinline__ float lerp_math(float x, float y, float w) {
  return fabsf(w) < 0.5f ? x + w * (y - x) : y - (y - x) * (1.f - w);
}
__device__ __forceinline__ uint4 lerp_vec(uint4 a, uint4 b, float w, float) {
  uint4 r;
  const float* fa = reinterpret_cast<const float*>(&a);
  const float* fb = reinterpret_cast<const float*>(&b);
  float* fr = reinterpret_cast<float*>(&r);
#pragma unroll
  for (int l = 0; l < 4; ++l) fr[l] = lerp_math(fa[l], fb[l], w);
  return r;
}
__device__ __forceinline__ uint4 lerp_vec(uint4 a, uint4 b, float w, __nv_bfloat16) {
  uint4 r;
  const __nv_bfloat162* ha = reinterpret_cast<const __nv_bfloat162*>(&a);
  const __nv_bfloat162* hb = reinterpret_cast<const __nv_bfloat162*>(&b);
  __nv_bfloat162* hr = reinterpret_cast<__nv_bfloat162*>(&r);
#pragma unroll
  for (int l = 0; l < 4; ++l) {
    const float2 x = __bfloat1622float2(ha[l]), y = __bfloat1622float2(hb[l]);
    hr[l] = __floats2bfloat162_rn(lerp_math(x.x, y.x, w), lerp_math(x.y, y.y, w));
  }
  return r;
}
__device__ __forceinline__ uint4 scale_vec(uint4 a, float s, float) {
  uint4 r;
  const float* fa = reinterpret_cast<const float*>(&a);
  float* fr = reinterpret_cast<float*>(&r);
#pragma unroll
  for (int l = 0; l < 4; ++l) fr[l] = s * fa[l];
  return r;
}
__device__ __forceinline__ uint4 scale_vec(uint4 a, float s, __nv_bfloat16) {
  uint4 r;
  const __nv_bfloat162* ha = reinterpret_cast<const __nv_bfloat162*>(&a);
  __nv_bfloat162* hr = reinterpret_cast<__nv_bfloat162*>(&r);
#pragma unroll
  for (int l = 0; l < 4; ++l) {
    const float2 x = __bfloat1622float2(ha[l]);
    hr[l] = __floats2bfloat162_rn(s * x.x, s * x.y);
  }
  return r;
}
template <typename T, int B, int U>
__global__ void __launch_bounds__(B) lerp_bwd(const uint4* __restrict__ dy,
                                              uint4* __restrict__ da, uint4* __restrict__ db,
                                              float w, i64 nvec) {
  const i64 base = (i64)blockIdx.x * B * U + threadIdx.x;
  uint4 g[U];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const i64 i = base + (i64)u * B;
    if (i < nvec) g[u] = dy[i];
  }
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const i64 i = base + (i64)u * B;
    if (i < nvec) {
      da[i] = scale_vec(g[u], 1.f - w, T());
      db[i] = scale_vec(g[u], w, T());
    }
  }
}
template <typename T, int B, int U, int CS>
__global__ void __launch_bounds__(B) lerp(const uint4* __restrict__ a,
                                          const uint4* __restrict__ b,
                                          uint4* __restrict__ out, float w, i64 nvec) {
  const i64 base = (i64)blockIdx.x * B * U + threadIdx.x;
  uint4 xa[U], xb[U];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const i64 i = base + (i64)u * B;
    if (i < nvec) { xa[u] = a[i]; xb[u] = b[i]; }
  }
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const i64 i = base + (i64)u * B;
    if (i < nvec) {
      const uint4 r = lerp_vec(xa[u], xb[u], w, T());
      if (CS) __stcs(out + i, r); else out[i] = r;
    }
  }
}
"""

_TYPES = {torch.float32: "float", torch.bfloat16: "__nv_bfloat16"}
_SHAPES = ((4096, 8192), (2**28,), (2**24,), (2**22,))
_VARIANTS = [(b, u, cs) for b in (128, 256, 512) for u in (1, 2, 4, 8) for cs in (0, 1)
             if not (cs and u in (1, 8))]  # fmt: skip


_BWD_VARIANTS = ((128, 1), (256, 1), (512, 1), (128, 2), (256, 2), (128, 4), (256, 4))


def _names() -> list[str]:
    return ([f"lerp<{t},{b},{u},{cs}>" for t in _TYPES.values() for b, u, cs in _VARIANTS]
            + [f"lerp_bwd<{t},{b},{u}>" for t in _TYPES.values() for b, u in _BWD_VARIANTS])


def _time_variants(row: dict[str, Any], mod: Any, ext: Any,
                   kernels: list[tuple[str, str, int, int]], ptrs: tuple[int, ...],
                   outs: tuple[Any, ...], refs: tuple[Any, ...], nvec: int,
                   peer: str) -> None:  # fmt: skip
    """``row[label]``: the time of each (label, kernel, block, vectors a thread) of ``kernels``
    over ``nvec`` 16-byte vectors (the grid covers them), its outputs ``outs`` poisoned first
    and checked equal to ``refs`` bit for bit; "differs" (and a line saying so) if not."""
    for label, kernel, bl, u in kernels:
        fn = mod.get_function(kernel)
        grid = (nvec + bl * u - 1) // (bl * u)
        kargs = (*ptrs, cp.float32(0.3), cp.int64(nvec))

        def launch(fn: Any = fn, grid: int = grid, bl: int = bl, kargs: Any = kargs) -> None:
            with ext:
                fn((grid,), (bl,), kargs)

        for o in outs:
            o.fill_(float("nan"))
        launch()
        torch.cuda.synchronize()
        if all(torch.equal(o, r) for o, r in zip(outs, refs, strict=True)):
            row[label] = time_us(launch)
        else:
            print(f"{label} differs from {peer} on {row['dtype']} {tuple(row['shape'])}: not timed")
            row[label] = "differs"


def _bwd_case(mod: Any, ext: Any, dt: torch.dtype, shape: tuple[int, ...]) -> dict[str, Any]:
    g = torch.Generator(device="cuda").manual_seed(0)
    dy = torch.randn(shape, device="cuda", generator=g).to(dt)
    da, db = torch.empty_like(dy), torch.empty_like(dy)
    el = bc.ElementKind.F32 if dt == torch.float32 else bc.ElementKind.BF16
    s = bc.Stream.wrap(torch.cuda.current_stream())
    plan = bc.BinaryParamBackwardPlan.select(s, bc.BinaryParamBackwardDescriptor(shape, el, 0.3))
    args, ws = bc.BinaryParamBackwardArgs(dy, da, db), bc.Workspace.none()
    plan.run(s, ws, args)
    refs = (da.clone(), db.clone())
    row: dict[str, Any] = {"dtype": str(dt)[6:], "shape": list(shape), "backward": True,
                           "bytes": 3 * dy.numel() * dy.element_size()}  # fmt: skip

    def torch_muls() -> None:
        torch.mul(dy, 0.7, out=da)
        torch.mul(dy, 0.3, out=db)

    row["torch"] = time_us(torch_muls)
    row["package"] = time_us(lambda: plan.run(s, ws, args))
    kernels = [(f"B={bl} U={u}", f"lerp_bwd<{_TYPES[dt]},{bl},{u}>", bl, u)
               for bl, u in _BWD_VARIANTS]  # fmt: skip
    _time_variants(row, mod, ext, kernels, (dy.data_ptr(), da.data_ptr(), db.data_ptr()),
                   (da, db), refs, dy.numel() * dy.element_size() // 16,
                   "the package's backward")  # fmt: skip
    return row


def _case(mod: Any, ext: Any, dt: torch.dtype, shape: tuple[int, ...]) -> dict[str, Any]:
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(shape, device="cuda", generator=g).to(dt)
    b = torch.randn(shape, device="cuda", generator=g).to(dt)
    out = torch.empty_like(a)
    ref = torch.lerp(a, b, 0.3)
    row: dict[str, Any] = {"dtype": str(dt)[6:], "shape": list(shape),
                           "bytes": 3 * a.numel() * a.element_size()}  # fmt: skip
    row["torch"] = time_us(lambda: torch.lerp(a, b, 0.3, out=out))
    el = bc.ElementKind.F32 if dt == torch.float32 else bc.ElementKind.BF16
    s = bc.Stream.wrap(torch.cuda.current_stream())
    plan = bc.BinaryParamPlan.select(s, bc.BinaryParamDescriptor(shape, el, 0.3))
    args, ws = bc.BinaryParamArgs(a, b, out), bc.Workspace.none()
    row["package"] = time_us(lambda: plan.run(s, ws, args))
    kernels = [(f"B={bl} U={u}" + (" cs" if cs else ""), f"lerp<{_TYPES[dt]},{bl},{u},{cs}>", bl, u)
               for bl, u, cs in _VARIANTS]  # fmt: skip
    _time_variants(row, mod, ext, kernels, (a.data_ptr(), b.data_ptr(), out.data_ptr()),
                   (out,), (ref,), a.numel() * a.element_size() // 16, "torch.lerp")  # fmt: skip
    return row


def main() -> None:
    mod = cp.RawModule(code=SOURCE, options=("-std=c++17",), name_expressions=_names())
    ext = cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
    print(torch.cuda.get_device_name())
    rows = []
    for op, case in (("lerp", _case), ("lerp_backward", _bwd_case)):
        for dt in _TYPES:
            for shape in _SHAPES:
                row = case(mod, ext, dt, shape)
                rows.append(row)
                times = "  ".join(f"{k} {v:.1f}" for k, v in row.items() if isinstance(v, float))
                print(f"{op} {row['dtype']:8s} {shape!s:12s} {times}", flush=True)
                torch.cuda.empty_cache()
    write_json(sys.argv[1] if len(sys.argv) > 1 else None, "lerp_variants", rows)


if __name__ == "__main__":
    main()
