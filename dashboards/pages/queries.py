"""Queries: the continuous queries registered on the lake, each one's last outcome after a batch
(a failed or cancelled query says why, in one line), the path it takes after a batch
(maintained incrementally, or recomputed on Spark and why), what its last batches cost (seconds
and result rows changed), its current plan drawn as a tree with the estimated rows and those
its last Spark run observed, that run per operator, and the history of its plan (old → new and
the statistics that moved).

Reads the ``queries``, ``query_status``, ``query_batches``, ``query_runs`` and ``plans`` tables
(written by delta-rs) through ``lakeview`` at their latest versions, cached by version; a
missing table or a query that was never planned or never ran gives a plain message, never a
traceback.
"""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st
from lakeview import AspenError, Settings, Snapshot, current_lake, read_latest, text, when_text
from queryview import (
    BATCHES_TABLE,
    OK,
    PLANS_TABLE,
    QUERIES_TABLE,
    RUNS_TABLE,
    STATUS_TABLE,
    RegisteredQuery,
    batch_cost_rows,
    latest_run,
    maintenance_path,
    outcome_text,
    plan_dot,
    plan_history_rows,
    plan_tree,
    query_list,
    registered_queries,
    run_table,
    same_plan,
    status_of,
    stored_plan,
)

#: What a stored plan, join graph or statistics document that cannot be read raises.
UNREADABLE = (AspenError, ValueError, TypeError, KeyError, AttributeError)


def rows_or_warning(snapshot: Snapshot | None) -> pd.DataFrame | None:
    """The rows of a table, ``None`` when there is none (after a warning if it is unreadable)."""
    if snapshot is None:
        return None
    if snapshot.problem:
        st.warning(snapshot.problem)
        return None
    return snapshot.rows


def relation_tables(entry: RegisteredQuery) -> dict[str, str]:
    """The query's aliases → tables (none when its join graph cannot be read)."""
    try:
        return {str(a): str(t) for a, t in json.loads(entry.query_json)["relations"].items()}
    except UNREADABLE:
        return {}


def outcome_section(entry: RegisteredQuery, statuses: pd.DataFrame | None) -> None:
    """The query's last outcome after a maintained batch: an error box when it failed or was
    cancelled by its time limit, a caption when it ran."""
    row = status_of(statuses, entry.name)
    if row is None:
        st.caption("It has not run after a maintained batch yet.")
        return
    when = when_text(row.get("finished_at"))
    if str(row.get("status")) == OK:
        st.caption(f"Last outcome ({when} UTC): {text(outcome_text(row))}.")
    else:
        st.error(f"Last outcome ({when} UTC): {text(outcome_text(row))}")


def path_section(entry: RegisteredQuery) -> None:
    """The path the query takes after a maintained batch: incremental, or recomputed and why."""
    incremental, words = maintenance_path(entry.sql)
    if incremental:
        st.success(f"Path: {text(words)}.")
    else:
        st.warning(f"Path: {text(words)}.")


def cost_section(entry: RegisteredQuery, batches: pd.DataFrame | None) -> None:
    """The last batches' cost of the query: per round after a maintained batch its path, its
    seconds and the result rows it changed (incremental) or wrote (recomputed)."""
    st.subheader("Cost per batch")
    rows = batch_cost_rows(batches, entry.name)
    if rows.empty:
        where = "" if batches is not None else " (there is no `query_batches` table yet)"
        st.info(f"No batch cost recorded for {text(entry.name)}{where}: the query worker "
                "records one row per query after every maintained batch.")
        return
    last = rows.iloc[-1]
    a, b, c = st.columns(3)
    a.metric("Last batch", f"{int(last['batch'])}" if pd.notna(last["batch"]) else "–")
    b.metric("Its seconds", f"{float(last['seconds']):.3f} s")
    changed = last["rows changed"]
    c.metric("Result rows changed", "–" if pd.isna(changed) else f"{int(changed):,}")
    st.caption(f"The last {len(rows)} round(s), oldest first: seconds are the query's wall "
               "time in the round; a recomputed run rewrites its whole result (result rows).")
    st.line_chart(rows.set_index("batch")[["seconds"]])
    st.dataframe(rows, hide_index=True, width="stretch")


def plan_section(entry: RegisteredQuery, run: pd.DataFrame) -> None:
    """The stored plan as a tree: per operator its estimated rows and, from ``run`` (the rows of
    the last run), the rows observed and whether the planned Spark operator ran."""
    st.subheader("Current plan")
    if entry.plan_json is None:
        st.info(f"{text(entry.name)} has not been planned yet: "
                f"{text(f'aspen query plan {entry.name}')} plans it (a run plans it too).")
        return
    cost = "–" if entry.plan_cost is None else f"{entry.plan_cost:.4g}"
    st.caption(f"Chosen by {text(entry.optimizer or 'an unknown optimizer')} at "
               f"{when_text(entry.planned_at)} UTC; cost {cost}.")
    try:
        nodes, relations = stored_plan(entry)
    except UNREADABLE as err:
        st.warning(f"The stored plan of {text(entry.name)} cannot be drawn: {text(err)}")
        return
    by_path = run.empty or same_plan(run["plan"].iloc[0], entry.plan_json)
    tree = plan_tree(nodes, relations, run if not run.empty else None, by_path)
    st.graphviz_chart(plan_dot(tree))
    if run.empty:
        st.caption("Estimated rows only: the query has not run yet.")
    elif by_path:
        st.caption("Rows estimated under the plan's statistics and observed by the last run; "
                   "✓ the Spark operator that ran a join is the planned one, ✗ it is not. "
                   "A hash join's right input is its build side.")
    else:
        st.caption("The last run executed an earlier plan: each operator shows the rows that "
                   "run observed over the same relations (the same rows in any join order); "
                   "its operators are in the table below.")


def run_section(entry: RegisteredQuery, run: pd.DataFrame, runs_read: bool) -> None:
    """The last run: when, how long, its result's rows, and per operator the estimated and
    observed rows (``runs_read``: whether there is a ``query_runs`` table at all)."""
    st.subheader("Last run")
    if run.empty:
        where = "" if runs_read else " (there is no `query_runs` table yet)"
        st.info(f"{text(entry.name)} has never run{where}: "
                f"{text(f'aspen query run {entry.name}')} runs it.")
        return
    first = run.iloc[0]
    table = run_table(run, relation_tables(entry))
    joins = table[~table["operator"].str.startswith("scan")]
    matched = int(joins["matches"].sum())
    batch = first.get("batch_id")
    after = "" if batch is None or pd.isna(batch) else f", after maintained batch {int(batch)}"
    st.caption(f"Started {when_text(first.get('started_at'))} UTC{after}.")
    a, b, c = st.columns(3)
    seconds = first.get("seconds")
    a.metric("Wall time", "–" if pd.isna(seconds) else f"{float(seconds):.2f} s")
    result_rows = first.get("result_rows")
    b.metric("Result rows", "–" if pd.isna(result_rows) else f"{int(result_rows):,}")
    c.metric("Joins run as planned", f"{matched} of {len(joins)}")
    st.markdown("**Estimated vs observed rows per operator**")
    st.dataframe(table, hide_index=True, width="stretch")


def history_section(entry: RegisteredQuery, plans: pd.DataFrame | None) -> None:
    """The query's plan changes (``plans`` is the ``plans`` table), newest first."""
    st.subheader("Plan history")
    history = plan_history_rows(plans if plans is not None else pd.DataFrame(), entry.name)
    if history.empty:
        st.info(f"No plan change recorded for {text(entry.name)} (the `plans` table gets a "
                "row each time a query's plan changes).")
        return
    st.caption("Newest first; a plan is its join order with each join's method; the old cost "
               "is the old plan's under the new statistics.")
    st.dataframe(history, hide_index=True, width="stretch")


def show_queries(settings: Settings) -> None:
    """The list of registered queries, a selector, and the chosen query's path, cost per
    batch, plan, last run and plan history."""
    registry = read_latest(settings, QUERIES_TABLE)
    if registry is None:
        st.info("No continuous queries yet: there is no `queries` table. Register one with "
                "`aspen query register NAME --sql \"SELECT …\"`.")
        return
    frame = rows_or_warning(registry)
    if frame is None:
        return
    queries = registered_queries(frame)
    if not queries:
        st.info("No continuous query is registered (every one was dropped).")
        return
    runs = rows_or_warning(read_latest(settings, RUNS_TABLE))
    plans = rows_or_warning(read_latest(settings, PLANS_TABLE))
    statuses = rows_or_warning(read_latest(settings, STATUS_TABLE))
    batches = rows_or_warning(read_latest(settings, BATCHES_TABLE))

    listed = query_list(queries, runs, statuses if statuses is not None else pd.DataFrame())
    st.dataframe(listed, hide_index=True, width="stretch")
    by_name = {q.name: q for q in queries}
    name = st.selectbox("Query", list(by_name), key="query_name")
    entry = by_name[name]
    st.header(f"Query {text(entry.name)}")
    st.code(entry.sql, language="sql")
    outcome_section(entry, statuses)
    path_section(entry)
    cost_section(entry, batches)
    run = latest_run(runs, entry.name) if runs is not None else pd.DataFrame()
    plan_section(entry, run)
    run_section(entry, run, runs is not None)
    history_section(entry, plans)


st.title("Queries")
show_queries(current_lake())
