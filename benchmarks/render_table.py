"""Render ``python -m baracuda bench --json FILE`` output as the markdown table of
docs/benchmarks.md.

    python benchmarks/render_table.py bench.json > table.md
"""

from __future__ import annotations

import json
import sys


def main(path: str) -> None:
    with open(path) as f:
        d = json.load(f)
    bw = d["copy_bandwidth_gbps"]
    print(f"Card: **{d['card']}**; measured copy bandwidth **{bw:.0f} GB/s** "
          "(1 GiB fp32 `copy_`, read + write).\n")  # fmt: skip
    print("| op | shape | dtype | baracuda µs | GB/s | % of copy bw | % of a same-bytes copy "
          "| peers (µs) | speed-up vs best peer |")  # fmt: skip
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | --- | ---: |")
    for r in d["rows"]:
        peers = {k: v for k, v in r["peers"].items() if v and not k.startswith("copy_")}
        best = min(peers.values()) if peers else None
        shown = ", ".join(f"{k} {v:.1f}" for k, v in r["peers"].items() if v)
        shape = "x".join(map(str, r["shape"])) + (f" ({r['label']})" if r["label"] else "")
        speed = f"{best / r['ours_us']:.2f}x" if best else "-"
        # the copy of the op's bytes, timed in the same run: the floor at this size
        copy = next((v for k, v in r["peers"].items() if v and k.startswith("copy_")), None)
        same = f"{100 * copy / r['ours_us']:.0f}%" if copy else "-"
        print(f"| {r['op']} | {shape} | {r['dtype']} | {r['ours_us']:.1f} | {r['gbps']:.0f} | "
              f"{100 * r['frac_bw']:.0f}% | {same} | {shown} | {speed} |")  # fmt: skip
    if d.get("host"):
        print("\nHost time per call (fp32, queue kept busy):\n")
        print("| call | elements | µs |\n| --- | ---: | ---: |")
        for h in d["host"]:
            print(f"| {h['call']} | {h.get('n', 1024)} | {h['host_us']:.1f} |")


if __name__ == "__main__":
    main(sys.argv[1])
