"""Network: the live topology from the ``link`` table, optionally around one node."""

from __future__ import annotations

import streamlit as st
from lakeview import MAX_DRAWN_EDGES, current_lake, links_dot, live_edges, load_table, table_version

st.title("Network")
settings = current_lake()
version = table_version(settings, "link")
if version is None:
    st.info("No `link` table yet: ingest some link updates and run `aspen maintain` first.")
    st.stop()

edges = live_edges(load_table(settings.table_uri("link"), version))
if edges.empty:
    st.info(f"The `link` table (version {version}) has no live links.")
    st.stop()

nodes = sorted(set(edges["src"]) | set(edges["dst"]))
choice = st.selectbox("Node", ["(all nodes)", *nodes], help="show only links into or out of it")
focus = None if choice == "(all nodes)" else choice
shown = edges if focus is None else edges[(edges["src"] == focus) | (edges["dst"] == focus)]

left, right = st.columns(2)
left.metric("Nodes", len(nodes))
right.metric("Links", len(edges))
st.caption(f"`link` table version {version}; {len(shown)} link(s) shown.")
if len(shown) > MAX_DRAWN_EDGES:
    st.info(f"{len(shown)} links are too many to draw; choose a node to draw its neighbourhood.")
else:
    st.graphviz_chart(links_dot(shown[["src", "dst", "cost"]].itertuples(index=False), focus))
st.dataframe(shown, hide_index=True, width="stretch")
