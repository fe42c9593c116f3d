"""The stream scan kernel (few long rows of cumsum on sm_90) on small cases, for
compute-sanitizer's racecheck: f32 rows with a partial last tile both ways, and bf16 in
reverse (the partial tile at the stage's end); then 2 and 4 interleaved lines ((n, G) along
dim 0, the kernel's _stream2 / _stream4 entries) in f32 and bf16; and the f32 cumprod, whose
states are doubles (one word each: scan.cu, StateWord), over rows and 2 and 4 lines, on
factors of random sign (exact products). Each output is checked against float64.

    compute-sanitizer --tool racecheck --error-exitcode 9 python scripts/racecheck_stream.py

On an H200 (round 38, the rows; round 39, the lines too; round 61, the f32 cumprod too):
`0 hazards displayed`, in under a minute. `scripts/gpu-check racecheck`
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
PROD_CASES = (
    (torch.float32, (3, 2**18 + 1000), 1, (False, True)),
    (torch.float32, (2**17 + 1000, 2), 0, (False, True)),
    (torch.float32, (2**16 + 500, 4), 0, (True,)),
)
for op, cases in (("cumsum", CASES), ("cumprod", PROD_CASES)):
    ours, theirs = getattr(bc, op), getattr(torch, op)
    for dt, shape, axis, directions in cases:
        if op == "cumprod":  # random signs: exact products through every carry
            x = torch.randint(0, 2, shape, device="cuda").to(dt) * 2 - 1
        else:
            x = torch.randn(*shape, device="cuda", dtype=dt)
        x64 = x.double()
        for rev in directions:
            y = ours(x, axis=axis, reverse=rev)
            ref = theirs(x64.flip(axis), axis).flip(axis) if rev else theirs(x64, axis)
            err = float(((y.double() - ref).abs() / ref.abs().amax()).max())
            what = f"{op} {dt} {shape} axis={axis} reverse={rev}"
            print(f"{what}: error {err:.2e}")
            if not err <= (1e-5 if dt == torch.float32 else 1e-2):
                raise SystemExit(f"{what}: error {err:.2e}")
torch.cuda.synchronize()
print("done")
