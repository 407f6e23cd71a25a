"""The run history of continuous queries: the Delta table ``query_runs`` (append-only).

One row per plan node per run: the run (``query``, ``run_id``, ``batch_id`` when the run
followed a maintained batch, ``started_at``, ``seconds`` of the whole run, ``result_rows``,
the ``plan`` JSON and its ``plan_cost``, the Delta ``versions`` of the tables read, JSON), the
node (``node``: its path, ``root.L.R``; ``relations``: its aliases, comma-separated;
``operator``: ``scan`` or the planned join method; ``executed``: the Spark operator that ran it,
e.g. ``BroadcastHashJoin(BuildRight)``; ``matches``: whether that is the planned one), and its
rows: ``estimated_rows`` (the cost model's), ``observed_rows`` (Spark's SQL metric of the
operator's output) and, for a join, ``left_rows`` / ``right_rows`` observed of its inputs.

>>> import tempfile
>>> lake = Settings(lake=tempfile.mkdtemp())
>>> row = RunRow("q", "r1", None, datetime(2026, 1, 1, tzinfo=UTC), 1.5, 3, "{}", 0.1, "{}",
...              "root", "a", "scan", "Scan", True, 3.0, 3, None, None)
>>> append_runs(lake, [row])
>>> [r.run_id for r in last_run(lake, "q")]
['r1']
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime

from aspen.settings import Settings

__all__ = ["RUNS_TABLE", "RunRow", "append_runs", "last_run"]

RUNS_TABLE = "query_runs"


@dataclass(frozen=True)
class RunRow:
    """One row of ``query_runs`` (see the module's docstring)."""

    query: str
    run_id: str
    batch_id: int | None
    started_at: datetime
    seconds: float
    result_rows: int
    plan: str
    plan_cost: float
    versions: str
    node: str
    relations: str
    operator: str
    executed: str | None
    matches: bool
    estimated_rows: float
    observed_rows: int | None
    left_rows: int | None
    right_rows: int | None


def _schema():
    import pyarrow as pa

    types = {"batch_id": pa.int64(), "started_at": pa.timestamp("us", "UTC"),
             "seconds": pa.float64(), "result_rows": pa.int64(), "plan_cost": pa.float64(),
             "matches": pa.bool_(), "estimated_rows": pa.float64(), "observed_rows": pa.int64(),
             "left_rows": pa.int64(), "right_rows": pa.int64()}
    return pa.schema([(f.name, types.get(f.name, pa.string())) for f in fields(RunRow)])


def append_runs(settings: Settings, rows: Sequence[RunRow]) -> None:
    """Append one run's rows to ``query_runs`` (one commit)."""
    import pyarrow as pa

    from aspen.lake.deltars import table_exists, write_table

    data = pa.Table.from_pylist([asdict(r) for r in rows], schema=_schema())
    write_table(settings, RUNS_TABLE, data,
                mode="append" if table_exists(settings, RUNS_TABLE) else "overwrite")


def last_run(settings: Settings, query: str, since: datetime | None = None) -> list[RunRow]:
    """The rows of the latest run of ``query`` (started at ``since`` or later); none when it
    never ran."""
    import pandas as pd

    from aspen.lake.deltars import read_table, table_exists

    if not table_exists(settings, RUNS_TABLE):
        return []
    frame = read_table(settings, RUNS_TABLE)
    frame = frame[frame["query"] == query]
    if since is not None:
        frame = frame[frame["started_at"] >= since]
    if frame.empty:
        return []
    latest = frame.loc[frame["started_at"].idxmax(), "run_id"]
    out = []
    for record in frame[frame["run_id"] == latest].to_dict("records"):
        values = {f.name: record.get(f.name) for f in fields(RunRow)}
        for key in ("batch_id", "observed_rows", "left_rows", "right_rows", "executed"):
            if pd.isna(values[key]):  # pandas holds a null integer as NaN or NA
                values[key] = None
            elif key != "executed":
                values[key] = int(values[key])
        started = values["started_at"].to_pydatetime()
        values["started_at"] = started if started.tzinfo else started.replace(tzinfo=UTC)
        out.append(RunRow(**values))
    return sorted(out, key=lambda r: r.node)
