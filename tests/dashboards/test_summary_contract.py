"""Contract: the ``summary`` table Spark publishes is one delta-rs (the dashboard) can read."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from deltalake import DeltaTable, write_deltalake

from aspen.lake.summary import SUMMARY_COLUMNS, publish_summary
from aspen.settings import Settings

pytestmark = pytest.mark.spark


def test_publish_summary_is_reader_v1_and_counts_every_table(spark, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    links = pd.DataFrame({"src": ["a", "b"], "dst": ["b", "c"], "cost": [1.0, 2.0]})
    write_deltalake(str(lake / "link"), links)
    write_deltalake(str(lake / "link"), links.iloc[:1], mode="append")  # version 1, 3 rows
    spark.createDataFrame([("r1", "s7")], "region string, id string").write.format("delta").save(
        str(lake / "region_seed")
    )
    (lake / "not_a_table").mkdir()
    settings = Settings(lake=str(lake))

    first = publish_summary(spark, settings)
    assert [(r.name, r.version, r.row_count) for r in first] == [
        ("link", 1, 3),
        ("region_seed", 0, 1),
    ]
    second = publish_summary(spark, settings)  # overwrite; summary never lists itself
    assert [r.name for r in second] == ["link", "region_seed"]

    table = DeltaTable(settings.table_uri("summary"))
    protocol = table.protocol()
    assert protocol.min_reader_version == 1 and not protocol.reader_features
    frame = table.to_pandas().sort_values("name")
    assert tuple(frame.columns) == SUMMARY_COLUMNS
    assert list(frame["row_count"]) == [3, 1]
    assert str(frame["published_at"].dt.tz) == "UTC"
    assert table.version() == 1


def test_publish_summary_on_a_missing_lake_writes_an_empty_summary(spark, tmp_path: Path) -> None:
    settings = Settings(lake=str(tmp_path / "nothing"))
    assert publish_summary(spark, settings) == []
    assert DeltaTable(settings.table_uri("summary")).to_pandas().empty
