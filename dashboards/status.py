"""The lake's status at a glance: how fresh the views are, what waits to be maintained, how long
batches take, whether the expectations hold, what was quarantined and what died lately, and one
red / amber / green light that sums it up with its reasons in plain words.

Every function here is pure (frames and values in, values out; the current time is an argument)
except :func:`lake_fingerprint` and :func:`lake_moved`, which read the Delta versions of the
lake's tables (cheap: no data file is opened). The pages read the tables (``lakeview``) and pass
them in. The sentences they build (the ``text`` methods, the light's reasons) hold numbers and
fixed words only, so they are safe as Markdown; the frames they return carry text from the lake
(reason codes, file names, link and sensor names), which a page shows in a dataframe or through
``lakeview.text``.

The thresholds are the constants below.

>>> age_text(42), age_text(190), age_text(7300), duration_text(0.25), duration_text(94)
('42 s ago', '3 min ago', '2 h ago', '0.25 s', '94 s')
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple
from urllib.parse import urlparse

import pandas as pd
from deltalake.exceptions import DeltaError
from lakeview import lake_tables

from aspen.lake.committed import GOVERNED_TABLES
from aspen.lake.deltars import table_version_or_none
from aspen.lake.housekeeping import LEASE_TABLES, known_tables
from aspen.settings import Settings

__all__ = [
    "BACKLOG_AMBER_S",
    "BACKLOG_RED_S",
    "CUMULATIVE_RUNTIMES",
    "DEATH_COLUMNS",
    "EXPECTATION_COLUMNS",
    "PAGE_SIZE",
    "RECENT_BATCHES",
    "REASON_COLUMNS",
    "RECENT_HOURS",
    "REFRESH_ENV",
    "REFRESH_S",
    "SLOW_ABSOLUTE_S",
    "SLOW_FACTOR",
    "SLOW_FLOOR_S",
    "SLOW_WINDOW",
    "TREND_BATCHES",
    "UNCOMMITTED_GRACE_S",
    "Backlog",
    "ExpectationSummary",
    "Fingerprint",
    "Freshness",
    "Latency",
    "Light",
    "age_text",
    "backlog",
    "clock_text",
    "duration_text",
    "expectation_summary",
    "freshness",
    "lake_fingerprint",
    "lake_moved",
    "last_applied",
    "newest_first",
    "latency",
    "latest_expectations",
    "observed_text",
    "page_slice",
    "per_batch_counter",
    "quarantine_by_reason",
    "reason_counts",
    "reason_of",
    "recent_deaths",
    "recent_ingest_batches",
    "recent_rows",
    "refresh_interval",
    "registry_through",
    "slow_batches",
    "stuck_batches",
    "traffic_light",
    "watched_tables",
    "worth_charting",
]

# -- thresholds -------------------------------------------------------------------------------

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
#: Seconds between two checks of whether the lake moved (the sidebar's refresh); the environment
#: variable REFRESH_ENV overrides it (0 turns the refresh off).
REFRESH_S = 5.0
REFRESH_ENV = "ASPEN_DASHBOARD_REFRESH_S"
#: Rows per page of a paged table.
PAGE_SIZE = 100
#: Runtimes whose communication counters (messages, tuples, prov_bytes) accumulate over batches
#: (from the last rebuild of their state, restored with it) instead of counting one batch.
CUMULATIVE_RUNTIMES: frozenset[str] = frozenset({"local"})

RED, AMBER, GREEN = "red", "amber", "green"
_LINE_PREFIX = re.compile(r"^line \d+:\s*")


# -- words --------------------------------------------------------------------------------------


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

    >>> clock_text(pd.Timestamp("2026-01-02T03:04:05Z")), clock_text("soon")
    ('03:04:05', '–')
    """
    stamp = _timestamp(moment)
    return "–" if stamp is None else stamp.strftime("%H:%M:%S")


def _timestamp(value: object) -> pd.Timestamp | None:
    """``value`` as a UTC timestamp, ``None`` when it is missing or not a time."""
    try:
        stamp = pd.to_datetime(value, utc=True)
    except (TypeError, ValueError, OverflowError):
        return None
    return None if pd.isna(stamp) else stamp


def _seconds_between(earlier: object, now: object) -> float | None:
    start, end = _timestamp(earlier), _timestamp(now)
    return None if start is None or end is None else (end - start).total_seconds()


def _plural(count: int, one: str, many: str | None = None) -> str:
    """``1 update``, ``3 updates``.

    >>> _plural(1, "batch", "batches"), _plural(2, "batch", "batches")
    ('1 batch', '2 batches')
    """
    return f"{count} {one if count == 1 else (many or one + 's')}"


# -- freshness ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Freshness:
    """The views as of the last committed batch: its number, the last ingest batch it covers,
    when it committed and how long ago (``batch`` is ``None`` before the first commit)."""

    batch: int | None
    through_ingest_batch: int
    committed_at: pd.Timestamp | None
    age_s: float | None

    def text(self) -> str:
        """One line for a page.

        >>> Freshness(3, 7, None, 42.0).text()
        'views current as of batch 3, committed 42 s ago'
        >>> Freshness(None, -1, None, None).text()
        'no batch has been maintained yet'
        """
        if self.batch is None:
            return "no batch has been maintained yet"
        return f"views current as of batch {self.batch}, committed {age_text(self.age_s)}"


def freshness(ledger: pd.DataFrame | None, now: object) -> Freshness:
    """The last committed batch of ``ledger`` (``batch_id``, ``through_ingest_batch``,
    ``committed_at``) as seen at ``now``.

    >>> ledger = pd.DataFrame({"batch_id": [1, 2], "through_ingest_batch": [4, 6],
    ...     "committed_at": pd.to_datetime(["2026-01-01 00:00", "2026-01-01 00:05"], utc=True)})
    >>> fresh = freshness(ledger, pd.Timestamp("2026-01-01 00:08", tz="UTC"))
    >>> fresh.batch, fresh.through_ingest_batch, fresh.age_s, fresh.text()
    (2, 6, 180.0, 'views current as of batch 2, committed 3 min ago')
    """
    if ledger is None or ledger.empty or "batch_id" not in ledger:
        return Freshness(None, -1, None, None)
    last = ledger.sort_values("batch_id").iloc[-1]
    through = last.get("through_ingest_batch")
    committed = _timestamp(last.get("committed_at"))
    return Freshness(
        int(last["batch_id"]),
        -1 if through is None or pd.isna(through) else int(through),
        committed,
        None if committed is None else _seconds_between(committed, now),
    )


# -- backlog --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Backlog:
    """Updates ingested but not yet in the views: the ingest ``batches`` they came in, how many
    ``updates`` those hold, and when the oldest was ingested (and how long ago)."""

    batches: tuple[int, ...]
    updates: int
    oldest_at: pd.Timestamp | None
    age_s: float | None

    def text(self) -> str:
        """One line for a page.

        >>> Backlog((5, 6), 12, None, 200.0).text()
        '12 updates in 2 ingest batches waiting, the oldest for 3 min'
        >>> Backlog((), 0, None, None).text()
        'nothing waiting'
        """
        if not self.batches:
            return "nothing waiting"
        return (f"{_plural(self.updates, 'update')} in "
                f"{_plural(len(self.batches), 'ingest batch', 'ingest batches')} waiting, "
                f"the oldest for {duration_text(self.age_s)}")


def last_applied(apply_state: pd.DataFrame | None) -> int:
    """The last ingest batch applied to the base tables and the registry (the largest
    ``batch_id`` of ``apply_state``); 0 when none is.

    >>> last_applied(pd.DataFrame({"batch_id": [1, 3, 2]})), last_applied(None)
    (3, 0)
    """
    if apply_state is None or apply_state.empty or "batch_id" not in apply_state:
        return 0
    return int(apply_state["batch_id"].max())


def registry_through(variables: pd.DataFrame | None) -> int:
    """The last ingest batch the registry records a birth or a death of (-1: none): what the
    next maintained batch will cover (``aspen.pipeline.batch.registry_through``).

    >>> registry_through(pd.DataFrame({"inserted_batch": [1, 4],
    ...                                "deleted_batch": pd.array([5, None], dtype="Int64")}))
    5
    """
    if variables is None or variables.empty:
        return -1
    found = [variables[c].max() for c in ("inserted_batch", "deleted_batch") if c in variables]
    values = [int(v) for v in found if v is not None and not pd.isna(v)]
    return max(values, default=-1)


def backlog(ingest_files: pd.DataFrame | None, applied_through: int, maintained_through: int,
            registry_through: int, now: object) -> Backlog:
    """The ingest batches whose updates the views do not reflect yet, from the committed ingest
    batches (``ingest_files``: ``batch_id``, ``valid`` updates per file, ``ingested_at``).

    An ingest batch waits when it is not applied yet (after ``applied_through``, the last
    ``apply_state`` batch), or when it is applied and the registry records a change of it that
    no committed batch covers (after ``maintained_through``, the last ledger row's
    ``through_ingest_batch``, and at most ``registry_through``). An applied batch that changed
    nothing in the registry (deletes of dead tuples, readings only) has nothing left to
    maintain.

    >>> files = pd.DataFrame({"batch_id": [1, 2, 3, 4], "valid": [10, 5, 0, 7],
    ...     "ingested_at": pd.to_datetime(["2026-01-01 00:00", "2026-01-01 00:01",
    ...                                    "2026-01-01 00:02", "2026-01-01 00:03"], utc=True)})
    >>> later = pd.Timestamp("2026-01-01 00:11", tz="UTC")
    >>> waiting = backlog(files, applied_through=3, maintained_through=1, registry_through=2,
    ...                   now=later)
    >>> waiting.batches, waiting.updates, waiting.age_s
    ((2, 4), 12, 600.0)
    """
    if ingest_files is None or ingest_files.empty or "batch_id" not in ingest_files:
        return Backlog((), 0, None, None)
    frame = ingest_files.assign(
        valid=ingest_files["valid"] if "valid" in ingest_files else 0,
        ingested_at=ingest_files["ingested_at"] if "ingested_at" in ingest_files else pd.NaT,
    )
    per_batch = frame.groupby("batch_id").agg(updates=("valid", "sum"),
                                              at=("ingested_at", "min"))
    batch = per_batch.index.to_series().astype("int64")
    waiting = per_batch[(batch > applied_through)
                        | ((batch > maintained_through) & (batch <= registry_through))]
    if waiting.empty:
        return Backlog((), 0, None, None)
    oldest = _timestamp(waiting["at"].min())
    return Backlog(
        tuple(int(b) for b in waiting.index),
        int(waiting["updates"].fillna(0).sum()),
        oldest,
        None if oldest is None else _seconds_between(oldest, now),
    )


# -- latency --------------------------------------------------------------------------------------


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
               f"{_plural(self.recent_count, 'batch', 'batches')}"
        if self.previous_median is None:
            return text
        if math.isclose(self.recent_median, self.previous_median, rel_tol=0.1):
            return f"{text}, steady"
        direction = "up" if self.recent_median > self.previous_median else "down"
        return f"{text}, {direction} from {duration_text(self.previous_median)}"

    def slow_text(self) -> str:
        """Why the last batch counts as slow (empty when it does not).

        >>> Latency(3, 94.0, True, 1.5, 2.0, 3, None, (3,)).slow_text()
        'the last batch (3) took 94 s, over 3× the median 1.5 s of the batches before it'
        >>> Latency(1, 181.0, True, None, 181.0, 1, None, (1,)).slow_text()
        'the last batch (1) took 3 min, over 60 s'
        >>> Latency(2, 94.0, True, 60.0, 77.0, 2, None, (1, 2)).slow_text()
        'the last batch (2) took 94 s, over 60 s'
        """
        if not self.slow or self.seconds is None:
            return ""
        head = f"the last batch ({self.batch}) took {duration_text(self.seconds)}"
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
    age = _seconds_between(metrics_written_at, now)
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


# -- expectations ---------------------------------------------------------------------------------


def observed_text(value: object) -> str:
    """What an expectation observed, readable: a JSON object as ``key: value`` pairs, a JSON
    list as its items, anything else as it is.

    >>> observed_text('{"unexpected": 0, "element_count": 811}')
    'unexpected: 0, element_count: 811'
    >>> observed_text('[1, "a"]'), observed_text("0 of 811 unexpected"), observed_text(None)
    ('1, a', '0 of 811 unexpected', '')
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    parsed: object = value
    if isinstance(value, str):
        stripped = value.strip()
        if not stripped.startswith(("{", "[")):
            return value
        try:
            parsed = json.loads(stripped)
        except ValueError:
            return value
    return _plain(parsed)


def _plain(value: object) -> str:
    if isinstance(value, Mapping):
        return ", ".join(f"{key}: {_plain(item)}" for key, item in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(_plain(item) for item in value)
    return "null" if value is None else str(value)


#: Columns of :func:`latest_expectations`.
EXPECTATION_COLUMNS = ["batch_id", "suite", "table", "expectation", "success", "observed",
                       "checked_at", "stale"]


def latest_expectations(results: pd.DataFrame | None, committed_batch: int | None
                        ) -> pd.DataFrame:
    """The results of the latest batch checked (every suite runs on each check, so that batch
    has them all; an expectation dropped from the suites since stays out), failures first, with
    ``observed`` readable (:func:`observed_text`) and ``stale`` when that batch is before
    ``committed_batch``: the expectations have not run on the views as they are.

    >>> results = pd.DataFrame({"batch_id": [1, 2, 2], "suite": ["s"] * 3, "table": ["t"] * 3,
    ...     "expectation": ["a", "a", "b"], "success": [False, True, False],
    ...     "observed": ['{"n": 1}', '{"n": 0}', "x"]})
    >>> rows = latest_expectations(results, committed_batch=3)
    >>> rows[["batch_id", "expectation", "success", "observed", "stale"]].values.tolist()
    [[2, 'b', False, 'x', True], [2, 'a', True, 'n: 0', True]]
    """
    if results is None or results.empty or "batch_id" not in results:
        return pd.DataFrame(columns=EXPECTATION_COLUMNS)
    batch = int(results["batch_id"].max())
    latest = results[results["batch_id"] == batch].copy()
    for column in ("suite", "table", "expectation", "observed", "checked_at"):
        if column not in latest:
            latest[column] = None
    latest = latest.assign(
        success=latest["success"].astype(bool),
        observed=[observed_text(v) for v in latest["observed"]],
        stale=committed_batch is not None and batch < committed_batch,
    )
    latest = latest.sort_values(["success", "suite", "table", "expectation"], kind="stable")
    return latest[EXPECTATION_COLUMNS].reset_index(drop=True)


@dataclass(frozen=True)
class ExpectationSummary:
    """How many expectations were checked, how many failed and are stale, and the batch."""

    checked: int
    failed: int
    stale: int
    batch: int | None

    def text(self) -> str:
        """One line for a page.

        >>> ExpectationSummary(10, 1, 0, 3).text()
        '1 of 10 expectations failed (batch 3)'
        >>> ExpectationSummary(4, 0, 4, 1).text()
        'all 4 expectations passed (batch 1)'
        >>> ExpectationSummary(0, 0, 0, None).text()
        'no expectation checked yet'
        """
        if not self.checked:
            return "no expectation checked yet"
        if self.failed:
            return f"{self.failed} of {_plural(self.checked, 'expectation')} failed " \
                   f"(batch {self.batch})"
        return f"all {_plural(self.checked, 'expectation')} passed (batch {self.batch})"


def expectation_summary(latest: pd.DataFrame) -> ExpectationSummary:
    """Counts of :func:`latest_expectations` rows.

    >>> latest = pd.DataFrame({"batch_id": [2, 3], "success": [False, True],
    ...                        "stale": [True, False]})
    >>> expectation_summary(latest)
    ExpectationSummary(checked=2, failed=1, stale=1, batch=3)
    """
    if latest.empty:
        return ExpectationSummary(0, 0, 0, None)
    return ExpectationSummary(
        len(latest),
        int((~latest["success"].astype(bool)).sum()),
        int(latest["stale"].astype(bool).sum()),
        int(latest["batch_id"].max()),
    )


# -- quarantine -----------------------------------------------------------------------------------


def reason_of(code: object, message: object) -> str:
    """The reason a record was quarantined: its reason ``code`` (``bad_cost``), else its
    message without the ``line N:`` it starts with (so one reason over many lines is one).

    >>> reason_of("bad_ts", "line 3: bad time"), reason_of(None, "line 12: not JSON")
    ('bad_ts', 'not JSON')
    >>> reason_of("", float("nan"))
    '(no reason)'
    """
    if isinstance(code, str) and code.strip():
        return code.strip()
    if message is None or (isinstance(message, float) and math.isnan(message)):
        return "(no reason)"
    return _LINE_PREFIX.sub("", str(message)) or "(no reason)"


def _reasons(quarantine: pd.DataFrame) -> pd.Series:
    codes = quarantine["code"] if "code" in quarantine else pd.Series(None, index=quarantine.index)
    messages = (quarantine["reason"] if "reason" in quarantine
                else pd.Series(None, index=quarantine.index))
    return pd.Series([reason_of(c, m) for c, m in zip(codes, messages, strict=True)],
                     index=quarantine.index, dtype=object)


def _example(row: Mapping[str, object]) -> str:
    """``file line N: message`` of one quarantined record."""
    source = row.get("source")
    line = row.get("line")
    message = row.get("reason")
    where = "" if source is None or pd.isna(source) else str(source)  # type: ignore[arg-type]
    if line is not None and not pd.isna(line):  # type: ignore[arg-type]
        where = f"{where} line {int(line)}".strip()  # type: ignore[call-overload]
    text = "" if message is None or pd.isna(message) else _LINE_PREFIX.sub(  # type: ignore[arg-type]
        "", str(message))
    return f"{where}: {text}" if where and text else where or text


def newest_first(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows newest first: by ingest time, then batch (both descending); within one, by file and
    line.

    >>> rows = pd.DataFrame({"batch_id": [1, 2, 2], "source": ["a", "b", "a"], "line": [1, 5, 9]})
    >>> newest_first(rows).values.tolist()
    [[2, 'a', 9], [2, 'b', 5], [1, 'a', 1]]
    """
    keys = [c for c in ("ingested_at", "batch_id") if c in frame]
    rest = [c for c in ("source", "line") if c in frame]
    if not keys and not rest:
        return frame
    return frame.sort_values(keys + rest, ascending=[False] * len(keys) + [True] * len(rest),
                             kind="stable", na_position="last")


#: Columns of :func:`quarantine_by_reason`.
REASON_COLUMNS = ["reason", "records", "latest batch", "example", "second example"]


def quarantine_by_reason(quarantine: pd.DataFrame) -> pd.DataFrame:
    """One row per reason (:func:`reason_of`): how many records, the latest batch and one or two
    example records (``file line N: message``, the newest), the reason last seen first (then the
    most frequent).

    >>> rows = pd.DataFrame({"batch_id": [1, 1, 2], "source": ["a.jsonl"] * 3,
    ...     "line": [3, 9, 4], "code": ["bad_cost", "bad_cost", "bad_ts"],
    ...     "reason": ["line 3: cost -1", "line 9: cost nan", "line 4: ts ?"]})
    >>> quarantine_by_reason(rows).values.tolist()
    [['bad_ts', 1, 2, 'a.jsonl line 4: ts ?', ''], \
['bad_cost', 2, 1, 'a.jsonl line 3: cost -1', 'a.jsonl line 9: cost nan']]
    """
    if quarantine.empty:
        return pd.DataFrame(columns=REASON_COLUMNS)
    frame = newest_first(quarantine.assign(_reason=_reasons(quarantine)))
    rows = []
    for reason, group in frame.groupby("_reason", sort=False):
        examples = [_example(r) for r in group.head(2).to_dict("records")]
        latest = group["batch_id"].max() if "batch_id" in group else None
        rows.append((reason, len(group), latest, examples[0], examples[1] if len(examples) > 1
                     else ""))
    table = pd.DataFrame(rows, columns=REASON_COLUMNS)
    return table.sort_values(["latest batch", "records", "reason"],
                             ascending=[False, False, True], kind="stable").reset_index(drop=True)


def recent_rows(frame: pd.DataFrame, time_column: str, now: object,
                hours: float = RECENT_HOURS, batch_column: str = "batch_id") -> pd.DataFrame:
    """The rows of ``frame`` from the last ``hours`` before ``now`` (by ``time_column``); for a
    frame without that column, those of its last :data:`RECENT_BATCHES` batches.

    >>> rows = pd.DataFrame({"batch_id": [1, 2], "ingested_at": pd.to_datetime(
    ...     ["2026-01-01", "2026-01-03"], utc=True)})
    >>> now = pd.Timestamp("2026-01-03 12:00", tz="UTC")
    >>> recent_rows(rows, "ingested_at", now)["batch_id"].tolist()
    [2]
    """
    if frame.empty:
        return frame
    if time_column in frame:
        moments = pd.to_datetime(frame[time_column], utc=True, errors="coerce")
        cutoff = _timestamp(now)
        if cutoff is None:
            return frame.iloc[:0]
        return frame[moments >= cutoff - pd.Timedelta(hours=hours)]
    if batch_column not in frame:
        return frame.iloc[:0]
    batches = sorted(set(frame[batch_column].dropna()), reverse=True)[:RECENT_BATCHES]
    return frame[frame[batch_column].isin(batches)]


def reason_counts(quarantine: pd.DataFrame) -> dict[str, int]:
    """Records per reason (:func:`reason_of`), the most frequent first (then by name).

    >>> reason_counts(pd.DataFrame({"code": ["b", "a", "b", None],
    ...                             "reason": ["", "", "", "line 1: odd"]}))
    {'b': 2, 'a': 1, 'odd': 1}
    """
    if quarantine.empty:
        return {}
    counts = _reasons(quarantine).value_counts(sort=False)
    ordered = sorted(counts.items(), key=lambda item: (-item[1], str(item[0])))
    return {str(reason): int(count) for reason, count in ordered}


# -- deaths ---------------------------------------------------------------------------------------

#: Columns of :func:`recent_deaths`.
DEATH_COLUMNS = ["what", "name", "death", "batch"]
#: Deaths that end a tuple (a replaced instance lives on under its new value).
_ENDING_DEATHS = ("deleted", "expired")


def _values_list(raw: object) -> list[object]:
    try:
        values = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return [raw]
    if isinstance(values, Mapping):
        values = list(values.values())
    return list(values) if isinstance(values, list | tuple) else [values]


def _tuple_name(relation: str, raw: object) -> str:
    """A link as ``a → b``, anything else as its first value.

    >>> _tuple_name("link", '["a", "b", 1.0]'), _tuple_name("sensor", '["s1", 0, 0]')
    ('a → b', 's1')
    """
    values = _values_list(raw)
    if relation == "link" and len(values) >= 2:
        return f"{values[0]} → {values[1]}"
    return str(values[0]) if values else ""


def recent_ingest_batches(ingest_files: pd.DataFrame | None, now: object,
                          hours: float = RECENT_HOURS) -> list[int]:
    """The ingest batches committed in the last ``hours`` before ``now`` (by ``ingested_at``,
    the wall-clock time of the ingest; a TTL sweep's batch has a row too), newest first; without
    that column, the last :data:`RECENT_BATCHES`.

    >>> files = pd.DataFrame({"batch_id": [1, 2, 2], "ingested_at": pd.to_datetime(
    ...     ["2026-01-01", "2026-01-03", "2026-01-03"], utc=True)})
    >>> recent_ingest_batches(files, pd.Timestamp("2026-01-03 12:00", tz="UTC"))
    [2]
    """
    if ingest_files is None or ingest_files.empty or "batch_id" not in ingest_files:
        return []
    rows = recent_rows(ingest_files, "ingested_at", now, hours)
    return sorted({int(b) for b in rows["batch_id"].dropna()}, reverse=True)


def recent_deaths(variables: pd.DataFrame | None, batches: Iterable[int],
                  relations: Sequence[str] = ("link", "sensor"),
                  still_dead: bool = True) -> pd.DataFrame:
    """Tuples of ``relations`` that died (deleted or expired) in one of the ingest ``batches``
    and (``still_dead``) have no live instance now: one row per tuple (its latest death), newest
    first. ``variables`` is the
    registry (``relation``, ``key``, ``values``, ``deleted_batch``, ``death``). Its
    ``deleted_at`` is the update's event time (a replay's may be years old), so recency goes by
    batch (:func:`recent_ingest_batches`).

    >>> registry = pd.DataFrame({"relation": ["link", "link", "sensor", "link", "link"],
    ...     "key": ['["a","b"]', '["b","c"]', '["s1"]', '["b","c"]', '["c","d"]'],
    ...     "values": ['["a","b",1]', '["b","c",2]', '["s1",0,0]', '["b","c",3]', '["c","d",1]'],
    ...     "deleted_batch": pd.array([4, 4, 3, None, 1], dtype="Int64"),
    ...     "death": ["expired", "deleted", "deleted", None, "deleted"]})
    >>> recent_deaths(registry, [4, 3]).values.tolist()
    [['link', 'a → b', 'expired', 4], ['sensor', 's1', 'deleted', 3]]
    >>> len(recent_deaths(registry, [4, 3], still_dead=False))  # b → c lives on
    3
    """
    wanted = {int(b) for b in batches}
    if variables is None or variables.empty or "deleted_batch" not in variables or not wanted:
        return pd.DataFrame(columns=DEATH_COLUMNS)
    frame = variables[variables["relation"].astype(str).isin(relations)]
    if "key" not in frame:
        frame = frame.assign(key=frame["values"].astype(str))
    alive = frame[frame["deleted_batch"].isna()]
    living = set(zip(alive["relation"].astype(str), alive["key"].astype(str), strict=True))
    dead = frame[frame["deleted_batch"].notna()]
    dead = dead[dead["deleted_batch"].astype("int64").isin(wanted)]
    death = dead["death"].fillna("deleted").astype(str) if "death" in dead else "deleted"
    dead = dead.assign(death=death)
    dead = dead[dead["death"].isin(_ENDING_DEATHS)]
    if still_dead:
        dead = dead[[(r, k) not in living for r, k in zip(
            dead["relation"].astype(str), dead["key"].astype(str), strict=True)]]
    if dead.empty:
        return pd.DataFrame(columns=DEATH_COLUMNS)
    dead = dead.sort_values("deleted_batch", kind="stable").groupby(["relation", "key"]).tail(1)
    out = pd.DataFrame({
        "what": dead["relation"].astype(str),
        "name": [_tuple_name(r, v) for r, v in zip(dead["relation"].astype(str),
                                                   dead["values"], strict=True)],
        "death": dead["death"],
        "batch": dead["deleted_batch"].astype("int64"),
    })
    return out.sort_values(["batch", "what", "name"], ascending=[False, True, True],
                           kind="stable").reset_index(drop=True)


# -- the light ------------------------------------------------------------------------------------


class Light(NamedTuple):
    """The overall status: ``red``, ``amber`` or ``green``, and its reasons in plain words."""

    colour: str
    reasons: tuple[str, ...]


def traffic_light(
    *,
    fresh: Freshness,
    waiting: Backlog,
    late: Latency,
    expectations: ExpectationSummary,
    new_quarantine: int = 0,
    stuck: Sequence[int] = (),
    unreadable: int = 0,
) -> Light:
    """Red, amber or green with the reasons, worst first.

    Red: a failed expectation, a batch that wrote its metrics but never committed
    (:func:`stuck_batches`), updates waiting longer than :data:`BACKLOG_RED_S`. Amber: no batch
    maintained yet, updates waiting longer than :data:`BACKLOG_AMBER_S`, a slow last batch
    (:func:`slow_batches`), expectations last checked before the last committed batch, records
    quarantined lately, a table that cannot be read. Green otherwise.

    >>> fresh = Freshness(3, 5, None, 42.0)
    >>> nothing, quick = Backlog((), 0, None, None), Latency(3, 1.0, False, 1.0, 1.0, 3, 1.0, ())
    >>> traffic_light(fresh=fresh, waiting=nothing, late=quick,
    ...               expectations=ExpectationSummary(5, 0, 0, 3))
    Light(colour='green', reasons=('views current as of batch 3, committed 42 s ago; nothing \
waiting; all 5 expectations passed (batch 3)',))
    >>> traffic_light(fresh=fresh, waiting=Backlog((6,), 4, None, 900.0), late=quick,
    ...               expectations=ExpectationSummary(5, 1, 5, 2), new_quarantine=2)
    Light(colour='red', reasons=('1 of 5 expectations failed (batch 2)', '4 updates in 1 \
ingest batch waiting, the oldest for 15 min', 'the expectations were last checked on batch 2; \
the views are at batch 3', '2 records quarantined in the last 24 h'))
    """
    red: list[str] = []
    amber: list[str] = []
    if expectations.failed:
        red.append(expectations.text())
    for batch in stuck:
        red.append(f"batch {batch} wrote its metrics but never committed: it failed before "
                   "its commit (run the maintainer again)")
    if waiting.batches and waiting.age_s is not None:
        if waiting.age_s > BACKLOG_RED_S:
            red.append(f"{waiting.text()}: is the maintainer running?")
        elif waiting.age_s > BACKLOG_AMBER_S:
            amber.append(waiting.text())
    if fresh.batch is None:
        amber.append(fresh.text())
    if late.slow:
        amber.append(late.slow_text())
    if expectations.checked and fresh.batch is not None and expectations.stale:
        amber.append(f"the expectations were last checked on batch {expectations.batch}; "
                     f"the views are at batch {fresh.batch}")
    if new_quarantine:
        amber.append(f"{_plural(new_quarantine, 'record')} quarantined in the last "
                     f"{RECENT_HOURS:g} h")
    if unreadable:
        amber.append(f"{_plural(unreadable, 'table')} cannot be read (see Internals)")
    if red or amber:
        return Light(RED if red else AMBER, (*red, *amber))
    return Light(GREEN, ("; ".join([fresh.text(), waiting.text(), expectations.text()]),))


# -- when the lake moves --------------------------------------------------------------------------

#: ``(table, Delta version)`` of the watched tables that exist, sorted; version -1 for a table
#: delta-rs cannot open.
Fingerprint = tuple[tuple[str, int], ...]


def watched_tables(names: Iterable[str]) -> list[str]:
    """The tables whose new versions the pages should show: every table but the leases (renewed
    while a writer runs, with nothing for a page to show) and the tables readers see only as of
    the last committed batch (a new version of those shows once the ledger commits it).

    >>> watched_tables(["ledger", "maintainer_lease", "reachable", "quarantine"])
    ['ledger', 'quarantine']
    """
    return sorted(n for n in set(names) if n not in LEASE_TABLES and n not in GOVERNED_TABLES)


def lake_fingerprint(settings: Settings, names: Iterable[str] | None = None) -> Fingerprint:
    """The Delta versions of the watched tables (:func:`watched_tables` of ``names``, by
    default every table of a local lake, or every table Aspen writes on an object store): it
    changes exactly when one of them gets a commit. Reads only the tables' logs.

    >>> lake_fingerprint(Settings(lake="/nonexistent/lake"))
    ()
    """
    if names is None:
        names = lake_tables(settings)  # a local lake's folders, else the pipeline's own tables
        if urlparse(settings.lake_uri).scheme != "file":  # an object store is not listed
            names = [*names, *known_tables()]
    chosen = watched_tables(names)
    found: list[tuple[str, int]] = []
    for name in chosen:
        try:
            version = table_version_or_none(settings, name)
        except (DeltaError, OSError, ValueError):  # a damaged table: the same mark every time
            version = -1
        if version is not None:
            found.append((name, int(version)))
    return tuple(found)


def lake_moved(previous: Fingerprint | None, settings: Settings) -> bool:
    """Whether the lake changed since ``previous`` (a :func:`lake_fingerprint` taken when the
    page was drawn); False when there is none to compare with.

    >>> lake_moved((("ledger", 3),), Settings(lake="/nonexistent/lake")), lake_moved(None, None)
    (True, False)
    """
    if previous is None:
        return False
    return lake_fingerprint(settings) != tuple(previous)


def refresh_interval(environ: Mapping[str, str]) -> float | None:
    """Seconds between two checks of the lake: :data:`REFRESH_ENV` from ``environ`` when it is a
    number (0 or less: no automatic refresh, ``None``), else :data:`REFRESH_S`.

    >>> refresh_interval({}), refresh_interval({REFRESH_ENV: "2.5"})
    (5.0, 2.5)
    >>> refresh_interval({REFRESH_ENV: "0"}), refresh_interval({REFRESH_ENV: "soon"})
    (None, 5.0)
    """
    raw = environ.get(REFRESH_ENV, "").strip()
    if not raw:
        return REFRESH_S
    try:
        seconds = float(raw)
    except ValueError:
        return REFRESH_S
    if not math.isfinite(seconds):
        return REFRESH_S
    return seconds if seconds > 0 else None


# -- paging ---------------------------------------------------------------------------------------


def page_slice(frame: pd.DataFrame, page: int, size: int = PAGE_SIZE
               ) -> tuple[pd.DataFrame, int, int, int]:
    """``(rows, first, last, pages)``: page ``page`` (1-based, clamped to the pages there are)
    of ``frame``, ``size`` rows a page, with the 1-based numbers of its first and last row (0
    and 0 for an empty frame) and the page count (at least 1).

    >>> rows, first, last, pages = page_slice(pd.DataFrame({"n": range(250)}), 3)
    >>> len(rows), first, last, pages
    (50, 201, 250, 3)
    >>> page_slice(pd.DataFrame({"n": []}), 5)[1:]
    (0, 0, 1)
    """
    size = max(int(size), 1)
    pages = max(math.ceil(len(frame) / size), 1)
    page = min(max(int(page), 1), pages)
    rows = frame.iloc[(page - 1) * size: page * size]
    if rows.empty:
        return rows, 0, 0, pages
    first = (page - 1) * size + 1
    return rows, first, first + len(rows) - 1, pages
