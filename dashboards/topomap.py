"""The network map: where each node goes, and the plotly figure of the live and recently dead
links, with overlays (a path, lost links, a focus node, search matches).

Node ids of the transit–stub generator (:mod:`aspen.generators.topology`) say where a node
sits: transit node ``t{d}.{i}``, stub node ``s{d}.{i}.{j}.{k}`` (node ``k`` of stub ``j``
hanging off ``t{d}.{i}``). :func:`layout` puts the transit nodes on an inner circle, grouped by
domain, and each transit node's stubs as small rings just outside it; other ids get a
deterministic networkx layout.

Lake text drawn on a figure (ids in hover texts and labels) goes through :func:`plain`, so it
shows as exactly its characters; Markdown is the page's business (``lakeview.text``). Only the
overlay helpers (:func:`share_path`, :func:`share_losses`, :func:`shared_overlay`,
:func:`clear_overlay`) call Streamlit: another page puts a path or lost links in
``st.session_state`` and the Network page draws them.

>>> positions = layout(["t0.0", "s0.0.0.0", "s0.0.0.1"], [("t0.0", "s0.0.0.0")])
>>> sorted(positions), positions["t0.0"]
(['s0.0.0.0', 's0.0.0.1', 't0.0'], (0.0, 0.0))
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import networkx as nx
import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from lakeview import plain

__all__ = [
    "DETAIL_COLUMNS",
    "OVERLAY_KEY",
    "ROLES",
    "Details",
    "batches_text",
    "clear_overlay",
    "clicked",
    "cost_text",
    "declutter",
    "details_of",
    "in_view",
    "layout",
    "link_details",
    "link_kind",
    "map_figure",
    "matching",
    "neighbourhood",
    "node_details",
    "plain",
    "role_of",
    "RouteLabel",
    "route_figure",
    "route_labels",
    "selection_details",
    "share_losses",
    "share_path",
    "shared_overlay",
    "subgraph_figure",
    "window_caption",
]

TRANSIT, STUB, OTHER = "transit", "stub", "other"
#: Node roles, as :func:`role_of` names them.
ROLES = (TRANSIT, STUB, OTHER)
_TRANSIT_ID = re.compile(r"t([0-9]+)\.([0-9]+)")
_STUB_ID = re.compile(r"s([0-9]+)\.([0-9]+)\.([0-9]+)\.([0-9]+)")

#: Layout units between neighbouring nodes of a stub's ring, and between two stub rings.
_SPACING, _GAP = 1.0, 1.2
#: Graphs up to this many nodes get kamada-kawai (when connected), bigger ones spring_layout.
_SMALL_GRAPH = 60
#: Above this many markers the figure uses WebGL traces (SVG gets slow to pan and hover).
WEBGL_MARKERS = 1500
#: Node ids drawn as labels on the map when there are at most this many nodes (else transit
#: nodes, the focus, path nodes and search matches only).
LABEL_ALL_NODES = 60
LABEL_MATCHES = 40

# colours: live links blue (darker and thicker = slower), dead links dashed red or grey,
# overlays magenta (path), orange (lost), gold (focus) and black rings (search matches)
_LINK_COLOURS = ("#9ecae1", "#6baed6", "#3182bd", "#08519c", "#08306b", "#041c40")
_LINK_WIDTHS = (0.7, 1.0, 1.4, 1.8, 2.3, 2.8)
_DEAD_STYLES = {"deleted": ("#d62728", "deleted recently (dashed red)"),
                "expired": ("#7f7f7f", "expired recently (dashed grey)")}
_NODE_STYLES = {  # colour, symbol, size (small map), size (big map), legend name
    TRANSIT: ("#6a3d9a", "diamond", 13, 10, "transit node"),
    STUB: ("#2ca02c", "circle", 9, 5, "stub node"),
    OTHER: ("#555555", "circle", 10, 7, "other node"),
}
_PATH, _LOST, _FOCUS, _MATCH = "#e7298a", "#ff7f0e", "#f5b800", "#111111"
_INVISIBLE = "rgba(0,0,0,0)"


# -- text ---------------------------------------------------------------------------------


def _node_text(node: str) -> str:
    """A node id for a hover text or label (:func:`plain`; an empty id says so)."""
    return plain(node) if node else "(empty id)"


def _number(value: object) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan


def cost_text(cost: object) -> str:
    """A link cost (a latency) with its unit.

    >>> cost_text(10.0), cost_text(2.5), cost_text(None)
    ('10 ms', '2.5 ms', 'no cost')
    """
    value = _number(cost)
    return "no cost" if math.isnan(value) else f"{value:g} ms"


def _batch_ranges(batches: Iterable[int]) -> list[str]:
    ordered = sorted({int(b) for b in batches})
    ranges: list[str] = []
    start = previous = None
    for batch in [*ordered, None]:
        if start is not None and (batch is None or batch != previous + 1):
            ranges.append(str(start) if start == previous else f"{start}–{previous}")
            start = None
        if start is None:
            start = batch
        previous = batch
    return ranges


def batches_text(batches: Iterable[int]) -> str:
    """Batch numbers in words, consecutive ones as a range.

    >>> batches_text([4, 3, 2]), batches_text([5]), batches_text([1, 3, 4, 5, 9]), batches_text([])
    ('batches 2–4', 'batch 5', 'batches 1, 3–5 and 9', 'no batch')
    """
    ranges = _batch_ranges(batches)
    if not ranges:
        return "no batch"
    if len(ranges) == 1 and "–" not in ranges[0]:
        return f"batch {ranges[0]}"
    listed = ranges[0] if len(ranges) == 1 else f"{', '.join(ranges[:-1])} and {ranges[-1]}"
    return f"batches {listed}"


def window_caption(requested: int, searched: Sequence[int]) -> str:
    """What the "recently dead" control looks at: the ``requested`` number of batches and the
    batch numbers that covers (``searched``, from ``lakeview.recent_batches``).

    >>> window_caption(3, [4, 3, 2])
    'Links that died in the last 3 batches are drawn: batches 2–4.'
    >>> window_caption(3, [2, 1])
    'Links that died in the last 3 batches are drawn: the lake has only 2 so far, batches 1–2.'
    >>> window_caption(0, [])
    'Recently dead links are hidden.'
    """
    if requested <= 0:
        return "Recently dead links are hidden."
    asked = "the last batch" if requested == 1 else f"the last {requested} batches"
    if not searched:
        return f"Links that died in {asked} would be drawn, but no ingest batch is recorded yet."
    if len(searched) < requested:
        return (f"Links that died in {asked} are drawn: the lake has only {len(searched)} so "
                f"far, {batches_text(searched)}.")
    return f"Links that died in {asked} are drawn: {batches_text(searched)}."


# -- roles and layout ---------------------------------------------------------------------


def _place(node: str) -> tuple[int, ...] | None:
    """``(d, i)`` of a transit id, ``(d, i, j, k)`` of a stub id, else ``None``."""
    found = _TRANSIT_ID.fullmatch(node) or _STUB_ID.fullmatch(node)
    return None if found is None else tuple(int(part) for part in found.groups())


def role_of(node: str) -> str:
    """``transit``, ``stub`` or ``other``, from the id (the generator's naming).

    >>> role_of("t0.3"), role_of("s0.3.1.7"), role_of("s7"), role_of("t0.3x")
    ('transit', 'stub', 'other', 'other')
    """
    place = _place(node)
    return OTHER if place is None else TRANSIT if len(place) == 2 else STUB


def link_kind(a: str, b: str) -> str:
    """The kind of link between ``a`` and ``b`` from their ids, ``""`` when unknown.

    >>> link_kind("t0.0", "t1.2"), link_kind("s0.0.1.2", "t0.0"), link_kind("s0.0.1.2", "s0.0.1.5")
    ('transit–transit', 'transit–stub', 'inside a stub')
    >>> link_kind("s0.0.1.2", "s0.1.0.0"), link_kind("a", "t0.0")
    ('stub–stub', '')
    """
    roles = sorted((role_of(a), role_of(b)), reverse=True)
    if OTHER in roles:
        return ""
    if roles == [STUB, STUB]:
        return "inside a stub" if a.rsplit(".", 1)[0] == b.rsplit(".", 1)[0] else "stub–stub"
    return f"{roles[0]}–{roles[1]}"


def _ring_radius(size: int) -> float:
    """Radius of a ring of ``size`` nodes :data:`_SPACING` apart (0 for one node)."""
    return 0.0 if size <= 1 else max(size * _SPACING / (2 * math.pi), 0.5)


def _on_circle(radius: float, angle: float) -> tuple[float, float]:
    return radius * math.cos(angle), radius * math.sin(angle)


def _structured(places: dict[str, tuple[int, ...]]) -> tuple[dict[str, tuple[float, float]],
                                                             float]:
    """Positions of transit and stub nodes, and the radius just outside the stub rings."""
    transits: dict[tuple[int, int], list[str]] = {}
    stubs: dict[tuple[int, int], dict[int, list[tuple[int, str]]]] = {}
    for node, place in places.items():
        key = (place[0], place[1])
        transits.setdefault(key, [])
        rings = stubs.setdefault(key, {})
        if len(place) == 2:
            transits[key].append(node)
        else:
            rings.setdefault(place[2], []).append((place[3], node))
    keys = sorted(transits)
    biggest = max((len(m) for rings in stubs.values() for m in rings.values()), default=1)
    ring = _ring_radius(biggest)
    slot = 2 * ring + _GAP  # arc length taken by one stub ring
    domains = sorted({d for d, _ in keys})
    domain_gap = 1.0 if len(domains) > 1 else 0.0  # an empty slot between two domains
    # a transit node's stubs fill rows outward (three: two, then one), so the circle stays
    # small enough for the stub rings to be seen at a thousand nodes
    # (one transit node: at the centre, its stubs in one row all around it)
    rows = {key: math.isqrt(len(stubs[key]) - 1) + 1 if stubs[key] and len(keys) > 1 else 1
            for key in keys}
    widths = {key: max(1, -(-len(stubs[key]) // rows[key])) for key in keys}
    total = sum(widths.values()) + domain_gap * len(domains)
    outer = max(total * slot / (2 * math.pi), 3 * ring + 4)  # centres of the stub rings
    inner = 0.0 if len(keys) == 1 else 0.65 * outer  # the transit circle
    unit = 2 * math.pi / total  # angle of one slot
    positions: dict[str, tuple[float, float]] = {}
    cursor = 0.0
    for domain in domains:
        cursor += domain_gap / 2
        for key in (k for k in keys if k[0] == domain):
            angle = math.pi / 2 - (cursor + widths[key] / 2) * unit  # clockwise from the top
            for extra, node in enumerate(sorted(transits[key])):  # two ids for one place
                positions[node] = _on_circle(inner + extra * _SPACING, angle)
            for index, j in enumerate(sorted(stubs[key])):
                row, column = divmod(index, widths[key])
                in_row = min(widths[key], len(stubs[key]) - row * widths[key])
                offset = column - (in_row - 1) / 2  # slots from the sector's middle
                toward = angle - offset * unit
                cx, cy = _on_circle(outer + row * slot, toward)
                members = sorted(stubs[key][j])
                radius = _ring_radius(len(members))
                for q, (_, node) in enumerate(members):
                    dx, dy = _on_circle(radius, toward + 2 * math.pi * q / len(members))
                    positions[node] = (cx + dx, cy + dy)
            cursor += widths[key]
        cursor += domain_gap / 2
    return positions, outer + (max(rows.values()) - 1) * slot + ring + 3


def _fallback(names: list[str], pairs: Iterable[tuple[str, str]]) -> dict[str, tuple[float,
                                                                                     float]]:
    """A deterministic networkx layout of ``names`` (sorted), scaled to about one unit between
    neighbours."""
    if len(names) <= 1:
        return {name: (0.0, 0.0) for name in names}
    graph = nx.Graph()
    graph.add_nodes_from(names)
    graph.add_edges_from(sorted({(a, b) if a <= b else (b, a) for a, b in pairs if a != b}))
    if len(names) <= _SMALL_GRAPH and nx.is_connected(graph):
        raw = nx.kamada_kawai_layout(graph)
    else:
        raw = nx.spring_layout(graph, seed=0)
    scale = max(1.0, 1.5 * math.sqrt(len(names)))
    return {str(n): (float(x) * scale, float(y) * scale) for n, (x, y) in raw.items()}


def layout(nodes: Iterable[object], links: Iterable[Sequence[object]]) -> dict[str, tuple[float,
                                                                                         float]]:
    """Position ``(x, y)`` of every node among ``nodes`` and the ends of ``links`` (``(src,
    dst, ...)`` tuples); the same input gives the same positions, whatever its order.

    Transit-stub ids: transit nodes on an inner circle grouped by domain (one transit node: at
    the centre), each transit node's stubs as rings of their nodes, radially outside it within
    its sector of the circle; ids that do not parse go evenly on a circle outside all that.
    When no id parses: kamada-kawai for a small connected graph, else ``spring_layout(seed=0)``.

    >>> spots = layout([], [("a", "b"), ("b", "c")])
    >>> sorted(spots) == ["a", "b", "c"], spots == layout(["c"], [("b", "c"), ("a", "b")])
    (True, True)
    """
    names = {str(node) for node in nodes}
    pairs = []
    for link in links:
        src, dst = str(link[0]), str(link[1])
        names.update((src, dst))
        pairs.append((src, dst))
    places = {name: place for name in names if (place := _place(name)) is not None}
    if not places:
        spots = _fallback(sorted(names), pairs)
    else:
        spots, radius = _structured(places)
        others = sorted(names - set(places))
        radius = max(radius, len(others) * 1.5 * _SPACING / (2 * math.pi))
        for index, node in enumerate(others):
            spots[node] = _on_circle(radius, math.pi / 2 - 2 * math.pi * index / len(others))
    return {node: (round(x, 4) + 0.0, round(y, 4) + 0.0) for node, (x, y) in spots.items()}


# -- the map ------------------------------------------------------------------------------


def _pair(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a <= b else (b, a)


def _segments(pairs: Iterable[tuple[str, str]], positions: Mapping[str, tuple[float, float]]
              ) -> tuple[np.ndarray, np.ndarray]:
    """x and y of the line segments between placed ends, NaN (a gap) after each segment."""
    ends = [(positions[a], positions[b]) for a, b in pairs if a in positions and b in positions]
    if not ends:
        return np.empty(0), np.empty(0)
    points = np.array(ends, dtype=float)  # segment, end, coordinate
    gaps = np.full((len(ends), 1), np.nan)
    return (np.hstack([points[:, :, 0], gaps]).ravel(),
            np.hstack([points[:, :, 1], gaps]).ravel())


def _cost_classes(costs: Iterable[float]) -> list[tuple[float, float]]:
    """``(lowest, highest)`` cost of each class of live links: one per distinct cost, or five
    ranges of the sorted distinct costs when there are more than six."""
    distinct = sorted({c for c in costs if not math.isnan(c)})
    if len(distinct) <= len(_LINK_COLOURS):
        return [(c, c) for c in distinct]
    size = math.ceil(len(distinct) / 5)
    chunks = [distinct[i:i + size] for i in range(0, len(distinct), size)]
    return [(chunk[0], chunk[-1]) for chunk in chunks]


def _class_name(low: float, high: float, kinds: set[str]) -> str:
    span = cost_text(low) if low == high else f"{low:g}–{high:g} ms"
    kind = f" ({next(iter(kinds))})" if len(kinds) == 1 and "" not in kinds else ""
    return f"live links, {span}{kind}"


def _death_word(death: str) -> str:
    """``deleted`` or ``expired`` (any other recorded death counts as deleted)."""
    return "expired" if death == "expired" else "deleted"


@dataclass
class _Network:
    """Live and recently dead links by unordered pair, and each node's live neighbours."""

    live: dict[tuple[str, str], list[tuple[str, str, float]]]
    dead: dict[tuple[str, str], list[tuple[str, str, str, int | None]]]
    neighbours: dict[str, set[str]]
    nodes: set[str]

    @classmethod
    def of(cls, live: Iterable[Sequence[object]], dead: Iterable[Sequence[object]],
           nodes: Iterable[object] = ()) -> _Network:
        network = cls({}, {}, {}, {str(n) for n in nodes})
        for src, dst, cost, *_ in live:
            a, b = str(src), str(dst)
            network.live.setdefault(_pair(a, b), []).append((a, b, _number(cost)))
            network.neighbours.setdefault(a, set()).add(b)
            network.neighbours.setdefault(b, set()).add(a)
            network.nodes.update((a, b))
        for src, dst, death, batch, *_ in dead:
            a, b = str(src), str(dst)
            number = None if pd.isna(batch) else int(batch)  # type: ignore[call-overload]
            network.dead.setdefault(_pair(a, b), []).append((a, b, _death_word(str(death)),
                                                             number))
            network.nodes.update((a, b))
        return network

    def around(self, node: str) -> set[str]:
        """``node`` and its neighbours over live and recently dead links."""
        found = {node} | self.neighbours.get(node, set())
        for a, b in self.dead:
            if node in (a, b):
                found.update((a, b))
        return found

    def hover(self, pair: tuple[str, str]) -> str:
        lines = [f"{_node_text(a)} → {_node_text(b)}, {cost_text(cost)}"
                 for a, b, cost in sorted(self.live.get(pair, []))]
        lines += [f"{_node_text(a)} → {_node_text(b)}, {death} in batch "
                  f"{'?' if batch is None else batch}"
                  for a, b, death, batch in sorted(self.dead.get(pair, []),
                                                   key=lambda r: (r[0], r[1]))]
        return "<br>".join(lines)


def _scatter(webgl: bool, **kwargs: object) -> go.Scatter | go.Scattergl:
    """A ``Scattergl`` or ``Scatter`` trace; per-point lists become numpy arrays first (plotly
    validates a list item by item: 20 times slower at a thousand nodes)."""
    for name in ("x", "y"):
        if isinstance(kwargs.get(name), list):
            kwargs[name] = np.array(kwargs[name], dtype=float)
    for name in ("text", "hovertext", "customdata"):
        if isinstance(kwargs.get(name), list):
            kwargs[name] = np.array(kwargs[name], dtype=object)
    return go.Scattergl(**kwargs) if webgl else go.Scatter(**kwargs)


def _lines(webgl: bool, pairs: Iterable[tuple[str, str]],
           positions: Mapping[str, tuple[float, float]], name: str, colour: str, width: float,
           dash: str = "solid", rank: int = 100, legend: bool = True
           ) -> go.Scatter | go.Scattergl | None:
    xs, ys = _segments(pairs, positions)
    if not len(xs):
        return None
    return _scatter(webgl, x=xs, y=ys, mode="lines", name=name, hoverinfo="skip",
                    line=dict(color=colour, width=width, dash=dash), legendrank=rank,
                    showlegend=legend)


def _ring(webgl: bool, nodes: Sequence[str], positions: Mapping[str, tuple[float, float]],
          name: str, colour: str, size: int, symbol: str, rank: int, label: bool
          ) -> go.Scatter | None:
    """Rings (or another symbol) around the placed ``nodes``, labelled with their ids."""
    placed = [n for n in nodes if n in positions]
    if not placed:
        return None
    return _scatter(
        webgl, x=[positions[n][0] for n in placed], y=[positions[n][1] for n in placed],
        mode="markers+text" if label else "markers", name=name, hoverinfo="skip",
        text=[_node_text(n) for n in placed] if label else None, textposition="top center",
        textfont=dict(size=13, color="#111"), legendrank=rank,
        marker=dict(color=colour, size=size, symbol=symbol, line=dict(color=colour, width=2.5)),
    )


def map_figure(
    live: Iterable[Sequence[object]],
    dead: Iterable[Sequence[object]] = (),
    *,
    positions: Mapping[str, tuple[float, float]] | None = None,
    nodes: Iterable[object] = (),
    focus: str | None = None,
    matches: Iterable[str] = (),
    path: Sequence[str] = (),
    path_name: str = "shared path",
    lost: Iterable[tuple[str, str]] = (),
    lost_name: str = "lost links (what if)",
    height: int = 760,
    webgl: bool | None = None,
) -> go.Figure:
    """The network map: ``live`` links ``(src, dst, cost)`` as thin lines (one trace per cost
    class, costs in ms), ``dead`` links ``(src, dst, death, batch)`` dashed (red: deleted,
    grey: expired), nodes coloured by role, and the overlays on top.

    A pair of nodes is one line; an invisible marker in its middle carries the hover text of
    both directions (``a → b, 10 ms``; ``a → b, deleted in batch 3``) and ``customdata``
    ``["link", a, b]`` (``a <= b``); a node marker carries ``"id · role · degree n"`` (``n``
    live neighbours) and ``["node", id]``: what :func:`clicked` reads back. Overlays: ``path``
    (nodes, drawn thick magenta), ``lost`` links (thick orange), ``focus`` (gold, with its
    links and neighbours; the view zooms to them) and search ``matches`` (black rings).
    ``positions`` default to :func:`layout`; nodes without one are left out. ``webgl``
    (default: above :data:`WEBGL_MARKERS` markers) draws with ``Scattergl``.

    >>> fig = map_figure([("a", "b", 10.0), ("b", "a", 10.0)], [("b", "c", "deleted", 3)])
    >>> [t.name for t in fig.data if t.showlegend is not False]
    ['live links, 10 ms', 'deleted recently (dashed red)', 'other node']
    >>> [t.hovertext for t in fig.data if t.name == "links"][0].tolist()
    ['a → b, 10 ms<br>b → a, 10 ms', 'b → c, deleted in batch 3']
    """
    network = _Network.of(live, dead, nodes)
    path_name, lost_name = plain(path_name), plain(lost_name)
    if positions is None:
        positions = layout(network.nodes, [*network.live, *network.dead])
    placed = sorted(n for n in network.nodes if n in positions)
    if webgl is None:
        webgl = len(placed) + len(network.live) + len(network.dead) > WEBGL_MARKERS
    figure = go.Figure()
    traces: list[go.Scatter | go.Scattergl | None] = []

    pair_cost = {pair: min((c for *_, c in rows if not math.isnan(c)), default=math.nan)
                 for pair, rows in network.live.items()}
    classes = _cost_classes(pair_cost.values())
    for index, (low, high) in enumerate(classes):
        pairs = [p for p, c in pair_cost.items() if low <= c <= high]
        shade = round(index * (len(_LINK_COLOURS) - 1) / max(len(classes) - 1, 1))
        traces.append(_lines(webgl, pairs, positions,
                             _class_name(low, high, {link_kind(*p) for p in pairs}),
                             _LINK_COLOURS[shade], _LINK_WIDTHS[shade], rank=10 + index))
    no_cost = [p for p, c in pair_cost.items() if math.isnan(c)]
    traces.append(_lines(webgl, no_cost, positions, "live links, no cost", "#969696", 1.0,
                         rank=19))
    dead_kind = {pair: "deleted" if any(r[2] == "deleted" for r in rows) else "expired"
                 for pair, rows in network.dead.items()}
    for rank, (death, (colour, name)) in enumerate(_DEAD_STYLES.items()):
        pairs = [p for p, kind in dead_kind.items() if kind == death]
        traces.append(_lines(webgl, pairs, positions, name, colour, 1.8, "dash", 20 + rank))

    lost_pairs = [(str(a), str(b)) for a, b in lost]
    traces.append(_lines(webgl, lost_pairs, positions, lost_name, _LOST, 5.0, rank=30))
    path_nodes = [str(n) for n in path]
    traces.append(_lines(webgl, list(zip(path_nodes, path_nodes[1:], strict=False)), positions,
                         path_name, _PATH, 5.0, rank=31))
    around = network.around(focus) if focus is not None and focus in positions else set()
    if around:
        focus_pairs = [p for p in [*network.live, *network.dead] if focus in p]
        traces.append(_lines(webgl, focus_pairs, positions, "links of the focus node", _FOCUS,
                             3.5, rank=32))

    # the invisible middles of the links: what hovering or clicking a link hits
    pairs = sorted(p for p in {*network.live, *network.dead}
                   if p[0] in positions and p[1] in positions)
    traces.append(_scatter(
        webgl, x=[(positions[a][0] + positions[b][0]) / 2 for a, b in pairs],
        y=[(positions[a][1] + positions[b][1]) / 2 for a, b in pairs], mode="markers",
        name="links", showlegend=False, hoverinfo="text",
        hovertext=[network.hover(p) for p in pairs], customdata=[["link", a, b] for a, b in pairs],
        marker=dict(color=_INVISIBLE, size=11), selected=dict(marker=dict(color="#000000")),
    ) if pairs else None)

    big = len(placed) > LABEL_ALL_NODES
    for rank, role in enumerate(ROLES):
        members = [n for n in placed if role_of(n) == role]
        if not members:
            continue
        colour, symbol, small_size, big_size, name = _NODE_STYLES[role]
        labelled = not big or role == TRANSIT
        traces.append(_scatter(
            webgl, x=[positions[n][0] for n in members], y=[positions[n][1] for n in members],
            mode="markers+text" if labelled else "markers", name=name, legendrank=rank,
            text=[_node_text(n) for n in members] if labelled else None,
            textposition="top center", textfont=dict(size=11, color="#333"),
            hoverinfo="text", customdata=[["node", n] for n in members],
            hovertext=[f"{_node_text(n)} · {role} · degree {len(network.neighbours.get(n, ()))}"
                       for n in members],
            marker=dict(color=colour, symbol=symbol, size=big_size if big else small_size,
                        line=dict(color="white", width=0.5)),
            # a click selects one marker: the others keep their look (no fading)
            selected=dict(marker=dict(color="#000000")),
            unselected=dict(marker=dict(opacity=1), textfont=dict(color="#333")),
        ))

    if path_nodes:
        traces.append(_ring(webgl, path_nodes, positions, f"{path_name}: nodes", _PATH, 15,
                            "circle-open", 33, label=True))
    found = sorted(set(matches) & set(positions))
    if found:
        traces.append(_ring(webgl, found, positions, f"search matches ({len(found)})", _MATCH,
                            17, "circle-open", 34, label=len(found) <= LABEL_MATCHES))
    if around:
        traces.append(_ring(webgl, sorted(around - {focus}), positions, "neighbours of the focus",
                            _FOCUS, 15, "circle-open", 35, label=True))
        traces.append(_ring(webgl, [focus], positions, "focus node", _FOCUS, 22, "star", 36,
                            label=True))
    figure.add_traces([t for t in traces if t is not None])

    axis = dict(visible=False, showgrid=False, zeroline=False)
    figure.update_layout(
        height=height, margin=dict(l=0, r=0, t=30, b=0), dragmode="pan", hovermode="closest",
        plot_bgcolor="white", paper_bgcolor="white", showlegend=True,
        hoverlabel=dict(bgcolor="white", bordercolor="#444444", font=dict(size=13, color="#111")),
        # below the map: the zoom buttons take the top right corner
        legend=dict(orientation="h", x=0, y=0, xanchor="left", yanchor="top",
                    font=dict(size=13, color="#111"), itemsizing="constant"),
        xaxis=axis, yaxis=dict(axis, scaleanchor="x", scaleratio=1),
        # zoom and pan stay across reruns until the focus changes
        uirevision=f"focus {focus}" if around else "map",
    )
    if around:
        xs = [positions[n][0] for n in around]
        ys = [positions[n][1] for n in around]
        pad = max(3.0, 0.15 * max(max(xs) - min(xs), max(ys) - min(ys)))
        figure.update_xaxes(range=[min(xs) - pad, max(xs) + pad])
        figure.update_yaxes(range=[min(ys) - pad, max(ys) + pad])
    if not placed:
        figure.add_annotation(text="No links to draw", showarrow=False, x=0, y=0,
                              font=dict(size=16, color="#555"))
    return figure


def subgraph_figure(
    links: list[tuple[str, str, float]],
    highlighted: list[tuple[str, str]],
    positions: Mapping[str, tuple[float, float]] | None = None,
) -> go.Figure:
    """A small figure of a few directed ``links`` ``(src, dst, cost)`` (e.g. a why-witness):
    arrows labelled with their cost, the ``highlighted`` ones thick red. With ``positions`` of
    the whole network (:func:`layout`) holding every node, the links are drawn where they sit
    in it; otherwise the few nodes get a layout of their own.

    >>> fig = subgraph_figure([("a", "b", 1.0), ("b", "c", 2.0)], [("a", "b")])
    >>> [t.text for t in fig.data if t.name == "costs"][0], len(fig.layout.annotations)
    (('1 ms', '2 ms'), 2)
    """
    rows = [(str(a), str(b), _number(c)) for a, b, c in links]
    bold = {(str(a), str(b)) for a, b in highlighted}
    names = sorted({n for a, b, _ in rows for n in (a, b)} | {n for p in bold for n in p})
    if positions is None or any(n not in positions for n in names):
        positions = layout(names, [(a, b) for a, b, _ in rows] + sorted(bold))
    figure = go.Figure()
    drawn = {(a, b): c for a, b, c in rows}
    for a, b in sorted(bold - set(drawn)):
        drawn[(a, b)] = math.nan
    label_x, label_y, label_text, hover, arrows = [], [], [], [], []
    for (a, b), cost in sorted(drawn.items()):
        (x0, y0), (x1, y1) = positions[a], positions[b]
        strong = (a, b) in bold
        arrows.append(dict(  # set at once below: plotly re-validates them on each add
            x=x1, y=y1, ax=x0, ay=y0, xref="x", yref="y", axref="x", ayref="y", text="",
            showarrow=True, arrowhead=2, arrowsize=1.1, arrowwidth=3.5 if strong else 1.5,
            arrowcolor="#d62728" if strong else "#8c8c8c", standoff=11, startstandoff=11))
        length = math.hypot(x1 - x0, y1 - y0) or 1.0
        shift = 0.08 * length  # to the left of the direction: a → b and b → a apart
        label_x.append((x0 + x1) / 2 - (y1 - y0) / length * shift)
        label_y.append((y0 + y1) / 2 + (x1 - x0) / length * shift)
        label_text.append(cost_text(cost) if not math.isnan(cost) else "")
        hover.append(f"{_node_text(a)} → {_node_text(b)}, {cost_text(cost)}")
    figure.add_trace(go.Scatter(
        x=label_x, y=label_y, mode="text", text=label_text, name="costs", hoverinfo="text",
        hovertext=hover, textfont=dict(size=12, color="#333")))
    for role in ROLES:
        members = [n for n in names if role_of(n) == role]
        if members:
            colour, symbol, size, _, name = _NODE_STYLES[role]
            figure.add_trace(go.Scatter(
                x=[positions[n][0] for n in members], y=[positions[n][1] for n in members],
                mode="markers+text", name=name, text=[_node_text(n) for n in members],
                textposition="top center", textfont=dict(size=13, color="#111"),
                hoverinfo="text", hovertext=[f"{_node_text(n)} · {role}" for n in members],
                marker=dict(color=colour, symbol=symbol, size=size + 4)))
    xs = [positions[n][0] for n in names] or [0.0]
    ys = [positions[n][1] for n in names] or [0.0]
    pad = max(1.0, 0.2 * max(max(xs) - min(xs), max(ys) - min(ys)))
    axis = dict(visible=False, showgrid=False, zeroline=False)
    figure.update_layout(
        annotations=arrows,
        height=360, margin=dict(l=0, r=0, t=10, b=0), showlegend=False, plot_bgcolor="white",
        paper_bgcolor="white", hovermode="closest",
        hoverlabel=dict(bgcolor="white", font=dict(size=13, color="#111")),
        xaxis=dict(axis, range=[min(xs) - pad, max(xs) + pad]),
        yaxis=dict(axis, range=[min(ys) - pad, max(ys) + pad], scaleanchor="x", scaleratio=1))
    return figure


# -- what is in view ----------------------------------------------------------------------


def matching(nodes: Iterable[str], query: str) -> list[str]:
    """The ``nodes`` whose id contains ``query`` (case-insensitive), sorted; none for an empty
    query.

    >>> matching(["t0.1", "s0.1.0.2", "T9"], " t "), matching(["a"], "")
    (['T9', 't0.1'], [])
    """
    wanted = query.strip().casefold()
    return sorted(n for n in nodes if wanted and wanted in n.casefold())


def neighbourhood(node: str, links: Iterable[Sequence[object]]) -> set[str]:
    """``node`` and every node linked to it (either direction) by one of ``links``.

    >>> sorted(neighbourhood("b", [("a", "b", 1.0), ("b", "c", 2.0), ("c", "d", 3.0)]))
    ['a', 'b', 'c']
    """
    found = {node}
    for src, dst, *_ in links:
        if node in (str(src), str(dst)):
            found.update((str(src), str(dst)))
    return found


def in_view(frame: pd.DataFrame, nodes: set[str] | None) -> pd.DataFrame:
    """The links of ``frame`` (``src``, ``dst``) with an end among ``nodes``; all when ``None``.

    >>> frame = pd.DataFrame({"src": ["a", "b"], "dst": ["b", "c"]})
    >>> in_view(frame, {"c"}).values.tolist(), len(in_view(frame, None))
    ([['b', 'c']], 2)
    """
    if nodes is None:
        return frame
    return frame[frame["src"].isin(nodes) | frame["dst"].isin(nodes)]


# -- what was clicked ---------------------------------------------------------------------

#: Columns of the table of a clicked node or link (one row per directed link).
DETAIL_COLUMNS = ["from", "to", "state", "cost (ms)", "live copies", "died in batch"]


@dataclass(frozen=True)
class Details:
    """What the map says about a clicked node or link.

    ``subject`` is the node id, or the link's two ends (plain lake text: the page renders it
    through ``lakeview.text``); ``facts`` are ``(label, value)`` pairs made of words and
    numbers only, never lake text; ``table`` has :data:`DETAIL_COLUMNS`. ``found`` is False
    when the node or link is no longer on the map.
    """

    kind: str
    subject: tuple[str, ...]
    found: bool
    facts: tuple[tuple[str, str], ...]
    table: pd.DataFrame


def clicked(selection: Mapping[str, object] | None) -> tuple[str, ...] | None:
    """``("node", id)`` or ``("link", a, b)`` of the first clicked map marker in a plotly
    ``selection`` (``{"points": [{"customdata": [...]}, ...]}``), ``None`` if there is none.

    >>> clicked({"points": [{"x": 1.0}, {"customdata": ["node", "t0.1"]}]})
    ('node', 't0.1')
    >>> clicked({"points": [{"customdata": ["link", "a", "b"]}]}), clicked({"points": []})
    (('link', 'a', 'b'), None)
    """
    points = (selection or {}).get("points") or []
    for point in points:  # type: ignore[attr-defined]
        data = point.get("customdata") if isinstance(point, Mapping) else None
        if not isinstance(data, list | tuple) or not data:
            continue
        if (data[0], len(data)) in (("node", 2), ("link", 3)):
            return tuple(str(part) for part in data)
    return None


def _rows(edges: pd.DataFrame, dead: pd.DataFrame, pairs: set[tuple[str, str]] | None,
          node: str | None = None) -> list[list[object]]:
    """Table rows of the live and dead links among ``pairs`` (or touching ``node``)."""
    def chosen(frame: pd.DataFrame) -> pd.DataFrame:
        if frame.empty:
            return frame
        src, dst = frame["src"].astype(str), frame["dst"].astype(str)
        if node is not None:
            return frame[(src == node) | (dst == node)]
        keys = pd.Series(list(zip(src, dst, strict=True)), index=frame.index)
        return frame[keys.isin(pairs or set())]

    rows: list[list[object]] = []
    for src, dst, cost, copies in chosen(edges)[["src", "dst", "cost", "instances"]].itertuples(
            index=False):
        rows.append([str(src), str(dst), "live", _number(cost), int(copies), None])
    for src, dst, cost, death, batch in chosen(dead)[
            ["src", "dst", "cost", "death", "deleted_batch"]].itertuples(index=False):
        rows.append([str(src), str(dst), _death_word(str(death)), _number(cost), 0,
                     None if pd.isna(batch) else int(batch)])
    return rows


#: Order of the rows of a details table: live links first.
_STATE_ORDER = {"live": 0, "deleted": 1, "expired": 2, "no link": 3}


def _table(rows: list[list[object]]) -> pd.DataFrame:
    rows = sorted(rows, key=lambda r: (_STATE_ORDER.get(str(r[2]), 4), r[0], r[1]))
    frame = pd.DataFrame(rows, columns=DETAIL_COLUMNS)
    return frame.astype({"cost (ms)": "float64", "live copies": "int64",
                         "died in batch": "Int64"})


def node_details(node: str, edges: pd.DataFrame, dead: pd.DataFrame) -> Details:
    """Details of ``node``: its role, its live links in and out with their costs and its
    recently dead links (``edges`` as ``lakeview.live_edges``, ``dead`` as
    ``lakeview.deleted_links``).

    >>> edges = pd.DataFrame({"src": ["a", "b"], "dst": ["b", "a"], "cost": [10.0, 10.0],
    ...                       "instances": [2, 1]})
    >>> dead = pd.DataFrame(columns=["src", "dst", "cost", "death", "deleted_batch"])
    >>> found = node_details("a", edges, dead)
    >>> dict(found.facts)["live links out"], found.table["to"].tolist()
    ('1', ['b', 'a'])
    """
    table = _table(_rows(edges, dead, None, node))
    live = table[table["state"] == "live"]
    facts = (
        ("role", f"{role_of(node)} node"),
        ("live links out", str(int((live["from"] == node).sum()))),
        ("live links in", str(int((live["to"] == node).sum()))),
        ("live neighbours", str(len((set(live["from"]) | set(live["to"])) - {node}))),
        ("recently dead links", str(int((table["state"] != "live").sum()))),
    )
    return Details("node", (node,), not table.empty, facts, table)


def link_details(a: str, b: str, edges: pd.DataFrame, dead: pd.DataFrame) -> Details:
    """Details of the link between ``a`` and ``b``: both directions (live with their cost and
    number of live copies, recently dead with the batch, or no link), and its kind.

    >>> edges = pd.DataFrame({"src": ["a"], "dst": ["b"], "cost": [2.0], "instances": [2]})
    >>> dead = pd.DataFrame({"src": ["b"], "dst": ["a"], "cost": [2.0], "death": ["expired"],
    ...                      "deleted_batch": [4]})
    >>> found = link_details("a", "b", edges, dead)
    >>> found.table[["from", "state", "live copies"]].values.tolist()
    [['a', 'live', 2], ['b', 'expired', 0]]
    >>> dict(found.facts)["recently died"]
    'expired in batch 4 (one direction)'
    """
    directions = [(a, b)] if a == b else [(a, b), (b, a)]
    rows = _rows(edges, dead, set(directions))
    have = {(r[0], r[1]) for r in rows}
    rows += [[src, dst, "no link", math.nan, 0, None] for src, dst in directions
             if (src, dst) not in have]
    table = _table(rows)
    live = table[table["state"] == "live"]
    gone = table[table["state"].isin(["deleted", "expired"])]
    costs = sorted({cost_text(c) for c in live["cost (ms)"]})
    live_ways = len(set(zip(live["from"], live["to"], strict=True)))
    facts = [
        ("kind", f"{link_kind(a, b) or 'other'} link"),
        ("cost", " or ".join(costs) if costs else "–"),
        ("live directions", f"{live_ways} of {len(directions)}"),
        ("live copies", str(int(live["live copies"].sum()))),
    ]
    if not gone.empty:
        deaths = sorted({f"{s} in batch {'?' if pd.isna(n) else int(n)}"
                         for s, n in zip(gone["state"], gone["died in batch"], strict=True)})
        ways = "one direction" if len(gone) == 1 and len(directions) == 2 else (
            "both directions" if len(gone) == 2 else "")
        facts.append(("recently died", "; ".join(deaths) + (f" ({ways})" if ways else "")))
    return Details("link", (a, b), bool(len(live) or len(gone)), tuple(facts), table)


def details_of(picked: Sequence[str], edges: pd.DataFrame, dead: pd.DataFrame) -> Details | None:
    """:func:`node_details` or :func:`link_details` of what :func:`clicked` returned."""
    if picked and picked[0] == "node" and len(picked) == 2:
        return node_details(picked[1], edges, dead)
    if picked and picked[0] == "link" and len(picked) == 3:
        return link_details(picked[1], picked[2], edges, dead)
    return None


def selection_details(selection: Mapping[str, object] | None, edges: pd.DataFrame,
                      dead: pd.DataFrame) -> Details | None:
    """The details panel of a map ``selection`` (the plotly selection state of the chart):
    the clicked node or link, ``None`` when nothing is clicked.

    >>> edges = pd.DataFrame({"src": ["a"], "dst": ["b"], "cost": [10.0], "instances": [1]})
    >>> dead = pd.DataFrame(columns=["src", "dst", "cost", "death", "deleted_batch"])
    >>> selection_details({"points": [{"customdata": ["node", "b"]}]}, edges, dead).facts[0]
    ('role', 'other node')
    """
    picked = clicked(selection)
    return None if picked is None else details_of(picked, edges, dead)


# -- overlays shared with other pages -----------------------------------------------------

#: Where the overlay other pages share with the Network page is kept (``st.session_state``).
OVERLAY_KEY = "map_overlay"


def share_path(label: str, nodes: list[str]) -> None:
    """Put a path (its ``nodes`` in order, e.g. a route or a why-witness) on the network map,
    described by ``label``; it replaces any other shared overlay.

    >>> share_path("Why", ["a", "b"]); shared_overlay()
    {'kind': 'path', 'label': 'Why', 'nodes': ['a', 'b']}
    """
    st.session_state[OVERLAY_KEY] = {"kind": "path", "label": str(label),
                                     "nodes": [str(n) for n in nodes]}


def share_losses(label: str, links: list[tuple[str, str]]) -> None:
    """Put a set of lost links ``(src, dst)`` (e.g. a what-if) on the network map, described
    by ``label``; it replaces any other shared overlay.

    >>> share_losses("What if", [("a", "b")]); shared_overlay()["links"]
    [('a', 'b')]
    """
    st.session_state[OVERLAY_KEY] = {"kind": "losses", "label": str(label),
                                     "links": [(str(a), str(b)) for a, b in links]}


def shared_overlay() -> dict | None:
    """The overlay another page shared (:func:`share_path`, :func:`share_losses`), ``None``
    when there is none or it is malformed.

    >>> share_path("Why", ["a"]); clear_overlay(); shared_overlay() is None
    True
    """
    found = st.session_state.get(OVERLAY_KEY)
    if not isinstance(found, Mapping):
        return None
    label = str(found.get("label", ""))
    if found.get("kind") == "path" and isinstance(found.get("nodes"), list | tuple):
        return {"kind": "path", "label": label, "nodes": [str(n) for n in found["nodes"]]}
    links = found.get("links")
    if found.get("kind") == "losses" and isinstance(links, list | tuple):
        pairs = [tuple(link) for link in links if isinstance(link, list | tuple)]
        return {"kind": "losses", "label": label,
                "links": [(str(p[0]), str(p[1])) for p in pairs if len(p) >= 2]}
    return None


def clear_overlay() -> None:
    """Remove the shared overlay from the map.

    >>> share_losses("What if", []); clear_overlay(); shared_overlay() is None
    True
    """
    st.session_state.pop(OVERLAY_KEY, None)


# -- a route drawn as a path, its labels apart ----------------------------------------------

#: A label's height and one character's width, in pixels, at the route figure's font size.
LABEL_HEIGHT_PX, CHAR_WIDTH_PX = 16.0, 7.5
#: Directions a label is tried in around its anchor: above, below, right, left, then diagonals.
_DIRECTIONS = ((0, 1), (0, -1), (1, 0), (-1, 0), (1, 1), (-1, 1), (1, -1), (-1, -1))
#: Height and assumed width (pixels) of the route figure's plotting area.
_ROUTE_HEIGHT, _ROUTE_WIDTH = 460, 760


def _overlaps(a: tuple[float, float, float, float], b: tuple[float, float, float, float]
              ) -> bool:
    """Whether two boxes ``(x0, y0, x1, y1)`` overlap (touching edges do not, nor a rounding
    error's worth of overlap)."""
    tol = 1e-9 * max(a[2] - a[0], a[3] - a[1], b[2] - b[0], b[3] - b[1], 1e-300)
    return (a[0] < b[2] - tol and b[0] < a[2] - tol and a[1] < b[3] - tol
            and b[1] < a[3] - tol)


def _crosses(box: tuple[float, float, float, float],
             segment: tuple[tuple[float, float], tuple[float, float]]) -> bool:
    """Whether a line ``segment`` passes through the inside of ``box`` (Liang–Barsky clipping
    against the box shrunk by a rounding error's worth; grazing an edge does not count)."""
    (x0, y0), (x1, y1) = segment
    tol = 1e-9 * max(box[2] - box[0], box[3] - box[1], 1e-300)
    low, high = 0.0, 1.0
    dx, dy = x1 - x0, y1 - y0
    for p, q in ((-dx, x0 - box[0] - tol), (dx, box[2] - tol - x0),
                 (-dy, y0 - box[1] - tol), (dy, box[3] - tol - y0)):
        if p == 0:
            if q <= 0:
                return False
            continue
        t = q / p
        if p < 0:
            low = max(low, t)
        else:
            high = min(high, t)
        if low >= high:
            return False
    return True


def declutter(
    anchors: Sequence[tuple[float, float]],
    sizes: Sequence[tuple[float, float]],
    clearance: float = 0.0,
    step: float | None = None,
    rings: int = 12,
    segments: Sequence[tuple[tuple[float, float], tuple[float, float]]] = (),
) -> list[tuple[float, float]]:
    """Centres for labels of box ``sizes`` ``(width, height)`` next to their ``anchors`` so
    that no two labels overlap, no label covers an anchor (a square of half-side
    ``clearance`` around each) and no line of ``segments`` (e.g. the links drawn) runs
    through a label. Labels are placed in order, each at the first free spot among
    :data:`_DIRECTIONS` (above, below, right, left, diagonals), ``clearance`` off its anchor,
    then ``step`` (default: the label's height) further out per ring; a label with no free
    spot within ``rings`` goes above its anchor, past every other label, node and line.

    >>> declutter([(0.0, 0.0), (0.0, 0.0)], [(2.0, 1.0), (2.0, 1.0)])
    [(0.0, 0.5), (0.0, -0.5)]
    >>> declutter([(0.0, 0.0), (0.5, 0.0)], [(2.0, 1.0), (2.0, 1.0)], clearance=0.25)
    [(0.0, 0.75), (0.5, -0.75)]
    >>> declutter([(0.0, 0.0)], [(2.0, 1.0)], segments=[((0.0, 0.0), (0.0, 5.0))])  # not on it
    [(0.0, -0.5)]
    """
    points = [(float(x), float(y)) for x, y in anchors]
    marks = [(x - clearance, y - clearance, x + clearance, y + clearance) for x, y in points]
    lines = [((float(a[0]), float(a[1])), (float(b[0]), float(b[1]))) for a, b in segments]
    placed: list[tuple[float, float, float, float]] = []
    centres: list[tuple[float, float]] = []
    for (x, y), (width, height) in zip(points, sizes, strict=True):
        half_w, half_h = width / 2, height / 2
        further = height if step is None else step
        chosen = None
        for ring in range(rings + 1):
            for dx, dy in _DIRECTIONS:
                cx = x + dx * (half_w + clearance + ring * further)
                cy = y + dy * (half_h + clearance + ring * further)
                box = (cx - half_w, cy - half_h, cx + half_w, cy + half_h)
                if not any(_overlaps(box, other) for other in placed + marks) \
                        and not any(_crosses(box, line) for line in lines):
                    chosen = (cx, cy)
                    break
            if chosen is not None:
                break
        if chosen is None:  # crowded out: above everything placed so far
            top = max([y, *(box[3] for box in placed + marks),
                       *(end[1] for line in lines for end in line)])
            chosen = (x, top + half_h)
        placed.append((chosen[0] - half_w, chosen[1] - half_h,
                       chosen[0] + half_w, chosen[1] + half_h))
        centres.append((chosen[0] + 0.0, chosen[1] + 0.0))
    return centres


@dataclass(frozen=True)
class RouteLabel:
    """A label of :func:`route_figure`: a router's id or a hop's cost (``kind`` ``router`` or
    ``cost``), the point it names, where its centre goes, its box ``(width, height)`` and the
    data units a pixel of the figure spans (``unit``)."""

    kind: str
    text: str
    anchor: tuple[float, float]
    centre: tuple[float, float]
    size: tuple[float, float]
    unit: float


def route_labels(
    hops: Sequence[tuple[str, str]],
    costs: Mapping[tuple[str, str], float],
    positions: Mapping[str, tuple[float, float]],
    names: Iterable[str] = (),
    others: Iterable[tuple[str, str]] = (),
) -> list[RouteLabel]:
    """The labels of a route drawn by :func:`route_figure`: each router once (in route
    order), then each hop's cost at its middle, sized for the figure's scale (every node of
    ``names`` and the route in view) and spread by :func:`declutter` so no two overlap and
    no hop or other link drawn (``others``) runs through one.

    >>> spots = {"a": (0.0, 0.0), "b": (0.001, 0.0)}  # two routers a few pixels apart
    >>> labels = route_labels([("a", "b")], {("a", "b"): 2.0}, spots)
    >>> [(label.text, "above" if label.centre[1] > 0 else "below") for label in labels]
    [('a', 'above'), ('b', 'below'), ('2 ms', 'above')]
    """
    routers = list(dict.fromkeys(str(n) for hop in hops for n in hop))
    placed = [positions[n] for n in {*routers, *(str(n) for n in names)}] or [(0.0, 0.0)]
    xs, ys = [p[0] for p in placed], [p[1] for p in placed]
    span = max(max(xs) - min(xs), max(ys) - min(ys), 1.0)
    unit = max((max(ys) - min(ys) + 0.2 * span) / _ROUTE_HEIGHT,
               (max(xs) - min(xs) + 0.2 * span) / _ROUTE_WIDTH, 1e-9)  # data units a pixel
    texts = [("router", _node_text(n), positions[n]) for n in routers]
    texts += [("cost", cost_text(costs.get((a, b), math.nan)),
               ((positions[a][0] + positions[b][0]) / 2, (positions[a][1] + positions[b][1]) / 2))
              for a, b in hops]
    sizes = [((len(t) + 1) * CHAR_WIDTH_PX * unit, LABEL_HEIGHT_PX * unit) for _, t, _ in texts]
    drawn = [(positions[a], positions[b]) for a, b in [*hops, *others]
             if a in positions and b in positions]
    centres = declutter([a for *_, a in texts], sizes, clearance=6 * unit, segments=drawn)
    return [RouteLabel(kind, t, a, c, size, unit)
            for (kind, t, a), c, size in zip(texts, centres, sizes, strict=True)]


def route_figure(
    route: Sequence[tuple[str, str]],
    costs: Mapping[tuple[str, str], float],
    positions: Mapping[str, tuple[float, float]] | None = None,
    others: Iterable[tuple[str, str]] = (),
    dead: Mapping[tuple[str, str], str] | None = None,
) -> go.Figure:
    """The links of a ``route`` (or of any witness: ``(src, dst)`` pairs, in order) drawn as a
    thick red path where they sit on the network (``positions`` of the whole network, else a
    layout of their own), the ``others`` (e.g. other witnesses' links) as thin grey lines
    under it, ``dead`` links of the route orange with their death in the hover text.

    Only the route's routers are labelled, with their id, and each hop with its cost
    (``costs``); the labels are spread apart by :func:`declutter` (sized for the figure's
    scale, so a route crossing the network keeps its stub clusters readable), a thin line
    leading from a moved label to its node. Every node hovers with its id.

    >>> fig = route_figure([("a", "b"), ("b", "c")], {("a", "b"): 1.0, ("b", "c"): 2.5})
    >>> list(_trace_named(fig, "costs").text), list(_trace_named(fig, "routers").text)
    (['1 ms', '2.5 ms'], ['a', 'b', 'c'])
    """
    hops = [(str(a), str(b)) for a, b in route]
    dead = {(str(a), str(b)): str(w) for (a, b), w in (dead or {}).items()}
    rest = sorted({(str(a), str(b)) for a, b in others} - set(hops))
    routers = list(dict.fromkeys(n for hop in hops for n in hop))
    names = sorted(set(routers) | {n for pair in rest for n in pair})
    if positions is None or any(n not in positions for n in names):
        positions = layout(names, hops + rest)
    figure = go.Figure()
    xs_rest, ys_rest = _segments(rest, positions)
    if len(xs_rest):
        figure.add_trace(go.Scatter(x=xs_rest, y=ys_rest, mode="lines", name="other links",
                                    hoverinfo="skip", line=dict(color="#b0b0b0", width=1.2)))
    xs = [positions[n][0] for n in names] or [0.0]
    ys = [positions[n][1] for n in names] or [0.0]
    span = max(max(xs) - min(xs), max(ys) - min(ys), 1.0)
    labels = route_labels(hops, costs, positions, names, rest)
    unit = labels[0].unit if labels else 1.0
    arrows = []  # set at once below: plotly re-validates every annotation on each add
    for a, b in hops:
        (x0, y0), (x1, y1) = positions[a], positions[b]
        short = math.hypot(x1 - x0, y1 - y0) < 40 * unit  # inside a stub: a smaller head
        arrows.append(dict(
            x=x1, y=y1, ax=x0, ay=y0, xref="x", yref="y", axref="x", ayref="y", text="",
            showarrow=True, arrowhead=2, arrowsize=0.7 if short else 1.1,
            arrowwidth=2.5 if short else 3.5,
            arrowcolor=_DEAD_STYLES["deleted"][0] if (a, b) not in dead else _LOST,
            standoff=6 if short else 8, startstandoff=6 if short else 8))
    anchors = [label.anchor for label in labels]
    centres = [label.centre for label in labels]
    sizes = [label.size for label in labels]
    router_text = [label.text for label in labels if label.kind == "router"]
    cost_texts = [label.text for label in labels if label.kind == "cost"]
    leaders_x: list[float] = []
    leaders_y: list[float] = []
    for (ax, ay), (cx, cy), (width, height) in zip(anchors, centres, sizes, strict=True):
        gap = math.hypot(max(abs(cx - ax) - width / 2, 0.0), max(abs(cy - ay) - height / 2, 0.0))
        if gap > 9 * unit:  # moved past the first ring: a line leads back
            leaders_x += [ax, cx, math.nan]
            leaders_y += [ay, cy, math.nan]
    if leaders_x:
        figure.add_trace(go.Scatter(x=leaders_x, y=leaders_y, mode="lines", name="leaders",
                                    hoverinfo="skip", line=dict(color="#999999", width=0.8)))
    placed_names = [n for n in names if n not in set(routers)]
    if placed_names:
        figure.add_trace(go.Scatter(
            x=[positions[n][0] for n in placed_names], y=[positions[n][1] for n in placed_names],
            mode="markers", name="other nodes", hoverinfo="text",
            hovertext=[_node_text(n) for n in placed_names],
            marker=dict(color="#bbbbbb", size=6)))
    figure.add_trace(go.Scatter(
        x=[positions[n][0] for n in routers], y=[positions[n][1] for n in routers],
        mode="markers", name="route nodes", hoverinfo="text",
        hovertext=[f"{_node_text(n)} · {role_of(n)}" for n in routers],
        marker=dict(color=[_NODE_STYLES[role_of(n)][0] for n in routers],
                    symbol=[_NODE_STYLES[role_of(n)][1] for n in routers], size=12)))
    count = len(router_text)
    figure.add_trace(go.Scatter(
        x=[c[0] for c in centres[:count]], y=[c[1] for c in centres[:count]], mode="text",
        name="routers", text=router_text, hoverinfo="skip",
        textfont=dict(size=13, color="#111")))
    figure.add_trace(go.Scatter(
        x=[c[0] for c in centres[count:]], y=[c[1] for c in centres[count:]], mode="text",
        name="costs", text=cost_texts, hoverinfo="text",
        hovertext=[f"{_node_text(a)} → {_node_text(b)}, {cost_text(costs.get((a, b), math.nan))}"
                   + (f", {dead[a, b]}" if (a, b) in dead else "") for a, b in hops],
        textfont=dict(size=11, color="#8c1a1a")))
    box_x = xs + [c[0] + s[0] / 2 for c, s in zip(centres, sizes, strict=True)] \
        + [c[0] - s[0] / 2 for c, s in zip(centres, sizes, strict=True)]
    box_y = ys + [c[1] + s[1] / 2 for c, s in zip(centres, sizes, strict=True)] \
        + [c[1] - s[1] / 2 for c, s in zip(centres, sizes, strict=True)]
    pad = 0.05 * span
    axis = dict(visible=False, showgrid=False, zeroline=False)
    figure.update_layout(
        annotations=arrows,
        height=_ROUTE_HEIGHT + 20, margin=dict(l=0, r=0, t=10, b=10), showlegend=False,
        plot_bgcolor="white", paper_bgcolor="white", hovermode="closest",
        hoverlabel=dict(bgcolor="white", font=dict(size=13, color="#111")),
        xaxis=dict(axis, range=[min(box_x) - pad, max(box_x) + pad]),
        yaxis=dict(axis, range=[min(box_y) - pad, max(box_y) + pad], scaleanchor="x",
                   scaleratio=1))
    return figure


def _trace_named(figure: go.Figure, name: str) -> go.Scatter:
    """The trace of ``figure`` called ``name``."""
    (found,) = [t for t in figure.data if t.name == name]
    return found
