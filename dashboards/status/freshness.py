"""How fresh the views are and what waits to be maintained: the last committed batch and its
age, the ingest batches the views do not reflect yet. Pure: frames and the current time in.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .moments import seconds_between, timestamp
from .words import age_text, duration_text, plural

__all__ = ["Backlog", "backlog", "Freshness", "freshness", "last_applied"]


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
        'views current as of maintained batch 3 (through ingest batch 7), committed 42 s ago'
        >>> Freshness(None, -1, None, None).text()
        'no batch has been maintained yet'
        """
        if self.batch is None:
            return "no batch has been maintained yet"
        return (f"views current as of maintained batch {self.batch} (through ingest batch "
                f"{self.through_ingest_batch}), committed {age_text(self.age_s)}")


def freshness(ledger: pd.DataFrame | None, now: object) -> Freshness:
    """The last committed batch of ``ledger`` (``batch_id``, ``through_ingest_batch``,
    ``committed_at``) as seen at ``now``.

    >>> ledger = pd.DataFrame({"batch_id": [1, 2], "through_ingest_batch": [4, 6],
    ...     "committed_at": pd.to_datetime(["2026-01-01 00:00", "2026-01-01 00:05"], utc=True)})
    >>> fresh = freshness(ledger, pd.Timestamp("2026-01-01 00:08", tz="UTC"))
    >>> fresh.batch, fresh.through_ingest_batch, fresh.age_s
    (2, 6, 180.0)
    >>> fresh.text()
    'views current as of maintained batch 2 (through ingest batch 6), committed 3 min ago'
    """
    if ledger is None or ledger.empty or "batch_id" not in ledger:
        return Freshness(None, -1, None, None)
    last = ledger.sort_values("batch_id").iloc[-1]
    through = last.get("through_ingest_batch")
    committed = timestamp(last.get("committed_at"))
    return Freshness(
        int(last["batch_id"]),
        -1 if through is None or pd.isna(through) else int(through),
        committed,
        None if committed is None else seconds_between(committed, now),
    )


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
        return (f"{plural(self.updates, 'update')} in "
                f"{plural(len(self.batches), 'ingest batch', 'ingest batches')} waiting, "
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
    oldest = timestamp(waiting["at"].min())
    return Backlog(
        tuple(int(b) for b in waiting.index),
        int(waiting["updates"].fillna(0).sum()),
        oldest,
        None if oldest is None else seconds_between(oldest, now),
    )
