"""Sensor readings: a triggering rule's decisions over one sensor, explained down to its readings.

Pick a rule (``reading_rules``) and a sensor (triggered ones first); the page says in words
whether the sensor is triggered, since when and by which window, charts its readings and windows
against the rule's threshold over a period, and lists the windows behind its state with their
readings and the readings the rule dropped. The sensor and the rule are query parameters too,
so another page can link here (``sensors?sensor=s7``, ``&rule=avg_above``).

Reads the ``readings``, ``reading_windows``, ``reading_drops`` and ``reading_rules`` tables
through ``readingview`` (delta-rs, cached by version); a lake without readings or without a rule
run gives a plain message, never a traceback.
"""

from __future__ import annotations

from datetime import timedelta

import pandas as pd
import streamlit as st
from lakeview import READINGS, UNREADABLE, Settings, _error_text, current_lake, table_version, text
from paging import show_paginated
from pickers import pick_from_address
from readingview import (
    PAGE_ROWS,
    RuleChoice,
    SensorExplanation,
    default_period,
    drop_table,
    explanation,
    reading_table,
    rule_choices,
    rule_words,
    sensor_choices,
    sensor_drops,
    sensor_figure,
    sensor_readings,
    sensor_windows,
    state_from_windows,
    state_words,
    window_table,
)


def show_paged(frame: pd.DataFrame, key: str, one: str, many: str) -> None:
    """``frame`` a page at a time (:func:`paging.show_paginated`, :data:`PAGE_ROWS` a page)."""
    show_paginated(frame, key, one, many, page_size=PAGE_ROWS)


def pick_rule(choices: list[RuleChoice]) -> RuleChoice:
    """The rule to show: the one in the ``rule`` query parameter, else the first."""
    names = [c.name for c in choices]
    name = pick_from_address(
        "Rule", names, param="rule", key="rule",
        unknown=lambda wanted: f"No rule {text(wanted)} has run on this lake; showing "
                               f"{text(names[0])}.")
    return choices[names.index(name)]


def pick_sensor(windows: pd.DataFrame, rule: str) -> str:
    """The sensor to show: triggered ones are offered first; the ``sensor`` query parameter
    picks one."""
    options, triggered = sensor_choices(windows)
    sensor = pick_from_address(
        "Sensor", options, param="sensor", key="sensor",
        unknown=lambda wanted: f"Sensor {text(wanted)} has no window under rule {text(rule)}; "
                               f"showing {text(options[0])}.",
        format_func=lambda s: f"{s} (triggered)" if s in triggered else s)
    st.caption(f"{len(triggered):,} of {len(options):,} sensor(s) with closed windows are "
               "triggered; they are listed first.")
    return sensor


def show_chart(settings: Settings, choice: RuleChoice, sensor: str, windows: pd.DataFrame,
               explained: SensorExplanation | None, drops: pd.DataFrame) -> None:
    """The sensor's readings and windows against the threshold over a chosen period."""
    assert choice.rule is not None
    rule = choice.rule
    lowest, highest, lo, hi = default_period(windows, explained, rule)
    lo, hi = st.slider("Period (UTC)", min_value=lowest, max_value=highest, value=(lo, hi),
                       step=timedelta(seconds=rule.slide_s), format="YYYY-MM-DD HH:mm:ss",
                       key=f"period-{choice.name}-{sensor}")
    readings = sensor_readings(settings, sensor, lo, hi)
    starts = pd.to_datetime(windows["window_start"], utc=True).dt.tz_convert(None)
    ends = pd.to_datetime(windows["window_end"], utc=True).dt.tz_convert(None)
    shown = windows[(ends > lo) & (starts < hi)]
    times = pd.to_datetime(drops["ts"], utc=True).dt.tz_convert(None)
    dropped = drops[(times >= lo) & (times <= hi)]
    st.plotly_chart(sensor_figure(readings, shown, rule, explained, dropped), width="stretch")
    st.caption(
        f"{len(readings):,} reading(s) ({len(dropped):,} of them dropped) and {len(shown):,} "
        "window(s) in the period; each window "
        f"is a segment at its {rule.aggregate} (red above {rule.threshold:g}, blue at or below, "
        "thick when behind the state), ▲ where a window triggered the sensor and ▼ where one "
        "un-triggered it; the readings behind the state are ringed, dropped readings are ✕. "
        "Hover for ids, times and values.")


def show_behind(explained: SensorExplanation, windows: pd.DataFrame, choice: RuleChoice,
                sensor: str, with_readings: bool) -> None:
    """The windows behind the state and (``with_readings``: they could be read) their
    readings, a page at a time."""
    assert choice.rule is not None
    st.subheader("Windows behind the state")
    if not explained.windows:
        st.info("No window has changed this sensor's state: there is nothing behind it.")
        return
    how = ("decoded from the ids each window keeps" if choice.mode == "eager"
           else "rebuilt by replaying the sensor's readings of each window's id interval")
    st.caption(f"The window that set the state and, while triggered, every later window that "
               f"kept it so; their readings {how}.")
    show_paged(window_table(explained, windows, choice.rule), f"windows-{sensor}", "window",
               "windows")
    st.markdown("**Their readings**")
    if not with_readings:
        st.info("Their readings cannot be shown (see the warning above).")
        return
    show_paged(reading_table(explained), f"readings-{sensor}", "reading", "readings")


def show_drops(drops: pd.DataFrame, sensor: str) -> None:
    """The readings of the sensor the rule did not count, with the reason."""
    st.subheader("Dropped readings")
    if drops.empty:
        st.caption("The rule counted every reading of this sensor (none late, duplicate or "
                   "outlier).")
        return
    counts = drops["reason"].astype(str).value_counts()
    st.markdown("By reason: " + ", ".join(
        f"{text(reason)} {count:,}" for reason, count in counts.sort_index().items()))
    show_paged(drop_table(drops), f"drops-{sensor}", "dropped reading",
               "dropped readings")


def show_sensors(settings: Settings) -> None:
    """The page: empty states, the rule and sensor pickers, the state, chart and tables."""
    try:
        choices = rule_choices(settings)
        has_readings = table_version(settings, READINGS) is not None
    except UNREADABLE as err:
        st.warning(f"Cannot read the readings' tables: {_error_text(settings, err)}")
        return
    if not choices:
        if not has_readings:
            st.info("No sensor readings yet: there is no `readings` table. Ingest readings "
                    "(`aspen ingest`), then run `aspen stream` to run a triggering rule.")
        else:
            st.info("No triggering rule has run on these readings yet: run `aspen stream`.")
        return
    choice = pick_rule(choices)
    st.markdown(rule_words(choice))
    if choice.rule is None:
        if choice.description is None:
            st.warning(f"The stored definition of rule {text(choice.name)} cannot be read.")
        else:
            st.info(f"Rule {text(choice.name)} is not a per-sensor window rule: this page "
                    "charts the windows of per-sensor rules only.")
        return
    try:
        all_windows = sensor_windows(settings, choice.name)
    except UNREADABLE as err:
        st.warning(f"Cannot read `reading_windows`: {_error_text(settings, err)}")
        return
    if all_windows.empty:
        st.info(f"Rule {text(choice.name)} has closed no window yet: run `aspen stream` again "
                "once the readings span more than a window and its lateness.")
        return
    sensor = pick_sensor(all_windows, choice.name)
    st.header(f"Sensor {text(sensor)}")
    try:
        windows = sensor_windows(settings, choice.name, sensor)
        drops = sensor_drops(settings, choice.name, sensor)
    except UNREADABLE as err:
        st.warning(f"Cannot read the sensor's windows: {_error_text(settings, err)}")
        return
    if windows.empty:  # removed since the list was read
        st.info(f"No window of {text(sensor)} under rule {text(choice.name)} now.")
        return
    explained: SensorExplanation | None = None
    try:
        explained = explanation(settings, choice.name, sensor)
    except UNREADABLE as err:
        st.warning(f"The readings behind {text(sensor)}'s state cannot be shown: "
                   f"{_error_text(settings, err)}")
    with_readings = explained is not None
    if explained is None:  # the state and its windows still follow from the windows alone
        explained = state_from_windows(sensor, choice.name, windows)
    st.markdown(state_words(sensor, explained, windows, choice.rule))
    show_chart(settings, choice, sensor, windows, explained, drops)
    show_behind(explained, windows, choice, sensor, with_readings)
    show_drops(drops, sensor)


st.title("Sensor readings")
show_sensors(current_lake())
