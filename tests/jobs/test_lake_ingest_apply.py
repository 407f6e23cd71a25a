"""Ingest (delta-rs) with quarantine, apply (Spark: insert, renewal, replacement, delete, notes,
TTL), idempotency across reruns and crashes, delta-rs readability of everything Spark wrote and
Spark readability of what delta-rs wrote; tables Spark created accept ingest's appends."""

from __future__ import annotations

from pathlib import Path

import pytest

from aspen.lake import apply as apply_module
from aspen.lake import ingest as ingest_module
from aspen.lake import tables
from aspen.lake.apply import apply_pending, live_instances, pending_changes
from aspen.lake.ingest import ingest_files
from aspen.settings import Settings

pytestmark = pytest.mark.spark

DAY1 = [
    '{"op":"insert","relation":"link","src":"a","dst":"b","cost":1,"ttl_s":600,'
    '"event_time":"2026-01-01T00:00:00Z"}',                                  # seq 1 → v1
    '{"op":"insert","relation":"link","src":"a","dst":"b","cost":1.0}',        # seq 2 → v2 renewal
    '{"op":"insert","relation":"link","src":"b","dst":"c","cost":2}',          # seq 3 → v3
    "",
    '{"op":"insert","relation":"link","src":"b","dst":"c","cost":5}',  # seq 4 → v4 replaces v3
    '{"op":"insert","relation":"link","src":"a","dst":"b","cost":-3}',         # quarantined
    '{"op":"delete","relation":"link","src":"n1","dst":"n9"}',                 # seq 5: note
    '{"op":"insert","relation":"sensor","id":"s1","x":1,"y":2}',               # seq 6 → v6
    '{"op":"insert","relation":"triggered","id":"s1"}',                        # seq 7 → v7
    '{"op":"insert","relation":"region_seed","region":"r1","id":"s1"}',        # seq 8 → v8
]
DAY2_CSV = (
    "op,relation,src,dst,cost,id,x,y,region\n"
    "delete,link,a,b,,,,,\n"          # seq 9: v1, v2 die
    "insert,sensor,,,,s1,1,9,\n"      # seq 10 → v10 replaces v6
    "delete,region_seed,,,,s1,,,r1\n"  # seq 11: v8 dies
    "delete,triggered,,,,s9,,,\n"     # seq 12: note
    "insert,link,a,b,abc,,,,\n"       # quarantined
)


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def rows(spark, lake: Settings, name: str, order: str) -> list[dict]:
    frame = spark.read.format("delta").load(lake.table_uri(name)).orderBy(order)
    return [r.asDict() for r in frame.collect()]


def epoch(spark, lake: Settings, var: str, column: str) -> float | None:
    frame = spark.read.format("delta").load(lake.table_uri("variables")).where(f"var = '{var}'")
    return frame.selectExpr(f"unix_micros({column}) / 1e6 AS t").first()["t"]


@pytest.mark.slow
@pytest.mark.parametrize("in_process", [False, True], ids=["spark", "in-process"])
def test_ingest_and_apply_follow_the_log(spark, lake: Settings, tmp_path: Path,
                                         in_process: bool) -> None:
    day1 = write(tmp_path / "day1.jsonl", "\n".join(DAY1) + "\n")
    report = ingest_files(lake, [day1])
    assert report.batch_id == 1
    (file_report,) = report.files
    assert (file_report.valid, file_report.quarantined, file_report.blank) == (8, 1, 1)
    assert file_report.reasons == {"bad_cost": 1}
    assert [r["seq"] for r in rows(spark, lake, "updates", "seq")] == list(range(1, 9))
    (bad,) = rows(spark, lake, "quarantine", "line")
    assert (bad["source"], bad["line"], bad["code"]) == ("day1.jsonl", 6, "bad_cost")
    assert bad["raw"] == DAY1[5] and bad["reason"].startswith("line 6: link insert has cost -3.0")

    again = ingest_files(lake, [day1])  # the same content: a no-op
    assert again.batch_id is None and again.files[0].already_ingested_in == 1
    assert spark.read.format("delta").load(lake.table_uri("updates")).count() == 8

    applied = apply_pending(spark, lake, in_process=in_process)
    assert applied.batches == [1] and applied.updates == 8
    assert applied.notes == ["delete of link n1→n9 ignored: not live"]
    links = rows(spark, lake, "link", "seq")
    assert [(r["var"], r["src"], r["dst"], r["cost"]) for r in links] == [
        ("v1", "a", "b", 1.0), ("v2", "a", "b", 1.0), ("v4", "b", "c", 5.0)]
    registry = {r["var"]: r for r in rows(spark, lake, "variables", "inserted_seq")}
    assert set(registry) == {"v1", "v2", "v3", "v4", "v6", "v7", "v8"}
    assert (registry["v3"]["death"], registry["v3"]["deleted_batch"]) == ("replaced", 1)
    assert registry["v1"]["key"] == '["a","b"]' and registry["v1"]["values"] == '["a","b",1.0]'
    start = 1767225600.0  # 2026-01-01T00:00:00Z
    assert epoch(spark, lake, "v1", "inserted_at") == start
    assert epoch(spark, lake, "v1", "expires_at") == start + 600
    assert epoch(spark, lake, "v2", "expires_at") is None

    day2 = write(tmp_path / "day2.csv", DAY2_CSV)
    assert ingest_files(lake, [day2]).batch_id == 2
    applied = apply_pending(spark, lake, in_process=in_process)
    assert applied.batches == [2] and (applied.born, applied.died) == (1, 4)
    assert applied.notes == ["delete of triggered s9 ignored: not live"]
    assert [r["var"] for r in rows(spark, lake, "link", "seq")] == ["v4"]
    assert [(r["var"], r["y"]) for r in rows(spark, lake, "sensor", "seq")] == [("v10", 9.0)]
    assert rows(spark, lake, "region_seed", "seq") == []
    registry = {r["var"]: r for r in rows(spark, lake, "variables", "inserted_seq")}
    assert {v: (r["death"], r["deleted_batch"], r["deleted_seq"]) for v, r in registry.items()
            if r["deleted_batch"] is not None} == {
        "v1": ("deleted", 2, 9), "v2": ("deleted", 2, 9), "v3": ("replaced", 1, 4),
        "v6": ("replaced", 2, 10), "v8": ("deleted", 2, 11)}
    notes = rows(spark, lake, "apply_notes", "seq")
    assert [(n["batch_id"], n["seq"], n["relation"]) for n in notes] == [
        (1, 5, "link"), (2, 12, "triggered")]
    assert [(r["batch_id"], r["updates"], r["born"], r["died"], r["notes"])
            for r in rows(spark, lake, "apply_state", "batch_id")] == [
        (1, 8, 7, 1, 1), (2, 4, 1, 4, 1)]

    changes = pending_changes(spark, lake, after_batch=0)
    assert [(c.batch_id, [f.var for f in c.born], list(c.died)) for c in changes] == [
        (1, ["v1", "v2", "v4", "v6", "v7", "v8"], []),  # v3 was born and died in batch 1
        (2, ["v10"], ["v1", "v2", "v6", "v8"]),
    ]
    assert changes[0].born[2].values == ("b", "c", 5.0)
    assert changes[1].to_batch().deletes == frozenset({"v1", "v2", "v6", "v8"})
    assert pending_changes(spark, lake, after_batch=2) == []
    assert [f.var for f in live_instances(spark, lake)] == ["v4", "v7", "v10"]
    assert [f.var for f in live_instances(spark, lake, as_of_batch=1)] == [
        "v1", "v2", "v4", "v6", "v7", "v8"]

    assert apply_pending(spark, lake, in_process=in_process).batches == []  # nothing new

    # every table (Spark's and ingest's, delta-rs's) is at reader 1 / writer 2 for both engines
    from deltalake import DeltaTable

    written = [name for name in tables.TABLE_DDL if name != tables.READINGS]  # no reading here
    for name in written:
        table = DeltaTable(lake.table_uri(name))
        protocol = table.protocol()
        assert (protocol.min_reader_version, protocol.min_writer_version) == (1, 2), name
        frame = table.to_pandas()
        assert list(frame.columns) == tables.schema_of(name, added=True).fieldNames(), name
        spark_schema = spark.read.format("delta").load(lake.table_uri(name)).schema
        assert spark_schema == tables.schema_of(name, added=True), name
    assert len(DeltaTable(lake.table_uri("updates")).to_pandas()) == 12
    assert len(DeltaTable(lake.table_uri("quarantine")).to_pandas()) == 2


@pytest.mark.slow
def test_crashes_then_reruns_apply_exactly_once(spark, lake: Settings, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(apply_module, "IN_PROCESS_MAX_UPDATES", -1)  # the Spark path's steps
    day1 = write(tmp_path / "d1.jsonl", "\n".join([
        '{"op":"insert","relation":"link","src":"a","dst":"b","cost":1}',
        '{"op":"insert","relation":"sensor","id":"s1","x":0,"y":0}',
        "oops",
    ]) + "\n")
    real_append = ingest_module._append

    def crash_before_marker(settings, name, rows_):
        if name == tables.INGEST_FILES:
            raise RuntimeError("simulated crash before the commit marker")
        real_append(settings, name, rows_)

    monkeypatch.setattr(ingest_module, "_append", crash_before_marker)
    with pytest.raises(RuntimeError):
        ingest_files(lake, [day1])
    assert spark.read.format("delta").load(lake.table_uri("updates")).count() == 2  # leftovers
    assert apply_pending(spark, lake).batches == []  # uncommitted rows are invisible to apply
    monkeypatch.setattr(ingest_module, "_append", real_append)
    assert ingest_files(lake, [day1]).batch_id == 1
    updates = rows(spark, lake, "updates", "seq")
    assert [(r["batch_id"], r["seq"]) for r in updates] == [(1, 1), (1, 2)]  # not doubled
    assert len(rows(spark, lake, "quarantine", "line")) == 1
    assert apply_pending(spark, lake).batches == [1]

    day2 = write(tmp_path / "d2.jsonl", "\n".join([
        '{"op":"insert","relation":"link","src":"a","dst":"b","cost":4}',   # seq 3 replaces v1
        '{"op":"delete","relation":"sensor","id":"s1"}',                    # seq 4 kills v2
        '{"op":"insert","relation":"link","src":"b","dst":"c","cost":1}',   # seq 5
    ]) + "\n")
    assert ingest_files(lake, [day2]).batch_id == 2
    real_merge_base = apply_module._merge_base

    def crash_on_sensor(spark_, settings, relation, instances):
        if relation == "sensor":
            raise RuntimeError("simulated crash mid-apply")
        real_merge_base(spark_, settings, relation, instances)

    monkeypatch.setattr(apply_module, "_merge_base", crash_on_sensor)
    with pytest.raises(RuntimeError):
        apply_pending(spark, lake)
    monkeypatch.setattr(apply_module, "_merge_base", real_merge_base)
    assert apply_pending(spark, lake).batches == [2]

    registry = rows(spark, lake, "variables", "inserted_seq")
    assert [(r["var"], r["deleted_batch"], r["death"]) for r in registry] == [
        ("v1", 2, "replaced"), ("v2", 2, "deleted"), ("v3", None, None), ("v5", None, None)]
    assert [r["var"] for r in rows(spark, lake, "link", "seq")] == ["v3", "v5"]
    assert rows(spark, lake, "sensor", "seq") == []
    assert [r["batch_id"] for r in rows(spark, lake, "apply_state", "batch_id")] == [1, 2]


def test_apply_plans_a_small_registry_with_the_tiny_data_sql_conf_and_gives_the_conf_back(
        spark, lake: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under TINY_TABLE_BYTES of registry the apply's queries run with TINY_DATA_SQL_CONF, above
    it with the application's own conf; after either, the session has its own conf back."""
    from aspen.lake.deltars import data_bytes
    from aspen.spark import session as session_module

    compiled = {"spark.sql.adaptive.enabled": "true", "spark.sql.codegen.wholeStage": "true",
                "spark.sql.codegen.factoryMode": "FALLBACK"}
    assert set(compiled) == set(session_module.TINY_DATA_SQL_CONF)
    seen: list[dict[str, str]] = []
    last_applied = apply_module.last_applied_batch
    monkeypatch.setattr(apply_module, "IN_PROCESS_MAX_UPDATES", -1)  # the conf of Spark's path

    def last_applied_noting_the_conf(spark_, settings) -> int:  # the apply's first query
        seen.append({name: spark_.conf.get(name) for name in compiled})
        return last_applied(spark_, settings)

    monkeypatch.setattr(apply_module, "last_applied_batch", last_applied_noting_the_conf)
    path = write(tmp_path / "day1.jsonl", '{"op":"insert","relation":"link","src":"a","dst":"b"'
                 ',"cost":1}\n')
    ingest_files(lake, [path])
    with session_module.temporary_conf(spark, compiled):  # the test session's own conf after
        assert apply_pending(spark, lake).born == 1  # a registry of 0 bytes before
        assert {name: spark.conf.get(name) for name in compiled} == compiled
        assert data_bytes(lake, tables.VARIABLES) > 0
        monkeypatch.setattr(session_module, "TINY_TABLE_BYTES", 0)  # now it is not tiny
        assert apply_pending(spark, lake).batches == []
        assert {name: spark.conf.get(name) for name in compiled} == compiled
    assert seen == [session_module.TINY_DATA_SQL_CONF, compiled]


def test_ingest_appends_to_the_tables_spark_created(spark, lake: Settings,
                                                    tmp_path: Path) -> None:
    """A lake whose update log tables Spark created (as before ingest wrote through delta-rs)
    takes ingest's appends and deletes, and Spark reads and applies them."""
    for name in (tables.UPDATES, tables.QUARANTINE, tables.INGEST_FILES):
        tables.ensure_table(spark, lake, name)
    day1 = write(tmp_path / "s1.jsonl", '{"op":"insert","relation":"link","src":"a","dst":"b",'
                 '"cost":1,"event_time":"2026-01-01T00:00:00Z"}\nnot json\n')
    assert ingest_files(lake, [day1]).batch_id == 1
    (update,) = rows(spark, lake, "updates", "seq")
    assert (update["batch_id"], update["seq"], update["src"], update["cost"]) == (1, 1, "a", 1.0)
    start = spark.read.format("delta").load(lake.table_uri("updates")).selectExpr(
        "unix_micros(event_time) / 1e6 AS t").first()["t"]
    assert start == 1767225600.0  # 2026-01-01T00:00:00Z, kept as UTC
    assert [r["code"] for r in rows(spark, lake, "quarantine", "line")] == ["malformed_json"]
    assert apply_pending(spark, lake).born == 1

    ingest_module._drop_uncommitted(lake, 1)  # delta-rs deletes from Spark's table
    assert rows(spark, lake, "updates", "seq") == []
