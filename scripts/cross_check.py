"""Random scans through the PyTorch adapter against torch autograd in float64, and the
functional API on CuPy and JAX arrays: a check from outside the test suite.

    python scripts/cross_check.py [--seed S] [--cases N]

Each random case draws an op, a dtype (f32, bf16, f16, f64), a shape of rank 1-4 (odd sizes,
now and then an empty axis), an axis (negative too), a direction and a layout of the input
(contiguous, two axes swapped, every other element, all axes permuted, a broadcast axis, an
offset start), and compares the forward (values; cummax/cummin indices too, on data with
ties, equal to torch's) and ``torch.autograd.grad`` through ``baracuda.torch`` with torch's
own ops on the input in float64. Errors are measured against the largest magnitude of each
line. Where a low-precision gradient misses its bound, torch autograd in the same dtype is
measured against the same float64 gradient: the case passes if ours is no further off (the
saved output, rounded to the dtype, bounds both). Where torch's own logcumsumexp gradient is
NaN at a leading -inf input, the exact 0 is taken.

On a GPU it adds long rows (2^24 + 3; (3, 2^22 + 5) and (5, 2^21 + 7) along dim 1; (2^20 +
1, 3) along dim 0) in f32 and bf16, both directions, every op with its gradient; CuPy arrays
with negative and other strides (the functional API, forward and ``scan_backward``, each
result a CuPy array); and JAX arrays (each result a JAX array). Every draw follows from the
seed. On a machine without a GPU
it runs the random cases on CPU tensors (the array-API path). Exits 1 if any case fails.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository's tests.helpers
import baracuda as bc
import baracuda.torch as bct
from tests.helpers import torch_scan

OPS = ("cumsum", "cumprod", "cummax", "cummin", "logcumsumexp")
DTYPES = (torch.float32, torch.bfloat16, torch.float16, torch.float64)
TOL = {torch.float64: 1e-9, torch.float32: 2e-4, torch.float16: 1e-2, torch.bfloat16: 4e-2}
SIZES = (1, 2, 3, 5, 7, 16, 31, 33, 64, 127, 257, 1000, 4099)
NEG_INF = float("-inf")


class Checker:
    def __init__(self, dev: str, rng: random.Random) -> None:
        self.dev, self.rng = dev, rng
        self.count = 0
        self.fails: list[str] = []

    # ---- inputs ------------------------------------------------------------------------
    def make(self, shape: list[int], dtype: torch.dtype, op: str, ties: bool) -> Any:
        dev, n = self.dev, 1
        for v in shape:
            n *= v
        if op == "cumprod":  # factors near +-1, now and then zeros
            x = torch.empty(shape, device=dev, dtype=torch.float64).uniform_(0.85, 1.15)
            x = x * torch.where(torch.rand(shape, device=dev) < 0.5, -1.0, 1.0)
            if self.rng.random() < 0.3 and n:
                x.view(-1)[torch.randint(0, n, (max(1, n // 97),), device=dev)] = 0
        elif ties:
            x = torch.randint(-3, 4, shape, device=dev).double()
        elif op == "logcumsumexp":  # large magnitudes, now and then -inf
            x = torch.randn(shape, device=dev, dtype=torch.float64)
            x = x * self.rng.choice([1.0, 30.0])
            if self.rng.random() < 0.3 and n:
                x.view(-1)[torch.randint(0, n, (max(1, n // 13),), device=dev)] = NEG_INF
        else:
            x = torch.randn(shape, device=dev, dtype=torch.float64)
        return x.to(dtype)

    def view_of(self, shape: list[int], dtype: torch.dtype, op: str,
                ties: bool) -> tuple[Any, str]:  # fmt: skip
        rng, rank = self.rng, len(shape)
        kind = rng.choice(["contig", "transpose", "step", "permute", "expand", "offset"])
        if kind == "transpose" and rank >= 2:
            a, b = rng.sample(range(rank), 2)
            s = list(shape)
            s[a], s[b] = s[b], s[a]
            return self.make(s, dtype, op, ties).transpose(a, b), kind
        if kind == "step":
            d = rng.randrange(rank)
            s = list(shape)
            s[d] = s[d] * 2 + 1
            sl = [slice(None)] * rank
            sl[d] = slice(1, None, 2)
            return self.make(s, dtype, op, ties)[tuple(sl)], kind
        if kind == "permute" and rank >= 2:
            perm = list(range(rank))
            rng.shuffle(perm)
            inv = [perm.index(i) for i in range(rank)]
            return self.make([shape[p] for p in inv], dtype, op, ties).permute(*perm), kind
        if kind == "expand" and rank >= 2:
            s = list(shape)
            s[rng.randrange(rank)] = 1
            return self.make(s, dtype, op, ties).expand(*shape), kind
        if kind == "offset":
            n = 1
            for v in shape:
                n *= v
            return self.make([n + 3], dtype, op, ties)[3:].view(shape), kind
        return self.make(shape, dtype, op, ties), "contig"

    # ---- references --------------------------------------------------------------------
    @staticmethod
    def rel_err(a: Any, b: Any, dim: int) -> float:
        """Largest |a - b| over the largest finite |b| of its line; equal infinities and
        NaN against NaN count 0, as does a value past a's dtype's range (overflow is a's
        answer there)."""
        big = torch.finfo(a.dtype).max if a.dtype.is_floating_point else float("inf")
        a, b = a.detach().double(), b.detach().double()
        b = torch.where(b.abs() > big, a, b)
        if a.numel() == 0:
            return 0.0
        d = (a - b).abs().masked_fill(a == b, 0.0)
        scale = b.abs().masked_fill(~torch.isfinite(b), 0.0).amax(dim=dim, keepdim=True)
        r = d / (scale + 1e-30)
        r = torch.where(torch.isnan(a) & torch.isnan(b), torch.zeros_like(r), r)
        return float(r.nan_to_num(float("inf")).max())

    @staticmethod
    def lse_grad(g: Any, x: Any) -> Any:  # torch's NaN at leading -inf inputs: the exact 0
        return torch.where(torch.isnan(g) & (x.detach() == NEG_INF), 0.0, g)

    # ---- one case ----------------------------------------------------------------------
    def check(self, op: str, x: Any, dim: int, reverse: bool, tag: str, grad: bool) -> None:
        self.count += 1
        dtype, n = x.dtype, (x.shape[dim] if x.dim() else 1)
        tol = TOL[dtype]
        x64 = x.detach().double().requires_grad_(grad)
        xr = x.detach().requires_grad_(grad)
        try:
            if op in ("cummax", "cummin"):
                y, idx = getattr(bct, op)(xr, dim, reverse)
            else:
                y, idx = getattr(bct, op)(xr, dim, reverse), None
        except Exception as e:  # a failure to report, not to stop at
            self.fails.append(f"{tag}: forward raised {type(e).__name__}: {e}")
            return
        ry, ridx = torch_scan(op, x64, dim, reverse)
        lim = tol * (max(4, n) if op == "cumprod" else max(4, n) ** 0.5 if op == "cumsum" else 4)
        e = self.rel_err(y, ry, dim)
        if e > lim:
            self.fails.append(f"{tag}: forward error {e:.3g} > {lim:.3g}")
        if idx is not None and not torch.equal(idx.cpu(), ridx.cpu()):
            bad = int((idx.cpu() != ridx.cpu()).sum())
            self.fails.append(f"{tag}: {bad} indices differ from torch's")
        if not grad or x.numel() == 0:
            return
        dy = torch.randn(ry.shape, device=self.dev, dtype=torch.float64).to(dtype)
        try:
            (gx,) = torch.autograd.grad(y, xr, dy)
        except Exception as e:  # a failure to report, not to stop at
            self.fails.append(f"{tag}: backward raised {type(e).__name__}: {e}")
            return
        (rg,) = torch.autograd.grad(ry, x64, dy.double())
        if op == "logcumsumexp":
            rg = self.lse_grad(rg, x64)
        ge = self.rel_err(gx, rg, dim)
        glim = 2 * tol * (max(4, n) if op in ("cumprod", "logcumsumexp") else max(4, n) ** 0.5)
        if ge > glim and dtype != torch.float64:
            xt = x.detach().requires_grad_(True)
            (tg,) = torch.autograd.grad(torch_scan(op, xt, dim, reverse)[0], xt, dy)
            if op == "logcumsumexp":
                tg = self.lse_grad(tg, xt)
            glim = max(glim, self.rel_err(tg, rg, dim))
        if ge > glim:
            self.fails.append(f"{tag}: backward error {ge:.3g} > {glim:.3g}")

    def random_cases(self, cases: int) -> None:
        rng = self.rng
        for _ in range(cases):
            rank = rng.randint(1, 4)
            while True:
                shape = [rng.choice(SIZES) for _ in range(rank)]
                n = 1
                for v in shape:
                    n *= v
                if n <= 1 << 21:
                    break
            if rng.random() < 0.04:
                shape[rng.randrange(rank)] = 0
            op, dtype = rng.choice(OPS), rng.choice(DTYPES)
            ties = op in ("cummax", "cummin") and rng.random() < 0.5
            x, kind = self.view_of(shape, dtype, op, ties)
            dim = rng.randrange(-rank, rank)
            # tied winners scanned in reverse: torch has no such op to compare indices with
            reverse = not ties and rng.random() < 0.4
            tag = f"{op} {dtype} {tuple(x.shape)} {kind} dim={dim} reverse={reverse}"
            self.check(op, x, dim, reverse, tag, grad=not ties)

    def long_rows(self) -> None:
        for op in OPS:
            for dtype in (torch.float32, torch.bfloat16):
                for shape, dim in (((2**24 + 3,), 0), ((3, 2**22 + 5), 1),
                                   ((2**20 + 1, 3), 0), ((5, 2**21 + 7), 1)):  # fmt: skip
                    x = self.make(list(shape), dtype, op, False)
                    for reverse in (False, True):
                        tag = f"long {op} {dtype} {shape} dim={dim} reverse={reverse}"
                        self.check(op, x, dim, reverse, tag, grad=True)
                    torch.cuda.empty_cache()

    def cupy_arrays(self, seed: int) -> None:
        import cupy as cp

        cp.random.seed(seed)
        def t64(a: Any) -> Any:
            return torch.from_dlpack(cp.ascontiguousarray(a)).double()

        for op in ("cumsum", "cumprod", "cummax", "logcumsumexp"):
            for reverse in (False, True):
                if op == "cumprod":
                    base = cp.random.uniform(0.9, 1.1, (301, 517)).astype(cp.float32)
                else:
                    base = cp.random.standard_normal((301, 517)).astype(cp.float32)
                for v, dim in ((base[::-1, ::2], 0), (base[:, ::-3], 1), (base.T, 0)):
                    tag = f"cupy {op} strides={v.strides} dim={dim} reverse={reverse}"
                    out = getattr(bc, op)(v, dim, reverse)
                    y = out[0] if isinstance(out, tuple) else out
                    xt = t64(v).requires_grad_(True)
                    ry = torch_scan(op, xt, dim, reverse)[0]
                    self.count += 1
                    e = self.rel_err(t64(y), ry, dim)
                    if not type(y).__module__.startswith("cupy") or e > 1e-3:
                        self.fails.append(f"{tag}: {type(y).__module__}, error {e:.3g}")
                    dy = cp.random.standard_normal(v.shape).astype(cp.float32)
                    saved = {"y": y} if op in ("cumprod", "logcumsumexp") else {}
                    dx = bc.scan_backward(op, dy, x=v, axis=dim, reverse=reverse,
                                          tie_break="last", **saved)  # fmt: skip
                    (rg,) = torch.autograd.grad(ry, xt, t64(dy))
                    self.count += 1
                    ge = self.rel_err(t64(dx), rg, dim)
                    if not type(dx).__module__.startswith("cupy") or ge > 2e-3:
                        self.fails.append(f"{tag} backward: {type(dx).__module__}, error {ge:.3g}")

    def jax_arrays(self) -> None:
        import jax
        import jax.numpy as jnp
        import numpy as np

        if not any(d.platform == "gpu" for d in jax.devices()):
            print("JAX has no GPU backend here: JAX arrays not checked")
            return
        for op in OPS:
            for dtype in (jnp.float32, jnp.bfloat16):
                g = np.random.default_rng(3)
                xn = g.uniform(0.9, 1.1, (129, 1031)) if op == "cumprod" else g.standard_normal(
                    (129, 1031))
                xj = jnp.asarray(xn, dtype=dtype)
                x64 = torch.tensor(np.asarray(xj, dtype=np.float64))
                for dim in (0, 1):
                    out = getattr(bc, op)(xj, dim, False)
                    y = out[0] if isinstance(out, tuple) else out
                    ry = torch_scan(op, x64, dim, False)[0]
                    e = self.rel_err(torch.tensor(np.asarray(y, dtype=np.float64)), ry, dim)
                    lim = (2e-4 if dtype == jnp.float32 else 4e-2) * (30 if op == "cumprod" else 1)
                    self.count += 1
                    if not type(y).__module__.startswith("jax") or e > lim:
                        self.fails.append(f"jax {op} {dtype} dim={dim}: {type(y).__module__}, "
                                          f"error {e:.3g}")  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--cases", type=int, default=600, help="random cases (default 600)")
    a = p.parse_args()
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    c = Checker(dev, random.Random(a.seed))
    torch.manual_seed(a.seed)
    t0 = time.time()
    c.random_cases(a.cases)
    print(f"random cases on {dev}: {c.count}, {len(c.fails)} failing")
    if dev == "cuda":
        print(f"device: {torch.cuda.get_device_name()}")
        c.long_rows()
        print(f"with long rows: {c.count} cases, {len(c.fails)} failing")
        for name, fn in (("CuPy", lambda: c.cupy_arrays(a.seed)), ("JAX", c.jax_arrays)):
            try:
                fn()
            except ImportError:
                print(f"{name} is not installed: its arrays not checked")
                continue
            print(f"with {name} arrays: {c.count} cases, {len(c.fails)} failing")
    for f in c.fails[:60]:
        print("FAIL", f)
    print(f"{c.count} cases, {len(c.fails)} failing, {time.time() - t0:.1f} s")
    return 1 if c.fails else 0


if __name__ == "__main__":
    sys.exit(main())
