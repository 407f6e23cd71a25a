"""Which query node owns a value: a stable hash, the same in every process and on Spark.

>>> owner("n1", 4) == owner("n1", 4)
True
>>> 0 <= owner(("n1", "n2"), 12) < 12
True
"""

from __future__ import annotations

import zlib
from typing import Any

__all__ = ["owner"]


def owner(value: Any, partitions: int) -> int:
    """The node (0 … partitions-1) that owns ``value`` (CRC-32 of its text form)."""
    if partitions == 1:
        return 0
    return zlib.crc32(repr(value).encode()) % partitions
