"""The re-optimization DAG: its tasks and Params, and real ``dag.test()`` runs of its due-check
(the launch of the Spark job replaced by a recorder: the job itself is tested with Spark in
tests/jobs/test_queries_spark.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from aspen.queries.registry import register
from aspen.queries.reoptimize import reoptimize_with
from aspen.settings import Settings

SQL = "SELECT a.src, COUNT(*) AS n FROM link a JOIN link b ON a.dst = b.src GROUP BY a.src"


def test_the_dag_parses_with_its_two_tasks(dagbag) -> None:
    assert dagbag.import_errors == {}
    dag = dagbag.dags["aspen_reoptimize"]
    assert set(dag.task_dict) == {"due_queries", "reoptimize"}
    assert dag.task_dict["reoptimize"].upstream_task_ids == {"due_queries"}
    assert dag.params["method"] == "declarative" and dag.params["threshold"] is None
    assert dag.max_active_runs == 1 and not dag.catchup


def _run(dagbag, lake: Settings, monkeypatch: pytest.MonkeyPatch, **conf):
    from airflow.utils.state import DagRunState

    dag = dagbag.dags["aspen_reoptimize"]
    launched: list[tuple[str, ...]] = []
    body = dag.task_dict["reoptimize"].python_callable
    monkeypatch.setitem(body.__globals__, "run_spark_job", lambda *argv: launched.append(argv))
    for task in dag.tasks:
        monkeypatch.setattr(task, "retries", 0)
    run = dag.test(run_conf={"lake": lake.lake, **conf})
    assert run.state == DagRunState.SUCCESS
    states = {ti.task_id: str(ti.state) for ti in run.get_task_instances()}
    return states, launched


def test_the_due_check_names_the_due_queries(dagbag, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The check's body with a stand-in context: no Airflow run, no Spark."""
    lake = Settings(lake=str(tmp_path / "lake"))
    monkeypatch.setenv("ASPEN_LAKE", lake.lake)
    body = dagbag.dags["aspen_reoptimize"].task_dict["due_queries"].python_callable
    params = {"lake": None, "threshold": None}
    monkeypatch.setitem(body.__globals__, "get_current_context", lambda: {"params": params})
    assert body() == []  # nothing registered: the run stops at the check
    register(lake, "hot", SQL)
    register(lake, "cold", "SELECT src FROM link")
    assert body() == ["cold", "hot"]  # every scheduled run is a split point
    reoptimize_with(lake, "cold", {"tables": {"link": {"rows": 0.0}}})
    params["threshold"] = 0.5
    assert body() == ["hot"]  # the extension: only what is due


@pytest.mark.airflow
def test_a_run_reoptimizes_the_due_queries_only(airflow_db: Path, dagbag, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.utils.state import DagRunState

    lake = Settings(lake=str(tmp_path / "lake"))
    monkeypatch.setenv("ASPEN_ALLOWED_ROOTS", str(tmp_path))
    register(lake, "hot", SQL)
    register(lake, "cold", "SELECT src FROM link")
    reoptimize_with(lake, "cold", {"tables": {"link": {"rows": 0.0}}})
    dag = dagbag.dags["aspen_reoptimize"]
    launched: list[tuple[str, ...]] = []
    body = dag.task_dict["reoptimize"].python_callable
    monkeypatch.setitem(body.__globals__, "run_spark_job", lambda *argv: launched.append(argv))
    for task in dag.tasks:
        monkeypatch.setattr(task, "retries", 0)
    run = dag.test(run_conf={"lake": lake.lake, "method": "top-down", "threshold": 0.5})
    assert run.state == DagRunState.SUCCESS
    assert launched == [("reoptimize", "--lake", lake.lake_uri, "--method", "top-down", "hot")]
