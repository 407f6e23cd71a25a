"""What changed in the base tables between two maintained batches, as an engine :class:`Batch`.

The lake's ``variables`` registry has one row per insertion instance: its variable, relation,
values (JSON), the ingest batch that made it live (``inserted_batch``) and the one that killed
it (``deleted_batch``, null while live). Maintenance through ingest batch ``B1`` after ``B0``
inserts the instances born in (B0, B1] and still alive at B1, and deletes the variables born
at or before B0 that died in (B0, B1].

>>> import pandas as pd
>>> rows = pd.DataFrame([
...     {"var": "v1", "relation": "link", "values": '["a", "b", 1.0]',
...      "inserted_batch": 1, "deleted_batch": 2},
...     {"var": "v2", "relation": "link", "values": '["b", "c", 1.0]',
...      "inserted_batch": 2, "deleted_batch": None}])
>>> b = batch_between(rows, after=1, through=2)
>>> [f.var for f in b.inserts], sorted(b.deletes)
(['v2'], ['v1'])
>>> [f.values for f in live_facts(rows, through=2)]
[('b', 'c', 1.0)]
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

from aspen.engine.batch import BASE_RELATIONS, BaseFact, Batch

if TYPE_CHECKING:
    import pandas as pd

    from aspen.settings import Settings

__all__ = ["batch_between", "fact_from_row", "live_facts", "registry_since"]

_NUMERIC = {"cost", "x", "y"}


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def fact_from_row(row: Any) -> BaseFact:
    """The engine fact of one registry row (values as a JSON list or object)."""
    relation = str(row["relation"])
    raw = row["values"]
    decoded = json.loads(raw) if isinstance(raw, str) else raw
    layout = BASE_RELATIONS[relation]
    if isinstance(decoded, dict):
        decoded = [decoded[name] for name in layout]
    values = tuple(
        float(v) if name in _NUMERIC else str(v) for name, v in zip(layout, decoded, strict=True)
    )
    return BaseFact(relation, values, str(row["var"]))


def batch_between(variables: pd.DataFrame, after: int, through: int) -> Batch:
    """The engine batch that moves the views from ingest batch ``after`` to ``through``."""
    inserts: list[BaseFact] = []
    deletes: set[str] = set()
    for row in variables.sort_values("var", key=_var_sort_key).to_dict("records"):
        born = int(row["inserted_batch"])
        died = None if _missing(row["deleted_batch"]) else int(row["deleted_batch"])
        alive_at_end = died is None or died > through
        if after < born <= through and alive_at_end:
            inserts.append(fact_from_row(row))
        elif born <= after and died is not None and after < died <= through:
            deletes.add(str(row["var"]))
    return Batch(inserts=tuple(inserts), deletes=frozenset(deletes))


def live_facts(variables: pd.DataFrame, through: int) -> list[BaseFact]:
    """Every instance live after ingest batch ``through`` (the input of from-scratch evaluation)."""
    return list(batch_between(variables, after=-1, through=through).inserts)


def _var_sort_key(column: pd.Series) -> pd.Series:
    """Order variables by their number (``v12`` after ``v9``), the arrival order of the log."""
    return column.str.extract(r"(\d+)$", expand=False).fillna("0").astype("int64")


def registry_since(settings: Settings, after: int) -> pd.DataFrame:
    """The registry rows born or killed after ingest batch ``after`` (all for -1)."""
    import pyarrow.dataset as ds
    from deltalake import DeltaTable

    dataset = DeltaTable(settings.table_uri("variables")).to_pyarrow_dataset()
    if after < 0:
        return dataset.to_table().to_pandas()
    changed = (ds.field("inserted_batch") > after) | (ds.field("deleted_batch") > after)
    return dataset.to_table(filter=changed).to_pandas()
