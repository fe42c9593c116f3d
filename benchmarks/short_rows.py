"""Many short rows along the last axis: baracuda with segmented tiles (``SEG_ROWS``, the
default) and without (a warp a row: ``pipe1``), torch, and a copy of the same bytes, in one
run on one card, f32 and bf16, for cumsum, cumprod, logcumsumexp and cummax (forward; cummax
writes values and int64 indices) and cumsum's backward (``scan_backward``; torch: autograd of
``cumsum``). Time is the bench's
(``time_us``: L2 flushed, median); GB/s counts the input read once and the output written
once; % is of the 1 GiB copy's bandwidth measured in the same run. The error of each output
is checked against torch's float64 result first. Prints a table, writes JSON.

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


def _ops() -> dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any], Callable[[Any], Any]]]:
    """op -> (baracuda, torch, float64 reference) on a (rows, n) tensor along dim 1."""

    def bwd_ref(x: Any) -> Any:  # dx of sum(cumsum(x) * dy) with dy = x: reverse cumsum
        return x.flip(1).cumsum(1).flip(1)

    def torch_bwd(x: Any) -> Any:
        xr = x.detach().requires_grad_(True)
        torch.cumsum(xr, 1).backward(x)
        return xr.grad

    return {
        "cumsum": (lambda x: bc.cumsum(x, 1), lambda x: torch.cumsum(x, 1),
                   lambda x: torch.cumsum(x, 1)),
        "cumprod": (lambda x: bc.cumprod(x, 1), lambda x: torch.cumprod(x, 1),
                    lambda x: torch.cumprod(x, 1)),
        "logcumsumexp": (lambda x: bc.logcumsumexp(x, 1), lambda x: torch.logcumsumexp(x, 1),
                         lambda x: torch.logcumsumexp(x, 1)),
        "cumsum_backward": (lambda x: bc.scan_backward("cumsum", x, axis=1), torch_bwd,
                            bwd_ref),
        # values and int64 indices (ties to the last, as torch)
        "cummax": (lambda x: bc.cummax(x, 1, tie_break="last"), lambda x: torch.cummax(x, 1),
                   lambda x: torch.cummax(x, 1)),
    }  # fmt: skip


def main() -> None:
    ops = _ops()
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out", nargs="?", default="short_rows.json")
    ap.add_argument("--ops", nargs="*", choices=sorted(ops), default=sorted(ops))
    args = ap.parse_args()
    card = torch.cuda.get_device_name()
    bw = copy_bandwidth()
    print(f"card: {card}   copy bandwidth: {bw / 1e9:.0f} GB/s (1 GiB fp32 copy_)")
    print(f"{'op':>16} {'shape':>16} {'dtype':>8} {'seg us':>8} {'GB/s':>6} {'%bw':>4} "
          f"{'warp us':>8} {'torch us':>9} {'copy us':>8} {'vs warp':>7} {'vs torch':>8} "
          f"{'err':>8}")  # fmt: skip
    rows: list[dict[str, Any]] = []
    torch.manual_seed(0)
    for name in args.ops:
        ours, theirs, ref_fn = ops[name]
        for dt in (torch.float32, torch.bfloat16):
            for r, n in CASES:
                x = torch.randn(r, n, device="cuda").to(dt)
                if name == "cumprod":
                    x = (1 + 0.01 * x.float()).to(dt)
                ref, out = ref_fn(x.double()), ours(x)
                if name == "cummax":  # values, and indices equal to torch's
                    assert torch.equal(out[1], ref[1]), f"cummax indices differ on {(r, n)}"
                    ref, out = ref[0], out[0]
                err = ((out.double() - ref).abs() / ref.abs().clamp(min=1)).max().item()
                del ref
                t_seg = time_us(lambda: ours(x))
                _kernels.SEG_ROWS = False
                try:
                    t_warp = time_us(lambda: ours(x))
                finally:
                    _kernels.SEG_ROWS = True
                t_torch = time_us(lambda: theirs(x))
                y = torch.empty_like(x)
                t_copy = time_us(lambda: y.copy_(x))
                nbytes = 2 * x.numel() * x.element_size()
                if name == "cummax":  # and the indices
                    nbytes += 8 * x.numel()
                gbs = nbytes / t_seg / 1e3
                rows.append(dict(op=name, shape=[r, n], dtype=str(dt)[6:], seg_us=round(t_seg, 2),
                                 gbs=round(gbs, 1), frac_bw=round(nbytes / t_seg / 1e-6 / bw, 3),
                                 warp_us=round(t_warp, 2), torch_us=round(t_torch, 2),
                                 copy_us=round(t_copy, 2), err=err))  # fmt: skip
                print(f"{name:>16} {(r, n)!s:>16} {str(dt)[6:]:>8} {t_seg:8.1f} {gbs:6.0f} "
                      f"{100 * nbytes / t_seg / 1e-6 / bw:3.0f}% {t_warp:8.1f} {t_torch:9.1f} "
                      f"{t_copy:8.1f} {t_warp / t_seg:6.2f}x {t_torch / t_seg:7.2f}x "
                      f"{err:8.1e}")  # fmt: skip
    with open(args.out, "w") as f:
        json.dump({"card": card, "copy_bandwidth": bw, "rows": rows}, f, indent=1)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
