"""The TTL sweep in this process: pyarrow and delta-rs, no Spark job.

The same sweep as :mod:`aspen.lake.expire` (its module docstring gives the semantics, the
leases and why every step is safe to rerun), step for step:

1. apply every logged batch first (``apply``: the in-process apply unless the caller passes
   another, e.g. :func:`aspen.lake.apply.apply_pending`, which picks a path by size);
2. append the ``ingest_files`` row of the sweep's batch ``B`` (no records): ``B`` is allocated;
3. delete the due instances from the base tables (delta-rs MERGE on ``var``);
4. record their deaths in ``variables`` (MERGE on ``var``, only rows still live):
   ``deleted_batch = B``, ``deleted_at`` = the expiry time, ``death = 'expired'``;
5. append the ``apply_state`` row of ``B``: the commit marker.

>>> ExpireReport(batch_id=None, expired=0, now="2026-01-01T00:00:00+00:00").lines()
['nothing expired as of 2026-01-01T00:00:00+00:00']
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from aspen.errors import LakeError
from aspen.lake import tables
from aspen.lake.apply_local import (
    _append,
    _column,
    _dataset,
    _delta,
    _maximum,
    apply_in_process,
    last_applied,
)
from aspen.settings import Settings

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["ExpireReport", "due_instances", "expire_in_process"]

#: Applies the sweep tries before the one it runs holding the log writer lease (ingests keep
#: landing batches between an apply and the lease).
_APPLIES_OUTSIDE_THE_LEASE = 3


@dataclass
class ExpireReport:
    """What one sweep did (either path)."""

    batch_id: int | None
    expired: int
    now: str
    per_relation: dict[str, int] = field(default_factory=dict)

    def lines(self) -> list[str]:
        """Human-readable summary lines."""
        if not self.expired:
            return [f"nothing expired as of {self.now}"]
        detail = ", ".join(f"{n} {rel}" for rel, n in sorted(self.per_relation.items()))
        return [f"batch {self.batch_id}: {self.expired} instance(s) expired as of {self.now} "
                f"({detail}); run `aspen maintain` to update the views"]


def due_instances(settings: Settings, now: datetime) -> pd.DataFrame:
    """The registry's live instances whose ``expires_at`` is at or before ``now``: ``var``,
    ``relation``, ``expires_at`` (empty when there is no registry).

    >>> len(due_instances(Settings(lake="/nonexistent/lake"), datetime.now(UTC)))
    0
    """
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    columns = ["var", "relation", "expires_at"]
    dataset = _dataset(settings, tables.VARIABLES)
    if dataset is None:
        return pd.DataFrame(columns=columns)
    when = pa.scalar(now.astimezone(UTC), type=pa.timestamp("us", tz="UTC"))
    expires = pc.field("expires_at")
    return dataset.to_table(
        columns=columns,
        filter=pc.field("deleted_batch").is_null() & expires.is_valid() & (expires <= when),
    ).to_pandas()


def _kill(settings: Settings, due: pd.DataFrame, per_relation: dict[str, int],
          batch_id: int) -> None:
    """Steps 3 and 4: the due instances leave the base tables and die in the registry."""
    import pyarrow as pa

    for relation in per_relation:
        source = pa.table({"var": pa.array(due.loc[due["relation"] == relation, "var"],
                                           type=pa.string())})
        (_delta(settings, relation)
         .merge(source, "t.var = s.var", source_alias="s", target_alias="t")
         .when_matched_delete().execute())
    stamp = pa.timestamp("us", tz="UTC")
    source = pa.table({
        "var": _column(due["var"], pa.string()),
        "deleted_batch": _column([batch_id] * len(due), pa.int64()),
        "deleted_at": _column(due["expires_at"], stamp),  # an instance dies when it expires
    })
    (_delta(settings, tables.VARIABLES)
     .merge(source, "t.var = s.var AND t.deleted_batch IS NULL", source_alias="s",
            target_alias="t")
     .when_matched_update(updates={"deleted_batch": "s.deleted_batch",
                                   "deleted_at": "s.deleted_at", "death": "'expired'"})
     .execute())


def expire_in_process(settings: Settings, now: datetime | None = None,
                      wait: float | None = None,
                      apply: Callable[[], object] | None = None) -> ExpireReport:
    """Kill every live instance whose TTL has passed at ``now`` (default: the current time),
    in this process; ``wait``: seconds to wait for the log writer lease (default
    :data:`~aspen.lake.lease.LOG_WAIT_SECONDS`); ``apply``: how step 1 applies the log
    (default :func:`~aspen.lake.apply_local.apply_in_process`). See the module docstring.

    Example, on a lake::

        expire_in_process(Settings(lake="/tmp/lake")).lines()
        # ['nothing expired as of 2026-01-01T00:00:00+00:00']
    """
    from aspen.lake.lease import LOG_WAIT_SECONDS, LogWriterLease, MaintainerLease

    now = (now or datetime.now(UTC)).astimezone(UTC)
    stamp = now.isoformat()
    wait = LOG_WAIT_SECONDS if wait is None else wait
    apply_log = apply if apply is not None else (lambda: apply_in_process(settings))
    with MaintainerLease.reentrant(settings, "aspen expire"):
        for attempt in range(_APPLIES_OUTSIDE_THE_LEASE + 1):
            last_try = attempt == _APPLIES_OUTSIDE_THE_LEASE
            if not last_try:
                apply_log()
            with LogWriterLease.reentrant(settings, "aspen expire", wait=wait) as log:
                if last_try:
                    apply_log()
                logged = _maximum(settings, tables.INGEST_FILES, "batch_id") or 0
                last_seq = _maximum(settings, tables.INGEST_FILES, "seq_end") or 0
                if last_applied(settings) < logged:
                    continue  # an ingest landed a batch since the apply: apply it first
                due = due_instances(settings, now)
                per_relation = {str(r): int(n) for r, n in due["relation"].value_counts().items()}
                if not per_relation:
                    return ExpireReport(None, 0, stamp)
                batch_id = logged + 1
                log.check()
                _append(settings, tables.INGEST_FILES, [(
                    f"expire@{stamp}", "", None, batch_id, last_seq + 1, last_seq, 0, 0, 0, now)])
                break
        else:  # pragma: no cover - the last attempt applies holding the lease: it catches up
            raise LakeError("the TTL sweep could not catch up with the update log")
        _kill(settings, due, per_relation, batch_id)
        expired = sum(per_relation.values())
        _append(settings, tables.APPLY_STATE, [(batch_id, now, 0, 0, expired, 0)])
    return ExpireReport(batch_id, expired, stamp, per_relation)
