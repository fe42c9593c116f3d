"""Shared fixtures. GPU tests carry ``@pytest.mark.gpu`` and skip cleanly without a GPU."""

from __future__ import annotations

import os
import zlib
from typing import Any

import pytest

# JAX takes 75 % of the GPU's memory when it starts unless told otherwise: with several test
# processes on one GPU (pytest-xdist, scripts/gpu-check) the others would run out of memory
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


def _cuda_ok() -> bool:
    from baracuda._cuda.driver import gpu_available

    if not gpu_available():
        return False
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


HAS_GPU = _cuda_ok()


def _shard(config: Any, items: list[Any]) -> None:
    """BARACUDA_TEST_SHARDS=k with BARACUDA_TEST_SHARD=i keeps the tests whose node id hashes
    to i mod k (scripts/gpu-check runs a shard a GPU); the rest are deselected."""
    shards = int(os.environ.get("BARACUDA_TEST_SHARDS", "0") or 0)
    if shards <= 1:
        return
    shard = int(os.environ.get("BARACUDA_TEST_SHARD", "0"))
    if not 0 <= shard < shards:
        raise pytest.UsageError(f"BARACUDA_TEST_SHARD={shard} is not in [0, {shards})")
    keep: list[Any] = []
    drop: list[Any] = []
    for it in items:
        (keep if zlib.crc32(it.nodeid.encode()) % shards == shard else drop).append(it)
    config.hook.pytest_deselected(items=drop)
    items[:] = keep


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    _shard(config, items)
    if HAS_GPU:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (and torch with CUDA)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def torch_dtype() -> Any:
    import torch

    from baracuda.types import ElementKind

    return {ElementKind.F32: torch.float32, ElementKind.F16: torch.float16,
            ElementKind.BF16: torch.bfloat16, ElementKind.F64: torch.float64}  # fmt: skip


@pytest.fixture(autouse=True, scope="session")
def _isolated_cache(tmp_path_factory: Any) -> None:
    """Tests compile into their own cache unless BARACUDA_CACHE_DIR is set by the caller."""
    if "BARACUDA_CACHE_DIR" not in os.environ:
        os.environ["BARACUDA_CACHE_DIR"] = str(tmp_path_factory.mktemp("kernel-cache"))
