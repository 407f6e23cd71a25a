"""The variable registry: which insertion instance of which base tuple each variable stands for.

Decision 4 (docs/architecture.md): every insertion instance of a base tuple gets a **fresh
variable**; a re-insert or a TTL renewal is a new variable OR-ed into the formulas, never the
old one revived. The registry maps each variable to a :class:`VariableInfo` (relation, values,
instance number, insertion / expiry / death times) and answers the questions the engine, the
TTL sweep and the explanations ask: which variables of a tuple are live, which have expired,
how to name a variable for a person.

Tuples are identified by their **key**: the leading ``KEY_ARITY[relation]`` values
(``link(src, dst)``, ``sensor(id)``, ``triggered(id)``, ``region_seed(region, id)``); the rest
(cost, position) is payload. A delete record names only the key, so :meth:`VariableRegistry.vars_of`
matches on the key. Variable names are opaque strings assigned by the caller (the lake).

>>> from datetime import datetime, timedelta
>>> t0 = datetime(2024, 1, 1)
>>> reg = VariableRegistry()
>>> _ = reg.register("v1", "link", ("n1", "n2", 2.0), inserted_at=t0,
...                  expires_at=t0 + timedelta(seconds=60))
>>> _ = reg.register("v2", "link", ("n1", "n2", 2.0), inserted_at=t0 + timedelta(seconds=30))
>>> reg.vars_of("link", ("n1", "n2")), reg.info("v2").instance, reg.describe("v2")
(['v1', 'v2'], 2, 'link(n1→n2)')
>>> reg.expired(t0 + timedelta(seconds=60))
['v1']
>>> _ = reg.kill("v1", t0 + timedelta(seconds=60))
>>> sorted(reg.live_vars())
['v2']
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from aspen.errors import ProvenanceError, UnknownKeyError

__all__ = ["KEY_ARITY", "VariableInfo", "VariableRegistry", "tuple_key"]

#: How many leading values identify a tuple of each base relation (the rest is payload).
KEY_ARITY: dict[str, int] = {"link": 2, "sensor": 1, "triggered": 1, "region_seed": 2}


def tuple_key(relation: str, values: Iterable[Any]) -> tuple:
    """The key part of ``relation(values)``; all values for relations not in :data:`KEY_ARITY`.

    >>> tuple_key("link", ("a", "b", 3.0)), tuple_key("other", ("a", 1))
    (('a', 'b'), ('a', 1))
    """
    values = tuple(values)
    arity = KEY_ARITY.get(relation)
    return values if arity is None else values[:arity]


@dataclass(frozen=True)
class VariableInfo:
    """One insertion instance: variable ``var`` stands for ``relation(values)``, instance n."""

    var: str
    relation: str
    values: tuple
    instance: int
    inserted_at: datetime | None = None
    expires_at: datetime | None = None
    deleted_at: datetime | None = None

    @property
    def key(self) -> tuple:
        """The identifying values (see :func:`tuple_key`)."""
        return tuple_key(self.relation, self.values)

    @property
    def live(self) -> bool:
        """Whether the instance has not been deleted or expired yet."""
        return self.deleted_at is None


class VariableRegistry:
    """Variable ↔ insertion instance, with the live variables of each tuple key."""

    def __init__(self) -> None:
        self._info: dict[str, VariableInfo] = {}
        self._by_key: dict[tuple[str, tuple], list[str]] = {}  # every instance, in order
        self._live: set[str] = set()

    # -- changes ------------------------------------------------------------------------------
    def register(
        self,
        var: str,
        relation: str,
        values: Iterable[Any],
        *,
        inserted_at: datetime | None = None,
        expires_at: datetime | None = None,
        instance: int | None = None,
    ) -> VariableInfo:
        """Record a fresh variable for a new insertion instance of ``relation(values)``.

        ``instance`` defaults to one more than the tuple's previous instances. A variable name
        can be registered only once (fresh variables are never reused).
        """
        if not isinstance(var, str) or not var:
            raise ProvenanceError(f"a provenance variable must be a non-empty string, not {var!r}")
        if var in self._info:
            raise ProvenanceError(
                f"variable {var!r} is already registered; variables are never reused")
        values = tuple(values)
        slot = self._by_key.setdefault((relation, tuple_key(relation, values)), [])
        if instance is None:
            instance = max((self._info[v].instance for v in slot), default=0) + 1
        info = VariableInfo(var, relation, values, instance, inserted_at, expires_at, None)
        self._info[var] = info
        slot.append(var)
        self._live.add(var)
        return info

    def kill(self, var: str, at: datetime) -> VariableInfo:
        """Mark ``var`` dead (deleted or expired) at ``at``; killing a dead variable is a no-op.

        The first death time is kept; ``at`` is required because ``deleted_at`` is what marks
        a variable dead in :meth:`rows`.
        """
        if not isinstance(at, datetime):
            raise ProvenanceError(f"kill({var!r}) needs the time of death, got {at!r}")
        info = self.info(var)
        if not info.live:
            return info
        info = replace(info, deleted_at=at)
        self._info[var] = info
        self._live.discard(var)
        return info

    # -- questions ----------------------------------------------------------------------------
    def info(self, var: str) -> VariableInfo:
        """What ``var`` stands for."""
        try:
            return self._info[var]
        except KeyError:
            raise UnknownKeyError(f"unknown provenance variable {var!r}") from None

    def __contains__(self, var: object) -> bool:
        return var in self._info

    def __len__(self) -> int:
        return len(self._info)

    def __iter__(self) -> Iterator[VariableInfo]:
        return iter(self._info.values())

    def live_vars(self) -> set[str]:
        """Every variable not deleted or expired yet."""
        return set(self._live)

    def vars_of(self, relation: str, values: Iterable[Any]) -> list[str]:
        """The live variables of the tuple whose key ``values`` starts with, oldest first."""
        slot = self._by_key.get((relation, tuple_key(relation, values)), [])
        return [v for v in slot if v in self._live]

    def expired(self, now: datetime) -> list[str]:
        """Live variables whose ``expires_at`` is at or before ``now``, earliest first."""
        due = [
            self._info[v]
            for v in self._live
            if self._info[v].expires_at is not None and self._info[v].expires_at <= now
        ]
        return [i.var for i in sorted(due, key=lambda i: (i.expires_at, i.var))]

    def describe(self, var: str) -> str:
        """A person-readable name: ``link(n1→n2)``, ``sensor(s7)``, ``region_seed(r1,s7)``."""
        info = self.info(var)
        key = [str(v) for v in info.key]
        if info.relation == "link" and len(key) == 2:
            return f"link({key[0]}→{key[1]})"
        return f"{info.relation}({','.join(key)})"

    # -- persistence --------------------------------------------------------------------------
    def rows(self) -> list[dict[str, Any]]:
        """One plain dict per variable, in registration order (a Delta-friendly schema).

        Columns: ``var`` (str), ``relation`` (str), ``values_json`` (str, a JSON array: the
        values have mixed types), ``instance`` (int), ``inserted_at`` / ``expires_at`` /
        ``deleted_at`` (datetime or None).
        """
        return [
            {
                "var": i.var,
                "relation": i.relation,
                "values_json": json.dumps(list(i.values)),
                "instance": i.instance,
                "inserted_at": i.inserted_at,
                "expires_at": i.expires_at,
                "deleted_at": i.deleted_at,
            }
            for i in self._info.values()
        ]

    @classmethod
    def from_rows(cls, rows: Iterable[Mapping[str, Any]]) -> VariableRegistry:
        """Rebuild a registry from :meth:`rows` (datetimes may also be ISO 8601 strings).

        >>> reg = VariableRegistry()
        >>> _ = reg.register("v9", "sensor", ("s7", 1.0, 2.5))
        >>> VariableRegistry.from_rows(reg.rows()).info("v9") == reg.info("v9")
        True
        """
        reg = cls()
        for row in rows:
            try:
                values = tuple(json.loads(row["values_json"]))
                info = reg.register(
                    str(row["var"]),
                    str(row["relation"]),
                    values,
                    inserted_at=_as_datetime(row.get("inserted_at")),
                    expires_at=_as_datetime(row.get("expires_at")),
                    instance=int(row["instance"]),
                )
            except (KeyError, TypeError, ValueError) as err:
                raise ProvenanceError(f"bad variable registry row {dict(row)!r}: {err}") from err
            deleted_at = _as_datetime(row.get("deleted_at"))
            if deleted_at is not None:
                reg.kill(info.var, deleted_at)
        return reg


def _as_datetime(value: Any) -> datetime | None:
    if value is None or isinstance(value, datetime) and value == value:
        return value
    if value != value:  # NaN / NaT from a data frame
        return None
    if hasattr(value, "to_pydatetime"):  # pandas Timestamp
        return value.to_pydatetime()
    return datetime.fromisoformat(str(value))
