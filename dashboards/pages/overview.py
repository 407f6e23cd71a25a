"""Overview: the lake's status at a glance, for an operator.

First one light — red, amber or green — with its reasons in plain words (``status.
traffic_light``), then one tile each: how fresh the views are, what waits to be maintained, how
long batches take, the expectations, what was quarantined and which links and sensors died
lately; then links to the pages with the details. The list of tables, their Delta versions and
the published summary are on the Internals page.

Every table is read through ``lakeview`` (delta-rs, cached by Delta version); a missing table
is a tile that says "none yet", an unreadable one turns the light amber.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st
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
    reason_counts,
    recent_deaths,
    recent_ingest_batches,
    recent_rows,
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


def show_light(light: Light) -> None:
    banner, headline = BANNERS[light.colour]
    if light.colour == "green":
        banner(f"**{headline}** — {light.reasons[0]}.")
    else:
        banner(f"**{headline}**\n\n" + "\n".join(f"- {reason}" for reason in light.reasons))


def freshness_tile(box: DeltaGenerator, fresh: Freshness) -> None:
    with box.container(border=True):
        if fresh.batch is None:
            st.metric("Views current as of", "no batch yet")
            st.caption("No batch has been maintained yet (run `aspen maintain`).")
            return
        st.metric("Views current as of", f"batch {fresh.batch}")
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
        st.metric(f"Batch {late.batch} took", duration_text(late.seconds),
                  chart_data=recent.tolist() if len(recent) > 1 else None, chart_type="bar")
        note = late.trend_text().capitalize() + "."
        if late.slow:
            note += f" :red[Slow: {late.slow_text()}.]"
        elif late.recent_slow:
            batches = ", ".join(map(str, late.recent_slow))
            note += f" Slow lately: batch {batches}."
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
        note = f"{summary.checked} checked, on batch {summary.batch}."
        if summary.stale and fresh.batch is not None:
            note += f" :orange[Stale: not checked since batch {fresh.batch} committed.]"
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
        names = [f"{text(row.name)} {row.death} in batch {row.batch}"
                 for row in deaths.itertuples()]
        st.caption(_more(names) + "." + back)


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
