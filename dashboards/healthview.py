"""Reader of the network's health for the console: the link instances of the variable registry,
the reachable pairs now and as of the previous maintained batch, the costliest pairs, triggered
sensors and regions, read through ``lakeview`` (delta-rs, cached by version); the answers come
from :mod:`aspen.views.network_health`, re-exported here for the pages.

The previous batch's reachable pairs are read as of the Delta versions its ledger row recorded
(the view's snapshot and change log then): a count, nothing recomputed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pandas as pd
from lakeview import Settings, load_view, read_latest

from aspen.lake.view_log import VIEW_CHANGES
from aspen.views.network_health import (
    DomainImpact,
    DownLink,
    FailureImpact,
    NetworkHealth,
    RegionChange,
    Reroute,
    domain_of,
    failure_impact,
    network_health,
    pair_count,
    percent_text,
    region_changes,
)

__all__ = [
    "DomainImpact",
    "DownLink",
    "FailureImpact",
    "HealthReading",
    "NetworkHealth",
    "RegionChange",
    "Reroute",
    "domain_of",
    "failure_impact",
    "link_instances",
    "pair_count",
    "percent_text",
    "read_health",
    "region_changes",
]

#: Costliest pairs the Overview lists.
COSTLIEST = 5


@dataclass
class HealthReading:
    """What the Overview's network section shows, and the tables it could not read."""

    health: NetworkHealth | None
    #: the ingest batch each batch's updates were ingested at (wall clock), for "since when"
    ingested_at: dict[int, pd.Timestamp] = field(default_factory=dict)
    costliest: pd.DataFrame = field(default_factory=pd.DataFrame)
    triggered: int | None = None
    regions: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: (maintained batch, through ingest batch) of the views shown
    batch: tuple[int, int] | None = None
    problems: list[str] = field(default_factory=list)


def link_instances(variables: pd.DataFrame) -> list[tuple[str, str, int | None, str | None]]:
    """``(src, dst, deleted_batch, death)`` of every link instance of the registry.

    >>> registry = pd.DataFrame({"relation": ["link", "sensor"],
    ...     "values": ['["a","b",1.0]', '["s1",0,0]'],
    ...     "deleted_batch": pd.array([3, None], dtype="Int64"), "death": ["expired", None]})
    >>> link_instances(registry)
    [('a', 'b', 3, 'expired')]
    """
    if variables.empty or "relation" not in variables:
        return []
    links = variables[variables["relation"].astype(str) == "link"]
    out = []
    deaths = links["death"] if "death" in links else pd.Series([None] * len(links),
                                                                  index=links.index)
    for raw, batch, death in zip(links["values"], links["deleted_batch"], deaths, strict=True):
        values = json.loads(raw) if isinstance(raw, str) else raw
        if isinstance(values, dict):
            values = list(values.values())
        dead = batch is not None and not pd.isna(batch)
        out.append((str(values[0]), str(values[1]), int(batch) if dead else None,
                    None if death is None or pd.isna(death) else str(death)))
    return out


def _rows(settings: Settings, name: str, columns: tuple[str, ...],
          problems: list[str]) -> pd.DataFrame | None:
    snapshot = read_latest(settings, name, columns)
    if snapshot is None:
        return None
    if snapshot.problem:
        problems.append(snapshot.problem)
        return None
    return snapshot.rows


def _previous_pairs(settings: Settings, ledger: pd.DataFrame) -> int | None:
    """Reachable pairs as of the maintained batch before the last (None: none, or unreadable)."""
    if len(ledger) < 2 or "table_versions" not in ledger:
        return None
    row = ledger.sort_values("batch_id").iloc[-2]
    try:
        versions = json.loads(row["table_versions"])
        if "reachable" not in versions:
            return None
        frame = load_view(settings.lake_uri, "reachable", int(versions["reachable"]),
                          versions.get(VIEW_CHANGES), ("src", "dst"))
    except Exception:  # noqa: BLE001 — a vacuumed or damaged old version: no change shown
        return None
    return pair_count(frame.itertuples(index=False))


def read_health(settings: Settings) -> HealthReading:
    """The network's health as of the last committed batch (registry as applied)."""
    problems: list[str] = []
    variables = _rows(settings, "variables", ("relation", "values", "deleted_batch", "death"),
                      problems)
    reading = HealthReading(None, problems=problems)
    files = _rows(settings, "ingest_files", ("batch_id", "ingested_at"), problems)
    if files is not None and not files.empty and "ingested_at" in files:
        times = files.dropna(subset=["batch_id"]).groupby("batch_id")["ingested_at"].min()
        reading.ingested_at = {int(b): t for b, t in times.items()}
    if variables is None:
        return reading
    reachable = _rows(settings, "reachable", ("src", "dst"), problems)
    ledger = _rows(settings, "ledger", ("batch_id", "through_ingest_batch", "table_versions"),
                   problems)
    previous = None
    if ledger is not None and not ledger.empty:
        last = ledger.sort_values("batch_id").iloc[-1]
        reading.batch = (int(last["batch_id"]), int(last["through_ingest_batch"]))
        previous = _previous_pairs(settings, ledger)
    pairs = 0 if reachable is None else pair_count(reachable.itertuples(index=False))
    reading.health = network_health(link_instances(variables), pairs, previous)
    costs = _rows(settings, "min_cost", ("src", "dst", "cost"), problems)
    if costs is not None and not costs.empty:
        costs = costs[costs["src"].astype(str) != costs["dst"].astype(str)]
        reading.costliest = costs.nlargest(COSTLIEST, "cost").reset_index(drop=True)
    triggered = _rows(settings, "triggered", ("id",), problems)
    reading.triggered = None if triggered is None else int(triggered["id"].nunique())
    regions = _rows(settings, "region_sizes", ("region", "size"), problems)
    if regions is not None:
        reading.regions = regions.sort_values(["size", "region"], ascending=[False, True]) \
            .reset_index(drop=True)
    return reading
