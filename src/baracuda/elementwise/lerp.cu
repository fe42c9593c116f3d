// Lerp, forward and backward.
//   forward:  out = a + w (b - a)   (PyTorch's form: b - (b - a)(1 - w) when |w| >= 0.5)
//   backward: da = (1 - w) dy,  db = w dy   (no saved tensors)
// Two layouts per direction: *_vec for contiguous 16-byte-aligned tensors (Vec16 loads) and
// *_strided for any strides (rank <= 8, 64-bit offsets). The forward's vec kernel takes one
// vector of each input a thread in blocks of 128 (as torch's elementwise kernels do): on the
// H200 (benchmarks/lerp_variants.py) 0.5-1 us faster than 4 vectors a thread in blocks of 256
// at 2^24 and 2^25 elements, 3-6 us at 2^28, level at 2^22. The backward's likewise (f32:
// 4.6 us at 2^25, 42 us at 2^28) where dy holds more than 16 MiB; up to 16 MiB it takes 4
// vectors a thread in blocks of 256 (lerp_bwd_vec4), 0.6-1.1 us faster at 2^22 elements.

namespace bc {

template <typename A>
__device__ __forceinline__ A lerp_math(A x, A y, A w) {
  return fabs(w) < A(0.5) ? x + w * (y - x) : y - (y - x) * (A(1) - w);
}

constexpr int kFwdBlock = 128, kFwdUnroll = 1;  // ElementwiseLauncher(block=, unroll=)
constexpr int kBwdBlock = 128, kBwdUnroll = 1;
constexpr int kBwdSmallBlock = 256, kBwdSmallUnroll = 4;  // lerp_bwd_vec4: dy of <= 16 MiB

template <typename T, typename A, int U>
__device__ __forceinline__ void lerp_fwd_vec(const T* __restrict__ a, const T* __restrict__ b,
                                             T* __restrict__ out, A w, i64 n) {
  typedef Vec16<T> V;
  constexpr int L = V::kLanes;
  const i64 nvec = n / L;
  const V* va = reinterpret_cast<const V*>(a);
  const V* vb = reinterpret_cast<const V*>(b);
  V* vo = reinterpret_cast<V*>(out);
  const i64 step = (i64)gridDim.x * blockDim.x * U;
  for (i64 base = (i64)blockIdx.x * blockDim.x * U + threadIdx.x; base < nvec; base += step) {
    V xa[U], xb[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const i64 i = base + (i64)u * blockDim.x;
      if (i < nvec) { xa[u] = va[i]; xb[u] = vb[i]; }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const i64 i = base + (i64)u * blockDim.x;
      if (i < nvec) {
        V r;
#pragma unroll
        for (int l = 0; l < L; ++l)
          r.v[l] = from_acc<T>(lerp_math<A>(to_acc(xa[u].v[l]), to_acc(xb[u].v[l]), w));
        vo[i] = r;
      }
    }
  }
  const i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x;
  const i64 tail = nvec * L + t;
  if (tail < n) out[tail] = from_acc<T>(lerp_math<A>(to_acc(a[tail]), to_acc(b[tail]), w));
}

template <typename T, typename A>
__device__ __forceinline__ void lerp_fwd_strided(const T* a, const T* b, T* out, A w, i64 n,
                                                 const Shape& shape, const Strides& sa,
                                                 const Strides& sb, const Strides& so) {
  const i64 step = (i64)gridDim.x * blockDim.x;
  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
    Coord c;
    unravel(i, shape, c);
    const A x = to_acc(a[dot(c, sa, shape.rank)]);
    const A y = to_acc(b[dot(c, sb, shape.rank)]);
    out[dot(c, so, shape.rank)] = from_acc<T>(lerp_math<A>(x, y, w));
  }
}

template <typename T, typename A, int U>
__device__ __forceinline__ void lerp_bwd_vec(const T* __restrict__ dy, T* __restrict__ da,
                                             T* __restrict__ db, A w, i64 n) {
  typedef Vec16<T> V;
  constexpr int L = V::kLanes;
  const i64 nvec = n / L;
  const V* vdy = reinterpret_cast<const V*>(dy);
  V* vda = reinterpret_cast<V*>(da);
  V* vdb = reinterpret_cast<V*>(db);
  const A wa = A(1) - w;
  const i64 step = (i64)gridDim.x * blockDim.x * U;
  for (i64 base = (i64)blockIdx.x * blockDim.x * U + threadIdx.x; base < nvec; base += step) {
    V g[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const i64 i = base + (i64)u * blockDim.x;
      if (i < nvec) g[u] = vdy[i];
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const i64 i = base + (i64)u * blockDim.x;
      if (i < nvec) {
        V ra, rb;
#pragma unroll
        for (int l = 0; l < L; ++l) {
          const A x = to_acc(g[u].v[l]);
          ra.v[l] = from_acc<T>(wa * x);
          rb.v[l] = from_acc<T>(w * x);
        }
        vda[i] = ra;
        vdb[i] = rb;
      }
    }
  }
  const i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x;
  const i64 tail = nvec * L + t;
  if (tail < n) {
    const A x = to_acc(dy[tail]);
    da[tail] = from_acc<T>(wa * x);
    db[tail] = from_acc<T>(w * x);
  }
}

template <typename T, typename A>
__device__ __forceinline__ void lerp_bwd_strided(const T* dy, T* da, T* db, A w, i64 n,
                                                 const Shape& shape, const Strides& sdy,
                                                 const Strides& sda, const Strides& sdb) {
  const A wa = A(1) - w;
  const i64 step = (i64)gridDim.x * blockDim.x;
  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
    Coord c;
    unravel(i, shape, c);
    const A x = to_acc(dy[dot(c, sdy, shape.rank)]);
    da[dot(c, sda, shape.rank)] = from_acc<T>(wa * x);
    db[dot(c, sdb, shape.rank)] = from_acc<T>(w * x);
  }
}

}  // namespace bc

BC_KERNEL(lerp_fwd_vec, bc::kFwdBlock)(const BC_T* a, const BC_T* b, BC_T* out, BC_ACC w,
                                      bc::i64 n) {
  bc::lerp_fwd_vec<BC_T, BC_ACC, bc::kFwdUnroll>(a, b, out, w, n);
}
BC_KERNEL(lerp_fwd_strided, 256)(const BC_T* a, const BC_T* b, BC_T* out, BC_ACC w, bc::i64 n,
                                 bc::Shape shape, bc::Strides sa, bc::Strides sb, bc::Strides so) {
  bc::lerp_fwd_strided<BC_T, BC_ACC>(a, b, out, w, n, shape, sa, sb, so);
}
BC_KERNEL(lerp_bwd_vec, bc::kBwdBlock)(const BC_T* dy, BC_T* da, BC_T* db, BC_ACC w,
                                      bc::i64 n) {
  bc::lerp_bwd_vec<BC_T, BC_ACC, bc::kBwdUnroll>(dy, da, db, w, n);
}
BC_KERNEL(lerp_bwd_vec4, bc::kBwdSmallBlock)(const BC_T* dy, BC_T* da, BC_T* db, BC_ACC w,
                                            bc::i64 n) {
  bc::lerp_bwd_vec<BC_T, BC_ACC, bc::kBwdSmallUnroll>(dy, da, db, w, n);
}
BC_KERNEL(lerp_bwd_strided, 256)(const BC_T* dy, BC_T* da, BC_T* db, BC_ACC w, bc::i64 n,
                                 bc::Shape shape, bc::Strides sdy, bc::Strides sda,
                                 bc::Strides sdb) {
  bc::lerp_bwd_strided<BC_T, BC_ACC>(dy, da, db, w, n, shape, sdy, sda, sdb);
}
