"""Reading the lake for the dashboard: delta-rs (no JVM), cached by Delta table version.

Every loader takes the table's current version as an argument, so a new commit changes the
cache key and the page shows fresh data; an unchanged table is never read twice.

Text from the lake (ids, values, error messages) reaches Markdown (``st.markdown``, captions,
messages, headings, metric values) only through :func:`text`, which makes it render as exactly
its characters; widget options and dataframe cells are plain text already, and Graphviz labels
are quoted (:func:`links_dot`).

>>> links_dot([("a", "b", 1.0)])
'digraph links {\\n  rankdir=LR;\\n  node [shape=circle];\\n  "a" -> "b" [label="1"];\\n}'
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple
from urllib.parse import unquote, urlparse

import pandas as pd
import streamlit as st
from deltalake import DeltaTable
from deltalake.exceptions import DeltaError, TableNotFoundError

from aspen.catalog import VIEW_COLUMNS, VIEWS
from aspen.errors import AspenError, ProvenanceExpiredError, UnknownKeyError
from aspen.lake.committed import committed_versions, reading_version
from aspen.lake.deltars import exact_row_count, table_version_or_none, text_field
from aspen.lake.summary import KNOWN_TABLES, SUMMARY_TABLE
from aspen.lake.tables import READINGS
from aspen.lake.view_log import VIEW_CHANGES, current_rows, read_view_at
from aspen.pipeline import lake_provenance
from aspen.pipeline.batch import registry_through_rows
from aspen.pipeline.boundary import printable
from aspen.pipeline.lake_provenance import PROVENANCE_VIEWS, Explanation, LakeProvenance
from aspen.pipeline.provenance_vars import key_columns, read_pairs, touched_pairs
from aspen.settings import DEFAULT_LAKE, Settings
from aspen.views.registry import REGISTRY
from aspen.views.why_not import WhyNot, cost_text, route_through, why_not

__all__ = [
    "in_foreground",
    # re-exported from the package: what pages and pictures need of it comes through here
    "PROVENANCE_VIEWS",
    "READINGS",
    "REGISTRY",
    "AspenError",
    "Explanation",
    "LakeProvenance",
    "ProvenanceExpiredError",
    "Settings",
    "UnknownKeyError",
    "UNREADABLE",
    "WhyNot",
    "cost_text",
    "registry_through_rows",
    "route_through",
    "why_not",
    # this module's own
    "DEATH_STYLES",
    "DELETED_LINK_COLUMNS",
    "NO_REGION",
    "PROVENANCE_TABLES",
    "Snapshot",
    "TableStatus",
    "ViewPairs",
    "batch_numbers",
    "base_tuple_of",
    "current_lake",
    "deleted_links",
    "ingest_batches",
    "latest_results",
    "lake_name",
    "lake_tables",
    "live_edges",
    "link_of",
    "links_dot",
    "load_provenance",
    "load_table",
    "load_view",
    "provenance_versions",
    "read_latest",
    "read_view_pairs",
    "recent_batches",
    "resolve_lake",
    "route_text",
    "row_count",
    "sensor_chain",
    "sensor_map",
    "table_status",
    "table_version",
    "plain",
    "text",
    "when_text",
    "witness_dot",
]

#: What reading a table of the lake (or explaining what it holds) may raise: a page shows a
#: message, not a traceback.
UNREADABLE = (AspenError, DeltaError, OSError, ValueError, KeyError)
#: Beyond this many edges the network page asks the user to filter by node.
MAX_DRAWN_EDGES = 400
_BACKTICKS = re.compile(r"`+")


def text(value: object) -> str:
    """``value`` as Markdown that renders as exactly its text: an inline code span, so no link,
    emphasis, HTML, math, colour or emoji syntax in it takes effect (an escape with backslashes
    would not stop Streamlit from turning a bare URL into a link). Control characters are
    escaped (``\\n``), so it stays one line.

    >>> text("[click](http://evil.example/)"), text("a`b"), text("`x`"), text("")
    ('`[click](http://evil.example/)`', '``a`b``', '`` `x` ``', '` `')
    """
    content = printable(str(value))
    if not content:
        return "` `"
    fence = "`" * (max((len(run) for run in _BACKTICKS.findall(content)), default=0) + 1)
    # a span that starts or ends with a backtick (or a space) needs a space inside its fences
    pad = " " if content[0] in "` " or content[-1] in "` " else ""
    return f"{fence}{pad}{content}{pad}{fence}"


def plain(value: object) -> str:
    """``value`` as text plotly shows as exactly its characters: one line (control characters
    escaped), ``&``, ``<`` and ``>`` as entities (plotly reads a subset of HTML in labels and
    hover texts) and ``$`` as ``&#36;`` (text between dollars would be LaTeX). The one text
    cleaner of the pictures (:func:`text` is Markdown's).

    >>> plain("<b>x</b>"), plain("$x$"), plain("a→b"), plain("a\\nb")
    ('&lt;b&gt;x&lt;/b&gt;', '&#36;x&#36;', 'a→b', 'a\\\\nb')
    """
    return html.escape(printable(str(value)), quote=False).replace("$", "&#36;")


def when_text(value: object) -> str:
    """A timestamp as ``YYYY-MM-DD HH:MM:SS`` (UTC), ``–`` when it is missing or not one (safe
    for Markdown: digits and separators only).

    >>> when_text(pd.Timestamp("2026-01-02T03:04:05.6Z")), when_text("[x](http://e.example/)")
    ('2026-01-02 03:04:05', '–')
    """
    try:
        moment = pd.to_datetime(value, utc=True)
    except (TypeError, ValueError, OverflowError):
        return "–"
    return "–" if pd.isna(moment) else moment.strftime("%Y-%m-%d %H:%M:%S")


def resolve_lake(argv: Sequence[str] = ()) -> str:
    """The lake root: ``--lake`` after ``streamlit run app.py --``, else ``ASPEN_LAKE``, else the
    default.

    >>> resolve_lake(["--lake", "/tmp/lake"])
    '/tmp/lake'
    """
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--lake", default=None)
    known, _ = parser.parse_known_args(list(argv))
    if known.lake is not None:
        return known.lake
    return os.environ.get("ASPEN_LAKE") or DEFAULT_LAKE


def current_lake() -> Settings:
    """The settings of the lake the server was started with: ``--lake`` among the server's
    arguments (``streamlit run app.py -- --lake L``), else ``ASPEN_LAKE`` (which ``aspen
    dashboard`` sets too), else the default. Every page asks for it itself, so a page opened
    first by a deep link (which Streamlit may run without ``app.py``) reads the same lake.
    """
    return Settings(lake=resolve_lake(sys.argv[1:]))


def lake_name(settings: Settings) -> str:
    """The lake as the dashboard names it: the last component of its path (``s3://…/name`` for
    an object store), never the full path of the server's file system.

    >>> lake_name(Settings(lake="/srv/data/lakehouse")), lake_name(Settings(lake="s3a://b/x/l"))
    ('lakehouse', 's3a://…/l')
    """
    parsed = urlparse(settings.lake_uri)
    last = unquote(parsed.path).rstrip("/").rsplit("/", 1)[-1] or parsed.netloc
    return last if parsed.scheme == "file" else f"{parsed.scheme}://…/{last}"


def _error_text(settings: Settings, err: Exception) -> str:
    """``err`` for a page (:func:`text`), the lake's location replaced by its name.

    >>> _error_text(Settings(lake="/srv/lake"), OSError("no file:///srv/lake/x or /srv/lake/y"))
    '`no <lake>/x or <lake>/y`'
    """
    message = str(err)
    parsed = urlparse(settings.lake_uri)
    places = [settings.lake_uri] + ([unquote(parsed.path)] if parsed.scheme == "file" else [])
    for place in places:
        message = message.replace(place, "<lake>")
    return text(message)


#: The latest version of table ``name``, or ``None`` when it does not exist (cheap; no cache).
table_version = table_version_or_none


@st.cache_data(show_spinner=False, max_entries=64)
def load_table(uri: str, version: int, columns: tuple[str, ...] | None = None) -> pd.DataFrame:
    """The table at ``uri`` as of ``version``, optionally only ``columns`` (cached per
    arguments)."""
    return DeltaTable(uri, version=version).to_pandas(
        columns=list(columns) if columns is not None else None
    )


@st.cache_data(show_spinner=False, max_entries=64)
def load_view(lake: str, view: str, snapshot_version: int, log_version: int | None,
              columns: tuple[str, ...] | None = None) -> pd.DataFrame:
    """View ``view`` of ``lake``: its snapshot with the change log applied (cached per
    versions); ``columns`` of the view's own read alone, without the formulas' bytes."""
    if columns is not None and set(columns) <= set(VIEW_COLUMNS.get(view, ())):
        try:
            return _view_columns(Settings(lake=lake), view, snapshot_version, log_version,
                                 list(columns))
        except (ValueError, KeyError):  # a table without the usual columns: read it whole
            pass
    frame = read_view_at(Settings(lake=lake), view, snapshot_version, log_version)
    if columns is None:
        return frame
    missing = [column for column in columns if column not in frame.columns]
    if missing:  # a view table written without its columns: read_latest reports it
        raise ValueError(f"no column {', '.join(missing)}")
    return frame[list(columns)]


def _view_columns(settings: Settings, view: str, snapshot_version: int,
                  log_version: int | None, columns: list[str]) -> pd.DataFrame:
    """``columns`` of view ``view`` at these versions: the snapshot's key and row columns
    without ``provenance`` (the bulk of a view's bytes), the view's log rows applied."""
    wanted = [*VIEW_COLUMNS[view], "prov_bytes", "batch_id", "node"]
    snapshot = DeltaTable(settings.table_uri(view), version=snapshot_version) \
        .to_pandas(columns=wanted).assign(provenance=None)
    if log_version is None:
        return snapshot[columns]
    log = DeltaTable(settings.table_uri(VIEW_CHANGES), version=log_version).to_pyarrow_dataset()
    changes = log.to_table(filter=text_field("view") == view).to_pandas()
    if changes.empty:
        return snapshot[columns]
    return current_rows(view, snapshot, changes.assign(provenance=None))[columns]


def _read_version(settings: Settings, name: str) -> tuple[int | None, pd.DataFrame | None]:
    """The version readers read of ``name`` and, for a view, its rows (cached)."""
    if name not in VIEWS:
        return reading_version(settings, name), None
    versions = committed_versions(settings)
    version = reading_version(settings, name, versions)
    if version is None:
        return None, None
    return version, load_view(settings.lake_uri, name, version, versions.get(VIEW_CHANGES))


#: Exact row count of the table at ``uri`` as of ``version`` (from Parquet metadata; cached per
#: arguments).
row_count = st.cache_data(show_spinner=False, max_entries=256)(exact_row_count)


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
    """Version and row count of one table as readers see it (a maintained table as of the last
    committed batch), ``None`` if there is none to read.

    A table delta-rs cannot read (e.g. deletion vectors) gives a row whose ``problem`` says why.
    """
    uri = settings.table_uri(name)
    status: TableStatus = {
        "table": name,
        "version": None,
        "rows": None,
        "last_commit": None,
        "problem": "",
    }
    try:
        version, view_rows = _read_version(settings, name)
        if version is None:
            return None
        table = DeltaTable(uri, version=version)
    except TableNotFoundError:
        return None
    except (DeltaError, OSError, ValueError) as err:  # e.g. a damaged log: a row, not a crash
        status["problem"] = f"cannot read with delta-rs: {_error_text(settings, err)}"
        return status
    status["version"] = version
    try:
        history = table.history(1)
        if history and history[0].get("timestamp") is not None:
            status["last_commit"] = pd.to_datetime(history[0]["timestamp"], unit="ms", utc=True)
        status["rows"] = row_count(uri, version) if view_rows is None else len(view_rows)
    except (DeltaError, OSError, ValueError) as err:
        status["problem"] = f"cannot read with delta-rs: {_error_text(settings, err)}"
    return status


def _dot_escaped(value: object) -> str:
    """``value`` for inside a DOT quoted string: control characters escaped, then backslashes
    and quotes, so it can neither end the string nor use a label escape such as ``\\N``."""
    return printable(str(value)).replace("\\", "\\\\").replace('"', '\\"')


def _quote(value: object) -> str:
    """A DOT quoted string of ``value`` (:func:`_dot_escaped`)."""
    return '"' + _dot_escaped(value) + '"'


def _cost_label(cost: object) -> str:
    try:
        value = float(cost)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return ""
    return f"{value:g}"


#: Edge style of a recently dead link, by its ``death`` in the ``variables`` registry.
DEATH_STYLES: dict[str, str] = {
    "deleted": "style=dashed, color=red, fontcolor=red",
    "expired": "style=dashed, color=gray55, fontcolor=gray40",
}


def links_dot(
    edges: Iterable[tuple[object, object, object]],
    focus: str | None = None,
    gone: Iterable[tuple[object, object, object, object]] = (),
) -> str:
    """A Graphviz DOT digraph of ``(src, dst, cost)`` edges; ``focus`` is drawn highlighted.

    ``gone`` are recently dead links ``(src, dst, death, batch)``, drawn dashed (red when
    deleted, grey when expired) and labelled with their death and batch.
    Ids are quoted and escaped, so any string is a valid node name.

    >>> 'fillcolor' in links_dot([("a", "b", 2)], focus="a")
    True
    >>> links_dot([], gone=[("a", "b", "expired", 4)]).splitlines()[3]
    '  "a" -> "b" [style=dashed, color=gray55, fontcolor=gray40, label="expired b4"];'
    """
    lines = ["digraph links {", "  rankdir=LR;", "  node [shape=circle];"]
    if focus is not None:
        lines.append(f"  {_quote(focus)} [style=filled, fillcolor=gold];")
    for src, dst, cost in edges:
        label = _cost_label(cost)
        attrs = f" [label={_quote(label)}]" if label else ""
        lines.append(f"  {_quote(src)} -> {_quote(dst)}{attrs};")
    for src, dst, death, batch in gone:
        style = DEATH_STYLES.get(str(death), DEATH_STYLES["deleted"])
        label = _quote(f"{death} b{batch}")
        lines.append(f"  {_quote(src)} -> {_quote(dst)} [{style}, label={label}];")
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


#: The tables a :class:`LakeProvenance` reads (re-exported for the pages).
PROVENANCE_TABLES = lake_provenance.PROVENANCE_TABLES
#: Cache key of a lake's provenance: ``(table, version)`` of each provenance table that exists.
ProvenanceVersions = lake_provenance.ProvenanceVersions
#: Versions of the existing ``variables`` and view tables (cheap; changes on every commit).
provenance_versions = lake_provenance.provenance_versions
#: Marks a page drawing: the server's provenance warm-up waits meanwhile (``app.py``).
in_foreground = lake_provenance.in_foreground


def load_provenance(lake: str, versions: ProvenanceVersions) -> LakeProvenance:
    """The provenance of ``lake`` at table ``versions``: one per server process and lake
    version, shared by every session (it decodes under a lock: ``dd`` managers are not
    thread-safe). A question decodes only the rows it needs; decoded formulas are kept, a new
    version is derived from the last one (only a batch's changed rows are decoded again), and
    the server's warming thread (``aspen dashboard``) decodes the rest in the background.
    """
    return lake_provenance.shared_provenance(lake, versions)


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
    """One table as the dashboard read it: ``version`` and ``rows``, or the ``problem`` met
    (Markdown, its lake text through :func:`text`)."""

    version: int
    rows: pd.DataFrame
    problem: str = ""


def read_latest(
    settings: Settings, name: str, columns: tuple[str, ...] | None = None
) -> Snapshot | None:
    """Table ``name`` as readers see it (cached by version): a maintained table as of the last
    committed batch, any other at its latest version; ``None`` when there is none to read.

    ``columns`` reads only those (e.g. not the provenance bytes). A table delta-rs cannot read,
    or without one of ``columns``, gives an empty ``rows`` and a ``problem`` saying why, so a
    page shows a message instead of a traceback.

    >>> read_latest(Settings(lake="/nonexistent/lake"), "ledger") is None
    True
    """
    try:
        version = reading_version(settings, name)
    except (DeltaError, OSError, ValueError) as err:  # e.g. a damaged log
        problem = f"cannot read {text(name)} with delta-rs: {_error_text(settings, err)}"
        return Snapshot(-1, pd.DataFrame(), problem)
    if version is None:
        return None
    try:
        if name in VIEWS:  # the snapshot with the change log applied
            versions = committed_versions(settings)
            return Snapshot(version, load_view(settings.lake_uri, name, version,
                                               versions.get(VIEW_CHANGES), columns))
        # metrics keep an uncommitted batch's rows: the health page flags that batch
        return Snapshot(version, load_table(settings.table_uri(name), version, columns))
    except TableNotFoundError:  # removed between the two reads
        return None
    except (DeltaError, OSError, ValueError) as err:
        return Snapshot(version, pd.DataFrame(),
                        f"cannot read {text(name)} with delta-rs: {_error_text(settings, err)}")


class ViewPairs(NamedTuple):
    """The distinct pairs of a view's first two attributes (as text), read for the Why page's
    choices: each pair as ``first NUL second`` in ``joined``, the first values and the second
    values that occur, the smallest pair of two different values, or the ``problem`` met."""

    version: int
    joined: frozenset[str]
    firsts: tuple[str, ...]
    seconds: tuple[str, ...]
    first_pair: tuple[str, str] | None
    problem: str = ""

    def holds(self, first: str, second: str) -> bool:
        """Whether the view holds a row of the pair (``first``, ``second``).

        >>> ViewPairs(1, frozenset({"a\\x00b"}), ("a",), ("b",), ("a", "b")).holds("a", "b")
        True
        """
        return f"{first}\x00{second}" in self.joined

    def seconds_of(self, first: str) -> list[str]:
        """The second values paired with ``first``, sorted (a scan: for small views)."""
        head = f"{first}\x00"
        return sorted(pair[len(head):] for pair in self.joined if pair.startswith(head))


def read_view_pairs(settings: Settings, view: str,
                    columns: tuple[str, str]) -> ViewPairs | None:
    """The pairs ``columns`` of view ``view`` as readers see it (kept once per server and
    versions): only those two columns of its snapshot are read, and the change log's pairs are
    settled by reading their rows (not the view's formulas and paths: seconds at 1,000 nodes);
    ``None`` when there is no view to read."""
    try:
        versions = committed_versions(settings)
        version = reading_version(settings, view, versions)
        if version is None:
            return None
        return _view_pairs(settings.lake_uri, view, version, versions.get(VIEW_CHANGES),
                           columns)
    except TableNotFoundError:
        return None
    except (DeltaError, OSError, ValueError, KeyError) as err:
        problem = f"cannot read {text(view)} with delta-rs: {_error_text(settings, err)}"
        return ViewPairs(-1, frozenset(), (), (), None, problem)


@st.cache_resource(show_spinner=False, max_entries=8)
def _view_pairs(lake: str, view: str, version: int, log_version: int | None,
                columns: tuple[str, str]) -> ViewPairs:
    """:func:`read_view_pairs` at these versions (one object, shared: never modified). The
    pairs are made unique by Arrow's hashing of ``first NUL second`` (a NUL sorts first, so
    the joined texts sort as the pairs do)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    first, second = columns
    table = key_columns(Settings(lake=lake), view, version, columns)
    ones = pc.cast(table.column(first), pa.string())
    twos = pc.cast(table.column(second), pa.string())
    joined = pc.binary_join_element_wise(ones, twos, "\x00")
    pairs = set(pc.unique(joined).to_pylist())
    if log_version is not None:
        versions = {view: version, VIEW_CHANGES: log_version}
        touched = touched_pairs(Settings(lake=lake), view, versions)
        if touched:
            now = read_pairs(Settings(lake=lake), view, versions, touched)
            pairs -= {f"{a}\x00{b}" for a, b in touched}
            pairs |= {f"{a}\x00{b}" for a, b in zip(now[first].astype(str),
                                                      now[second].astype(str), strict=True)}
    split = [pair.split("\x00", 1) for pair in pairs] if log_version is not None else None
    if split is None:  # the snapshot alone: Arrow finds the ends and the first pair
        firsts = tuple(sorted(pc.unique(ones).to_pylist()))
        seconds = tuple(sorted(pc.unique(twos).to_pylist()))
        apart = joined.filter(pc.not_equal(ones, twos))
        smallest = pc.min(apart).as_py() if len(apart) else None
    else:
        firsts = tuple(sorted({a for a, _ in split}))
        seconds = tuple(sorted({b for _, b in split}))
        smallest = min((p for p in pairs if p.split("\x00", 1)[0] != p.split("\x00", 1)[1]),
                       default=None)
    first_pair = None if smallest is None else tuple(smallest.split("\x00", 1))
    return ViewPairs(version, frozenset(pairs), firsts, seconds, first_pair)  # type: ignore[arg-type]


def ingest_batches(settings: Settings, variables: pd.DataFrame) -> list[object]:
    """Every ingest batch number known: ``ingest_files`` (ingests and TTL sweeps), else the
    births and deaths in the ``variables`` registry (``variables``: its rows)."""
    files = read_latest(settings, "ingest_files", ("batch_id",))
    if files is not None and not files.problem and not files.rows.empty:
        return list(files.rows["batch_id"])
    found: list[object] = []
    for column in ("inserted_batch", "deleted_batch"):
        if column in variables:
            found += list(variables[column])
    return found


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


def recent_batches(batch_ids: Iterable[object], count: int) -> list[int]:
    """The ``count`` most recent (largest) distinct batch numbers among ``batch_ids``, newest first.

    Missing values are skipped.

    >>> recent_batches([1, 3, 3, None, 2, 5], 3)
    [5, 3, 2]
    >>> recent_batches([4], 0)
    []
    """
    known = {int(b) for b in batch_ids if b is not None and not pd.isna(b)}  # type: ignore[call-overload]
    return sorted(known, reverse=True)[: max(count, 0)]


def _values_of(raw: object) -> list[object]:
    values = json.loads(raw) if isinstance(raw, str) else raw
    if isinstance(values, dict):
        values = list(values.values())
    return list(values) if values is not None else []  # type: ignore[call-overload]


#: Columns of :func:`deleted_links`.
DELETED_LINK_COLUMNS = ["src", "dst", "cost", "death", "deleted_batch", "instances"]


def deleted_links(variables: pd.DataFrame, batches: Iterable[int]) -> pd.DataFrame:
    """One row per link whose instances died (deleted or expired) in one of ``batches``.

    ``variables`` is the registry (``relation``, ``values`` as JSON ``[src, dst, cost]``,
    ``deleted_batch`` and, when present, ``death``). Deaths by replacement (a new cost: the link
    lives on) are left out; a death without a recorded kind counts as ``deleted``. A link with
    several dead instances is reported once, by its latest death.

    >>> registry = pd.DataFrame({
    ...     "relation": ["link", "link", "link", "sensor"],
    ...     "values": ['["a","b",1.0]', '["b","c",2.0]', '["c","a",3.0]', '["s1",0,0]'],
    ...     "deleted_batch": [3, 2, 3, 3], "death": ["expired", "deleted", "replaced", "deleted"]})
    >>> deleted_links(registry, [3]).to_dict("records")
    [{'src': 'a', 'dst': 'b', 'cost': 1.0, 'death': 'expired', 'deleted_batch': 3, 'instances': 1}]
    """
    wanted = set(batches)
    if variables.empty or not wanted or "deleted_batch" not in variables:
        return pd.DataFrame(columns=DELETED_LINK_COLUMNS)
    died = variables[
        (variables["relation"].astype(str) == "link")
        & variables["deleted_batch"].notna()
    ]
    died = died[died["deleted_batch"].astype("int64").isin(wanted)]
    if "death" in died:
        death = died["death"].fillna("deleted").astype(str)
    else:
        death = pd.Series("deleted", index=died.index)
    died = died.assign(death=death)
    died = died[died["death"] != "replaced"]
    rows = []
    for values, kind, batch in zip(died["values"], died["death"], died["deleted_batch"],
                                   strict=True):
        parts = _values_of(values)
        if len(parts) < 2:
            continue
        cost = float(parts[2]) if len(parts) > 2 and parts[2] is not None else float("nan")
        rows.append((str(parts[0]), str(parts[1]), cost, kind, int(batch)))
    if not rows:
        return pd.DataFrame(columns=DELETED_LINK_COLUMNS)
    frame = pd.DataFrame(rows, columns=DELETED_LINK_COLUMNS[:-1])
    frame = frame.sort_values(["src", "dst", "deleted_batch", "death"])
    counts = frame.groupby(["src", "dst"]).size().rename("instances")
    latest = frame.groupby(["src", "dst"]).tail(1)
    latest = latest.merge(counts.reset_index(), on=["src", "dst"]).sort_values(["src", "dst"])
    return latest[DELETED_LINK_COLUMNS].reset_index(drop=True)


def base_tuple_of(text: str) -> tuple[str, tuple[str, ...]] | None:
    """``(relation, values)`` of a described base tuple, ``None`` if it is not one.

    >>> base_tuple_of("region_seed(r1,s1)"), base_tuple_of("sensor(s2)"), base_tuple_of("v7")
    (('region_seed', ('r1', 's1')), ('sensor', ('s2',)), None)
    """
    relation, paren, rest = text.partition("(")
    if not paren or not rest.endswith(")") or not relation:
        return None
    return relation, tuple(rest[:-1].split(","))


def _tree_path(
    nodes: Sequence[str], positions: dict[str, tuple[float, float]], start: str, end: str
) -> list[str] | None:
    """The path from ``start`` to ``end`` in the Euclidean minimum spanning tree of ``nodes``."""
    if any(n not in positions for n in nodes):
        return None
    parent: dict[str, str | None] = {start: None}
    best = {n: (float("inf"), start) for n in nodes if n != start}
    last = start
    while best:
        for node in best:
            (x0, y0), (x1, y1) = positions[last], positions[node]
            distance = ((x0 - x1) ** 2 + (y0 - y1) ** 2) ** 0.5
            if distance < best[node][0]:
                best[node] = (distance, last)
        last = min(best, key=lambda n: (best[n][0], n))
        parent[last] = best.pop(last)[1]
    path = [end]
    while (up := parent[path[-1]]) is not None:
        path.append(up)
    return path[::-1]


def sensor_chain(
    witness: Iterable[str], member: str, positions: dict[str, tuple[float, float]]
) -> tuple[str | None, list[str]]:
    """The seed and the sensor chain (seed first, ``member`` last) of one region witness.

    ``witness`` holds described base tuples (``region_seed(r,s)``, ``sensor(s)``,
    ``triggered(s)``). In a minimal witness consecutive sensors are within the region distance
    and no other pair is (else a shorter chain would be a witness), so the chain is the path of
    the Euclidean minimum spanning tree of its sensors: no distance threshold is needed. Without
    positions for every sensor the chain is the seed, the others sorted, then ``member``.

    >>> w = ["region_seed(r,a)", "sensor(a)", "triggered(a)", "sensor(c)", "triggered(c)",
    ...      "sensor(b)", "triggered(b)"]
    >>> sensor_chain(w, "c", {"a": (0, 0), "b": (10, 0), "c": (20, 0)})
    ('a', ['a', 'b', 'c'])
    >>> sensor_chain(w, "c", {})
    ('a', ['a', 'b', 'c'])
    """
    seed: str | None = None
    sensors: set[str] = set()
    for text in witness:
        parsed = base_tuple_of(text)
        if parsed is None:
            continue
        relation, values = parsed
        if relation == "region_seed" and len(values) == 2:
            seed = values[1]
        elif relation in ("sensor", "triggered") and values:
            sensors.add(values[0])
    if seed is not None:
        sensors.add(seed)
    sensors.add(member)
    start = seed if seed is not None else member
    path = _tree_path(sorted(sensors), positions, start, member)
    if path is None:
        middle = sorted(sensors - {start, member})
        path = [start, *middle] + ([member] if member != start else [])
    return seed, path


# -- continuous queries ---------------------------------------------------------------------
