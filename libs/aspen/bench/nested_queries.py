"""A nested continuous query maintained as stages against DuckDB recomputing it, per
one-change batch: "domains whose count of reachable stub routers is above the average" over a
``router`` table (id, domain, stub) and a ``reach`` table (src, dst), in memory (no Delta).

>>> result = nested_queries(domains=3, routers=6, pairs=40, batches=3, seed=1)
>>> sorted(result), result["equal"]
(['batches', 'duckdb_ms', 'equal', 'pairs', 'ratio', 'stages', 'state_rows', 'step_ms'], True)
"""

from __future__ import annotations

import random
import statistics
import time
from collections import Counter
from typing import Any

__all__ = ["NESTED_SQL", "nested_queries"]

_PER_DOMAIN = ("(SELECT r.domain AS domain, COUNT(*) AS n FROM reach x JOIN router r "
               "ON x.dst = r.id WHERE r.stub = 1 GROUP BY r.domain)")
#: The query measured.
NESTED_SQL = (f"SELECT d.domain AS domain, d.n AS n FROM {_PER_DOMAIN} d "
              f"WHERE d.n > (SELECT AVG(e.n) AS m FROM {_PER_DOMAIN} e)")
_COLUMNS = {"router": ("id", "domain", "stub"), "reach": ("src", "dst")}


def _duckdb(model: dict[str, Counter]) -> dict[tuple, int]:
    import duckdb
    import pyarrow as pa
    import sqlglot

    connection = duckdb.connect()
    try:
        for table, rows in model.items():
            names = _COLUMNS[table]
            expanded = [r for r, n in rows.items() for _ in range(n)]
            connection.register(table, pa.table({c: [r[i] for r in expanded]
                                                 for i, c in enumerate(names)}))
        sql = sqlglot.transpile(NESTED_SQL, read="spark", write="duckdb")[0]
        return dict(Counter(connection.execute(sql).fetchall()))
    finally:
        connection.close()


def nested_queries(domains: int = 20, routers: int = 50, pairs: int = 20_000,
                   batches: int = 50, seed: int = 0) -> dict[str, Any]:
    """Median milliseconds per one-change batch: the stages' in-memory step and DuckDB's
    recompute of the same SQL; whether the answers were equal after every batch."""
    from aspen.queries.incremental.delta import SignedRows
    from aspen.queries.incremental.nested import NestedPlan, NestedQuery, compile_nested
    from aspen.queries.tables import TableColumns

    rng = random.Random(seed)
    ids = [f"d{d}.r{i}" for d in range(domains) for i in range(routers)]
    router = Counter((r, r.split(".")[0], int(rng.random() < 0.6)) for r in ids)
    reach = Counter((rng.choice(ids), rng.choice(ids)) for _ in range(pairs))
    model = {"router": router, "reach": reach}
    tables = {t: TableColumns(c, c) for t, c in _COLUMNS.items()}
    plan = compile_nested("nested", NESTED_SQL, tables)
    assert isinstance(plan, NestedPlan), plan
    query = NestedQuery(plan)
    result = Counter(query.build({t: SignedRows(_COLUMNS[t], dict(rows))
                                  for t, rows in model.items()}))
    equal = dict(result) == _duckdb(model)
    step, scratch = [], []
    for _ in range(batches):
        present = [r for r, n in reach.items() if n > 0]
        row = rng.choice(present) if rng.random() < 0.5 else (rng.choice(ids), rng.choice(ids))
        sign = -1 if row in reach and reach[row] > 0 and rng.random() < 0.5 else 1
        reach[row] += sign
        clock = time.perf_counter()
        changed = query.apply({"reach": SignedRows(_COLUMNS["reach"], {row: sign})})
        step.append(time.perf_counter() - clock)
        result.update(changed)
        result = Counter({r: n for r, n in result.items() if n})
        clock = time.perf_counter()
        expected = _duckdb(model)
        scratch.append(time.perf_counter() - clock)
        equal = equal and dict(result) == expected
    step_ms, duck_ms = statistics.median(step) * 1e3, statistics.median(scratch) * 1e3
    return {"pairs": pairs, "batches": batches, "stages": len(plan.stages),
            "state_rows": query.state_rows(), "step_ms": round(step_ms, 3),
            "duckdb_ms": round(duck_ms, 3), "ratio": round(duck_ms / step_ms, 1),
            "equal": equal}
