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
    assert app.selectbox[0].options == ["Reachable pair"]  # the only view table in this lake
    assert app.selectbox[1].options == ["a", "b", "c"]  # every node, for why and why not
    app.selectbox[1].select("a").run()
    assert app.selectbox[2].options == ["a", "b", "c"]
    app.selectbox[2].select("c").run()
    assert not app.exception, app.exception

    assert [h.value for h in app.subheader] == ["Why can `a` reach `c`?"]
    witnesses = app.dataframe[0].value
    assert len(witnesses) == 2
    assert sorted(witnesses["links"]) == ["a → b (1 ms), b → c (2 ms)", "a → c (5 ms)"]
    assert sorted(witnesses["route"]) == ["a → b → c", "a → c"]
    assert any("No single lost link removes the pair" in m.value for m in app.markdown)


def test_why_of_a_single_link_names_it_critical(provenance_lake: Path) -> None:
    app = open_page(WHY)
    app.selectbox[1].select("a").run()
    app.selectbox[2].select("b").run()
    assert len(app.dataframe[0].value) == 1
    assert any("Losing any of these links removes the pair" in m.value
               and m.value.endswith("`a` → `b` (1 ms)") for m in app.markdown)


