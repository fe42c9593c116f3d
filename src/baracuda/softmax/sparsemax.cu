// Sparsemax, forward and backward, over rows of any length.
//
// forward:  z = x - max(x);  y = max(z - tau, 0)  with tau such that sum(y) = 1.
//           tau by Michelot's fixed point, started at tau0 = -1 (<= tau*):
//             tau <- (sum_{z > tau} z - 1) / |{z > tau}|
//           rises monotonically and stops exactly when the support stops changing (its size
//           strictly decreases every other step, so at most n + 1 steps). No sort.
//           Shifting by the max first keeps the max elements exactly 0, so huge magnitudes
//           (|x| >> 1, where x - 1 == x) still give the right support.
//           A row holding NaN or +inf, or made only of -inf, gives NaN throughout.
// backward: m = (y > 0);  dx = m * (dy - sum_m dy / |m|)   (dy is only used where y > 0;
//           with flags bit 1 it is loaded beside y, else only where y > 0).
//
// Each row is handled by a group of G threads (a warp or a whole block):
//   *_reg_*   the row lives in registers (K values per thread, n <= K * G);
//   *_stream  any n: one block per row, re-reading the row from global memory (L2); the
//             forward compacts the candidates z > tau into shared memory (per-warp lists,
//             ordered by ballot, so sums are deterministic) and iterates there once they fit.
// Rows: `rows` of them, row r at offset_of(r, outer, s_outer) in each tensor, elements `n`
// apart by the per-tensor axis stride. `vec` (host-checked): axis stride 1 and every row
// start 16-byte aligned, so 16-byte vectors may be used.

namespace bc {
namespace smx {

template <typename A>
__device__ __forceinline__ A nan_max(A a, A b) {
  return (a > b || a != a) ? a : b;  // propagates NaN, unlike fmax
}

template <typename A>
__device__ __forceinline__ bool finite(A a) {
  return a - a == A(0);  // false for NaN and +-inf
}

// NaN-propagating max over this thread's group of W aligned lanes (common.cuh lanes_mask).
template <int W, typename A>
__device__ __forceinline__ A lanes_nan_max(A x) {
  const unsigned mask = lanes_mask<W>();
#pragma unroll
  for (int o = W / 2; o > 0; o >>= 1) x = nan_max(x, __shfl_xor_sync(mask, x, o));
  return x;
}

// Reductions over a group of G threads: aligned lanes of a warp (G <= 32) or the whole block
// (G == blockDim). Every thread of the group must call them; every thread gets the result.
// Block versions sum the per-warp partials in warp order, so results do not depend on
// scheduling.
template <int G, typename A>
__device__ __forceinline__ A group_max(A x) {
  x = lanes_nan_max<(G < 32 ? G : 32)>(x);
  if constexpr (G > 32) {
    __shared__ A scratch[32];
    __syncthreads();
    if (lane_id() == 0) scratch[threadIdx.x >> 5] = x;
    __syncthreads();
    x = scratch[0];
    for (int w = 1; w < G / 32; ++w) x = nan_max(x, scratch[w]);
  }
  return x;
}

// A sum and a count; C = int where the count fits (rows in registers: one 32-bit shuffle a
// step instead of two), i64 for streamed rows.
template <int G, typename A, typename C>
__device__ __forceinline__ void group_sum2(A& s, C& c) {
  s = lanes_sum<(G < 32 ? G : 32)>(s);
  c = lanes_sum<(G < 32 ? G : 32)>(c);
  if constexpr (G > 32) {
    __shared__ A ss[32];
    __shared__ C sc[32];
    __syncthreads();
    if (lane_id() == 0) {
      ss[threadIdx.x >> 5] = s;
      sc[threadIdx.x >> 5] = c;
    }
    __syncthreads();
    s = ss[0];
    c = sc[0];
    for (int w = 1; w < G / 32; ++w) {
      s += ss[w];
      c += sc[w];
    }
  }
}

// The group's sum of `s` over its `cnt` support elements, divided by their count (0 for an
// empty support): the backward's mean of dy over the support.
template <int G, typename A, typename C>
__device__ __forceinline__ A group_mean(A s, C cnt) {
  group_sum2<G>(s, cnt);
  return cnt > 0 ? s / (A)cnt : A(0);
}

// 16-byte vectors moved as uint4, converted lane by lane to and from the accumulator type.
// Going through uint4 (not a struct of T) makes every access one LDG.128 / STG.128 for all
// four types (a struct of __nv_bfloat16 or __half was stored as eight 2-byte stores).
template <typename T>
struct Pack;
template <>
struct Pack<float> {
  static constexpr int L = 4;
  __device__ __forceinline__ static void unpack(const uint4& r, float (&v)[4]) {
    v[0] = __uint_as_float(r.x);
    v[1] = __uint_as_float(r.y);
    v[2] = __uint_as_float(r.z);
    v[3] = __uint_as_float(r.w);
  }
  __device__ __forceinline__ static uint4 pack(const float (&v)[4]) {
    return make_uint4(__float_as_uint(v[0]), __float_as_uint(v[1]), __float_as_uint(v[2]),
                      __float_as_uint(v[3]));
  }
};
template <>
struct Pack<double> {
  static constexpr int L = 2;
  __device__ __forceinline__ static void unpack(const uint4& r, double (&v)[2]) {
    v[0] = __hiloint2double((int)r.y, (int)r.x);
    v[1] = __hiloint2double((int)r.w, (int)r.z);
  }
  __device__ __forceinline__ static uint4 pack(const double (&v)[2]) {
    return make_uint4((unsigned)__double2loint(v[0]), (unsigned)__double2hiint(v[0]),
                      (unsigned)__double2loint(v[1]), (unsigned)__double2hiint(v[1]));
  }
};
// 2-byte types: eight values as four pairs, each pair converted by the type's lo_hi / two.
template <class P>
struct PackPairs {
  static constexpr int L = 8;
  __device__ __forceinline__ static void unpack(const uint4& r, float (&v)[8]) {
    P::lo_hi(r.x, v[0], v[1]);
    P::lo_hi(r.y, v[2], v[3]);
    P::lo_hi(r.z, v[4], v[5]);
    P::lo_hi(r.w, v[6], v[7]);
  }
  __device__ __forceinline__ static uint4 pack(const float (&v)[8]) {
    return make_uint4(P::two(v[0], v[1]), P::two(v[2], v[3]), P::two(v[4], v[5]),
                      P::two(v[6], v[7]));
  }
};
template <>
struct Pack<__nv_bfloat16> : PackPairs<Pack<__nv_bfloat16>> {
  __device__ __forceinline__ static void lo_hi(unsigned w, float& a, float& b) {
    a = __uint_as_float(w << 16);  // bf16 -> f32 is exact: the top half of the f32 bits
    b = __uint_as_float(w & 0xffff0000u);
  }
  __device__ __forceinline__ static unsigned two(float a, float b) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);  // a in the low half
    unsigned u;
    memcpy(&u, &h, 4);
    return u;
  }
};
template <>
struct Pack<__half> : PackPairs<Pack<__half>> {
  __device__ __forceinline__ static void lo_hi(unsigned w, float& a, float& b) {
    __half2 h;
    memcpy(&h, &w, 4);
    const float2 f = __half22float2(h);
    a = f.x;
    b = f.y;
  }
  __device__ __forceinline__ static unsigned two(float a, float b) {
    const __half2 h = __floats2half2_rn(a, b);
    unsigned u;
    memcpy(&u, &h, 4);
    return u;
  }
};

// 16 bytes at p (16-byte aligned) to / from L accumulator values. `ld16cs` / `st16cs`
// stream (evict-first): for data touched once.
template <typename T, typename A, int L>
__device__ __forceinline__ void ld16(const T* p, A (&v)[L]) {
  static_assert(L == Pack<T>::L, "16-byte vectors only");
  const uint4 r = *reinterpret_cast<const uint4*>(p);  // one 16-byte load, then unpack
  Pack<T>::unpack(r, v);
}
template <typename T, typename A, int L>
__device__ __forceinline__ void ld16cs(const T* p, A (&v)[L]) {
  static_assert(L == Pack<T>::L, "16-byte vectors only");
  Pack<T>::unpack(__ldcs(reinterpret_cast<const uint4*>(p)), v);
}
template <typename T, typename A, int L>
__device__ __forceinline__ void st16(T* p, const A (&v)[L]) {
  static_assert(L == Pack<T>::L, "16-byte vectors only");
  *reinterpret_cast<uint4*>(p) = Pack<T>::pack(v);
}
template <typename T, typename A, int L>
__device__ __forceinline__ void st16cs(T* p, const A (&v)[L]) {
  static_assert(L == Pack<T>::L, "16-byte vectors only");
  __stcs(reinterpret_cast<uint4*>(p), Pack<T>::pack(v));
}

// Lanes per 16-byte vector, or 1 when K values per thread cannot be split into vectors.
template <typename T, int K>
struct RegLanes {
  static constexpr int kVec = Vec16<T>::kLanes;
  static constexpr int value = (K % kVec == 0) ? kVec : 1;
};

// Loads this thread's K values of a row: chunk c holds elements (c * G + t) * L + l.
// Elements past the row end read as `pad`.
template <typename T, typename A, int K, int G, bool kOnce = true>
__device__ __forceinline__ void load_regs(const T* row, i64 n, i64 stride, bool vec, int t,
                                          A pad, A (&v)[K]) {
  constexpr int L = RegLanes<T, K>::value;
#pragma unroll
  for (int c = 0; c < K / L; ++c) {
    const i64 e0 = ((i64)c * G + t) * L;
    if constexpr (L > 1) {
      if (vec && e0 + L <= n) {
        A w[L];
        if constexpr (kOnce)
          ld16cs<T, A, L>(row + e0, w);  // touched once: evict first
        else
          ld16<T, A, L>(row + e0, w);  // read again later: keep in L2
#pragma unroll
        for (int l = 0; l < L; ++l) v[c * L + l] = w[l];
        continue;
      }
    }
#pragma unroll
    for (int l = 0; l < L; ++l) {
      const i64 e = e0 + l;
      v[c * L + l] = e < n ? to_acc(row[e * stride]) : pad;
    }
  }
}

template <typename T, typename A, int K, int G>
__device__ __forceinline__ void store_regs(T* row, i64 n, i64 stride, bool vec, int t,
                                           const A (&v)[K]) {
  constexpr int L = RegLanes<T, K>::value;
#pragma unroll
  for (int c = 0; c < K / L; ++c) {
    const i64 e0 = ((i64)c * G + t) * L;
    if constexpr (L > 1) {
      if (vec && e0 + L <= n) {
        A w[L];
#pragma unroll
        for (int l = 0; l < L; ++l) w[l] = v[c * L + l];
        st16cs<T, A, L>(row + e0, w);
        continue;
      }
    }
#pragma unroll
    for (int l = 0; l < L; ++l) {
      const i64 e = e0 + l;
      if (e < n) row[e * stride] = from_acc<T>(v[c * L + l]);
    }
  }
}

struct RowArgs {
  i64 rows;
  i64 n;
};

// ------------------------------------------------------------------------------------------
// forward, row in registers
// ------------------------------------------------------------------------------------------
template <typename T, typename A, int K, int G, int BLOCK>
__device__ __forceinline__ void fwd_reg(const T* x, T* y, i64 rows, i64 n, const Shape& outer,
                                        const Strides& sxo, const Strides& syo, i64 sx, i64 sy,
                                        bool vec) {
  constexpr int RPB = BLOCK / G;  // rows per block
  const int t = threadIdx.x % G;
  const i64 first = (i64)blockIdx.x * RPB + threadIdx.x / G;
  const i64 step = (i64)gridDim.x * RPB;
  // The loop bound is uniform across a group, so group reductions stay convergent. For
  // G == BLOCK every thread of the block takes the same rows.
  for (i64 r = first; r < rows; r += step) {
    Coord cd;
    unravel(r, outer, cd);
    const T* xr = x + dot(cd, sxo, outer.rank);
    T* yr = y + dot(cd, syo, outer.rank);
    A v[K];
    load_regs<T, A, K, G>(xr, n, sx, vec, t, -inf<A>(), v);
    A m = v[0];
#pragma unroll
    for (int k = 1; k < K; ++k) m = nan_max(m, v[k]);
    m = group_max<G>(m);
    if (!finite(m)) {
#pragma unroll
      for (int k = 0; k < K; ++k) v[k] = quiet_nan<A>();
      store_regs<T, A, K, G>(yr, n, sy, vec, t, v);
      continue;
    }
#pragma unroll
    for (int k = 0; k < K; ++k) v[k] -= m;  // padding stays -inf
    A tau = A(-1);
    int prev = (int)n + 1;  // n <= K * G <= 8192
    while (true) {
      A s = 0;
      int c = 0;
#pragma unroll
      for (int k = 0; k < K; ++k) {
        if (v[k] > tau) {
          s += v[k];
          ++c;
        }
      }
      group_sum2<G>(s, c);
      if (c >= prev) break;  // support unchanged: tau is final
      prev = c;
      tau = (s - A(1)) / (A)c;  // c >= 1: the max (z = 0) always exceeds tau <= -1/c
    }
#pragma unroll
    for (int k = 0; k < K; ++k) v[k] = v[k] > tau ? v[k] - tau : A(0);
    store_regs<T, A, K, G>(yr, n, sy, vec, t, v);
  }
}

// ------------------------------------------------------------------------------------------
// forward, streaming (any n): one block per row
// ------------------------------------------------------------------------------------------
constexpr int kStreamBlock = 512;
constexpr int kStreamWarps = kStreamBlock / 32;
constexpr int kCandPerWarp = 256;  // candidates kept in shared memory per warp

// Calls f(v, ok) for chunks of L consecutive elements of the row, chunk index c0 + threadIdx.x
// for c0 = 0, blockDim.x, ...: the loop bound is uniform across the block (ballot-safe).
template <int L, typename T, typename A, typename F>
__device__ __forceinline__ void for_chunks(const T* row, i64 n, i64 stride, F&& f) {
  const i64 nchunk = (n + L - 1) / L;
#pragma unroll 4
  for (i64 c0 = 0; c0 < nchunk; c0 += blockDim.x) {
    const i64 c = c0 + threadIdx.x;
    A v[L];
    bool ok[L];
    if (L > 1 && (c + 1) * L <= n) {
      if constexpr (L > 1) ld16<T, A, L>(row + c * L, v);
#pragma unroll
      for (int l = 0; l < L; ++l) ok[l] = true;
    } else {
#pragma unroll
      for (int l = 0; l < L; ++l) {
        const i64 e = c * L + l;
        ok[l] = e < n;
        v[l] = ok[l] ? to_acc(row[e * stride]) : -inf<A>();
      }
    }
    f(v, ok);
  }
}

template <int L, typename T, typename A>
__device__ __forceinline__ A stream_max(const T* row, i64 n, i64 stride) {
  A m = -inf<A>();
  for_chunks<L, T, A>(row, n, stride, [&](const A (&v)[L], const bool (&)[L]) {
#pragma unroll
    for (int l = 0; l < L; ++l) m = nan_max(m, v[l]);
  });
  return group_max<kStreamBlock>(m);
}

// One Michelot step over the whole row (z = x - m): sum and count of z > tau, and the
// candidates z > tau appended to this warp's list while they fit (`fill`, `overflow`).
template <int L, typename T, typename A>
__device__ __forceinline__ void stream_step(const T* row, i64 n, i64 stride, A m, A tau,
                                            A* cand, int& fill, bool& overflow, A& s, i64& c) {
  const unsigned lt = (1u << lane_id()) - 1u;
  for_chunks<L, T, A>(row, n, stride, [&](const A (&v)[L], const bool (&ok)[L]) {
#pragma unroll
    for (int l = 0; l < L; ++l) {
      const A z = v[l] - m;
      const bool p = ok[l] && z > tau;
      if (p) {
        s += z;
        ++c;
      }
      const unsigned b = __ballot_sync(0xffffffffu, p);
      const int cnt = __popc(b);
      if (fill + cnt <= kCandPerWarp) {
        if (p) cand[fill + __popc(b & lt)] = z;
        fill += cnt;
      } else if (cnt) {
        overflow = true;
      }
    }
  });
}

template <int L, typename T, typename A>
__device__ __forceinline__ void stream_write(const T* xr, T* yr, i64 n, i64 sx, i64 sy, A m,
                                             A tau, bool nan_row) {
  const i64 nchunk = (n + L - 1) / L;
  for (i64 c = threadIdx.x; c < nchunk; c += blockDim.x) {
    A v[L];
    if (L > 1 && (c + 1) * L <= n) {
      if constexpr (L > 1) {
        ld16<T, A, L>(xr + c * L, v);
#pragma unroll
        for (int l = 0; l < L; ++l) {
          const A z = v[l] - m;
          v[l] = nan_row ? quiet_nan<A>() : (z > tau ? z - tau : A(0));
        }
        st16cs<T, A, L>(yr + c * L, v);
      }
    } else {
#pragma unroll
      for (int l = 0; l < L; ++l) {
        const i64 e = c * L + l;
        if (e < n) {
          const A z = to_acc(xr[e * sx]) - m;
          v[l] = nan_row ? quiet_nan<A>() : (z > tau ? z - tau : A(0));
          yr[e * sy] = from_acc<T>(v[l]);
        }
      }
    }
  }
}

// tau of a row with finite max m, by Michelot steps over the row (block-wide).
template <int L, typename T, typename A>
__device__ __forceinline__ A stream_tau(const T* xr, i64 n, i64 sx, A m, A* cand) {
  A tau = A(-1);
  i64 prev = n + 1;
  bool listed = false;  // this block's candidates z > tau are all in the per-warp lists
  int fill = 0;         // warp-uniform: entries in this warp's list
  while (true) {
    A s = 0;
    i64 c = 0;
    bool overflow = false;
    if (!listed) {
      fill = 0;
      stream_step<L, T, A>(xr, n, sx, m, tau, cand, fill, overflow, s, c);
    } else {
      __syncwarp();
      for (int j = lane_id(); j < fill; j += 32) {
        const A z = cand[j];
        if (z > tau) {
          s += z;
          ++c;
        }
      }
    }
    // The overflow flag rides in the count's top bits: one reduction for all three.
    i64 cf = c + (overflow ? (i64(1) << 48) : 0);
    group_sum2<kStreamBlock>(s, cf);
    const bool any_overflow = cf >= (i64(1) << 48);
    c = cf & ((i64(1) << 48) - 1);
    if (!listed && !any_overflow) listed = true;
    if (c >= prev) break;
    prev = c;
    tau = (s - A(1)) / (A)c;
  }
  return tau;
}

template <int L, typename T, typename A>
__device__ __forceinline__ void fwd_stream_row(const T* xr, T* yr, i64 n, i64 sx, i64 sy,
                                               A* cand) {
  const A m = stream_max<L, T, A>(xr, n, sx);
  if (!finite(m)) {
    stream_write<L, T, A>(xr, yr, n, sx, sy, m, A(0), true);
    return;
  }
  const A tau = stream_tau<L, T, A>(xr, n, sx, m, cand);
  stream_write<L, T, A>(xr, yr, n, sx, sy, m, tau, false);
}

template <typename T, typename A>
__device__ __forceinline__ void fwd_stream(const T* x, T* y, i64 rows, i64 n, const Shape& outer,
                                           const Strides& sxo, const Strides& syo, i64 sx,
                                           i64 sy, bool vec) {
  __shared__ A cand_all[kStreamWarps * kCandPerWarp];
  A* cand = cand_all + (threadIdx.x >> 5) * kCandPerWarp;
  for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
    Coord cd;
    unravel(r, outer, cd);
    const T* xr = x + dot(cd, sxo, outer.rank);
    T* yr = y + dot(cd, syo, outer.rank);
    if (vec)
      fwd_stream_row<Vec16<T>::kLanes, T, A>(xr, yr, n, sx, sy, cand);
    else
      fwd_stream_row<1, T, A>(xr, yr, n, sx, sy, cand);
  }
}

// ------------------------------------------------------------------------------------------
// forward, split rows (few long rows): three kernels over a workspace
//   scan:  block (piece, row) holds kSplitPiece elements in registers: the piece max m_p and
//          the piece's values x with x - m_p > -1 (at most kSplitCand, in thread order; the
//          count is stored even when larger). As m_p <= m (the row max) and rounding is
//          monotone, they include every x of the piece with x - m > -1 = tau0: every value
//          a Michelot step from tau0 can count.
//   tau:   one block per row: m = max of the m_p; tau by Michelot steps over the listed
//          values (z = x - m > tau, in piece order); if any piece overflowed its list, over
//          the whole row instead (as the streaming kernel). Stores (m, tau) per row.
//   write: block (piece, row): y = max(x - m - tau, 0) (NaN rows when m is not finite).
// ------------------------------------------------------------------------------------------
constexpr int kSplitK = 16;
constexpr int kSplitBlock = 512;
constexpr i64 kSplitPiece = (i64)kSplitK * kSplitBlock;  // 8192: a multiple of every vector
constexpr int kSplitCand = 512;

template <typename T, typename A>
__device__ __forceinline__ void fwd_split_scan(const T* x, i64 rows, i64 n, const Shape& outer,
                                               const Strides& sxo, i64 sx, bool vec, A* ws_max,
                                               int* ws_cnt, A* ws_cand, i64 pieces) {
  __shared__ int wsum[kSplitBlock / 32];
  const int t = threadIdx.x;
  const int w = t >> 5;
  for (i64 r = blockIdx.y; r < rows; r += gridDim.y) {
    Coord cd;
    unravel(r, outer, cd);
    const T* xr = x + dot(cd, sxo, outer.rank);
    for (i64 p = blockIdx.x; p < pieces; p += gridDim.x) {
      const i64 b = p * kSplitPiece;
      const i64 len = min(kSplitPiece, n - b);
      A v[kSplitK];
      load_regs<T, A, kSplitK, kSplitBlock, false>(xr + b * sx, len, sx, vec, t, -inf<A>(), v);
      A mp = v[0];
#pragma unroll
      for (int k = 1; k < kSplitK; ++k) mp = nan_max(mp, v[k]);
      mp = group_max<kSplitBlock>(mp);
      // NaN or infinite mp: no value passes (x - mp is NaN or -inf), the tau kernel sees mp.
      int c = 0;
#pragma unroll
      for (int k = 0; k < kSplitK; ++k) c += (v[k] - mp > A(-1)) ? 1 : 0;
      int incl = c;  // inclusive scan over the warp, then over the warps in order
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const int u = __shfl_up_sync(0xffffffffu, incl, o);
        if ((int)lane_id() >= o) incl += u;
      }
      __syncthreads();  // wsum of the previous piece has been read
      if (lane_id() == 31) wsum[w] = incl;
      __syncthreads();
      int base = 0, total = 0;
#pragma unroll
      for (int j = 0; j < kSplitBlock / 32; ++j) {
        base += j < w ? wsum[j] : 0;
        total += wsum[j];
      }
      int off = base + incl - c;
      A* cand = ws_cand + (r * pieces + p) * kSplitCand;
#pragma unroll
      for (int k = 0; k < kSplitK; ++k) {
        if (v[k] - mp > A(-1)) {
          if (off < kSplitCand) cand[off] = v[k];
          ++off;
        }
      }
      if (t == 0) {
        ws_max[r * pieces + p] = mp;
        ws_cnt[r * pieces + p] = total;
      }
    }
  }
}

template <typename T, typename A>
__device__ __forceinline__ void fwd_split_tau(const T* x, i64 rows, i64 n, const Shape& outer,
                                              const Strides& sxo, i64 sx, bool vec,
                                              const A* ws_max, const int* ws_cnt,
                                              const A* ws_cand, A* ws_row, i64 pieces) {
  __shared__ A cand_all[kStreamWarps * kCandPerWarp];
  A* cand = cand_all + (threadIdx.x >> 5) * kCandPerWarp;
  for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
    A m = -inf<A>();
    int over = 0;
    for (i64 p = threadIdx.x; p < pieces; p += blockDim.x) {
      m = nan_max(m, ws_max[r * pieces + p]);
      over |= ws_cnt[r * pieces + p] > kSplitCand ? 1 : 0;
    }
    m = group_max<kStreamBlock>(m);
    over = __syncthreads_or(over);
    A tau = A(0);
    if (finite(m)) {
      if (over) {
        Coord cd;
        unravel(r, outer, cd);
        const T* xr = x + dot(cd, sxo, outer.rank);
        if (vec)
          tau = stream_tau<Vec16<T>::kLanes, T, A>(xr, n, sx, m, cand);
        else
          tau = stream_tau<1, T, A>(xr, n, sx, m, cand);
      } else {
        tau = A(-1);
        i64 prev = n + 1;
        while (true) {
          A s = 0;
          i64 c = 0;
          for (i64 p = 0; p < pieces; ++p) {
            const int cnt = ws_cnt[r * pieces + p];
            const A* cp = ws_cand + (r * pieces + p) * kSplitCand;
            for (int j = threadIdx.x; j < cnt; j += blockDim.x) {
              const A z = cp[j] - m;
              if (z > tau) {
                s += z;
                ++c;
              }
            }
          }
          group_sum2<kStreamBlock>(s, c);
          if (c >= prev) break;  // c >= 1: the row max is listed (z = 0 > -1)
          prev = c;
          tau = (s - A(1)) / (A)c;
        }
      }
    }
    if (threadIdx.x == 0) {
      ws_row[2 * r] = m;
      ws_row[2 * r + 1] = tau;
    }
  }
}

template <typename T, typename A>
__device__ __forceinline__ void fwd_split_write(const T* x, T* y, i64 rows, i64 n,
                                                const Shape& outer, const Strides& sxo,
                                                const Strides& syo, i64 sx, i64 sy, bool vec,
                                                const A* ws_row, i64 pieces) {
  constexpr int LV = Vec16<T>::kLanes;
  for (i64 r = blockIdx.y; r < rows; r += gridDim.y) {
    Coord cd;
    unravel(r, outer, cd);
    const A m = ws_row[2 * r];
    const A tau = ws_row[2 * r + 1];
    const bool nan_row = !finite(m);
    for (i64 p = blockIdx.x; p < pieces; p += gridDim.x) {
      const i64 b = p * kSplitPiece;
      const i64 len = min(kSplitPiece, n - b);
      const T* xr = x + dot(cd, sxo, outer.rank) + b * sx;
      T* yr = y + dot(cd, syo, outer.rank) + b * sy;
      if (vec)
        stream_write<LV, T, A>(xr, yr, len, sx, sy, m, tau, nan_row);
      else
        stream_write<1, T, A>(xr, yr, len, sx, sy, m, tau, nan_row);
    }
  }
}

// ------------------------------------------------------------------------------------------
// backward
// ------------------------------------------------------------------------------------------
// This thread's L values of a row from element e0 unless `done` (already loaded): one
// 16-byte streaming load on the vector path, else element by element (0 past the row end).
template <int L, typename T, typename A>
__device__ __forceinline__ void load_y(const T* yr, i64 e0, i64 n, i64 sy, bool vec, bool done,
                                       A (&w)[L]) {
  if (!done) {
    if constexpr (L > 1) {
      if (vec && e0 + L <= n) {
        ld16cs<T, A, L>(yr + e0, w);
        done = true;
      }
    }
  }
  if (!done) {
#pragma unroll
    for (int l = 0; l < L; ++l) w[l] = e0 + l < n ? to_acc(yr[(e0 + l) * sy]) : A(0);
  }
}

// Sets bit `first + l` of `on` where w[l] > 0 (the support).
template <int L, typename A>
__device__ __forceinline__ void add_support(const A (&w)[L], int first, unsigned& on) {
#pragma unroll
  for (int l = 0; l < L; ++l)
    if (w[l] > A(0)) on |= 1u << (first + l);
}

// Rows in registers (n <= K * G): a group of G threads takes a row. It loads its y vectors
// and keeps only the support mask (bit k: y_k > 0); loads the dy vectors where any y is
// positive and sums them over the support; after the group's reduction it loads those dy
// vectors again (L1 hits: support vectors are few) and writes dx. No value lives across the
// reduction, so the kernels run at 40 registers with 1536 threads an SM (SMX_BWD_REG): more
// rows in flight. Keeping dy in registers, with the next row's y staged in shared memory by
// cp.async over a resident grid (bwd_reg_staged), held 1024 threads an SM: slower for 2-byte
// types (H100 bf16 4096 x 8192: 85.2 vs 75.4 us, 32768 x 1024: 78.4 vs 67.9 us), faster for
// f32 on the 16x64 and 16x512 variants, which keep it for 4- and 8-byte types (_rows.py).
template <typename T, typename A, int K, int G, int BLOCK>
__device__ __forceinline__ void bwd_reg(const T* dy, const T* y, T* dx, i64 rows, i64 n,
                                        const Shape& outer, const Strides& sdyo,
                                        const Strides& syo, const Strides& sdxo, i64 sdy, i64 sy,
                                        i64 sdx, int flags) {
  static_assert(G <= 32 || G == BLOCK, "a group is at most a warp, or the block (group_sum2)");
  static_assert(K <= 32, "the support mask has 32 bits");
  constexpr int RPB = BLOCK / G;
  constexpr int L = RegLanes<T, K>::value;
  constexpr int NV = K / L;
  constexpr unsigned kLaneBits = (1u << L) - 1u;
  const bool vec = flags & 1, dy_all = flags & 2;
  const int t = threadIdx.x % G;
  const i64 step = (i64)gridDim.x * RPB;
  // The loop bound is uniform across a group, so group reductions stay convergent.
  for (i64 r = (i64)blockIdx.x * RPB + threadIdx.x / G; r < rows; r += step) {
    Coord cd;
    unravel(r, outer, cd);
    const T* dyr = dy + dot(cd, sdyo, outer.rank);
    const T* yr = y + dot(cd, syo, outer.rank);
    T* dxr = dx + dot(cd, sdxo, outer.rank);
    unsigned on = 0;
#pragma unroll
    for (int c = 0; c < NV; ++c) {
      const i64 e0 = ((i64)c * G + t) * L;
      A w[L];
      load_y<L, T, A>(yr, e0, n, sy, vec, false, w);
      add_support<L, A>(w, c * L, on);
    }
    A s = 0;
#pragma unroll
    for (int c = 0; c < NV; ++c) {
      const unsigned bits = (on >> (c * L)) & kLaneBits;
      const i64 e0 = ((i64)c * G + t) * L;
      if constexpr (L > 1) {
        if (vec && e0 + L <= n) {
          if (dy_all || bits) {
            A w[L];
            ld16<T, A, L>(dyr + e0, w);  // kept in L1 for the write below
#pragma unroll
            for (int l = 0; l < L; ++l)
              if ((bits >> l) & 1u) s += w[l];
          }
          continue;
        }
      }
#pragma unroll
      for (int l = 0; l < L; ++l)
        if ((bits >> l) & 1u) s += to_acc(dyr[(e0 + l) * sdy]);  // bit set: e0 + l < n
    }
    const A mean = group_mean<G>(s, __popc(on));
#pragma unroll
    for (int c = 0; c < NV; ++c) {
      const unsigned bits = (on >> (c * L)) & kLaneBits;
      const i64 e0 = ((i64)c * G + t) * L;
      if constexpr (L > 1) {
        if (vec && e0 + L <= n) {
          A w[L];
          if (bits) {
            ld16<T, A, L>(dyr + e0, w);
#pragma unroll
            for (int l = 0; l < L; ++l) w[l] = ((bits >> l) & 1u) ? w[l] - mean : A(0);
          } else {
#pragma unroll
            for (int l = 0; l < L; ++l) w[l] = A(0);
          }
          st16cs<T, A, L>(dxr + e0, w);
          continue;
        }
      }
#pragma unroll
      for (int l = 0; l < L; ++l) {
        const i64 e = e0 + l;
        if (e < n)
          dxr[e * sdx] = from_acc<T>(((bits >> l) & 1u) ? to_acc(dyr[e * sdy]) - mean : A(0));
      }
    }
  }
}

// The staged form of bwd_reg, for 4- and 8-byte types on the 16x64 and 16x512 variants (there
// it was faster: H100 f32 32768 x 1024 109.1 vs 115.9 us, 4096 x 8192 108.7 vs 119.5 us). The
// rows are taken in a grid-stride loop over a grid of resident blocks (the host sizes it), so
// each block takes several rows. On the vector path this thread's y vectors of its group's
// next row are copied to shared memory (cp.async) before the current row is reduced and
// written, so they are in flight across its barrier and stores; each thread reads back only
// its own vectors (no barrier); two rows ahead measured no faster. Only the support mask of y
// and the loaded dy stay in registers (64 registers, 1024 threads an SM).
template <typename T, typename A, int K, int G, int BLOCK>
__device__ __forceinline__ void bwd_reg_staged(const T* dy, const T* y, T* dx, i64 rows, i64 n,
                                        const Shape& outer, const Strides& sdyo,
                                        const Strides& syo, const Strides& sdxo, i64 sdy, i64 sy,
                                        i64 sdx, int flags) {
  constexpr int RPB = BLOCK / G;
  constexpr int L = RegLanes<T, K>::value;
  constexpr int NV = K / L;
  constexpr unsigned kLaneBits = (1u << L) - 1u;
  // the staged row stays within 32 KB; f64 16x512 (64 KB a row) loads directly
  constexpr bool kStage = L > 1 && BLOCK * NV * 16 <= 32768;
  static_assert(K <= 16, "the support mask and dy stay in registers (more values spilled)");
  __shared__ uint4 stage[kStage ? BLOCK * NV : 1];
  const bool vec = flags & 1, dy_all = flags & 2;
  const bool pre = kStage && vec;  // full vectors of y come from `stage`
  const int t = threadIdx.x % G;
  const i64 first = (i64)blockIdx.x * RPB + threadIdx.x / G;
  const i64 step = (i64)gridDim.x * RPB;
  // y of row r (null past the last row)
  auto y_row = [&](i64 r) -> const T* {
    if (r >= rows) return nullptr;
    Coord cd;
    unravel(r, outer, cd);
    return y + dot(cd, syo, outer.rank);
  };
  // a row's y vectors into `stage` (nothing for a null row)
  auto fetch = [&](const T* yr) {
    if (yr != nullptr) {
#pragma unroll
      for (int c = 0; c < NV; ++c) {
        const i64 e0 = ((i64)c * G + t) * L;
        if (e0 + L <= n) cp_async16(&stage[c * BLOCK + threadIdx.x], yr + e0);
      }
    }
    cp_async_commit();
  };
  if (pre) fetch(y_row(first));
  for (i64 r = first; r < rows; r += step) {
    const T* yn = pre ? y_row(r + step) : nullptr;  // before this row's state
    Coord cd;
    unravel(r, outer, cd);
    const T* dyr = dy + dot(cd, sdyo, outer.rank);
    const T* yr = y + dot(cd, syo, outer.rank);
    T* dxr = dx + dot(cd, sdxo, outer.rank);
    if (pre) cp_async_wait_all();
    unsigned on = 0;
#pragma unroll
    for (int c = 0; c < NV; ++c) {
      const i64 e0 = ((i64)c * G + t) * L;
      A w[L];
      bool done = false;
      if constexpr (kStage) {
        if (pre && e0 + L <= n) {
          Pack<T>::unpack(stage[c * BLOCK + threadIdx.x], w);
          done = true;
        }
      }
      load_y<L, T, A>(yr, e0, n, sy, vec, done, w);
      add_support<L, A>(w, c * L, on);
    }
    if (pre) fetch(yn);  // into the slots just read
    // dy is needed only on the support: load a vector of it where any of its y is positive.
    A g[K];
    A s = 0;
#pragma unroll
    for (int c = 0; c < NV; ++c) {
      const bool any = (on >> (c * L)) & kLaneBits;
      const i64 e0 = ((i64)c * G + t) * L;
      if constexpr (L > 1) {
        if (vec && e0 + L <= n) {
          A w[L];
          if (dy_all || any) {
            ld16cs<T, A, L>(dyr + e0, w);
          } else {
#pragma unroll
            for (int l = 0; l < L; ++l) w[l] = A(0);
          }
#pragma unroll
          for (int l = 0; l < L; ++l) {
            if ((on >> (c * L + l)) & 1u) s += w[l];
            g[c * L + l] = w[l];
          }
          continue;
        }
      }
#pragma unroll
      for (int l = 0; l < L; ++l) {
        const i64 e = e0 + l;
        const bool bit = (on >> (c * L + l)) & 1u;
        const A v = (e < n && (dy_all || bit)) ? to_acc(dyr[e * sdy]) : A(0);
        if (bit) s += v;
        g[c * L + l] = v;
      }
    }
    const A mean = group_mean<G>(s, __popc(on));
#pragma unroll
    for (int k = 0; k < K; ++k) g[k] = ((on >> k) & 1u) ? g[k] - mean : A(0);
    store_regs<T, A, K, G>(dxr, n, sdx, vec, t, g);
  }
}

// Streaming over a (sub-)row [0, n) by a block: on the vector path each thread takes kU
// 16-byte vectors of y per step, all loaded before any is used, then the vector of dy
// where any of its y is positive; the tail past the last whole vector
// goes one element a thread. `visit(e0, yv, gv, on)` gets each whole vector (start e0, y and
// dy values, whether dy was loaded); `visit1(e, yv, gv)` each tail element.
constexpr int kU = 4;

template <int L, typename T, typename A, class Visit, class Visit1>
__device__ __forceinline__ void bwd_row_stream(const T* dyr, const T* yr, i64 n, i64 sdy, i64 sy,
                                               bool dy_all, bool keep, Visit&& visit,
                                               Visit1&& visit1) {
  i64 tail = 0;
  if constexpr (L > 1) {
    const i64 nv = n / L;
    tail = nv * L;
    for (i64 c0 = threadIdx.x; c0 < nv; c0 += (i64)kU * blockDim.x) {
      uint4 w[kU];
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const i64 c = c0 + (i64)u * blockDim.x;
        if (c < nv) {
          const uint4* p = reinterpret_cast<const uint4*>(yr + c * L);
          w[u] = keep ? *p : __ldcs(p);
        }
      }
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const i64 c = c0 + (i64)u * blockDim.x;
        if (c >= nv) break;
        A v[L], g[L];
        Pack<T>::unpack(w[u], v);
        bool any = false;
#pragma unroll
        for (int l = 0; l < L; ++l) any |= v[l] > A(0);
        const bool need = dy_all || any;
        if (need) {
          const uint4* p = reinterpret_cast<const uint4*>(dyr + c * L);
          Pack<T>::unpack(keep ? *p : __ldcs(p), g);
        }
        visit(c * L, v, g, need);
      }
    }
  }
  for (i64 e = tail + threadIdx.x; e < n; e += blockDim.x) {
    const A v = to_acc(yr[e * sy]);
    const A g = (dy_all || v > A(0)) ? to_acc(dyr[e * sdy]) : A(0);
    visit1(e, v, g);
  }
}

// Per-thread partial sum of dy and count over y > 0 for elements [0, n) of a (sub-)row; y and
// dy stay in L2 for the write pass.
template <int L, typename T, typename A>
__device__ __forceinline__ void bwd_row_sum(const T* dyr, const T* yr, i64 n, i64 sdy, i64 sy,
                                            bool dy_all, A& s, i64& cnt) {
  bwd_row_stream<L, T, A>(
      dyr, yr, n, sdy, sy, dy_all, true,
      [&](i64, const A(&v)[L], const A(&g)[L], bool on) {
        if (!on) return;
#pragma unroll
        for (int l = 0; l < L; ++l) {
          if (v[l] > A(0)) {
            s += g[l];
            ++cnt;
          }
        }
      },
      [&](i64, A v, A g) {
        if (v > A(0)) {
          s += g;
          ++cnt;
        }
      });
}

template <int L, typename T, typename A>
__device__ __forceinline__ void bwd_row_write(const T* dyr, const T* yr, T* dxr, i64 n, i64 sdy,
                                              i64 sy, i64 sdx, bool dy_all, A mean) {
  bwd_row_stream<L, T, A>(
      dyr, yr, n, sdy, sy, dy_all, false,
      [&](i64 e0, const A(&v)[L], const A(&g)[L], bool on) {
        A o[L];
#pragma unroll
        for (int l = 0; l < L; ++l) o[l] = on && v[l] > A(0) ? g[l] - mean : A(0);
        if constexpr (L > 1) st16cs<T, A, L>(dxr + e0, o);
      },
      [&](i64 e, A v, A g) { dxr[e * sdx] = from_acc<T>(v > A(0) ? g - mean : A(0)); });
}

template <typename T, typename A>
__device__ __forceinline__ void bwd_stream(const T* dy, const T* y, T* dx, i64 rows, i64 n,
                                           const Shape& outer, const Strides& sdyo,
                                           const Strides& syo, const Strides& sdxo, i64 sdy,
                                           i64 sy, i64 sdx, int flags) {
  const bool vec = flags & 1, dy_all = flags & 2;
  constexpr int LV = Vec16<T>::kLanes;
  for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
    Coord cd;
    unravel(r, outer, cd);
    const T* dyr = dy + dot(cd, sdyo, outer.rank);
    const T* yr = y + dot(cd, syo, outer.rank);
    T* dxr = dx + dot(cd, sdxo, outer.rank);
    A s = 0;
    i64 cnt = 0;
    if (vec)
      bwd_row_sum<LV, T, A>(dyr, yr, n, sdy, sy, dy_all, s, cnt);
    else
      bwd_row_sum<1, T, A>(dyr, yr, n, sdy, sy, dy_all, s, cnt);
    const A mean = group_mean<kStreamBlock>(s, cnt);
    if (vec)
      bwd_row_write<LV, T, A>(dyr, yr, dxr, n, sdy, sy, sdx, dy_all, mean);
    else
      bwd_row_write<1, T, A>(dyr, yr, dxr, n, sdy, sy, sdx, dy_all, mean);
  }
}

// Split rows, listed support: bwd_split_zero streams a piece once, writes dx = 0 off the
// support (and dy on it, or y where dx is y: `flags` bit 2, so an in-place rescan still finds
// the support), writes the piece's (sum, count) and lists the piece's support positions (up to
// kSplitList, in any order; ws_n holds the true count). bwd_split_write, given the lists
// (entry sparsemax_bwd_split_fix), then writes dy - mean at the listed positions only, or
// rescans a piece whose support overflowed its list.
constexpr int kSplitList = 1024;

// Split rows (few long rows): block (piece, row) covers elements [piece * len, +len) of a row.
// bwd_split_sum writes each piece's (sum, count) to the workspace; bwd_split_write reduces a
// row's pieces in piece order (deterministic) and writes dx for its piece. `len` is a
// multiple of 8, so pieces of a 16-byte-aligned row start 16-byte aligned.
template <typename T, typename A>
__device__ __forceinline__ void bwd_split_sum(const T* dy, const T* y, i64 rows, i64 n,
                                              const Shape& outer, const Strides& sdyo,
                                              const Strides& syo, i64 sdy, i64 sy, int flags,
                                              A* ws_s, i64* ws_c, i64 len, i64 pieces) {
  const bool vec = flags & 1, dy_all = flags & 2;
  constexpr int LV = Vec16<T>::kLanes;
  for (i64 r = blockIdx.y; r < rows; r += gridDim.y) {
    Coord cd;
    unravel(r, outer, cd);
    for (i64 p = blockIdx.x; p < pieces; p += gridDim.x) {
      const i64 b = p * len;
      const i64 m = min(len, n - b);
      const T* dyr = dy + dot(cd, sdyo, outer.rank) + b * sdy;
      const T* yr = y + dot(cd, syo, outer.rank) + b * sy;
      A s = 0;
      i64 cnt = 0;
      if (vec)
        bwd_row_sum<LV, T, A>(dyr, yr, m, sdy, sy, dy_all, s, cnt);
      else
        bwd_row_sum<1, T, A>(dyr, yr, m, sdy, sy, dy_all, s, cnt);
      group_sum2<kStreamBlock>(s, cnt);
      if (threadIdx.x == 0) {
        ws_s[r * pieces + p] = s;
        ws_c[r * pieces + p] = cnt;
      }
    }
  }
}

template <typename T, typename A>
__device__ __forceinline__ void bwd_split_write(const T* dy, const T* y, T* dx, i64 rows, i64 n,
                                                const Shape& outer, const Strides& sdyo,
                                                const Strides& syo, const Strides& sdxo,
                                                i64 sdy, i64 sy, i64 sdx, int flags,
                                                const A* ws_s, const i64* ws_c,
                                                const int* ws_n, const int* ws_list, i64 len,
                                                i64 pieces) {
  const bool vec = flags & 1, dy_all = flags & 2;
  constexpr int LV = Vec16<T>::kLanes;
  for (i64 r = blockIdx.y; r < rows; r += gridDim.y) {
    Coord cd;
    unravel(r, outer, cd);
    A s = 0;
    i64 cnt = 0;
    for (i64 p = threadIdx.x; p < pieces; p += blockDim.x) {
      s += ws_s[r * pieces + p];
      cnt += ws_c[r * pieces + p];
    }
    const A mean = group_mean<kStreamBlock>(s, cnt);
    for (i64 p = blockIdx.x; p < pieces; p += gridDim.x) {
      const i64 b = p * len;
      const i64 m = min(len, n - b);
      const T* dyr = dy + dot(cd, sdyo, outer.rank) + b * sdy;
      const T* yr = y + dot(cd, syo, outer.rank) + b * sy;
      T* dxr = dx + dot(cd, sdxo, outer.rank) + b * sdx;
      const int k = ws_n != nullptr ? ws_n[r * pieces + p] : kSplitList + 1;
      if (k <= kSplitList) {  // listed support (bwd_split_zero): only those positions
        const int* list = ws_list + (r * pieces + p) * kSplitList;
        for (int i = threadIdx.x; i < k; i += blockDim.x) {
          const i64 e = list[i];
          dxr[e * sdx] = from_acc<T>(to_acc(dyr[e * sdy]) - mean);
        }
      } else if (vec) {
        bwd_row_write<LV, T, A>(dyr, yr, dxr, m, sdy, sy, sdx, dy_all, mean);
      } else {
        bwd_row_write<1, T, A>(dyr, yr, dxr, m, sdy, sy, sdx, dy_all, mean);
      }
    }
  }
}


template <typename T, typename A>
__device__ __forceinline__ void bwd_split_zero(const T* dy, const T* y, T* dx, i64 rows, i64 n,
                                               const Shape& outer, const Strides& sdyo,
                                               const Strides& syo, const Strides& sdxo, i64 sdy,
                                               i64 sy, i64 sdx, int flags, A* ws_s, i64* ws_c,
                                               int* ws_n, int* ws_list, i64 len, i64 pieces) {
  const bool vec = flags & 1, dy_all = flags & 2, keep_y = flags & 4;
  constexpr int LV = Vec16<T>::kLanes;
  __shared__ int list_sh[kSplitList];
  __shared__ int n_sh;
  for (i64 r = blockIdx.y; r < rows; r += gridDim.y) {
    Coord cd;
    unravel(r, outer, cd);
    for (i64 p = blockIdx.x; p < pieces; p += gridDim.x) {
      if (threadIdx.x == 0) n_sh = 0;
      __syncthreads();
      const i64 b = p * len;
      const i64 m = min(len, n - b);
      const T* dyr = dy + dot(cd, sdyo, outer.rank) + b * sdy;
      const T* yr = y + dot(cd, syo, outer.rank) + b * sy;
      T* dxr = dx + dot(cd, sdxo, outer.rank) + b * sdx;
      A s = 0;
      i64 cnt = 0;
      auto note = [&](i64 e, A g) {
        s += g;
        ++cnt;
        const int k = atomicAdd(&n_sh, 1);
        if (k < kSplitList) list_sh[k] = (int)e;
      };
      auto visit1 = [&](i64 e, A v, A g) {
        const bool on = v > A(0);
        dxr[e * sdx] = from_acc<T>(on ? (keep_y ? v : g) : A(0));
        if (on) note(e, g);
      };
      if (vec) {
        bwd_row_stream<LV, T, A>(
            dyr, yr, m, sdy, sy, dy_all, false,
            [&](i64 e0, const A(&v)[LV], const A(&g)[LV], bool any) {
              A o[LV];
#pragma unroll
              for (int l = 0; l < LV; ++l) {
                const bool on = any && v[l] > A(0);
                o[l] = on ? (keep_y ? v[l] : g[l]) : A(0);
                if (on) note(e0 + l, g[l]);
              }
              st16cs<T, A, LV>(dxr + e0, o);
            },
            visit1);
      } else {
        bwd_row_stream<1, T, A>(dyr, yr, m, sdy, sy, dy_all, false,
                                [&](i64, const A(&)[1], const A(&)[1], bool) {}, visit1);
      }
      group_sum2<kStreamBlock>(s, cnt);
      __syncthreads();
      const int k = n_sh;
      int* list = ws_list + (r * pieces + p) * kSplitList;
      for (int i = threadIdx.x; i < min(k, kSplitList); i += blockDim.x) list[i] = list_sh[i];
      if (threadIdx.x == 0) {
        ws_s[r * pieces + p] = s;
        ws_c[r * pieces + p] = cnt;
        ws_n[r * pieces + p] = k;
      }
      __syncthreads();  // n_sh and list_sh are reset by the next piece
    }
  }
}


// Split rows in one cooperative kernel (the host launches it cooperatively, so every block of
// the grid (pieces, rows) is resident; pieces of at most kCoopPiece elements). Phase 1 streams
// a piece once, kCoopU 16-byte vectors of y a thread in flight. The support is kept as a bit
// mask in shared memory, and its vectors' dy (loaded for the sum) in a shared list of up to
// kCoopList vectors. The piece's (sum, count) goes to the workspace and thread 0 arrives at
// the grid barrier; only then does each thread store dx = 0 on its last round's vectors off
// the support (earlier rounds' zeros go out while the next round loads), so those stores
// drain while the barrier fills. After it, warp 0 sums the row's pieces in piece order
// (deterministic) and the block writes the support's vectors: from the list, or, when the
// support overflowed it, by the mask, reading dy there again (mostly from L2). Elements past
// the last whole vector (and every element when not vectorised) go one at a time.
// dx may be dy or y: phase 1 writes only vectors without support, whose dy is not read again
// and whose y is 0 already; phase 2 reads only dy, on vectors phase 1 left alone. Other
// blocks read only the (sum, count) thread 0 wrote before its release at the barrier.
constexpr int kCoopPiece = 65536;
constexpr int kCoopU = 8;
constexpr int kCoopList = 512;

template <typename T, typename A>
__device__ __forceinline__ void bwd_split_coop(const T* dy, const T* y, T* dx, i64 rows, i64 n,
                                               const Shape& outer, const Strides& sdyo,
                                               const Strides& syo, const Strides& sdxo,
                                               i64 sdy, i64 sy, i64 sdx, int flags, A* ws_s,
                                               int* ws_c, i64 len, i64 pieces) {
  constexpr int L = Vec16<T>::kLanes;
  constexpr unsigned kLm = L >= 32 ? ~0u : (1u << L) - 1u;
  __shared__ unsigned mask_sh[kCoopPiece / 32];
  __shared__ uint4 list_dy[kCoopList];
  __shared__ int list_c[kCoopList];
  __shared__ int listed;
  __shared__ A mean_sh;
  const bool vec = (flags & 1) && L > 1;
  const i64 r = blockIdx.y, p = blockIdx.x;
  Coord cd;
  unravel(r, outer, cd);
  const i64 b = p * len;
  const int m = (int)min(len, n - b);  // >= 1: the host takes ceil(n / len) pieces
  const T* dyr = dy + dot(cd, sdyo, outer.rank) + b * sdy;
  const T* yr = y + dot(cd, syo, outer.rank) + b * sy;
  T* dxr = dx + dot(cd, sdxo, outer.rank) + b * sdx;
  const int nv = vec ? m / L : 0, tail = nv * L;
  uint4 w[kCoopU];
  auto load = [&](int c0) {
#pragma unroll
    for (int u = 0; u < kCoopU; ++u) {
      const int c = c0 + u * blockDim.x;
      if (c < nv) w[u] = __ldcs(reinterpret_cast<const uint4*>(yr + (i64)c * L));
    }
  };
  unsigned zero = 0u;  // vectors c0z + u * blockDim.x still to get dx = 0
  int c0z = 0;
  auto store_zeros = [&]() {
    const A z[L] = {};
#pragma unroll
    for (int u = 0; u < kCoopU; ++u)
      if ((zero >> u) & 1u) st16cs<T, A, L>(dxr + (i64)(c0z + u * blockDim.x) * L, z);
    zero = 0u;
  };
  load(threadIdx.x);  // the first round's loads in flight while the mask is cleared
  for (int i = threadIdx.x; i < (m + 31) / 32; i += blockDim.x) mask_sh[i] = 0u;
  if (threadIdx.x == 0) listed = 0;
  __syncthreads();
  A s = 0;
  int cnt = 0;
  for (int c0 = threadIdx.x; c0 < nv; c0 += kCoopU * blockDim.x) {
    if (c0 != (int)threadIdx.x) load(c0);
    store_zeros();
    c0z = c0;
#pragma unroll
    for (int u = 0; u < kCoopU; ++u) {
      const int c = c0 + u * blockDim.x;
      if (c >= nv) break;
      A v[L];
      Pack<T>::unpack(w[u], v);
      unsigned bits = 0;
#pragma unroll
      for (int l = 0; l < L; ++l) bits |= (v[l] > A(0) ? 1u : 0u) << l;
      if (bits != 0) {
        const uint4 raw = *reinterpret_cast<const uint4*>(dyr + (i64)c * L);
        A g[L];
        Pack<T>::unpack(raw, g);
#pragma unroll
        for (int l = 0; l < L; ++l) {
          if ((bits >> l) & 1u) {
            s += g[l];
            ++cnt;
          }
        }
        atomicOr(&mask_sh[(c * L) >> 5], bits << ((c * L) & 31));
        const int at = atomicAdd(&listed, 1);
        if (at < kCoopList) {
          list_dy[at] = raw;
          list_c[at] = c;
        }
      } else {
        zero |= 1u << u;
      }
    }
  }
  for (int e = tail + threadIdx.x; e < m; e += blockDim.x) {
    const A v = to_acc(yr[e * sy]);
    if (v > A(0)) {
      s += to_acc(dyr[e * sdy]);
      ++cnt;
      atomicOr(&mask_sh[e >> 5], 1u << (e & 31));
    } else {
      dxr[e * sdx] = from_acc<T>(A(0));
    }
  }
  group_sum2<kStreamBlock>(s, cnt);  // ends with the block's mask and list complete
  unsigned token = 0u;
  if (threadIdx.x == 0) {
    ws_s[r * pieces + p] = s;
    ws_c[r * pieces + p] = cnt;
    token = grid_arrive();
  }
  store_zeros();
  if (threadIdx.x < 32) {
    if (threadIdx.x == 0) grid_wait(token);
    __syncwarp();
    A rs = 0;
    int rc = 0;
    for (i64 q = threadIdx.x; q < pieces; q += 32) {
      rs += __ldcg(ws_s + r * pieces + q);
      rc += __ldcg(ws_c + r * pieces + q);
    }
    rs = lanes_sum<32>(rs);
    rc = lanes_sum<32>(rc);
    if (threadIdx.x == 0) mean_sh = rc > 0 ? rs / (A)rc : A(0);
  }
  __syncthreads();
  const A mean = mean_sh;
  auto write = [&](int c, const uint4& raw) {
    const unsigned bits = (mask_sh[(c * L) >> 5] >> ((c * L) & 31)) & kLm;
    A g[L], o[L];
    Pack<T>::unpack(raw, g);
#pragma unroll
    for (int l = 0; l < L; ++l) o[l] = ((bits >> l) & 1u) ? g[l] - mean : A(0);
    st16cs<T, A, L>(dxr + (i64)c * L, o);
  };
  if (listed <= kCoopList) {
    for (int i = threadIdx.x; i < listed; i += blockDim.x) write(list_c[i], list_dy[i]);
  } else {  // the support overflowed the list: find its vectors by the mask's words
    constexpr int kVw = 32 / L;  // vectors a mask word
    for (int wi = threadIdx.x; wi * kVw < nv; wi += blockDim.x) {
      unsigned word = mask_sh[wi];
      while (word != 0u) {
        const int j = (__ffs(word) - 1) / L;
        word &= ~(kLm << (j * L));
        const int c = wi * kVw + j;
        if (c >= nv) break;
        write(c, *reinterpret_cast<const uint4*>(dyr + (i64)c * L));
      }
    }
  }
  for (int e = tail + threadIdx.x; e < m; e += blockDim.x)
    if ((mask_sh[e >> 5] >> (e & 31)) & 1u) dxr[e * sdx] = from_acc<T>(to_acc(dyr[e * sdy]) - mean);
}

}  // namespace smx
}  // namespace bc

// Entry points. Variant names encode (values per thread)x(threads per row); the host picks
// the smallest that holds the row (softmax/_rows.py keeps the same table).
// Two resident blocks per SM for the 512-thread kernels (caps them at 64 registers; the
// streaming and split backward kernels keep 4 vectors a thread in flight, bwd_row_stream).
#define SMX_KERNEL(op, threads, min_blocks) \
  extern "C" __global__ void __launch_bounds__(threads, min_blocks) BC_ENTRY(op)
#define SMX_FWD_ARGS                                                                     \
  const BC_T *x, BC_T *y, bc::i64 rows, bc::i64 n, bc::Shape outer, bc::Strides sxo,     \
      bc::Strides syo, bc::i64 sx, bc::i64 sy, int vec
#define SMX_FWD_PASS x, y, rows, n, outer, sxo, syo, sx, sy, vec != 0
#define SMX_BWD_ARGS                                                                     \
  const BC_T *dy, const BC_T *y, BC_T *dx, bc::i64 rows, bc::i64 n, bc::Shape outer,     \
      bc::Strides sdyo, bc::Strides syo, bc::Strides sdxo, bc::i64 sdy, bc::i64 sy,      \
      bc::i64 sdx, int vec /* bit 0: 16-byte vectors; bit 1: load dy beside y */
#define SMX_BWD_PASS dy, y, dx, rows, n, outer, sdyo, syo, sdxo, sdy, sy, sdx, vec

// Register variants of the forward; the arguments after BLOCK are its launch bounds (threads
// and, where given, the blocks an SM they are sized for).
#define SMX_FWD_REG(name, K, G, BLOCK, ...)                                                  \
  extern "C" __global__ void __launch_bounds__(__VA_ARGS__)                                  \
      BC_ENTRY(sparsemax_fwd_##name)(SMX_FWD_ARGS) {                                         \
    bc::smx::fwd_reg<BC_T, BC_ACC, K, G, BLOCK>(SMX_FWD_PASS);                               \
  }
SMX_FWD_REG(8x1, 8, 1, 256, 256)
SMX_FWD_REG(8x2, 8, 2, 256, 256)
SMX_FWD_REG(8x4, 8, 4, 256, 256)
SMX_FWD_REG(8x8, 8, 8, 256, 256)
SMX_FWD_REG(8x16, 8, 16, 256, 256)
SMX_FWD_REG(8x32, 8, 32, 256, 256)
SMX_FWD_REG(16x32, 16, 32, 256, 256, 4)
SMX_FWD_REG(32x32, 32, 32, 256, 256)
SMX_FWD_REG(16x128, 16, 128, 128, 128, 8)
SMX_FWD_REG(16x256, 16, 256, 256, 256, 4)
SMX_FWD_REG(16x512, 16, 512, 512, 512, 2)
BC_KERNEL(sparsemax_fwd_stream, 512)(SMX_FWD_ARGS) {
  bc::smx::fwd_stream<BC_T, BC_ACC>(SMX_FWD_PASS);
}
// Forward split workspace: pieces * rows maxima (acc), pieces * rows counts (int),
// pieces * rows * 512 listed values (acc), rows * (m, tau) (acc); each part 16-byte aligned.
BC_KERNEL(sparsemax_fwd_split_scan, 512)(SMX_FWD_ARGS, BC_ACC* ws_max, int* ws_cnt,
                                         BC_ACC* ws_cand, BC_ACC* ws_row, bc::i64 pieces) {
  bc::smx::fwd_split_scan<BC_T, BC_ACC>(x, rows, n, outer, sxo, sx, vec != 0, ws_max, ws_cnt,
                                        ws_cand, pieces);
}
BC_KERNEL(sparsemax_fwd_split_tau, 512)(SMX_FWD_ARGS, BC_ACC* ws_max, int* ws_cnt,
                                        BC_ACC* ws_cand, BC_ACC* ws_row, bc::i64 pieces) {
  bc::smx::fwd_split_tau<BC_T, BC_ACC>(x, rows, n, outer, sxo, sx, vec != 0, ws_max, ws_cnt,
                                       ws_cand, ws_row, pieces);
}
BC_KERNEL(sparsemax_fwd_split_write, 512)(SMX_FWD_ARGS, BC_ACC* ws_max, int* ws_cnt,
                                          BC_ACC* ws_cand, BC_ACC* ws_row, bc::i64 pieces) {
  bc::smx::fwd_split_write<BC_T, BC_ACC>(SMX_FWD_PASS, ws_row, pieces);
}
// Register variants of the backward: launch bounds for 1536 threads an SM (40 registers; 1024
// threads and 64 registers for f64), see bwd_reg.
#define SMX_BWD_REG(name, K, G, BLOCK)                                                       \
  SMX_KERNEL(sparsemax_bwd_##name, BLOCK, (sizeof(BC_T) > 4 ? 1024 : 1536) / BLOCK)          \
  (SMX_BWD_ARGS) {                                                                           \
    bc::smx::bwd_reg<BC_T, BC_ACC, K, G, BLOCK>(SMX_BWD_PASS);                               \
  }
SMX_BWD_REG(8x1, 8, 1, 256)
SMX_BWD_REG(8x2, 8, 2, 256)
SMX_BWD_REG(8x4, 8, 4, 256)
SMX_BWD_REG(8x8, 8, 8, 256)
SMX_BWD_REG(8x16, 8, 16, 256)
SMX_BWD_REG(8x32, 8, 32, 256)
SMX_BWD_REG(16x32, 16, 32, 256)
SMX_BWD_REG(16x64, 16, 64, 64)
SMX_BWD_REG(16x128, 16, 128, 128)
SMX_BWD_REG(16x256, 16, 256, 256)
SMX_BWD_REG(16x512, 16, 512, 512)
SMX_KERNEL(sparsemax_bwd_16x64_staged, 64, 16)(SMX_BWD_ARGS) {
  bc::smx::bwd_reg_staged<BC_T, BC_ACC, 16, 64, 64>(SMX_BWD_PASS);
}
SMX_KERNEL(sparsemax_bwd_16x512_staged, 512, 2)(SMX_BWD_ARGS) {
  bc::smx::bwd_reg_staged<BC_T, BC_ACC, 16, 512, 512>(SMX_BWD_PASS);
}
SMX_KERNEL(sparsemax_bwd_stream, 512, 2)(SMX_BWD_ARGS) {
  bc::smx::bwd_stream<BC_T, BC_ACC>(SMX_BWD_PASS);
}
// Workspace: pieces * rows accumulators, then pieces * rows counts (i64), 16-byte aligned.
SMX_KERNEL(sparsemax_bwd_split_sum, 512, 2)(SMX_BWD_ARGS, BC_ACC* ws_s, bc::i64* ws_c, bc::i64 len,
                                        bc::i64 pieces) {
  bc::pdl_launch_dependents();
  bc::smx::bwd_split_sum<BC_T, BC_ACC>(dy, y, rows, n, outer, sdyo, syo, sdy, sy, vec, ws_s,
                                       ws_c, len, pieces);
}
SMX_KERNEL(sparsemax_bwd_split_write, 512, 2)(SMX_BWD_ARGS, const BC_ACC* ws_s, const bc::i64* ws_c,
                                          bc::i64 len, bc::i64 pieces) {
  bc::pdl_wait();
  bc::smx::bwd_split_write<BC_T, BC_ACC>(SMX_BWD_PASS, ws_s, ws_c, nullptr, nullptr, len,
                                         pieces);
}
// Listed support: then ws_n (int per piece) and ws_list (kSplitList ints per piece).
SMX_KERNEL(sparsemax_bwd_split_zero, 512, 2)(SMX_BWD_ARGS, BC_ACC* ws_s, bc::i64* ws_c, int* ws_n,
                                         int* ws_list, bc::i64 len, bc::i64 pieces) {
  bc::pdl_launch_dependents();
  bc::smx::bwd_split_zero<BC_T, BC_ACC>(SMX_BWD_PASS, ws_s, ws_c, ws_n, ws_list, len, pieces);
}
SMX_KERNEL(sparsemax_bwd_split_fix, 512, 2)(SMX_BWD_ARGS, const BC_ACC* ws_s, const bc::i64* ws_c,
                                        const int* ws_n, const int* ws_list, bc::i64 len,
                                        bc::i64 pieces) {
  bc::pdl_wait();
  bc::smx::bwd_split_write<BC_T, BC_ACC>(SMX_BWD_PASS, ws_s, ws_c, ws_n, ws_list, len, pieces);
}
// One cooperative kernel (bwd_split_coop): pieces * rows accumulators, then int counts.
SMX_KERNEL(sparsemax_bwd_split_coop, 512, 2)(SMX_BWD_ARGS, BC_ACC* ws_s, int* ws_c, bc::i64 len,
                                         bc::i64 pieces) {
  bc::smx::bwd_split_coop<BC_T, BC_ACC>(SMX_BWD_PASS, ws_s, ws_c, len, pieces);
}
