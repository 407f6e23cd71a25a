"""Why, and why not: what a view's answer rests on, or why a pair is missing from it.

Pick a question (a reachable pair, a cheapest path, …, a region member) and its two ends. For a
tuple the view holds, the page shows its minimal witnesses (each a set of links that alone keeps
it: a route with its costs; for a region member, a chain of triggered sensors from the seed) and
the critical ones (losing any one removes the tuple), drawn where they sit in the network or on
the sensor grid; the chosen route reads hop by hop (step, link, cost, cumulative cost), however
far apart its ends, and is drawn as a path naming only its routers. For a pair of nodes the
view does not hold, it answers *why not* from the live links and the recently dead ones
(:func:`aspen.views.why_not.why_not`). The question and its answer stay in
``st.session_state`` until the operator asks another one.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any, NamedTuple, TypeVar

import hops
import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from lakeview import (
    DEATH_STYLES,
    MAX_DRAWN_EDGES,
    NO_REGION,
    PROVENANCE_VIEWS,
    AspenError,
    Explanation,
    Settings,
    WhyNot,
    _quote,
    base_tuple_of,
    cost_text,
    current_lake,
    deleted_links,
    ingest_batches,
    link_of,
    live_edges,
    load_provenance,
    plain,
    provenance_versions,
    read_latest,
    read_view_pairs,
    recent_batches,
    route_through,
    sensor_chain,
    sensor_map,
    table_version,
    text,
    why_not,
    witness_dot,
)

#: The questions, in plain words, by the view that answers them.
VIEW_LABELS: dict[str, str] = {
    "reachable": "Reachable pair",
    "cheapest_path": "Cheapest path",
    "fewest_hops": "Fewest-hop path",
    "min_cost": "Cheapest cost",
    "min_hops": "Fewest hops",
    "shortest_cheapest_path": "Cheapest and shortest paths",
    "active_region": "Region member",
}
#: The views this page explains: those whose tuples carry provenance to explain.
WHY_VIEWS = tuple(view for view in VIEW_LABELS if view in PROVENANCE_VIEWS)
#: What losing a critical link removes, by view.
LOST_WHAT: dict[str, str] = {
    "reachable": "the pair",
    "cheapest_path": "this path",
    "fewest_hops": "this path",
    "min_cost": "this cheapest cost",
    "min_hops": "this hop count",
    "shortest_cheapest_path": "these paths",
}
#: Witnesses shown per answer, raised step by step when more exist.
LIMITS = (20, 100, 500)
#: Default N of "links that died in the last N ingest batches".
DEFAULT_RECENT = 3
#: Relations whose tuples die with a failed sensor.
SENSOR_RELATIONS = ("sensor", "triggered")
#: The tables a why-not answer reads (their versions key the remembered answer).
LINK_TABLES = ("link", "variables", "ingest_files")
#: Keys in ``st.session_state``: the remembered answer, the witness limit of the question and
#: the network's map layout.
ANSWER_KEY, LIMIT_KEY, POSITIONS_KEY = "why_answer", "why_limit", "why_positions"

T = TypeVar("T")


# -- the network: live links and recently dead ones ------------------------------------------


class Network(NamedTuple):
    """The live links (``src``, ``dst``, ``cost``: the cheapest live instance per pair), the
    ``variables`` registry (``None`` without one), every node on a live or dead link, and what
    the map layout of the network is kept by (the lake and its ``link`` table's version)."""

    live: pd.DataFrame
    registry: pd.DataFrame | None
    nodes: list[str]
    layout_key: Hashable = None


def read_network(settings: Settings) -> Network:
    """The network as the ``link`` table and the ``variables`` registry give it."""
    snapshot = read_latest(settings, "link", ("src", "dst", "cost"))
    if snapshot is not None and snapshot.problem:
        st.warning(snapshot.problem)
    links = snapshot.rows if snapshot is not None and not snapshot.problem else pd.DataFrame()
    live = live_edges(links)[["src", "dst", "cost"]]
    found = read_latest(settings, "variables")
    registry = (
        found.rows
        if found is not None and not found.problem
        and {"relation", "values", "deleted_batch"} <= set(found.rows)
        else None
    )
    nodes = set(live["src"]) | set(live["dst"])
    if registry is not None:  # a node on dead links only is still one to ask about
        every = deleted_links(registry, set(registry["deleted_batch"].dropna().astype("int64")))
        nodes |= set(every["src"]) | set(every["dst"])
    version = snapshot.version if snapshot is not None else None
    return Network(live, registry, sorted(nodes), (settings.lake, version))


def dead_links_of(settings: Settings, network: Network, count: int) -> pd.DataFrame:
    """The links that died (deleted or expired) in the last ``count`` ingest batches."""
    if network.registry is None:
        return deleted_links(pd.DataFrame(), [])
    batches = recent_batches(ingest_batches(settings, network.registry), count)
    return deleted_links(network.registry, batches)


# -- remembering the question and its answer -------------------------------------------------


def remember(key: Hashable, compute: Callable[[], T]) -> T:
    """The answer to ``key``: kept in ``st.session_state``, computed (with a spinner) only when
    the question or the lake changed."""
    kept = st.session_state.get(ANSWER_KEY)
    if kept is not None and kept[0] == key:
        return kept[1]
    with st.spinner("Working out the answer…"):
        value = compute()
    st.session_state[ANSWER_KEY] = (key, value)
    return value


def witness_limit(question: Hashable) -> int:
    """How many witnesses to show for ``question``: the first limit for a new question, a
    raised one only while the operator stays on the question it was raised for."""
    kept = st.session_state.get(LIMIT_KEY)
    if kept is None or kept[0] != question:
        kept = st.session_state[LIMIT_KEY] = (question, LIMITS[0])
    return kept[1]


def _raise_limit(question: Hashable, limit: int) -> None:
    st.session_state[LIMIT_KEY] = (question, limit)


def more_button(question: Hashable, limit: int, truncated: bool) -> None:
    """When an answer has more witnesses than shown, a button to show more of them."""
    if not truncated:
        return
    larger = [step for step in LIMITS if step > limit]
    if not larger:
        st.caption(f"More witnesses exist; the page shows at most {limit}.")
        return
    st.button(
        f"More exist: show up to {larger[0]} witnesses",
        key="why_more",
        on_click=_raise_limit,
        args=(question, larger[0]),
    )


# -- words -----------------------------------------------------------------------------------


def route_words(nodes: Iterable[object]) -> str:
    """A route as Markdown: ``a`` → ``b`` → ``c`` (each id through :func:`text`)."""
    return " → ".join(text(node) for node in nodes)


def _itself(src: object, dst: object) -> str:
    return "itself" if src == dst else text(dst)


def heading(view: str, values: tuple) -> str:
    """The question a view tuple answers, in words (Markdown; ids through :func:`text`).

    >>> heading("reachable", ("a", "c"))
    'Why can `a` reach `c`?'
    """
    if view == "active_region":
        return f"Why is sensor {text(values[1])} in region {text(values[0])}?"
    src, dst = values[0], values[1]
    ends = f"from {text(src)} to {text(dst)}"
    if view == "cheapest_path":
        return (f"Why is {route_words(values[2])} the cheapest path {ends} "
                f"({cost_text(float(values[3]))})?")
    if view == "fewest_hops":
        return f"Why is {route_words(values[2])} a fewest-hop path {ends} ({_hops(values[3])})?"
    if view == "min_cost":
        return f"Why does the cheapest route {ends} cost {cost_text(float(values[2]))}?"
    if view == "min_hops":
        return f"Why does the shortest route {ends} take {_hops(values[2])}?"
    if view == "shortest_cheapest_path":
        return (f"Why is {route_words(values[2])} ({cost_text(float(values[3]))}) the cheapest "
                f"and {route_words(values[4])} ({_hops(values[5])}) the shortest route {ends}?")
    return f"Why can {text(src)} reach {_itself(src, dst)}?"


def why_not_heading(view: str, src: str, dst: str) -> str:
    """The why-not question of a pair, in words (Markdown)."""
    if view == "reachable":
        return f"Why can't {text(src)} reach {_itself(src, dst)}?"
    return f"Why is there no path from {text(src)} to {_itself(src, dst)}?"


def _hops(count: object) -> str:
    return f"{count} hop" if str(count) == "1" else f"{count} hops"


def link_words(src: str, dst: str, costs: dict[tuple[str, str], float],
               name: Callable[[str], str] = str) -> str:
    """``a → b (10 ms)``: plain text for a dataframe cell, or Markdown with ``name=text``."""
    cost = cost_text(costs.get((src, dst), float("nan")))
    return f"{name(src)} → {name(dst)} ({cost})"


# -- drawing ---------------------------------------------------------------------------------


def route_dot(
    links: Iterable[tuple[str, str, float]],
    highlighted: Iterable[tuple[str, str]] = (),
    dead: dict[tuple[str, str], tuple[str, int | None]] | None = None,
    missing: Iterable[tuple[str, str]] = (),
    ends: Iterable[str] = (),
) -> str:
    """A DOT digraph of ``(src, dst, cost)`` links labelled with their costs: ``highlighted``
    ones bold red, ``dead`` ones dashed (with their death and batch), ``missing`` links dotted
    green, the ``ends`` of the question filled."""
    bold, dead = set(highlighted), dead or {}
    lines = ["digraph why {", "  rankdir=LR;", "  node [shape=circle];"]
    lines += [f"  {_quote(node)} [style=filled, fillcolor=gold];" for node in dict.fromkeys(ends)]
    for src, dst, cost in sorted(set(links), key=lambda link: (link[0], link[1])):
        label = cost_text(cost)
        if (src, dst) in dead:
            death, batch = dead[src, dst]
            style = DEATH_STYLES.get(death, DEATH_STYLES["deleted"]) + ", penwidth=2"
            label += f", {death}" + (f" b{batch}" if batch is not None else "")
        elif (src, dst) in bold:
            style = "color=red, penwidth=2.5"
        else:
            style = "color=gray40"
        lines.append(f"  {_quote(src)} -> {_quote(dst)} [{style}, label={_quote(label)}];")
    for src, dst in missing:
        lines.append(f"  {_quote(src)} -> {_quote(dst)} "
                     '[style=dotted, color=forestgreen, fontcolor=forestgreen, label="missing"];')
    lines.append("}")
    return "\n".join(lines)


def network_positions(topomap: Any, network: Network) -> dict[str, tuple[float, float]]:
    """Where each node sits on the Network page's map (the layout of the whole live network),
    kept in ``st.session_state`` until the ``link`` table changes."""
    kept = st.session_state.get(POSITIONS_KEY)
    if kept is not None and kept[0] == network.layout_key:
        return kept[1]
    triples = list(network.live.itertuples(index=False, name=None))
    positions = topomap.layout(network.nodes, triples)
    st.session_state[POSITIONS_KEY] = (network.layout_key, positions)
    return positions


def draw_route(
    route: list[tuple[str, str]],
    others: list[tuple[str, str]],
    costs: dict[tuple[str, str], float],
    network: Network,
    dead: dict[tuple[str, str], tuple[str, int | None]] | None = None,
    ends: Sequence[str] = (),
) -> None:
    """A route's links (in order) as a path on the network map, only its routers named and
    its labels kept apart (``topomap.route_figure``), the ``others`` grey under it; else a
    Graphviz drawing."""
    try:
        import topomap
    except ImportError:
        links = [(a, b, costs.get((a, b), float("nan"))) for a, b in [*route, *others]]
        st.graphviz_chart(route_dot(links, route, dead, ends=ends))
        return
    positions = network_positions(topomap, network)
    deaths = {pair: f"{death}" + (f" in batch {batch}" if batch is not None else "")
              for pair, (death, batch) in (dead or {}).items()}
    figure = topomap.route_figure(route, costs, positions, others, deaths)
    st.plotly_chart(figure, width="stretch")


def _share(label: str, nodes: list[str]) -> None:
    try:
        import topomap
    except ImportError:
        st.session_state["map_overlay"] = {"kind": "path", "label": label, "nodes": nodes}
        return
    topomap.share_path(label, nodes)


def share_button(label: str, nodes: list[str], key: str) -> None:
    """"Show on the network map": the route as an overlay on the Network page."""
    if len(nodes) < 2:
        return
    if st.button("Show on the network map", key=key, on_click=_share, args=(label, nodes)):
        st.caption("Shared: the Network page shows this route until another is shared.")


# -- why: a pair the view holds --------------------------------------------------------------


def witness_links(witness: list[str]) -> tuple[list[tuple[str, str]], list[str]]:
    """The links of a witness, and its other base tuples (described)."""
    links, others = [], []
    for base in witness:
        link = link_of(base)
        if link is None:
            others.append(base)
        else:
            links.append(link)
    return links, others


def show_pair(view: str, explanation: Explanation, network: Network, index: int) -> None:
    """Witnesses (routes with costs), critical links in words and the witness drawn."""
    src, dst = str(explanation.tuple[0]), str(explanation.tuple[1])
    costs = {(s, d): float(c) for s, d, c in network.live.itertuples(index=False, name=None)}
    rows = []
    for number, witness in enumerate(explanation.witnesses, start=1):
        links, others = witness_links(witness)
        route = route_through(links, src, dst)
        ordered = ([(a, b) for a, b in zip(route, route[1:], strict=False)] if route
                   else sorted(links))
        rows.append({
            "witness": number,
            "route": " → ".join(route) if route else "(not one route)",
            "links": ", ".join([link_words(a, b, costs) for a, b in ordered] + others),
            "size": len(witness),
        })
    st.dataframe(pd.DataFrame(rows, columns=["witness", "route", "links", "size"]),
                 hide_index=True, width="stretch")

    critical_links = [link for t in explanation.critical if (link := link_of(t)) is not None]
    others = [t for t in explanation.critical if link_of(t) is None]
    lost = LOST_WHAT.get(view, "the answer")
    if critical_links:
        words = ", ".join(link_words(a, b, costs, text) for a, b in critical_links)
        st.markdown(f"**Losing any of these links removes {lost}:** {words}")
    elif not others:
        st.markdown(f"**No single lost link removes {lost}:** every link has a way around it.")
    if others:
        st.markdown("**Other base tuples it needs:** " + ", ".join(map(text, others)))

    if not explanation.witnesses:
        return
    shown = st.selectbox(
        "Witness to follow hop by hop", range(1, len(explanation.witnesses) + 1),
        key=f"why_witness_{index}",
    )
    chosen, _ = witness_links(explanation.witnesses[shown - 1])
    route = route_through(chosen, src, dst)
    if route:
        st.dataframe(hops.hop_table(hops.hops_of(route, costs)), hide_index=True,
                     width="stretch")
        chosen = list(zip(route, route[1:], strict=False))
    involved = {link for w in explanation.witnesses for link in witness_links(w)[0]}
    others = sorted(involved - set(chosen))
    if len(involved) > MAX_DRAWN_EDGES:
        others = []
        st.caption(f"{len(involved)} links are too many to draw: only this witness is drawn.")
    draw_route(chosen, others, costs, network, ends=(src, dst))
    st.caption("Red: the links of the witness chosen above, each labelled with its cost; grey: "
               "the other witnesses' links. Only the witness's routers are named.")
    if route:
        share_button(f"Why {src} → {dst}: witness {shown}", route, key=f"why_share_{index}")


# -- why not: a pair the view does not hold --------------------------------------------------


def show_why_not(
    settings: Settings, view: str, src: str, dst: str, network: Network, versions: Hashable
) -> None:
    """Why the pair is missing: the route needing the fewest dead links, or the two sides that
    no link joins."""
    st.subheader(why_not_heading(view, src, dst))
    if network.registry is None:
        st.caption("No `variables` registry yet: only live links are looked at.")
    count = int(st.number_input(
        "Count links that died in the last N ingest batches",
        min_value=0, max_value=1000, value=DEFAULT_RECENT, step=1, key="why_recent",
    ))
    dead = dead_links_of(settings, network, count)
    answer: WhyNot = remember(
        ("why not", settings.lake, versions, view, src, dst, count),
        lambda: why_not(
            src, dst,
            network.live.itertuples(index=False, name=None),
            dead[["src", "dst", "cost", "death", "deleted_batch"]].itertuples(index=False,
                                                                             name=None),
        ),
    )
    lines = answer.sentences(text)
    if answer.verdict == "reachable" and view != "reachable" and src == dst:
        # reachable over a cycle, yet no path: the path views hold simple paths only
        lines = [lines[0], "Paths in this view are simple: a node has a path to itself only "
                           "through a link from it to itself."]
    if answer.verdict == "dead":
        count_dead = len(answer.dead_links)
        st.markdown("\n\n".join(lines[:-count_dead]))
        st.markdown("\n".join(f"- {line}" for line in lines[-count_dead:]))
    else:
        st.markdown("\n\n".join(lines))
    if answer.route:
        table = hops.hop_table((link.src, link.dst, float(link.cost)) for link in answer.route)
        table["state"] = ["live" if link.live else
                          f"{link.death}" + (f" in batch {link.batch}" if link.batch is not None
                                             else "")
                          for link in answer.route]
        st.dataframe(table, hide_index=True, width="stretch")
        costs = {(link.src, link.dst): float(link.cost) for link in answer.route}
        deaths = {(link.src, link.dst): (str(link.death), link.batch)
                  for link in answer.dead_links}
        draw_route([(link.src, link.dst) for link in answer.route], [], costs, network,
                   dead=deaths, ends=(src, dst))
        st.caption("The route hop by hop: recently dead links in orange (dashed red without the "
                   "network map), live ones red. Labels: its routers and each link's cost.")
        share_button(f"Why not {src} → {dst}", list(answer.nodes), key="why_share_not")
    elif answer.verdict == "cut":
        show_cut(answer, network, dead)


def show_cut(answer: WhyNot, network: Network, dead: pd.DataFrame) -> None:
    """The two sides no link joins, drawn with the missing links that would join them."""
    if answer.candidates:
        st.dataframe(pd.DataFrame({
            "missing link": [f"{u} → {v}" for u, v in answer.candidates],
        }), hide_index=True, width="stretch")
    sides = set(answer.source_side) | set(answer.target_side)
    links = [(s, d, float(c)) for s, d, c in network.live.itertuples(index=False, name=None)
             if s in sides and d in sides]
    live_pairs = {(a, b) for a, b, _ in links}
    deaths: dict[tuple[str, str], tuple[str, int | None]] = {}
    for s, d, c, death, batch in dead[["src", "dst", "cost", "death", "deleted_batch"]] \
            .itertuples(index=False, name=None):
        if s in sides and d in sides and (s, d) not in live_pairs:
            links.append((s, d, float(c)))
            deaths[s, d] = (str(death), int(batch))
    if len(links) + len(answer.candidates) > MAX_DRAWN_EDGES:
        st.caption(f"{len(links)} links between these nodes are too many to draw.")
        return
    st.graphviz_chart(route_dot(links, (), deaths, answer.candidates,
                                ends=(answer.src, answer.dst)))
    st.caption("Legend: solid = live link (label: cost); dashed = recently dead; dotted green = "
               "a missing link that would connect the pair.")


# -- why: a region member --------------------------------------------------------------------


def sensor_positions(sensors: pd.DataFrame | None) -> dict[str, tuple[float, float]]:
    """``id → (x, y)`` of the live sensors (empty without a readable ``sensor`` table)."""
    if sensors is None or sensors.empty:
        return {}
    rows = sensors.drop_duplicates("id", keep="last")
    return {
        str(i): (float(x), float(y)) for i, x, y in rows[["id", "x", "y"]].itertuples(index=False)
    }


def critical_sensors(critical: list[str]) -> list[str]:
    """Sensors named by a critical ``sensor`` or ``triggered`` base tuple."""
    found = {
        parsed[1][0]
        for described in critical
        if (parsed := base_tuple_of(described)) is not None and parsed[0] in SENSOR_RELATIONS
    }
    return sorted(found)


def _rows(settings: Settings, name: str, columns: tuple[str, ...]) -> pd.DataFrame | None:
    snapshot = read_latest(settings, name, columns)
    if snapshot is None or snapshot.problem or snapshot.rows.empty:
        return None
    return snapshot.rows


def chain_figure(placed: pd.DataFrame, chain: list[str], seed: str | None) -> go.Figure:
    """The sensors on the grid, to scale, with the region's chain drawn (without ``regionmap``)."""
    figure = go.Figure()
    figure.add_trace(go.Scatter(
        x=placed["x"], y=placed["y"], mode="markers", name="sensor",
        marker={"color": ["#222222" if on else "#BBBBBB" for on in placed["triggered"]],
                "size": 7},
        hovertext=[plain(s) for s in placed["sensor"]], hoverinfo="text",
    ))
    where = {s: (x, y) for s, x, y in placed[["sensor", "x", "y"]].itertuples(index=False)}
    steps = [s for s in chain if s in where]
    if len(steps) > 1:
        figure.add_trace(go.Scatter(
            x=[where[s][0] for s in steps], y=[where[s][1] for s in steps],
            mode="lines+markers", name="chain", line={"color": "red", "width": 3},
            hovertext=[plain(s) for s in steps], hoverinfo="text",
        ))
    if seed is not None and seed in where:
        figure.add_trace(go.Scatter(
            x=[where[seed][0]], y=[where[seed][1]], mode="markers", name="seed",
            marker={"symbol": "star", "size": 16, "color": "gold"},
        ))
    figure.update_layout(height=520, xaxis_title="x (m)", yaxis_title="y (m)",
                         yaxis={"scaleanchor": "x", "scaleratio": 1})
    return figure


def show_region_member(settings: Settings, explanation: Explanation, index: int) -> None:
    """Chains of triggered sensors (table and grid), critical sensors in words."""
    region, member = str(explanation.tuple[0]), str(explanation.tuple[1])
    sensors = _rows(settings, "sensor", ("id", "x", "y"))
    positions = sensor_positions(sensors)
    chains = [sensor_chain(w, member, positions) for w in explanation.witnesses]
    st.dataframe(
        pd.DataFrame({
            "witness": range(1, len(chains) + 1),
            "seed": [seed or "" for seed, _ in chains],
            "sensor chain": [" → ".join(chain) for _, chain in chains],
            "sensors": [len(chain) for _, chain in chains],
        }),
        hide_index=True,
        width="stretch",
    )
    critical = critical_sensors(explanation.critical)
    if critical:
        st.markdown(f"**Losing any of these sensors removes sensor {text(member)} from region "
                    f"{text(region)}:** " + ", ".join(map(text, critical)))
    else:
        st.markdown(f"**No single sensor failure removes sensor {text(member)} from region "
                    f"{text(region)}.**")
    tuples = {f"{relation}({s})" for s in critical for relation in SENSOR_RELATIONS}
    others = [t for t in explanation.critical if t not in tuples]
    if others:
        st.markdown("**Other base tuples every chain needs:** " + ", ".join(map(text, others)))
    if not chains:
        return
    shown = st.selectbox("Witness to draw", range(1, len(chains) + 1),
                         key=f"why_witness_{index}")
    seed, chain = chains[shown - 1]
    if not positions:
        st.caption("No sensor positions (`sensor` table): chains are listed seed, others, "
                   "member, and drawn without the grid.")
        steps = {(chain[i], chain[i + 1]) for i in range(len(chain) - 1)}
        if steps:
            st.graphviz_chart(witness_dot(steps, steps))
        return
    regions = _rows(settings, "active_region", ("region", "sensor"))
    triggered = _rows(settings, "triggered", ("id",))
    placed = sensor_map(sensors if sensors is not None else pd.DataFrame(), regions, triggered)
    # every sensor stays on the grid; only this region's membership is drawn
    placed = placed.assign(region=placed["region"].where(placed["region"] == region, NO_REGION))
    placed = placed.drop_duplicates(["sensor", "region"]).reset_index(drop=True)
    try:
        import regionmap
    except ImportError:
        st.plotly_chart(chain_figure(placed, chain, seed), width="stretch")
        return
    seeds = _rows(settings, "region_seed", ("region", "id"))
    seeds = seeds[seeds["region"].astype(str) == region] if seeds is not None else None
    st.plotly_chart(regionmap.region_figure(placed, seeds, chains=[chain]), width="stretch")


# -- the page --------------------------------------------------------------------------------


def _index(options: Sequence[str], wanted: str) -> int:
    return options.index(wanted) if wanted in options else 0


def default_pair(first_pair: tuple[str, str] | None, nodes: Sequence[str]) -> tuple[str, str]:
    """The first pair of the view in sorted order whose ends differ (``first_pair``, from
    :class:`lakeview.ViewPairs`); else two distinct nodes.

    >>> default_pair(None, ["a", "b"]), default_pair(("b", "c"), ["a", "b", "c"])
    (('a', 'b'), ('b', 'c'))
    """
    if first_pair is not None:
        return first_pair
    return (nodes[0], nodes[1]) if len(nodes) > 1 else (nodes[0], nodes[0])


def explain(settings: Settings, view: str, key: tuple[str, str], limit: int) -> list[Explanation]:
    """The view's explanations of ``key`` (remembered until the question or lake changes)."""
    versions = provenance_versions(settings)
    return remember(
        ("why", settings.lake, versions, view, key, limit),
        lambda: load_provenance(settings.lake, versions).explain(view, key, limit=limit),
    )


def show_explanations(settings: Settings, view: str, key: tuple[str, str],
                      network: Network | None = None) -> None:
    """The answer for a tuple the view holds: per matching tuple its witnesses and critical
    base tuples, then a button for more witnesses when some were left out."""
    question = (view, key)
    limit = witness_limit(question)
    try:
        explanations = explain(settings, view, key, limit)
    except AspenError as err:
        st.warning(text(err))
        st.stop()
    for index, explanation in enumerate(explanations):
        st.subheader(heading(view, tuple(explanation.tuple)))
        count = len(explanation.witnesses)
        more = " (more exist: the first ones are shown)" if explanation.truncated else ""
        noun = "chain" if view == "active_region" else "witness set"
        st.markdown(f"**{count} minimal {noun}{'' if count == 1 else 's'}**{more}: each alone "
                    "keeps it.")
        if network is None:
            show_region_member(settings, explanation, index)
        else:
            show_pair(view, explanation, network, index)
    more_button(question, limit, any(e.truncated for e in explanations))


st.title("Why")
settings = current_lake()
if table_version(settings, "variables") is None:
    st.info(
        "No provenance yet: no `variables` table. Run `aspen ingest` and `aspen maintain` first."
    )
    st.stop()
present = [view for view in WHY_VIEWS if table_version(settings, view) is not None]
if not present:
    st.info(f"No view tables yet ({', '.join(WHY_VIEWS)}): run `aspen maintain` first.")
    st.stop()

view = st.selectbox("Question", present, format_func=VIEW_LABELS.__getitem__, key="why_view",
                    persist_state="session")
st.caption(f"Answered from the view {text(view)}.")
first, second = ("region", "sensor") if view == "active_region" else ("src", "dst")
# the view's pairs only (not its formulas and paths), kept once per server and lake version
snapshot = read_view_pairs(settings, view, (first, second))
if snapshot is None:
    st.info(f"No `{view}` table yet: run `aspen maintain` first.")
    st.stop()
if snapshot.problem:
    st.warning(snapshot.problem)
    st.stop()
left, right = st.columns(2)

if view == "active_region":
    if not snapshot.joined:
        st.info(f"The `{view}` table (version {snapshot.version}) has no tuples yet.")
        st.stop()
    region = left.selectbox("Region", list(snapshot.firsts), key="why_region",
                            persist_state="session")
    sensor = right.selectbox("Sensor", snapshot.seconds_of(region),
                             key="why_sensor", persist_state="session")
    show_explanations(settings, view, (region, sensor))
else:
    network = read_network(settings)
    nodes = sorted(set(network.nodes) | set(snapshot.firsts) | set(snapshot.seconds))
    if not nodes:
        st.info("No nodes yet: no live or dead links and no pairs in the view.")
        st.stop()
    start, end = default_pair(snapshot.first_pair, nodes)
    src = left.selectbox("From", nodes, index=_index(nodes, start), key="why_from",
                         persist_state="session")
    dst = right.selectbox("To", nodes, index=_index(nodes, end), key="why_to",
                          persist_state="session")
    if snapshot.holds(src, dst):
        show_explanations(settings, view, (src, dst), network)
    else:
        versions = tuple(table_version(settings, name) for name in LINK_TABLES)
        show_why_not(settings, view, src, dst, network, versions)
