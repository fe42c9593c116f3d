"""Host-side launch helpers that need no GPU."""

from __future__ import annotations

import struct

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
