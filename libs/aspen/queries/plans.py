"""The plan history of continuous queries: the Delta table ``plans`` (append-only).

One row each time a query's best plan changed: ``query``, ``changed_at``, the optimizer
``method`` and the ``reason`` (``initial``: the first plan; ``statistics``: re-optimization
after statistics moved; ``query changed``: re-registered SQL; ``planned``: planned by hand,
``aspen query plan``), the ``old_plan`` and ``new_plan`` (JSON trees; no old plan the first
time), ``old_cost`` (the old plan under the *new* statistics, so the two costs compare),
``new_cost``, the statistic ``changes`` that caused it (JSON: a list of ``{"kind", "name",
"old", "new"}``), the Delta ``versions`` the statistics were read at (JSON), and the
optimizer's ``seconds`` and ``counters`` (JSON: nodes created, pruned, recomputed).

>>> import tempfile
>>> lake = Settings(lake=tempfile.mkdtemp())
>>> row = PlanChange("q", datetime(2026, 1, 1, tzinfo=UTC), "declarative", "initial", None,
...                  '{"scan": "a"}', None, 10.0, "[]", "{}", 0.01, "{}")
>>> append_change(lake, row)
>>> [(c.query, c.reason) for c in plan_history(lake)]
[('q', 'initial')]
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from typing import Any

from aspen.settings import Settings

__all__ = ["PLANS_TABLE", "REASONS", "PlanChange", "append_change", "plan_history"]

PLANS_TABLE = "plans"
#: Why a plan changed.
REASONS = ("initial", "statistics", "query changed", "planned")


@dataclass(frozen=True)
class PlanChange:
    """One row of ``plans`` (see the module's docstring)."""

    query: str
    changed_at: datetime
    method: str
    reason: str
    old_plan: str | None
    new_plan: str
    old_cost: float | None
    new_cost: float
    changes: str
    versions: str
    seconds: float
    counters: str

    @property
    def change_list(self) -> list[dict[str, Any]]:
        """The statistic changes that caused this plan change."""
        return list(json.loads(self.changes))


def _schema():
    import pyarrow as pa

    types = {"changed_at": pa.timestamp("us", "UTC"), "old_cost": pa.float64(),
             "new_cost": pa.float64(), "seconds": pa.float64()}
    return pa.schema([(f.name, types.get(f.name, pa.string())) for f in fields(PlanChange)])


def append_change(settings: Settings, change: PlanChange) -> None:
    """Append one plan change to ``plans`` (one commit)."""
    import pyarrow as pa

    from aspen.lake.deltars import table_exists, write_table

    data = pa.Table.from_pylist([asdict(change)], schema=_schema())
    write_table(settings, PLANS_TABLE, data,
                mode="append" if table_exists(settings, PLANS_TABLE) else "overwrite")


def plan_history(settings: Settings, query: str | None = None) -> list[PlanChange]:
    """The plan changes of ``query`` (every query when None), oldest first."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        rows = DeltaTable(settings.table_uri(PLANS_TABLE)).to_pyarrow_table().to_pylist()
    except TableNotFoundError:
        return []
    out = []
    for row in rows:
        if query is not None and row["query"] != query:
            continue
        stamp = row["changed_at"]
        row["changed_at"] = stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)
        out.append(PlanChange(**row))
    return sorted(out, key=lambda c: (c.changed_at, c.query))
