"""After a real ``aspen maintain`` batch, the query worker runs the registered queries off the
lease — incrementally, in process, when they allow it, else on Spark: a query that fails at run
time (a CAST of text to INT, which Spark's ANSI mode refuses) is recorded as failed with one
line, while a good one writes its table; maintain exits 0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aspen.cli.main import main
from aspen.lake.deltars import read_table
from aspen.lake.ingest import ingest_files
from aspen.queries.registry import register
from aspen.queries.status import FAILED, OK, read_statuses

pytestmark = [pytest.mark.spark, pytest.mark.slow]

LINKS = [{"op": "insert", "relation": "link", "src": s, "dst": d, "cost": 1.0}
         for s, d in (("a", "b"), ("a", "c"), ("b", "c"))]


def test_a_failing_query_is_recorded_and_a_good_one_runs(spark, lake, tmp_path: Path,
                                                         monkeypatch, capsys) -> None:
    import aspen.spark.session

    monkeypatch.setattr(aspen.spark.session, "get_spark", lambda *a, **k: spark)
    path = tmp_path / "links.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in LINKS))
    ingest_files(lake, [path])
    register(lake, "bad", "SELECT CAST(a.src AS INT) AS i FROM link a")
    register(lake, "good", "SELECT a.src, COUNT(*) AS n FROM link a GROUP BY a.src")

    assert main(["--lake", lake.lake, "maintain"]) == 0
    out = capsys.readouterr().out
    assert "continuous queries after batch 1:" in out
    assert "  query good: batch 1 built, 2 result row(s) changed" in out

    status = read_statuses(lake)
    assert status["good"].status == OK and status["good"].batch_id == 1
    assert status["bad"].status == FAILED
    reason = status["bad"].reason
    assert "CAST_INVALID_INPUT" in reason and "\n" not in reason and "\tat " not in reason
    assert f"  query bad: failed: {reason}" in out

    result = read_table(lake, "q_good")
    assert dict(zip(result["src"], result["n"], strict=True)) == {"a": 2, "b": 1}
    # a second batch: the state is brought forward by the batch's change alone
    path.write_text(json.dumps({"op": "delete", "relation": "link", "src": "a", "dst": "c"})
                    + "\n")
    ingest_files(lake, [path])
    assert main(["--lake", lake.lake, "maintain"]) == 0
    assert "  query good: batch 2 incremental, 2 result row(s) changed" in capsys.readouterr().out
    result = read_table(lake, "q_good")
    assert dict(zip(result["src"], result["n"], strict=True)) == {"a": 1, "b": 1}
