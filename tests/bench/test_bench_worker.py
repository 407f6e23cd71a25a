"""The bench worker records why a task failed, and what it measured before."""

from __future__ import annotations

from aspen.bench.worker import run_task


def test_a_failing_task_is_recorded_with_its_error_lines():
    rec = run_task("paper.insertions", {"no_such_argument": 1}, timeout=120)
    assert rec["status"] == "error"
    assert any("TypeError" in line and "no_such_argument" in line for line in rec["errors"])
    assert "partial" not in rec  # it measured nothing
