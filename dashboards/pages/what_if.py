"""What if: the view tuples lost if some links or a node died, from stored provenance only.

The answer restricts the formulas stored in the view tables; nothing is recomputed or written.
"""

from __future__ import annotations

import time

import pandas as pd
import streamlit as st
from lakeview import (
    current_lake,
    live_edges,
    load_provenance,
    load_table,
    provenance_versions,
    table_version,
)

from aspen.errors import AspenError
from aspen.pipeline.view_tables import VIEW_COLUMNS

NO_NODE = "(no node)"

st.title("What if")
settings = current_lake()
link_version = table_version(settings, "link")
if table_version(settings, "variables") is None or link_version is None:
    st.info(
        "No provenance yet: no `variables` or `link` table. Run `aspen ingest` and `aspen maintain` first."
    )
    st.stop()

edges = live_edges(load_table(settings.table_uri("link"), link_version))
if edges.empty:
    st.info(f"The `link` table (version {link_version}) has no live links to delete.")
    st.stop()
link_names = {
    f"{src}→{dst}": (src, dst) for src, dst in edges[["src", "dst"]].itertuples(index=False)
}
nodes = sorted(set(edges["src"]) | set(edges["dst"]))

chosen_links = st.multiselect("Delete links", list(link_names))
chosen_node = st.selectbox("Delete a node (every link into or out of it)", [NO_NODE, *nodes])
if not st.button("Simulate", type="primary"):
    st.caption("Choose links and/or a node, then press Simulate.")
    st.stop()
if not chosen_links and chosen_node == NO_NODE:
    st.info("Choose at least one link or a node to delete.")
    st.stop()

try:
    provenance = load_provenance(settings.lake, provenance_versions(settings))
    started = time.perf_counter()
    deleted: set[str] = set()
    for name in chosen_links:
        deleted |= provenance.live_vars_of("link", link_names[name])
    if chosen_node != NO_NODE:
        deleted |= provenance.live_vars_of("node", (chosen_node,))
    lost = provenance.what_if(deleted)
    elapsed = time.perf_counter() - started
except AspenError as err:
    st.warning(str(err))
    st.stop()

if not lost:
    st.info("No view table carries provenance yet: run `aspen maintain` first.")
    st.stop()

summary = pd.DataFrame(
    {
        "view": list(lost),
        "lost": [len(gone) for gone in lost.values()],
        "kept": [len(provenance.formulas(view)) - len(gone) for view, gone in lost.items()],
    }
)
st.caption(
    f"Deleting {len(deleted)} base variable(s): answered in {elapsed * 1000:.1f} ms from the stored "
    "provenance (no recomputation, nothing written)."
)
st.dataframe(summary, hide_index=True, width="stretch")
for view, gone in lost.items():
    if not gone:
        continue
    st.subheader(f"{view}: {len(gone)} tuple(s) lost")
    columns = list(VIEW_COLUMNS[view])
    st.dataframe(
        pd.DataFrame([[str(v) for v in t] for t in gone], columns=columns),
        hide_index=True,
        width="stretch",
    )
