"""What if: the view rows lost if some links, a node or some sensors died, from the stored
provenance only.

A question decodes only the stored rows that mention a deleted base tuple; what is decoded is
kept per lake version per server process, and ``aspen dashboard`` decodes the rest in the
background when it starts and, after every batch, only the rows the batch changed. A question
asked meanwhile does not wait for that. An answer stays on the page until the operator asks
again.
A failed sensor loses its ``sensor`` and ``triggered`` instances; the region members and sizes
that would be lost are shown on the sensor grid.
"""

from __future__ import annotations

import time

import pandas as pd
import streamlit as st
from lakeview import (
    AspenError,
    LakeProvenance,
    Settings,
    UnknownKeyError,
    current_lake,
    live_edges,
    load_provenance,
    provenance_versions,
    read_latest,
    region_losses,
    sensor_map,
    table_version,
    text,
)
from whatif import (
    VIEW_WORDS,
    Answer,
    Question,
    link_label,
    pair_losses,
    remaining_links,
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


def simulate(settings: Settings, question: Question) -> Answer:
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
        kept = {view: len(provenance.tuples(view)) - len(gone) for view, gone in lost.items()}
        elapsed = (time.perf_counter() - started) * 1000
        # kept with the answer: the page may redraw it after the lake moved on
        members = provenance.tuples("active_region") if lost.get("active_region") else []
        gone_pairs = {(str(r[0]), str(r[1])) for r in lost.get("reachable", [])}
        cycles = {(str(r[0]), str(r[1])) for r in provenance.tuples("reachable")
                  if r[0] == r[1]} - gone_pairs if "reachable" in lost else set()
    return Answer(question, len(deleted), lost, kept, elapsed, versions, without, members, cycles)


def show_regions(settings: Settings, answer: Answer) -> None:
    """Region members and sizes lost, in a table and on the sensor grid."""
    members = answer.lost.get("active_region", [])
    if not members:
        if answer.question.sensors:
            st.caption("No region member would be lost.")
        return
    st.subheader("Regions")
    losses = region_losses(answer.region_members, members)
    gone_regions = losses.loc[losses["region lost"], "region"].tolist()
    st.markdown(
        f"**{int(losses['lost'].sum())} region member(s) lost** in {len(losses)} region(s)"
        + (f"; region(s) gone entirely: {', '.join(map(text, gone_regions))}"
           if gone_regions else "")
    )
    st.dataframe(losses.rename(columns={"members lost": "sensors lost"}), hide_index=True,
                 width="stretch")
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
    a, b, c = st.columns(3)
    a.metric("Base tuples deleted", answer.deleted_vars)
    b.metric("View rows lost", sum(len(gone) for gone in answer.lost.values()))
    c.metric("Answered in", f"{answer.milliseconds:.0f} ms")
    st.caption("From the stored provenance: nothing is recomputed or written. The 'after' "
               "columns are the best route over the links that would remain.")
    st.dataframe(summary_rows(answer), hide_index=True, width="stretch")
    if answer.question.links or answer.question.node:
        if st.button("Show the deleted links on the network map", key="whatif_share"):
            links = list(answer.question.links)
            if answer.question.node is not None:
                links += [(s, d) for s, d in edges[["src", "dst"]].itertuples(index=False)
                          if answer.question.node in (s, d)]
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
    frames = pair_losses(answer.lost, remaining_links(edges, answer.question),
                         answer.cycles_kept)
    for view, frame in frames.items():
        st.subheader(f"{VIEW_WORDS.get(view, view)}: {len(frame)} lost")
        if "after" in frame:
            disconnected = int((frame["after"] == "disconnected").sum())
            st.caption(f"{disconnected} disconnected, {len(frame) - disconnected} still "
                       "connected by a costlier or longer route.")
        st.dataframe(frame, hide_index=True, width="stretch")
    for view in ("region_sizes", "largest_regions"):
        gone = answer.lost.get(view, [])
        if gone:
            st.subheader(f"{VIEW_WORDS[view]}: {len(gone)} would change")
            st.dataframe(pd.DataFrame([(str(r[0]), int(r[1])) for r in gone],
                                      columns=["region", "size now"]),
                         hide_index=True, width="stretch")


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

chosen_links = st.multiselect("Delete links", list(link_names), key="whatif_links",
                              placeholder="Type a node id to find its links")
chosen_node = st.selectbox(
    "Delete a node (every link into or out of it)", [NO_NODE, *nodes], key="whatif_node"
)
chosen_sensors = st.multiselect(
    "Fail sensors (they stop counting as placed and triggered)", sensors, key="whatif_sensors"
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
            st.session_state[ANSWER_KEY] = simulate(settings, question)
        except AspenError as err:
            st.warning(text(err))
            st.stop()

answer = st.session_state.get(ANSWER_KEY)
if answer is None:
    st.caption("Choose links, a node and/or sensors, then press Simulate.")
    st.stop()
show_answer(settings, answer, question, edges)
