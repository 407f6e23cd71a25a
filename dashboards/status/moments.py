"""Times as the status pictures need them: any value as a UTC timestamp (or ``None``),
and the seconds between two of them.

>>> seconds_between("2026-01-01 00:00Z", "2026-01-01 00:03Z"), timestamp("soon")
(180.0, None)
"""

from __future__ import annotations

import pandas as pd

__all__ = ["seconds_between", "timestamp"]


def timestamp(value: object) -> pd.Timestamp | None:
    """``value`` as a UTC timestamp, ``None`` when it is missing or not a time."""
    try:
        stamp = pd.to_datetime(value, utc=True)
    except (TypeError, ValueError, OverflowError):
        return None
    return None if pd.isna(stamp) else stamp


def seconds_between(earlier: object, now: object) -> float | None:
    """Seconds from ``earlier`` to ``now``; ``None`` when either is not a time."""
    start, end = timestamp(earlier), timestamp(now)
    return None if start is None or end is None else (end - start).total_seconds()
