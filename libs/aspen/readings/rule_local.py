"""The readings stream's sink without Spark: a micro-batch written from a pandas frame, and a
rule run over the whole ``readings`` table in process.

:func:`write_micro_batch` writes what the streaming query's ``foreachBatch`` sink writes for one
micro-batch (:mod:`aspen.readings.rule_stream`): the ``reading_windows`` and
``reading_drops`` rows (replacing that micro-batch's rows of the rule) and, when asked, the
decisions as ``triggered`` updates in the update log. :func:`run_rule_locally` feeds every
reading of the lake through the rule per sensor (:class:`~aspen.streams.rules.SensorState`, the
same code the state store runs) and writes the result as one micro-batch, so a small lake gets
the tables the dashboard and ``aspen explain triggered`` read without starting a JVM. It starts
from a fresh state each time: run it once per rule on a lake, not as a stream.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from aspen.errors import ConfigError
from aspen.lake import deltars, tables
from aspen.readings.driver import require_readings
from aspen.readings.modes import MODES
from aspen.readings.rule_rows import StreamState, step_frame
from aspen.readings.rule_tables import record_rule
from aspen.readings.rule_tables import write_micro_batch as sink_micro_batch
from aspen.settings import Settings
from aspen.streams.rules import TriggerRule
from aspen.streams.windows import Reading

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["LocalBatch", "rule_frame", "run_rule_locally", "write_micro_batch"]


@dataclass(frozen=True)
class LocalBatch:
    """What one micro-batch wrote: windows, dropped readings and decisions logged."""

    windows: int
    dropped: int
    decisions: int


def write_micro_batch(settings: Settings, rule: TriggerRule, mode: str, frame: pd.DataFrame,
                      stream_batch: int, log_decisions: bool = True) -> LocalBatch:
    """Write micro-batch ``stream_batch`` of rule ``rule`` from ``frame`` (rows as
    :func:`~aspen.readings.rule_rows.step_frame` emits them) as the stream's sink does
    (:func:`aspen.readings.rule_tables.write_micro_batch`). The rule is recorded in
    ``reading_rules`` first (a name that ran with another definition or mode is refused)."""
    if mode not in MODES:
        raise ConfigError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    record_rule(settings, rule, mode)
    return LocalBatch(*sink_micro_batch(settings, rule, mode, frame, stream_batch,
                                        log_decisions))


def rule_frame(rule: TriggerRule, mode: str, readings: pd.DataFrame) -> pd.DataFrame:
    """The rows the stream's state function emits for ``readings`` (``id``, ``sensor``, ``ts``,
    ``value``: a ``readings`` table), each sensor's readings in id order from a fresh state.

    >>> import pandas as pd
    >>> readings = pd.DataFrame({"id": [1, 2], "sensor": ["s1", "s1"], "value": [95.0, 50.0],
    ...     "ts": pd.to_datetime(["2026-01-01T00:00:05Z", "2026-01-01T00:01:40Z"])})
    >>> rule_frame(TriggerRule(), "lazy", readings)[["kind", "sensor", "decision"]].values.tolist()
    [['window', 's1', 'insert']]
    """
    import pandas as pd

    frames = []
    ordered = readings.sort_values("id")
    for sensor, rows in ordered.groupby("sensor", sort=True):
        state = StreamState.fresh(mode)
        stream = [Reading(int(i), int(pd.Timestamp(ts).value // 1000), float(v))
                  for i, ts, v in zip(rows["id"], rows["ts"], rows["value"], strict=True)]
        frames.append(step_frame(str(sensor), state.sensor.add_all(rule, stream), state))
    if not frames:
        return step_frame("", StreamState.fresh(mode).sensor.add_all(rule, []),
                          StreamState.fresh(mode))
    return pd.concat(frames, ignore_index=True)


def run_rule_locally(settings: Settings, rule: TriggerRule, mode: str = "eager",
                     stream_batch: int = 0, log_decisions: bool = True) -> LocalBatch:
    """Run ``rule`` over every reading of the lake in process and write the result as
    micro-batch ``stream_batch`` (:func:`write_micro_batch`); windows still open at the last
    reading stay unwritten, as in the stream."""
    require_readings(settings)
    readings = deltars.read_table(settings, tables.READINGS, ["id", "sensor", "ts", "value"])
    return write_micro_batch(settings, rule, mode, rule_frame(rule, mode, readings),
                             stream_batch, log_decisions)
