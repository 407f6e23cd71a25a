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
PAGES = ("pages/overview.py", "pages/network.py", "pages/quarantine.py", "pages/internals.py")
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


def test_internals_lists_versions_and_row_counts(small_lake: Path) -> None:
    app = open_page("pages/internals.py")
    assert app.title[0].value == "Internals"
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Tables"] == "3"  # link, quarantine, summary
    tables = app.dataframe[0].value.set_index("table")
    assert tables.loc["link", "Delta version"] == 1
    assert tables.loc["link", "rows"] == 4
    assert tables.loc["quarantine", "rows"] == 3
    assert "updates" not in tables.index  # missing tables are simply not listed
    published = app.dataframe[2].value
    assert list(published["table"]) == ["link"]


def test_overview_of_a_lake_without_batches_says_so(small_lake: Path) -> None:
    app = open_page("pages/overview.py")
    assert app.title[0].value == "Overview"
    assert app.warning[0].value.splitlines()[2] == "- no batch has been maintained yet"
    assert not app.dataframe  # the table list is on the Internals page


def _map_hover(app) -> set[str]:
    """Every line of the network map's link hover texts (``a → b, 1 ms``)."""
    import json

    (chart,) = app.get("plotly_chart")
    (links,) = [t for t in json.loads(chart.proto.spec)["data"] if t.get("name") == "links"]
    return {line for text in links["hovertext"] for line in text.split("<br>")}


def test_network_draws_live_links_and_filters_by_node(small_lake: Path) -> None:
    app = open_page("pages/network.py")
    metrics = {m.label: m.value for m in app.metric}
    # two instances of a→b are one link; no registry: no recently dead links
    assert metrics == {"Nodes in all": "3", "Live links in all": "3",
                       "Recently dead links in all": "0"}
    assert _map_hover(app) == {"a → b, 1 ms", "b → c, 2 ms", "c → a, 4.5 ms"}  # cheapest cost
    assert app.dataframe[0].value.set_index(["from", "to"]).loc[("a", "b"), "live copies"] == 2

    app.selectbox(key="network_focus").select("c").run()
    assert not app.exception
    assert {m.label: m.value for m in app.metric}["Live links in view"] == "2"
    assert set(app.dataframe[0].value["from"]) == {"b", "c"}
    assert _map_hover(app) == {"a → b, 1 ms", "b → c, 2 ms", "c → a, 4.5 ms"}  # all still drawn


def test_network_with_an_empty_link_table(small_lake: Path) -> None:
    write_deltalake(str(small_lake / "link"), _links().iloc[:0], mode="overwrite")
    app = open_page("pages/network.py")
    assert len(app.info) == 1 and "no live links" in app.info[0].value
    assert not app.get("plotly_chart")


def test_quarantine_shows_records_and_reasons(small_lake: Path) -> None:
    app = open_page("pages/quarantine.py")
    assert app.metric[0].value == "3"
    by_reason = app.dataframe[0].value.set_index("reason")  # no code: the message
    assert by_reason["records"].to_dict() == {"missing relation": 2, "not valid JSON": 1}
    assert by_reason.loc["missing relation", "latest batch"] == "b2"
    assert by_reason.loc["missing relation", "example"] == "more.csv line 2: missing relation"
    app.multiselect[0].select("not valid JSON").run()
    records = app.dataframe[1].value
    assert list(records["record"]) == ["not json"]


def test_a_new_commit_is_seen_on_rerun(small_lake: Path) -> None:
    app = open_page("pages/network.py")
    assert {m.label: m.value for m in app.metric}["Live links in all"] == "3"
    extra = _links().iloc[:1].assign(src="d", dst="a", var="link#9")
    write_deltalake(str(small_lake / "link"), extra, mode="append")
    app.run()
    assert {m.label: m.value for m in app.metric}["Live links in all"] == "4"
