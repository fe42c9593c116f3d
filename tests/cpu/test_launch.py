"""Host-side launch helpers that need no GPU."""

from __future__ import annotations

import struct

import pytest

from baracuda._cuda.launch import _offsets


def test_packed_offsets_follow_c_layout() -> None:
    # pointer, pointer, pointer, float, int64: the float is padded to the next 8 bytes
    assert _offsets("QQQfq") == (0, 8, 16, 24, 32)
    assert _offsets("QQQdq") == (0, 8, 16, 24, 32)
    assert _offsets("fQ") == (0, 8)
    assert _offsets("iiq") == (0, 4, 8)
    buf = bytearray(64)
    struct.pack_into("@QQQfq", buf, 0, 1, 2, 3, 0.5, 7)
    assert struct.unpack_from("<f", buf, 24)[0] == 0.5
    assert struct.unpack_from("<q", buf, 32)[0] == 7


def test_dependent_launches_on_hopper_and_later(monkeypatch: pytest.MonkeyPatch) -> None:
    from baracuda._cuda import launch

    assert [launch.dependent_launches(a) for a in ("sm_80", "sm_86", "sm_89")] == [False] * 3
    assert [launch.dependent_launches(a) for a in ("sm_90", "sm_90a", "sm_100", "sm_120f")] == [
        True
    ] * 4
    monkeypatch.setattr(launch, "DEPENDENT_LAUNCH", False)
    assert not launch.dependent_launches("sm_90")


@pytest.mark.parametrize(
    ("dependent", "cooperative"), [(True, False), (False, True), (True, True)]
)
def test_launch_attributes(dependent: bool, cooperative: bool) -> None:
    """The reused per-thread launch config asks for programmatic stream serialization and/or
    a cooperative launch (cuda.bindings only; no GPU needed to build it)."""
    pytest.importorskip("cuda.bindings")
    from baracuda._cuda.driver import driver
    from baracuda._cuda.launch import _configs

    drv = driver()
    ids = drv.CUlaunchAttributeID
    cfg = _configs.get(dependent, cooperative)
    assert cfg is _configs.get(dependent, cooperative)  # built once a thread
    assert (cfg.blockDimY, cfg.blockDimZ, cfg.numAttrs) == (1, 1, dependent + cooperative)
    got = {int(a.id): a for a in cfg.attrs[: cfg.numAttrs]}
    pss = int(ids.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
    coop = int(ids.CU_LAUNCH_ATTRIBUTE_COOPERATIVE)
    assert set(got) == ({pss} if dependent else set()) | ({coop} if cooperative else set())
    if dependent:
        assert got[pss].value.programmaticStreamSerializationAllowed == 1
    if cooperative:
        assert got[coop].value.cooperative == 1
