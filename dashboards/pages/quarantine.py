"""Quarantine: update records that were rejected, with the reason."""

from __future__ import annotations

import streamlit as st
from lakeview import current_lake, load_table, table_version

st.title("Quarantine")
settings = current_lake()
version = table_version(settings, "quarantine")
if version is None:
    st.info("No `quarantine` table yet: nothing has been ingested.")
    st.stop()

records = load_table(settings.table_uri("quarantine"), version)
if records.empty:
    st.info(f"No quarantined records (`quarantine` version {version}).")
    st.stop()

st.metric("Quarantined records", len(records))
if "reason" in records:
    reasons = records["reason"].astype(str).value_counts().rename_axis("reason")
    st.subheader("By reason")
    st.dataframe(reasons.reset_index(name="records"), hide_index=True, width="stretch")
    chosen = st.multiselect("Only these reasons", list(reasons.index))
    if chosen:
        records = records[records["reason"].astype(str).isin(chosen)]
st.subheader("Records")
columns = [
    c for c in ("batch_id", "source", "line", "reason", "raw", "ingested_at") if c in records
]
st.dataframe(records[columns or list(records.columns)], hide_index=True, width="stretch")
