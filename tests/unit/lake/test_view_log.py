"""The views' change log: a snapshot plus the changes of later batches gives the view's rows
as of the last batch, in pandas and through delta-rs, before and after a compaction."""

from __future__ import annotations

import tempfile

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from aspen.lake.deltars import table_version, write_table
from aspen.lake.view_log import (
    CHANGE_DELETE,
    CHANGE_UPSERT,
    append_changes,
    change_records,
    compact_views,
    current_rows,
    log_size,
    read_view_at,
    view_records,
    view_schema,
)
from aspen.settings import Settings

#: A view state: tuple → (provenance bytes, node).
State = dict[tuple, tuple[bytes | None, int]]

paths = st.lists(st.sampled_from("abcd"), min_size=1, max_size=3).map(tuple)
path_rows = st.dictionaries(
    st.tuples(st.sampled_from("ab"), st.sampled_from("cd"), paths, st.sampled_from([1.0, 2.5])),
    st.tuples(st.binary(min_size=1, max_size=3), st.integers(0, 2)), max_size=6)


def diff(view: str, before: State, after: State, batch_id: int) -> list[dict]:
    """The log records that move ``before`` to ``after`` (what a maintainer appends)."""
    upserts = {k: v for k, v in after.items() if before.get(k) != v}
    gone = [dict(zip(("src", "dst", "path", "cost"), (k[0], k[1], list(k[2]), k[3]),
                     strict=True)) for k in before if k not in after]
    return (change_records(view, gone, CHANGE_DELETE, batch_id)
            + change_records(view, view_records(view, upserts, batch_id), CHANGE_UPSERT,
                             batch_id))


def as_state(frame: pd.DataFrame) -> State:
    return {(r["src"], r["dst"], tuple(r["path"]), float(r["cost"])):
            (bytes(r["provenance"]), int(r["node"])) for r in frame.to_dict("records")}


def snapshot_frame(view: str, state: State, batch_id: int) -> pd.DataFrame:
    return pd.DataFrame(view_records(view, state, batch_id),
                        columns=list(view_schema(view).names))


@settings(max_examples=60, deadline=None)
@given(st.lists(path_rows, min_size=1, max_size=6))
def test_snapshot_plus_changes_is_the_last_state(states: list[State]) -> None:
    view = "cheapest_path"
    first, records = states[0], []
    for batch_id, (before, after) in enumerate(zip(states, states[1:], strict=False), start=2):
        records += diff(view, before, after, batch_id)
    log = pd.DataFrame(records, columns=["view", "batch_id", "change", "src", "dst", "path",
                                         "cost", "provenance", "prov_bytes", "node"])
    rows = current_rows(view, snapshot_frame(view, first, 1), log)
    assert as_state(rows) == states[-1]
    assert len(rows) == len(states[-1])  # no key twice


@settings(max_examples=15, deadline=None)
@given(st.lists(path_rows, min_size=2, max_size=4))
def test_through_delta_tables_and_a_compaction(states: list[State]) -> None:
    view = "cheapest_path"
    lake = Settings(lake=tempfile.mkdtemp())
    import pyarrow as pa

    write_table(lake, view, pa.Table.from_pandas(snapshot_frame(view, states[0], 1),
                                                 schema=view_schema(view), preserve_index=False))
    for batch_id, (before, after) in enumerate(zip(states, states[1:], strict=False), start=2):
        append_changes(lake, diff(view, before, after, batch_id))
    log_version = table_version(lake, "view_changes")
    assert as_state(read_view_at(lake, view, table_version(lake, view), log_version)) \
        == states[-1]
    compact_views(lake, (view,))
    assert log_size(lake)[1] == 0
    assert as_state(read_view_at(lake, view, table_version(lake, view),
                                 table_version(lake, "view_changes"))) == states[-1]


def test_a_delete_and_an_upsert_of_one_batch_keep_the_row() -> None:
    snapshot = pd.DataFrame({"src": ["a"], "dst": ["b"], "provenance": [b"1"],
                             "prov_bytes": [1], "batch_id": [1], "node": [0]})
    log = pd.DataFrame({"view": ["reachable"] * 2, "batch_id": [2, 2],
                        "change": [CHANGE_UPSERT, CHANGE_DELETE], "src": ["a", "a"],
                        "dst": ["b", "b"], "provenance": [b"2", None], "prov_bytes": [1, 0],
                        "node": [0, 0]})
    rows = current_rows("reachable", snapshot, log)
    assert rows[["src", "dst"]].values.tolist() == [["a", "b"]]
    assert bytes(rows["provenance"][0]) == b"2"


@settings(max_examples=25, deadline=None)
@given(st.lists(path_rows, min_size=1, max_size=5))
def test_the_documented_sql_gives_the_same_rows(states: list[State]) -> None:
    import duckdb

    from aspen.lake.view_log import current_rows_sql

    view = "cheapest_path"
    records = []
    for batch_id, (before, after) in enumerate(zip(states, states[1:], strict=False), start=2):
        records += diff(view, before, after, batch_id)
    import pyarrow as pa

    from aspen.lake.view_log import change_schema

    snapshot = pa.Table.from_pandas(snapshot_frame(view, states[0], 1), schema=view_schema(view),
                                    preserve_index=False)
    changes = pa.Table.from_pylist(records, schema=change_schema())
    con = duckdb.connect()
    con.register("cheapest_path", snapshot)
    con.register("view_changes", changes)
    assert as_state(con.execute(current_rows_sql(view)).df()) == states[-1]
