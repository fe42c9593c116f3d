"""The array-API path (a CPU array's scans, forward and backward) against torch in float64 on
random cases: the GPU test's cases and checks (``tests/gpu/test_scan_vs_torch.py``) on the
CPU, for NumPy arrays and torch CPU tensors in turn (bf16 as torch tensors)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from tests.gpu.test_scan_vs_torch import random_case


@pytest.mark.parametrize("seed", range(120))
def test_random_case_matches_torch_on_cpu(seed: int) -> None:
    random_case(seed, "cpu", "numpy" if seed % 2 else "torch")
