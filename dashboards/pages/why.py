"""Why: the minimal witness sets and critical base tuples of one view tuple, from the lake.

For a pair (``reachable``, ``cheapest_path``) the witnesses are sets of links, drawn on a graph;
for a region member (``active_region``: region + sensor) each witness is a chain of triggered
sensors from the region's seed to the member, and the critical sensors are those whose failure
alone removes the member.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st
from lakeview import (
    base_tuple_of,
    current_lake,
    link_of,
    load_provenance,
    provenance_versions,
    read_latest,
    sensor_chain,
    table_version,
    text,
    witness_dot,
)

from aspen.errors import AspenError
from aspen.pipeline.lake_provenance import Explanation
from aspen.settings import Settings

#: Views this page explains, with the attributes that pick a tuple.
WHY_VIEWS: dict[str, tuple[str, str]] = {
    "reachable": ("src", "dst"),
    "cheapest_path": ("src", "dst"),
    "active_region": ("region", "sensor"),
}
#: Relations whose tuples die with a failed sensor.
SENSOR_RELATIONS = ("sensor", "triggered")


def sensor_positions(settings: Settings) -> dict[str, tuple[float, float]]:
    """``id → (x, y)`` of the live sensors (empty when there is no readable ``sensor`` table)."""
    snapshot = read_latest(settings, "sensor", ("id", "x", "y"))
    if snapshot is None or snapshot.problem or snapshot.rows.empty:
        return {}
    rows = snapshot.rows.drop_duplicates("id", keep="last")
    return {
        str(i): (float(x), float(y)) for i, x, y in rows[["id", "x", "y"]].itertuples(index=False)
    }


def critical_sensors(critical: list[str]) -> list[str]:
    """Sensors named by a critical ``sensor`` or ``triggered`` base tuple."""
    found = {
        parsed[1][0]
        for text in critical
        if (parsed := base_tuple_of(text)) is not None and parsed[0] in SENSOR_RELATIONS
    }
    return sorted(found)


def critical_tuples_of(sensors: list[str]) -> set[str]:
    """The ``sensor`` and ``triggered`` base tuples of ``sensors``, as described."""
    return {f"{relation}({sensor})" for sensor in sensors for relation in SENSOR_RELATIONS}


def show_links(explanation: Explanation) -> None:
    witnesses = explanation.witnesses
    st.dataframe(
        pd.DataFrame(
            {
                "witness": range(1, len(witnesses) + 1),
                "base tuples": [", ".join(w) for w in witnesses],
                "size": [len(w) for w in witnesses],
            }
        ),
        hide_index=True,
        width="stretch",
    )
    critical = explanation.critical
    if critical:
        st.markdown(
            "**Critical base tuples** (deleting any one removes the tuple): "
            + ", ".join(map(text, critical))
        )
    else:
        st.markdown("**No critical base tuple**: no single deletion removes this tuple.")
    if witnesses:
        involved = {link for w in witnesses for t in w if (link := link_of(t)) is not None}
        shown = st.selectbox(
            "Highlight witness",
            range(1, len(witnesses) + 1),
            key=f"witness-{explanation.tuple!r}",
        )
        chosen = {link for t in witnesses[shown - 1] if (link := link_of(t)) is not None}
        st.graphviz_chart(witness_dot(involved, chosen))


def show_region_member(
    explanation: Explanation, positions: dict[str, tuple[float, float]]
) -> None:
    member = str(explanation.tuple[1])
    chains = [sensor_chain(w, member, positions) for w in explanation.witnesses]
    st.dataframe(
        pd.DataFrame(
            {
                "witness": range(1, len(chains) + 1),
                "seed": [seed or "" for seed, _ in chains],
                "sensor chain": [" → ".join(chain) for _, chain in chains],
                "sensors": [len(chain) for _, chain in chains],
                "base tuples": [", ".join(w) for w in explanation.witnesses],
            }
        ),
        hide_index=True,
        width="stretch",
    )
    if not positions:
        st.caption("No sensor positions (`sensor` table): chains are listed seed, others, member.")
    sensors = critical_sensors(explanation.critical)
    if sensors:
        st.markdown(
            "**Critical sensors** (the failure of any one removes the member): "
            + ", ".join(map(text, sensors))
        )
    else:
        st.markdown("**No critical sensor**: no single sensor failure removes this member.")
    others = [t for t in explanation.critical if t not in critical_tuples_of(sensors)]
    if others:
        st.markdown("**Other critical base tuples**: " + ", ".join(map(text, others)))
    if chains:
        involved = {
            (chain[i], chain[i + 1]) for _, chain in chains for i in range(len(chain) - 1)
        }
        shown = st.selectbox(
            "Highlight witness",
            range(1, len(chains) + 1),
            key=f"witness-{explanation.tuple!r}",
        )
        chain = chains[shown - 1][1]
        chosen = {(chain[i], chain[i + 1]) for i in range(len(chain) - 1)}
        if involved:
            st.graphviz_chart(witness_dot(involved, chosen))



st.title("Why")
settings = current_lake()
if table_version(settings, "variables") is None:
    st.info(
        "No provenance yet: no `variables` table. Run `aspen ingest` and `aspen maintain` first."
    )
    st.stop()
present = {v: ver for v in WHY_VIEWS if (ver := table_version(settings, v)) is not None}
if not present:
    st.info(f"No view tables yet ({', '.join(WHY_VIEWS)}): run `aspen maintain` first.")
    st.stop()

view = st.selectbox("View", list(present))
first, second = WHY_VIEWS[view]
snapshot = read_latest(settings, view, (first, second))
if snapshot is None:
    st.info(f"No `{view}` table yet: run `aspen maintain` first.")
    st.stop()
if snapshot.problem:
    st.warning(snapshot.problem)
    st.stop()
if snapshot.rows.empty:
    st.info(f"The `{view}` table (version {snapshot.version}) has no tuples yet.")
    st.stop()
keys = snapshot.rows[[first, second]].astype(str).drop_duplicates()
left, right = st.columns(2)
first_value = left.selectbox(first, sorted(keys[first].unique()))
second_value = right.selectbox(
    second, sorted(keys.loc[keys[first] == first_value, second].unique())
)

try:
    provenance = load_provenance(settings.lake, provenance_versions(settings))
    explanations = provenance.explain(view, (first_value, second_value))
except AspenError as err:
    st.warning(text(err))
    st.stop()

positions = sensor_positions(settings) if view == "active_region" else {}
for explanation in explanations:
    st.subheader(f"{view}({', '.join(text(v) for v in explanation.tuple)})")
    more = " (more exist; showing the first ones)" if explanation.truncated else ""
    st.markdown(f"**{len(explanation.witnesses)} minimal witness set(s)**{more}")
    if view == "active_region":
        show_region_member(explanation, positions)
    else:
        show_links(explanation)
