"""The stored state and result: after every batch the state read back from ``qstate_<name>``
(a journal, written whole now and then) is the state held, and ``q_<name>`` holds the answer,
duplicates and NULLs included."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from deltalake import DeltaTable
from incremental_cases import parse, signed

from aspen.lake.deltars import read_table
from aspen.queries.incremental import store
from aspen.queries.incremental.apply import IncrementalQuery
from aspen.queries.incremental.compile import compile_query
from aspen.queries.incremental.delta import plain_row
from aspen.queries.names import result_table
from aspen.settings import Settings

CASES = {
    "grouped": "SELECT a.k AS k, COUNT(*) AS n, SUM(a.w) AS s, MAX(a.v) AS hi FROM r a "
               "GROUP BY a.k",
    "bag": "SELECT a.k AS k, b.x AS x FROM r a JOIN s b ON a.k = b.k",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_state_and_result_round_trip_through_delta(name: str, tmp_path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store, "REWRITE_AFTER_BATCHES", 4)
    lake = Settings(lake=str(tmp_path / "lake"))
    parsed = parse(CASES[name])
    plan = compile_query(parsed)
    text = store.fingerprint(parsed)
    rng = random.Random(7)
    model = {"r": Counter(), "s": Counter()}
    query = IncrementalQuery(plan)
    query.state.batch_id = 0
    store.write_state(lake, name, plan, query.state, text)
    store.write_result(lake, name, plan, query.answer(), 0)
    rewrites = 0
    for batch in range(1, 13):
        change = {"r": Counter(), "s": Counter()}
        for _ in range(rng.randint(0, 3)):
            table = rng.choice(["r", "s"])
            present = sorted(model[table].elements(), key=repr)
            if present and rng.random() < 0.4:
                change[table][rng.choice(present)] -= 1
            elif table == "r":
                change["r"][(rng.choice([1, 2, None]), rng.randint(0, 2),
                             rng.choice([0.5, None]))] += 1
            else:
                change["s"][(rng.choice([1, 2]), rng.choice([3, None]))] += 1
        for table, rows in change.items():
            model[table].update(rows)
        outcome = query.apply({t: signed(t, rows) for t, rows in change.items()})
        query.state.batch_id = batch
        store.write_state_changes(lake, name, plan, query.state, outcome, text)
        if not store.apply_result(lake, name, plan, outcome.result, batch):
            rewrites += 1  # a column typed by an empty or all-NULL result took other values
            store.write_result(lake, name, plan, query.answer(), batch)
        stored = store.read_state(lake, name, plan)
        assert stored is not None and stored.plan_text == text
        assert stored.state.batch_id == batch
        assert stored.state.groups == query.state.groups
        assert stored.state.rows == query.state.rows
        frame = read_table(lake, result_table(name))
        held = Counter(plain_row(r) for r in frame[list(plan.output_names)]
                       .itertuples(index=False, name=None))
        assert held == Counter(query.answer())
        assert store.result_batch(lake, name) == batch
    assert rewrites <= 2
    modes = [entry.get("operationParameters", {}).get("mode")
             for entry in DeltaTable(lake.table_uri(store.state_table(name))).history()]
    assert modes.count("Overwrite") >= 3  # the first write and the journal written whole
    assert modes.count("Append") >= 6
