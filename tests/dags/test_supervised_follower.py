"""The aspen_pipeline DAG with its ``follower`` Param on: real dag.test() runs over a small lake
and inbox. The first run starts a follower that ingests the inbox's file, applies and maintains
it (ingest, apply and maintain skip; the expectations and publish run); the next run finds it
healthy; after a ``kill -9`` the next one starts another, which takes over the dead one's lease
and maintains the file landed meanwhile. The follower is stopped at the end whatever happens."""

from __future__ import annotations

import copy
import json
import os
import signal
from pathlib import Path

import pytest

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

CYCLE = [
    {"op": "insert", "relation": "link", "src": "n1", "dst": "n2", "cost": 2.0},
    {"op": "insert", "relation": "link", "src": "n2", "dst": "n3", "cost": 1.5},
    {"op": "insert", "relation": "link", "src": "n3", "dst": "n1", "cost": 4.0},
]
NODES = ("n1", "n2", "n3")


def _land(inbox: Path, name: str, records: list[dict]) -> None:
    """Land an update file the way a writer should: a hidden name, then a rename."""
    hidden = inbox / f".{name}"
    hidden.write_text("".join(json.dumps(r) + "\n" for r in records))
    hidden.rename(inbox / name)


def _reachable(settings) -> set[tuple[str, str]]:
    from aspen.lake.committed import read_committed

    frame = read_committed(settings, "reachable")
    return set(zip(frame["src"], frame["dst"], strict=True))


def test_the_pipeline_keeps_a_supervised_follower(
    airflow_db: Path, dagbag, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str], fresh_pipeline_assets: None,
) -> None:
    from airflow.utils.state import DagRunState, TaskInstanceState
    from deltalake import DeltaTable

    from aspen.lake.lease import current_holder, live_follower
    from aspen.pipeline import ledger
    from aspen.pipeline.supervise import stop_follower, watched_inbox
    from aspen.pipeline.verify import verify_lake
    from aspen.settings import Settings
    from aspen.spark.host_process import process_alive

    success, skipped = TaskInstanceState.SUCCESS, TaskInstanceState.SKIPPED
    lake, inbox = tmp_path / "lake", tmp_path / "inbox"
    log = tmp_path / ".aspen-follower.log"  # <inbox>/../.aspen-follower.log
    inbox.mkdir()
    _land(inbox, "links.jsonl", CYCLE)
    monkeypatch.setenv("ASPEN_LAKE", str(lake))
    monkeypatch.delenv("ASPEN_INBOX", raising=False)  # the inbox defaults to <lake>/../inbox
    monkeypatch.setenv("SPARK_MASTER", "local[2]")
    dag = dagbag.dags["aspen_pipeline"]
    for task in dag.tasks:  # a failure should fail the test now, not after retry delays
        monkeypatch.setattr(task, "retries", 0)
        # an in-process dag.test() writes the run's conf into the task's own params: keep
        # this run's "follower": True from outliving the test in the session's DagBag
        monkeypatch.setattr(task, "params", copy.deepcopy(task.params))
    conf = {"lake": str(lake), "follower": True, "runtime": "local", "partitions": 2}
    # the later runs need only the follower and ingest tasks (the expectations ran in the first)
    warm = dag.partial_subset(["follower", "ingest"], include_upstream=False)
    settings = Settings(lake=str(lake))
    try:
        run = dag.test(run_conf=conf)
        states = {ti.task_id: ti.state for ti in run.get_task_instances()}
        printed = capfd.readouterr().out
        assert states == {"follower": success, "ingest": skipped, "readings": skipped,
                          "apply": skipped, "maintain": skipped, "expectations": success,
                          "publish": success}, \
            printed[-3000:] + log.read_text()[-3000:]
        assert run.state == DagRunState.SUCCESS
        assert "follower started (no maintainer has held the lease): pid" in printed
        first = live_follower(settings)
        assert first is not None and watched_inbox(first) == inbox.resolve()
        assert [p.name for p in inbox.iterdir() if p.is_file()] == []
        assert [p.name for p in (inbox / "ingested").iterdir()] == ["links.jsonl"]
        assert ledger.last_committed(settings).batch_id == 1  # the follower's batch
        assert _reachable(settings) == {(a, b) for a in NODES for b in NODES}
        assert verify_lake(settings).ok
        results = DeltaTable(str(lake / "expectation_results")).to_pandas()
        assert set(results["batch_id"]) == {1} and results["success"].all()
        assert DeltaTable(str(lake / "summary")).to_pandas().set_index("name").loc[
            "link", "row_count"] == 3

        again = warm.test(run_conf=conf)
        states = {ti.task_id: ti.state for ti in again.get_task_instances()}
        assert states == {"follower": success, "ingest": skipped}
        assert f"follower healthy: pid {first.pid} on" in capfd.readouterr().out
        assert live_follower(settings).pid == first.pid  # not started again

        os.kill(first.pid, signal.SIGKILL)  # kill -9: its lease row stays, unreleased
        _land(inbox, "cut.jsonl", [{"op": "delete", "relation": "link", "src": "n3",
                                    "dst": "n1"}])
        third = warm.test(run_conf=conf)
        states = {ti.task_id: ti.state for ti in third.get_task_instances()}
        printed = capfd.readouterr().out
        assert states == {"follower": success, "ingest": skipped}, printed[-3000:]
        assert f"follower started (the holder pid {first.pid} on " in printed
        restarted = live_follower(settings)
        assert restarted is not None and restarted.pid != first.pid
        # the skipped ingest waited for the new follower to ingest and commit the landed file
        assert ledger.last_committed(settings).batch_id == 2
        assert _reachable(settings) == {("n1", "n2"), ("n2", "n3"), ("n1", "n3")}
        assert verify_lake(settings).ok
        # two starts logged
        assert log.read_text().count(" -m aspen.pipeline.maintainer_main --lake ") == 2
    finally:
        stopped = stop_follower(settings)
    assert stopped is not None and stopped.pid == restarted.pid
    assert current_holder(settings).released
    assert not process_alive(restarted.pid)
