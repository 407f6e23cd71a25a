"""Views: reachable pairs, shortest paths (cost in ms, hops and route) and the sensor regions on
the grid map, every table a page at a time (no row left out).

Every table is read through ``lakeview`` (delta-rs, cached by Delta table version, never the
provenance bytes); a missing, empty or unreadable table gives a plain message in its own tab,
never a traceback. A chosen route can be put on the Network page's map.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import pandas as pd
import streamlit as st
from lakeview import NO_REGION, Settings, current_lake, read_latest, route_text, sensor_map, text
from paging import show_paged
from pandas.io.formats.style import Styler
from regionmap import region_figure, region_table, sensor_table

ANY = "(any)"

#: The columns each table is read with (never the provenance bytes).
COLUMNS: dict[str, tuple[str, ...]] = {
    "reachable": ("src", "dst"),
    "cheapest_path": ("src", "dst", "path", "cost"),
    "fewest_hops": ("src", "dst", "path", "hops"),
    "shortest_cheapest_path": ("src", "dst", "cheapest", "cost", "fewest", "hops"),
    "min_cost": ("src", "dst", "cost"),
    "min_hops": ("src", "dst", "hops"),
    "sensor": ("id", "x", "y"),
    "triggered": ("id",),
    "region_seed": ("region", "id"),
    "active_region": ("region", "sensor"),
    "region_sizes": ("region", "size"),
    "largest_regions": ("region", "size"),
}
#: What each table holds, in the words the page's messages use.
PLAIN_NAMES: dict[str, str] = {
    "reachable": "reachable pairs",
    "cheapest_path": "cheapest paths",
    "fewest_hops": "fewest-hop paths",
    "shortest_cheapest_path": "cheapest and fewest-hop paths per pair",
    "min_cost": "minimum costs",
    "min_hops": "minimum hop counts",
    "sensor": "sensors",
    "triggered": "triggered sensors",
    "region_seed": "region seeds",
    "active_region": "active regions",
    "region_sizes": "region sizes",
    "largest_regions": "largest regions",
}
#: Background of the rows of the largest regions in the region table.
LARGEST_BACKGROUND = "background-color: #FFF3C4"


def _rows(settings: Settings, name: str) -> tuple[pd.DataFrame | None, str, bool]:
    """``(rows, note, problem)``: the rows of ``name``, or ``None`` with a plain note saying why
    there are none (Markdown) and whether that is a problem (unreadable) rather than "not yet"."""
    snapshot = read_latest(settings, name, COLUMNS[name])
    what = PLAIN_NAMES[name]
    if snapshot is None:
        return None, f"No {what} yet", False
    if snapshot.problem:
        return None, snapshot.problem, True
    if snapshot.rows.empty:
        return None, f"No {what} yet (the table, version {snapshot.version}, is empty)", False
    return snapshot.rows, "", False


def _say(note: str, problem: bool, hint: str = "") -> None:
    """Show why a table has no rows: a warning when unreadable, else an info followed by
    ``hint``."""
    if problem:
        st.warning(note)
    else:
        st.info(f"{note}: {hint}" if hint else f"{note}.")


def _nodes(*frames: pd.DataFrame) -> list[str]:
    found: set[str] = set()
    for frame in frames:
        found |= set(frame["src"].astype(str)) | set(frame["dst"].astype(str))
    return sorted(found)


def _pair_rows(frame: pd.DataFrame, src: str, dst: str) -> pd.DataFrame:
    """The rows of ``frame`` from ``src`` to ``dst`` (either may be :data:`ANY`)."""
    mask = pd.Series(True, index=frame.index)
    if src != ANY:
        mask &= frame["src"].astype(str) == src
    if dst != ANY:
        mask &= frame["dst"].astype(str) == dst
    return frame[mask]


def _node_list(path: Iterable[object] | None) -> list[str]:
    return [] if path is None else [str(node) for node in path]


# -- reachable pairs ------------------------------------------------------------------------


def reachable_tab(settings: Settings) -> None:
    rows, note, problem = _rows(settings, "reachable")
    if rows is None:
        _say(note, problem, "run `aspen maintain` first.")
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
    st.metric("Reachable pairs shown", f"{len(shown):,}")
    st.caption(f"{len(pairs):,} reachable pair(s) in all, between {len(nodes):,} node(s).")
    table = (shown.sort_values(["src", "dst"]).reset_index(drop=True)
             .rename(columns={"src": "source", "dst": "destination"}))
    show_paged(table, "reach_page")


# -- shortest paths -------------------------------------------------------------------------


def share_route(label: str, nodes: list[str]) -> None:
    """Put the route ``nodes`` on the Network page's map, named ``label``."""
    try:
        from topomap import share_path
    except ImportError:  # the map's module is not there (yet): leave the overlay it reads
        st.session_state["map_overlay"] = {"kind": "path", "label": label, "nodes": nodes}
    else:
        share_path(label, nodes)


def _routes(kind: str, paths: Iterable[object], measures: Iterable[object],
            unit: Callable[[object], str]) -> dict[tuple[str, ...], str]:
    """Label of each distinct route (``kind (measure): a → b``), by its nodes."""
    found: dict[tuple[str, ...], str] = {}
    for path, measure in zip(paths, measures, strict=True):
        nodes = tuple(_node_list(path))
        if len(nodes) >= 2 and nodes not in found:
            found[nodes] = f"{kind} ({unit(measure)}): {route_text(nodes)}"
    return found


def _ms(cost: object) -> str:
    return f"{float(cost):g} ms"  # type: ignore[arg-type]


def _hops(hops: object) -> str:
    count = int(hops)  # type: ignore[call-overload]
    return f"{count} hop{'' if count == 1 else 's'}"


def _route_picker(key: str, *routes: dict[tuple[str, ...], str]) -> None:
    """A route to choose among ``routes`` and, next to it, a button putting it on the network
    map."""
    choices = [(label, list(nodes)) for found in routes for nodes, label in found.items()]
    if not choices:
        return
    left, right = st.columns([4, 1], vertical_alignment="bottom")
    chosen = left.selectbox("Route", range(len(choices)), format_func=lambda i: choices[i][0],
                            key=f"map_route_{key}")
    if right.button("Show on the network map", key=f"map_show_{key}"):
        label, nodes = choices[chosen]
        share_route(label, nodes)
        st.success(f"On the network map: {text(label)}. Open the Network page to see it.")


def _pick_a_source() -> None:
    st.caption("Pick a source (From) to put one of its routes on the network map.")


def _show_sorted(table: pd.DataFrame, key: str) -> None:
    """``table`` by source, destination and then its other columns, paged."""
    show_paged(table.sort_values(list(table.columns)).reset_index(drop=True), key)


def _paths_section(rows: pd.DataFrame, pick: bool, key: str, kind: str, measure: str,
                   column: str, as_type: str, words: Callable[[object], str]) -> None:
    """The ``kind`` paths of the chosen pairs with their ``measure`` (``column`` of ``rows``
    as ``as_type``, in words by ``words``) and route; a route to put on the network map when
    ``pick``. The table is paged under ``{key}_page``."""
    if pick:
        _route_picker(key, _routes(kind, rows["path"], rows[column], words))
    else:
        _pick_a_source()
    _show_sorted(pd.DataFrame({
        "source": rows["src"].astype(str),
        "destination": rows["dst"].astype(str),
        measure: rows[column].astype(as_type),
        "route": [route_text(p) for p in rows["path"]],
    }), f"{key}_page")


def cheapest_section(rows: pd.DataFrame, pick: bool) -> None:
    """The cheapest paths of the chosen pairs, with their cost and route; a route to put on
    the network map when ``pick``."""
    _paths_section(rows, pick, "cheapest", "cheapest path", "cost (ms)", "cost", "float", _ms)


def fewest_section(rows: pd.DataFrame, pick: bool) -> None:
    """The fewest-hop paths of the chosen pairs, with their hop count and route; a route to put
    on the network map when ``pick``."""
    _paths_section(rows, pick, "fewest", "fewest-hop path", "hops", "hops", "int", _hops)


def combined_section(rows: pd.DataFrame, pick: bool) -> None:
    """Each cheapest path of the chosen pairs beside each of their fewest-hop paths; a route to
    put on the network map when ``pick``."""
    st.caption("Each cheapest path of a pair beside each of its fewest-hop paths.")
    if pick:
        _route_picker("combined",
                      _routes("cheapest path", rows["cheapest"], rows["cost"], _ms),
                      _routes("fewest-hop path", rows["fewest"], rows["hops"], _hops))
    else:
        _pick_a_source()
    _show_sorted(pd.DataFrame({
        "source": rows["src"].astype(str),
        "destination": rows["dst"].astype(str),
        "cost (ms)": rows["cost"].astype(float),
        "cheapest route": [route_text(p) for p in rows["cheapest"]],
        "hops": rows["hops"].astype(int),
        "fewest-hop route": [route_text(p) for p in rows["fewest"]],
    }), "combined_page")


#: The sub-tabs of Shortest paths: the view each shows and how.
PATH_VIEWS: dict[str, tuple[str, Callable[[pd.DataFrame, bool], None]]] = {
    "Cheapest paths": ("cheapest_path", cheapest_section),
    "Fewest-hop paths": ("fewest_hops", fewest_section),
    "Cheapest and fewest-hop, per pair": ("shortest_cheapest_path", combined_section),
}


def _path_pairs(settings: Settings) -> tuple[pd.DataFrame | None, list[str]]:
    """``(src, dst)`` of every pair with a path, and problems met (Markdown): from the minimum
    cost or hop views (small), else from the path views' pair columns only."""
    problems = []
    for name in ("min_cost", "min_hops"):
        rows, note, problem = _rows(settings, name)
        if rows is not None:
            return rows[["src", "dst"]].astype(str), problems
        if problem:
            problems.append(note)
    for name, _ in PATH_VIEWS.values():
        snapshot = read_latest(settings, name, ("src", "dst"))  # no paths: cheap to read
        if snapshot is not None and not snapshot.problem and not snapshot.rows.empty:
            return snapshot.rows.astype(str), problems
        if snapshot is not None and snapshot.problem:
            problems.append(snapshot.problem)
    return None, problems


def _minimum(settings: Settings, name: str, column: str, src: str, dst: str) -> str:
    """The ``column`` of pair (``src``, ``dst``) in view ``name``, ``–`` when there is none."""
    rows, _, _ = _rows(settings, name)
    found = pd.DataFrame() if rows is None else _pair_rows(rows, src, dst)
    return "–" if found.empty else f"{found[column].iloc[0]:g}"


def paths_tab(settings: Settings) -> None:
    pairs, problems = _path_pairs(settings)
    for problem in problems:
        st.warning(problem)
    if pairs is None:
        if not problems:
            st.info("No shortest paths yet: run `aspen maintain` first.")
        return
    sources = sorted(pairs["src"].unique())
    left, right = st.columns(2)
    src = left.selectbox("From", [ANY, *sources], key="path_src")
    targets = sorted(_pair_rows(pairs, src, ANY)["dst"].unique())
    dst = right.selectbox("To", [ANY, *targets], key="path_dst")
    if src != ANY and dst != ANY:
        cost, hops = st.columns(2)
        cost.metric("Minimum cost (ms)", _minimum(settings, "min_cost", "cost", src, dst))
        hops.metric("Minimum hops", _minimum(settings, "min_hops", "hops", src, dst))
    st.caption("Costs are link latencies in milliseconds; hops count links.")

    # only the open sub-tab reads its view: the paths are the large part of the lake's views
    tabs = st.tabs(list(PATH_VIEWS), key="paths_view", on_change="rerun")
    for tab, (name, section) in zip(tabs, PATH_VIEWS.values(), strict=True):
        if not tab.open:
            continue
        with tab:
            rows, note, problem = _rows(settings, name)
            if rows is None:
                _say(note, problem)
            else:
                section(_pair_rows(rows, src, dst), src != ANY)


# -- sensor regions -------------------------------------------------------------------------


def _highlight_largest(rows: pd.DataFrame) -> Styler:
    """The region table's rows, the largest regions' highlighted."""
    return rows.style.apply(
        lambda row: [LARGEST_BACKGROUND if row["largest"] else ""] * len(row), axis=1)


def regions_tab(settings: Settings) -> None:
    sensors, note, problem = _rows(settings, "sensor")
    if sensors is None:
        _say(note, problem, "ingest a sensor grid first.")
        return
    optional: dict[str, pd.DataFrame | None] = {}
    for name in ("active_region", "triggered", "region_seed", "region_sizes", "largest_regions"):
        rows, note, problem = _rows(settings, name)
        optional[name] = rows
        if problem:
            st.warning(note)
    if optional["active_region"] is None:
        st.caption("No active regions yet: every sensor is shown without a region.")
    placed = sensor_map(sensors, optional["active_region"], optional["triggered"])
    seeds = optional["region_seed"]
    in_region = placed[placed["region"] != NO_REGION]
    a, b, c = st.columns(3)
    a.metric("Sensors", f"{placed['sensor'].nunique():,}")
    b.metric("Triggered", f"{placed.loc[placed['triggered'], 'sensor'].nunique():,}")
    c.metric("Active regions", f"{in_region['region'].nunique():,}")

    st.plotly_chart(region_figure(placed, seeds), width="stretch", key="region_map")
    st.caption(
        "Each region is a ring of its own colour around its members; a sensor in several "
        "regions has one ring per region. Stars are seeds (labelled with their region), "
        "filled dots triggered sensors, hollow dots sensors not triggered, grey ones sensors "
        "in no region. Both axes are in metres, to scale.")

    st.subheader("Regions")
    regions = region_table(placed, optional["region_sizes"], optional["largest_regions"], seeds)
    if regions.empty:
        st.caption("No region has members yet.")
    else:
        largest = regions[regions["largest"]]
        if not largest.empty:
            sizes = sorted({int(s) for s in largest["size"].dropna()})
            size = f" ({', '.join(str(s) for s in sizes)} sensors)" if sizes else ""
            st.caption(f"Largest region(s), highlighted: "
                       f"{', '.join(text(r) for r in largest['region'])}{size}.")
        elif optional["largest_regions"] is None:
            st.caption("No largest regions yet.")
        show_paged(regions, "region_page", style=_highlight_largest)

    st.subheader("Sensors")
    show_paged(sensor_table(placed, seeds), "sensor_page")


#: The page's tabs and what each shows.
TABS: dict[str, Callable[[Settings], None]] = {
    "Reachable pairs": reachable_tab,
    "Shortest paths": paths_tab,
    "Sensor regions": regions_tab,
}

st.title("Views")
lake = current_lake()
# only the open tab runs: a page of reachable pairs does not wait for the paths and the map
tabs = st.tabs(list(TABS), key="views_tab", on_change="rerun")
for tab, show in zip(tabs, TABS.values(), strict=True):
    if tab.open:
        with tab:
            show(lake)
