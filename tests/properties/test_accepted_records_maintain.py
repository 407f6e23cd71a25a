"""Every record validation accepts can be maintained: no accepted combination of ids, numbers,
``event_time`` and ``ttl_s`` — near the bounds especially — makes apply's arithmetic or its
conversions fail.

The records go the way ``ingest`` → ``apply`` → ``maintain --runtime local`` takes them, without
a JVM: the ``updates`` row (timestamps in microseconds, as Delta keeps them), the conversion to
pandas that ``mapInPandas`` does (pyspark's own Arrow serializer: nanosecond timestamps, where
the year 3000 failed), the per-key fold (``expires_at = event_time + ttl_s``, where a ttl of
1e10 s failed), the conversion back, the registry's facts, the in-process runtime and the view
tables.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pandas as pd
import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aspen.lake.fold import FOLD_OUTPUT_DDL, fold_sorted
from aspen.lake.tables import BASE_KEY_COLUMNS, TABLE_DDL
from aspen.lake.validation import (
    EARLIEST_EVENT_TIME,
    LATEST_EVENT_TIME,
    MAX_ID_LENGTH,
    MAX_MAGNITUDE,
    MAX_TTL_SECONDS,
    REASON_CODES,
    validate_file,
)
from aspen.pipeline.changes import batch_between

INGESTED_AT = datetime(2026, 6, 1, tzinfo=UTC)
_ARROW = {"STRING": pa.string(), "BIGINT": pa.int64(), "DOUBLE": pa.float64(),
          "TIMESTAMP": pa.timestamp("us", "UTC"), "BOOLEAN": pa.bool_()}


def _schema(ddl: str) -> pa.Schema:
    return pa.schema([(name.strip("`"), _ARROW[kind])
                      for name, kind in (part.split() for part in ddl.split(","))])


# --- the accepted space, its edges weighted up --------------------------------------------

_id_chars = st.characters(blacklist_categories=("Cc", "Cs"))
ids = st.one_of(
    st.sampled_from(["a", "b", "c", "s1", "r1"]),  # keys that meet: renewals, replacements
    st.text(_id_chars, min_size=1, max_size=12),
    st.text(_id_chars, min_size=MAX_ID_LENGTH - 3, max_size=MAX_ID_LENGTH),
).filter(lambda text: text.strip() != "")
magnitudes = st.one_of(
    st.floats(-MAX_MAGNITUDE, MAX_MAGNITUDE),
    st.integers(-10 ** 15, 10 ** 15),
    st.sampled_from([MAX_MAGNITUDE, -MAX_MAGNITUDE, 0.0, -0.0, 5e-324, 10 ** 15]),
)
costs = magnitudes.map(abs)
ttls = st.one_of(
    st.none(),
    st.floats(0, MAX_TTL_SECONDS),
    st.sampled_from([0, MAX_TTL_SECONDS, MAX_TTL_SECONDS - 1e-6, 5e-324]),
)
_instants = st.one_of(
    st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(2199, 12, 31, 23, 59, 59)),
    st.sampled_from([datetime(1970, 1, 1), datetime(2199, 12, 31, 23, 59, 59, 999999),
                     datetime(2199, 12, 31, 23, 59, 59)]),
).map(lambda moment: moment.replace(tzinfo=UTC))
_zones = st.sampled_from([UTC, timezone(timedelta(hours=14)), timezone(timedelta(hours=-12)),
                          timezone(timedelta(hours=5, minutes=30)), None])


@st.composite
def event_times(draw) -> str | None:
    if draw(st.booleans()):
        return None
    moment, zone = draw(_instants), draw(_zones)
    if zone is None:  # no zone means UTC
        return moment.replace(tzinfo=None).isoformat()
    return moment.astimezone(zone).isoformat()


@st.composite
def records(draw) -> dict:
    relation = draw(st.sampled_from(["link", "sensor", "triggered", "region_seed"]))
    op = draw(st.sampled_from(["insert", "insert", "delete"]))
    record: dict = {"op": op, "relation": relation}
    for name in BASE_KEY_COLUMNS[relation]:
        record[name] = draw(ids)
    if op == "insert":
        if relation == "link":
            record["cost"] = draw(costs)
        if relation == "sensor":
            record["x"], record["y"] = draw(magnitudes), draw(magnitudes)
        ttl = draw(ttls)
        if ttl is not None:
            record["ttl_s"] = ttl
    stamp = draw(event_times())
    if stamp is not None:
        record["event_time"] = stamp
    return record


# --- the path of ingest → apply → maintain, without a JVM ----------------------------------

def _updates_table(lines: list[str]) -> pa.Table:
    checked = validate_file("\n".join(lines).encode(), "jsonl")
    assert not checked.rejections, [(r.code, r.reason) for r in checked.rejections]
    rows = [{
        "batch_id": 1, "seq": seq, "source": "p.jsonl", "line": line, "op": r.op,
        "relation": r.relation, "src": r.src, "dst": r.dst, "cost": r.cost, "id": r.id,
        "x": r.x, "y": r.y, "region": r.region, "ttl_s": r.ttl_s, "event_time": r.event_time,
        "ingested_at": INGESTED_AT,
    } for seq, (line, r) in enumerate(checked.records, start=1)]
    return pa.Table.from_pylist(rows, schema=_schema(TABLE_DDL["updates"]))


def _serializer():
    """pyspark's Arrow serializer as a Python worker of the session sets it up: zone UTC
    (:mod:`aspen.spark.session`), ``convertToArrowArraySafely`` at Spark's default, false (an
    expiry's nanoseconds are cut to microseconds, as Delta keeps them)."""
    from pyspark.sql.pandas.serializers import ArrowStreamPandasSerializer

    return ArrowStreamPandasSerializer("UTC", False, False)


def _to_pandas(table: pa.Table) -> pd.DataFrame:
    """As ``mapInPandas`` hands a partition to Python."""
    serializer = _serializer()
    return pd.DataFrame({name: serializer.arrow_to_pandas(table.column(name), i)
                         for i, name in enumerate(table.column_names)})


def _to_arrow(frame: pd.DataFrame, schema: pa.Schema) -> pa.Table:
    """As ``mapInPandas`` hands the fold's output back to Spark."""
    serializer = _serializer()
    return pa.Table.from_arrays(
        [serializer._create_array(frame[f.name], f.type) for f in schema], schema=schema)


def _fold_input(updates: pd.DataFrame) -> pd.DataFrame:
    frame = updates.copy()
    frame["kind"] = 1
    frame["key"] = [json.dumps([row[c] for c in BASE_KEY_COLUMNS[row["relation"]]],
                               separators=(",", ":"), ensure_ascii=False)
                    for row in frame.to_dict("records")]
    return frame.sort_values(["relation", "key"], kind="stable")


def maintain_in_process(lines: list[str]) -> dict[str, pa.Table]:
    from aspen.catalog import VIEWS
    from aspen.pipeline.view_tables import view_frame
    from aspen.runtime.local import LocalRuntime

    fold_schema = _schema(FOLD_OUTPUT_DDL)
    updates = _to_pandas(_updates_table(lines))
    folded = [_to_arrow(frame, fold_schema) for frame in fold_sorted([_fold_input(updates)])]
    changes = pa.concat_tables(folded) if folded else fold_schema.empty_table()
    registry = _to_pandas(changes)
    registry = registry[registry["row_kind"] == "instance"]
    # the expiry sweep's comparison, over every accepted expiry
    assert (registry["expires_at"].dropna() >= pd.Timestamp("1970-01-01")).all()
    runtime = LocalRuntime(views=VIEWS, partitions=2, mode="lazy", measure_bytes=False)
    batch = batch_between(registry, after=-1, through=1)
    if batch:
        runtime.apply(batch)
    runtime.flush()
    return {view: view_frame(view, runtime.view(view), runtime.manager, 1,
                             runtime.view_placement(view)) for view in VIEWS}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.data_too_large])
@given(st.lists(records(), min_size=1, max_size=12))
def test_accepted_records_near_the_bounds_maintain_without_error(drawn: list[dict]) -> None:
    lines = [json.dumps(record, ensure_ascii=bool(i % 2)) for i, record in enumerate(drawn)]
    checked = validate_file("\n".join(lines).encode(), "jsonl")
    assert [r.code for r in checked.rejections] == []  # the space drawn from is accepted
    for _, record in checked.records:
        if record.event_time is not None:
            assert EARLIEST_EVENT_TIME <= record.event_time < LATEST_EVENT_TIME
    maintain_in_process(lines)


def test_the_latest_event_time_with_the_longest_ttl_expires_where_pandas_can_say() -> None:
    latest = "2199-12-31T23:59:59.999999Z"
    line = json.dumps({"op": "insert", "relation": "link", "src": "a", "dst": "b",
                       "cost": MAX_MAGNITUDE, "ttl_s": MAX_TTL_SECONDS, "event_time": latest})
    updates = _to_pandas(_updates_table([line]))
    [frame] = list(fold_sorted([_fold_input(updates)]))
    expires = frame["expires_at"].iloc[0]
    assert expires == pd.Timestamp("2199-12-31 23:59:59.999999") + pd.Timedelta(
        seconds=MAX_TTL_SECONDS)
    assert expires < pd.Timestamp.max
    views = maintain_in_process([line])
    assert views["reachable"].num_rows == 1


def test_what_maintenance_could_not_hold_is_rejected_by_validation() -> None:
    """The tester's records that wedged maintain: each now has its own code."""
    base = {"op": "insert", "relation": "link", "src": "a", "dst": "b", "cost": 1}
    wedged = {
        "ttl_out_of_range": {**base, "ttl_s": 1e10},
        "event_time_out_of_range": {**base, "event_time": "3000-01-01T00:00:00Z"},
        "id_too_long": {**base, "src": "n" * 1_000_000},
    }
    checked = validate_file("\n".join(json.dumps(r) for r in wedged.values()).encode(), "jsonl")
    assert [r.code for r in checked.rejections] == list(wedged)
    assert set(wedged) <= set(REASON_CODES)
