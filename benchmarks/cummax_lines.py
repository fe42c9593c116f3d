"""cummax over lines that are not whole vectors, by positions and by lines an SM (round 56,
docs/benchmarks.md): along dim 0 of ``(n, L)`` with L odd, the kinds of a line a thread
(``scan_max_lines``: ``short1l``, two positions' loads a batch at 32 registers; ``short1lw``,
the same at 40; ``short1l1``, one position a load at 32) and ``short1`` forced in turn, the
package's defaults, round 55's defaults (no ``SHORT1_RESIDENT``) and ``torch.cummax``, in one
process. Every result is checked equal to ``torch.cummax`` (values and indices, ties to the
latest) before it is timed with the bench's method (``time_us``: L2 flushed, median).

``--grid positions`` runs about 2^24 elements over 6 to 64 positions; ``--grid lines`` 16 and
64 positions over 768 to 4096 lines an SM; ``--grid resident`` 2 to 64 positions over 1024 to
2304 (where every line fits on the SMs at once, at 2048 an SM, and just past it).
``--standalone`` (needs CuPy) times instead stand-alone kernels of torch's layout, a line a
thread, with NB positions' loads a batch, a block size, a minimum of blocks an SM and
``st.global.cs`` stores (of the indices, or of both outputs), beside the package and torch.
Prints a line a case, writes JSON:

    python benchmarks/cummax_lines.py out.json --grid resident        (on a GPU)
    python benchmarks/cummax_lines.py out.json --standalone
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import torch
from _scan_bench import CUMMAX_PRELUDE, write_json

import baracuda as bc
from baracuda._bench import time_us
from baracuda.scan import _kernels as K

_NAMES = {torch.bfloat16: "bf16", torch.float32: "f32", torch.float64: "f64"}
GRIDS: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {
    # (positions, lines an SM; 0: 2^24 // positions)
    "positions": ((6, 8, 12, 16, 24, 32, 48, 64), (0,)),
    "lines": ((16, 64), (768, 1024, 1280, 1536, 1792, 2048, 2304, 3072, 4096)),
    "resident": ((2, 8, 16, 32, 64), (1024, 1536, 1792, 1986, 2048, 2304)),
}
_MANY, _RESIDENT = K.SHORT1_MANY, K.SHORT1_RESIDENT
# the tables for each variant (new dicts: switch_values tells them apart by identity)
VARIANTS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "default": (_MANY, _RESIDENT),
    "round55": (_MANY, {}),
    **{k: ({**_MANY, "max": ((1 << 30, k),)}, {}) for k in ("short1l", "short1lw", "short1l1")},
    "short1": ({**_MANY, "max": ()}, {}),
}

STANDALONE = CUMMAX_PRELUDE + r"""
template <typename T> __device__ __forceinline__ T ft(typename Key<T>::K v) { return (T)v; }
template <> __device__ __forceinline__ __nv_bfloat16 ft<__nv_bfloat16>(float v) {
  return __float2bfloat16(v);
}
// torch's rule: NaN sticks, ties to the latest; CS & 1: values by st.global.cs, & 2: indices
template <typename T, int NB, int BLK, int MINB, int CS>
__global__ void __launch_bounds__(BLK, MINB) line(const T* __restrict__ x, T* __restrict__ y,
                                                  i64* __restrict__ ix, int n, i64 L) {
  typedef typename Key<T>::K K;
  const i64 l = (i64)blockIdx.x * BLK + threadIdx.x;
  if (l >= L) return;
  const T* px = x + l;
  T* py = y + l;
  i64* pi = ix + l;
  K m = -(K)__int_as_float(0x7f800000);
  int mi = 0, p = 0;
#pragma unroll 1
  for (; p + NB <= n; p += NB) {
    T raw[NB];
#pragma unroll
    for (int u = 0; u < NB; ++u) raw[u] = px[u * L];
    px += NB * L;
#pragma unroll
    for (int u = 0; u < NB; ++u) {
      const K v = tf(raw[u]);
      const bool w = (v != v) || (m == m && v >= m);
      m = w ? v : m;
      mi = w ? p + u : mi;
      if (CS & 1) __stcs(py, ft<T>(m)); else *py = ft<T>(m);
      if (CS & 2) __stcs(pi, (i64)mi); else *pi = mi;
      py += L;
      pi += L;
    }
  }
#pragma unroll 1
  for (; p < n; ++p) {
    const K v = tf(*px);
    px += L;
    const bool w = (v != v) || (m == m && v >= m);
    m = w ? v : m;
    mi = w ? p : mi;
    *py = ft<T>(m);
    *pi = mi;
    py += L;
    pi += L;
  }
}
"""
_CTYPES = {torch.bfloat16: "__nv_bfloat16", torch.float32: "float", torch.float64: "double"}
# (name, NB, block, min blocks an SM, CS)
KERNELS = [("nb1 b512", 1, 512, 1, 0), ("nb2 b256 m8", 2, 256, 8, 0), ("nb1 b256 m8", 1, 256, 8, 0),
           ("nb2 b512 m4", 2, 512, 4, 0), ("nb4 b256 m8", 4, 256, 8, 0),
           ("nb2 b256 m8 cs-idx", 2, 256, 8, 2), ("nb2 b256 m8 cs-both", 2, 256, 8, 3),
           ("nb1 b512 cs-idx", 1, 512, 1, 2), ("nb2 b128 m16", 2, 128, 16, 0)]  # fmt: skip
# (positions, lines an SM) of --standalone
STANDALONE_CASES = [(64, 1986), (64, 1792), (64, 1536), (32, 3972), (16, 7944), (64, 3072)]


def _package(x: torch.Tensor, want: tuple[torch.Tensor, torch.Tensor],
             variants: list[str]) -> dict[str, float]:  # fmt: skip
    out = {}
    for tag in variants:
        K.__dict__["SHORT1_MANY"], K.__dict__["SHORT1_RESIDENT"] = VARIANTS[tag]
        v, i = bc.cummax(x, axis=0, tie_break="last")
        ok = torch.equal(v, want[0]) and torch.equal(i, want[1])
        out[tag] = time_us(lambda: bc.cummax(x, axis=0, tie_break="last")) if ok else float("nan")
    K.__dict__["SHORT1_MANY"], K.__dict__["SHORT1_RESIDENT"] = _MANY, _RESIDENT
    return out


def _standalone(x: torch.Tensor, want: tuple[torch.Tensor, torch.Tensor],
                fn: Callable[[str], Any]) -> dict[str, float]:  # fmt: skip
    import cupy as cp

    n, lines = x.shape
    y = torch.empty_like(x)
    ix = torch.empty(x.shape, dtype=torch.int64, device="cuda")
    out = {}
    for tag, nb, block, minb, cs in KERNELS:
        f = fn(f"line<{_CTYPES[x.dtype]}, {nb}, {block}, {minb}, {cs}>")
        args = (x.data_ptr(), y.data_ptr(), ix.data_ptr(), cp.int32(n), cp.int64(lines))

        def run(f: Any = f, block: int = block, args: Any = args) -> None:
            f(((lines + block - 1) // block,), (block,), args)

        y.fill_(7)
        ix.fill_(-1)
        run()
        ok = torch.equal(y, want[0]) and torch.equal(ix, want[1])
        out[tag] = time_us(run) if ok else float("nan")
    return out


def _case(x: torch.Tensor, variants: list[str],
          fn: Callable[[str], Any] | None) -> dict[str, float]:  # fmt: skip
    """The package's ``variants`` (with ``fn``: the default and the stand-alone kernels) and
    torch over ``x``."""
    want = torch.cummax(x, 0)
    if fn is not None:
        out = {"default": _package(x, want, ["default"])["default"], **_standalone(x, want, fn)}
    else:
        out = _package(x, want, variants)
    out["torch"] = time_us(lambda: torch.cummax(x, 0))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("json", nargs="?", help="write the results here")
    ap.add_argument("--grid", choices=sorted(GRIDS), default="resident")
    ap.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS))
    ap.add_argument("--standalone", action="store_true", help="stand-alone kernels (CuPy)")
    args = ap.parse_args()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    fn: Callable[[str], Any] | None = None
    if args.standalone:
        import cupy as cp

        names = [f"line<{t}, {nb}, {b}, {m}, {cs}>" for t in _CTYPES.values()
                 for _, nb, b, m, cs in KERNELS]  # fmt: skip
        mod = cp.RawModule(code=STANDALONE, options=("-std=c++17",), name_expressions=names)
        fn = mod.get_function
        cases = STANDALONE_CASES
    else:
        ns, per_sms = GRIDS[args.grid]
        cases = [(n, p) for n in ns for p in per_sms]
    g = torch.Generator(device="cuda").manual_seed(0)
    rows = []
    for dt in _NAMES:
        for n, per_sm in cases:
            lines = per_sm * sms - 1 if per_sm else 2**24 // n - 1 + (2**24 // n) % 2
            out = _case(torch.randn((n, lines), device="cuda", generator=g).to(dt),
                        args.variants, fn)  # fmt: skip
            kind = K.short_kind("max", n, False, True, lines / sms)
            print(f"{_NAMES[dt]:5s} {n:3d} x {lines:<8d} {lines / sms:6.0f} an SM ({kind}) "
                  + "  ".join(f"{k} {v:6.1f}" for k, v in out.items()), flush=True)  # fmt: skip
            rows.append({"dtype": _NAMES[dt], "n": n, "lines": lines, "kind": kind, **out})
    write_json(args.json, f"cummax_lines {'standalone' if fn else args.grid}", rows)


if __name__ == "__main__":
    main()
