"""AppTest of the Why and What-if pages on a small lake written with delta-rs (no Spark)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from dashboard_apptest import commit_views, open_page

from aspen.lake.deltars import write_table
from aspen.pipeline.view_tables import view_frame
from aspen.provenance.bdd import ProvenanceManager
from aspen.settings import Settings

APP = str(Path(__file__).resolve().parents[2] / "dashboards" / "app.py")
WHY, WHAT_IF = "pages/why.py", "pages/what_if.py"
LINKS = [("a", "b", 1.0, "v1"), ("b", "c", 2.0, "v2"), ("a", "c", 5.0, "v3")]


@pytest.fixture
def provenance_lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    lake = tmp_path / "lake"
    settings = Settings(lake=str(lake))
    variables = pd.DataFrame(
        {
            "var": [var for *_, var in LINKS],
            "relation": ["link"] * len(LINKS),
            "key": [f"{src}:{dst}" for src, dst, *_ in LINKS],
            "values": [json.dumps([src, dst, cost]) for src, dst, cost, _ in LINKS],
            "inserted_batch": [1] * len(LINKS),
            "deleted_batch": pd.array([None] * len(LINKS), dtype="Int64"),
            "expires_at": pd.Series([None] * len(LINKS), dtype="datetime64[us, UTC]"),
        }
    )
    write_table(settings, "variables", variables)
    links = pd.DataFrame(
        {
            "src": [r[0] for r in LINKS],
            "dst": [r[1] for r in LINKS],
            "cost": [r[2] for r in LINKS],
            "var": [r[3] for r in LINKS],
            "batch_id": [1] * len(LINKS),
        }
    )
    write_table(settings, "link", links)
    manager = ProvenanceManager()
    v1, v2, v3 = (manager.var(v) for v in ("v1", "v2", "v3"))
    formulas = {
        ("a", "b"): v1,
        ("b", "c"): v2,
        ("a", "c"): manager.or_(v3, manager.and_(v1, v2)),
    }
    write_table(settings, "reachable", view_frame("reachable", formulas, manager, batch_id=1))
    commit_views(settings.lake)
    monkeypatch.setenv("ASPEN_LAKE", str(lake))
    return lake


@pytest.mark.parametrize("page", [WHY, WHAT_IF])
def test_empty_lake_shows_a_message_not_a_traceback(empty_lake: Path, page: str) -> None:
    app = open_page(page)
    assert len(app.info) == 1
    assert "yet" in app.info[0].value
    assert not app.error and not app.warning


def test_why_shows_both_witnesses_of_a_to_c_and_no_critical_link(provenance_lake: Path) -> None:
    app = open_page(WHY)
    assert app.title[0].value == "Why"
    assert app.selectbox[0].options == ["reachable"]  # the only view table in this lake
    assert app.selectbox[1].options == ["a", "b"]
    app.selectbox[1].select("a").run()
    assert app.selectbox[2].options == ["b", "c"]
    app.selectbox[2].select("c").run()
    assert not app.exception, app.exception

    witnesses = app.dataframe[0].value
    assert len(witnesses) == 2
    assert sorted(witnesses["base tuples"]) == ["link(a→b), link(b→c)", "link(a→c)"]
    assert any("No critical base tuple" in m.value for m in app.markdown)
    dot = app.get("graphviz_chart")[0].proto.spec
    assert all(f'"{s}" -> "{d}"' in dot for s, d in [("a", "b"), ("b", "c"), ("a", "c")])


def test_why_of_a_single_link_names_it_critical(provenance_lake: Path) -> None:
    app = open_page(WHY)
    app.selectbox[1].select("a").run()
    app.selectbox[2].select("b").run()
    assert len(app.dataframe[0].value) == 1
    assert any("Critical base tuples" in m.value and "link(a→b)" in m.value for m in app.markdown)
    dot = app.get("graphviz_chart")[0].proto.spec
    assert '"a" -> "b" [color=red' in dot


def test_what_if_deleting_b_to_c_loses_b_c_and_keeps_a_c(provenance_lake: Path) -> None:
    app = open_page(WHAT_IF)
    assert app.title[0].value == "What if"
    assert set(app.multiselect[0].options) == {"a→b", "b→c", "a→c"}
    assert not app.dataframe  # nothing simulated before the button
    app.multiselect[0].select("b→c").run()
    app.button[0].click().run()
    assert not app.exception, app.exception
    assert not app.warning

    summary = app.dataframe[0].value.set_index("view")
    assert summary.loc["reachable", "lost"] == 1
    assert summary.loc["reachable", "kept"] == 2
    lost = app.dataframe[1].value
    assert lost.values.tolist() == [["b", "c"]]  # (a, c) survives through a→c
    assert any("ms" in c.value and "nothing written" in c.value for c in app.caption)


def test_what_if_deleting_node_b_loses_every_tuple_through_it(provenance_lake: Path) -> None:
    app = open_page(WHAT_IF)
    app.selectbox[0].select("b").run()
    app.button[0].click().run()
    assert not app.exception, app.exception
    lost = app.dataframe[1].value
    assert sorted(map(tuple, lost.values.tolist())) == [("a", "b"), ("b", "c")]


def test_what_if_with_nothing_chosen_asks_for_a_choice(provenance_lake: Path) -> None:
    app = open_page(WHAT_IF)
    app.button[0].click().run()
    assert not app.exception
    assert len(app.info) == 1 and "at least one" in app.info[0].value
