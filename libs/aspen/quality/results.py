"""The ``expectation_results`` Delta table: one row per checked expectation per ledger batch.

Columns (the dashboard reads exactly these): ``batch_id`` int64, ``suite`` string, ``table``
string, ``expectation`` string, ``success`` bool, ``observed`` string, ``checked_at`` timestamp
(UTC). Writing the rows of a batch replaces that batch's earlier rows (a rerun is idempotent).

>>> [f.name for f in results_schema()]
['batch_id', 'suite', 'table', 'expectation', 'success', 'observed', 'checked_at']
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from aspen.quality.outcome import Outcome
from aspen.settings import Settings

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["RESULTS_TABLE", "results_schema", "results_frame", "write_results"]

RESULTS_TABLE = "expectation_results"


def results_schema() -> pa.Schema:
    """The Arrow schema of ``expectation_results``."""
    import pyarrow as pa

    return pa.schema(
        [
            pa.field("batch_id", pa.int64()),
            pa.field("suite", pa.string()),
            pa.field("table", pa.string()),
            pa.field("expectation", pa.string()),
            pa.field("success", pa.bool_()),
            pa.field("observed", pa.string()),
            pa.field("checked_at", pa.timestamp("us", tz="UTC")),
        ]
    )


def results_frame(batch_id: int, outcomes: Sequence[Outcome], checked_at: datetime) -> pa.Table:
    """The rows of ``outcomes`` for ``batch_id`` as an Arrow table."""
    import pyarrow as pa

    rows = [
        {
            "batch_id": int(batch_id),
            "suite": o.suite,
            "table": o.table,
            "expectation": o.expectation,
            "success": bool(o.success),
            "observed": o.observed,
            "checked_at": checked_at,
        }
        for o in outcomes
    ]
    return pa.Table.from_pylist(rows, schema=results_schema())


def write_results(
    settings: Settings, batch_id: int, outcomes: Sequence[Outcome], checked_at: datetime
) -> None:
    """Replace the rows of ``batch_id`` in ``expectation_results`` by ``outcomes``."""
    from aspen.lake.deltars import replace_batch

    replace_batch(settings, RESULTS_TABLE, results_frame(batch_id, outcomes, checked_at), batch_id)
