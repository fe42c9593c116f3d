"""Contiguous rows of more than 4 KiB and at most 32 KiB held in registers, a block a row
(``ROWREG``, scan.cu ``scan_rowreg``), against the launch the rows take without it (the ring
for rows of 16 KiB or more, warp rows below), in one process on one card with the bench's
method (``time_us``: L2 flushed, median), the settings alternating ``--rounds`` times (the
best of each kept): ``off`` (no rows in registers), ``on`` (rows of up to 16 KiB, no L2
prefetch) and ``l2`` (the defaults: rows of up to 32 KiB, each block asking L2 for a row
further on). Also a ``copy_`` of the same bytes and torch's op (``torch.cumsum``,
``torch.cummax``, ``torch.cummin``, ``torch.logcumsumexp``). Every setting's outputs are
checked against the float64 reference (cummax/cummin: their indices too, exactly;
logcumsumexp: the largest error relative to max(1, |ref|), and NaN and the infinities where
the reference's are). logcumsumexp runs on each ``--data`` kind (``_scan_bench.lse_data``:
``big`` and ``ramp`` take a lane's pushes, scan.cu ``LseOp::lane_outputs``). Prints a table,
writes JSON.

    python benchmarks/row_registers.py [out.json] [--rounds 2] [--settings off l2]
        [--match cummax] [--data randn big ramp]
        (on a GPU; --match: cases whose label holds one of the strings)
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np
import torch
from _scan_bench import DTYPES, kernel_kind, launched, lse_check, lse_data

import baracuda as bc
from baracuda._bench import copy_bandwidth, time_us
from baracuda._harness import copy_peer
from baracuda.scan import _kernels as K
from baracuda.scan import reference as R
from baracuda.types import ScanKind

# (op, dtype, rows, n, reverse)
CASES: list[tuple[str, str, int, int, bool]] = [
    ("cumsum", "bf16", 4096, 8192, False),
    ("cumsum", "bf16", 4096, 8192, True),
    ("cumprod", "bf16", 4096, 8192, False),
    ("cumsum_backward", "bf16", 4096, 8192, False),
    ("cumsum", "f16", 4096, 8192, False),
    ("cumsum", "f32", 4096, 4096, False),
    ("cumprod", "f32", 4096, 4096, False),
    ("cumsum", "f64", 4096, 2048, False),
    ("cumsum", "bf16", 1000, 8192, False),
    ("cumsum", "bf16", 4096, 8000, False),
    ("cumsum", "bf16", 16384, 8192, False),
    ("cumsum", "bf16", 8192, 4096, False),
    ("cumsum", "f32", 8192, 2048, False),
    ("cumsum", "f32", 8192, 1040, False),
    ("cumsum", "f32", 4096, 8192, False),
    ("cumsum", "f32", 4096, 8192, True),
    ("cumprod", "f32", 4096, 8192, False),
    ("cumsum_backward", "f32", 4096, 8192, False),
    ("cumsum", "f32", 2048, 8192, False),
    ("cumsum", "f64", 4096, 4096, False),
    ("cumsum", "bf16", 2048, 16384, False),
    ("cummax", "f32", 4096, 8192, False),
    ("cummax", "f32", 4096, 8192, True),
    ("cummin", "f32", 4096, 8192, False),
    ("cummax", "bf16", 4096, 8192, False),
    ("cummax", "bf16", 4096, 8192, True),
    ("cummax", "f16", 4096, 8192, False),
    ("cummax", "f64", 4096, 4096, False),
    ("cummax", "f32", 4096, 4096, False),
    ("cummax", "bf16", 4096, 4096, False),
    ("cummax", "f32", 16384, 2048, False),
    ("cummax", "f32", 3000, 8192, False),
    ("cummax", "bf16", 1000, 8192, False),
    ("cummax", "bf16", 16384, 8192, False),
    ("cummax", "f32", 4096, 8000, False),
    ("cummax", "bf16", 2048, 16384, False),
    ("cummax", "f32", 8192, 2048, False),
    ("cummax", "bf16", 8192, 4096, False),
    ("cummax", "f64", 8192, 1024, False),
    ("logcumsumexp", "f32", 4096, 8192, False),
    ("logcumsumexp", "f32", 4096, 8192, True),
    ("logcumsumexp", "bf16", 4096, 8192, False),
    ("logcumsumexp", "bf16", 4096, 8192, True),
    ("logcumsumexp", "f16", 4096, 8192, False),
    ("logcumsumexp", "f32", 4096, 4096, False),
    ("logcumsumexp", "bf16", 4096, 4096, False),
    ("logcumsumexp", "f32", 8192, 2048, False),
    ("logcumsumexp", "f32", 8192, 1040, False),
    ("logcumsumexp", "bf16", 8192, 2080, False),
    ("logcumsumexp", "f32", 3000, 8192, False),
    ("logcumsumexp", "bf16", 1000, 8192, False),
    ("logcumsumexp", "bf16", 2048, 16384, False),
    ("logcumsumexp", "bf16", 16384, 8192, False),
    ("logcumsumexp", "f64", 4096, 2048, False),
    ("logcumsumexp", "f64", 4096, 4096, False),
    ("logcumsumexp", "f64", 8192, 1024, False),
    ("logcumsumexp", "f64", 4096, 4096, True),
    ("logcumsumexp", "f64", 1000, 4096, False),
    ("logcumsumexp", "f64", 8192, 520, False),
]
SETTINGS: dict[str, dict[str, Any]] = {
    "off": {"ROWREG": False},
    "on": {"ROWREG": True, "ROWREG_PREFETCH": False, "ROWREG_MAX_BYTES": 16384},
    "l2": {"ROWREG": True, "ROWREG_PREFETCH": True, "ROWREG_MAX_BYTES": 32768},
}  # fmt: skip


def _call(op: str, x: torch.Tensor, reverse: bool) -> Any:
    if op in ("cummax", "cummin"):
        return getattr(bc, op)(x, 1, reverse)  # (values, indices)
    if op == "cumsum":
        return bc.cumsum(x, 1, reverse)
    if op == "cumprod":
        return bc.cumprod(x, 1, reverse)
    if op == "logcumsumexp":
        return bc.logcumsumexp(x, 1, reverse)
    return bc.scan_backward(ScanKind.CUMSUM, x, axis=1, reverse=reverse)


def _ref(op: str, x: np.ndarray, reverse: bool) -> np.ndarray:
    if op == "cumsum_backward":
        return R.scan_backward(ScanKind.CUMSUM, x, axis=1, reverse=reverse)
    return R.scan(ScanKind(op), x, 1, reverse)  # cummax/cummin: (values, indices)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", nargs="?")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--settings", nargs="+", choices=list(SETTINGS), default=list(SETTINGS))
    ap.add_argument("--match", nargs="+", default=[])
    ap.add_argument("--data", nargs="+", default=["randn"],
                    choices=["randn", "big", "ramp", "special", "neginf"])  # fmt: skip
    a = ap.parse_args()
    settings = {s: SETTINGS[s] for s in a.settings}
    dev = torch.cuda.get_device_name()
    bw = copy_bandwidth()
    print(f"{dev}; copy bandwidth {bw / 1e9:.0f} GB/s")
    names = launched()
    heads = " ".join(f"{s:>17}" for s in settings)
    print(f"{'case':<34} {'copy_':>7} {'torch':>7} {heads}  max rel err by setting")
    rows: list[dict[str, Any]] = []
    g = torch.Generator(device="cuda").manual_seed(7)
    cases = [(*c, d) for c in CASES
             for d in (a.data if c[0] == "logcumsumexp" else ["randn"])]  # fmt: skip
    for op, dt, r, n, rev, data in cases:
        label = f"{op} {dt} {r}x{n}{' rev' if rev else ''}{'' if data == 'randn' else ' ' + data}"
        if a.match and not any(m in label for m in a.match):
            continue
        lse = op == "logcumsumexp"
        if lse:
            x = lse_data(data, (r, n), 1, dt, g)
        else:
            x = torch.randn(r, n, device="cuda", dtype=DTYPES[dt], generator=g)
        if op == "cumprod":
            x = 1 + x / 200
        nbytes = x.numel() * x.element_size()
        dst = torch.empty_like(x)
        rec: dict[str, Any] = {"device": dev, "op": op, "dtype": dt, "shape": [r, n],
                               "reverse": rev, "data": data, "bytes_each_way": nbytes,
                               "copy_bandwidth_GBps": bw / 1e9}  # fmt: skip
        rec["copy_us"] = time_us(lambda: dst.copy_(x))
        extrema = op in ("cummax", "cummin")
        if op in ("cumsum", "logcumsumexp") or (extrema and not rev):
            torch_op = getattr(torch, op)
            rec["torch_us"] = time_us(lambda: torch_op(x, 1))
        if extrema:  # values and int64 indices out: a copy_ moving the same bytes in all
            rec["bytes_out"] = nbytes + x.numel() * 8
            rec["copy_us"] = time_us(copy_peer((2 * nbytes + x.numel() * 8) // 2))
        ref = None if lse else _ref(op, x.double().cpu().numpy(), rev)
        ref_idx = None
        if extrema:
            ref, ref_idx = ref
        scale = 1.0 if ref is None else np.abs(ref).max() + 1.0
        times: dict[str, list[float]] = {s: [] for s in settings}
        for _ in range(a.rounds):
            for s, sw in settings.items():
                for k, v in sw.items():
                    setattr(K, k, v)
                names.clear()
                y = _call(op, x, rev)
                torch.cuda.synchronize()
                if extrema:
                    y, yi = y
                    bad = int((yi.cpu().numpy() != ref_idx).sum())
                    rec[f"{s}_index_mismatches"] = bad + rec.get(f"{s}_index_mismatches", 0)
                if names:  # the first call of a setting dispatches; later ones replay
                    rec[f"{s}_kernel"] = kernel_kind(names[-1])
                if ref is None:  # logcumsumexp: against torch's in float64
                    err, same = lse_check(x, y, 1, rev)
                    rec[f"{s}_nonfinite_match"] = same and rec.get(f"{s}_nonfinite_match", True)
                else:
                    err = float(np.abs(y.double().cpu().numpy() - ref).max() / scale)
                rec[f"{s}_err"] = max(err, rec.get(f"{s}_err", 0.0))
                times[s].append(time_us(lambda: _call(op, x, rev)))
        for s in settings:
            rec[f"{s}_us"] = min(times[s])
            rec[f"{s}_all_us"] = times[s]
        rows.append(rec)
        cells = " ".join(f"{rec[f'{s}_us']:>6.1f} {rec.get(f'{s}_kernel', '?')[:10]:>10}"
                         for s in settings)  # fmt: skip
        errs = " ".join(f"{rec[f'{s}_err']:.1e}" + (f"/{rec[f'{s}_index_mismatches']}"
                                                    if extrema else "")
                        + ("" if rec.get(f"{s}_nonfinite_match", True) else " NONFINITE DIFFER")
                        for s in settings)  # fmt: skip
        print(f"{label:<34} {rec['copy_us']:>7.1f} {rec.get('torch_us', float('nan')):>7.1f} "
              f"{cells}  {errs}", flush=True)  # fmt: skip
    if a.out:
        with open(a.out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
