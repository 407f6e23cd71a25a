"""One maintained batch of one query, incrementally and exactly once:
:func:`maintain_incremental`.

The state of ``qstate_<name>`` says which maintained batch it covers, the last commit of
``q_<name>`` which batch the result shows (:mod:`.store`). For batch ``b``:

- the state covers ``b`` already: nothing to do — unless the result does not show ``b`` (a
  crash between the two writes), then the result is rewritten whole from the state (``a`` is a
  function of the state alone);
- the state covers the batch before ``b``: the batch's table changes (:mod:`.lake_delta`) are
  applied (``state ⊗ h(Δ)``), the changed state rows and the ``batch`` row are written in one
  MERGE, then the result's changes in one MERGE marked ``b`` (whole, when the result was not
  at the batch before: another writer, or none yet);
- otherwise (no state, one built for other SQL, one behind by more than a batch, or one the
  batch's changes would drive below a count of 0 — :class:`.state.StateError`): the state is
  built from the tables as of ``b`` and both tables are written whole.

A process keeps the last state it wrote per query and lake, and uses it while the state
table is still at the version it wrote; otherwise it reads the table.

Example, on a lake after maintained batch 7::

    maintain_incremental(lake, "hot", parsed, 7).line()
    # 'hot: batch 7 incremental, 2 result row(s) changed, 1,203 state row(s), 0.04 s'
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aspen.queries.incremental.apply import IncrementalQuery
from aspen.queries.incremental.compile import IncrementalPlan, compile_query
from aspen.queries.incremental.expr import NotIncrementalError
from aspen.queries.incremental.lake_delta import batch_changes, batch_points, table_rows
from aspen.queries.incremental.order import follow_plan
from aspen.queries.incremental.state import StateError
from aspen.queries.incremental.store import (
    apply_result,
    fingerprint,
    read_state,
    result_batch,
    state_table,
    write_result,
    write_state,
    write_state_changes,
)
from aspen.queries.spec import ParsedQuery
from aspen.settings import Settings

__all__ = ["IncrementalReport", "forget_held", "maintain_incremental"]

#: Per (lake, query): the fingerprint, the state table version written, and the query.
_HELD: dict[tuple[str, str], tuple[str, int, IncrementalQuery]] = {}


@dataclass(frozen=True)
class IncrementalReport:
    """One batch of one query: what was done (``incremental``, ``built``, ``already
    applied``, ``result rewritten``), the result rows added plus removed, the state's rows,
    deletions of rows the state did not hold (ignored) and the seconds taken."""

    query: str
    batch_id: int
    mode: str
    rows_changed: int
    state_rows: int
    seconds: float
    ignored: int = 0
    #: The live statistics after the batch (S.json; None: not a join), :mod:`.livestats`.
    statistics: dict[str, Any] | None = field(default=None, compare=False, repr=False)
    #: Per relation, the order its change bound the others in (aliases).
    orders: tuple[tuple[str, ...], ...] = ()
    #: What the plan did after the batch (kept, changed), said by the caller.
    note: str = ""

    def line(self) -> str:
        """The report in one line.

        >>> IncrementalReport("hot", 7, "incremental", 2, 1203, 0.041).line()
        'hot: batch 7 incremental, 2 result row(s) changed, 1,203 state row(s), 0.04 s'
        """
        ignored = f", {self.ignored} deletion(s) of absent rows ignored" if self.ignored else ""
        note = f"; {self.note}" if self.note else ""
        return (f"{self.query}: batch {self.batch_id} {self.mode}, {self.rows_changed:,} result "
                f"row(s) changed, {self.state_rows:,} state row(s){ignored}, "
                f"{self.seconds:.2f} s{note}")


def forget_held() -> None:
    """Drop every state this process holds (the next batch reads the tables)."""
    _HELD.clear()


def _plan(name: str, parsed: ParsedQuery) -> IncrementalPlan:
    plan = compile_query(parsed)
    if not isinstance(plan, IncrementalPlan):
        raise NotIncrementalError(f"query {name!r} is not maintained incrementally: "
                                  f"{plan.reason}")
    return plan


def _table_version(settings: Settings, name: str) -> int | None:
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        return DeltaTable(settings.table_uri(state_table(name))).version()
    except TableNotFoundError:
        return None


def _load(settings: Settings, name: str, plan: IncrementalPlan,
          text: str) -> IncrementalQuery | None:
    """The query with its stored state (held or read), None when there is none for ``text``
    (or, for a join, one stored without its tables' row counts: it is built again)."""
    key = (settings.lake_uri, name)
    held = _HELD.get(key)
    if held is not None and held[0] == text and held[1] == _table_version(settings, name):
        return held[2]
    _HELD.pop(key, None)
    stored = read_state(settings, name, plan)
    if stored is None or stored.plan_text != text:
        return None
    if plan.keep_rows and stored.state.table_rows is None:
        return None
    return IncrementalQuery(plan, stored.state)


def _aliases(plan: IncrementalPlan) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(plan.relations[p].alias for p in order) for order in plan.orders)


def maintain_incremental(settings: Settings, name: str, parsed: ParsedQuery,
                         batch_id: int, tree: Mapping[str, Any] | None = None
                         ) -> IncrementalReport:
    """Bring ``q_<name>`` and its state to committed maintained batch ``batch_id`` (see the
    module docstring), joining a join's changes in the order of the optimizer's plan ``tree``
    (:mod:`.order`; None: the compiler's own order). Raises :class:`NotIncrementalError` (a
    ConfigError) when the query is not incremental — it is then recomputed — and
    :class:`~aspen.errors.LakeError` when the batch is not committed."""
    clock = time.monotonic()
    plan = follow_plan(_plan(name, parsed), tree)
    text = fingerprint(parsed)
    before, after = batch_points(settings, batch_id)
    key = (settings.lake_uri, name)
    try:
        query = _load(settings, name, plan, text)
        if query is not None:
            query.follow(tree)
        changed, ignored, build = 0, 0, True
        if query is not None and query.state.batch_id >= batch_id:
            build = False
            mode = "already applied"
            if query.state.batch_id == batch_id and result_batch(settings, name) != batch_id:
                write_result(settings, name, plan, query.answer(), batch_id)
                mode = "result rewritten"
            version = _table_version(settings, name)
        elif query is not None and query.state.batch_id == before.batch_id:
            shown = result_batch(settings, name)
            try:
                outcome = query.apply(batch_changes(settings, plan.tables, before, after))
                build = False
            except StateError:  # a count below 0: the state is not the tables' — build it
                pass
            if not build:
                query.state.batch_id = batch_id
                version = write_state_changes(settings, name, plan, query.state, outcome, text)
                if shown != before.batch_id or not apply_result(settings, name, plan,
                                                                 outcome.result, batch_id):
                    write_result(settings, name, plan, query.answer(), batch_id)
                mode, ignored = "incremental", outcome.ignored
                changed = sum(abs(n) for n in outcome.result.values())
        if build:
            query = IncrementalQuery(plan)
            result = query.build({t: table_rows(settings, t, after) for t in plan.tables})
            query.state.batch_id = batch_id
            version = write_state(settings, name, plan, query.state, text)
            write_result(settings, name, plan, result, batch_id)
            mode, changed = "built", sum(result.values())
    except BaseException:
        _HELD.pop(key, None)  # the held state may be ahead of the tables
        raise
    if version is not None:
        _HELD[key] = (text, version, query)
    return IncrementalReport(name, batch_id, mode, changed, query.state.row_count(),
                             time.monotonic() - clock, ignored, query.statistics(),
                             _aliases(query.plan))
