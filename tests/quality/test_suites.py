"""The suites without a lake or Spark: what they contain, how frames are judged, empty lakes."""

from __future__ import annotations

import pandas as pd
import pytest

from aspen.lake.deltars import read_table
from aspen.quality import ALL_SUITES, RESULTS_TABLE, run_expectations
from aspen.quality.derived import add_path_columns
from aspen.quality.gx_validate import GxValidator
from aspen.quality.spec import SuiteParams
from aspen.quality.views import VIEW_SUITES
from aspen.settings import Settings

VIEWS = {s.table: s for s in VIEW_SUITES}


def _cheapest_path_frame(**changes) -> pd.DataFrame:
    frame = pd.DataFrame(
        {
            "src": ["a", "a"],
            "dst": ["c", "c"],
            "path": [["a", "b", "c"], ["a", "c"]],
            "cost": [2.0, 2.0],
            "provenance": [b"\xa5abc", b"\xa5ab"],
            "prov_bytes": [4, 3],
            "batch_id": [1, 1],
            "node": [0, 0],
        }
    )
    return frame.assign(**changes)


def _failed(frame: pd.DataFrame, view: str = "cheapest_path", batch: int = 1) -> set[str]:
    outcomes = GxValidator().validate(VIEWS[view], frame, SuiteParams(batch))
    return {o.expectation for o in outcomes if not o.success}


def test_every_table_has_one_suite_and_every_suite_checks_its_schema() -> None:
    tables = [s.table for s in ALL_SUITES]
    assert len(tables) == len(set(tables)) == 22
    for suite in ALL_SUITES:
        assert suite.describe()[0] == "expect_table_columns_to_match_set"


def test_a_good_frame_passes_and_ties_are_not_duplicates() -> None:
    assert _failed(_cheapest_path_frame()) == set()


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"path": [["a", "b", "c"], ["a", "c", "a", "c"]]},
         "expect_column_values_to_be_between(path_repeated_nodes)"),
        ({"path": [["a", "b", "c"], ["a"]]}, "expect_column_values_to_be_between(path_edges)"),
        ({"path": [["a", "b", "c"], ["a", "c"]], "dst": ["c", "b"]},
         "expect_column_pair_values_to_be_equal(path_last_node, dst)"),
        ({"path": [["a", "c"], ["a", "c"]]},
         "expect_compound_columns_to_be_unique(src, dst, path_text)"),
        ({"prov_bytes": [4, 9]},
         "expect_column_pair_values_to_be_equal(prov_bytes, provenance_length)"),
        ({"cost": ["2", "2"]}, "expect_column_values_to_be_in_type_list(cost)"),
    ],
)
def test_path_and_provenance_rules(changes, expected) -> None:
    assert expected in _failed(_cheapest_path_frame(**changes))


def test_an_empty_table_passes() -> None:
    assert _failed(_cheapest_path_frame().iloc[0:0]) == set()


def test_derived_path_columns_of_null_and_missing_paths() -> None:
    frame = add_path_columns(pd.DataFrame({"path": [None, ["x", "y"]]}), "path")
    assert frame["path_first_node"].tolist() == [None, "x"]
    assert frame["path_edges"].isna().tolist() == [True, False]
    missing = add_path_columns(pd.DataFrame({"src": ["a"]}), "path")
    assert missing["path_text"].tolist() == [None]


def test_an_empty_lake_is_skipped_and_recorded_for_batch_0(tmp_path) -> None:
    lake = Settings(lake=str(tmp_path / "lake"))
    report = run_expectations(lake)
    assert report.success and report.batch_id == 0
    assert len(report.skipped) == 22 and report.failures == []
    assert all(o.expectation == "aspen_table_exists" for o in report.outcomes)
    results = read_table(lake, RESULTS_TABLE)
    assert set(results["batch_id"]) == {0} and results["success"].all()
    assert results["observed"].str.startswith("skipped: ").all()
    assert "22 table(s) skipped" in report.lines()[0]
