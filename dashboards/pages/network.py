"""Network: an interactive map of the live topology (``link`` table) and of the links that died
recently, with a search, a focus node, and the path or lost links another page shared.

The map (:mod:`topomap`) draws transit nodes on an inner circle and their stubs around them,
live links as lines (darker and thicker = higher latency, in ms), and links whose instances
died (deleted, or expired by TTL) in the last N ingest batches (``variables`` registry:
``deleted_batch``, ``death``) dashed, red or grey. Clicking a node or the middle of a link
shows its details below the map; the search and the focus narrow the counts and tables.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st
from lakeview import (
    Settings,
    current_lake,
    deleted_links,
    ingest_batches,
    live_edges,
    read_latest,
    recent_batches,
    route_text,
    text,
)
from streamlit.delta_generator import DeltaGenerator
from topomap import (
    Details,
    clear_overlay,
    clicked,
    in_view,
    layout,
    link_kind,
    map_figure,
    matching,
    selection_details,
    shared_overlay,
    window_caption,
)

ALL_NODES = "(all nodes)"
#: Choices of "recently dead: links that died in the last N ingest batches" (0 hides them).
RECENT_CHOICES = (0, 1, 2, 3, 5, 10, 20, 50)
DEFAULT_RECENT = 3
#: Where the last clicked node or link is kept (a plotly selection), so its details stay.
CLICKED = "network_clicked"
#: Lost links a caption lists by name before saying "and N more".
LISTED_LINKS = 10
#: A table taller than this many rows scrolls inside a fixed height (every row is there).
TABLE_ROWS = 15


def _recent_choice(count: int) -> str:
    return "none (hide them)" if count == 0 else (
        "the last batch" if count == 1 else f"the last {count} batches")


def recently_dead(settings: Settings, place: DeltaGenerator,
                  live_pairs: set[tuple[str, str]]) -> pd.DataFrame | None:
    """The links that died in the last N batches (chosen in ``place``) and are not live again;
    ``None`` when there is no registry to read them from."""
    registry = read_latest(settings, "variables")
    if registry is None:
        place.caption("No `variables` registry yet: recently dead links are not shown.")
        return None
    if registry.problem:
        st.warning(registry.problem)
        return None
    if registry.rows.empty or not {"relation", "values", "deleted_batch"} <= set(registry.rows):
        place.caption("The `variables` registry has no instances yet: no dead links to show.")
        return None
    count = place.selectbox(
        "Recently dead links: died in", RECENT_CHOICES,
        index=RECENT_CHOICES.index(DEFAULT_RECENT), format_func=_recent_choice,
        key="network_recent", help="ingest batches (and TTL sweeps) to look back over",
    )
    batches = recent_batches(ingest_batches(settings, registry.rows), count)
    dead = deleted_links(registry.rows, batches)
    live_again = pd.Series(
        [pair in live_pairs for pair in zip(dead["src"], dead["dst"], strict=True)],
        index=dead.index, dtype=bool,
    )
    place.caption(window_caption(count, batches) + " A link live again is drawn as live.")
    return dead[~live_again].reset_index(drop=True)


@st.cache_data(show_spinner=False, max_entries=16)
def positions_of(nodes: tuple[str, ...], pairs: tuple[tuple[str, str], ...]
                 ) -> dict[str, tuple[float, float]]:
    """:func:`topomap.layout`, cached per set of nodes and links."""
    return layout(nodes, pairs)


def overlay_note(overlay: dict, on_map: set[str]) -> tuple[str, list[str], list[tuple[str, str]]]:
    """The caption of a shared overlay, and its path and lost links to draw."""
    label = overlay["label"]
    if overlay["kind"] == "path":
        nodes = overlay["nodes"]
        route = route_text(nodes)
        note = (f"**Path shared by another page** ({len(nodes)} nodes, drawn thick magenta): "
                f"{text(label)}" + ("" if route in label else f" — {text(route)}"))
        missing = sorted(set(nodes) - on_map)
        if missing:
            note += f"; not on the map: {', '.join(map(text, missing))}"
        return note, nodes, []
    links = overlay["links"]
    named = ", ".join(text(f"{a}→{b}") for a, b in links[:LISTED_LINKS])
    more = f" and {len(links) - LISTED_LINKS} more" if len(links) > LISTED_LINKS else ""
    note = (f"**Links lost, shared by another page** ({len(links)} links, drawn thick orange): "
            f"{text(label)}" + (f" — {named}{more}" if links else ""))
    return note, [], links


def _focus_on(node: str) -> None:
    """Make ``node`` the focus (a button's callback: it runs before the widgets are drawn)."""
    st.session_state["network_search"] = ""
    st.session_state["network_focus"] = node


def show_details(details: Details) -> None:
    """The panel below the map for the clicked node or link."""
    if details.kind == "node":
        st.subheader(f"Node {text(details.subject[0])}")
    else:
        st.subheader(f"Link {text(details.subject[0])} ↔ {text(details.subject[1])}")
    if not details.found:
        st.caption("Not on the map any more: no live or recently dead link touches it.")
    st.markdown(" · ".join(f"**{label}**: {value}" for label, value in details.facts))
    if not details.table.empty:
        st.dataframe(details.table, hide_index=True, width="stretch")
    left, right = st.columns([1, 1])
    if details.kind == "node" and details.found:
        left.button("Focus the map on this node", key="network_focus_clicked",
                    on_click=_focus_on, args=(details.subject[0],))
    if right.button("Clear the details", key="network_clear_clicked"):
        st.session_state.pop(CLICKED, None)
        st.rerun()


def live_table(edges: pd.DataFrame) -> pd.DataFrame:
    """The live links with plain column names, one row per direction."""
    return pd.DataFrame({
        "from": edges["src"].astype(str), "to": edges["dst"].astype(str),
        "cost (ms)": edges["cost"].astype(float), "live copies": edges["instances"].astype(int),
        "kind": [link_kind(a, b) for a, b in zip(edges["src"], edges["dst"], strict=True)],
    })


def dead_table(dead: pd.DataFrame) -> pd.DataFrame:
    """The recently dead links with plain column names."""
    return pd.DataFrame({
        "from": dead["src"].astype(str), "to": dead["dst"].astype(str),
        "cost (ms)": dead["cost"].astype(float), "how it died": dead["death"].astype(str),
        "in batch": dead["deleted_batch"].astype("Int64"),
        "dead copies": dead["instances"].astype("Int64"),
    })


def show_table(frame: pd.DataFrame) -> None:
    """All rows of ``frame``; a long one scrolls inside a fixed height."""
    height = 36 * (TABLE_ROWS + 1) if len(frame) > TABLE_ROWS else "auto"
    st.dataframe(frame, hide_index=True, width="stretch", height=height)


st.title("Network")
lake = current_lake()
snapshot = read_latest(lake, "link", ("src", "dst", "cost"))
if snapshot is None:
    st.info("No `link` table yet: ingest some link updates and run `aspen maintain` first.")
    st.stop()
if snapshot.problem:
    st.warning(snapshot.problem)
    st.stop()
edges = live_edges(snapshot.rows)
search_place, focus_place, recent_place = st.columns(3)
dead = recently_dead(lake, recent_place, set(zip(edges["src"], edges["dst"], strict=True)))
if edges.empty:
    st.info(f"The `link` table (version {snapshot.version}) has no live links.")
    if dead is None or dead.empty:
        st.stop()
if dead is None:
    dead = deleted_links(pd.DataFrame(), [])

nodes = sorted(set(edges["src"]) | set(edges["dst"]) | set(dead["src"]) | set(dead["dst"]))
query = search_place.text_input(
    "Search nodes", key="network_search", placeholder="part of a node id, e.g. t0. or s0.1",
    help="case-insensitive; matching nodes are ringed on the map and listed in the focus choice",
)
matches = matching(nodes, query)
focus_choice = focus_place.selectbox(
    "Focus node", [ALL_NODES, *(matches if query.strip() else nodes)], key="network_focus",
    help="zoom to a node, its links and its neighbours",
)
focus = None if focus_choice == ALL_NODES else str(focus_choice)
if query.strip() and not matches:
    search_place.caption(f"No node id contains {text(query.strip())}.")

overlay = shared_overlay()
path: list[str] = []
lost: list[tuple[str, str]] = []
if overlay is not None:
    note, path, lost = overlay_note(overlay, set(nodes))
    said, button = st.columns([5, 1], vertical_alignment="center")
    said.caption(note)
    if button.button("Clear from the map", key="network_clear_overlay"):
        clear_overlay()
        st.rerun()

# in view: the focus and its neighbours (links: the focus node's), else the search matches
# (links: those touching one), else everything
view: set[str] | None = None
ends: set[str] | None = None
scope = ""
if focus is not None:
    ends = {focus}
    view = ends | set(in_view(edges, ends)[["src", "dst"]].stack())
    view |= set(in_view(dead, ends)[["src", "dst"]].stack())
    scope = f"node {text(focus)}, its links and its {len(view) - 1} neighbour(s)"
elif query.strip():
    view = ends = set(matches)
    scope = f"the {len(matches)} node(s) matching {text(query.strip())} and their links"
shown, shown_dead = in_view(edges, ends), in_view(dead, ends)
where = "in view" if view is not None else "in all"
left, middle, right = st.columns(3)
left.metric(f"Nodes {where}", f"{len(nodes if view is None else view):,}")
middle.metric(f"Live links {where}", f"{len(shown):,}")
right.metric(f"Recently dead links {where}", f"{len(shown_dead):,}")
totals = (f"{len(nodes):,} nodes, {len(edges):,} live links and {len(dead):,} recently dead "
          f"links in all (`link` table version {snapshot.version}; each direction counts as a "
          "link)")
st.caption(f"In view: {scope}. {totals}." if view is not None else f"{totals}.")

# placed by the live links only: another window of dead links moves no node
positions = positions_of(tuple(nodes), tuple(sorted(set(zip(edges["src"], edges["dst"],
                                                            strict=True)))))
figure = map_figure(
    edges[["src", "dst", "cost"]].itertuples(index=False),
    dead[["src", "dst", "death", "deleted_batch"]].itertuples(index=False),
    positions=positions, nodes=nodes, focus=focus, matches=matches, path=path, lost=lost,
)
event = st.plotly_chart(
    figure, on_select="rerun", selection_mode=("points",), key="network_map",
    config={"scrollZoom": True, "displaylogo": False},
    alt="Map of the network's nodes and links",
)
st.caption(
    "Solid lines: live links, one line per pair of nodes (darker and thicker = higher "
    "latency). Dashed red: deleted recently; dashed grey: expired recently. Hover over a node "
    "or the middle of a line for its id and cost; click it for details below. Scroll to zoom, "
    "drag to pan, double-click to see the whole network; click a legend entry to hide it."
)

if clicked(event.selection if event is not None else None) is not None:
    st.session_state[CLICKED] = {"points": list(event.selection["points"])}
details = selection_details(st.session_state.get(CLICKED), edges, dead)
if details is not None:
    show_details(details)

st.subheader(f"Live links {where}")
st.caption(f"{len(shown):,} link(s), one row per direction: the cheapest live copy's cost.")
show_table(live_table(shown))
if not dead.empty:
    st.subheader(f"Recently dead links {where}")
    st.caption(f"{len(shown_dead):,} link(s), each by its latest death.")
    show_table(dead_table(shown_dead))
