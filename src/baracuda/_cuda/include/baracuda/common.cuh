// baracuda/common.cuh: shared device code, prepended to every kernel source.
//
// The compiler (baracuda/_cuda/compiler.py) compiles each family's .cu once per element
// type and arch, defining:
//   BC_T       storage type of values        (float, __half, __nv_bfloat16, double)
//   BC_ACC     accumulator / math type       (float for f32/f16/bf16, double for f64)
//   BC_SUFFIX  short element name            (f32, f16, bf16, f64)
// so one template body per kernel yields one extern "C" entry per element type, named
// baracuda_<op>_<suffix> (built by BC_KERNEL below and by baracuda._cuda.kernel_name).
#pragma once
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#define BC_CAT2(a, b) a##b
#define BC_CAT(a, b) BC_CAT2(a, b)
#define BC_ENTRY(op) BC_CAT(BC_CAT(baracuda_, op), BC_CAT(_, BC_SUFFIX))
// Declares one entry point: BC_KERNEL(lerp_fwd_strided, 256)(args...) { body<BC_T, BC_ACC>(...); }
#define BC_KERNEL(op, threads) \
  extern "C" __global__ void __launch_bounds__(threads) BC_ENTRY(op)

namespace bc {

// Programmatic dependent launch (sm_90+; no-ops before). A kernel launched as dependent
// (baracuda._cuda.launch, dependent=True) calls pdl_wait() before its first global memory
// access: it returns once the stream's previous kernel has finished and its writes are
// visible. pdl_launch_dependents() lets the next, dependent kernel start launching while
// this one's blocks still run (it waits in pdl_wait).
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Asks L2 for `bytes` (a multiple of 16) from the 16-byte aligned `p` on, one bulk prefetch
// (cp.async.bulk.prefetch.L2, sm_90); before sm_90, nothing.
__device__ __forceinline__ void prefetch_l2_bulk(const void* p, unsigned bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
#endif
}

// 16 bytes from global to shared memory without passing through registers (cp.async,
// sm_80+). cp_async16_fill copies `bytes` (0 or 16) and zero-fills the rest of the 16.
// cp_async_commit() closes this thread's group of copies; cp_async_wait<N>() returns once
// at most N of its groups are still in flight (cp_async_wait_all(): none).
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  const unsigned dst = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async16_fill(void* smem, const void* gmem, int bytes) {
  const unsigned dst = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(gmem), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}
__device__ __forceinline__ void cp_async_wait_all() { cp_async_wait<0>(); }

typedef long long i64;
constexpr int kMaxRank = 8;

// Grid-wide barrier of a cooperative launch (baracuda._cuda.launch, cooperative=True: every
// block resident), the body of cooperative_groups::this_grid().sync(), whose header
// needs CCCL's <nv/target>, which the CUDA runtime-header wheels do not ship. The driver
// gives a cooperative launch a workspace, its address in %envreg1 (high word) and %envreg2
// (low word), cooperative_groups/details/driver_abi.h. Thread 0 of every block adds to its
// barrier word: 1, or for block (0, 0, 0) 2^31 - (blocks - 1), so the word's top bit flips
// when the last block arrives and its low bits are back where they were. Release on
// arrival, acquire while polling. One thread a block calls grid_arrive(), which returns a
// token, and later grid_wait(token), which returns once every block has arrived; the caller
// synchronises its block around both (__syncthreads() before arriving and after waiting is
// this_grid().sync()). Work between the two overlaps the barrier; the release covers only
// what the arriving thread wrote (and what its block made visible to it before, e.g. by
// __syncthreads).
__device__ __forceinline__ unsigned* grid_barrier_word() {
  unsigned hi, lo;
  asm("mov.u32 %0, %%envreg1;" : "=r"(hi));
  asm("mov.u32 %0, %%envreg2;" : "=r"(lo));
  // struct grid_workspace { unsigned wsSize; unsigned barrier; }
  return reinterpret_cast<unsigned*>(((unsigned long long)hi << 32 | lo) + 4);
}
__device__ __forceinline__ unsigned grid_arrive() {
  const unsigned blocks = gridDim.x * gridDim.y * gridDim.z;
  const unsigned add = blockIdx.x + blockIdx.y + blockIdx.z == 0 ? 0x80000000u - (blocks - 1) : 1u;
  unsigned old;
  asm volatile("atom.add.release.gpu.u32 %0, [%1], %2;"
               : "=r"(old) : "l"(grid_barrier_word()), "r"(add) : "memory");
  return old;
}
__device__ __forceinline__ void grid_wait(unsigned token) {
  const unsigned* bar = grid_barrier_word();
  unsigned now;
  do {
    asm volatile("ld.acquire.gpu.u32 %0, [%1];" : "=r"(now) : "l"(bar) : "memory");
  } while (((token ^ now) & 0x80000000u) == 0);
}

// Mirrors baracuda._cuda.abi.Shape / Strides (ctypes): passed by value.
struct Shape {
  i64 v[kMaxRank];
  int rank;
};
struct Strides {
  i64 v[kMaxRank];  // in elements
};
struct Coord {
  i64 v[kMaxRank];
};

// Row-major unravel of a linear index over `s` (dims 0..rank-1, last fastest).
// Unrolled over kMaxRank with a guard so the coordinates stay in registers.
__device__ __forceinline__ void unravel(i64 linear, const Shape& s, Coord& c) {
#pragma unroll
  for (int d = kMaxRank - 1; d >= 0; --d) {
    if (d < s.rank) {
      const i64 e = s.v[d];
      const i64 q = linear / e;
      c.v[d] = linear - q * e;
      linear = q;
    } else {
      c.v[d] = 0;
    }
  }
}

__device__ __forceinline__ i64 dot(const Coord& c, const Strides& st, int rank) {
  i64 off = 0;
#pragma unroll
  for (int d = 0; d < kMaxRank; ++d) {
    if (d < rank) off += c.v[d] * st.v[d];
  }
  return off;
}

__device__ __forceinline__ i64 offset_of(i64 linear, const Shape& s, const Strides& st) {
  Coord c;
  unravel(linear, s, c);
  return dot(c, st, s.rank);
}

// ---- conversions between storage and accumulator types ----
__device__ __forceinline__ float to_acc(float x) { return x; }
__device__ __forceinline__ double to_acc(double x) { return x; }
__device__ __forceinline__ float to_acc(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_acc(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T>
struct Cast;
template <>
struct Cast<float> {
  __device__ __forceinline__ static float from(float x) { return x; }
  __device__ __forceinline__ static float from(double x) { return (float)x; }
};
template <>
struct Cast<double> {
  __device__ __forceinline__ static double from(double x) { return x; }
  __device__ __forceinline__ static double from(float x) { return (double)x; }
};
template <>
struct Cast<__half> {
  __device__ __forceinline__ static __half from(float x) { return __float2half_rn(x); }
};
template <>
struct Cast<__nv_bfloat16> {
  __device__ __forceinline__ static __nv_bfloat16 from(float x) { return __float2bfloat16_rn(x); }
};
template <typename T, typename A>
__device__ __forceinline__ T from_acc(A x) {
  return Cast<T>::from(x);
}

// ---- numeric limits of the accumulator types ----
template <typename A>
__device__ __forceinline__ A inf();
template <>
__device__ __forceinline__ float inf<float>() { return __int_as_float(0x7f800000); }
template <>
__device__ __forceinline__ double inf<double>() { return __longlong_as_double(0x7ff0000000000000LL); }
template <typename A>
__device__ __forceinline__ A quiet_nan();
template <>
__device__ __forceinline__ float quiet_nan<float>() { return __int_as_float(0x7fffffff); }
template <>
__device__ __forceinline__ double quiet_nan<double>() { return __longlong_as_double(0x7ff8000000000000LL); }

// ---- 16-byte vectors for contiguous fast paths ----
template <typename T>
struct alignas(16) Vec16 {
  static constexpr int kLanes = 16 / sizeof(T);
  T v[kLanes];
};

// Streaming (evict-first) 16-byte accesses for data touched once: keeps L2 for what is reused.
template <typename V>
__device__ __forceinline__ V load_stream(const V* p) {
  static_assert(sizeof(V) == 16, "16-byte vectors only");
  const int4 r = __ldcs(reinterpret_cast<const int4*>(p));
  V v;
  memcpy(&v, &r, 16);
  return v;
}
template <typename V>
__device__ __forceinline__ void store_stream(V* p, const V& v) {
  static_assert(sizeof(V) == 16, "16-byte vectors only");
  int4 r;
  memcpy(&r, &v, 16);
  __stcs(reinterpret_cast<int4*>(p), r);
}

// ---- warp and block reductions ----
__device__ __forceinline__ unsigned lane_id() { return threadIdx.x & 31u; }

// The lanes of this thread's group of W aligned lanes (W a power of two <= 32; W == 1: the
// thread alone). Groups narrower than a warp may leave their loops at different times, so
// their shuffles name their own lanes only.
template <int W>
__device__ __forceinline__ unsigned lanes_mask() {
  if constexpr (W >= 32)
    return 0xffffffffu;
  else
    return ((1u << W) - 1u) << (lane_id() & ~(unsigned)(W - 1));
}

// Butterfly sum over this thread's group of W aligned lanes (W = 32: the warp); every lane
// gets the result.
template <int W, typename A>
__device__ __forceinline__ A lanes_sum(A x) {
  const unsigned mask = lanes_mask<W>();
#pragma unroll
  for (int o = W / 2; o > 0; o >>= 1) x += __shfl_xor_sync(mask, x, o);
  return x;
}

// Block-wide reduction through `scratch` (>= 32 elements of A in shared memory).
// Every thread of the block must call it; every thread gets the result.
template <typename A, typename Op>
__device__ __forceinline__ A block_reduce(A x, A* scratch, Op op) {
  const unsigned warp = threadIdx.x >> 5;
  const unsigned nwarps = (blockDim.x + 31u) >> 5;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x = op(x, __shfl_xor_sync(0xffffffffu, x, o));
  __syncthreads();  // scratch may still be read from a previous call
  if (lane_id() == 0) scratch[warp] = x;
  __syncthreads();
  A r = scratch[0];
  for (unsigned w = 1; w < nwarps; ++w) r = op(r, scratch[w]);
  return r;
}

struct SumOp {
  template <typename A>
  __device__ __forceinline__ A operator()(A a, A b) const { return a + b; }
};
struct MaxOp {
  template <typename A>
  __device__ __forceinline__ A operator()(A a, A b) const { return fmax(a, b); }
};

}  // namespace bc
