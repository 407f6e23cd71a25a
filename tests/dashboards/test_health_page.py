"""AppTest of the Pipeline health page: ledger, metrics, expectation results, quarantine link.

The populated lake extends ``provenance_lake`` of the Why/What-if tests with three committed
batches, the metrics of a fourth batch that has no ledger row yet (in progress), and expectation
results of two batches; written with delta-rs, no Spark.
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pandas as pd
import pytest
from dashboard_apptest import open_page
from streamlit.testing.v1 import AppTest
from test_dashboard_provenance_pages import provenance_lake  # noqa: F401  (fixture)

from aspen.lake.deltars import write_table
from aspen.settings import Settings

HEALTH = "pages/health.py"
START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
#: batch → (updates_in, wall_seconds, messages of node -1, state_bytes of node -1)
BATCHES = {1: (240, 4.0, 900.0, 5000.0), 2: (12, 0.5, 960.0, 5100.0), 3: (7, 0.25, 990.0, 4900.0)}


def _ledger(runtime: str = "local") -> pd.DataFrame:
    return pd.DataFrame(
        {
            "batch_id": list(BATCHES),
            "through_ingest_batch": [b - 1 for b in BATCHES],
            "runtime": [runtime] * 3,
            "partitions": [4] * 3,
            "mode": ["lazy"] * 3,
            "updates_in": [v[0] for v in BATCHES.values()],
            "view_changes_out": [100, 5, 3],
            "committed_at": [START + dt.timedelta(minutes=b) for b in BATCHES],
        }
    )


def _metrics() -> pd.DataFrame:
    rows = []
    for batch, (updates, wall, messages, state) in [*BATCHES.items(), (4, (1, 9.0, 1.0, 1.0))]:
        rows += [
            (batch, -1, "wall_seconds", wall),
            (batch, -1, "updates_in", float(updates)),
            (batch, -1, "messages", messages),
            (batch, -1, "state_bytes", state),
            (batch, 0, "messages", messages / 3),  # one node's share: never plotted as a total
            (batch, 0, "state_bytes", 1.0),
        ]
    return pd.DataFrame(rows, columns=["batch_id", "node", "metric", "value"])


def _results(failing: bool) -> pd.DataFrame:
    rows = [
        (2, "link_suite", "link", "expect_column_values_to_not_be_null", True, "0 nulls"),
        (3, "link_suite", "link", "expect_column_values_to_not_be_null", True, "0 nulls"),
        (3, "link_suite", "link", "expect_column_values_to_be_between", not failing, "min -1.0"),
        (3, "views_suite", "reachable", "expect_table_row_count_to_be_between", True, "3 rows"),
    ]
    frame = pd.DataFrame(
        rows, columns=["batch_id", "suite", "table", "expectation", "success", "observed"]
    )
    return frame.assign(checked_at=START)


@pytest.fixture
def health_lake(provenance_lake: Path) -> Path:  # noqa: F811
    settings = Settings(lake=str(provenance_lake))
    write_table(settings, "ledger", _ledger())
    write_table(settings, "metrics", _metrics())
    write_table(settings, "expectation_results", _results(failing=True))
    quarantine = pd.DataFrame({"batch_id": [1, 1], "reason": ["bad", "bad"], "raw": ["x", "y"]})
    write_table(settings, "quarantine", quarantine)
    return provenance_lake


def _numbers(app: AppTest) -> pd.DataFrame:
    for element in app.dataframe:
        if "through ingest batch" in element.value.columns:
            return element.value.set_index("batch")
    raise AssertionError("no per-batch table")


def test_health_shows_committed_batches_with_their_totals(health_lake: Path) -> None:
    app = open_page(HEALTH)
    assert app.title[0].value == "Pipeline health"
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Batches committed"] == "3"
    assert metrics["Last batch"] == "3"
    assert metrics["Last wall time"] == "0.25 s"
    assert metrics["Last commit"].startswith("2026-01-01 00:03")
    numbers = _numbers(app)
    assert list(numbers.index) == [1, 2, 3]  # batch 4 has no ledger row: not a committed batch
    assert numbers["state bytes"].tolist() == [5000.0, 5100.0, 4900.0]  # totals (node -1) only
    assert numbers["updates in"].tolist() == [240, 12, 7]
    assert numbers["wall time (s)"].tolist() == [4.0, 0.5, 0.25]
    assert not numbers["slow"].any()
    # the local runtime's messages add up over batches: no batch's count, not shown per batch
    assert numbers["messages"].isna().all()
    assert any("add up over batches" in c.value for c in app.caption)
    assert any("Batch(es) 4" in c.value and "no ledger row" in c.value for c in app.caption)
    titles = [m.value for m in app.markdown]
    assert titles == ["**Updates in per batch**", "**Operator state (bytes)**"]
    # wall time, batches over time, and the two per-batch charts
    assert len(app.get("vega_lite_chart")) == 1 + 1 + 2


def test_a_runtime_counting_per_batch_has_its_messages_charted(health_lake: Path) -> None:
    write_table(Settings(lake=str(health_lake)), "ledger", _ledger(runtime="spark"))
    app = open_page(HEALTH)
    assert _numbers(app)["messages"].tolist() == [900.0, 960.0, 990.0]  # totals (node -1) only
    assert "**Messages (rows) shipped between nodes per batch**" in [m.value for m in app.markdown]
    assert not any("add up over batches" in c.value for c in app.caption)
    assert len(app.get("vega_lite_chart")) == 1 + 1 + 3


def test_failed_expectations_come_first_under_a_red_banner(health_lake: Path) -> None:
    app = open_page(HEALTH)
    (banner,) = app.error
    assert banner.value == "1 of 3 expectation(s) FAILED in batch 3."
    results = next(d.value for d in app.dataframe if "expectation" in d.value.columns)
    assert len(results) == 3  # the latest result of each expectation
    assert results["passed"].tolist() == [False, True, True]
    assert not results["stale"].any()  # all of batch 3, the last committed
    assert results["expectation"].iloc[0] == "expect_column_values_to_be_between"
    assert results["observed"].iloc[0] == "min -1.0"
    assert not app.success


def test_all_expectations_passing_is_a_green_note(health_lake: Path) -> None:
    write_table(Settings(lake=str(health_lake)), "expectation_results", _results(failing=False))
    app = open_page(HEALTH)
    assert not app.error
    assert app.success[0].value == "All 3 expectation(s) passed in batch 3."


def test_missing_expectation_results_and_the_quarantine_link(health_lake: Path) -> None:
    shutil.rmtree(health_lake / "expectation_results")
    app = open_page(HEALTH)
    assert [i.value for i in app.info] == [
        "No expectation results yet (the pipeline's expectations step writes them)."
    ]
    assert {m.label: m.value for m in app.metric}["Quarantined records"] == "2"
    (link,) = app.get("page_link")
    assert link.proto.page == "quarantine" and link.proto.page_script_hash  # a registered page


def test_health_on_an_empty_lake_says_so(empty_lake: Path) -> None:
    app = open_page(HEALTH)
    assert not app.error and not app.warning
    messages = [i.value for i in app.info]
    assert len(messages) == 2
    assert "No `ledger` table yet" in messages[0]
    assert "No expectation results yet" in messages[1]
    assert not app.get("vega_lite_chart")


def test_health_with_an_empty_ledger_says_a_batch_may_be_in_progress(health_lake: Path) -> None:
    write_table(Settings(lake=str(health_lake)), "ledger", _ledger().iloc[:0])
    app = open_page(HEALTH)
    assert any("no committed batch yet" in i.value for i in app.info)
    assert not app.get("vega_lite_chart")


def test_health_without_metrics_still_lists_the_batches(health_lake: Path) -> None:
    shutil.rmtree(health_lake / "metrics")
    app = open_page(HEALTH)
    assert {m.label: m.value for m in app.metric}["Last wall time"] == "–"
    assert any("No `metrics` rows yet" in c.value for c in app.caption)
    assert _numbers(app)["wall time (s)"].isna().all()
    assert len(app.get("vega_lite_chart")) == 1 + 1  # over time, updates per batch
