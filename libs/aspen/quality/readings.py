"""The ``readings`` suites: the sensor readings and what the readings stream made of them.

``readings`` is append-only (:mod:`aspen.lake.ingest`); ``reading_rules``, ``reading_windows``
and ``reading_drops`` are written by the readings stream (:mod:`aspen.readings.rule_stream`).
Rules:

- ``readings``: ids never null, unique and consecutive (each id one more than the next lower
  one: housekeeping deletes a prefix, so they run on from the lowest retained id); values
  finite with magnitude ``≤ 1e15``, times in [1970-01-01, 2200-01-01) UTC, sensor ids not
  blank (:mod:`aspen.lake.validation`'s bounds);
- ``reading_rules``: one row per rule name, a known provenance mode, a definition that parses;
- ``reading_windows``: one window per rule, sensor and start; ``window_start < window_end``;
  ``count ≥ 1``; ``min ≤ avg ≤ max`` and ``sum = avg·count`` up to floating-point rounding;
  ``ids_lo ≤ ids_hi``; a decision in {insert, delete} or none; Reduced-Eager rows carry their
  provenance (and ``prov_bytes`` is its length), Replay-Lazy rows none;
- ``reading_drops``: a reason in {late, duplicate, outlier, unknown_sensor}; a reading dropped
  at most once per rule;
- cross-table (:mod:`aspen.quality.reading_lineage`): each window within the readings' retention
  names ``count`` ids, decoded or replayed, whose lowest and highest are ``ids_lo`` and
  ``ids_hi``, all retained readings (of the window's sensor and time, for a window rule); each
  dropped reading within retention is in ``readings`` with its sensor, time and value; every
  rule of the windows and drops is recorded in ``reading_rules``.

>>> [s.table for s in READING_SUITES]
['readings', 'reading_rules', 'reading_windows', 'reading_drops']
>>> READING_SUITES[2].derived_columns
('provenance_length', 'avg_below_min', 'avg_above_max', 'sum_error')
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aspen.lake.tables import READINGS
from aspen.lake.validation import EARLIEST_EVENT_TIME, LATEST_EVENT_TIME, MAX_MAGNITUDE
from aspen.quality.derived import (
    AGGREGATE_ERRORS,
    add_aggregate_errors,
    add_id_steps,
    add_provenance_length,
)
from aspen.quality.expect import (
    at_least,
    between,
    finite,
    in_period,
    in_set,
    non_blank,
    not_null,
    null,
    pair_above,
    pair_at_least,
    pair_equal,
    unique,
)
from aspen.quality.inputs import ddl_columns
from aspen.quality.lineage import definitions_valid, drops_in_readings, recorded_in
from aspen.quality.reading_lineage import parse_rule, rules_of, windows_in_readings
from aspen.quality.spec import CrossCheck, SuiteParams, TableSuite
from aspen.readings.modes import MODES
from aspen.readings.rule_tables import READING_DROPS, READING_RULES, READING_WINDOWS

if TYPE_CHECKING:
    import pandas as pd
    from great_expectations.expectations import Expectation

__all__ = [
    "AGGREGATE_TOLERANCE",
    "DECISIONS",
    "DROP_COLUMNS",
    "DROP_REASONS",
    "READING_SUITES",
    "RULE_COLUMNS",
    "WINDOW_COLUMNS",
]

FAMILY = "readings"
#: The decisions a window may make (``None``: it changed nothing).
DECISIONS: tuple[str, ...] = ("insert", "delete")
#: Why a rule did not count a reading (:mod:`aspen.streams.windows`, :mod:`aspen.streams.rules`,
#: :mod:`aspen.streams.zones`: a zone alarm drops the readings of sensors without a position).
DROP_REASONS: tuple[str, ...] = ("late", "duplicate", "outlier", "unknown_sensor")
#: The relative rounding allowed between a window's aggregates (``avg`` is ``sum / count``).
AGGREGATE_TOLERANCE = 1e-9
RULE_COLUMNS: tuple[str, ...] = ("name", "definition", "mode", "recorded_at")
WINDOW_COLUMNS: tuple[str, ...] = (
    "rule", "sensor", "window_start", "window_end", "count", "sum", "min", "max", "avg",
    "decision", "ids_lo", "ids_hi", "provenance", "prov_bytes", "prov_base", "mode",
    "stream_batch", "readings_version",
)
DROP_COLUMNS: tuple[str, ...] = (
    "rule", "id", "sensor", "ts", "value", "reason", "stream_batch",
)
_EAGER, _LAZY = 'mode == "eager"', 'mode == "lazy"'


def _readings(_: SuiteParams) -> list[Expectation]:
    out = not_null(*ddl_columns(READINGS)) + unique("id")
    out += at_least("id", 1) + between("id_step", 1, 1)
    out += at_least("batch_id", 1) + non_blank("sensor")
    out += between("value", -MAX_MAGNITUDE, MAX_MAGNITUDE)
    out += in_period("ts", EARLIEST_EVENT_TIME, LATEST_EVENT_TIME)
    return out


def _rules(_: SuiteParams) -> list[Expectation]:
    return not_null(*RULE_COLUMNS) + unique("name") + in_set("mode", MODES)


def _windows(_: SuiteParams) -> list[Expectation]:
    out = not_null(*(c for c in WINDOW_COLUMNS if c not in ("decision", "provenance",
                                                            "prov_base")))
    out += unique("rule", "sensor", "window_start") + pair_above("window_end", "window_start")
    out += at_least("count", 1) + finite("sum")
    for column in ("min", "max", "avg"):
        out += between(column, -MAX_MAGNITUDE, MAX_MAGNITUDE)
    out += pair_at_least("max", "min")
    out += between("avg_below_min", None, AGGREGATE_TOLERANCE)
    out += between("avg_above_max", None, AGGREGATE_TOLERANCE)
    out += between("sum_error", 0, AGGREGATE_TOLERANCE)
    out += at_least("ids_lo", 1) + pair_at_least("ids_hi", "ids_lo")
    out += in_set("decision", DECISIONS) + in_set("mode", MODES)
    # Reduced-Eager rows carry their ids (never empty), Replay-Lazy rows only the interval
    out += not_null("provenance", "prov_base", where=_EAGER)
    out += at_least("provenance_length", 1) + pair_equal("prov_bytes", "provenance_length")
    out += null("provenance", "prov_base", where=_LAZY) + between("prov_bytes", 0, 0, where=_LAZY)
    out += at_least("stream_batch", 0) + at_least("readings_version", 0)
    return out


def _drops(_: SuiteParams) -> list[Expectation]:
    out = not_null(*DROP_COLUMNS) + unique("rule", "id")
    out += in_set("reason", DROP_REASONS) + at_least("id", 1) + at_least("stream_batch", 0)
    return out


def _derive_windows(frame: pd.DataFrame) -> pd.DataFrame:
    return add_aggregate_errors(add_provenance_length(frame))


def _derive_readings(frame: pd.DataFrame) -> pd.DataFrame:
    return add_id_steps(frame, "id")


#: Every rule of the frame is recorded in ``reading_rules`` (with a definition that parses).
_RECORDED = CrossCheck("aspen_rule_recorded", ("rule",),
                       recorded_in(READING_RULES, "rule", rules_of))

READING_SUITES: tuple[TableSuite, ...] = (
    TableSuite(FAMILY, READINGS, ddl_columns(READINGS), _readings, derive=_derive_readings,
               derived_columns=("id_step",)),
    TableSuite(FAMILY, READING_RULES, RULE_COLUMNS, _rules, cross_checks=(
        CrossCheck("aspen_rule_definition_valid", ("name", "definition"),
                   definitions_valid(parse_rule, "rule")),)),
    TableSuite(FAMILY, READING_WINDOWS, WINDOW_COLUMNS, _windows, derive=_derive_windows,
               derived_columns=("provenance_length", *AGGREGATE_ERRORS), cross_checks=(
                   CrossCheck("aspen_window_ids_in_readings",
                              ("provenance", "ids_lo", "ids_hi", "count"), windows_in_readings),
                   _RECORDED)),
    TableSuite(FAMILY, READING_DROPS, DROP_COLUMNS, _drops, cross_checks=(
        CrossCheck("aspen_drop_ids_in_readings", ("id", "sensor", "ts", "value"),
                   drops_in_readings),
        _RECORDED)),
)
