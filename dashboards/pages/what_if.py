"""What if: the view tuples lost if some links, a node or some sensors died, from stored
provenance only.

A failed sensor loses its ``sensor`` and ``triggered`` instances; the region members
(``active_region``) and region sizes that would be lost are shown. The answer restricts the
formulas stored in the view tables; nothing is recomputed or written.
"""

from __future__ import annotations

import time

import pandas as pd
import streamlit as st
from lakeview import (
    current_lake,
    live_edges,
    load_provenance,
    provenance_versions,
    read_latest,
    region_losses,
    table_version,
    text,
)

from aspen.catalog import VIEW_COLUMNS
from aspen.errors import AspenError, UnknownKeyError
from aspen.pipeline.lake_provenance import LakeProvenance
from aspen.settings import Settings

NO_NODE = "(no node)"
#: The base relations whose live instances die with a failed sensor.
SENSOR_RELATIONS = ("sensor", "triggered")


def live_links(settings: Settings) -> pd.DataFrame:
    """The live links (one row per directed link), empty when there are none or no table."""
    snapshot = read_latest(settings, "link", ("src", "dst", "cost"))
    if snapshot is None or snapshot.rows.empty:
        if snapshot is not None and snapshot.problem:
            st.warning(snapshot.problem)
        return live_edges(pd.DataFrame())
    return live_edges(snapshot.rows)


def live_sensors(settings: Settings) -> list[str]:
    """Ids of the sensors with a live ``sensor`` or ``triggered`` instance."""
    found: set[str] = set()
    for name in SENSOR_RELATIONS:
        snapshot = read_latest(settings, name, ("id",))
        if snapshot is None:
            continue
        if snapshot.problem:
            st.warning(snapshot.problem)
            continue
        found |= set(snapshot.rows["id"].astype(str))
    return sorted(found)


def sensor_vars(provenance: LakeProvenance, sensors: list[str]) -> tuple[set[str], list[str]]:
    """The live variables of the ``sensors``' ``sensor`` and ``triggered`` instances, and the
    sensors that have none (a missing relation of a sensor is skipped)."""
    found: set[str] = set()
    without: list[str] = []
    for sensor in sensors:
        before = len(found)
        for relation in SENSOR_RELATIONS:
            try:
                found |= provenance.live_vars_of(relation, (sensor,))
            except UnknownKeyError:
                continue
        if len(found) == before:
            without.append(sensor)
    return found, without


st.title("What if")
settings = current_lake()
if table_version(settings, "variables") is None:
    st.info("No provenance yet: no `variables` table. "
            "Run `aspen ingest` and `aspen maintain` first.")
    st.stop()

edges = live_links(settings)
sensors = live_sensors(settings)
if edges.empty and not sensors:
    st.info("No live links or sensors to delete yet: ingest some and run `aspen maintain`.")
    st.stop()
link_names = {
    f"{src}→{dst}": (src, dst) for src, dst in edges[["src", "dst"]].itertuples(index=False)
}
nodes = sorted(set(edges["src"]) | set(edges["dst"]))

chosen_links = st.multiselect("Delete links", list(link_names), key="whatif_links")
chosen_node = st.selectbox(
    "Delete a node (every link into or out of it)", [NO_NODE, *nodes], key="whatif_node"
)
chosen_sensors = st.multiselect(
    "Fail sensors (their `sensor` and `triggered` instances die)", sensors, key="whatif_sensors"
)
if not sensors:
    st.caption("No live sensors in the lake.")
if not st.button("Simulate", type="primary"):
    st.caption("Choose links, a node and/or sensors, then press Simulate.")
    st.stop()
if not chosen_links and chosen_node == NO_NODE and not chosen_sensors:
    st.info("Choose at least one link, a node or a sensor to delete.")
    st.stop()

try:
    provenance = load_provenance(settings.lake, provenance_versions(settings))
    started = time.perf_counter()
    deleted: set[str] = set()
    for name in chosen_links:
        deleted |= provenance.live_vars_of("link", link_names[name])
    if chosen_node != NO_NODE:
        deleted |= provenance.live_vars_of("node", (chosen_node,))
    found, without = sensor_vars(provenance, chosen_sensors)
    deleted |= found
    looked_up = time.perf_counter()
    lost = provenance.what_if(deleted)
    finished = time.perf_counter()
except AspenError as err:
    st.warning(text(err))
    st.stop()

if without:
    st.caption(f"No live instance in the registry for sensor(s) "
               f"{', '.join(map(text, without))}: skipped.")
if not lost:
    st.info("No view table carries provenance yet: run `aspen maintain` first.")
    st.stop()

elapsed_ms = (finished - started) * 1000
a, b, c = st.columns(3)
a.metric("Base variables deleted", len(deleted))
b.metric("View tuples lost", sum(len(gone) for gone in lost.values()))
c.metric("What-if time", f"{elapsed_ms:.1f} ms")
summary = pd.DataFrame(
    {
        "view": list(lost),
        "lost": [len(gone) for gone in lost.values()],
        "kept": [len(provenance.formulas(view)) - len(gone) for view, gone in lost.items()],
    }
)
st.caption(
    f"Deleting {len(deleted)} base variable(s): answered in {elapsed_ms:.1f} ms from the stored "
    f"provenance (variable look-up {(looked_up - started) * 1000:.1f} ms, restriction "
    f"{(finished - looked_up) * 1000:.1f} ms; no recomputation, nothing written)."
)
st.dataframe(summary, hide_index=True, width="stretch")

if "active_region" in lost:
    st.subheader("Regions")
    losses = region_losses(provenance.formulas("active_region"), lost["active_region"])
    if losses.empty:
        st.caption("No region member would be lost.")
    else:
        gone_regions = losses.loc[losses["region lost"], "region"].tolist()
        st.markdown(
            f"**{int(losses['lost'].sum())} region member(s) lost** in {len(losses)} region(s)"
            + (f"; region(s) gone entirely: {', '.join(map(text, gone_regions))}"
               if gone_regions else "")
        )
        st.dataframe(losses, hide_index=True, width="stretch")

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
