"""Shared by the scan benchmark scripts (strided_scans.py, short_axes.py, cummax_floor.py,
cummax_lines.py, scan_shapes.py, lines_sweep.py, row_registers.py, lse_lanes.py,
lse_warp_rows.py): the dtypes by short name, the names of the scan kernels each call
launches and their kinds, the switches a run sets, the inputs of each op, the logcumsumexp
check, and the stand-alone cummax kernels' CUDA prelude."""

from __future__ import annotations

import ast
import json
from collections.abc import Callable
from typing import Any

import torch

from baracuda._bench import time_us
from baracuda.scan import _kernels as K

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16,
          "f64": torch.float64}  # fmt: skip

# CUDA source that the stand-alone cummax kernels share (cummax_floor.py, cummax_lines.py): the
# key type a dtype compares in (float, or double for double) and bf16's widening to it
CUMMAX_PRELUDE = r"""
#include <cuda_bf16.h>
typedef long long i64;
template <typename T> struct Key { typedef float K; };
template <> struct Key<double> { typedef double K; };
template <typename T> __device__ __forceinline__ typename Key<T>::K tf(T v) {
  return (typename Key<T>::K)v;
}
template <> __device__ __forceinline__ float tf<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}"""


def launched(smem: bool = False) -> list[str]:
    """From now on, ``name/grid`` (``/shared memory`` with ``smem``) of each launch of
    launch_scan is appended to the list returned (clear it before a call)."""
    names: list[str] = []
    real = K.__dict__["launch"]  # the launcher that launch_scan calls

    def spy(fn: Any, grid: Any, block: Any, shared: Any, st: Any, a: Any, name: str,
            **kw: Any) -> None:  # fmt: skip
        names.append(f"{name}/{grid[0]}" + (f"/{shared}" if smem else ""))
        real(fn, grid, block, shared, st, a, name, **kw)

    K.__dict__["launch"] = spy
    return names


def kernel_kind(name: str) -> str:
    """The kind of a scan kernel from a name ``launched`` recorded: ``scan_lse_pipe1/264`` ->
    ``pipe1``."""
    return name.split("/")[0].split("_", 2)[-1]


def set_switches(items: list[str]) -> None:
    """``--set NAME=VALUE`` items: each a switch of ``baracuda.scan._kernels`` set to a Python
    literal (e.g. ``LBCOLS_WIDE=(2,)``); an unknown name ends the run."""
    for item in items:
        name, _, value = item.partition("=")
        if not hasattr(K, name):
            raise SystemExit(f"--set: baracuda.scan._kernels has no switch {name!r}")
        setattr(K, name, ast.literal_eval(value))


def scan_input(op: str, shape: tuple[int, ...], dt: torch.dtype,
               g: torch.Generator) -> torch.Tensor:  # fmt: skip
    """Normal values, or for cumprod uniform in [0.995, 1.015) (a product that stays in range
    over the axis), in ``dt``."""
    x = torch.randn(shape, device="cuda", generator=g)
    if op.startswith("cumprod"):
        x = torch.rand(shape, device="cuda", generator=g) * 0.02 + 0.995
    return x.to(dt)


def measure(call: Callable[[], Any], theirs: Callable[[], Any], ref: torch.Tensor,
            x: torch.Tensor, names: list[str], peers: bool) -> dict[str, Any]:  # fmt: skip
    """One case: ``call`` once against the float64 ``ref`` (the largest error relative to
    max(1, |ref|)) with the kernels it launched (``names``: ``launched``), then timed with
    the bench's method (``time_us``), and with ``peers`` a ``copy_`` of ``x``'s bytes and
    ``theirs`` (torch) in the same process."""
    names.clear()
    out = call()
    torch.cuda.synchronize()
    err = float(((out.double() - ref).abs().max() / ref.abs().max().clamp_min(1)).item())
    kernel = ",".join(k for k in names if not k.startswith("scan_zero"))
    row: dict[str, Any] = {"kernel": kernel, "err": err, "us": round(time_us(call), 2)}
    if peers:
        o = torch.empty_like(x)
        row["copy_us"] = round(time_us(lambda: o.copy_(x)), 2)
        row["torch_us"] = round(time_us(theirs), 2)
    return row


def lse_check(x: torch.Tensor, y: torch.Tensor, axis: int, reverse: bool) -> tuple[float, bool]:
    """``y``, a logcumsumexp of ``x`` along ``axis``, against ``torch.logcumsumexp`` in float64:
    the largest error relative to max(1, |ref|) over finite references, and whether NaN and
    the infinities land where the reference's do (lse_lanes.py, lse_warp_rows.py)."""
    xd = x.double()
    ref = (torch.logcumsumexp(xd.flip(axis), axis).flip(axis) if reverse
           else torch.logcumsumexp(xd, axis))  # fmt: skip
    yd = y.double()
    inf = torch.isinf(ref)
    same = bool(((torch.isnan(ref) == torch.isnan(yd)) & (inf == torch.isinf(yd))
                 & (~inf | (ref == yd))).all())  # fmt: skip
    fin = torch.isfinite(ref)
    err = ((yd - ref).abs() / ref.abs().clamp(min=1))[fin].max().item() if fin.any() else 0.0
    return err, same


def lse_data(kind: str, shape: tuple[int, ...], axis: int, dt: str,
             g: torch.Generator) -> torch.Tensor:  # fmt: skip
    """logcumsumexp's input of one data kind (lse_lanes.py's docstring names them), contiguous,
    the kind's pattern along ``axis``."""
    x = torch.randn(shape, device="cuda", generator=g).movedim(axis, -1)
    n = shape[axis]
    if kind == "big":
        x = x * 100
    elif kind == "ramp":
        x = x + 8.0 * torch.arange(n, device="cuda", dtype=torch.float32) - 300
    elif kind == "special":
        x = x * 30
        m = torch.rand(x.shape, device="cuda", generator=g)
        x[m < 0.05] = float("-inf")
        x[(m > 0.5) & (m < 0.5002)] = float("inf")
        x[(m > 0.7) & (m < 0.7001)] = float("nan")
    elif kind == "neginf":
        x[..., : n // 3] = float("-inf")
    return x.movedim(-1, axis).to(DTYPES[dt]).contiguous()


def peers_text(row: dict[str, Any]) -> str:
    """The ``copy_`` and torch columns of a printed line (empty without peers)."""
    if "copy_us" not in row:
        return ""
    return f"  copy {row['copy_us']:7.1f}  torch {row['torch_us']:8.1f}"


def write_json(path: str | None, tag: str, rows: list[dict[str, Any]]) -> None:
    """The rows, the tag and the card's name as JSON at ``path`` (if given)."""
    if path:
        with open(path, "w") as f:
            json.dump({"tag": tag, "card": torch.cuda.get_device_name(), "rows": rows}, f,
                      indent=1)  # fmt: skip
