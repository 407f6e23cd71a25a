"""Quarantine: the update records ingest rejected, grouped by their reason code (``bad_ts``,
``duplicate`` …; the message, without its line number, for a record without a code), each
reason with its count, its latest batch and one or two example records; then every record, a
page at a time, newest first, optionally only those of some reasons.
"""

from __future__ import annotations

import streamlit as st
from lakeview import current_lake, read_latest, text
from paging import page_count, page_of
from status import newest_first, quarantine_by_reason, reason_of

#: Plain names of the records table's columns, in their order.
RECORD_COLUMNS = {
    "batch_id": "batch",
    "source": "file",
    "line": "line",
    "reason_code": "reason",
    "reason": "message",
    "raw": "record",
    "ingested_at": "ingested at",
}
PAGE_KEY = "quarantine_page"
#: Records per page.
PAGE_ROWS = 100


st.title("Quarantine")
settings = current_lake()
snapshot = read_latest(settings, "quarantine")
if snapshot is None:
    st.info("No `quarantine` table yet: nothing has been ingested.")
    st.stop()
if snapshot.problem:
    st.warning(snapshot.problem)
    st.stop()
records = snapshot.rows
if records.empty:
    st.info(f"No quarantined records (`quarantine` version {snapshot.version}).")
    st.stop()

by_reason = quarantine_by_reason(records)
messages = records["reason"] if "reason" in records else [None] * len(records)
codes = records["code"] if "code" in records else [None] * len(records)
records = newest_first(records.assign(
    reason_code=[reason_of(code, message) for code, message in zip(codes, messages, strict=True)],
    # the line is a column of its own: the message without its "line N:"
    reason=[reason_of(None, message) for message in messages],
))
left, right = st.columns(2)
left.metric("Quarantined records", len(records))
right.metric("Reasons", len(by_reason))
st.subheader("By reason")
st.caption("The reason code of each rejected record (its message when it has none), the reason "
           "last seen first (then the most frequent), with one or two example records (file, "
           "line and message).")
st.dataframe(by_reason, hide_index=True, width="stretch")

chosen = st.multiselect("Only these reasons", list(by_reason["reason"]))
if chosen:
    records = records[records["reason_code"].isin(chosen)]

st.subheader("Records")
columns = [c for c in RECORD_COLUMNS if c in records]
table = records[columns].rename(columns=RECORD_COLUMNS)
pages = page_count(len(table), PAGE_ROWS)
page = 1
if pages > 1:
    if st.session_state.get(PAGE_KEY, 1) > pages:  # a narrower filter has fewer pages
        st.session_state[PAGE_KEY] = 1
    page = int(st.number_input(f"Page (of {pages})", min_value=1, max_value=pages, value=1,
                               step=1, key=PAGE_KEY))
rows, first, last, pages = page_of(table, page, PAGE_ROWS)
shown = ", ".join(text(c) for c in chosen)
st.caption(f"Records {first}–{last} of {len(table)}, newest first"
           + (f"; reasons {shown}." if chosen else "."))
st.dataframe(rows, hide_index=True, width="stretch")
