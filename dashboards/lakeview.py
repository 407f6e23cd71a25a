"""Reading the lake for the dashboard: delta-rs (no JVM), cached by Delta table version.

Every loader takes the table's current version as an argument, so a new commit changes the
cache key and the page shows fresh data; an unchanged table is never read twice.

>>> links_dot([("a", "b", 1.0)])
'digraph links {\\n  rankdir=LR;\\n  node [shape=circle];\\n  "a" -> "b" [label="1"];\\n}'
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple
from urllib.parse import unquote, urlparse

import pandas as pd
import streamlit as st
from deltalake import DeltaTable
from deltalake.exceptions import DeltaError, TableNotFoundError

from aspen.lake.summary import KNOWN_TABLES, SUMMARY_TABLE
from aspen.pipeline.lake_provenance import LakeProvenance
from aspen.pipeline.view_tables import VIEW_NAMES
from aspen.settings import DEFAULT_LAKE, Settings

__all__ = [
    "LAKE_KEY",
    "NO_REGION",
    "PROVENANCE_TABLES",
    "Snapshot",
    "TableStatus",
    "batch_numbers",
    "current_lake",
    "latest_results",
    "lake_tables",
    "live_edges",
    "link_of",
    "links_dot",
    "load_provenance",
    "load_table",
    "provenance_versions",
    "read_latest",
    "resolve_lake",
    "route_text",
    "row_count",
    "sensor_map",
    "table_status",
    "table_version",
    "witness_dot",
]

#: Session-state key holding the lake root of this session.
LAKE_KEY = "aspen_lake"
#: Beyond this many edges the network page asks the user to filter by node.
MAX_DRAWN_EDGES = 400


def resolve_lake(argv: Sequence[str] = ()) -> str:
    """The lake root: ``--lake`` after ``streamlit run app.py --``, else ``ASPEN_LAKE``, else default.

    >>> resolve_lake(["--lake", "/tmp/lake"])
    '/tmp/lake'
    """
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--lake", default=None)
    known, _ = parser.parse_known_args(list(argv))
    return known.lake or os.environ.get("ASPEN_LAKE") or DEFAULT_LAKE


def current_lake() -> Settings:
    """The settings of this session's lake (set by ``app.py``)."""
    return Settings(lake=st.session_state.get(LAKE_KEY) or resolve_lake())


def table_version(settings: Settings, name: str) -> int | None:
    """The latest version of table ``name``, or ``None`` when it does not exist (cheap; no cache)."""
    try:
        return DeltaTable(settings.table_uri(name)).version()
    except TableNotFoundError:
        return None


@st.cache_data(show_spinner=False, max_entries=64)
def load_table(uri: str, version: int, columns: tuple[str, ...] | None = None) -> pd.DataFrame:
    """The table at ``uri`` as of ``version``, optionally only ``columns`` (cached per arguments)."""
    return DeltaTable(uri, version=version).to_pandas(
        columns=list(columns) if columns is not None else None
    )


@st.cache_data(show_spinner=False, max_entries=256)
def row_count(uri: str, version: int) -> int:
    """Exact row count of the table at ``uri`` as of ``version`` (from Parquet metadata)."""
    return int(DeltaTable(uri, version=version).to_pyarrow_dataset().count_rows())


def lake_tables(settings: Settings) -> list[str]:
    """Names to look for: the pipeline's tables plus any Delta table found under a local lake."""
    names = set(KNOWN_TABLES) | {SUMMARY_TABLE}
    parsed = urlparse(settings.lake_uri)
    if parsed.scheme == "file":
        lake_dir = Path(unquote(parsed.path))
        if lake_dir.is_dir():
            names |= {p.name for p in lake_dir.iterdir() if (p / "_delta_log").is_dir()}
    return sorted(names)


#: One Overview row: ``table``, ``version``, ``rows``, ``last_commit``, ``problem``.
TableStatus = dict[str, object]


def table_status(settings: Settings, name: str) -> TableStatus | None:
    """Version and row count of one table, ``None`` if it does not exist.

    A table delta-rs cannot read (e.g. deletion vectors) gives a row whose ``problem`` says why.
    """
    uri = settings.table_uri(name)
    try:
        table = DeltaTable(uri)
    except TableNotFoundError:
        return None
    version = table.version()
    status: TableStatus = {
        "table": name,
        "version": version,
        "rows": None,
        "last_commit": None,
        "problem": "",
    }
    try:
        history = table.history(1)
        if history and history[0].get("timestamp") is not None:
            status["last_commit"] = pd.to_datetime(history[0]["timestamp"], unit="ms", utc=True)
        status["rows"] = row_count(uri, version)
    except (DeltaError, OSError, ValueError) as err:
        status["problem"] = f"cannot read with delta-rs: {err}"
    return status


def _quote(text: object) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _cost_label(cost: object) -> str:
    try:
        value = float(cost)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return ""
    return f"{value:g}"


def links_dot(edges: Iterable[tuple[object, object, object]], focus: str | None = None) -> str:
    """A Graphviz DOT digraph of ``(src, dst, cost)`` edges; ``focus`` is drawn highlighted.

    Ids are quoted and escaped, so any string is a valid node name.

    >>> 'fillcolor' in links_dot([("a", "b", 2)], focus="a")
    True
    """
    lines = ["digraph links {", "  rankdir=LR;", "  node [shape=circle];"]
    if focus is not None:
        lines.append(f"  {_quote(focus)} [style=filled, fillcolor=gold];")
    for src, dst, cost in edges:
        label = _cost_label(cost)
        attrs = f" [label={_quote(label)}]" if label else ""
        lines.append(f"  {_quote(src)} -> {_quote(dst)}{attrs};")
    lines.append("}")
    return "\n".join(lines)


def live_edges(links: pd.DataFrame) -> pd.DataFrame:
    """One row per directed link: the cheapest live instance's cost and the instance count.

    >>> frame = pd.DataFrame({"src": ["a", "a"], "dst": ["b", "b"], "cost": [3.0, 1.0]})
    >>> live_edges(frame).to_dict("records")
    [{'src': 'a', 'dst': 'b', 'cost': 1.0, 'instances': 2}]
    """
    if links.empty:
        return pd.DataFrame(columns=["src", "dst", "cost", "instances"])
    frame = links.assign(src=links["src"].astype(str), dst=links["dst"].astype(str))
    if "cost" not in frame:
        frame = frame.assign(cost=float("nan"))
    grouped = frame.groupby(["src", "dst"], as_index=False).agg(
        cost=("cost", "min"), instances=("cost", "size")
    )
    return grouped.sort_values(["src", "dst"]).reset_index(drop=True)


#: The tables a :class:`LakeProvenance` reads: the ``variables`` registry and every view table.
PROVENANCE_TABLES: tuple[str, ...] = ("variables", *VIEW_NAMES)

#: Cache key of a lake's provenance: ``(table, version)`` of each provenance table that exists.
ProvenanceVersions = tuple[tuple[str, int], ...]


def provenance_versions(settings: Settings) -> ProvenanceVersions:
    """Versions of the existing ``variables`` and view tables (cheap; changes on every commit)."""
    found = ((name, table_version(settings, name)) for name in PROVENANCE_TABLES)
    return tuple((name, version) for name, version in found if version is not None)


@st.cache_resource(show_spinner=False, max_entries=4, scope="session")  # dd managers are not thread-safe
def load_provenance(lake: str, versions: ProvenanceVersions) -> LakeProvenance:
    """The decoded provenance of ``lake``, one per set of table ``versions`` (the cache key).

    Formulas are decoded lazily and kept on the object, so a rerun decodes nothing again
    until a table gets a new version.
    """
    return LakeProvenance(Settings(lake=lake))


def link_of(base_tuple: str) -> tuple[str, str] | None:
    """``(src, dst)`` of a described link base tuple, ``None`` for any other relation.

    >>> link_of("link(a→b)"), link_of("sensor(s1)")
    (('a', 'b'), None)
    """
    if not (base_tuple.startswith("link(") and base_tuple.endswith(")")):
        return None
    src, arrow, dst = base_tuple[5:-1].partition("→")
    return (src, dst) if arrow else None


def witness_dot(links: Iterable[tuple[str, str]], highlighted: Iterable[tuple[str, str]]) -> str:
    """A DOT digraph of ``links`` with the ``highlighted`` ones drawn bold red.

    >>> 'color=red' in witness_dot([("a", "b"), ("b", "c")], [("a", "b")])
    True
    """
    bold = set(highlighted)
    lines = ["digraph witness {", "  rankdir=LR;", "  node [shape=circle];"]
    for src, dst in sorted(set(links) | bold):
        attrs = " [color=red, penwidth=2.5]" if (src, dst) in bold else " [color=gray]"
        lines.append(f"  {_quote(src)} -> {_quote(dst)}{attrs};")
    lines.append("}")
    return "\n".join(lines)


class Snapshot(NamedTuple):
    """One table as the dashboard read it: ``version`` and ``rows``, or the ``problem`` met."""

    version: int
    rows: pd.DataFrame
    problem: str = ""


def read_latest(
    settings: Settings, name: str, columns: tuple[str, ...] | None = None
) -> Snapshot | None:
    """The latest version of table ``name`` (cached by version), ``None`` when it does not exist.

    ``columns`` reads only those (e.g. not the provenance bytes). A table delta-rs cannot read,
    or without one of ``columns``, gives an empty ``rows`` and a ``problem`` saying why, so a
    page shows a message instead of a traceback.

    >>> read_latest(Settings(lake="/nonexistent/lake"), "ledger") is None
    True
    """
    version = table_version(settings, name)
    if version is None:
        return None
    try:
        return Snapshot(version, load_table(settings.table_uri(name), version, columns))
    except TableNotFoundError:  # removed between the two reads
        return None
    except (DeltaError, OSError, ValueError) as err:
        return Snapshot(version, pd.DataFrame(), f"cannot read `{name}` with delta-rs: {err}")


def route_text(path: Iterable[object] | None) -> str:
    """A stored path (list of node ids) as ``a → b → c``.

    >>> route_text(["a", "b", "c"]), route_text(None)
    ('a → b → c', '')
    """
    return "" if path is None else " → ".join(str(node) for node in path)


#: Region label of a sensor that is in no active region.
NO_REGION = "(none)"


def sensor_map(
    sensors: pd.DataFrame, regions: pd.DataFrame | None, triggered: pd.DataFrame | None
) -> pd.DataFrame:
    """One row per (live sensor, active region) with ``x``, ``y`` and whether it is triggered.

    ``sensors`` is the ``sensor`` base table (``id``, ``x``, ``y``; several live instances of a
    sensor are one sensor), ``regions`` the ``active_region`` view (``region``, ``sensor``) and
    ``triggered`` the ``triggered`` base table (``id``). A sensor in no region gets
    :data:`NO_REGION`; a region member missing from ``sensors`` has no position and is left out.

    >>> sensors = pd.DataFrame({"id": ["s1", "s2"], "x": [0.0, 10.0], "y": [0.0, 0.0]})
    >>> regions = pd.DataFrame({"region": ["r1"], "sensor": ["s1"]})
    >>> sensor_map(sensors, regions, pd.DataFrame({"id": ["s1"]})).to_dict("records")
    [{'sensor': 's1', 'x': 0.0, 'y': 0.0, 'region': 'r1', 'triggered': True}, \
{'sensor': 's2', 'x': 10.0, 'y': 0.0, 'region': '(none)', 'triggered': False}]
    """
    columns = ["sensor", "x", "y", "region", "triggered"]
    if sensors.empty:
        return pd.DataFrame(columns=columns)
    placed = (
        sensors.assign(sensor=sensors["id"].astype(str))[["sensor", "x", "y"]]
        .drop_duplicates("sensor", keep="last")
        .astype({"x": float, "y": float})
    )
    if regions is not None and not regions.empty:
        members = regions.assign(
            region=regions["region"].astype(str), sensor=regions["sensor"].astype(str)
        )[["region", "sensor"]].drop_duplicates()
        placed = placed.merge(members, on="sensor", how="left")
        placed["region"] = placed["region"].fillna(NO_REGION)
    else:
        placed = placed.assign(region=NO_REGION)
    on = set() if triggered is None or triggered.empty else set(triggered["id"].astype(str))
    placed["triggered"] = placed["sensor"].isin(on)
    return placed[columns].sort_values(["sensor", "region"]).reset_index(drop=True)


#: Per-batch totals the health page plots (metric names of the ``metrics`` table, node -1).
BATCH_METRICS: tuple[str, ...] = (
    "wall_seconds",
    "messages",
    "tuples",
    "prov_bytes",
    "state_bytes",
)


def batch_numbers(ledger: pd.DataFrame, metrics: pd.DataFrame | None) -> pd.DataFrame:
    """One row per committed batch: the ledger's columns and the totals of :data:`BATCH_METRICS`.

    ``metrics`` is the long ``metrics`` table (``batch_id``, ``node``, ``metric``, ``value``;
    node -1 holds totals). Metrics of a batch without a ledger row (in progress or failed) are
    left out; a metric never recorded is a missing value.

    >>> ledger = pd.DataFrame({"batch_id": [1], "updates_in": [5]})
    >>> metrics = pd.DataFrame({"batch_id": [1, 1, 2], "node": [-1, 0, -1],
    ...                         "metric": ["messages"] * 3, "value": [7.0, 3.0, 9.0]})
    >>> batch_numbers(ledger, metrics)[["batch_id", "updates_in", "messages"]].to_dict("records")
    [{'batch_id': 1, 'updates_in': 5, 'messages': 7.0}]
    """
    frame = ledger.sort_values("batch_id").reset_index(drop=True)
    totals = pd.DataFrame(columns=["batch_id", *BATCH_METRICS])
    if metrics is not None and not metrics.empty:
        rows = metrics[(metrics["node"] == -1) & metrics["metric"].isin(BATCH_METRICS)]
        totals = rows.pivot_table(
            index="batch_id", columns="metric", values="value", aggfunc="last"
        ).reset_index()
    for name in BATCH_METRICS:
        if name not in totals:
            totals[name] = float("nan")
    totals = totals[["batch_id", *BATCH_METRICS]].astype({"batch_id": "int64"})
    totals.columns.name = None
    merged = frame.merge(totals, on="batch_id", how="left")
    return merged.astype({name: "float64" for name in BATCH_METRICS})


def latest_results(results: pd.DataFrame) -> tuple[int | None, pd.DataFrame]:
    """The latest batch's expectation results, failures first; ``(None, empty)`` if none.

    >>> frame = pd.DataFrame({"batch_id": [1, 2, 2], "suite": ["s"] * 3, "table": ["t"] * 3,
    ...                       "expectation": ["a", "b", "c"], "success": [False, True, False]})
    >>> batch, rows = latest_results(frame)
    >>> batch, list(rows["expectation"])
    (2, ['c', 'b'])
    """
    if results.empty:
        return None, results
    batch = int(results["batch_id"].max())
    rows = results[results["batch_id"] == batch]
    order = [c for c in ("success", "suite", "table", "expectation") if c in rows]
    rows = rows.assign(success=rows["success"].astype(bool)).sort_values(order, kind="stable")
    return batch, rows.reset_index(drop=True)
