"""Network: the live topology from the ``link`` table and the links that died recently.

Live links are drawn solid with their cheapest cost; links whose instances died (deleted, or
expired by TTL) in the last N ingest batches (``variables`` registry: ``deleted_batch``,
``death``) are drawn dashed, red or grey. The node filter applies to both.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st
from lakeview import (
    MAX_DRAWN_EDGES,
    current_lake,
    deleted_links,
    links_dot,
    live_edges,
    load_table,
    read_latest,
    recent_batches,
    table_version,
)

from aspen.settings import Settings

ALL_NODES = "(all nodes)"
#: Default N of "deleted in the last N ingest batches".
DEFAULT_RECENT = 3


def ingest_batches(settings: Settings, variables: pd.DataFrame) -> list[object]:
    """Every ingest batch number known: ``ingest_files`` (ingests and TTL sweeps), else the
    births and deaths in the registry."""
    files = read_latest(settings, "ingest_files", ("batch_id",))
    if files is not None and not files.problem and not files.rows.empty:
        return list(files.rows["batch_id"])
    found: list[object] = []
    for column in ("inserted_batch", "deleted_batch"):
        if column in variables:
            found += list(variables[column])
    return found


def recently_dead(settings: Settings, live_pairs: set[tuple[str, str]]) -> pd.DataFrame | None:
    """The links that died in the last N batches and are not live again (``None``: no registry)."""
    registry = read_latest(settings, "variables")
    if registry is None:
        st.caption("No `variables` registry yet: recently deleted links are not shown.")
        return None
    if registry.problem:
        st.warning(registry.problem)
        return None
    if registry.rows.empty or not {"relation", "values", "deleted_batch"} <= set(registry.rows):
        st.caption("The `variables` registry has no instances yet: no deleted links to show.")
        return None
    count = st.slider(
        "Show links deleted or expired in the last N ingest batches",
        min_value=0,
        max_value=20,
        value=DEFAULT_RECENT,
        key="network_recent",
        help="0 hides them",
    )
    batches = recent_batches(ingest_batches(settings, registry.rows), count)
    dead = deleted_links(registry.rows, batches)
    live_again = pd.Series(
        [pair in live_pairs for pair in zip(dead["src"], dead["dst"], strict=True)],
        index=dead.index,
        dtype=bool,
    )
    dead = dead[~live_again].reset_index(drop=True)
    window = (
        f"batch(es) {', '.join(map(str, sorted(batches)))}" if batches else "no batch"
    )
    st.caption(f"Deaths looked for in {window}; links live again are drawn as live.")
    return dead


st.title("Network")
lake = current_lake()
version = table_version(lake, "link")
if version is None:
    st.info("No `link` table yet: ingest some link updates and run `aspen maintain` first.")
    st.stop()

edges = live_edges(load_table(lake.table_uri("link"), version))
dead = recently_dead(lake, set(zip(edges["src"], edges["dst"], strict=True)))
has_dead = dead is not None and not dead.empty
if edges.empty:
    st.info(f"The `link` table (version {version}) has no live links.")
    if not has_dead:
        st.stop()
if dead is None:
    dead = deleted_links(pd.DataFrame(), [])

nodes = sorted(set(edges["src"]) | set(edges["dst"]))
choices = sorted(set(nodes) | set(dead["src"]) | set(dead["dst"]))
choice = st.selectbox("Node", [ALL_NODES, *choices], help="show only links into or out of it")
focus = None if choice == ALL_NODES else choice


def around(frame: pd.DataFrame) -> pd.DataFrame:
    return frame if focus is None else frame[(frame["src"] == focus) | (frame["dst"] == focus)]


shown, shown_dead = around(edges), around(dead)
left, right = st.columns(2)
left.metric("Nodes", len(nodes))
right.metric("Links", len(edges))
st.caption(
    f"`link` table version {version}; {len(shown)} live link(s) and {len(shown_dead)} recently "
    "dead link(s) shown."
)
if len(shown) + len(shown_dead) > MAX_DRAWN_EDGES:
    st.info(
        f"{len(shown) + len(shown_dead)} links are too many to draw; "
        "choose a node to draw its neighbourhood."
    )
else:
    st.graphviz_chart(
        links_dot(
            shown[["src", "dst", "cost"]].itertuples(index=False),
            focus,
            shown_dead[["src", "dst", "death", "deleted_batch"]].itertuples(index=False),
        )
    )
    st.caption(
        "Legend: solid black = live (label: cheapest cost); dashed red = deleted; "
        "dashed grey = expired (label: death and the batch it happened in)."
    )
st.dataframe(shown, hide_index=True, width="stretch")
if has_dead:
    st.subheader("Recently dead links")
    st.dataframe(shown_dead, hide_index=True, width="stretch")
