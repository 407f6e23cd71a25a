"""``aspen sql`` on a real small lake (ingested and maintained in process): the answer, its
formulas over base tuples (views' stored formulas renamed), ``--why``, ``--explain``, one-line
refusals; and once on Spark, the same answer as DuckDB."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aspen.cli.main import main
from aspen.lake.ingest import ingest_files
from aspen.pipeline.maintain_local import maintain_local
from aspen.settings import Settings

RECORDS = [
    {"op": "insert", "relation": "link", "src": "a", "dst": "b", "cost": 1.0},
    {"op": "insert", "relation": "link", "src": "b", "dst": "c", "cost": 1.0},
    {"op": "insert", "relation": "link", "src": "a", "dst": "c", "cost": 3.0},
    {"op": "insert", "relation": "link", "src": "a", "dst": "c", "cost": 3.0},  # a renewal
    {"op": "insert", "relation": "sensor", "id": "c", "x": 0.0, "y": 0.0},
    {"op": "insert", "relation": "triggered", "id": "b"},
]

VIEW_JOIN = ("SELECT r.src, r.dst FROM reachable r JOIN sensor s ON s.id = r.dst "
             "WHERE NOT EXISTS (SELECT 1 FROM triggered t WHERE t.id = r.src) ORDER BY r.src")


@pytest.fixture(scope="module")
def lake_root(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("sqlprov")
    lake = Settings(lake=str(root / "lake"))
    path = root / "first.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    ingest_files(lake, [path])
    maintain_local(lake)
    return str(root / "lake")


def _json(capsys, argv: list[str]) -> object:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_view_rows_bring_their_formulas_over_base_tuples(lake_root, capsys) -> None:
    out = _json(capsys, ["--lake", lake_root, "sql", VIEW_JOIN, "--provenance", "--format",
                         "json", "--engine", "duckdb"])
    # reachable(a, c) needs a path a→c; sensor c must live; no NOT EXISTS match for a now
    assert out == [{"values": {"src": "a", "dst": "c"}, "provenance": {"or": [
        {"and": [{"var": "link:a:c"}, {"var": "sensor:c"}]},
        {"and": [{"var": "link:a:b"}, {"var": "link:b:c"}, {"var": "sensor:c"}]}]}}]


def test_negation_renders_with_not_and_why_names_witnesses(lake_root, capsys) -> None:
    sql = "SELECT src FROM link EXCEPT SELECT id FROM triggered"
    out = _json(capsys, ["--lake", lake_root, "sql", sql, "--provenance", "--format", "json",
                         "--engine", "duckdb"])
    assert [r["values"]["src"] for r in out] == ["a"]  # b is triggered
    assert out[0]["provenance"] == {"or": [{"var": "link:a:b"}, {"var": "link:a:c"}]}
    why = _json(capsys, ["--lake", lake_root, "sql", "SELECT l.src FROM link l WHERE NOT EXISTS "
                         "(SELECT 1 FROM triggered t WHERE t.id = l.dst)", "--why", "0",
                         "--format", "json", "--engine", "duckdb"])
    # alone, either link derives it (triggered b gone too); a→b is blocked by triggered b now,
    # so deleting a→c alone removes it
    assert why["witnesses"] == [["link:a:b"], ["link:a:c"]] and why["critical"] == ["link:a:c"]
    assert why["provenance"] == {"or": [{"var": "link:a:c"},
                                        {"and": [{"var": "link:a:b"},
                                                 {"not": {"var": "triggered:b"}}]}]}


def test_table_format_and_explain(lake_root, capsys) -> None:
    assert main(["--lake", lake_root, "sql", "SELECT src, COUNT(*) AS n FROM link GROUP BY src "
                 "HAVING COUNT(*) >= 2", "--provenance", "--engine", "duckdb"]) == 0
    out = capsys.readouterr().out
    assert "link:a:b ∧ link:a:c" in out and "(1 rows)" in out
    assert main(["--lake", lake_root, "sql", "SELECT src FROM link", "--explain",
                 "--engine", "duckdb"]) == 0
    out = capsys.readouterr().out
    assert "-- instrumented (duckdb)" in out and "'link' || ':'" in out
    # the choices with their estimated costs (DuckDB's estimates over the lake's tables)
    assert main(["--lake", lake_root, "sql", "SELECT DISTINCT src, dst FROM link", "--explain",
                 "--engine", "duckdb"]) == 0
    out = capsys.readouterr().out
    assert "-- rules applied: remove_distinct_by_key" in out
    assert "provenance column of link link: " in out and "<- chosen" in out
    assert " s  [late]" in out  # the heuristic plan: the adaptive stop keeps it on tiny tables


@pytest.mark.parametrize(("sql", "fragment"), [
    ("DROP TABLE link", "expected one read-only SELECT statement"),
    ("SELECT 1 FROM link; SELECT 2 FROM link", "expected one read-only SELECT statement, got 2"),
    ("SELECT src FROM nowhere", "unknown table 'nowhere'"),
    ("SELECT src FROM link WHERE dst NOT IN (SELECT id FROM triggered)", "write NOT EXISTS"),
    ("SELECT region FROM region_sizes", "stores no formula"),
])
def test_refusals_are_one_line(lake_root, capsys, sql, fragment) -> None:
    assert main(["--lake", lake_root, "sql", sql, "--provenance", "--engine", "duckdb"]) == 2
    err = capsys.readouterr().err
    assert fragment in err and len(err.strip().splitlines()) == 1


def test_why_of_a_missing_row_is_refused(lake_root, capsys) -> None:
    assert main(["--lake", lake_root, "sql", "SELECT src FROM link", "--why", "9",
                 "--engine", "duckdb"]) == 2
    assert "no row 9" in capsys.readouterr().err


@pytest.mark.spark
def test_spark_gives_the_answer_and_formulas_duckdb_gives(lake_root, spark, capsys) -> None:
    argv = ["--lake", lake_root, "sql", VIEW_JOIN, "--provenance", "--format", "json"]
    on_spark = _json(capsys, argv)
    assert on_spark == _json(capsys, [*argv, "--engine", "duckdb"])
    assert Path(lake_root).exists()
