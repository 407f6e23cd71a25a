"""``aspen query`` without Spark: register, list, show, drop, and one-line errors (exit 2) —
also for ``plan`` and ``run`` of a lake without the tables, reported before Spark starts."""

from __future__ import annotations

import pytest

from aspen.cli.main import main

SQL = "SELECT a.src, COUNT(*) AS n FROM link a JOIN link b ON a.dst = b.src GROUP BY a.src"


def _aspen(lake, *argv: str) -> int:
    try:
        return main(["--lake", lake.lake, *argv])
    except SystemExit as exit_info:
        return int(exit_info.code or 0)


def test_register_list_show_drop(lake, capsys: pytest.CaptureFixture[str]) -> None:
    assert _aspen(lake, "query", "register", "hot", "--sql", SQL) == 0
    assert "registered query hot: 2 relation(s) of link" in capsys.readouterr().out
    assert _aspen(lake, "query", "list", "--format", "csv") == 0
    assert capsys.readouterr().out.splitlines()[1].startswith("hot,link,-,")
    assert _aspen(lake, "query", "show", "hot") == 0
    out = capsys.readouterr().out
    assert "joins: a.dst=b.src" in out and "plan: none yet" in out
    assert _aspen(lake, "query", "drop", "hot", "--lake", lake.lake) == 0
    assert capsys.readouterr().out.strip() == "dropped query hot"


@pytest.mark.parametrize("argv, fragment", [
    (["register", "hot", "--sql", "SELECT a.src FROM link a ORDER BY a.src"],
     "ORDER BY is not supported"),
    (["register", "hot-1", "--sql", SQL], "must be an identifier"),
    (["show", "cold"], "no query 'cold' is registered"),
    (["plan", "hot"], "table 'link' does not exist"),
    (["run", "hot", "--replan"], "table 'link' does not exist"),
    (["run", "hot", "--method", "simplex"], "invalid choice"),
    ([], "required: ACTION"),
])
def test_errors_are_one_line(lake, capsys, argv, fragment) -> None:
    _aspen(lake, "query", "register", "hot", "--sql", SQL)
    capsys.readouterr()
    assert _aspen(lake, "query", *argv) == 2
    err = capsys.readouterr().err
    assert fragment in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
