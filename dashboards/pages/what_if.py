"""What if: what the network loses if some links, a node or some sensors died, from the stored
provenance only — pairs disconnected (of all reachable pairs), pairs rerouted over a costlier
route with the latency they add (median and worst), routers isolated, regions that shrink, per
domain; the raw view rows lost, per view, in an expander for experts.

A question decodes only the stored rows that mention a deleted base tuple; what is decoded is
kept per lake version per server process, and ``aspen dashboard`` decodes the rest in the
background when it starts and, after every batch, only the rows the batch changed. A question
asked meanwhile does not wait for that. An answer stays on the page until the operator asks
again. The choices and the answer are one fragment: Simulate reruns only that part.
A failed sensor loses its ``sensor`` and ``triggered`` instances; the region members and sizes
that would be lost are shown on the sensor grid. A rerouted pair's new cost is a Dijkstra over
the live links minus the deleted ones, for those pairs only (a pair whose least-cost row
survives keeps its cost).
"""

from __future__ import annotations

import time

import pandas as pd
import streamlit as st
from healthview import failure_impact, pair_count, region_changes
from lakeview import (
    AspenError,
    LakeProvenance,
    Settings,
    UnknownKeyError,
    current_lake,
    in_foreground,
    live_edges,
    load_provenance,
    provenance_versions,
    read_latest,
    sensor_map,
    table_version,
    text,
)
from whatif import (
    VIEW_WORDS,
    Answer,
    Question,
    domain_table,
    impact_words,
    link_label,
    pair_losses,
    region_table,
    remaining_links,
    reroute_table,
    share_text,
    summary_rows,
)

NO_NODE = "(no node)"
#: The base relations whose live instances die with a failed sensor.
SENSOR_RELATIONS = ("sensor", "triggered")
ANSWER_KEY = "whatif_answer"


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


def sensor_vars(provenance: LakeProvenance, sensors: tuple[str, ...]) -> tuple[set[str], list[str]]:
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


def deleted_links(edges: pd.DataFrame, question: Question) -> set[tuple[str, str]]:
    """The live links ``(src, dst)`` the ``question`` deletes: its links and its node's."""
    links = set(question.links)
    if question.node is not None:
        links |= {(str(s), str(d)) for s, d in edges[["src", "dst"]].itertuples(index=False)
                  if question.node in (s, d)}
    return links


def region_rows(settings: Settings, view: str) -> list[tuple]:
    """``(region, size)`` rows of a region view without formulas (``region_sizes``,
    ``largest_regions``); empty when there is none to read."""
    snapshot = read_latest(settings, view, ("region", "size"))
    if snapshot is None or snapshot.problem:
        return []
    return [(str(r), int(n)) for r, n in snapshot.rows.itertuples(index=False)]


def region_views(settings: Settings, answer: Answer) -> None:
    """The region views' rows lost and kept, from the regions' members lost: a row
    ``(region, size)`` stays exactly when its region loses no member (sizes only shrink under
    deletions, so a largest region that loses nothing stays the largest)."""
    shrinking = {change.region for change in answer.regions if change.lost}
    for view in ("region_sizes", "largest_regions"):
        rows = region_rows(settings, view)
        if not rows and view not in answer.lost:
            continue
        answer.lost[view] = [row for row in rows if row[0] in shrinking]
        answer.kept[view] = len(rows) - len(answer.lost[view])


def simulate(settings: Settings, question: Question, edges: pd.DataFrame) -> Answer:
    """Ask the stored provenance: only the rows that mention a deleted base tuple are decoded
    (and kept), so a question does not wait for the server's warm-up."""
    versions = provenance_versions(settings)
    provenance = load_provenance(settings.lake, versions)
    with st.spinner("Simulating…"):
        started = time.perf_counter()
        deleted: set[str] = set()
        for link in question.links:
            deleted |= provenance.live_vars_of("link", link)
        if question.node is not None:
            deleted |= provenance.live_vars_of("node", (question.node,))
        found, without = sensor_vars(provenance, question.sensors)
        deleted |= found
        lost = provenance.what_if(deleted)
        # counted without reading the views' formulas (the variable index read only lost rows)
        kept = {view: provenance.count(view) - len(gone) for view, gone in lost.items()}
        # kept with the answer: the page may redraw it after the lake moved on
        members = provenance.tuples("active_region") if "active_region" in lost else []
        gone_pairs = {(str(r[0]), str(r[1])) for r in lost.get("reachable", [])}
        reachable_pairs = provenance.tuples("reachable") if "reachable" in lost else []
        cycles = {(str(r[0]), str(r[1])) for r in reachable_pairs
                  if r[0] == r[1]} - gone_pairs if "reachable" in lost else set()
        impact = None
        if "reachable" in lost:
            links = [(str(s), str(d), float(c))
                     for s, d, c in edges[["src", "dst", "cost"]].itertuples(index=False)]
            impact = failure_impact(links, deleted_links(edges, question),
                                    pair_count(reachable_pairs),
                                    lost["reachable"], lost.get("min_cost", []),
                                    () if question.node is None else (question.node,))
        elapsed = (time.perf_counter() - started) * 1000
    answer = Answer(question, len(deleted), lost, kept, elapsed, versions, without, members,
                    cycles, impact, region_changes(members, lost.get("active_region", [])))
    region_views(settings, answer)
    return answer


def show_regions(settings: Settings, answer: Answer) -> None:
    """The regions that shrink or go, in a table and on the sensor grid."""
    members = answer.lost.get("active_region", [])
    if not members:
        if answer.question.sensors:
            st.caption("No region member would be lost.")
        return
    st.subheader("Regions")
    changed = [change for change in answer.regions if change.lost]
    gone_regions = [change.region for change in changed if change.gone]
    st.markdown(
        f"**{sum(len(c.lost) for c in changed)} sensor(s) leave** {len(changed)} region(s)"
        + (f"; region(s) gone entirely: {', '.join(map(text, gone_regions))}"
           if gone_regions else "")
        + f"; {len(answer.regions) - len(changed)} region(s) unchanged."
    )
    st.dataframe(region_table(changed), hide_index=True, width="stretch")
    sensors = read_latest(settings, "sensor", ("id", "x", "y"))
    if sensors is None or sensors.problem or sensors.rows.empty:
        return
    regions = read_latest(settings, "active_region", ("region", "sensor"))
    triggered = read_latest(settings, "triggered", ("id",))
    placed = sensor_map(sensors.rows, regions.rows if regions and not regions.problem else None,
                        triggered.rows if triggered and not triggered.problem else None)
    lost_sensors = {str(sensor) for _, sensor, *_ in members} | set(answer.question.sensors)
    try:
        from regionmap import region_figure
    except ImportError:
        return
    seeds = read_latest(settings, "region_seed", ("region", "id"))
    seed_rows = seeds.rows if seeds is not None and not seeds.problem else pd.DataFrame(
        columns=["region", "id"])
    st.plotly_chart(region_figure(placed, seed_rows, lost=lost_sensors), width="stretch",
                    key="whatif_region_map")
    st.caption("Crossed sensors would leave their regions.")


def show_network_answer(answer: Answer) -> None:
    """The answer in network terms: one count per question, per domain, the rerouted pairs."""
    impact = answer.impact
    if impact is None:
        return
    costs_known = "min_cost" in answer.lost
    a, b, c, d = st.columns(4)
    a.metric("Pairs disconnected", share_text(impact.disconnected, impact.reachable_pairs))
    b.metric("Pairs rerouted", f"{len(impact.reroutes):,}" if costs_known else "–")
    median, worst = impact.added_median(), impact.added_worst()
    c.metric("Added latency, median", "–" if median is None else f"+{median:g} ms",
             help=None if worst is None else f"worst +{worst:g} ms")
    d.metric("Routers isolated", f"{len(impact.isolated):,}")
    st.markdown("\n".join(f"- {words}" for words
                           in impact_words(impact, answer.regions, costs_known)))
    if impact.isolated:
        st.markdown("Isolated routers: " + ", ".join(map(text, impact.isolated)) + ".")
    st.caption("Pairs are ordered pairs of two different routers that are reachable now; a "
               "rerouted pair keeps a route whose least cost rises (a Dijkstra over the links "
               "left). Latencies are the links' costs, in ms."
               + (" A failed router is not counted as isolated." if answer.question.node
                  else ""))
    if impact.domains:
        st.subheader("Per domain")
        st.caption("A domain is a router id without its last part (s0.1.1.2 is in s0.1.1); a "
                   "pair counts for the domains of both its routers.")
        st.dataframe(domain_table(impact), hide_index=True, width="stretch")
    if impact.reroutes:
        st.subheader(f"Rerouted pairs: {len(impact.reroutes):,}, worst first")
        st.dataframe(reroute_table(impact), hide_index=True, width="stretch")


def show_expert_details(answer: Answer, edges: pd.DataFrame) -> None:
    """The raw per-view rows lost, as the views hold them."""
    with st.expander("Per view, in rows (for experts)"):
        total = sum(len(gone) for gone in answer.lost.values())
        st.caption(f"{answer.deleted_vars} base tuple instance(s) deleted; {total} view rows "
                   "lost over all views (one pair counts once per view that holds it). Kept = "
                   "rows still present. The 'after' columns are the best route over the links "
                   "that would remain.")
        st.dataframe(summary_rows(answer), hide_index=True, width="stretch")
        frames = pair_losses(answer.lost, remaining_links(edges, answer.question),
                             answer.cycles_kept)
        for view, frame in frames.items():
            st.markdown(f"**{VIEW_WORDS.get(view, view)}: {len(frame)} lost**")
            if "after" in frame:
                disconnected = int((frame["after"] == "disconnected").sum())
                st.caption(f"{disconnected} disconnected, {len(frame) - disconnected} still "
                           "connected by a costlier or longer route.")
            st.dataframe(frame, hide_index=True, width="stretch")
        for view in ("region_sizes", "largest_regions"):
            gone = answer.lost.get(view, [])
            if gone:
                st.markdown(f"**{VIEW_WORDS[view]}: {len(gone)} would change**")
                st.dataframe(pd.DataFrame([(str(r[0]), int(r[1])) for r in gone],
                                          columns=["region", "size now"]),
                             hide_index=True, width="stretch")


def show_answer(settings: Settings, answer: Answer, asked_now: Question,
                edges: pd.DataFrame) -> None:
    if answer.question != asked_now:
        st.info("The selection changed since this answer: press Simulate to ask again.")
    st.markdown(f"**If {text(answer.question.words())} died:**")
    if answer.skipped_sensors:
        st.caption("No live instance for sensor(s) "
                   f"{', '.join(map(text, answer.skipped_sensors))}: skipped.")
    if not answer.lost:
        st.info("No view carries provenance yet: run `aspen maintain` first.")
        return
    show_network_answer(answer)
    st.caption(f"From the stored provenance, answered in {answer.milliseconds:.0f} ms: nothing "
               "is recomputed or written.")
    if answer.question.links or answer.question.node:
        if st.button("Show the deleted links on the network map", key="whatif_share"):
            links = sorted(deleted_links(edges, answer.question))
            label = f"What if {answer.question.words()} died"
            try:
                from topomap import share_losses
            except ImportError:
                st.session_state["map_overlay"] = {"kind": "losses", "label": label,
                                                   "links": links}
            else:
                share_losses(label, links)
            st.page_link("pages/network.py", label="Open the network map")
    show_regions(settings, answer)
    show_expert_details(answer, edges)


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
    link_label(src, dst, cost): (str(src), str(dst))
    for src, dst, cost in edges[["src", "dst", "cost"]].itertuples(index=False)
}
nodes = sorted(set(edges["src"]) | set(edges["dst"]))


@st.fragment
def ask() -> None:
    """The question and its answer: a change of the selection or Simulate reruns only this
    part of the page (not the app's shell and the page's reads above)."""
    with in_foreground():
        _ask()


def _ask() -> None:
    chosen_links = st.multiselect("Delete links", list(link_names), key="whatif_links",
                                  placeholder="Type a node id to find its links")
    chosen_node = st.selectbox(
        "Delete a node (every link into or out of it)", [NO_NODE, *nodes], key="whatif_node"
    )
    chosen_sensors = st.multiselect(
        "Fail sensors (they stop counting as placed and triggered)", sensors,
        key="whatif_sensors"
    )
    if not sensors:
        st.caption("No live sensors in the lake.")
    question = Question(
        links=tuple(link_names[name] for name in chosen_links),
        node=None if chosen_node == NO_NODE else str(chosen_node),
        sensors=tuple(chosen_sensors),
    )
    if st.button("Simulate", type="primary"):
        if not question.words():
            st.info("Choose at least one link, a node or a sensor to delete.")
        else:
            try:
                st.session_state[ANSWER_KEY] = simulate(settings, question, edges)
            except AspenError as err:
                st.warning(text(err))
                return
    answer = st.session_state.get(ANSWER_KEY)
    if answer is None:
        st.caption("Choose links, a node and/or sensors, then press Simulate.")
        return
    show_answer(settings, answer, question, edges)


ask()
