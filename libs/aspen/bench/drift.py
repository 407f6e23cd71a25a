"""Adaptive against static plans of a continuous query whose statistics drift (Liu 2016, Fig. 29,
on Aspen's own tables).

The query (:data:`DRIFT_SQL`): per region, the links from its seed sensors to triggered
sensors — the first step by which an active region grows::

    SELECT r.region, COUNT(*) AS links, SUM(l.cost) AS cost
    FROM region_seed r JOIN sensor s ON s.id = r.id JOIN link l ON l.src = s.id
    JOIN triggered t ON t.id = l.dst GROUP BY r.region

The drift (:func:`drift_shapes`), over a sequence of slices of the lake: the fraction of sensors
triggered rises geometrically (5 % → 50 %), and one region, :data:`HOT_REGION`, grows hot: it
gains sensors, each a seed of the region with :attr:`DriftParams.hot_degree` links, their
number multiplying by the same factor every slice. Early on the seeds' links (``r ⋈ s ⋈ l``)
are far fewer than the triggered sensors, late they are far more, so the side worth
broadcasting (or building a hash table of) changes, and with it the join order.

Each slice appends its new rows to the four base tables (:func:`write_slice`), one Delta
version per slice, so every run reads a pinned version. The arms (:func:`run_drift`):

- **adaptive**: each slice's statistics from the lake (:func:`aspen.queries.stats.lake_stats`,
  with the join selectivities the previous slice's run observed), diffed against the
  optimizer's statistics into one change batch (:func:`stats_change`), re-optimized
  incrementally by the declarative optimizer, then run by :func:`aspen.queries.execute.execute`
  (which records the observed rows the next slice's statistics read);
- **first-slice**: the plan optimized on the first slice, on every slice;
- **best static**: among the candidate plans (every plan the adaptive arm chose, and the plans
  of least estimated cost summed over all slices), the one of least measured total time.

Every candidate is timed on every slice in the same warm Spark session (one warm-up, then the
median of the repeats, taken in rounds over all slices and plans in shuffled orders); the
adaptive arm's time on a slice is the time of the plan it chose there, so two arms that run
the same plan get the same number.

>>> shapes = drift_shapes(8, DriftParams.scaled(0.01))
>>> [round(s.triggered, 3) for s in (shapes[0], shapes[-1])], shapes[-1].hot_sensors
([0.05, 0.5], 300)
>>> plan_label({"join": "broadcast_hash", "left": {"scan": "l"}, "right": {"scan": "t"}})
'l ⋈b t'
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from aspen.optimizer.brute import plans as all_plans
from aspen.optimizer.cost import cost_of
from aspen.optimizer.query import Query
from aspen.optimizer.stats import StatKey, Stats

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from aspen.queries.spec import ParsedQuery
    from aspen.settings import Settings

__all__ = [
    "DRIFT_SQL",
    "HOT_REGION",
    "METHOD_LETTERS",
    "QUERY_NAME",
    "DriftParams",
    "DriftRun",
    "SlicePlan",
    "SliceShape",
    "Summary",
    "best_static",
    "csv_rows",
    "drift_shapes",
    "executors_of",
    "hindsight_plans",
    "load_average",
    "markdown",
    "plan_id",
    "plan_label",
    "run_drift",
    "stats_change",
    "summarize",
    "time_plan",
    "write_slice",
]

#: The continuous query of the benchmark.
DRIFT_SQL = ("SELECT r.region, COUNT(*) AS links, SUM(l.cost) AS cost "
             "FROM region_seed r JOIN sensor s ON s.id = r.id JOIN link l ON l.src = s.id "
             "JOIN triggered t ON t.id = l.dst GROUP BY r.region")
#: The query's name (its result table is ``q_drift``; the timing runs use ``drift_timed``).
QUERY_NAME = "drift"
#: The region that grows hot.
HOT_REGION = "r00"
#: The letter of each join method in :func:`plan_label`.
METHOD_LETTERS: dict[str, str] = {"broadcast_hash": "b", "shuffle_hash": "h", "sort_merge": "m"}

_MOD = 1 << 30  # hashes are reduced to [0, 1) by this modulus


# -- the drift -------------------------------------------------------------------------------


@dataclass(frozen=True)
class DriftParams:
    """The shape of the drifting lake: ``sensors`` ordinary sensors (ids ``s00000000`` …) with
    ``degree`` links each to random ordinary sensors, in ``regions`` regions of
    ``seeds_per_region`` seeds; the hot region gains sensors (ids ``h00000000`` …, each a seed
    of it with ``hot_degree`` links) from ``hot_first`` to ``hot_last`` over the slices; the
    triggered fraction goes from ``triggered_first`` to ``triggered_last``.

    >>> DriftParams.scaled(0.5).sensors
    500000
    """

    sensors: int = 1_000_000
    degree: int = 1
    regions: int = 16
    seeds_per_region: int = 50
    hot_first: int = 50
    hot_last: int = 30_000
    hot_degree: int = 100
    triggered_first: float = 0.05
    triggered_last: float = 0.5

    def __post_init__(self) -> None:
        if not 0 < self.sensors < 10**8 or not 0 < self.hot_first <= self.hot_last < 10**8:
            raise ValueError("sensors and hot sensors must be between 1 and 10^8 (ids have 8 "
                             "digits), hot_first at most hot_last")
        if self.degree < 0 or self.hot_degree < 1 or self.regions < 1:
            raise ValueError("degree must be ≥ 0, hot_degree and regions ≥ 1")
        if self.regions * self.seeds_per_region > self.sensors:
            raise ValueError("more seeds than sensors")
        if not 0 < self.triggered_first <= self.triggered_last <= 1:
            raise ValueError("the triggered fractions must grow within (0, 1]")

    @staticmethod
    def scaled(scale: float) -> DriftParams:
        """The default shape with ``scale`` times the sensors and hot sensors (at scale 1, on
        the last slice: 1,030,000 sensors, 4 million links, 515,000 triggered sensors and 3
        million links out of the seeds)."""
        if not scale > 0:
            raise ValueError(f"scale must be positive, got {scale}")
        base = DriftParams()
        return replace(base, sensors=max(1000, round(base.sensors * scale)),
                       hot_first=max(1, round(base.hot_first * scale)),
                       hot_last=max(2, round(base.hot_last * scale)))


@dataclass(frozen=True)
class SliceShape:
    """One slice: its index, the hot region's sensors so far, the fraction triggered."""

    index: int
    hot_sensors: int
    triggered: float
    params: DriftParams

    @property
    def seeds(self) -> int:
        """Seeds of the ordinary regions."""
        return self.params.regions * self.params.seeds_per_region

    def expected_rows(self) -> dict[str, int]:
        """Rows of each table (triggered: the expected count) and of the seeds' links.

        >>> SliceShape(0, 10, 0.1, DriftParams(sensors=1000)).expected_rows()["link"]
        2000
        """
        p = self.params
        sensors = p.sensors + self.hot_sensors
        return {"sensor": sensors, "link": p.sensors * p.degree + self.hot_sensors * p.hot_degree,
                "triggered": round(sensors * self.triggered),
                "region_seed": self.seeds + self.hot_sensors,
                "seed_links": self.seeds * p.degree + self.hot_sensors * p.hot_degree}


def drift_shapes(slices: int, params: DriftParams | None = None) -> list[SliceShape]:
    """The ``slices`` slices of the drift: both the hot region's sensors and the triggered
    fraction grow geometrically from their first to their last value.

    >>> [s.hot_sensors for s in drift_shapes(3, DriftParams(hot_first=10, hot_last=1000))]
    [10, 100, 1000]
    """
    if slices < 2:
        raise ValueError(f"a drift needs at least 2 slices, got {slices}")
    p = params or DriftParams()
    out = []
    hot = 0
    for k in range(slices):
        f = k / (slices - 1)
        hot = max(hot, round(p.hot_first * (p.hot_last / p.hot_first) ** f))
        share = p.triggered_first * (p.triggered_last / p.triggered_first) ** f
        out.append(SliceShape(k, hot, share, p))
    return out


def _unit(seed: int, salt: str, *columns: Column) -> Column:
    """A pseudo-random number in [0, 1) per row, a function of ``seed``, ``salt``, columns."""
    from pyspark.sql import functions as F

    return F.pmod(F.xxhash64(F.lit(seed), F.lit(salt), *columns), F.lit(_MOD)) / float(_MOD)


def _sensor_id(prefix: str, index: Column) -> Column:
    from pyspark.sql import functions as F

    return F.concat(F.lit(prefix), F.lpad(index.cast("string"), 8, "0"))


def _instance(frame: DataFrame, table: str, batch: int) -> DataFrame:
    """``frame``'s value columns with the instance columns of ``table``, in its schema."""
    from pyspark.sql import functions as F

    from aspen.lake.tables import schema_of

    schema = schema_of(table)
    extra = {"var": F.lit(None), "inserted_at": F.lit("2026-01-01 00:00:00"),
             "expires_at": F.lit(None), "batch_id": F.lit(batch), "seq": F.lit(0)}
    return frame.select(*(
        (F.col(f.name) if f.name in frame.columns else extra[f.name]).cast(f.dataType)
        .alias(f.name) for f in schema.fields))


def _slice_frames(spark: SparkSession, shape: SliceShape, previous: SliceShape | None,
                  seed: int) -> dict[str, DataFrame]:
    """The rows ``shape`` adds to ``previous`` (all of its rows when there is none)."""
    from pyspark.sql import functions as F

    p = shape.params
    parts = 4
    hot_from = previous.hot_sensors if previous else 0
    hot = spark.range(hot_from, shape.hot_sensors, numPartitions=parts).select(
        _sensor_id("h", F.col("id")).alias("id"), F.lit("h").alias("kind"), F.col("id").alias("n"))
    new = hot
    if previous is None:
        base = spark.range(0, p.sensors, numPartitions=parts).select(
            _sensor_id("s", F.col("id")).alias("id"), F.lit("s").alias("kind"),
            F.col("id").alias("n"))
        new = base.unionByName(hot)
    frames: dict[str, DataFrame] = {}
    frames["sensor"] = new.select("id", _unit(seed, "x", F.col("id")).alias("x"),
                                  _unit(seed, "y", F.col("id")).alias("y"))
    links = hot.select(F.col("id").alias("src"),
                       F.explode(F.sequence(F.lit(0), F.lit(p.hot_degree - 1))).alias("j"))
    if previous is None and p.degree > 0:
        links = links.unionByName(base.select(
            F.col("id").alias("src"), F.explode(F.sequence(F.lit(0), F.lit(p.degree - 1)))
            .alias("j")))
    pick = F.floor(_unit(seed, "dst", F.col("src"), F.col("j")) * p.sensors).cast("long")
    frames["link"] = links.select(
        "src", _sensor_id("s", pick).alias("dst"),
        (F.floor(_unit(seed, "cost", F.col("src"), F.col("j")) * 9) + 1).alias("cost"))
    # a sensor is triggered while its number is below the fraction: the set only grows
    chance = _unit(seed, "triggered", F.col("id"))
    before = previous.triggered if previous else 0.0
    trig = new.where(chance < shape.triggered)
    if previous is not None:
        old = spark.range(0, p.sensors, numPartitions=parts).select(
            _sensor_id("s", F.col("id")).alias("id")).unionByName(
            spark.range(0, hot_from, numPartitions=parts).select(
                _sensor_id("h", F.col("id")).alias("id")))
        chance_old = _unit(seed, "triggered", F.col("id"))
        trig = trig.select("id").unionByName(
            old.where((chance_old >= before) & (chance_old < shape.triggered)))
    frames["triggered"] = trig.select("id")
    seeds = hot.select(F.lit(HOT_REGION).alias("region"), "id")
    if previous is None:
        step = max(1, p.sensors // max(1, shape.seeds))
        region = F.lpad((F.floor(F.col("n") / step) % p.regions).cast("string"), 2, "0")
        seeds = seeds.unionByName(
            base.where((F.col("n") % step == 0) & (F.col("n") < step * shape.seeds))
            .select(F.concat(F.lit("r"), region).alias("region"), "id"))
    frames["region_seed"] = seeds
    return frames


def write_slice(spark: SparkSession, settings: Settings, shape: SliceShape,
                previous: SliceShape | None, seed: int = 0) -> dict[str, int]:
    """Write the rows ``shape`` adds to ``previous`` to the four base tables (each one Delta
    commit: overwrite for the first slice, append after) and return the tables' versions.

    Example, on a lake::

        write_slice(spark, settings, shapes[1], shapes[0])
        # {'link': 1, 'region_seed': 1, 'sensor': 1, 'triggered': 1}
    """
    from aspen.queries.stats import table_versions

    mode = "overwrite" if previous is None else "append"
    tables = sorted(_slice_frames(spark, shape, previous, seed).items())
    for table, frame in tables:
        (_instance(frame, table, shape.index).write.format("delta").mode(mode)
         .save(settings.table_uri(table)))
    return table_versions(settings, tuple(t for t, _ in tables))


# -- plans and statistics --------------------------------------------------------------------


def plan_label(plan: Mapping[str, Any]) -> str:
    """A plan as one line: ``⋈`` with the method's letter (:data:`METHOD_LETTERS`), the right
    input being the broadcast or hash-built side.

    >>> plan_label({"join": "shuffle_hash", "right": {"scan": "t"},
    ...             "left": {"join": "broadcast_hash", "left": {"scan": "l"},
    ...                      "right": {"scan": "r"}}})
    '(l ⋈b r) ⋈h t'
    """
    def text(node: Mapping[str, Any], top: bool) -> str:
        if "scan" in node:
            return str(node["scan"])
        inner = (f"{text(node['left'], False)} ⋈{METHOD_LETTERS[str(node['join'])]} "
                 f"{text(node['right'], False)}")
        return inner if top else f"({inner})"

    return text(plan, True)


def plan_id(plan: Mapping[str, Any]) -> str:
    """A canonical text of a plan (equal plans, equal ids).

    >>> plan_id({"scan": "a"})
    '{"scan": "a"}'
    """
    return json.dumps(plan, sort_keys=True)


def stats_change(old: Stats, new: Stats) -> tuple[dict[str, dict[str, float]], list[StatKey]]:
    """The change batch (a C.jsonl line, ``{kind: {name: value}}``) that turns ``old`` into
    ``new``, and the statistics ``new`` no longer has (a change cannot remove one).

    >>> old = Stats.from_json({"tables": {"t": {"rows": 10, "width": 8}}})
    >>> new = Stats.from_json({"tables": {"t": {"rows": 20, "width": 8}},
    ...                        "selectivity": {"a.k=b.k": 0.5}})
    >>> stats_change(old, new)
    ({'rows': {'t': 20.0}, 'selectivity': {'a.k=b.k': 0.5}}, [])
    >>> stats_change(new, old)[1]
    [('selectivity', 'a.k=b.k')]
    """
    change: dict[str, dict[str, float]] = {}
    for (kind, name), value in new.values.items():
        if old.values.get((kind, name)) != value:
            change.setdefault(kind, {})[name] = value
    return change, sorted(set(old.values) - set(new.values))


def hindsight_plans(query: Query, stats: Sequence[Stats], count: int,
                    exclude: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The ``count`` plans of least estimated cost summed over ``stats`` (one per slice), not
    among ``exclude`` (plan ids): the static plans the cost model would pick in hindsight.

    >>> q = Query.from_json({"relations": {"a": "t", "b": "u"}, "joins": ["a.k = b.k"]})
    >>> s = Stats.from_json({"tables": {"t": {"rows": 1e6}, "u": {"rows": 10}}})
    >>> plan_label(hindsight_plans(q, [s], 1)[0])
    'a ⋈b b'
    """
    if count <= 0:
        return []
    skip = set(exclude)
    ranked = sorted(((sum(cost_of(p, query, s) for s in stats), plan_id(p), p)
                     for p in all_plans(query) if plan_id(p) not in skip),
                    key=lambda item: (item[0], item[1]))
    return [json.loads(pid) for _, pid, _ in ranked[:count]]


# -- results ---------------------------------------------------------------------------------


@dataclass
class SlicePlan:
    """The adaptive arm on one slice: its plan and cost, how it was planned (seconds of the
    statistics pass and of the optimizer call, statistics moved, counters, whether the
    re-optimization was incremental), the tables' versions and rows, and its product run."""

    index: int
    plan: dict[str, Any]
    cost: float
    stats_seconds: float
    optimize_seconds: float
    moved: int
    incremental: bool
    counters: dict[str, int]
    versions: dict[str, int]
    rows: dict[str, float]
    stats: Stats = field(default_factory=Stats, repr=False)
    run_seconds: float = 0.0
    matches: bool = True


@dataclass
class DriftRun:
    """A whole run: the slices' shapes and adaptive plans, the candidate plans (id → plan),
    per candidate its measured seconds on every slice (a list of repeats per slice), its
    warm-up seconds and estimated cost per slice, and notes (plans Spark did not run as
    planned)."""

    shapes: list[SliceShape]
    adaptive: list[SlicePlan]
    candidates: dict[str, dict[str, Any]]
    times: dict[str, list[list[float]]]
    checks: dict[str, list[float]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    estimates: dict[str, list[float]] = field(default_factory=dict)


def best_static(totals: Mapping[str, float]) -> str:
    """The plan id of least total time (ties: the first).

    >>> best_static({"p": 3.0, "q": 2.0, "r": 2.0})
    'q'
    """
    if not totals:
        raise ValueError("no candidate plans")
    return min(totals, key=lambda pid: totals[pid])


@dataclass(frozen=True)
class Summary:
    """Per slice the seconds of each arm, the totals and the ratios of the adaptive arm."""

    adaptive: list[float]
    first_slice: list[float]
    best_static: list[float]
    best_static_plan: str
    first_plan: str
    optimize_seconds: float
    stats_seconds: float

    @property
    def totals(self) -> dict[str, float]:
        """Total seconds of each arm."""
        return {"adaptive": sum(self.adaptive), "first_slice": sum(self.first_slice),
                "best_static": sum(self.best_static)}

    @property
    def ratios(self) -> dict[str, float]:
        """adaptive / best static and adaptive / first-slice (execution time only), and the
        same with the re-optimization time added to the adaptive arm."""
        t = self.totals
        with_opt = t["adaptive"] + self.optimize_seconds
        return {"adaptive/best_static": t["adaptive"] / t["best_static"],
                "adaptive/first_slice": t["adaptive"] / t["first_slice"],
                "adaptive+reopt/best_static": with_opt / t["best_static"],
                "adaptive+reopt/first_slice": with_opt / t["first_slice"]}


def summarize(times: Mapping[str, Sequence[Sequence[float]]], adaptive: Sequence[str],
              optimize_seconds: float = 0.0, stats_seconds: float = 0.0) -> Summary:
    """The arms from the measured ``times`` (plan id → per slice its repeats) and the plan id
    the adaptive arm chose on each slice (the first one is the first-slice plan); the
    optimizer's and the statistics passes' seconds in all.

    >>> s = summarize({"p": [[1, 1, 1], [5, 5, 5]], "q": [[2, 2, 2], [2, 2, 2]]}, ["p", "q"])
    >>> s.totals, s.best_static_plan
    ({'adaptive': 3.0, 'first_slice': 6.0, 'best_static': 4.0}, 'q')
    """
    medians = {pid: [float(statistics.median(r)) for r in runs] for pid, runs in times.items()}
    totals = {pid: sum(m) for pid, m in medians.items()}
    best = best_static(totals)
    return Summary([medians[pid][k] for k, pid in enumerate(adaptive)], medians[adaptive[0]],
                   medians[best], best, adaptive[0], optimize_seconds, stats_seconds)


def csv_rows(run: DriftRun) -> list[dict[str, Any]]:
    """One row per slice (from 1) and candidate plan: its median and every repeat, which arms
    ran it, its estimated cost and its warm-up seconds.

    >>> shape = SliceShape(0, 1, 0.05, DriftParams())
    >>> plan = {"scan": "a"}
    >>> sp = SlicePlan(0, plan, 1.0, 0.1, 0.01, 3, False, {}, {}, {})
    >>> run = DriftRun([shape], [sp], {plan_id(plan): plan}, {plan_id(plan): [[1.0, 3.0]]})
    >>> row = csv_rows(run)[0]
    >>> row["median_s"], row["adaptive"], row["first_slice"]
    (2.0, True, True)
    """
    first = plan_id(run.adaptive[0].plan)
    out = []
    for pid, per_slice in run.times.items():
        for k, repeats in enumerate(per_slice):
            out.append({"slice": k + 1, "plan": plan_label(run.candidates[pid]),
                        "median_s": float(statistics.median(repeats)),
                        "repeats_s": " ".join(f"{x:.3f}" for x in repeats),
                        "adaptive": plan_id(run.adaptive[k].plan) == pid,
                        "first_slice": pid == first,
                        "estimated_cost": (run.estimates.get(pid) or [None] * (k + 1))[k],
                        "warmup_s": (run.checks.get(pid) or [None] * (k + 1))[k]})
    return out


def markdown(run: DriftRun, summary: Summary) -> list[str]:
    """The per-slice table, the totals and the ratios, as Markdown lines."""
    labels = {pid: plan_label(p) for pid, p in run.candidates.items()}
    lines = ["| slice | triggered | hot sensors | link rows | adaptive plan | stats moved | "
             "re-opt ms | adaptive s | first-slice s | best static s |",
             "|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|"]
    for k, sp in enumerate(run.adaptive):
        shape = run.shapes[k]
        mode = "" if sp.incremental else " (from scratch)"
        lines.append(
            f"| {k + 1} | {shape.triggered:.1%} | {shape.hot_sensors:,} | "
            f"{sp.rows.get('link', 0):,.0f} | `{plan_label(sp.plan)}` | {sp.moved} | "
            f"{sp.optimize_seconds * 1000:.2f}{mode} | {summary.adaptive[k]:.2f} | "
            f"{summary.first_slice[k]:.2f} | {summary.best_static[k]:.2f} |")
    t, r = summary.totals, summary.ratios
    lines += ["", f"first-slice plan: `{labels[summary.first_plan]}`; best static plan: "
              f"`{labels[summary.best_static_plan]}`", "",
              "| arm | total s |", "|---|---:|",
              f"| adaptive | {t['adaptive']:.2f} |", f"| first-slice | {t['first_slice']:.2f} |",
              f"| best static | {t['best_static']:.2f} |", "",
              f"adaptive / best static = **{r['adaptive/best_static']:.3f}**, "
              f"adaptive / first-slice = **{r['adaptive/first_slice']:.3f}** (execution); "
              f"with the re-optimizations ({summary.optimize_seconds * 1000:.1f} ms in all): "
              f"{r['adaptive+reopt/best_static']:.3f} and {r['adaptive+reopt/first_slice']:.3f}; "
              f"the statistics passes took {summary.stats_seconds:.1f} s in all.", "",
              "| candidate plan | total s | per slice s |", "|---|---:|---|"]
    for pid, per_slice in run.times.items():
        medians = [statistics.median(x) for x in per_slice]
        lines.append(f"| `{labels[pid]}` | {sum(medians):.2f} | "
                     + " ".join(f"{m:.2f}" for m in medians) + " |")
    if run.notes:
        lines += [""] + [f"- {note}" for note in run.notes]
    return lines


# -- running on Spark ------------------------------------------------------------------------


def time_plan(spark: SparkSession, settings: Settings, parsed: ParsedQuery,
              plan: Mapping[str, Any], versions: Mapping[str, int]) -> float:
    """Seconds of one run of ``parsed`` following ``plan`` at ``versions``: the frame
    :func:`aspen.queries.execute.execute` computes, under its conf, written to Spark's ``noop``
    sink (the result is not stored).

    Example, on a lake::

        time_plan(spark, settings, parsed, plan, versions)
        # 1.84
    """
    return _run(spark, settings, parsed, plan, versions, collect=False)[0]


def _run(spark: SparkSession, settings: Settings, parsed: ParsedQuery, plan: Mapping[str, Any],
         versions: Mapping[str, int], collect: bool) -> tuple[float, list[tuple[Any, ...]]]:
    """One run of the plan's frame: its seconds and, when ``collect``, its rows (sorted,
    numbers rounded; the result has one row per region)."""
    from aspen.queries.execute import EXECUTION_CONF, plan_frame
    from aspen.spark.session import temporary_conf

    rows: list[tuple[Any, ...]] = []
    with temporary_conf(spark, EXECUTION_CONF):
        start = time.perf_counter()
        frame, view = plan_frame(spark, settings, parsed, plan, versions)
        try:
            if collect:
                rows = sorted(tuple(round(v, 6) if isinstance(v, float) else v for v in row)
                              for row in frame.collect())
            else:
                frame.write.format("noop").mode("overwrite").save()
        finally:
            spark.catalog.dropTempView(view)
        return time.perf_counter() - start, rows


def _plan_adaptive(spark: SparkSession, settings: Settings, parsed: ParsedQuery,
                   shapes: Sequence[SliceShape], seed: int, params: Mapping[str, float],
                   log: Callable[[str], None]) -> list[SlicePlan]:
    """Write every slice and plan it as the adaptive arm does, running each plan once with
    :func:`aspen.queries.execute.execute` (the next slice reads the selectivities it observed);
    every plan's cost is checked against the exhaustive optimizer's."""
    from datetime import UTC, datetime

    from aspen.optimizer.methods import make_optimizer
    from aspen.optimizer.space import SearchSpace
    from aspen.queries.execute import execute
    from aspen.queries.stats import lake_stats

    since = datetime.now(UTC)
    optimizer = make_optimizer("declarative", SearchSpace(parsed.query))
    current: Stats | None = None
    out: list[SlicePlan] = []
    previous: SliceShape | None = None
    for shape in shapes:
        clock = time.perf_counter()
        versions = write_slice(spark, settings, shape, previous, seed)
        written = time.perf_counter() - clock
        clock = time.perf_counter()
        found = lake_stats(spark, settings, parsed, versions, observed_since=since)
        stats_seconds = time.perf_counter() - clock
        fresh = found.stats
        if params:
            fresh = fresh.changed({"params": dict(params)})[0]
        if current is None:
            result, moved, incremental = optimizer.optimize(fresh), len(fresh.values), False
        else:
            change, vanished = stats_change(current, fresh)
            if vanished:  # a change cannot remove a statistic: plan from scratch
                optimizer = make_optimizer("declarative", SearchSpace(parsed.query))
                result, incremental = optimizer.optimize(fresh), False
            else:
                result, incremental = optimizer.reoptimize(change), True
            moved = sum(len(v) for v in change.values())
        current = fresh
        best = cost_of(result.plan, parsed.query, fresh)
        reference = make_optimizer("exhaustive", SearchSpace(parsed.query)).optimize(fresh).cost
        if abs(best - reference) > 1e-9 * max(1.0, reference):
            raise AssertionError(f"slice {shape.index + 1}: the declarative optimizer's plan "
                                 f"costs {best}, the exhaustive optimum {reference}")
        report = execute(spark, settings, parsed, result.plan, fresh, versions)
        rows = {t: fresh.rows(t) for t in parsed.tables}
        out.append(SlicePlan(shape.index, result.plan, best, stats_seconds, result.seconds,
                             moved, incremental, result.counters.as_dict(), dict(versions), rows,
                             fresh, report.seconds, report.matches))
        log(f"slice {shape.index + 1}: written in {written:.1f} s, statistics "
            f"{stats_seconds:.1f} s, {moved} moved, {'re-' if incremental else ''}optimized in "
            f"{result.seconds * 1000:.2f} ms: {plan_label(result.plan)} (cost {best:.4g}); "
            f"run {report.seconds:.1f} s")
        previous = shape
    return out


def run_drift(spark: SparkSession, settings: Settings, shapes: Sequence[SliceShape],
              repeats: int = 3, seed: int = 0, params: Mapping[str, float] | None = None,
              extra: int = 1, log: Callable[[str], None] = print) -> DriftRun:
    """The whole benchmark on the (empty) lake ``settings``: write and plan every slice
    (adaptive arm, every plan run by :func:`~aspen.queries.execute.execute`, as are the other
    candidates once), run every candidate on every slice once (the warm-up: every plan must
    give the same rows), then time them in ``repeats`` rounds, each over every slice and plan
    in a shuffled order.
    ``params`` are cost-model parameters added to the lake's statistics; ``extra`` hindsight
    plans (:func:`hindsight_plans`) join the candidates.

    Example, on a lake::

        run = run_drift(spark, settings, drift_shapes(8, DriftParams.scaled(0.1)))
    """
    import random

    from aspen.queries.execute import execute
    from aspen.queries.sql import parse_query

    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    parsed = parse_query(QUERY_NAME, DRIFT_SQL)
    adaptive = _plan_adaptive(spark, settings, parsed, shapes, seed, dict(params or {}), log)
    candidates: dict[str, dict[str, Any]] = {}
    for sp in adaptive:
        candidates.setdefault(plan_id(sp.plan), sp.plan)
    slice_stats = [sp.stats for sp in adaptive]
    for plan in hindsight_plans(parsed.query, slice_stats, extra, tuple(candidates)):
        candidates[plan_id(plan)] = plan
    log("candidates: " + "; ".join(plan_label(p) for p in candidates.values()))
    timed = replace(parsed, name=f"{QUERY_NAME}_timed")
    checks: dict[str, list[float]] = {pid: [] for pid in candidates}
    notes: list[str] = []
    ran = {plan_id(sp.plan) for sp in adaptive}
    for pid, plan in candidates.items():  # the product's run of the plans the arm never ran
        if pid in ran:
            continue
        report = execute(spark, settings, timed, plan, slice_stats[-1], adaptive[-1].versions)
        if not report.matches:
            notes.append(f"{plan_label(plan)} did not run as planned: " + ", ".join(
                f"{n.node} {n.executed}" for n in report.nodes if not n.matches))
    notes += [f"slice {sp.index + 1}: {plan_label(sp.plan)} did not run as planned"
              for sp in adaptive if not sp.matches]
    for k, sp in enumerate(adaptive):  # the warm-up, which checks that every plan agrees
        expected = None
        for pid, plan in candidates.items():
            seconds, result = _run(spark, settings, timed, plan, sp.versions, collect=True)
            checks[pid].append(seconds)
            if expected is None:
                expected = result
            elif result != expected:
                raise AssertionError(f"slice {k + 1}: {plan_label(plan)} gives another result "
                                     "than the other plans")
        log(f"slice {k + 1} warmed up: " + "; ".join(
            f"{plan_label(candidates[pid])} {checks[pid][-1]:.2f} s" for pid in candidates))
    # timed rounds: every slice and plan once per round, the plans in a new order each time,
    # so a burst of load or the JVM's warming falls on all of them alike
    times: dict[str, list[list[float]]] = {pid: [[] for _ in adaptive] for pid in candidates}
    order = list(candidates)
    shuffle = random.Random(seed)
    for round_ in range(repeats):
        for k, sp in enumerate(adaptive):
            shuffle.shuffle(order)
            for pid in order:
                times[pid][k].append(
                    time_plan(spark, settings, timed, candidates[pid], sp.versions))
        log(f"round {round_ + 1}/{repeats}: " + "; ".join(
            f"{plan_label(candidates[pid])} {sum(r[-1] for r in times[pid]):.1f} s"
            for pid in candidates))
    estimates = {pid: [cost_of(plan, parsed.query, s) for s in slice_stats]
                 for pid, plan in candidates.items()}
    return DriftRun(list(shapes), adaptive, candidates, times, checks, notes, estimates)


def load_average() -> str:
    """The machine's load averages over 1, 5 and 15 minutes, as ``uptime`` prints them.

    >>> len(load_average().split(", "))
    3
    """
    import os

    try:
        return ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:  # pragma: no cover - not on every platform
        return "n/a, n/a, n/a"


def executors_of(master: str, instances: str | None = None) -> int:
    """The copies of a broadcast side a Spark master makes (the cost model's ``executors``):
    one for a local master (the driver is the one executor), else ``spark.executor.instances``
    when set, else the cost model's default.

    >>> executors_of("local[2]"), executors_of("k8s://host:443", "5"), executors_of("yarn")
    (1, 5, 8)
    """
    from aspen.optimizer.cost import DEFAULT_PARAMS

    if master.startswith("local"):
        return 1
    if instances and instances.strip().isdigit() and int(instances) > 0:
        return int(instances)
    return int(DEFAULT_PARAMS["executors"])
