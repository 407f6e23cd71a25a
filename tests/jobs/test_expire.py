"""``aspen expire``: instances whose TTL passed die in a batch of their own, and the next
``maintain --runtime spark`` removes exactly what depended only on them."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from aspen.cli.main import main
from aspen.lake.deltars import read_table
from aspen.lake.expire import expire_due
from aspen.lake.ingest import ingest_files
from aspen.pipeline.maintain_spark import maintain_spark
from aspen.pipeline.verify import verify_lake

pytestmark = pytest.mark.spark

T0 = "2026-01-01T00:00:00Z"
RECORDS = [  # a → b → c with TTLs of 60 s and 600 s; a → c for ever; a re-insert renews b → c
    {"op": "insert", "relation": "link", "src": "a", "dst": "b", "cost": 1.0, "ttl_s": 60,
     "event_time": T0},
    {"op": "insert", "relation": "link", "src": "b", "dst": "c", "cost": 1.0, "ttl_s": 60,
     "event_time": T0},
    {"op": "insert", "relation": "link", "src": "b", "dst": "c", "cost": 1.0, "ttl_s": 600,
     "event_time": "2026-01-01T00:00:30Z"},
    {"op": "insert", "relation": "link", "src": "a", "dst": "c", "cost": 9.0, "event_time": T0},
]


@pytest.mark.slow
def test_expired_instances_die_and_the_views_follow(spark, lake, tmp_path: Path) -> None:
    path = tmp_path / "ttl.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    ingest_files(spark, lake, [path])
    maintain_spark(lake, spark=spark, partitions=2)
    assert {("a", "b"), ("b", "c"), ("a", "c")} <= set(
        map(tuple, read_table(lake, "reachable")[["src", "dst"]].values))

    early = expire_due(spark, lake, datetime(2026, 1, 1, 0, 0, 59, tzinfo=UTC))
    assert early.expired == 0 and early.batch_id is None
    report = expire_due(spark, lake, datetime(2026, 1, 1, 0, 1, 0, tzinfo=UTC))
    assert report.expired == 2 and report.per_relation == {"link": 2}
    registry = read_table(lake, "variables").set_index("var")
    assert sorted(registry[registry["death"] == "expired"].index) == ["v1", "v2"]
    assert set(registry.loc[["v1", "v2"], "deleted_batch"]) == {report.batch_id}
    links = read_table(lake, "link")
    assert sorted(links["var"]) == ["v3", "v4"]  # the renewal of b → c and a → c live on
    assert expire_due(spark, lake, datetime(2026, 1, 1, 0, 1, 0, tzinfo=UTC)).expired == 0

    result = maintain_spark(lake, spark=spark, partitions=2)
    assert result.deleted_vars == 2
    reachable = set(map(tuple, read_table(lake, "reachable")[["src", "dst"]].values))
    assert reachable == {("b", "c"), ("a", "c")}  # a → b expired; b → c was renewed
    assert verify_lake(lake).ok


def test_cli_rejects_a_bad_time_in_one_line(capsys) -> None:
    assert main(["expire", "--now", "yesterday"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "ISO-8601" in err[0]
