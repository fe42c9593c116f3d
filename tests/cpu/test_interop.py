"""Host-side framework plumbing that needs no GPU and no framework."""

from __future__ import annotations

import pytest

from baracuda import _functional


def test_bf16_export_falls_back_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where cuda.core refuses to export bfloat16, the refusal is remembered: later outputs
    go straight to the uint16 bits instead of failing the export again on every call."""
    monkeypatch.setattr(_functional, "_BF16_EXPORT", [True])
    calls: list[str] = []

    def refused() -> str:
        calls.append("native")
        raise BufferError("bfloat16 is not supported")

    def bits() -> str:
        calls.append("bits")
        return "copy"

    assert _functional._bf16_export(refused, bits) == "copy"
    assert _functional._bf16_export(refused, bits) == "copy"
    assert calls == ["native", "bits", "bits"]


def test_bf16_export_native_when_supported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_functional, "_BF16_EXPORT", [True])

    def bits() -> str:
        raise AssertionError("the fallback must not run when the export works")

    assert _functional._bf16_export(lambda: "view", bits) == "view"
    assert _functional._bf16_export(lambda: "view", bits) == "view"
    assert _functional._BF16_EXPORT == [True]


def test_bf16_export_other_errors_propagate(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only BufferError (no bfloat16 export) selects the fallback; other failures surface."""
    monkeypatch.setattr(_functional, "_BF16_EXPORT", [True])

    def broken() -> str:
        raise RuntimeError("device lost")

    with pytest.raises(RuntimeError, match="device lost"):
        _functional._bf16_export(broken, lambda: "copy")
    assert _functional._BF16_EXPORT == [True]
