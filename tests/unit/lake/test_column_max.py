"""``column_max``: a column's largest value from the Delta log's file statistics alone."""

from __future__ import annotations

import pandas as pd
import pytest
from deltalake import write_deltalake
from hypothesis import given, settings
from hypothesis import strategies as st

from aspen.errors import LakeError
from aspen.lake.deltars import column_max, read_table, write_table
from aspen.settings import Settings

BATCHES = st.lists(st.none() | st.integers(0, 10**6), min_size=1, max_size=8)


@settings(max_examples=25, deadline=None)
@given(files=st.lists(BATCHES, min_size=1, max_size=4))
def test_the_maximum_over_files_is_the_maximum_of_the_rows(tmp_path_factory, files) -> None:
    lake = Settings(lake=str(tmp_path_factory.mktemp("lake")))
    for i, values in enumerate(files):  # one file per append, some all null
        write_table(lake, "t", pd.DataFrame({"batch": pd.array(values, dtype="Int64")}),
                    mode="overwrite" if i == 0 else "append")
    rows = read_table(lake, "t")["batch"].dropna()
    assert column_max(lake, "t", "batch") == (int(rows.max()) if len(rows) else None)


def test_a_table_without_statistics_for_the_column_does_not_guess(tmp_path) -> None:
    lake = Settings(lake=str(tmp_path / "lake"))
    frame = pd.DataFrame({"batch": pd.array([4, 9], dtype="Int64")})
    write_deltalake(lake.table_uri("t"), frame,
                    configuration={"delta.dataSkippingNumIndexedCols": "0"})
    with pytest.raises(LakeError, match="statistics|maximum"):
        column_max(lake, "t", "batch")
