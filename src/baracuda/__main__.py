"""``python -m baracuda {info, compile, check, bench}``."""

from __future__ import annotations

import argparse
import functools
import importlib
import sys
import time
from collections.abc import Iterable

from baracuda._registry import compile_job, import_families


def cmd_info(_: argparse.Namespace) -> int:
    import platform

    from baracuda import __version__
    from baracuda._cuda.compiler import cache_dir, cuda_include_dir, nvrtc_version
    from baracuda._cuda.driver import device_count

    print(f"baracuda {__version__}  python {platform.python_version()}")
    for mod in ("cuda.core", "cuda.bindings", "cuda.pathfinder", "numpy", "array_api_compat"):
        try:
            m = importlib.import_module(mod)
            print(f"  {mod:<18} {getattr(m, '__version__', '?')}")
        except ImportError:
            print(f"  {mod:<18} not installed")
    try:
        print(f"  NVRTC              {'.'.join(map(str, nvrtc_version()))}")
        print(f"  CUDA headers       {cuda_include_dir()}")
    except Exception as exc:
        print(f"  NVRTC              unavailable ({exc})")
    n = device_count()
    if n == 0:
        print("GPU: none (the functional API runs the array-API path)")
    else:
        from baracuda._cuda.device import device_info

        for i in range(n):
            d = device_info(i)
            print(f"GPU {i}: {d.name}  {d.arch}  {d.sm_count} SMs  L2 {d.l2_bytes >> 20} MiB")
    path = cache_dir()
    files = list(path.glob("**/*")) if path.exists() else []
    size = sum(f.stat().st_size for f in files if f.is_file())
    print(f"kernel cache: {path}  ({len([f for f in files if f.is_file()])} files, "
          f"{size / 2**20:.1f} MiB)")  # fmt: skip
    return 0


def cmd_compile(args: argparse.Namespace) -> int:
    from baracuda._cuda.compiler import registered_sources
    from baracuda._cuda.driver import gpu_available

    import_families()
    arches = args.arch
    if not arches:
        if gpu_available():
            from baracuda._cuda.device import device_info

            arches = [device_info(0).arch]
        else:
            arches = ["sm_90"]
    jobs = [(s.name, e, a) for s in registered_sources() for e in s.elements for a in arches]
    t0 = time.perf_counter()
    workers = max(1, min(args.jobs, len(jobs)))
    job = functools.partial(compile_job, syntax_only=args.syntax_only)  # picklable

    def report(results: Iterable[tuple[str, str, str, int, float]]) -> None:
        for i, (name, el, arch, size, secs) in enumerate(results, 1):
            print(f"[{i:3d}/{len(jobs)}] {name:<28} {el:<5} {arch:<6} "
                  f"{size / 1024:7.1f} KiB  {secs:5.2f} s")  # fmt: skip
            sys.stdout.flush()

    if workers == 1:
        report(map(job, jobs))
    else:
        # NVRTC is single-threaded: one process per program; the cache takes concurrent writers.
        # The pool is shut down here, not at interpreter exit: there its wake-up pipe may be
        # closed first ("Exception ignored ... Bad file descriptor" in a CI run).
        import concurrent.futures as cf
        import multiprocessing as mp

        with cf.ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn")) as pool:
            report(pool.map(job, jobs))
    what = "checked (NVRTC's front end)" if args.syntax_only else "compiled"
    print(f"{what} {len(jobs)} programs in {time.perf_counter() - t0:.1f} s")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from baracuda._check import run_check

    return 1 if run_check(args.backend, args.ops) else 0


def cmd_bench(args: argparse.Namespace) -> int:
    from baracuda._bench import run_bench

    run_bench(args.ops, args.json, args.plot, host=not args.no_host)
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m baracuda", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("info", help="versions, GPU, arch, kernel cache").set_defaults(fn=cmd_info)
    c = sub.add_parser("compile", help="compile every kernel instantiation into the cache")
    c.add_argument("--arch", action="append", help="sm_XY (repeatable); default: the GPU's")
    c.add_argument("--jobs", "-j", type=int, default=1, help="parallel compiler processes")
    c.add_argument("--syntax-only", action="store_true",
                   help="NVRTC's front end alone (parsing, templates): no cubins")  # fmt: skip
    c.set_defaults(fn=cmd_compile)
    k = sub.add_parser("check", help="run every op against float64 truth, print a table")
    k.add_argument("--backend", choices=["cuda", "array-api"], default=None)
    k.add_argument("--ops", nargs="*", help="only these ops (prefix match)")
    k.set_defaults(fn=cmd_check)
    b = sub.add_parser("bench", help="time every op against torch on this GPU")
    b.add_argument("--ops", nargs="*", help="only these ops (prefix match)")
    b.add_argument("--json", help="write the results here")
    b.add_argument("--plot", help="write a PNG plot here (needs matplotlib)")
    b.add_argument("--no-host", action="store_true", help="skip the host-overhead table")
    b.set_defaults(fn=cmd_bench)
    args = p.parse_args(argv)
    rc: int = args.fn(args)
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
