"""Ingest through delta-rs, no Spark: the tables it creates on a fresh lake are the ones Spark
would create (schema, reader 1 / writer 2, the same properties); re-ingests, renamed copies,
crashes before the commit marker (named crash points included) and a lost lease keep every
record exactly once; and ``aspen ingest`` runs without ever importing pyspark."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from aspen.errors import InjectedCrash
from aspen.lake import ingest as ingest_module
from aspen.lake import lease as lease_module
from aspen.lake import tables
from aspen.lake.deltars import NEW_TABLE_PROPERTIES, read_table, table_exists, table_version
from aspen.lake.ingest import ingest_files
from aspen.lake.lease import LostLeaseError, log_writer
from aspen.settings import Settings

LOG_TABLES = (tables.UPDATES, tables.QUARANTINE, tables.INGEST_FILES)


def _links(tag: str, count: int, bad: bool = True) -> str:
    lines = [json.dumps({"op": "insert", "relation": "link", "src": f"{tag}{i}",
                         "dst": f"{tag}{i + 1}", "cost": 1.0}) for i in range(count)]
    if bad:
        lines.append(json.dumps({"op": "insert", "relation": "link", "src": tag, "dst": "x",
                                 "cost": -1}))
    return "\n".join(lines) + "\n"


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _seqs(lake: Settings) -> list[tuple[int, int]]:
    frame = read_table(lake, tables.UPDATES, ["batch_id", "seq"]).sort_values("seq")
    return [(int(b), int(s)) for b, s in zip(frame["batch_id"], frame["seq"], strict=True)]


def test_a_fresh_lake_gets_the_log_tables_spark_would_create(lake: Settings,
                                                             tmp_path: Path) -> None:
    from deltalake import DeltaTable

    report = ingest_files(lake, [_write(tmp_path / "a.jsonl", _links("a", 2, bad=False))])
    assert report.batch_id == 1 and report.valid == 2 and report.quarantined == 0
    for name in LOG_TABLES:  # quarantine too, although nothing went there
        table = DeltaTable(lake.table_uri(name))
        protocol = table.protocol()
        assert (protocol.min_reader_version, protocol.min_writer_version) == (1, 2), name
        assert not protocol.reader_features and not protocol.writer_features, name
        assert table.metadata().configuration == NEW_TABLE_PROPERTIES, name
        # the commit marker with its added column (the delivery), the others as in TABLE_DDL
        assert table.schema().to_arrow() == tables.arrow_schema_of(name, added=True), name
    assert read_table(lake, tables.QUARANTINE).empty
    assert _seqs(lake) == [(1, 1), (1, 2)]
    (marker,) = read_table(lake, tables.INGEST_FILES).to_dict("records")
    assert (marker["source"], marker["batch_id"], marker["seq_start"], marker["seq_end"]) == (
        "a.jsonl", 1, 1, 2)
    assert str(marker["ingested_at"].tzinfo) == "UTC"


def test_the_first_reading_creates_a_readings_table_spark_would_create(
        lake: Settings, tmp_path: Path) -> None:
    from deltalake import DeltaTable

    path = tmp_path / "r.jsonl"
    path.write_text('{"op": "insert", "relation": "reading", "sensor": "s1", '
                    '"ts": "2026-12-01T10:00:03Z", "value": 93.1}\n')
    assert ingest_files(lake, [path]).readings == 1
    table = DeltaTable(lake.table_uri(tables.READINGS))
    protocol = table.protocol()
    assert (protocol.min_reader_version, protocol.min_writer_version) == (1, 2)
    assert table.metadata().configuration == NEW_TABLE_PROPERTIES
    assert table.schema().to_arrow() == tables.arrow_schema_of(tables.READINGS)
    assert read_table(lake, tables.READINGS)[["id", "sensor", "value"]].values.tolist() == [
        [1, "s1", 93.1]]


def test_reingest_copy_and_a_crash_before_the_marker_keep_records_once(
        lake: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = _write(tmp_path / "a.jsonl", _links("a", 2))
    assert ingest_files(lake, [first]).batch_id == 1
    again = ingest_files(lake, [first])
    assert again.batch_id is None and again.files[0].already_ingested_in == 1
    copy = _write(tmp_path / "copy.jsonl", first.read_text())
    report = ingest_files(lake, [copy])
    assert report.batch_id == 2
    assert ("warning: copy.jsonl: same content as already-ingested a.jsonl (batch 1); "
            "ingested again") in report.lines()

    real_append = ingest_module._append

    def crash_before_marker(settings: Settings, name: str, rows: list) -> None:
        if name == tables.INGEST_FILES:
            raise RuntimeError("simulated crash before the commit marker")
        real_append(settings, name, rows)

    third = _write(tmp_path / "b.jsonl", _links("b", 3))
    monkeypatch.setattr(ingest_module, "_append", crash_before_marker)
    with pytest.raises(RuntimeError):
        ingest_files(lake, [third])
    assert len(_seqs(lake)) == 7  # leftovers of batch 3, uncommitted
    assert log_writer(lake).released  # the lease is given back on the way out
    monkeypatch.setattr(ingest_module, "_append", real_append)
    assert ingest_files(lake, [third]).batch_id == 3
    assert _seqs(lake) == [(1, 1), (1, 2), (2, 3), (2, 4), (3, 5), (3, 6), (3, 7)]
    quarantine = read_table(lake, tables.QUARANTINE)
    assert sorted(zip(quarantine["source"], quarantine["batch_id"], strict=True)) == [
        ("a.jsonl", 1), ("b.jsonl", 3), ("copy.jsonl", 2)]


@pytest.mark.parametrize("point", ["ingest:after-drop", "ingest:after-updates",
                                   "ingest:after-quarantine", "ingest:after-ingest_files"])
def test_every_ingest_crash_point_fires_and_the_rerun_completes(
        lake: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str) -> None:
    from aspen.bench.faults import CRASH_POINTS, lake_crash_points

    assert point in CRASH_POINTS["ingest"]
    assert ingest_files(lake, [_write(tmp_path / "a.jsonl", _links("a", 1))]).batch_id == 1
    path = _write(tmp_path / "b.jsonl", _links("b", 2))
    monkeypatch.setenv("ASPEN_CRASH_AT", point)
    with lake_crash_points(), pytest.raises(InjectedCrash):
        ingest_files(lake, [path])
    monkeypatch.delenv("ASPEN_CRASH_AT")
    rerun = ingest_files(lake, [path])
    if point == "ingest:after-ingest_files":  # committed before the crash
        assert rerun.batch_id is None and rerun.files[0].already_ingested_in == 2
    else:
        assert rerun.batch_id == 2
    assert _seqs(lake) == [(1, 1), (2, 2), (2, 3)]
    assert len(read_table(lake, tables.QUARANTINE)) == 2


def test_a_writer_that_lost_its_lease_stops_before_its_marker(
        lake: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_append = ingest_module._append

    def append_then_lose_the_lease(settings: Settings, name: str, rows: list) -> None:
        real_append(settings, name, rows)
        if name == tables.UPDATES:  # another writer took the lease meanwhile, and ended
            for _ in range(20):
                table, row = lease_module._read(settings, lease_module.LOG_LEASE_TABLE)
                taken = dataclasses.replace(row, owner="someone-else", released=True)
                if lease_module._swap(settings, table, taken, lease_module.LOG_LEASE_TABLE):
                    return
            pytest.fail("could not write the lease row")

    path = _write(tmp_path / "a.jsonl", _links("a", 2))
    monkeypatch.setattr(ingest_module, "_append", append_then_lose_the_lease)
    with pytest.raises(LostLeaseError):
        ingest_files(lake, [path])
    assert not table_exists(lake, tables.INGEST_FILES)  # no commit marker
    assert not table_exists(lake, tables.QUARANTINE)  # it stopped at the next append
    monkeypatch.setattr(ingest_module, "_append", real_append)
    assert ingest_files(lake, [path]).batch_id == 1
    assert _seqs(lake) == [(1, 1), (1, 2)]  # the leftovers were replaced, not doubled


def test_an_append_without_leftovers_commits_no_delete(lake: Settings, tmp_path: Path) -> None:
    ingest_files(lake, [_write(tmp_path / "a.jsonl", _links("a", 1))])
    versions = {name: table_version(lake, name) for name in LOG_TABLES}
    ingest_files(lake, [_write(tmp_path / "b.jsonl", _links("b", 1))])
    assert {name: table_version(lake, name) for name in LOG_TABLES} == {
        name: version + 1 for name, version in versions.items()}  # one append each, no delete


def test_aspen_ingest_runs_without_a_jvm(tmp_path: Path) -> None:
    """The CLI in a fresh interpreter: it ingests, and pyspark is never imported."""
    path = _write(tmp_path / "one.jsonl", _links("a", 1, bad=False))
    lake = tmp_path / "lake"
    script = textwrap.dedent(f"""
        import sys
        from aspen.cli.main import main
        code = main(["--lake", {str(lake)!r}, "ingest", {str(path)!r}])
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("pyspark", "py4j", "delta"))
        print("loaded:", loaded)
        sys.exit(code)
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "SPARK"))}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "one.jsonl: 1 valid, 0 quarantined; seq 1–1 → batch 1" in done.stdout
    assert "loaded: []" in done.stdout, done.stdout
    assert _seqs(Settings(lake=str(lake))) == [(1, 1)]
