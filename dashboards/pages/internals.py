"""Internals: every Delta table of the lake with its version, row count and last commit, where
the pipeline stands in batch numbers, and the last published summary (marked when it predates
the last committed batch). For whoever debugs the pipeline; the Overview says the same in an
operator's words.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st
from lakeview import (
    Settings,
    current_lake,
    lake_name,
    lake_tables,
    read_latest,
    registry_through_rows,
    table_status,
    text,
    when_text,
)
from status import freshness, last_applied

#: Plain column names of the table list.
TABLE_COLUMNS = {"table": "table", "version": "Delta version", "rows": "rows",
                 "last_commit": "last commit", "problem": "problem"}


def _rows(settings: Settings, name: str) -> pd.DataFrame | None:
    snapshot = read_latest(settings, name)
    return None if snapshot is None or snapshot.problem else snapshot.rows


def tables_section(frame: pd.DataFrame) -> None:
    readable = frame[frame["problem"] == ""]
    left, right = st.columns(2)
    left.metric("Tables", len(frame))
    right.metric("Latest commit", when_text(readable["last_commit"].max()))
    shown = frame.rename(columns=TABLE_COLUMNS)[list(TABLE_COLUMNS.values())]
    st.dataframe(shown, hide_index=True, width="stretch")
    for row in frame[frame["problem"] != ""].itertuples():
        st.warning(f"{text(row.table)}: {row.problem}")


def positions_section(settings: Settings) -> None:
    """Where the pipeline stands: the batch numbers each step has reached."""
    st.subheader("Where the pipeline stands")
    ledger = _rows(settings, "ledger")
    files = _rows(settings, "ingest_files")
    metrics = _rows(settings, "metrics")
    fresh = freshness(ledger, pd.Timestamp.now(tz="UTC"))
    last_ingest = None if files is None or files.empty else int(files["batch_id"].max())
    rows = [
        ("last ingest batch (ingest_files)", last_ingest),
        ("last applied ingest batch (apply_state)",
         last_applied(_rows(settings, "apply_state")) or None),
        ("last ingest batch with a registry change (variables)",
         registry_through_rows(_rows(settings, "variables"))),
        ("last committed batch (ledger)", fresh.batch),
        ("ingest batches it covers, through (ledger)", fresh.through_ingest_batch),
        ("last batch with metrics (metrics)",
         None if metrics is None or metrics.empty else int(metrics["batch_id"].max())),
    ]
    frame = pd.DataFrame(
        [(what, "–" if value is None or value < 0 else str(value)) for what, value in rows],
        columns=["position", "batch"])
    st.dataframe(frame, hide_index=True, width="stretch")


def summary_section(settings: Settings) -> None:
    summary = read_latest(settings, "summary")
    if summary is None:
        st.caption("No published summary yet (the pipeline's publish step writes it).")
        return
    st.subheader("Last published summary")
    if summary.problem:
        st.warning(summary.problem)
        return
    if summary.rows.empty:
        st.caption("The last publish found no tables.")
        return
    published = summary.rows["published_at"].max() if "published_at" in summary.rows else None
    fresh = freshness(_rows(settings, "ledger"), pd.Timestamp.now(tz="UTC"))
    note = f"Published {when_text(published)} UTC."
    if fresh.committed_at is not None and published is not None and not pd.isna(published) \
            and pd.to_datetime(published, utc=True) < fresh.committed_at:
        note += (f" :orange[Stale: published before batch {fresh.batch} committed "
                 f"({when_text(fresh.committed_at)} UTC); its versions and counts are older.]")
    st.caption(note)
    st.dataframe(summary.rows.rename(columns={"name": "table", "version": "Delta version",
                                              "row_count": "rows",
                                              "published_at": "published at"}),
                 hide_index=True, width="stretch")


st.title("Internals")
lake = current_lake()
statuses = [s for s in (table_status(lake, name) for name in lake_tables(lake)) if s]
if not statuses:
    st.info(f"The lake {text(lake_name(lake))} has no tables yet.")
    st.stop()
tables_section(pd.DataFrame(statuses))
positions_section(lake)
summary_section(lake)
