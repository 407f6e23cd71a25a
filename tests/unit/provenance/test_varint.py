"""The one varint codec (unsigned LEB128) of the provenance codec and the TID-set encodings:
the bytes it writes are the bytes both wrote before, it reads back what it writes, and it
refuses every malformed varint in one line after at most ten bytes, in both of its users."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aspen.errors import ProvenanceError
from aspen.provenance import codec
from aspen.provenance.bdd import ProvenanceManager, decode, encode
from aspen.provenance.varint import (
    MAX_VARINT,
    MAX_VARINT_BYTES,
    get_varint,
    put_varint,
    varint_array,
)
from aspen.streams import encoding

#: value → the bytes the provenance codec and the TID-set encodings both wrote for it before.
GOLDEN: list[tuple[int, str]] = [
    (0, "00"), (1, "01"), (2, "02"), (63, "3f"), (64, "40"), (127, "7f"), (128, "8001"),
    (129, "8101"), (255, "ff01"), (256, "8002"), (300, "ac02"), (0x3FFF, "ff7f"),
    (0x4000, "808001"), (0x1FFFFF, "ffff7f"), (0x200000, "80808001"), (0xFFFFFFF, "ffffff7f"),
    (0x10000000, "8080808001"), (0x800000000, "808080808001"), (0x3FFFFFFFFFF, "ffffffffff7f"),
    (0x2000000000000, "8080808080808001"), (0x100000000000000, "808080808080808001"),
    (0x7FFFFFFFFFFFFFFE, "feffffffffffffff7f"), (0x7FFFFFFFFFFFFFFF, "ffffffffffffffff7f"),
    (0x8000000000000000, "80808080808080808001"), (0xFFFFFFFFFFFFFFFE, "feffffffffffffffff01"),
    (0xFFFFFFFFFFFFFFFF, "ffffffffffffffffff01"),
]

#: malformed varints, each with the words of its one-line error.
MALFORMED: list[tuple[str, str]] = [
    ("", "truncated"),
    ("80", "truncated"),
    ("ffffffff", "truncated"),
    ("8000", "overlong"),  # 0 in two bytes
    ("ff8000", "overlong"),  # 127 in three bytes
    ("ffffffffffffffffff7f", "above 2\\*\\*64 - 1"),  # ten bytes, 70 bits
    ("80808080808080808002", "above 2\\*\\*64 - 1"),  # 2**64
    ("ffffffffffffffffffff01", "longer than 10 bytes"),
    ("80" * 40 + "01", "longer than 10 bytes"),
]


def varint(value: int) -> bytes:
    out = bytearray()
    put_varint(out, value)
    return bytes(out)


@pytest.mark.parametrize(("value", "hexed"), GOLDEN)
def test_bytes_are_those_both_old_writers_wrote(value: int, hexed: str) -> None:
    assert varint(value).hex() == hexed
    assert get_varint(bytes.fromhex(hexed), 0) == (value, len(hexed) // 2)
    assert len(hexed) // 2 <= MAX_VARINT_BYTES


@settings(max_examples=300, deadline=None)
@given(values=st.lists(st.integers(0, MAX_VARINT), max_size=20), prefix=st.binary(max_size=4))
def test_every_value_round_trips(values: list[int], prefix: bytes) -> None:
    out = bytearray(prefix)
    for value in values:
        put_varint(out, value)
    pos, back = len(prefix), []
    for _ in values:
        value, pos = get_varint(bytes(out), pos)
        back.append(value)
    assert back == values and pos == len(out)


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.integers(0, 2**63 - 1), min_size=1, max_size=30))
def test_the_vectorised_reader_agrees(values: list[int]) -> None:
    data = b"".join(varint(v) for v in values)
    assert varint_array(data, 0).tolist() == values


@pytest.mark.parametrize("value", [-1, -(2**70), MAX_VARINT + 1, 2**100])
def test_the_writer_refuses_what_no_varint_holds(value: int) -> None:
    with pytest.raises(ProvenanceError, match="a varint holds 0 to 2\\*\\*64 - 1"):
        put_varint(bytearray(), value)


@pytest.mark.parametrize(("hexed", "words"), MALFORMED)
def test_malformed_varints_are_refused_in_one_line(hexed: str, words: str) -> None:
    with pytest.raises(ProvenanceError, match=words) as err:
        get_varint(bytes.fromhex(hexed) + b"\x01" * 20 * ("truncated" != words), 0)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("hexed", ["8000", "ffffffffffffffffffff01", "80808080808080808001"])
def test_the_vectorised_reader_refuses_malformed_varints(hexed: str) -> None:
    with pytest.raises(ProvenanceError):
        varint_array(bytes.fromhex("01" + hexed), 0)


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=40), pos=st.integers(0, 40))
def test_any_bytes_give_a_value_or_the_error_within_ten_bytes(data: bytes, pos: int) -> None:
    try:
        value, end = get_varint(data, pos)
    except ProvenanceError as err:
        assert "\n" not in str(err)
        return
    assert 0 <= value <= MAX_VARINT and pos < end <= pos + MAX_VARINT_BYTES
    assert data[pos:end] == varint(value)  # only the shortest form is read


# ---------------------------------------------------------------- both users refuse them


def splice(data: bytes, at: int, hexed: str) -> bytes:
    """``data`` with the one-byte varint at ``at`` replaced by ``hexed``."""
    return data[:at] + bytes.fromhex(hexed) + data[at + 1:]


@pytest.mark.parametrize(("hexed", "words"), MALFORMED[3:])
@pytest.mark.parametrize("backend", ["cudd", "python"])
def test_the_provenance_codec_refuses_malformed_varints(backend: str, hexed: str,
                                                        words: str) -> None:
    m = ProvenanceManager(backend=backend)
    data = encode(m.or_(m.var("x1"), m.and_(m.var("x2"), m.var("x3"))))
    assert get_varint(data, 1) == (3, 2)  # the count of names, one byte
    with pytest.raises(ProvenanceError, match=f"provenance bytes: .*{words}"):
        decode(ProvenanceManager(backend=backend), splice(data, 1, hexed))
    with pytest.raises(ProvenanceError, match="provenance bytes: .*varint"):  # int64 there
        codec.stored_order([data, splice(data, len(data) - 1, hexed)])


@pytest.mark.parametrize(("hexed", "words"), MALFORMED[3:])
def test_the_tid_set_encodings_refuse_malformed_varints(hexed: str, words: str) -> None:
    data = encoding.encode((2, 3, 4, 6), interval=True)
    assert encoding.read_header(data).count == 2  # the count, one byte at 1
    with pytest.raises(ProvenanceError, match=f"TID set bytes: .*{words}"):
        encoding.decode(splice(data, 1, hexed))
    with pytest.raises(ProvenanceError, match=words):
        encoding.decode(splice(data, len(data) - 1, hexed))
    joined = encoding.encode_per_stream({"s": (1, 2)})
    with pytest.raises(ProvenanceError, match=words):
        encoding.split_per_stream(splice(joined, 0, hexed))


@pytest.mark.parametrize("data", [
    bytes([0x04]) + varint(2**63) + b"\x01\x00",  # a deflated body claiming 2**63 ids
    bytes([0x00, 0x01, 0x01, 0x01]) + b"\x00" * 3,  # trailing bytes
    b"\x01\x02\xff\xfe\x00",  # a stream name that is not UTF-8
    b"\x01\x09ab",  # a stream name cut short
])
def test_the_tid_set_encodings_refuse_odd_counts_and_names(data: bytes) -> None:
    with pytest.raises(ProvenanceError):
        if data[0] in (0x00, 0x04):
            encoding.decode(data)
        else:
            encoding.decode_per_stream(data)
