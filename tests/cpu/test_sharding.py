"""The GPU runner's test shards (tests/conftest.py, scripts/gpu-check): every test in exactly
one shard, whatever the number of shards; a shard outside the range is refused."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from tests.conftest import _shard


def _items(n: int) -> list[Any]:
    return [SimpleNamespace(nodeid=f"tests/gpu/test_x.py::test_{i}[case{i % 7}]") for i in range(n)]


def _run(items: list[Any], shards: int, shard: int, monkeypatch: pytest.MonkeyPatch) -> tuple[
        list[Any], list[Any]]:  # fmt: skip
    monkeypatch.setenv("BARACUDA_TEST_SHARDS", str(shards))
    monkeypatch.setenv("BARACUDA_TEST_SHARD", str(shard))
    dropped: list[Any] = []
    hook = SimpleNamespace(pytest_deselected=lambda items: dropped.extend(items))
    config = SimpleNamespace(hook=hook)
    kept = list(items)
    _shard(config, kept)
    return kept, dropped


@pytest.mark.parametrize("shards", [2, 3, 4, 8])
def test_shards_partition_the_tests(shards: int, monkeypatch: pytest.MonkeyPatch) -> None:
    items = _items(500)
    seen: list[str] = []
    for shard in range(shards):
        kept, dropped = _run(items, shards, shard, monkeypatch)
        assert len(kept) + len(dropped) == len(items)
        assert 500 // shards // 2 < len(kept) < 2 * 500 // shards  # roughly even
        assert _run(items, shards, shard, monkeypatch)[0] == kept  # the same every time
        seen += [it.nodeid for it in kept]
    assert sorted(seen) == sorted(it.nodeid for it in items)


def test_no_shards_keeps_every_test(monkeypatch: pytest.MonkeyPatch) -> None:
    items = _items(50)
    for shards in (0, 1):
        kept, dropped = _run(items, shards, 0, monkeypatch)
        assert kept == items and dropped == []


def test_shard_out_of_range(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(pytest.UsageError, match="BARACUDA_TEST_SHARD=4"):
        _run(_items(10), 4, 4, monkeypatch)
