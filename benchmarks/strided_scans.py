"""Strided cumsum, cumprod and the cumsum backward along dim 0 over the shapes of round 47
(docs/benchmarks.md): few lines, whose 128-byte strips are too few for the SMs (narrow strips,
``scan_<op>_strip_narrow``), and many lines over a short axis, whose strips are two or more an
SM (``scan_<op>_strip6``), with unchanged cases beside them. Each case is checked against
float64, then timed with the bench's method (``time_us``: L2 flushed, median) through the
functional call, with a ``copy_`` of the same bytes and torch's own call in the same process
(``--peers``). Prints a line a case (the kernel, its grid and shared memory), writes JSON. For
a change to the kernels, run it in alternating processes on the two trees, each with its own
kernel cache (docs/contributing.md, "A change in the compiled code"):

    BARACUDA_CACHE_DIR=/tmp/c-main PYTHONPATH=main/src python benchmarks/strided_scans.py main m.json --peers
    BARACUDA_CACHE_DIR=/tmp/c-new PYTHONPATH=src python benchmarks/strided_scans.py new n.json
                                                                    (on a GPU)
"""  # noqa: E501

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import torch
from _scan_bench import launched, measure, peers_text, scan_input, write_json

import baracuda as bc

BF16, F16, F32 = torch.bfloat16, torch.float16, torch.float32
# (op, dtype, shape, reverse), along dim 0
CASES: list[tuple[str, torch.dtype, tuple[int, int], bool]] = [
    # 128-byte strips too few: 64-byte strips (32-byte in 2-byte types)
    ("cumsum", BF16, (8192, 4096), False), ("cumsum", BF16, (8192, 4096), True),
    ("cumprod", BF16, (8192, 4096), False), ("cumsum_backward", BF16, (8192, 4096), False),
    ("cumsum", F16, (8192, 4096), False), ("cumsum", BF16, (4096, 4096), False),
    ("cumsum", BF16, (2048, 4096), False), ("cumsum", BF16, (16384, 2048), False),
    ("cumsum", BF16, (32768, 2048), False), ("cumsum", F32, (8192, 2048), False),
    ("cumsum", F32, (8192, 2048), True), ("cumsum", F32, (4096, 2048), False),
    ("cumprod", F32, (8192, 2048), False), ("cumsum", F32, (16384, 1024), False),
    # strips two or more an SM
    ("cumsum", BF16, (512, 65536), False), ("cumsum", F32, (512, 65536), False),
    ("cumsum", F16, (512, 65536), False), ("cumprod", BF16, (512, 65536), False),
    ("cumsum_backward", BF16, (512, 65536), False), ("cumsum", BF16, (256, 131072), False),
    ("cumsum", F32, (256, 131072), False), ("cumsum", BF16, (2048, 33792), False),
    ("cumsum", F32, (1024, 33792), False), ("cumsum", BF16, (64, 524288), False),
    # a block an SM (unchanged by either)
    ("cumsum", BF16, (4096, 8192), False), ("cumsum", F32, (4096, 8192), False),
]  # fmt: skip
_NAMES = {BF16: "bf16", F16: "f16", F32: "f32"}


def _calls(op: str, x: Any, reverse: bool) -> tuple[Callable[[], Any], Callable[[], Any], Any]:
    """(ours, torch's, the float64 reference) of ``op`` along dim 0."""
    xd = x.double()
    if op == "cumsum_backward":  # dx of cumsum: dy summed the other way
        ref = xd if reverse else xd.flip(0)
        ref = ref.cumsum(0) if reverse else ref.cumsum(0).flip(0)
        return (lambda: bc.scan_backward("cumsum", x, axis=0, reverse=reverse),
                lambda: x.flip(0).cumsum(0).flip(0), ref)  # fmt: skip
    fn = bc.cumprod if op == "cumprod" else bc.cumsum
    tfn = torch.cumprod if op == "cumprod" else torch.cumsum
    ref = (xd.flip(0) if reverse else xd)
    ref = (ref.cumprod(0) if op == "cumprod" else ref.cumsum(0))
    return (lambda: fn(x, 0, reverse), lambda: tfn(x, 0),
            ref.flip(0) if reverse else ref)  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tag")
    ap.add_argument("json_out", nargs="?")
    ap.add_argument("--peers", action="store_true", help="time copy_ and torch too")
    args = ap.parse_args()
    names = launched(smem=True)
    g = torch.Generator(device="cuda").manual_seed(0)
    rows = []
    for op, dt, shape, reverse in CASES:
        x = scan_input(op, shape, dt, g)
        ours, theirs, ref = _calls(op, x, reverse)
        row = {"op": op, "dtype": _NAMES[dt], "shape": list(shape), "reverse": reverse,
               **measure(ours, theirs, ref, x, names, args.peers)}  # fmt: skip
        del ref
        rows.append(row)
        print(f"{op:16s} {_NAMES[dt]:4s} {shape[0]:>6}x{shape[1]:<7} "
              f"{'rev' if reverse else '   '} {row['us']:7.1f} us{peers_text(row)}  "
              f"{row['kernel']}  err {row['err']:.1e}", flush=True)  # fmt: skip
    write_json(args.json_out, args.tag, rows)


if __name__ == "__main__":
    main()
