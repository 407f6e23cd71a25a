"""Housekeeping on a real lake: OPTIMIZE compacts, VACUUM deletes, the rows stay, delta-rs still
reads, and the session gets its retention check back."""

from __future__ import annotations

from pathlib import Path

import pytest
from deltalake import DeltaTable

from aspen.errors import ConfigError
from aspen.lake import tables
from aspen.lake.deltars import commit_after
from aspen.lake.housekeeping import RETENTION_CHECK, housekeep
from aspen.settings import Settings
from aspen.spark.session import temporary_conf

pytestmark = pytest.mark.spark


def test_housekeeping_compacts_and_vacuums_every_table_and_restores_the_check(
        spark, lake: Settings) -> None:
    tables.ensure_table(spark, lake, "link")  # the only table of this lake
    schema = tables.schema_of("link")
    for day in range(3):  # three appends: three small files
        row = {field: None for field in schema.fieldNames()} | {"src": f"a{day}", "dst": "b"}
        spark.createDataFrame([row], schema).write.format("delta").mode("append").save(
            lake.table_uri("link"))
    assert len(DeltaTable(lake.table_uri("link")).file_uris()) == 3
    # Delta's default, which refuses a 0-hour VACUUM (the test session's own setting after)
    with temporary_conf(spark, {RETENTION_CHECK: "true"}):
        report = housekeep(spark, lake, retain_hours=0)
        assert spark.conf.get(RETENTION_CHECK) == "true"  # back as it was

    assert report.compacted["link"] == 3 and report.vacuumed["link"] >= 3
    assert set(report.compacted) == {"link"}  # only the tables that exist
    link = DeltaTable(lake.table_uri("link"))
    assert len(link.file_uris()) == 1 and link.protocol().min_reader_version == 1
    assert sorted(link.to_pandas()["src"]) == ["a0", "a1", "a2"]
    folder = lake.local_table_path("link")  # the three small files are gone from storage too
    assert folder is not None and len(list(Path(folder).glob("*.parquet"))) == 1
    assert report.lines()[0].split()[0] in report.compacted

    # the count is found past another writer's commit after the VACUUM
    start = min(e["version"] for e in link.history() if e["operation"] == "VACUUM START")
    spark.createDataFrame([row], schema).write.format("delta").mode("append").save(
        lake.table_uri("link"))
    end = commit_after(lake, "link", start - 1, "VACUUM END")
    assert end is not None and end["version"] < DeltaTable(lake.table_uri("link")).version()
    assert int(end["operationMetrics"]["numDeletedFiles"]) == report.vacuumed["link"]


def test_a_negative_retention_is_refused(spark, lake: Settings) -> None:
    with pytest.raises(ConfigError, match="--retain-hours must be ≥ 0"):
        housekeep(spark, lake, retain_hours=-1)
