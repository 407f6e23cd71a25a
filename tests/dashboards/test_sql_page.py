"""AppTest of the Ask (SQL) page: a statement checked before it runs (refusals in one line),
example questions as buttons, the answer paged, and an opened row's provenance — formula,
witnesses in words, critical tuples, the chosen witness hop by hop and drawn on the network.

The lake is ingested and maintained in process (no Spark): links a→b (1), b→a (1), b→c (2),
a→c (5), c→d (4); sensors s0, s1, s2 in a row 10 m apart and s3 far away, all triggered; region
r1 seeded at s0, r2 at s3.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dashboard_apptest import open_page
from streamlit.testing.v1 import AppTest

from aspen.lake.ingest import ingest_files
from aspen.pipeline.maintain_local import maintain_local
from aspen.settings import Settings

SQL = "pages/sql.py"
LINKS = [("a", "b", 1.0), ("b", "a", 1.0), ("b", "c", 2.0), ("a", "c", 5.0), ("c", "d", 4.0)]
SENSORS = [("s0", 0.0, 0.0), ("s1", 10.0, 0.0), ("s2", 20.0, 0.0), ("s3", 500.0, 500.0)]
RECORDS = (
    [{"op": "insert", "relation": "link", "src": s, "dst": d, "cost": c} for s, d, c in LINKS]
    + [{"op": "insert", "relation": "sensor", "id": i, "x": x, "y": y} for i, x, y in SENSORS]
    + [{"op": "insert", "relation": "triggered", "id": i} for i, *_ in SENSORS]
    + [{"op": "insert", "relation": "region_seed", "region": "r1", "id": "s0"},
       {"op": "insert", "relation": "region_seed", "region": "r2", "id": "s3"}]
)
PAIR = "SELECT src, dst FROM reachable WHERE src = 'a' AND dst = 'd'"


@pytest.fixture(scope="module")
def built_lake(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("sqlpage")
    settings = Settings(lake=str(root / "lake"))
    updates = root / "updates.jsonl"
    updates.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    ingest_files(settings, [updates])
    maintain_local(settings)
    return str(root / "lake")


@pytest.fixture
def sql_lake(built_lake: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("ASPEN_LAKE", built_lake)
    return built_lake


def _type(app: AppTest, sql: str) -> AppTest:
    app.text_area(key="sql_text").input(sql).run()
    app.button(key="sql_ask").click().run()
    assert not app.exception, app.exception
    return app


def _frames(app: AppTest) -> list:
    return [d.value for d in app.dataframe]


def _answer(app: AppTest):
    (frame,) = [f for f in _frames(app) if list(f.columns)[:1] == ["row"]]
    return frame


def _markdown(app: AppTest) -> str:
    return "\n".join(m.value for m in app.markdown)


def _traces(app: AppTest) -> dict[str, dict]:
    (chart,) = app.get("plotly_chart")
    return {t["name"]: t for t in json.loads(chart.proto.spec)["data"] if t.get("name")}


def test_the_page_offers_example_questions_and_asks_nothing_yet(sql_lake: str) -> None:
    app = open_page(SQL)
    assert [t.value for t in app.title] == ["Ask (SQL)"]
    examples = [b for b in app.button if str(b.key).startswith("sql_example_")]
    assert [b.label for b in examples] == [
        "Links out of routers that reach 2 or more nodes",
        "Regions with 2 or more triggered sensors",
        "Cheapest routes over 5 ms",
    ]
    assert not app.dataframe and not app.error


def test_an_example_runs_and_its_row_names_sensors_by_id(sql_lake: str) -> None:
    app = open_page(SQL)
    app.button(key="sql_example_1").click().run()
    assert not app.exception, app.exception
    assert app.text_area(key="sql_text").value.startswith("SELECT a.region, COUNT(*)")
    assert _answer(app).to_dict("records") == [{"row": 1, "region": "r1", "triggered": 3}]
    # at least two triggered members: the seed and its neighbour are the smallest witness
    (witnesses,) = [f for f in _frames(app) if "witness" in f.columns]
    assert witnesses.to_dict("records") == [{
        "witness": 1, "links": "",
        "sensors and others": "seed s0 of region r1, sensor s0, sensor s1, sensor s0 triggered, "
                              "sensor s1 triggered",
        "size": 5}]
    assert ("**Deleting any one of these removes the row:** `seed s0 of region r1`, `sensor s0`"
            in _markdown(app))
    assert app.code[0].value == ("region_seed:r1:s0 ∧ sensor:s0 ∧ sensor:s1 ∧ triggered:s0 ∧ "
                                 "triggered:s1")
    assert any("holds no link" in c.value for c in app.caption)


def test_a_row_of_a_view_reads_hop_by_hop_and_is_drawn_on_the_map(sql_lake: str) -> None:
    app = _type(open_page(SQL), PAIR)
    assert _answer(app).to_dict("records") == [{"row": 1, "src": "a", "dst": "d"}]
    (witnesses,) = [f for f in _frames(app) if "witness" in f.columns]
    assert witnesses["links"].tolist() == ["a → c → d", "a → b → c → d"]
    assert "**Deleting any one of these removes the row:** `link c → d`" in _markdown(app)
    (hops,) = [f for f in _frames(app) if "cumulative cost (ms)" in f.columns]
    assert hops.to_dict("list") == {"step": [1, 2], "link": ["a → c", "c → d"],
                                    "cost (ms)": [5.0, 4.0], "cumulative cost (ms)": [5.0, 9.0]}
    traces = _traces(app)
    assert traces["routers"]["text"] == ["a", "c", "d"]
    assert traces["costs"]["text"] == ["5 ms", "4 ms"]
    app.selectbox(key="sql_witness").select(2).run()
    (hops,) = [f for f in _frames(app) if "cumulative cost (ms)" in f.columns]
    assert hops["cumulative cost (ms)"].tolist() == [1.0, 3.0, 7.0]
    assert _traces(app)["routers"]["text"] == ["a", "b", "c", "d"]
    app.button(key="sql_share").click().run()
    assert app.session_state["map_overlay"]["nodes"] == ["a", "b", "c", "d"]


@pytest.mark.parametrize(("sql", "said"), [
    ("DROP TABLE link", "expected one read-only SELECT statement"),
    ("SELECT * FROM nowhere", "unknown table"),
    ("SELECT src FROM link WHERE cost > 'x'", "DuckDB refused the query"),
    ("SELECT src FROM link; SELECT dst FROM link", "expected one read-only SELECT statement"),
])
def test_a_refused_statement_is_one_line_not_a_traceback(sql_lake: str, sql: str,
                                                         said: str) -> None:
    app = _type(open_page(SQL), sql)
    (error,) = app.error
    assert error.value.startswith("The query cannot run: ") and said in error.value
    assert "\n" not in error.value and "Traceback" not in error.value
    assert not app.dataframe


def test_a_long_answer_is_paged_and_rows_of_any_page_open(sql_lake: str) -> None:
    app = _type(open_page(SQL), "SELECT x.src, y.dst FROM link x, link y, link z")
    assert len(_answer(app)) == 50 and any("Rows 1–50 of 125" in c.value for c in app.caption)
    app.number_input(key="sql_page").set_value(3).run()
    assert _answer(app)["row"].tolist() == list(range(101, 126))
    row = app.selectbox(key="sql_row")
    assert row.options[0].startswith("row 101: src = ")
    row.select(125).run()
    assert not app.exception, app.exception
    assert _markdown(app).count("minimal witness set") == 1


def test_a_limited_answer_says_its_formulas_are_not_exact(sql_lake: str) -> None:
    app = _type(open_page(SQL), "SELECT src, dst FROM link ORDER BY src, dst LIMIT 2")
    assert _answer(app)["src"].tolist() == ["a", "a"]
    assert any("not exact" in w.value and "LIMIT 2" in w.value for w in app.warning)


def test_the_answer_is_remembered_while_rows_are_opened(sql_lake: str) -> None:
    app = _type(open_page(SQL), "SELECT src, dst FROM link ORDER BY src, dst")
    key, _ = app.session_state["sql_answer"]
    app.selectbox(key="sql_row").select(3).run()
    assert app.session_state["sql_answer"][0] == key
    assert "`link b → a`" in _markdown(app)
    app.switch_page("pages/overview.py").run()
    app.switch_page(SQL).run()
    assert not app.exception, app.exception
    assert _answer(app)["row"].tolist() == [1, 2, 3, 4, 5]
    assert app.text_area(key="sql_text").value == "SELECT src, dst FROM link ORDER BY src, dst"
    _type(app, PAIR)  # a new question: the row opened before is gone, the first one opens
    assert app.selectbox(key="sql_row").value == 1
    assert "`link c → d`" in _markdown(app)


def test_the_page_is_in_the_navigation(sql_lake: str) -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "dashboards"))
    import page_registry

    (entry,) = [p for p in page_registry.PAGES if p.module == "sql"]
    assert entry.title == "Ask (SQL)" and page_registry.page_file(entry) == SQL


@pytest.mark.parametrize("name", ["sqlview", "sqlwords", "hops"])
def test_the_doctests_of_the_query_box_modules_pass(name: str) -> None:
    import doctest
    import importlib
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "dashboards"))
    module = importlib.import_module(name)
    failed, tried = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert tried > 0 and failed == 0


def test_a_lake_without_the_table_says_so_in_one_line(empty_lake: Path) -> None:
    app = _type(open_page(SQL), "SELECT src, dst FROM link")
    (error,) = app.error
    assert error.value.startswith("The query cannot run: ") and "\n" not in error.value
    assert "link" in error.value
