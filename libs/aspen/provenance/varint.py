"""Unsigned LEB128 varints: the one varint codec of Aspen's byte formats (the provenance codec,
:mod:`aspen.provenance.codec`, and the TID-set encodings, :mod:`aspen.streams.encoding`).

Seven bits per byte, low bits first, the high bit set on every byte but the last. The reader
takes only what the writer writes: a value in ``[0, 2**64 - 1]`` (:data:`MAX_VARINT`), in at
most :data:`MAX_VARINT_BYTES` bytes, in its shortest form. Anything else — cut short, longer
than ten bytes, above ``2**64 - 1``, or overlong (a last byte of zero after others) — raises
:class:`~aspen.errors.ProvenanceError` in one line, after reading at most ten bytes.

>>> out = bytearray()
>>> put_varint(out, 300)
>>> out.hex(), get_varint(bytes(out), 0)
('ac02', (300, 2))
>>> get_varint(b"\\x80\\x00", 0, "TID set bytes")
Traceback (most recent call last):
...
aspen.errors.ProvenanceError: corrupt TID set bytes: an overlong varint at byte 0
"""

from __future__ import annotations

from typing import Any

from aspen.errors import ProvenanceError

__all__ = ["MAX_VARINT", "MAX_VARINT_BYTES", "get_varint", "put_varint", "varint_array"]

#: Largest value a varint holds: any zigzagged difference of two int64 values fits.
MAX_VARINT = 2**64 - 1
#: Most bytes of one varint (70 bits, of which the tenth byte may use one).
MAX_VARINT_BYTES = 10
_WHAT = "varint bytes"


def put_varint(out: bytearray, value: int) -> None:
    """Append ``value`` to ``out`` as a varint (ProvenanceError: negative, or above
    :data:`MAX_VARINT`).

    >>> out = bytearray()
    >>> for v in (0, 127, 128):
    ...     put_varint(out, v)
    >>> out.hex()
    '007f8001'
    """
    if value < 0x80:
        if value < 0:
            raise ProvenanceError(f"a varint holds 0 to 2**64 - 1, not {value}")
        out.append(value)
        return
    if value > MAX_VARINT:
        raise ProvenanceError(f"a varint holds 0 to 2**64 - 1, not {value}")
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def get_varint(data: bytes, pos: int, what: str = _WHAT) -> tuple[int, int]:
    """The varint at ``data[pos]`` and the position after it; ``what`` names the bytes in an
    error ("truncated provenance bytes").

    >>> get_varint(bytes.fromhex("ff01ac02"), 2)
    (300, 4)
    >>> get_varint(b"\\xff", 0, "provenance bytes")
    Traceback (most recent call last):
    ...
    aspen.errors.ProvenanceError: truncated provenance bytes
    """
    if pos >= len(data):
        raise ProvenanceError(f"truncated {what}")
    byte = data[pos]
    if byte < 0x80:  # most varints are one byte
        return byte, pos + 1
    start = pos
    result, shift, pos = byte & 0x7F, 7, pos + 1
    while True:
        if pos >= len(data):
            raise ProvenanceError(f"truncated {what}")
        if pos - start >= MAX_VARINT_BYTES:
            raise ProvenanceError(
                f"corrupt {what}: a varint longer than {MAX_VARINT_BYTES} bytes at byte {start}")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            if byte == 0:
                raise ProvenanceError(f"corrupt {what}: an overlong varint at byte {start}")
            if result > MAX_VARINT:
                raise ProvenanceError(f"corrupt {what}: a varint above 2**64 - 1 at byte {start}")
            return result, pos
        shift += 7


def varint_array(data: bytes, pos: int, what: str = _WHAT) -> Any:
    """Every varint of ``data`` from ``pos`` to the end, as a numpy int64 array (vectorised: a
    stored region formula lists a million nodes). Counts and references only: a value above
    ``2**63 - 1`` is refused, besides everything :func:`get_varint` refuses.

    >>> varint_array(bytes.fromhex("00ac027f"), 0).tolist()
    [0, 300, 127]
    """
    import numpy as np

    raw = np.frombuffer(data, dtype=np.uint8, offset=pos)
    if raw.size == 0:
        return np.zeros(0, dtype=np.int64)
    ends = np.flatnonzero((raw & 0x80) == 0)
    if ends.size == 0 or ends[-1] != raw.size - 1:
        raise ProvenanceError(f"truncated {what}")
    starts = np.concatenate(([0], ends[:-1] + 1))
    lengths = ends - starts + 1
    longest = int(lengths.max())
    if longest > MAX_VARINT_BYTES:
        raise ProvenanceError(f"corrupt {what}: a varint longer than {MAX_VARINT_BYTES} bytes")
    if ((lengths > 1) & (raw[ends] == 0)).any():
        raise ProvenanceError(f"corrupt {what}: an overlong varint")
    if longest == MAX_VARINT_BYTES:  # nine bytes hold 63 bits: a tenth is above int64
        raise ProvenanceError(f"corrupt {what}: a varint above 2**63 - 1 for a count")
    payload = (raw & 0x7F).astype(np.int64)
    values = np.zeros(ends.size, dtype=np.int64)
    for k in range(longest):
        longer = lengths > k
        values[longer] |= payload[starts[longer] + k] << (7 * k)
    return values
