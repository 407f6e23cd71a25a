"""Pipeline health: committed batches (``ledger``), their cost (``metrics``) with the slow ones
flagged, the latest result of every expectation (``expectation_results``) with the stale ones
marked, and a link to the quarantine.

Every section reads its own table through ``lakeview`` (delta-rs, cached by Delta version) and
says plainly when the table is missing or empty. Only what says something is charted: a series
that is all zero or constant is not, and the local runtime's communication counters, which
accumulate over batches, are not drawn as if they were one batch's (``status``).
"""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st
from lakeview import Settings, batch_numbers, current_lake, read_latest, when_text
from status import (
    SLOW_ABSOLUTE_S,
    SLOW_FACTOR,
    SLOW_FLOOR_S,
    duration_text,
    latest_expectations,
    per_batch_counter,
    slow_batches,
    worth_charting,
)
from streamlit.errors import StreamlitPageNotFoundError

#: Charts of the per-batch numbers besides the wall time: (column of the batches table, title).
CHARTS: tuple[tuple[str, str], ...] = (
    ("updates in", "Updates in per batch"),
    ("messages", "Messages (rows) shipped between nodes per batch"),
    ("state bytes", "Operator state (bytes)"),
)
#: Plain names of the batches table's columns, in their order.
BATCH_COLUMNS = {
    "batch_id": "batch",
    "committed_at": "committed at",
    "runtime": "runtime",
    "partitions": "partitions",
    "mode": "mode",
    "through_ingest_batch": "through ingest batch",
    "updates_in": "updates in",
    "view_changes_out": "view changes out",
    "wall_seconds": "wall time (s)",
    "slow": "slow",
    "messages": "messages",
    "state_bytes": "state bytes",
}
#: Plain names of the expectations table's columns, in their order.
EXPECTATION_COLUMNS = {
    "success": "passed",
    "stale": "stale",
    "suite": "suite",
    "table": "table",
    "expectation": "expectation",
    "observed": "observed",
    "batch_id": "batch",
    "checked_at": "checked at",
}
SLOW_RULE = (
    f"A batch is slow when it took over {SLOW_FACTOR:g}× the median of the batches before it "
    f"and over {duration_text(SLOW_FLOOR_S)}, or over {duration_text(SLOW_ABSOLUTE_S)}."
)


def batches_table(numbers: pd.DataFrame) -> pd.DataFrame:
    """The per-batch numbers with the slow flag, per-batch counters and plain column names."""
    flags = slow_batches(numbers.set_index("batch_id")["wall_seconds"])
    frame = numbers.merge(flags[["batch_id", "slow", "median_before"]], on="batch_id",
                          how="left")
    frame["messages"] = per_batch_counter(frame, "messages")
    columns = [c for c in BATCH_COLUMNS if c in frame]
    return frame[columns + ["median_before"]].rename(columns=BATCH_COLUMNS)


def wall_time_chart(table: pd.DataFrame) -> alt.Chart:
    """Bars of the wall time per batch, the slow ones red."""
    data = table[["batch", "wall time (s)", "slow"]].assign(
        speed=table["slow"].map({True: "slow", False: "normal"}))
    return alt.Chart(data).mark_bar().encode(
        x=alt.X("batch:O", title="batch"),
        y=alt.Y("wall time (s):Q", title="wall time (s)"),
        color=alt.Color("speed:N", title=None,
                        scale=alt.Scale(domain=["normal", "slow"], range=["#4C78A8", "#E45756"])),
        tooltip=["batch", "wall time (s)", "speed"],
    )


def slow_section(table: pd.DataFrame) -> None:
    slow = table[table["slow"].fillna(False).astype(bool)]
    if slow.empty:
        st.caption(f"No slow batch. {SLOW_RULE}")
        return
    st.warning(f"{len(slow)} slow batch(es): " + ", ".join(
        f"{int(row['batch'])} ({duration_text(row['wall time (s)'])})"
        for _, row in slow.iterrows()) + ".")
    st.caption(SLOW_RULE)
    shown = slow.rename(columns={"median_before": "median before (s)"})
    columns = [c for c in ("batch", "committed at", "updates in", "wall time (s)",
                           "median before (s)") if c in shown]
    st.dataframe(shown[columns], hide_index=True, width="stretch")


def batches_section(settings: Settings) -> int | None:
    """The committed batches; returns the last committed batch (None before the first)."""
    ledger = read_latest(settings, "ledger")
    if ledger is None:
        st.info("No `ledger` table yet: no batch has been maintained (run `aspen maintain`).")
        return None
    if ledger.problem:
        st.warning(ledger.problem)
        return None
    metrics = read_latest(settings, "metrics")
    metric_rows = metrics.rows if metrics is not None and not metrics.problem else None
    if ledger.rows.empty:
        st.info("The `ledger` has no committed batch yet (the first batch may be in progress).")
        return None

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

    table = batches_table(numbers)
    st.subheader("Wall time")
    slow_section(table)
    if worth_charting(table["wall time (s)"]):
        st.altair_chart(wall_time_chart(table), width="stretch")

    if "committed at" in table and len(table) > 1:
        st.subheader("Batches over time")
        st.line_chart(table, x="committed at", y="batch", x_label="committed at")
    charted = [(column, title) for column, title in CHARTS
               if column in table and worth_charting(table[column])]
    if charted:
        st.subheader("Per batch")
    for start in range(0, len(charted), 2):
        for column_box, (column, title) in zip(st.columns(2), charted[start : start + 2],
                                               strict=False):
            column_box.markdown(f"**{title}**")
            column_box.bar_chart(table, x="batch", y=column, x_label="batch")
    if (numbers["messages"].notna() & table["messages"].isna()).any():
        st.caption(
            "The local runtime's communication counters (messages, tuples, provenance bytes) "
            "add up over batches from the last rebuild of its state, so they are no batch's "
            "count and are not shown per batch."
        )
    st.subheader("Every batch")
    st.dataframe(table.drop(columns=["median_before"]), hide_index=True, width="stretch")
    return int(last["batch_id"])


def expectations_section(settings: Settings, committed: int | None) -> None:
    st.subheader("Expectations")
    results = read_latest(settings, "expectation_results")
    if results is None or (not results.problem and results.rows.empty):
        st.info("No expectation results yet (the pipeline's expectations step writes them).")
        return
    if results.problem:
        st.warning(results.problem)
        return
    latest = latest_expectations(results.rows, committed)
    batch = int(latest["batch_id"].max())
    failed = int((~latest["success"]).sum())
    if failed:
        st.error(f"{failed} of {len(latest)} expectation(s) FAILED in batch {batch}.")
    else:
        st.success(f"All {len(latest)} expectation(s) passed in batch {batch}.")
    if latest["stale"].any():
        st.warning(
            f"Stale: these results are of batch {batch}, before batch {committed}, the last "
            "committed one: the expectations have not run on the views as they are (run "
            "`aspen check`)."
        )
    shown = latest.rename(columns=EXPECTATION_COLUMNS)[list(EXPECTATION_COLUMNS.values())]
    st.dataframe(shown, hide_index=True, width="stretch")


def quarantine_section(settings: Settings) -> None:
    st.subheader("Quarantine")
    quarantine = read_latest(settings, "quarantine")
    if quarantine is None:
        st.caption("No `quarantine` table yet: nothing has been ingested.")
    elif quarantine.problem:
        st.warning(quarantine.problem)
    else:
        st.metric("Quarantined records", len(quarantine.rows))
    try:
        st.page_link("pages/quarantine.py", label="Open the quarantine page",
                     icon=":material/block:")
    except StreamlitPageNotFoundError:  # the page opened alone, without the app's pages
        pass


st.title("Pipeline health")
lake = current_lake()
committed_batch = batches_section(lake)
expectations_section(lake, committed_batch)
quarantine_section(lake)
