"""What died lately: the recent ingest batches and the links and sensors deleted or expired in
them that have no live instance now. Pure.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

import pandas as pd

from .quarantine import recent_rows
from .thresholds import RECENT_HOURS

__all__ = ["DEATH_COLUMNS", "recent_deaths", "recent_ingest_batches"]


#: Columns of :func:`recent_deaths`.
DEATH_COLUMNS = ["what", "name", "death", "batch"]


#: Deaths that end a tuple (a replaced instance lives on under its new value).
_ENDING_DEATHS = ("deleted", "expired")


def _values_list(raw: object) -> list[object]:
    try:
        values = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return [raw]
    if isinstance(values, Mapping):
        values = list(values.values())
    return list(values) if isinstance(values, list | tuple) else [values]


def _tuple_name(relation: str, raw: object) -> str:
    """A link as ``a → b``, anything else as its first value.

    >>> _tuple_name("link", '["a", "b", 1.0]'), _tuple_name("sensor", '["s1", 0, 0]')
    ('a → b', 's1')
    """
    values = _values_list(raw)
    if relation == "link" and len(values) >= 2:
        return f"{values[0]} → {values[1]}"
    return str(values[0]) if values else ""


def recent_ingest_batches(ingest_files: pd.DataFrame | None, now: object,
                          hours: float = RECENT_HOURS) -> list[int]:
    """The ingest batches committed in the last ``hours`` before ``now`` (by ``ingested_at``,
    the wall-clock time of the ingest; a TTL sweep's batch has a row too), newest first; without
    that column, the last :data:`RECENT_BATCHES`.

    >>> files = pd.DataFrame({"batch_id": [1, 2, 2], "ingested_at": pd.to_datetime(
    ...     ["2026-01-01", "2026-01-03", "2026-01-03"], utc=True)})
    >>> recent_ingest_batches(files, pd.Timestamp("2026-01-03 12:00", tz="UTC"))
    [2]
    """
    if ingest_files is None or ingest_files.empty or "batch_id" not in ingest_files:
        return []
    rows = recent_rows(ingest_files, "ingested_at", now, hours)
    return sorted({int(b) for b in rows["batch_id"].dropna()}, reverse=True)


def recent_deaths(variables: pd.DataFrame | None, batches: Iterable[int],
                  relations: Sequence[str] = ("link", "sensor"),
                  still_dead: bool = True) -> pd.DataFrame:
    """Tuples of ``relations`` that died (deleted or expired) in one of the ingest ``batches``
    and (``still_dead``) have no live instance now: one row per tuple (its latest death), newest
    first. ``variables`` is the
    registry (``relation``, ``key``, ``values``, ``deleted_batch``, ``death``). Its
    ``deleted_at`` is the update's event time (a replay's may be years old), so recency goes by
    batch (:func:`recent_ingest_batches`).

    >>> registry = pd.DataFrame({"relation": ["link", "link", "sensor", "link", "link"],
    ...     "key": ['["a","b"]', '["b","c"]', '["s1"]', '["b","c"]', '["c","d"]'],
    ...     "values": ['["a","b",1]', '["b","c",2]', '["s1",0,0]', '["b","c",3]', '["c","d",1]'],
    ...     "deleted_batch": pd.array([4, 4, 3, None, 1], dtype="Int64"),
    ...     "death": ["expired", "deleted", "deleted", None, "deleted"]})
    >>> recent_deaths(registry, [4, 3]).values.tolist()
    [['link', 'a → b', 'expired', 4], ['sensor', 's1', 'deleted', 3]]
    >>> len(recent_deaths(registry, [4, 3], still_dead=False))  # b → c lives on
    3
    """
    wanted = {int(b) for b in batches}
    if variables is None or variables.empty or "deleted_batch" not in variables or not wanted:
        return pd.DataFrame(columns=DEATH_COLUMNS)
    frame = variables[variables["relation"].astype(str).isin(relations)]
    if "key" not in frame:
        frame = frame.assign(key=frame["values"].astype(str))
    alive = frame[frame["deleted_batch"].isna()]
    living = set(zip(alive["relation"].astype(str), alive["key"].astype(str), strict=True))
    dead = frame[frame["deleted_batch"].notna()]
    dead = dead[dead["deleted_batch"].astype("int64").isin(wanted)]
    death = dead["death"].fillna("deleted").astype(str) if "death" in dead else "deleted"
    dead = dead.assign(death=death)
    dead = dead[dead["death"].isin(_ENDING_DEATHS)]
    if still_dead:
        dead = dead[[(r, k) not in living for r, k in zip(
            dead["relation"].astype(str), dead["key"].astype(str), strict=True)]]
    if dead.empty:
        return pd.DataFrame(columns=DEATH_COLUMNS)
    dead = dead.sort_values("deleted_batch", kind="stable").groupby(["relation", "key"]).tail(1)
    out = pd.DataFrame({
        "what": dead["relation"].astype(str),
        "name": [_tuple_name(r, v) for r, v in zip(dead["relation"].astype(str),
                                                   dead["values"], strict=True)],
        "death": dead["death"],
        "batch": dead["deleted_batch"].astype("int64"),
    })
    return out.sort_values(["batch", "what", "name"], ascending=[False, True, True],
                           kind="stable").reset_index(drop=True)
