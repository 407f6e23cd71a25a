"""Reading the stream networks a lake ran, their outputs and drops, for the Stream networks page.

The networks (``stream_networks``: name, definition, provenance mode), their outputs
(``network_outputs``, without the encoded provenance) and the readings they dropped
(``network_drops``) are read with delta-rs (only one network's rows) at the versions
``aspen.lake`` says readers read, cached by version; an output's readings come from
:func:`aspen.readings.network_provenance.explain_output`, cached by the versions of the tables
it reads. The rest are pure functions over frames: a network in words, the outputs with their
attributes flattened, the readings and drops as tables, and the chart of an output's readings.

Text from the lake reaches Markdown only through :func:`lakeview.text`; the chart's lake text
(input stream names, sensor ids) is HTML-escaped, so Plotly shows it as exactly its characters.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from deltalake import DeltaTable
from lakeview import text, when_text

from aspen.errors import AspenError
from aspen.lake import tables
from aspen.lake.committed import reading_version
from aspen.lake.deltars import text_field
from aspen.readings.network_provenance import OutputExplanation, explain_output
from aspen.readings.network_tables import NETWORK_DROPS, NETWORK_OUTPUTS, STREAM_NETWORKS
from aspen.settings import Settings
from aspen.streams.networks import load_network

__all__ = [
    "DROP_COLUMNS",
    "ONE_GROUP",
    "OUTPUT_COLUMNS",
    "PAGE_ROWS",
    "READING_TABLE_COLUMNS",
    "NetworkChoice",
    "drop_table",
    "explanation",
    "group_choices",
    "group_label",
    "mode_words",
    "moment_text",
    "network_choices",
    "network_drops",
    "network_outputs",
    "network_words",
    "operator_words",
    "output_figure",
    "output_label",
    "output_table",
    "output_words",
    "reading_table",
    "reason_counts",
    "seconds_time",
    "window_span",
]

#: Rows per page of the page's tables.
PAGE_ROWS = 100
#: The ``network_outputs`` columns the page reads (not the encoded provenance).
OUTPUT_COLUMNS: tuple[str, ...] = ("output", "grp", "ts", "data")
#: The ``network_drops`` columns the page reads.
DROP_COLUMNS: tuple[str, ...] = ("id", "sensor", "ts", "value", "reason")
#: The columns of :func:`reading_table`.
READING_TABLE_COLUMNS: list[str] = ["stream", "id", "sensor", "time", "value"]
#: How the group of a network that runs as one group (``grp`` is ``""``) is shown.
ONE_GROUP = "(one group)"
#: Attributes shown as times (seconds since the epoch): these names, and these after a ``_``.
_TIME_ATTRIBUTES = ("ts", "start", "end")
#: Markers of the chart's input streams, in turn.
_SYMBOLS = ("circle", "diamond", "square", "triangle-up", "cross", "star", "x", "hexagon")
#: The shade of an output's window on the chart.
WINDOW_COLOUR = "#ff7f0e"


# -- reads ----------------------------------------------------------------------------------


@st.cache_data(show_spinner=False, max_entries=64)
def _filtered(uri: str, version: int, columns: tuple[str, ...],
              equal: tuple[tuple[str, str], ...]) -> pd.DataFrame:
    """Rows of the table at ``uri`` as of ``version`` whose text columns equal the values of
    ``equal`` (cached per arguments; only the matching rows are materialised)."""
    condition = None
    for column, value in equal:
        term = text_field(column) == value
        condition = term if condition is None else condition & term
    dataset = DeltaTable(uri, version=version).to_pyarrow_dataset()
    return dataset.to_table(columns=list(columns), filter=condition).to_pandas()


@dataclass(frozen=True)
class NetworkChoice:
    """A network that ran on the lake: its name, provenance mode, recorded definition (JSON
    text), that definition parsed (None when it is not JSON), whether it runs per sensor (None
    when this release cannot load it) and its lateness in seconds."""

    name: str
    mode: str
    definition: str
    spec: dict[str, Any] | None
    per_sensor: bool | None = None
    lateness_s: float | None = None

    @classmethod
    def of(cls, name: str, mode: str, definition: str) -> NetworkChoice:
        """The choice of a recorded network (its definition loaded when it can be).

        >>> choice = NetworkChoice.of("n", "lazy", '{"name": "n", "query": {"stream": "readings"}}')
        >>> choice.per_sensor, choice.lateness_s
        (True, 30.0)
        >>> NetworkChoice.of("n", "eager", "not json").spec is None
        True
        """
        try:
            spec = json.loads(definition)
        except ValueError:
            return cls(name, mode, definition, None)
        if not isinstance(spec, dict):
            return cls(name, mode, definition, None)
        try:
            network = load_network(definition)
        except (AspenError, TypeError, ValueError, KeyError):  # a definition it cannot load
            return cls(name, mode, definition, spec)
        return cls(name, mode, definition, spec, network.partition is not None,
                   network.lateness_s)

    def pretty(self) -> str:
        """The definition as indented JSON (as stored when it is not JSON).

        >>> print(NetworkChoice("n", "eager", '{"a":1}', {"a": 1}).pretty())
        {
          "a": 1
        }
        """
        if self.spec is None:
            return self.definition
        return json.dumps(self.spec, indent=2, ensure_ascii=False)


@st.cache_data(show_spinner=False, max_entries=16)
def _networks(lake: str, version: int) -> list[NetworkChoice]:
    """The networks of ``stream_networks`` as of ``version``, by name (cached per version)."""
    settings = Settings(lake=lake)
    rows = _filtered(settings.table_uri(STREAM_NETWORKS), version,
                     ("name", "definition", "mode"), ())
    rows = rows.drop_duplicates("name", keep="first").sort_values("name")
    return [NetworkChoice.of(str(name), str(mode), str(definition))
            for name, definition, mode in rows[["name", "definition", "mode"]].itertuples(
                index=False)]


def network_choices(settings: Settings) -> list[NetworkChoice] | None:
    """The networks recorded in ``stream_networks``, by name (None when there is no such
    table)."""
    version = reading_version(settings, STREAM_NETWORKS)
    return None if version is None else _networks(settings.lake_uri, version)


def network_outputs(settings: Settings, network: str) -> pd.DataFrame:
    """Network ``network``'s outputs (``output``, ``grp``, ``ts`` in seconds, ``data``),
    newest first (by event time, then id); empty when it has none."""
    version = reading_version(settings, NETWORK_OUTPUTS)
    if version is None:
        return pd.DataFrame(columns=list(OUTPUT_COLUMNS))
    frame = _filtered(settings.table_uri(NETWORK_OUTPUTS), version, OUTPUT_COLUMNS,
                      (("network", network),))
    frame = frame.drop_duplicates("output", keep="last")
    frame = frame.assign(grp=frame["grp"].fillna("").astype(str))
    return frame.sort_values(["ts", "output"], ascending=[False, True]).reset_index(drop=True)


def network_drops(settings: Settings, network: str) -> pd.DataFrame:
    """The readings network ``network`` dropped (``id``, ``sensor``, ``ts``, ``value``,
    ``reason``), by id."""
    version = reading_version(settings, NETWORK_DROPS)
    if version is None:
        return pd.DataFrame(columns=list(DROP_COLUMNS))
    frame = _filtered(settings.table_uri(NETWORK_DROPS), version, DROP_COLUMNS,
                      (("network", network),))
    return frame.sort_values("id").reset_index(drop=True)


@st.cache_data(show_spinner=False, max_entries=32)
def _explained(lake: str, network: str, output: str,
               versions: tuple[int | None, ...]) -> OutputExplanation:
    """:func:`explain_output` (cached per ``versions`` of the tables it reads)."""
    return explain_output(Settings(lake=lake), network, output)


def explanation(settings: Settings, network: str, output: str) -> OutputExplanation:
    """Output ``output`` of ``network`` with its readings per input stream. Raises what
    :func:`explain_output` raises (e.g. :class:`~aspen.errors.ProvenanceExpiredError` when
    the readings are past retention)."""
    versions = tuple(reading_version(settings, name) for name in
                     (STREAM_NETWORKS, NETWORK_OUTPUTS, NETWORK_DROPS, tables.READINGS))
    return _explained(settings.lake_uri, network, output, versions)


# -- a network in words -----------------------------------------------------------------------


def _number(value: object) -> str:
    """``20`` for 20.0, ``2.5`` for 2.5."""
    return f"{value:g}" if isinstance(value, int | float) else str(value)


def _window_words(window: Mapping[str, Any]) -> str:
    """A window in words.

    >>> _window_words({"seconds": 20, "slide": 10}), _window_words({"seconds": 60})
    ('20 s windows sliding every 10 s', 'tumbling 60 s windows')
    >>> _window_words({"rows": 4, "slide": 2}), _window_words({"rows": 3})
    ('windows of 4 rows sliding every 2 rows', 'windows of 3 rows sliding every 1 row')
    """
    if "seconds" in window:
        size, slide = window["seconds"], window.get("slide", window["seconds"])
        if slide == size:
            return f"tumbling {_number(size)} s windows"
        return f"{_number(size)} s windows sliding every {_number(slide)} s"
    size, slide = window.get("rows"), window.get("slide", 1)
    if slide == size:
        return f"tumbling windows of {_number(size)} rows"
    return (f"windows of {_number(size)} rows sliding every {_number(slide)} "
            f"row{'' if slide == 1 else 's'}")


def _key_words(key: object) -> str:
    return "over every pair" if key is None else f"by {key}"


def operator_words(node: Any) -> str:
    """A network's query in words, its operators in the order rows go through them.

    >>> print(operator_words({"aggregate": {"select": {"stream": "readings"},
    ...     "where": "value > 30"}, "window": {"seconds": 20, "slide": 10},
    ...     "functions": ["avg(value)"], "key": "sensor"}))
    readings → where value > 30 → avg(value) over 20 s windows sliding every 10 s, per sensor
    >>> print(operator_words({"join": [{"stream": "hot"}, {"project": {"stream": "cold"},
    ...     "columns": {"ts": "ts", "f": "value * 2"}}], "within_s": 60.0, "key": None}))
    join of (hot) with (cold → project ts, f = value * 2) within 60 s, over every pair
    """
    if not isinstance(node, Mapping):
        return str(node)
    if "stream" in node:
        return str(node["stream"])
    if "select" in node:
        return f"{operator_words(node['select'])} → where {node.get('where')}"
    if "project" in node:
        columns = node.get("columns") or {}
        parts = [str(out) if out == sql else f"{out} = {sql}" for out, sql in columns.items()]
        return f"{operator_words(node['project'])} → project {', '.join(parts)}"
    if "union" in node:
        left, right = (list(node["union"]) + [None, None])[:2]
        return f"union of ({operator_words(left)}) and ({operator_words(right)})"
    if "join" in node:
        left, right = (list(node["join"]) + [None, None])[:2]
        return (f"join of ({operator_words(left)}) with ({operator_words(right)}) within "
                f"{_number(node.get('within_s'))} s, {_key_words(node.get('key'))}")
    if "aggregate" in node:
        functions = ", ".join(str(f) for f in node.get("functions") or ["avg(value)"])
        window = node.get("window")
        over = _window_words(window) if isinstance(window, Mapping) else str(window)
        key = node.get("key", "sensor")
        per = "" if key is None else f", per {key}"
        return f"{operator_words(node['aggregate'])} → {functions} over {over}{per}"
    return json.dumps(node, ensure_ascii=False)


def mode_words(mode: str) -> str:
    """A network's provenance mode in words (Markdown).

    >>> mode_words("eager")
    "Reduced-Eager provenance: each output keeps its readings' ids per input stream."
    """
    if mode == "eager":
        return "Reduced-Eager provenance: each output keeps its readings' ids per input stream."
    if mode == "lazy":
        return ("Replay-Lazy provenance: each output keeps the interval of its readings' ids per "
                "input stream, and its readings are rebuilt by replaying the group's readings of "
                "that interval.")
    if mode == "none":
        return ("No provenance (it ran with `--provenance none`): its outputs' readings cannot "
                "be shown.")
    return f"Provenance mode {text(mode)}."


def network_words(choice: NetworkChoice) -> str:
    """What the network computes in one line of plain words (Markdown, lake text through
    :func:`text`): its input streams, its operators in order, how it runs, its mode.

    >>> spec = {"name": "hot", "lateness_s": 5.0, "streams": {"readings": "TRUE"},
    ...     "query": {"select": {"stream": "readings"}, "where": "value > 90"}}
    >>> print(network_words(NetworkChoice("hot", "eager", json.dumps(spec), spec, True, 5.0)))
    Network `hot` reads every reading as stream `readings`. It computes \
`readings → where value > 90`, each sensor's readings on their own, with 5 s of lateness. \
Reduced-Eager provenance: each output keeps its readings' ids per input stream.
    """
    name = text(choice.name)
    mode = mode_words(choice.mode)
    spec = choice.spec
    if spec is None or "query" not in spec:
        return f"Network {name}: its stored definition cannot be read. {mode}"
    streams = spec.get("streams") or {"readings": "TRUE"}
    inputs = []
    for stream, predicate in streams.items():
        which = ("every reading" if str(predicate).strip().upper() == "TRUE"
                 else f"the readings where {text(predicate)}")
        inputs.append(f"{which} as stream {text(stream)}")
    how = ("" if choice.per_sensor is None else ", each sensor's readings on their own"
           if choice.per_sensor else ", every reading in one group")
    late = ("" if choice.lateness_s is None
            else f", with {_number(choice.lateness_s)} s of lateness")
    return (f"Network {name} reads {', '.join(inputs)}. It computes "
            f"{text(operator_words(spec['query']))}{how}{late}. {mode}")


# -- the outputs --------------------------------------------------------------------------------


def seconds_time(seconds: object) -> pd.Timestamp | None:
    """Seconds since the epoch as a UTC time (None when it is not a finite number).

    >>> seconds_time(1796119200.0), seconds_time("x")
    (Timestamp('2026-12-01 10:00:00+0000', tz='UTC'), None)
    """
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) \
            or not math.isfinite(seconds):
        return None
    return pd.Timestamp(round(seconds * 1_000_000), unit="us", tz="UTC")


def moment_text(value: object) -> str:
    """A time (or seconds since the epoch) as ``YYYY-MM-DD HH:MM:SS.mmm`` (UTC), ``–`` when it
    is not one.

    >>> moment_text(1796119200.5), moment_text(pd.Timestamp("2026-01-02T03:04:05.6789Z"))
    ('2026-12-01 10:00:00.500', '2026-01-02 03:04:05.678')
    >>> moment_text(None), moment_text("soon")
    ('–', '–')
    """
    if isinstance(value, int | float) and not isinstance(value, bool):
        value = seconds_time(value)
    try:
        moment = pd.to_datetime(value, utc=True)
    except (TypeError, ValueError, OverflowError):
        return "–"
    return "–" if pd.isna(moment) else moment.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def _attributes(raw: object) -> dict[str, Any]:
    """An output's ``data`` (JSON text) as a dict (``{}`` when it is not JSON)."""
    try:
        data = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return {}
    return dict(data) if isinstance(data, Mapping) else {}


def _is_time(name: str) -> bool:
    """Whether attribute ``name`` holds a time (``ts``, ``start``, ``end``, ``r_start``, …)."""
    return name in _TIME_ATTRIBUTES or name.rsplit("_", 1)[-1] in _TIME_ATTRIBUTES


def group_label(group: object) -> str:
    """A group as the page shows it (:data:`ONE_GROUP` for a network's only group)."""
    return ONE_GROUP if group is None or str(group) == "" else str(group)


def group_choices(outputs: pd.DataFrame) -> list[str]:
    """The groups (sensors) with outputs, sorted.

    >>> group_choices(pd.DataFrame({"grp": ["s2", "s1", "s2"]}))
    ['s1', 's2']
    """
    return sorted({str(g) for g in outputs["grp"]})


def _numeric(value: object) -> bool:
    """Whether ``value`` is a number (not a bool)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _cell(value: object) -> object:
    """An attribute as a cell: numbers as they are, anything else as text."""
    if value is None or isinstance(value, int | float | str):
        return value
    return json.dumps(value, ensure_ascii=False)


def output_table(outputs: pd.DataFrame) -> pd.DataFrame:
    """The outputs as the page lists them, in their order and with their index: time (UTC),
    group, then each attribute of ``data`` (times as times; ``ts`` is the time).

    >>> outputs = pd.DataFrame({"output": ['["w", "s1", 0.0]'], "grp": ["s1"],
    ...     "ts": [1796119200.0], "data": ['{"sensor": "s1", "start": 1796119200.0, '
    ...     '"end": 1796119260.0, "ts": 1796119200.0, "avg_value": 91.5}']})
    >>> output_table(outputs).values.tolist()
    [['2026-12-01 10:00:00.000', 's1', 's1', '2026-12-01 10:00:00.000', \
'2026-12-01 10:01:00.000', 91.5]]
    >>> list(output_table(outputs))
    ['time', 'group', 'sensor', 'start', 'end', 'avg_value']
    """
    rows = [_attributes(raw) for raw in outputs["data"]]
    names: dict[str, None] = {}
    for data in rows:
        names.update(dict.fromkeys(name for name in data if name != "ts"))
    frame = pd.DataFrame({"time": [moment_text(ts) for ts in outputs["ts"]],
                          "group": [group_label(g) for g in outputs["grp"]]},
                         index=outputs.index)
    for name in names:
        values = [data.get(name) for data in rows]
        if _is_time(name) and all(_numeric(v) for v in values if v is not None):
            cells: list[object] = [None if v is None else moment_text(v) for v in values]
        elif all(v is None or _numeric(v) for v in values):
            cells = values
        else:  # mixed kinds: all as text, which a table column holds
            cells = [None if v is None else str(_cell(v)) for v in values]
        column = name if name not in frame else f"{name} (attribute)"
        frame[column] = cells
    return frame


def output_label(row: Mapping[str, Any]) -> str:
    """An output as the output picker offers it: time, group and id.

    >>> output_label({"output": '["w", "s1", 0.0]', "grp": "s1", "ts": 1796119200.0})
    '2026-12-01 10:00:00.000 · s1 · ["w", "s1", 0.0]'
    """
    return f"{moment_text(row['ts'])} · {group_label(row['grp'])} · {row['output']}"


def window_span(data: Mapping[str, Any]) -> tuple[datetime, datetime] | None:
    """The output's window ``(start, end)`` as naive UTC times, when its attributes have a
    ``start`` and an ``end`` (seconds since the epoch); else None.

    >>> window_span({"start": 1796119200.0, "end": 1796119260.0})
    (datetime.datetime(2026, 12, 1, 10, 0), datetime.datetime(2026, 12, 1, 10, 1))
    >>> window_span({"ts": 1796119200.0}) is None
    True
    """
    start, end = seconds_time(data.get("start")), seconds_time(data.get("end"))
    if start is None or end is None:
        return None
    return (start.tz_convert(None).to_pydatetime(), end.tz_convert(None).to_pydatetime())


def output_words(explained: OutputExplanation, group: object) -> str:
    """The output in words (Markdown, lake text through :func:`text`): when, in which group
    (``""``: the network's only one), its window and its other attributes, and how many
    readings each input stream gave it.

    >>> found = OutputExplanation("n", '["w", "s1", 0.0]', "eager", {"sensor": "s1",
    ...     "start": 1796119200.0, "end": 1796119260.0, "ts": 1796119200.0, "avg_value": 91.5},
    ...     {"readings": [(1, "s1", 1796119201.0, 91.0), (2, "s1", 1796119202.0, 92.0)]})
    >>> print(output_words(found, "s1"))
    Output `["w", "s1", 0.0]` of group `s1` at 2026-12-01 10:00:00 UTC, over the window \
[2026-12-01 10:00:00, 10:01:00): `sensor` = `s1`, `avg_value` = `91.5`. Its readings: 2 from \
stream `readings`.
    """
    data = explained.data
    when = when_text(seconds_time(data.get("ts")))
    span = window_span(data)
    over = "" if span is None else (
        f", over the window [{when_text(span[0])}, {when_text(span[1])[11:]})")
    shown = {k: v for k, v in data.items()
             if k not in ("ts",) and not (span is not None and k in ("start", "end"))}
    attributes = ", ".join(
        f"{text(k)} = {text(moment_text(v) if _is_time(k) and _numeric(v) else _cell(v))}"
        for k, v in shown.items())
    counts = ", ".join(f"{len(rows):,} from stream {text(stream)}"
                       for stream, rows in explained.readings.items()) or "none"
    where = "" if group is None or str(group) == "" else f" of group {text(group)}"
    return (f"Output {text(explained.output)}{where} at {when} UTC{over}: "
            f"{attributes or 'no attributes'}. Its readings: {counts}.")


def reading_table(explained: OutputExplanation) -> pd.DataFrame:
    """One row per reading behind the output: its input stream, id, sensor, time (UTC, to the
    millisecond) and value, by stream and id.

    >>> found = OutputExplanation("n", "o", "eager", {},
    ...     {"b": [(3, "s1", 1796119201.0, 1.0)], "a": [(2, "s2", 1796119200.25, 2.0)]})
    >>> reading_table(found).values.tolist()
    [['a', 2, 's2', '2026-12-01 10:00:00.250', 2.0], ['b', 3, 's1', '2026-12-01 10:00:01.000', \
1.0]]
    """
    rows = [(str(stream), int(i), str(sensor), moment_text(float(ts)), float(value))
            for stream, found in sorted(explained.readings.items())
            for i, sensor, ts, value in sorted(found)]
    return pd.DataFrame(rows, columns=READING_TABLE_COLUMNS)


def drop_table(drops: pd.DataFrame) -> pd.DataFrame:
    """The dropped readings as the page lists them: id, sensor, time (UTC), value and reason.

    >>> drops = pd.DataFrame({"id": [7], "sensor": ["s1"],
    ...     "ts": [pd.Timestamp("2026-01-01T00:00:01Z")], "value": [99.0], "reason": ["late"]})
    >>> drop_table(drops).values.tolist()
    [[7, 's1', '2026-01-01 00:00:01.000', 99.0, 'late']]
    """
    return pd.DataFrame({
        "id": drops["id"].astype("int64"), "sensor": drops["sensor"].astype(str),
        "time": [moment_text(t) for t in drops["ts"]], "value": drops["value"].astype(float),
        "reason": drops["reason"].astype(str)})


def reason_counts(drops: pd.DataFrame) -> list[tuple[str, int]]:
    """How many readings were dropped for each reason, by reason.

    >>> reason_counts(pd.DataFrame({"reason": ["late", "duplicate", "late"]}))
    [('duplicate', 1), ('late', 2)]
    """
    counts = drops["reason"].astype(str).value_counts()
    return [(str(reason), int(count)) for reason, count in counts.sort_index().items()]


# -- the chart --------------------------------------------------------------------------------


def output_figure(explained: OutputExplanation) -> go.Figure:
    """The output's readings over event time: one trace of markers per input stream (every
    stream, even one that gave no reading), the output's window shaded when its attributes
    have a ``start`` and an ``end``, and its time (``ts``) as a dotted line. Lake text (stream
    names, sensor ids) is HTML-escaped."""
    figure = go.Figure()
    span = window_span(explained.data)
    if span is not None:
        figure.add_vrect(x0=span[0], x1=span[1], fillcolor=WINDOW_COLOUR, opacity=0.15,
                         line_width=0, layer="below")
        figure.add_annotation(x=span[0], y=1, xref="x", yref="paper", xanchor="left",
                              yanchor="bottom", showarrow=False, text="the output's window")
    moment = seconds_time(explained.data.get("ts"))
    if moment is not None and span is None:
        figure.add_vline(x=moment.tz_convert(None).to_pydatetime(),
                         line={"color": WINDOW_COLOUR, "dash": "dot"})
    hover = ("reading %{customdata[0]} of %{customdata[1]}<br>%{x|%Y-%m-%d %H:%M:%S.%L}<br>"
             "value %{y:.6g}<extra></extra>")
    for index, (stream, rows) in enumerate(explained.readings.items()):
        ordered = sorted(rows)
        times = [seconds_time(float(ts)) for _i, _s, ts, _v in ordered]
        figure.add_trace(go.Scatter(
            x=[t.tz_convert(None) if t is not None else None for t in times],
            y=[float(v) for _i, _s, _t, v in ordered],
            customdata=[[int(i), html.escape(str(s))] for i, s, _t, _v in ordered],
            mode="markers", name=f"stream {html.escape(str(stream))}",
            marker={"size": 9, "symbol": _SYMBOLS[index % len(_SYMBOLS)]},
            hovertemplate=hover))
    figure.update_layout(
        height=420, margin={"l": 10, "r": 10, "t": 40, "b": 10}, hovermode="closest",
        showlegend=True, legend={"orientation": "h", "yanchor": "bottom", "y": 1.06, "x": 0},
        xaxis_title="event time (UTC)", yaxis_title="reading value")
    return figure
