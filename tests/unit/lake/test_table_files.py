""":func:`aspen.lake.table_files.damaged_files`: the Delta log's data files against a listing,
by the filesystem and by delta-rs' object-store listing (the path a non-local lake takes), on a
plain and a partitioned table."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from deltalake import write_deltalake

from aspen.lake import table_files
from aspen.lake.table_files import damaged_files, data_files, listing
from aspen.settings import Settings


@pytest.fixture
def tables(lake: Settings) -> Settings:
    for n in range(3):
        write_deltalake(lake.table_uri("plain"), pd.DataFrame({"a": [n, n + 1]}), mode="append")
        write_deltalake(lake.table_uri("parted"), pd.DataFrame({"node": [n, n], "v": [1, 2]}),
                        mode="append", partition_by=["node"])
    return lake


@pytest.mark.parametrize("how", ["filesystem", "store", "store-whole"])
@pytest.mark.parametrize("table", ["plain", "parted"])
def test_missing_and_truncated_files_are_found_by_either_listing(
        tables: Settings, table: str, how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    local = how == "filesystem"
    if how == "store-whole":  # one recursive listing of the table, not one per folder
        monkeypatch.setattr(table_files, "MAX_FOLDER_LISTINGS", 0)
    assert damaged_files(tables, table, local=local) == []
    (gone, _), (short, _), _ = sorted(data_files(tables, table))
    folder = Path(tables.lake) / table
    (folder / gone).unlink()
    data = (folder / short).read_bytes()
    (folder / short).write_bytes(data[:-1])
    assert sorted(damaged_files(tables, table, local=local)) == sorted(
        [(gone, "missing"), (short, "truncated")])
    first = {path for path, _ in data_files(tables, table, version=0)}  # one of the three
    assert sorted(damaged_files(tables, table, version=0, local=local)) == sorted(
        item for item in [(gone, "missing"), (short, "truncated")] if item[0] in first)


def test_both_listings_agree_and_skip_the_log(tables: Settings) -> None:
    uri = tables.table_uri("parted")
    folders = {str(Path(p).parent) for p, _ in data_files(tables, "parted")} | {""}
    by_fs, by_store = listing(uri, folders), listing(uri, folders, local=False)
    assert by_fs == by_store and by_fs
    assert not any(path.startswith("_delta_log") for path in by_fs)
    table_files.MAX_FOLDER_LISTINGS, kept = 0, table_files.MAX_FOLDER_LISTINGS
    try:
        assert listing(uri, folders, local=False) == by_fs
    finally:
        table_files.MAX_FOLDER_LISTINGS = kept
