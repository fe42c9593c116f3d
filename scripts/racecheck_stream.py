"""The stream scan kernel (few long rows of cumsum on sm_90) on small cases, for
compute-sanitizer's racecheck: f32 rows with a partial last tile both ways, and bf16 in
reverse (the partial tile at the stage's end); then 2 and 4 interleaved lines ((n, G) along
dim 0, the kernel's _stream2 / _stream4 entries) in f32 and bf16. Each output is checked
against float64.

    compute-sanitizer --tool racecheck --error-exitcode 9 python scripts/racecheck_stream.py

On an H200 (round 38, the rows; round 39, the lines too): `0 hazards displayed`, in under a
minute. `scripts/gpu-check racecheck`
runs it.
"""

from __future__ import annotations

import torch

import baracuda as bc
from baracuda.scan import _kernels as K

K.STREAM_ITEMSIZES = (2, 4)  # bf16 rows on the stream kernel too
if torch.cuda.get_device_capability()[0] < 9:
    raise SystemExit("the stream kernel runs on sm_90 and later")
# (dtype, shape, axis, directions): rows along dim 1, interleaved lines along dim 0
CASES = (
    (torch.float32, (3, 2**18 + 1000), 1, (False, True)),
    (torch.bfloat16, (3, 2**17 + 2000), 1, (True,)),
    (torch.float32, (2**17 + 1000, 2), 0, (False, True)),
    (torch.float32, (2**16 + 500, 4), 0, (False, True)),
    (torch.bfloat16, (2**17 + 2000, 2), 0, (True,)),
)
for dt, shape, axis, directions in CASES:
    x = torch.randn(*shape, device="cuda", dtype=dt)
    x64 = x.double()
    for rev in directions:
        y = bc.cumsum(x, axis=axis, reverse=rev)
        ref = torch.cumsum(x64.flip(axis), axis).flip(axis) if rev else torch.cumsum(x64, axis)
        err = float(((y.double() - ref).abs() / ref.abs().amax()).max())
        print(f"{dt} {shape} axis={axis} reverse={rev}: error {err:.2e}")
        if not err <= (1e-5 if dt == torch.float32 else 1e-2):
            raise SystemExit(f"{dt} {shape} axis={axis} reverse={rev}: error {err:.2e}")
torch.cuda.synchronize()
print("done")
