"""What ingest quarantined: each record's reason, records grouped by reason with examples,
newest first, and the rows of the last hours. Pure.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

import pandas as pd

from .moments import timestamp
from .thresholds import RECENT_BATCHES, RECENT_HOURS

__all__ = ["REASON_COLUMNS", "newest_first", "quarantine_by_reason", "reason_counts", "reason_of",
           "recent_rows"]


_LINE_PREFIX = re.compile(r"^line \d+:\s*")


def reason_of(code: object, message: object) -> str:
    """The reason a record was quarantined: its reason ``code`` (``bad_cost``), else its
    message without the ``line N:`` it starts with (so one reason over many lines is one).

    >>> reason_of("bad_ts", "line 3: bad time"), reason_of(None, "line 12: not JSON")
    ('bad_ts', 'not JSON')
    >>> reason_of("", float("nan"))
    '(no reason)'
    """
    if isinstance(code, str) and code.strip():
        return code.strip()
    if message is None or (isinstance(message, float) and math.isnan(message)):
        return "(no reason)"
    return _LINE_PREFIX.sub("", str(message)) or "(no reason)"


def _reasons(quarantine: pd.DataFrame) -> pd.Series:
    codes = quarantine["code"] if "code" in quarantine else pd.Series(None, index=quarantine.index)
    messages = (quarantine["reason"] if "reason" in quarantine
                else pd.Series(None, index=quarantine.index))
    return pd.Series([reason_of(c, m) for c, m in zip(codes, messages, strict=True)],
                     index=quarantine.index, dtype=object)


def _example(row: Mapping[str, object]) -> str:
    """``file line N: message`` of one quarantined record."""
    source = row.get("source")
    line = row.get("line")
    message = row.get("reason")
    where = "" if source is None or pd.isna(source) else str(source)  # type: ignore[arg-type]
    if line is not None and not pd.isna(line):  # type: ignore[arg-type]
        where = f"{where} line {int(line)}".strip()  # type: ignore[call-overload]
    text = "" if message is None or pd.isna(message) else _LINE_PREFIX.sub(  # type: ignore[arg-type]
        "", str(message))
    return f"{where}: {text}" if where and text else where or text


def newest_first(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows newest first: by ingest time, then batch (both descending); within one, by file and
    line.

    >>> rows = pd.DataFrame({"batch_id": [1, 2, 2], "source": ["a", "b", "a"], "line": [1, 5, 9]})
    >>> newest_first(rows).values.tolist()
    [[2, 'a', 9], [2, 'b', 5], [1, 'a', 1]]
    """
    keys = [c for c in ("ingested_at", "batch_id") if c in frame]
    rest = [c for c in ("source", "line") if c in frame]
    if not keys and not rest:
        return frame
    return frame.sort_values(keys + rest, ascending=[False] * len(keys) + [True] * len(rest),
                             kind="stable", na_position="last")


#: Columns of :func:`quarantine_by_reason`.
REASON_COLUMNS = ["reason", "records", "latest batch", "example", "second example"]


def quarantine_by_reason(quarantine: pd.DataFrame) -> pd.DataFrame:
    """One row per reason (:func:`reason_of`): how many records, the latest batch and one or two
    example records (``file line N: message``, the newest), the reason last seen first (then the
    most frequent).

    >>> rows = pd.DataFrame({"batch_id": [1, 1, 2], "source": ["a.jsonl"] * 3,
    ...     "line": [3, 9, 4], "code": ["bad_cost", "bad_cost", "bad_ts"],
    ...     "reason": ["line 3: cost -1", "line 9: cost nan", "line 4: ts ?"]})
    >>> quarantine_by_reason(rows).values.tolist()
    [['bad_ts', 1, 2, 'a.jsonl line 4: ts ?', ''], \
['bad_cost', 2, 1, 'a.jsonl line 3: cost -1', 'a.jsonl line 9: cost nan']]
    """
    if quarantine.empty:
        return pd.DataFrame(columns=REASON_COLUMNS)
    frame = newest_first(quarantine.assign(_reason=_reasons(quarantine)))
    rows = []
    for reason, group in frame.groupby("_reason", sort=False):
        examples = [_example(r) for r in group.head(2).to_dict("records")]
        latest = group["batch_id"].max() if "batch_id" in group else None
        rows.append((reason, len(group), latest, examples[0], examples[1] if len(examples) > 1
                     else ""))
    table = pd.DataFrame(rows, columns=REASON_COLUMNS)
    return table.sort_values(["latest batch", "records", "reason"],
                             ascending=[False, False, True], kind="stable").reset_index(drop=True)


def recent_rows(frame: pd.DataFrame, time_column: str, now: object,
                hours: float = RECENT_HOURS, batch_column: str = "batch_id") -> pd.DataFrame:
    """The rows of ``frame`` from the last ``hours`` before ``now`` (by ``time_column``); for a
    frame without that column, those of its last :data:`RECENT_BATCHES` batches.

    >>> rows = pd.DataFrame({"batch_id": [1, 2], "ingested_at": pd.to_datetime(
    ...     ["2026-01-01", "2026-01-03"], utc=True)})
    >>> now = pd.Timestamp("2026-01-03 12:00", tz="UTC")
    >>> recent_rows(rows, "ingested_at", now)["batch_id"].tolist()
    [2]
    """
    if frame.empty:
        return frame
    if time_column in frame:
        moments = pd.to_datetime(frame[time_column], utc=True, errors="coerce")
        cutoff = timestamp(now)
        if cutoff is None:
            return frame.iloc[:0]
        return frame[moments >= cutoff - pd.Timedelta(hours=hours)]
    if batch_column not in frame:
        return frame.iloc[:0]
    batches = sorted(set(frame[batch_column].dropna()), reverse=True)[:RECENT_BATCHES]
    return frame[frame[batch_column].isin(batches)]


def reason_counts(quarantine: pd.DataFrame) -> dict[str, int]:
    """Records per reason (:func:`reason_of`), the most frequent first (then by name).

    >>> reason_counts(pd.DataFrame({"code": ["b", "a", "b", None],
    ...                             "reason": ["", "", "", "line 1: odd"]}))
    {'b': 2, 'a': 1, 'odd': 1}
    """
    if quarantine.empty:
        return {}
    counts = _reasons(quarantine).value_counts(sort=False)
    ordered = sorted(counts.items(), key=lambda item: (-item[1], str(item[0])))
    return {str(reason): int(count) for reason, count in ordered}
