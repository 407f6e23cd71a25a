"""The ``ledger``: one committed row per maintained batch, written last.

A maintained batch is committed exactly when its ledger row exists. The row records the Delta
version of every table the batch wrote (``table_versions``): before the next batch starts,
:func:`restore_uncommitted` restores any of them that a failed run wrote past that version (Delta
time travel), so a rerun starts from exactly the committed state. Tables keyed by ``batch_id``
(metrics, engine state) are replaced by the rerun anyway.

>>> from aspen.settings import Settings
>>> last_committed(Settings(lake="/nonexistent/lake"))
LedgerEntry(batch_id=0, through_ingest_batch=-1, runtime='', partitions=0, mode='', \
table_versions={})
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from aspen.lake.deltars import read_table, table_exists, table_version, write_table
from aspen.lake.lease import check_held
from aspen.settings import Settings

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["LEDGER", "LedgerEntry", "commit", "last_and_versions", "last_committed",
           "restore_uncommitted"]

LEDGER = "ledger"


@dataclass(frozen=True)
class LedgerEntry:
    """One maintained batch: which ingest batches it covers and how it ran."""

    batch_id: int
    through_ingest_batch: int
    runtime: str
    partitions: int
    mode: str
    table_versions: dict[str, int] = field(default_factory=dict, compare=False)


def last_committed(settings: Settings) -> LedgerEntry:
    """The last committed batch, or batch 0 covering nothing on a fresh lake."""
    return _last_of(_rows(settings))


def last_and_versions(settings: Settings) -> tuple[LedgerEntry, dict[str, int]]:
    """:func:`last_committed` and :func:`aspen.lake.committed.committed_versions` (each table's
    version as the latest row that recorded it), from one read of the ledger.

    >>> last_and_versions(Settings(lake="/nonexistent/lake"))[1]
    {}
    """
    from aspen.lake.committed import versions_in

    frame = _rows(settings)
    return _last_of(frame), versions_in(frame)


def _rows(settings: Settings) -> pd.DataFrame | None:
    """The ledger's rows by batch (None: no ledger, or an empty one)."""
    if not table_exists(settings, LEDGER):
        return None
    frame = read_table(settings, LEDGER)
    return None if frame.empty else frame.sort_values("batch_id")


def _last_of(frame: pd.DataFrame | None) -> LedgerEntry:
    if frame is None:
        return LedgerEntry(0, -1, "", 0, "")
    row = frame.iloc[-1]
    versions = row.get("table_versions")
    missing = versions is None or (isinstance(versions, float) and math.isnan(versions))
    return LedgerEntry(
        int(row["batch_id"]),
        int(row["through_ingest_batch"]),
        str(row["runtime"]),
        int(row["partitions"]),
        str(row["mode"]),
        {} if missing else {str(k): int(v) for k, v in json.loads(versions).items()},
    )


def commit(
    settings: Settings,
    entry: LedgerEntry,
    updates_in: int,
    view_changes_out: int,
    tables: Iterable[str] = (),
) -> LedgerEntry:
    """Append the ledger row of ``entry``, recording the current version of each of ``tables``
    (those the batch wrote): the batch is committed from now on; returns ``entry`` with the
    versions recorded, as :func:`last_committed` reads it back. A maintainer that entered the
    lake's lease and lost it since raises :class:`~aspen.lake.lease.LostLeaseError` here and
    never commits (:func:`~aspen.lake.lease.check_held`)."""
    import pandas as pd

    check_held(settings)

    versions = {name: table_version(settings, name) for name in tables
                if table_exists(settings, name)}
    row = asdict(entry) | {
        "table_versions": json.dumps(versions, sort_keys=True),
        "updates_in": updates_in,
        "view_changes_out": view_changes_out,
        "committed_at": datetime.now(UTC),
    }
    write_table(settings, LEDGER, pd.DataFrame([row]), mode="append")
    return replace(entry, table_versions=versions)


def restore_uncommitted(settings: Settings, entry: LedgerEntry,
                        skip: Iterable[str] = ()) -> list[str]:
    """Restore every table a failed run wrote after the committed batch ``entry`` to the version
    that batch committed (Delta time travel), but those in ``skip`` (a rebuild writes them
    afresh, whatever they hold); returns the tables restored."""
    from deltalake import DeltaTable

    from aspen.lake.deltars import only_compacted_since

    restored = []
    skipped = set(skip)
    for name, version in sorted(entry.table_versions.items()):
        if name in skipped:
            continue
        if table_exists(settings, name) and table_version(settings, name) > version:
            if only_compacted_since(settings, name, version):
                continue  # housekeeping compacted it since: the committed rows, in fewer files
            DeltaTable(settings.table_uri(name)).restore(version)
            restored.append(name)
    return restored
