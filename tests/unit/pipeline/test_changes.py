"""Registry rows → engine batches between two maintained batches."""

from __future__ import annotations

import pandas as pd

from aspen.engine.batch import BaseFact
from aspen.pipeline.changes import batch_between, fact_from_row, live_facts


def registry(*rows: tuple[str, str, str, int, int | None]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"var": v, "relation": r, "values": vals, "inserted_batch": born, "deleted_batch": died}
            for v, r, vals, born, died in rows
        ]
    )


ROWS = registry(
    ("v1", "link", '["a", "b", 1.0]', 1, None),  # born before, alive
    ("v2", "link", '["b", "c", 2.0]', 1, 3),  # born before, dies in range
    ("v3", "link", '["c", "d", 1.0]', 2, None),  # born in range
    ("v4", "link", '["d", "e", 1.0]', 2, 3),  # born and dead in range: never seen
    ("v10", "sensor", '{"id": "s1", "x": 1, "y": 2}', 3, None),  # values as an object
    ("v11", "link", '["e", "f", 1.0]', 4, None),  # after the range
)


def test_batch_between_takes_births_and_deaths_in_range() -> None:
    batch = batch_between(ROWS, after=1, through=3)
    assert [f.var for f in batch.inserts] == ["v3", "v10"]
    assert batch.deletes == frozenset({"v2"})


def test_live_facts_at_a_batch() -> None:
    assert {f.var for f in live_facts(ROWS, through=3)} == {"v1", "v3", "v10"}
    assert {f.var for f in live_facts(ROWS, through=2)} == {"v1", "v2", "v3", "v4"}


def test_fact_values_follow_the_base_layout() -> None:
    row = {"var": "v10", "relation": "sensor", "values": '{"y": 2, "x": 1, "id": "s1"}'}
    assert fact_from_row(row) == BaseFact("sensor", ("s1", 1.0, 2.0), "v10")


def test_empty_range_is_an_empty_batch() -> None:
    assert not batch_between(ROWS, after=4, through=4)
