"""The variable order of a lake maintained on Spark: its driver's placement, kept between batches.

On the in-process runtime the placement (:class:`~aspen.provenance.placement.VariablePlacement`)
travels inside the engine state. On Spark the driver owns it — the hosts only receive the
order it gives each batch — so it is kept in the one-row table :data:`VARIABLE_ORDER_TABLE`, written
with the node states and restored with them when a batch did not commit. A lake without it
(written before, or by the other runtime) gets the placement built from its live variables: the
hosts then reorder once, which is the migration of an arrival-order lake.

>>> from aspen.pipeline.changes import batch_between
>>> import pandas as pd
>>> rows = pd.DataFrame({"var": ["v1", "v2"], "relation": ["link", "link"],
...                      "values": ['["a","b",1.0]', '["b","c",1.0]'],
...                      "inserted_batch": [1, 2], "deleted_batch": [None, None]})
>>> placement = placement_through(rows, after=1, through=2, stored=None, k=20.0)
>>> placement.order
['v1', 'v2']
"""

from __future__ import annotations

import pickle
from typing import Any

from aspen import state_pickle
from aspen.engine.batch import BaseFact
from aspen.lake.deltars import table_exists, write_table
from aspen.pipeline.changes import batch_between, live_facts
from aspen.provenance.placement import VariablePlacement
from aspen.settings import Settings

__all__ = ["VARIABLE_ORDER_TABLE", "placement_through", "read_placement", "write_placement"]

#: The table holding the Spark driver's placement: one row (``batch_id``, ``placement`` bytes).
VARIABLE_ORDER_TABLE = "variable_order"


def _triples(facts: Any) -> list[tuple[str, str, tuple]]:
    return [(f.var, f.relation, tuple(f.values)) for f in facts if isinstance(f, BaseFact)]


def placement_through(variables: Any, after: int, through: int,
                      stored: VariablePlacement | None, k: float) -> VariablePlacement:
    """The placement after ingest batch ``through``: ``stored`` (the placement as of ``after``)
    moved by the registry's changes in (after, through]; without one, built from the instances
    live after ``after`` (every one for ``after`` = -1), then moved. ``variables`` holds the
    registry rows born or killed after ``after`` (all rows when nothing is stored)."""
    placement = stored
    if placement is None:
        placement = VariablePlacement.build(_triples(live_facts(variables, after)), k=k) \
            if after >= 0 else VariablePlacement(k=k)
    batch = batch_between(variables, after=after, through=through)
    placement.apply(_triples(batch.inserts), batch.deletes)
    return placement


def read_placement(settings: Settings) -> VariablePlacement | None:
    """The placement the last committed Spark batch wrote, or None (no table yet)."""
    if not table_exists(settings, VARIABLE_ORDER_TABLE):
        return None
    from deltalake import DeltaTable

    rows = DeltaTable(settings.table_uri(VARIABLE_ORDER_TABLE)).to_pyarrow_table(
        columns=["placement"])
    if rows.num_rows != 1:
        return None
    found = state_pickle.loads(rows.column("placement")[0].as_py(), "variable order")
    return found if isinstance(found, VariablePlacement) else None


def write_placement(settings: Settings, placement: VariablePlacement, batch_id: int) -> None:
    """Replace the table's row by ``placement`` as of ``batch_id`` (one commit)."""
    import pyarrow as pa

    table = pa.table({"batch_id": pa.array([batch_id], pa.int64()),
                      "placement": pa.array([pickle.dumps(placement,
                                                          protocol=pickle.HIGHEST_PROTOCOL)],
                                            pa.binary())})
    write_table(settings, VARIABLE_ORDER_TABLE, table)
