"""Pipeline health: committed batches (``ledger``), their cost (``metrics``), the latest
expectation results (``expectation_results``) and a link to the quarantine.

Every section reads its own table through ``lakeview`` (delta-rs, cached by Delta version) and
says plainly when the table is missing or empty.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st
from lakeview import batch_numbers, current_lake, latest_results, read_latest, when_text

from aspen.settings import Settings

#: Charts of the per-batch numbers: (column of :func:`lakeview.batch_numbers`, title).
CHARTS: tuple[tuple[str, str], ...] = (
    ("updates_in", "Updates in per batch"),
    ("wall_seconds", "Wall time per batch (s)"),
    ("messages", "Messages (rows) shipped between nodes"),
    ("state_bytes", "Operator state (bytes)"),
)


def batches_section(settings: Settings) -> None:
    ledger = read_latest(settings, "ledger")
    if ledger is None:
        st.info("No `ledger` table yet: no batch has been maintained (run `aspen maintain`).")
        return
    if ledger.problem:
        st.warning(ledger.problem)
        return
    metrics = read_latest(settings, "metrics")
    metric_rows = metrics.rows if metrics is not None and not metrics.problem else None
    if ledger.rows.empty:
        st.info("The `ledger` has no committed batch yet (the first batch may be in progress).")
        return

    numbers = batch_numbers(ledger.rows, metric_rows)
    last = numbers.iloc[-1]
    a, b, c, d = st.columns(4)
    a.metric("Batches committed", len(numbers))
    b.metric("Last batch", int(last["batch_id"]))
    c.metric("Last commit", when_text(last["committed_at"]) if "committed_at" in numbers else "–")
    d.metric(
        "Last wall time",
        "–" if pd.isna(last["wall_seconds"]) else f"{last['wall_seconds']:.2f} s",
    )
    if metric_rows is not None and not metric_rows.empty:
        pending = sorted(set(metric_rows["batch_id"].astype(int)) - set(numbers["batch_id"]))
        if pending:
            st.caption(
                f"Batch(es) {', '.join(map(str, pending))} wrote metrics but have no ledger row: "
                "in progress, or failed before committing."
            )
    elif metrics is not None and metrics.problem:
        st.warning(metrics.problem)
    else:
        st.caption("No `metrics` rows yet: wall time, messages and state size are not shown.")

    if "committed_at" in numbers:
        st.subheader("Batches over time")
        st.line_chart(numbers, x="committed_at", y="batch_id", x_label="committed at")
    st.subheader("Per batch")
    charted = [(column, title) for column, title in CHARTS if numbers[column].notna().any()]
    for start in range(0, len(charted), 2):
        for column_box, (column, title) in zip(st.columns(2), charted[start : start + 2],
                                               strict=False):
            column_box.markdown(f"**{title}**")
            column_box.bar_chart(numbers, x="batch_id", y=column, x_label="batch")
    st.caption(
        "The local runtime's communication counters (messages, tuples, prov_bytes) accumulate "
        "from the last rebuild of its state; wall time and updates are per batch."
    )
    st.dataframe(numbers, hide_index=True, width="stretch")


def expectations_section(settings: Settings) -> None:
    st.subheader("Expectations")
    results = read_latest(settings, "expectation_results")
    if results is None or (not results.problem and results.rows.empty):
        st.info("No expectation results yet (the pipeline's expectations step writes them).")
        return
    if results.problem:
        st.warning(results.problem)
        return
    batch, rows = latest_results(results.rows)
    failed = int((~rows["success"]).sum())
    if failed:
        st.error(f"{failed} of {len(rows)} expectation(s) FAILED in batch {batch}.")
    else:
        st.success(f"All {len(rows)} expectation(s) passed in batch {batch}.")
    columns = [
        c
        for c in ("success", "suite", "table", "expectation", "observed", "checked_at")
        if c in rows
    ]
    st.dataframe(rows[columns], hide_index=True, width="stretch")


def quarantine_section(settings: Settings) -> None:
    st.subheader("Quarantine")
    quarantine = read_latest(settings, "quarantine")
    if quarantine is None:
        st.caption("No `quarantine` table yet: nothing has been ingested.")
    elif quarantine.problem:
        st.warning(quarantine.problem)
    else:
        st.metric("Quarantined records", len(quarantine.rows))
    st.page_link("pages/quarantine.py", label="Open the quarantine page", icon=":material/block:")


st.title("Pipeline health")
lake = current_lake()
batches_section(lake)
expectations_section(lake)
quarantine_section(lake)
