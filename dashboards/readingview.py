"""Reading the sensor readings and their triggering rules for the Sensor readings page.

The rules a stream ran (``reading_rules``), their closed windows (``reading_windows``), the
readings they dropped (``reading_drops``) and the ``readings`` themselves, read with delta-rs
(only the rows asked for) at the versions ``aspen.lake`` says readers read, cached by version;
a sensor's explanation comes from :func:`aspen.readings.rule_provenance.explain_triggered`,
cached by the versions of the tables it reads. The rest are pure functions over frames: the
sensors to offer, the state in words, the chart, the tables and their pages.

Text from the lake reaches Markdown only through :func:`lakeview.text`; the chart carries no
lake text at all (its hover shows ids, times and values, and a dropped reading's reason escaped).
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pandas as pd
import plotly.graph_objects as go
import pyarrow as pa
import pyarrow.compute as pc
import streamlit as st
from deltalake import DeltaTable
from lakeview import text, when_text

from aspen.lake import tables
from aspen.lake.committed import reading_version
from aspen.lake.deltars import text_field
from aspen.readings.rule_provenance import (
    SensorExplanation,
    WindowReadings,
    explain_triggered,
)
from aspen.readings.rule_tables import READING_DROPS, READING_RULES, READING_WINDOWS, load_rule
from aspen.settings import Settings
from aspen.streams.rules import TriggerRule

__all__ = [
    "DROP_COLUMNS",
    "PAGE_ROWS",
    "READING_COLUMNS",
    "WINDOW_COLUMNS",
    "RuleChoice",
    "aggregate_values",
    "decision_words",
    "default_period",
    "drop_table",
    "explanation",
    "moment_text",
    "reading_table",
    "rule_choices",
    "rule_words",
    "sensor_choices",
    "sensor_drops",
    "sensor_figure",
    "sensor_readings",
    "sensor_windows",
    "state_from_windows",
    "state_words",
    "value_range",
    "window_table",
]

#: Rows per page of the page's tables.
PAGE_ROWS = 100
#: The ``reading_windows`` columns the page reads (not the encoded provenance).
WINDOW_COLUMNS: tuple[str, ...] = (
    "sensor", "window_start", "window_end", "count", "sum", "min", "max", "avg", "decision",
    "ids_lo", "ids_hi", "mode",
)
#: The ``readings`` columns the chart reads.
READING_COLUMNS: tuple[str, ...] = ("id", "ts", "value")
#: The ``reading_drops`` columns the page reads.
DROP_COLUMNS: tuple[str, ...] = ("id", "ts", "value", "reason")
#: Chart colours: readings, the readings behind the state, windows above and not above the
#: threshold, the threshold, dropped readings, decisions.
COLOURS = {
    "reading": "#8c8c8c", "behind": "#ff7f0e", "above": "#d62728", "below": "#1f77b4",
    "threshold": "#444444", "dropped": "#9467bd", "decision": "#111111",
}
_UTC_TIME = pa.timestamp("us", tz="UTC")


# -- reads ----------------------------------------------------------------------------------


@st.cache_data(show_spinner=False, max_entries=64)
def _filtered(uri: str, version: int, columns: tuple[str, ...],
              equal: tuple[tuple[str, str], ...],
              ts_range: tuple[str, datetime, datetime] | None = None) -> pd.DataFrame:
    """Rows of the table at ``uri`` as of ``version`` whose text columns equal the values of
    ``equal`` and, with ``ts_range`` ``(column, lo, hi)``, whose time is in ``[lo, hi]``
    (cached per arguments; only the matching rows are materialised)."""
    condition = None
    for column, value in equal:
        term = text_field(column) == value
        condition = term if condition is None else condition & term
    if ts_range is not None:
        column, lo, hi = ts_range
        span = ((pc.field(column) >= pa.scalar(lo, _UTC_TIME))
                & (pc.field(column) <= pa.scalar(hi, _UTC_TIME)))
        condition = span if condition is None else condition & span
    dataset = DeltaTable(uri, version=version).to_pyarrow_dataset()
    return dataset.to_table(columns=list(columns), filter=condition).to_pandas()


def _version(settings: Settings, name: str) -> int | None:
    """The version of ``name`` the page reads (None when there is no such table)."""
    return reading_version(settings, name)


@dataclass(frozen=True)
class RuleChoice:
    """A rule a stream ran on the lake: its name, provenance mode, definition when it is a
    per-sensor window rule (the rules this page charts), and its description in words (None
    when its stored definition cannot be read)."""

    name: str
    mode: str
    rule: TriggerRule | None
    description: str | None = None

    @classmethod
    def of(cls, name: str, mode: str, rule: object | None) -> RuleChoice:
        """The choice of a loaded rule (None: unreadable), windowed or another kind.

        >>> RuleChoice.of("r", "eager", TriggerRule()).rule is not None
        True
        """
        describe = getattr(rule, "describe", None)
        description = str(describe()) if callable(describe) else None
        return cls(name, mode, rule if isinstance(rule, TriggerRule) else None, description)


@st.cache_data(show_spinner=False, max_entries=16)
def _rules(lake: str, version: int) -> list[RuleChoice]:
    """The rules of ``reading_rules`` as of ``version`` (cached per version)."""
    settings = Settings(lake=lake)
    rows = _filtered(settings.table_uri(READING_RULES), version, ("name", "mode"), ())
    out = []
    for name in sorted(set(rows["name"].astype(str))):
        try:
            known = load_rule(settings, name)
        except (TypeError, ValueError):  # a definition this release cannot read
            known = None
        mode = str(rows.loc[rows["name"].astype(str) == name, "mode"].iloc[0])
        out.append(RuleChoice.of(name, mode, None if known is None else known[0]))
    return out


def rule_choices(settings: Settings) -> list[RuleChoice] | None:
    """The rules recorded in ``reading_rules``, by name (None when there is no such table)."""
    version = _version(settings, READING_RULES)
    return None if version is None else _rules(settings.lake_uri, version)


def sensor_windows(settings: Settings, rule: str, sensor: str | None = None) -> pd.DataFrame:
    """Rule ``rule``'s closed windows (of ``sensor`` only, when given), by sensor and start;
    empty when no window has closed."""
    version = _version(settings, READING_WINDOWS)
    if version is None:
        return pd.DataFrame(columns=list(WINDOW_COLUMNS))
    equal = (("rule", rule),) if sensor is None else (("rule", rule), ("sensor", sensor))
    columns = WINDOW_COLUMNS if sensor is not None else ("sensor", "window_start", "decision")
    frame = _filtered(settings.table_uri(READING_WINDOWS), version, columns, equal)
    return frame.sort_values(["sensor", "window_start"]).reset_index(drop=True)


def sensor_readings(settings: Settings, sensor: str, lo: datetime, hi: datetime) -> pd.DataFrame:
    """The readings (``id``, ``ts``, ``value``) of ``sensor`` timed in ``[lo, hi]``, by id."""
    version = _version(settings, tables.READINGS)
    if version is None:
        return pd.DataFrame(columns=list(READING_COLUMNS))
    frame = _filtered(settings.table_uri(tables.READINGS), version, READING_COLUMNS,
                      (("sensor", sensor),), ("ts", lo, hi))
    return frame.sort_values("id").reset_index(drop=True)


def sensor_drops(settings: Settings, rule: str, sensor: str) -> pd.DataFrame:
    """The readings of ``sensor`` rule ``rule`` dropped (``id``, ``ts``, ``value``,
    ``reason``), by id."""
    version = _version(settings, READING_DROPS)
    if version is None:
        return pd.DataFrame(columns=list(DROP_COLUMNS))
    frame = _filtered(settings.table_uri(READING_DROPS), version, DROP_COLUMNS,
                      (("rule", rule), ("sensor", sensor)))
    return frame.sort_values("id").reset_index(drop=True)


@st.cache_data(show_spinner=False, max_entries=32)
def _explained(lake: str, rule: str, sensor: str,
               versions: tuple[int | None, ...]) -> SensorExplanation | None:
    """:func:`explain_triggered` of ``sensor`` under rule ``rule`` (cached per ``versions`` of
    the tables it reads); None when the rule is not recorded."""
    settings = Settings(lake=lake)
    known = load_rule(settings, rule)
    if known is None:
        return None
    return explain_triggered(settings, sensor, known[0])


def explanation(settings: Settings, rule: str, sensor: str) -> SensorExplanation | None:
    """Why ``sensor`` is (not) triggered under rule ``rule``: the windows behind its latest
    state with their readings. Raises what :func:`explain_triggered` raises (e.g.
    :class:`~aspen.errors.ProvenanceExpiredError` when the readings are past retention)."""
    versions = tuple(_version(settings, name) for name in
                     (READING_RULES, READING_WINDOWS, READING_DROPS, tables.READINGS))
    return _explained(settings.lake_uri, rule, sensor, versions)


# -- what the page shows ----------------------------------------------------------------------


def sensor_choices(windows: pd.DataFrame) -> tuple[list[str], set[str]]:
    """The sensors with windows, triggered ones first (their latest decision is ``insert``),
    each group by id; and the triggered ones.

    >>> windows = pd.DataFrame({"sensor": ["a", "b", "b", "c", "c"],
    ...     "window_start": [0, 0, 1, 0, 1], "decision": [None, "insert", None, "insert",
    ...     "delete"]})
    >>> sensor_choices(windows)
    (['b', 'a', 'c'], {'b'})
    """
    if windows.empty:
        return [], set()
    frame = windows.assign(sensor=windows["sensor"].astype(str))
    decided = frame[frame["decision"].notna()].sort_values(["sensor", "window_start"])
    latest = decided.groupby("sensor")["decision"].last()
    triggered = {str(s) for s, d in latest.items() if d == "insert"}
    everyone = sorted(set(frame["sensor"]))
    return [s for s in everyone if s in triggered] + [
        s for s in everyone if s not in triggered], triggered


def aggregate_values(windows: pd.DataFrame, rule: TriggerRule) -> pd.Series:
    """Each window's value of the rule's aggregate (the one compared with its threshold).

    >>> aggregate_values(pd.DataFrame({"avg": [1.5], "count": [2]}), TriggerRule()).tolist()
    [1.5]
    """
    return windows[rule.aggregate].astype(float)  # each aggregate has its column


def rule_words(choice: RuleChoice) -> str:
    """The rule and its provenance mode in words (Markdown).

    >>> print(rule_words(RuleChoice.of("avg_above", "lazy", TriggerRule())))
    Rule `avg_above`: `avg over tumbling 60 s windows > 90 triggers, ≤ 90 un-triggers \
(lateness 30 s)`. Replay-Lazy provenance: each window keeps the interval of its readings' ids, \
and its readings are rebuilt by replaying the sensor's readings of that interval.
    """
    if choice.mode == "eager":
        mode = "Reduced-Eager provenance: each window keeps its readings' ids."
    elif choice.mode == "lazy":
        mode = ("Replay-Lazy provenance: each window keeps the interval of its readings' ids, "
                "and its readings are rebuilt by replaying the sensor's readings of that "
                "interval.")
    else:
        mode = f"Provenance mode {text(choice.mode)}."
    what = choice.description or "its stored definition cannot be read"
    return f"Rule {text(choice.name)}: {text(what)}. {mode}"


def decision_words(decision: object) -> str:
    """What a window's decision did to its sensor.

    >>> decision_words("insert"), decision_words(None)
    ('triggered it', 'kept its state')
    """
    return {"insert": "triggered it", "delete": "un-triggered it"}.get(
        str(decision) if isinstance(decision, str) else "", "kept its state")


def _span(start: object, end: object) -> str:
    """A window ``[start, end)`` (Markdown-safe: digits and separators only)."""
    return f"[{when_text(start)}, {when_text(end)[11:]})"


def state_words(sensor: str, explained: SensorExplanation, windows: pd.DataFrame,
                rule: TriggerRule) -> str:
    """The sensor's state under the rule in plain words (Markdown, the id through
    :func:`text`): triggered or not, since when and by which window.

    >>> from aspen.readings.rule_provenance import WindowReadings
    >>> t = [datetime(2026, 1, 1, 0, m, tzinfo=UTC) for m in range(4)]
    >>> windows = pd.DataFrame({"window_start": t[:3], "window_end": t[1:], "count": [3, 2, 4],
    ...     "avg": [80.0, 95.5, 97.0], "decision": [None, "insert", None]})
    >>> behind = [WindowReadings("r", "s1", t[1], t[2], 2, 95.5, "insert", "eager"),
    ...           WindowReadings("r", "s1", t[2], t[3], 4, 97.0, None, "eager")]
    >>> print(state_words("s1", SensorExplanation("s1", "r", None, True, behind), windows,
    ...                   TriggerRule()))
    `s1` is **triggered** since 2026-01-01 00:02:00 UTC: its window [2026-01-01 00:01:00, \
00:02:00) had avg 95.5 over 2 reading(s), above 90, and triggered it; 1 later window kept it \
above.
    """
    who = text(sensor)
    if not explained.windows:
        closed = len(windows)
        return (f"{who} has **never been triggered** under this rule: none of its {closed} "
                f"closed window(s) had {rule.aggregate} above {rule.threshold:g}.")
    first = explained.windows[0]
    starts = pd.to_datetime(windows["window_start"], utc=True)
    row = windows[starts == pd.Timestamp(first.start)]
    value = float(aggregate_values(row, rule).iloc[0]) if not row.empty else first.avg
    how = (f"its window {_span(first.start, first.end)} had {rule.aggregate} {value:.4g} over "
           f"{first.count} reading(s)")
    if explained.triggered:
        later = len(explained.windows) - 1
        kept = (f"; {later} later window{'s' if later != 1 else ''} kept it above" if later
                else "; no later window has closed")
        return (f"{who} is **triggered** since {when_text(first.end)} UTC: {how}, above "
                f"{rule.threshold:g}, and triggered it{kept}.")
    return (f"{who} is **not triggered** since {when_text(first.end)} UTC: {how}, at or "
            f"below {rule.threshold:g}, and un-triggered it.")


def default_period(windows: pd.DataFrame, explained: SensorExplanation | None,
                   rule: TriggerRule, context: int = 10,
                   last: int = 30) -> tuple[datetime, datetime, datetime, datetime]:
    """``(lowest, highest, lo, hi)``: the times the period can span (the sensor's first window
    start to its last window end plus a window and the lateness, where its still open window's
    readings are, rounded up to a whole slide) and the period shown first: from ``context``
    windows before the first window behind the state, else the last ``last`` windows, to the
    highest. Naive UTC, whole slides apart (the period slider's step).

    >>> t = [datetime(2026, 1, 1, 0, m) for m in range(0, 60, 1)]
    >>> windows = pd.DataFrame({"window_start": t[:-1], "window_end": t[1:]})
    >>> [v.strftime("%H:%M:%S") for v in default_period(windows, None, TriggerRule())]
    ['00:00:00', '01:01:00', '00:29:00', '01:01:00']
    """
    starts = pd.to_datetime(windows["window_start"], utc=True)
    ends = pd.to_datetime(windows["window_end"], utc=True)
    lowest = starts.min().to_pydatetime().replace(tzinfo=None)
    reach = (ends.max().to_pydatetime().replace(tzinfo=None)
             + timedelta(seconds=rule.size_s + rule.lateness_s))
    step = timedelta(seconds=rule.slide_s)
    highest = lowest + math.ceil((reach - lowest) / step) * step  # whole steps from lowest
    if explained is not None and explained.windows:
        first = explained.windows[0].start.astimezone(UTC).replace(tzinfo=None)
        lo = first - context * step
    else:
        lo = starts.sort_values().iloc[max(len(starts) - last, 0)].to_pydatetime()
        lo = lo.replace(tzinfo=None)
    return lowest, highest, max(lo, lowest), highest


def state_from_windows(sensor: str, rule: str, windows: pd.DataFrame) -> SensorExplanation:
    """The sensor's state and the windows behind it from its ``reading_windows`` rows alone,
    without their readings (for when those cannot be read): the windows
    :func:`explain_triggered` would explain.

    >>> t = pd.to_datetime(["2026-01-01T00:00Z", "2026-01-01T00:01Z", "2026-01-01T00:02Z"])
    >>> windows = pd.DataFrame({"window_start": t[:2], "window_end": t[1:], "count": [2, 3],
    ...     "avg": [95.0, 96.0], "decision": ["insert", None], "mode": ["lazy", "lazy"]})
    >>> found = state_from_windows("s1", "r", windows)
    >>> found.triggered, [(w.decision, w.count, w.readings) for w in found.windows]
    (True, [('insert', 2, []), (None, 3, [])])
    """
    ordered = windows.sort_values("window_start")
    decided = ordered[ordered["decision"].notna()]
    if decided.empty:
        return SensorExplanation(sensor, rule, None, False, [])
    last = decided.iloc[-1]
    triggered = last["decision"] == "insert"
    behind = (ordered[ordered["window_start"] >= last["window_start"]] if triggered
              else decided.iloc[-1:])
    return SensorExplanation(sensor, rule, None, bool(triggered), [
        WindowReadings(rule, sensor, pd.Timestamp(row["window_start"]).to_pydatetime(),
                       pd.Timestamp(row["window_end"]).to_pydatetime(), int(row["count"]),
                       float(row["avg"]),
                       None if pd.isna(row["decision"]) else str(row["decision"]),
                       str(row["mode"]), [])
        for row in behind.to_dict("records")])


def window_table(explained: SensorExplanation, windows: pd.DataFrame,
                 rule: TriggerRule) -> pd.DataFrame:
    """One row per window behind the state: its span, readings, aggregate and decision."""
    starts = pd.to_datetime(windows["window_start"], utc=True)
    values = dict(zip(starts, aggregate_values(windows, rule), strict=True))
    rows = [{
        "window start": when_text(w.start), "window end": when_text(w.end),
        "readings": w.count,
        rule.aggregate: values.get(pd.Timestamp(w.start), w.avg if rule.aggregate == "avg"
                                   else float("nan")),
        f"> {rule.threshold:g}": values.get(pd.Timestamp(w.start), w.avg) > rule.threshold,
        "decision": w.decision or "", "effect": decision_words(w.decision),
    } for w in explained.windows]
    columns = ["window start", "window end", "readings", rule.aggregate, f"> {rule.threshold:g}",
               "decision", "effect"]
    return pd.DataFrame(rows, columns=columns)


def moment_text(value: object) -> str:
    """A reading's time as ``YYYY-MM-DD HH:MM:SS.mmm`` (UTC), ``–`` when it is not one.

    >>> moment_text(pd.Timestamp("2026-01-02T03:04:05.6789Z")), moment_text(None)
    ('2026-01-02 03:04:05.678', '–')
    """
    try:
        moment = pd.to_datetime(value, utc=True)
    except (TypeError, ValueError, OverflowError):
        return "–"
    return "–" if pd.isna(moment) else moment.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def reading_table(explained: SensorExplanation) -> pd.DataFrame:
    """One row per reading behind the state: its window (start), id, time (UTC, to the
    millisecond) and value."""
    rows = [(when_text(w.start), int(i), moment_text(ts), float(v))
            for w in explained.windows for i, ts, v in w.readings]
    return pd.DataFrame(rows, columns=["window start", "id", "time", "value"])


def drop_table(drops: pd.DataFrame) -> pd.DataFrame:
    """The dropped readings as the page lists them: id, time (UTC), value and reason.

    >>> drops = pd.DataFrame({"id": [7], "ts": [pd.Timestamp("2026-01-01T00:00:01Z")],
    ...                       "value": [99.0], "reason": ["late"]})
    >>> drop_table(drops).values.tolist()
    [[7, '2026-01-01 00:00:01.000', 99.0, 'late']]
    """
    return pd.DataFrame({
        "id": drops["id"].astype("int64"), "time": [moment_text(t) for t in drops["ts"]],
        "value": drops["value"].astype(float), "reason": drops["reason"].astype(str)})


# -- the chart --------------------------------------------------------------------------------


def _segments(frame: pd.DataFrame, values: pd.Series) -> tuple[list, list, list]:
    """x, y and hover data of horizontal segments ``[start, end)`` at ``values``, gaps
    between."""
    xs: list[object] = []
    ys: list[object] = []
    data: list[object] = []
    for (start, end, count, decision), value in zip(
            frame[["window_start", "window_end", "count", "decision"]].itertuples(index=False),
            values, strict=True):
        info = [when_text(start), when_text(end)[11:], int(count),
                decision_words(decision)]
        xs += [start, end, None]
        ys += [value, value, None]
        data += [info, info, None]
    return xs, ys, data


def _naive(values: pd.Series) -> pd.Series:
    """Times as naive UTC (the chart's axis is UTC)."""
    return pd.to_datetime(values, utc=True).dt.tz_convert(None)


def sensor_figure(readings: pd.DataFrame, windows: pd.DataFrame, rule: TriggerRule,
                  explained: SensorExplanation | None, dropped: pd.DataFrame) -> go.Figure:
    """The sensor over the period: its ``readings`` as points, each of its ``windows`` as a
    segment at its aggregate (red above the threshold, blue at or below; thick when behind the
    state ``explained``), each decision marked, the threshold as a line, the readings behind
    the state ringed, and the ``dropped`` readings as crosses. A count or sum is drawn on its
    own axis, on the right. No lake text is put on the chart."""
    from plotly.subplots import make_subplots

    own_axis = rule.aggregate in ("count", "sum")
    figure = make_subplots(specs=[[{"secondary_y": own_axis}]])
    behind = [] if explained is None else explained.windows
    kept = {int(i) for w in behind for i, _, _ in w.readings}
    behind_starts = {pd.Timestamp(w.start).tz_convert(None) for w in behind}
    dropped = dropped.assign(ts=_naive(dropped["ts"]))
    counted = ~readings["id"].astype("int64").isin(set(dropped["id"].astype("int64")))
    readings = readings[counted].assign(ts=_naive(readings.loc[counted, "ts"]))
    windows = windows.assign(window_start=_naive(windows["window_start"]),
                             window_end=_naive(windows["window_end"]))
    hover = "reading %{customdata}<br>%{x|%Y-%m-%d %H:%M:%S.%L}<br>value %{y:.6g}<extra></extra>"
    readings = readings.assign(behind=readings["id"].astype("int64").isin(kept))
    points = go.Scattergl if len(readings) > 5000 else go.Scatter
    figure.add_trace(points(
        x=readings["ts"], y=readings["value"], customdata=readings["id"], mode="markers",
        name="readings", marker={"color": COLOURS["reading"], "size": 5},
        hovertemplate=hover), secondary_y=False)
    ringed = readings[readings["behind"]]
    if not ringed.empty:
        figure.add_trace(points(
            x=ringed["ts"], y=ringed["value"], customdata=ringed["id"], mode="markers",
            name="readings behind the state",
            marker={"color": COLOURS["behind"], "size": 10, "symbol": "circle-open",
                    "line": {"width": 2}},
            hovertemplate=hover), secondary_y=False)
    if not dropped.empty:
        reasons = [html.escape(str(r)) for r in dropped["reason"]]
        figure.add_trace(go.Scatter(
            x=dropped["ts"], y=dropped["value"],
            customdata=list(zip(dropped["id"].astype("int64"), reasons, strict=True)),
            mode="markers", name="dropped readings",
            marker={"color": COLOURS["dropped"], "symbol": "x", "size": 8},
            hovertemplate=("reading %{customdata[0]} dropped (%{customdata[1]})<br>"
                           "%{x|%Y-%m-%d %H:%M:%S.%L}<br>value %{y:.6g}<extra></extra>")),
            secondary_y=False)
    values = aggregate_values(windows, rule)
    above = values > rule.threshold
    starts = windows["window_start"]
    segment_hover = (f"window [%{{customdata[0]}}, %{{customdata[1]}})<br>{rule.aggregate} "
                     "%{y:.6g} over %{customdata[2]} reading(s)<br>%{customdata[3]}"
                     "<extra></extra>")
    for label, mask, colour in (
            (f"windows, {rule.aggregate} > {rule.threshold:g}", above, COLOURS["above"]),
            (f"windows, {rule.aggregate} ≤ {rule.threshold:g}", ~above, COLOURS["below"])):
        for thick in (False, True):
            chosen = mask & (starts.isin(behind_starts) == thick)
            if not chosen.any():
                continue
            xs, ys, data = _segments(windows[chosen], values[chosen])
            figure.add_trace(go.Scatter(
                x=xs, y=ys, customdata=data, mode="lines",
                name=label + (" (behind the state)" if thick else ""),
                line={"color": colour, "width": 6 if thick else 3},
                hovertemplate=segment_hover), secondary_y=own_axis)
    decided = windows["decision"].notna()
    for op, symbol, label in (("insert", "triangle-up", "triggered here"),
                              ("delete", "triangle-down", "un-triggered here")):
        chosen = decided & (windows["decision"] == op)
        if not chosen.any():
            continue
        figure.add_trace(go.Scatter(
            x=windows.loc[chosen, "window_end"], y=values[chosen], mode="markers", name=label,
            marker={"symbol": symbol, "size": 13, "color": COLOURS["decision"]},
            hovertemplate=f"{label}: %{{x|%Y-%m-%d %H:%M:%S}}<extra></extra>"),
            secondary_y=own_axis)
    figure.add_hline(y=rule.threshold, line={"color": COLOURS["threshold"], "dash": "dash"},
                     annotation_text=f"threshold {rule.threshold:g}",
                     annotation_position="top left",
                     secondary_y=own_axis if own_axis else None)
    figure.update_layout(
        height=460, margin={"l": 10, "r": 10, "t": 30, "b": 10}, hovermode="closest",
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0},
        xaxis_title="event time (UTC)")
    scale = [*readings["value"].astype(float), rule.threshold]
    if not own_axis:
        scale += list(values)
    low, high = value_range(scale)
    figure.update_yaxes(title_text="reading value", range=[low, high], secondary_y=False)
    if own_axis:
        figure.update_yaxes(title_text=f"window {rule.aggregate}", secondary_y=True)
    outside = dropped[(dropped["value"] < low) | (dropped["value"] > high)]
    if not outside.empty:  # an outlier would flatten every counted reading
        figure.add_annotation(
            xref="paper", yref="paper", x=1, y=1, xanchor="right", yanchor="bottom",
            showarrow=False, text=f"{len(outside):,} dropped reading(s) off the chart "
            f"({_values_text(outside['value'])})")
    return figure


def _values_text(values: pd.Series) -> str:
    """``value 7`` or ``values 7 to 9``."""
    low, high = float(values.min()), float(values.max())
    return f"value {low:.6g}" if low == high else f"values {low:.6g} to {high:.6g}"


def value_range(values: Iterable[float]) -> tuple[float, float]:
    """The value axis' range: the values' span with a margin (the counted readings, the
    threshold and, on the same axis, the windows; dropped readings may fall outside).

    >>> value_range([80.0, 90.0, 100.0]), value_range([5.0])
    ((78.4, 101.6), (4.0, 6.0))
    """
    finite = [v for v in values if math.isfinite(v)]
    low, high = (min(finite), max(finite)) if finite else (0.0, 1.0)
    pad = (high - low) * 0.08 or 1.0
    return round(low - pad, 9), round(high + pad, 9)
