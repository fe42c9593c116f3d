"""Tune the elementwise grid cap: lerp forward/backward time per WAVES setting vs torch.

python benchmarks/tune_elementwise.py        (on a GPU; prints a table)
"""

from __future__ import annotations

import torch

import baracuda as bc
from baracuda._bench import time_us
from baracuda.elementwise import _launch


def main() -> None:
    print(torch.cuda.get_device_name())
    for dt, el in ((torch.float32, bc.ElementKind.F32), (torch.bfloat16, bc.ElementKind.BF16)):
        shape = (4096, 8192)
        a, b = (
            torch.randn(shape, device="cuda", dtype=dt),
            torch.randn(shape, device="cuda", dtype=dt),
        )
        out, out2 = torch.empty_like(a), torch.empty_like(a)
        s = bc.Stream.wrap(torch.cuda.current_stream())
        fwd = bc.BinaryParamPlan.select(s, bc.BinaryParamDescriptor(shape, el, 0.3))
        bwd = bc.BinaryParamBackwardPlan.select(s, bc.BinaryParamBackwardDescriptor(shape, el, 0.3))
        ws = bc.Workspace.none()
        t_torch = time_us(lambda: torch.lerp(a, b, 0.3, out=out))
        for waves in (4, 8, 16, 32, 1 << 20):
            _launch.WAVES = waves
            tf = time_us(lambda: fwd.run(s, ws, bc.BinaryParamArgs(a, b, out)))
            tb = time_us(lambda: bwd.run(s, ws, bc.BinaryParamBackwardArgs(a, out, out2)))
            print(
                f"{el.value:5} waves={waves:8d} fwd {tf:7.1f} us  bwd {tb:7.1f} us  "
                f"torch.lerp {t_torch:7.1f} us"
            )


if __name__ == "__main__":
    main()
