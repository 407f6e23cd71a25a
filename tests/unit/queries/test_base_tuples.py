"""A base table as a query reads it (aspen.queries.base_tuples): one row per live tuple with its
bookkeeping over its live instances — against a brute-force fold of random update sequences,
and over a real lake (ingest, in-process apply and TTL sweep) against the ingested records."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aspen.errors import ConfigError
from aspen.lake.fold import fold_key
from aspen.queries.base_tuples import BOOKKEEPING, tuple_columns, tuples_pandas
from aspen.queries.sql import parse_query
from aspen.queries.tables import known_tables

START = pd.Timestamp("2026-01-01")
KEYS = [("a", "b"), ("a", "c"), ("c", "a")]

#: One random update: (key index, op, cost, ttl seconds or None, batch step).
UPDATE = st.tuples(st.integers(0, len(KEYS) - 1), st.sampled_from(["insert", "insert", "delete"]),
                   st.sampled_from([1.0, 2.0]), st.sampled_from([None, 30.0, 600.0]),
                   st.integers(0, 1))


def _records(updates: list[tuple]) -> list[dict]:
    """The log rows of ``updates``: seq 1, 2, …; a minute apart; batch growing by its step."""
    out, batch = [], 1
    for seq, (key, op, cost, ttl, step) in enumerate(updates, start=1):
        batch += step
        src, dst = KEYS[key]
        out.append({"kind": 1, "relation": "link", "key": json.dumps([src, dst]), "seq": seq,
                    "batch_id": batch, "op": op, "src": src, "dst": dst,
                    "cost": cost if op == "insert" else None,
                    "ttl_s": ttl if op == "insert" else None, "event_time": None,
                    "ingested_at": START + pd.Timedelta(minutes=seq)})
    return out


def _stored(records: list[dict]) -> pd.DataFrame:
    """The link table apply leaves: the live instances the real fold gives, key by key."""
    rows = []
    for key in {r["key"] for r in records}:
        out = fold_key(pd.DataFrame([r for r in records if r["key"] == key]))
        live = out[(out["row_kind"] == "instance") & out["death"].isna()]
        rows += live.rename(columns={"inserted_batch": "batch_id", "inserted_seq": "seq"})[
            ["src", "dst", "cost", "var", "inserted_at", "expires_at", "batch_id", "seq"]
        ].to_dict("records")
    return pd.DataFrame(rows, columns=["src", "dst", "cost", "var", "inserted_at", "expires_at",
                                       "batch_id", "seq"])


def _oracle(records: list[dict]) -> dict[tuple, dict]:
    """Per live link, straight from the updates: a re-insert with the same cost is one more
    instance, with another cost it starts over, a delete ends it."""
    live: dict[tuple, list[dict]] = {}
    for r in records:
        key = (r["src"], r["dst"])
        if r["op"] == "delete":
            live.pop(key, None)
            continue
        if key in live and live[key][0]["cost"] != r["cost"]:
            del live[key]
        when = r["ingested_at"]
        live.setdefault(key, []).append({
            "cost": r["cost"], "at": when, "batch": r["batch_id"],
            "expires": None if r["ttl_s"] is None else when + pd.Timedelta(seconds=r["ttl_s"])})
    out = {}
    for key, instances in live.items():
        expiries = [i["expires"] for i in instances]
        out[key] = {"cost": instances[-1]["cost"], "instances": len(instances),
                    "first_inserted_at": min(i["at"] for i in instances),
                    "last_inserted_at": max(i["at"] for i in instances),
                    "expires_at": None if None in expiries else max(expiries),
                    "first_batch_id": min(i["batch"] for i in instances),
                    "last_batch_id": max(i["batch"] for i in instances)}
    return out


def _as_dict(frame: pd.DataFrame) -> dict[tuple, dict]:
    out = {}
    for row in frame.to_dict("records"):
        expires = row["expires_at"]
        out[(row["src"], row["dst"])] = {
            "cost": row["cost"], "instances": int(row["instances"]),
            "first_inserted_at": row["first_inserted_at"],
            "last_inserted_at": row["last_inserted_at"],
            "expires_at": None if pd.isna(expires) else expires,
            "first_batch_id": int(row["first_batch_id"]),
            "last_batch_id": int(row["last_batch_id"])}
    return out


@settings(max_examples=150, deadline=None)
@given(st.lists(UPDATE, max_size=14))
def test_one_row_per_live_link_as_a_fold_of_random_updates_gives(updates) -> None:
    records = _records(updates)
    frame = tuples_pandas("link", _stored(records))
    assert list(frame.columns) == list(tuple_columns("link"))
    assert len(frame) == len(frame[["src", "dst"]].drop_duplicates())
    assert _as_dict(frame) == _oracle(records)


def test_a_renewal_with_a_ttl_of_a_link_without_one_never_expires() -> None:
    records = _records([(0, "insert", 1.0, None, 0), (0, "insert", 1.0, 30.0, 0),
                        (1, "insert", 1.0, 30.0, 0), (1, "insert", 1.0, 600.0, 1)])
    got = _as_dict(tuples_pandas("link", _stored(records)))
    assert got[KEYS[0]]["instances"] == 2 and got[KEYS[0]]["expires_at"] is None
    assert got[KEYS[1]]["expires_at"] == START + pd.Timedelta(minutes=4, seconds=600)
    assert (got[KEYS[1]]["first_batch_id"], got[KEYS[1]]["last_batch_id"]) == (1, 2)


def test_a_table_without_instance_columns_is_one_row_per_key() -> None:
    stored = pd.DataFrame({"id": ["s2", "s1", "s2"], "x": [1.0, 0.0, 1.0], "y": [2.0, 0.0, 2.0]})
    frame = tuples_pandas("sensor", stored)
    assert frame[["id", "x", "y", "instances"]].values.tolist() == [
        ["s1", 0.0, 0.0, 1], ["s2", 1.0, 2.0, 2]]
    assert frame["expires_at"].isna().all()


def test_a_query_names_the_tuple_columns_not_the_instance_ones() -> None:
    link = known_tables()["link"]
    assert link.columns == ("src", "dst", "cost", *(name for name, _ in BOOKKEEPING))
    assert link.tuple_columns == ("src", "dst", "cost")
    parsed = parse_query("q", "SELECT a.src, a.instances, a.expires_at FROM link a "
                              "WHERE a.instances > 1")
    assert parsed.spec.relations[0].columns == ("expires_at", "instances", "src")
    star = parse_query("q", "SELECT * FROM region_seed r")
    assert [o.name for o in star.spec.outputs] == ["region", "id"]
    for column in ("var", "seq", "inserted_at"):
        with pytest.raises(ConfigError, match=column):
            parse_query("q", f"SELECT a.{column} FROM link a")


def test_a_lake_after_apply_and_the_ttl_sweep_reads_one_row_per_live_tuple(tmp_path) -> None:
    """Renewed, replaced, renewed-with-a-TTL, deleted and expired links and a renewed sensor,
    ingested, applied and swept in process; the stored rows are instances, the frame tuples."""
    from aspen.lake.apply_local import apply_in_process
    from aspen.lake.deltars import read_table
    from aspen.lake.expire_local import expire_in_process
    from aspen.lake.ingest import ingest_files
    from aspen.settings import Settings

    at = datetime(2026, 1, 1, tzinfo=UTC)
    stamp = at.strftime("%Y-%m-%dT%H:%M:%S")
    batches = [
        [{"op": "insert", "relation": "link", "src": "a", "dst": "b", "cost": 1.0},
         {"op": "insert", "relation": "link", "src": "b", "dst": "c", "cost": 2.0},
         {"op": "insert", "relation": "link", "src": "c", "dst": "d", "cost": 3.0},
         {"op": "insert", "relation": "link", "src": "d", "dst": "e", "cost": 4.0},
         {"op": "insert", "relation": "link", "src": "e", "dst": "f", "cost": 5.0, "ttl_s": 60},
         {"op": "insert", "relation": "sensor", "id": "s1", "x": 1.0, "y": 2.0}],
        [{"op": "insert", "relation": "link", "src": "a", "dst": "b", "cost": 1.0},
         {"op": "insert", "relation": "link", "src": "b", "dst": "c", "cost": 2.0},
         {"op": "insert", "relation": "link", "src": "c", "dst": "d", "cost": 3.0,
          "ttl_s": 86400},
         {"op": "delete", "relation": "link", "src": "d", "dst": "e"},
         {"op": "insert", "relation": "sensor", "id": "s1", "x": 1.0, "y": 2.0}],
        [{"op": "insert", "relation": "link", "src": "b", "dst": "c", "cost": 7.0}],
    ]
    lake = Settings(lake=str(tmp_path / "lake"))
    for number, records in enumerate(batches):
        path = tmp_path / f"batch{number}.jsonl"
        path.write_text("".join(json.dumps({**r, "event_time": stamp}) + "\n" for r in records))
        ingest_files(lake, [path])
        apply_in_process(lake)
    expire_in_process(lake, now=at + timedelta(minutes=30))

    links = tuples_pandas("link", read_table(lake, "link"))
    assert len(read_table(lake, "link")) == 5  # a→b twice, b→c once, c→d twice
    assert {(r.src, r.dst): (r.cost, r.instances) for r in links.itertuples()} == {
        ("a", "b"): (1.0, 2), ("b", "c"): (7.0, 1), ("c", "d"): (3.0, 2)}
    assert links["expires_at"].isna().all()  # c→d: its first instance has no TTL
    sensors = tuples_pandas("sensor", read_table(lake, "sensor"))
    assert sensors[["id", "x", "y", "instances"]].values.tolist() == [["s1", 1.0, 2.0, 2]]
    assert sensors[["first_batch_id", "last_batch_id"]].values.tolist() == [[1, 2]]
