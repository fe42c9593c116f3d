"""Shared by the scan benchmark scripts (strided_scans.py, short_axes.py): the names of the
scan kernels each call launches, and the inputs of each op."""

from __future__ import annotations

from typing import Any

import torch

from baracuda.scan import _kernels as K


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


def scan_input(op: str, shape: tuple[int, ...], dt: torch.dtype,
               g: torch.Generator) -> torch.Tensor:  # fmt: skip
    """Normal values, or for cumprod uniform in [0.995, 1.015) (a product that stays in range
    over the axis), in ``dt``."""
    x = torch.randn(shape, device="cuda", generator=g)
    if op.startswith("cumprod"):
        x = torch.rand(shape, device="cuda", generator=g) * 0.02 + 0.995
    return x.to(dt)
