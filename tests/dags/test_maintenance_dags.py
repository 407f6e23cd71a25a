"""The TTL-sweep and housekeeping DAGs: integrity, parameters, and a real ``dag.test()`` sweep."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def test_both_dags_parse_with_one_task_each(dagbag) -> None:
    assert dagbag.import_errors == {}
    expire, keep = dagbag.dags["aspen_expire"], dagbag.dags["aspen_housekeeping"]
    assert set(expire.task_dict) == {"expire"}
    assert set(keep.task_dict) == {"optimize_and_vacuum"}
    assert expire.max_active_runs == keep.max_active_runs == 1
    assert not expire.catchup and not keep.catchup
    assert keep.params["retain_hours"] == 168.0


@pytest.mark.slow
def test_dag_test_sweeps_expired_links(airflow_db: Path, dagbag, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.utils.state import DagRunState
    from deltalake import DeltaTable

    from aspen.cli.main import main

    lake = tmp_path / "lake"
    updates = tmp_path / "ttl.jsonl"
    updates.write_text("\n".join(json.dumps(r) for r in [
        {"op": "insert", "relation": "link", "src": "a", "dst": "b", "cost": 1.0, "ttl_s": 1,
         "event_time": "2026-01-01T00:00:00Z"},
        {"op": "insert", "relation": "link", "src": "b", "dst": "c", "cost": 1.0},
    ]) + "\n")
    assert main(["--lake", str(lake), "ingest", str(updates)]) == 0
    monkeypatch.setenv("SPARK_MASTER", "local[2]")
    monkeypatch.setenv("ASPEN_ALLOWED_ROOTS", str(tmp_path))  # the run's `lake` Param
    dag = dagbag.dags["aspen_expire"]
    for task in dag.tasks:
        monkeypatch.setattr(task, "retries", 0)
    run = dag.test(run_conf={"lake": str(lake)})
    assert run.state == DagRunState.SUCCESS
    registry = DeltaTable(str(lake / "variables")).to_pandas().set_index("var")
    assert registry.loc["v1", "death"] == "expired" and registry["death"].isna()["v2"]
    links = DeltaTable(str(lake / "link")).to_pandas()
    assert list(links["var"]) == ["v2"]


@pytest.mark.parametrize(("dag_id", "task_id", "job", "reason"), [
    ("aspen_expire", "expire", "expire", "the follower sweeps TTLs itself"),
    ("aspen_housekeeping", "optimize_and_vacuum", "housekeeping",
     "housekeeping waits for a time without a follower"),
])
def test_tasks_skip_while_a_follower_holds_the_lease(dagbag, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch, dag_id,
                                                     task_id, job, reason) -> None:
    """The task body itself, with a stand-in context and launcher: no Airflow run, no Spark."""
    from airflow.sdk.exceptions import AirflowSkipException

    from aspen.lake.lease import MaintainerLease
    from aspen.settings import Settings

    lake = Settings(lake=str(tmp_path / "lake"))
    monkeypatch.setenv("ASPEN_LAKE", lake.lake)  # the Param names the configured lake
    body = dagbag.dags[dag_id].task_dict[task_id].python_callable
    launched: list[tuple[str, ...]] = []
    monkeypatch.setitem(body.__globals__, "run_spark_job", lambda *argv: launched.append(argv))
    monkeypatch.setitem(body.__globals__, "get_current_context", lambda: {
        "params": {"lake": lake.lake, "retain_hours": 168.0}})
    with MaintainerLease(lake, "aspen maintain --runtime local --follow", follower=True):
        with pytest.raises(AirflowSkipException, match=f"a follower holds .*: {reason}"):
            body()
    assert launched == []
    body()  # the follower has gone: the task launches its job
    assert [argv[:3] for argv in launched] == [(job, "--lake", lake.lake_uri)]


@pytest.mark.parametrize(("dag_id", "task_id"), [("aspen_expire", "expire"),
                                                 ("aspen_housekeeping", "optimize_and_vacuum")])
@pytest.mark.parametrize(("lake", "message"), [
    ("/etc", "is not allowed: only the configured"),
    ("", "is empty or has control characters"),
    ("LAKE/../../etc", "has a '..' segment"),
])
def test_a_lake_param_the_run_may_not_use_fails_the_task(
    dagbag, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dag_id, task_id, lake, message
) -> None:
    """The task body with a stand-in context: it fails at once (no retry), before any job."""
    from airflow.sdk.exceptions import AirflowFailException

    monkeypatch.setenv("ASPEN_LAKE", str(tmp_path / "lake"))
    monkeypatch.delenv("ASPEN_ALLOWED_ROOTS", raising=False)
    body = dagbag.dags[dag_id].task_dict[task_id].python_callable
    launched: list[tuple[str, ...]] = []
    monkeypatch.setitem(body.__globals__, "run_spark_job", lambda *argv: launched.append(argv))
    params = {"lake": lake.replace("LAKE", str(tmp_path / "lake")), "retain_hours": 168.0}
    monkeypatch.setitem(body.__globals__, "get_current_context", lambda: {"params": params})
    with pytest.raises(AirflowFailException, match=message) as failed:
        body()
    assert "\n" not in str(failed.value) and launched == []
