"""text_field: string filters on tables whose files mix string and string_view columns (a
delta-rs MERGE writes string_view, Spark and appends write string)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable, write_deltalake

from aspen.lake.deltars import text_field


@pytest.fixture
def merged_table(tmp_path: Path) -> DeltaTable:
    """A table of one appended file (string) and one merged file whose ``death`` column holds
    a single value (string_view, statistics min == max)."""
    uri = str(tmp_path / "variables")
    schema = pa.schema([("key", pa.string()), ("death", pa.string())])
    write_deltalake(uri, pa.table({"key": ["a", "b"], "death": [None, None]}, schema=schema))
    write_deltalake(uri, pa.table({"key": ["c"], "death": ["deleted"]}, schema=schema),
                    mode="append")
    DeltaTable(uri).merge(pa.table({"key": ["a"], "death": ["expired"]}, schema=schema),
                          "s.key = t.key", source_alias="s", target_alias="t") \
        .when_matched_update_all().execute()
    return DeltaTable(uri)


def test_the_table_really_mixes_string_types(merged_table: DeltaTable) -> None:
    types = {str(fragment.physical_schema.field("death").type)
             for fragment in merged_table.to_pyarrow_dataset().get_fragments()}
    assert types == {"string", "string_view"}


def test_equality_and_membership_filter_every_file(merged_table: DeltaTable) -> None:
    dataset = merged_table.to_pyarrow_dataset()
    expired = dataset.to_table(filter=text_field("death") == "expired")
    assert expired.column("key").to_pylist() == ["a"]
    not_expired = dataset.to_table(filter=text_field("death").is_null()
                                   | (text_field("death") != "expired"))
    assert sorted(not_expired.column("key").to_pylist()) == ["b", "c"]
    keyed = dataset.to_table(filter=text_field("key").isin(["a", "c"]))
    assert sorted(keyed.column("key").to_pylist()) == ["a", "c"]


def test_a_plain_field_is_what_fails(merged_table: DeltaTable) -> None:
    """The reason text_field exists: drop the cast and pyarrow has no kernel for the pair. If
    a pyarrow upgrade makes this pass, text_field can go."""
    with pytest.raises(pa.ArrowNotImplementedError):
        merged_table.to_pyarrow_dataset().to_table(filter=pc.field("death") == "expired")
