"""Overview: every table of the lake with its latest Delta version and row count."""

from __future__ import annotations

import pandas as pd
import streamlit as st
from lakeview import (
    current_lake,
    lake_name,
    lake_tables,
    load_table,
    table_status,
    table_version,
    text,
    when_text,
)

st.title("Overview")
settings = current_lake()
statuses = [s for s in (table_status(settings, name) for name in lake_tables(settings)) if s]

if not statuses:
    st.info(
        f"The lake {text(lake_name(settings))} has no tables yet. "
        "Run `aspen ingest FILE…` and `aspen maintain` (or the Airflow DAG) first."
    )
    st.stop()

frame = pd.DataFrame(statuses)
readable = frame[frame["problem"] == ""]
left, middle, right = st.columns(3)
left.metric("Tables", len(frame))
middle.metric("Rows", int(readable["rows"].fillna(0).sum()))
right.metric("Latest commit", when_text(frame["last_commit"].max()))
st.dataframe(frame.drop(columns=["problem"]), hide_index=True, width="stretch")
for row in frame[frame["problem"] != ""].itertuples():
    st.warning(f"{text(row.table)}: {row.problem}")

summary_version = table_version(settings, "summary")
if summary_version is None:
    st.caption("No published summary yet (the pipeline's publish step writes it).")
else:
    st.subheader("Last published summary")
    summary = load_table(settings.table_uri("summary"), summary_version)
    if summary.empty:
        st.caption("The last publish found no tables.")
    else:
        st.dataframe(summary, hide_index=True, width="stretch")
