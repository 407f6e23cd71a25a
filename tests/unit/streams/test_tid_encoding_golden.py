"""The bytes of encoded TID sets are fixed: every encoding writes the exact bytes it wrote
before its varints moved to :mod:`aspen.provenance.varint`, and decodes them back."""

from __future__ import annotations

import pytest

from aspen.streams.encoding import (
    MAX_TID,
    decode,
    decode_per_stream,
    decode_stream,
    encode,
    encode_per_stream,
    encode_stream,
)

#: (ids, keyword arguments of ``encode``, the hex of the bytes written before).
GOLDEN: list[tuple[tuple[int, ...], dict, str]] = [
    ((1,), {}, "000101"),
    ((1, 2, 3, 4), {}, "000401000000"),
    ((1, 2, 3, 4), {"interval": True}, "01010103"),
    ((2, 3, 4, 6), {"last_full": (1, 2, 3, 4)}, "02010304"),
    ((3, 4, 6, 7), {"interval": True, "last_full": (1, 2, 3, 4)}, "0301020401"),
    ((10**9, 10**9 + 5, 10**9 + 300), {}, "00038094ebdc0304a602"),
    ((MAX_TID - 1, MAX_TID), {}, "0002feffffffffffffff7f00"),
    ((1, MAX_TID), {}, "000201fdffffffffffffff7f"),
    ((1, MAX_TID), {"interval": True}, "01020100fcffffffffffffff7f00"),
    ((5, MAX_TID), {"last_full": (MAX_TID,)}, "020101f3ffffffffffffffff01"),  # ten-byte varint
    (tuple(range(10**9, 10**9 + 200, 3)), {"compress": True}, "04430a6b98f2fa0e3313c50000"),
    ((300,), {"last_full": ()}, "020100d804"),
]
STREAM = [(1, 2, 3, 4), (2, 3, 4, 6), (3, 4, 6, 7), (9, 10), (10**12, 10**12 + 1)]
STREAM_HEX = ["01010103", "0301030400", "0301020401", "00020900", "000280a094a58d1d00"]
PER_STREAM = {"s": (1, 2, 3), "t": (2**40,)}
PER_STREAM_HEX = "02017304010101020174080001808080808020"


@pytest.mark.parametrize(("ids", "options", "hexed"), GOLDEN)
def test_set_bytes_are_unchanged(ids: tuple[int, ...], options: dict, hexed: str) -> None:
    assert encode(ids, **options).hex() == hexed
    assert decode(bytes.fromhex(hexed), options.get("last_full")) == ids


def test_stream_bytes_are_unchanged() -> None:
    assert [data.hex() for data in encode_stream(STREAM)] == STREAM_HEX
    assert decode_stream(bytes.fromhex(h) for h in STREAM_HEX) == STREAM


def test_per_stream_bytes_are_unchanged() -> None:
    assert encode_per_stream(PER_STREAM).hex() == PER_STREAM_HEX
    assert decode_per_stream(bytes.fromhex(PER_STREAM_HEX)) == PER_STREAM
