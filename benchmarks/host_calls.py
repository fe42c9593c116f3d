"""Host time per call of every functional op on small torch tensors, next to torch's call for
the same work: a table, and the rows as JSON.

    python benchmarks/host_calls.py out.json [--calls 2000] [--rounds 5]

Each call runs back to back ``calls`` times with the GPU queue kept busy (the kernels are
small: the host's time bounds the loop), the median of ``rounds`` rounds. Pin the process to
one core (``taskset -c 3 python ...``) for steadier figures; compare trees in turn, in one
session on one machine (docs/benchmarks.md, round 24).
"""

from __future__ import annotations

import argparse
import json
import sys


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json_path")
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)

    import torch

    from baracuda._bench import host_overhead

    card = torch.cuda.get_device_name()
    rows = host_overhead(calls=args.calls, rounds=args.rounds)
    by = {r["call"]: r["host_us"] for r in rows}
    print(f"host time per call on {card}, median of {args.rounds} rounds of {args.calls}\n")
    print("| call | elements | µs | torch's call | µs | ratio |")
    print("| --- | ---: | ---: | --- | ---: | ---: |")
    for r in rows:
        if r["call"].startswith("torch"):
            continue
        peer = r.get("peer")
        tail = f"{peer} | {by[peer]:.1f} | {r['host_us'] / by[peer]:.2f}" if peer else "- | | "
        print(f"| {r['call']} | {r['n']} | {r['host_us']:.1f} | {tail} |")
    with open(args.json_path, "w") as f:
        json.dump({"card": card, "calls": args.calls, "rounds": args.rounds, "rows": rows}, f,
                  indent=1)  # fmt: skip
    sys.stdout.flush()


if __name__ == "__main__":
    main()
