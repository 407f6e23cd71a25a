"""Numbers in words for the status pictures: durations, ages, times of day, counts.

>>> age_text(42), age_text(190), age_text(7300), duration_text(0.25), duration_text(94)
('42 s ago', '3 min ago', '2 h ago', '0.25 s', '94 s')
"""

from __future__ import annotations

import math

from .moments import timestamp

__all__ = ["age_text", "clock_text", "duration_text", "plural"]


def duration_text(seconds: float | None) -> str:
    """A duration in a few characters: ``0.25 s``, ``4.0 s``, ``94 s``, ``3 min``, ``2 h``,
    ``5 d``; ``–`` when unknown.

    >>> [duration_text(s) for s in (0.25, 4.04, 94.4, 181, 7300, 450000, None)]
    ['0.25 s', '4.0 s', '94 s', '3 min', '2 h', '5 d', '–']
    """
    if seconds is None or not math.isfinite(seconds):
        return "–"
    value = max(float(seconds), 0.0)
    if value < 1:
        return f"{value:.2f} s"
    if value < 10:
        return f"{value:.1f} s"
    if value < 120:
        return f"{value:.0f} s"
    if value < 2 * 3600:
        return f"{value / 60:.0f} min"
    if value < 2 * 86400:
        return f"{value / 3600:.0f} h"
    return f"{value / 86400:.0f} d"


def age_text(seconds: float | None) -> str:
    """How long ago, in whole units: ``42 s ago``, ``3 min ago``, ``2 h ago``; ``just now``
    under a second (or for a time ahead of this clock); ``–`` when unknown.

    >>> age_text(0.4), age_text(59.6), age_text(-3), age_text(None)
    ('just now', '60 s ago', 'just now', '–')
    """
    if seconds is None or not math.isfinite(seconds):
        return "–"
    if seconds < 1:
        return "just now"
    if seconds < 120:  # whole seconds: an age needs no decimals
        return f"{round(seconds)} s ago"
    return f"{duration_text(seconds)} ago"


def clock_text(moment: object) -> str:
    """The time of day of ``moment`` (UTC) as ``HH:MM:SS``; ``–`` when it is not a time.

    >>> import pandas as pd
    >>> clock_text(pd.Timestamp("2026-01-02T03:04:05Z")), clock_text("soon")
    ('03:04:05', '–')
    """
    stamp = timestamp(moment)
    return "–" if stamp is None else stamp.strftime("%H:%M:%S")


def plural(count: int, one: str, many: str | None = None) -> str:
    """``1 update``, ``3 updates``.

    >>> plural(1, "batch", "batches"), plural(2, "batch", "batches")
    ('1 batch', '2 batches')
    """
    return f"{count} {one if count == 1 else (many or one + 's')}"
