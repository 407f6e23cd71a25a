"""AppTest of the Network, What-if and Why pages: recently dead links on the Network page,
failed sensors on the What-if page, region members on the Why page, and plain messages on empty
or partial lakes. The lake is small and literal, written with delta-rs (no Spark).

Topology: live links a→b (1), b→c (2), a→c (5). Deaths in the registry: c→d deleted in batch 3,
d→a expired in batch 4, a→d deleted in batch 1, an old b→c instance deleted in batch 4 (b→c is
live again) and an a→b instance replaced in batch 4 (the link lives on). Ingest batches 1–4.

Sensors (x, y): s1 (0, 0), s2 (15, 0), s3 (30, 0), s4 (15, 10), s5 (100, 100) triggered;
s6 (200, 200) not triggered. Region r1 is seeded at s1 and reaches s2 and s4 from s1, and s3
from s2 or from s4 (two chains); region r2 is s5 alone.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest
from dashboard_apptest import commit_views, open_page
from streamlit.testing.v1 import AppTest

from aspen.lake.deltars import write_table
from aspen.pipeline.view_tables import view_frame
from aspen.provenance.bdd import ProvenanceManager
from aspen.settings import Settings

DASHBOARDS = Path(__file__).resolve().parents[2] / "dashboards"
APP = str(DASHBOARDS / "app.py")
sys.path.insert(0, str(DASHBOARDS))
import lakeview  # noqa: E402

NETWORK, WHY, WHAT_IF = "pages/network.py", "pages/why.py", "pages/what_if.py"
NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)

#: var, src, dst, cost, inserted batch, deleted batch, death
LINK_VARS = [
    ("v1", "a", "b", 1.0, 1, None, None),
    ("v2", "b", "c", 2.0, 2, None, None),
    ("v3", "a", "c", 5.0, 1, None, None),
    ("v4", "c", "d", 1.5, 1, 3, "deleted"),
    ("v5", "d", "a", 2.5, 1, 4, "expired"),
    ("v6", "a", "d", 3.5, 1, 1, "deleted"),
    ("v7", "b", "c", 2.0, 1, 4, "deleted"),
    ("v8", "a", "b", 9.0, 1, 4, "replaced"),
]
#: id, x, y, triggered
SENSORS = [
    ("s1", 0.0, 0.0, True),
    ("s2", 15.0, 0.0, True),
    ("s3", 30.0, 0.0, True),
    ("s4", 15.0, 10.0, True),
    ("s5", 100.0, 100.0, True),
    ("s6", 200.0, 200.0, False),
]
SEEDS = [("v31", "r1", "s1"), ("v32", "r2", "s5")]


def _sensor_var(sensor: str) -> str:
    return f"v1{sensor[1:]}"


def _triggered_var(sensor: str) -> str:
    return f"v2{sensor[1:]}"


def _registry() -> pd.DataFrame:
    rows = [
        ("link", var, [src, dst, cost], born, died, death)
        for var, src, dst, cost, born, died, death in LINK_VARS
    ]
    rows += [("sensor", _sensor_var(i), [i, x, y], 1, None, None) for i, x, y, _ in SENSORS]
    rows += [("triggered", _triggered_var(i), [i], 1, None, None) for i, *_, on in SENSORS if on]
    rows += [("region_seed", var, [region, i], 1, None, None) for var, region, i in SEEDS]
    return pd.DataFrame(
        {
            "var": [r[1] for r in rows],
            "relation": [r[0] for r in rows],
            "key": [json.dumps(r[2][:2] if r[0] in ("link", "region_seed") else r[2][:1])
                    for r in rows],
            "values": [json.dumps(r[2]) for r in rows],
            "inserted_batch": [r[3] for r in rows],
            "deleted_batch": pd.array([r[4] for r in rows], dtype="Int64"),
            "expires_at": pd.Series([None] * len(rows), dtype="datetime64[us, UTC]"),
            "death": pd.array([r[5] for r in rows], dtype="string"),
        }
    )


def _instances(frame: pd.DataFrame, variables: list[str]) -> pd.DataFrame:
    return frame.assign(
        var=variables,
        inserted_at=NOW,
        expires_at=pd.Series([None] * len(frame), dtype="datetime64[us, UTC]"),
        batch_id=1,
        seq=range(len(frame)),
    )


def _region_formulas(manager: ProvenanceManager) -> dict[tuple, object]:
    def alive(sensor: str) -> object:
        return manager.and_(manager.var(_sensor_var(sensor)), manager.var(_triggered_var(sensor)))

    r1_s1 = manager.and_(manager.var("v31"), alive("s1"))
    r1_s2 = manager.and_(r1_s1, alive("s2"))
    r1_s4 = manager.and_(r1_s1, alive("s4"))
    r1_s3 = manager.and_(manager.or_(r1_s2, r1_s4), alive("s3"))
    r2_s5 = manager.and_(manager.var("v32"), alive("s5"))
    return {("r1", "s1"): r1_s1, ("r1", "s2"): r1_s2, ("r1", "s3"): r1_s3,
            ("r1", "s4"): r1_s4, ("r2", "s5"): r2_s5}


@pytest.fixture
def lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "lake"
    settings = Settings(lake=str(root))
    write_table(settings, "variables", _registry())
    live = [r for r in LINK_VARS if r[5] is None]
    links = pd.DataFrame({"src": [r[1] for r in live], "dst": [r[2] for r in live],
                          "cost": [r[3] for r in live]})
    write_table(settings, "link", _instances(links, [r[0] for r in live]))
    sensors = pd.DataFrame({"id": [s[0] for s in SENSORS], "x": [s[1] for s in SENSORS],
                            "y": [s[2] for s in SENSORS]})
    write_table(settings, "sensor", _instances(sensors, [_sensor_var(s[0]) for s in SENSORS]))
    on = [s[0] for s in SENSORS if s[3]]
    write_table(settings, "triggered",
                _instances(pd.DataFrame({"id": on}), [_triggered_var(s) for s in on]))
    write_table(settings, "ingest_files", pd.DataFrame({"source": ["f1", "f2", "f3", "expire@"],
                                                        "batch_id": [1, 2, 3, 4]}))
    manager = ProvenanceManager()
    v1, v2, v3 = (manager.var(v) for v in ("v1", "v2", "v3"))
    reachable = {("a", "b"): v1, ("b", "c"): v2, ("a", "c"): manager.or_(v3, manager.and_(v1, v2))}
    write_table(settings, "reachable", view_frame("reachable", reachable, manager, batch_id=1))
    write_table(settings, "active_region",
                view_frame("active_region", _region_formulas(manager), manager, batch_id=1))
    commit_views(settings.lake)
    monkeypatch.setenv("ASPEN_LAKE", str(root))
    return root


def _dot(app: AppTest) -> str:
    (chart,) = app.get("graphviz_chart")
    return chart.proto.spec


def _frame(app: AppTest, first_column: str) -> pd.DataFrame:
    """The first dataframe on the page whose first column is ``first_column``."""
    for element in app.dataframe:
        if list(element.value.columns)[:1] == [first_column]:
            return element.value
    raise AssertionError(f"no dataframe starting with column {first_column!r}")


def _dashed(dot: str) -> set[tuple[str, str, str]]:
    """(src, dst, colour) of every dashed edge in ``dot``."""
    return set(re.findall(r'"(\w+)" -> "(\w+)" \[style=dashed, color=(\w+)', dot))


# -- Network: live and recently dead links ---------------------------------------------------


def _map_lines(app: AppTest) -> set[str]:
    """Every line of the network map's link hover texts (``a → b, 1 ms``, ``c → d, deleted in
    batch 3``)."""
    (chart,) = app.get("plotly_chart")
    traces = json.loads(chart.proto.spec)["data"]
    (links,) = [t for t in traces if t.get("name") == "links"]
    return {line for text in links["hovertext"] for line in text.split("<br>")}


def _map_deaths(app: AppTest) -> set[tuple[str, str, str, int]]:
    """(src, dst, death, batch) of every recently dead link the map's hover texts name."""
    found = set()
    for line in _map_lines(app):
        if (parsed := re.fullmatch(r"(\w+) → (\w+), (deleted|expired) in batch (\d+)", line)):
            src, dst, death, batch = parsed.groups()
            found.add((src, dst, death, int(batch)))
    return found


def _map_trace_names(app: AppTest) -> set[str]:
    (chart,) = app.get("plotly_chart")
    return {t.get("name") for t in json.loads(chart.proto.spec)["data"]}


DASHED = {"deleted recently (dashed red)", "expired recently (dashed grey)"}


def test_network_draws_recent_deaths_dashed_beside_live_links(lake: Path) -> None:
    app = open_page(NETWORK)
    assert app.selectbox(key="network_recent").value == 3
    assert {"a → b, 1 ms", "b → c, 2 ms", "a → c, 5 ms"} <= _map_lines(app)
    # batches 2–4: c→d deleted (3), d→a expired (4); a→d died in batch 1; b→c is live again;
    # the replaced a→b instance is no death of the link
    assert _map_deaths(app) == {("c", "d", "deleted", 3), ("d", "a", "expired", 4)}
    assert DASHED <= _map_trace_names(app)
    live = _frame(app, "from")  # the live links table
    assert set(zip(live["from"], live["to"], strict=True)) == {("a", "b"), ("b", "c"), ("a", "c")}
    dead = next(e.value for e in app.dataframe if "how it died" in e.value.columns)
    assert dead[["from", "to", "how it died", "in batch"]].values.tolist() == [
        ["c", "d", "deleted", 3],
        ["d", "a", "expired", 4],
    ]
    assert {m.label: m.value for m in app.metric} == {
        "Nodes in all": "4", "Live links in all": "3", "Recently dead links in all": "2"}
    assert any("Dashed red: deleted recently; dashed grey: expired recently" in c.value
               for c in app.caption)
    assert any("Links that died in the last 3 batches are drawn: batches 2–4." in c.value
               for c in app.caption)


@pytest.mark.parametrize(
    ("count", "expected"),
    [
        (0, set()),
        (1, {("d", "a", "expired", 4)}),
        (5, {("c", "d", "deleted", 3), ("d", "a", "expired", 4), ("a", "d", "deleted", 1)}),
    ],
)
def test_network_window_sets_how_many_batches_back(
    lake: Path, count: int, expected: set[tuple[str, str, str, int]]
) -> None:
    app = open_page(NETWORK)
    app.selectbox(key="network_recent").set_value(count).run()
    assert not app.exception, app.exception
    assert _map_deaths(app) == expected
    assert bool(DASHED & _map_trace_names(app)) == bool(expected)


def test_network_node_focus_applies_to_dead_links_too(lake: Path) -> None:
    app = open_page(NETWORK)
    node = app.selectbox(key="network_focus")
    assert node.options == ["(all nodes)", "a", "b", "c", "d"]  # d has only dead links
    node.select("d").run()
    assert not app.exception, app.exception
    assert {m.label: m.value for m in app.metric} == {
        "Nodes in view": "3", "Live links in view": "0", "Recently dead links in view": "2"}
    assert {"focus node", "links of the focus node"} <= _map_trace_names(app)
    assert _frame(app, "from").empty  # no live link touches d
    app.selectbox(key="network_focus").select("b").run()
    assert {m.label: m.value for m in app.metric}["Recently dead links in view"] == "0"
    live = _frame(app, "from")
    assert set(zip(live["from"], live["to"], strict=True)) == {("a", "b"), ("b", "c")}


def test_network_window_counts_ingest_batches_not_deaths(lake: Path) -> None:
    """Two later batches without deaths push batch 3 out of a window of 3."""
    settings = Settings(lake=str(lake))
    write_table(settings, "ingest_files", pd.DataFrame({"source": ["f5", "f6"],
                                                        "batch_id": [5, 6]}), mode="append")
    app = open_page(NETWORK)
    assert _map_deaths(app) == {("d", "a", "expired", 4)}
    assert any("batches 4–6." in c.value for c in app.caption)


def test_network_without_ingest_files_uses_the_registry_batches(lake: Path) -> None:
    shutil.rmtree(lake / "ingest_files")
    app = open_page(NETWORK)
    assert _map_deaths(app) == {("c", "d", "deleted", 3), ("d", "a", "expired", 4)}


def test_network_with_no_live_link_still_draws_the_dead_ones(lake: Path) -> None:
    settings = Settings(lake=str(lake))
    no_links = pd.DataFrame({"src": pd.Series(dtype=str), "dst": pd.Series(dtype=str),
                             "cost": pd.Series(dtype=float)})
    write_table(settings, "link", _instances(no_links, []))
    app = open_page(NETWORK)
    assert len(app.info) == 1 and "no live links" in app.info[0].value
    # with b→c no longer live, its instance deleted in batch 4 is a recent death too
    assert _map_deaths(app) == {("c", "d", "deleted", 3), ("d", "a", "expired", 4),
                                ("b", "c", "deleted", 4)}


def test_network_without_registry_shows_live_links_and_says_why(lake: Path) -> None:
    shutil.rmtree(lake / "variables")
    app = open_page(NETWORK)
    assert not app.selectbox(key="network_focus").disabled
    assert "network_recent" not in [s.key for s in app.selectbox]
    assert not app.warning and not app.error
    assert _map_deaths(app) == set() and not DASHED & _map_trace_names(app)
    assert any("No `variables` registry yet" in c.value for c in app.caption)


# -- Why: region members -------------------------------------------------------------------------


def _why_member(region: str, sensor: str) -> AppTest:
    app = open_page(WHY)
    assert app.selectbox[0].options == ["Reachable pair", "Region member"]
    app.selectbox[0].select("active_region").run()
    assert app.selectbox[1].label == "Region" and app.selectbox[1].options == ["r1", "r2"]
    app.selectbox[1].select(region).run()
    app.selectbox[2].select(sensor).run()
    assert not app.exception, app.exception
    return app


def _chart(app: AppTest) -> dict:
    """The one plotly figure on the page, as JSON."""
    (chart,) = app.get("plotly_chart")
    return json.loads(chart.proto.spec)


def test_why_region_member_shows_both_sensor_chains(lake: Path) -> None:
    app = _why_member("r1", "s3")
    assert app.selectbox[2].options == ["s1", "s2", "s3", "s4"]
    assert [h.value for h in app.subheader] == ["Why is sensor `s3` in region `r1`?"]
    chains = _frame(app, "witness")
    assert sorted(chains["sensor chain"]) == ["s1 → s2 → s3", "s1 → s4 → s3"]
    assert set(chains["seed"]) == {"s1"} and set(chains["sensors"]) == {3}
    assert any(m.value.startswith("**Losing any of these sensors removes sensor `s3` from "
                                  "region `r1`:**") and m.value.endswith("`s1`, `s3`")
               for m in app.markdown)
    assert any("region_seed(r1,s1)" in m.value for m in app.markdown
               if "Other base tuples" in m.value)
    # the first chain on the sensor grid, to scale
    figure = _chart(app)
    assert figure["layout"]["yaxis"]["scaleanchor"] == "x"
    (line,) = [t for t in figure["data"] if t.get("mode") == "lines"]
    assert (line["x"], line["y"]) == ([0.0, 15.0, 30.0], [0.0, 0.0, 0.0])  # s1 → s2 → s3
    app.selectbox(key="why_witness_0").select(2).run()
    (line,) = [t for t in _chart(app)["data"] if t.get("mode") == "lines"]
    assert (line["x"], line["y"]) == ([0.0, 15.0, 30.0], [0.0, 10.0, 0.0])  # s1 → s4 → s3


def test_why_region_chain_without_regionmap(lake: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "regionmap", None)  # `import regionmap` fails
    app = _why_member("r1", "s3")
    figure = _chart(app)
    assert figure["layout"]["yaxis"]["scaleanchor"] == "x"
    (chain,) = [t for t in figure["data"] if t.get("name") == "chain"]
    assert (chain["x"], chain["y"]) == ([0.0, 15.0, 30.0], [0.0, 0.0, 0.0])


def test_why_region_seed_member_is_a_chain_of_one(lake: Path) -> None:
    app = _why_member("r2", "s5")
    chains = _frame(app, "witness")
    assert chains["sensor chain"].tolist() == ["s5"]
    assert any(m.value.startswith("**Losing any of these sensors") and m.value.endswith("`s5`")
               for m in app.markdown)
    assert not [t for t in _chart(app)["data"] if t.get("mode") == "lines"]  # no chain to draw


def test_why_region_member_without_positions_still_lists_the_chain(lake: Path) -> None:
    shutil.rmtree(lake / "sensor")
    app = _why_member("r1", "s2")
    assert _frame(app, "witness")["sensor chain"].tolist() == ["s1 → s2"]
    assert any("No sensor positions" in c.value for c in app.caption)
    assert '"s1" -> "s2"' in _dot(app)


def test_why_pairs_still_work(lake: Path) -> None:
    app = open_page(WHY)
    app.selectbox[1].select("a").run()
    app.selectbox[2].select("c").run()
    assert not app.exception, app.exception
    assert sorted(_frame(app, "witness")["route"]) == ["a → b → c", "a → c"]


def test_why_not_uses_the_recently_dead_links(lake: Path) -> None:
    """c→d died in batch 3 and d→a in batch 4 (of 1–4): within the last 3 batches."""
    app = open_page(WHY)
    assert app.selectbox[1].options == ["a", "b", "c", "d"]  # d: on dead links only
    app.selectbox[1].select("b").run()
    app.selectbox[2].select("a").run()
    assert not app.exception, app.exception
    text = "\n".join(m.value for m in app.markdown)
    assert "`b` → `c` → `d` → `a` (6 ms); it needs 2 dead links:" in text
    assert "- `c` → `d` (1.5 ms), deleted in batch 3\n- `d` → `a` (2.5 ms), expired in batch 4" \
        in text


def test_why_view_table_without_its_columns_is_a_warning(lake: Path) -> None:
    write_table(Settings(lake=str(lake)), "active_region", pd.DataFrame({"region": ["r1"]}))
    commit_views(str(lake))
    app = open_page(WHY)
    app.selectbox[0].select("active_region").run()
    assert not app.exception, app.exception
    assert any("cannot read `active_region`" in w.value for w in app.warning)


# -- Empty lakes: a plain message on every changed page ------------------------------------------


@pytest.mark.parametrize("page", [NETWORK, WHY, WHAT_IF])
def test_empty_lake_gives_one_plain_message(empty_lake: Path, page: str) -> None:
    app = open_page(page)
    assert len(app.info) == 1 and "yet" in app.info[0].value
    assert not app.error and not app.warning


def test_why_with_registry_but_no_view_tables(lake: Path) -> None:
    for name in ("reachable", "active_region"):
        shutil.rmtree(lake / name)
    app = open_page(WHY)
    assert len(app.info) == 1 and "No view tables yet" in app.info[0].value


# -- pure helpers ----------------------------------------------------------------------------------


def test_sensor_chain_follows_positions_not_names() -> None:
    witness = ["region_seed(r,a)", "sensor(a)", "triggered(a)", "sensor(z)", "triggered(z)",
               "sensor(b)", "triggered(b)", "sensor(m)", "triggered(m)"]
    positions = {"a": (0.0, 0.0), "z": (10.0, 0.0), "b": (20.0, 0.0), "m": (30.0, 0.0)}
    assert lakeview.sensor_chain(witness, "m", positions) == ("a", ["a", "z", "b", "m"])
    assert lakeview.sensor_chain(witness, "m", {}) == ("a", ["a", "b", "z", "m"])  # fallback


def test_deleted_links_keeps_the_latest_death_per_link() -> None:
    registry = pd.DataFrame(
        {
            "relation": ["link", "link", "link"],
            "values": ['["a","b",1.0]', '["a","b",1.0]', '["b","a",2.0]'],
            "deleted_batch": pd.array([2, 5, None], dtype="Int64"),
            "death": ["deleted", "expired", None],
        }
    )
    frame = lakeview.deleted_links(registry, [2, 5])
    assert frame.to_dict("records") == [
        {"src": "a", "dst": "b", "cost": 1.0, "death": "expired", "deleted_batch": 5,
         "instances": 2}
    ]
    assert lakeview.deleted_links(registry.drop(columns=["death"]), [2])["death"].tolist() == [
        "deleted"
    ]
    assert lakeview.deleted_links(registry, []).empty
