"""Overview: the network's health first, then the pipeline's, at a glance, for an operator.

**Network**: one light — red when the network splits (the routers that had links fall into more
than one part), amber when fewer pairs are reachable than after the previous maintained batch,
green otherwise (``status.network_light``) — with its reasons and links to the evidence, then
tiles: routers up and isolated (since when), links up and down, reachable pairs with the change
since the previous batch, the partitions, the costliest pairs, triggered sensors and regions
(``healthview``, answers from ``aspen.views.network_health``).

**Pipeline**: a second light (``status.traffic_light``) and one tile each: how fresh the views
are, what waits to be maintained, how long batches take, the expectations, what was quarantined
and which links and sensors died lately; then links to the pages with the details. The list of
tables, their Delta versions and the published summary are on the Internals page.

Every table is read through ``lakeview`` (delta-rs, cached by Delta version); a missing table
is a tile that says "none yet", an unreadable one turns the light amber.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st
from healthview import HealthReading, domain_of, percent_text, read_health
from lakeview import (
    Settings,
    batch_numbers,
    current_lake,
    lake_name,
    read_latest,
    registry_through_rows,
    table_status,
    text,
    when_text,
)
from lakewatch import lake_fingerprint
from status import (
    RECENT_HOURS,
    Backlog,
    Freshness,
    Latency,
    Light,
    age_text,
    backlog,
    duration_text,
    expectation_summary,
    freshness,
    last_applied,
    latency,
    latest_expectations,
    network_light,
    reason_counts,
    recent_deaths,
    recent_ingest_batches,
    recent_rows,
    routers_text,
    spark_text,
    stuck_batches,
    traffic_light,
)
from streamlit.delta_generator import DeltaGenerator
from streamlit.errors import StreamlitPageNotFoundError

#: How each colour is shown: its banner and its headline.
BANNERS = {
    "red": (st.error, "Red: needs attention now"),
    "amber": (st.warning, "Amber: worth a look"),
    "green": (st.success, "Green: all is well"),
}
#: The network light's banner and headline per colour.
NETWORK_BANNERS = {
    "red": (st.error, "Red: the network is split"),
    "amber": (st.warning, "Amber: reachability dropped"),
    "green": (st.success, "Green: the network is whole"),
}
#: The banners' icons per colour.
LIGHT_ICONS = {"red": ":material/error:", "amber": ":material/warning:",
               "green": ":material/check_circle:"}
#: Pages with the evidence behind the network light: (page, label).
EVIDENCE_PAGES = (
    ("pages/network.py", "Network map: the live links and the ones that died"),
    ("pages/what_if.py", "What if: what a link's or a router's failure disconnects"),
    ("pages/why.py", "Why: why a pair is reachable, or why not"),
)
#: Wall times drawn in the latency tile's sparkline.
SPARKLINE_BATCHES = 20
#: Reasons and names a tile lists before "and N more".
TILE_ITEMS = 4
#: The detail pages linked at the bottom: (page, label).
DETAIL_PAGES = (
    ("pages/health.py", "Pipeline health: every batch, its wall time, the expectations"),
    ("pages/quarantine.py", "Quarantine: the rejected records by reason"),
    ("pages/network.py", "Network: the live links and the ones that died"),
    ("pages/internals.py", "Internals: every table, its version and the published summary"),
)


class Reader:
    """Reads tables for this page, remembering which could not be read."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.unreadable: set[str] = set()

    def rows(self, name: str) -> pd.DataFrame | None:
        """Table ``name`` as readers see it; ``None`` when it is missing or unreadable."""
        snapshot = read_latest(self.settings, name)
        if snapshot is None:
            return None
        if snapshot.problem:
            self.unreadable.add(name)
            return None
        return snapshot.rows


def _more(items: list[str], shown: int = TILE_ITEMS) -> str:
    """The first ``shown`` of ``items`` joined, and how many more there are."""
    head = " · ".join(items[:shown])
    return head if len(items) <= shown else f"{head} and {len(items) - shown} more"


def show_light(light: Light, banners: dict = BANNERS) -> None:
    banner, headline = banners[light.colour]
    # an icon of our own: Streamlit looks for a leading emoji in a banner without one, and
    # compiles its emoji catalogue for that (0.25 s of a fresh server's first page)
    icon = LIGHT_ICONS[light.colour]
    if light.colour == "green":
        banner(f"**{headline}** — {light.reasons[0]}.", icon=icon)
    else:
        banner(f"**{headline}**\n\n" + "\n".join(f"- {reason}" for reason in light.reasons),
               icon=icon)


def freshness_tile(box: DeltaGenerator, fresh: Freshness) -> None:
    with box.container(border=True):
        if fresh.batch is None:
            st.metric("Views current as of", "no batch yet")
            st.caption("No batch has been maintained yet (run `aspen maintain`).")
            return
        st.metric("Views current as of", f"maintained batch {fresh.batch}")
        st.caption(f"Committed {age_text(fresh.age_s)} ({when_text(fresh.committed_at)} UTC); "
                   f"covers the updates through ingest batch {fresh.through_ingest_batch}.")


def backlog_tile(box: DeltaGenerator, waiting: Backlog) -> None:
    with box.container(border=True):
        if not waiting.batches:
            st.metric("Waiting to be maintained", "nothing")
            st.caption("Every ingested update is in the views.")
            return
        plural = "" if waiting.updates == 1 else "s"
        st.metric("Waiting to be maintained", f"{waiting.updates} update{plural}")
        st.caption(f"{waiting.text().capitalize()} (ingested {when_text(waiting.oldest_at)} "
                   "UTC).")


def latency_tile(box: DeltaGenerator, late: Latency, wall: pd.Series) -> None:
    with box.container(border=True):
        if late.batch is None:
            st.metric("Last batch took", "–")
            st.caption("No wall time recorded yet.")
            return
        recent = wall.dropna().iloc[-SPARKLINE_BATCHES:]
        st.metric(f"Maintained batch {late.batch} took", duration_text(late.seconds))
        note = late.trend_text().capitalize() + "."
        if len(recent) > 1:  # text, not a chart: a chart's library is 0.8 MB more to load
            note = f"Last {len(recent)} batches: {spark_text(recent.tolist())}. {note}"
        if late.slow:
            note += f" :red[Slow: {late.slow_text()}.]"
        elif late.recent_slow:
            batches = ", ".join(map(str, late.recent_slow))
            note += f" Slow lately: maintained batch {batches}."
        st.caption(note)


def expectations_tile(box: DeltaGenerator, latest: pd.DataFrame,
                      fresh: Freshness) -> None:
    summary = expectation_summary(latest)
    with box.container(border=True):
        if not summary.checked:
            st.metric("Expectations", "not checked yet")
            st.caption("The pipeline's expectations step has not run (`aspen check`).")
            return
        value = f"{summary.failed} failed" if summary.failed else "all passed"
        st.metric("Expectations", value)
        note = f"{summary.checked} checked, on maintained batch {summary.batch}."
        if summary.stale and fresh.batch is not None:
            note += (f" :orange[Stale: not checked since maintained batch {fresh.batch} "
                     "committed.]")
        if summary.failed:
            failed = latest[~latest["success"].astype(bool)]
            note += " Failed: " + _more([text(e) for e in failed["expectation"]], 2) + "."
        st.caption(note)


def quarantine_tile(box: DeltaGenerator, recent: pd.DataFrame,
                    total: int | None) -> None:
    with box.container(border=True):
        label = f"Quarantined, last {RECENT_HOURS:g} h"
        if total is None:
            st.metric(label, "0")
            st.caption("Nothing has been ingested yet.")
            return
        st.metric(label, str(len(recent)))
        counts = reason_counts(recent)
        if counts:
            st.caption("By reason: " + _more([f"{text(r)} {n}" for r, n in counts.items()])
                       + f". {total} in all.")
        else:
            st.caption(f"No new rejected record; {total} in all.")


def _counted(deaths: pd.DataFrame) -> str:
    """``2 links, 1 sensor``."""
    parts = []
    for what in ("link", "sensor"):
        count = int((deaths["what"] == what).sum())
        if count:
            parts.append(f"{count} {what}{'s' if count != 1 else ''}")
    return ", ".join(parts)


def deaths_tile(box: DeltaGenerator, deaths: pd.DataFrame, returned: int) -> None:
    with box.container(border=True):
        label = f"Gone, last {RECENT_HOURS:g} h"
        back = f" {returned} that died came back." if returned else ""
        if deaths.empty:
            st.metric(label, "none")
            st.caption("No link or sensor died (deleted or expired) and stayed dead." + back)
            return
        st.metric(label, _counted(deaths))
        names = [f"{text(row.name)} {row.death} in ingest batch {row.batch}"
                 for row in deaths.itertuples()]
        st.caption(_more(names) + "." + back)


def _since(batch: int | None, reading: HealthReading) -> str:
    """``ingest batch 7 (2026-01-01 10:00:00 UTC)``: when a link or router went down."""
    if batch is None:
        return "unknown"
    moment = reading.ingested_at.get(batch)
    return f"ingest batch {batch}" + ("" if moment is None else f", {when_text(moment)} UTC")


def _page_links(pages: tuple[tuple[str, str], ...]) -> None:
    for page, label in pages:
        try:
            st.page_link(page, label=label)
        except StreamlitPageNotFoundError:  # the page opened alone, without the app's pages
            st.caption(label)


def routers_tile(box: DeltaGenerator, reading: HealthReading) -> None:
    health = reading.health
    assert health is not None
    with box.container(border=True):
        st.metric("Routers up", f"{health.routers_up:,} of {len(health.routers):,}")
        if not health.isolated:
            st.caption("Every router is on a live link.")
            return
        names = [f"{text(router)} (down since {_since(batch, reading)})"
                 for router, batch in health.isolated]
        st.caption(f"{len(names):,} isolated, on no live link: " + _more(names) + ".")


def links_tile(box: DeltaGenerator, reading: HealthReading) -> None:
    health = reading.health
    assert health is not None
    with box.container(border=True):
        st.metric("Links up", f"{health.links_up:,}")
        down = health.links_down
        if not down:
            st.caption("No link is down: none was deleted or expired for good.")
            return
        names = [f"{text(link.src)} → {text(link.dst)} {link.death} ({_since(link.batch, reading)})"
                 for link in down]
        st.caption(f"{len(down):,} down (every instance deleted or expired), newest first: "
                   + _more(names, 3) + ".")


def reachable_tile(box: DeltaGenerator, reading: HealthReading) -> None:
    health = reading.health
    assert health is not None
    with box.container(border=True):
        change = health.change
        st.metric("Reachable pairs", f"{health.reachable:,}",
                  delta=None if not change else f"{change:+,} since the previous batch")
        where = ("" if reading.batch is None else
                 f" As of maintained batch {reading.batch[0]} (through ingest batch "
                 f"{reading.batch[1]}).")
        st.caption(f"{percent_text(health.reachable, health.possible_pairs)} of the "
                   f"{health.possible_pairs:,} ordered pairs of the {health.routers_up:,} live "
                   f"routers.{where}")


def partitions_tile(box: DeltaGenerator, reading: HealthReading) -> None:
    health = reading.health
    assert health is not None
    with box.container(border=True):
        parts = health.partitions
        if not health.split:
            st.metric("Partitions", "one network")
            st.caption(f"All {len(health.routers):,} routers are connected (links in either "
                       "direction).")
            return
        st.metric("Partitions", f"{len(parts):,} parts")
        others = [f"{len(part):,} router{'s' if len(part) != 1 else ''} in "
                  + routers_text(sorted({text(domain_of(r)) for r in part}), 4)
                  for part in parts[1:]]
        st.caption(f"The largest has {len(parts[0]):,} routers; the others: "
                   + _more(others, 3) + ".")


def costliest_tile(box: DeltaGenerator, reading: HealthReading) -> None:
    with box.container(border=True):
        costs = reading.costliest
        if costs.empty:
            st.metric("Costliest pair", "–")
            st.caption("No least-cost route yet.")
            return
        first = costs.iloc[0]
        st.metric("Costliest pair", f"{float(first['cost']):g} ms")
        st.caption("Least-cost routes, costliest first: " + " · ".join(
            f"{text(row.src)} → {text(row.dst)} {float(row.cost):g} ms"
            for row in costs.itertuples()) + ".")


def sensors_tile(box: DeltaGenerator, reading: HealthReading) -> None:
    with box.container(border=True):
        if reading.triggered is None:
            st.metric("Triggered sensors", "–")
            st.caption("No sensor has been triggered yet.")
            return
        st.metric("Triggered sensors", f"{reading.triggered:,}")
        regions = reading.regions
        if regions.empty:
            st.caption("No region of triggered sensors.")
            return
        st.caption(f"{len(regions):,} region(s): " + _more(
            [f"{text(row.region)} {int(row.size)} sensors" for row in regions.itertuples()])
            + ".")


def show_network(reading: HealthReading) -> None:
    """The network's light, its evidence and its tiles."""
    for problem in reading.problems:
        st.caption(f"Not shown: {problem}")
    health = reading.health
    if health is None or not health.routers:
        st.info("No link has been ingested yet: nothing to say about the network.")
        return
    show_light(network_light(health), NETWORK_BANNERS)
    if health.split:
        names = [text(router) for router, _ in health.isolated]
        if names:
            st.markdown("Isolated routers: " + routers_text(names, 12) + ".")
    with st.expander("Evidence", expanded=health.split or bool(health.change)):
        _page_links(EVIDENCE_PAGES)
    top = st.columns(3)
    routers_tile(top[0], reading)
    links_tile(top[1], reading)
    reachable_tile(top[2], reading)
    bottom = st.columns(3)
    partitions_tile(bottom[0], reading)
    costliest_tile(bottom[1], reading)
    sensors_tile(bottom[2], reading)


def detail_links() -> None:
    st.subheader("Details")
    for page, label in DETAIL_PAGES:
        try:
            st.page_link(page, label=label)
        except StreamlitPageNotFoundError:  # the page opened alone, without the app's pages
            st.caption(label)


st.title("Overview")
settings = current_lake()
now = pd.Timestamp.now(tz="UTC")
fingerprint = lake_fingerprint(settings)
if not fingerprint:
    st.info(
        f"The lake {text(lake_name(settings))} has no tables yet. "
        "Run `aspen ingest FILE…` and `aspen maintain` (or the Airflow DAG) first."
    )
    st.stop()

st.header("Network")
show_network(read_health(settings))

st.header("Pipeline")
reader = Reader(settings)
ledger = reader.rows("ledger")
fresh = freshness(ledger, now)
metrics = reader.rows("metrics")
if ledger is not None and not ledger.empty:
    numbers = batch_numbers(ledger, metrics)
    wall = numbers.set_index("batch_id")["wall_seconds"]
else:
    wall = pd.Series(dtype="float64")
late = latency(wall)
stuck: list[int] = []
if metrics is not None and not metrics.empty:
    newest = metrics["batch_id"].max()
    if fresh.batch is None or newest > fresh.batch:  # metrics of a batch without a ledger row
        written = (table_status(settings, "metrics") or {}).get("last_commit")
        stuck = stuck_batches(metrics, fresh.batch or 0, written, now)

variables = reader.rows("variables")
ingest_files = reader.rows("ingest_files")
waiting = backlog(ingest_files, last_applied(reader.rows("apply_state")),
                  fresh.through_ingest_batch, registry_through_rows(variables), now)
latest = latest_expectations(reader.rows("expectation_results"), fresh.batch)
quarantine = reader.rows("quarantine")
new_records = (recent_rows(quarantine, "ingested_at", now) if quarantine is not None
               else pd.DataFrame())
recent_batches = recent_ingest_batches(ingest_files, now)
deaths = recent_deaths(variables, recent_batches)
returned = len(recent_deaths(variables, recent_batches, still_dead=False)) - len(deaths)
unreadable = len(reader.unreadable | {name for name, version in fingerprint if version < 0})

light = traffic_light(fresh=fresh, waiting=waiting, late=late,
                      expectations=expectation_summary(latest), new_quarantine=len(new_records),
                      stuck=stuck, unreadable=unreadable)
show_light(light)

top = st.columns(3)
freshness_tile(top[0], fresh)
backlog_tile(top[1], waiting)
latency_tile(top[2], late, wall)
bottom = st.columns(3)
expectations_tile(bottom[0], latest, fresh)
quarantine_tile(bottom[1], new_records, None if quarantine is None else len(quarantine))
deaths_tile(bottom[2], deaths, returned)
detail_links()
