"""Plans that follow the data: after each maintained batch, re-plan an incrementally maintained
join when its live statistics moved.

A batch maintained incrementally leaves the query's statistics exact as of that batch
(:mod:`aspen.queries.incremental.livestats`, kept with its state in ``qstate_<name>``). Here
they are compared with the statistics the query's saved optimizer is at
(``optimizer_state``): when one moved by more than the re-planning threshold
(:func:`aspen.queries.reoptimize.threshold_from_env`, the DAG's ``ASPEN_REOPTIMIZE_THRESHOLD``,
default 20 %) — or the query has no saved optimizer, or no plan yet — every statistic that
differs is applied to the saved optimizer as one batch of changes, incrementally
(:func:`aspen.queries.reoptimize.reoptimize_with`): a changed plan is recorded in ``plans`` and
stored in ``queries``, and the next batch joins its changes in the new plan's order
(:mod:`aspen.queries.incremental.order`). The state is the query's, not the plan's, so nothing
migrates.

The live statistics replace the ones they cover (rows, filter and join selectivities, the
``ndv`` of join columns read unfiltered); the others the optimizer is at (a row ``width`` from
a forced re-planning on Spark) are kept. The plan change names the maintained batch
(``versions``: ``{"batch": b}``), so a rerun of a batch that crashed before its plan was
written records it once.

>>> followed = Followed(False, ())
>>> followed.note()
'plan kept'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aspen.optimizer.methods import METHODS
from aspen.optimizer.stats import Stats
from aspen.queries.registry import RegisteredQuery
from aspen.queries.reoptimize import (
    DEFAULT_REOPTIMIZER,
    Reoptimized,
    StatChange,
    moved_fraction,
    moved_statistics,
    reoptimize_with,
    threshold_from_env,
)
from aspen.settings import Settings

__all__ = ["Followed", "follow_statistics", "forget_planned", "live_document"]

#: Per (lake, query): the optimizer_state version read, its query_json, statistics, method.
_AT: dict[tuple[str, str], tuple[int, str, Stats, str]] = {}


@dataclass(frozen=True)
class Followed:
    """What one batch's statistics did to a query's plan: re-planned or not, the statistics
    that moved beyond the threshold, and the re-optimization when there was one."""

    replanned: bool
    moved: tuple[StatChange, ...]
    result: Reoptimized | None = None
    why: str = ""

    @property
    def plan_changed(self) -> bool:
        """Whether the plan changed (a first plan included)."""
        return self.result is not None and self.result.plan_changed

    def note(self) -> str:
        """In words, for the batch's line.

        >>> Followed(True, (StatChange("rows", "link", 10.0, 40.0),), why="moved").note()
        're-planned (moved: rows of link 10 → 40), plan kept'
        """
        if not self.replanned:
            return "plan kept"
        shown = ", ".join(c.text() for c in self.moved[:3])
        more = f" and {len(self.moved) - 3} more" if len(self.moved) > 3 else ""
        moved = f": {shown}{more}" if shown else ""
        verdict = ("plan changed" if self.plan_changed and self.result
                   and self.result.old_plan is not None
                   else "first plan" if self.plan_changed else "plan kept")
        return f"re-planned ({self.why}{moved}), {verdict}"


def forget_planned() -> None:
    """Drop the statistics this process holds per query (the next batch reads them)."""
    _AT.clear()


def _version(settings: Settings) -> int | None:
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    from aspen.queries.optimizer_state import STATE_TABLE

    try:
        return DeltaTable(settings.table_uri(STATE_TABLE)).version()
    except TableNotFoundError:
        return None


def _planned_at(settings: Settings, name: str) -> tuple[str, Stats, str] | None:
    """The join graph and statistics the saved optimizer of ``name`` is at, and its method
    (None: none saved); read again only when ``optimizer_state`` moved."""
    import json

    from aspen.queries.keyed_table import read_rows
    from aspen.queries.optimizer_state import STATE_TABLE

    version = _version(settings)
    if version is None:
        return None
    key = (settings.lake_uri, name)
    held = _AT.get(key)
    if held is not None and held[0] == version:
        return held[1], held[2], held[3]
    row = read_rows(settings, STATE_TABLE, "query").get(name)
    if row is None:
        _AT.pop(key, None)
        return None
    stats = Stats.from_json(json.loads(row["stats_json"]))
    _AT[key] = (version, row["query_json"], stats, row["method"])
    return row["query_json"], stats, row["method"]


def live_document(live: Mapping[str, Any], before: Stats | None) -> dict[str, Any]:
    """S.json of the statistics ``before`` with the live ones ``live`` put over them.

    >>> before = Stats.from_json({"tables": {"t": {"rows": 5, "width": 20}}})
    >>> live_document({"tables": {"t": {"rows": 9}}}, before)["tables"]
    {'t': {'rows': 9.0, 'width': 20.0}}
    """
    values = dict(before.values) if before is not None else {}
    values.update(Stats.from_json(live).values)
    return Stats(values).to_json()


def _log_rows(settings: Settings, tables: Mapping[str, Any]) -> dict[str, float]:
    """Each table's Delta-log row count, which the DAG's due check compares with."""
    from aspen.errors import TableMissingError
    from aspen.lake.deltars import row_count

    out = {}
    for table in tables:
        try:
            out[table] = float(row_count(settings, table))
        except (TableMissingError, OSError, ValueError, KeyError):
            continue
    return out


def follow_statistics(settings: Settings, entry: RegisteredQuery, live: Mapping[str, Any],
                      batch_id: int, threshold: float | None = None,
                      method: str | None = None) -> Followed:
    """Re-plan ``entry`` after maintained batch ``batch_id`` when its live statistics ``live``
    (S.json) moved by more than ``threshold`` (None: from the environment) since its saved
    optimizer's, or it has no saved optimizer or plan (see the module docstring); with the
    saved optimizer's method unless ``method`` is given (the declarative one without).

    Example, on a lake after batch 7 flipped the sizes of a join's inputs::

        follow_statistics(settings, get_query(settings, "hot"), report.statistics, 7).note()
        # 're-planned (moved: rows of triggered 40 → 4,000), plan changed'
    """
    limit = threshold_from_env() if threshold is None else threshold
    at = _planned_at(settings, entry.name)
    before = at[1] if at is not None else (
        Stats.from_json(entry.stats) if entry.stats is not None else None)
    document = live_document(live, before)
    new = Stats.from_json(document)
    if at is None or at[0] != entry.query_json:
        why = "no saved optimizer" if at is None else "the query changed"
    elif entry.plan is None:
        why = "no plan yet"
    else:
        why = "moved"
    moved = tuple(moved_statistics(before, new, limit) if before is not None else ())
    if why == "moved" and not moved:
        return Followed(False, ())
    for table, rows in _log_rows(settings, document["tables"]).items():
        document["tables"].setdefault(table, {})["log_rows"] = rows
    document["versions"] = {"batch": int(batch_id)}
    if method is None:
        method = at[2] if at is not None and at[2] in METHODS else DEFAULT_REOPTIMIZER
    result = reoptimize_with(settings, entry.name, document, method)
    _AT.pop((settings.lake_uri, entry.name), None)
    return Followed(True, moved, result, why)


def _relative(change: Mapping[str, Any]) -> float:
    old = change.get("old")
    if old is None:
        return float("inf")
    return moved_fraction(float(old), float(change.get("new") or 0.0), str(change.get("kind")))


def plan_story(settings: Settings, entry: RegisteredQuery, shown: int = 6) -> list[str]:
    """What ``aspen query show`` says of a query's plan beyond its tree: when it last changed,
    why (the statistics that moved, the largest moves first) and, for an incrementally
    maintained join, the order each relation's change is joined in under it.

    >>> import tempfile
    >>> from aspen.queries.registry import register
    >>> lake = Settings(lake=tempfile.mkdtemp())
    >>> entry = register(lake, "hops", "SELECT a.src FROM link a JOIN link b ON a.dst = b.src")
    >>> plan_story(lake, entry)
    ['plan never changed yet', 'delta join order (before any plan): Δa: b; Δb: a']
    """
    import json

    from aspen.queries.incremental.compile import IncrementalPlan, compile_query
    from aspen.queries.incremental.order import plan_orders
    from aspen.queries.plans import plan_history

    lines = []
    history = plan_history(settings, entry.name)
    if not history:
        lines.append("plan never changed yet")
    else:
        last = history[-1]
        batch = json.loads(last.versions or "{}").get("batch")
        after = f", after maintained batch {batch}" if batch is not None else ""
        old = "" if last.old_cost is None else f"{last.old_cost:.4g} → "
        lines.append(f"plan last changed {last.changed_at:%Y-%m-%d %H:%M:%S} UTC "
                     f"({last.reason}, {last.method}{after}): cost {old}{last.new_cost:.4g}")
        changes = sorted(last.change_list, key=_relative, reverse=True)
        for change in changes[:shown]:
            lines.append("  moved: " + StatChange(change["kind"], change["name"],
                                                  change.get("old"), change["new"]).text())
        if len(changes) > shown:
            lines.append(f"  … and {len(changes) - shown} more statistic(s)")
    compiled = compile_query(entry.parsed())
    if isinstance(compiled, IncrementalPlan) and compiled.keep_rows:
        orders = plan_orders(compiled, entry.plan)
        label = "" if orders is not None else " (before any plan)"
        names = [r.alias for r in compiled.relations]
        text = "; ".join(f"Δ{names[p]}: " + ", ".join(names[q] for q in order)
                         for p, order in enumerate(orders or compiled.orders))
        lines.append(f"delta join order{label}: {text}")
    return lines
