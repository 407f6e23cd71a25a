"""AppTest of every dashboard page: empty lake, and a small lake written with delta-rs (no
Spark)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pandas as pd
import pytest
from dashboard_apptest import open_page
from deltalake import write_deltalake

APP = str(Path(__file__).resolve().parents[2] / "dashboards" / "app.py")
PAGES = ("pages/overview.py", "pages/network.py", "pages/quarantine.py")
NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def _links() -> pd.DataFrame:
    rows = [("a", "b", 1.0, 0), ("b", "c", 2.0, 1), ("c", "a", 4.5, 2), ("a", "b", 3.0, 3)]
    return pd.DataFrame(
        {
            "src": [r[0] for r in rows],
            "dst": [r[1] for r in rows],
            "cost": [r[2] for r in rows],
            "var": [f"link#{r[3]}" for r in rows],
            "inserted_at": [NOW] * len(rows),
            "expires_at": [NOW + dt.timedelta(minutes=10)] * len(rows),
            "batch_id": ["b1"] * len(rows),
        }
    )


def _quarantine() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "batch_id": ["b1", "b1", "b2"],
            "source": ["in.jsonl", "in.jsonl", "more.csv"],
            "line": [3, 7, 2],
            "raw": ['{"op": "insert"}', "not json", "x,y"],
            "reason": ["missing relation", "not valid JSON", "missing relation"],
            "ingested_at": [NOW] * 3,
        }
    )


@pytest.fixture
def small_lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    lake = tmp_path / "lake"
    write_deltalake(str(lake / "link"), _links().iloc[:2])
    write_deltalake(str(lake / "link"), _links().iloc[2:], mode="append")  # version 1
    write_deltalake(str(lake / "quarantine"), _quarantine())
    summary = pd.DataFrame(
        {"name": ["link"], "version": [1], "row_count": [4], "published_at": [NOW]}
    )
    write_deltalake(str(lake / "summary"), summary)
    monkeypatch.setenv("ASPEN_LAKE", str(lake))
    return lake


@pytest.mark.parametrize("page", PAGES)
def test_empty_lake_shows_a_message_not_a_traceback(empty_lake: Path, page: str) -> None:
    app = open_page(None if page == PAGES[0] else page)
    assert len(app.info) == 1
    assert "yet" in app.info[0].value
    assert not app.error


def test_overview_lists_versions_and_row_counts(small_lake: Path) -> None:
    app = open_page("pages/overview.py")
    assert app.title[0].value == "Overview"
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Tables"] == "3"  # link, quarantine, summary
    assert metrics["Rows"] == str(4 + 3 + 1)
    tables = app.dataframe[0].value.set_index("table")
    assert tables.loc["link", "version"] == 1
    assert tables.loc["link", "rows"] == 4
    assert tables.loc["quarantine", "rows"] == 3
    assert "updates" not in tables.index  # missing tables are simply not listed
    published = app.dataframe[1].value
    assert list(published["name"]) == ["link"]


def test_network_draws_live_links_and_filters_by_node(small_lake: Path) -> None:
    app = open_page("pages/network.py")
    metrics = {m.label: m.value for m in app.metric}
    assert metrics == {"Nodes": "3", "Links": "3"}  # two instances of a→b are one link
    dot = app.get("graphviz_chart")[0].proto.spec
    assert '"a" -> "b" [label="1"]' in dot  # cheapest live instance
    assert '"c" -> "a"' in dot

    app.selectbox[0].select("c").run()
    assert not app.exception
    dot = app.get("graphviz_chart")[0].proto.spec
    assert '"b" -> "c"' in dot and '"c" -> "a"' in dot
    assert '"a" -> "b"' not in dot
    assert set(app.dataframe[0].value["src"]) == {"b", "c"}


def test_network_with_an_empty_link_table(small_lake: Path) -> None:
    write_deltalake(str(small_lake / "link"), _links().iloc[:0], mode="overwrite")
    app = open_page("pages/network.py")
    assert len(app.info) == 1 and "no live links" in app.info[0].value
    assert not app.get("graphviz_chart")


def test_quarantine_shows_records_and_reasons(small_lake: Path) -> None:
    app = open_page("pages/quarantine.py")
    assert app.metric[0].value == "3"
    by_reason = app.dataframe[0].value.set_index("reason")["records"].to_dict()
    assert by_reason == {"missing relation": 2, "not valid JSON": 1}
    app.multiselect[0].select("not valid JSON").run()
    records = app.dataframe[1].value
    assert list(records["raw"]) == ["not json"]


def test_a_new_commit_is_seen_on_rerun(small_lake: Path) -> None:
    app = open_page("pages/network.py")
    assert {m.label: m.value for m in app.metric}["Links"] == "3"
    extra = _links().iloc[:1].assign(src="d", dst="a", var="link#9")
    write_deltalake(str(small_lake / "link"), extra, mode="append")
    app.run()
    assert {m.label: m.value for m in app.metric}["Links"] == "4"
