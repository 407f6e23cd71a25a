"""The lake's status at a glance: how fresh the views are, what waits to be maintained, how long
batches take, whether the expectations hold, what was quarantined and what died lately, and one
red / amber / green light that sums it up with its reasons in plain words.

One module per concept, every one pure (frames and values in, values out; the current time is an
argument): :mod:`status.words` (numbers in words), :mod:`status.moments` (time arithmetic),
:mod:`status.thresholds`, :mod:`status.freshness` (the last committed batch, the backlog),
:mod:`status.latency`, :mod:`status.expectations`, :mod:`status.quarantine`,
:mod:`status.deaths`, :mod:`status.light` (the pipeline's traffic light and its reasons) and
:mod:`status.network` (the network's light: split, reachability dropped). The pages read
the tables through the reader layer (``lakeview``; whether the lake moved: ``lakewatch``) and
pass them in. The sentences built here (the ``text`` methods, the light's reasons) hold numbers
and fixed words only, so they are safe as Markdown; the frames returned carry text from the lake
(reason codes, file names, link and sensor names), which a page shows in a dataframe or through
``lakeview.text``.

>>> age_text(42), age_text(190), age_text(7300), duration_text(0.25), duration_text(94)
('42 s ago', '3 min ago', '2 h ago', '0.25 s', '94 s')
"""

from __future__ import annotations

from .deaths import DEATH_COLUMNS, recent_deaths, recent_ingest_batches
from .expectations import (
    EXPECTATION_COLUMNS,
    ExpectationSummary,
    expectation_summary,
    latest_expectations,
    observed_text,
)
from .freshness import Backlog, Freshness, backlog, freshness, last_applied
from .latency import (
    Latency,
    latency,
    per_batch_counter,
    slow_batches,
    spark_text,
    stuck_batches,
    worth_charting,
)
from .light import Light, traffic_light
from .network import network_light, routers_text
from .quarantine import (
    REASON_COLUMNS,
    newest_first,
    quarantine_by_reason,
    reason_counts,
    reason_of,
    recent_rows,
)
from .thresholds import (
    BACKLOG_AMBER_S,
    BACKLOG_RED_S,
    CUMULATIVE_RUNTIMES,
    RECENT_BATCHES,
    RECENT_HOURS,
    SLOW_ABSOLUTE_S,
    SLOW_FACTOR,
    SLOW_FLOOR_S,
    SLOW_WINDOW,
    TREND_BATCHES,
    UNCOMMITTED_GRACE_S,
)
from .words import age_text, clock_text, duration_text

__all__ = [
    "BACKLOG_AMBER_S",
    "BACKLOG_RED_S",
    "CUMULATIVE_RUNTIMES",
    "DEATH_COLUMNS",
    "EXPECTATION_COLUMNS",
    "REASON_COLUMNS",
    "RECENT_BATCHES",
    "RECENT_HOURS",
    "SLOW_ABSOLUTE_S",
    "SLOW_FACTOR",
    "SLOW_FLOOR_S",
    "SLOW_WINDOW",
    "TREND_BATCHES",
    "UNCOMMITTED_GRACE_S",
    "Backlog",
    "ExpectationSummary",
    "Freshness",
    "Latency",
    "Light",
    "age_text",
    "backlog",
    "clock_text",
    "duration_text",
    "expectation_summary",
    "freshness",
    "last_applied",
    "latency",
    "latest_expectations",
    "network_light",
    "newest_first",
    "observed_text",
    "per_batch_counter",
    "quarantine_by_reason",
    "reason_counts",
    "reason_of",
    "recent_deaths",
    "recent_ingest_batches",
    "recent_rows",
    "routers_text",
    "slow_batches",
    "spark_text",
    "stuck_batches",
    "traffic_light",
    "worth_charting",
]
