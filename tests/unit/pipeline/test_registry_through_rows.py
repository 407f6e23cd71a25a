"""The registry's last batch from rows already read (``registry_through_rows``) agrees with the
maintainer's form from the Delta log (``registry_through``)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aspen.lake.deltars import write_table
from aspen.pipeline.batch import registry_through, registry_through_rows
from aspen.settings import Settings

batches = st.lists(st.one_of(st.none(), st.integers(0, 10_000)), min_size=1, max_size=20)


@given(born=batches, died=batches)
def test_rows_give_the_largest_known_batch(born: list[int | None], died: list[int | None]) -> None:
    size = min(len(born), len(died))
    frame = pd.DataFrame({"inserted_batch": pd.array(born[:size], dtype="Int64"),
                          "deleted_batch": pd.array(died[:size], dtype="Int64")})
    known = [b for b in born[:size] + died[:size] if b is not None]
    assert registry_through_rows(frame) == max(known, default=-1)


@settings(max_examples=5, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(born=batches, died=batches)
def test_the_log_form_and_the_rows_form_agree(tmp_path: Path, born: list[int | None],
                                              died: list[int | None]) -> None:
    size = min(len(born), len(died))
    frame = pd.DataFrame({"inserted_batch": pd.array(born[:size], dtype="Int64"),
                          "deleted_batch": pd.array(died[:size], dtype="Int64")})
    lake = Settings(lake=str(tmp_path / f"lake{abs(hash((tuple(born), tuple(died))))}"))
    write_table(lake, "variables", frame, mode="overwrite")
    assert registry_through(lake) == registry_through_rows(frame)


def test_no_rows_no_batch() -> None:
    assert registry_through_rows(None) == -1
    empty = pd.DataFrame({"inserted_batch": pd.array([], dtype="Int64")})
    assert registry_through_rows(empty) == -1
    assert registry_through_rows(pd.DataFrame({"other": [3]})) == -1
