"""The ``ledger``: one committed row per maintained batch, written last.

A maintained batch is committed exactly when its ledger row exists; every other table the batch
writes is either overwritten from the committed state or keyed by ``batch_id`` so that a rerun
after a crash replaces what the failed run left (see ``maintain_local``).

>>> from aspen.settings import Settings
>>> last_committed(Settings(lake="/nonexistent/lake"))
LedgerEntry(batch_id=0, through_ingest_batch=-1, runtime='', partitions=0, mode='')
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import UTC, datetime

from aspen.pipeline.deltars import read_table, table_exists, write_table
from aspen.settings import Settings

__all__ = ["LEDGER", "LedgerEntry", "commit", "last_committed"]

LEDGER = "ledger"


@dataclass(frozen=True)
class LedgerEntry:
    """One maintained batch: which ingest batches it covers and how it ran."""

    batch_id: int
    through_ingest_batch: int
    runtime: str
    partitions: int
    mode: str


def last_committed(settings: Settings) -> LedgerEntry:
    """The last committed batch, or batch 0 covering nothing on a fresh lake."""
    if not table_exists(settings, LEDGER):
        return LedgerEntry(0, -1, "", 0, "")
    frame = read_table(settings, LEDGER)
    if frame.empty:
        return LedgerEntry(0, -1, "", 0, "")
    row = frame.sort_values("batch_id").iloc[-1]
    return LedgerEntry(
        int(row["batch_id"]),
        int(row["through_ingest_batch"]),
        str(row["runtime"]),
        int(row["partitions"]),
        str(row["mode"]),
    )


def commit(settings: Settings, entry: LedgerEntry, updates_in: int, view_changes_out: int) -> None:
    """Append the ledger row of ``entry``: the batch is committed from now on."""
    import pandas as pd

    row = asdict(entry) | {
        "updates_in": updates_in,
        "view_changes_out": view_changes_out,
        "committed_at": datetime.now(UTC),
    }
    write_table(settings, LEDGER, pd.DataFrame([row]), mode="append")
