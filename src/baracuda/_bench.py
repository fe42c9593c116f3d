"""``python -m baracuda bench``: device time of every bench case beside its peers, in one run
on one card, with the card's measured copy bandwidth as the roofline."""

from __future__ import annotations

import functools
import gc
import importlib.util
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from baracuda._check import family_cases
from baracuda._harness import COPY_PEER, BenchCase

__all__ = ["run_bench", "time_device", "time_us", "copy_bandwidth"]


def time_device(
    fn: Callable[[], object], *, warmup_ms: float = 25, rep_ms: float = 100
) -> dict[str, float]:
    """Median (and 20th/80th percentiles) in ms of ``fn`` timed with CUDA events, L2 flushed
    between repetitions (as triton's ``do_bench``), with a GPU spin after the flush so that
    the host's launch time is not timed. (``do_bench`` itself records the start event right
    after the flush: where the host took longer than the flush to enqueue ``fn``, its time
    was counted; on the H100 some bench runs gave 1.5-5x the usual time for single cases.)"""
    import torch

    flush = torch.empty(256 * 2**20, dtype=torch.int8, device="cuda")
    fn()
    torch.cuda.synchronize()
    times: list[float] = []
    deadline = time.perf_counter() + (warmup_ms + rep_ms) / 1e3
    gc_was_on = gc.isenabled()
    gc.disable()  # as timeit does: no collection pause between the events
    try:
        _timed_reps(fn, flush, deadline, times)
    finally:
        if gc_was_on:
            gc.enable()
    times.sort()
    k = len(times)
    return {"ms": statistics.median(times), "p20": times[k // 5], "p80": times[(4 * k) // 5]}


def time_us(fn: Callable[[], object]) -> float:
    """``time_device``'s median of ``fn`` in µs (the benchmark scripts' unit)."""
    return float(time_device(fn)["ms"]) * 1e3


def _timed_reps(fn: Callable[[], object], flush: Any, deadline: float, times: list[float]) -> None:
    import torch

    while time.perf_counter() < deadline or len(times) < 5:
        flush.zero_()
        # ~200 us of GPU spin before the start event: the host's launches of fn are queued
        # by the time the GPU reaches it, so host time and jitter are not timed
        torch.cuda._sleep(400_000)  # type: ignore[no-untyped-call]
        start = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
        end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))


def copy_bandwidth() -> float:
    """Device copy bandwidth in bytes/s: 1 GiB fp32 ``copy_``, read + write bytes counted."""
    import torch

    n = 2**28
    src = torch.rand(n, device="cuda")
    dst = torch.empty_like(src)
    t = time_device(functools.partial(dst.copy_, src))
    del src, dst
    torch.cuda.empty_cache()
    return 2 * n * 4 / (t["ms"] / 1e3)


def _cupy_copy(x: Any) -> Any:
    """A CuPy copy of the torch CUDA tensor ``x``; None where CuPy is not installed or cannot
    run here (a peer's rows are left out, the benchmark goes on)."""
    if importlib.util.find_spec("cupy") is None:
        return None
    try:
        import cupy

        return cupy.asarray(x.cpu().numpy())
    except Exception as e:  # e.g. a CuPy built for another CUDA major version
        print(f"host_overhead: no CuPy rows ({type(e).__name__}: {e})", file=sys.stderr)
        return None


def _jax_copy(x: Any) -> Any:
    """A JAX copy, on JAX's first GPU, of the torch CUDA tensor ``x``; None where JAX is not
    installed or has no GPU backend here."""
    if importlib.util.find_spec("jax") is None:
        return None
    try:
        import jax

        gpus = [d for d in jax.devices() if d.platform == "gpu"]
        if not gpus:
            return None
        return jax.device_put(x.cpu().numpy(), gpus[0]).block_until_ready()
    except Exception as e:
        print(f"host_overhead: no JAX rows ({type(e).__name__}: {e})", file=sys.stderr)
        return None


def host_time(fn: Callable[[], object], calls: int, rounds: int, warmup: int = 100) -> float:
    """Host time of one call of ``fn`` (µs): ``calls`` calls back to back (the GPU queue kept
    busy; the host's time bounds the loop where the kernels are small), the median of
    ``rounds`` rounds, after ``warmup`` calls; the GPU drains between rounds."""
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        times.append((t1 - t0) / calls * 1e6)
    return sorted(times)[rounds // 2]


def host_overhead(n: int = 1024, calls: int = 2000, rounds: int = 3) -> list[dict[str, Any]]:
    """Host time per call (µs) of small launches, queue kept non-empty: every functional op
    on (64, ``n``) f32 torch tensors (lerp on ``n`` elements, with ``plan.run``), forward and
    backward, next to torch's call for the same work where it has one (``peer``); then calls
    that take the checks every time (an explicit ``stream=``: torch's current one, or another,
    whose arrays are ordered by an event and held until the kernels complete; CuPy and JAX
    arrays, where they are installed); the median of ``rounds`` rounds of ``calls`` calls
    each."""
    import torch

    import baracuda as bc

    a, b = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
    out = torch.empty_like(a)
    s = bc.Stream.wrap(torch.cuda.current_stream())
    plan = bc.BinaryParamPlan.select(s, bc.BinaryParamDescriptor((n,), bc.ElementKind.F32, 0.3))
    args = bc.BinaryParamArgs(a, b, out)
    ws = bc.Workspace.none()
    x = torch.randn(64, n, device="cuda")
    dy, cp = torch.randn_like(x), torch.cumprod(x, 1)
    cur = torch.cuda.current_stream()
    sm = bc.sparsemax(x, 1)
    # each call: (function, elements, torch's call for the same work or None)
    fns: dict[str, tuple[Callable[[], object], int, str | None]] = {
        "baracuda plan.run (lerp)": (lambda: plan.run(s, ws, args), n, "torch.lerp(out=)"),
        "baracuda.lerp": (lambda: bc.lerp(a, b, 0.3), n, "torch.lerp"),
        "torch.lerp(out=)": (lambda: torch.lerp(a, b, 0.3, out=out), n, None),
        "torch.lerp": (lambda: torch.lerp(a, b, 0.3), n, None),
        "baracuda.lerp_backward": (lambda: bc.lerp_backward(a, 0.3), n, None),
        "baracuda.cumsum": (lambda: bc.cumsum(x, axis=1), x.numel(), "torch.cumsum"),
        "torch.cumsum": (lambda: torch.cumsum(x, 1), x.numel(), None),
        "baracuda.cummax": (lambda: bc.cummax(x, 1), x.numel(), "torch.cummax"),
        "torch.cummax": (lambda: torch.cummax(x, 1), x.numel(), None),
        "baracuda.logcumsumexp": (
            lambda: bc.logcumsumexp(x, 1), x.numel(), "torch.logcumsumexp"),
        "torch.logcumsumexp": (lambda: torch.logcumsumexp(x, 1), x.numel(), None),
        "baracuda.scan_backward cumprod": (
            lambda: bc.scan_backward("cumprod", dy, x=x, y=cp, axis=1), x.numel(), None),
        "baracuda.scan_backward cummax": (
            lambda: bc.scan_backward("cummax", dy, x=x, axis=1), x.numel(), None),
        "baracuda.sparsemax": (lambda: bc.sparsemax(x, 1), x.numel(), "torch.softmax"),
        "torch.softmax": (lambda: torch.softmax(x, 1), x.numel(), None),
        "baracuda.sparsemax_backward": (
            lambda: bc.sparsemax_backward(dy, sm, 1), x.numel(), None),
        # checked every time: an explicit stream is never a bound call
        "baracuda.cumsum (stream=)": (
            lambda: bc.cumsum(x, axis=1, stream=cur), x.numel(), "torch.cumsum"),
        "baracuda.sparsemax (stream=)": (
            lambda: bc.sparsemax(x, 1, stream=cur), x.numel(), "torch.softmax"),
        "baracuda.lerp (stream=)": (lambda: bc.lerp(a, b, 0.3, stream=cur), n, "torch.lerp"),
    }
    # another stream than torch's current one: the arrays are held until the kernels complete
    side = torch.cuda.Stream()  # type: ignore[no-untyped-call]
    fns["baracuda.cumsum (stream=other)"] = (
        lambda: bc.cumsum(x, axis=1, stream=side), x.numel(), "torch.cumsum")  # fmt: skip
    xc = _cupy_copy(x)  # other frameworks' arrays are checked at every call
    if xc is not None:
        cumsum = sys.modules["cupy"].cumsum
        fns["baracuda.cumsum (cupy)"] = (lambda: bc.cumsum(xc, axis=1), x.numel(), "cupy.cumsum")
        fns["cupy.cumsum"] = (lambda: cumsum(xc, axis=1), x.numel(), None)
    xj = _jax_copy(x)
    if xj is not None:
        jcumsum = sys.modules["jax"].numpy.cumsum
        fns["baracuda.cumsum (jax)"] = (lambda: bc.cumsum(xj, axis=1), x.numel(), "jax cumsum")
        fns["jax cumsum"] = (lambda: jcumsum(xj, axis=1), x.numel(), None)
    rows = []
    for name, (fn, size, peer) in fns.items():
        row: dict[str, Any] = {"call": name, "n": size, "host_us": host_time(fn, calls, rounds)}
        if peer is not None:
            row["peer"] = peer
        rows.append(row)
    return rows


def run_bench(ops: list[str] | None = None, json_path: str | None = None,
              plot_path: str | None = None, host: bool = True) -> list[dict[str, Any]]:  # fmt: skip
    import torch

    if not torch.cuda.is_available():
        print("baracuda bench: needs a CUDA GPU and torch with CUDA", file=sys.stderr)
        raise SystemExit(2)
    card = torch.cuda.get_device_name()
    bw = copy_bandwidth()
    print(f"card: {card}   measured copy bandwidth: {bw / 1e9:.0f} GB/s (1 GiB fp32 copy_)")
    cases: list[BenchCase] = family_cases("bench_cases")
    if ops:
        cases = [c for c in cases if any(c.op == o or c.op.startswith(o + "_") for o in ops)]
    rows: list[dict[str, Any]] = []
    hdr = (f"{'op':<24} {'shape':<18} {'dtype':<5} {'ours us':>9} {'GB/s':>7} {'%bw':>5} "
           f"{'peer':<14} {'peer us':>9} {'speedup':>8}")  # fmt: skip
    print(hdr)
    print("-" * len(hdr))
    for case in cases:
        setup = case.setup()
        ours = time_device(setup.ours)
        gbs = setup.bytes_moved / (ours["ms"] / 1e3) / 1e9
        row: dict[str, Any] = {
            "op": case.op, "shape": list(case.shape), "label": case.label,
            "dtype": case.element.value, "card": card, "bytes": setup.bytes_moved,
            "ours_us": ours["ms"] * 1e3, "ours_p20_us": ours["p20"] * 1e3,
            "ours_p80_us": ours["p80"] * 1e3, "gbps": gbs, "frac_bw": gbs * 1e9 / bw,
            "peers": {}, "notes": setup.notes,
        }  # fmt: skip
        for name, fn in setup.peers.items():
            try:
                t = time_device(fn)
                row["peers"][name] = t["ms"] * 1e3
            except Exception as exc:  # a peer that cannot run is reported, not fatal
                row["peers"][name] = None
                row["notes"][name] = f"{type(exc).__name__}: {exc}"[:200]
        del setup
        torch.cuda.empty_cache()
        shape = "x".join(map(str, case.shape)) + (f" {case.label}" if case.label else "")
        first = True
        for name, us in (row["peers"] or {"-": None}).items():
            lead = (f"{case.op:<24} {shape:<18} {case.element.value:<5} {row['ours_us']:9.1f} "
                    f"{gbs:7.0f} {100 * row['frac_bw']:4.0f}%") if first else " " * 73  # fmt: skip
            peer = f"{name:<14} {us:9.1f} {us / row['ours_us']:7.2f}x" if us else f"{name:<14} n/a"
            print(f"{lead} {peer}")
            first = False
        rows.append(row)
        sys.stdout.flush()
        if json_path:  # written after every case: a run cut short keeps what it measured
            with open(json_path, "w") as f:
                json.dump({"card": card, "copy_bandwidth_gbps": bw / 1e9, "rows": rows}, f)
    result: dict[str, Any] = {"card": card, "copy_bandwidth_gbps": bw / 1e9, "rows": rows}
    if host:
        result["host"] = host_overhead()
        print("\nhost time per call (fp32):")
        for h in result["host"]:
            print(f"  {h['call']:<22} {h['n']:>6} elements {h['host_us']:6.1f} us")
    if json_path:
        with open(json_path, "w") as f:
            json.dump(result, f, indent=1)
    if plot_path:
        _plot(result, plot_path)
    return rows


def _plot(result: dict[str, Any], path: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plot (pip install 'baracuda[plot]')")
        return
    rows = result["rows"]
    labels = [f"{r['op']} {'x'.join(map(str, r['shape']))} {r['label']} {r['dtype']}" for r in rows]
    fig, ax = plt.subplots(figsize=(10, 0.32 * len(rows) + 1.5))
    y = range(len(rows))
    ax.barh([i + 0.2 for i in y], [r["ours_us"] for r in rows], height=0.4, label="baracuda")
    best = [
        min((v for k, v in r["peers"].items() if v and k != COPY_PEER), default=0)
        for r in rows
    ]  # a copy moving the same bytes is a roofline, not a peer
    ax.barh([i - 0.2 for i in y], best, height=0.4, label="best peer (torch / torch.compile)")
    ax.set_yticks(list(y), labels, fontsize=7)
    ax.set_xscale("log")
    ax.set_xlabel("time (us, log)")
    ax.set_title(f"baracuda vs peers on {result['card']}")
    ax.invert_yaxis()
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
