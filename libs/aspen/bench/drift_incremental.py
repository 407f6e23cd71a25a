"""Live re-planning of an incrementally maintained join against static plans, over the same
drifting batches, in process (no Spark, no lake writes).

The query (:data:`LIVE_SQL`): per region, how many regions its seeds' links reach, and over
how many (link, region) pairs::

    SELECT a.region, COUNT(DISTINCT b.region) AS reached, COUNT(*) AS n
    FROM region_seed a JOIN link l ON l.src = a.id JOIN region_seed b ON b.id = l.dst
    GROUP BY a.region

Links run from :attr:`LiveDriftParams.hubs` source hubs to as many destination hubs. Every
batch inserts :attr:`LiveDriftParams.links` random links and deletes those inserted
:attr:`LiveDriftParams.window` batches before (:func:`live_batches`), so a batch's change is
mostly a change of ``l``. A new link is joined with ``a`` (the regions its source seeds) and
``b`` (those its destination seeds) in either order; the side looked up first decides how many
partial rows are extended (rows as the state holds them: distinct projected rows, so the
query reads ``b.region`` — with only ``b.id`` read, a destination's regions would be one row
with a count and the order would hardly matter). Over the batches the seeds drift from the
destinations to the sources: at first 5 % of the source hubs seed one region each while every
destination hub seeds every region (look ``a`` up first), at the end the reverse (look ``b``
up first).

The arms (:func:`run_live_drift`), each its own :class:`~aspen.queries.incremental.apply.
IncrementalQuery` fed the same batches:

- **adaptive**: the product's loop — the live statistics after each batch
  (:mod:`aspen.queries.incremental.livestats`), and when one moved by more than the threshold
  the declarative optimizer re-optimizes incrementally and the next batch follows its plan
  (:mod:`aspen.queries.incremental.order`); its time includes the statistics and the
  re-optimizations;
- **static**: one arm per distinct join order among all the query's plans, without statistics;
  the best and the worst are those of least and most total time.

The batches of each repeat are timed with the arms interleaved (their order rotating per
batch), each call with the garbage collected before and the collector off during it, in CPU
seconds of the process (``time.process_time``: the machine is shared); per batch the median
over the repeats. Every arm's result change must be the same on
every batch, and the final result DuckDB's.

>>> batches = live_batches(LiveDriftParams.scaled(0.01))
>>> len(batches), sorted(batches[0])
(13, ['link', 'region_seed'])
"""

from __future__ import annotations

import gc
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from aspen.queries.incremental.delta import SignedRows

__all__ = ["LIVE_SQL", "LiveDriftParams", "LiveDriftRun", "live_batches", "live_markdown",
           "run_live_drift", "summary_json"]

#: The continuous query of the live re-planning run.
LIVE_SQL = ("SELECT a.region, COUNT(DISTINCT b.region) AS reached, COUNT(*) AS n "
            "FROM region_seed a JOIN link l ON l.src = a.id "
            "JOIN region_seed b ON b.id = l.dst GROUP BY a.region")
_COLUMNS = {"region_seed": ("region", "id"), "link": ("src", "dst", "cost")}


@dataclass(frozen=True)
class LiveDriftParams:
    """The drift: ``hubs`` source and as many destination hubs, ``batches`` batches after the
    first load, each adding ``links`` links and deleting those added ``window`` batches
    before; the seeded share of the source hubs grows from ``seeded_few`` (one region each) to
    all of them (each in ``regions`` regions), the destination hubs' shrinks the other way.

    >>> LiveDriftParams.scaled(0.5).links
    2000
    """

    hubs: int = 100
    batches: int = 12
    links: int = 4_000
    window: int = 3
    regions: int = 20
    seeded_few: float = 0.05
    seed: int = 0

    @staticmethod
    def scaled(scale: float) -> LiveDriftParams:
        """The default drift with ``scale`` times the links per batch."""
        if not scale > 0:
            raise ValueError(f"scale must be positive, got {scale}")
        return replace(LiveDriftParams(), links=max(40, round(LiveDriftParams().links * scale)))


def _seeds(names: Sequence[str], unit: Sequence[float], share: float,
           regions: int) -> set[tuple]:
    return {(f"r{g:02d}", name) for name, u in zip(names, unit, strict=True) if u < share
            for g in range(regions)}


def live_batches(params: LiveDriftParams) -> list[dict[str, SignedRows]]:
    """The first load and then :attr:`~LiveDriftParams.batches` batches of signed changes of
    ``region_seed`` and ``link`` (only the columns the query reads)."""
    rng = random.Random(params.seed)
    sources = [f"h{i:04d}" for i in range(params.hubs)]
    targets = [f"g{i:04d}" for i in range(params.hubs)]
    unit_s = [rng.random() for _ in sources]
    unit_t = [rng.random() for _ in targets]
    seeds: set[tuple] = set()
    added: list[list[tuple]] = []
    out = []
    n = params.batches
    for k in range(n + 1):
        f = k / n
        rising = params.seeded_few ** (1 - f)  # 5 % → 100 %
        falling = params.seeded_few ** f       # 100 % → 5 %
        now = (_seeds(sources, unit_s, rising, 1 + round((params.regions - 1) * f))
               | _seeds(targets, unit_t, falling, 1 + round((params.regions - 1) * (1 - f))))
        links = [(rng.choice(sources), rng.choice(targets), float(rng.randint(1, 9)))
                 for _ in range(params.links)]
        change = {t: SignedRows(c) for t, c in _COLUMNS.items()}
        for row in now - seeds:
            change["region_seed"].add(row)
        for row in seeds - now:
            change["region_seed"].add(row, -1)
        for row in links:
            change["link"].add(row)
        added.append(links)
        if len(added) > params.window:
            for row in added.pop(0):
                change["link"].add(row, -1)
        seeds = now
        out.append(change)
    return out


@dataclass
class LiveDriftRun:
    """Per arm (``adaptive`` and each static order's label) the median seconds of every timed
    batch; the adaptive arm's plan, re-plans and statistics moved per batch; the static arms'
    orders; and the re-optimizations' seconds."""

    seconds: dict[str, list[float]]
    adaptive_plans: list[str]
    replanned: list[bool]
    moved: list[int]
    static: list[str]
    optimize_seconds: float

    @property
    def totals(self) -> dict[str, float]:
        """Total seconds per arm."""
        return {arm: sum(values) for arm, values in self.seconds.items()}

    @property
    def best_static(self) -> str:
        """The static arm of least total time."""
        totals = self.totals
        return min(self.static, key=lambda arm: totals[arm])

    @property
    def worst_static(self) -> str:
        """The static arm of most total time."""
        totals = self.totals
        return max(self.static, key=lambda arm: totals[arm])

    @property
    def ratios(self) -> dict[str, float]:
        """adaptive / best static and adaptive / worst static (totals)."""
        t = self.totals
        return {"adaptive/best_static": t["adaptive"] / t[self.best_static],
                "adaptive/worst_static": t["adaptive"] / t[self.worst_static]}


def _order_label(plan: Any, orders: Sequence[Sequence[int]]) -> str:
    names = [r.alias for r in plan.relations]
    return "; ".join(f"Δ{names[p]}: " + ",".join(names[q] for q in order)
                     for p, order in enumerate(orders))


class _Adaptive:
    """The product's loop in memory: the query, its optimizer and the statistics it is at."""

    def __init__(self, parsed: Any, plan: Any, threshold: float) -> None:
        from aspen.optimizer.methods import make_optimizer
        from aspen.optimizer.space import SearchSpace
        from aspen.queries.incremental.apply import IncrementalQuery

        self.query = IncrementalQuery(plan)
        self.optimizer = make_optimizer("declarative", SearchSpace(parsed.query))
        self.threshold = threshold
        self.at: Any = None
        self.tree: dict[str, Any] | None = None
        self.optimize_seconds = 0.0

    def replan(self) -> tuple[bool, int]:
        """Re-plan when the statistics moved; whether it did and how many moved."""
        from aspen.bench.drift import stats_change
        from aspen.optimizer.stats import Stats
        from aspen.queries.reoptimize import moved_statistics

        new = Stats.from_json(self.query.statistics() or {})
        clock = time.perf_counter()
        if self.at is None:
            result, moved = self.optimizer.optimize(new), len(new.values)
        else:
            moved = len(moved_statistics(self.at, new, self.threshold))
            if not moved:
                return False, 0
            change, vanished = stats_change(self.at, new)
            result = self.optimizer.optimize(new) if vanished else self.optimizer.reoptimize(
                change)
        self.optimize_seconds += time.perf_counter() - clock
        self.at, self.tree = new, result.plan
        self.query.follow(result.plan)
        return True, moved


def run_live_drift(params: LiveDriftParams, repeats: int = 3, threshold: float = 0.2,
                   log: Callable[[str], None] = print) -> LiveDriftRun:
    """The run described in the module docstring.

    >>> run = run_live_drift(replace(LiveDriftParams.scaled(0.01), batches=3), repeats=1,
    ...                      log=lambda _line: None)
    >>> sorted(run.seconds)[0], len(run.seconds["adaptive"]), len(run.static)
    ('adaptive', 3, 2)
    """
    from aspen.bench.drift import plan_label
    from aspen.optimizer.brute import plans
    from aspen.queries.incremental.apply import IncrementalQuery
    from aspen.queries.incremental.compile import IncrementalPlan, compile_query
    from aspen.queries.incremental.order import plan_orders
    from aspen.queries.incremental.scratch import scratch_answer
    from aspen.queries.sql import parse_query

    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    parsed = parse_query("drift_live", LIVE_SQL)
    plan = compile_query(parsed)
    assert isinstance(plan, IncrementalPlan)
    batches = live_batches(params)
    static: dict[str, tuple[tuple[int, ...], ...]] = {}
    for tree in plans(parsed.query, ("broadcast_hash",)):
        orders = plan_orders(plan, tree)
        assert orders is not None
        static.setdefault(_order_label(plan, orders), orders)
    arms = ["adaptive", *static]
    times: dict[str, list[list[float]]] = {arm: [[] for _ in batches[1:]] for arm in arms}
    labels: list[str] = []
    replanned: list[bool] = []
    moved: list[int] = []
    optimize_seconds = 0.0
    final: dict[tuple, int] = {}
    for repeat in range(repeats):
        adaptive = _Adaptive(parsed, plan, threshold)
        queries: dict[str, IncrementalQuery] = {"adaptive": adaptive.query}
        for label, orders in static.items():
            queries[label] = IncrementalQuery(plan.ordered(orders))
        for arm, query in queries.items():
            query.build(batches[0])
            if arm != "adaptive":
                query.live = None  # a static plan needs no statistics
        adaptive.replan()
        for k, change in enumerate(batches[1:]):
            rotated = arms[k % len(arms):] + arms[:k % len(arms)]
            outcomes = {}
            for arm in rotated:
                gc.collect()  # no arm pays for another's garbage
                gc.disable()
                clock = time.process_time()
                outcomes[arm] = queries[arm].apply(change).result
                if arm == "adaptive":
                    did, count = adaptive.replan()
                    if repeat == 0:
                        replanned.append(did)
                        moved.append(count)
                        labels.append(plan_label(adaptive.tree or {}))
                times[arm][k].append(time.process_time() - clock)
                gc.enable()
            first = outcomes["adaptive"]
            if any(result != first for result in outcomes.values()):
                raise AssertionError(f"batch {k + 1}: the arms' results differ")
        optimize_seconds = adaptive.optimize_seconds
        final = queries["adaptive"].answer()
        log(f"repeat {repeat + 1}/{repeats}: " + "; ".join(
            f"{arm} {sum(t[-1] for t in times[arm]):.2f} s" for arm in arms))
    tables: dict[str, SignedRows] = {t: SignedRows(c) for t, c in _COLUMNS.items()}
    for change in batches:
        for table, rows in change.items():
            for row, count in rows.counts.items():
                tables[table].add(row, count)
    if final != scratch_answer(parsed, tables):
        raise AssertionError("the maintained result is not DuckDB's")
    medians = {arm: [float(statistics.median(r)) for r in runs] for arm, runs in times.items()}
    return LiveDriftRun(medians, labels, replanned, moved, list(static), optimize_seconds)


def live_markdown(run: LiveDriftRun, params: LiveDriftParams) -> list[str]:
    """The per-batch table, the totals and the ratios, as Markdown lines."""
    static = run.static
    lines = ["| batch | adaptive plan (after it) | re-planned | moved | adaptive ms | "
             + " | ".join(f"`{arm}` ms" for arm in static) + " |",
             "|---:|---|---|---:|---:|" + "---:|" * len(static)]
    for k, label in enumerate(run.adaptive_plans):
        lines.append(f"| {k + 1} | `{label}` | {'yes' if run.replanned[k] else 'no'} | "
                     f"{run.moved[k]} | {run.seconds['adaptive'][k] * 1e3:.1f} | "
                     + " | ".join(f"{run.seconds[arm][k] * 1e3:.1f}" for arm in static) + " |")
    t, r = run.totals, run.ratios
    lines += ["", "| arm | total s |", "|---|---:|", f"| adaptive | {t['adaptive']:.3f} |"]
    lines += [f"| `{arm}` | {t[arm]:.3f} |" for arm in static]
    lines += ["", f"best static: `{run.best_static}`; worst static: `{run.worst_static}`",
              f"adaptive / best static = **{r['adaptive/best_static']:.3f}**, adaptive / worst "
              f"static = **{r['adaptive/worst_static']:.3f}** (the adaptive arm's time includes "
              f"its live statistics and {sum(run.replanned)} re-optimizations, "
              f"{run.optimize_seconds * 1e3:.1f} ms in all); {params.hubs} source and "
              f"destination hubs, {params.links:,} links in and out per batch, "
              f"{len(run.adaptive_plans)} batches."]
    return lines


def summary_json(run: LiveDriftRun, params: LiveDriftParams) -> dict[str, Any]:
    """The run as JSON."""
    from dataclasses import asdict

    return {"params": asdict(params), "seconds": run.seconds, "totals": run.totals,
            "ratios": run.ratios, "best_static": run.best_static,
            "worst_static": run.worst_static, "adaptive_plans": run.adaptive_plans,
            "replanned": run.replanned, "moved": run.moved,
            "optimize_s": run.optimize_seconds}
