"""Many short rows along the last axis: baracuda with segmented tiles (``SEG_ROWS``, the
default: one vector a lane where a wave of warps holds the run, ``SEG_ONE_VECTOR``), with
two vectors a lane throughout (``SEG_ONE_VECTOR`` off), without segmented tiles (a warp a row:
``pipe1``, ``rows1``, the fused cummax backward), torch,
and a copy of x (its bytes read and written), in one run on one card, f32 and bf16, for
cumsum, cumprod, logcumsumexp and cummax (forward; cummax writes values and int64 indices)
and the backward of each (``scan_backward`` from the saved tensors; torch:
``torch.autograd.grad`` of the op's graph, built once, ``retain_graph``). Time is the
bench's (``time_us``: L2 flushed, median); GB/s counts each input read once and each output
written once (cummax's indices as 8 bytes; the cummax backward's one-byte winner flags in
the workspace not counted); % is of the 1 GiB copy's bandwidth measured in the same run.
The error of each output is checked against torch's float64 result first. Prints a table,
writes JSON.

    python benchmarks/short_rows.py [out.json] [--ops cumsum ...] (on a GPU)
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

import torch

import baracuda as bc
from baracuda._bench import copy_bandwidth, time_us
from baracuda.scan import _kernels

# (rows, n): small and large runs of rows of 1 to 256 positions
CASES: list[tuple[int, int]] = [
    (8, 128),
    (4096, 32),
    (4096, 64),
    (16384, 16),
    (2**22, 4),
    (2**20, 16),
    (2**20, 64),
    (2**19, 128),
    (1_000_000, 3),
    (2**18, 256),
]

# one case: baracuda's call, torch's call, the float64 reference, bytes moved per element
Case = tuple[Callable[[], Any], Callable[[], Any], Any, int]
_TORCH: dict[str, Callable[[Any], Any]] = {
    "cumsum": lambda x: torch.cumsum(x, 1),
    "cumprod": lambda x: torch.cumprod(x, 1),
    "logcumsumexp": lambda x: torch.logcumsumexp(x, 1),
    "cummax": lambda x: torch.cummax(x, 1),  # values and indices
}
_OURS: dict[str, Callable[[Any], Any]] = {
    "cumsum": lambda x: bc.cumsum(x, 1),
    "cumprod": lambda x: bc.cumprod(x, 1),
    "logcumsumexp": lambda x: bc.logcumsumexp(x, 1),
    "cummax": lambda x: bc.cummax(x, 1, tie_break="last"),  # ties to the last, as torch
}


def _forward(op: str, x: Any) -> Case:
    ref = _TORCH[op](x.double())
    extra = 8 if op == "cummax" else 0  # the indices
    return (lambda: _OURS[op](x), lambda: _TORCH[op](x), ref,
            2 * x.element_size() + extra)  # fmt: skip


def _values(y: Any) -> Any:
    return y[0] if isinstance(y, tuple) else y


def _backward(op: str, x: Any) -> Case:
    """dx from dy (standard normal) and the saved tensors the op's backward reads."""
    dy = torch.randn(x.shape, generator=torch.Generator("cuda").manual_seed(1),
                     device="cuda").to(x.dtype)  # fmt: skip
    y = _values(_TORCH[op](x))
    saved_x = None if op == "cumsum" else x
    saved_y = y if op in ("cumprod", "logcumsumexp") else None
    xg = x.detach().requires_grad_(True)
    yg = _values(_TORCH[op](xg))
    xd = x.double().requires_grad_(True)
    (ref,) = torch.autograd.grad(_values(_TORCH[op](xd)), xd, dy.double())
    moved = (2 + (saved_x is not None) + (saved_y is not None)) * x.element_size()
    return (lambda: bc.scan_backward(op, dy, x=saved_x, y=saved_y, axis=1, tie_break="last"),
            lambda: torch.autograd.grad(yg, xg, dy, retain_graph=True)[0], ref, moved)  # fmt: skip


def _case(name: str, x: Any) -> Case:
    if name.endswith("_backward"):
        return _backward(name.removesuffix("_backward"), x)
    return _forward(name, x)


OPS = [*_TORCH, *(f"{op}_backward" for op in _TORCH)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out", nargs="?", default="short_rows.json")
    ap.add_argument("--ops", nargs="*", choices=OPS, default=OPS)
    args = ap.parse_args()
    card = torch.cuda.get_device_name()
    bw = copy_bandwidth()
    print(f"card: {card}   copy bandwidth: {bw / 1e9:.0f} GB/s (1 GiB fp32 copy_)")
    print(f"{'op':>21} {'shape':>16} {'dtype':>8} {'seg us':>8} {'GB/s':>6} {'%bw':>4} "
          f"{'2-vec us':>8} {'warp us':>8} {'torch us':>9} {'copy us':>8} {'vs warp':>7} "
          f"{'vs torch':>8} {'err':>8}")  # fmt: skip
    rows: list[dict[str, Any]] = []
    torch.manual_seed(0)
    for name in args.ops:
        for dt in (torch.float32, torch.bfloat16):
            for r, n in CASES:
                x = torch.randn(r, n, device="cuda").to(dt)
                if name.startswith("cumprod"):
                    x = (1 + 0.01 * x.float()).to(dt)
                ours, theirs, ref, moved = _case(name, x)
                out = ours()
                if name == "cummax":  # values, and indices equal to torch's
                    assert torch.equal(out[1], ref[1]), f"cummax indices differ on {(r, n)}"
                ref, out = _values(ref), _values(out)
                err = ((out.double() - ref).abs() / ref.abs().clamp(min=1)).max().item()
                del ref
                t_seg = time_us(ours)
                _kernels.SEG_ONE_VECTOR = False
                try:
                    t_two = time_us(ours)
                finally:
                    _kernels.SEG_ONE_VECTOR = True
                _kernels.SEG_ROWS = False
                try:
                    t_warp = time_us(ours)
                finally:
                    _kernels.SEG_ROWS = True
                t_torch = time_us(theirs)
                y = torch.empty_like(x)
                t_copy = time_us(lambda: y.copy_(x))
                nbytes = moved * x.numel()
                gbs = nbytes / t_seg / 1e3
                rows.append(dict(op=name, shape=[r, n], dtype=str(dt)[6:], seg_us=round(t_seg, 2),
                                 gbs=round(gbs, 1), frac_bw=round(nbytes / t_seg / 1e-6 / bw, 3),
                                 two_vector_us=round(t_two, 2), warp_us=round(t_warp, 2),
                                 torch_us=round(t_torch, 2), copy_us=round(t_copy, 2),
                                 err=err))  # fmt: skip
                print(f"{name:>21} {(r, n)!s:>16} {str(dt)[6:]:>8} {t_seg:8.1f} {gbs:6.0f} "
                      f"{100 * nbytes / t_seg / 1e-6 / bw:3.0f}% {t_two:8.1f} {t_warp:8.1f} "
                      f"{t_torch:9.1f} {t_copy:8.1f} {t_warp / t_seg:6.2f}x "
                      f"{t_torch / t_seg:7.2f}x {err:8.1e}")  # fmt: skip
    with open(args.out, "w") as f:
        json.dump({"card": card, "copy_bandwidth": bw, "rows": rows}, f, indent=1)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
