"""Provenance questions answered from the published view tables, without recomputation.

A view table row carries its formula in the byte codec; this module decodes the rows it needs
into one manager, names variables by the base tuples they stand for (``variables`` registry),
and answers *why* (minimal witnesses, critical base tuples) and *what if* (tuples lost when base
tuples are deleted: restriction of the stored formulas, nothing is written).

>>> parse_base_ref("link:n1:n2")
('link', ('n1', 'n2'))
>>> parse_base_ref("sensor:s7")
('sensor', ('s7',))
"""

from __future__ import annotations

import functools
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from deltalake.exceptions import DeltaError

from aspen.catalog import VIEW_COLUMNS, VIEWS, check_view
from aspen.errors import AspenError, ConfigError, UnknownKeyError
from aspen.lake.committed import committed_versions, read_committed, reading_version
from aspen.lake.deltars import read_table, table_exists
from aspen.lake.view_log import VIEW_CHANGES
from aspen.pipeline.view_tables import row_to_tuple
from aspen.provenance.bdd import ProvenanceManager
from aspen.provenance.codec import stored_order
from aspen.settings import Settings

__all__ = [
    "BASE_KEYS",
    "Explanation",
    "LakeProvenance",
    "ProvenanceVersions",
    "parse_base_ref",
    "provenance_versions",
    "shared_provenance",
]

#: Key attributes of each base relation, as named on the command line (RELATION:KEY…).
BASE_KEYS: dict[str, tuple[str, ...]] = {
    "link": ("src", "dst"),
    "sensor": ("id",),
    "triggered": ("id",),
    "region_seed": ("region", "id"),
    "node": ("id",),  # every link into or out of a node
}
#: Formulas at least this long (bytes) fix the decoding order (:func:`stored_order`).
STORED_ORDER_BYTES = 4096
#: Views explanations and what-if read: every view (those whose rows carry no formula, the
#: region aggregates of the view registry, have nothing to explain and lose nothing).
PROVENANCE_VIEWS: tuple[str, ...] = VIEWS


def parse_base_ref(text: str) -> tuple[str, tuple[str, ...]]:
    """Parse ``RELATION:KEY…`` (e.g. ``link:n1:n2``) into (relation, key)."""
    relation, _, rest = text.partition(":")
    if relation not in BASE_KEYS:
        raise ConfigError(
            f"cannot read {text!r}: expected RELATION:KEY with RELATION one of "
            f"{', '.join(BASE_KEYS)}"
        )
    key = tuple(rest.split(":")) if rest else ()
    if len(key) != len(BASE_KEYS[relation]) or not all(key):
        wanted = ":".join(k.upper() for k in BASE_KEYS[relation])
        raise ConfigError(f"cannot read {text!r}: expected {relation}:{wanted}")
    return relation, key


@dataclass
class Explanation:
    """Why one view tuple holds."""

    view: str
    tuple: tuple
    witnesses: list[list[str]] = field(default_factory=list)  # base tuples, one list per witness
    critical: list[str] = field(default_factory=list)
    truncated: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "view": self.view,
            "tuple": list(self.tuple),
            "witnesses": self.witnesses,
            "critical": self.critical,
            "truncated": self.truncated,
        }


_Method = TypeVar("_Method", bound=Callable[..., Any])


def _locked(method: _Method) -> _Method:
    """Run ``method`` holding the object's lock: one ``dd`` manager serves every thread of a
    dashboard server, and ``dd`` managers are not thread-safe."""

    @functools.wraps(method)
    def run(self: LakeProvenance, *args: Any, **kwargs: Any) -> Any:
        with self.lock:
            return method(self, *args, **kwargs)

    return run  # type: ignore[return-value]


class LakeProvenance:
    """Decoded provenance of the published views of one lake.

    Thread-safe: every public method holds :attr:`lock`, so one object (one decoding) can serve
    every session of a dashboard server (:func:`shared_provenance`).
    """

    def __init__(self, settings: Settings, backend: str | None = None) -> None:
        self.settings = settings
        self.lock = threading.RLock()
        self.manager = ProvenanceManager(backend)
        self.manager.fix_order()  # decode node by node in the stored order (stored_order)
        self.warm_seconds: float | None = None
        self._live: list[tuple[str, str, list[str]]] | None = None
        self._variables = read_table(settings, "variables")
        self._formulas: dict[str, dict[tuple, Any]] = {}
        self._indexes: dict[str, dict[str, set[tuple]]] = {}
        self._frames: dict[str, Any] = {}

    # -- base tuples ---------------------------------------------------------------------------
    @_locked
    def describe(self, var: str) -> str:
        """A base variable as the tuple it stands for, e.g. ``link(n1→n2)``."""
        rows = self._variables[self._variables["var"] == var]
        if rows.empty:
            return var
        row = rows.iloc[0]
        values = json.loads(row["values"]) if isinstance(row["values"], str) else row["values"]
        if isinstance(values, dict):
            values = list(values.values())
        if row["relation"] == "link":
            return f"link({values[0]}→{values[1]})"
        key = values[: len(BASE_KEYS[row["relation"]])]
        return f"{row['relation']}({','.join(str(v) for v in key)})"

    def _live_rows(self) -> list[tuple[str, str, list[str]]]:
        """``(relation, var, values as text)`` of every live instance, parsed once."""
        if self._live is None:
            live = self._variables[self._variables["deleted_batch"].isna()]
            self._live = []
            for row in live.to_dict("records"):
                values = row["values"]
                values = json.loads(values) if isinstance(values, str) else values
                if isinstance(values, dict):
                    values = list(values.values())
                self._live.append((str(row["relation"]), str(row["var"]),
                                   [str(v) for v in values]))
        return self._live

    @_locked
    def live_vars_of(self, relation: str, key: tuple[str, ...]) -> set[str]:
        """The live variables of a base tuple named on the command line."""
        found: set[str] = set()
        for row_relation, var, strs in self._live_rows():
            if relation == "node":
                if row_relation == "link" and key[0] in strs[:2]:
                    found.add(var)
            elif row_relation == relation and tuple(strs[: len(key)]) == key:
                found.add(var)
        if not found:
            raise UnknownKeyError(f"no live {relation} {':'.join(key)} in the lake")
        return found

    # -- views -----------------------------------------------------------------------------------
    def _frame(self, view: str) -> Any:
        if view not in self._frames:
            self._frames[view] = read_committed(self.settings, check_view(view))
        return self._frames[view]

    def _decode_rows(self, view: str, rows: list[dict[str, Any]]) -> dict[tuple, Any]:
        stored = [(row_to_tuple(view, row), bytes(row["provenance"]))
                  for row in rows if row.get("provenance") is not None]
        encodings = [data for _, data in stored]
        self.manager.declare_in_order(stored_order(encodings, min_bytes=STORED_ORDER_BYTES))
        formulas = self.manager.decode_each(encodings)
        return {key: formula for (key, _), formula in zip(stored, formulas, strict=True)}

    @_locked
    def formulas(self, view: str) -> dict[tuple, Any]:
        """Every tuple of ``view`` with its decoded formula."""
        if view not in self._formulas:
            self._formulas[view] = self._decode_rows(view, self._frame(view).to_dict("records"))
        return self._formulas[view]

    @_locked
    def matching(self, view: str, key: tuple[str, ...]) -> dict[tuple, Any]:
        """Tuples of ``view`` whose leading attributes equal ``key``, with their formulas.

        Only the matching rows are decoded (explaining one pair of a large view stays cheap).
        """
        columns = VIEW_COLUMNS[check_view(view)]
        if len(key) > len(columns):
            raise ConfigError(
                f"{view} has {len(columns)} attributes ({', '.join(columns)}); got {len(key)}")
        if view in self._formulas:
            found = {t: f for t, f in self._formulas[view].items()
                     if tuple(str(v) for v in t[: len(key)]) == key}
        else:
            frame = self._frame(view)
            mask = None
            for column, value in zip(columns, key, strict=False):
                hit = frame[column].astype(str) == value
                mask = hit if mask is None else mask & hit
            found = self._decode_rows(view, frame[mask].to_dict("records"))
        if not found:
            raise UnknownKeyError(f"{view} has no tuple {' '.join(key)}")
        return dict(sorted(found.items(), key=lambda item: repr(item[0])))

    @_locked
    def explain(self, view: str, key: tuple[str, ...], limit: int = 20) -> list[Explanation]:
        """Minimal witnesses and critical base tuples of the tuples of ``view`` matching ``key``."""
        from aspen.provenance.explain import minimal_witnesses

        if view not in PROVENANCE_VIEWS:
            raise ConfigError(f"{view} carries no provenance to explain; "
                              f"try one of {', '.join(PROVENANCE_VIEWS)}")
        out = []
        for values, formula in self.matching(view, key).items():
            # witnesses and critical tuples are shown per base *tuple*: the instances (variables)
            # of one renewed link are the same link to an operator
            by_tuple: dict[str, set[str]] = {}
            for var in self.manager.support(formula):
                by_tuple.setdefault(self.describe(var), set()).add(var)
            var_witnesses = minimal_witnesses(self.manager, formula, limit=4 * limit + 1)
            tuple_sets = {frozenset(self.describe(v) for v in w) for w in var_witnesses}
            minimal = sorted(
                (w for w in tuple_sets if not any(o < w for o in tuple_sets)),
                key=lambda w: (len(w), sorted(w)),
            )
            critical = [
                name for name, vars_ in sorted(by_tuple.items())
                if self.manager.is_false(self.manager.restrict_false(formula, vars_))
            ]
            out.append(
                Explanation(
                    view,
                    values,
                    [sorted(w) for w in minimal[:limit]],
                    critical,
                    truncated=len(minimal) > limit or len(var_witnesses) > 4 * limit,
                )
            )
        return out

    @_locked
    def what_if(self, deleted: set[str],
                views: tuple[str, ...] | None = None) -> dict[str, list[tuple]]:
        """Per view, the tuples that would disappear if the ``deleted`` variables died."""
        from aspen.provenance.explain import build_var_index, what_if

        lost: dict[str, list[tuple]] = {}
        for view in views or tuple(v for v in VIEWS if v in PROVENANCE_VIEWS):
            if not table_exists(self.settings, view):
                continue
            formulas = self.formulas(view)
            if view not in self._indexes:  # built once: later questions touch only candidates
                self._indexes[view] = build_var_index(self.manager, formulas)
            gone = what_if(self.manager, formulas, deleted, self._indexes[view])
            lost[view] = sorted(gone, key=repr)
        return lost

    @_locked
    def warm(self) -> float:
        """Decode every provenance view and index it for what-if questions, so the first
        question is answered from memory; returns the seconds it took (also kept in
        :attr:`warm_seconds`)."""
        from aspen.provenance.explain import build_var_index

        started = time.perf_counter()
        for view in PROVENANCE_VIEWS:
            if view in VIEWS and table_exists(self.settings, view):
                formulas = self.formulas(view)
                if view not in self._indexes:
                    self._indexes[view] = build_var_index(self.manager, formulas)
        self._live_rows()
        self.warm_seconds = time.perf_counter() - started
        return self.warm_seconds


#: Cache key of a lake's provenance: ``(table, version)`` of each provenance table that exists.
ProvenanceVersions = tuple[tuple[str, int], ...]

#: The tables a :class:`LakeProvenance` reads: the registry, every view and the views' change log.
PROVENANCE_TABLES: tuple[str, ...] = ("variables", *VIEWS, VIEW_CHANGES)


def provenance_versions(settings: Settings) -> ProvenanceVersions:
    """The versions readers read of the registry and the view tables (a few Delta log reads;
    it changes with every committed batch).

    >>> provenance_versions(Settings(lake="/nonexistent/lake"))
    ()
    """
    committed = committed_versions(settings)
    found = ((name, reading_version(settings, name, committed)) for name in PROVENANCE_TABLES)
    return tuple((name, version) for name, version in found if version is not None)


#: Decoded provenance kept per process: the latest few lake versions.
SHARED_KEPT = 2
_shared: OrderedDict[tuple[str, ProvenanceVersions], LakeProvenance] = OrderedDict()
_shared_lock = threading.Lock()


def shared_provenance(lake: str, versions: ProvenanceVersions) -> LakeProvenance:
    """The one :class:`LakeProvenance` of ``lake`` at ``versions`` in this process: decoded
    once per lake version, whichever thread (dashboard session, warming thread) asks first.

    >>> shared_provenance("/nonexistent/lake", ())  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    aspen.errors.TableMissingError: table 'variables' does not exist under ...
    """
    key = (lake, versions)
    with _shared_lock:
        found = _shared.get(key)
        if found is None:
            found = _shared[key] = LakeProvenance(Settings(lake=lake))
            while len(_shared) > SHARED_KEPT:
                _shared.popitem(last=False)
        else:
            _shared.move_to_end(key)
        return found


def keep_warm(settings: Settings, every_s: float, stop: threading.Event,
              on_warm: Callable[[ProvenanceVersions, float], None] | None = None) -> None:
    """Until ``stop`` is set: whenever the lake's provenance tables get a new version, decode
    them (:meth:`LakeProvenance.warm`) before anyone asks; checks every ``every_s`` seconds.
    A lake without provenance yet, or one that cannot be read, is looked at again later."""
    warmed: ProvenanceVersions | None = None
    while not stop.is_set():
        try:
            versions = provenance_versions(settings)
            if versions and versions != warmed:
                seconds = shared_provenance(settings.lake, versions).warm()
                warmed = versions
                if on_warm is not None:
                    on_warm(versions, seconds)
        except (AspenError, DeltaError, OSError, ValueError):
            pass  # a table written meanwhile or not readable yet: the next look will tell
        stop.wait(every_s)
