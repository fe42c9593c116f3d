"""Tune the sparsemax backward: dy loaded beside y (``DY_WITH_Y``) or only on the support,
and the piece length of split rows (``SPLIT_PIECE``), on the benchmark shapes, beside a
same-bytes copy. Prints a table, writes JSON.

    python benchmarks/tune_sparsemax.py [out.json]        (on a GPU)
"""

from __future__ import annotations

import json
import sys
from typing import Any

import torch

from baracuda._bench import copy_bandwidth, time_us
from baracuda.softmax import _rows
from baracuda.softmax.cases import BENCH_SHAPES, _backward_setup
from baracuda.types import ElementKind

SETTINGS: dict[str, dict[str, Any]] = {
    "dy-with-y": {"DY_WITH_Y": True, "SPLIT_PIECE": 16384},
    "dy-on-support": {"DY_WITH_Y": False, "SPLIT_PIECE": 16384},
    "dy-with-y/piece4096": {"DY_WITH_Y": True, "SPLIT_PIECE": 4096},
}


def main() -> None:
    dev = torch.cuda.get_device_name()
    bw = copy_bandwidth()
    print(f"{dev}: copy bandwidth {bw / 1e9:.0f} GB/s")
    rows: list[dict[str, Any]] = []
    for el in (ElementKind.F32, ElementKind.BF16):
        for shape in BENCH_SHAPES:
            rec: dict[str, Any] = {"device": dev, "shape": list(shape), "dtype": el.value}
            for label, setting in SETTINGS.items():
                for k, v in setting.items():
                    setattr(_rows, k, v)
                st = _backward_setup(shape, el)
                rec[label] = time_us(st.ours)
                if label == "dy-with-y":
                    rec["copy"] = time_us(st.peers["copy_ (same bytes)"])
                    rec["bytes"] = st.bytes_moved
            for k, v in SETTINGS["dy-with-y"].items():
                setattr(_rows, k, v)
            best = min(rec[k] for k in SETTINGS)
            rec["bw_frac"] = rec["bytes"] / (best * 1e-6) / bw
            rows.append(rec)
            cols = "  ".join(f"{k} {rec[k]:7.1f}" for k in (*SETTINGS, "copy"))
            print(f"{el.value:<4} {shape!s:<14} {cols}  best {rec['bw_frac'] * 100:5.1f}%")
            sys.stdout.flush()
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            json.dump({"device": dev, "copy_bw": bw, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
