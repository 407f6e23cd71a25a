"""How long batches take: slow batches against the median before them, the trend, batches
that wrote metrics but never committed, and which per-batch counters are worth a chart. Pure.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

import pandas as pd

from .moments import seconds_between
from .thresholds import (
    CUMULATIVE_RUNTIMES,
    SLOW_ABSOLUTE_S,
    SLOW_FACTOR,
    SLOW_FLOOR_S,
    SLOW_WINDOW,
    TREND_BATCHES,
    UNCOMMITTED_GRACE_S,
)
from .words import duration_text, plural

__all__ = ["Latency", "latency", "per_batch_counter", "slow_batches", "spark_text",
           "stuck_batches", "worth_charting"]


def slow_batches(wall: pd.Series) -> pd.DataFrame:
    """Each batch's wall time (``wall``: seconds by batch number) with the median of the
    :data:`SLOW_WINDOW` batches before it and whether it is slow: over :data:`SLOW_FACTOR` ×
    that median and over :data:`SLOW_FLOOR_S`, or over :data:`SLOW_ABSOLUTE_S`. A batch without
    a wall time is not slow.

    >>> wall = pd.Series([2.0, 1.0, 45.0, 3.0, 9.0, 70.0], index=[1, 2, 3, 4, 5, 6])
    >>> flags = slow_batches(wall)
    >>> flags["slow"].tolist(), flags["median_before"].tolist()[:3]
    ([False, False, True, False, False, True], [nan, 2.0, 1.5])
    """
    rows: list[tuple[int, float, float, bool]] = []
    history: list[float] = []
    for batch, value in wall.sort_index().items():
        seconds = float(value) if value is not None and not pd.isna(value) else math.nan
        before = history[-SLOW_WINDOW:]
        median = statistics.median(before) if before else math.nan
        finite = math.isfinite(seconds)
        slow = finite and (
            seconds > SLOW_ABSOLUTE_S
            or (not math.isnan(median) and seconds > SLOW_FLOOR_S
                and seconds > SLOW_FACTOR * median))
        rows.append((int(batch), seconds, median, bool(slow)))  # type: ignore[call-overload]
        if finite:
            history.append(seconds)
    return pd.DataFrame(rows, columns=["batch_id", "wall_seconds", "median_before", "slow"])


@dataclass(frozen=True)
class Latency:
    """The last batch's wall time, whether it was slow (and against which median), the median
    of the last :data:`TREND_BATCHES` batches and of the ones before, and the slow batches among
    the last :data:`TREND_BATCHES`."""

    batch: int | None
    seconds: float | None
    slow: bool
    median_before: float | None
    recent_median: float | None
    recent_count: int
    previous_median: float | None
    recent_slow: tuple[int, ...]

    def trend_text(self) -> str:
        """The trend in words.

        >>> Latency(25, 1.0, False, 1.0, 1.2, 10, 0.8, ()).trend_text()
        'median 1.2 s over the last 10 batches, up from 0.80 s'
        >>> Latency(2, 1.0, False, 1.0, 1.0, 2, None, ()).trend_text()
        'median 1.0 s over the last 2 batches'
        """
        if self.recent_median is None:
            return "no wall time recorded"
        if self.recent_count == 1:
            return "the only batch with a wall time so far"
        text = f"median {duration_text(self.recent_median)} over the last " \
               f"{plural(self.recent_count, 'batch', 'batches')}"
        if self.previous_median is None:
            return text
        if math.isclose(self.recent_median, self.previous_median, rel_tol=0.1):
            return f"{text}, steady"
        direction = "up" if self.recent_median > self.previous_median else "down"
        return f"{text}, {direction} from {duration_text(self.previous_median)}"

    def slow_text(self) -> str:
        """Why the last batch counts as slow (empty when it does not).

        >>> Latency(3, 94.0, True, 1.5, 2.0, 3, None, (3,)).slow_text()
        'the last maintained batch (3) took 94 s, over 3× the median 1.5 s of the batches before it'
        >>> Latency(1, 181.0, True, None, 181.0, 1, None, (1,)).slow_text()
        'the last maintained batch (1) took 3 min, over 60 s'
        >>> Latency(2, 94.0, True, 60.0, 77.0, 2, None, (1, 2)).slow_text()
        'the last maintained batch (2) took 94 s, over 60 s'
        """
        if not self.slow or self.seconds is None:
            return ""
        head = f"the last maintained batch ({self.batch}) took {duration_text(self.seconds)}"
        relative = self.median_before is not None and self.seconds > SLOW_FLOOR_S \
            and self.seconds > SLOW_FACTOR * self.median_before
        if relative:  # the more telling comparison when both hold
            return (f"{head}, over {SLOW_FACTOR:g}× the median "
                    f"{duration_text(self.median_before)} of the batches before it")
        return f"{head}, over {duration_text(SLOW_ABSOLUTE_S)}"


def latency(wall: pd.Series) -> Latency:
    """The latency of the batches whose wall times ``wall`` holds (seconds by batch number).

    >>> wall = pd.Series([1.0] * 10 + [2.0] * 9 + [94.0], index=range(1, 21))
    >>> late = latency(wall)
    >>> late.batch, late.slow, late.recent_median, late.previous_median, late.recent_slow
    (20, True, 2.0, 1.0, (20,))
    """
    known = wall.dropna().sort_index()
    if known.empty:
        return Latency(None, None, False, None, None, 0, None, ())
    flags = slow_batches(known)
    last = flags.iloc[-1]
    recent = known.iloc[-TREND_BATCHES:]
    previous = known.iloc[-2 * TREND_BATCHES:-TREND_BATCHES]
    recent_flags = flags.iloc[-TREND_BATCHES:]
    return Latency(
        int(last["batch_id"]),
        float(last["wall_seconds"]),
        bool(last["slow"]),
        None if pd.isna(last["median_before"]) else float(last["median_before"]),
        float(recent.median()),
        len(recent),
        None if previous.empty else float(previous.median()),
        tuple(int(b) for b in recent_flags.loc[recent_flags["slow"], "batch_id"]),
    )


def stuck_batches(metrics: pd.DataFrame | None, committed_batch: int,
                  metrics_written_at: object, now: object) -> list[int]:
    """Batches that wrote metrics but have no ledger row, when the metrics were written (the
    last commit of the metrics table) more than :data:`UNCOMMITTED_GRACE_S` before ``now``:
    they failed before committing. Younger ones may be committing right now.

    >>> metrics = pd.DataFrame({"batch_id": [3, 4, 4]})
    >>> written = pd.Timestamp("2026-01-01 00:00", tz="UTC")
    >>> stuck_batches(metrics, 3, written, pd.Timestamp("2026-01-01 00:10", tz="UTC"))
    [4]
    >>> stuck_batches(metrics, 3, written, pd.Timestamp("2026-01-01 00:01", tz="UTC"))
    []
    """
    if metrics is None or metrics.empty or "batch_id" not in metrics:
        return []
    age = seconds_between(metrics_written_at, now)
    if age is None or age <= UNCOMMITTED_GRACE_S:
        return []
    return sorted({int(b) for b in metrics["batch_id"] if int(b) > committed_batch})


def per_batch_counter(numbers: pd.DataFrame, column: str) -> pd.Series:
    """``column`` of the per-batch numbers (``lakeview.batch_numbers``) where it counts one
    batch; missing for batches of a runtime whose counters accumulate
    (:data:`CUMULATIVE_RUNTIMES`: there a difference of two batches mixes in state reloads and
    rebuilds, so it is no batch's count either).

    >>> numbers = pd.DataFrame({"runtime": ["local", "spark"], "messages": [900.0, 40.0]})
    >>> per_batch_counter(numbers, "messages").tolist()
    [nan, 40.0]
    """
    values = numbers[column].astype("float64")
    if "runtime" not in numbers:
        return values
    return values.where(~numbers["runtime"].astype(str).isin(CUMULATIVE_RUNTIMES))


def worth_charting(values: pd.Series) -> bool:
    """Whether a per-batch series says anything drawn: at least two known values, not all
    the same (an all-zero or constant series is a flat line).

    >>> worth_charting(pd.Series([0.0, 0.0])), worth_charting(pd.Series([1.0, None, 2.0]))
    (False, True)
    """
    known = pd.to_numeric(values, errors="coerce").dropna()
    return len(known) >= 2 and known.nunique() > 1


#: Eighth blocks, lowest to highest: a series drawn as text.
_BARS = "▁▂▃▄▅▆▇█"


def spark_text(values: list[float]) -> str:
    """``values`` as a row of block characters, the lowest ▁ and the highest █ (all equal:
    the middle block): a sparkline that is text, so the Overview loads no chart library.

    >>> spark_text([1.0, 2.0, 8.0]), spark_text([3.0, 3.0]), spark_text([])
    ('▁▂█', '▄▄', '')
    """
    if not values:
        return ""
    low, high = min(values), max(values)
    if high == low:
        return _BARS[3] * len(values)
    top = len(_BARS) - 1
    return "".join(_BARS[round((v - low) / (high - low) * top)] for v in values)
