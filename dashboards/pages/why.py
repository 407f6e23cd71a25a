"""Why: the minimal witness sets and critical base tuples of one view tuple, from the lake."""

from __future__ import annotations

import pandas as pd
import streamlit as st
from lakeview import (
    current_lake,
    link_of,
    load_provenance,
    load_table,
    provenance_versions,
    table_version,
    witness_dot,
)

from aspen.errors import AspenError

#: Views this page explains, with the attributes that pick a tuple.
WHY_VIEWS: dict[str, tuple[str, str]] = {
    "reachable": ("src", "dst"),
    "cheapest_path": ("src", "dst"),
    "active_region": ("region", "sensor"),
}

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
rows = load_table(settings.table_uri(view), present[view])
if rows.empty:
    st.info(f"The `{view}` table (version {present[view]}) has no tuples.")
    st.stop()
keys = rows[[first, second]].astype(str).drop_duplicates()
left, right = st.columns(2)
first_value = left.selectbox(first, sorted(keys[first].unique()))
second_value = right.selectbox(
    second, sorted(keys.loc[keys[first] == first_value, second].unique())
)

try:
    provenance = load_provenance(settings.lake, provenance_versions(settings))
    explanations = provenance.explain(view, (first_value, second_value))
except AspenError as err:
    st.warning(str(err))
    st.stop()

for explanation in explanations:
    st.subheader(f"{view}{explanation.tuple}")
    witnesses, critical = explanation.witnesses, explanation.critical
    more = " (more exist; showing the first ones)" if explanation.truncated else ""
    st.markdown(f"**{len(witnesses)} minimal witness set(s)**{more}")
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
    if critical:
        st.markdown(
            "**Critical base tuples** (deleting any one removes the tuple): " + ", ".join(critical)
        )
    else:
        st.markdown("**No critical base tuple**: no single deletion removes this tuple.")
    if view != "active_region" and witnesses:
        involved = {link for w in witnesses for t in w if (link := link_of(t)) is not None}
        shown = st.selectbox(
            "Highlight witness",
            range(1, len(witnesses) + 1),
            key=f"witness-{explanation.tuple!r}",
        )
        chosen = {link for t in witnesses[shown - 1] if (link := link_of(t)) is not None}
        st.graphviz_chart(witness_dot(involved, chosen))
