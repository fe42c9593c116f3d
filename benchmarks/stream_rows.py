"""Cumsum over few long contiguous rows on the stream kernel, checked and timed.

With ``--lines``, over 2 or 4 interleaved lines along dim 0 instead (a tensor (n, G), the
kernel's ``scan_sum_stream2`` / ``_stream4``), and one row of the same bytes. The stream
kernel (``scan_sum_stream``) is forced for 2-byte types too. Each case is checked
against float64 and for the same bits on a second run, then timed with the bench's method
(``time_us``: L2 flushed, median) ``--reps`` times. With ``--copy``, a ``copy_`` of the same
bytes and ``torch.cumsum`` in the same run. Prints a line a case, writes JSON. For a change
to the kernel, run it in alternating processes on the two trees, each with its own kernel
cache (docs/contributing.md, "A change in the compiled code"):

    BARACUDA_CACHE_DIR=/tmp/c-main PYTHONPATH=main/src python benchmarks/stream_rows.py main m.json
    BARACUDA_CACHE_DIR=/tmp/c-new PYTHONPATH=src python benchmarks/stream_rows.py new n.json
                                                                    (on an sm_90 GPU)
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import torch
from long_rows import kernel_of  # type: ignore[import-not-found]

import baracuda as bc
from baracuda._bench import time_us
from baracuda.scan import ScanArgs, ScanDescriptor, ScanPlan
from baracuda.scan import _kernels as K
from baracuda.types import ElementKind, ScanKind

F32, BF16 = torch.float32, torch.bfloat16
# (shape, dtype, reverse): the (2, 2^23), lines past one round of the cooperative
# kernel, many long rows, a short one
CASES: list[tuple[tuple[int, int], torch.dtype, bool]] = [
    ((2, 2**23), F32, False), ((2, 2**23), F32, True), ((1, 2**26), F32, False),
    ((2, 2**24), F32, False), ((1, 2**21), F32, False), ((16, 2**20), F32, False),
    ((2, 2**23), BF16, False), ((1, 2**26), BF16, False), ((2, 2**23), BF16, True),
    ((1, 2**26), F32, True), ((1, 2**26), BF16, True),
]  # fmt: skip
# (shape, dtype, reverse) along dim 0: 2 and 4 lines, a longer run, one row (along dim 1)
LINES: list[tuple[tuple[int, int], torch.dtype, bool]] = [
    ((2**20, 2), F32, False), ((2**19, 4), F32, False), ((2**22, 2), F32, False),
    ((2**20, 2), F32, True), ((1, 2**21), F32, False),
    ((2**20, 2), BF16, False), ((2**19, 4), BF16, False), ((2**22, 2), BF16, False),
    ((1, 2**21), BF16, False),
]  # fmt: skip
ELEMENTS = {F32: ElementKind.F32, BF16: ElementKind.BF16}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tag", help="a name for this tree's lines")
    ap.add_argument("json", nargs="?", help="write the results here")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--copy", action="store_true", help="also copy_ and torch.cumsum")
    ap.add_argument("--lines", action="store_true", help="interleaved lines along dim 0")
    a = ap.parse_args()
    K.STREAM_ITEMSIZES = (2, 4)
    s = bc.Stream.wrap(torch.cuda.current_stream())
    card = torch.cuda.get_device_name()
    print(f"card: {card}  (cumsum, µs; f = forward, r = reverse)")
    rows: list[dict[str, Any]] = []
    torch.manual_seed(0)
    for shape, dt, rev in LINES if a.lines else CASES:
        ax = 0 if shape[0] > 1 and a.lines else 1
        x = torch.randn(*shape, device="cuda", dtype=dt)
        y = torch.empty_like(x)
        x64 = x.double()
        ref = torch.cumsum(x64.flip(ax), ax).flip(ax) if rev else torch.cumsum(x64, ax)
        plan = ScanPlan.select(s, ScanDescriptor(ScanKind.CUMSUM, shape, ax, ELEMENTS[dt], rev))
        ws = bc.Workspace.allocate(plan.workspace_size(), s)
        args = ScanArgs(x, y)

        def run(plan: ScanPlan = plan, ws: bc.Workspace = ws, args: ScanArgs = args) -> None:
            plan.run(s, ws, args)

        y.fill_(float("nan"))
        run()
        torch.cuda.synchronize()
        err = float(((y.double() - ref).abs() / ref.abs().amax()).amax())
        if not err <= (1e-5 if dt == F32 else 1e-2):
            raise AssertionError(f"{shape} {dt} rev={rev}: error {err:.2e}")
        first = y.clone()
        run()
        torch.cuda.synchronize()
        if not torch.equal(first, y):
            raise AssertionError(f"{shape} {dt} rev={rev}: other bits on a second run")
        us = [time_us(run) for _ in range(a.reps)]
        nbytes = 2 * x.numel() * x.element_size()
        r: dict[str, Any] = {"card": card, "tag": a.tag, "shape": shape, "axis": ax,
                             "dtype": str(dt), "reverse": rev, "us": us, "rel_err": err,
                             "kernel": kernel_of(run), "gbs": nbytes / min(us) / 1e3}  # fmt: skip
        line = (f"{a.tag:6} {'x'.join(map(str, shape)):>12} {str(dt)[6:]:8} {'r' if rev else 'f'}"
                f" {' '.join(f'{t:6.1f}' for t in us)}  {r['gbs']:6.0f} GB/s")  # fmt: skip
        if a.copy:
            r["copy_"] = time_us(lambda: y.copy_(x))
            r["torch"] = time_us(lambda: torch.cumsum(x, ax))
            line += f"  copy_ {r['copy_']:6.1f}  torch {r['torch']:8.1f}"
        print(f"{line}  err {err:.1e}  {r['kernel']}")
        rows.append(r)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
