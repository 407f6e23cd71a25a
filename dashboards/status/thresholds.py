"""The thresholds of the status pictures: when a batch is slow, when waiting updates turn the
light amber or red, what counts as recent, which runtimes count cumulatively."""

from __future__ import annotations

__all__ = ["SLOW_FACTOR", "SLOW_FLOOR_S", "SLOW_WINDOW", "SLOW_ABSOLUTE_S", "TREND_BATCHES",
           "BACKLOG_AMBER_S", "BACKLOG_RED_S", "UNCOMMITTED_GRACE_S", "RECENT_HOURS",
           "RECENT_BATCHES", "CUMULATIVE_RUNTIMES"]


#: A batch is slow when its wall time is over SLOW_FACTOR × the median wall time of the (up to)
#: SLOW_WINDOW batches before it and over SLOW_FLOOR_S (a 0.3 s batch after 0.05 s ones is not
#: worth a flag) ...
SLOW_FACTOR = 3.0
SLOW_FLOOR_S = 10.0
SLOW_WINDOW = 20
#: ... or over SLOW_ABSOLUTE_S whatever came before (a first build included): views that lag a
#: minute behind their updates are worth a look.
SLOW_ABSOLUTE_S = 60.0
#: The latency trend compares the median of the last TREND_BATCHES batches with the median of
#: the TREND_BATCHES before them.
TREND_BATCHES = 10
#: Updates waiting to be maintained for longer than this turn the light amber ...
BACKLOG_AMBER_S = 600.0
#: ... and for longer than this red: the maintainer is not keeping up, or not running.
BACKLOG_RED_S = 3600.0
#: A batch writes its metrics a moment before its commit; metrics of a batch that has not
#: committed this long after they were written mean the batch failed before committing (red).
UNCOMMITTED_GRACE_S = 300.0
#: Quarantined records and deaths of ingest batches this recent (by the ingest's wall-clock
#: time) are "new" ...
RECENT_HOURS = 24.0
#: ... or, for rows without a time, those of the last RECENT_BATCHES batches.
RECENT_BATCHES = 3
#: Runtimes whose communication counters (messages, tuples, prov_bytes) accumulate over batches
#: (from the last rebuild of their state, restored with it) instead of counting one batch.
CUMULATIVE_RUNTIMES: frozenset[str] = frozenset({"local"})
