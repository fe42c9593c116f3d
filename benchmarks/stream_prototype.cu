// The standalone prototype of scan.cu's stream kernel (benchmarks/stream_prototype.py):
// cumsum over contiguous rows whose length is a multiple of the tile, f32 (ELT float) or
// bf16 (ELT unsigned short), one pass. Tiles of TILE_BYTES are taken in the order of a
// counter through a ring of STAGES shared-memory stages filled by bulk copies
// (cp.async.bulk on an mbarrier); warp NW publishes each tile's total as soon as it lands,
// warp NW + 1 combines the wave's prefix (WAVE tiles) with the totals before the tile in a
// fixed order, and NW warps scan the tile and store from registers. The workspace is never
// zeroed: its words carry the launch's `epoch`, and the counter runs on from `claim_base`.
// Build-time switches: EVICT_FIRST (L2 policy of the loads), STATIC_FIRST (the first stages'
// tiles by block index; needs the whole grid resident), POLL_NS (a sleep between polls),
// META (totals and prefixes a block keeps, 2 * STAGES).

#ifndef NT
#define NT 256
#endif
constexpr int NW = NT / 32;
constexpr int ROWB = 512;
constexpr int ROWS = TILE_BYTES / ROWB;
constexpr int RPW = ROWS / NW;
constexpr int VE = 16 / (int)sizeof(ELT);
constexpr int M = WAVE / 32;
#ifndef META
#define META (2 * STAGES)
#endif
#ifndef STATIC_FIRST
#define STATIC_FIRST 0
#endif
#ifndef POLL_NS
#define POLL_NS 0
#endif
constexpr int TILE_ELEMS = TILE_BYTES / (int)sizeof(ELT);
static_assert(ROWS % NW == 0, "rows");

__device__ __forceinline__ unsigned sa(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void mbar_init(unsigned long long* b, unsigned n) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(sa(b)), "r"(n) : "memory");
}
__device__ __forceinline__ void mbar_expect(unsigned long long* b, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(sa(b)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned long long* b) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(sa(b)) : "memory");
}
__device__ __forceinline__ void mbar_wait(unsigned long long* b, unsigned ph) {
  asm volatile("{\n .reg .pred p;\n W:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra W;\n}"
               :: "r"(sa(b)), "r"(ph) : "memory");
}
__device__ __forceinline__ void bulk_load(void* dst, const void* src, unsigned bytes, unsigned long long* b) {
#if EVICT_FIRST
  unsigned long long pol;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;"
               :: "r"(sa(dst)), "l"(src), "r"(bytes), "r"(sa(b)), "l"(pol) : "memory");
#else
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               :: "r"(sa(dst)), "l"(src), "r"(bytes), "r"(sa(b)) : "memory");
#endif
}
__device__ __forceinline__ unsigned long long ld_relaxed(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.relaxed.gpu.global.b64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_relaxed(unsigned long long* p, unsigned long long v) {
  asm volatile("st.relaxed.gpu.global.b64 [%0], %1;" :: "l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ void unpack(uint4 u, float (&f)[VE]) {
  if constexpr (VE == 4) {
    f[0] = __uint_as_float(u.x); f[1] = __uint_as_float(u.y);
    f[2] = __uint_as_float(u.z); f[3] = __uint_as_float(u.w);
  } else {
    const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      f[2 * i] = __uint_as_float(w[i] << 16);
      f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
    }
  }
}
__device__ __forceinline__ uint4 pack(const float (&f)[VE]) {
  if constexpr (VE == 4) {
    return make_uint4(__float_as_uint(f[0]), __float_as_uint(f[1]), __float_as_uint(f[2]), __float_as_uint(f[3]));
  } else {
    unsigned w[4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
      asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(w[i]) : "f"(f[2 * i + 1]), "f"(f[2 * i]));
    return make_uint4(w[0], w[1], w[2], w[3]);
  }
}


// Warp roles: NW compute warps; warp NW loads tiles and publishes their totals as soon as they
// land; warp NW+1 looks back for each tile's prefix. The compute warps never wait on a
// block-wide barrier.
extern "C" __global__ void __launch_bounds__(NT + 64) lbscan(
    const ELT* __restrict__ x, ELT* __restrict__ y, long long row_len, int tiles_per_row,
    int ntiles, unsigned long long* __restrict__ agg, unsigned long long* __restrict__ wavep,
    unsigned* __restrict__ counter, unsigned epoch, unsigned claim_base) {
  extern __shared__ __align__(128) char smem[];
  __shared__ __align__(8) unsigned long long full[STAGES], empty[STAGES], red[META], pre[META], mfree[META];
  __shared__ int tid_s[STAGES], meta_t[META];
  __shared__ float seg[META][NW + 1];
  __shared__ float excl_s[META];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int waves_per_row = (tiles_per_row + WAVE - 1) / WAVE;
  const unsigned long long tag = (unsigned long long)epoch << 32;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) { mbar_init(&full[s], 1); mbar_init(&empty[s], NW); }
    for (int s = 0; s < META; ++s) { mbar_init(&red[s], 1); mbar_init(&pre[s], 1); mbar_init(&mfree[s], NW); }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (warp == NW) {
    int tl[STAGES];  // tile of each stage, in this warp's registers (lane-uniform)
    auto issue = [&](int s, int first) -> bool {
      int t = 0;
      if (first >= 0) t = first;
      else if (lane == 0) t = (int)(atomicAdd(counter, 1u) - claim_base) + STATIC_FIRST * STAGES * (int)gridDim.x;
      t = __shfl_sync(0xffffffffu, t, 0);
      const bool ok = t >= 0 && t < ntiles;
      if (lane == 0) {
        tid_s[s] = ok ? t : -1;
        if (ok) {
          const int row = t / tiles_per_row, j = t - row * tiles_per_row;
          mbar_expect(&full[s], TILE_BYTES);
          bulk_load(smem + s * TILE_BYTES, x + row * row_len + (long long)j * TILE_ELEMS, TILE_BYTES, &full[s]);
        } else {
          mbar_arrive(&full[s]);
        }
      }
#pragma unroll
      for (int q = 0; q < STAGES; ++q) if (q == s) tl[q] = ok ? t : -1;
      return ok;
    };
    int issued = 0;
    bool more = true;
    for (; issued < STAGES && more; ++issued) more = issue(issued, STATIC_FIRST ? (int)blockIdx.x + issued * (int)gridDim.x : -1);
    for (int j = 0; j < issued; ++j) {
      const int s = j % STAGES;
      int t = -1;
#pragma unroll
      for (int q = 0; q < STAGES; ++q) if (q == s) t = tl[q];
      const int ms = j % META;
      if (t < 0) {
        if (j >= META) mbar_wait(&mfree[ms], ((j / META) - 1) & 1);
        if (lane == 0) { meta_t[ms] = -1; mbar_arrive(&red[ms]); }
        break;
      }
      mbar_wait(&full[s], (j / STAGES) & 1);
      const uint4* p = reinterpret_cast<const uint4*>(smem + s * TILE_BYTES) + lane;
      float a[NW];
#pragma unroll
      for (int w = 0; w < NW; ++w) {
        float a0 = 0.f, a1 = 0.f;
#pragma unroll
        for (int i = 0; i < RPW; i += 2) {
          float f[VE], g[VE];
          unpack(p[32 * (w * RPW + i)], f);
          unpack(p[32 * (w * RPW + i + 1)], g);
#pragma unroll
          for (int e = 0; e < VE; ++e) { a0 += f[e]; a1 += g[e]; }
        }
        a[w] = a0 + a1;
      }
#pragma unroll
      for (int d = 16; d >= 1; d >>= 1)
#pragma unroll
        for (int w = 0; w < NW; ++w) a[w] += __shfl_xor_sync(0xffffffffu, a[w], d);
      float tot = 0.f;
#pragma unroll
      for (int w = 0; w < NW; ++w) {
        a[w] = __shfl_sync(0xffffffffu, a[w], 0);
        tot += a[w];
      }
      if (lane == 0) st_relaxed(agg + t, tag | __float_as_uint(tot));
      if (j >= META) mbar_wait(&mfree[ms], ((j / META) - 1) & 1);
      if (lane == 0) {
#pragma unroll
        for (int w = 0; w < NW; ++w) seg[ms][w] = a[w];
        seg[ms][NW] = tot;
        meta_t[ms] = t;
        mbar_arrive(&red[ms]);
      }
      if (more) {
        const int k = issued;
        const int s2 = k % STAGES;
        mbar_wait(&empty[s2], ((k / STAGES) - 1) & 1);
        more = issue(s2, -1);
        ++issued;
      }
    }
    return;
  }
  if (warp == NW + 1) {
    for (int k = 0;; ++k) {
      const int s = k % META;
      mbar_wait(&red[s], (k / META) & 1);
      const int t = meta_t[s];
      if (t < 0) {
        if (lane == 0) { excl_s[s] = 0.f; mbar_arrive(&pre[s]); }
        break;
      }
      const float tagg = seg[s][NW];
      const int row = t / tiles_per_row, j = t - row * tiles_per_row;
      const int w = j / WAVE;
      const int first = t - (j - w * WAVE);
      unsigned long long wd[M];
      unsigned long long pw = (w == 0) ? tag : 0ull;
      const unsigned long long* pwp = wavep + row * waves_per_row + w;
#pragma unroll
      for (int m = 0; m < M; ++m) wd[m] = (first + lane + 32 * m < t) ? 0ull : tag;
      bool ok;
      do {
        ok = true;
#pragma unroll
        for (int m = 0; m < M; ++m)
          if ((wd[m] >> 32) != epoch) wd[m] = ld_relaxed(agg + first + lane + 32 * m);
        if (lane == 0 && (pw >> 32) != epoch) pw = ld_relaxed(pwp);
#pragma unroll
        for (int m = 0; m < M; ++m) ok &= (wd[m] >> 32) == epoch;
        if (lane == 0) ok &= (pw >> 32) == epoch;
        if (POLL_NS && !__all_sync(0xffffffffu, ok)) __nanosleep(POLL_NS);
      } while (!__all_sync(0xffffffffu, ok));
      float part = 0.f;
#pragma unroll
      for (int m = 0; m < M; ++m)
        if (first + lane + 32 * m < t) part += __uint_as_float((unsigned)wd[m]);
#pragma unroll
      for (int d = 16; d >= 1; d >>= 1) part += __shfl_down_sync(0xffffffffu, part, d);
      if (lane == 0) {
        const float ex = __uint_as_float((unsigned)pw) + part;
        excl_s[s] = ex;
        mbar_arrive(&pre[s]);
        if (j - w * WAVE == WAVE - 1 && j != tiles_per_row - 1)
          st_relaxed(wavep + row * waves_per_row + w + 1, tag | __float_as_uint(ex + tagg));
      }
      __syncwarp();
    }
    return;
  }
  for (int k = 0;; ++k) {
    const int s = k % STAGES, ms = k % META;
    mbar_wait(&full[s], (k / STAGES) & 1);
    const int t = tid_s[s];
    if (t < 0) break;
    float v[RPW][VE];
    const char* base = smem + s * TILE_BYTES + (warp * RPW) * ROWB + lane * 16;
#pragma unroll
    for (int r = 0; r < RPW; ++r) unpack(*reinterpret_cast<const uint4*>(base + r * ROWB), v[r]);
    __syncwarp();
    if (lane == 0) mbar_arrive(&empty[s]);
    float incl[RPW];
#pragma unroll
    for (int r = 0; r < RPW; ++r) {
#pragma unroll
      for (int e = 1; e < VE; ++e) v[r][e] += v[r][e - 1];
      incl[r] = v[r][VE - 1];
    }
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
#pragma unroll
      for (int r = 0; r < RPW; ++r) {
        const float o = __shfl_up_sync(0xffffffffu, incl[r], d);
        if (lane >= d) incl[r] += o;
      }
    }
    mbar_wait(&pre[ms], (k / META) & 1);
    float bex = excl_s[ms];
#pragma unroll
    for (int w = 0; w < NW; ++w)
      if (w < warp) bex += seg[ms][w];
    __syncwarp();
    if (lane == 0) mbar_arrive(&mfree[ms]);
    const int row = t / tiles_per_row, j = t - row * tiles_per_row;
    char* out = reinterpret_cast<char*>(y + row * row_len + (long long)j * TILE_ELEMS) + (warp * RPW) * ROWB + lane * 16;
    float rp = 0.f;
#pragma unroll
    for (int r = 0; r < RPW; ++r) {
      const float tot = __shfl_sync(0xffffffffu, incl[r], 31);
      float lex = __shfl_up_sync(0xffffffffu, incl[r], 1);
      if (lane == 0) lex = 0.f;
      const float add = bex + (rp + lex);
      rp += tot;
      float o[VE];
#pragma unroll
      for (int e = 0; e < VE; ++e) o[e] = v[r][e] + add;
      __stcs(reinterpret_cast<uint4*>(out + r * ROWB), pack(o));
    }
  }
}
