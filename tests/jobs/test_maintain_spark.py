"""``maintain --runtime spark``: partitions as query nodes over a real Delta lake.

The same workload on 1, 4 and 12 partitions gives the views and the provenance functions of
``--runtime local`` and of from-scratch evaluation; the tables stay readable by delta-rs at reader
version 1; switching runtime rebuilds; the rounds run with their own SQL conf. Crashed batches and
their reruns: ``test_maintain_spark_reruns.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from deltalake import DeltaTable
from spark_lake_workload import assert_views_exact, ingest, workload

from aspen.catalog import VIEWS
from aspen.errors import ConfigError
from aspen.lake.deltars import read_table
from aspen.pipeline import ledger
from aspen.pipeline.maintain_local import maintain_local
from aspen.pipeline.maintain_spark import NODE_STATE, maintain_spark, round_conf
from aspen.pipeline.spark_rounds import read_stored_state
from aspen.pipeline.verify import verify_lake
from aspen.runtime.node import NodeRuntime
from aspen.runtime.rounds import state_digest
from aspen.settings import Settings
from aspen.spark.checkpoint import CHECKPOINT_LEVEL_CONF, checkpointed, checkpointed_rdd
from aspen.spark.phase_meter import jobs_started
from aspen.spark.session import TINY_DATA_SQL_CONF, temporary_conf

pytestmark = pytest.mark.spark


@pytest.mark.slow
def test_spark_equals_local_and_scratch_on_1_4_12_partitions(spark, lake: Settings,
                                                             tmp_path: Path) -> None:
    batches = workload(seed=4)
    ingest(spark, lake, tmp_path / "1.jsonl", batches[0])
    maintain_local(lake, spark=spark, partitions=2)
    ingest(spark, lake, tmp_path / "2.jsonl", batches[1])
    assert maintain_spark(lake, spark=spark, partitions=4).batch_id == 2  # rebuilt from local
    assert_views_exact(lake)
    metrics = read_table(lake, "metrics")
    default = metrics[(metrics["node"] == -1) & (metrics["batch_id"] == 2)
                      & (metrics["metric"] == "hosts")]["value"]
    assert list(default) == [min(4, spark.sparkContext.defaultParallelism)]  # a host per core
    ingest(spark, lake, tmp_path / "3.jsonl", batches[2])
    # incremental, the 4 nodes on 2 hosts (Spark tasks): mail between a host's nodes stays in
    # its task
    jobs_before = jobs_started(spark)
    report = maintain_spark(lake, spark=spark, partitions=4, hosts=2)
    jobs_run = jobs_started(spark) - jobs_before
    assert report.deleted_vars > 0 and report.inserted_vars > 0
    assert_views_exact(lake)
    assert maintain_spark(lake, spark=spark, partitions=4).nothing_to_do

    metrics = read_table(lake, "metrics")
    totals = metrics[(metrics["node"] == -1) & (metrics["batch_id"] == 3)]
    counters = totals.set_index("metric")["value"]
    assert counters["rounds"] >= 1 and counters["updates_in"] == report.deleted_vars + \
        report.inserted_vars and counters["rows_shipped"] > 0 and counters["bytes_shipped"] > 0
    assert counters["hosts"] == 2 and counters["subrounds"] >= counters["rounds"]
    assert counters["kill_rows"] <= counters["rows_shuffled"] <= counters["rows_shipped"]
    # the Spark jobs the metrics report are those Spark ran for the batch, phase by phase
    phases = ("apply", "read", "rounds", "publish", "write")
    assert counters["spark_jobs"] == jobs_run == sum(counters[f"{p}_spark_jobs"] for p in phases)
    assert counters["rounds_spark_jobs"] >= counters["rounds"]  # each round runs its own
    # the phases are measured one after the other within the batch's wall time
    assert 0 < sum(counters[f"{p}_seconds"] for p in phases) <= counters["wall_seconds"]
    for table in (*VIEWS, NODE_STATE):  # the dashboard's delta-rs reads every table
        assert DeltaTable(lake.table_uri(table)).protocol().min_reader_version == 1

    for partitions in (12, 1):  # another partition count: rebuilt, same views and functions
        # (a host, a Spark task, per node)
        assert not maintain_spark(lake, spark=spark, partitions=partitions,
                                  hosts=partitions).nothing_to_do
        assert_views_exact(lake)
        if partitions == 12:
            assert_only_the_nodes_that_ran_are_rewritten(spark, lake, tmp_path)
    maintain_local(lake, spark=spark, partitions=2)  # and back to the local runtime
    assert verify_lake(lake).ok
    runtimes = list(read_table(lake, "ledger").sort_values("batch_id")["runtime"])
    assert runtimes == ["local", *["spark"] * 7, "local"]  # 12 partitions: three more batches


def _state_files(lake: Settings) -> dict[tuple[int, str], set[str]]:
    """(node, part) → the data files of ``node_state`` holding it (the table is partitioned)."""
    actions = DeltaTable(lake.table_uri(NODE_STATE)).get_add_actions(flatten=True)
    paths, nodes, parts = (actions.column(c).to_pylist()
                           for c in ("path", "partition.node", "partition.part"))
    out: dict[tuple[int, str], set[str]] = {}
    for path, node, part in zip(paths, nodes, parts, strict=True):
        out.setdefault((int(node), part), set()).add(path)
    return out


def assert_only_the_nodes_that_ran_are_rewritten(spark, lake: Settings, tmp_path: Path) -> None:
    """A batch of one new link runs a few of the 12 nodes: the rounds read only their states,
    and the MERGE rewrites only their files of ``node_state``: every one's journal, and the
    base of those compacted."""
    assert DeltaTable(lake.table_uri(NODE_STATE)).metadata().partition_columns == \
        ["node", "part"]
    before = _state_files(lake)
    ingest(spark, lake, tmp_path / "one-link.jsonl",
           [{"op": "insert", "relation": "link", "src": "n5", "dst": "n6", "cost": 9.0}])
    report = maintain_spark(lake, spark=spark, partitions=12, hosts=12)
    assert_views_exact(lake)
    metrics = read_table(lake, "metrics")
    ran = set(metrics[(metrics["batch_id"] == report.batch_id) & (metrics["node"] >= 0)
                      & (metrics["metric"] == "processed")]["node"])
    after = _state_files(lake)
    assert 0 < len(ran) < 12, ran
    rewritten = {key for key in after if after[key] != before.get(key)}
    assert {node for node, part in rewritten if part == "journal"} == ran
    assert {node for node, _part in rewritten} == ran
    compacted = set(metrics[(metrics["batch_id"] == report.batch_id) & (metrics["node"] >= 0)
                            & metrics["metric"].isin(["dumps", "publish_dumps"])
                            & (metrics["value"] > 0)]["node"])
    assert {node for node, part in rewritten if part == "base"} == compacted
    # the batch before ran every node in this application: their host processes still hold
    # them, so none is decoded or replayed (aspen.spark.host_process)
    restores = metrics[(metrics["batch_id"] == report.batch_id) & (metrics["node"] >= 0)
                       & metrics["metric"].isin(["decodes", "replayed", "publish_restores"])]
    assert len(restores) > 0 and restores["value"].sum() == 0, restores

    # journals kept (a budget no journal reaches): the next batches rewrite no base at all, and
    # their rounds restore nodes from stored bases plus journals that span batches
    # (on 5 hosts, then on one: hosts are scheduling, not state — no rebuild)
    for name, hosts, record in [("two-link", 5, {"op": "insert", "relation": "link",
                                                 "src": "n6", "dst": "n7", "cost": 9.0}),
                                ("drop-link", 1, {"op": "delete", "relation": "link",
                                                  "src": "n5", "dst": "n6"})]:
        before = _state_files(lake)
        ingest(spark, lake, tmp_path / f"{name}.jsonl", [record])
        report = maintain_spark(lake, spark=spark, partitions=12, compact_over=2**40,
                                hosts=hosts)
        assert not report.nothing_to_do and report.batch_id == ledger.last_committed(
            lake).batch_id
        assert_views_exact(lake)
        after = _state_files(lake)
        rewritten = {key for key in after if after[key] != before.get(key)}
        assert rewritten and all(part == "journal" for _node, part in rewritten), rewritten
    assert_stored_bases_read_back(lake)


def assert_stored_bases_read_back(lake: Settings) -> None:
    """What a task reads on a cache miss: each node's base bytes at the table's version, equal
    to their digest, restoring a node."""
    table = DeltaTable(lake.table_uri(NODE_STATE))
    bases = table.to_pandas(partitions=[("part", "=", "base")])
    assert len(bases) == 12
    for node, digest in zip(bases["node"], bases["digest"], strict=True):
        data = read_stored_state(lake.table_uri(NODE_STATE), table.version(), int(node))
        assert state_digest(data) == bytes(digest)
        assert NodeRuntime.load(data).me == int(node)


def test_rounds_run_with_the_tiny_data_sql_conf_and_give_the_session_its_conf_back(spark) -> None:
    """The rounds and the publish interpret expressions and plan without adaptive execution,
    a shuffle partition per host, whatever the application's conf; the write phase after them
    gets the application's conf back."""
    compiled = {"spark.sql.adaptive.enabled": "true", "spark.sql.codegen.wholeStage": "true",
                "spark.sql.codegen.factoryMode": "FALLBACK", "spark.sql.shuffle.partitions": "7"}
    assert set(TINY_DATA_SQL_CONF) < set(compiled)
    with temporary_conf(spark, compiled):  # the test session's own conf back after
        with round_conf(spark, 3):
            assert {name: spark.conf.get(name) for name in TINY_DATA_SQL_CONF} == \
                TINY_DATA_SQL_CONF
            assert spark.conf.get("spark.sql.shuffle.partitions") == "3"
        assert {name: spark.conf.get(name) for name in compiled} == compiled


def _checkpoint_level(frame):
    return checkpointed_rdd(frame).getStorageLevel()


def test_a_batch_checkpoints_at_the_storage_level_the_application_sets(spark, tmp_path: Path,
                                                                       ) -> None:
    """``spark.aspen.checkpointStorageLevel=DISK_ONLY`` keeps the checkpointed rounds out of
    memory (the 2,000-node build's driver heap); unset, Spark's default keeps them in memory
    first; a name that is not a storage level stops ``maintain`` before any work."""
    with temporary_conf(spark, {CHECKPOINT_LEVEL_CONF: "DISK_ONLY"}):
        on_disk = checkpointed(spark.range(5), spark)
        assert _checkpoint_level(on_disk).useDisk() and not _checkpoint_level(on_disk).useMemory()
        assert on_disk.count() == 5
    assert _checkpoint_level(checkpointed(spark.range(5), spark)).useMemory()
    with temporary_conf(spark, {CHECKPOINT_LEVEL_CONF: "ON_A_FLOPPY"}), \
            pytest.raises(ConfigError, match="not a Spark storage level"):
        maintain_spark(Settings(lake=str(tmp_path / "lake")), spark=spark)
    assert not (tmp_path / "lake").exists()
