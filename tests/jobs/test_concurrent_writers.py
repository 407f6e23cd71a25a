"""One writer at a time on a real lake (Spark + Delta): concurrent ingests — an ``aspen ingest``
process and two threads of this process — each get their own batch id and consecutive seq
numbers and the lake still maintains; while a follower holds the maintainer lease, ingest still
runs and apply, the TTL sweep and housekeeping are refused in one line; and a file mixing
hostile and valid records ingests its valid records, the other files of the call too, and then
maintains."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from aspen.errors import LakeError
from aspen.lake import lease as lease_module
from aspen.lake.ingest import ingest_files
from aspen.lake.lease import LeaseHolder, log_writer
from aspen.lake.validation import MAX_TTL_SECONDS
from aspen.settings import Settings

pytestmark = pytest.mark.spark


def _links(tag: str, count: int) -> list[str]:
    """``count`` valid link inserts named after ``tag``, then one invalid record."""
    lines = [json.dumps({"op": "insert", "relation": "link", "src": f"{tag}{i}",
                         "dst": f"{tag}{i + 1}", "cost": 1.0}) for i in range(count)]
    return [*lines, json.dumps({"op": "insert", "relation": "link", "src": tag, "dst": "x",
                                "cost": -1})]


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


#: ``aspen ingest`` in a process that holds the log writer lease for two seconds before it
#: writes (an ingest without a JVM holds it for well under a second: too short to be seen).
_SLOW_INGEST = """
import sys, time
from aspen.lake import ingest
dropped = ingest._drop_uncommitted
def slow(*args):
    time.sleep(2.0)
    return dropped(*args)
ingest._drop_uncommitted = slow
from aspen.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def _frame(spark, lake: Settings, name: str) -> list[dict]:
    return [r.asDict() for r in spark.read.format("delta").load(lake.table_uri(name)).collect()]


@pytest.mark.slow
def test_concurrent_ingests_never_hand_out_a_batch_or_seq_twice(spark, lake: Settings,
                                                                 tmp_path: Path) -> None:
    from aspen.pipeline.maintain_local import maintain_local
    from aspen.pipeline.verify import verify_lake

    counts = {"p": 4, "t1": 5, "t2": 3}
    files = {tag: _write(tmp_path / f"{tag}.jsonl", _links(tag, n)) for tag, n in counts.items()}
    process = subprocess.Popen(
        [sys.executable, "-c", _SLOW_INGEST, "--lake", lake.lake, "ingest", str(files["p"])],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while not ((row := log_writer(lake)) and row.pid == process.pid and not row.released):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the ingest process never took the log lease"
        time.sleep(0.02)
    # the process holds the lease: both threads wait for it, then for each other
    outcomes: dict[str, object] = {}

    def ingest(tag: str) -> None:
        try:
            outcomes[tag] = ingest_files(lake, [files[tag]])
        except BaseException as err:  # noqa: BLE001 - reported by the assertion below
            outcomes[tag] = err

    threads = [threading.Thread(target=ingest, args=(tag,)) for tag in ("t1", "t2")]
    for thread in threads:
        thread.start()
    out, err = process.communicate(timeout=300)
    for thread in threads:
        thread.join(timeout=300)
    assert process.returncode == 0, err
    assert "p.jsonl: 4 valid, 1 quarantined (bad_cost 1); seq 1–4 → batch 1" in out
    assert all(not isinstance(o, BaseException) for o in outcomes.values()), outcomes

    markers = _frame(spark, lake, "ingest_files")
    assert sorted(m["source"] for m in markers) == ["p.jsonl", "t1.jsonl", "t2.jsonl"]
    assert sorted(m["batch_id"] for m in markers) == [1, 2, 3]  # distinct batch ids
    updates = _frame(spark, lake, "updates")
    assert sorted(u["seq"] for u in updates) == list(range(1, sum(counts.values()) + 1))
    lines = [(u["source"], u["line"]) for u in updates]
    assert len(lines) == len(set(lines))  # every valid record exactly once
    assert sorted(lines) == sorted((f"{tag}.jsonl", i) for tag, n in counts.items()
                                   for i in range(1, n + 1))
    for marker in markers:  # each batch's seq range is its own, its records its file's
        mine = [u for u in updates if u["batch_id"] == marker["batch_id"]]
        assert {u["source"] for u in mine} == {marker["source"]}
        assert sorted(u["seq"] for u in mine) == list(range(marker["seq_start"],
                                                            marker["seq_end"] + 1))
    quarantine = _frame(spark, lake, "quarantine")
    assert sorted((q["source"], q["batch_id"]) for q in quarantine) == sorted(
        (m["source"], m["batch_id"]) for m in markers)

    report = maintain_local(lake, spark=spark, partitions=2)  # wedged before: "already live"
    assert report.inserted_vars == sum(counts.values())
    assert verify_lake(lake).ok


def _follower_elsewhere(lake: Settings) -> LeaseHolder:
    now = datetime.now(UTC)
    row = LeaseHolder("someone-else", "elsewhere", 4242, "aspen maintain --runtime spark "
                      "--follow", now, now + timedelta(seconds=120), follower=True)
    for _ in range(50):
        table, _ = lease_module._read(lake)
        if lease_module._swap(lake, table, row):
            return row
    pytest.fail("could not write the lease row")


def test_a_follower_blocks_apply_sweep_and_housekeeping_but_not_ingest(
        spark, lake: Settings, tmp_path: Path, capsys) -> None:
    import importlib.util

    from aspen.cli.main import main
    from aspen.lake.housekeeping import housekeep

    follower = _follower_elsewhere(lake)
    report = ingest_files(lake, [_write(tmp_path / "a.jsonl", _links("a", 2))])
    assert report.batch_id == 1  # the follower maintains what lands; it never blocks an ingest

    spec = importlib.util.spec_from_file_location(
        "apply_job", Path(__file__).resolve().parents[2] / "jobs" / "apply.py")
    apply_job = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(apply_job)
    capsys.readouterr()
    assert apply_job.main(["--lake", lake.lake]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(
        "apply: the lake is being maintained by 'aspen maintain --runtime spark --follow' "
        "(pid 4242 on elsewhere")
    assert main(["--lake", lake.lake, "expire"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("aspen expire: the lake is being maintained")
    with pytest.raises(LakeError, match="the lake is being maintained by"):
        housekeep(spark, lake, retain_hours=168)
    assert not spark.read.format("delta").load(lake.table_uri("ingest_files")).where(
        "batch_id > 1").count()  # the refused sweep allocated no batch

    for _ in range(50):  # the follower ends: now the sweep runs, holding both leases
        table, _ = lease_module._read(lake)
        if lease_module._swap(lake, table, replace(follower, released=True)):
            break
    assert main(["--lake", lake.lake, "expire"]) == 0
    assert "nothing expired" in capsys.readouterr().out
    assert log_writer(lake).released and lease_module.current_holder(lake).released


@pytest.mark.slow
def test_hostile_records_are_quarantined_and_the_rest_of_the_call_maintains(
        spark, lake: Settings, tmp_path: Path) -> None:
    from aspen.pipeline.maintain_local import maintain_local

    link = '{"op":"insert","relation":"link","src":"a","dst":"b","cost":1'
    hostile = {
        "json_too_deep": "[" * 100_000,
        "event_time_out_of_range": link + ',"event_time":"9999-12-31T23:59:59-05:00"}',
        "number_too_long": link[:-1] + "1" * 5000 + "}",
        "ttl_out_of_range": link + ',"ttl_s":1e10}',
        "id_too_long": link.replace('"a"', '"' + "n" * 1_000_000 + '"') + "}",
        "bad_cost": link[:-1] + "NaN}",
    }
    edge = json.dumps({"op": "insert", "relation": "link", "src": "b", "dst": "c", "cost": 1e15,
                       "ttl_s": MAX_TTL_SECONDS, "event_time": "2199-12-31T23:59:59Z"})
    mixed = _write(tmp_path / "mixed.jsonl",
                   [link + "}", *hostile.values(), edge])
    other = _write(tmp_path / "other.csv", ["op,relation,id,x,y", "insert,sensor,s1,1,2",
                                            "insert,sensor,s2,1e16,2"])
    report = ingest_files(lake, [mixed, other])
    by_source = {f.source: f for f in report.files}
    assert report.batch_id == 1
    assert (by_source["mixed.jsonl"].valid, by_source["mixed.jsonl"].quarantined) == (2, 6)
    assert by_source["mixed.jsonl"].reasons == {code: 1 for code in hostile}
    assert (by_source["other.csv"].valid, by_source["other.csv"].reasons) == (
        1, {"number_out_of_range": 1})
    quarantine = _frame(spark, lake, "quarantine")
    assert sorted(q["code"] for q in quarantine) == sorted([*hostile, "number_out_of_range"])

    maintained = maintain_local(lake, spark=spark, partitions=2)
    assert maintained.inserted_vars == 3
    expiry = spark.read.format("delta").load(lake.table_uri("variables")).where(
        "var = 'v2'").first()["expires_at"]
    # the latest event time plus the longest ttl, held by pandas, Spark and Delta
    assert expiry == datetime(2199, 12, 31, 23, 59, 59) + timedelta(seconds=MAX_TTL_SECONDS)
