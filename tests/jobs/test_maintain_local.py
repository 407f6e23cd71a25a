"""``maintain --runtime local`` over a real lake: ingest → apply → views, ledger, explain, what-if,
verify, and a crash before the ledger row that a rerun repairs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aspen.catalog import VIEWS
from aspen.cli.main import main
from aspen.lake.committed import read_committed
from aspen.lake.deltars import read_table, table_version
from aspen.lake.ingest import ingest_files
from aspen.pipeline import ledger
from aspen.pipeline.lake_provenance import LakeProvenance
from aspen.pipeline.maintain_local import maintain_local
from aspen.pipeline.verify import verify_lake

pytestmark = pytest.mark.spark

# a → b → c → a, plus a shortcut a → c; sensors in a row 10 m apart, region r1 seeded at s1
FIRST = [
    {"op": "insert", "relation": "link", "src": "a", "dst": "b", "cost": 1.0},
    {"op": "insert", "relation": "link", "src": "b", "dst": "c", "cost": 1.0},
    {"op": "insert", "relation": "link", "src": "c", "dst": "a", "cost": 1.0},
    {"op": "insert", "relation": "link", "src": "a", "dst": "c", "cost": 5.0},
    {"op": "insert", "relation": "sensor", "id": "s1", "x": 0.0, "y": 0.0},
    {"op": "insert", "relation": "sensor", "id": "s2", "x": 10.0, "y": 0.0},
    {"op": "insert", "relation": "sensor", "id": "s3", "x": 20.0, "y": 0.0},
    {"op": "insert", "relation": "region_seed", "region": "r1", "id": "s1"},
    {"op": "insert", "relation": "triggered", "id": "s1"},
    {"op": "insert", "relation": "triggered", "id": "s2"},
    {"op": "insert", "relation": "triggered", "id": "s3"},
]
SECOND = [
    {"op": "delete", "relation": "link", "src": "b", "dst": "c"},
    {"op": "delete", "relation": "triggered", "id": "s2"},
]


def _rows(frame) -> set[tuple]:
    """A view table's tuples, without provenance and bookkeeping columns."""
    return {tuple(r[c] for c in frame.columns if c in ("src", "dst", "region", "sensor"))
            for r in frame.to_dict("records")}


def write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def pairs(settings, view: str) -> set[tuple]:
    frame = read_committed(settings, view)
    return set(zip(frame.iloc[:, 0], frame.iloc[:, 1], strict=True))


@pytest.mark.slow
def test_two_batches_then_explain_what_if_and_verify(spark, lake, tmp_path: Path) -> None:
    ingest_files(lake, [write(tmp_path / "first.jsonl", FIRST)])
    report = maintain_local(lake, spark=spark, partitions=3, mode="lazy")
    assert report.batch_id == 1
    nodes = "abc"
    assert pairs(lake, "reachable") == {(x, y) for x in nodes for y in nodes}
    assert pairs(lake, "active_region") == {("r1", "s1"), ("r1", "s2"), ("r1", "s3")}
    assert verify_lake(lake).ok

    why = LakeProvenance(lake).explain("reachable", ("a", "c"))
    assert why[0].witnesses == [["link(a→c)"], ["link(a→b)", "link(b→c)"]]
    assert why[0].critical == []
    lost = LakeProvenance(lake).what_if({"v2"})  # v2 = link(b→c), the second record of the log
    assert ("b", "c") in lost["reachable"] and ("a", "c") not in lost["reachable"]

    assert maintain_local(lake, spark=spark, partitions=3, mode="lazy").nothing_to_do

    ingest_files(lake, [write(tmp_path / "second.jsonl", SECOND)])
    report = maintain_local(lake, spark=spark, partitions=3, mode="lazy")
    assert report.batch_id == 2 and report.deleted_vars == 2
    assert pairs(lake, "reachable") == {("a", "b"), ("a", "c"), ("a", "a"), ("c", "a"),
                                        ("c", "b"), ("c", "c")}
    # s3 was reachable only through s2 (s1–s3 are 20 m apart, not < k)
    assert pairs(lake, "active_region") == {("r1", "s1")}
    assert verify_lake(lake).ok
    assert ledger.last_committed(lake).batch_id == 2


@pytest.mark.slow
def test_a_crash_before_the_ledger_row_is_repaired_by_the_rerun(spark, lake, tmp_path, monkeypatch,
                                                                 capsys):
    ingest_files(lake, [write(tmp_path / "first.jsonl", FIRST)])
    maintain_local(lake, spark=spark, partitions=2, mode="eager")
    committed = {view: _rows(read_committed(lake, view)) for view in VIEWS}
    log_version = table_version(lake, "view_changes")
    ingest_files(lake, [write(tmp_path / "second.jsonl", SECOND)])

    def crash(*args, **kwargs):
        raise RuntimeError("killed before the ledger row")

    monkeypatch.setattr(ledger, "commit", crash)
    with pytest.raises(RuntimeError):
        maintain_local(lake, spark=spark, partitions=2, mode="eager")
    # the failed run appended the views' changes to their log, but the batch is not committed
    assert ledger.last_committed(lake).batch_id == 1
    assert table_version(lake, "view_changes") > log_version
    # so every reader stays on batch 1: the committed versions, not the latest
    assert {view: _rows(read_committed(lake, view)) for view in VIEWS} == committed
    assert verify_lake(lake).ok
    assert main(["--lake", lake.lake, "show", "reachable", "--format", "json"]) == 0
    shown = {tuple(row.values()) for row in json.loads(capsys.readouterr().out)}
    assert shown == {tuple(row) for row in committed["reachable"]}
    assert LakeProvenance(lake).what_if({"v2"})["reachable"]  # v2 = link(b→c): live in batch 1
    monkeypatch.undo()
    report = maintain_local(lake, spark=spark, partitions=2, mode="eager")
    assert report.batch_id == 2 and report.deleted_vars == 2
    assert verify_lake(lake).ok
    assert ledger.last_committed(lake).batch_id == 2
    assert sorted(read_table(lake, "ledger")["batch_id"]) == [1, 2]


def test_a_maintainer_that_lost_its_lease_does_not_commit(spark, lake, tmp_path):
    """On the local runtime; the check is in ``ledger.commit``, which both runtimes call to
    commit (tests/jobs/test_follow.py runs a follower on the spark runtime)."""
    from datetime import UTC, datetime, timedelta

    from aspen.lake import lease as lease_module
    from aspen.lake.lease import LeaseHolder, LostLeaseError, MaintainerLease

    ingest_files(lake, [write(tmp_path / "first.jsonl", FIRST)])
    now = datetime.now(UTC)
    thief = LeaseHolder("thief", "elsewhere", 1, "aspen maintain --follow", now,
                        now + timedelta(seconds=600))
    with MaintainerLease(lake, "aspen maintain") as held:
        table, _ = lease_module._read(lake)  # another maintainer takes the lease mid-batch
        assert lease_module._swap(lake, table, thief)
        with pytest.raises(LostLeaseError, match="lost the lake's lease"):
            maintain_local(lake, spark=spark, partitions=2)
        assert held.owner != thief.owner
    assert ledger.last_committed(lake).batch_id == 0  # written tables, but nothing committed
    table, _ = lease_module._read(lake)
    assert lease_module._swap(lake, table, LeaseHolder(**{**thief.__dict__, "released": True}))
    # the next maintainer restores and commits
    assert maintain_local(lake, spark=spark, partitions=2).batch_id == 1
    assert verify_lake(lake).ok
