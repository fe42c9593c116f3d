"""Which mbarrier orders does compute-sanitizer's racecheck follow? One block, two warps:
warp 0 reads a shared buffer, warp 1 then overwrites it. Modes: 0 every reading lane arrives
(release) and warp 1 waits (acquire); 1 __syncwarp then lane 0 arrives (the stream kernel's
pattern before round 38); 2 __syncthreads (control: no race); 3 no ordering at all (a real race);
4 a ring of one buffer over 6 phases, every lane arrives on `empty`; 5 the same, __syncwarp then
lane 0 arrives.

    compute-sanitizer --tool racecheck python scripts/mbarrier_racecheck_probe.py MODE

On an H200 (driver 580), modes 0, 2 and 4 report no hazard; modes 1 and 5 report hazards
(1 and 5), as does mode 3 (1), the real race. (Measured with this probe's first layout: the
same accesses, barriers and arrivals, without the helper functions.) So the stream scan
kernel (scan.cu) has every lane arrive on its mbarriers (docs/benchmarks.md, round 38).
"""

from __future__ import annotations

import sys

import numpy as np
from cuda.core import Device, LaunchConfig, Program, ProgramOptions, launch

SRC = r"""
typedef unsigned long long u64;
__device__ __forceinline__ unsigned sa(const void* p) {
  return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void init(u64* b, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(sa(b)), "r"(count) : "memory");
}
__device__ __forceinline__ void arrive(u64* b) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(sa(b)) : "memory");
}
__device__ __forceinline__ void wait(u64* b, unsigned parity) {
  asm volatile("{\n .reg .pred p;\n W:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
               " @!p bra W;\n}" ::"r"(sa(b)), "r"(parity) : "memory");
}
extern "C" __global__ void probe(int* out, int mode) {
  __shared__ __align__(16) int4 buf[32];
  __shared__ __align__(8) u64 bar, full, empty;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (threadIdx.x == 0) {
    init(&bar, mode == 0 ? 32u : 1u);
    init(&full, 32u);
    init(&empty, mode == 4 ? 32u : 1u);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  if (warp == 1) buf[lane] = make_int4(lane, 1, 2, 3);
  __syncthreads();
  if (mode == 4 || mode == 5) {  // a ring of one buffer over 6 phases
    for (int i = 0; i < 6; ++i) {
      if (warp == 1) {
        if (i > 0) wait(&empty, (unsigned)((i - 1) & 1));
        buf[lane] = make_int4(i, i, i, i);
        arrive(&full);
      } else {
        wait(&full, (unsigned)(i & 1));
        const int4 v = buf[31 - lane];
        out[lane] += v.x;
        if (mode == 4) {
          arrive(&empty);
        } else {
          __syncwarp();
          if (lane == 0) arrive(&empty);
        }
      }
    }
    return;
  }
  if (warp == 0) {
    const int4 v = buf[lane];
    out[lane] = v.x + v.y + v.z + v.w;
    if (mode == 0) arrive(&bar);
    if (mode == 1) {
      __syncwarp();
      if (lane == 0) arrive(&bar);
    }
  }
  if (mode == 2) __syncthreads();
  if (warp == 1) {
    if (mode <= 1) wait(&bar, 0u);
    buf[lane] = make_int4(7, 7, 7, 7);
  }
}
"""
mode = int(sys.argv[1]) if len(sys.argv) == 2 and sys.argv[1].isdigit() else -1
if not 0 <= mode <= 5:
    raise SystemExit(f"usage: mbarrier_racecheck_probe.py MODE (0-5), not {sys.argv[1:]}")
dev = Device()
dev.set_current()
s = dev.create_stream()
arch = "sm_" + "".join(map(str, dev.compute_capability))
k = Program(SRC, "c++", ProgramOptions(arch=arch, std="c++17")).compile("cubin").get_kernel("probe")
out = dev.allocate(4 * 64, stream=s)
launch(s, LaunchConfig(grid=1, block=64), k, out, np.int32(mode))
s.sync()
print("mode", mode, "ran")
