"""Re-optimizing continuous queries as their statistics drift (Liu 2016, ch. 4–5).

One re-optimization of a query: read its statistics from the lake → diff them against the
statistics its saved optimizer is at (:mod:`aspen.queries.optimizer_state`) into one batch of
changes → apply that batch incrementally (``optimizer.reoptimize``) → when the best plan
differs from the stored one, record the change in ``plans`` (:mod:`aspen.queries.plans`) and
store the new plan in the registry, which the query's next run adopts → save the optimizer.
Without a loadable saved state (the first time, another method, re-registered SQL) the
optimizer starts from scratch and the reason says so.

Nothing else depends on the plan: a recomputing run computes ``q_<name>`` completely from the
tables, and an incrementally maintained query's state is defined by the query, not the plan
(see docs/queries.md), so adopting a plan needs no migration of operator state. After every
maintained batch an incremental join is re-planned the same way from its live statistics
(:mod:`aspen.queries.follow`), past :func:`threshold_from_env`'s threshold
(:func:`moved_statistics`).

:func:`reoptimize_with` is the whole decision without Spark (statistics given);
:func:`reoptimize_query` reads them from the lake first. :func:`due` is the cheap check of the
re-optimization DAG: which queries are due by schedule, or because a table's row count moved
by more than a threshold (from the Delta log only).

>>> old = Stats.from_json({"tables": {"t": {"rows": 100.0}}})
>>> new = Stats.from_json({"tables": {"t": {"rows": 250.0}}})
>>> [c.text() for c in stat_changes(old, new)]
['rows of t 100 → 250']
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from aspen.errors import AspenError, ConfigError
from aspen.optimizer.cost import cost_of
from aspen.optimizer.methods import METHODS, make_optimizer
from aspen.optimizer.query import Query
from aspen.optimizer.result import Optimizer, Result
from aspen.optimizer.space import SearchSpace
from aspen.optimizer.stats import Stats
from aspen.queries.optimizer_state import SavedState, load_state, save_state
from aspen.queries.plans import PlanChange, append_change
from aspen.queries.registry import RegisteredQuery, get_query, list_queries, store_plan
from aspen.settings import Settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["DEFAULT_EVERY", "DEFAULT_REOPTIMIZER", "DEFAULT_THRESHOLD", "THRESHOLD_ENV",
           "Reoptimized", "StatChange", "carry_selectivities", "due", "moved_fraction",
           "moved_statistics",
           "plan_key", "record_plan", "reoptimize_all", "reoptimize_query", "reoptimize_with",
           "stat_changes", "threshold_from_env"]

#: The method that re-optimizes unless told otherwise: the declarative optimizer (ch. 4).
DEFAULT_REOPTIMIZER = "declarative"
#: The fraction a statistic must move by before a query is re-planned (the DAG's ``threshold``,
#: and the live re-planning after every batch, :mod:`aspen.queries.follow`).
THRESHOLD_ENV = "ASPEN_REOPTIMIZE_THRESHOLD"
#: The threshold of the live re-planning when ``ASPEN_REOPTIMIZE_THRESHOLD`` is not set.
DEFAULT_THRESHOLD = 0.2


@dataclass(frozen=True)
class StatChange:
    """One statistic that moved: its kind, name, and old and new values (old None: new)."""

    kind: str
    name: str
    old: float | None
    new: float

    def text(self) -> str:
        """The change in words, e.g. ``rows of link 240 → 4,800``."""
        old = "none" if self.old is None else f"{self.old:,.6g}"
        return f"{self.kind} of {self.name} {old} → {self.new:,.6g}"

    def as_json(self) -> dict[str, Any]:
        """The form ``plans.changes`` stores."""
        return {"kind": self.kind, "name": self.name, "old": self.old, "new": self.new}


def stat_changes(old: Stats, new: Stats) -> list[StatChange]:
    """Every statistic whose value differs between ``old`` and ``new`` (sorted by key); a
    statistic ``new`` lacks is not a change (the optimizer's default replaces it only on a
    cold start)."""
    out = []
    for key in sorted(new.values):
        before = old.values.get(key)
        if before != new.values[key]:
            out.append(StatChange(key[0], key[1], before, new.values[key]))
    return out


def moved_fraction(old: float, new: float, kind: str) -> float:
    """How far a statistic of ``kind`` moved, as a fraction of its old value (counts: of at
    least 1, as the DAG's check compares row counts).

    >>> moved_fraction(10.0, 30.0, "rows"), moved_fraction(0.0, 3.0, "ndv")
    (2.0, 3.0)
    """
    floor = 1.0 if kind in ("rows", "ndv") else 1e-12
    return abs(new - old) / max(abs(old), floor)


def moved_statistics(old: Stats, new: Stats, threshold: float) -> list[StatChange]:
    """The statistics of ``new`` that moved by more than ``threshold`` (a fraction) from
    ``old``, or that ``old`` lacks (sorted by key).

    >>> old = Stats.from_json({"tables": {"t": {"rows": 100.0}, "u": {"rows": 10.0}}})
    >>> new = Stats.from_json({"tables": {"t": {"rows": 110.0}, "u": {"rows": 30.0}}})
    >>> [c.text() for c in moved_statistics(old, new, 0.2)]
    ['rows of u 10 → 30']
    """
    return [c for c in stat_changes(old, new)
            if c.old is None or moved_fraction(c.old, c.new, c.kind) > threshold]


def threshold_from_env(environ: Mapping[str, str] | None = None) -> float:
    """The re-planning threshold from ``ASPEN_REOPTIMIZE_THRESHOLD`` (a fraction ≥ 0), else
    :data:`DEFAULT_THRESHOLD`.

    >>> threshold_from_env({}), threshold_from_env({THRESHOLD_ENV: "0.5"})
    (0.2, 0.5)
    """
    import os

    raw = (os.environ if environ is None else environ).get(THRESHOLD_ENV, "").strip()
    if not raw:
        return DEFAULT_THRESHOLD
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise ConfigError(f"{THRESHOLD_ENV} must be a fraction ≥ 0 (0.2: 20 %), got {raw!r}")
    return value


def _batch(changes: Sequence[StatChange]) -> dict[str, dict[str, float]]:
    """The changes as one C.jsonl batch (``{kind: {name: value}}``)."""
    out: dict[str, dict[str, float]] = {}
    for change in changes:
        out.setdefault(change.kind, {})[change.name] = change.new
    return out


def plan_key(plan: Mapping[str, Any] | None) -> str | None:
    """A plan's canonical JSON (two plans are the same plan iff their keys are equal)."""
    return None if plan is None else json.dumps(plan, sort_keys=True)


@dataclass(frozen=True)
class Reoptimized:
    """One query's re-optimization: how it started (``start``: ``incremental`` from the saved
    state, else why from scratch), the statistics that moved, the plans and their costs under
    the new statistics, and the optimizer's work."""

    name: str
    method: str
    start: str
    changes: tuple[StatChange, ...]
    old_plan: dict[str, Any] | None
    new_plan: dict[str, Any]
    old_cost: float | None
    new_cost: float
    seconds: float
    counters: dict[str, int] = field(default_factory=dict)

    @property
    def plan_changed(self) -> bool:
        """Whether the best plan differs from the stored one."""
        return plan_key(self.old_plan) != plan_key(self.new_plan)

    def lines(self) -> list[str]:
        """What ``aspen query reoptimize`` prints for this query."""
        moved = f"{len(self.changes)} statistic(s) moved"
        verdict = ("plan changed" if self.plan_changed and self.old_plan is not None
                   else "first plan" if self.plan_changed else "plan kept")
        head = (f"{self.name}: {self.method} ({self.start}), {moved}, {verdict}, cost "
                f"{self.new_cost:.4g}, {self.seconds * 1e3:.1f} ms")
        out = [head]
        if self.plan_changed and self.old_cost is not None:
            out.append(f"  the old plan costs {self.old_cost:.4g} under the new statistics")
        out += [f"  {c.text()}" for c in self.changes[:10]]
        if len(self.changes) > 10:
            out.append(f"  … and {len(self.changes) - 10} more")
        return out


def _start(entry: RegisteredQuery, method: str, saved: Any) -> str:
    if saved is None:
        return "from scratch: no saved state"
    if saved.method != method:
        return f"from scratch: the saved state is of {saved.method}"
    if saved.query_json != entry.query_json:
        return "from scratch: the query changed"
    return "incremental"


def _run_optimizer(entry: RegisteredQuery, query: Query, stats: Stats, method: str,
                   saved: SavedState | None) -> tuple[Optimizer, Result, str, list[StatChange]]:
    """The optimizer after this re-optimization, its result, how it started, what moved."""
    start = _start(entry, method, saved)
    if start == "incremental":
        assert saved is not None
        changes = stat_changes(saved.stats, stats)
        if not set(saved.stats.values) - set(stats.values):
            began = time.perf_counter()
            result = saved.optimizer.reoptimize(_batch(changes))
            result.seconds = time.perf_counter() - began
            return saved.optimizer, result, start, changes
        start = "from scratch: statistics disappeared"
    old_stats = saved.stats if saved is not None else (
        Stats.from_json(entry.stats) if entry.stats is not None else Stats())
    optimizer = make_optimizer(method, SearchSpace(query))
    began = time.perf_counter()
    result = optimizer.optimize(stats)
    result.seconds = time.perf_counter() - began
    return optimizer, result, start, stat_changes(old_stats, stats)


def carry_selectivities(document: Mapping[str, Any], before: Stats) -> dict[str, Any]:
    """``document`` with every selectivity of ``before`` it lacks carried forward: observed
    selectivities are cumulative (a run that observed no rows for a join tells nothing new
    about it), as in the seed's adaptive experiment.

    >>> carry_selectivities({"selectivity": {"x": 0.5}},
    ...                     Stats.from_json({"selectivity": {"x": 0.1, "y": 0.2}}))
    {'selectivity': {'x': 0.5, 'y': 0.2}}
    """
    out = dict(document)
    kept = dict(out.get("selectivity", {}))
    for (kind, name), value in sorted(before.values.items()):
        if kind == "selectivity" and name not in kept:
            kept[name] = value
    out["selectivity"] = kept
    return out


def record_plan(settings: Settings, entry: RegisteredQuery, reason: str, method: str,
                plan: dict[str, Any], cost: float, stats: Stats, document: Mapping[str, Any],
                changes: Sequence[StatChange] = (), seconds: float = 0.0,
                counters: Mapping[str, int] | None = None) -> float | None:
    """Store ``plan`` as the query's plan (the registry) and, when it differs from the stored
    one, append the change to ``plans`` (once: a change after a maintained batch, whose
    ``versions`` name the batch, is not appended again by a rerun); the stored plan's cost
    under ``stats`` (None when there was none, or it is a plan of the query's earlier SQL)."""
    query = Query.from_json(json.loads(entry.query_json))
    old_plan, old_cost = entry.plan, None
    if old_plan is not None:
        try:
            old_cost = cost_of(old_plan, query, stats)
        except ConfigError:
            old_cost = None
    versions = json.dumps(dict(document.get("versions", {})), sort_keys=True)
    if plan_key(old_plan) != plan_key(plan) and not _recorded(settings, entry.name,
                                                             plan_key(plan), versions):
        append_change(settings, PlanChange(
            entry.name, datetime.now(UTC), method,
            "initial" if old_plan is None else reason, plan_key(old_plan), plan_key(plan) or "",
            old_cost, float(cost), json.dumps([c.as_json() for c in changes]), versions,
            float(seconds), json.dumps(dict(counters or {}), sort_keys=True)))
    store_plan(settings, entry.name, plan, cost, dict(document), method)
    return old_cost


def _recorded(settings: Settings, name: str, plan: str | None, versions: str) -> bool:
    """Whether the last plan change of ``name`` is already this one (a change made after a
    maintained batch, which names it in ``versions``, and rerun after a crash)."""
    if '"batch"' not in versions:
        return False
    from aspen.queries.plans import plan_history

    history = plan_history(settings, name)
    return bool(history) and history[-1].new_plan == plan and history[-1].versions == versions


def reoptimize_with(settings: Settings, name: str, document: Mapping[str, Any],
                    method: str = DEFAULT_REOPTIMIZER) -> Reoptimized:
    """Re-optimize the registered query ``name`` under the statistics ``document`` (S.json as
    :func:`aspen.queries.stats.lake_stats` writes it; selectivities it lacks are carried
    forward from the saved state, :func:`carry_selectivities`): apply what moved to the saved
    optimizer (or start from scratch), adopt a changed plan, save the optimizer.

    Example, on a lake::

        reoptimize_with(settings, "hot", {"tables": {"link": {"rows": 4800}}}).plan_changed
        # True
    """
    if method not in METHODS:
        raise ConfigError(f"unknown optimizer method {method!r}; known: {', '.join(METHODS)}")
    entry = get_query(settings, name)
    query = Query.from_json(json.loads(entry.query_json))
    saved = load_state(settings, name)
    if saved is not None and saved.query_json == entry.query_json:
        document = carry_selectivities(document, saved.stats)
    stats = Stats.from_json(document)
    optimizer, result, start, changes = _run_optimizer(entry, query, stats, method, saved)
    reason = "query changed" if start == "from scratch: the query changed" else "statistics"
    counters = result.counters.as_dict()
    old_cost = record_plan(settings, entry, reason, method, result.plan, result.cost, stats,
                           document, changes, result.seconds, counters)
    log_rows = {t: i["log_rows"] for t, i in dict(document.get("tables", {})).items()
                if "log_rows" in i}
    save_state(settings, name, method, entry.query_json, stats, optimizer, log_rows)
    return Reoptimized(name, method, start, tuple(changes), entry.plan, result.plan, old_cost,
                       result.cost, result.seconds, counters)


def reoptimize_query(spark: SparkSession, settings: Settings, name: str,
                     method: str = DEFAULT_REOPTIMIZER) -> Reoptimized:
    """Read the statistics of ``name``'s tables from the lake (with the selectivities its runs
    observed since it was registered) and re-optimize it (:func:`reoptimize_with`)."""
    from aspen.queries.stats import lake_stats, table_versions

    entry = get_query(settings, name)
    parsed = entry.parsed()
    versions = table_versions(settings, parsed.tables)
    found = lake_stats(spark, settings, parsed, versions, observed_since=entry.registered_at)
    return reoptimize_with(settings, name, found.document, method)


def reoptimize_all(spark: SparkSession, settings: Settings, names: Sequence[str] = (),
                   method: str = DEFAULT_REOPTIMIZER
                   ) -> list[tuple[str, Reoptimized | AspenError]]:
    """Re-optimize ``names`` (default: every registered query); a query that fails (a table it
    reads is missing) is reported and the others still run."""
    targets = list(names) or [q.name for q in list_queries(settings)]
    out: list[tuple[str, Reoptimized | AspenError]] = []
    for name in targets:
        try:
            out.append((name, reoptimize_query(spark, settings, name, method)))
        except AspenError as err:
            out.append((name, err))
    return out


def _moved(stored: Mapping[str, Any], settings: Settings, threshold: float) -> str | None:
    """Why the stored statistics are stale by more than ``threshold`` (a table's row count in
    the Delta log moved by more than that fraction), or None."""
    from aspen.errors import TableMissingError
    from aspen.lake.deltars import row_count

    for table, info in sorted(dict(stored.get("tables", {})).items()):
        before = float(info.get("log_rows", info.get("rows", 0.0)))  # the log's count, as now
        try:
            now = float(row_count(settings, table))
        except (TableMissingError, OSError, ValueError):
            continue
        moved = abs(now - before) / max(before, 1.0)
        if moved > threshold:
            return f"rows of {table} moved {moved:.0%} ({before:,.0f} → {now:,.0f})"
    return None


#: How often queries are re-optimized by default (the split points of the seed's adaptive
#: experiment, and the re-optimization DAG's default schedule).
DEFAULT_EVERY = timedelta(minutes=15)
#: Scheduling slack: a query re-optimized this little less than ``every`` ago is due too.
_SLACK = timedelta(seconds=30)


def due(settings: Settings, threshold: float | None = None, every: timedelta = DEFAULT_EVERY,
        now: datetime | None = None) -> dict[str, str]:
    """The registered queries due for re-optimization, with why. Without ``threshold`` every
    query is (each run of the schedule is a split point). With one — Aspen's extension of the
    seed's split points, for a schedule that checks often — a query is due when never
    re-optimized, re-optimized ``every`` or longer ago, or a table it reads changed its row
    count by more than ``threshold`` (a fraction) since. Delta logs only: no Spark, no data
    file read.

    >>> import tempfile
    >>> due(Settings(lake=tempfile.mkdtemp()), threshold=0.5)
    {}
    """
    from aspen.queries.keyed_table import read_rows
    from aspen.queries.optimizer_state import STATE_TABLE

    if threshold is not None and not threshold >= 0:
        raise ConfigError(f"the re-optimization threshold must be a fraction ≥ 0, got "
                          f"{threshold!r}")
    entries = list_queries(settings)
    if threshold is None:
        return {entry.name: "scheduled" for entry in entries}
    now = now or datetime.now(UTC)
    saved = read_rows(settings, STATE_TABLE, "query")
    out: dict[str, str] = {}
    for entry in entries:
        row = saved.get(entry.name)
        if row is None:
            out[entry.name] = "never re-optimized"
            continue
        stamp = row["saved_at"]
        age = now - (stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC))
        if age >= every - _SLACK:
            out[entry.name] = f"last re-optimized {age.total_seconds() / 60:.0f} min ago"
            continue
        reason = _moved(json.loads(row["stats_json"]), settings, threshold)
        if reason is not None:
            out[entry.name] = reason
    return out
