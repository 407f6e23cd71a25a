"""``aspen maintain --runtime spark``: the views maintained by query nodes that are Spark
partitions.

One maintained batch (the round protocol of :mod:`aspen.runtime.rounds`, on Spark):

1. apply every ingested batch to the base tables (Delta MERGE), restore any table a failed run
   wrote past the last committed batch (:func:`aspen.pipeline.ledger.restore_uncommitted`);
2. read from the ``variables`` registry the instances born and the variables killed since the
   last batch: births become ``fact`` rows at the node owning their first value, deaths ``kill``
   rows for every node;
3. rounds: ``applyInPandas(host_round)`` grouped by host over the state rows of the hosts' nodes
   and the mail — inside each group one host runs the engine's operators of its nodes that have
   mail (or, in a flush round, buffered MinShip entries), delivering mail between its own nodes
   in sub-rounds (:func:`aspen.runtime.rounds.run_host`); the messages they emit for nodes on
   other hosts are the next round's mail, and the shuffle of the next ``groupBy`` is the
   network. Only hosts with such nodes take part; the driver collects only control data
   (per-channel message counts and bytes, per-node flags and counters). Each host's work runs
   in its host process, which keeps the host's nodes in memory from task to task
   (:mod:`aspen.spark.host_process`), and each host gets a task of its own (no adaptive
   coalescing);
4. publish, a task per host as in the rounds: each node that ran lists the view rows it added or
   whose provenance changed and the rows it dropped since it last published (it keeps the
   published rows' formulas in its state; the publish joins the node's journal, which outlives
   the batch until it is compacted);
5. write, the tables concurrently: the node journals into ``node_state``, replacing the
   partitions of the nodes that ran (a node's base state bytes only when it was compacted this
   batch), each changed view MERGEd with exactly those rows (insert, update, delete by key);
   metrics rows; then the ledger row, last, recording every table version.

A crash anywhere before the ledger row leaves the ledger at the previous batch; the rerun restores
the tables written since and recomputes the batch from the committed node states.
"""

from __future__ import annotations

import dataclasses
import functools
from collections import defaultdict
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aspen.catalog import VIEWS
from aspen.crashpoints import crash_point
from aspen.errors import ConfigError, LakeError
from aspen.lake.committed import committed_versions, read_committed
from aspen.lake.deltars import (
    partition_columns,
    read_table,
    table_columns,
    table_exists,
    table_version,
)
from aspen.lake.view_log import (
    CHANGE_DELETE,
    CHANGE_UPSERT,
    VIEW_CHANGES,
    change_schema,
    compact_views,
    truncate_log,
)
from aspen.pipeline import ledger
from aspen.pipeline.batch import MaintainReport, run_batch, write_metrics
from aspen.pipeline.changes import registry_since
from aspen.pipeline.faults import task_crash_point
from aspen.pipeline.order_table import (
    VARIABLE_ORDER_TABLE,
    placement_through,
    read_placement,
    write_placement,
)
from aspen.pipeline.spark_rounds import (
    ROUND_DDL,
    SIZE_STAT,
    RoundConfig,
    host_publish,
    host_round,
    in_host_process,
    route_facts,
)
from aspen.pipeline.view_tables import view_ddl
from aspen.provenance.placement import VariablePlacement
from aspen.runtime.rounds import host_of, rounds_to_quiescence
from aspen.settings import Settings
from aspen.spark.checkpoint import checkpoint_level, checkpointed, checkpointed_rdd
from aspen.spark.phase_meter import PhaseMeter
from aspen.spark.session import TINY_DATA_SQL_CONF, temporary_conf

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pandas as pd
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = ["NODE_STATE", "SparkBatchStats", "default_hosts", "maintain_spark", "round_conf"]

NODE_STATE = "node_state"
#: Columns a node_state table written by this version has (an older table is rebuilt). Two rows
#: a node: ``part`` = ``base`` (``data``: its state bytes at its last compaction, with their
#: ``digest``) and ``journal`` (``data``: the journal since; ``pending``, ``view_rows``,
#: ``prov_bytes``); partitioned by node and part, so a batch rewrites a base only when the node
#: was compacted.
NODE_STATE_COLUMNS = ("node", "part", "data", "digest", "pending", "bytes", "view_rows",
                      "prov_bytes", "batch_id")
NODE_STATE_PARTITIONS = ["node", "part"]
RUNTIME = "spark"
#: How many tables (the views and ``node_state``) are written at once.
WRITE_THREADS = 4


@dataclass
class SparkBatchStats:
    """Control data the driver gathers while running one batch."""

    rounds: int = 0
    node_rounds: int = 0    # node steps (a node's run in a sub-round), summed over the rounds
    subrounds: int = 0      # the most sub-rounds a host ran, summed over the rounds
    rows_shipped: int = 0   # messages between nodes and kill notices
    rows_shuffled: int = 0  # of which crossed a round's shuffle (to a node on another host)
    hosts: int = 0          # Spark tasks a round runs the nodes on
    kill_rows: int = 0
    bytes_shipped: int = 0
    node: dict[int, dict[str, float]] = field(default_factory=lambda: defaultdict(
        lambda: defaultdict(float)))


def _empty(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame([], ROUND_DDL)


def _node_in(nodes: set[int], column: str = "node") -> str:
    """A SQL condition: ``column`` is one of ``nodes`` (``false`` for none).

    >>> _node_in({2, 1}, "t.node"), _node_in(set())
    ('t.node IN (1, 2)', 'false')
    """
    return f"{column} IN ({', '.join(str(n) for n in sorted(nodes))})" if nodes else "false"


def _read_changes(spark: SparkSession, settings: Settings, after: int, through: int,
                  partitions: int) -> tuple[DataFrame, DataFrame]:
    """``fact`` rows for the instances born in (after, through] and alive at ``through``;
    ``kill`` rows (one per node) for the variables born by ``after`` that died in between."""
    from pyspark.sql import functions as F

    variables = spark.read.format("delta").load(settings.table_uri("variables"))
    born, died = F.col("inserted_batch"), F.col("deleted_batch")
    alive = died.isNull() | (died > through)
    births = variables.where((born > after) & (born <= through) & alive) \
        .select("var", "relation", "values")
    facts = births.mapInPandas(functools.partial(route_facts, partitions), ROUND_DDL)
    deaths = variables.where((born <= after) & (died > after) & (died <= through)).select("var")
    nodes = spark.range(partitions).select(F.col("id").cast("int").alias("node"))
    kills = deaths.crossJoin(nodes).select(
        "node", F.lit("kill").alias("kind"), F.lit(None).cast("int").alias("src"),
        F.col("var").alias("name"), F.lit(None).cast("binary").alias("payload"),
        F.lit(None).cast("binary").alias("prov"), F.lit(None).cast("boolean").alias("pending"),
        F.lit(None).cast("boolean").alias("changed"), F.lit(None).cast("double").alias("value"),
        F.lit(None).cast("binary").alias("journal"), F.lit(None).cast("binary").alias("digest"),
    )
    return facts, kills


def _read_states(spark: SparkSession, settings: Settings, version: int) -> DataFrame:
    """Version ``version`` of the node states as ``state`` rows: a node's journal and its
    base's digest and size, not the base's bytes (a task reads them from ``node_state`` only if
    its worker does not hold the node: :func:`~aspen.pipeline.spark_rounds.read_stored_state`).
    ``node_state`` is partitioned by node and part, so a filter on ``node`` reads only those
    nodes' files, and the bases' files are not read here at all."""
    from pyspark.sql import functions as F

    table = spark.read.format("delta").option("versionAsOf", version) \
        .load(settings.table_uri(NODE_STATE))
    base = table.where("part = 'base'").select("node", "digest", "bytes")
    journal = table.where("part = 'journal'").select("node", F.col("data").alias("journal"),
                                                     "pending")
    return base.join(journal, "node", "left").select(
        F.col("node").cast("int").alias("node"), F.lit("state").alias("kind"),
        F.lit(None).cast("int").alias("src"), F.lit(None).cast("string").alias("name"),
        F.lit(None).cast("binary").alias("payload"), F.lit(None).cast("binary").alias("prov"),
        F.coalesce("pending", F.lit(False)).alias("pending"), F.lit(False).alias("changed"),
        F.col("bytes").cast("double").alias("value"), "journal", "digest",
    )


def _release(frame: DataFrame) -> None:
    """Drop the blocks of a ``localCheckpoint``-ed DataFrame now, rather than when the JVM's
    garbage collector lets Spark's context cleaner find it unreferenced (classic PySpark: the
    checkpointed RDD sits under the DataFrame's ``LogicalRDD`` plan)."""
    checkpointed_rdd(frame).unpersist(False)


@dataclass
class _StateRows:
    """Where each node's current ``state`` row is: in the committed ``node_state`` table until
    the node first runs, then in the checkpointed output of the last round that ran it. A round
    reads the rows of the nodes it runs only, so a node that does not run costs nothing; a
    round's output is released once no node's row and no mail is left in it."""

    stored: DataFrame
    held: dict[int, int] = field(default_factory=dict)        # node → round holding its row
    outputs: dict[int, DataFrame] = field(default_factory=dict)  # round → its output

    def of(self, nodes: set[int]) -> DataFrame:
        """The current state rows of ``nodes`` (a node without one has none)."""
        by_round: dict[int, set[int]] = defaultdict(set)
        for node in nodes:
            by_round[self.held.get(node, -1)].add(node)
        parts = [(self.stored if r < 0 else self.outputs[r].where("kind = 'state'"))
                 .where(_node_in(ns)) for r, ns in sorted(by_round.items())]
        parts = parts or [self.stored.where("false")]
        return functools.reduce(lambda a, b: a.unionByName(b), parts)

    def ran(self, round_no: int, out: DataFrame, nodes: set[int]) -> None:
        """Round ``round_no`` ran ``nodes`` (their rows are now in ``out``)."""
        self.outputs[round_no] = out
        self.held.update(dict.fromkeys(nodes, round_no))
        kept = set(self.held.values()) | {round_no}  # the last round's output holds the mail
        for r in [r for r in self.outputs if r not in kept]:
            _release(self.outputs.pop(r))

    def release(self) -> None:
        """Release every round's output (after the publish read the last of them)."""
        for out in self.outputs.values():
            _release(out)
        self.outputs.clear()


#: hosts → for each host, an int whose Spark hash partition among ``hosts`` is that host
_HOST_KEYS: dict[int, list[int]] = {}


def _host_keys(spark: SparkSession, hosts: int) -> list[int]:
    """For each host ``h``, an int that Spark's hash partitioning (Murmur3, the ``hash`` SQL
    function) sends to shuffle partition ``h`` of ``hosts``: grouping a round by these keys
    gives each host its own task (hashing ``h`` itself would let two hosts share one)."""
    if hosts not in _HOST_KEYS:
        from pyspark.sql import functions as F

        found: dict[int, int] = {}
        for row in spark.range(64 * hosts).select(
                F.col("id").cast("int").alias("key"),
                F.expr(f"pmod(hash(cast(id AS INT)), {hosts})").alias("part")).collect():
            found.setdefault(int(row.part), int(row.key))
        if len(found) < hosts:
            raise ConfigError(f"no hash key found for every one of {hosts} hosts")
        _HOST_KEYS[hosts] = [found[h] for h in range(hosts)]
    return _HOST_KEYS[hosts]


def _round(spark: SparkSession, states: DataFrame, mail: DataFrame,
           config: RoundConfig) -> DataFrame:
    def run_host(rows: pd.DataFrame) -> pd.DataFrame:
        return in_host_process(config, host_round, rows)

    key = _host_key(spark, config.hosts or config.partitions)
    out = states.unionByName(mail).groupBy(key).applyInPandas(run_host, ROUND_DDL)
    return checkpointed(out, spark)


def _host_key(spark: SparkSession, hosts: int) -> Column:
    """The grouping key that gives the host of each row's ``node`` (``node % hosts``) a shuffle
    partition of its own among ``hosts`` (:func:`_host_keys`; grouping by the host number itself
    would let Murmur3 send two hosts to one partition and none to another)."""
    from pyspark.sql import functions as F

    keys = F.array(*[F.lit(k) for k in _host_keys(spark, hosts)])
    return F.element_at(keys, (F.col("node") % F.lit(hosts) + F.lit(1)).cast("int")).alias("host")


def round_conf(spark: SparkSession, hosts: int) -> AbstractContextManager[None]:
    """While rounds and the publish run: a shuffle partition per host, each host its own task,
    and the tiny-data SQL settings (:data:`~aspen.spark.session.TINY_DATA_SQL_CONF`); the
    session's conf is put back after.

    Their rows are few and small (a node's state bytes stay in ``node_state``, mail is bundled
    per destination), so Spark's time there is planning: expressions are interpreted rather
    than compiled per query, and there is no adaptive execution, which re-plans each stage as
    a job of its own and would coalesce the hosts' shuffle partitions into one task, so that the
    hosts no longer run in parallel. The write phase, whose MERGEs join a batch's changes
    against whole views, keeps the session's conf (measurements: docs/performance.md).

    Example (needs a session, so not a doctest): inside ``with round_conf(spark, 2):``,
    ``spark.conf.get("spark.sql.shuffle.partitions")`` is ``'2'``; after it, what it was.
    """
    return temporary_conf(spark, {"spark.sql.shuffle.partitions": str(hosts), **TINY_DATA_SQL_CONF})


def _control(out: DataFrame) -> list[Any]:
    """One small collect, no shuffle: per-channel message counts and bytes (``sent`` rows the
    senders wrote), node flags and counters."""
    return out.where("kind IN ('state', 'stat', 'sent')").select(
        "kind", "node", "src", "name", "value", "pending", "changed").collect()


def _host_nodes(nodes: set[int], config: RoundConfig) -> set[int]:
    """Every node of the hosts that run ``nodes`` (a host may wake any of its nodes).

    >>> sorted(_host_nodes({1}, RoundConfig(6, (), None, hosts=2)))
    [1, 3, 5]
    """
    hosts = config.hosts or config.partitions
    busy = {host_of(n, hosts) for n in nodes}
    return {n for n in range(config.partitions) if host_of(n, hosts) in busy}


def _run_rounds(spark: SparkSession, rows: _StateRows, mail: DataFrame, first_active: set[int],
                config: RoundConfig, stats: SparkBatchStats) -> set[int]:
    """Rounds to quiescence, then flush rounds until a flush round sends nothing; returns the
    nodes that ran.

    A round's input is the state rows of the nodes of the hosts it runs (those with mail, and
    in a flush round those with buffered MinShip entries) and the mail, both read from
    checkpoints, so the plan stays one shuffle deep however many rounds a batch takes."""
    with round_conf(spark, config.hosts or config.partitions):
        return _rounds_to_quiescence(spark, rows, mail, first_active, config, stats)


def _rounds_to_quiescence(spark: SparkSession, rows: _StateRows, mail: DataFrame,
                          first_active: set[int], config: RoundConfig,
                          stats: SparkBatchStats) -> set[int]:
    """:func:`~aspen.runtime.rounds.rounds_to_quiescence` with a round a Spark job: returns the
    nodes that ran."""
    pending: set[int] = set()
    ran: set[int] = set()

    def one_round(nodes: set[int], flushing: bool) -> set[int]:
        nonlocal mail
        out = _round(spark, rows.of(_host_nodes(nodes, config)), mail,
                     dataclasses.replace(config, flush=flushing))
        control = _control(out)
        stats.rounds += 1
        rows.ran(stats.rounds, out, {row.node for row in control if row.kind == "state"})
        crash_point(f"maintain:after-round-{stats.rounds}")
        active, subrounds = set(), 0.0
        for row in control:
            if row.kind == "sent":
                counters = stats.node[row.src]
                if row.name.endswith("rows"):
                    stats.rows_shipped += int(row.value)
                    counters["rows_shipped"] += row.value
                    if row.name == "rows":
                        active.add(row.node)
                        stats.rows_shuffled += int(row.value)
                else:
                    stats.bytes_shipped += int(row.value)
                    counters["bytes_shipped"] += row.value
            elif row.kind == "state":
                if not row.changed:
                    continue
                pending.discard(row.node)
                if row.pending:
                    pending.add(row.node)
                ran.add(row.node)
                stats.node[row.node]["state_bytes"] = float(row.value)
            elif row.name == "subrounds":
                subrounds = max(subrounds, row.value)
            else:
                if row.name == "steps":
                    stats.node_rounds += int(row.value)
                stats.node[row.node][row.name] += row.value
        stats.subrounds += int(subrounds)
        mail = out.where("kind = 'msg'")
        return active

    rounds_to_quiescence(first_active, pending, one_round)
    return ran


def _state_partitions(ran: set[int], compacted: set[int]) -> str:
    """The ``node_state`` partitions a batch replaces: the journals of the nodes that ran and
    the bases of those compacted (a condition on the partition columns only).

    >>> _state_partitions({0, 3}, {3})
    "(part = 'journal' AND node IN (0, 3)) OR (part = 'base' AND node IN (3))"
    """
    return f"(part = 'journal' AND {_node_in(ran)}) OR (part = 'base' AND {_node_in(compacted)})"


def _write_states(settings: Settings, published: DataFrame, ran: set[int], compacted: set[int],
                  batch_id: int, rebuild: bool) -> None:
    """Replace in ``node_state`` the journals of the nodes that ran and the bases of those
    ``compacted`` this batch (the publish rows that carry state bytes), one commit.

    The table is partitioned by node and part, one row a partition, so the batch's rows replace
    whole partitions: an overwrite whose ``replaceWhere`` names only partition columns drops
    the old files without reading them and writes the new ones, where a MERGE would join the
    old files' rows to find them (faster, and in fewer Spark jobs; measurements:
    docs/performance.md). Delta checks that every row
    written lies in the replaced partitions. A node's base, the bulk of its state, is written
    only when it was compacted; untouched nodes' files stay as they are."""
    from pyspark.sql import functions as F

    totals = published.where("kind = 'stat'").groupBy("node").pivot(
        "name", ["view_rows", "prov_bytes"]).agg(F.first("value"))
    states = published.where("kind = 'state'")
    batch = F.lit(batch_id).cast("long").alias("batch_id")
    journals = states.join(totals, "node", "left").select(
        "node", F.lit("journal").alias("part"),
        F.coalesce("journal", F.lit(bytearray())).alias("data"),
        F.lit(None).cast("binary").alias("digest"),
        F.coalesce("pending", F.lit(False)).alias("pending"),
        F.coalesce(F.length("journal"), F.lit(0)).cast("long").alias("bytes"),
        F.coalesce("view_rows", F.lit(0)).cast("long").alias("view_rows"),
        F.coalesce("prov_bytes", F.lit(0)).cast("long").alias("prov_bytes"), batch)
    bases = states.where("payload IS NOT NULL").select(
        "node", F.lit("base").alias("part"), F.col("payload").alias("data"), "digest",
        F.lit(None).cast("boolean").alias("pending"),
        F.length("payload").cast("long").alias("bytes"), F.lit(None).cast("long")
        .alias("view_rows"), F.lit(None).cast("long").alias("prov_bytes"), batch)
    writer = journals.unionByName(bases).write.format("delta").mode("overwrite") \
        .partitionBy(*NODE_STATE_PARTITIONS)
    uri = settings.table_uri(NODE_STATE)
    if rebuild or not table_exists(settings, NODE_STATE):
        writer.option("overwriteSchema", "true").save(uri)
    elif ran:
        writer.option("replaceWhere", _state_partitions(ran, compacted)).save(uri)


def _state_is_current(settings: Settings) -> bool:
    """Whether ``node_state`` exists and was written by this version's layout (its columns,
    partitioned by node)."""
    return table_exists(settings, NODE_STATE) and \
        set(NODE_STATE_COLUMNS) <= set(table_columns(settings, NODE_STATE)) and \
        partition_columns(settings, NODE_STATE) == NODE_STATE_PARTITIONS


def _provenance_totals(settings: Settings) -> dict[str, float]:
    """Published view rows and provenance bytes over every node (on its journal row; a base
    row holds none)."""
    frame = read_table(settings, NODE_STATE, columns=["view_rows", "prov_bytes"])
    rows, data = float(frame["view_rows"].sum()), float(frame["prov_bytes"].sum())
    return {"view_rows": rows, "prov_bytes": data,
            "prov_bytes_per_tuple": data / rows if rows else 0.0}


def _view_rows(published: DataFrame, view: str, batch_id: int) -> DataFrame:
    """The published rows of ``view`` in the table's columns, plus ``dropped`` (a ``drop`` row)."""
    from pyspark.sql import functions as F

    columns = [part.split()[0] for part in view_ddl(view).split(", ")]
    parsed = published.where(F.col("kind").isin("view", "drop")).where(F.col("name") == view) \
        .select(F.from_json(F.col("payload").cast("string"), view_ddl(view)).alias("row"), "prov",
                "node", (F.col("kind") == "drop").alias("dropped"))
    return parsed.select(
        *[F.col(f"row.{c}").alias(c) for c in columns], F.col("prov").alias("provenance"),
        F.coalesce(F.length("prov"), F.lit(0)).cast("long").alias("prov_bytes"),
        F.lit(batch_id).cast("long").alias("batch_id"), F.col("node").cast("int").alias("node"),
        "dropped")


def _change_rows(published: DataFrame, views: Sequence[str], batch_id: int) -> DataFrame:
    """The published rows of ``views`` as ``view_changes`` rows (one frame, the log's columns)."""
    from pyspark.sql import functions as F

    frames = []
    for view in views:
        rows = _view_rows(published, view, batch_id)
        frames.append(rows.select(
            F.lit(view).alias("view"), "batch_id",
            F.when(F.col("dropped"), F.lit(CHANGE_DELETE)).otherwise(F.lit(CHANGE_UPSERT))
            .alias("change"),
            *[F.col(c) for c in rows.columns if c not in ("batch_id", "dropped", "provenance",
                                                          "prov_bytes", "node")],
            F.when(F.col("dropped"), F.lit(None).cast("binary")).otherwise(F.col("provenance"))
            .alias("provenance"),
            F.when(F.col("dropped"), F.lit(0).cast("long")).otherwise(F.col("prov_bytes"))
            .alias("prov_bytes"), "node"))
    union = functools.reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), frames)
    return union.select(*[
        F.col(f.name).cast(_SPARK_TYPES[str(f.type)]).alias(f.name) if f.name in union.columns
        else F.lit(None).cast(_SPARK_TYPES[str(f.type)]).alias(f.name)
        for f in change_schema()])


#: Arrow type → Spark SQL type, for the change log's columns.
_SPARK_TYPES = {"string": "string", "int64": "bigint", "int32": "int", "double": "double",
                "binary": "binary", "list<item: string>": "array<string>"}


def maintain_spark(
    settings: Settings,
    spark: SparkSession | None = None,
    partitions: int | None = None,
    mode: str | None = None,
    views: Sequence[str] = VIEWS,
    compact_over: int | None = None,
    hosts: int | None = None,
    resident: bool = True,
    rebuild: bool = False,
) -> MaintainReport:
    """Run one maintained batch on Spark (see the module docstring); ``partitions`` query nodes
    (default ``settings.partitions``), each a Spark task per round. ``views`` narrows what is
    maintained (benchmarks compare ``reachable`` alone with DRed); a lake keeps one view set.
    ``compact_over`` replaces the compaction policy by a fixed journal budget in bytes
    (:func:`~aspen.runtime.rounds.needs_compaction`; tests use it to keep journals). ``hosts``
    is how many Spark tasks a round runs the nodes on (:func:`~aspen.runtime.rounds.run_host`;
    default: :func:`default_hosts`). With ``resident`` (the default) a host's nodes stay in memory
    in a process of their own for the application's life (:mod:`aspen.spark.host_process`);
    without, in whichever Python worker ran them last. ``rebuild`` rebuilds every view and the
    node states from the registry (``aspen maintain --rebuild``); without it a damaged lake is
    refused (:class:`~aspen.pipeline.integrity.DamagedLakeError`).

    Example, on a lake::

        maintain_spark(Settings(lake="/tmp/lake"), partitions=4)
        # MaintainReport(batch_id=1, ...)
    """
    from aspen.lake.apply import apply_pending

    partitions = partitions or settings.partitions
    if hosts is not None and hosts < 1:
        raise ConfigError(f"--hosts must be at least 1, got {hosts}")
    if spark is None:
        from aspen.spark.session import get_spark

        spark = get_spark("aspen-maintain")
    hosts = min(hosts or default_hosts(spark, partitions), partitions)
    checkpoint_level(spark)  # a storage level that is not one fails here, before any work
    request = _Request(partitions, mode or settings.mode, tuple(views), compact_over, hosts,
                       resident)
    runtime = SparkBatch(spark, request)
    # a shuffle partition, so a task, per query node
    with temporary_conf(spark, {"spark.sql.shuffle.partitions": str(partitions)}):
        return run_batch(settings, runtime, PhaseMeter.for_spark(spark),
                         lambda: apply_pending(spark, settings), rebuild=rebuild)


def default_hosts(spark: SparkSession, partitions: int) -> int:
    """How many hosts a round runs the query nodes on by default: as many as the application
    runs tasks at once (``defaultParallelism``: its cores), at most one per node. More would
    add rounds' tasks that wait for a core, and host processes to start; fewer would leave
    cores idle (docs/architecture.md, "Host processes"; measurements: docs/performance.md).

    >>> default_hosts(spark, 12) == min(12, spark.sparkContext.defaultParallelism)
    True
    >>> default_hosts(spark, 1)
    1
    """
    return max(1, min(partitions, spark.sparkContext.defaultParallelism))


@dataclass(frozen=True)
class _Request:
    """What :func:`maintain_spark` was asked for, its defaults filled in."""

    partitions: int
    mode: str
    views: tuple[str, ...]
    compact_over: int | None
    hosts: int
    resident: bool


@dataclass
class _Batch:
    """What the read phase of one batch found: whether the node states are rebuilt from
    scratch, the round configuration, the first round's mail (``facts`` checkpointed,
    ``kills``), the committed state rows and the nodes that start."""

    rebuild: bool
    config: RoundConfig
    facts: DataFrame
    kills: DataFrame
    states: DataFrame
    first_active: set[int]
    placement: VariablePlacement


@dataclass
class _Publish:
    """What the publish of one batch gave: its rows (checkpointed), per view the rows upserted
    and dropped, how many rows each view grew by, and the nodes compacted."""

    rows: DataFrame
    counts: dict[str, tuple[int, int]]
    grown: dict[str, int]
    compacted: set[int]


class SparkBatch:
    """The Spark runtime as :func:`~aspen.pipeline.batch.run_batch` runs it: one batch of one
    application (its host processes keep the nodes warm between batches)."""

    name = RUNTIME
    state_tables: tuple[str, ...] = (NODE_STATE, VARIABLE_ORDER_TABLE)

    def __init__(self, spark: SparkSession, request: _Request) -> None:
        self.spark = spark
        self.request = request
        self.partitions = request.partitions
        self.mode = request.mode
        self.views = request.views
        self.stats = SparkBatchStats(hosts=request.hosts)
        self._batch: _Batch | None = None
        self._publish: _Publish | None = None
        self._ran: set[int] = set()
        self._sizes: dict[str, int] = {}
        self._last: ledger.LedgerEntry | None = None
        self._settings = Settings()
        self._force = False  # the next batch rebuilds the node states, whatever is stored

    def read(self, settings: Settings, last: ledger.LedgerEntry, through: int,
             report: MaintainReport) -> bool:
        """The registry's changes since ``last`` as the first round's mail, and the committed
        node states."""
        self._last, self._settings = last, settings
        forced, self._force = self._force, False
        self._batch = _read_batch(self.spark, settings, last, through, self.request, self.stats,
                                  report, forced)
        return self._batch is not None

    def force_rebuild(self) -> None:
        """The next batch builds every node from the registry (``node_state`` written afresh)."""
        self._force = True

    def rewrites(self) -> bool:
        """Never: the hosts publish only the rows a batch changed, so a lake written before
        the driver kept a variable order is rewritten in one by ``aspen maintain --rebuild``
        (until then readers decode its older rows node by node under another order)."""
        return False

    def _require(self) -> _Batch:
        if self._batch is None:
            raise LakeError("no batch read")
        return self._batch

    def rebuilds(self) -> bool:
        """Whether the node states are built from nothing."""
        return self._require().rebuild

    def run(self) -> None:
        """Rounds to quiescence and the flush."""
        batch = self._require()
        self._state_rows = _StateRows(batch.states)
        self._ran = _run_rounds(self.spark, self._state_rows,
                                batch.facts.unionByName(batch.kills), batch.first_active,
                                batch.config, self.stats) if batch.first_active else set()

    def publish(self, entry: ledger.LedgerEntry) -> None:
        """The nodes that ran list their views' changes, a task per host."""
        batch = self._require()
        self._publish = _publish_nodes(self.spark, self._state_rows, self._ran, batch.config,
                                       self.stats)
        _release(batch.facts)

    def view_rows(self) -> int:
        """Rows over the views after the batch (the committed sizes plus what they grew by)."""
        return sum(self._view_sizes().values())

    def _view_sizes(self) -> dict[str, int]:
        if not self._sizes:
            assert self._publish is not None and self._last is not None
            before = {} if self.rebuilds() else self._committed_sizes()
            self._sizes = {view: int(before.get(view, 0)) + self._publish.grown.get(view, 0)
                           for view in self.views}
        return self._sizes

    def _committed_sizes(self) -> dict[str, int]:
        """The views' sizes the last batch recorded in ``metrics`` (``rows:VIEW``), else
        counted from the lake."""
        assert self._last is not None
        settings = self._settings
        found: dict[str, int] = {}
        if table_exists(settings, "metrics"):
            import pyarrow.dataset as ds
            from deltalake import DeltaTable

            rows = DeltaTable(settings.table_uri("metrics")).to_pyarrow_dataset().to_table(
                filter=(ds.field("batch_id") == self._last.batch_id) & (ds.field("node") == -1))
            for name, value in zip(rows.column("metric").to_pylist(),
                                   rows.column("value").to_pylist(), strict=True):
                if name.startswith(SIZE_STAT):
                    found[name[len(SIZE_STAT):]] = int(value)
        if set(self.views) <= set(found):
            return found
        versions = committed_versions(settings)
        return {view: len(read_committed(settings, view, ["batch_id"], versions))
                if view in versions else 0 for view in self.views}

    def write_views(self, settings: Settings, entry: ledger.LedgerEntry, compact: bool,
                    report: MaintainReport) -> None:
        """The published rows appended to the change log (one Spark job), or, on a rebuild,
        every view's snapshot; a compaction after the append folds the log into snapshots."""
        assert self._publish is not None
        published = self._publish
        if self.rebuilds():
            for view in self.views:
                _view_rows(published.rows, view, entry.batch_id).where("NOT dropped") \
                    .drop("dropped").write.format("delta").mode("overwrite") \
                    .option("overwriteSchema", "true").save(settings.table_uri(view))
                crash_point(f"maintain:after-view-{view}")
            truncate_log(settings)
        else:
            changed = [view for view in self.views if view in published.counts]
            if changed:
                if not table_exists(settings, VIEW_CHANGES):
                    truncate_log(settings)  # created empty, with the log's schema
                _change_rows(published.rows, changed, entry.batch_id).write.format("delta") \
                    .mode("append").save(settings.table_uri(VIEW_CHANGES))
            crash_point("maintain:after-view-changes")
            if compact:
                compact_views(settings, self.views)
        report.view_sizes.update(self._view_sizes())
        report.view_changes.update(published.counts)

    def write_state(self, settings: Settings, entry: ledger.LedgerEntry) -> None:
        """The journals of the nodes that ran (and the bases of those compacted)."""
        assert self._publish is not None
        _write_states(settings, self._publish.rows, self._ran, self._publish.compacted,
                      entry.batch_id, self.rebuilds())
        write_placement(settings, self._require().placement, entry.batch_id)

    def write_metrics(self, settings: Settings, entry: ledger.LedgerEntry,
                      report: MaintainReport, meter: PhaseMeter) -> None:
        """Per-node counters of the rounds, the batch's totals and the views' sizes."""
        _write_metrics(settings, entry.batch_id, self.stats, meter, report,
                       _provenance_totals(settings))

    def committed(self, entry: ledger.LedgerEntry) -> None:
        """Release the publish's checkpoint (the host processes keep the nodes)."""
        self.discard()

    def discard(self) -> None:
        """Release what the batch checkpointed."""
        if self._publish is not None:
            _release(self._publish.rows)
            self._publish = None


def _read_batch(spark: SparkSession, settings: Settings, last: ledger.LedgerEntry,
                through: int, request: _Request, stats: SparkBatchStats,
                report: MaintainReport, force: bool = False) -> _Batch | None:
    """The next batch after ``last``: the updates registered since, as the first round's mail,
    and the committed node states; ``None`` when nothing was registered since. Rebuilds from
    scratch (every update, no states) when ``force``d, when the last batch ran with another
    runtime, partition count or mode, or ``node_state`` has an older layout. Counts the kill
    notices in ``stats`` and the instances in ``report``."""
    from aspen.engine.plan import PlanChoices

    partitions, mode = request.partitions, request.mode
    rebuild = force or (last.runtime, last.partitions, last.mode) != (RUNTIME, partitions, mode) \
        or not _state_is_current(settings)
    if not rebuild and through <= last.through_ingest_batch:
        return None
    after = -1 if rebuild else last.through_ingest_batch
    state_version = None if rebuild else table_version(settings, NODE_STATE)
    choices = PlanChoices(mode=mode)
    placement = _placement(settings, after, through, choices.k)
    config = RoundConfig(partitions, request.views, choices,
                         state_uri=settings.table_uri(NODE_STATE), state_version=state_version,
                         compact_over=request.compact_over, hosts=request.hosts,
                         application=spark.sparkContext.applicationId if request.resident
                         else None, order=tuple(placement.order))

    facts, kills = _read_changes(spark, settings, after, through, partitions)
    facts = checkpointed(facts, spark)
    fact_nodes = {r.node: r["count"] for r in facts.groupBy("node").count().collect()}
    killed = kills.where("node = 0").count()
    report.inserted_vars, report.deleted_vars = int(sum(fact_nodes.values())), int(killed)
    states = _empty(spark) if state_version is None else \
        _read_states(spark, settings, state_version)
    first_active = set(fact_nodes) | (set(range(partitions)) if killed else set())
    # the kill notices cross the first round's shuffle: one row per dead variable and node
    stats.kill_rows = int(killed) * partitions
    stats.rows_shipped += stats.kill_rows
    stats.rows_shuffled += stats.kill_rows
    return _Batch(rebuild, config, facts, kills, states, first_active, placement)


def _placement(settings: Settings, after: int, through: int, k: float) -> VariablePlacement:
    """The driver's variable placement after ingest batch ``through``: the stored one moved by
    the registry's changes since ``after`` (read by delta-rs in the driver: no Spark job), or,
    on a rebuild or without a stored one, built from the registry."""
    stored = read_placement(settings) if after >= 0 else None
    variables = registry_since(settings, after if stored is not None else -1)
    return placement_through(variables, after, through, stored, k)


def _publish_nodes(spark: SparkSession, state_rows: _StateRows, ran: set[int],
                   config: RoundConfig, stats: SparkBatchStats) -> _Publish:
    """Publish the nodes that ran, a task per host (checkpointed): the published rows, per view
    the rows upserted and dropped and how much it grew, and the nodes whose state was compacted
    (their bases are written). Records the nodes' publish counters in ``stats``."""
    hosts = config.hosts or config.partitions

    def publish(rows: pd.DataFrame) -> pd.DataFrame:
        out = in_host_process(config, host_publish, rows)
        # a retried task finds the nodes its first attempt published still advanced in the
        # host process (tests/jobs/test_maintain_spark_reruns.py retries every publish task once)
        task_crash_point("task:after-publish")
        return out

    with round_conf(spark, hosts):
        published = state_rows.of(ran).groupBy(_host_key(spark, hosts)).applyInPandas(
            publish, ROUND_DDL)
        published = checkpointed(published, spark)  # run now, under the round conf
    state_rows.release()
    counts: dict[str, list[int]] = {}
    grown: dict[str, int] = defaultdict(int)
    compacted: set[int] = set()
    for row in published.where("kind IN ('view', 'drop', 'stat') OR (kind = 'state' AND "
                               "payload IS NOT NULL)").groupBy(
            "kind", "node", "name", "value").count().collect():
        if row.kind == "stat" and row.name.startswith(SIZE_STAT):
            grown[row.name[len(SIZE_STAT):]] += int(row.value)
        elif row.kind == "stat":
            stats.node[row.node][row.name] = row.value
        elif row.kind == "state":
            compacted.add(row.node)  # its base bytes were made this batch: they are written
        else:
            pair = counts.setdefault(row.name, [0, 0])
            pair[0 if row.kind == "view" else 1] += int(row["count"])
    return _Publish(published, {v: (c[0], c[1]) for v, c in counts.items()}, dict(grown),
                    compacted)


def _write_metrics(settings: Settings, batch_id: int, stats: SparkBatchStats, meter: PhaseMeter,
                   report: MaintainReport, provenance: dict[str, float]) -> None:
    """Per-node counters of the rounds; totals of the batch (node -1), the views' sizes."""
    totals = {
        "rounds": stats.rounds,
        "node_rounds": stats.node_rounds,
        "spark_jobs": sum(meter.jobs.values()),
        "subrounds": stats.subrounds,
        "hosts": stats.hosts,
        "rows_shipped": stats.rows_shipped,
        "rows_shuffled": stats.rows_shuffled,
        "messages": stats.rows_shipped - stats.kill_rows,
        "kill_rows": stats.kill_rows,
        "bytes_shipped": stats.bytes_shipped,
        "state_bytes": sum(c.get("state_bytes", 0.0) for c in stats.node.values()),
        "wall_seconds": report.seconds,
        "updates_in": report.inserted_vars + report.deleted_vars,
        "view_changes_out": sum(i + d for i, d in report.view_changes.values()),
        **provenance,
        **{f"{phase}_seconds": seconds for phase, seconds in meter.seconds.items()},
        **{f"{phase}_spark_jobs": count for phase, count in meter.jobs.items()},
        **{f"{SIZE_STAT}{view}": rows for view, rows in report.view_sizes.items()},
    }
    write_metrics(settings, batch_id, {n: dict(c) for n, c in stats.node.items()}, totals)
