"""``aspen optimize`` end to end on small files: one JSON line per step (initial, then each
change) with the exhaustive optimum, a readable table, the documented example files, and
one-line errors with exit code 2."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from join_graphs import assert_close

from aspen.cli.main import main
from aspen.optimizer.exhaustive import best_plan
from aspen.optimizer.query import Query
from aspen.optimizer.space import SearchSpace, SpaceOptions
from aspen.optimizer.stats import Stats

DOCS = Path(__file__).resolve().parents[3] / "docs" / "optimizer.md"
QUERY = {"relations": {"c": "customer", "o": "orders", "l": "lineitem"},
         "joins": ["c.c_custkey = o.o_custkey", "o.o_orderkey = l.l_orderkey"],
         "filters": [{"relation": "c", "predicate": "c_mktsegment = 'MACHINERY'"}]}
STATS = {"tables": {"customer": {"rows": 150000, "width": 223},
                    "orders": {"rows": 1500000, "width": 134,
                               "columns": {"o_custkey": {"ndv": 100000}}},
                    "lineitem": {"rows": 6001215, "width": 141,
                                 "columns": {"l_orderkey": {"ndv": 1500000}}}},
         "selectivity": {"c: c_mktsegment = 'MACHINERY'": 0.2}}
CHANGES = [{"rows": {"orders": 3000000}}, {"selectivity": {"c.c_custkey=o.o_custkey": 1e-4}},
           {"params": {"broadcast_limit": 1e6}, "width": {"customer": 50}}]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    paths = {"query": tmp_path / "q.json", "stats": tmp_path / "s.json",
             "changes": tmp_path / "c.jsonl"}
    paths["query"].write_text(json.dumps(QUERY))
    paths["stats"].write_text(json.dumps(STATS))
    paths["changes"].write_text("\n".join(json.dumps(c) for c in CHANGES) + "\n\n")
    return paths


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        code = main(["optimize", *argv])
    except SystemExit as exit_info:
        code = int(exit_info.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def _args(files: dict[str, Path], *extra: str, changes: bool = True) -> list[str]:
    args = ["--query", str(files["query"]), "--stats", str(files["stats"])]
    return args + (["--changes", str(files["changes"])] if changes else []) + list(extra)


@pytest.mark.parametrize("method", ["volcano", "systemr", "exhaustive"])
@pytest.mark.parametrize("extra", [(), ("--left-linear",),
                                   ("--methods", "shuffle_hash,sort_merge")])
def test_json_lines_follow_the_changes(capsys, files, method: str, extra: tuple[str, ...]) -> None:
    code, out, err = _run(capsys, *_args(files, "--method", method, "--format", "json", *extra))
    assert code == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert [line["step"] for line in lines] == [0, 1, 2, 3]
    assert [line["change"] for line in lines] == [None, *CHANGES]
    query = Query.from_json(QUERY)
    options = SpaceOptions(methods=tuple(extra[1].split(",")) if "--methods" in extra
                           else SpaceOptions().methods, left_linear="--left-linear" in extra)
    stats = Stats.from_json(STATS)
    for line, change in zip(lines, [None, *CHANGES], strict=True):
        if change is not None:
            stats, _ = stats.changed(change)
        assert_close(line["cost"], best_plan(SearchSpace(query, options), stats)[0])
        assert line["method"] == method and "or_created" in line and "and_pruned" in line


def test_table_format(capsys, files) -> None:
    code, out, _ = _run(capsys, *_args(files, "--method", "volcano"))
    assert code == 0
    assert out.count("== ") == 4
    assert "initial plan [volcano]: cost" in out and "after change 3" in out
    assert "scan c (customer)" in out and "OR nodes:" in out and "AND nodes:" in out


def test_without_changes_one_step(capsys, files) -> None:
    code, out, _ = _run(capsys, *_args(files, "--method", "systemr", "--format", "json",
                                       changes=False))
    assert code == 0 and len(out.splitlines()) == 1


def _docs_example(name: str) -> str:
    text = DOCS.read_text(encoding="utf-8")
    match = re.search(rf"<!-- example: {re.escape(name)} -->\s*```\w*\n(.*?)```", text, re.S)
    assert match, f"docs/optimizer.md has no example {name}"
    return match.group(1)


def test_the_documented_examples_run(capsys, tmp_path) -> None:
    paths = {}
    for name in ("Q.json", "S.json", "C.jsonl"):
        paths[name] = tmp_path / name
        paths[name].write_text(_docs_example(name))
    changes = [line for line in _docs_example("C.jsonl").splitlines() if line.strip()]
    code, out, err = _run(capsys, "--query", str(paths["Q.json"]), "--stats",
                          str(paths["S.json"]), "--changes", str(paths["C.jsonl"]),
                          "--method", "volcano", "--format", "json")
    assert code == 0, err
    assert len(out.splitlines()) == 1 + len(changes)


@pytest.mark.parametrize("setup, argv, fragment", [
    (None, ["--query", "{tmp}/missing.json"], "missing.json: No such file"),
    ("q.json:{not json", ["--query", "{tmp}/q.json"], "not valid JSON"),
    ("q.json:[1, 2]", ["--query", "{tmp}/q.json"], "expected a JSON object"),
    ('q.json:{"relations": {"a": "t", "b": "u"}, "joins": []}', ["--query", "{tmp}/q.json"],
     "not connected"),
    ('s.json:{"tables": {"orders": {"rows": -1}}}', ["--stats", "{tmp}/s.json"], "must be ≥ 0"),
    ('c.jsonl:{"rows": {"orders": 1}}\n{"cardinality": {}}', ["--changes", "{tmp}/c.jsonl"],
     "line 2: change: unknown statistic 'cardinality'"),
    ("c.jsonl:[]", ["--changes", "{tmp}/c.jsonl"], "line 1: expected a JSON object"),
    ("c.jsonl:{oops", ["--changes", "{tmp}/c.jsonl"], "line 1: not valid JSON"),
    (None, ["--methods", "nested_loop"], "unknown join method"),
    (None, ["--method", "simplex"], "invalid choice"),
    (None, ["--format", "csv"], "invalid choice"),
])
def test_bad_input_gets_one_line(capsys, files, tmp_path, setup, argv, fragment) -> None:
    if setup:
        name, text = setup.split(":", 1)
        (tmp_path / name).write_text(text)
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    base = {"--query": str(files["query"]), "--stats": str(files["stats"]),
            "--method": "volcano"}
    for i in range(0, len(argv), 2):
        base[argv[i]] = argv[i + 1]
    code, out, err = _run(capsys, *[x for pair in base.items() for x in pair])
    assert code == 2
    assert fragment in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert out == ""
