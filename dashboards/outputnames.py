"""A stream network's output keys in words: ``["spikes_per_minute", "s0", 1735689810.0]`` (the
operator, the group, the window's start in seconds since the epoch) becomes ``spikes per minute
· sensor s0 · 00:03:30``. Pure: keys in, text out (lake text still goes through
``lakeview.text`` on the page).
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime

__all__ = ["output_choice", "output_name"]


def _clock(seconds: object) -> str | None:
    """``HH:MM:SS`` (UTC) of seconds since the epoch, None when it is not a finite number."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) \
            or not math.isfinite(seconds) or abs(seconds) > 1e12:
        return None
    return datetime.fromtimestamp(seconds, UTC).strftime("%H:%M:%S")


def output_name(key: object) -> str:
    """An output key in words: operator (underscores as spaces) · sensor (the group; none for a
    network of one group) · time of day (UTC). A key of another shape is kept as it is.

    >>> output_name('["spikes_per_minute", "s0", 1735689810.0]')
    'spikes per minute · sensor s0 · 00:03:30'
    >>> output_name('["avg", "", 0.0]'), output_name("plain"), output_name('{"a": 1}')
    ('avg · 00:00:00', 'plain', '{"a": 1}')
    """
    try:
        parts = json.loads(key) if isinstance(key, str) else key
    except ValueError:
        return str(key)
    if not isinstance(parts, list) or not parts:
        return str(key)
    words = [str(parts[0]).replace("_", " ")]
    for part in parts[1:]:
        clock = _clock(part)
        if clock is not None:
            words.append(clock)
        elif part not in (None, ""):
            words.append(f"sensor {part}")
    return " · ".join(words)


def output_choice(key: object, ts: object) -> str:
    """An output as the output picker offers it: its name and its day.

    >>> output_choice('["spikes_per_minute", "s0", 1735689810.0]', 1735689810.0)
    'spikes per minute · sensor s0 · 00:03:30 on 2025-01-01'
    """
    name = output_name(key)
    if isinstance(ts, bool) or not isinstance(ts, int | float) or not math.isfinite(ts) \
            or abs(ts) > 1e12:
        return name
    return f"{name} on {datetime.fromtimestamp(ts, UTC).strftime('%Y-%m-%d')}"
