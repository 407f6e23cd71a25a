"""What each query cost per maintained batch: the Delta table ``query_batches`` (append-only).

One row per query per round of the query worker (after a maintained batch): ``query``,
``batch_id``, ``path`` (``incremental`` — brought to the batch by its state, in process —
or ``recomputed`` on Spark, or ``failed``: failed or timed out), ``mode`` (the incremental
step's: ``incremental``,
``built``, ``already applied``, ``result rewritten``; null when recomputed), ``seconds`` (the
query's wall time in the round), ``rows_changed`` (result rows added plus removed; null when
recomputed: a run rewrites the whole result), ``result_rows`` (a recomputed run's rows; null
when incremental), ``state_rows`` and ``finished_at``. The round appends its rows in one commit
beside ``query_status``'s rewrite, so the console can show the last batches' cost of each
query, which ``query_status`` (the last outcome only) cannot.

>>> import tempfile
>>> lake = Settings(lake=tempfile.mkdtemp())
>>> now = datetime(2026, 1, 1, tzinfo=UTC)
>>> append_batch_costs(lake, [BatchCost("hot", 7, "incremental", "incremental", 0.04, 2,
...                                     None, 1203, now)])
>>> [(c.batch_id, c.path, c.rows_changed) for c in read_batch_costs(lake, "hot")]
[(7, 'incremental', 2)]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime

from aspen.settings import Settings

__all__ = ["BATCHES_TABLE", "FAILED_PATH", "INCREMENTAL", "RECOMPUTED", "BatchCost",
           "append_batch_costs", "read_batch_costs"]

BATCHES_TABLE = "query_batches"
#: The paths a query's batch took.
INCREMENTAL, RECOMPUTED, FAILED_PATH = "incremental", "recomputed", "failed"


@dataclass(frozen=True)
class BatchCost:
    """One row of ``query_batches`` (see the module's docstring)."""

    query: str
    batch_id: int | None
    path: str
    mode: str | None
    seconds: float
    rows_changed: int | None
    result_rows: int | None
    state_rows: int | None
    finished_at: datetime


def _schema():
    import pyarrow as pa

    types = {"batch_id": pa.int64(), "seconds": pa.float64(), "rows_changed": pa.int64(),
             "result_rows": pa.int64(), "state_rows": pa.int64(),
             "finished_at": pa.timestamp("us", "UTC")}
    return pa.schema([(f.name, types.get(f.name, pa.string())) for f in fields(BatchCost)])


def append_batch_costs(settings: Settings, costs: Sequence[BatchCost]) -> None:
    """Append one round's rows (one commit; none: nothing written)."""
    import pyarrow as pa

    from aspen.lake.deltars import table_exists, write_table

    if not costs:
        return
    data = pa.Table.from_pylist([asdict(c) for c in costs], schema=_schema())
    write_table(settings, BATCHES_TABLE, data,
                mode="append" if table_exists(settings, BATCHES_TABLE) else "overwrite")


def read_batch_costs(settings: Settings, query: str, last: int = 20) -> list[BatchCost]:
    """The ``last`` rows of ``query``, oldest first (none before its first round)."""
    import pandas as pd

    from aspen.lake.deltars import read_table, table_exists

    if not table_exists(settings, BATCHES_TABLE):
        return []
    frame = read_table(settings, BATCHES_TABLE)
    frame = frame[frame["query"] == query].sort_values("finished_at").tail(last)
    out = []
    for record in frame.to_dict("records"):
        values = {f.name: record.get(f.name) for f in fields(BatchCost)}
        for key in ("batch_id", "rows_changed", "result_rows", "state_rows", "mode"):
            if pd.isna(values[key]):
                values[key] = None
            elif key != "mode":
                values[key] = int(values[key])
        finished = pd.Timestamp(values["finished_at"]).to_pydatetime()
        values["finished_at"] = finished if finished.tzinfo else finished.replace(tzinfo=UTC)
        out.append(BatchCost(**values))
    return out
