"""The aspen_pipeline DAG: it parses, its shape, its helpers, and one real dag.test() run."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.airflow

REPO_ROOT = Path(__file__).resolve().parents[2]
DAG_FILE = REPO_ROOT / "dags" / "aspen_pipeline.py"


def _dag_module():
    spec = importlib.util.spec_from_file_location("aspen_pipeline_under_test", DAG_FILE)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_dags_folder_has_no_import_errors(dagbag) -> None:
    assert dagbag.import_errors == {}
    assert "aspen_pipeline" in dagbag.dag_ids


def test_dag_file_imports_nothing_heavy() -> None:
    code = (
        "import sys, runpy; runpy.run_path(sys.argv[1]); "
        "heavy = [m for m in ('pyspark', 'delta', 'deltalake', 'pandas', 'streamlit') "
        "if m in sys.modules]; print('HEAVY=' + ','.join(heavy))"
    )
    import subprocess

    result = subprocess.run(
        [sys.executable, "-c", code, str(DAG_FILE)],
        capture_output=True,
        text=True,
        env=dict(os.environ),
    )
    assert result.returncode == 0, result.stderr[-2000:]
    heavy = [line for line in result.stdout.splitlines() if line.startswith("HEAVY=")]
    assert heavy == ["HEAVY="]


def test_tasks_run_ingest_readings_apply_maintain_expectations_then_publish(dagbag) -> None:
    dag = dagbag.dags["aspen_pipeline"]
    assert set(dag.task_dict) == {"follower", "ingest", "readings", "apply", "maintain",
                                  "expectations", "publish"}
    assert dag.task_dict["follower"].downstream_task_ids == {"ingest"}
    assert dag.task_dict["ingest"].trigger_rule == "none_failed"  # runs after a skipped follower
    assert dag.params["follower"] is False  # tests/dags/conftest.py: ASPEN_FOLLOWER=0
    assert dag.task_dict["ingest"].downstream_task_ids == {"readings"}
    assert dag.task_dict["readings"].downstream_task_ids == {"apply"}
    # a lake without readings skips the rule; apply runs all the same
    assert dag.task_dict["readings"].trigger_rule == "none_failed"
    assert dag.task_dict["apply"].trigger_rule == "none_failed"
    assert dag.task_dict["apply"].downstream_task_ids == {"maintain"}
    assert dag.task_dict["maintain"].downstream_task_ids == {"expectations"}
    assert dag.task_dict["expectations"].downstream_task_ids == {"publish"}
    assert dag.task_dict["publish"].downstream_task_ids == set()
    assert dag.catchup is False
    assert dag.max_active_runs == 1
    assert all(task.retries >= 1 for task in dag.tasks)
    if "ASPEN_PIPELINE_SCHEDULE" not in os.environ:
        assert dag.timetable.expression == "*/5 * * * *"


def test_schedule_is_configurable(monkeypatch: pytest.MonkeyPatch) -> None:
    module = _dag_module()
    monkeypatch.delenv("ASPEN_PIPELINE_SCHEDULE", raising=False)
    assert module._schedule() == "*/5 * * * *"
    monkeypatch.setenv("ASPEN_PIPELINE_SCHEDULE", "@hourly")
    assert module._schedule() == "@hourly"
    monkeypatch.setenv("ASPEN_PIPELINE_SCHEDULE", "none")
    assert module._schedule() is None


def test_tasks_declare_the_delta_tables_as_assets(dagbag) -> None:
    dag = dagbag.dags["aspen_pipeline"]
    names = {t: {a.name for a in dag.task_dict[t].outlets} for t in dag.task_dict}
    assert names["ingest"] == {"aspen.updates", "aspen.quarantine"}
    assert {"aspen.link", "aspen.sensor", "aspen.triggered", "aspen.region_seed"} <= names["apply"]
    assert names["expectations"] == {"aspen.expectation_results"}
    assert names["publish"] == {"aspen.summary"}
    summary = dag.task_dict["publish"].outlets[0]
    assert summary.uri.startswith("file:///") and summary.uri.endswith("/summary")


def test_inbox_files_takes_only_update_files_at_the_top(tmp_path: Path) -> None:
    module = _dag_module()
    assert module.inbox_files(tmp_path / "missing") == []
    (tmp_path / "b.jsonl").write_text("{}\n")
    (tmp_path / "a.csv").write_text("op\n")
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "done").mkdir()
    (tmp_path / "done" / "old.jsonl").write_text("{}\n")
    (tmp_path / "c.jsonl").symlink_to(tmp_path / "b.jsonl")  # a link is never read
    assert [p.name for p in module.inbox_files(tmp_path)] == ["a.csv", "b.jsonl"]


def test_spark_submit_command_uses_spark_master_only_when_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = _dag_module()
    monkeypatch.delenv("SPARK_MASTER", raising=False)
    command = module.spark_submit_command("publish", "--lake", "file:///l")
    assert "--master" not in command
    assert command[0].endswith("spark-submit")
    assert command[-3:] == [str(REPO_ROOT / "jobs" / "publish.py"), "--lake", "file:///l"][-3:]
    assert command[-3].endswith("jobs/publish.py")
    jars = command[command.index("--jars") + 1].split(",")
    assert any("delta-spark" in j for j in jars) and any("delta-storage" in j for j in jars)
    monkeypatch.setenv("SPARK_MASTER", "spark://somewhere:7077")
    command = module.spark_submit_command("apply")
    assert command[1:3] == ["--master", "spark://somewhere:7077"]


LINK_UPDATES = [
    {"op": "insert", "relation": "link", "src": "n1", "dst": "n2", "cost": 2.0, "ttl_s": 600},
    {"op": "insert", "relation": "link", "src": "n2", "dst": "n3", "cost": 1.5},
    {"op": "insert", "relation": "link", "src": "n3", "dst": "n1", "cost": 4.0},
    {"op": "insert", "relation": "link", "src": "n1", "dst": "n3", "cost": 9.0},
    {"op": "delete", "relation": "link", "src": "n1", "dst": "n3"},
]

#: A sensor n1 and two of its readings, 200 s apart: its first 60-second window closes.
SENSOR_UPDATES = [
    {"op": "insert", "relation": "sensor", "id": "n1", "x": 0.0, "y": 0.0},
    {"op": "insert", "relation": "reading", "sensor": "n1", "ts": "2026-12-01T10:00:05Z",
     "value": 95.0},
    {"op": "insert", "relation": "reading", "sensor": "n1", "ts": "2026-12-01T10:03:25Z",
     "value": 10.0},
]


@pytest.mark.slow
def test_dag_test_runs_the_pipeline_end_to_end(
    airflow_db: Path, dagbag, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str], fresh_pipeline_assets: None,
) -> None:
    for job in ("ingest", "readings", "apply", "maintain", "expectations", "publish"):
        if not (REPO_ROOT / "jobs" / f"{job}.py").is_file():
            pytest.fail(f"jobs/{job}.py does not exist yet")
    from airflow.utils.state import DagRunState, TaskInstanceState
    from deltalake import DeltaTable

    from aspen.lake.committed import read_committed
    from aspen.settings import Settings

    lake, inbox = tmp_path / "lake", tmp_path / "inbox"
    inbox.mkdir()
    lines = [json.dumps(r) for r in [*LINK_UPDATES, *SENSOR_UPDATES]] + ["this is not json"]
    (inbox / "links.jsonl").write_text("\n".join(lines) + "\n")
    monkeypatch.setenv("ASPEN_LAKE", str(lake))
    monkeypatch.setenv("SPARK_MASTER", "local[2]")

    dag = dagbag.dags["aspen_pipeline"]
    for task in dag.tasks:  # a failure should fail the test now, not after retry delays
        monkeypatch.setattr(task, "retries", 0)
    monkeypatch.delenv("ASPEN_INBOX", raising=False)  # the inbox defaults to <lake>/../inbox
    run = dag.test(run_conf={"lake": str(lake), "runtime": "spark", "partitions": 2,
                             "follower": False})

    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert states == {
        "follower": TaskInstanceState.SKIPPED,  # the Param is off: the one-shot path
        **{t: TaskInstanceState.SUCCESS
           for t in ("ingest", "readings", "apply", "maintain", "expectations", "publish")},
    }
    assert run.state == DagRunState.SUCCESS
    # each task's spark-submit job printed into the task's log: the ingest job its counts
    printed = capfd.readouterr().out
    assert "ingest: links.jsonl: 6 valid, 1 quarantined (malformed_json 1)" in printed, \
        printed[-3000:]
    assert ("ingest: batch 1: 6 record(s) appended to updates, 2 to readings, 1 to quarantine"
            in printed)
    # the rule's one closed window (n1's average 95 over [0, 60 s)) triggered n1: logged as an
    # update of batch 2, applied and maintained in the same run
    assert "readings: rule avg_above (eager): 1 micro-batch(es), 1 window(s) closed, " \
        "1 decision(s) logged" in printed
    triggered = DeltaTable(str(lake / "triggered")).to_pandas()
    assert list(triggered["id"]) == ["n1"]
    assert list(inbox.glob("*.jsonl")) == []  # moved to done/<run id>/
    assert [p.name for p in inbox.glob("done/*/*")] == ["links.jsonl"]

    links = DeltaTable(str(lake / "link")).to_pandas()
    assert set(zip(links["src"], links["dst"], strict=True)) == {
        ("n1", "n2"),
        ("n2", "n3"),
        ("n3", "n1"),
    }
    reachable = read_committed(Settings(lake=str(lake)), "reachable")
    nodes = ("n1", "n2", "n3")  # a 3-cycle: every node reaches every node, itself included
    assert set(zip(reachable["src"], reachable["dst"], strict=True)) == {
        (a, b) for a in nodes for b in nodes
    }
    assert (reachable["prov_bytes"] > 0).all()
    results = DeltaTable(str(lake / "expectation_results")).to_pandas()
    assert set(results["batch_id"]) == {1} and results["success"].all()
    assert {"views.reachable", "inputs.link"} <= set(results["suite"])
    summary = DeltaTable(str(lake / "summary")).to_pandas().set_index("name")
    assert summary.loc["link", "row_count"] == 3
    assert summary.loc["updates", "row_count"] >= 7
    assert summary.loc["quarantine", "row_count"] == 1
    assert "summary" not in summary.index

    # while a follower holds the lake's maintainer lease, apply and maintain are its job: a real
    # run of the two tasks skips them (no spark-submit); the expectations run after a skip
    from aspen.lake.lease import MaintainerLease
    from aspen.pipeline import ledger
    from aspen.settings import Settings

    assert dag.get_task("expectations").trigger_rule == "none_failed"
    pair = dag.partial_subset(["apply", "maintain"], include_upstream=False)
    settings = Settings(lake=str(lake))
    versions = {t: DeltaTable(str(lake / t)).version() for t in ("link", "variables")}
    with MaintainerLease(settings, "aspen maintain --runtime spark --follow", follower=True):
        followed = pair.test(run_conf={"lake": str(lake), "runtime": "spark", "partitions": 2})
    states = {ti.task_id: ti.state for ti in followed.get_task_instances()}
    assert states == {"apply": TaskInstanceState.SKIPPED, "maintain": TaskInstanceState.SKIPPED}
    assert ledger.last_committed(settings).batch_id == 1
    assert {t: DeltaTable(str(lake / t)).version() for t in versions} == versions


@pytest.mark.parametrize(("params", "message"), [
    ({"lake": "/somewhere/else"}, "the run's 'lake' Param '/somewhere/else' is not allowed"),
    ({"inbox": "/etc"}, "the run's 'inbox' Param '/etc' is not allowed"),
    ({"inbox": "INBOX/../.."}, "has a '..' segment"),
])
def test_lake_and_inbox_params_the_run_may_not_use_fail_the_task(
    dagbag, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, params, message
) -> None:
    """The ingest task with a stand-in context: one line, before anything is read or moved."""
    from airflow.sdk.exceptions import AirflowFailException

    monkeypatch.setenv("ASPEN_LAKE", str(tmp_path / "lake"))
    monkeypatch.setenv("ASPEN_INBOX", str(tmp_path / "inbox"))
    monkeypatch.delenv("ASPEN_ALLOWED_ROOTS", raising=False)
    body = dagbag.dags["aspen_pipeline"].task_dict["ingest"].python_callable
    params = {k: v.replace("INBOX", str(tmp_path / "inbox")) for k, v in params.items()}
    monkeypatch.setitem(body.__globals__, "get_current_context", lambda: {"params": params})
    with pytest.raises(AirflowFailException, match=message):
        body()


def test_an_inbox_param_under_an_allowed_root_is_used(
    dagbag, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASPEN_LAKE", str(tmp_path / "lake"))
    monkeypatch.setenv("ASPEN_ALLOWED_ROOTS", str(tmp_path / "inboxes"))
    body = dagbag.dags["aspen_pipeline"].task_dict["ingest"].python_callable
    params = {"inbox": str(tmp_path / "inboxes" / "today")}
    monkeypatch.setitem(body.__globals__, "get_current_context", lambda: {"params": params})
    assert body() == []  # the inbox does not exist yet: nothing to ingest, no failure
