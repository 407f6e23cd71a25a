"""Update logs for the apply tests, written without Spark: random batches of update records
(inserts, renewals, replacements, deletes, deletes of absent keys, TTLs), a writer that logs
them as ingest would (``updates`` rows and the ``ingest_files`` commit marker), a snapshot of
the tables an apply writes, for comparing two lakes, and the lake's crash points armed."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd
import pyarrow as pa
from deltalake import DeltaTable, write_deltalake
from hypothesis import strategies as st

from aspen.bench.faults import lake_crash_points
from aspen.errors import InjectedCrash
from aspen.lake import tables
from aspen.settings import Settings

#: When the logged records happen: a record without an event time was ingested at T0.
T0 = datetime(2026, 1, 1, tzinfo=UTC)
#: The tables an apply or a sweep writes, compared between two lakes (``applied_at`` left out).
APPLIED_TABLES = (tables.VARIABLES, *tables.BASE_TABLES, tables.APPLY_NOTES, tables.APPLY_STATE,
                  tables.INGEST_FILES)
#: The rows of each table that identify one row, for a stable order.
ORDER = {tables.VARIABLES: ["var"], tables.APPLY_NOTES: ["seq"], tables.APPLY_STATE: ["batch_id"],
         tables.INGEST_FILES: ["batch_id", "source"], **{t: ["var"] for t in tables.BASE_TABLES}}

#: Two days of updates (insert, renewal, replacement, deletes, notes, a TTL), their variables.
DAY1 = [
    {"op": "insert", "relation": "link", "src": "a", "dst": "b", "cost": 1.0, "ttl_s": 600.0,
     "event_time": T0},                                                          # v1
    {"op": "insert", "relation": "link", "src": "a", "dst": "b", "cost": 1.0},  # v2 renewal
    {"op": "insert", "relation": "link", "src": "b", "dst": "c", "cost": 2.0},  # v3
    {"op": "insert", "relation": "link", "src": "b", "dst": "c", "cost": 5.0},  # v4 replaces v3
    {"op": "delete", "relation": "link", "src": "n1", "dst": "n9"},             # seq 5: a note
    {"op": "insert", "relation": "sensor", "id": "s1", "x": 1.0, "y": 2.0},     # v6
    {"op": "insert", "relation": "triggered", "id": "s1"},                      # v7
    {"op": "insert", "relation": "region_seed", "region": "r1", "id": "s1"},    # v8
]
DAY2 = [
    {"op": "delete", "relation": "link", "src": "a", "dst": "b"},               # v1, v2 die
    {"op": "insert", "relation": "sensor", "id": "s1", "x": 1.0, "y": 9.0},     # v10 replaces v6
    {"op": "delete", "relation": "region_seed", "region": "r1", "id": "s1"},    # v8 dies
    {"op": "delete", "relation": "triggered", "id": "s9"},                      # a note
]

# a few ids, so keys repeat: renewals, replacements and deletes of live keys are common; one id
# with characters the key's JSON escapes
_IDS = ("n1", "n2", 'n"3', "né")
_REGIONS = ("r1", "r2")


@st.composite
def records(draw: st.DrawFn) -> dict[str, Any]:
    """One valid update record (as ``updates`` holds it, without batch and seq)."""
    relation = draw(st.sampled_from(tables.BASE_TABLES))
    op = draw(st.sampled_from(("insert", "insert", "delete")))
    record: dict[str, Any] = {"op": op, "relation": relation}
    if relation == "link":
        record |= {"src": draw(st.sampled_from(_IDS)), "dst": draw(st.sampled_from(_IDS))}
        if op == "insert":
            record["cost"] = float(draw(st.sampled_from((1, 2))))
    elif relation == "sensor":
        record["id"] = draw(st.sampled_from(_IDS))
        if op == "insert":
            record |= {"x": float(draw(st.sampled_from((0, 5)))), "y": 1.5}
    elif relation == "triggered":
        record["id"] = draw(st.sampled_from(_IDS))
    else:
        record |= {"region": draw(st.sampled_from(_REGIONS)), "id": draw(st.sampled_from(_IDS))}
    if op == "insert" and relation in ("link", "sensor") and draw(st.booleans()):
        record["ttl_s"] = draw(st.sampled_from((30.0, 90.5, 600.0)))
    if draw(st.booleans()):  # an event time, to the microsecond and beyond what Delta keeps
        record["event_time"] = T0 + timedelta(seconds=draw(st.integers(0, 120)),
                                              microseconds=draw(st.integers(0, 999_999)))
    return record


def batches(max_batches: int = 3, max_records: int = 6) -> st.SearchStrategy:
    """Lists of ingest batches, each a list of records (a batch may be empty: a file whose
    every line was quarantined)."""
    return st.lists(st.lists(records(), max_size=max_records), min_size=1, max_size=max_batches)


def _table(settings: Settings, name: str, rows: list[dict[str, Any]]) -> None:
    schema = tables.arrow_schema_of(name)
    data = pa.Table.from_pylist([{c: row.get(c) for c in schema.names} for row in rows],
                                schema=schema)
    write_deltalake(settings.table_uri(name), data, mode="append")


def log_batches(settings: Settings, logged: list[list[dict[str, Any]]]) -> list[int]:
    """Append ``logged`` to the lake's update log as ingest does, one ingest batch each after
    the last logged one: the ``updates`` rows, then the ``ingest_files`` row. The batch ids."""
    try:
        files = DeltaTable(settings.table_uri(tables.INGEST_FILES)).to_pandas()
    except Exception:  # noqa: BLE001 - no log yet
        files = pd.DataFrame(columns=["batch_id", "seq_end"])
    batch = int(files["batch_id"].max()) if len(files) else 0
    seq = int(files["seq_end"].max()) if len(files) else 0
    ids = []
    for records_ in logged:
        batch += 1
        start = seq + 1
        rows = []
        for line, record in enumerate(records_, start=1):
            seq += 1
            rows.append({**record, "batch_id": batch, "seq": seq, "source": f"b{batch}.jsonl",
                         "line": line, "ingested_at": T0})
        if rows:
            _table(settings, tables.UPDATES, rows)
        _table(settings, tables.INGEST_FILES, [{
            "source": f"b{batch}.jsonl", "sha256": f"{batch:064x}", "path": f"/in/b{batch}.jsonl",
            "batch_id": batch, "seq_start": start, "seq_end": seq, "valid": len(rows),
            "quarantined": 0, "blank": 0, "ingested_at": T0}])
        ids.append(batch)
    return ids


def snapshot(settings: Settings) -> dict[str, list[dict[str, Any]]]:
    """The rows of every table an apply or a sweep writes, ordered, ``applied_at`` left out,
    timestamps as UTC instants (missing tables: no rows)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for name in APPLIED_TABLES:
        try:
            frame = DeltaTable(settings.table_uri(name)).to_pandas()
        except Exception:  # noqa: BLE001 - the table was never written
            out[name] = []
            continue
        frame = frame.drop(columns=["applied_at"], errors="ignore")
        frame = frame.sort_values(ORDER[name], ignore_index=True)
        rows = []
        for row in frame.to_dict("records"):
            rows.append({k: _plain(v) for k, v in row.items()})
        out[name] = rows
    return out


def _plain(value: Any) -> Any:
    """A cell as a comparable Python value: None for nulls, timestamps as UTC microseconds."""
    if value is None or value is pd.NaT:
        return None
    if isinstance(value, float) and value != value:
        return None
    if isinstance(value, pd.Timestamp | datetime):
        stamp = pd.Timestamp(value)
        stamp = stamp.tz_localize(UTC) if stamp.tzinfo is None else stamp.tz_convert(UTC)
        return stamp.value // 1000
    if hasattr(value, "item"):
        return value.item()
    return value


@contextmanager
def crashing_at(point: str) -> Iterator[None]:
    """The lake's crash points installed, ``point`` armed (it raises InjectedCrash)."""
    saved = os.environ.get("ASPEN_CRASH_AT")
    os.environ["ASPEN_CRASH_AT"] = point
    try:
        with lake_crash_points():
            yield
    finally:
        if saved is None:
            os.environ.pop("ASPEN_CRASH_AT", None)
        else:
            os.environ["ASPEN_CRASH_AT"] = saved


def crashed(run: Callable[[], object], point: str) -> bool:
    """Run ``run()`` with ``point`` armed; whether it crashed there."""
    with crashing_at(point):
        try:
            run()
        except InjectedCrash:
            return True
    return False
