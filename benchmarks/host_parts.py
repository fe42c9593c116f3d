"""Host time of each part of a bound ``bc.cumsum`` call on a (64, 1024) f32 torch tensor, and
of one kernel launch by several routes: a table, and the rows as JSON.

    python benchmarks/host_parts.py out.json [--calls 4000] [--rounds 5]

Each part runs back to back ``calls`` times (the queue kept busy; the launches are of an
empty kernel of three arguments, or of the bound call's own), the median of ``rounds``
rounds. Pin the process to one core (``taskset -c 3 python ...``) for steadier figures
(docs/benchmarks.md, round 58). Needs a GPU and torch with CUDA.
"""

from __future__ import annotations

import argparse
import ctypes
import json
from collections.abc import Callable
from typing import Any


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json_path")
    ap.add_argument("--calls", type=int, default=4000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)

    import torch
    from cuda.bindings import driver as drv
    from cuda.core import Device, LaunchConfig, Program, ProgramOptions, launch

    import baracuda as bc
    from baracuda._bench import host_time
    from baracuda._cuda.device import ensure_current
    from baracuda._interop import torch_signature, torch_stream
    from baracuda.scan import api as scan_api
    from baracuda.scan._kernels import switch_values
    from baracuda.types import ScanKind, TieBreak

    x = torch.randn(64, 1024, device="cuda")
    y = torch.empty_like(x)
    a, b = torch.rand(1024, device="cuda"), torch.rand(1024, device="cuda")
    for _ in range(2):  # checked, then bound
        bc.cumsum(x, axis=1)
    params = (ScanKind.CUMSUM, 1, False, TieBreak.FIRST)
    _, hit, bound = scan_api._BOUND.lookup(None, params, x)
    fast = hit[1] if hit is not None else None
    if fast is None or bound[0] is None:
        raise SystemExit("bc.cumsum of a (64, 1024) f32 tensor was not bound with prepared "
                         "launches: nothing to take apart")  # fmt: skip
    ptrs = (bound[0][1], y.data_ptr(), 0)
    step = fast._bound.steps[0]

    dev = Device(torch.cuda.current_device())
    dev.set_current()
    src = ('extern "C" __global__ void k(float* a, float* b, long long n) '
           "{ if (n < 0) a[0] = b[0]; }")  # fmt: skip
    prog = Program(src, "c++", ProgramOptions(arch=f"sm_{dev.arch}"))
    kern = prog.compile("cubin").get_kernel("k")
    err, fn = drv.cuKernelGetFunction(kern.handle)
    if int(err):
        raise SystemExit(f"cuKernelGetFunction: {err}")
    handle = torch_stream(dev.device_id)
    cu = drv.CUstream(handle)
    held = [ctypes.c_void_p(a.data_ptr()), ctypes.c_void_p(b.data_ptr()), ctypes.c_longlong(5)]
    arr = (ctypes.c_void_p * 3)(*map(ctypes.addressof, held))
    kparams = ctypes.addressof(arr)
    lib = ctypes.CDLL("libcuda.so.1")
    c_launch = lib.cuLaunchKernel
    c_launch.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
    c_launch.restype = ctypes.c_int
    fn_int = int(fn)
    core_stream = dev.create_stream(torch.cuda.current_stream())
    cfg = LaunchConfig(grid=1, block=32)

    parts: dict[str, Callable[[], Any]] = {
        "bc.cumsum (bound)": lambda: bc.cumsum(x, axis=1),
        "torch.cumsum": lambda: torch.cumsum(x, 1),
        "torch.empty_like": lambda: torch.empty_like(x, memory_format=torch.contiguous_format),
        "torch_signature": lambda: torch_signature(x),
        "BoundCalls.lookup": lambda: scan_api._BOUND.lookup(None, params, x),
        "torch_stream": lambda: torch_stream(0),
        "ensure_current": lambda: ensure_current(0),
        "switch_values": switch_values,
        "FastCall.run (its launch)": lambda: fast.run(ptrs),
        "Step.enqueue (its launch)": lambda: step.enqueue(handle, ptrs, 0),
        "cuLaunchKernel, CUstream (cuda.bindings)": lambda: drv.cuLaunchKernel(
            fn, 1, 1, 1, 32, 1, 1, 0, cu, kparams, 0),
        "cuLaunchKernel, int stream (cuda.bindings)": lambda: drv.cuLaunchKernel(
            fn, 1, 1, 1, 32, 1, 1, 0, handle, kparams, 0),
        "cuLaunchKernel (ctypes, libcuda)": lambda: c_launch(
            fn_int, 1, 1, 1, 32, 1, 1, 0, handle, kparams, None),
        "cuda.core launch": lambda: launch(core_stream, cfg, kern, a.data_ptr(), b.data_ptr(), 5),
        "torch.cuda._sleep(0) (torch's launch)": lambda: torch.cuda._sleep(0),  # type: ignore[no-untyped-call]
    }
    card = torch.cuda.get_device_name()
    rows = [{"part": k, "host_us": host_time(f, args.calls, args.rounds, warmup=200)}
            for k, f in parts.items()]  # fmt: skip
    print(f"host time of each part on {card}'s host, median of {args.rounds} rounds of "
          f"{args.calls}\n")  # fmt: skip
    print("| part | µs |\n| --- | ---: |")
    for r in rows:
        print(f"| {r['part']} | {r['host_us']:.2f} |")
    with open(args.json_path, "w") as f:
        json.dump({"card": card, "calls": args.calls, "rounds": args.rounds, "rows": rows}, f,
                  indent=1)  # fmt: skip


if __name__ == "__main__":
    main()
