"""Views: reachable pairs, shortest paths (cost and route) and sensor regions on the grid map.

Every table is read through ``lakeview`` (delta-rs, cached by Delta table version); a missing or
empty table gives a plain message in its own tab, never a traceback.
"""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st
from lakeview import NO_REGION, Snapshot, current_lake, read_latest, route_text, sensor_map

from aspen.settings import Settings

ANY = "(any)"
ALL = "(all)"


#: The columns each table is read with (never the provenance bytes).
COLUMNS: dict[str, tuple[str, ...]] = {
    "reachable": ("src", "dst"),
    "cheapest_path": ("src", "dst", "path", "cost"),
    "fewest_hops": ("src", "dst", "path", "hops"),
    "min_cost": ("src", "dst", "cost"),
    "min_hops": ("src", "dst", "hops"),
    "sensor": ("id", "x", "y"),
    "triggered": ("id",),
    "active_region": ("region", "sensor"),
}
#: At most this many rows go to the browser in one table; filters narrow the rest.
MAX_SHOWN_ROWS = 5_000


def _read(settings: Settings, name: str) -> Snapshot | None:
    return read_latest(settings, name, COLUMNS[name])


def _show(frame: pd.DataFrame) -> None:
    if len(frame) > MAX_SHOWN_ROWS:
        st.caption(f"Showing the first {MAX_SHOWN_ROWS} of {len(frame)} rows; filter to narrow.")
        frame = frame.head(MAX_SHOWN_ROWS)
    st.dataframe(frame, hide_index=True, width="stretch")


def _snapshot_or_note(settings: Settings, name: str, hint: str) -> pd.DataFrame | None:
    """The rows of ``name``, or ``None`` after showing why there are none."""
    snapshot = _read(settings, name)
    if snapshot is None:
        st.info(f"No `{name}` table yet: {hint}")
        return None
    if snapshot.problem:
        st.warning(snapshot.problem)
        return None
    if snapshot.rows.empty:
        st.info(f"The `{name}` table (version {snapshot.version}) has no rows yet.")
        return None
    return snapshot.rows


def _nodes(*frames: pd.DataFrame) -> list[str]:
    found: set[str] = set()
    for frame in frames:
        found |= set(frame["src"].astype(str)) | set(frame["dst"].astype(str))
    return sorted(found)


def _pair_rows(frame: pd.DataFrame, src: str, dst: str) -> pd.DataFrame:
    mask = frame["src"].astype(str) == src
    if dst != ALL:
        mask &= frame["dst"].astype(str) == dst
    return frame[mask]


def reachable_tab(settings: Settings) -> None:
    rows = _snapshot_or_note(settings, "reachable", "run `aspen maintain` first.")
    if rows is None:
        return
    pairs = rows[["src", "dst"]].astype(str)
    nodes = _nodes(pairs)
    left, right = st.columns(2)
    src = left.selectbox("Source", [ANY, *nodes], key="reach_src")
    dst = right.selectbox("Destination", [ANY, *nodes], key="reach_dst")
    shown = pairs
    if src != ANY:
        shown = shown[shown["src"] == src]
    if dst != ANY:
        shown = shown[shown["dst"] == dst]
    st.metric("Reachable pairs shown", len(shown))
    st.caption(f"{len(pairs)} reachable pair(s) in all; {len(nodes)} node(s).")
    _show(shown.sort_values(["src", "dst"]).reset_index(drop=True))


def paths_tab(settings: Settings) -> None:
    cheapest = _snapshot_or_note(settings, "cheapest_path", "run `aspen maintain` first.")
    if cheapest is None:
        return
    fewest = _read(settings, "fewest_hops")
    min_cost = _read(settings, "min_cost")
    min_hops = _read(settings, "min_hops")

    sources = sorted(cheapest["src"].astype(str).unique())
    left, right = st.columns(2)
    src = left.selectbox("From", sources, key="path_src")
    targets = sorted(cheapest.loc[cheapest["src"].astype(str) == src, "dst"].astype(str).unique())
    dst = right.selectbox("To", [ALL, *targets], key="path_dst")

    if dst != ALL:
        for column, snapshot, attribute, label in zip(
            st.columns(2),
            (min_cost, min_hops),
            ("cost", "hops"),
            ("Minimum cost", "Minimum hops"),
            strict=True,
        ):
            found = (
                _pair_rows(snapshot.rows, src, dst)
                if snapshot is not None and not snapshot.rows.empty
                else pd.DataFrame()
            )
            value = found[attribute].iloc[0] if not found.empty else None
            column.metric(label, "–" if value is None else f"{value:g}")

    st.subheader("Cheapest paths")
    chosen = _pair_rows(cheapest, src, dst)
    st.dataframe(
        pd.DataFrame(
            {
                "src": chosen["src"].astype(str),
                "dst": chosen["dst"].astype(str),
                "cost": chosen["cost"].astype(float),
                "route": [route_text(p) for p in chosen["path"]],
            }
        )
        .sort_values(["dst", "cost", "route"])
        .reset_index(drop=True),
        hide_index=True,
        width="stretch",
    )

    st.subheader("Fewest-hop paths")
    if fewest is None or fewest.problem or fewest.rows.empty:
        st.caption(fewest.problem if fewest and fewest.problem else "No `fewest_hops` rows yet.")
        return
    chosen = _pair_rows(fewest.rows, src, dst)
    st.dataframe(
        pd.DataFrame(
            {
                "src": chosen["src"].astype(str),
                "dst": chosen["dst"].astype(str),
                "hops": chosen["hops"].astype(int),
                "route": [route_text(p) for p in chosen["path"]],
            }
        )
        .sort_values(["dst", "hops", "route"])
        .reset_index(drop=True),
        hide_index=True,
        width="stretch",
    )


def regions_tab(settings: Settings) -> None:
    sensors = _snapshot_or_note(settings, "sensor", "ingest a sensor grid first.")
    if sensors is None:
        return
    regions = _read(settings, "active_region")
    triggered = _read(settings, "triggered")
    if regions is None:
        st.caption("No `active_region` view yet: every sensor is shown without a region.")
    elif regions.problem:
        st.warning(regions.problem)
    placed = sensor_map(
        sensors,
        regions.rows if regions is not None else None,
        triggered.rows if triggered is not None and not triggered.problem else None,
    )
    in_region = placed[placed["region"] != NO_REGION]
    a, b, c = st.columns(3)
    a.metric("Sensors", placed["sensor"].nunique())
    b.metric("Triggered", placed.loc[placed["triggered"], "sensor"].nunique())
    c.metric("Active regions", in_region["region"].nunique())

    plotted = placed.assign(
        state=placed["triggered"].map({True: "triggered", False: "not triggered"}))
    chart = (
        alt.Chart(plotted)
        .mark_point(size=90, filled=True)
        .encode(
            x=alt.X("x:Q", title="x (m)"),
            y=alt.Y("y:Q", title="y (m)"),
            color=alt.Color("region:N", title="region"),
            shape=alt.Shape("state:N", title="sensor"),
            opacity=alt.condition(alt.datum.triggered, alt.value(1.0), alt.value(0.35)),
            tooltip=["sensor", "region", "state", "x", "y"],
        )
    )
    st.altair_chart(chart, width="stretch")
    if not in_region.empty:
        st.subheader("Regions")
        sizes = (
            in_region.groupby("region")
            .agg(sensors=("sensor", "nunique"), triggered=("triggered", "sum"))
            .reset_index()
            .astype({"triggered": int})
        )
        st.dataframe(sizes, hide_index=True, width="stretch")
    with st.expander("Sensors"):
        st.dataframe(placed, hide_index=True, width="stretch")


st.title("Views")
lake = current_lake()
reach, paths, regions_ = st.tabs(["Reachable pairs", "Shortest paths", "Sensor regions"])
with reach:
    reachable_tab(lake)
with paths:
    paths_tab(lake)
with regions_:
    regions_tab(lake)
