// Axis scans, forward and backward, on one skeleton parameterised by an associative op.
//
// The plan maps a tensor to rows (the coalesced outer dims, any strides) of n elements
// along the scan axis. Scan order q = 0..n-1 is physical position p = q, or n-1-q when
// `reverse`. Every op is a monoid over a state S (combine(earlier, later), identity) plus:
//   make(inputs of one element) -> S         out_value(inclusive, exclusive, inputs) -> A
// Kernels (each op gets all of them, one extern "C" entry per op x layout x dtype; the host
// compiles one program per group of ops, BC_SCAN_GROUP_<NAME> at the end of this file):
//   rows1 / rows8  axis contiguous: a warp (rows1) or a 256-thread block (rows8) per (row,
//                  chunk); each thread owns K consecutive elements (16-byte vector loads
//                  when aligned), thread-serial scan + shuffle scan + running carry.
//   cols           axis strided: one thread per (row, chunk), rows adjacent across threads
//                  (coalesced when the innermost outer dim is contiguous), serial walk with
//                  U loads in flight.
//   states1/8      in-place exclusive scan of per-chunk totals (multi-chunk rows).
//   lbrows / lbcols  single pass over lines too few to fill the GPU: a block scans one tile
//                  (lbrows: a piece of one line; lbcols: a piece of 1-32 adjacent lines) and
//                  takes its carry by decoupled look-back over a tree of the tiles before it
//                  (radix 32 / lines per tile; see "decoupled look-back").
//   strip / strip512  an op along a strided axis whose lines come in whole 128/256-byte
//                  runs: a block (256 or 512 threads) per run of adjacent lines walks the
//                  whole axis, chunks staged in shared memory by cp.async (see "strips of
//                  adjacent lines").
//   ring           sum/prod along a contiguous axis, rows of 16 KiB or more (the cumprod and
//                  logcumsumexp backward: 8 KiB): a block takes a sequence of rows and walks
//                  each in chunks staged in shared memory by cp.async (see "contiguous rows
//                  through a ring").
//   max_bwd_ring / max_bwd_ring8 / max_bwd_rows / max_bwd_rows8  the cummax/cummin backward
//                  in one kernel: contiguous rows through a ring (one pass; chunks of 16 or
//                  8 KiB), or a warp / a block per line (both passes).
//   zero           zeroes the look-back workspace before an lb* launch (its dependent); one
//                  per program, shared by its ops.
// A multi-chunk launch is either lb* (one pass, tiles ordered by a counter in the
// workspace) or reduce (write chunk totals) -> states -> final (carry-in).
// Backward ops are one scan in the opposite direction plus an epilogue (see each op).

namespace bc {
namespace scan {

enum { IN0 = 0, IN1 = 1, IN2 = 2, OUT = 3, AUX = 4, NOPS = 5 };

// Mirrors baracuda.scan._kernels.Operand / Params (ctypes).
struct Operand {
  void* ptr;
  i64 axis_stride;
  Strides outer;
};
struct Params {
  Operand op[NOPS];
  Shape outer;
  i64 rows, n, chunk_len, nchunks;  // rowreg: chunk_len = rows between a row and its L2 prefetch
  void* carry;  // S[rows * nchunks]: exclusive carry of each (row, chunk), or null
  void* agg;    // S[rows * nchunks]: written with chunk totals (reduce pass), or null
  void* lb;     // look-back workspace (lb* kernels): counter, tile flags, tile states
  i64 groups;   // lbcols: groups of `width` adjacent lines
  int width;    // lbcols: lines per tile (a power of two <= 32)
  int reverse;
  int mode;     // op-specific flags
  int vec;      // T operands allow 16-byte vectors along the axis (stride 1, aligned rows)
};

constexpr unsigned kFull = 0xffffffffu;
constexpr int kBlock = 256;
constexpr int kColUnroll = 8;

template <typename A, typename I = i64>
struct MaxIdx {
  A v;  // the winner's key (MaxOp)
  I i;  // physical index of the winner; -1 marks the identity
};
template <typename A>
struct Pair {
  A a;
  A b;
};

__device__ __forceinline__ float shfl_up(float x, int d) { return __shfl_up_sync(kFull, x, d); }
__device__ __forceinline__ double shfl_up(double x, int d) { return __shfl_up_sync(kFull, x, d); }
__device__ __forceinline__ float shfl_idx(float x, int s) { return __shfl_sync(kFull, x, s); }
__device__ __forceinline__ float shfl_down(float x, int d) { return __shfl_down_sync(kFull, x, d); }
__device__ __forceinline__ double shfl_down(double x, int d) {
  return __shfl_down_sync(kFull, x, d);
}
__device__ __forceinline__ double shfl_idx(double x, int s) { return __shfl_sync(kFull, x, s); }
template <typename A, typename I>
__device__ __forceinline__ MaxIdx<A, I> shfl_up(MaxIdx<A, I> x, int d) {
  return {shfl_up(x.v, d), __shfl_up_sync(kFull, x.i, d)};
}
template <typename A, typename I>
__device__ __forceinline__ MaxIdx<A, I> shfl_idx(MaxIdx<A, I> x, int s) {
  return {shfl_idx(x.v, s), __shfl_sync(kFull, x.i, s)};
}
template <typename A>
__device__ __forceinline__ Pair<A> shfl_up(Pair<A> x, int d) {
  return {shfl_up(x.a, d), shfl_up(x.b, d)};
}
template <typename A>
__device__ __forceinline__ Pair<A> shfl_idx(Pair<A> x, int s) {
  return {shfl_idx(x.a, s), shfl_idx(x.b, s)};
}
template <typename A>
__device__ __forceinline__ Pair<A> shfl_down(Pair<A> x, int d) {
  return {shfl_down(x.a, d), shfl_down(x.b, d)};
}

template <typename A>
__device__ __forceinline__ bool is_nan(A x) { return x != x; }

// ---------------------------------------------------------------- forward ops
// Inputs: IN0 = x. Output OUT = y. AUX (cummax/cummin): int64 indices, or uint8 "this
// element is its own running winner" flags (mode & 4; the first pass of the backward).

template <typename A>
struct SumOp {
  typedef A S;
  static constexpr int kIn = 1;
  static constexpr bool kNb = false, kAuxIn = false, kAuxOut = false;
  int mode;
  __device__ S identity() const { return A(0); }
  __device__ S combine(S l, S r) const { return l + r; }
  __device__ S make(const A* v, unsigned char, i64) const { return v[0]; }
  __device__ A out_value(S inc, S, const A*, A, unsigned char) const { return inc; }
};

template <typename A>
struct ProdOp {
  typedef A S;
  static constexpr int kIn = 1;
  static constexpr bool kNb = false, kAuxIn = false, kAuxOut = false;
  int mode;
  __device__ S identity() const { return A(1); }
  __device__ S combine(S l, S r) const { return l * r; }
  __device__ S make(const A* v, unsigned char, i64) const { return v[0]; }
  __device__ A out_value(S inc, S, const A*, A, unsigned char) const { return inc; }
};

// mode: bit0 cummin (else cummax), bit1 ties go to the latest element (else the earliest),
// bit2 AUX takes winner flags (else indices). NaN wins and sticks; among NaNs the latest.
// The states hold keys: x for cummax, -x for cummin (exact both ways, NaN stays NaN), so
// one comparison without branches serves both: a later key r wins against an earlier key l
// when r is NaN or greater, or equal with ties to the latest (l NaN: every comparison is
// false, l stays).
template <typename A>
__device__ __forceinline__ A max_key(int mode, A x) {
  return (mode & 1) ? -x : x;
}
template <typename A>
__device__ __forceinline__ bool key_wins(int mode, A r, A l) {
  return is_nan(r) || r > l || ((mode & 2) != 0 && r == l);
}

// I: the index type (int where every row is shorter than 2^31: MaxOp32). kSelect: combine
// evaluates every test (no short-circuit), and the compiler selects the winner's key and index
// without branches; else it branches on the tests, as the short-circuit operators read: on
// the strips' bf16 code (sm_90), 241 branches a chunk against 45 and 1748 instructions
// against 1436. Which kernels take which was measured (docs/benchmarks.md, round 44): the
// select wins in strips of 2- and 8-byte types, warp rows, segmented tiles and strided
// chunks; the branches in f32 strips over long axes and in the chunked rows below f64, where
// the select's registers spilled at the 64-register bound.
template <typename A, typename I = i64, bool kSelect = true>
struct MaxOp {
  typedef MaxIdx<A, I> S;
  static constexpr int kIn = 1;
  static constexpr bool kNb = false, kAuxIn = false, kAuxOut = true;
  int mode;
  __device__ S identity() const { return {A(0), I(-1)}; }
  __device__ S combine(S l, S r) const {
    if constexpr (kSelect) {
      // key_wins with every part evaluated, written out: in a helper of its own the machine
      // code changed (bf16 strip512: 5104 -> 5600 instructions with l's emptiness passed in)
      const bool take = (r.i >= 0) & ((l.i < 0) | is_nan(r.v) | (r.v > l.v) |
                                      (((mode & 2) != 0) & (r.v == l.v)));
      return {take ? r.v : l.v, take ? r.i : l.i};
    } else {
      return r.i >= 0 && (l.i < 0 || key_wins(mode, r.v, l.v)) ? r : l;
    }
  }
  __device__ S make(const A* v, unsigned char, i64 p) const { return {max_key(mode, v[0]), (I)p}; }
  __device__ A out_value(S inc, S, const A*, A, unsigned char) const {
    return max_key(mode, inc.v);
  }
  // AUX: the running winner of scan position q (physical p)
  __device__ i64 winner(S inc, S, const A*, i64, i64) const { return inc.i; }
};
// Rows shorter than 2^31 (the segmented tiles, pipe1: the host's launch conditions): an int
// index a state, where int64 takes two registers and two shuffles.
template <typename A>
using MaxOp32 = MaxOp<A, int>;

// The winner flags alone (the first pass of the cummax/cummin backward; mode as MaxOp, with
// bit 2 set): the state is the running extremum's key (NaN sticks), and scan position q is
// its own winner when q = 0 or its key wins against the extremum before it (key_wins). One
// word of state, where MaxOp carries a key and an index.
template <typename A>
struct MaxFlagOp {
  typedef A S;
  static constexpr int kIn = 1;
  static constexpr bool kNb = false, kAuxIn = false, kAuxOut = true;
  int mode;
  __device__ S identity() const { return -inf<A>(); }
  __device__ S combine(S l, S r) const { return is_nan(r) || r > l ? r : l; }
  __device__ S make(const A* v, unsigned char, i64) const { return max_key(mode, v[0]); }
  __device__ A out_value(S inc, S, const A*, A, unsigned char) const {
    return max_key(mode, inc);
  }
  // whether scan position q of its row (exclusive state exc, inputs v) is its own winner
  __device__ bool own(S exc, const A* v, i64 q) const {
    return q == 0 || key_wins(mode, max_key(mode, v[0]), exc);
  }
  __device__ i64 winner(S, S exc, const A* v, i64 q, i64 p) const {
    return own(exc, v, q) ? p : -1;
  }
};

// Ops whose AUX output is one byte of winner flag a position (else int64 indices, kAuxIn
// ops read flags)
template <class Op>
constexpr bool kFlagOut = false;
template <typename A>
constexpr bool kFlagOut<MaxFlagOp<A>> = true;

// log(exp(a) + exp(b)) with PyTorch's guards: -inf is the identity, inf + inf = inf.
template <typename A>
__device__ __forceinline__ A log_add_exp(A a, A b) {
  if (a == -inf<A>()) return b;
  if (b == -inf<A>()) return a;
  const A mx = a > b ? a : b;
  const A mn = a > b ? b : a;  // NaN in either lands in mn (or mx) and propagates
  if (mx == mn && mx == inf<A>()) return a;
  return mx + log1p(exp(mn - mx));
}

// logcumsumexp's run of elements: the value m + log(s), m the largest element so far (or the
// carry it started from), s = sum exp(v - m) >= 1 (0 for the empty run). Each element costs
// one exp of an argument <= 0 (rescaling s when it brings a new maximum), each output one log
// of s, and joining two runs one exp, where a log_add_exp costs an exp, a log1p and their
// guards. Equal maxima (infinities included) add their sums (no inf - inf); NaN sticks in s.
template <typename A>
struct LseRun {
  A m, s;
};
template <typename A>
__device__ __forceinline__ LseRun<A> shfl_up(LseRun<A> x, int d) {
  return {shfl_up(x.m, d), shfl_up(x.s, d)};
}
template <typename A>
__device__ __forceinline__ LseRun<A> shfl_idx(LseRun<A> x, int s) {
  return {shfl_idx(x.m, s), shfl_idx(x.s, s)};
}

// exp of an argument <= 0 for a run's terms: the hardware exp below f64 (ex2.approx.ftz of
// x log2(e), as __expf without its fix-up of results below 2^-126, which flush to 0: such a
// term cannot move a sum s >= 1; relative error about 2^-21 + |x| 2^-24; a term exp(x) <= 1
// adds at most about 1.3e-7 to s >= 1, where the largest, x = -1, moves log s by
// 1.3e-7 / s), the accurate one in f64.
template <typename A>
__device__ __forceinline__ A lse_exp(A x) {
  if constexpr (sizeof(A) == 4) {
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x * 1.44269504088896341f));
    return r;
  } else {
    return exp(x);
  }
}

// log of a run's sum s (>= 1; 0 for the empty run, whose m is -inf; or NaN) in f32: logf's
// reduction and polynomial (s = 2^i m, m in [2/3, 4/3), log s = i log 2 + log1p(m - 1), within
// 1 ulp) without its branches for zero, negative, denormal and infinite arguments, which s
// never is; NaN passes through. About two thirds of logf's instructions.
__device__ __forceinline__ float log_sum(float s) {
  const int b = __float_as_int(s);
  const int e = (b - 0x3f2aaaab) & (int)0xff800000;
  const float f = __int_as_float(b - e) - 1.0f;
  float r = fmaf(-0.130188569f, f, 0.140846103f);
  r = fmaf(r, f, -0.121486276f);
  r = fmaf(r, f, 0.139806107f);
  r = fmaf(r, f, -0.166842356f);
  r = fmaf(r, f, 0.200122997f);
  r = fmaf(r, f, -0.249996692f);
  r = fmaf(r, f, 0.333331823f);
  r = fmaf(r, f, -0.5f);
  r = fmaf(r * f, f, f);
  r = fmaf((float)e * 1.1920928955078125e-7f, 0.693147182f, r);
  return s == s ? r : s;
}

// log of s for an output: the hardware log (lg2.approx.ftz times log 2, as __logf without
// its fix-up of denormal arguments, which s never is: absolute error about 2^-21.4 over s's
// range) when values are stored in 2 bytes (f16, bf16: 2^-11 / 2^-8 per stored value),
// log_sum in f32 and the accurate log in f64.
template <typename A>
__device__ __forceinline__ A log_run(A s) {
  if constexpr (sizeof(BC_T) == 2) {
    float r;
    asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(s));
    return r * 0.693147180559945309f;
  } else if constexpr (sizeof(A) == 4)
    return log_sum(s);
  else
    return log(s);
}

template <typename A>
struct LseOp {
  typedef A S;
  static constexpr int kIn = 1;
  static constexpr bool kNb = false, kAuxIn = false, kAuxOut = false;
  int mode;
  __device__ S identity() const { return -inf<A>(); }
  __device__ S combine(S l, S r) const { return log_add_exp(l, r); }
  __device__ S make(const A* v, unsigned char, i64) const { return v[0]; }
  __device__ A out_value(S inc, S, const A*, A, unsigned char) const { return inc; }
  // thread runs (kRunOp): start at a state, push values, join two runs, read the state
  typedef LseRun<A> Run;
  __device__ Run run0() const { return {-inf<A>(), A(0)}; }  // the empty run
  __device__ Run run(S from) const { return {from, A(1)}; }
  // the run of l's elements then r's: the smaller maximum's sum rescaled by one exp <= 1
  // (equal maxima, infinities included, add; NaN in either gives NaN in s)
  __device__ Run join(const Run& l, const Run& r) const {
    const bool lbig = l.m > r.m;
    const A e = lse_exp(-fabs(l.m == r.m ? A(0) : l.m - r.m));
    return lbig ? Run{l.m, r.s * e + l.s} : Run{r.m, l.s * e + r.s};
  }
  // join(r, run(v)), one compare fewer; the new maximum from v and r.m alone, so that the
  // chain from one push to the next is a compare and a select
  __device__ void push(Run& r, A v) const {
    const bool up = v > r.m;
    const A e = lse_exp(-fabs(v == r.m ? A(0) : v - r.m));
    r.s = up ? r.s * e + A(1) : r.s + e;
    r.m = up ? v : r.m;
  }
  __device__ S value(const Run& r) const { return r.m + log_run(r.s); }
  // A lane's K values at once (pipe_tile), in two passes instead of a push each: one exp a
  // value for the lane's run, then, from the run before the lane, one log an output (a push
  // an output costs an exp, a log and push's compare-selects). `lane_run` gives the
  // run that pushing v(0)..v(K-1) (v(k): value k; past the end, the identity) from run0()
  // gives, {M, t[K-1]} with M the largest value and t[k] = sum_{j <= k} exp(v(j) - M) (equal
  // values as exp(0), so that inf - inf and -inf + inf never occur; M skips NaN, which
  // sticks in t).
  template <int K, class V>
  __device__ Run lane_run(const V& v, A (&t)[K]) const {
    A mx = v(0);
#pragma unroll
    for (int k = 1; k < K; ++k) mx = fmax(mx, v(k));
    A acc = A(0);
#pragma unroll
    for (int k = 0; k < K; ++k) {
      acc += lse_exp(v(k) == mx ? A(0) : v(k) - mx);
      t[k] = acc;
    }
    return {mx, acc};
  }
  // The outputs y[k] = value(join(p, the run of v(0)..v(k))) from lane_run's M and t (y may
  // be t): R + log(base + t[k] cl), base = p.s exp(p.m - R), cl = exp(M - R), R = max(p.m, M),
  // a log an output. An exp(d) of d far under 0 is off by about |d| 2^-24 of itself, and under
  // 2^-126 it is 0: where such terms carry an output, pushing is exact where this is not. So
  // where the lane's first sum (the least) is under kFloor of exp(R) (or NaN; p.m is NaN only
  // where the carry is), the lane's values v(k) (read again) are pushed one by one from p;
  // otherwise every term that carries an output is within log(1 / kFloor) of R, and its error
  // within that many 2^-24 (f32 and f64 inputs: 2^-8, so within about 6 * 2^-24, as pushing;
  // f16 and bf16, whose outputs round to 2^-11 and 2^-8: 2^-80, under which flushed terms
  // could matter). The choice is the warp's: where its lanes chose each for itself, they took
  // both ways one after the other (up to 15 % slower, docs/benchmarks.md round 68).
  template <int K, class V>
  __device__ void lane_outputs(Run p, A M, const A (&t)[K], const V& v, A (&y)[K]) const {
    constexpr double kFloor = sizeof(BC_T) == 2 ? 0x1p-80 : 0x1p-8;
    const A R = fmax(p.m, M);
    const A cl = M == R ? A(1) : lse_exp(M - R);
    const A base = p.s * (p.m == R ? A(1) : lse_exp(p.m - R));
    const bool ok = fma(t[0], cl, base) >= A(kFloor);
    if (__all_sync(__activemask(), ok)) {
#pragma unroll
      for (int k = 0; k < K; ++k) y[k] = R + log_run(fma(t[k], cl, base));
    } else {  // rare: values far under a lane's maximum
#pragma unroll
      for (int k = 0; k < K; ++k) {
        push(p, v(k));
        y[k] = value(p);
      }
    }
  }
};

// Run ops (logcumsumexp) scan in runs (Op::Run: run0, run, push, join, value) instead of
// states: a thread pushes its elements, warps and blocks join the threads' runs, and the
// outputs are pushed again from the thread's carry; only tile totals and carries are states
// (S), so look-back, chunk carries and the workspace are the same as for the other ops.
// Every kernel keeps the other ops' code as it was (checked by the SASS of each function).
template <class Op>
constexpr bool kRunOp = false;
template <typename A>
constexpr bool kRunOp<LseOp<A>> = true;

// A run ops' run type, an empty placeholder for the others.
struct NoRun {};
template <class Op, bool = kRunOp<Op>>
struct RunOf {
  typedef NoRun type;
};
template <class Op>
struct RunOf<Op, true> {
  typedef typename Op::Run type;
};
// What a warp's partial scans are exchanged as: runs for run ops, else states.
template <class Op, bool = kRunOp<Op>>
struct WordOf {
  typedef typename Op::S type;
};
template <class Op>
struct WordOf<Op, true> {
  typedef typename Op::Run type;
};

// ---------------------------------------------------------------- backward ops
// All scan in the direction opposite to the forward's.

// The state and combine of a linear recurrence h = a h_prev + b, as (a, b): the cumprod
// backward's, the cummax backward's segmented sums and the logcumsumexp backward's in 2-byte
// rows derive from it.
template <typename A>
struct LinRec {
  typedef Pair<A> S;
  int mode;
  __device__ S identity() const { return {A(1), A(0)}; }
  __device__ S combine(S l, S r) const { return {l.a * r.a, r.a * l.b + r.b}; }
};

// cumprod: dx_i = y_{i-1} * (dy_i + Q_{i+1}),  Q_i = x_i (dy_i + Q_{i+1})  (forward indices)
// Q is the linear recurrence (a, b) = (x, x dy): exact with zeros, no division.
// IN0 = dy, IN1 = x, IN2 = y read at the neighbour (the forward-previous element; 1 at the
// start of the forward scan).
template <typename A>
struct ProdBwdOp : LinRec<A> {
  typedef Pair<A> S;
  static constexpr int kIn = 2;
  static constexpr bool kNb = true, kAuxIn = false, kAuxOut = false;
  __device__ S make(const A* v, unsigned char, i64) const { return {v[1], v[1] * v[0]}; }
  __device__ A out_value(S, S exc, const A* v, A nb, unsigned char) const {
    return nb * (v[0] + exc.b);
  }
};

// exp for the logcumsumexp backward, of arguments <= 0 (but a recurrence factor's where y
// steps down, <= 64): the hardware exp (__expf: relative error about 2^-21 + |x| 2^-24) when
// values are stored in 2 bytes (f16, bf16: 2^-11 / 2^-8 per stored value), the accurate one
// otherwise (f32, f64).
template <typename A>
__device__ __forceinline__ A exp_nonpos(A x) {
  if constexpr (sizeof(BC_T) == 2)
    return __expf(x);
  else
    return exp(x);
}

// logcumsumexp: dx_i = sum_{j >= i} dy_j exp(x_i - y_j). The suffix sum is carried as
// (s, r) meaning s * exp(-r) with r = min y (so every rescale factor is <= 1), and
// dx_i = exp(x_i - r) * s; x_i = -inf gives 0 (no inf - inf). IN0 = dy, IN1 = x, IN2 = y.
// Every exp argument is <= 0 (r <= y_j; x_i <= y_i = r over the suffix of i).
template <typename A>
struct LseBwdOp {
  typedef Pair<A> S;  // a = s, b = r
  static constexpr int kIn = 3;
  static constexpr bool kNb = false, kAuxIn = false, kAuxOut = false;
  int mode;
  __device__ S identity() const { return {A(0), inf<A>()}; }
  // the side of the larger r rescaled by an exp <= 1 (equal r, infinities included: none).
  // 2-byte types compute the one exp and select (H100, 4096 x 8192 along dim 1: bf16 180.4
  // -> 153.8 us); 4- and 8-byte types skip the other exp where a factor is 1 (f32: 200.5 vs
  // 220.9 us the other way).
  __device__ S combine(S l, S r) const {
    if constexpr (sizeof(BC_T) == 2) {
      const bool rless = r.b < l.b;
      const A f = exp_nonpos(l.b == r.b ? A(0) : rless ? r.b - l.b : l.b - r.b);
      return rless ? S{l.a * f + r.a, r.b} : S{l.a + r.a * f, l.b};
    } else {
      const A m = r.b < l.b ? r.b : l.b;
      const A fl = l.b == m ? A(1) : exp_nonpos(m - l.b);
      const A fr = r.b == m ? A(1) : exp_nonpos(m - r.b);
      return {l.a * fl + r.a * fr, m};
    }
  }
  __device__ S make(const A* v, unsigned char, i64) const { return {v[0], v[2]}; }
  __device__ A out_value(S inc, S, const A* v, A, unsigned char) const {
    const A x = v[1];
    if (x == -inf<A>()) return A(0);
    return (x == inc.b ? A(1) : exp_nonpos(x - inc.b)) * inc.a;
  }
};

// logcumsumexp, as a linear recurrence (f16/bf16 rows, LseBwdRowsOp):
// dx_i = sum_{j >= i} dy_j exp(x_i - y_j) = exp(x_i - y_i) S_i with
// S_i = dy_i + exp(y_i - y_{i+1}) S_{i+1} (forward indices; it holds for any y). It is carried
// as U_i = f_i (dy_i + U_{i+1}), f_i = exp(y_{i-1} - y_i), so that S_i = dy_i + U_{i+1}: the
// linear recurrence (a, b) = (f, f dy) of the cumprod backward, whose combine takes no exp.
// Each position costs two exps that depend on its inputs alone (f_i and exp(x_i - y_i)), none
// in the chain of combines (the running minimum takes one a combine: an element's, and each
// of the shuffle and block scans'). IN0 = dy, IN1 = x, IN2 = y, and y at the neighbour
// (y_{i-1}: the next position in scan order; 1 past the forward start, where f is unused).
// - Precision: the factor of a stretch of positions is a product of one rounded exp each, so
//   its error grows with the stretch (on an H200 over f32 rows of 8192, 3.4e-4 of
//   max(1, |dx|) against the running minimum's 1.7e-5; 1.9e-2 over 2^23), where the running
//   minimum rescales by one exp of two y's. So only 2-byte types take it: their y step in
//   coarse increments, most factors are exactly 1, and the error stays at the rounding of the
//   stored result (2^-11 / 2^-8; bf16 3.9e-3, f16 4.9e-4 either way).
// - y of a forward never decreases, so f <= 1 and S cannot overflow; but a stored y may step
//   down by an ulp where the forward's approximate log rounds the other way (2-byte types),
//   and f > 1 there is what the sum needs (clamped to 1 it cost up to 0.2 of max(1, |dx|) in
//   bf16 over 512 x 16384). The exponent is capped at 64 so that f past the forward start
//   stays finite.
// - f is 1 where y_{i-1} = y_i (both infinite included: no inf - inf), NaN where either is NaN
//   (NaN reaches every earlier position, as the sum would); x_i = -inf gives 0.
template <typename A>
struct LseBwdLinOp : LinRec<A> {
  typedef Pair<A> S;
  static constexpr int kIn = 3;
  static constexpr bool kNb = true, kAuxIn = false, kAuxOut = false;
  __device__ S make_nb(const A* v, A nb, unsigned char, i64) const {
    const A d = nb - v[2];
    const A f = nb == v[2] ? A(1) : exp_nonpos(d < A(64) ? d : A(64));
    return {f, f * v[0]};
  }
  __device__ A out_value(S, S exc, const A* v, A, unsigned char) const {
    const A x = v[1];
    if (x == -inf<A>()) return A(0);
    return (x == v[2] ? A(1) : exp_nonpos(x - v[2])) * (v[0] + exc.b);
  }
};

// The inputs an op reads at each position: its Op::kIn from IN0, and for kNb y at IN2 (an
// input of its own where kIn is 3; loaded, staged or read for the neighbour where it is 2).
template <class Op>
constexpr int kInputsY = Op::kNb && Op::kIn < 3 ? 3 : Op::kIn;

// Ops whose make reads the neighbour (make_nb): the logcumsumexp backward's.
template <class Op>
constexpr bool kNbMake = false;
template <typename A>
constexpr bool kNbMake<LseBwdLinOp<A>> = true;

template <bool B, class X, class Y>
struct Pick {
  typedef X type;
};
template <class X, class Y>
struct Pick<false, X, Y> {
  typedef Y type;
};
// cummax/cummin's strips: positions as int below 8-byte types (the host's condition,
// _kernels._strip_width: axes shorter than 2^31), one register and one select an index where
// int64 takes two (on an H200 over 4096 x 8192 along dim 0: f32 154.5 -> 144.5 us, bf16
// 173.0 -> 159.4, f16 alike); f64 keeps int64 (256.9 against 266.9 with int).
// f32 strips keep the branching combine (MaxOp's kSelect; over 4096 x 8192 along dim 0 the
// select took 150.4 against 144.4 us, though 80.2 against 90.1 over 512 x 32768).
template <typename A>
using MaxStripOp = typename Pick<sizeof(BC_T) == 8, MaxOp<A>,
                                 MaxOp<A, int, sizeof(BC_T) == 2>>::type;
// The chunked rows (rows1, rows8, their chunk states, lbrows) of cummax/cummin: the branching
// combine below f64 (MaxOp's kSelect: with the select, rows8 spilled 104 bytes at its 64
// registers in f32, and (4, 2^22) took 183.7 against 170.1 us in f32, 168.7 against 159.6 in
// bf16; f64 gained, 256.4 -> 251.0). Strided chunks (cols) take the select in every type.
template <typename A>
using MaxRowsOp = MaxOp<A, i64, sizeof(BC_T) == 8>;
// The logcumsumexp backward along contiguous rows (rows, look-back rows, segmented tiles): the
// linear recurrence in 2-byte types, the running minimum otherwise (the ring takes
// LseBwdStripOp, below). Strided axes keep the running minimum in every type: there the
// neighbour is one more strided load a position (on an H200, bf16 4096 x 8192 along dim 0:
// 359 -> 601 us with the recurrence).
template <typename A>
using LseBwdRowsOp = typename Pick<sizeof(BC_T) == 2, LseBwdLinOp<A>, LseBwdOp<A>>::type;

// The logcumsumexp backward in strips and in the ring, f32 and f64: LseBwdLinOp's linear
// recurrence within a thread's row group of 4-16 positions (the ring: a lane's run); each
// group's factor one exp in double of its end points, exp(y_next - y_first) (y at the
// neighbour of its last position and at its first), where the recurrence's own factor is a
// product of one rounded exp a position; the groups' sums and the carry along the axis in
// double. The carry is a chain of one join a group along the whole axis, and its error grows
// with the chain. On an H200 over 4096 x 8192 along dim 0 (x ~ 4 N(0, 1)) the largest error
// against float64 was 5-7e-6 of max(1, |dx|) so, 2.1e-4 with the factor and carry in f32, and
// 3.1e-5 on the look-back kernels without strips (whose chains are short); over 16384 rows
// 0.7-19e-6, and 1.2e-4 without strips. A join is one double multiply-add where the running
// minimum (LseBwdOp) takes an accurate exp: 357 -> 204 us there; in the ring (contiguous rows)
// 201 -> 169 us over 4096 x 8192 (on warp rows before, the running minimum).
template <typename A>
struct LseBwdGroupOp : LseBwdLinOp<A> {};
template <typename A>
constexpr bool kNbMake<LseBwdGroupOp<A>> = true;
template <class Op>
constexpr bool kGroupFactor = false;
template <typename A>
constexpr bool kGroupFactor<LseBwdGroupOp<A>> = true;
// What strips exchange between row groups and carry along the axis: WordOf, or for
// kGroupFactor ops a pair of doubles.
template <class Op>
struct StripCarryOf {
  typedef typename WordOf<Op>::type type;
};
template <typename A>
struct StripCarryOf<LseBwdGroupOp<A>> {
  typedef Pair<double> type;
};
template <typename A>
using LseBwdStripOp = typename Pick<sizeof(BC_T) == 2, LseBwdLinOp<A>, LseBwdGroupOp<A>>::type;
// Strip ops whose carry into a chunk lives in shared memory, left there by the chunk's last
// row group, so that a thread joins only the groups before its own (g joins a chunk, not G):
// kGroupFactor ops, and cummax/cummin (on an H200 over 4096 x 8192 along dim 0: f32 189.6 ->
// 185.2 us, bf16 228.0 -> 218.9; registers 159 -> 148 and 214 -> 199). The other ops keep it
// in registers, each thread joining every group: there the read of the carry behind the
// barrier measured slower (the cummax backward by 6-12 %, the bf16 cumprod backward by
// 8-26 %, bf16 cumsum by 6 %).
template <class Op>
constexpr bool kStripSmemCarry = kGroupFactor<Op>;
template <typename A, typename I, bool B>
constexpr bool kStripSmemCarry<MaxOp<A, I, B>> = true;

// Ops whose strips may be narrower than a warp's row (64 or 32 bytes: scan_strip_w's padded
// groups): one staged operand, no neighbour, no AUX, no runs, the carry in registers: the
// cumsum and cumprod (and the cumsum backward).
template <class Op>
constexpr bool kStripNarrow = kInputsY<Op> == 1 && !Op::kNb && !Op::kAuxIn && !Op::kAuxOut &&
                              !kRunOp<Op> && !kStripSmemCarry<Op>;

// A kGroupFactor group's factor from its end points: exp(y_next - y_first) in double (y at
// the neighbour of its last position and at its first), 1 where they are equal (infinities
// included), the exponent capped at 64 as LseBwdLinOp's factor is.
template <typename A>
__device__ __forceinline__ double group_factor(A y_next, A y_first) {
  const double d = (double)y_next - (double)y_first;
  return y_next == y_first ? 1.0 : exp(d < 64.0 ? d : 64.0);
}

// An element's state: make, or make_nb with the neighbour nb for kNbMake ops.
template <class Op, typename A>
__device__ __forceinline__ typename Op::S make_at(const Op& op, const A* v, A nb,
                                                  unsigned char f, i64 p) {
  if constexpr (kNbMake<Op>)
    return op.make_nb(v, nb, f, p);
  else
    return op.make(v, f, p);
}

// cummax / cummin, second pass: AUX holds the winner flags of the first pass (MaxFlagOp);
// dx_i = flag_i ? dy_i + V_{i+1} : 0 with V_i = flag_i ? 0 : dy_i + V_{i+1}: a segmented
// suffix sum as the linear recurrence (a, b) = (!flag, !flag * dy). IN0 = dy.
// a is exactly 1 or 0 (a winner in the span), so combine selects where LinRec multiplies: a
// winner's 0 must cut off the b of the span after it even where that b is infinite or NaN
// (0 * inf is NaN: a dy of inf or NaN reached the winners before its own in the gradient).
template <typename A>
struct SegBwdOp : LinRec<A> {
  typedef Pair<A> S;
  static constexpr int kIn = 1;
  static constexpr bool kNb = false, kAuxIn = true, kAuxOut = false;
  __device__ S combine(S l, S r) const { return {l.a * r.a, r.a != A(0) ? l.b + r.b : r.b}; }
  __device__ S make(const A* v, unsigned char f, i64) const {
    return f ? S{A(0), A(0)} : S{A(1), v[0]};
  }
  __device__ A out_value(S, S exc, const A* v, A, unsigned char f) const {
    return f ? v[0] + exc.b : A(0);
  }
};

// ---------------------------------------------------------------- the skeleton

__device__ __forceinline__ i64 phys(const Params& P, i64 q) { return P.reverse ? P.n - 1 - q : q; }

template <typename T>
__device__ __forceinline__ const T* in_ptr(const Params& P, int j) {
  return static_cast<const T*>(P.op[j].ptr);
}

// Group-wide scan of one value per thread (GW warps per group; GW == 8 is the whole block
// and uses `scratch`). Returns the exclusive prefix (identity for the first thread) and
// the group total.
template <int GW, class Op>
__device__ __forceinline__ void group_scan(const Op& op, typename Op::S x, typename Op::S& excl,
                                           typename Op::S& total, typename Op::S* scratch) {
  typedef typename Op::S S;
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const S y = shfl_up(x, d);
    if (lane >= d) x = op.combine(y, x);
  }
  S e = shfl_up(x, 1);
  if (lane == 0) e = op.identity();
  if (GW == 1) {
    excl = e;
    total = shfl_idx(x, 31);
  } else {
    const int w = threadIdx.x >> 5;
    if (lane == 31) scratch[w] = x;
    __syncthreads();
    S before = op.identity();
    S all = op.identity();
#pragma unroll
    for (int k = 0; k < GW; ++k) {
      if (k < w) before = op.combine(before, scratch[k]);
      all = op.combine(all, scratch[k]);
    }
    __syncthreads();  // scratch is rewritten by the next call
    excl = op.combine(before, e);
    total = all;
  }
}

// group_scan over the runs of run ops (kRunOp): joins instead of combines (an exp each, no
// log); `scratch` holds GW runs when GW > 1.
template <int GW, class Op>
__device__ __forceinline__ void group_scan_run(const Op& op, typename Op::Run x,
                                               typename Op::Run& excl, typename Op::Run& total,
                                               typename Op::Run* scratch) {
  typedef typename Op::Run Run;
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const Run y = shfl_up(x, d);
    if (lane >= d) x = op.join(y, x);
  }
  Run e = shfl_up(x, 1);
  if (lane == 0) e = op.run0();
  if (GW == 1) {
    excl = e;
    total = shfl_idx(x, 31);
  } else {
    // the warps' runs scanned by the first GW lanes of every warp (log2 GW joins, not 2 GW)
    const int w = threadIdx.x >> 5;
    if (lane == 31) scratch[w] = x;
    __syncthreads();
    Run t = lane < GW ? scratch[lane] : op.run0();
    __syncthreads();  // scratch is rewritten by the next call
#pragma unroll
    for (int d = 1; d < GW; d <<= 1) {
      const Run y = shfl_up(t, d);
      if (lane >= d) t = op.join(y, t);
    }
    const Run before = shfl_idx(t, (w + 31) & 31);  // warps 0..w-1 (w > 0)
    total = shfl_idx(t, GW - 1);
    excl = w > 0 ? op.join(before, e) : e;
  }
}

// cummax/cummin's AUX output at physical position p (element offset `off`): the winner
// index `win`, or (kFlags) the flag "p is its own running winner"; the kernel that knows its
// op at compile time (scan_short: kFlagOut<Op>) picks one, store_aux_at tests mode & 4.
template <bool kFlags>
__device__ __forceinline__ void store_aux_as(const Params& P, i64 off, i64 p, i64 win) {
  if constexpr (kFlags)
    static_cast<unsigned char*>(P.op[AUX].ptr)[off] = win == p ? 1 : 0;
  else
    static_cast<i64*>(P.op[AUX].ptr)[off] = win;
}
__device__ __forceinline__ void store_aux_at(const Params& P, i64 off, i64 p, i64 win) {
  if (P.mode & 4)
    store_aux_as<true>(P, off, p, win);
  else
    store_aux_as<false>(P, off, p, win);
}

// AUX of scan position q (physical p; inclusive and exclusive states, inputs v).
template <typename T, typename A, class Op>
__device__ __forceinline__ void store_aux(const Params& P, const Op& op, i64 base, i64 q, i64 p,
                                          const typename Op::S& inc, const typename Op::S& exc,
                                          const A* v) {
  if constexpr (Op::kAuxOut) {
    if (P.op[AUX].ptr != nullptr)
      store_aux_at(P, base + p * P.op[AUX].axis_stride, p, op.winner(inc, exc, v, q, p));
  }
}

// One 16-byte store (a plain int4 store of repacked lanes may be split into 4-byte ones).
__device__ __forceinline__ void store16(int4* p, int4 v) {
  asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z),
               "r"(v.w)
               : "memory");
}

// cummax/cummin's int64 indices of a warp's 32 x K consecutive positions, written so that
// every store instruction covers 512 contiguous bytes. Each lane holds the indices of its own
// K positions, which a lane's 16-byte stores would spread over 32 x 16 bytes K * 8 bytes
// apart: on the H100 that made the indices cost as much as values and indices together
// (cummax over (2^20, 16) f32: 157 us with the lanes' own stores, 106 us with coalesced
// ones). The lanes put their pairs of indices in shared memory (warp_pairs), the warp reads
// them back in physical order and stores them. Pair c of physical lane pl (the lanes in
// physical order: reversed in a reverse scan) sits at slot pair_slot: the slots of 8 lanes
// that meet in one access fall in distinct 16-byte bank groups, writing and reading.
template <int K>
__device__ __forceinline__ int pair_slot(int pl, int c) {
  constexpr int C = K / 2;                  // pairs a lane
  constexpr int G = C < 8 ? 8 / C : 1;      // lanes with the same swizzle
  return pl * C + (c ^ ((pl / G) & (C - 1)));
}
// This warp's 16 * K slots (one block of kBlock threads).
template <int K>
__device__ __forceinline__ int4* warp_pairs() {
  __shared__ int4 slots[kBlock / 32 * 16 * K];
  return slots + (threadIdx.x >> 5) * 16 * K;
}
__device__ __forceinline__ int4 idx_pair(i64 lo, i64 hi) {
  int4 w;
  memcpy(&w.x, &lo, 8);
  memcpy(&w.z, &hi, 8);
  return w;
}
// Warp-collective: the 32 * K indices put in `slots` go to dst (16-byte aligned), the
// warp's lowest physical position, those of physical lanes lo..hi-1 alone (the rows in
// registers: the others lie past the row's end); kStream: evict-first stores. The slots are
// free again on return.
template <int K, bool kStream = false>
__device__ __forceinline__ void store_pairs(i64* dst, int4* slots, int lo = 0, int hi = 32) {
  __syncwarp();
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int u = 0; u < K / 2; ++u) {
    const int j = u * 32 + lane;  // the warp's pair j in physical order
    const int pl = j / (K / 2);   // of physical lane pl
    int4* q = reinterpret_cast<int4*>(dst) + j;
    const int4 w = slots[pair_slot<K>(pl, j % (K / 2))];
    if (pl >= lo && pl < hi) {
      if constexpr (kStream)
        __stcs(q, w);
      else
        store16(q, w);
    }
  }
  __syncwarp();
}

// A word of B bytes (1 to 16): B one-byte flags (the cummax backward's winner flags), or
// scan_short's word of elements, moved in one access, B-byte aligned.
template <int B>
struct Bytes;
template <>
struct Bytes<1> {
  typedef unsigned char type;
};
template <>
struct Bytes<2> {
  typedef unsigned short type;
};
template <>
struct Bytes<4> {
  typedef unsigned type;
};
template <>
struct Bytes<8> {
  typedef uint2 type;
};
template <>
struct Bytes<16> {
  typedef uint4 type;
};

template <int B>
__device__ __forceinline__ void load_bytes(unsigned char* b, const unsigned char* src) {
  const typename Bytes<B>::type w = *reinterpret_cast<const typename Bytes<B>::type*>(src);
  memcpy(b, &w, B);
}

template <int B>
__device__ __forceinline__ void store_bytes(unsigned char* dst, const unsigned char* b) {
  typename Bytes<B>::type w;
  memcpy(&w, b, B);
  *reinterpret_cast<typename Bytes<B>::type*>(dst) = w;
}

// cummax/cummin's AUX output of one thread's K positions (scan order k, physical pstart +
// (kRev ? K - 1 - k : k) on the vector path): int64 winner indices, or (mode & 4) uint8
// "own winner" flags (kOwn: `win` holds them, 1 or 0, else they are win == the position);
// indices stored by the whole warp (store_pairs) where `warp_vec` (kPairs: rows1, rows8),
// else 16-byte (indices) or K-byte (flags) stores when contiguous and aligned, else one
// element at a time.
template <int K, bool kRev, bool kPairs, bool kOwn>
__device__ __forceinline__ void rows_store_aux(const Params& P, i64 abase, i64 qt, i64 q1,
                                               i64 pstart, bool vec, bool warp_vec,
                                               const i64 (&win)[K]) {
  const bool flags = (P.mode & 4) != 0;
  const i64 as = P.op[AUX].axis_stride;
  if constexpr (kPairs) {
    if (warp_vec) {  // the whole warp: indices, contiguous and 16-byte aligned
      int4* slots = warp_pairs<K>();
      const int pl = kRev ? 31 - (threadIdx.x & 31) : (threadIdx.x & 31);
#pragma unroll
      for (int c = 0; c < K / 2; ++c)
        slots[pair_slot<K>(pl, c)] = idx_pair(win[kRev ? K - 1 - 2 * c : 2 * c],
                                              win[kRev ? K - 2 - 2 * c : 2 * c + 1]);
      store_pairs<K>(static_cast<i64*>(P.op[AUX].ptr) + abase +
                         __shfl_sync(kFull, pstart, kRev ? 31 : 0),
                     slots);
      return;
    }
  }
  if (vec && as == 1) {
    const i64 off = abase + pstart;
    if (flags && (reinterpret_cast<unsigned long long>(P.op[AUX].ptr) + off) % K == 0) {
      unsigned char b[K];
#pragma unroll
      for (int k = 0; k < K; ++k)
        b[kRev ? K - 1 - k : k] =
            kOwn ? (unsigned char)win[k] : win[k] == (kRev ? P.n - 1 - (qt + k) : qt + k);
      store_bytes<K>(static_cast<unsigned char*>(P.op[AUX].ptr) + off, b);
      return;
    }
    i64* idx = static_cast<i64*>(P.op[AUX].ptr) + off;
    if (!flags && reinterpret_cast<unsigned long long>(idx) % 16 == 0) {
      int4* dst = reinterpret_cast<int4*>(idx);
#pragma unroll
      for (int u = 0; u < K / 2; ++u) {
        store16(dst + u, idx_pair(win[kRev ? K - 1 - 2 * u : 2 * u],
                                  win[kRev ? K - 2 - 2 * u : 2 * u + 1]));
      }
      return;
    }
  }
#pragma unroll
  for (int k = 0; k < K; ++k) {
    if (qt + k < q1) {
      const i64 p = kRev ? P.n - 1 - (qt + k) : qt + k;
      if constexpr (kOwn)
        static_cast<unsigned char*>(P.op[AUX].ptr)[abase + p * as] = (unsigned char)win[k];
      else
        store_aux_at(P, abase + p * as, p, win[k]);
    }
  }
}

// This thread's K elements of operand j from scan position qt in scan order: 16-byte
// vectors from physical pstart on the vector path, else one element at a time (0 past q1).
template <typename T, typename A, int K, bool kRev>
__device__ __forceinline__ void load_tile(const Params& P, int j, i64 base, i64 qt, i64 q1,
                                          i64 pstart, bool vec, A (&out)[K]) {
  constexpr int L = 16 / sizeof(T);
  const T* src = in_ptr<T>(P, j) + base;
  if (vec) {
    T raw[K];
    const Vec16<T>* vp = reinterpret_cast<const Vec16<T>*>(src + pstart);
#pragma unroll
    for (int u = 0; u < K / L; ++u) {
      const Vec16<T> w = vp[u];
#pragma unroll
      for (int l = 0; l < L; ++l) raw[u * L + l] = w.v[l];
    }
#pragma unroll
    for (int k = 0; k < K; ++k) out[k] = to_acc(raw[kRev ? K - 1 - k : k]);
  } else {
#pragma unroll
    for (int k = 0; k < K; ++k)
      out[k] = qt + k < q1 ? to_acc(src[phys(P, qt + k) * P.op[j].axis_stride]) : A(0);
  }
}

// Ops of one input without neighbour or aux operands (sum, prod, lse): what the staged
// look-back tiles, pipe1 and the cooperative kernel take.
template <class Op>
constexpr bool kOneInputOp = Op::kIn == 1 && !Op::kNb && !Op::kAuxIn && !Op::kAuxOut;

// ------------------------------------------------------------ states computed again
// The stream kernel and the look-back column tiles (lbcols, lbstage) keep a tile's elements
// in registers across a wait (the tile's prefix, its carry) and then scan them again from the
// carry. With double accumulators over f32 elements (the f32 cumprod: kRescan), ptxas kept
// the first pass's doubles instead (each element converted, and a vector's products) and
// spilled them at these kernels' register bounds: 80-96 bytes a thread in the stream
// kernel's rows, 280 in lbcols. There the elements kept are XORed with a zero that ptxas
// cannot know (opaque_zero: a block's dynamic shared memory is below 2^31 bytes), so it
// converts them again, and the second pass multiplies the carry in first, so that its
// products share nothing with the first pass's. Neither spills now; on an H200
// (docs/benchmarks.md, round 62) one row of 2^26 went from 173.9 to 155.9 us, (70000, 300)
// along dim 0 from 118.9 to 106.1. The row tiles (rows1, rows8, lbrows) keep their doubles:
// they spilled 8-48 bytes, and computed again (3000, 1029) took 34.1 us against 32.5.
// Whether a kernel over elements of `elem` bytes with accumulators of `acc` bytes scans its
// kept elements again (kRescan): f32 elements, double accumulators.
__host__ __device__ constexpr bool rescans(int elem, int acc) { return elem == 4 && acc == 8; }
__device__ __forceinline__ unsigned opaque_zero() {
  unsigned z;
  asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(z));
  return z >> 31;
}
__device__ __forceinline__ float launder(float x, unsigned z) {
  return __uint_as_float(__float_as_uint(x) ^ z);
}
__device__ __forceinline__ int4 launder(int4 x, unsigned z) {
  return make_int4(x.x ^ (int)z, x.y ^ (int)z, x.z ^ (int)z, x.w ^ (int)z);
}

template <typename T>
__host__ __device__ constexpr int rows_per_thread() {
  return sizeof(T) == 8 ? 4 : 8;  // 2 or 1 vectors; the look-back tiles take twice as many
}

// One tile of a contiguous line for rows1/rows8/lbrows: this group's threads own K
// consecutive scan positions each from `tile` (those before q1 are valid). `carry_in(total)`
// is called by every thread of the group after the group scan with the tile's total and
// returns the tile's carry-in (uniform over the group); outputs are stored unless `reduce`.
template <typename T, typename A, class Op, int GW, int K, bool kRev, class CarryIn>
__device__ __forceinline__ void rows_tile(const Params& P, const Op& op, const i64* base, i64 tile,
                                          i64 q1, bool reduce, typename Op::S* scratch,
                                          CarryIn&& carry_in) {
  typedef typename Op::S S;
  constexpr int L = 16 / sizeof(T);  // lanes of one 16-byte vector
  static_assert(K % L == 0, "a thread's elements are whole vectors");
  constexpr int GT = 32 * GW;
  const int t = threadIdx.x % GT;
  const i64 qt = tile + (i64)t * K;
  const i64 pstart = kRev ? P.n - qt - K : qt;  // lowest physical index of the group
  const bool vec = P.vec && qt + K <= q1 && pstart % L == 0;
  // cummax/cummin: the warp stores its indices together (store_pairs)
  // (rows1 and rows8; not the look-back tiles, twice as long: their slots would take 16-32
  // KiB of shared memory beside the look-back's own)
  constexpr bool kPairs = Op::kAuxOut && !kFlagOut<Op> && K == rows_per_thread<T>();
  [[maybe_unused]] bool warp_vec = false;
  if constexpr (kPairs)
    warp_vec = __all_sync(kFull, vec && !reduce && P.op[AUX].ptr != nullptr &&
                                     (P.mode & 4) == 0 && P.op[AUX].axis_stride == 1 &&
                                     (reinterpret_cast<unsigned long long>(
                                          static_cast<i64*>(P.op[AUX].ptr) + base[AUX] +
                                          pstart) %
                                      16) == 0);
  A v[Op::kIn][K];
  A nb[K];
  unsigned char fl[K];
#pragma unroll
  for (int j = 0; j < Op::kIn; ++j)
    load_tile<T, A, K, kRev>(P, j, base[j], qt, q1, pstart, vec, v[j]);
#pragma unroll
  for (int k = 0; k < K; ++k) {
    nb[k] = A(1);
    fl[k] = 0;
  }
  if constexpr (Op::kNb) {
    // the next element in scan order; 1 past the end of the axis
    if (vec && P.op[IN2].axis_stride == 1) {
      if constexpr (Op::kIn == 3) {  // y is an input (IN2) already
#pragma unroll
        for (int k = 0; k + 1 < K; ++k) nb[k] = v[2][k + 1];
      } else {
        A y[K];
        load_tile<T, A, K, kRev>(P, IN2, base[IN2], qt, q1, pstart, true, y);
#pragma unroll
        for (int k = 0; k + 1 < K; ++k) nb[k] = y[k + 1];
      }
      if (qt + K < P.n) nb[K - 1] = to_acc(in_ptr<T>(P, IN2)[base[IN2] + phys(P, qt + K)]);
    } else {
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const i64 q = qt + k;
        if (q + 1 < P.n && q < q1)
          nb[k] = to_acc(in_ptr<T>(P, IN2)[base[IN2] + phys(P, q + 1) * P.op[IN2].axis_stride]);
      }
    }
  }
  if constexpr (Op::kAuxIn) {
    const unsigned char* src = static_cast<const unsigned char*>(P.op[AUX].ptr) + base[AUX];
    if (vec && P.op[AUX].axis_stride == 1 &&
        reinterpret_cast<unsigned long long>(src + pstart) % K == 0) {
      unsigned char b[K];  // K bytes in physical order, one load
      load_bytes<K>(b, src + pstart);
#pragma unroll
      for (int k = 0; k < K; ++k) fl[k] = b[kRev ? K - 1 - k : k];
    } else {
#pragma unroll
      for (int k = 0; k < K; ++k)
        if (qt + k < q1) fl[k] = src[phys(P, qt + k) * P.op[AUX].axis_stride];
    }
  }
  A res[K];
  i64 win[K];  // cummax/cummin: physical index of each running winner (the flags: own or not)
  if constexpr (kRunOp<Op>) {
    // the thread's run, joined across the group; `scratch` holds GW runs. A block's rows
    // (rows8, and the look-back rows' blocks) in float: the run in two passes (LseOp::lane_run,
    // lane_outputs); rows1's warps and f64 push each value twice, where the two passes
    // measured slower (docs/benchmarks.md, round 69)
    typedef typename Op::Run Run;
    constexpr bool kLanes = GW > 1 && sizeof(A) == 4;
    [[maybe_unused]] A tt[K];
    Run r = op.run0();
    if constexpr (kLanes) {
      r = op.lane_run([&](int k) { return qt + k < q1 ? v[0][k] : A(op.identity()); }, tt);
    } else {
#pragma unroll
      for (int k = 0; k < K; ++k) op.push(r, qt + k < q1 ? v[0][k] : op.identity());
    }
    Run excl, total;
    group_scan_run<GW>(op, r, excl, total, reinterpret_cast<Run*>(scratch));
    const S carry = carry_in(op.value(total));
    if (reduce || qt >= q1) return;
    // positions past the end are pushed but not stored
    if constexpr (kLanes) {
      op.lane_outputs(op.join(op.run(carry), excl), r.m, tt, [&](int k) { return v[0][k]; }, res);
    } else {
      r = op.join(op.run(carry), excl);
#pragma unroll
      for (int k = 0; k < K; ++k) {
        op.push(r, v[0][k]);
        res[k] = op.value(r);
      }
    }
  } else {
    S st[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
      A vk[Op::kIn];
#pragma unroll
      for (int j = 0; j < Op::kIn; ++j) vk[j] = v[j][k];
      st[k] = qt + k < q1 ? make_at(op, vk, nb[k], fl[k], phys(P, qt + k)) : op.identity();
      if (k > 0) st[k] = op.combine(st[k - 1], st[k]);
    }
    S excl, total;
    group_scan<GW>(op, st[K - 1], excl, total, scratch);
    const S carry = carry_in(total);
    if (reduce || qt >= q1) return;
    const S prefix = op.combine(carry, excl);
    S prev = prefix;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const S inc = op.combine(prefix, st[k]);
      A vk[Op::kIn];
#pragma unroll
      for (int j = 0; j < Op::kIn; ++j) vk[j] = v[j][k];
      res[k] = op.out_value(inc, prev, vk, nb[k], fl[k]);
      if constexpr (kFlagOut<Op>)  // 1 where the position is its own winner
        win[k] = op.own(prev, vk, qt + k);
      else if constexpr (Op::kAuxOut)
        win[k] = op.winner(inc, prev, vk, qt + k, phys(P, qt + k));
      prev = inc;
    }
  }
  if constexpr (Op::kAuxOut) {
    if (P.op[AUX].ptr != nullptr)
      rows_store_aux<K, kRev, kPairs, kFlagOut<Op>>(P, base[AUX], qt, q1, pstart, vec, warp_vec,
                                                    win);
  }
  if (P.op[OUT].ptr != nullptr) {
    T* dst = static_cast<T*>(P.op[OUT].ptr) + base[OUT];
    if (vec) {
      int4* vp = reinterpret_cast<int4*>(dst + pstart);
#pragma unroll
      for (int u = 0; u < K / L; ++u) {
        Vec16<T> w;
#pragma unroll
        for (int l = 0; l < L; ++l) {
          const int k = u * L + l;
          w.v[l] = from_acc<T>(res[kRev ? K - 1 - k : k]);
        }
        int4 raw;
        memcpy(&raw, &w, 16);
        store16(vp + u, raw);
      }
    } else {
#pragma unroll
      for (int k = 0; k < K; ++k)
        if (qt + k < q1) dst[phys(P, qt + k) * P.op[OUT].axis_stride] = from_acc<T>(res[k]);
    }
  }
}

template <typename T, typename A, class Op, int GW, bool kRev>
__device__ __forceinline__ void scan_rows_dir(const Params& P) {
  typedef typename Op::S S;
  constexpr int K = rows_per_thread<T>();
  constexpr int GT = 32 * GW;
  constexpr int GPB = kBlock / GT;
  __shared__ S scratch[kRunOp<Op> ? 16 : 8];  // run ops: 8 runs
  const Op op{P.mode};
  const int g = threadIdx.x / GT;
  const bool reduce = P.agg != nullptr;
  const i64 items = P.rows * P.nchunks;
  for (i64 first = (i64)blockIdx.x * GPB; first < items; first += (i64)gridDim.x * GPB) {
    const i64 item = first + g;
    if (GW == 1 && item >= items) continue;  // warp-synchronous: whole warps skip
    const i64 row = item / P.nchunks;
    const i64 q0 = (item - row * P.nchunks) * P.chunk_len;
    const i64 q1 = min(P.n, q0 + P.chunk_len);
    Coord c;
    unravel(row, P.outer, c);
    i64 base[NOPS];
#pragma unroll
    for (int j = 0; j < NOPS; ++j) base[j] = dot(c, P.op[j].outer, P.outer.rank);
    S carry = P.carry != nullptr ? static_cast<const S*>(P.carry)[item] : op.identity();
    if (reduce) {
      // The chunk's total from its last tile to its first (combined in scan order), so the
      // tiles this pass read last, still in L2, are the ones the final pass reads first.
      for (i64 tile = q0 + (q1 - q0 - 1) / (GT * K) * (GT * K); tile >= q0;
           tile -= (i64)GT * K) {
        rows_tile<T, A, Op, GW, K, kRev>(P, op, base, tile, q1, true, scratch,
                                         [&](const S& total) {
                                           carry = op.combine(total, carry);
                                           return carry;
                                         });
      }
    } else {
      for (i64 tile = q0; tile < q1; tile += (i64)GT * K) {
        rows_tile<T, A, Op, GW, K, kRev>(P, op, base, tile, q1, false, scratch,
                                         [&](const S& total) {
                                           const S in = carry;
                                           carry = op.combine(carry, total);
                                           return in;
                                         });
      }
    }
    if (reduce && threadIdx.x % GT == 0) static_cast<S*>(P.agg)[item] = carry;
  }
}

// The scan direction is a template argument (kRev, the last one): every kernel body is
// instantiated for both directions so every register index is static (a runtime one sends
// the per-thread arrays to local memory); BC_SCAN_BY_DIRECTION(F, args...) calls
// F<args..., P.reverse>(P). (A macro, not a generic lambda: NVRTC 13.0 treats a generic
// lambda's call operator as a host function.)
#define BC_SCAN_BY_DIRECTION(F, ...) \
  do {                               \
    if (P.reverse)                   \
      F<__VA_ARGS__, true>(P);       \
    else                             \
      F<__VA_ARGS__, false>(P);      \
  } while (0)

template <typename T, typename A, class Op, int GW>
__device__ void scan_rows(const Params& P) {
  BC_SCAN_BY_DIRECTION(scan_rows_dir, T, A, Op, GW);
}

// ------------------------------------------------------------ decoupled look-back
// Each line's tiles t = 0..T-1 publish nodes of a radix-R tree, R = 2^rbits with
// rbits = 5 - log2(width) (at least 1: R = 32 for tiles of one line, 2 for 16 or 32 lines),
// so one warp holds R - 1 nodes x `width` lines. B(l, i) is the combination of tiles
// [i * R^l, (i + 1) * R^l). A tile publishes B(0, t) = its total as soon as it is scanned;
// the last tile of each aligned group of R level-l nodes joins them into B(l + 1, .). A
// tile's carry, its prefix [0, t), is the combination over the levels l (highest first) of
// the d_l nodes before it in its level-l group (d_l = digit l of t in base R). A node never
// holds another tile's carry, only totals, so no chain runs from tile to tile, and the
// order of every combination depends on t alone: results do not depend on timing
// (deterministic; totals are summed in a tree).
// Per tile: warp 0 publishes B(0, t) and the joins t completes (one level after the other,
// the joined node in registers); warps 1-7 take the carry's levels in turn (warp 1 + l % 7):
// one lane per (node, line) fetches and an ordered shuffle tree folds.
// Workspace (P.lb): a 64-bit tile counter at 0 (tiles are numbered in the order blocks
// take them, so every tile waited on belongs to a running or finished block: no deadlock),
// then the nodes, sum over the levels of ceil(T / R^l) per line (level by level), `width`
// states per node (one per line of the tile). A state of one float or one double is one
// 64-bit word that is zero until it is ready (StateWord), written and polled with relaxed
// 64-bit accesses (no fence: the word cannot be seen ready without its value). Other states
// take a u32 flag per node (released after a fence) and a 16-byte slot per state. The host
// zeroes the counter and the words or flags before each launch
// (baracuda.scan._kernels.lb_nodes_per_line mirrors the count).

// A state of one float or double as one 64-bit word that is zero until it is written (the
// look-back's nodes, the stream kernel's tile and wave words; the host or the kernel zeroes
// them first). A float takes its bits with a ready bit above them. A double takes its bits
// XORed with kEmpty, a signalling NaN: a word is zero only for that one pattern, which no
// arithmetic or conversion yields (they quiet NaNs) but an f64 input may hold (cummax's keys
// copy inputs), so pack() quiets it first; a NaN stays a NaN. Before this, 8-byte states
// took a flag a node and three passes where 4-byte ones take look-back tiles, and the f32
// cumprod (its states are doubles) lost the stream kernel: on an H200, one row of 2^26
// took 202.5 us against 144.9 in f32 states, and 172.9 with these words (docs/benchmarks.md,
// rounds 60-61).
template <class S>
struct StateWord {
  static constexpr bool kOk = false;
};
template <>
struct StateWord<float> {
  static constexpr bool kOk = true;
  static constexpr unsigned long long kDone = 1ull << 32;  // ready, the value unused
  static __device__ __forceinline__ unsigned long long pack(float v) {
    return (1ull << 32) | __float_as_uint(v);
  }
  static __device__ __forceinline__ bool ready(unsigned long long w) { return (w >> 32) != 0; }
  static __device__ __forceinline__ float unpack(unsigned long long w) {
    return __uint_as_float((unsigned)w);
  }
};
template <>
struct StateWord<double> {
  static constexpr bool kOk = true;
  static constexpr unsigned long long kEmpty = 0xFFF0000000000001ull;
  static constexpr unsigned long long kDone = 1ull;  // ready, the value unused
  static __device__ __forceinline__ unsigned long long pack(double v) {
    const unsigned long long b = (unsigned long long)__double_as_longlong(v);
    return (b == kEmpty ? 0x7FF8000000000000ull : b) ^ kEmpty;
  }
  static __device__ __forceinline__ bool ready(unsigned long long w) { return w != 0ull; }
  static __device__ __forceinline__ double unpack(unsigned long long w) {
    return __longlong_as_double((long long)(w ^ kEmpty));
  }
};

constexpr int kLbHeader = 128;
constexpr int kLbMaxBits = 32;  // tiles per line < 2^32 (checked by the host)
constexpr int kLbMaxLevels = kLbMaxBits;  // radix 2
constexpr int kLbWarps = kBlock / 32 - 1;  // warps 1-7 fold the levels

template <class S>
struct LbNodes {
  static constexpr bool kPacked = StateWord<S>::kOk;
  unsigned long long* words;  // kPacked: a StateWord per (node, line)
  unsigned* flags;            // otherwise: one flag per node ...
  S* states;                  // ... and a 16-byte slot per (node, line)
  const i64* off;              // shared memory: first node of each level in a line
  i64 per_line;               // nodes per line
  int levels;                 // digits of t in base R (>= 1)
  int rbits;                  // log2(R)
  int width;
  __device__ __forceinline__ i64 node(i64 line, int level, i64 i) const {
    return line * per_line + off[level] + i;
  }
  __device__ __forceinline__ int digit(i64 t, int level) const {
    return (int)((t >> (rbits * level)) & ((1 << rbits) - 1));
  }
};

// Every thread computes the layout; thread 0 writes the level offsets to `off_sh`
// (visible after the next barrier).
template <class S>
__device__ __forceinline__ LbNodes<S> lb_nodes(const Params& P, i64 lines, i64 per_line_tiles,
                                               int width, i64* off_sh) {
  char* b = static_cast<char*>(P.lb) + kLbHeader;
  const int rbits = max(1, 5 - (__ffs(width) - 1));
  i64 per_line = 0, cnt = per_line_tiles;
  int levels = 0;
  do {
    if (threadIdx.x == 0) off_sh[levels] = per_line;
    per_line += cnt;
    ++levels;
    cnt = (cnt + (1 << rbits) - 1) >> rbits;
  } while (rbits * levels < 63 && (i64)1 << (rbits * levels) < per_line_tiles);
  const i64 fbytes = (lines * per_line * 4 + 15) / 16 * 16;
  return {reinterpret_cast<unsigned long long*>(b), reinterpret_cast<unsigned*>(b),
          reinterpret_cast<S*>(b + fbytes), off_sh, per_line, levels, rbits, width};
}

// Block-collective: the next tile in counter order (thread 0 takes it for the block; the
// barrier publishes it). `tile_sh` is rewritten only after the tile's closing barrier.
__device__ __forceinline__ i64 lb_take_tile(const Params& P, i64& tile_sh) {
  if (threadIdx.x == 0) tile_sh = (i64)atomicAdd(static_cast<unsigned long long*>(P.lb), 1ull);
  __syncthreads();
  return tile_sh;
}

// The zeroing of the look-back workspace (tile counter and node words) before a one-pass
// launch. It lets the look-back kernel, launched as its programmatic dependent on sm_90,
// start at once: that kernel's blocks wait in pdl_wait (their first step) until every word
// is zero and visible, without the gap between a memset and the next launch.
__device__ __forceinline__ void zero_lb_words(unsigned* p, i64 words) {
  pdl_launch_dependents();
  for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < words;
       i += (i64)gridDim.x * blockDim.x)
    p[i] = 0u;
}

__device__ __forceinline__ unsigned ld_relaxed(const unsigned* p) {
  unsigned v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ unsigned long long ld_relaxed(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_relaxed(unsigned long long* p, unsigned long long v) {
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void st_release(unsigned* p, unsigned v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
// States go through L2 (never a stale L1 line): 4-byte words, every S is a multiple of 4.
template <class S>
__device__ __forceinline__ S ld_state(const S* p) {
  unsigned w[sizeof(S) / 4];
#pragma unroll
  for (int i = 0; i < (int)(sizeof(S) / 4); ++i)
    w[i] = __ldcg(reinterpret_cast<const unsigned*>(p) + i);
  S s;
  memcpy(&s, w, sizeof(S));
  return s;
}
template <class S>
__device__ __forceinline__ void st_state(S* p, const S& s) {
  unsigned w[sizeof(S) / 4];
  memcpy(w, &s, sizeof(S));
#pragma unroll
  for (int i = 0; i < (int)(sizeof(S) / 4); ++i) __stcg(reinterpret_cast<unsigned*>(p) + i, w[i]);
}

// Warp-collective: lanes c < width publish `v` as line c of node `id`.
template <class S>
__device__ __forceinline__ void lb_publish(const LbNodes<S>& lb, i64 id, int lane, const S& v) {
  if constexpr (LbNodes<S>::kPacked) {
    if (lane < lb.width) st_relaxed(lb.words + id * lb.width + lane, StateWord<S>::pack(v));
  } else {
    if (lane < lb.width) st_state(lb.states + id * lb.width + lane, v);
    __threadfence();
    __syncwarp();
    if (lane == 0) st_release(lb.flags + id, 1u);
  }
}

// One thread: waits for node `id` and returns its line c.
template <class S>
__device__ __forceinline__ S lb_fetch(const LbNodes<S>& lb, i64 id, int c) {
  if constexpr (LbNodes<S>::kPacked) {
    const unsigned long long* p = lb.words + id * lb.width + c;
    unsigned long long w;
    while (!StateWord<S>::ready(w = ld_relaxed(p))) {
    }
    return StateWord<S>::unpack(w);
  } else {
    while (ld_relaxed(lb.flags + id) == 0u) {
    }
    __threadfence();
    return ld_state(lb.states + id * lb.width + c);
  }
}

// Warp-collective, one level: lane (slot j, line c = lane % width) fetches line c of node
// first + j for j < d (d < R <= 32 / width), then an ordered shuffle tree folds the slots:
// lanes c < width return the fold of nodes first .. first + d - 1, in order (d >= 1).
template <class Op>
__device__ __forceinline__ typename Op::S lb_fold_level(const Op& op,
                                                        const LbNodes<typename Op::S>& lb,
                                                        i64 first, int d) {
  typedef typename Op::S S;
  const int lane = threadIdx.x & 31;
  const int j = lane / lb.width, c = lane - j * lb.width;
  S acc{};
  if (j < d) acc = lb_fetch(lb, first + j, c);
  for (int m = 1; m < d; m <<= 1) {
    const S other = shfl_idx(acc, min(lane + m * lb.width, 31));
    if ((j & (2 * m - 1)) == 0 && j + m < d) acc = op.combine(acc, other);
  }
  return acc;
}

// Warp-collective, warp 0: lanes c < width hold the total of line c of tile t; publishes
// B(0, t) and every node t completes (t's digits below the level all R - 1: the R - 1 nodes
// before it in its group are joined with it into the node above).
template <class Op>
__device__ __forceinline__ void lb_publish_tile(const Op& op, const LbNodes<typename Op::S>& lb,
                                                i64 line, i64 t, typename Op::S node) {
  const int lane = threadIdx.x & 31;
  const int r1 = (1 << lb.rbits) - 1;
  for (int level = 0;; ++level) {
    const i64 g = t >> (lb.rbits * level);
    lb_publish(lb, lb.node(line, level, g), lane, node);
    if (level + 1 >= lb.levels || (int)(g & r1) != r1) break;
    node = op.combine(lb_fold_level(op, lb, lb.node(line, level, g - r1), r1), node);
  }
}

// Block-collective step of tile t of `line` after its scan (every thread holds the total
// of its line c): publish, fold the carry's nodes, barrier; returns line c's carry.
template <class Op>
__device__ __forceinline__ typename Op::S lb_carry(const Op& op, const LbNodes<typename Op::S>& lb,
                                                   i64 line, i64 t, const typename Op::S& total,
                                                   typename Op::S (*part)[32], int c) {
  typedef typename Op::S S;
  const int warp = threadIdx.x >> 5;
  if (warp == 0) {
    lb_publish_tile(op, lb, line, t, total);
  } else {
    for (int l = warp - 1; l < lb.levels; l += kLbWarps) {
      const int d = lb.digit(t, l);  // uniform over the warp
      if (d == 0) continue;
      const S acc = lb_fold_level(op, lb, lb.node(line, l, (t >> (lb.rbits * l)) - d), d);
      if ((threadIdx.x & 31) < lb.width) part[l][c] = acc;
    }
  }
  __syncthreads();
  S acc = op.identity();
  bool have = false;
  for (int l = lb.levels - 1; l >= 0; --l) {
    if (lb.digit(t, l) != 0) {
      acc = have ? op.combine(acc, part[l][c]) : part[l][c];
      have = true;
    }
  }
  return acc;
}

// lbrows: a block per tile of one contiguous line (nchunks tiles of chunk_len = 256 * K per
// line, tile = line * nchunks + chunk).
template <typename T, typename A, class Op, bool kRev>
__device__ __forceinline__ void scan_lb_rows_dir(const Params& P) {
  typedef typename Op::S S;
  constexpr int K = 2 * rows_per_thread<T>();
  __shared__ S scratch[kRunOp<Op> ? 16 : 8];  // run ops: 8 runs
  __shared__ S part_sh[kLbMaxLevels][32];
  __shared__ i64 tile_sh;
  const Op op{P.mode};
  const i64 tiles = P.rows * P.nchunks;
  __shared__ i64 off_sh[kLbMaxLevels];
  const LbNodes<S> lb = lb_nodes<S>(P, P.rows, P.nchunks, 1, off_sh);
  for (;;) {
    const i64 tile = lb_take_tile(P, tile_sh);
    if (tile >= tiles) return;
    const i64 row = tile / P.nchunks;
    const i64 chunk = tile - row * P.nchunks;
    const i64 q0 = chunk * P.chunk_len;
    Coord c;
    unravel(row, P.outer, c);
    i64 base[NOPS];
#pragma unroll
    for (int j = 0; j < NOPS; ++j) base[j] = dot(c, P.op[j].outer, P.outer.rank);
    rows_tile<T, A, Op, 8, K, kRev>(P, op, base, q0, min(P.n, q0 + P.chunk_len), false, scratch,
                                    [&](const S& total) {
                                      return lb_carry(op, lb, row, chunk, total, part_sh, 0);
                                    });
    __syncthreads();  // part_sh and tile_sh are rewritten by the next tile
  }
}

template <typename T, typename A, class Op>
__device__ void scan_lb_rows(const Params& P) {
  BC_SCAN_BY_DIRECTION(scan_lb_rows_dir, T, A, Op);
}

// A staged lbcols tile between operand j and shared memory (kStore: shared -> global, else
// global -> shared), in 16-byte vectors where whole (scalars for a partial last vector). The
// tile: positions [chunk * chunk_len, q1) of lines group * width .. + width - 1; m rows of
// width elements in memory order from physical row plo, row pitch = the axis stride. Every
// thread's global loads are issued before any is used (R / L vectors at most). A vector
// within one row (width a multiple of L) is one 16-byte access of shared memory too.
template <typename T, int R, bool kStore>
__device__ __forceinline__ void stage_tile(const Params& P, int j, T* stage, i64 group,
                                           i64 chunk, i64 q1) {
  constexpr int L = 16 / sizeof(T);
  constexpr int NV = R / L;  // the widest tile is kBlock * R elements
  const int width = P.width, wbits = __ffs(width) - 1;
  const bool row_vec = (width & (L - 1)) == 0;
  const i64 qa = chunk * P.chunk_len;
  const int m = (int)(q1 - qa);
  const i64 plo = P.reverse ? P.n - q1 : qa;
  Coord c;
  unravel(group * width, P.outer, c);
  const i64 s = P.op[j].axis_stride;
  T* g = static_cast<T*>(P.op[j].ptr) + dot(c, P.op[j].outer, P.outer.rank) + plo * s;
  const int tot = m << wbits;
  // shared-memory index of tile element ee (memory order)
  auto sidx = [&](int ee) {
    const int r = ee >> wbits, ql = P.reverse ? m - 1 - r : r;
    return (ql + ql / R) * width + (ee & (width - 1));
  };
  auto gidx = [&](int ee) { return (i64)(ee >> wbits) * s + (ee & (width - 1)); };
  int4 raw[NV];
  if constexpr (kStore) {
#pragma unroll
    for (int i = 0; i < NV; ++i) {
      const int e = (i * kBlock + (int)threadIdx.x) * L;
      if (e + L <= tot && row_vec) {
        raw[i] = *reinterpret_cast<const int4*>(stage + sidx(e));
      } else {
        T w[L];
#pragma unroll
        for (int l = 0; l < L; ++l)
          if (e + l < tot) w[l] = stage[sidx(e + l)];
        memcpy(&raw[i], w, 16);
      }
    }
#pragma unroll
    for (int i = 0; i < NV; ++i) {
      const int e = (i * kBlock + (int)threadIdx.x) * L;
      if (e + L <= tot) {
        store16(reinterpret_cast<int4*>(g + gidx(e)), raw[i]);
      } else if (e < tot) {
        T w[L];
        memcpy(w, &raw[i], 16);
        for (int l = 0; e + l < tot; ++l) g[gidx(e + l)] = w[l];
      }
    }
  } else {
#pragma unroll
    for (int i = 0; i < NV; ++i) {
      const int e = (i * kBlock + (int)threadIdx.x) * L;
      if (e + L <= tot) {
        raw[i] = __ldg(reinterpret_cast<const int4*>(g + gidx(e)));
      } else if (e < tot) {
        T w[L];
        for (int l = 0; l < L; ++l) w[l] = e + l < tot ? g[gidx(e + l)] : T();
        memcpy(&raw[i], w, 16);
      }
    }
#pragma unroll
    for (int i = 0; i < NV; ++i) {
      const int e = (i * kBlock + (int)threadIdx.x) * L;
      if (e + L <= tot && row_vec) {
        *reinterpret_cast<int4*>(stage + sidx(e)) = raw[i];
      } else if (e < tot) {
        T w[L];
        memcpy(w, &raw[i], 16);
#pragma unroll
        for (int l = 0; l < L; ++l)
          if (e + l < tot) stage[sidx(e + l)] = w[l];
      }
    }
  }
}

// lbcols: the axis is strided. A tile is `width` adjacent lines (lanes, line = group * width
// + lane % width; adjacent lines are usually adjacent in memory) times 256 / width row
// lanes of R consecutive positions each; tile = chunk * groups + group. Row lanes are
// scanned per line with shuffles inside a warp and shared memory across warps.
//
// Staged tiles (entry lbstage, P.vec; the host stages one-input ops without neighbour or
// aux operands, below 8 bytes, when the tile is one 16-byte aligned run of memory: a single
// group of adjacent lines with axis stride == width): the tile moves between global and
// shared memory in 16-byte vectors, in memory order, and the threads read and write their
// elements in shared memory, where position ql of line c sits at (ql + ql / R) * width + c
// (a pad of one row every R rows keeps the row lanes of a warp on distinct banks).
// stage_tile addresses rows by the axis stride, so it would also take runs of whole vectors
// per position (width a multiple of 16 / sizeof(T)); the host does not stage those (slower).
template <typename T, class Op>
struct LbColsShared {
  // one-input ops below 8 bytes may stage their tiles (in dynamic shared memory:
  // kBlock * (R + 1) elements, passed only to staged launches)
  static constexpr bool kStage = kOneInputOp<Op> && sizeof(T) < 8;
  typedef typename Op::S S;
  typename WordOf<Op>::type scratch[8][32];
  S part[kLbMaxLevels][32];
  i64 off[kLbMaxLevels];
  i64 tile;
};

template <typename T, typename A, class Op, int R, bool kStaged>
__device__ __forceinline__ void scan_lb_cols_r(const Params& P, LbColsShared<T, Op>& sh) {
  typedef typename Op::S S;
  static_assert(!kStaged || LbColsShared<T, Op>::kStage, "staged tiles: one-input ops only");
  extern __shared__ int4 lb_stage[];  // 16-byte aligned
  T* stage = reinterpret_cast<T*>(lb_stage);
  auto& scratch = sh.scratch;
  auto& part_sh = sh.part;
  i64& tile_sh = sh.tile;
  const Op op{P.mode};
  const int width = P.width;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int col = lane % width;
  const int rlane = threadIdx.x / width;  // row lane in the block: 0 .. 256 / width - 1
  const i64 tiles = P.groups * P.nchunks;
  const i64 dir = P.reverse ? -1 : 1;
  const LbNodes<S> lb = lb_nodes<S>(P, P.groups, P.nchunks, width, sh.off);
  // the f32 cumprod keeps its floats across the carry, not their doubles (opaque_zero)
  constexpr bool kRescan = !kRunOp<Op> && kOneInputOp<Op> && rescans(sizeof(T), sizeof(A));
  for (;;) {
    const i64 tile = lb_take_tile(P, tile_sh);
    if (tile >= tiles) return;
    const i64 chunk = tile / P.groups;
    const i64 group = tile - chunk * P.groups;
    const i64 line = group * width + col;
    const bool live = line < P.rows;
    const i64 q0 = chunk * P.chunk_len + (i64)rlane * R;
    const i64 q1 = min(P.n, chunk * P.chunk_len + P.chunk_len);
    const int cnt = live ? (int)max((i64)0, min((i64)R, q1 - q0)) : 0;  // valid positions
    const i64 p0 = cnt > 0 ? phys(P, q0) : 0;
    i64 base[NOPS];
    {
      Coord c;
      unravel(live ? line : 0, P.outer, c);
#pragma unroll
      for (int j = 0; j < NOPS; ++j)
        base[j] = dot(c, P.op[j].outer, P.outer.rank) + p0 * P.op[j].axis_stride;
    }
    // element k of this thread is at base[j] + k * step[j] (pointer walks, no multiplies)
    A v[Op::kIn][R];
    A nb[R];
    unsigned char fl[R];
    T raw[R];  // kRescan's elements as loaded (unstaged tiles)
    constexpr bool staged = kStaged;
    if constexpr (staged) {
      stage_tile<T, R, false>(P, IN0, stage, group, chunk, q1);
      __syncthreads();
      const int ql0 = rlane * R;
#pragma unroll
      for (int k = 0; k < R; ++k)
        v[0][k] = k < cnt ? to_acc(stage[(ql0 + k + (ql0 + k) / R) * width + col]) : A(0);
    } else {
#pragma unroll
      for (int j = 0; j < Op::kIn; ++j) {
        const T* src = in_ptr<T>(P, j) + base[j];
        const i64 step = dir * P.op[j].axis_stride;
#pragma unroll
        for (int k = 0; k < R; ++k) {
          if constexpr (kRescan) {
            raw[k] = k < cnt ? *src : T(0);
            v[j][k] = to_acc(raw[k]);
          } else {
            v[j][k] = k < cnt ? to_acc(*src) : A(0);
          }
          src += step;
        }
      }
    }
#pragma unroll
    for (int k = 0; k < R; ++k) {
      nb[k] = A(1);
      fl[k] = 0;
    }
    if constexpr (Op::kNb) {
      // the neighbour one step further in scan order; 1 past the end of the axis
      const T* src = in_ptr<T>(P, IN2) + base[IN2];
      const i64 step = dir * P.op[IN2].axis_stride;
#pragma unroll
      for (int k = 0; k < R; ++k) {
        src += step;
        if (k < cnt && q0 + k + 1 < P.n) nb[k] = to_acc(*src);
      }
    }
    if constexpr (Op::kAuxIn) {
      const unsigned char* src = static_cast<const unsigned char*>(P.op[AUX].ptr) + base[AUX];
      const i64 step = dir * P.op[AUX].axis_stride;
#pragma unroll
      for (int k = 0; k < R; ++k) {
        if (k < cnt) fl[k] = *src;
        src += step;
      }
    }
    if constexpr (kRunOp<Op>) {
      // the same with the thread's run: joins across lines' row lanes and warps, then its
      // outputs from its carry. Staged tiles take the run in two passes (LseOp::lane_run: an
      // exp a position; lane_outputs: a log an output, the rare pushes reading the stage
      // again); unstaged ones push each value twice (an exp and a log an output: keeping v
      // across the carry's wait for the rare pushes spilled, and reading it again from global
      // memory was slower, docs/benchmarks.md round 69)
      typedef typename Op::Run Run;
      [[maybe_unused]] A tt[R];
      Run x = op.run0();
      if constexpr (staged) {
        x = op.lane_run([&](int k) { return k < cnt ? v[0][k] : A(op.identity()); }, tt);
      } else {
#pragma unroll
        for (int k = 0; k < R; ++k) op.push(x, k < cnt ? v[0][k] : op.identity());
      }
      [[maybe_unused]] const A own_max = x.m;
      for (int d = width; d < 32; d <<= 1) {
        const Run y = shfl_up(x, d);
        if (lane >= d) x = op.join(y, x);
      }
      Run e = shfl_up(x, width);
      if (lane < width) e = op.run0();
      if (lane >= 32 - width) scratch[warp][col] = x;
      __syncthreads();
      Run before = op.run0(), all = op.run0();
#pragma unroll
      for (int w = 0; w < 8; ++w) {
        if (w < warp) before = op.join(before, scratch[w][col]);
        all = op.join(all, scratch[w][col]);
      }
      const S carry = lb_carry(op, lb, group, chunk, op.value(all), part_sh, col);  // a barrier
      Run r = op.join(op.run(carry), op.join(before, e));
      if constexpr (staged) {
        const int ql0 = rlane * R;
        const auto at = [&](int k) -> T& {
          return stage[(ql0 + k + (ql0 + k) / R) * width + col];
        };
        op.lane_outputs(r, own_max, tt, [&](int k) { return to_acc(at(k)); }, tt);
#pragma unroll
        for (int k = 0; k < R; ++k)
          if (k < cnt) at(k) = from_acc<T>(tt[k]);
        __syncthreads();
        stage_tile<T, R, true>(P, OUT, stage, group, chunk, q1);
      } else if (cnt > 0) {
        T* dst = static_cast<T*>(P.op[OUT].ptr) + base[OUT];
        const i64 ostep = dir * P.op[OUT].axis_stride;
#pragma unroll
        for (int k = 0; k < R; ++k) {
          if (k < cnt) {
            op.push(r, v[0][k]);
            dst[k * ostep] = from_acc<T>(op.value(r));
          }
        }
      }
    } else {
      S st[R];
#pragma unroll
      for (int k = 0; k < R; ++k) {
        A vk[Op::kIn];
#pragma unroll
        for (int j = 0; j < Op::kIn; ++j) vk[j] = v[j][k];
        st[k] = k < cnt ? make_at(op, vk, nb[k], fl[k], p0 + dir * k) : op.identity();
        if (k > 0) st[k] = op.combine(st[k - 1], st[k]);
      }
      // per line across the row lanes of a warp (lanes width apart), then across warps
      S x = st[R - 1];
      for (int d = width; d < 32; d <<= 1) {
        const S y = shfl_up(x, d);
        if (lane >= d) x = op.combine(y, x);
      }
      S e = shfl_up(x, width);
      if (lane < width) e = op.identity();
      if (lane >= 32 - width) scratch[warp][col] = x;
      __syncthreads();
      S before = op.identity(), all = op.identity();
#pragma unroll
      for (int w = 0; w < 8; ++w) {
        if (w < warp) before = op.combine(before, scratch[w][col]);
        all = op.combine(all, scratch[w][col]);
      }
      const S carry = lb_carry(op, lb, group, chunk, all, part_sh, col);  // has a barrier
      if constexpr (kRescan) {  // the carry first, then each element again
        const unsigned z = opaque_zero();
        S inc = op.combine(carry, op.combine(before, e));
        T* dst = static_cast<T*>(P.op[OUT].ptr) + base[OUT];
        const i64 ostep = dir * P.op[OUT].axis_stride;
        const int ql0 = rlane * R;
#pragma unroll
        for (int k = 0; k < R; ++k) {
          if (k < cnt) {
            const int at = (ql0 + k + (ql0 + k) / R) * width + col;
            const A vk = to_acc(staged ? stage[at] : launder(raw[k], z));
            inc = op.combine(inc, make_at(op, &vk, A(1), 0, p0 + dir * k));
            if constexpr (staged)
              stage[at] = from_acc<T>(inc);
            else
              dst[k * ostep] = from_acc<T>(inc);
          }
        }
        if constexpr (staged) {
          __syncthreads();
          stage_tile<T, R, true>(P, OUT, stage, group, chunk, q1);
        }
      } else if constexpr (staged) {
        if (cnt > 0) {
          const S prefix = op.combine(carry, op.combine(before, e));
          S prev = prefix;
          const int ql0 = rlane * R;
#pragma unroll
          for (int k = 0; k < R; ++k) {
            if (k < cnt) {
              const S inc = op.combine(prefix, st[k]);
              const A vk = v[0][k];
              stage[(ql0 + k + (ql0 + k) / R) * width + col] =
                  from_acc<T>(op.out_value(inc, prev, &vk, A(1), 0));
              prev = inc;
            }
          }
        }
        __syncthreads();
        stage_tile<T, R, true>(P, OUT, stage, group, chunk, q1);
      } else if (cnt > 0) {
        const S prefix = op.combine(carry, op.combine(before, e));
        S prev = prefix;
        T* dst = P.op[OUT].ptr != nullptr ? static_cast<T*>(P.op[OUT].ptr) + base[OUT] : nullptr;
        const i64 ostep = dir * P.op[OUT].axis_stride;
#pragma unroll
        for (int k = 0; k < R; ++k) {
          if (k < cnt) {
            const S inc = op.combine(prefix, st[k]);
            A vk[Op::kIn];
#pragma unroll
            for (int j = 0; j < Op::kIn; ++j) vk[j] = v[j][k];
            if (dst != nullptr)
              dst[k * ostep] = from_acc<T>(op.out_value(inc, prev, vk, nb[k], fl[k]));
            store_aux<T, A>(P, op, base[AUX] - p0 * P.op[AUX].axis_stride, q0 + k, p0 + dir * k,
                            inc, prev, vk);
            prev = inc;
          }
        }
      }
    }
    __syncthreads();  // scratch, part_sh and tile_sh are rewritten by the next tile
  }
}

// R positions per row lane: 8 (f64), 16, or 32 where the host chose wide tiles (cumsum,
// cumprod, logcumsumexp below f64 with 32 lines a tile: chunk_len * width = 256 * 32).
// Staged tiles (R = 16, P.vec) have their own entry, lbstage, so their registers do not
// weigh on these (one kernel's variants share its register budget).
template <typename T, typename A, class Op>
__device__ void scan_lb_cols(const Params& P) {
  __shared__ LbColsShared<T, Op> sh;
  if constexpr (sizeof(T) == 8) {
    scan_lb_cols_r<T, A, Op, 8, false>(P, sh);
  } else if constexpr (LbColsShared<T, Op>::kStage) {  // sum, prod, lse
    if (P.chunk_len * P.width == kBlock * 32)
      scan_lb_cols_r<T, A, Op, 32, false>(P, sh);
    else
      scan_lb_cols_r<T, A, Op, 16, false>(P, sh);
  } else {
    scan_lb_cols_r<T, A, Op, 16, false>(P, sh);
  }
}

template <typename T, typename A, class Op>
__device__ void scan_lb_stage(const Params& P) {
  if constexpr (LbColsShared<T, Op>::kStage) {
    __shared__ LbColsShared<T, Op> sh;
    scan_lb_cols_r<T, A, Op, 16, true>(P, sh);
  } else {
    __trap();  // never launched: the host stages one-input ops below 8 bytes only
  }
}

// --------------------------------------- fused cummax/cummin backward (max_bwd_rows)
// Both passes of the cummax/cummin backward in one kernel, a group of GW warps per line:
// the tiles of the winner-flag scan (MaxFlagOp, forward order; params F: IN0 = x, AUX =
// flags) over the whole line, then those of the segmented scan (SegBwdOp, the opposite order;
// params B: IN0 = dy, OUT = dx, AUX = the same flags). The flags (workspace bytes) are
// written and read back by the same group (a warp barrier or, GW == 8, a block barrier
// orders them), soon enough to be found in L2. scan_max_bwd_rows: a warp per line, launched
// where rows1 would be (lines many enough for a warp each); scan_max_bwd_rows8: a block per
// line, where rows8 would take whole lines (one chunk a line), which took two launches
// before: on the H100, (1024, 8192) f32 64.7 -> 46.8 us, bf16 58.4 -> 42.8. Asking L2 for
// the lines of the next 2-8 tiles (prefetch.global.L2) made both kernels slower (f32
// (4096, 8192) 176 -> 198-240 us).

// One pass over a whole line of P for a group of GW warps: rows_tile's tiles from position 0,
// each with the fold of the tiles before it as its carry; then the group's barrier, so the
// next pass may read what this one wrote.
template <typename T, typename A, class Op, int GW, bool kRev>
__device__ __forceinline__ void line_pass(const Params& P, const Op& op, const i64* base,
                                          typename Op::S* scratch) {
  typedef typename Op::S S;
  constexpr int K = rows_per_thread<T>();
  S run = op.identity();
  for (i64 tile = 0; tile < P.n; tile += 32 * GW * K) {
    rows_tile<T, A, Op, GW, K, kRev>(P, op, base, tile, P.n, false, scratch, [&](const S& total) {
      const S in = run;
      run = op.combine(run, total);
      return in;
    });
  }
  if constexpr (GW == 1)
    __syncwarp();
  else
    __syncthreads();
}

template <typename T, typename A, int GW, bool kRevF, bool kRevB>
__device__ __forceinline__ void max_bwd_rows_dir(const Params& F, const Params& B) {
  constexpr int GPB = kBlock / (32 * GW);  // lines a block takes at once
  __shared__ A fscratch[GW > 1 ? GW : 1];
  __shared__ Pair<A> bscratch[GW > 1 ? GW : 1];
  const MaxFlagOp<A> fop{F.mode};
  const SegBwdOp<A> bop{B.mode};
  const int g = threadIdx.x / (32 * GW);
  for (i64 first = (i64)blockIdx.x * GPB; first < F.rows; first += (i64)gridDim.x * GPB) {
    const i64 row = first + g;
    if (row >= F.rows) continue;  // whole groups skip (GW == 8: the block, never)
    // the row's coordinates in each pass's own outer dims: F's operands (x, the flags) and
    // B's (dy, dx, the flags) may coalesce differently (a strided dx: B keeps dims that F
    // merges), so one set of coordinates would address another row, or past the tensor
    Coord cf, cb;
    unravel(row, F.outer, cf);
    unravel(row, B.outer, cb);
    i64 fb[NOPS], bb[NOPS];
#pragma unroll
    for (int j = 0; j < NOPS; ++j) {
      fb[j] = dot(cf, F.op[j].outer, F.outer.rank);
      bb[j] = dot(cb, B.op[j].outer, B.outer.rank);
    }
    line_pass<T, A, MaxFlagOp<A>, GW, kRevF>(F, fop, fb, fscratch);  // winner flags
    line_pass<T, A, SegBwdOp<A>, GW, kRevB>(B, bop, bb, bscratch);   // segmented sums
  }
}

template <typename T, typename A, int GW>
__device__ void scan_max_bwd_rows(const Params& F, const Params& B) {
  if (F.reverse)
    max_bwd_rows_dir<T, A, GW, true, false>(F, B);
  else
    max_bwd_rows_dir<T, A, GW, false, true>(F, B);
}

// ------------------------------------------------- pipelined warp rows (pipe1)
// rows1 for one-input ops without neighbour or aux operands (sum, prod, lse), launched only
// when x and y are contiguous along the axis with 16-byte aligned rows (P.vec), one chunk per
// row and, scanning in reverse, n % (16 / sizeof(T)) == 0: every full tile is then whole
// 16-byte vectors. A warp per row, 32 bytes per lane per tile (two vectors: K = 32 / sizeof(T)
// elements). The loads of the next kPipeDepth tiles are in flight while a tile is scanned
// and stored (the plans forbid outputs overlapping inputs, so they are read-only loads), and
// the direction is a template argument so every register index is static. The last, partial
// tile is scanned after the loop. Same combination order as rows1 for 4- and 8-byte types
// (same K).
// Tiles of loads in flight per warp beside the one being scanned (32 warps an SM keep
// enough bytes in flight with one). A second one spilled registers for 2-byte types under the
// cap of 64 and measured no faster for the others (H100, cumsum over 4096 x 8192 with one vs
// two: bf16 55.2 vs 57.0 us, f32 101.4 vs 101.4, f64 197.9 vs 199.6; over 2^16 x 512: 54.4 vs
// 57.2, 94.1 vs 94.9, 186.0 vs 187.7).
constexpr int kPipeDepth = 1;

// One lane's K elements of a tile as raw storage, in physical order: element k in scan order
// sits at index kRev ? K - 1 - k : k.
struct Raw32 {
  int4 w[2];
};

// The tile of pipe1 (and of the cooperative kernel's partial last row): a lane's K elements
// are one Raw32 (L a vector), a warp's tile TILE = 32 * K elements (1 KiB).
template <typename T>
struct PipeTile {
  static constexpr int L = 16 / sizeof(T), K = 2 * L, TILE = 32 * K;
};

template <typename T, int K, bool kRev>
__device__ __forceinline__ T raw_get(const Raw32& r, int k) {
  constexpr int L = 16 / sizeof(T);
  const int i = kRev ? K - 1 - k : k;
  Vec16<T> v;
  memcpy(&v, &r.w[i / L], 16);
  return v.v[i % L];
}

// Element k in scan order of one 16-byte vector (kRev: the vector's positions mirrored).
template <typename T, bool kRev>
__device__ __forceinline__ T vec_get(const int4& r, int k) {
  constexpr int L = 16 / sizeof(T);
  T e[L];
  memcpy(e, &r, 16);
  return e[kRev ? L - 1 - k : k];
}

__device__ __forceinline__ void load32(Raw32& r, const void* p) {  // p: 16-byte aligned
  const int4* vp = static_cast<const int4*>(p);
  r.w[0] = __ldg(vp);
  r.w[1] = __ldg(vp + 1);
}

// A lane's K positions qt..qt+K-1 of a tile of which the first `valid` lie before the end:
// two vectors from `p` when all do, else one element at a time from the line `src` (zeros
// past the end).
template <typename T, int K, bool kRev>
__device__ __forceinline__ void load_partial(Raw32& cur, const T* src, const T* p, i64 qt,
                                             int valid, i64 n) {
  constexpr int L = 16 / sizeof(T);
  cur.w[0] = cur.w[1] = make_int4(0, 0, 0, 0);
  if (valid == K) {
    if constexpr (K == L)  // one vector a lane (scan_seg1)
      cur.w[0] = __ldg(static_cast<const int4*>(static_cast<const void*>(p)));
    else
      load32(cur, p);
    return;
  }
  Vec16<T> v[2];
  memcpy(&v[0], &cur.w[0], 16);
  memcpy(&v[1], &cur.w[1], 16);
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int i = kRev ? K - 1 - k : k;
    if (k < valid) v[i / L].v[i % L] = src[kRev ? n - 1 - (qt + k) : qt + k];
  }
  memcpy(&cur.w[0], &v[0], 16);
  memcpy(&cur.w[1], &v[1], 16);
}

// A run op's value k of a lane's raw words (past the end, k >= valid: the op's identity).
template <typename T, typename A, int K, bool kRev, bool kFull, class Op>
__device__ __forceinline__ A run_value(const Op& op, const Raw32& cur, int k, int valid) {
  const A v = to_acc(raw_get<T, K, kRev>(cur, k));
  return (kFull || k < valid) ? v : A(op.identity());
}

// Scans one tile (this lane: scan positions qt..qt+K-1, physical ones from `row`, the first
// `valid` of them before the end) from `carry` and stores it unless `reduce`, with cummax/
// cummin's indices at `aux` (its row; none where null); returns the carry after the tile.
// kFull: every lane's K positions lie before the end (valid == K).
template <typename T, typename A, class Op, int K, bool kRev, bool kFull>
__device__ __forceinline__ typename Op::S pipe_tile(const Op& op, const Raw32& cur, i64 qt,
                                                    int valid, i64 n, typename Op::S carry, T* row,
                                                    i64* aux, bool reduce) {
  typedef typename Op::S S;
  S st[K];
  S excl, total;
  [[maybe_unused]] typename RunOf<Op>::type rex, rtot;  // run ops: the warp's runs
  [[maybe_unused]] A tt[K], tmax;  // run ops: the lane's sums and maximum (LseOp::lane_run)
  if constexpr (kRunOp<Op>) {
    const auto v = [&](int k) { return run_value<T, A, K, kRev, kFull>(op, cur, k, valid); };
    const typename Op::Run r = op.lane_run(v, tt);
    tmax = r.m;
    group_scan_run<1>(op, r, rex, rtot, nullptr);
  } else {
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const A v = to_acc(raw_get<T, K, kRev>(cur, k));
      const S m = op.make(&v, 0, kRev ? n - 1 - (qt + k) : qt + k);
      st[k] = (kFull || k < valid) ? m : op.identity();
      if (k > 0) st[k] = op.combine(st[k - 1], st[k]);
    }
    group_scan<1>(op, st[K - 1], excl, total, static_cast<S*>(nullptr));
  }
  if (!reduce && valid > 0) {
    A res[K];
    if constexpr (kRunOp<Op>) {  // positions past the end are scanned but not stored
      op.lane_outputs(op.join(op.run(carry), rex), tmax, tt,
                      [&](int k) { return to_acc(raw_get<T, K, kRev>(cur, k)); }, res);
    } else {
      const S prefix = op.combine(carry, excl);
      S prev = prefix;
      // cummax/cummin: the winners' indices, in whole tiles stored by the warp together
      [[maybe_unused]] i64 pend = 0;  // the index of an even position
      [[maybe_unused]] int4* slots = nullptr;
      if constexpr (Op::kAuxOut && kFull) slots = warp_pairs<K>();
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const S inc = op.combine(prefix, st[k]);
        const A v = to_acc(raw_get<T, K, kRev>(cur, k));
        res[k] = op.out_value(inc, prev, &v, A(1), 0);
        if constexpr (Op::kAuxOut) {
          if (aux != nullptr) {
            const i64 p = kRev ? n - 1 - (qt + k) : qt + k;
            const i64 win = op.winner(inc, prev, &v, qt + k, p);
            if constexpr (kFull) {
              if (k % 2 == 0)
                pend = win;
              else  // scan positions k - 1, k: physical p + 1, p in reverse
                slots[pair_slot<K>(kRev ? 31 - (threadIdx.x & 31) : (threadIdx.x & 31),
                                   (kRev ? K - 1 - k : k) / 2)] =
                    kRev ? idx_pair(win, pend) : idx_pair(pend, win);
            } else if (k < valid) {
              aux[p] = win;
            }
          }
        }
        prev = inc;
      }
      if constexpr (Op::kAuxOut && kFull) {
        if (aux != nullptr) {
          const i64 t0 = qt - (i64)(threadIdx.x & 31) * K;  // the tile's first scan position
          store_pairs<K>(aux + (kRev ? n - t0 - 32 * K : t0), slots);
        }
      }
    }
    if (kFull || valid == K) {
      constexpr int L = 16 / sizeof(T);
      int4* vp = reinterpret_cast<int4*>(row + (kRev ? n - qt - K : qt));
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        Vec16<T> w;
#pragma unroll
        for (int l = 0; l < L; ++l)
          w.v[l] = from_acc<T>(res[kRev ? K - 1 - (u * L + l) : u * L + l]);
        int4 raw;
        memcpy(&raw, &w, 16);
        store16(vp + u, raw);
      }
    } else {
#pragma unroll
      for (int k = 0; k < K; ++k)
        if (k < valid) row[kRev ? n - 1 - (qt + k) : qt + k] = from_acc<T>(res[k]);
    }
  }
  if constexpr (kRunOp<Op>)
    return op.value(op.join(op.run(carry), rtot));
  else
    return op.combine(carry, total);
}

// Full tiles 0..nfull-1 of a lane's run (tile f at px + f * step, scan positions from
// lq + f * TILE) from `carry`, the loads of the next D tiles in flight while one is scanned:
// buf holds tiles 0..D - 1 (those before nfull) on entry. Returns the carry after the last.
template <typename T, typename A, class Op, int K, bool kRev, int D>
__device__ __forceinline__ typename Op::S pipe_tiles(const Op& op, Raw32 (&buf)[D],
                                                     const T* px, i64 step, i64 lq, i64 nfull,
                                                     i64 n, typename Op::S carry, T* dst,
                                                     i64* aux, bool reduce) {
  constexpr int TILE = 32 * K;
  for (i64 f = 0; f < nfull; f += D) {
#pragma unroll
    for (int d = 0; d < D; ++d) {
      const i64 ff = f + d;  // warp-uniform
      if (ff >= nfull) break;
      const Raw32 cur = buf[d];
      if (ff + D < nfull) load32(buf[d], px + (ff + D) * step);
      carry = pipe_tile<T, A, Op, K, kRev, true>(op, cur, lq + ff * TILE, K, n, carry, dst,
                                                 aux, reduce);
    }
  }
  return carry;
}

template <typename T, typename A, class Op, bool kRev>
__device__ __forceinline__ void scan_pipe_dir(const Params& P) {
  typedef typename Op::S S;
  static_assert(Op::kIn == 1 && !Op::kNb && !Op::kAuxIn && !kFlagOut<Op>,
                "pipe1 takes one-input ops without neighbour or aux inputs (cummax/cummin: "
                "int64 indices)");
  constexpr int L = PipeTile<T>::L, K = PipeTile<T>::K, TILE = PipeTile<T>::TILE;
  constexpr int WPB = kBlock / 32;
  const Op op{P.mode};
  const int lane = threadIdx.x & 31;
  const bool reduce = P.agg != nullptr;
  const i64 n = P.n;
  const i64 items = P.rows * P.nchunks;
  for (i64 first = (i64)blockIdx.x * WPB; first < items; first += (i64)gridDim.x * WPB) {
    const i64 item = first + (threadIdx.x >> 5);
    if (item >= items) continue;  // whole warps skip
    const i64 row = item / P.nchunks;
    const i64 q0 = (item - row * P.nchunks) * P.chunk_len;
    const i64 q1 = min(n, q0 + P.chunk_len);
    // The host's launch condition; anything else would misalign the vectors.
    if (!P.vec || ((kRev ? n - q0 : q0) & (L - 1)) != 0) __trap();
    Coord c;
    unravel(row, P.outer, c);
    const T* src = in_ptr<T>(P, IN0) + dot(c, P.op[IN0].outer, P.outer.rank);
    T* dst = static_cast<T*>(P.op[OUT].ptr) + dot(c, P.op[OUT].outer, P.outer.rank);
    i64* aux = nullptr;  // cummax/cummin's indices: contiguous, rows on 16 bytes (the host's)
    if constexpr (Op::kAuxOut) {
      if (P.op[AUX].ptr != nullptr) {
        aux = static_cast<i64*>(P.op[AUX].ptr) + dot(c, P.op[AUX].outer, P.outer.rank);
        if (P.op[AUX].axis_stride != 1 || (P.mode & 4) != 0 ||
            reinterpret_cast<unsigned long long>(aux) % 16 != 0)
          __trap();
      }
    }
    S carry = P.carry != nullptr ? static_cast<const S*>(P.carry)[item] : op.identity();
    const i64 lq = q0 + (i64)lane * K;  // this lane's first scan position in tile 0
    const i64 nfull = (q1 - q0) / TILE;
    const T* px = src + (kRev ? n - lq - K : lq);  // this lane's vectors of tile 0
    const i64 step = kRev ? -(i64)TILE : (i64)TILE;
    Raw32 buf[kPipeDepth];
#pragma unroll
    for (int d = 0; d < kPipeDepth; ++d)
      if (d < nfull) load32(buf[d], px + d * step);
    carry = pipe_tiles<T, A, Op, K, kRev>(op, buf, px, step, lq, nfull, n, carry, dst, aux,
                                          reduce);
    if (q0 + nfull * TILE < q1) {  // the partial last tile
      const i64 qt = lq + nfull * TILE;
      const int valid = (int)max((i64)0, min((i64)K, q1 - qt));
      Raw32 cur;
      load_partial<T, K, kRev>(cur, src, px + nfull * step, qt, valid, n);
      carry = pipe_tile<T, A, Op, K, kRev, false>(op, cur, qt, valid, n, carry, dst, aux,
                                                  reduce);
    }
    if (reduce && lane == 0) static_cast<S*>(P.agg)[item] = carry;
  }
}

template <typename T, typename A, class Op>
__device__ void scan_pipe(const Params& P) {
  BC_SCAN_BY_DIRECTION(scan_pipe_dir, T, A, Op);
}

// ---------------------------------------------------------------- segmented tiles (seg)
// Short rows stored back to back: every operand (x and y, the backward's dy, x, y and dx,
// cummax's indices, the cummax backward's winner flags) one run of rows * n elements,
// 16-byte aligned (and, scanning in reverse, rows * n a multiple of 16 / sizeof(T)). pipe1
// and rows1 take a warp a row, so a row shorter than its tile leaves lanes idle (rows of 16
// f32: 2 lanes of 32, one 64-byte load a warp). Here the run is cut into pipe1's tiles (32
// lanes x two 16-byte vectors, 1 KiB) whatever n, each warp a stretch of P.chunk_len
// consecutive tiles, and a tile is scanned in segments: a row starts where the scan position
// is a multiple of n (scanning in reverse the run is reversed, rows and their elements alike,
// so rows still start there). A lane scans its K elements, restarting at each row start; the
// warp joins the lanes' partials by a segmented shuffle scan (a lane's partial stops at the
// first row start it holds, or at lane 0, which holds the carry); a lane's outputs go again
// from the partial before it. A warp's first carry is the fold of the positions of its row
// before its stretch (fewer than n, read again), in order: lane-contiguous pieces joined in
// lane order. The backward's ops read up to three inputs a position (Op::kIn), the cumprod
// backward y at the next scan position of the row (Op::kNb: the lane's next element, the next
// lane's first, or for lane 31 one element read with the tile; 1 past the row's end), and
// the cummax backward one byte of winner flags a position (written by MaxFlagOp, read by
// SegBwdOp: a lane's K bytes as two words of K / 2 bytes). scan_seg1 takes one vector a lane
// (tiles of 512 bytes) where a wave of warps holds the whole run, one tile each: a lane's
// serial steps and the code a warp runs are about halved. On the H100 that took 0.2-1.1 us off
// each kernel of cumsum, cumprod, logcumsumexp and cummax over (8, 128) to (6144, 64) (cummax
// bf16 (4096, 32): 4.70 -> 3.62 us), where the kernels are latency-bound. The first tile's
// loads go out before the carry's reads and divisions (up to 0.35 us off the small kernels).

template <class Op>
__device__ __forceinline__ typename WordOf<Op>::type seg_empty(const Op& op) {
  if constexpr (kRunOp<Op>)
    return op.run0();
  else
    return op.identity();
}

// w := (head ? the empty word : w) followed by the position of inputs v (neighbour nb, flag
// f) at physical position `phys` of its row
template <class Op, typename A>
__device__ __forceinline__ void seg_push(const Op& op, typename WordOf<Op>::type& w, const A* v,
                                         A nb, unsigned char f, bool head, i64 phys) {
  if constexpr (kRunOp<Op>) {
    if (head) w = op.run0();
    op.push(w, v[0]);
  } else {
    const typename Op::S m = make_at(op, v, nb, f, phys);
    w = head ? m : op.combine(w, m);
  }
}

template <class Op>
__device__ __forceinline__ typename WordOf<Op>::type seg_join(
    const Op& op, const typename WordOf<Op>::type& l, const typename WordOf<Op>::type& r) {
  if constexpr (kRunOp<Op>)
    return op.join(l, r);
  else
    return op.combine(l, r);
}

// The output of the inclusive word w (exclusive word e, inputs v, neighbour nb, flag f).
template <class Op, typename A>
__device__ __forceinline__ A seg_value(const Op& op, const typename WordOf<Op>::type& w,
                                       const typename WordOf<Op>::type& e, const A* v, A nb,
                                       unsigned char f) {
  if constexpr (kRunOp<Op>)
    return op.value(w);
  else
    return op.out_value(w, e, v, nb, f);
}

// One lane's inputs of a tile: Op::kIn operands from IN0 (and IN2, y, for kNb), raw in
// physical order (Raw32); for kNb, lane 31's neighbour of its last position; for kAuxIn, its
// K flag bytes in physical order.
template <typename T, typename A, class Op, int K>
struct SegIn {
  static constexpr int kLoads = kInputsY<Op>;
  Raw32 v[kLoads];
  A nb;
  unsigned char fl[Op::kAuxIn ? K : 1];
};

// A lane's flag bytes: K bytes (physical order) at element `ps` of the run, two half words.
template <typename T>
__device__ __forceinline__ void seg_flags_load(unsigned char* b, const unsigned char* src) {
  constexpr int H = PipeTile<T>::K / 2;
  load_bytes<H>(b, src);
  load_bytes<H>(b + H, src + H);
}

template <typename T>
__device__ __forceinline__ void seg_flags_store(unsigned char* dst, const unsigned char* b) {
  constexpr int H = PipeTile<T>::K / 2;
  store_bytes<H>(dst, b);
  store_bytes<H>(dst + H, b + H);
}

// This lane's inputs at scan positions qt..qt+K-1 of the run of `total` (the first `valid`
// before its end; zeros past it).
template <typename T, typename A, class Op, int K, bool kRev>
__device__ __forceinline__ void seg_load(const Params& P, SegIn<T, A, Op, K>& in, i64 qt,
                                         int valid, i64 total) {
  const i64 ps = kRev ? total - qt - K : qt;  // the lowest physical position (whole tiles)
#pragma unroll
  for (int j = 0; j < SegIn<T, A, Op, K>::kLoads; ++j) {
    const T* src = in_ptr<T>(P, j);
    load_partial<T, K, kRev>(in.v[j], src, src + ps, qt, valid, total);
  }
  if constexpr (Op::kNb) {
    in.nb = A(1);
    const i64 q = qt + K;
    if ((threadIdx.x & 31) == 31 && q < total)
      in.nb = to_acc(in_ptr<T>(P, IN2)[kRev ? total - 1 - q : q]);
  }
  if constexpr (Op::kAuxIn) {
    const unsigned char* f = static_cast<const unsigned char*>(P.op[AUX].ptr);
    if (valid == K) {
      seg_flags_load<T>(in.fl, f + ps);
    } else {
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const int i = kRev ? K - 1 - k : k;
        in.fl[i] = k < valid ? f[kRev ? total - 1 - (qt + k) : qt + k] : 0;
      }
    }
  }
}

// Position k (scan order) of a lane's tile: inputs v, flag f.
template <typename T, typename A, class Op, int K, bool kRev>
__device__ __forceinline__ unsigned char seg_at(const SegIn<T, A, Op, K>& in, int k,
                                                A (&v)[Op::kIn]) {
#pragma unroll
  for (int j = 0; j < Op::kIn; ++j) v[j] = to_acc(raw_get<T, K, kRev>(in.v[j], k));
  if constexpr (Op::kAuxIn)
    return in.fl[kRev ? K - 1 - k : k];
  else
    return 0;
}

// One tile of scan_seg: this lane's K positions qt..qt+K-1 in `in` (the first `valid`
// before the end; kWhole: all of them, for every lane), the first at position r0 of its row,
// scanned from the warp's `carry` and stored; returns the carry after the tile.
template <typename T, typename A, class Op, int K, bool kRev, bool kWhole>
__device__ __forceinline__ typename WordOf<Op>::type seg_tile(
    const Params& P, const Op& op, const SegIn<T, A, Op, K>& in, i64 qt, int valid, i64 total,
    int r0, int nr, const typename WordOf<Op>::type& carry, T* dst) {
  typedef typename WordOf<Op>::type W;
  constexpr int L = PipeTile<T>::L, V = K / L;  // V: 16-byte vectors a lane
  const int lane = threadIdx.x & 31;
  // the lane's partial since its last row start, and whether it holds one
  W part = seg_empty(op);
  bool head = false;
  // kNb: the next lane's first y (lane 31: the one read with the tile); kNbMake ops take it
  // as they make their states, the others as they store
  [[maybe_unused]] A nb_next = A(1);
  auto next_lane_y = [&]() {
    nb_next = __shfl_down_sync(kFull, to_acc(raw_get<T, K, kRev>(in.v[IN2], 0)), 1);
    if (lane == 31) nb_next = in.nb;
  };
  if constexpr (kNbMake<Op>) next_lane_y();
  {
    int p = r0;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      if (kWhole || k < valid) {
        A v[Op::kIn];
        const unsigned char f = seg_at<T, A, Op, K, kRev>(in, k, v);
        A nb = A(1);
        if constexpr (kNbMake<Op>) {
          if (p + 1 < nr) nb = k + 1 < K ? to_acc(raw_get<T, K, kRev>(in.v[IN2], k + 1)) : nb_next;
        }
        seg_push(op, part, v, nb, f, p == 0, kRev ? nr - 1 - p : p);
        head = head || p == 0;
      }
      p = p + 1 == nr ? 0 : p + 1;
    }
  }
  if (lane == 0 && !head) part = seg_join(op, carry, part);
  bool closed = head || lane == 0;  // the partial needs nothing from the lanes before it
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const W o = shfl_up(part, d);
    const bool oc = __shfl_up_sync(kFull, closed, d);
    if (lane >= d && !closed) part = seg_join(op, o, part);
    if (lane >= d) closed = closed || oc;
  }
  W w = shfl_up(part, 1);  // the inclusive word before this lane's first position
  if (lane == 0) w = carry;
  if constexpr (Op::kNb && !kNbMake<Op>) next_lane_y();  // the cumprod backward's
  if (kWhole || valid > 0) {
    // the outputs packed in place (whole vectors) or stored one by one (the run's end)
    Vec16<T> out[V];
    [[maybe_unused]] i64 pend = 0;  // cummax/cummin: the index of an even position
    // ... whose pairs of indices, in whole tiles, the warp stores together (store_pairs)
    constexpr bool kPairs = kWhole && Op::kAuxOut && !kFlagOut<Op>;
    [[maybe_unused]] int4* slots = nullptr;
    if constexpr (kPairs) slots = warp_pairs<K>();
    [[maybe_unused]] unsigned char fo[kFlagOut<Op> ? K : 1];  // winner flags, physical order
    int p = r0;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      if (kWhole || k < valid) {
        A v[Op::kIn];
        const unsigned char f = seg_at<T, A, Op, K, kRev>(in, k, v);
        // the exclusive word: empty at a row start (the backward's ops read it)
        const W e = p == 0 ? seg_empty(op) : w;
        const int phys = kRev ? nr - 1 - p : p;
        A nb = A(1);
        auto neighbour = [&]() {
          if constexpr (Op::kNb) {
            if (p + 1 < nr)
              nb = k + 1 < K ? to_acc(raw_get<T, K, kRev>(in.v[IN2], k + 1)) : nb_next;
          }
        };
        if constexpr (kNbMake<Op>) neighbour();  // before the state (the others' order kept)
        seg_push(op, w, v, nb, f, p == 0, phys);
        if constexpr (!kNbMake<Op>) neighbour();
        const int i = kRev ? K - 1 - k : k;
        const i64 at = kRev ? total - 1 - (qt + k) : qt + k;  // in the run of all rows
        if constexpr (!kFlagOut<Op>) {
          const T out_v = from_acc<T>(seg_value(op, w, e, v, nb, f));
          if (kWhole || valid == K)
            out[i / L].v[i % L] = out_v;
          else
            dst[at] = out_v;
        }
        if constexpr (kFlagOut<Op>) {  // the cummax backward's first pass: winner flags
          const unsigned char own = op.own(e, v, p);
          if (kWhole || valid == K)
            fo[i] = own;
          else
            static_cast<unsigned char*>(P.op[AUX].ptr)[at] = own;
        } else if constexpr (Op::kAuxOut) {  // cummax/cummin: the winner's index (one run too)
          i64* aux = static_cast<i64*>(P.op[AUX].ptr);
          const i64 win = op.winner(w, e, v, p, phys);
          if (aux == nullptr) {
          } else if (kWhole || valid == K) {  // in 16-byte pairs (AUX 16-byte aligned)
            if (k % 2 == 0) {
              pend = win;
            } else {  // scan positions k - 1, k: physical at + 1, at in reverse
              const int4 pair = kRev ? idx_pair(win, pend) : idx_pair(pend, win);
              if constexpr (kPairs)
                slots[pair_slot<K>(kRev ? 31 - lane : lane, i / 2)] = pair;
              else
                store16(reinterpret_cast<int4*>(aux + (kRev ? at : at - 1)), pair);
            }
          } else {
            aux[at] = win;
          }
        }
      }
      p = p + 1 == nr ? 0 : p + 1;
    }
    if (kWhole || valid == K) {
      const i64 ps = kRev ? total - qt - K : qt;
      if constexpr (kPairs) {
        if (P.op[AUX].ptr != nullptr)
          store_pairs<K>(static_cast<i64*>(P.op[AUX].ptr) + __shfl_sync(kFull, ps, kRev ? 31 : 0),
                         slots);
      }
      if constexpr (kFlagOut<Op>) {
        seg_flags_store<T>(static_cast<unsigned char*>(P.op[AUX].ptr) + ps, fo);
      } else {
        int4* vp = reinterpret_cast<int4*>(dst + ps);
#pragma unroll
        for (int u = 0; u < V; ++u) {
          int4 raw;
          memcpy(&raw, &out[u], 16);
          store16(vp + u, raw);
        }
      }
    }
  }
  return shfl_idx(part, 31);
}

template <typename T, typename A, class Op, int V, bool kRev>
__device__ __forceinline__ void scan_seg_dir(const Params& P) {
  typedef typename WordOf<Op>::type W;
  constexpr int L = PipeTile<T>::L, K = V * L, TILE = 32 * K;
  // the flag bytes' loads and stores take pipe1's K positions a lane
  static_assert(V == 2 || !(Op::kAuxIn || kFlagOut<Op>), "scan_seg1: no winner flags");
  const Op op{P.mode};
  const int lane = threadIdx.x & 31;
  const i64 n = P.n, total = P.rows * P.n;
  const i64 tiles = (total + TILE - 1) / TILE;
  const i64 t0 = ((i64)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5)) * P.chunk_len;
  if (t0 >= tiles) return;  // whole warps; no block barriers below
  // The host's launch condition; anything else would misalign the vectors (or, for
  // cummax/cummin, ask for flags where seg writes indices, and the reverse for the flags'
  // pass).
  if (!P.vec || (kRev && (total & (L - 1)) != 0) ||
      (Op::kAuxOut && ((P.mode & 4) != 0) != kFlagOut<Op>))
    __trap();
  const i64 t1 = min(tiles, t0 + P.chunk_len);
  T* dst = static_cast<T*>(P.op[OUT].ptr);
  // the first tile's loads go out before the carry's loads and the divisions below
  i64 qt = t0 * TILE + (i64)lane * K;  // this lane's first scan position in the tile
  SegIn<T, A, Op, K> cur;
  seg_load<T, A, Op, K, kRev>(P, cur, qt, (int)max((i64)0, min((i64)K, total - qt)), total);
  // the carry: the positions of the row of scan position t0 * TILE before it, a lane-
  // contiguous piece each, folded in lane order
  W carry = seg_empty(op);
  {
    const i64 s0 = t0 * TILE, before = s0 % n;
    if (before > 0) {
      const i64 per = (before + 31) / 32;
      const i64 a = s0 - before + (i64)lane * per, b = min(s0, a + per);
      W w = seg_empty(op);
      const i64 row0 = s0 - before;
      for (i64 q = a; q < b; ++q) {
        const i64 at = kRev ? total - 1 - q : q;
        A v[Op::kIn];
#pragma unroll
        for (int j = 0; j < Op::kIn; ++j) v[j] = to_acc(in_ptr<T>(P, j)[at]);
        unsigned char f = 0;
        if constexpr (Op::kAuxIn) f = static_cast<const unsigned char*>(P.op[AUX].ptr)[at];
        A nb = A(1);  // kNbMake: y at the next scan position (q + 1 <= s0: in the row)
        if constexpr (kNbMake<Op>) nb = to_acc(in_ptr<T>(P, IN2)[kRev ? at - 1 : at + 1]);
        seg_push(op, w, v, nb, f, false, kRev ? n - 1 - (q - row0) : q - row0);
      }
#pragma unroll
      for (int d = 1; d < 32; d <<= 1) {
        const W o = shfl_up(w, d);
        if (lane >= d) w = seg_join(op, o, w);
      }
      carry = shfl_idx(w, 31);
    }
  }
  const int nr = (int)n;           // rows of at most 512 bytes (the host's condition)
  int r0 = (int)(qt % n);          // its position in its row
  const int dr = (int)(TILE % n);  // how far a tile moves it
  for (i64 t = t0; t < t1; ++t, qt += TILE) {
    const int valid = (int)max((i64)0, min((i64)K, total - qt));
    SegIn<T, A, Op, K> next;
    if (t + 1 < t1) {
      const i64 qn = qt + TILE;
      seg_load<T, A, Op, K, kRev>(P, next, qn, (int)max((i64)0, min((i64)K, total - qn)),
                                  total);
    }
    if ((t + 1) * TILE <= total)  // warp-uniform: every lane's K positions lie before the end
      carry = seg_tile<T, A, Op, K, kRev, true>(P, op, cur, qt, K, total, r0, nr, carry, dst);
    else
      carry = seg_tile<T, A, Op, K, kRev, false>(P, op, cur, qt, valid, total, r0, nr, carry,
                                                 dst);
    r0 += dr;
    if (r0 >= nr) r0 -= nr;
    cur = next;
  }
}

template <typename T, typename A, class Op>
__device__ void scan_seg(const Params& P) {
  BC_SCAN_BY_DIRECTION(scan_seg_dir, T, A, Op, 2);
}

// The same with one 16-byte vector a lane (tiles of 512 bytes; scan_<op>_seg1): half the
// serial steps a lane and about half the code, for runs small enough that every warp takes
// one tile (the host's SEG_ONE_VECTOR). Not for the ops with winner flags.
template <typename T, typename A, class Op>
__device__ void scan_seg1(const Params& P) {
  BC_SCAN_BY_DIRECTION(scan_seg_dir, T, A, Op, 1);
}

// ----------------------------------------- cooperative pieces of long lines (coop)
// Few long lines of pipe1's ops, under pipe1's launch condition: a cooperative launch of one
// block of kCoopWarps<T> warps per SM, block `item` = line * nchunks + piece scanning positions
// [piece * chunk_len, +chunk_len) of its line, each warp a run of whole rows (512 bytes of
// the line: 32 lanes x one 16-byte vector, so that every load and store instruction of a
// warp covers 512 contiguous bytes) of the piece. Phase 1 reads the piece once. Each warp
// keeps its first kCoopRegRows<T> rows in registers and its next P.groups rows in shared
// memory (copied by cp.async), both loaded evict-first in L2, and reads the rest ("past":
// past what the SM holds) with the default policy, kCoopDepth<T> rows at a time; every row
// is folded into one of the lane's three totals. The block's total goes to P.agg[item], the
// grid synchronises (bc::grid_arrive / grid_wait), and each block takes its carry from the
// totals of its line's pieces before it, combined in order (deterministic). Phase 2 scans
// and stores (streaming): first the rows past, read again from L2 (double-buffered: the
// next kCoopDepth<T> rows load while the current ones are scanned; the first are loaded
// while warp 0 waits at the grid barrier), then the rows in registers, then those in shared
// memory. Where the pieces fit in registers and shared memory, every element is read from
// memory once. A warp's rows past start from its carry combined with the folds of its kept
// rows, which takes the ops to be commutative (sum, prod, lse are). The line's partial last
// row is read and scanned as pipe1 does (a lane's K consecutive positions). The same kernel
// takes 2 or 4 interleaved lines (a tensor (n, G) along dim 0) as one line of n positions of
// G values each (LinesOp), whole rows only (scan_<op>_coop2, _coop4: sum and prod).
//
// On the H100, cumsum over (2, 2^23) f32 (time_us): a standalone version of this design (sum
// only, contiguous lines) took 55.0 us; round 14's kernel of two-row tiles, whose rows read
// again were refilled one at a time (4 KiB in flight a warp instead of up to 8), 62.5 us; the
// standalone code built into the package 57.7 us; this kernel, written on it, 58.3-58.7 us
// (58.2 in the bench; bf16 31.9-32.0 us, against 31.7-31.8 and 30.6) (docs/benchmarks.md,
// round 15).
// The host mirrors these sizes (baracuda.scan._kernels.coop_warps, coop_reg_rows).
template <typename T>
constexpr int kCoopWarps = sizeof(T) == 2 ? 16 : 8;
template <typename T>
constexpr int kCoopRegRows = sizeof(T) == 2 ? 8 : sizeof(T) == 4 ? 32 : 16;
// Rows past shared memory a warp loads at a time (phase 1), and double-buffered (phase 2);
// fewer in rounds (kRounds: scan_coop_rounds_dir), whose next round's rows take registers in
// phase 2.
template <typename T, bool kRounds = false>
constexpr int kCoopDepth = sizeof(T) == 2 ? 2 : kRounds ? 4 : 8;

// The L2 eviction policy evict-first (createpolicy, sm_80+), for loads of lines read once.
// (Evict-last on the tiles read again outlives the kernel: its lines crowd L2 for the
// kernels after it, which ran up to 2x slower.)
__device__ __forceinline__ unsigned long long l2_evict_first() {
  unsigned long long pol;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
  return pol;
}

// cp_async16 under an L2 eviction policy.
__device__ __forceinline__ void cp_async16_policy(void* smem, const void* gmem,
                                                  unsigned long long pol) {
  const unsigned dst = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;" ::"r"(dst),
               "l"(gmem), "l"(pol)
               : "memory");
}

// The fold of a lane's 16-byte vector (16 / sizeof(T) elements: 16 / sizeof(T) / G positions
// of G interleaved lines, see LinesOp) into `acc` (pairwise).
template <typename T, typename A, class Op, int G = 1>
__device__ __forceinline__ typename Op::S fold_vec(const Op& op, const int4& raw,
                                                   typename Op::S acc) {
  typedef typename Op::S S;
  constexpr int L = 16 / (int)sizeof(T), LP = L / G;
  T e[L];
  memcpy(e, &raw, 16);
  if constexpr (kRunOp<Op>) {  // G == 1
    auto r = op.run(acc);
#pragma unroll
    for (int k = 0; k < L; ++k) op.push(r, to_acc(e[k]));
    return op.value(r);
  } else {
    S s[LP];
#pragma unroll
    for (int k = 0; k < LP; ++k) {
      A v[G];
#pragma unroll
      for (int g = 0; g < G; ++g) v[g] = to_acc(e[k * G + g]);
      s[k] = op.make(v, 0, 0);
    }
#pragma unroll
    for (int d = 1; d < LP; d <<= 1)
#pragma unroll
      for (int k = 0; k + d < LP; k += 2 * d) s[k] = op.combine(s[k], s[k + d]);
    return op.combine(acc, s[0]);
  }
}

// Ops whose exclusive prefix a lane may take as its inclusive one less its own total (sum):
// one shuffle fewer in warp_vec_scan, rounded once more (within the sum's error bound).
template <class Op>
constexpr bool kSubtractOp = false;
template <typename A>
constexpr bool kSubtractOp<SumOp<A>> = true;

// G adjacent lines whose positions interleave (a tensor (n, G) along dim 0: axis stride G,
// line stride 1) are one run of memory, position q of every line at elements [q G, q G + G).
// The cooperative kernel takes them as one line of n positions whose state is the G lines'
// states (Lines), combined line by line (LinesOp over a one-input op).
template <class S, int G>
struct Lines {
  S v[G];
};
template <class S, int G>
__device__ __forceinline__ Lines<S, G> shfl_up(Lines<S, G> x, int d) {
#pragma unroll
  for (int g = 0; g < G; ++g) x.v[g] = shfl_up(x.v[g], d);
  return x;
}
template <class S, int G>
__device__ __forceinline__ Lines<S, G> shfl_idx(Lines<S, G> x, int s) {
#pragma unroll
  for (int g = 0; g < G; ++g) x.v[g] = shfl_idx(x.v[g], s);
  return x;
}
template <class S, int G>
__device__ __forceinline__ Lines<S, G> shfl_down(Lines<S, G> x, int d) {
#pragma unroll
  for (int g = 0; g < G; ++g) x.v[g] = shfl_down(x.v[g], d);
  return x;
}
template <class S, int G>
__device__ __forceinline__ Lines<S, G> operator-(Lines<S, G> a, const Lines<S, G>& b) {
#pragma unroll
  for (int g = 0; g < G; ++g) a.v[g] -= b.v[g];
  return a;
}

template <class Op, int G>
struct LinesOp {
  typedef Lines<typename Op::S, G> S;
  static constexpr int kIn = 1;
  static constexpr bool kNb = false, kAuxIn = false, kAuxOut = false;
  int mode;
  __device__ __forceinline__ Op line() const { return Op{mode}; }
  __device__ S identity() const {
    S s;
#pragma unroll
    for (int g = 0; g < G; ++g) s.v[g] = line().identity();
    return s;
  }
  __device__ S combine(S l, const S& r) const {
#pragma unroll
    for (int g = 0; g < G; ++g) l.v[g] = line().combine(l.v[g], r.v[g]);
    return l;
  }
  // v: the G lines' values at one position
  template <typename A>
  __device__ S make(const A* v, unsigned char f, i64 p) const {
    S s;
#pragma unroll
    for (int g = 0; g < G; ++g) s.v[g] = line().make(v + g, f, p);
    return s;
  }
};
template <typename A, int G>
constexpr bool kSubtractOp<LinesOp<SumOp<A>, G>> = true;

// The op of the cooperative kernel over G interleaved lines: Op itself for one line.
template <class Op, int G>
struct LinesOf {
  typedef LinesOp<Op, G> type;
};
template <class Op>
struct LinesOf<Op, 1> {
  typedef Op type;
};

// A state written by another block of the grid (the coop pieces' totals): read from L2.
template <class S>
__device__ __forceinline__ S ld_cg(const S* p) {
  return __ldcg(p);
}
template <class S, int G>
__device__ __forceinline__ Lines<S, G> ld_cg(const Lines<S, G>* p) {
  Lines<S, G> s;
#pragma unroll
  for (int g = 0; g < G; ++g) s.v[g] = __ldcg(&p->v[g]);
  return s;
}

// The warp half of a scan over one row of 32 lanes x LP positions: st holds the states of
// this lane's positions from the lane's first (thread-serial, inclusive); they become the
// states from `carry` (kApply; else they stay as they are), and `carry` becomes the state
// after the warp's last position. Returns the state before the lane's first position (from
// `carry`).
template <int LP, class Op, bool kApply = true>
__device__ __forceinline__ typename Op::S warp_states_scan(const Op& op, typename Op::S (&st)[LP],
                                                           typename Op::S& carry, int lane) {
  typedef typename Op::S S;
  S incl = st[LP - 1];
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const S o = shfl_up(incl, d);
    if (lane >= d) incl = op.combine(o, incl);
  }
  S excl;
  if constexpr (kSubtractOp<Op>) {
    excl = op.combine(carry, incl - st[LP - 1]);  // one shuffle fewer
  } else {
    const S before = shfl_up(incl, 1);
    excl = lane ? op.combine(carry, before) : carry;
  }
  if constexpr (kApply) {
#pragma unroll
    for (int i = 0; i < LP; ++i) st[i] = op.combine(excl, st[i]);
  }
  carry = op.combine(carry, shfl_idx(incl, 31));
  return excl;
}

// A warp's 32 16-byte vectors in scan order, one a lane (kRev: each vector's positions
// mirrored; a position is G elements, see LinesOp), scanned from `carry` (the ring and coop
// kernels): st[i] becomes the state after this lane's position i, carry the state after the
// warp's last position.
template <typename T, typename A, class Op, bool kRev, int G = 1>
__device__ __forceinline__ void warp_vec_scan(const Op& op, const int4& raw,
                                              typename Op::S (&st)[16 / sizeof(T) / G],
                                              typename Op::S& carry, int lane) {
  typedef typename Op::S S;
  constexpr int L = 16 / (int)sizeof(T), LP = L / G;
  T e[L];
  memcpy(e, &raw, 16);
  if constexpr (kRunOp<Op>) {  // G == 1: the lane's run, joined across the warp
    typedef typename Op::Run Run;
    Run r = op.run0();
#pragma unroll
    for (int i = 0; i < LP; ++i) op.push(r, to_acc(e[kRev ? LP - 1 - i : i]));
    Run rex, rtot;
    group_scan_run<1>(op, r, rex, rtot, nullptr);
    const Run c = op.run(carry);
    r = op.join(c, rex);
#pragma unroll
    for (int i = 0; i < LP; ++i) {
      op.push(r, to_acc(e[kRev ? LP - 1 - i : i]));
      st[i] = op.value(r);
    }
    carry = op.value(op.join(c, rtot));
  } else {
#pragma unroll
    for (int i = 0; i < LP; ++i) {
      A a[G];
#pragma unroll
      for (int g = 0; g < G; ++g) a[g] = to_acc(e[(kRev ? LP - 1 - i : i) * G + g]);
      const S m = op.make(a, 0, 0);  // one-input ops: no position
      st[i] = i ? op.combine(st[i - 1], m) : m;
    }
    warp_states_scan(op, st, carry, lane);
  }
}

// A lane's 16-byte vector of a coop row, loaded under an L2 policy, or read-only.
__device__ __forceinline__ int4 load_vec(const void* p, unsigned long long pol) {
  int4 r;
  asm volatile("ld.global.nc.L2::cache_hint.v4.s32 {%0, %1, %2, %3}, [%4], %5;"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
               : "l"(p), "l"(pol));
  return r;
}
__device__ __forceinline__ int4 load_vec(const void* p) {
  return __ldg(static_cast<const int4*>(p));
}

// Scans a coop row (this lane: the vector `raw`, at dst) from `carry`, stores it, and
// returns the carry after the row.
template <typename T, typename A, class Op, bool kRev, int G = 1>
__device__ __forceinline__ typename Op::S scan_row(const Op& op, const int4& raw,
                                                   typename Op::S carry, T* dst, int lane) {
  typedef typename Op::S S;
  constexpr int L = 16 / (int)sizeof(T), LP = L / G;
  S st[LP];
  warp_vec_scan<T, A, Op, kRev, G>(op, raw, st, carry, lane);
  T o[L];
#pragma unroll
  for (int i = 0; i < LP; ++i) {  // coop's ops output their state (sum, prod, lse)
    const int k = (kRev ? LP - 1 - i : i) * G;
    if constexpr (G == 1) {
      o[k] = from_acc<T>(op.out_value(st[i], st[i], nullptr, A(1), 0));
    } else {
#pragma unroll
      for (int g = 0; g < G; ++g)
        o[k + g] = from_acc<T>(op.line().out_value(st[i].v[g], st[i].v[g], nullptr, A(1), 0));
    }
  }
  int4 word;
  memcpy(&word, o, 16);
  // streaming (evict-first in L2): the output is not read again here, and the rows past
  // what the SMs keep are still to be read again from L2 (f32 (2, 2^23) on the H100:
  // 60.3 vs 63.0 us in round 14)
  __stcs(reinterpret_cast<int4*>(dst), word);
  return carry;
}

// G > 1: G interleaved lines as one line of n positions (LinesOp): the host's line is their
// run of memory, and n * G elements are whole rows (no partial last row).
template <typename T, typename A, class LineOp, bool kRev, int G = 1>
__device__ __forceinline__ void scan_coop_dir(const Params& P) {
  typedef typename LinesOf<LineOp, G>::type Op;
  typedef typename Op::S S;
  static_assert(kOneInputOp<LineOp>, "coop takes one-input ops without neighbour or aux operands");
  // positions a lane's vector holds (LP) and a row holds (ROW), elements a row holds (ROWE)
  constexpr int L = 16 / (int)sizeof(T), LP = L / G, ROW = 32 * LP, ROWE = 32 * L;
  constexpr int K = PipeTile<T>::K;
  static_assert(LP * G == L, "a lane's vector holds whole positions");
  constexpr int W = kCoopWarps<T>, R = kCoopRegRows<T>, D = kCoopDepth<T>;
  static_assert(W <= 32, "one warp combines the warps' totals");
  extern __shared__ int4 coop_keep[];  // P.groups rows a warp: [warp][row][lane]
  __shared__ S warp_sum[W];
  __shared__ S warp_carry[W];
  const Op op{P.mode};
  const int lane = threadIdx.x & 31;
  const int w = threadIdx.x >> 5;
  const i64 n = P.n;
  const i64 item = blockIdx.x;
  const i64 line = item / P.nchunks;
  const i64 piece = item - line * P.nchunks;
  const i64 q0 = piece * P.chunk_len;
  const i64 q1 = min(n, q0 + P.chunk_len);
  // The host's launch condition; anything else would misalign the vectors.
  if (!P.vec || P.chunk_len % ROW != 0 || ((kRev ? n - q0 : q0) & (LP - 1)) != 0 ||
      blockDim.x != 32 * W)
    __trap();
  const i64 rows = (q1 - q0 + ROW - 1) / ROW;  // the last may be partial
  const i64 s0 = q0 + rows * w / W * ROW;
  const i64 s1 = min(q1, q0 + rows * (w + 1) / W * ROW);
  const i64 nfull = s1 > s0 ? (s1 - s0) / ROW : 0;
  const int nreg = (int)min((i64)R, nfull);
  const int nkeep = (int)min((i64)P.groups, nfull - nreg);
  const i64 f_past = nreg + nkeep;  // the first row past what the SM holds
  Coord c;
  unravel(line, P.outer, c);
  const T* src = in_ptr<T>(P, IN0) + dot(c, P.op[IN0].outer, P.outer.rank);
  T* dst = static_cast<T*>(P.op[OUT].ptr) + dot(c, P.op[OUT].outer, P.outer.rank);
  // Full rows: this lane's vector of the warp's row f is at position v0 + f * ROW (reversed:
  // v0 - f * ROW), element offset G v0 + f * step.
  const i64 step = kRev ? -(i64)ROWE : (i64)ROWE;
  const i64 v0 = kRev ? n - s0 - (i64)(lane + 1) * LP : s0 + (i64)lane * LP;
  const T* pv = src + v0 * G;
  T* dv = dst + v0 * G;
  int4* keep = coop_keep + (i64)w * P.groups * 32 + lane;

  // Phase 1: every load of the kept rows in flight at once, then the rows past; each row
  // folded into the lane's total of its part.
  const unsigned long long first = l2_evict_first();
  int4 reg[R];
#pragma unroll
  for (int f = 0; f < R; ++f)
    if (f < nreg) reg[f] = load_vec(pv + f * step, first);
#pragma unroll 1
  for (int f = 0; f < nkeep; ++f) cp_async16_policy(keep + f * 32, pv + (nreg + f) * step, first);
  cp_async_commit();
  S in_reg = op.identity(), kept = op.identity(), past = op.identity();
#pragma unroll
  for (int f = 0; f < R; ++f)
    if (f < nreg) in_reg = fold_vec<T, A, Op, G>(op, reg[f], in_reg);
#pragma unroll 1
  for (i64 f = f_past; f < nfull; f += D) {
    int4 v[D];
#pragma unroll
    for (int d = 0; d < D; ++d)
      if (f + d < nfull) v[d] = load_vec(pv + (f + d) * step);
#pragma unroll
    for (int d = 0; d < D; ++d)
      if (f + d < nfull) past = fold_vec<T, A, Op, G>(op, v[d], past);
  }
  cp_async_wait_all();  // this thread's own copies: visible to it without a barrier
#pragma unroll 4
  for (int f = 0; f < nkeep; ++f) kept = fold_vec<T, A, Op, G>(op, keep[f * 32], kept);
  S excl, reg_sum, kept_sum, past_sum;
  group_scan<1>(op, in_reg, excl, reg_sum, static_cast<S*>(nullptr));
  group_scan<1>(op, kept, excl, kept_sum, static_cast<S*>(nullptr));
  group_scan<1>(op, past, excl, past_sum, static_cast<S*>(nullptr));
  // The line's partial last row (warp-uniform) as pipe1 takes it: this lane's K
  // consecutive positions from qp.
  const bool partial = s0 + nfull * ROW < s1;
  const i64 qp = s0 + (i64)lane * K + nfull * ROW;
  const int valid = (int)max((i64)0, min((i64)K, s1 - qp));
  const T* pp = src + (kRev ? n - qp - K : qp);
  if constexpr (G == 1) {
    if (partial) {
      Raw32 cur;
      load_partial<T, K, kRev>(cur, src, pp, qp, valid, n);
      past_sum =
          pipe_tile<T, A, Op, K, kRev, false>(op, cur, qp, valid, n, past_sum, dst, nullptr, true);
    }
  } else if (partial) {
    __trap();  // the host's launch condition: whole rows
  }
  if (lane == 0) warp_sum[w] = op.combine(op.combine(reg_sum, kept_sum), past_sum);
  __syncthreads();
  if (w == 0) {
    S wex, block_sum;
    group_scan<1>(op, lane < W ? warp_sum[lane] : op.identity(), wex, block_sum,
                  static_cast<S*>(nullptr));
    S* agg = static_cast<S*>(P.agg);
    if (lane == 0) {
      agg[item] = block_sum;
      grid_wait(grid_arrive());
    }
    __syncwarp();
    // The totals of the pieces before this one: a run per lane in order, then the lanes'
    // results in order.
    const i64 per = (piece + 31) / 32;
    const S* sums = agg + line * P.nchunks;
    S part = op.identity();
    for (i64 j = lane * per; j < min(piece, (lane + 1) * per); ++j)
      part = op.combine(part, ld_cg(sums + j));
    S pex, carry;
    group_scan<1>(op, part, pex, carry, static_cast<S*>(nullptr));
    if (lane < W) warp_carry[lane] = op.combine(carry, wex);
  }
  // The first rows read again need no carry: the other warps load them while warp 0 waits
  // at the grid barrier, warp 0 after it (as the standalone kernel of round 15 does).
  int4 buf[D];
#pragma unroll
  for (int d = 0; d < D; ++d)
    if (f_past + d < nfull) buf[d] = load_vec(pv + (f_past + d) * step);
  __syncthreads();
  const S carry0 = warp_carry[w];

  // Phase 2: the rows past, then those in registers, then those in shared memory.
  S carry = op.combine(op.combine(carry0, reg_sum), kept_sum);
#pragma unroll 1
  for (i64 f = f_past; f < nfull; f += D) {
    int4 nxt[D];
#pragma unroll
    for (int d = 0; d < D; ++d)
      if (f + D + d < nfull) nxt[d] = load_vec(pv + (f + D + d) * step);
#pragma unroll
    for (int d = 0; d < D; ++d)
      if (f + d < nfull)
        carry = scan_row<T, A, Op, kRev, G>(op, buf[d], carry, dv + (f + d) * step, lane);
#pragma unroll
    for (int d = 0; d < D; ++d) buf[d] = nxt[d];  // those past nfull are not read
  }
  if constexpr (G == 1) {
    if (partial) {
      Raw32 cur;
      load_partial<T, K, kRev>(cur, src, pp, qp, valid, n);
      pipe_tile<T, A, Op, K, kRev, false>(op, cur, qp, valid, n, carry, dst, nullptr, false);
    }
  }
  carry = carry0;
#pragma unroll
  for (int f = 0; f < R; ++f)
    if (f < nreg) carry = scan_row<T, A, Op, kRev, G>(op, reg[f], carry, dv + f * step, lane);
  carry = op.combine(carry0, reg_sum);
  // Unrolled: with 8 warps an SM, the rows' shuffle scans must overlap (only the carry
  // links them); one at a time took the f32 (2, 2^23) case from 49.6 to 56.5-58.6 us (ncu,
  // round 13).
#pragma unroll 4
  for (int f = 0; f < nkeep; ++f)
    carry = scan_row<T, A, Op, kRev, G>(op, keep[f * 32], carry, dv + (nreg + f) * step, lane);
}

// A warp's part of one round of a coop piece: its run of whole rows [s0, s1) of positions
// (the last row of the line may be partial), how many of them it keeps in registers (nreg)
// and in shared memory (nkeep), and where its lane's vector of full row 0 is read (pv) and
// written (dv).
template <typename T>
struct CoopSpan {
  i64 s0, s1, nfull;
  int nreg, nkeep;
  const T* pv;
  T* dv;
};

// The cooperative kernel in P.width rounds (scan_<op>_rounds; COOP_ROUNDS): as scan_coop_dir,
// a round at a time. Round r of a block is its piece of the r-th stretch of nchunks pieces;
// its carry is the line's total over the rounds before (warp 0 keeps it) and the totals of
// its round's pieces before it. A round's kept rows load into the registers and shared
// memory the round before frees as it stores its own (phase 2 stores the rows in shared
// memory first, then those in registers), so reads overlap writes. The rounds' totals
// alternate between two halves of P.agg (2 * gridDim.x states). A function of its own, not
// scan_coop_dir with a round count: merged, the one-round kernel had 1-2.5 % more
// instructions and the reverse f32 (2, 2^23) case took 61.4 instead of 59.7 us on the H100
// (docs/benchmarks.md, round 19). Rows past what the SM holds go kCoopDepth<T, true> at a
// time (4 for 4- and 8-byte types): with 8, the f32 kernel spilled.
template <typename T, typename A, class LineOp, bool kRev, int G = 1>
__device__ __forceinline__ void scan_coop_rounds_dir(const Params& P) {
  typedef typename LinesOf<LineOp, G>::type Op;
  typedef typename Op::S S;
  static_assert(kOneInputOp<LineOp>, "coop takes one-input ops without neighbour or aux operands");
  // positions a lane's vector holds (LP) and a row holds (ROW), elements a row holds (ROWE)
  constexpr int L = 16 / (int)sizeof(T), LP = L / G, ROW = 32 * LP, ROWE = 32 * L;
  constexpr int K = PipeTile<T>::K;
  static_assert(LP * G == L, "a lane's vector holds whole positions");
  constexpr int W = kCoopWarps<T>, R = kCoopRegRows<T>, D = kCoopDepth<T, true>;
  static_assert(W <= 32, "one warp combines the warps' totals");
  extern __shared__ int4 coop_keep[];  // P.groups rows a warp: [warp][row][lane]
  __shared__ S warp_sum[W];
  __shared__ S warp_carry[W];
  const Op op{P.mode};
  const int lane = threadIdx.x & 31;
  const int w = threadIdx.x >> 5;
  const i64 n = P.n;
  const i64 item = blockIdx.x;
  const i64 line = item / P.nchunks;
  const i64 piece = item - line * P.nchunks;
  const int rounds = P.width;
  // The host's launch condition; anything else would misalign the vectors.
  // (every round's pieces start where this one's do, modulo LP)
  const i64 q0 = piece * P.chunk_len;
  if (!P.vec || P.chunk_len % ROW != 0 || rounds < 1 || ((kRev ? n - q0 : q0) & (LP - 1)) != 0 ||
      blockDim.x != 32 * W)
    __trap();
  Coord c;
  unravel(line, P.outer, c);
  const T* src = in_ptr<T>(P, IN0) + dot(c, P.op[IN0].outer, P.outer.rank);
  T* dst = static_cast<T*>(P.op[OUT].ptr) + dot(c, P.op[OUT].outer, P.outer.rank);
  // Full rows: this lane's vector of the warp's row f is at position v0 + f * ROW (reversed:
  // v0 - f * ROW), element offset G v0 + f * step.
  const i64 step = kRev ? -(i64)ROWE : (i64)ROWE;
  // Round r of this block: positions [r0, q1) of its line, r0 = (r nchunks + piece) chunk_len.
  auto span_of = [&](int r) {
    CoopSpan<T> s;
    const i64 r0 = min(n, q0 + (i64)r * P.nchunks * P.chunk_len);  // (n: an empty span)
    const i64 q1 = min(n, r0 + P.chunk_len);
    const i64 rows = (q1 - r0 + ROW - 1) / ROW;  // the last may be partial
    s.s0 = r0 + rows * w / W * ROW;
    s.s1 = min(q1, r0 + rows * (w + 1) / W * ROW);
    s.nfull = s.s1 > s.s0 ? (s.s1 - s.s0) / ROW : 0;
    s.nreg = (int)min((i64)R, s.nfull);
    s.nkeep = (int)min(P.groups, s.nfull - s.nreg);
    const i64 v0 = kRev ? n - s.s0 - (i64)(lane + 1) * LP : s.s0 + (i64)lane * LP;
    s.pv = src + v0 * G;
    s.dv = dst + v0 * G;
    return s;
  };
  int4* keep = coop_keep + (i64)w * P.groups * 32 + lane;
  const unsigned long long first = l2_evict_first();
  S* agg = static_cast<S*>(P.agg);
  S line_before = op.identity();  // warp 0: the line's total over the rounds before
  int4 reg[R];
  // Phase 2's rows in registers (span sp, from carry0), each replaced by the next round's
  // row (span nx) once stored.
  auto store_reg = [&](const CoopSpan<T>& sp, const CoopSpan<T>& nx, S carry) {
#pragma unroll
    for (int f = 0; f < R; ++f) {
      if (f < sp.nreg) carry = scan_row<T, A, Op, kRev, G>(op, reg[f], carry, sp.dv + f * step, lane);
      if (f < nx.nreg) reg[f] = load_vec(nx.pv + f * step, first);
    }
  };

  // Round 0's kept rows: every load in flight at once. A later round's are loaded while the
  // round before it stores the rows they replace.
  CoopSpan<T> sp = span_of(0);
#pragma unroll
  for (int f = 0; f < R; ++f)
    if (f < sp.nreg) reg[f] = load_vec(sp.pv + f * step, first);
#pragma unroll 1
  for (int f = 0; f < sp.nkeep; ++f)
    cp_async16_policy(keep + f * 32, sp.pv + (sp.nreg + f) * step, first);
  cp_async_commit();

#pragma unroll 1
  for (int r = 0; r < rounds; ++r) {
    // Phase 1: the rows past what the SM holds, then the kept rows; each row folded into the
    // lane's total of its part.
    const i64 f_past = sp.nreg + sp.nkeep;  // the first row past what the SM holds
    S in_reg = op.identity(), kept = op.identity(), past = op.identity();
#pragma unroll
    for (int f = 0; f < R; ++f)
      if (f < sp.nreg) in_reg = fold_vec<T, A, Op, G>(op, reg[f], in_reg);
#pragma unroll 1
    for (i64 f = f_past; f < sp.nfull; f += D) {
      int4 v[D];
#pragma unroll
      for (int d = 0; d < D; ++d)
        if (f + d < sp.nfull) v[d] = load_vec(sp.pv + (f + d) * step);
#pragma unroll
      for (int d = 0; d < D; ++d)
        if (f + d < sp.nfull) past = fold_vec<T, A, Op, G>(op, v[d], past);
    }
    cp_async_wait_all();  // this thread's own copies: visible to it without a barrier
#pragma unroll 4
    for (int f = 0; f < sp.nkeep; ++f) kept = fold_vec<T, A, Op, G>(op, keep[f * 32], kept);
    S excl, reg_sum, kept_sum, past_sum;
    group_scan<1>(op, in_reg, excl, reg_sum, static_cast<S*>(nullptr));
    group_scan<1>(op, kept, excl, kept_sum, static_cast<S*>(nullptr));
    group_scan<1>(op, past, excl, past_sum, static_cast<S*>(nullptr));
    // The line's partial last row (warp-uniform) as pipe1 takes it: this lane's K
    // consecutive positions from qp.
    const bool partial = sp.s0 + sp.nfull * ROW < sp.s1;
    const i64 qp = sp.s0 + (i64)lane * K + sp.nfull * ROW;
    const int valid = (int)max((i64)0, min((i64)K, sp.s1 - qp));
    const T* pp = src + (kRev ? n - qp - K : qp);
    if constexpr (G == 1) {
      if (partial) {
        Raw32 cur;
        load_partial<T, K, kRev>(cur, src, pp, qp, valid, n);
        past_sum = pipe_tile<T, A, Op, K, kRev, false>(op, cur, qp, valid, n, past_sum, dst,
                                                       nullptr, true);
      }
    } else if (partial) {
      __trap();  // the host's launch condition: whole rows
    }
    if (lane == 0) warp_sum[w] = op.combine(op.combine(reg_sum, kept_sum), past_sum);
    __syncthreads();
    if (w == 0) {
      S wex, block_sum;
      group_scan<1>(op, lane < W ? warp_sum[lane] : op.identity(), wex, block_sum,
                    static_cast<S*>(nullptr));
      // A round's totals where the round before last wrote its own: every block read those
      // before it arrived at the last barrier.
      S* round_agg = agg + (r & 1) * (i64)gridDim.x;
      if (lane == 0) {
        round_agg[item] = block_sum;
        grid_wait(grid_arrive());
      }
      __syncwarp();
      // The totals of the line's pieces before this one in this round (a run per lane in
      // order, then the lanes' results in order), after the line's total over the rounds
      // before; and the line's total over this round, for the next.
      const S* sums = round_agg + line * P.nchunks;
      const i64 upto = P.nchunks;  // every total of the round: the line's, for the next
      const i64 per = (upto + 31) / 32;
      S part = op.identity(), all = op.identity();
      for (i64 j = lane * per; j < min(upto, (lane + 1) * per); ++j) {
        const S v = ld_cg(sums + j);
        if (j < piece) part = op.combine(part, v);
        all = op.combine(all, v);
      }
      S pex, carry;
      group_scan<1>(op, part, pex, carry, static_cast<S*>(nullptr));
      carry = op.combine(line_before, carry);
      S aex, round_total;
      group_scan<1>(op, all, aex, round_total, static_cast<S*>(nullptr));
      line_before = op.combine(line_before, round_total);
      if (lane < W) warp_carry[lane] = op.combine(carry, wex);
    }
    // The first rows read again need no carry: the other warps load them while warp 0 waits
    // at the grid barrier, warp 0 after it (as the standalone kernel of round 15 does).
    int4 buf[D];
#pragma unroll
    for (int d = 0; d < D; ++d)
      if (f_past + d < sp.nfull) buf[d] = load_vec(sp.pv + (f_past + d) * step);
    __syncthreads();
    const S carry0 = warp_carry[w];

    // Phase 2: the rows past, then those in shared memory, then those in registers; the
    // next round's kept rows load into the shared memory and registers they free.
    S carry = op.combine(op.combine(carry0, reg_sum), kept_sum);
#pragma unroll 1
    for (i64 f = f_past; f < sp.nfull; f += D) {
      int4 nxt[D];
#pragma unroll
      for (int d = 0; d < D; ++d)
        if (f + D + d < sp.nfull) nxt[d] = load_vec(sp.pv + (f + D + d) * step);
#pragma unroll
      for (int d = 0; d < D; ++d)
        if (f + d < sp.nfull)
          carry = scan_row<T, A, Op, kRev, G>(op, buf[d], carry, sp.dv + (f + d) * step, lane);
#pragma unroll
      for (int d = 0; d < D; ++d) buf[d] = nxt[d];  // those past nfull are not read
    }
    if constexpr (G == 1) {
      if (partial) {
        Raw32 cur;
        load_partial<T, K, kRev>(cur, src, pp, qp, valid, n);
        pipe_tile<T, A, Op, K, kRev, false>(op, cur, qp, valid, n, carry, dst, nullptr, false);
      }
    }
    const bool more = r + 1 < rounds;
    const CoopSpan<T> nx = more ? span_of(r + 1) : CoopSpan<T>{0, 0, 0, 0, 0, sp.pv, sp.dv};
    // Unrolled: with 8 warps an SM, the rows' shuffle scans must overlap (only the carry
    // links them); one at a time took the f32 (2, 2^23) case from 49.6 to 56.5-58.6 us (ncu,
    // round 13).
    carry = op.combine(carry0, reg_sum);
#pragma unroll 4
    for (int f = 0; f < sp.nkeep; ++f) {
      carry = scan_row<T, A, Op, kRev, G>(op, keep[f * 32], carry, sp.dv + (sp.nreg + f) * step, lane);
      if (f < nx.nkeep) cp_async16_policy(keep + f * 32, nx.pv + (nx.nreg + f) * step, first);
    }
#pragma unroll 1
    for (int f = sp.nkeep; f < nx.nkeep; ++f)
      cp_async16_policy(keep + f * 32, nx.pv + (nx.nreg + f) * step, first);
    if (more) cp_async_commit();
    // The rows in registers after those in shared memory: while those are scanned, the
    // registers hold this round's rows, not the next round's as well.
    store_reg(sp, nx, carry0);
    sp = nx;
  }
}

// One entry a direction (scan_<op>_coop, scan_<op>_cooprev), not one with both behind
// P.reverse: the kernel runs most of its code once a warp (the tiles kept in registers are
// unrolled), so its instructions come from L2 or memory whenever other kernels ran since its
// last launch, and a function of both directions fetched more of them. On the H100, f32
// (2, 2^23) between launches of another kernel: 61.6 us with both, 54.5 us with one
// (%globaltimer, first block start to last block end; docs/benchmarks.md, round 14).
template <typename T, typename A, class Op>
__device__ void scan_coop(const Params& P) {
  if (P.reverse) __trap();  // the host picks the entry by P.reverse
  scan_coop_dir<T, A, Op, false>(P);
}
template <typename T, typename A, class Op>
__device__ void scan_cooprev(const Params& P) {
  if (!P.reverse) __trap();
  scan_coop_dir<T, A, Op, true>(P);
}
// Rounds (scan_<op>_rounds, scan_<op>_roundsrev): lines longer than what the blocks keep and
// L2 hold, a round at a time (P.width rounds).
template <typename T, typename A, class Op>
__device__ void scan_rounds(const Params& P) {
  if (P.reverse) __trap();
  scan_coop_rounds_dir<T, A, Op, false>(P);
}
template <typename T, typename A, class Op>
__device__ void scan_roundsrev(const Params& P) {
  if (!P.reverse) __trap();
  scan_coop_rounds_dir<T, A, Op, true>(P);
}
// G interleaved lines (scan_<op>_coop<G>, scan_<op>_coop<G>rev): a type whose 16-byte vector
// holds whole positions of G lines (no 4-line entry for f64: a trap).
template <typename T, typename A, class Op, int G, bool kRev>
__device__ __forceinline__ void scan_coop_lines(const Params& P) {
  if constexpr (16 % (G * sizeof(T)) != 0) {
    __trap();
  } else {
    if (P.reverse != kRev) __trap();
    scan_coop_dir<T, A, Op, kRev, G>(P);
  }
}
template <typename T, typename A, class Op>
__device__ void scan_coop2(const Params& P) { scan_coop_lines<T, A, Op, 2, false>(P); }
template <typename T, typename A, class Op>
__device__ void scan_coop2rev(const Params& P) { scan_coop_lines<T, A, Op, 2, true>(P); }
template <typename T, typename A, class Op>
__device__ void scan_coop4(const Params& P) { scan_coop_lines<T, A, Op, 4, false>(P); }
template <typename T, typename A, class Op>
__device__ void scan_coop4rev(const Params& P) { scan_coop_lines<T, A, Op, 4, true>(P); }

template <typename T, typename A, class Op>
__device__ void scan_cols(const Params& P) {
  typedef typename Op::S S;
  constexpr int U = kColUnroll;
  const Op op{P.mode};
  const bool reduce = P.agg != nullptr;
  const i64 items = P.rows * P.nchunks;
  const i64 step = (i64)gridDim.x * blockDim.x;
  for (i64 item = (i64)blockIdx.x * blockDim.x + threadIdx.x; item < items; item += step) {
    const i64 chunk = item / P.rows;
    const i64 row = item - chunk * P.rows;
    const i64 slot = row * P.nchunks + chunk;
    const i64 q0 = chunk * P.chunk_len;
    const i64 q1 = min(P.n, q0 + P.chunk_len);
    Coord c;
    unravel(row, P.outer, c);
    i64 base[NOPS];
#pragma unroll
    for (int j = 0; j < NOPS; ++j) base[j] = dot(c, P.op[j].outer, P.outer.rank);
    S run = P.carry != nullptr ? static_cast<const S*>(P.carry)[slot] : op.identity();
    [[maybe_unused]] typename RunOf<Op>::type lrun;  // run ops: the state as a run
    if constexpr (kRunOp<Op>) lrun = op.run(run);
    for (i64 q = q0; q < q1; q += U) {
      A v[Op::kIn][U];
      A nb[U];
      unsigned char fl[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const i64 qq = q + u;
        const bool in = qq < q1;
        const i64 p = phys(P, in ? qq : q0);
#pragma unroll
        for (int j = 0; j < Op::kIn; ++j)
          v[j][u] = in ? to_acc(in_ptr<T>(P, j)[base[j] + p * P.op[j].axis_stride]) : A(0);
        nb[u] = A(1);
        fl[u] = 0;
        if constexpr (Op::kNb) {
          if (in && qq + 1 < P.n)
            nb[u] = to_acc(in_ptr<T>(P, IN2)[base[IN2] + phys(P, qq + 1) * P.op[IN2].axis_stride]);
        }
        if constexpr (Op::kAuxIn) {
          if (in)
            fl[u] = static_cast<const unsigned char*>(
                P.op[AUX].ptr)[base[AUX] + p * P.op[AUX].axis_stride];
        }
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const i64 qq = q + u;
        if (qq < q1) {
          const i64 p = phys(P, qq);
          A vk[Op::kIn];
#pragma unroll
          for (int j = 0; j < Op::kIn; ++j) vk[j] = v[j][u];
          if constexpr (kRunOp<Op>) {
            op.push(lrun, vk[0]);
            if (!reduce && P.op[OUT].ptr != nullptr)
              static_cast<T*>(P.op[OUT].ptr)[base[OUT] + p * P.op[OUT].axis_stride] =
                  from_acc<T>(op.value(lrun));
          } else {
            const S prev = run;
            run = op.combine(run, make_at(op, vk, nb[u], fl[u], p));
            if (!reduce) {
              if (P.op[OUT].ptr != nullptr)
                static_cast<T*>(P.op[OUT].ptr)[base[OUT] + p * P.op[OUT].axis_stride] =
                    from_acc<T>(op.out_value(run, prev, vk, nb[u], fl[u]));
              store_aux<T, A>(P, op, base[AUX], qq, p, run, prev, vk);
            }
          }
        }
      }
    }
    if constexpr (kRunOp<Op>) run = op.value(lrun);
    if (reduce) static_cast<S*>(P.agg)[slot] = run;
  }
}

// short: a strided axis of few positions (_kernels.SHORT_MAX). A thread takes NV words of W
// bytes, each V = W / sizeof(T) adjacent lines (a block's 256 NV words adjacent, a thread's
// 256 apart), and walks the axis in batches of B positions, every load of a batch issued
// before its scan, storing its outputs a word a position: no shared memory and no barrier.
// - W = 16 where the lines come in 16-byte vectors (the strips' conditions at 16 bytes: the
//   innermost outer dim contiguous and a whole number of vectors, every element-typed operand
//   16-byte aligned with strides of whole vectors); cummax/cummin's indices (MaxOp) take two
//   lines a thread (W = 2 sizeof(T)), so that a warp's 16-byte index pairs are one run of 512
//   bytes (with 8 lines a thread in bf16, a warp's pairs were 64 bytes apart: 101.8 us over
//   64 x 262144 on an H200, 74.1 with a pair a thread, 61.6 with two (shortx2); torch 63.6).
// - W = sizeof(T) (short1) for any other layout: a line a word, adjacent lines' elements
//   adjacent across a warp where the innermost outer dim is contiguous.
// NV > 1 words a thread (shortx2 / shortx4, short1x4 / short1x8: the host's SHORT_MANY and
// SHORT1_MANY, over few positions), so that a thread still has its loads in flight, only
// where the outer dims coalesce to one (LIN). LIN (every launch there): a word's offsets are
// its line's index times the outer stride, without the 64-bit divisions of an unravel (on an
// H200, bf16 cumsum over (2, 2^23) 28.2 -> 21.7 us, cummax 120.9 -> 89.0). (Strips stage 16
// KiB chunks, a block a strip: over a short axis each block scans one partial chunk and exits;
// cols moves an element at a time, with 64-bit index arithmetic an element.) One chunk a
// line: no carry in, no totals out. AUX
// (cummax/cummin's indices, the backward's winner flags) moves V elements at a time where
// P.vec (the host: AUX 16-byte aligned, its strides whole vectors), else one at a time.
template <class Op>
constexpr int kShortLoads = Op::kIn + (Op::kNb ? 1 : 0);  // words loaded a position
// WB (8; 16 for cummax's 4- to 16-byte words and for short1x8's lines, 24 for short1x8b3's)
// words of loads a batch (the cumprod backward's 3 a position: 2 positions), so that no op
// spills (ptxas, sm_90: 46-128 registers in every dtype, two blocks an SM at least)
template <class Op, int NV, int WB = 8>
constexpr int kShortBatch = WB / kShortLoads<Op> / NV < 1 ? 1 : WB / kShortLoads<Op> / NV;
// the bytes a thread owns a line group: two lines for MaxOp's indices, else a 16-byte vector
template <typename T, class Op>
constexpr int kShortWord = Op::kAuxOut && !kFlagOut<Op> ? 2 * (int)sizeof(T) : 16;

template <typename T, typename A, class Op, int NV, int W, int WB, bool LIN>
__device__ __forceinline__ void short_lines(const Params& P) {
  typedef typename Op::S S;
  constexpr int V = W / (int)sizeof(T);  // lines a word
  constexpr int B = kShortBatch<Op, NV, WB>;
  constexpr int NI = Op::kIn;
  typedef typename Bytes<W>::type Wd;  // a word of elements
  const Op op{P.mode};
  const i64 vecs = P.rows / V;
  const i64 step = (i64)gridDim.x * blockDim.x * NV;
  for (i64 first = (i64)blockIdx.x * blockDim.x * NV + threadIdx.x; first < vecs; first += step) {
    // LIN (one outer dim): a line's offset is its index times the stride, and the k-th word's
    // the first's plus k strides of a block's lines (two numbers an operand rather than NV,
    // and no 64-bit division)
    i64 base[LIN ? 1 : NV][NOPS];
    [[maybe_unused]] i64 kstep[NOPS];
    bool live[NV];
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const i64 item = first + (i64)k * blockDim.x;
      live[k] = item < vecs;
      if constexpr (!LIN) {
        Coord c;
        unravel(live[k] ? item * V : 0, P.outer, c);
#pragma unroll
        for (int j = 0; j < NOPS; ++j) base[k][j] = dot(c, P.op[j].outer, P.outer.rank);
      }
    }
    if constexpr (LIN) {
#pragma unroll
      for (int j = 0; j < NOPS; ++j) {
        base[0][j] = first * V * P.op[j].outer.v[0];
        kstep[j] = (i64)blockDim.x * V * P.op[j].outer.v[0];
      }
    }
    const auto at = [&](int k, int j) -> i64 {
      if constexpr (LIN)
        return base[0][j] + k * kstep[j];
      else
        return base[k][j];
    };
    S run[NV][V];
    [[maybe_unused]] typename RunOf<Op>::type lrun[NV][V];  // run ops: the states as runs
#pragma unroll
    for (int k = 0; k < NV; ++k) {
#pragma unroll
      for (int e = 0; e < V; ++e) {
        run[k][e] = op.identity();
        if constexpr (kRunOp<Op>) lrun[k][e] = op.run(run[k][e]);
      }
    }
    for (i64 q0 = 0; q0 < P.n; q0 += B) {
      Wd raw[NV][B][NI];
      [[maybe_unused]] Wd nbraw[NV][B];
      [[maybe_unused]] unsigned char fl[NV][B][V];
#pragma unroll
      for (int u = 0; u < B; ++u) {
        const i64 q = q0 + u;
        if (q >= P.n) break;
        // a position's offsets, the same for every thread, once for the NV words
        const i64 p = phys(P, q);
        i64 po[NOPS];
#pragma unroll
        for (int j = 0; j < NOPS; ++j) po[j] = p * P.op[j].axis_stride;
        [[maybe_unused]] const i64 pn =
            Op::kNb && q + 1 < P.n ? phys(P, q + 1) * P.op[IN2].axis_stride : 0;
#pragma unroll
        for (int k = 0; k < NV; ++k) {
          if (live[k]) {
#pragma unroll
            for (int j = 0; j < NI; ++j)
              raw[k][u][j] =
                  *reinterpret_cast<const Wd*>(in_ptr<T>(P, j) + at(k, j) + po[j]);
            if constexpr (Op::kNb) {
              if (q + 1 < P.n)
                nbraw[k][u] = *reinterpret_cast<const Wd*>(in_ptr<T>(P, IN2) + at(k, IN2) + pn);
            }
            if constexpr (Op::kAuxIn) {
              const unsigned char* f =
                  static_cast<const unsigned char*>(P.op[AUX].ptr) + at(k, AUX) + po[AUX];
              if (V > 1 && P.vec) {
                load_bytes<V>(fl[k][u], f);
              } else {
#pragma unroll
                for (int e = 0; e < V; ++e) fl[k][u][e] = f[e];
              }
            }
          }
        }
      }
#pragma unroll
      for (int u = 0; u < B; ++u) {
        const i64 q = q0 + u;
        if (q >= P.n) break;
        const i64 p = phys(P, q);
        const i64 po_out = p * P.op[OUT].axis_stride, po_aux = p * P.op[AUX].axis_stride;
#pragma unroll
        for (int k = 0; k < NV; ++k) {
          if (!live[k]) continue;
          T in[NI][V], out[V];
          [[maybe_unused]] T nbe[V];
          [[maybe_unused]] i64 win[V];
#pragma unroll
          for (int j = 0; j < NI; ++j) memcpy(in[j], &raw[k][u][j], W);
          if constexpr (Op::kNb) {
            if (q + 1 < P.n) memcpy(nbe, &nbraw[k][u], W);
          }
#pragma unroll
          for (int e = 0; e < V; ++e) {
            A vk[NI];
#pragma unroll
            for (int j = 0; j < NI; ++j) vk[j] = to_acc(in[j][e]);
            if constexpr (kRunOp<Op>) {
              op.push(lrun[k][e], vk[0]);
              out[e] = from_acc<T>(op.value(lrun[k][e]));
            } else {
              A nb = A(1);  // y past the axis's end
              if constexpr (Op::kNb) {
                if (q + 1 < P.n) nb = to_acc(nbe[e]);
              }
              unsigned char f = 0;
              if constexpr (Op::kAuxIn) f = fl[k][u][e];
              const S prev = run[k][e];
              run[k][e] = op.combine(prev, make_at(op, vk, nb, f, p));
              out[e] = from_acc<T>(op.out_value(run[k][e], prev, vk, nb, f));
              if constexpr (Op::kAuxOut) win[e] = op.winner(run[k][e], prev, vk, q, p);
            }
          }
          if (P.op[OUT].ptr != nullptr) {
            Wd w;
            memcpy(&w, out, W);
            T* d = static_cast<T*>(P.op[OUT].ptr) + at(k, OUT) + po_out;
            if constexpr (W == 16)
              store16(reinterpret_cast<int4*>(d), make_int4(w.x, w.y, w.z, w.w));
            else
              *reinterpret_cast<Wd*>(d) = w;
          }
          if constexpr (Op::kAuxOut) {
            if (P.op[AUX].ptr != nullptr) {
              const i64 off = at(k, AUX) + po_aux;
              if (V == 1 || !P.vec) {  // an element at a time, flags or indices by Op
#pragma unroll
                for (int e = 0; e < V; ++e) store_aux_as<kFlagOut<Op>>(P, off + e, p, win[e]);
              } else if constexpr (kFlagOut<Op>) {  // the winner flags, a word
                unsigned char b[V];
#pragma unroll
                for (int e = 0; e < V; ++e) b[e] = win[e] == p ? 1 : 0;
                store_bytes<V>(static_cast<unsigned char*>(P.op[AUX].ptr) + off, b);
              } else if constexpr (V > 1) {  // the indices, two a 16-byte store
                int4* d = reinterpret_cast<int4*>(static_cast<i64*>(P.op[AUX].ptr) + off);
#pragma unroll
                for (int e = 0; e < V; e += 2) store16(d + e / 2, idx_pair(win[e], win[e + 1]));
              }
            }
          }
        }
      }
    }
  }
}

// A short axis's positions fit an int: cummax/cummin's states there hold int indices (MaxOp32),
// one register a line where int64 took two (with the batch loops position by position, each
// position's offsets once for a thread's NV words: bf16 cummax over (2, 2^23) on an H200 72.6
// -> 57.1 us, 116 -> 64 registers; docs/benchmarks.md, round 50)
template <class Op>
struct ShortOp {
  typedef Op type;
};
template <typename A, bool kSelect>
struct ShortOp<MaxOp<A, i64, kSelect>> {
  typedef MaxOp<A, int, kSelect> type;
};

template <typename T, typename A, class Op0, int NV, int W, int WB = 8>
__device__ void scan_short(const Params& P) {
  typedef typename ShortOp<Op0>::type Op;
  if (P.outer.rank == 1) {
    short_lines<T, A, Op, NV, W, WB, true>(P);
  } else if constexpr (NV > 1) {
    __trap();  // NV > 1 only over one outer dim (the host's condition: _kernels.short_kind)
  } else {
    short_lines<T, A, Op, 1, W, WB, false>(P);
  }
}

// cummax/cummin over a short strided axis whose lines are not whole vectors, the outer dims
// coalesced to one (the host's SHORT1_MANY, SHORT1_RESIDENT: short1l, short1lw): torch's layout,
// a line a thread and an element a load and a store, but with NB positions' loads issued before
// their scan and few registers, so that an SM holds 1536-2048 threads, each with NB loads in
// flight. The grid covers every line once (the host lifts the short kinds' cap of 64 blocks an SM
// for it; a smaller grid walks the lines in turn). The direction and the key's rule (mode & 3:
// minimum, ties to the latest) are compile-time (scan_max_lines_any): the loop walks each
// operand's pointer along the axis in scan order with no arithmetic of its own. Keys as MaxOp
// (max_key, key_wins): the first element wins against the empty state, since -inf loses to every
// key but -inf itself, which keeps the first position's index. On an H200 over (2, 8388607) along
// dim 0, bf16 59.6 us against short1x4's 72.9 and torch's 69.3 in one run (docs/benchmarks.md,
// round 55; four positions a batch were slower over 8 and 16 positions: bf16 over 16, 72.8
// against 67.4).
template <typename T, typename A, bool REV, int MODE>
__device__ __forceinline__ void max_line_step(const T v, A& m, int& mi, int& p, T*& py, i64*& pi,
                                              i64 sy, i64 si, bool has_y, bool has_i) {
  const A k = max_key(MODE, to_acc(v));
  if (key_wins(MODE, k, m)) {
    m = k;
    mi = p;
  }
  p += REV ? -1 : 1;
  if (has_y) *py = from_acc<T>(max_key(MODE, m));
  if (has_i) *pi = mi;
  py += REV ? -sy : sy;
  pi += REV ? -si : si;
}

template <typename T, typename A, int NB, int MODE, bool REV>
__device__ void scan_max_lines(const Params& P) {
  const int n = (int)P.n;  // <= SHORT_MAX
  const int first = REV ? n - 1 : 0;
  const i64 sx = P.op[IN0].axis_stride, sy = P.op[OUT].axis_stride, si = P.op[AUX].axis_stride;
  T* const y = static_cast<T*>(P.op[OUT].ptr);
  i64* const ix = static_cast<i64*>(P.op[AUX].ptr);
  const bool has_y = y != nullptr, has_i = ix != nullptr;
  const i64 step = (i64)gridDim.x * blockDim.x;
  for (i64 line = (i64)blockIdx.x * blockDim.x + threadIdx.x; line < P.rows; line += step) {
    const T* px = in_ptr<T>(P, IN0) + (line * P.op[IN0].outer.v[0] + first * sx);
    T* py = y + (line * P.op[OUT].outer.v[0] + first * sy);
    i64* pi = ix + (line * P.op[AUX].outer.v[0] + first * si);
    A m = -inf<A>();
    int mi = first, p = first;
    int q = 0;
#pragma unroll 1
    for (; q + NB <= n; q += NB) {  // whole batches: NB loads in flight
      T raw[NB];
#pragma unroll
      for (int u = 0; u < NB; ++u) raw[u] = px[(REV ? -u : u) * sx];
      px += REV ? -NB * sx : NB * sx;
#pragma unroll
      for (int u = 0; u < NB; ++u)
        max_line_step<T, A, REV, MODE>(raw[u], m, mi, p, py, pi, sy, si, has_y, has_i);
    }
#pragma unroll 1
    for (; q < n; ++q) {
      max_line_step<T, A, REV, MODE>(*px, m, mi, p, py, pi, sy, si, has_y, has_i);
      px += REV ? -sx : sx;
    }
  }
}

// the entry's (mode & 3, reverse) at compile time: the min/max key and the tie rule in the loop
template <typename T, typename A, int NB>
__device__ void scan_max_lines_any(const Params& P) {
  switch (P.mode & 3) {
    case 0: BC_SCAN_BY_DIRECTION(scan_max_lines, T, A, NB, 0); break;
    case 1: BC_SCAN_BY_DIRECTION(scan_max_lines, T, A, NB, 1); break;
    case 2: BC_SCAN_BY_DIRECTION(scan_max_lines, T, A, NB, 2); break;
    default: BC_SCAN_BY_DIRECTION(scan_max_lines, T, A, NB, 3); break;
  }
}

// In place: carry[row * nchunks + c] = combine of the totals of chunks 0..c-1 of the row.
template <typename T, typename A, class Op, int GW>
__device__ void scan_states(const Params& P) {
  typedef typename Op::S S;
  constexpr int K = 4;
  constexpr int GT = 32 * GW;
  constexpr int GPB = kBlock / GT;
  __shared__ S scratch[kRunOp<Op> ? 16 : 8];  // run ops: 8 runs
  const Op op{P.mode};
  const int g = threadIdx.x / GT;
  const int t = threadIdx.x % GT;
  S* states = static_cast<S*>(P.carry);
  for (i64 first = (i64)blockIdx.x * GPB; first < P.rows; first += (i64)gridDim.x * GPB) {
    const i64 row = first + g;
    if (GW == 1 && row >= P.rows) continue;
    S* s = states + row * P.nchunks;
    S carry = op.identity();
    for (i64 tile = 0; tile < P.nchunks; tile += (i64)GT * K) {
      const i64 c0 = tile + (i64)t * K;
      S st[K];
#pragma unroll
      for (int k = 0; k < K; ++k) st[k] = c0 + k < P.nchunks ? s[c0 + k] : op.identity();
      S acc[K];
#pragma unroll
      for (int k = 0; k < K; ++k) acc[k] = k == 0 ? st[0] : op.combine(acc[k - 1], st[k]);
      S excl, total;
      group_scan<GW>(op, acc[K - 1], excl, total, scratch);
      const S prefix = op.combine(carry, excl);
#pragma unroll
      for (int k = 0; k < K; ++k)
        if (c0 + k < P.nchunks) s[c0 + k] = k == 0 ? prefix : op.combine(prefix, acc[k - 1]);
      carry = op.combine(carry, total);
    }
  }
}

// lbpair: lbcols tiles for 2-byte types of two groups of 32 lines (2 h, 2 h + 1), 64 lines
// x 256 positions: a thread per two adjacent lines (one 4-byte load or store a position) and
// 32 positions, a warp per row lane, so each row of a tile is one 128-byte line of memory (a
// thread per line moved 64 bytes a row: on the H100 bf16 cumsum over 4096 x 8192 along dim
// 0 ran at half the bytes per second of f32). The host takes it for cumsum and cumprod when
// each line pair is 4-byte aligned and adjacent in IN0 and OUT (innermost outer stride 1
// and even extent, other strides even). The loaded words stay packed (32 registers); the
// pass after the look-back recomputes the running states from them, one combine an element
// from the carry, instead of keeping 64 states. Each group takes its carry by look-back on
// its own nodes (the lbcols tree of width 32), one group after the other.
template <typename T, typename A>
__device__ __forceinline__ void unpack2(unsigned w, A& a, A& b) {
  T t[2];
  memcpy(t, &w, 4);
  a = to_acc(t[0]);
  b = to_acc(t[1]);
}

// lb_carry for two groups at once (ga and, where has_b, ga + 1) of tile t: warps 0 and 1
// publish, warps 2-7 fold the (group, level) nodes, so neither group's look-back waits for
// the other's.
template <class Op>
__device__ __forceinline__ void lb_carry2(const Op& op, const LbNodes<typename Op::S>& lb, i64 ga,
                                          bool has_b, i64 t, const typename Op::S& total_a,
                                          const typename Op::S& total_b,
                                          typename Op::S (*part_a)[32],
                                          typename Op::S (*part_b)[32], int c,
                                          typename Op::S& carry_a, typename Op::S& carry_b) {
  typedef typename Op::S S;
  const int warp = threadIdx.x >> 5;
  if (warp == 0) {
    lb_publish_tile(op, lb, ga, t, total_a);
  } else if (warp == 1) {
    if (has_b) lb_publish_tile(op, lb, ga + 1, t, total_b);
  } else {
    for (int i = warp - 2; i < 2 * lb.levels; i += kBlock / 32 - 2) {
      const int l = i >> 1, g = i & 1;
      const int d = lb.digit(t, l);  // uniform over the warp
      if (d == 0 || (g == 1 && !has_b)) continue;
      const S acc = lb_fold_level(op, lb, lb.node(ga + g, l, (t >> (lb.rbits * l)) - d), d);
      if ((threadIdx.x & 31) < lb.width) (g ? part_b : part_a)[l][c] = acc;
    }
  }
  __syncthreads();
  carry_a = carry_b = op.identity();
  bool have = false;
  for (int l = lb.levels - 1; l >= 0; --l) {
    if (lb.digit(t, l) != 0) {
      carry_a = have ? op.combine(carry_a, part_a[l][c]) : part_a[l][c];
      if (has_b) carry_b = have ? op.combine(carry_b, part_b[l][c]) : part_b[l][c];
      have = true;
    }
  }
}

template <typename T, typename A, class Op>
__device__ void scan_lb_pairs(const Params& P) {
  typedef typename Op::S S;
  constexpr int R = 32;
  static_assert(sizeof(S) == 4, "one-word states (the look-back's packed nodes)");
  __shared__ S scratch[8][64];
  __shared__ S part_a[kLbMaxLevels][32], part_b[kLbMaxLevels][32];
  __shared__ i64 off_sh[kLbMaxLevels];
  __shared__ i64 tile_sh;
  const Op op{P.mode};
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;  // warp: the row lane
  const i64 hgroups = (P.groups + 1) / 2;
  const i64 tiles = hgroups * P.nchunks;
  const i64 dir = P.reverse ? -1 : 1;
  const LbNodes<S> lb = lb_nodes<S>(P, P.groups, P.nchunks, 32, off_sh);
  for (;;) {
    const i64 tile = lb_take_tile(P, tile_sh);
    if (tile >= tiles) return;
    const i64 chunk = tile / hgroups;
    const i64 h = tile - chunk * hgroups;
    const i64 line = h * 64 + 2 * lane;
    const bool live = line < P.rows;  // rows is even: both lines or neither
    const i64 q0 = chunk * P.chunk_len + (i64)warp * R;
    const i64 q1 = min(P.n, chunk * P.chunk_len + P.chunk_len);
    const int cnt = live ? (int)max((i64)0, min((i64)R, q1 - q0)) : 0;
    const i64 p0 = cnt > 0 ? phys(P, q0) : 0;
    i64 bin, bout;
    {
      Coord c;
      unravel(live ? line : 0, P.outer, c);
      bin = dot(c, P.op[IN0].outer, P.outer.rank) + p0 * P.op[IN0].axis_stride;
      bout = dot(c, P.op[OUT].outer, P.outer.rank) + p0 * P.op[OUT].axis_stride;
    }
    unsigned raw[R];
    {
      const T* src = in_ptr<T>(P, IN0) + bin;
      const i64 step = dir * P.op[IN0].axis_stride;
#pragma unroll
      for (int k = 0; k < R; ++k) {
        raw[k] = k < cnt ? *reinterpret_cast<const unsigned*>(src) : 0u;
        src += step;
      }
    }
    S ta = op.identity(), tb = op.identity();
#pragma unroll
    for (int k = 0; k < R; ++k) {
      if (k < cnt) {
        A va, vb;
        unpack2<T, A>(raw[k], va, vb);
        ta = op.combine(ta, op.make(&va, 0, p0 + dir * k));
        tb = op.combine(tb, op.make(&vb, 0, p0 + dir * k));
      }
    }
    scratch[warp][2 * lane] = ta;
    scratch[warp][2 * lane + 1] = tb;
    __syncthreads();
    S ba = op.identity(), bb = op.identity(), all_a = op.identity(), all_b = op.identity();
#pragma unroll
    for (int w = 0; w < 8; ++w) {
      if (w < warp) {
        ba = op.combine(ba, scratch[w][2 * lane]);
        bb = op.combine(bb, scratch[w][2 * lane + 1]);
      }
      all_a = op.combine(all_a, scratch[w][lane]);  // line `lane` of group 2 h
      all_b = op.combine(all_b, scratch[w][32 + lane]);  // of group 2 h + 1
    }
    // the carry of line `lane` of each group (has a barrier)
    S carry_a, carry_b;
    lb_carry2(op, lb, 2 * h, 2 * h + 1 < P.groups, chunk, all_a, all_b, part_a, part_b, lane,
              carry_a, carry_b);
    const int src_lane = (2 * lane) & 31;
    const S a0 = shfl_idx(carry_a, src_lane), a1 = shfl_idx(carry_a, src_lane + 1);
    const S b0 = shfl_idx(carry_b, src_lane), b1 = shfl_idx(carry_b, src_lane + 1);
    S pa = op.combine(lane < 16 ? a0 : b0, ba);
    S pb = op.combine(lane < 16 ? a1 : b1, bb);
    if (cnt > 0) {
      T* dst = static_cast<T*>(P.op[OUT].ptr) + bout;
      const i64 ostep = dir * P.op[OUT].axis_stride;
#pragma unroll
      for (int k = 0; k < R; ++k) {
        if (k < cnt) {
          A va, vb;
          unpack2<T, A>(raw[k], va, vb);
          const S ia = op.combine(pa, op.make(&va, 0, p0 + dir * k));
          const S ib = op.combine(pb, op.make(&vb, 0, p0 + dir * k));
          T o[2] = {from_acc<T>(op.out_value(ia, pa, &va, A(1), 0)),
                    from_acc<T>(op.out_value(ib, pb, &vb, A(1), 0))};
          unsigned w;
          memcpy(&w, o, 4);
          *reinterpret_cast<unsigned*>(dst + k * ostep) = w;
          pa = ia;
          pb = ib;
        }
      }
    }
    __syncthreads();  // scratch, the parts and tile_sh are rewritten by the next tile
  }
}


// ------------------------------------------------ strips of adjacent lines (strip)
// A scan along a strided axis whose lines come in runs of SW contiguous bytes (the host's
// condition, _kernels._strip_width: the op's operands, the staged ones and OUT with the
// innermost outer dim of stride 1 and a multiple of SW bytes, every other stride a multiple
// of 16 bytes, 16-byte aligned data; AUX with the innermost outer dim of stride 1). Block b
// owns lines [b W, b W + W), W = SW / sizeof(T), and walks the whole axis by itself: no chunk
// carries, no look-back, no workspace. The axis is cut into chunks of R positions, CH bytes
// of each staged operand (R = CH / SW); STAGES chunks are in flight at once, copied by
// cp.async into a ring in dynamic shared memory while the block scans the oldest. A lane owns
// U bytes (one 4-byte word of a 2-byte type, one element otherwise) of every position of its
// row group's run of R / G consecutive positions: it scans them serially, the G groups'
// totals meet in shared memory, and every lane folds the totals of the groups before its own
// onto the strip's running carry (same order in every block: deterministic). Positions past
// n are zero-filled by the copy and never stored.
// - The staged operands are the op's inputs IN0.. (kInputsY: y too for kNb ops). A kNb op's
//   neighbour, y at the next scan position, is the next row of the stage: of the next chunk
//   for a chunk's last row, so kNb ops wait for two chunks (1 past the axis's end).
// - AUX: cummax/cummin's indices or winner flags (kAuxOut), stored as each position is; the
//   winner flags of the cummax backward's second pass (kAuxIn), staged with the chunk (a
//   16-byte aligned byte a line and position, R rows of W bytes a chunk).
// - Run ops (logcumsumexp) scan a lane's positions as a run; the outputs join the carry's run
//   with each position's (an exp and a log each, none of them in a chain).
constexpr int kStripChunk = 16384;
constexpr int kStripStages = 8;
// Ops that stage more than one operand: chunks of half the bytes of each, 192 KiB of ring
// (the H100 and H200 give a block up to 227 KiB).
template <int NS>
constexpr int kStripChunkOf = NS == 1 ? kStripChunk : kStripChunk / 2;

template <int U>
struct StripWord {
  typedef unsigned T;
};
template <>
struct StripWord<8> {
  typedef unsigned long long T;
};

template <typename T>
constexpr int kStripWordBytes = sizeof(T) < 4 ? 4 : (int)sizeof(T);  // bytes a lane owns

// The carry of kStripSmemCarry strips: empty (the ring's carries start from it too), and a
// group's total joined onto it: the op's seg_join, or for kGroupFactor ops the linear
// recurrence in double with the factor not carried (only the sum is; the ring's joins keep
// it, LinRec64). Operands by reference: by value, the cummax strips compiled to another
// schedule.
template <typename Cw, class Op>
__device__ __forceinline__ Cw carry_empty(const Op& op) {
  if constexpr (kGroupFactor<Op>)
    return Cw{1.0, 0.0};
  else
    return seg_empty(op);
}
template <class Op, typename Cw>
__device__ __forceinline__ Cw carry_join(const Op& op, const Cw& l, const Cw& r) {
  if constexpr (kGroupFactor<Op>)
    return Cw{1.0, r.a * l.b + r.b};
  else
    return seg_join(op, l, r);
}

// f(i) for each of a thread's RPG rows of a strip chunk that lie within the axis (`valid` of
// them: all but in the last chunk, whose rows take a test each)
template <int RPG, class F>
__device__ __forceinline__ void each_valid_row(int valid, F&& f) {
  if (valid == RPG) {
#pragma unroll
    for (int i = 0; i < RPG; ++i) f(i);
  } else {
#pragma unroll
    for (int i = 0; i < RPG; ++i)
      if (i < valid) f(i);
  }
}

// A strip launch's copy of chunk k of its NS staged operands IN0 .. by cp.async, without a
// commit: R = CH / SW positions of SW bytes of each to `slot` (operand j at j CH); a thread
// copies the same (row, 16 bytes) of every chunk and operand (copy_row, copy_smem; copy_off
// its offset from a chunk's first position in each operand). Positions past n are
// zero-filled (read from position 0). The shared memory offset is summed first: so the strip
// kernels compile to the machine code they had with this code written out.
template <int NS, int CH, int SW, int COPIES, int CHS = CH>
__device__ __forceinline__ void strip_copy(unsigned char* slot, i64 k, i64 n,
                                           const unsigned char* const (&src)[NS],
                                           const i64 (&in_step)[NS], const int (&copy_row)[COPIES],
                                           const int (&copy_smem)[COPIES],
                                           const i64 (&copy_off)[NS][COPIES]) {
  constexpr int R = CH / SW;
  if ((k + 1) * R <= n) {  // a whole chunk (uniform over the block)
#pragma unroll
    for (int j = 0; j < NS; ++j) {
      const unsigned char* chunk = src[j] + k * R * in_step[j];
#pragma unroll
      for (int l = 0; l < COPIES; ++l)
        cp_async16(slot + (j * CHS + copy_smem[l]), chunk + copy_off[j][l]);
    }
  } else {  // the last, partial chunk: rows past n are zero-filled, read from row 0
#pragma unroll
    for (int j = 0; j < NS; ++j) {
      const unsigned char* chunk = src[j] + k * R * in_step[j];
#pragma unroll
      for (int l = 0; l < COPIES; ++l) {
        const bool in = k * R + copy_row[l] < n;
        cp_async16_fill(slot + (j * CHS + copy_smem[l]), in ? chunk + copy_off[j][l] : src[j],
                        in ? 16 : 0);
      }
    }
  }
}

// ... and a thread's pieces of those copies (copy_row, copy_smem, copy_off) for thread t;
// GP bytes of padding after each run of RPG positions (narrow strips, see scan_strip_w).
template <int NS, int SW, int NT, int COPIES, int RPG = 1, int GP = 0>
__device__ __forceinline__ void strip_pieces(int t, const i64 (&in_step)[NS],
                                             int (&copy_row)[COPIES], int (&copy_smem)[COPIES],
                                             i64 (&copy_off)[NS][COPIES]) {
#pragma unroll
  for (int l = 0; l < COPIES; ++l) {
    const int piece = t + l * NT, r = piece / (SW / 16), q = piece % (SW / 16);
    copy_row[l] = r;
    copy_smem[l] = r * SW + q * 16;
    if constexpr (GP != 0) copy_smem[l] += r / RPG * GP;
#pragma unroll
    for (int j = 0; j < NS; ++j) copy_off[j][l] = r * in_step[j] + q * 16;
  }
}

// The copies of max_bwd_strip_w as one object: each operand's scan position 0 and step (scan
// order q at src + q in_step; reverse: from the last position down), a thread's pieces, then
// chunk k's copy. scan_strip_w shares strip_pieces and strip_copy, not the struct: on it its
// 44 entries compiled to other machine code (sm_90), and with the sources' loop a function of
// both, this kernel's did; each keeps the code that was measured (docs/benchmarks.md, round
// 45).
template <typename T, int NS, int CH, int SW, int NT>
struct StripCopies {
  static constexpr int COPIES = CH / 16 / NT;
  static_assert(COPIES >= 1, "a copy a thread at least");
  const unsigned char* src[NS];
  i64 in_step[NS];
  int copy_row[COPIES], copy_smem[COPIES];
  i64 copy_off[NS][COPIES];
  __device__ __forceinline__ StripCopies(const Params& P, const Coord& c) {
    const i64 dir = P.reverse ? -1 : 1;
#pragma unroll
    for (int j = 0; j < NS; ++j) {
      in_step[j] = dir * P.op[j].axis_stride * (i64)sizeof(T);
      src[j] = reinterpret_cast<const unsigned char*>(in_ptr<T>(P, j) +
                                                      dot(c, P.op[j].outer, P.outer.rank));
      if (P.reverse) src[j] -= (P.n - 1) * in_step[j];
    }
    strip_pieces<NS, SW, NT, COPIES>((int)threadIdx.x, in_step, copy_row, copy_smem, copy_off);
  }
  // chunk k (whole, or the last and partial)
  __device__ __forceinline__ void copy(unsigned char* slot, i64 k, i64 n) const {
    strip_copy<NS, CH, SW, COPIES>(slot, k, n, src, in_step, copy_row, copy_smem, copy_off);
  }
};

// NT threads; tot: 2 x NT x C words in shared memory (the row groups' totals, two chunks
// apart; for kStripSmemCarry ops NT x C more, the carry)
template <typename T, typename A, class Op, int SW, int NT, int STAGES = kStripStages>
__device__ __forceinline__ void scan_strip_w(const Params& P,
                                             typename StripCarryOf<Op>::type* tot) {
  typedef typename Op::S S;
  typedef typename WordOf<Op>::type Wd;         // partial scans: runs for run ops
  typedef typename StripCarryOf<Op>::type Cw;  // the groups' totals and the carry
  constexpr int NS = kInputsY<Op>;       // staged operands: IN0 ..
  constexpr int NI = Op::kIn;            // inputs of make and out_value
  constexpr int CH = kStripChunkOf<NS>;
  constexpr int U = kStripWordBytes<T>;  // bytes a lane owns per position
  constexpr int C = U / (int)sizeof(T);  // elements in them
  // one word a lane and position, moved as a word (a memcpy from a byte pointer would be
  // byte loads and stores)
  typedef typename StripWord<U>::T Word;
  constexpr int LPR = SW / U, G = NT / LPR, R = CH / SW, RPG = R / G;
  constexpr int COPIES = CH / 16 / NT;  // 16-byte copies a thread per chunk and operand
  static_assert(G >= 1 && RPG >= 1 && COPIES >= 1, "strip tile shape");
  // Narrow strips (SW < 128, kStripNarrow ops in 2- and 4-byte types: U = 4, so 128 / SW
  // row groups a warp): each group's RPG positions are followed by GP = SW bytes of padding
  // in shared memory, so that the groups of a warp read the same row from distinct banks
  // (SW = 64: group bases 16 words apart mod 32; SW = 32: 8 words). CHS: a staged operand's
  // bytes of a chunk in shared memory (strip_smem's NT U more a stage). 8-byte types' 128-byte
  // strips have two groups a warp too, unpadded: a warp's 8-byte loads take two passes anyway.
  constexpr int GP = SW < 128 ? SW : 0, CHS = CH + G * GP;
  static_assert(GP == 0 || (kStripNarrow<Op> && U == 4), "padded groups: kStripNarrow ops");
  static_assert(!(Op::kAuxIn && Op::kAuxOut), "AUX is read or written");
  // kAuxIn: the winner flags are staged too, a chunk's R rows of LW bytes (a byte a line)
  constexpr int LW = SW / (int)sizeof(T), FQ = LW / 16;  // a row's bytes, 16-byte pieces
  constexpr int FB = Op::kAuxIn ? R * LW : 0;            // flag bytes a chunk
  constexpr int FCOPIES = (R * FQ + NT - 1) / NT;        // 16-byte flag copies a thread
  constexpr int SLOT = NS * CHS + FB;                    // a stage's bytes
  static_assert(!Op::kAuxIn || FQ >= 1, "flag rows of whole 16-byte pieces");
  // chunks k (and k + 1 for the neighbour) have landed
  constexpr int kWait = Op::kNb ? STAGES - 3 : STAGES - 2;
  extern __shared__ int4 strip_ring[];  // STAGES x (NS chunks of R positions x SW bytes, flags)
  unsigned char* ring = reinterpret_cast<unsigned char*>(strip_ring);
  const Op op{P.mode};
  const int t = threadIdx.x, col = t % LPR, g = t / LPR;
  const i64 n = P.n;
  const i64 nch = (n + R - 1) / R;
  const i64 line0 = (i64)blockIdx.x * (SW / (int)sizeof(T));
  Coord c;
  unravel(line0, P.outer, c);
  // scan order q sits at base + q * step (reverse: from the last position down)
  const i64 dir = P.reverse ? -1 : 1;
  const unsigned char* src[NS];
  i64 in_step[NS];
#pragma unroll
  for (int j = 0; j < NS; ++j) {
    in_step[j] = dir * P.op[j].axis_stride * (i64)sizeof(T);
    src[j] = reinterpret_cast<const unsigned char*>(in_ptr<T>(P, j) +
                                                    dot(c, P.op[j].outer, P.outer.rank));
    if (P.reverse) src[j] -= (n - 1) * in_step[j];
  }
  unsigned char* dst = reinterpret_cast<unsigned char*>(static_cast<T*>(P.op[OUT].ptr) +
                                                        dot(c, P.op[OUT].outer, P.outer.rank));
  const i64 out_step = dir * P.op[OUT].axis_stride * (i64)sizeof(T);
  if (P.reverse) dst -= (n - 1) * out_step;
  // AUX: the element offset of this lane's first line (physical positions index the axis);
  // the staged flags' first position and step, as the inputs'
  [[maybe_unused]] i64 aux_base = 0, fstep = 0;
  [[maybe_unused]] const unsigned char* fsrc = nullptr;
  if constexpr (Op::kAuxOut)
    aux_base = dot(c, P.op[AUX].outer, P.outer.rank) + col * C;
  // kFlagOut ops (the winner flags alone: their launches always have AUX and never OUT,
  // _kernels._strip_operands): this lane's flag bytes of scan position 0 and the step to the
  // next position, as the outputs' (not an int64 offset a position)
  [[maybe_unused]] unsigned char* fdst = nullptr;
  [[maybe_unused]] i64 fout_step = 0;
  if constexpr (kFlagOut<Op>) {
    fout_step = dir * P.op[AUX].axis_stride;
    fdst = static_cast<unsigned char*>(P.op[AUX].ptr) + dot(c, P.op[AUX].outer, P.outer.rank) +
           col * C;
    if (P.reverse) fdst -= (n - 1) * fout_step;
  }
  // cummax/cummin's int64 indices (MaxOp, whose mode never has the flags' bit; the indices
  // are optional): where this lane's first index of scan position 0 goes and the step to the
  // next position, as for the flags above: no int64 offset to compute a position
  [[maybe_unused]] i64* idst = nullptr;
  [[maybe_unused]] i64 istep = 0;
  if constexpr (Op::kAuxOut && !kFlagOut<Op>) {
    if (P.op[AUX].ptr != nullptr) {
      istep = dir * P.op[AUX].axis_stride;
      idst = static_cast<i64*>(P.op[AUX].ptr) + aux_base;
      if (P.reverse) idst -= (n - 1) * istep;
    }
  }
  if constexpr (Op::kAuxIn) {
    fstep = dir * P.op[AUX].axis_stride;
    fsrc = static_cast<const unsigned char*>(P.op[AUX].ptr) + dot(c, P.op[AUX].outer,
                                                                  P.outer.rank);
    if (P.reverse) fsrc -= (n - 1) * fstep;
  }
  // a thread's copies are the same (row, 16 bytes) of every chunk and operand
  int copy_row[COPIES], copy_smem[COPIES];
  i64 copy_off[NS][COPIES];
  strip_pieces<NS, SW, NT, COPIES, RPG, GP>(t, in_step, copy_row, copy_smem, copy_off);
  auto issue = [&](i64 k) {
    if (k < nch) {
      unsigned char* slot = ring + (int)(k % STAGES) * SLOT;
      if constexpr (Op::kAuxIn) {
#pragma unroll
        for (int l = 0; l < FCOPIES; ++l) {
          const int piece = t + l * NT, r = piece / FQ, q = piece % FQ;
          if (R * FQ % NT == 0 || piece < R * FQ) {
            const bool in = k * R + r < n;
            cp_async16_fill(slot + NS * CH + r * LW + q * 16,
                            in ? fsrc + (k * R + r) * fstep + q * 16 : fsrc, in ? 16 : 0);
          }
        }
      }
      strip_copy<NS, CH, SW, COPIES, CHS>(slot, k, n, src, in_step, copy_row, copy_smem,
                                          copy_off);
    }
    cp_async_commit();  // an empty group past the end keeps the wait counts uniform
  };
#pragma unroll
  for (int k = 0; k < STAGES - 1; ++k) issue(k);
  [[maybe_unused]] Cw carry[C];  // kStripSmemCarry ops keep theirs in shared memory
  if constexpr (!kStripSmemCarry<Op>) {
#pragma unroll
    for (int j = 0; j < C; ++j) carry[j] = seg_empty(op);
  }
  for (i64 k = 0; k < nch; ++k) {
    cp_async_wait<kWait>();
    // chunk k is in shared memory for every thread, and every thread is done with the slot
    // that the next copy refills (read in the previous iteration)
    __syncthreads();
    issue(k + STAGES - 1);
    const unsigned char* slot =
        ring + (int)(k % STAGES) * SLOT + g * (RPG * SW + GP) + col * U;
    const i64 row0 = k * R + g * RPG;  // scan position of this thread's first row
    // the inputs of row i, element j
    auto inputs = [&](int i, A (&a)[NI][C]) {
#pragma unroll
      for (int s = 0; s < NI; ++s) {
        const Word w = *reinterpret_cast<const Word*>(slot + s * CHS + i * SW);
        T e[C];
        memcpy(e, &w, U);
#pragma unroll
        for (int j = 0; j < C; ++j) a[s][j] = to_acc(e[j]);
      }
    };
    // y at the next scan position (kNb), 1 past the axis's end
    auto neighbour = [&](int i, A (&nb)[C]) {
#pragma unroll
      for (int j = 0; j < C; ++j) nb[j] = A(1);
      if constexpr (Op::kNb) {
        if (row0 + i + 1 < n) {
          const unsigned char* p =
              g * RPG + i + 1 < R ? slot + IN2 * CH + (i + 1) * SW
                                  : ring + (int)((k + 1) % STAGES) * SLOT + IN2 * CH + col * U;
          const Word w = *reinterpret_cast<const Word*>(p);
          T e[C];
          memcpy(e, &w, U);
#pragma unroll
          for (int j = 0; j < C; ++j) nb[j] = to_acc(e[j]);
        }
      }
    };
    // physical position of row i
    auto phys_of = [&](int i) { return P.reverse ? n - 1 - (row0 + i) : row0 + i; };
    // kAuxIn: the flag of row i, element j, from the stage (0 past n)
    [[maybe_unused]] const unsigned char* fl =
        ring + (int)(k % STAGES) * SLOT + NS * CH + g * RPG * LW + col * C;
    auto flag = [&](int i, int j) -> unsigned char {
      if constexpr (Op::kAuxIn)
        return fl[i * LW + j];
      else
        return 0;
    };
    Wd v[RPG][C];
#pragma unroll
    for (int i = 0; i < RPG; ++i) {
      A a[NI][C];
      A nb[C];
      inputs(i, a);
      if constexpr (kNbMake<Op>) neighbour(i, nb);
      const i64 p = Op::kAuxOut ? phys_of(i) : 0;
#pragma unroll
      for (int j = 0; j < C; ++j) {
        A aj[NI];
#pragma unroll
        for (int s = 0; s < NI; ++s) aj[s] = a[s][j];
        if (i) v[i][j] = v[i - 1][j];
        seg_push(op, v[i][j], aj, kNbMake<Op> ? nb[j] : A(1), flag(i, j), i == 0, p);
      }
    }
    // kGroupFactor ops: the group's factor from its end points
    [[maybe_unused]] A nb_last[C], a0[NI][C];
    if constexpr (kGroupFactor<Op>) {
      neighbour(RPG - 1, nb_last);
      inputs(0, a0);
    }
#pragma unroll
    for (int j = 0; j < C; ++j) {
      if constexpr (kGroupFactor<Op>) {
        tot[(((k & 1) * G + g) * C + j) * LPR + col] =
            Cw{group_factor(nb_last[j], a0[IN2][j]), (double)v[RPG - 1][j].b};
      } else {
        tot[(((k & 1) * G + g) * C + j) * LPR + col] = v[RPG - 1][j];
      }
    }
    __syncthreads();  // this half of tot is next written two chunks later, past a barrier
    Cw pre[C];
    if constexpr (kStripSmemCarry<Op>) {
      // The carry into the chunk (kept in shared memory past tot's two halves by the last
      // group of the chunk before, two chunks apart), then the groups before this thread's.
      // kGroupFactor ops: each group's factor scales what comes before it, and the factors
      // themselves are not carried (a is unused past here).
      Cw* const cbuf = tot + 2 * NT * C;
#pragma unroll
      for (int j = 0; j < C; ++j) {
        Cw p = k ? cbuf[((k & 1) * C + j) * LPR + col] : carry_empty<Cw>(op);
        for (int h = 0; h < g; ++h)
          p = carry_join(op, p, tot[(((k & 1) * G + h) * C + j) * LPR + col]);
        pre[j] = p;
        if (g == G - 1)
          cbuf[(((k + 1) & 1) * C + j) * LPR + col] =
              carry_join(op, p, tot[(((k & 1) * G + g) * C + j) * LPR + col]);
      }
    } else {
#pragma unroll
      for (int j = 0; j < C; ++j) pre[j] = carry[j];
#pragma unroll
      for (int h = 0; h < G; ++h) {
#pragma unroll
        for (int j = 0; j < C; ++j) {
          const Cw th = tot[(((k & 1) * G + h) * C + j) * LPR + col];
          if (h < g) pre[j] = seg_join(op, pre[j], th);
          carry[j] = seg_join(op, carry[j], th);
        }
      }
    }
    // the carry into this thread's group as the group's own word (kGroupFactor ops: its
    // factor, unused past here, is not narrowed, as it may be past A's range)
    auto pre_of = [&](int j) -> Wd {
      if constexpr (kGroupFactor<Op>)
        return Wd{A(1), A(pre[j].b)};
      else
        return pre[j];
    };
    unsigned char* out = dst + row0 * out_step + col * U;
    // kIdx ops: this thread's first row's indices (null without them)
    [[maybe_unused]] i64* const irow = idst != nullptr ? idst + row0 * istep : nullptr;
    // rows of this thread within n: all of them but in the last chunk
    const int valid = (int)min((i64)RPG, max((i64)0, n - row0));
    auto store = [&](int i) {
      A a[NI][C];
      A nb[C];
      inputs(i, a);
      if constexpr (kFlagOut<Op>) {
        // a byte a line: whether scan position row0 + i is its own running winner (the
        // generic path below took about 45 instructions a position in f32: the int64
        // physical offset, and the tests of which outputs the launch has)
        unsigned char* f = fdst + (row0 + i) * fout_step;
#pragma unroll
        for (int j = 0; j < C; ++j) {
          const S excl = i ? op.combine(pre_of(j), v[i - 1][j]) : pre_of(j);
          f[j] = op.own(excl, &a[0][j], row0 + i) ? 1 : 0;
        }
        return;
      }
      if constexpr (Op::kNb) neighbour(i, nb);
      T o[C];
      // int64 indices of two lines a lane (2-byte types): stored together below
      constexpr bool kIdx = Op::kAuxOut && !kFlagOut<Op>;  // cummax/cummin's indices
      constexpr bool kPair = kIdx && C == 2;
      [[maybe_unused]] i64 win[C];  // the indices of the lane's lines
#pragma unroll
      for (int j = 0; j < C; ++j) {
        A aj[NI];
#pragma unroll
        for (int s = 0; s < NI; ++s) aj[s] = a[s][j];
        if constexpr (kRunOp<Op>) {
          o[j] = from_acc<T>(op.value(op.join(pre_of(j), v[i][j])));
        } else {
          const S inc = op.combine(pre_of(j), v[i][j]);
          const S excl = i ? op.combine(pre_of(j), v[i - 1][j]) : pre_of(j);
          o[j] = from_acc<T>(op.out_value(inc, excl, aj, Op::kNb ? nb[j] : A(1), flag(i, j)));
          if constexpr (kIdx) win[j] = op.winner(inc, excl, aj, row0 + i, phys_of(i));
        }
      }
      if constexpr (kIdx) {
        // the indices through the lane's own pointer (no int64 offset a position); in 2-byte
        // types a lane's two in one 16-byte store where aligned (as PTX: a longlong2 store
        // compiled to two 8-byte ones), else one store each (round 41: bf16 over 4096 x 8192
        // along dim 0 on an H200 217.4 -> 210.0 us)
        if (irow != nullptr) {
          i64* q = irow + i * istep;
          if constexpr (kPair) {
            if ((reinterpret_cast<size_t>(q) & 15) == 0) {
              asm volatile("st.global.v2.b64 [%0], {%1, %2};" ::"l"(q), "l"(win[0]),
                           "l"(win[1])
                           : "memory");
            } else {
              q[0] = win[0];
              q[1] = win[1];
            }
          } else {
#pragma unroll
            for (int j = 0; j < C; ++j) q[j] = win[j];
          }
        }
      }
      Word word;  // every launch but the winner flags' (above) has OUT
      memcpy(&word, o, U);
      *reinterpret_cast<Word*>(out + i * out_step) = word;
    };
    each_valid_row<RPG>(valid, store);
  }
}

// P.width: the strip's bytes (128 or 256). 12 chunks in flight (192 KiB) measured no faster
// than 8 on the H100 (f32 97.8 / 97.8 us, bf16 52.4 / 52.5 us over 4096 x 8192 along dim 0).
template <typename T, typename A, class Op, int NT = kBlock, int STAGES = kStripStages>
__device__ void scan_strip(const Params& P) {
  // kStripSmemCarry ops: and their carry (two chunks' of each line)
  __shared__ typename StripCarryOf<Op>::type
      tot[(kStripSmemCarry<Op> ? 3 : 2) * NT * (kStripWordBytes<T> / sizeof(T))];
  if (P.width == 256)
    scan_strip_w<T, A, Op, 256, NT, STAGES>(P, tot);
  else
    scan_strip_w<T, A, Op, 128, NT, STAGES>(P, tot);
}
// Strips several an SM (scan_<op>_strip6, _kernels.STRIP_MANY_OPS): kStripStagesMany chunks in
// flight (96 KiB), so that two blocks share an SM; the host takes it where the strips are at
// least two an SM. On an H200 along dim 0 (docs/benchmarks.md, round 47): bf16 512 x 65536
// 41.3 -> 38.9 us, f32 256 x 131072 79.2 -> 73.9, bf16 64 x 524288 77.2 -> 50.8; with a block
// an SM, 8 stages are as fast or faster.
constexpr int kStripStagesMany = 6;
template <typename T, typename A, class Op>
__device__ void scan_strip6(const Params& P) {
  static_assert(kInputsY<Op> == 1, "one staged operand");
  scan_strip<T, A, Op, kBlock, kStripStagesMany>(P);
}
// Strips of P.width = 64 or 32 bytes (scan_<op>_strip_narrow, kStripNarrow ops in 2- and
// 4-byte types; _kernels.STRIP_NARROW_OPS): an entry of their own, so that scan_strip's
// entries keep the machine code that was measured. 8-byte types have the entry but never
// take it.
template <typename T, typename A, class Op>
__device__ void scan_strip_narrow(const Params& P) {
  static_assert(kStripNarrow<Op>, "narrow strips: kStripNarrow ops");
  if constexpr (sizeof(T) <= 4) {
    __shared__ typename StripCarryOf<Op>::type tot[2 * kBlock * (4 / sizeof(T))];
    if (P.width == 64)
      scan_strip_w<T, A, Op, 64, kBlock>(P, tot);
    else
      scan_strip_w<T, A, Op, 32, kBlock>(P, tot);
  }
}
template <typename T, typename A, class Op>
__device__ void scan_strip512(const Params& P) {
  scan_strip<T, A, Op, 512>(P);
}

// ------------------------ the cummax/cummin backward along a strided axis (max_bwd_strip)
// Strips of adjacent lines as scan_strip takes them (the host's condition: _kernels._strip_width
// of "max_bwd"), x and dy staged (IN0 = x, IN1 = dy, OUT = dx; `reverse` and `mode` those of
// the forward), chunks of CH bytes of each in the forward's scan order, STAGES in flight: one
// pass, as max_bwd_ring_dir takes a row. A chunk takes two exchanges of the row groups' states
// a line, in shared memory:
//  - their running keys (MaxFlagOp), on from the line's carry, give each of a thread's
//    positions its winner flag (a bit a position, in registers);
//  - their segmented sums of dy (whether the group holds a winner; its dy before the first)
//    give each thread the dy after its positions up to the next winner in the chunk, and it
//    walks its positions from its last: a winner's dx is its dy and those after it up to the
//    next winner; every other position's is 0.
// A line's last winner in a chunk stays pending (its scan position and partial dx, taken over
// by the line's thread of group 0), gains each later chunk's dy before that chunk's first
// winner (all of its dy where it has none), and is stored once a later chunk has a winner or
// the axis ends (its partial was stored with its position first, past a block barrier).
// Positions past n hold x = 0 and dy = 0: they never win (masked) and are never stored. The
// two passes it replaces moved a flag byte a position through memory both ways: 8 bytes a
// bf16 position where this moves 6. The keys' combine is one max.NaN below f64, the tie break
// a template argument (an instantiation each) and cummin's keys are x with its sign bits
// flipped as loaded: on an H200 (docs/benchmarks.md, round 45) bf16 over 4096 x 8192 along
// dim 0 took 67.3 us against 84.3 with MaxFlagOp's combine, the mode's tests at run time and a
// second walk for the thread's dy before its first winner (f32 106.8 against 108.0). Blocks of
// 512 threads (twice the exchanges a position) were slower: bf16 88.4, f64 266.8 against
// 206.1.
//
// The running key's combine in max_bwd_strip_w (MaxFlagOp's: NaN sticks): one instruction
// in float (max.NaN: NaN where either is; of two zeros either, and they compare equal).
__device__ __forceinline__ float key_max(float l, float r) {
  float m;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(m) : "f"(l), "f"(r));
  return m;
}
__device__ __forceinline__ double key_max(double l, double r) {
  return MaxFlagOp<double>{0}.combine(l, r);
}
// A later key r wins against the running key l (key_wins, the tie break a template argument)
template <bool kTieLast, typename A>
__device__ __forceinline__ bool key_beats(A r, A l) {
  return is_nan(r) | (kTieLast ? r >= l : r > l);
}
// Whether bit b of a word is set, as an and and a compare in PTX: one instruction, where the
// compiler made a test of a bit of a mask built a bit at a time a shift, an and and a compare
// (round 46, docs/benchmarks.md: the ring's bf16 chunk, max_bwd_ring_dir, 1147 -> 1072
// instructions; the strips', max_bwd_strip_w, 1247 -> 1169 and on an H200 68.2 -> 63.2 us)
__device__ __forceinline__ bool bit_set(unsigned m, int b) {
  unsigned t;
  asm("and.b32 %0, %1, %2;" : "=r"(t) : "r"(m), "r"(1u << b));
  return t != 0;
}
__device__ __forceinline__ bool bit_set(unsigned long long m, int b) {
  unsigned long long t;
  asm("and.b64 %0, %1, %2;" : "=l"(t) : "l"(m), "l"(1ull << b));
  return t != 0;
}
// The sign bits of the elements in a word (cummin's keys: x negated as loaded)
template <typename T, typename W>
__device__ __forceinline__ constexpr W sign_bits() {
  W m = 0;
  for (int j = 0; j < (int)(sizeof(W) / sizeof(T)); ++j)
    m |= W(1) << (8 * (int)sizeof(T) * (j + 1) - 1);
  return m;
}
// a thread's states of its C lines, exchanged as one vector
template <typename A, int C>
struct alignas(sizeof(A) * C) StripKeys {
  A v[C];
};
template <typename A, int C>
struct alignas(2 * sizeof(A) * C) StripSegs {
  Pair<A> v[C];
};

// The exchanges of max_bwd_strip_w in shared memory: the row groups' running keys of the
// chunk and their segmented sums (a thread's each), and a line's last winner in the chunk (its
// scan position and partial dx; C x LPR lines, at most 256 bytes of elements).
template <typename T, typename A, int NT>
struct MaxBwdStripShared {
  static constexpr int C = kStripWordBytes<T> / (int)sizeof(T), L = 256 / (int)sizeof(T);
  StripKeys<A, C> key_tot[NT];
  StripSegs<A, C> seg_tot[NT];
  i64 pend_q[L];
  A pend_v[L];
};

template <typename T, typename A, int SW, int NT, int CH, int STAGES, bool kTieLast>
__device__ __forceinline__ void max_bwd_strip_w(const Params& P,
                                                MaxBwdStripShared<T, A, NT>& sh) {
  typedef Pair<A> S2;
  constexpr int NS = 2;                  // x, dy
  constexpr int U = kStripWordBytes<T>;  // bytes a lane owns per position
  constexpr int C = U / (int)sizeof(T);  // elements in them
  typedef typename StripWord<U>::T Word;
  constexpr int LPR = SW / U, G = NT / LPR, R = CH / SW, RPG = R / G, SLOT = NS * CH;
  static_assert(G >= 1 && RPG >= 2 && RPG <= 32, "strip tile shape");
  static_assert(C * LPR <= MaxBwdStripShared<T, A, NT>::L, "a strip's lines");
  extern __shared__ int4 strip_ring[];  // STAGES x (x, dy: R positions x SW bytes each)
  StripKeys<A, C>* const key_tot = sh.key_tot;
  StripSegs<A, C>* const seg_tot = sh.seg_tot;
  i64* const pend_q = sh.pend_q;
  A* const pend_v = sh.pend_v;
  unsigned char* ring = reinterpret_cast<unsigned char*>(strip_ring);
  const int t = threadIdx.x, col = t % LPR, g = t / LPR;
  const i64 n = P.n, nch = (n + R - 1) / R;
  const Word flip = (P.mode & 1) ? sign_bits<T, Word>() : Word(0);  // cummin: keys -x
  Coord c;
  unravel((i64)blockIdx.x * (SW / (int)sizeof(T)), P.outer, c);
  const StripCopies<T, NS, CH, SW, NT> copies(P, c);
  const i64 out_step = (P.reverse ? -1 : 1) * P.op[OUT].axis_stride * (i64)sizeof(T);
  unsigned char* dst = reinterpret_cast<unsigned char*>(static_cast<T*>(P.op[OUT].ptr) +
                                                        dot(c, P.op[OUT].outer, P.outer.rank)) +
                       col * U;
  if (P.reverse) dst -= (n - 1) * out_step;
  auto issue = [&](i64 k) {
    if (k < nch) copies.copy(ring + (int)(k % STAGES) * SLOT, k, n);
    cp_async_commit();  // an empty group past the end keeps the wait counts uniform
  };
#pragma unroll
  for (int k = 0; k < STAGES - 1; ++k) issue(k);
  // a line's running key before the chunk; its pending winner (group 0's threads: the scan
  // position, -1 for none, and dx so far), and whether the chunk before had a winner
  A carry[C], pv[C];
  i64 pq[C];
  bool take[C];
#pragma unroll
  for (int j = 0; j < C; ++j) {
    carry[j] = -inf<A>();  // MaxFlagOp's identity
    pv[j] = A(0);
    pq[j] = -1;
    take[j] = false;
  }
  for (i64 k = 0; k < nch; ++k) {
    cp_async_wait<STAGES - 2>();
    // chunk k is in shared memory for every thread, every thread is done with the slot that
    // the next copy refills, and the chunk before's pending winners are written
    __syncthreads();
    issue(k + STAGES - 1);
    const unsigned char* slot = ring + (int)(k % STAGES) * SLOT + g * RPG * SW + col * U;
    const i64 row0 = k * R + g * RPG;  // scan position of this thread's first row
    const int valid = (int)min((i64)RPG, max((i64)0, n - row0));
    const unsigned vmask = valid >= 32 ? ~0u : (1u << valid) - 1u;
    if (g == 0) {
#pragma unroll
      for (int j = 0; j < C; ++j) {
        if (take[j]) {
          pq[j] = pend_q[j * LPR + col];
          pv[j] = pend_v[j * LPR + col];
        }
      }
    }
    // operand s of row i as accumulators, its bits flipped by `fl` first
    auto load = [&](int s, int i, Word fl, A (&a)[C]) {
      const Word w = *reinterpret_cast<const Word*>(slot + s * CH + i * SW) ^ fl;
      T e[C];
      memcpy(e, &w, U);
#pragma unroll
      for (int j = 0; j < C; ++j) a[j] = to_acc(e[j]);
    };
    A key[RPG][C];
#pragma unroll
    for (int i = 0; i < RPG; ++i) load(0, i, flip, key[i]);
    {
      StripKeys<A, C> m;  // the thread's running key (two chains, then joined)
#pragma unroll
      for (int j = 0; j < C; ++j) {
        A m0 = key[0][j], m1 = key[1][j];
#pragma unroll
        for (int i = 2; i < RPG; i += 2) {
          m0 = key_max(m0, key[i][j]);
          if (i + 1 < RPG) m1 = key_max(m1, key[i + 1][j]);
        }
        m.v[j] = key_max(m0, m1);
      }
      key_tot[t] = m;
    }
    __syncthreads();
    // the winner flags: each position's key against the line's running key before it
    unsigned own[C];
    {
      StripKeys<A, C> run;
#pragma unroll
      for (int j = 0; j < C; ++j) run.v[j] = carry[j];
#pragma unroll
      for (int h = 0; h < G; ++h) {
        const StripKeys<A, C> th = key_tot[h * LPR + col];
#pragma unroll
        for (int j = 0; j < C; ++j) {
          if (h < g) run.v[j] = key_max(run.v[j], th.v[j]);
          carry[j] = key_max(carry[j], th.v[j]);
        }
      }
#pragma unroll
      for (int j = 0; j < C; ++j) {
        unsigned f = row0 == 0 ? 1u : 0u;  // the axis's first position wins
        A r = run.v[j];
#pragma unroll
        for (int i = 0; i < RPG; ++i) {
          if (key_beats<kTieLast>(key[i][j], r)) f |= 1u << i;
          r = key_max(r, key[i][j]);
        }
        own[j] = f & vmask;
      }
    }
    // dy, and this thread's segmented state a line: no winner in its rows (a = 1), its dy
    // before its first winner (b)
    A d[RPG][C];
#pragma unroll
    for (int i = 0; i < RPG; ++i) load(1, i, Word(0), d[i]);
    StripSegs<A, C> mine;
#pragma unroll
    for (int j = 0; j < C; ++j) {
      const unsigned before = (own[j] & (0u - own[j])) - 1u;  // all bits without a winner
      A b = A(0);
#pragma unroll
      for (int i = 0; i < RPG; ++i)
        if (bit_set(before, i)) b += d[i][j];
      mine.v[j] = S2{own[j] ? A(0) : A(1), b};
    }
    seg_tot[t] = mine;
    __syncthreads();
    // the groups after this thread's, to the chunk's end: whether they hold no winner, and
    // their dy up to the first (SegBwdOp's combine, later first, with its product of a as a
    // select: a winner cuts off an inf or NaN after it; SegBwdOp itself compiled to other
    // code here, 9312 -> 9248 bf16 instructions, not measured)
    StripSegs<A, C> e;
#pragma unroll
    for (int j = 0; j < C; ++j) e.v[j] = S2{A(1), A(0)};
#pragma unroll
    for (int h = G - 1; h > 0; --h) {
      if (h > g) {
        const StripSegs<A, C> th = seg_tot[h * LPR + col];
#pragma unroll
        for (int j = 0; j < C; ++j) {
          const S2 x = th.v[j];
          e.v[j] = S2{x.a != A(0) ? e.v[j].a : A(0), x.a != A(0) ? x.b + e.v[j].b : x.b};
        }
      }
    }
    T o[RPG][C];
#pragma unroll
    for (int j = 0; j < C; ++j) {
      const S2 ej = e.v[j];
      // this thread's last winner where none follows it in the chunk: it becomes pending
      const int lw = own[j] && ej.a != A(0) ? 31 - __clz((int)own[j]) : -1;
      const unsigned top = lw >= 0 ? 1u << lw : 0u;
      A vnext = ej.b, lv = A(0);
#pragma unroll
      for (int i = RPG - 1; i >= 0; --i) {
        const bool won = bit_set(own[j], i);
        const A sum = d[i][j] + vnext;
        const A v = won ? sum : A(0);
        vnext = won ? A(0) : sum;
        if (bit_set(top, i)) lv = v;
        o[i][j] = from_acc<T>(v);
      }
      if (lw >= 0) {
        pend_q[j * LPR + col] = row0 + lw;
        pend_v[j * LPR + col] = lv;
      }
      if (g == 0) {
        // the line's pending winner takes the chunk's dy before its first winner; it is
        // final where the chunk has a winner or the axis ends here
        const S2 mj = mine.v[j];
        const bool has = mj.a == A(0) || ej.a == A(0);
        if (pq[j] >= 0) {
          pv[j] += mj.a != A(0) ? mj.b + ej.b : mj.b;
          if (has || k == nch - 1)
            *reinterpret_cast<T*>(dst + pq[j] * out_step + j * (int)sizeof(T)) =
                from_acc<T>(pv[j]);
        }
        take[j] = has;
      }
    }
    unsigned char* out = dst + row0 * out_step;
    auto store = [&](int i) {
      Word w;
      memcpy(&w, o[i], U);
      *reinterpret_cast<Word*>(out + i * out_step) = w;
    };
    each_valid_row<RPG>(valid, store);
  }
}

// P.width: the strip's bytes (128 or 256). Chunks of 16 KiB of x and of dy, 4 in flight
// (128 KiB of ring; the host's strip_smem): on an H200 over 4096 x 8192 along dim 0 (round 45,
// docs/benchmarks.md) bf16 took 84.4 us against 111.5 in chunks of 8 KiB, 8 in flight, f32
// 108.0 against 109.5, f64 205.5 against 267.1; over 512 x 32768, 46.0 against 53.0, 61.7
// against 69.0 and 114.0 against 152.3.
constexpr int kMaxBwdStripChunk = 16384;
template <typename T, typename A>
__device__ void scan_max_bwd_strip(const Params& P) {
  constexpr int CH = kMaxBwdStripChunk, STAGES = 131072 / (2 * CH), NT = kBlock;
  __shared__ MaxBwdStripShared<T, A, NT> sh;
  const bool tie_last = (P.mode & 2) != 0;
  if (P.width == 256) {
    if (tie_last)
      max_bwd_strip_w<T, A, 256, NT, CH, STAGES, true>(P, sh);
    else
      max_bwd_strip_w<T, A, 256, NT, CH, STAGES, false>(P, sh);
  } else {
    if (tie_last)
      max_bwd_strip_w<T, A, 128, NT, CH, STAGES, true>(P, sh);
    else
      max_bwd_strip_w<T, A, 128, NT, CH, STAGES, false>(P, sh);
  }
}



// ------------------------------------------------ contiguous rows through a ring (ring)
// cumsum and cumprod along a contiguous axis, and the cumprod and logcumsumexp backward (the
// host's condition, _kernels._ring_rows and _ring_grid: the op's operands only, axis
// stride 1, rows of at least one chunk and a whole number of 16-byte vectors, the outer dims
// one of a stride of whole vectors, 16-byte aligned data, enough rows for the SMs). Block b
// takes rows b, b + gridDim.x, ... and walks each in chunks, kRingStagesOf<NIN> chunks in
// flight at once, copied by cp.async into a ring in dynamic shared memory while the block
// scans the oldest. A chunk is kRingChunkOf<NIN> bytes of each of the NIN staged operands
// (x for the forward ops; dy, x and y for the backward ones, y at the same positions: the
// cumprod backward's neighbour is read from the stage). Warp w scans the chunk's w-th eighth
// in scan order, J vectors a lane (a 32-lane shuffle scan per vector row, or kRingLaneRun),
// the 8 warps' totals meet in shared memory and every lane folds those before its own onto
// the row's running carry (with three operands, lanes 0-7 scan the totals by shuffles;
// deterministic either way). Reverse scans walk each row's chunks from its end, each
// chunk's vectors and elements mirrored. Only the last chunk of a row in scan order can be
// partial (a branch uniform over the block): bytes outside the row are zero-filled and never
// stored; they come after every valid element in scan order. The copy and scan sides each
// carry their (row, chunk) position from item to item, so no thread divides per chunk.
constexpr int kRingChunk = 16384;
constexpr int kRingStages = 6;
// Bytes of each operand a chunk, and chunks in flight: 96 KiB of ring in every case (two blocks
// an SM; NIN 1, 2, 3: 6, 3, 4 chunks of 16, 16 and 8 KiB an operand).
template <int NIN>
constexpr int kRingChunkOf = NIN == 1 ? kRingChunk : NIN == 2 ? 16384 : 8192;
template <int NIN, int CH = kRingChunkOf<NIN>>
constexpr int kRingStagesOf = kRingStages * kRingChunk / (NIN * CH);
// Ops whose lanes scan their J vectors in a row (one shuffle scan a chunk instead of J): those
// whose combine is dear, the logcumsumexp backward's running minimum (an exp or two; on an
// H200, f32 4096 x 8192 352.0 -> 300.0 us), which takes the ring in f32 / f64 only where
// RING_BACKWARD lists them (not by default: its warp rows took 199 us). Not the
// linear recurrences (cumprod's backward: its stores, a lane's vectors apart, cost more than
// the shuffles save: bf16 4096 x 8192 75.1 -> 81.4 us).
template <class Op>
constexpr bool kRingLaneRun = false;
template <typename A>
constexpr bool kRingLaneRun<LseBwdOp<A>> = true;
template <typename A>
constexpr bool kRingLaneRun<LseBwdGroupOp<A>> = true;

// kGroupFactor ops' joins of lanes, warps and chunks: LinRec in double.
struct LinRec64 : LinRec<double> {};

// A ring block's join of its warps' chunk totals `tot_of` (kBlock / 32 of them) by jop's
// combine: those before warp w's onto `pre`, all of them onto `row_carry`. Lanes 0-7 scan the
// 8 totals by shuffles: 5 combines a lane instead of 16.
template <class JOp, typename Cw>
__device__ __forceinline__ void ring_join_warps(const JOp& jop, const Cw* tot_of, int lane, int w,
                                                Cw& pre, Cw& row_carry) {
  constexpr int W = kBlock / 32;
  Cw tot = lane < W ? tot_of[lane] : jop.identity();
#pragma unroll
  for (int d = 1; d < W; d <<= 1) {
    const Cw o = shfl_up(tot, d);
    if (lane >= d) tot = jop.combine(o, tot);
  }
  const Cw before = shfl_idx(tot, w ? w - 1 : 0);
  if (w) pre = jop.combine(pre, before);
  row_carry = jop.combine(row_carry, shfl_idx(tot, W - 1));
}

// Where a ring keeps the 16-byte vector at byte offset `off` of a chunk: `off` itself, or
// (kSwz: a shift S >= 3) the vector's index v with its low three bits XORed with bits S..S+2,
// a permutation within each 128-byte line. Lanes that read vectors 2^S apart (a run of 2^S
// vectors a lane, the j-th of each) then hit eight different 16-byte bank groups, where
// unswizzled they would all hit one.
template <int kSwz>
__device__ __forceinline__ int ring_swizzle(int off) {
  if constexpr (kSwz == 0) {
    return off;
  } else {
    const int v = off >> 4;
    return (v ^ ((v >> kSwz) & 7)) << 4;
  }
}

// The copy side of a ring (scan_ring, scan_max_bwd_ring): block b takes rows b, b + gridDim.x,
// ... of the NIN operands IN0 .. IN0 + NIN - 1 and copies each row's chunks of CH bytes in scan
// order (kRev: from the row's end) by cp.async into slots of NIN * CH bytes (operand k at
// k * CH, its vectors placed by ring_swizzle<kSwz>), STAGES slots in turn; thread t copies
// vectors t, t + kBlock, ... of each. issue() copies the next chunk and closes a group: an
// empty one past the last row, so that the wait counts stay uniform. Only a row's last chunk
// in scan order can be partial: its bytes outside the row are zero-filled, and come after
// every valid element in scan order. The rows of each operand are one stride apart (the host's condition:
// the outer dims coalesce to one).
template <typename T, int NIN, int CH, int STAGES, bool kRev, int kSwz = 0>
struct RingFeed {
  static constexpr int SLOT = CH * NIN;
  static constexpr int COPIES = CH / 16 / kBlock;  // 16-byte copies a thread, chunk and operand
  static_assert(COPIES >= 1 && CH % (16 * kBlock) == 0, "ring chunk");
  const Params& P;
  unsigned char* ring;
  const i64 rows, rowb, last;  // rows; a row's bytes; its last chunk in scan order
  const bool ragged;           // ... is partial
  const unsigned char* in[NIN];
  const unsigned char* src[NIN];  // row r of each operand
  i64 r, c;                       // the next copy: row r, its chunk c, into slot `slot`
  int slot;
  __device__ RingFeed(const Params& p, unsigned char* buf)
      : P(p), ring(buf), rows(p.rows), rowb(p.n * (i64)sizeof(T)), last((rowb - 1) / CH),
        ragged(rowb % CH != 0), r(blockIdx.x), c(0), slot(0) {
#pragma unroll
    for (int k = 0; k < NIN; ++k) {
      in[k] = reinterpret_cast<const unsigned char*>(in_ptr<T>(P, IN0 + k));
      src[k] = r < rows ? in[k] + row_at(r, IN0 + k) : in[k];
    }
  }
  // the byte offset of row `row` in operand k
  __device__ __forceinline__ i64 row_at(i64 row, int k) const {
    return row * P.op[k].outer.v[0] * (i64)sizeof(T);
  }
  // chunk ch of a row starts at byte start(ch) (reverse: negative for the partial last one)
  __device__ __forceinline__ i64 start(i64 ch) const {
    return kRev ? rowb - (ch + 1) * CH : ch * CH;
  }
  __device__ __forceinline__ void issue() {
    const int t = threadIdx.x;
    if (r < rows) {
      unsigned char* dst = ring + slot * SLOT;
      const i64 s = start(c);
      if (!ragged || c != last) {
#pragma unroll
        for (int k = 0; k < NIN; ++k)
#pragma unroll
          for (int l = 0; l < COPIES; ++l) {
            const int off = (t + l * kBlock) * 16;
            cp_async16(dst + k * CH + ring_swizzle<kSwz>(off), src[k] + s + off);
          }
      } else {
#pragma unroll
        for (int k = 0; k < NIN; ++k)
#pragma unroll
          for (int l = 0; l < COPIES; ++l) {
            const int off = (t + l * kBlock) * 16;
            const bool inside = s + off >= 0 && s + off < rowb;
            cp_async16_fill(dst + k * CH + ring_swizzle<kSwz>(off),
                            inside ? src[k] + s + off : src[k], inside ? 16 : 0);
          }
      }
      if (c == last) {
        c = 0;
        r += gridDim.x;
        if (r < rows) {
#pragma unroll
          for (int k = 0; k < NIN; ++k) src[k] = in[k] + row_at(r, IN0 + k);
        }
      } else {
        ++c;
      }
      slot = slot == STAGES - 1 ? 0 : slot + 1;
    }
    cp_async_commit();
  }
};

// The ring's outputs of one vector of an op with three staged operands: position i's state is
// pre . st[i] (st from the vector's or lane's first position), `exc` the state before the
// first position (it becomes the state after the last); e: the staged inputs in physical
// order, nb: the neighbours in scan order.
template <typename T, typename A, bool kRev, class Op, int L, int NIN>
__device__ __forceinline__ void ring_outputs(const Op& op, const typename Op::S& pre,
                                             typename Op::S& exc, const typename Op::S (&st)[L],
                                             const T (&e)[NIN][L], const A (&nb)[L], T (&o)[L]) {
#pragma unroll
  for (int i = 0; i < L; ++i) {
    A a[Op::kIn];
#pragma unroll
    for (int k = 0; k < Op::kIn; ++k) a[k] = to_acc(e[k][kRev ? L - 1 - i : i]);
    const typename Op::S inc = op.combine(pre, st[i]);
    o[kRev ? L - 1 - i : i] = from_acc<T>(op.out_value(inc, exc, a, nb[i], 0));
    exc = inc;
  }
}

template <typename T, typename A, class Op, bool kRev>
__device__ __forceinline__ void scan_ring_dir(const Params& P) {
  typedef typename Op::S S;
  static_assert(!Op::kAuxIn && !Op::kAuxOut, "the ring takes ops without aux operands");
  static_assert(!kRunOp<Op>, "the ring scans states");
  constexpr int NIN = kInputsY<Op>;        // staged operands IN0 .. IN0 + NIN - 1
  static_assert(NIN == 1 || NIN == 3, "one input, or dy, x and y");
  constexpr int CH = kRingChunkOf<NIN>;     // bytes of one operand a chunk
  constexpr int STAGES = kRingStagesOf<NIN>;
  constexpr int SLOT = CH * NIN;            // bytes of one ring slot
  constexpr int L = 16 / (int)sizeof(T);  // elements a vector
  constexpr int NV = CH / 16;             // vectors a chunk
  constexpr int WV = NV / (kBlock / 32);  // consecutive vectors a warp scans
  constexpr int J = WV / 32;              // vectors a lane
  static_assert(J >= 1 && NV >= kBlock, "ring tile shape");
  constexpr bool kLaneRun = kRingLaneRun<Op>;  // see kRingLaneRun
  // kGroupFactor ops: a lane's run is a group (its factor one exp of its end points), and
  // the lanes', warps' and chunks' joins are LinRec's in double (Cw), as in the strips
  constexpr bool kGroup = kGroupFactor<Op>;
  static_assert(!kGroup || (kLaneRun && NIN == 3), "groups are lane runs of three operands");
  typedef typename StripCarryOf<Op>::type Cw;
  [[maybe_unused]] const LinRec64 dop{P.mode};
  extern __shared__ int4 ring_buf[];
  __shared__ Cw warp_tot[2][kBlock / 32];
  unsigned char* ring = reinterpret_cast<unsigned char*>(ring_buf);
  const Op op{P.mode};
  const int t = threadIdx.x, lane = t & 31, w = t >> 5;
  unsigned char* out = reinterpret_cast<unsigned char*>(P.op[OUT].ptr);
  RingFeed<T, NIN, CH, STAGES, kRev> feed(P, ring);
  // the feed's sizes as locals: reading them from it gave the three-operand entries other
  // registers and schedules (sm_90 SASS compared), so the tested code stays
  const i64 rows = feed.rows, rowb = feed.rowb, last = feed.last;
  const bool ragged = feed.ragged;
#pragma unroll 1
  for (int k = 0; k < STAGES - 1; ++k) feed.issue();
  // the scan side: row sr, its chunk sc, ring slot sslot
  i64 sr = blockIdx.x, sc = 0;
  unsigned char* sdst = sr < rows ? out + feed.row_at(sr, OUT) : out;
  int sslot = 0, half = 0;
  Cw row_carry = carry_empty<Cw>(op);
  // Op::kNb: y at the positions after a vector's in scan order (nb), from the stage (y is
  // IN2, stage 2) but for the chunk's last position, whose neighbour is the next chunk's
  // first: kNbMake ops read it at the top of the chunk (far; the thread that holds the
  // chunk's last vector, the block's last: vs == NV - 1 in either layout), the others as they
  // store.
  auto neighbours = [&](const unsigned char* slot, int vs, const T (&ey)[L], A far,
                        A (&nb)[L]) {
#pragma unroll
    for (int i = 0; i < L; ++i) nb[i] = A(1);
#pragma unroll
    for (int i = 0; i + 1 < L; ++i) nb[i] = to_acc(ey[kRev ? L - 2 - i : i + 1]);
    const i64 q = sc * (CH / (i64)sizeof(T)) + (i64)(vs + 1) * L;  // the next position
    if (q < P.n) {
      if (vs + 1 < NV) {  // in this chunk: the first element of the next vector
        const int pv = kRev ? NV - 2 - vs : vs + 1;
        const T* next = reinterpret_cast<const T*>(slot + 2 * CH + pv * 16);
        nb[L - 1] = to_acc(next[kRev ? L - 1 : 0]);
      } else if constexpr (kNbMake<Op>) {
        nb[L - 1] = far;
      } else {            // the first of the next chunk
        nb[L - 1] = to_acc(in_ptr<T>(P, IN2)[sr * P.op[IN2].outer.v[0] +
                                              (kRev ? P.n - 1 - q : q)]);
      }
    }
  };
  while (sr < rows) {  // uniform over the block
    [[maybe_unused]] A far = A(1);
    if constexpr (kNbMake<Op>) {
      const i64 q = (sc + 1) * (CH / (i64)sizeof(T));  // the next chunk's first position
      if (t == kBlock - 1 && q < P.n)
        far = to_acc(in_ptr<T>(P, IN2)[sr * P.op[IN2].outer.v[0] + (kRev ? P.n - 1 - q : q)]);
    }
    cp_async_wait<STAGES - 2>();
    // this chunk is in shared memory for every thread, and every thread is done with the
    // slot that the next copy refills (read in the previous iteration)
    __syncthreads();
    feed.issue();
    const unsigned char* slot = ring + sslot * SLOT;
    // the vector of operand k a lane scans j-th (vs: its index in scan order)
    auto vec_at = [&](int k, int vs) -> int4 {
      return *reinterpret_cast<const int4*>(slot + k * CH + (kRev ? NV - 1 - vs : vs) * 16);
    };
    S st[J][L];
    [[maybe_unused]] Cw ex[J];  // NIN > 1: the state before the lane's first position, from the
                              // warp's first
    Cw wcarry = carry_empty<Cw>(op);
    [[maybe_unused]] A y_first = A(0), nb_last = A(1);  // kGroup: the lane's end points
#pragma unroll
    for (int j = 0; j < J; ++j) {
      // the vector's index in scan order: 32 apart, or (kLaneRun) the lane's J in a row
      const int vs = kLaneRun ? w * WV + lane * J + j : w * WV + j * 32 + lane;
      if constexpr (NIN == 1) {
        warp_vec_scan<T, A, Op, kRev>(op, vec_at(0, vs), st[j], wcarry, lane);
      } else {
        T e[Op::kIn][L];
#pragma unroll
        for (int k = 0; k < Op::kIn; ++k) {
          const int4 raw = vec_at(k, vs);
          memcpy(e[k], &raw, 16);
        }
        [[maybe_unused]] A nb[L];
        if constexpr (kNbMake<Op>) neighbours(slot, vs, e[2], far, nb);
        if constexpr (kGroup) {
          if (j == 0) y_first = to_acc(e[2][kRev ? L - 1 : 0]);
          if (j == J - 1) nb_last = nb[L - 1];
        }
#pragma unroll
        for (int i = 0; i < L; ++i) {
          A a[Op::kIn];
#pragma unroll
          for (int k = 0; k < Op::kIn; ++k) a[k] = to_acc(e[k][kRev ? L - 1 - i : i]);
          const S m = make_at(op, a, kNbMake<Op> ? nb[i] : A(1), 0, 0);
          if constexpr (kLaneRun)  // on from the lane's previous vector
            st[j][i] = i ? op.combine(st[j][i - 1], m) : j ? op.combine(st[j - 1][L - 1], m) : m;
          else
            st[j][i] = i ? op.combine(st[j][i - 1], m) : m;
        }
        // st[j] stays from the lane's first position: an element's state is one combine
        // from the lane's prefix at the store
        if constexpr (!kLaneRun) ex[j] = warp_states_scan<L, Op, false>(op, st[j], wcarry, lane);
      }
    }
    if constexpr (kGroup) {  // the lane's total with its end points' factor, in double
      Cw lane_tot[1] = {Cw{group_factor(nb_last, y_first), (double)st[J - 1][L - 1].b}};
      ex[0] = warp_states_scan<1, LinRec64, false>(dop, lane_tot, wcarry, lane);
    } else if constexpr (kLaneRun) {  // one scan of the lanes' totals (their last vectors')
      ex[0] = warp_states_scan<L, Op, false>(op, st[J - 1], wcarry, lane);
    }
    if (lane == 0) warp_tot[half][w] = wcarry;
    __syncthreads();  // this half of warp_tot is next written two chunks later, past a barrier
    Cw pre = row_carry;
    if constexpr (kGroup) {
      ring_join_warps(dop, warp_tot[half], lane, w, pre, row_carry);  // in double
    } else if constexpr (NIN == 1) {
#pragma unroll
      for (int h = 0; h < kBlock / 32; ++h) {
        const S th = warp_tot[half][h];
        if (h < w) pre = op.combine(pre, th);
        row_carry = op.combine(row_carry, th);
      }
    } else {
      ring_join_warps(op, warp_tot[half], lane, w, pre, row_carry);
    }
    const i64 s = feed.start(sc);
    [[maybe_unused]] S lane_pre, exc_next;  // kLaneRun: on from the lane's previous vector
    auto store = [&](int j, bool check) {  // check: the row's partial last chunk
      const int vs = kLaneRun ? w * WV + lane * J + j : w * WV + j * 32 + lane;
      T o[L];
      if constexpr (NIN == 1) {
#pragma unroll
        for (int i = 0; i < L; ++i) {
          const S inc = op.combine(pre, st[j][i]);
          o[kRev ? L - 1 - i : i] = from_acc<T>(op.out_value(inc, inc, nullptr, A(1), 0));
        }
      } else {
        T e[NIN][L];  // the inputs again, from the stage
#pragma unroll
        for (int k = 0; k < NIN; ++k) {
          const int4 raw = vec_at(k, vs);
          memcpy(e[k], &raw, 16);
        }
        A nb[L];  // kNb: y at the next position in scan order, 1 past the end of the row
#pragma unroll
        for (int i = 0; i < L; ++i) nb[i] = A(1);
        if constexpr (Op::kNb) neighbours(slot, vs, e[2], far, nb);
        if constexpr (kGroup) {
          if (j == 0) {  // before the lane's first position; its factor is not used
            lane_pre = S{A(1), A(dop.combine(pre, ex[0]).b)};
            exc_next = lane_pre;
          }
          ring_outputs<T, A, kRev>(op, lane_pre, exc_next, st[j], e, nb, o);
        } else if constexpr (kLaneRun) {
          if (j == 0) {
            lane_pre = op.combine(pre, ex[0]);  // before the lane's first position
            exc_next = lane_pre;
          }
          ring_outputs<T, A, kRev>(op, lane_pre, exc_next, st[j], e, nb, o);
        } else {
          const S lane_pre = op.combine(pre, ex[j]);  // before the lane's first position
          S exc = lane_pre;
          ring_outputs<T, A, kRev>(op, lane_pre, exc, st[j], e, nb, o);
        }
      }
      int4 word;
      memcpy(&word, o, 16);
      const i64 off = s + (i64)(kRev ? NV - 1 - vs : vs) * 16;
      if (!check || (off >= 0 && off < rowb)) *reinterpret_cast<int4*>(sdst + off) = word;
    };
    if (!ragged || sc != last) {
#pragma unroll
      for (int j = 0; j < J; ++j) store(j, false);
    } else {
#pragma unroll
      for (int j = 0; j < J; ++j) store(j, true);
    }
    if (sc == last) {
      sc = 0;
      sr += gridDim.x;
      row_carry = carry_empty<Cw>(op);
      if (sr < rows) sdst = out + feed.row_at(sr, OUT);
    } else {
      ++sc;
    }
    sslot = sslot == STAGES - 1 ? 0 : sslot + 1;
    half ^= 1;
  }
}

template <typename T, typename A, class Op>
__device__ void scan_ring(const Params& P) {
  BC_SCAN_BY_DIRECTION(scan_ring_dir, T, A, Op);
}

// Contiguous rows of at most V * kBlock 16-byte vectors, a block a row held in registers: no
// shared-memory stage, no ring. Lane l of warp w loads the vectors w * V * 32 + j * 32 + l
// (j < V, in scan order; a warp's 512-byte loads coalesce) all at once, scans them as the
// ring scans a chunk (warp_vec_scan, then the warps' totals through shared memory) and
// stores them, loads and stores streaming (ld.global.cs / st.global.cs). The host launches a
// block a row (a block takes rows b, b + gridDim.x, ... past 2^31 - 1 rows). Once its loads
// are issued, thread 0 asks L2 for the row P.chunk_len rows on (0: none; the host passes the
// blocks that the SMs hold at once, so the row asked for is about the one that the next block
// on this SM takes): DRAM keeps reading while the blocks resident scan and store, and the
// last wave finds its rows in L2 (sm_90; H200, bf16 4096 x 8192 cumsum: 38.7 -> 36.2 us in a
// prototype, torch's copy_ of the same bytes 36.0). Vectors past the
// row's end (rows of fewer vectors) are zero and come after every position of the row in
// scan order; they are not stored. The host's condition is the ring's: one input, rows one
// stride apart, whole 16-byte vectors (ROWREG).
// cummax/cummin (MaxOp32, kIdx) keep no state a position, whose key and index would take
// 2 * V * L registers: a lane folds each of its vectors into one state, the warp scans those,
// and the lane walks its positions again from the state before each vector for the outputs,
// its indices stored by the whole warp (warp_pairs, store_pairs' order), every store
// instruction 512 contiguous bytes. The indices' rows are contiguous and 16-byte aligned (the
// host's _rowreg).
// logcumsumexp (a run op) takes each vector in two passes, as pipe_tile takes a lane's tile:
// LseOp::lane_run (the vector's maximum and running sums, an exp a position), the warp's runs
// joined (group_scan_run) and carried from vector to vector and warp to warp as runs (an exp a
// join, no log), then LseOp::lane_outputs from the run before the vector (a log an output).
template <typename T, typename A, class Op, int V, bool kRev>
__device__ __forceinline__ void scan_rowreg_dir(const Params& P) {
  typedef typename Op::S S;
  typedef typename RunOf<Op>::type Run;  // run ops' runs, else NoRun
  constexpr bool kIdx = Op::kAuxOut, kRun = kRunOp<Op>;
  static_assert(!Op::kAuxIn && !kFlagOut<Op> && kInputsY<Op> == 1,
                "rows in registers take one-input ops (cummax/cummin: indices; logcumsumexp: runs)");
  constexpr int L = 16 / (int)sizeof(T);
  constexpr int W = kBlock / 32;
  __shared__ typename WordOf<Op>::type warp_tot[2][W];
  const Op op{P.mode};
  const int t = threadIdx.x, lane = t & 31, w = t >> 5;
  const i64 rowb = P.n * (i64)sizeof(T);
  const unsigned char* in = reinterpret_cast<const unsigned char*>(in_ptr<T>(P, IN0));
  unsigned char* out = reinterpret_cast<unsigned char*>(P.op[OUT].ptr);
  const i64 ins = P.op[IN0].outer.v[0] * (i64)sizeof(T);  // the rows' strides in bytes
  const i64 outs = P.op[OUT].outer.v[0] * (i64)sizeof(T);
  [[maybe_unused]] i64* aux = nullptr;  // kIdx: the indices, or none
  [[maybe_unused]] int4* slots = nullptr;
  if constexpr (kIdx) {
    aux = static_cast<i64*>(P.op[AUX].ptr);
    slots = warp_pairs<L>();
  }
  int half = 0;
  for (i64 r = blockIdx.x; r < P.rows; r += gridDim.x, half ^= 1) {  // uniform over the block
    const unsigned char* src = in + r * ins;
    unsigned char* dst = out + r * outs;
    int4 raw[V];
#pragma unroll
    for (int j = 0; j < V; ++j) {
      const i64 vb = (i64)(w * V * 32 + j * 32 + lane) * 16;  // in scan order
      const int4* p = reinterpret_cast<const int4*>(src + (kRev ? rowb - 16 - vb : vb));
      raw[j] = make_int4(0, 0, 0, 0);
      if (vb < rowb) raw[j] = __ldcs(p);
    }
    if (t == 0 && P.chunk_len > 0 && r + P.chunk_len < P.rows)
      prefetch_l2_bulk(in + (r + P.chunk_len) * ins, (unsigned)rowb);
    // kIdx: the physical position of element i (in scan order) of this lane's vector j
    const auto phys = [&](int j, int i) {
      const int q = (w * V * 32 + j * 32 + lane) * L + i;
      return kRev ? (int)P.n - 1 - q : q;
    };
    // the state of element i (in scan order) of this lane's vector j (kIdx; unpacked here
    // rather than through vec_get, which changed the f32 and f64 machine code)
    [[maybe_unused]] const auto make = [&](int j, int i) {
      T e[L];
      memcpy(e, &raw[j], 16);
      const A a = to_acc(e[kRev ? L - 1 - i : i]);
      return op.make(&a, 0, phys(j, i));
    };
    constexpr bool kStates = !kIdx && !kRun;
    S st[kStates ? V : 1][kStates ? L : 1];  // every position's state (else none)
    [[maybe_unused]] S ex[kIdx ? V : 1];  // kIdx: the state before each vector of the lane
    // kRun: each vector's running sums and maximum (lane_run), the warp's run before it
    [[maybe_unused]] A tt[kRun ? V : 1][kRun ? L : 1], tmax[kRun ? V : 1];
    [[maybe_unused]] Run rex[kRun ? V : 1];
    S wcarry = op.identity();
    [[maybe_unused]] Run wrun;  // kRun: the warp's run so far
    if constexpr (kRun) wrun = op.run0();
#pragma unroll
    for (int j = 0; j < V; ++j) {
      if constexpr (kRun) {
        const Run lr = op.lane_run([&](int i) { return to_acc(vec_get<T, kRev>(raw[j], i)); },
                                   tt[j]);
        tmax[j] = lr.m;
        Run wex, wtot;
        group_scan_run<1>(op, lr, wex, wtot, nullptr);
        rex[j] = op.join(wrun, wex);
        wrun = op.join(wrun, wtot);
      } else if constexpr (kIdx) {
        S fold[1] = {make(j, 0)};
#pragma unroll
        for (int i = 1; i < L; ++i) fold[0] = op.combine(fold[0], make(j, i));
        ex[j] = warp_states_scan<1, Op, false>(op, fold, wcarry, lane);
      } else {
        warp_vec_scan<T, A, Op, kRev>(op, raw[j], st[j], wcarry, lane);
      }
    }
    if constexpr (kRun) {
      if (lane == 0) warp_tot[half][w] = wrun;
    } else {
      if (lane == 0) warp_tot[half][w] = wcarry;
    }
    __syncthreads();  // this half of warp_tot is next written two rows later, past a barrier
    S pre = op.identity();
    [[maybe_unused]] Run rpre;  // kRun: the warps before this one, joined by the first W lanes
    if constexpr (kRun) {
      Run t = lane < W ? warp_tot[half][lane] : op.run0();
#pragma unroll
      for (int d = 1; d < W; d <<= 1) {
        const Run y = shfl_up(t, d);
        if (lane >= d) t = op.join(y, t);
      }
      rpre = shfl_idx(t, (w + 31) & 31);
      if (w == 0) rpre = op.run0();
    } else {
#pragma unroll
      for (int h = 0; h < W; ++h)
        if (h < w) pre = op.combine(pre, warp_tot[half][h]);
    }
#pragma unroll
    for (int j = 0; j < V; ++j) {
      const i64 vb = (i64)(w * V * 32 + j * 32 + lane) * 16;
      T o[L];
      if constexpr (kRun) {
        // the rare pushes read the vector again (in L2), so that raw need not stay live
        const auto again = [&](int i) {
          int4 q = make_int4(0, 0, 0, 0);
          if (vb < rowb) q = *reinterpret_cast<const int4*>(src + (kRev ? rowb - 16 - vb : vb));
          return to_acc(vec_get<T, kRev>(q, i));
        };
        op.lane_outputs(op.join(rpre, rex[j]), tmax[j], tt[j], again, tt[j]);
#pragma unroll
        for (int i = 0; i < L; ++i) o[kRev ? L - 1 - i : i] = from_acc<T>(tt[j][i]);
      } else if constexpr (kIdx) {
        S run = op.combine(pre, ex[j]);
        [[maybe_unused]] i64 pend = 0;  // the index of an even position
#pragma unroll
        for (int i = 0; i < L; ++i) {
          run = op.combine(run, make(j, i));
          o[kRev ? L - 1 - i : i] = from_acc<T>(op.out_value(run, run, nullptr, A(1), 0));
          const i64 win = op.winner(run, run, nullptr, 0, 0);
          if (i % 2 == 0) {
            pend = win;
          } else {  // scan positions i - 1, i: physical p + 1, p in reverse
            slots[pair_slot<L>(kRev ? 31 - lane : lane, (kRev ? L - 1 - i : i) / 2)] =
                kRev ? idx_pair(win, pend) : idx_pair(pend, win);
          }
        }
      } else {
#pragma unroll
        for (int i = 0; i < L; ++i) {
          const S inc = op.combine(pre, st[j][i]);
          o[kRev ? L - 1 - i : i] = from_acc<T>(op.out_value(inc, inc, nullptr, A(1), 0));
        }
      }
      int4 word;
      memcpy(&word, o, 16);
      int4* q = reinterpret_cast<int4*>(dst + (kRev ? rowb - 16 - vb : vb));
      if (vb < rowb) __stcs(q, word);
      if constexpr (kIdx) {
        if (aux != nullptr) {  // the warp's 32 * L indices but those past the row's end
          const i64 v0 = w * V * 32 + j * 32;  // the warp's first vector in scan order
          const i64 nv = rowb / 16;
          const int in = (int)min((i64)32, nv - v0);  // its vectors in the row (maybe none)
          store_pairs<L, true>(aux + r * P.op[AUX].outer.v[0] + (kRev ? nv - v0 - 32 : v0) * L,
                               slots, kRev ? 32 - in : 0, kRev ? 32 : in);
        }
      }
    }
  }
}

template <typename T, typename A, class Op, int V>
__device__ void scan_rowreg(const Params& P) {
  BC_SCAN_BY_DIRECTION(scan_rowreg_dir, T, A, Op, V);
}

// ---------------------------------- the cummax/cummin backward through a ring (max_bwd_ring)
// Contiguous rows of x, dy and dx under the ring's conditions (the host's: _kernels._max_ring),
// walked as scan_ring walks its rows, x and dy staged (IN0 = x, IN1 = dy, OUT = dx; `reverse` and
// `mode` those of the forward), chunks in the forward's scan order. Each thread takes a run of J
// vectors of the chunk (E positions; the ring's vectors swizzled so that these reads hit eight bank
// groups). A chunk takes two block scans of one state a lane: the winner flags (the running key, on
// from the row's carry: as max_bwd_strip_w, max.NaN below f64, the tie break a template argument,
// cummin's keys x with its sign bits flipped as loaded), then the segmented sums of dy (SegBwdOp: a
// lane's state is whether it holds a winner and its dy before the first) in the opposite order,
// from the chunk's end with nothing after it. A lane walks its positions from its last before that
// scan: each winner's dy up to the next one in the lane, what is left its state's sum; the scan
// then adds the dy after the lane to its last winner alone (in shared memory, over the walk's
// output). On an H200 over 4096 x 8192 (docs/benchmarks.md, round 46) bf16 took 89.5 -> 67.5 us and
// 1365 -> 1072 instructions a chunk (the keys alone: 1202, 69.2 us; then the walk first and the bit
// tests as one instruction, bit_set), f32 135.4 -> 113.4 us and 936 -> 739. Every winner's dx is
// then final but that of the chunk's last winner, whose segment may run on into the next chunks:
// the block keeps it pending (its scan position and partial sum, uniform over the block), adds to
// it each later chunk's dy before that chunk's first winner (the b of the chunk's total; all of its
// dy where it has none), and thread 0 stores it once a later chunk has a winner or the row ends
// (its partial was stored with its vector first, past a block barrier). One pass over x and dy,
// where the warp and block kernels write and read back a flag byte a position and keep one tile of
// loads in flight a warp: on an H200 over 4096 x 8192, f32 147.5 -> 135.0 us, bf16 142.7 -> 89.3;
// over 256 x 65536, 183.4 -> 72.8 and 181.9 -> 50.4 (docs/benchmarks.md, round 33). Positions past
// a partial chunk's end hold x = 0 and dy = 0: they may win, but come after every valid one and add
// nothing to any sum, and they are never stored.
template <typename T, typename A, int CH, bool kTieLast, bool kRev>
__device__ __forceinline__ void max_bwd_ring_dir(const Params& P) {
  typedef Pair<A> S2;
  constexpr int NIN = 2;  // CH: bytes of x (and of dy) a chunk; 96 KiB of ring either way
  constexpr int STAGES = kRingStagesOf<NIN, CH>;
  constexpr int SLOT = CH * NIN;
  constexpr int L = 16 / (int)sizeof(T);  // elements a vector
  constexpr int NV = CH / 16;             // vectors a chunk and operand
  constexpr int W = kBlock / 32;
  constexpr int J = NV / kBlock;          // a run of J vectors a lane: t * J + j
  constexpr int E = J * L;                // positions a lane
  constexpr int SWZ = J >= 16 ? 4 : 3;  // log2(max(J, 8)) for J <= 16: see ring_swizzle
  constexpr i64 CHE = CH / (int)sizeof(T);  // positions a chunk
  static_assert(J >= 1 && J <= 16 && E <= 64, "ring tile shape");
  typedef typename Pick<(E > 32), unsigned long long, unsigned>::type Mask;
  extern __shared__ int4 ring_buf[];
  __shared__ A key_tot[2][W];   // the warps' running keys, then
  __shared__ S2 seg_tot[2][W];  // their segmented sums, a buffer a chunk in turn
  __shared__ i64 pend_q[2];     // the chunk's last winner (scan position) and its partial dx
  __shared__ A pend_v[2];
  unsigned char* ring = reinterpret_cast<unsigned char*>(ring_buf);
  const SegBwdOp<A> bop{0};
  typedef unsigned long long Half;  // a vector as two words, cummin's sign bits flipped in each
  const Half flip = (P.mode & 1) ? sign_bits<T, Half>() : Half(0);
  const int t = threadIdx.x, lane = t & 31, w = t >> 5;
  typedef RingFeed<T, NIN, CH, STAGES, kRev, SWZ> Feed;
  static_assert(Feed::COPIES == J, "flush stores the vectors of the thread's own copies");
  Feed feed(P, ring);
#pragma unroll 1
  for (int k = 0; k < STAGES - 1; ++k) feed.issue();
  T* const out = static_cast<T*>(P.op[OUT].ptr);
  const i64 rows = feed.rows, n = P.n;
  i64 sr = blockIdx.x, sc = 0;
  T* dst = sr < rows ? out + P.op[OUT].outer.v[0] * sr : out;
  int sslot = 0, half = 0;
  A key_carry = -inf<A>();  // the row's running key before this chunk (MaxFlagOp's identity)
  i64 pq = -1;                   // the pending winner's scan position (-1: none)
  A pv = A(0);                   // ... and its dx so far
  bool take = false;             // the previous chunk's last winner becomes pending
  // A chunk's dx goes to the x part of its slot, and from there to memory in whole lines at
  // the top of the next chunk (or after the last), before the copy that refills the slot:
  // each thread stores the vectors that its own copies overwrite next. (Stored from the
  // lanes' runs, a warp's 16-byte stores lay J vectors apart: on an H200 that took L2 to 79 %
  // of its throughput with DRAM at 48 %.)
  const unsigned char* oslot = nullptr;  // the previous chunk's slot, none before the first
  unsigned char* odst = nullptr;         // ... its row of dx, its first byte, and whether
  i64 ostart = 0;                        // it is the row's partial last chunk
  bool ocheck = false;
  auto flush = [&]() {
    if (oslot == nullptr) return;
#pragma unroll
    for (int l = 0; l < J; ++l) {
      const int off = (t + l * kBlock) * 16;
      const int4 word = *reinterpret_cast<const int4*>(oslot + ring_swizzle<SWZ>(off));
      const i64 at = ostart + off;
      if (!ocheck || (at >= 0 && at < feed.rowb)) *reinterpret_cast<int4*>(odst + at) = word;
    }
  };
  while (sr < rows) {  // uniform over the block
    cp_async_wait<STAGES - 2>();
    // this chunk is in shared memory for every thread, and every thread is done with the
    // slot that the next copy refills (and with the buffers of two chunks ago)
    __syncthreads();
    flush();  // the previous chunk's dx, from the slot that feed.issue refills
    feed.issue();
    if (take) {
      pq = pend_q[half ^ 1];
      pv = pend_v[half ^ 1];
    }
    const unsigned char* slot = ring + sslot * SLOT;
    // operand k's positions of this lane, in scan order, their bits flipped by `fl` first
    auto load = [&](int k, Half fl, A (&v)[E]) {
#pragma unroll
      for (int j = 0; j < J; ++j) {
        const int vs = t * J + j;  // the vector's index in scan order
        const int off = ring_swizzle<SWZ>((kRev ? NV - 1 - vs : vs) * 16);
        const int4 raw = *reinterpret_cast<const int4*>(slot + k * CH + off);
        Half h[2];
        memcpy(h, &raw, 16);
        h[0] ^= fl;
        h[1] ^= fl;
        T e[L];
        memcpy(e, h, 16);
#pragma unroll
        for (int i = 0; i < L; ++i) v[j * L + i] = to_acc(e[kRev ? L - 1 - i : i]);
      }
    };
    // the winner flags: the lane's running key, scanned over the warp and the block; then
    // each position's key against the running key before it
    Mask own = 0;  // bit i: the lane's position i wins
    {
      A v[E];  // the keys: x, negated for cummin
      load(0, flip, v);
      A m0 = v[0], m1 = v[1];  // the lane's running key, two chains, then joined
#pragma unroll
      for (int i = 2; i < E; i += 2) {
        m0 = key_max(m0, v[i]);
        if (i + 1 < E) m1 = key_max(m1, v[i + 1]);
      }
      A inc = key_max(m0, m1);
#pragma unroll
      for (int d = 1; d < 32; d <<= 1) {
        const A o = shfl_up(inc, d);
        if (lane >= d) inc = key_max(o, inc);
      }
      const A before = shfl_up(inc, 1);
      if (lane == 31) key_tot[half][w] = inc;
      __syncthreads();
      A run = key_carry;
#pragma unroll
      for (int h = 0; h < W; ++h) {
        const A th = key_tot[half][h];
        if (h < w) run = key_max(run, th);
        key_carry = key_max(key_carry, th);
      }
      if (lane) run = key_max(run, before);
      const bool first = sc == 0 && t == 0;  // the row's position 0 is this lane's first
#pragma unroll
      for (int i = 0; i < E; ++i) {
        if (key_beats<kTieLast>(v[i], run) || (first && i == 0)) own |= Mask(1) << i;
        run = key_max(run, v[i]);
      }
    }
    // the segmented sums, from the chunk's end: the lane's state (a: no winner in it; b: its
    // dy before its first winner), scanned over the warp (lanes from 31) and the block (warps
    // from the last); then the lane's positions from its last, from the sum after it
    const i64 q0 = sc * CHE;  // the chunk's first scan position
    // the lane's positions from its last, each winner's dy up to the next winner in the lane
    // (lv: that of its last winner, `top`, which also takes the dy after the lane); what is
    // left is its dy before its first winner (all of it where it has none)
    const int top = own ? (sizeof(Mask) == 8 ? 63 - __clzll((long long)own) : 31 - __clz((int)own))
                        : -1;
    T o[E];
    A lv = A(0);
    S2 inc;
    {
      A g[E];
      load(1, Half(0), g);
      A vnext = A(0);  // the segment's sum after the current position
#pragma unroll
      for (int i = E - 1; i >= 0; --i) {
        const bool won = bit_set(own, i);
        const A sum = g[i] + vnext;
        const A v = won ? sum : A(0);
        vnext = won ? A(0) : sum;
        if (i == top) lv = v;
        o[i] = from_acc<T>(v);
      }
      inc = S2{own ? A(0) : A(1), vnext};
    }
    // the segmented sums, from the chunk's end, over the warp (lanes from 31) and the block
    // (warps from the last)
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const S2 o = shfl_down(inc, d);
      if (lane + d < 32) inc = bop.combine(o, inc);
    }
    const S2 after = shfl_down(inc, 1);
    if (lane == 0) seg_tot[half][w] = inc;
    __syncthreads();
    S2 e = bop.identity(), tot = bop.identity();
#pragma unroll
    for (int h = W - 1; h >= 0; --h) {
      const S2 th = seg_tot[half][h];
      if (h > w) e = bop.combine(e, th);
      tot = bop.combine(tot, th);
    }
    if (lane < 31) e = bop.combine(e, after);  // the sums after the lane, to the chunk's end
#pragma unroll
    for (int j = 0; j < J; ++j) {  // into the x part of the slot (every thread is done with it)
      const int vs = t * J + j;
      T ov[L];
#pragma unroll
      for (int i = 0; i < L; ++i) ov[kRev ? L - 1 - i : i] = o[j * L + i];
      int4 word;
      memcpy(&word, ov, 16);
      const int off = ring_swizzle<SWZ>((kRev ? NV - 1 - vs : vs) * 16);
      *reinterpret_cast<int4*>(ring + sslot * SLOT + off) = word;
    }
    if (top >= 0) {
      // the lane's last winner takes the dy after the lane, up to the chunk's next winner;
      // where there is none it is the chunk's last winner, and its dx so far becomes pending
      lv += e.b;
      const int vs = t * J + top / L, i = top % L;
      const int off = ring_swizzle<SWZ>((kRev ? NV - 1 - vs : vs) * 16) +
                      (kRev ? L - 1 - i : i) * (int)sizeof(T);
      *reinterpret_cast<T*>(ring + sslot * SLOT + off) = from_acc<T>(lv);
      if (e.a != A(0)) {
        pend_q[half] = q0 + (i64)t * E + top;
        pend_v[half] = lv;
      }
    }
    oslot = ring + sslot * SLOT;
    odst = reinterpret_cast<unsigned char*>(dst);
    ostart = feed.start(sc);
    ocheck = feed.ragged && sc == feed.last;  // the row's partial last chunk
    // the pending winner takes this chunk's dy before its first winner; it is final where the
    // chunk has a winner or the row ends here
    const bool has = tot.a == A(0);
    if (pq >= 0) pv += tot.b;
    const bool row_end = sc == feed.last;
    if (t == 0 && pq >= 0 && (has || row_end)) dst[kRev ? n - 1 - pq : pq] = from_acc<T>(pv);
    if (row_end) {
      sc = 0;
      sr += gridDim.x;
      key_carry = -inf<A>();
      pq = -1;
      pv = A(0);
      take = false;
      if (sr < rows) dst = out + P.op[OUT].outer.v[0] * sr;
    } else {
      ++sc;
      take = has;
    }
    sslot = sslot == STAGES - 1 ? 0 : sslot + 1;
    half ^= 1;
  }
  __syncthreads();
  flush();
}

template <typename T, typename A, int CH, bool kTieLast>
__device__ void max_bwd_ring_tie(const Params& P) {
  BC_SCAN_BY_DIRECTION(max_bwd_ring_dir, T, A, CH, kTieLast);
}
template <typename T, typename A, int CH>
__device__ void scan_max_bwd_ring(const Params& P) {
  if (P.mode & 2)
    max_bwd_ring_tie<T, A, CH, true>(P);
  else
    max_bwd_ring_tie<T, A, CH, false>(P);
}

// ------------------------------------------- few long rows in one pass (sm_90, "stream")
// Contiguous rows (IN0 -> OUT, 16-byte aligned, rows of whole 16-byte vectors) of an op whose
// state is one float (cumsum, cumprod below f64), cut into tiles of kStreamTile bytes: a
// block's first kStreamStages tiles by its index, the rest in the order of a counter. A
// block has four roles:
//  - warp kStreamLoader loads tiles into a ring of kStreamStages shared-memory stages by bulk
//    copies (cp.async.bulk, completing on an mbarrier), a stage as soon as the warps that
//    read its tile before are done with it;
//  - warp kStreamReducer, as soon as a tile has landed, publishes its total to the workspace
//    (and its warps' segment totals to the block);
//  - warp kStreamPrefix computes each tile's exclusive prefix: the prefix of its wave
//    (kStreamWave consecutive tiles of a row; published by the wave before's last tile)
//    combined with the totals of the wave's tiles before it, in a fixed order;
//  - kStreamWarps warps scan the tile: 16-byte vectors in rows of 512 bytes, a lane one
//    vector a row, kept as loaded (a 2-byte type's in half the registers of floats), shuffle
//    scans of the vectors' totals, then the prefix, and each vector scanned again with it
//    and stored straight from registers.
// The loads and the totals are two warps so that a tile's total waits neither for another
// tile nor for a free stage: in one warp, the next landed tile's total waited until the
// scanning warps had read the tile before it, so until that tile's prefix was out. On an H200
// (docs/benchmarks.md, round 37) the split took cumsum over (2, 2^23) f32 from 48.7 to 45.5
// us, (1, 2^26) from 172.6 to 162.5, (16, 2^20) from 49.1 to 41.8, bf16 (1, 2^26) from 91.6
// to 85.3. A second reducer warp (each half of a tile) measured no faster.
// A wave of 128 tiles (not 256): the prefix warp reads half as many totals a tile (4 words a
// lane, not 8) for twice the waves a row; with the stores plain (not evict-first), on an H200
// (round 38) cumsum over (2, 2^23) f32 went from 47.0 to 44.4 us, (1, 2^26) from 163.1 to
// 149.5, bf16 reverse (1, 2^26) from 91.6 to 89.3; waves of 64 (45.9, 156.5) and 32 (54.7,
// 187.4), where the chain of waves is longer, and of 512 (51.1, 175.4) were slower.
// Every lane that read or wrote what an mbarrier guards arrives on it itself (full: the
// loader's 32, after their part of a partial tile's fill; empty: the readers' 9 x 32; pre:
// the prefix warp's 32; mfree: the scanning warps' 8 x 32), so each access is released by
// its own thread. `__syncwarp` then lane 0's arrive is an order too, through the warp
// barrier, but compute-sanitizer's racecheck does not follow it: it reported 42 hazards on
// this kernel, and 1 on a two-warp probe of that pattern alone, against 0 with every lane
// arriving (docs/benchmarks.md, round 38). The arrivals cost nothing measurable.
// A tile's total never waits for another tile, so reading overlaps writing as in a copy
// (the cooperative kernel reads every piece before it writes any), and no block waits at a
// block-wide barrier. The prefixes are sums in a fixed order whatever the timing: the same
// bits every run and on any number of SMs. The last tile of a row in scan order may be
// partial: its bytes stand at the stage's end in reverse scans, and the loader fills the
// rest of its stage with the identity first, so every tile takes one mask-free path (two
// paths, masked and not, measured 0.4-1 us slower on the H100) and only its stores are
// masked. Workspace: the tile counter (16 bytes), then a word a tile (its total) and a word a
// wave (its prefix), each a StateWord: zero until written. The launch is cooperative (every
// block resident): the blocks zero the workspace themselves and meet at a grid barrier while
// their first tiles load, so no zeroing step comes before the kernel (on the H100 a memset or
// a zero kernel before it cost 2-3 us end to end).
// 2 or 4 interleaved lines (a tensor (n, G) along dim 0, one run of memory) take the same
// kernel as one row of n G elements (scan_<op>_stream2 / _stream4): the state is the G lines'
// side by side (LinesOp), an element combines into its line's, and the workspace holds G words
// a tile and a wave, waves of kStreamWave tiles whatever G (the prefix warp polls G words a
// tile, 4 G a lane; waves of 128 / G tiles, a chain G times as long, were slower: on an H200
// f32 (2^20, 2) 13.9 -> 13.5 us, (2^19, 4) 16.7 -> 15.0, (2^22, 2) 30.8 -> 28.8).
constexpr int kStreamTile = 32768;
constexpr int kStreamStages = 3;
constexpr int kStreamMeta = 2 * kStreamStages;  // tiles whose totals and prefixes a block keeps
constexpr int kStreamWarps = 8;
constexpr int kStreamWave = 128;
constexpr int kStreamLoader = kStreamWarps, kStreamPrefix = kStreamWarps + 1;  // the warps
constexpr int kStreamReducer = kStreamWarps + 2;                                 // of the roles
constexpr int kStreamThreads = 32 * (kStreamWarps + 3);
constexpr int kStreamVecs = kStreamTile / 16;                 // 16-byte vectors a tile
constexpr int kStreamRows = kStreamVecs / 32 / kStreamWarps;  // vector rows a scanning warp
// blocks an SM whose share of registers the entries over interleaved lines ask for
// (BC_SCAN_STREAM_LINES_ENTRY)
template <typename A>
constexpr int kStreamLinesMinBlocks = sizeof(A) == 8 ? 1 : 2;

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void mbar_init(unsigned long long* b, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(b)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned long long* b) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(b)) : "memory");
}
__device__ __forceinline__ void mbar_arrive_tx(unsigned long long* b, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(b)),
               "r"(bytes) : "memory");
}
// Returns once the phase of parity `ph` has completed.
__device__ __forceinline__ void mbar_wait(unsigned long long* b, unsigned ph) {
  asm volatile(
      "{\n .reg .pred p;\n WAIT:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      " @!p bra WAIT;\n}" ::"r"(smem_addr(b)), "r"(ph) : "memory");
}
// `bytes` (a multiple of 16) from global to shared memory, completing on `b`; evict-first
// (each line is read once) where kEvictFirst. On an H200, 4-byte rows were faster without
// the policy ((1, 2^26) f32 144.0 against 146.8 us) and 2-byte rows and interleaved lines
// slower (bf16 (2, 2^23) 29.0 against 27.7; f32 (2^22, 2) 29.4 against 28.3), so the stream
// kernel keeps it there (docs/benchmarks.md, round 53).
template <bool kEvictFirst>
__device__ __forceinline__ void bulk_load(void* dst, const void* src, unsigned bytes,
                                          unsigned long long* b) {
  if constexpr (kEvictFirst) {
    unsigned long long policy;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
        " [%0], [%1], %2, [%3], %4;" ::"r"(smem_addr(dst)), "l"(src), "r"(bytes),
        "r"(smem_addr(b)), "l"(policy) : "memory");
  } else {
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%0], [%1], %2, [%3];" ::"r"(smem_addr(dst)), "l"(src), "r"(bytes),
        "r"(smem_addr(b)) : "memory");
  }
}
#endif

// A 16-byte vector's values as floats and back, a pair at a time for the 2-byte types (one
// conversion instruction a pair, no byte permutes).
__device__ __forceinline__ float2 unpack2(__half, unsigned u) {
  __half2 h;
  memcpy(&h, &u, 4);
  return __half22float2(h);
}
__device__ __forceinline__ float2 unpack2(__nv_bfloat16, unsigned u) {  // exact: the high bits
  return make_float2(__uint_as_float(u << 16), __uint_as_float(u & 0xffff0000u));
}
__device__ __forceinline__ unsigned pack2(__half, float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  unsigned u;
  memcpy(&u, &h, 4);
  return u;
}
__device__ __forceinline__ unsigned pack2(__nv_bfloat16, float lo, float hi) {
  unsigned u;  // __floats2bfloat162_rn's instruction, without its byte moves
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(u) : "f"(hi), "f"(lo));
  return u;
}
template <typename T>
__device__ __forceinline__ void unpack16(int4 w, float (&f)[16 / sizeof(T)]) {
  const unsigned u[4] = {(unsigned)w.x, (unsigned)w.y, (unsigned)w.z, (unsigned)w.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if constexpr (sizeof(T) == 4) {
      f[i] = __uint_as_float(u[i]);
    } else {
      const float2 g = unpack2(T(), u[i]);
      f[2 * i] = g.x;
      f[2 * i + 1] = g.y;
    }
  }
}
template <typename T>
__device__ __forceinline__ int4 pack16(const float (&f)[16 / sizeof(T)]) {
  unsigned u[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if constexpr (sizeof(T) == 4)
      u[i] = __float_as_uint(f[i]);
    else
      u[i] = pack2(T(), f[2 * i], f[2 * i + 1]);
  }
  return make_int4((int)u[0], (int)u[1], (int)u[2], (int)u[3]);
}

// The stream kernel over G interleaved lines (a tensor (n, G) along dim 0, one run of memory)
// takes the run as one row whose elements belong to line (element index mod G): its op is
// LinesOp<Op, G> (the state the G lines' side by side), its elements combine with their own
// line's state under the line op (stream_line_op). With G = 1 every helper is the plain op on
// a float, so the one-line kernel's code is what it was.
template <class Op>
struct StreamLines {
  static constexpr int G = 1;
};
template <class Op, int G_>
struct StreamLines<LinesOp<Op, G_>> {
  static constexpr int G = G_;
};
template <class Op>
__device__ __forceinline__ Op stream_line_op(const Op& op) { return op; }
template <class Op, int G>
__device__ __forceinline__ Op stream_line_op(const LinesOp<Op, G>& op) { return op.line(); }
// (a state of float or double accumulators: the f32 cumprod's are doubles)
__device__ __forceinline__ float& comp(float& s, int) { return s; }
__device__ __forceinline__ float comp(const float& s, int) { return s; }
__device__ __forceinline__ double& comp(double& s, int) { return s; }
__device__ __forceinline__ double comp(const double& s, int) { return s; }
template <class A, int G>
__device__ __forceinline__ A& comp(Lines<A, G>& s, int g) { return s.v[g]; }
template <class A, int G>
__device__ __forceinline__ A comp(const Lines<A, G>& s, int g) { return s.v[g]; }

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// The segments of a landed tile that the scanning warps take, lane by lane: `a[w]` is warp
// w's in this lane (before the warp's reduction), in two chains. A partial tile's stage holds
// the identity past its bytes (in scan order), so no position is masked.
template <typename T, class Op, bool kRev>
__device__ __forceinline__ void stream_segments(const Op& op, const int4* stage, int lane,
                                                typename Op::S (&a)[kStreamWarps]) {
  typedef typename Op::S S;
  constexpr int L = 16 / (int)sizeof(T), G = StreamLines<Op>::G;
  const auto lop = stream_line_op(op);
#pragma unroll
  for (int w = 0; w < kStreamWarps; ++w) {
    S acc[2] = {op.identity(), op.identity()};
#pragma unroll
    for (int i = 0; i < kStreamRows; ++i) {
      const int v = (w * kStreamRows + i) * 32 + lane;  // in scan order
      float f[L];
      unpack16<T>(stage[kRev ? kStreamVecs - 1 - v : v], f);
#pragma unroll
      for (int e = 0; e < L; ++e)  // element e (in memory order) is line e mod G's
        comp(acc[i & 1], e % G) = lop.combine(comp(acc[i & 1], e % G), f[e]);
    }
    a[w] = op.combine(acc[0], acc[1]);
  }
}

// A scanning warp's part of a landed tile: its rows into registers (then the stage is free:
// `empty`), the scans of vectors and rows, then, once the tile's prefix is out (`pre`,
// phase `ph`), the prefix and the warps' segments before it, and the stores to `dst` (where
// the stage's vector 0 goes) straight from registers: the tile's first `nv` vectors in scan
// order (the rest of a partial tile's stage is the identity, scanned but not stored).
template <typename T, class Op, bool kRev>
__device__ __forceinline__ void stream_tile(const Op& op, const int4* stage, int4* dst, int warp,
                                            int lane, int nv, unsigned long long* empty,
                                            unsigned long long* pre, unsigned ph,
                                            const typename Op::S* prefix,
                                            const typename Op::S* seg,
                                            unsigned long long* mfree) {
  typedef typename Op::S S;
  constexpr int L = 16 / (int)sizeof(T), RPW = kStreamRows, G = StreamLines<Op>::G;
  constexpr bool kRescan = rescans(sizeof(T), sizeof(S) / G);  // (opaque_zero)
  const auto lop = stream_line_op(op);
  auto vec_at = [](int q) -> int { return kRev ? kStreamVecs - 1 - q : q; };
  int4 raw[RPW];  // the rows as they land (a 2-byte type's half the registers of floats)
#pragma unroll
  for (int i = 0; i < RPW; ++i) raw[i] = stage[vec_at((warp * RPW + i) * 32 + lane)];
  mbar_arrive(empty);  // every lane, after its own reads
  S inc[RPW];  // each lane's vector total, then the row's inclusive scan of them
#pragma unroll
  for (int i = 0; i < RPW; ++i) {
    float f[L];
    unpack16<T>(raw[i], f);
    S acc;  // each line from its first element in scan order (the first G cover the lines)
#pragma unroll
    for (int e = 0; e < L; ++e) {
      const int m = kRev ? L - 1 - e : e;
      comp(acc, m % G) = e < G ? f[m] : lop.combine(comp(acc, m % G), f[m]);
    }
    inc[i] = acc;
  }
#pragma unroll
  for (int d = 1; d < 32; d <<= 1)
#pragma unroll
    for (int i = 0; i < RPW; ++i) {
      const S o = shfl_up(inc[i], d);
      if (lane >= d) inc[i] = op.combine(o, inc[i]);
    }
  mbar_wait(pre, ph);
  if constexpr (kRescan) {
    const unsigned z = opaque_zero();
#pragma unroll
    for (int i = 0; i < RPW; ++i) raw[i] = launder(raw[i], z);
  }
  S base = *prefix;
#pragma unroll
  for (int w = 0; w < kStreamWarps; ++w)
    if (w < warp) base = op.combine(base, seg[w]);
  mbar_arrive(mfree);
  S run = op.identity();  // the warp's rows before this one
#pragma unroll
  for (int i = 0; i < RPW; ++i) {
    const S row_tot = shfl_idx(inc[i], 31);
    S before = shfl_up(inc[i], 1);
    if (lane == 0) before = op.identity();
    const S add = op.combine(base, op.combine(run, before));
    run = op.combine(run, row_tot);
    const int q = (warp * RPW + i) * 32 + lane;
    if (q < nv) {  // the vector's scan again (the same sums as its total's), after `add`
      float f[L], o[L];
      unpack16<T>(raw[i], f);
      if constexpr (kRescan) {  // `add` first
        S acc = add;
#pragma unroll
        for (int e = 0; e < L; ++e) {
          const int m = kRev ? L - 1 - e : e;
          comp(acc, m % G) = lop.combine(comp(acc, m % G), f[m]);
          o[m] = comp(acc, m % G);
        }
      } else {
        S acc;
#pragma unroll
        for (int e = 0; e < L; ++e) {
          const int m = kRev ? L - 1 - e : e;
          comp(acc, m % G) = e < G ? f[m] : lop.combine(comp(acc, m % G), f[m]);
          o[m] = lop.combine(comp(add, m % G), comp(acc, m % G));
        }
      }
      dst[vec_at(q)] = pack16<T>(o);  // plain: evict-first stores measured no faster
    }
  }
}
#endif

template <typename T, typename A, class Op, bool kRev>
__device__ __forceinline__ void scan_stream_dir(const Params& P) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  typedef typename Op::S S;
  static_assert(kOneInputOp<Op>, "the stream kernel takes one-input ops");
  constexpr int G = StreamLines<Op>::G;  // interleaved lines: G words a tile and a wave
  typedef StateWord<A> W;  // a line's state in a tile's or a wave's word
  if constexpr (W::kOk && sizeof(S) == sizeof(A) * G && sizeof(T) <= 4) {
    constexpr int NV = kStreamVecs;
    constexpr int kWave = kStreamWave;  // tiles a wave: the prefix warp's G words a tile
    constexpr bool kEvictFirst = sizeof(T) < 4 || G > 1;  // the bulk loads' policy (bulk_load)
    extern __shared__ __align__(128) int4 stream_buf[];  // bulk copies land on 128-byte lines
    __shared__ __align__(8) unsigned long long full[kStreamStages], empty[kStreamStages];
    __shared__ __align__(8) unsigned long long red[kStreamMeta], pre[kStreamMeta], mfree[kStreamMeta];
    __shared__ __align__(8) unsigned long long zeroed;
    __shared__ int stage_tile[kStreamStages], meta_tile[kStreamMeta];
    __shared__ S seg[kStreamMeta][kStreamWarps + 1];
    __shared__ S prefix[kStreamMeta];
    unsigned char* ring = reinterpret_cast<unsigned char*>(stream_buf);
    const Op op{P.mode};
    const auto lop = stream_line_op(op);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const i64 rowb = P.n * (i64)sizeof(T);
    const int tpr = (int)P.nchunks;                  // tiles a row
    const int ntiles = (int)(P.rows * P.nchunks);
    const int waves = (tpr + kWave - 1) / kWave;  // a row's
    unsigned* counter = reinterpret_cast<unsigned*>(P.lb);
    unsigned long long* totals = reinterpret_cast<unsigned long long*>(  // G words a tile
        reinterpret_cast<unsigned char*>(P.lb) + 16);
    unsigned long long* wave_pre = totals + ntiles * G;  // G words a wave
    const int grid = (int)gridDim.x;
    {  // the blocks zero the workspace (the counter's two words, then the tiles' and waves')
      const i64 words = 2 + ntiles * G + P.rows * waves * G;
      unsigned long long* ws = totals - 2;
      for (i64 i = blockIdx.x * (i64)kStreamThreads + threadIdx.x; i < words;
           i += (i64)grid * kStreamThreads)
        ws[i] = 0ull;
    }
    const unsigned char* in = reinterpret_cast<const unsigned char*>(in_ptr<T>(P, IN0));
    unsigned char* out = reinterpret_cast<unsigned char*>(P.op[OUT].ptr);
    auto row_at = [&](i64 r, int k) -> i64 { return r * P.op[k].outer.v[0] * (i64)sizeof(T); };
    // tile t: its row, its index j in the row (scan order), its bytes, where they start in
    // the row (in a stage: at the end in reverse scans)
    auto tile_bytes = [&](int j) -> int { return (int)min((i64)kStreamTile, rowb - (i64)j * kStreamTile); };
    auto tile_lo = [&](int j, int nb) -> i64 {
      return kRev ? rowb - (i64)j * kStreamTile - nb : (i64)j * kStreamTile;
    };
    if (threadIdx.x == 0) {
      for (int s = 0; s < kStreamStages; ++s) {
        mbar_init(&full[s], 32);                        // the loader's lanes
        mbar_init(&empty[s], 32 * (kStreamWarps + 1));  // the scanning warps' and reducer's
      }
      mbar_init(&zeroed, 1);
      for (int s = 0; s < kStreamMeta; ++s) {
        mbar_init(&red[s], 1); mbar_init(&pre[s], 32); mbar_init(&mfree[s], 32 * kStreamWarps);
      }
      asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (warp == kStreamLoader) {  // the loads
      // a stage's tile: the first stages' by block index, then in the order of the counter
      auto issue = [&](int s, bool first) -> bool {
        int t = (int)blockIdx.x + s * grid;
        if (!first) {
          if (lane == 0) t = kStreamStages * grid + (int)atomicAdd(counter, 1u);
          t = __shfl_sync(kFull, t, 0);
        }
        const bool ok = t < ntiles;
        const int r = ok ? t / tpr : 0, j = t - r * tpr, nb = ok ? tile_bytes(j) : 0;
        if (ok && nb < kStreamTile) {
          // a row's partial last tile: the rest of the stage (past its bytes in scan order)
          // holds the identity, so the tile is scanned like any other (not stored there)
          float id[16 / sizeof(T)];
#pragma unroll
          for (int e = 0; e < (int)(16 / sizeof(T)); ++e) id[e] = lop.identity();
          const int4 idv = pack16<T>(id);
          int4* st = reinterpret_cast<int4*>(ring + s * kStreamTile);
          const int lo = kRev ? 0 : nb / 16, hi = kRev ? NV - nb / 16 : NV;
          for (int v = lo + lane; v < hi; v += 32) st[v] = idv;
          // these generic-proxy writes come before the bulk copies' (async-proxy) writes to
          // this stage, this tile's and later ones'
          asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
          __syncwarp();
        }
        if (lane == 0) {
          stage_tile[s] = ok ? t : -1;
          if (ok) {
            mbar_arrive_tx(&full[s], nb);
            bulk_load<kEvictFirst>(ring + s * kStreamTile + (kRev ? kStreamTile - nb : 0),
                                   in + row_at(r, IN0) + tile_lo(j, nb), nb, &full[s]);
          } else {
            mbar_arrive(&full[s]);
          }
        } else {
          mbar_arrive(&full[s]);  // after this lane's part of the fill
        }
        return ok;
      };
      int issued = 0;
      bool more = true;
      for (; issued < kStreamStages && more; ++issued) more = issue(issued, true);
      // Those loads are in flight while the grid waits for every block's zeroing (a
      // cooperative launch: every block is resident). Only then may this warp claim tiles
      // and the reducer publish totals (`zeroed`), and the prefix warp read the words.
      if (lane == 0) {
        grid_wait(grid_arrive());
        mbar_arrive(&zeroed);
      }
      __syncwarp();
      for (; more; ++issued) {  // a stage as soon as its scanning warps and reducer are done
        const int s = issued % kStreamStages;
        mbar_wait(&empty[s], ((issued / kStreamStages) - 1) & 1);
        more = issue(s, false);
      }
      return;
    }
    if (warp == kStreamReducer) {  // each tile's total as soon as it lands
      for (int k = 0;; ++k) {
        const int s = k % kStreamStages, ms = k % kStreamMeta;
        mbar_wait(&full[s], (k / kStreamStages) & 1);
        const int t = stage_tile[s];
        if (t < 0) {
          if (k >= kStreamMeta) mbar_wait(&mfree[ms], ((k / kStreamMeta) - 1) & 1);
          if (lane == 0) { meta_tile[ms] = -1; mbar_arrive(&red[ms]); }
          break;
        }
        S a[kStreamWarps];  // the scanning warps' segments, lane by lane
        stream_segments<T, Op, kRev>(op, reinterpret_cast<const int4*>(ring + s * kStreamTile),
                                     lane, a);
        mbar_arrive(&empty[s]);
#pragma unroll
        for (int d = 1; d < 32; d <<= 1)
#pragma unroll
          for (int w = 0; w < kStreamWarps; ++w) {
            const S o = shfl_down(a[w], d);
            if (lane + d < 32) a[w] = op.combine(a[w], o);
          }
        S tot = op.identity();
#pragma unroll
        for (int w = 0; w < kStreamWarps; ++w) tot = op.combine(tot, a[w]);
        if (k == 0) mbar_wait(&zeroed, 0);
        if (lane == 0) {
#pragma unroll
          for (int g = 0; g < G; ++g)
            st_relaxed(totals + t * G + g, W::pack(comp(tot, g)));
        }
        if (k >= kStreamMeta) mbar_wait(&mfree[ms], ((k / kStreamMeta) - 1) & 1);
        if (lane == 0) {
#pragma unroll
          for (int w = 0; w < kStreamWarps; ++w) seg[ms][w] = a[w];
          seg[ms][kStreamWarps] = tot;
          meta_tile[ms] = t;
          mbar_arrive(&red[ms]);
        }
        __syncwarp();
      }
      return;
    }
    if (warp == kStreamPrefix) {  // each tile's exclusive prefix
      constexpr int M = kWave / 32;
      for (int k = 0;; ++k) {
        const int ms = k % kStreamMeta;
        mbar_wait(&red[ms], (k / kStreamMeta) & 1);
        const int t = meta_tile[ms];
        if (t < 0) {
          mbar_arrive(&pre[ms]);
          break;
        }
        const S tot = seg[ms][kStreamWarps];
        const int r = t / tpr, j = t - r * tpr, w = j / kWave;
        const int first = t - (j - w * kWave);  // the wave's first tile
        unsigned long long word[M][G], wp[G];
#pragma unroll
        for (int g = 0; g < G; ++g) {
          wp[g] = w == 0 ? W::pack(lop.identity()) : 0ull;
#pragma unroll
          for (int m = 0; m < M; ++m) word[m][g] = first + lane + 32 * m < t ? 0ull : W::kDone;
        }
        bool ready;
        do {
          ready = true;
#pragma unroll
          for (int m = 0; m < M; ++m)
#pragma unroll
            for (int g = 0; g < G; ++g) {
              if (!W::ready(word[m][g]))
                word[m][g] = ld_relaxed(totals + first * G + lane * G + 32 * m * G + g);
              ready &= W::ready(word[m][g]);
            }
          if (lane == 0) {
#pragma unroll
            for (int g = 0; g < G; ++g) {
              if (!W::ready(wp[g])) wp[g] = ld_relaxed(wave_pre + r * waves * G + w * G + g);
              ready &= W::ready(wp[g]);
            }
          }
        } while (!__all_sync(kFull, ready));
        S part = op.identity();
#pragma unroll
        for (int m = 0; m < M; ++m)
          if (first + lane + 32 * m < t) {
#pragma unroll
            for (int g = 0; g < G; ++g)
              comp(part, g) = lop.combine(comp(part, g), W::unpack(word[m][g]));
          }
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
          const S o = shfl_down(part, d);
          if (lane + d < 32) part = op.combine(part, o);
        }
        if (lane == 0) {
          S wps;
#pragma unroll
          for (int g = 0; g < G; ++g) comp(wps, g) = W::unpack(wp[g]);
          const S ex = op.combine(wps, part);
          prefix[ms] = ex;
          mbar_arrive(&pre[ms]);
          if (j - w * kWave == kWave - 1 && j != tpr - 1) {
            const S next = op.combine(ex, tot);
#pragma unroll
            for (int g = 0; g < G; ++g)
              st_relaxed(wave_pre + r * waves * G + w * G + G + g, W::pack(comp(next, g)));
          }
        } else {
          mbar_arrive(&pre[ms]);  // after this lane's reads of the tile's words
        }
        __syncwarp();
      }
      return;
    }
    for (int k = 0;; ++k) {  // the scanning warps
      const int s = k % kStreamStages, ms = k % kStreamMeta;
      mbar_wait(&full[s], (k / kStreamStages) & 1);
      const int t = stage_tile[s];
      if (t < 0) break;
      const int r = t / tpr, j = t - r * tpr, nb = tile_bytes(j), nv = nb / 16;
      const int4* stage = reinterpret_cast<const int4*>(ring + s * kStreamTile);
      int4* dst = reinterpret_cast<int4*>(out + row_at(r, OUT) + tile_lo(j, nb) -
                                          (kRev ? kStreamTile - nb : 0));
      stream_tile<T, Op, kRev>(op, stage, dst, warp, lane, nv, &empty[s], &pre[ms],
                               (k / kStreamMeta) & 1, &prefix[ms], seg[ms], &mfree[ms]);
    }
  } else {
    __trap();  // f64 elements: the host never launches these
  }
#endif
}


}  // namespace scan
}  // namespace bc

// At least MINB blocks of 256 per SM (a register cap of 64 for 4, 80 for 3, 128 for 2), so
// one block's loads overlap the others' scans and look-backs. Without a cap the heavier ops
// took up to 175 registers: one block, 8 warps, per SM. Caps chosen without spills (ptxas),
// except where more warps measured faster despite spills to L1-cached local memory: cummax
// rows (RMINB 4, 96-108 spilled bytes then, 40-56 with the branch-free MaxOp; H100 4096 x
// 8192: f32 252 vs 284 us, bf16 196 vs 259), the logcumsumexp backward's rows (36-44 bytes;
// 180 vs 230 us, 173 vs 206) and the fused cummax backward (4 vs 3: 214 vs 253 us). The
// cumprod backward stays at 3 (144 vs 178 us at 4).
#define BC_LB_KERNEL(op, MINB) \
  extern "C" __global__ void __launch_bounds__(256, MINB) BC_ENTRY(op)

// MINB: look-back kernels; RMINB: rows1 / rows8; OP the op of contiguous axes (rows1, rows8,
// lbrows and the chunk states), SOP that of strided ones (cols, lbcols; their chunk states
// are cstates1 / cstates8 where SOP is not OP). The three-pass chunk kernels (rows1, rows8,
// cols, states1, states8) wait for the previous kernel and let the next one launch (they run
// as dependent launches on sm_90, launch_scan).
// The two entries of the chunk states of op OP (a thread, or a warp, per line).
#define BC_SCAN_STATES_ENTRIES(E1, E8, OP)                           \
  BC_KERNEL(E1, 256)(bc::scan::Params p) {                           \
    bc::pdl_wait();                                                  \
    bc::pdl_launch_dependents();                                     \
    bc::scan::scan_states<BC_T, BC_ACC, bc::scan::OP<BC_ACC>, 1>(p); \
  }                                                                  \
  BC_KERNEL(E8, 256)(bc::scan::Params p) {                           \
    bc::pdl_wait();                                                  \
    bc::pdl_launch_dependents();                                     \
    bc::scan::scan_states<BC_T, BC_ACC, bc::scan::OP<BC_ACC>, 8>(p); \
  }
#define BC_SCAN_ENTRIES2(name, OP, SOP, MINB, RMINB)                                                        \
  BC_LB_KERNEL(scan_##name##_rows1, RMINB)(bc::scan::Params p) {                             \
    bc::pdl_wait();                                                                     \
    bc::pdl_launch_dependents();                                                        \
    bc::scan::scan_rows<BC_T, BC_ACC, bc::scan::OP<BC_ACC>, 1>(p);                           \
  }                                                                                          \
  BC_LB_KERNEL(scan_##name##_rows8, RMINB)(bc::scan::Params p) {                             \
    bc::pdl_wait();                                                                     \
    bc::pdl_launch_dependents();                                                        \
    bc::scan::scan_rows<BC_T, BC_ACC, bc::scan::OP<BC_ACC>, 8>(p);                           \
  }                                                                                          \
  BC_KERNEL(scan_##name##_cols, 256)(bc::scan::Params p) {                                   \
    bc::pdl_wait();                                                                     \
    bc::pdl_launch_dependents();                                                        \
    bc::scan::scan_cols<BC_T, BC_ACC, bc::scan::SOP<BC_ACC>>(p);                              \
  }                                                                                          \
  BC_LB_KERNEL(scan_##name##_short, 2)(bc::scan::Params p) {                                 \
    bc::scan::scan_short<BC_T, BC_ACC, bc::scan::SOP<BC_ACC>, 1,                              \
                         bc::scan::kShortWord<BC_T, bc::scan::SOP<BC_ACC>>>(p);               \
  }                                                                                          \
  BC_LB_KERNEL(scan_##name##_short1, 2)(bc::scan::Params p) {                                \
    bc::scan::scan_short<BC_T, BC_ACC, bc::scan::SOP<BC_ACC>, 1, sizeof(BC_T)>(p);            \
  }                                                                                          \
  BC_SCAN_STATES_ENTRIES(scan_##name##_states1, scan_##name##_states8, OP)                    \
  BC_LB_KERNEL(scan_##name##_lbrows, MINB)(bc::scan::Params p) {                                 \
    bc::pdl_wait();                                                                          \
    bc::scan::scan_lb_rows<BC_T, BC_ACC, bc::scan::OP<BC_ACC>>(p);                           \
  }                                                                                          \
  BC_LB_KERNEL(scan_##name##_lbcols, MINB)(bc::scan::Params p) {                                 \
    bc::pdl_wait();                                                                          \
    bc::scan::scan_lb_cols<BC_T, BC_ACC, bc::scan::SOP<BC_ACC>>(p);                           \
  }

// The chunk states of strided axes (cols) where the op there (SOP) is not the rows' (OP).
#define BC_SCAN_COLS_STATES_ENTRIES(name, SOP) \
  BC_SCAN_STATES_ENTRIES(scan_##name##_cstates1, scan_##name##_cstates8, SOP)
#define BC_SCAN_ENTRIES(name, OP, MINB, RMINB) BC_SCAN_ENTRIES2(name, OP, OP, MINB, RMINB)

// One entry scan_<name>_<kind> of THREADS threads, at least MINB blocks an SM, running
// bc::scan::FN for op OP (no dependent-launch wait: these kernels are plain launches).
#define BC_SCAN_BLOCK_ENTRY(name, OP, kind, FN, THREADS, MINB)                                \
  extern "C" __global__ void __launch_bounds__(THREADS, MINB) BC_ENTRY(scan_##name##_##kind)( \
      bc::scan::Params p) {                                                                   \
    bc::scan::FN<BC_T, BC_ACC, bc::scan::OP<BC_ACC>>(p);                                      \
  }

// Pipelined warp rows (at most 64 registers so 4 blocks, 32 warps, fit on an SM), and
// segmented tiles of short rows (at most 80: 3 blocks; under 64, the 2-byte types and
// logcumsumexp spilled; the host's SEG_WARPS_PER_SM mirrors it).
#define BC_SCAN_SEG_ENTRY(name, OP) BC_SCAN_BLOCK_ENTRY(name, OP, seg, scan_seg, 256, 3)
// ... and with one vector a lane (scan_seg1: cumsum, cumprod, logcumsumexp, cummax/cummin)
#define BC_SCAN_SEG1_ENTRY(name, OP) BC_SCAN_BLOCK_ENTRY(name, OP, seg1, scan_seg1, 256, 3)
// Two blocks, at most 128 registers, where 80 spilled: the backward's segmented tiles of the
// cumprod and logcumsumexp backward (three inputs a position; the 2-byte cumprod backward
// still spills 16 bytes), the cummax backward's second pass in 2-byte types (72-80 bytes
// spilled at 80), and cummax/cummin's 2-byte kernel (K = 16 positions a lane, 93-114
// registers: 88 bytes spilled at 80; on the H100, (2^20, 16) bf16 took 104.8 us at 3 blocks,
// 84.6 at 2). The host asks the driver how many blocks fit.
#define BC_SCAN_SEG_WIDE_ENTRY(name, OP, MINB) \
  BC_SCAN_BLOCK_ENTRY(name, OP, seg, scan_seg, 256, MINB)
#define BC_SCAN_PIPE_ENTRY(name, OP)                      \
  BC_SCAN_BLOCK_ENTRY(name, OP, pipe1, scan_pipe, 256, 4) \
  BC_SCAN_SEG_ENTRY(name, OP)                             \
  BC_SCAN_SEG1_ENTRY(name, OP)
// Cooperative pieces of long lines: one block an SM (8 warps, 16 for 2-byte types), an entry
// a direction.
#define BC_SCAN_COOP_ENTRY(name, OP)                                                      \
  BC_SCAN_BLOCK_ENTRY(name, OP, coop, scan_coop, 32 * bc::scan::kCoopWarps<BC_T>, 1)      \
  BC_SCAN_BLOCK_ENTRY(name, OP, cooprev, scan_cooprev, 32 * bc::scan::kCoopWarps<BC_T>, 1)
// The same over 2 and 4 interleaved lines, in a program of their own (BC_SCAN_GROUP_*_LINES):
// they took the cumsum program's compile from 7 to 17 s (f32, a 2-core CPU machine), and only
// shapes (n, 2) and (n, 4) along dim 0 use them.
#define BC_SCAN_LINES_ENTRY(name, OP)                                                        \
  BC_SCAN_BLOCK_ENTRY(name, OP, coop2, scan_coop2, 32 * bc::scan::kCoopWarps<BC_T>, 1)       \
  BC_SCAN_BLOCK_ENTRY(name, OP, coop2rev, scan_coop2rev, 32 * bc::scan::kCoopWarps<BC_T>, 1) \
  BC_SCAN_BLOCK_ENTRY(name, OP, coop4, scan_coop4, 32 * bc::scan::kCoopWarps<BC_T>, 1)       \
  BC_SCAN_BLOCK_ENTRY(name, OP, coop4rev, scan_coop4rev, 32 * bc::scan::kCoopWarps<BC_T>, 1)
// The cooperative kernel in rounds, in a program of its own (BC_SCAN_GROUP_*_ROUNDS): only
// lines longer than one round holds use it.
#define BC_SCAN_ROUNDS_ENTRY(name, OP)                                                          \
  BC_SCAN_BLOCK_ENTRY(name, OP, rounds, scan_rounds, 32 * bc::scan::kCoopWarps<BC_T>, 1)       \
  BC_SCAN_BLOCK_ENTRY(name, OP, roundsrev, scan_roundsrev, 32 * bc::scan::kCoopWarps<BC_T>, 1)
#define BC_SCAN_STAGE_ENTRY(name, OP)                                                        \
  BC_LB_KERNEL(scan_##name##_lbstage, 4)(bc::scan::Params p) {                               \
    bc::pdl_wait();                                                                          \
    bc::scan::scan_lb_stage<BC_T, BC_ACC, bc::scan::OP<BC_ACC>>(p);                          \
  }
// Strips of adjacent lines: one block an SM (the ring takes most of shared memory); of 512
// threads for ops whose work a position is long (STRIP_512_OPS)
#define BC_SCAN_STRIP_ENTRY(name, OP) BC_SCAN_BLOCK_ENTRY(name, OP, strip, scan_strip, 256, 1)
#define BC_SCAN_STRIP512_ENTRY(name, OP) \
  BC_SCAN_BLOCK_ENTRY(name, OP, strip512, scan_strip512, 512, 1)
#define BC_SCAN_STRIP_NARROW_ENTRY(name, OP) \
  BC_SCAN_BLOCK_ENTRY(name, OP, strip_narrow, scan_strip_narrow, 256, 1)
#define BC_SCAN_STRIP6_ENTRY(name, OP) BC_SCAN_BLOCK_ENTRY(name, OP, strip6, scan_strip6, 256, 2)
// Short strided axes, NV words of lines a thread where the outer dims coalesce to one (the
// host's _kernels.SHORT_MANY and SHORT1_MANY), two blocks an SM: shortx2 / shortx4 two or four
// 16-byte vectors (cummax/cummin: pairs of lines) and short1x4 / short1x8 four or eight lines
// of other layouts, WB words of loads a batch; BC_SCAN_ENTRIES2 holds short and short1 (NV 1).
// short1x8 loads two positions a batch and short1x8b3 three (the host's SHORT1_MANY: over 2 or
// 4 positions and over 3), so that a thread has 16 or 24 loads of its words in flight. On an
// H200 (docs/benchmarks.md, round 51) bf16 cumsum over (2, 8388607) 45.6 us with a position a
// batch, 36.8 with two (three: 42.6, 90 registers, two blocks an SM); over (3, 5592405) 45.2,
// 39.9, 38.2; over (4, 4194303) 45.6, 36.7, 40.5 (f32 47.3, 43.0; 47.7, 45.6, 44.8; 48.3, 44.3).
#define BC_SCAN_SHORT_ENTRY(name, OP, kind, NV, W, WB)                                    \
  BC_LB_KERNEL(scan_##name##_##kind, 2)(bc::scan::Params p) {                            \
    bc::scan::scan_short<BC_T, BC_ACC, bc::scan::OP<BC_ACC>, NV, W, WB>(p);               \
  }
#define BC_SCAN_SHORT_MANY_ENTRIES(name, OP)        \
  BC_SCAN_SHORT_ENTRY(name, OP, shortx2, 2, 16, 8) \
  BC_SCAN_SHORT_ENTRY(name, OP, shortx4, 4, 16, 8)
#define BC_SCAN_SHORT1_MANY_ENTRY(name, OP)                   \
  BC_SCAN_SHORT_ENTRY(name, OP, short1x8, 8, sizeof(BC_T), 16) \
  BC_SCAN_SHORT_ENTRY(name, OP, short1x8b3, 8, sizeof(BC_T), 24)
// cummax/cummin's lines that are not whole vectors, a line a thread (scan_max_lines), NB
// positions' loads a batch, MINB blocks an SM
#define BC_SCAN_MAX_LINES_ENTRY(kind, NB, MINB)             \
  BC_LB_KERNEL(scan_max_##kind, MINB)(bc::scan::Params p) { \
    bc::scan::scan_max_lines_any<BC_T, BC_ACC, NB>(p);      \
  }
// Contiguous rows through a ring: at least one block an SM (96 KiB of ring; the host takes two
// where they fit).
#define BC_SCAN_RING_ENTRY(name, OP) BC_SCAN_BLOCK_ENTRY(name, OP, ring, scan_ring, 256, 1)
// Contiguous rows of up to 8, 16 or 32 KiB in registers (scan_rowreg: 2, 4 or 8 vectors a
// lane), at least two blocks an SM (at most 128 registers; 48-126 used on sm_90, none spilled
// but logcumsumexp's f64 rowreg8, 48 bytes of stack).
#define BC_SCAN_ROWREG_ENTRY1(name, OP, kind, V, MINB)                                    \
  extern "C" __global__ void __launch_bounds__(256, MINB) BC_ENTRY(scan_##name##_##kind)( \
      bc::scan::Params p) {                                                             \
    bc::scan::scan_rowreg<BC_T, BC_ACC, bc::scan::OP<BC_ACC>, V>(p);                    \
  }
#define BC_SCAN_ROWREG_ENTRY(name, OP)           \
  BC_SCAN_ROWREG_ENTRY1(name, OP, rowreg2, 2, 2) \
  BC_SCAN_ROWREG_ENTRY1(name, OP, rowreg4, 4, 2) \
  BC_SCAN_ROWREG_ENTRY1(name, OP, rowreg8, 8, 2)
// logcumsumexp's, in f64 alone (the host's ROWREG_LSE_ITEMSIZES): every type's scan the same,
// the others' measured slower than their warp rows and compiled empty (docs/benchmarks.md,
// round 71)
#define BC_SCAN_ROWREG_LSE_ENTRY1(kind, V)                                                 \
  extern "C" __global__ void __launch_bounds__(256, 2) BC_ENTRY(scan_lse_##kind)(          \
      bc::scan::Params p) {                                                                \
    if constexpr (sizeof(BC_T) == 8)                                                       \
      bc::scan::scan_rowreg<BC_T, BC_ACC, bc::scan::LseOp<BC_ACC>, V>(p);                  \
  }
// Few long rows in one pass (sm_90; the host launches them for no other arch), in programs
// of their own (BC_SCAN_GROUP_*_STREAM): an entry a direction, a cooperative launch that
// zeroes its own workspace, two blocks an SM (80 registers: ptxas counts the 352 threads as
// 384). __maxnreg__(88), which also fits two blocks, measured slower in f32 (H200, round 37:
// (2, 2^23) 48.5 against 45.5 us, (1, 2^26) 173.9 against 162.5) though it spills less in the
// 2-byte types (spill stores of 28-88 bytes against 84-140).
#define BC_SCAN_STREAM_ENTRY(name, OP)                                                      \
  extern "C" __global__ void __launch_bounds__(bc::scan::kStreamThreads, 2)                 \
      BC_ENTRY(scan_##name##_stream)(bc::scan::Params p) {                                  \
    bc::scan::scan_stream_dir<BC_T, BC_ACC, bc::scan::OP<BC_ACC>, false>(p);                \
  }                                                                                         \
  extern "C" __global__ void __launch_bounds__(bc::scan::kStreamThreads, 2)                 \
      BC_ENTRY(scan_##name##_streamrev)(bc::scan::Params p) {                               \
    bc::scan::scan_stream_dir<BC_T, BC_ACC, bc::scan::OP<BC_ACC>, true>(p);                 \
  }                                                                                         \
  BC_SCAN_STREAM_LINES_ENTRY(name, OP, 2)                                                   \
  BC_SCAN_STREAM_LINES_ENTRY(name, OP, 4)
// The same over G interleaved lines (a tensor (n, G) along dim 0 as one run of memory). With
// double accumulators (the f32 cumprod) one block an SM (kStreamLinesMinBlocks): the G lines'
// doubles spilled 200-392 bytes a thread at two blocks' 80 registers, and unspilled at one
// block (up to 168) they ran faster on an H200 (round 61): (2^22, 2) 35.8 against 45.3 us,
// (2^21, 4) 48.9 against 71.6, (2^20, 2) 16.0 against 18.5. One line stays at two blocks: one
// block took (1, 2^26) 181.5 against 172.6 us, though (2, 2^23) 52.5 against 54.0.
#define BC_SCAN_STREAM_LINES_ENTRY(name, OP, G)                                             \
  extern "C" __global__ void __launch_bounds__(bc::scan::kStreamThreads,                    \
                                               bc::scan::kStreamLinesMinBlocks<BC_ACC>)     \
      BC_ENTRY(scan_##name##_stream##G)(bc::scan::Params p) {                               \
    bc::scan::scan_stream_dir<BC_T, BC_ACC, bc::scan::LinesOp<bc::scan::OP<BC_ACC>, G>,     \
                              false>(p);                                                    \
  }                                                                                         \
  extern "C" __global__ void __launch_bounds__(bc::scan::kStreamThreads,                    \
                                               bc::scan::kStreamLinesMinBlocks<BC_ACC>)     \
      BC_ENTRY(scan_##name##_stream##G##rev)(bc::scan::Params p) {                          \
    bc::scan::scan_stream_dir<BC_T, BC_ACC, bc::scan::LinesOp<bc::scan::OP<BC_ACC>, G>,     \
                              true>(p);                                                     \
  }
// Line pairs of 2-byte types (the host launches them for no other type).
#define BC_SCAN_PAIR_ENTRY(name, OP)                                                         \
  BC_LB_KERNEL(scan_##name##_lbpair, 4)(bc::scan::Params p) {                                \
    bc::pdl_wait();                                                                          \
    if constexpr (sizeof(BC_T) == 2)                                                         \
      bc::scan::scan_lb_pairs<BC_T, BC_ACC, bc::scan::OP<BC_ACC>>(p);                        \
  }

// One program per group of ops (baracuda.scan._kernels.SCAN_GROUPS): the host compiles this
// file once per group with BC_SCAN_GROUP_<NAME> defined, so a plan compiles only its own
// kernels. Every kernel is in exactly one group (the interleaved lines' coop entries of sum
// and prod, and the rounds entries, are groups of their own: LINES_GROUPS, ROUNDS_GROUPS).
#if defined(BC_SCAN_GROUP_SUM) + defined(BC_SCAN_GROUP_PROD) + defined(BC_SCAN_GROUP_MAX) + \
        defined(BC_SCAN_GROUP_LSE) + defined(BC_SCAN_GROUP_PROD_BWD) +                     \
        defined(BC_SCAN_GROUP_LSE_BWD) + defined(BC_SCAN_GROUP_MAX_BWD) +                  \
        defined(BC_SCAN_GROUP_SUM_LINES) + defined(BC_SCAN_GROUP_PROD_LINES) +             \
        defined(BC_SCAN_GROUP_SUM_ROUNDS) + defined(BC_SCAN_GROUP_PROD_ROUNDS) +           \
        defined(BC_SCAN_GROUP_LSE_ROUNDS) + defined(BC_SCAN_GROUP_SUM_STREAM) +            \
        defined(BC_SCAN_GROUP_PROD_STREAM) !=                                              \
    1
#error "scan.cu: define exactly one BC_SCAN_GROUP_<NAME> (baracuda.scan._kernels.SCAN_SOURCES)"
#endif

// BC_ACC is the element's accumulator, but double for f32 in the cumprod's programs (prod,
// prod_lines, prod_rounds, prod_stream): baracuda.scan._kernels._DOUBLE_F32_OPS, through
// KernelSource.double_acc. Their kernels then hold 8-byte states, as in f64.
// Every program: the look-back workspace's zeroing (op- and dtype-independent).
BC_KERNEL(scan_zero, 256)(unsigned* p, long long words) { bc::scan::zero_lb_words(p, words); }

#if defined(BC_SCAN_GROUP_SUM)  // cumsum and its backward
BC_SCAN_ENTRIES(sum, SumOp, 4, 4)
BC_SCAN_PIPE_ENTRY(sum, SumOp)
BC_SCAN_COOP_ENTRY(sum, SumOp)
BC_SCAN_STAGE_ENTRY(sum, SumOp)
BC_SCAN_STRIP_ENTRY(sum, SumOp)
BC_SCAN_STRIP_NARROW_ENTRY(sum, SumOp)
BC_SCAN_STRIP6_ENTRY(sum, SumOp)
BC_SCAN_SHORT_MANY_ENTRIES(sum, SumOp)
BC_SCAN_SHORT1_MANY_ENTRY(sum, SumOp)
BC_SCAN_RING_ENTRY(sum, SumOp)
BC_SCAN_PAIR_ENTRY(sum, SumOp)
BC_SCAN_ROWREG_ENTRY(sum, SumOp)
#elif defined(BC_SCAN_GROUP_PROD)
BC_SCAN_ENTRIES(prod, ProdOp, 4, 4)
BC_SCAN_PIPE_ENTRY(prod, ProdOp)
BC_SCAN_COOP_ENTRY(prod, ProdOp)
BC_SCAN_STAGE_ENTRY(prod, ProdOp)
BC_SCAN_STRIP_ENTRY(prod, ProdOp)
BC_SCAN_STRIP_NARROW_ENTRY(prod, ProdOp)
BC_SCAN_STRIP6_ENTRY(prod, ProdOp)
BC_SCAN_SHORT_MANY_ENTRIES(prod, ProdOp)
BC_SCAN_SHORT1_MANY_ENTRY(prod, ProdOp)
BC_SCAN_RING_ENTRY(prod, ProdOp)
BC_SCAN_PAIR_ENTRY(prod, ProdOp)
BC_SCAN_ROWREG_ENTRY(prod, ProdOp)
#elif defined(BC_SCAN_GROUP_SUM_LINES)  // cumsum (and its backward) over interleaved lines
BC_SCAN_LINES_ENTRY(sum, SumOp)
#elif defined(BC_SCAN_GROUP_PROD_LINES)
BC_SCAN_LINES_ENTRY(prod, ProdOp)
#elif defined(BC_SCAN_GROUP_SUM_ROUNDS)  // long lines of cumsum (and its backward)
BC_SCAN_ROUNDS_ENTRY(sum, SumOp)
#elif defined(BC_SCAN_GROUP_PROD_ROUNDS)
BC_SCAN_ROUNDS_ENTRY(prod, ProdOp)
#elif defined(BC_SCAN_GROUP_LSE_ROUNDS)
BC_SCAN_ROUNDS_ENTRY(lse, LseOp)
#elif defined(BC_SCAN_GROUP_SUM_STREAM)  // few long rows of cumsum (and its backward)
BC_SCAN_STREAM_ENTRY(sum, SumOp)
#elif defined(BC_SCAN_GROUP_PROD_STREAM)
BC_SCAN_STREAM_ENTRY(prod, ProdOp)
#elif defined(BC_SCAN_GROUP_MAX)  // cummax and cummin
BC_SCAN_ENTRIES2(max, MaxRowsOp, MaxOp, 2, 4)
BC_SCAN_SEG_WIDE_ENTRY(max, MaxOp32, sizeof(BC_T) == 2 ? 2 : 3)
BC_SCAN_SEG1_ENTRY(max, MaxOp32)
BC_SCAN_BLOCK_ENTRY(max, MaxOp32, pipe1, scan_pipe, 256, sizeof(BC_T) == 2 ? 2 : 3)
// The same in 4 blocks an SM (64 registers, 40 bytes of stack in f32): the host takes it in
// f32 where the rows fill one wave of 4 blocks an SM and not of 3 (_kernels.PIPE_MAX_WAVE)
BC_SCAN_BLOCK_ENTRY(max, MaxOp32, pipe1w, scan_pipe, 256, 4)
// cummax/cummin's rows of more than 8 KiB in registers (the host's ROWREG_MAX_KINDS): four
// vectors a lane in three blocks an SM (77-79 registers), eight in two (116-128; f64 in three,
// 80 and 32 bytes of stack). On an H200 (docs/benchmarks.md, round 70), rowreg4 in two blocks
// an SM took bf16 4096 x 8192 in 121.1 us, in three 113.1 (warp rows 119.9); rowreg8 in
// three f32 4096 x 8192 in 166.0 (spilled), in two 153.0 (warp rows 158.7); f64 4096 x 4096
// in three 123.0, in two 135.5 (warp rows 124.9).
BC_SCAN_ROWREG_ENTRY1(max, MaxOp32, rowreg4, 4, 3)
BC_SCAN_ROWREG_ENTRY1(max, MaxOp32, rowreg8, 8, sizeof(BC_T) == 8 ? 3 : 2)
BC_SCAN_STRIP_ENTRY(max, MaxStripOp)
BC_SCAN_STRIP512_ENTRY(max, MaxStripOp)
// pairs of lines (their indices a 16-byte store), 16 words of loads a batch
BC_SCAN_SHORT_ENTRY(max, MaxOp, shortx2, 2, 2 * sizeof(BC_T), 16)
BC_SCAN_SHORT_ENTRY(max, MaxOp, shortx4, 4, 2 * sizeof(BC_T), 16)
BC_SCAN_SHORT_ENTRY(max, MaxOp, short1x4, 4, sizeof(BC_T), 16)
// a line a thread (scan_max_lines; the host's SHORT1_MANY and SHORT1_RESIDENT): two positions'
// loads a batch at 32 registers (8 blocks an SM) over up to 4 positions or where every line fits
// on the SMs at once, at 40 (6) over more; one position a load at 32 registers over more than 32
// positions of 1537 to 2048 lines an SM. On an H200 (docs/benchmarks.md, round 55) over 2
// positions bf16 59.5 against 64.8 us, f32 75.7 against 78.4; over 8 positions 67.0 against 66.3
// and 95.1 against 90.7. Round 56: bf16 over 64 positions of 2048 lines an SM, one position a
// load 74.5 against 79.6 (torch 74.2).
BC_SCAN_MAX_LINES_ENTRY(short1l, 2, 8)
BC_SCAN_MAX_LINES_ENTRY(short1lw, 2, 6)
BC_SCAN_MAX_LINES_ENTRY(short1l1, 1, 8)
#elif defined(BC_SCAN_GROUP_LSE)
BC_SCAN_ENTRIES(lse, LseOp, 4, 4)
BC_SCAN_PIPE_ENTRY(lse, LseOp)
BC_SCAN_COOP_ENTRY(lse, LseOp)
BC_SCAN_STAGE_ENTRY(lse, LseOp)
BC_SCAN_STRIP_ENTRY(lse, LseOp)
BC_SCAN_SHORT_ENTRY(lse, LseOp, shortx2, 2, 16, 8)
BC_SCAN_ROWREG_LSE_ENTRY1(rowreg2, 2)
BC_SCAN_ROWREG_LSE_ENTRY1(rowreg4, 4)
BC_SCAN_ROWREG_LSE_ENTRY1(rowreg8, 8)
#elif defined(BC_SCAN_GROUP_PROD_BWD)
BC_SCAN_ENTRIES(prod_bwd, ProdBwdOp, 2, 3)
BC_SCAN_SEG_WIDE_ENTRY(prod_bwd, ProdBwdOp, 2)
BC_SCAN_RING_ENTRY(prod_bwd, ProdBwdOp)
BC_SCAN_STRIP_ENTRY(prod_bwd, ProdBwdOp)
#elif defined(BC_SCAN_GROUP_LSE_BWD)
BC_SCAN_ENTRIES2(lse_bwd, LseBwdRowsOp, LseBwdOp, 2, 4)
BC_SCAN_COLS_STATES_ENTRIES(lse_bwd, LseBwdOp)
BC_SCAN_SEG_WIDE_ENTRY(lse_bwd, LseBwdRowsOp, 2)
BC_SCAN_RING_ENTRY(lse_bwd, LseBwdStripOp)
BC_SCAN_STRIP_ENTRY(lse_bwd, LseBwdStripOp)
BC_SCAN_STRIP512_ENTRY(lse_bwd, LseBwdStripOp)
#elif defined(BC_SCAN_GROUP_MAX_BWD)  // the cummax/cummin backward: winner flags, segmented sums
BC_SCAN_ENTRIES(seg_bwd, SegBwdOp, 2, 3)
BC_SCAN_ENTRIES(maxflag, MaxFlagOp, 4, 4)
BC_SCAN_SEG_WIDE_ENTRY(seg_bwd, SegBwdOp, sizeof(BC_T) == 2 ? 2 : 3)
BC_SCAN_SEG_ENTRY(maxflag, MaxFlagOp)
BC_SCAN_STRIP_ENTRY(seg_bwd, SegBwdOp)
BC_SCAN_STRIP_ENTRY(maxflag, MaxFlagOp)
BC_SCAN_SHORT_MANY_ENTRIES(seg_bwd, SegBwdOp)
BC_SCAN_SHORT_MANY_ENTRIES(maxflag, MaxFlagOp)
BC_LB_KERNEL(scan_max_bwd_rows, 4)(bc::scan::Params f, bc::scan::Params b) {
  bc::scan::scan_max_bwd_rows<BC_T, BC_ACC, 1>(f, b);
}
BC_LB_KERNEL(scan_max_bwd_rows8, 4)(bc::scan::Params f, bc::scan::Params b) {
  bc::scan::scan_max_bwd_rows<BC_T, BC_ACC, 8>(f, b);
}
// strips of a strided axis, one pass (x and dy staged: 128 KiB of ring, one block an SM)
extern "C" __global__ void __launch_bounds__(256, 1)
    BC_ENTRY(scan_max_bwd_strip)(bc::scan::Params p) {
  bc::scan::scan_max_bwd_strip<BC_T, BC_ACC>(p);
}
// through a ring: 96 KiB of it, two blocks an SM (at most 128 registers; the 2-byte types use
// them all, without spilling)
extern "C" __global__ void __launch_bounds__(256, 2)
    BC_ENTRY(scan_max_bwd_ring)(bc::scan::Params p) {
  bc::scan::scan_max_bwd_ring<BC_T, BC_ACC, bc::scan::kRingChunkOf<2>>(p);
}
// ... in chunks of half that, for rows of half a chunk to one (RING_MAX_BACKWARD_SHORT_ITEMSIZES)
extern "C" __global__ void __launch_bounds__(256, 2)
    BC_ENTRY(scan_max_bwd_ring8)(bc::scan::Params p) {
  bc::scan::scan_max_bwd_ring<BC_T, BC_ACC, bc::scan::kRingChunkOf<2> / 2>(p);
}
#endif
