"""AppTest of the What-if page on the literal lake of ``test_network_what_if_why_pages``
(live links a→b 1 ms, b→c 2 ms, a→c 5 ms; sensors s1–s6, regions r1 and r2), with the
``min_cost`` view added: (a, b) 1 ms, (b, c) 2 ms, (a, c) 3 ms through b.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
from dashboard_apptest import commit_views, open_page
from streamlit.testing.v1 import AppTest
from test_network_what_if_why_pages import _instances
from test_network_what_if_why_pages import lake as base_lake  # noqa: F401  (fixture)

from aspen.lake.deltars import write_table
from aspen.pipeline.lake_provenance import provenance_versions, shared_provenance
from aspen.pipeline.view_tables import view_frame
from aspen.provenance.bdd import ProvenanceManager
from aspen.settings import Settings

WHAT_IF = "pages/what_if.py"
AB, BC, AC = "a → b (1 ms)", "b → c (2 ms)", "a → c (5 ms)"


@pytest.fixture
def lake(base_lake: Path) -> Path:  # noqa: F811
    settings = Settings(lake=str(base_lake))
    manager = ProvenanceManager()
    v1, v2 = manager.var("v1"), manager.var("v2")
    formulas = {("a", "b", 1.0): v1, ("b", "c", 2.0): v2, ("a", "c", 3.0): manager.and_(v1, v2)}
    write_table(settings, "min_cost", view_frame("min_cost", formulas, manager, batch_id=1))
    commit_views(settings.lake)
    return base_lake


def _simulate(app: AppTest, sensors: list[str] = (), links: list[str] = ()) -> AppTest:
    app.multiselect(key="whatif_sensors").set_value(list(sensors)).run()
    if links:
        app.multiselect(key="whatif_links").set_value(list(links)).run()
    next(b for b in app.button if b.label == "Simulate").click().run()
    assert not app.exception, app.exception
    return app


def _frame(app: AppTest, first_column: str, nth: int = 0) -> pd.DataFrame:
    found = [e.value for e in app.dataframe if list(e.value.columns)[:1] == [first_column]]
    if len(found) <= nth:
        raise AssertionError(f"no dataframe {nth} starting with column {first_column!r}")
    return found[nth]


def _lost(app: AppTest) -> dict[str, int]:
    return _frame(app, "view").set_index("view")["rows lost"].to_dict()


def test_links_are_offered_in_words_with_their_cost(lake: Path) -> None:
    app = open_page(WHAT_IF)
    assert app.multiselect(key="whatif_sensors").options == ["s1", "s2", "s3", "s4", "s5", "s6"]
    assert set(app.multiselect(key="whatif_links").options) == {AB, BC, AC}
    assert not app.dataframe  # nothing is simulated before the button


def _metrics(app: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in app.metric}


def test_a_costlier_pair_is_told_apart_from_a_disconnected_one(lake: Path) -> None:
    app = _simulate(open_page(WHAT_IF), links=[BC])
    metrics = _metrics(app)
    assert metrics["Pairs disconnected"] == "1 of 3 (33.3 %)"  # (b, c); a → c is left for (a, c)
    assert metrics["Pairs rerouted"] == "1"
    assert metrics["Added latency, median"] == "+2 ms"  # 3 ms through b, now 5 ms over a → c
    assert metrics["Routers isolated"] == "0"
    assert _frame(app, "from", 0).values.tolist() == [["a", "c", "3 ms", "5 ms", "+2 ms"]]
    # the expert details: rows per view, and the reachable and min_cost rows lost
    assert _lost(app) == {"Reachable pairs": 1, "Cheapest cost of a pair": 2,
                          "Region members": 0}
    costs = _frame(app, "from", 2).set_index(["from", "to"])
    assert costs.loc[("a", "c"), "before"] == "3 ms"
    assert costs.loc[("a", "c"), "after"] == "now 5 ms"  # over a → c: costlier, not cut off
    assert costs.loc[("b", "c"), "after"] == "disconnected"
    reach = _frame(app, "from", 1)
    assert reach.values.tolist() == [["b", "c"]]
    both = _simulate(open_page(WHAT_IF), links=[BC, AC])
    assert _metrics(both)["Pairs disconnected"] == "2 of 3 (66.7 %)"
    assert _metrics(both)["Pairs rerouted"] == "0"
    assert _metrics(both)["Added latency, median"] == "–"
    after = _frame(both, "from", 1).set_index(["from", "to"])["after"].to_dict()
    assert after == {("a", "c"): "disconnected", ("b", "c"): "disconnected"}


def test_failing_s2_loses_only_that_member(lake: Path) -> None:
    app = _simulate(open_page(WHAT_IF), ["s2"])
    assert _lost(app)["Region members"] == 1  # s3 stays through s4
    regions = _frame(app, "region")
    assert list(regions.columns) == ["region", "sensors", "lost", "kept", "gone", "sensors lost"]
    assert regions.values.tolist() == [["r1", 4, 1, 3, False, "s2"]]
    assert _metrics(app)["Pairs disconnected"] == "0 of 3 (0 %)"  # a sensor is no link
    # its sensor and triggered instances; one region member lost
    assert any(re.match(r"2 base tuple instance\(s\) deleted; 1 view rows lost", c.value)
               for c in app.caption)
    assert any(re.match(r"From the stored provenance, answered in \d+ ms", c.value)
               for c in app.caption)


def test_failing_both_chains_cuts_s3_off(lake: Path) -> None:
    app = _simulate(open_page(WHAT_IF), ["s2", "s4"])
    regions = _frame(app, "region").set_index("region")
    assert regions.loc["r1", "sensors"] == 4 and regions.loc["r1", "kept"] == 1
    assert regions.loc["r1", "sensors lost"] == "s2, s3, s4"
    assert not regions.loc["r1", "gone"]


def test_an_untriggered_sensor_loses_nothing(lake: Path) -> None:
    app = _simulate(open_page(WHAT_IF), ["s6"])
    assert not app.warning
    assert _lost(app)["Region members"] == 0
    assert any(c.value.startswith("1 base tuple instance(s) deleted; 0 view rows lost")
               for c in app.caption)
    assert any("No region member would be lost" in c.value for c in app.caption)


def test_failing_a_seed_loses_its_whole_region(lake: Path) -> None:
    app = _simulate(open_page(WHAT_IF), ["s5"])
    assert _frame(app, "region").values.tolist() == [["r2", 1, 1, 0, True, "s5"]]
    assert any("gone entirely: `r2`" in m.value for m in app.markdown)


def test_a_sensor_without_a_live_instance_is_skipped_with_a_note(lake: Path) -> None:
    write_table(Settings(lake=str(lake)), "triggered",
                _instances(pd.DataFrame({"id": ["s9"]}), ["v99"]), mode="append")
    app = _simulate(open_page(WHAT_IF), ["s9", "s2"])
    assert any("sensor(s) `s9`" in c.value and "skipped" in c.value for c in app.caption)


def test_a_node_loses_every_pair_through_it(lake: Path) -> None:
    app = open_page(WHAT_IF)
    app.selectbox(key="whatif_node").select("a").run()
    next(b for b in app.button if b.label == "Simulate").click().run()
    assert not app.exception, app.exception
    assert _lost(app)["Reachable pairs"] == 2
    assert any("node `a`" in m.value or "node a" in m.value for m in app.markdown)


def test_the_answer_stays_until_the_operator_asks_again(lake: Path) -> None:
    app = _simulate(open_page(WHAT_IF), links=[BC])
    app.multiselect(key="whatif_links").set_value([AC]).run()
    assert not app.exception, app.exception
    assert _lost(app)["Reachable pairs"] == 1  # still the b → c answer
    assert any("selection changed" in i.value for i in app.info)
    next(b for b in app.button if b.label == "Simulate").click().run()
    assert _lost(app)["Reachable pairs"] == 0  # a → c alone loses nothing: a → b → c is left
    assert not any("selection changed" in i.value for i in app.info)


def test_nothing_chosen_asks_for_a_choice(lake: Path) -> None:
    app = open_page(WHAT_IF)
    next(b for b in app.button if b.label == "Simulate").click().run()
    assert not app.exception
    assert any("at least one" in i.value for i in app.info)


def test_a_cold_server_decodes_only_what_a_question_needs(lake: Path) -> None:
    settings = Settings(lake=str(lake))
    provenance = shared_provenance(settings.lake, provenance_versions(settings))
    assert provenance.warm_seconds is None  # no warming thread in AppTest
    _simulate(open_page(WHAT_IF), links=[BC])
    assert provenance.warm_seconds is None  # the page did not decode the whole lake
    # min_cost (a, b) does not mention b → c: it was not decoded
    assert provenance.decoded_count("min_cost") == 2 < len(provenance.tuples("min_cost"))
    again = _simulate(open_page(WHAT_IF), links=[AB])  # a new session: the same decoding
    assert shared_provenance(settings.lake, provenance_versions(settings)) is provenance
    assert _lost(again)["Reachable pairs"] == 1  # (a, b); (a, c) keeps a → c


def test_with_sensors_only(lake: Path) -> None:
    shutil.rmtree(lake / "link")
    app = open_page(WHAT_IF)
    assert app.multiselect(key="whatif_links").options == []
    assert not app.warning and not app.error
    assert _lost(_simulate(app, ["s3"]))["Region members"] == 1


def test_with_a_registry_but_nothing_to_delete(lake: Path) -> None:
    for name in ("link", "sensor", "triggered"):
        shutil.rmtree(lake / name)
    app = open_page(WHAT_IF)
    assert len(app.info) == 1 and "No live links or sensors" in app.info[0].value
    assert not app.button


def test_a_failed_router_disconnects_its_pairs_and_reroutes_the_rest(lake: Path) -> None:
    app = open_page(WHAT_IF)
    app.selectbox(key="whatif_node").select("b").run()
    next(b for b in app.button if b.label == "Simulate").click().run()
    assert not app.exception, app.exception
    metrics = _metrics(app)
    # a → b and b → c go with b; (a, c) keeps a → c, at 5 ms instead of 3 ms through b
    assert metrics["Pairs disconnected"] == "2 of 3 (66.7 %)"
    assert metrics["Pairs rerouted"] == "1"
    assert metrics["Added latency, median"] == "+2 ms"
    assert metrics["Routers isolated"] == "0"  # b failed itself; a and c keep a → c
    assert any("A failed router is not counted as isolated." in c.value for c in app.caption)
    domains = _frame(app, "domain")  # ids without a dot: each router is its own domain
    assert domains.set_index("domain").to_dict("index") == {
        "a": {"routers isolated": 0, "pairs disconnected": 1, "pairs rerouted": 1},
        "b": {"routers isolated": 0, "pairs disconnected": 2, "pairs rerouted": 0},
        "c": {"routers isolated": 0, "pairs disconnected": 1, "pairs rerouted": 1},
    }


def _region_view(view: str, rows: list[tuple[str, int]]) -> None:
    frame = pd.DataFrame({"region": [r for r, _ in rows], "size": [n for _, n in rows],
                          "provenance": pd.Series([None] * len(rows), dtype="object"),
                          "prov_bytes": 0, "batch_id": 1, "node": -1})
    write_table(Settings(lake=os.environ["ASPEN_LAKE"]), view, frame)


@pytest.mark.parametrize(("sensor", "sizes", "largest"), [
    ("s5", (1, 1), (0, 1)),  # r2 goes: its size row goes; r1 stays the largest
    ("s2", (1, 1), (1, 0)),  # r1 shrinks: its size row and its largest row go; r2 stays
])
def test_region_tables_count_the_rows_still_present(lake: Path, sensor: str,
                                                    sizes: tuple[int, int],
                                                    largest: tuple[int, int]) -> None:
    _region_view("region_sizes", [("r1", 4), ("r2", 1)])
    _region_view("largest_regions", [("r1", 4)])
    commit_views(str(lake))
    app = _simulate(open_page(WHAT_IF), [sensor])
    table = _frame(app, "view").set_index("view")
    assert tuple(table.loc["Region sizes", ["rows lost", "rows kept"]]) == sizes
    assert tuple(table.loc["Largest regions", ["rows lost", "rows kept"]]) == largest
