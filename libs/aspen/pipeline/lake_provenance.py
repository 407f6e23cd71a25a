"""Provenance questions answered from the published view tables, without recomputation.

A view table row carries its formula in the byte codec; this module decodes the rows a question
needs into one manager (a what-if: the rows whose stored variable names include a deleted one;
a why: the matching rows), names variables by the base tuples they stand for (``variables``
registry), and answers *why* (minimal witnesses, critical base tuples) and *what if* (tuples
lost when base tuples are deleted: restriction of the stored formulas, nothing is written). A
reading of a later batch is derived from the one before (:meth:`LakeProvenance.advance`), so
after a batch only the rows it changed are decoded again.

>>> parse_base_ref("link:n1:n2")
('link', ('n1', 'n2'))
>>> parse_base_ref("sensor:s7")
('sensor', ('s7',))
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from deltalake.exceptions import DeltaError

from aspen.catalog import VIEW_COLUMNS, VIEWS, check_view
from aspen.errors import AspenError, ConfigError, UnknownKeyError
from aspen.lake.committed import committed_versions, read_committed, reading_version
from aspen.lake.deltars import table_exists
from aspen.lake.view_log import VIEW_CHANGES
from aspen.pipeline.provenance_follow import (
    Followed,
    Registry,
    changed_rows,
    log_changes,
    pin_lake,
)
from aspen.pipeline.provenance_index import ViewRows, chunks
from aspen.pipeline.provenance_vars import (
    count_with_formula,
    index_version,
    pairs_of,
    read_pairs,
)
from aspen.provenance.bdd import ProvenanceManager
from aspen.provenance.codec import names_order
from aspen.settings import Settings

__all__ = [
    "BASE_KEYS",
    "Explanation",
    "LakeProvenance",
    "ProvenanceVersions",
    "in_foreground",
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
#: The warm-up decodes this many stored bytes under the lock at a time (a longer row alone).
WARM_CHUNK_BYTES = 1 << 18
#: The warm-up starts no new step while a reader works (:func:`in_foreground`) nor this long
#: after, and waits at most :data:`FOREGROUND_WAIT_S` at a time (busy readers do not stop it).
FOREGROUND_GRACE_S = 0.3
FOREGROUND_WAIT_S = 10.0
#: With a variable index in the lake, questions do not need the warm-up: it starts only once
#: no reader has worked for this long (since the process started, or the last page drew), so
#: a fresh server's first page and question have the machine to themselves.
WARM_QUIET_S = 30.0
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


_foreground = 0
_foreground_ended = time.monotonic()  # the process's start counts as a reader's last work
_foreground_changed = threading.Condition()


@contextlib.contextmanager
def in_foreground() -> Iterator[None]:
    """Mark a reader's work (a page of the dashboard drawing): meanwhile, and for
    :data:`FOREGROUND_GRACE_S` after, the warm-up (:meth:`LakeProvenance.warm`) starts no new
    step, so the reader does not share the process (and its GIL) with it.

    >>> with in_foreground():
    ...     _readers_working()
    True
    >>> _readers_working()
    False
    """
    global _foreground, _foreground_ended
    with _foreground_changed:
        _foreground += 1
    try:
        yield
    finally:
        with _foreground_changed:
            _foreground -= 1
            _foreground_ended = time.monotonic()
            _foreground_changed.notify_all()


def _readers_working() -> bool:
    with _foreground_changed:
        return _foreground > 0


def _wait_for_quiet(seconds: float) -> None:
    """Wait until no reader has worked (:func:`in_foreground`) for ``seconds``."""
    with _foreground_changed:
        while True:
            quiet = time.monotonic() - _foreground_ended
            if not _foreground and quiet >= seconds:
                return
            _foreground_changed.wait(seconds if _foreground else seconds - quiet)


def _yield_to_readers() -> None:
    """Wait while a reader works (:func:`in_foreground`), :data:`FOREGROUND_WAIT_S` at most."""
    deadline = time.monotonic() + FOREGROUND_WAIT_S
    with _foreground_changed:
        while (now := time.monotonic()) < deadline:
            quiet = 0.0 if _foreground else _foreground_ended + FOREGROUND_GRACE_S - now
            if not _foreground and quiet <= 0:
                return
            _foreground_changed.wait(min(deadline - now, quiet or FOREGROUND_WAIT_S))


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


class _Core:
    """The manager the readings of one lake decode into, and the lock that guards it: ``dd``
    managers are not thread-safe, and the readings of later batches (:meth:`LakeProvenance.
    advance`) keep decoding into the same manager."""

    def __init__(self, backend: str | None) -> None:
        self.manager = ProvenanceManager(backend)
        self.manager.fix_order()  # decode node by node in the stored order (names_order)
        self.lock = threading.RLock()


def _described(row: dict[str, Any]) -> str:
    """A registry row as the base tuple it stands for, e.g. ``link(n1→n2)`` (the variable's
    name when its values cannot be read).

    >>> _described({"var": "v1", "relation": "link", "values": '["a", "b", 2.0]'})
    'link(a→b)'
    >>> _described({"var": "v2", "relation": "region_seed", "values": '["r1", "s7"]'})
    'region_seed(r1,s7)'
    """
    try:
        values = json.loads(row["values"]) if isinstance(row["values"], str) else row["values"]
        if isinstance(values, dict):
            values = list(values.values())
        if row["relation"] == "link":
            return f"link({values[0]}→{values[1]})"
        key = values[: len(BASE_KEYS.get(row["relation"], values))]
        return f"{row['relation']}({','.join(str(v) for v in key)})"
    except (ValueError, TypeError, IndexError, KeyError):
        return str(row["var"])


class LakeProvenance:
    """Provenance of the published views of one lake, as of one committed batch (the last, or
    the one whose table versions are ``versions``), decoded as questions need it.

    A view's rows are read on first use, with their stored bytes; a question decodes only the
    rows it needs (:meth:`what_if`: the rows whose formula mentions a deleted variable, found
    by the name index of :class:`~aspen.pipeline.provenance_index.ViewRows`; :meth:`explain`:
    the matching rows), and a decoded row is kept. :meth:`warm` decodes the rest, a run of rows
    at a time. :meth:`advance` derives the reading of a later batch from this one.

    Thread-safe: the manager is used only under :attr:`lock` (shared by the readings derived
    from one another), taken per question and per run of the warm-up, so one object can serve
    every session of a dashboard server (:func:`shared_provenance`) and a question asked during
    the warm-up waits for one run at most.
    """

    def __init__(self, settings: Settings, backend: str | None = None,
                 versions: ProvenanceVersions | None = None) -> None:
        self.settings = settings
        self._pin = pin_lake(settings, versions)
        self._registry = Registry.read(settings, self._pin.variables)
        self._start(_Core(backend))

    def _start(self, core: _Core) -> None:
        self._core = core
        self.manager = core.manager
        self.lock = core.lock
        self.warm_seconds: float | None = None
        #: how this reading was derived from an earlier one (None: read afresh)
        self.followed: Followed | None = None
        self._views: dict[str, ViewRows] = {}
        self._rows_lock = threading.RLock()  # :attr:`_views`; taken before :attr:`lock`
        #: one lock a view being read: a question on one view does not wait for the warm-up
        #: reading another (taken before :attr:`_rows_lock`)
        self._reading: dict[str, threading.Lock] = {}
        self._registry_lock = threading.Lock()  # parsing the registry; taken after it
        self._live: list[tuple[str, str, list[str]]] | None = None
        self._descriptions: dict[str, str] | None = None
        #: rows read by key before the view was read whole (the variable index, a pair's
        #: rows), and the pairs read so far per view; guarded by :attr:`_rows_lock`
        self._partial: dict[str, ViewRows] = {}
        self._pairs_read: dict[str, set[tuple[str, str]]] = {}
        self._index: int | None = None  # the variable index's version, once looked up
        self._index_known = False
        self._counts: dict[str, int] = {}

    @property
    def batch(self) -> int:
        """The committed batch this reading is as of (0: none yet)."""
        return self._pin.batch

    # -- base tuples ---------------------------------------------------------------------------
    def describe(self, var: str) -> str:
        """A base variable as the tuple it stands for, e.g. ``link(n1→n2)``."""
        with self._registry_lock:
            if self._descriptions is None:
                found: dict[str, str] = {}
                for row in self._registry.frame.to_dict("records"):
                    found.setdefault(str(row["var"]), _described(row))
                self._descriptions = found
            return self._descriptions.get(var, var)

    def _live_rows(self) -> list[tuple[str, str, list[str]]]:
        """``(relation, var, values as text)`` of every live instance, parsed once."""
        with self._registry_lock:
            if self._live is None:
                variables = self._registry.frame
                live = variables[variables["deleted_batch"].isna()]
                found = []
                for row in live.to_dict("records"):
                    values = row["values"]
                    values = json.loads(values) if isinstance(values, str) else values
                    if isinstance(values, dict):
                        values = list(values.values())
                    found.append((str(row["relation"]), str(row["var"]),
                                  [str(v) for v in values]))
                self._live = found
            return self._live

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
    def _rows(self, view: str) -> ViewRows:
        """``view``'s rows with their bytes, read once (nothing decoded)."""
        with self._rows_lock:
            rows = self._views.get(view)
            if rows is not None:
                return rows
            reading = self._reading.setdefault(view, threading.Lock())
        with reading:
            with self._rows_lock:
                rows = self._views.get(view)
            if rows is None:
                frame = read_committed(self.settings, check_view(view),
                                       versions=self._pin.versions)
                rows = ViewRows.from_frame(view, frame)
                with self._rows_lock:
                    partial = self._partial.get(view)
                if partial is not None:  # rows a question decoded keep their formulas
                    with self.lock:
                        for key, formula in list(partial.decoded.items()):
                            if key in rows.data and rows.data[key] == partial.data.get(key):
                                rows.decoded[key] = formula
                with self._rows_lock:
                    self._views[view] = rows
            return rows

    def _read_whole(self, view: str) -> ViewRows | None:
        """``view``'s rows if they are read whole already (never waits for a reading)."""
        with self._rows_lock:
            return self._views.get(view)

    def _index_version(self) -> int | None:
        """The variable index's version this reading may use (None: the lake has none for
        its batch, e.g. an older lake: questions then read the views whole)."""
        with self._rows_lock:
            if not self._index_known:
                try:
                    self._index = index_version(self.settings, self._pin.batch)
                except (DeltaError, OSError, ValueError, KeyError):
                    self._index = None
                self._index_known = True
            return self._index

    def _index_pairs(self, variables: set[str]) -> set[tuple[str, str]] | None:
        """The pairs the variable index lists for ``variables`` (None: no usable index)."""
        version = self._index_version()
        if version is None:
            return None
        try:
            return pairs_of(self.settings, version, variables)
        except (DeltaError, OSError, ValueError):  # unreadable: read the views whole instead
            with self._rows_lock:
                self._index = None
            return None

    def _pair_rows(self, view: str, pairs: set[tuple[str, str]]) -> ViewRows:
        """The rows of ``view`` whose first two attributes are one of ``pairs`` (a filtered
        read of the snapshot and the change log; pairs read before are not read again), in one
        :class:`ViewRows` kept with their decoded formulas."""
        with self._rows_lock:
            reading = self._reading.setdefault(f"pairs:{view}", threading.Lock())
        with reading:
            with self._rows_lock:
                done = self._pairs_read.setdefault(view, set())
                partial = self._partial.setdefault(view, ViewRows(view, {}))
                missing = pairs - done
            if missing:
                frame = read_pairs(self.settings, view, self._pin.versions, missing)
                found = ViewRows.from_frame(view, frame) if len(frame) else None
                with self._rows_lock:
                    if found is not None:  # copy on write: a question may be reading it
                        grown = ViewRows(view, {**partial.data, **found.data})
                        grown.decoded = partial.decoded  # same keys, same bytes: shared
                        partial = self._partial[view] = grown
                    done |= missing
            return partial

    def _decode(self, rows: ViewRows, keys: Iterable[tuple], order: bool = True) -> int:
        """Decode those of ``keys`` not decoded yet (the caller holds :attr:`lock`); ``order``:
        declare their new variables in their stored order first. Returns how many."""
        todo = rows.undecoded(keys)
        if not todo:
            return 0
        encodings = [rows.data[key] for key in todo]
        if order:
            self.manager.declare_in_order(names_order(encodings))
        for key, formula in zip(todo, self.manager.decode_each(encodings), strict=True):
            rows.decoded[key] = formula
        return len(todo)

    def _decode_all(self, rows: ViewRows, pause: Callable[[], None] | None = None) -> None:
        """Decode every row of ``rows`` not decoded yet, :data:`WARM_CHUNK_BYTES` of stored
        bytes under the lock at a time (the new variables declared in the stored order of all
        of them first); ``pause`` is called before each run (the warm-up yields to readers)."""
        todo = rows.undecoded()
        if not todo:
            return
        order = names_order([rows.data[key] for key in todo])
        with self.lock:
            self.manager.declare_in_order(order)
        for run in chunks(todo, rows.data, WARM_CHUNK_BYTES):
            if pause is not None:
                pause()
            self._decode_run(rows, run)

    def _decode_run(self, rows: ViewRows, keys: list[tuple]) -> None:
        """One run of the warm-up: the lock is free again between two runs."""
        with self.lock:
            self._decode(rows, keys, order=False)

    def tuples(self, view: str) -> list[tuple]:
        """Every tuple of ``view`` that carries a formula, without decoding any."""
        return self._rows(view).with_formula()

    def count(self, view: str) -> int:
        """How many tuples of ``view`` carry a formula: from its rows when read whole, else
        counted in the lake without reading a formula."""
        rows = self._read_whole(view)
        if rows is not None:
            return len(rows.with_formula())
        with self._rows_lock:
            known = self._counts.get(view)
        if known is None:
            if view not in self._pin.versions:
                return len(self.tuples(view))
            known = count_with_formula(self.settings, view, self._pin.versions)
            with self._rows_lock:
                self._counts[view] = known
        return known

    def decoded_count(self, view: str) -> int:
        """How many rows of ``view`` are decoded so far."""
        rows = self._rows(view)
        with self.lock:
            return len(rows.decoded)

    def formulas(self, view: str) -> dict[tuple, Any]:
        """Every tuple of ``view`` with its decoded formula (decodes the whole view)."""
        rows = self._rows(view)
        self._decode_all(rows)
        with self.lock:
            return {key: rows.decoded[key] for key in rows.data if key in rows.decoded}

    def matching(self, view: str, key: tuple[str, ...]) -> dict[tuple, Any]:
        """Tuples of ``view`` whose leading attributes equal ``key``, with their formulas.

        Only the matching rows are decoded (explaining one pair of a large view stays cheap).
        """
        columns = VIEW_COLUMNS[check_view(view)]
        if len(key) > len(columns):
            raise ConfigError(
                f"{view} has {len(columns)} attributes ({', '.join(columns)}); got {len(key)}")
        rows = self._read_whole(view)
        if rows is None and len(key) >= 2 and view in self._pin.versions:
            rows = self._pair_rows(view, {(key[0], key[1])})  # that pair's rows only
        if rows is None:
            rows = self._rows(view)
        keys = [t for t in rows.with_formula() if tuple(str(v) for v in t[: len(key)]) == key]
        with self.lock:
            self._decode(rows, keys)
            found = {t: rows.decoded[t] for t in keys}
        if not found:
            raise UnknownKeyError(f"{view} has no tuple {' '.join(key)}")
        return dict(sorted(found.items(), key=lambda item: repr(item[0])))

    def explain(self, view: str, key: tuple[str, ...], limit: int = 20) -> list[Explanation]:
        """Minimal witnesses and critical base tuples of the tuples of ``view`` matching ``key``."""
        from aspen.provenance.explain import minimal_witnesses

        if view not in PROVENANCE_VIEWS:
            raise ConfigError(f"{view} carries no provenance to explain; "
                              f"try one of {', '.join(PROVENANCE_VIEWS)}")
        out = []
        found = self.matching(view, key)
        with self.lock:
            for values, formula in found.items():
                # witnesses and critical tuples are shown per base *tuple*: the instances
                # (variables) of one renewed link are the same link to an operator
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

    def what_if(self, deleted: set[str],
                views: tuple[str, ...] | None = None) -> dict[str, list[tuple]]:
        """Per view, the tuples that would disappear if the ``deleted`` variables died.

        Only the rows whose formula mentions a deleted variable are decoded (and kept): the
        others cannot become false.
        """
        from aspen.provenance.explain import what_if

        lost: dict[str, list[tuple]] = {}
        asked = [v for v in views or tuple(v for v in VIEWS if v in PROVENANCE_VIEWS)
                 if table_exists(self.settings, v)]
        by_pairs = [v for v in asked if v in self._pin.versions and self._read_whole(v) is None]
        pairs = self._index_pairs(deleted) if by_pairs else None
        if pairs is not None and len(by_pairs) > 1:
            # the variable index named the pairs: their rows read in every view at once (Arrow
            # reads them without the interpreter's lock)
            with ThreadPoolExecutor(max_workers=len(by_pairs)) as pool:
                list(pool.map(lambda view: self._pair_rows(view, pairs), by_pairs))
        for view in asked:
            rows = self._read_whole(view)
            if rows is None and pairs is not None and view in by_pairs:
                rows = self._pair_rows(view, pairs)
            if rows is None:
                rows = self._rows(view)
            candidates = rows.candidates(deleted)
            with self.lock:
                self._decode(rows, candidates)
                formulas = {key: rows.decoded[key] for key in candidates}
                gone = what_if(self.manager, formulas, deleted)
            lost[view] = sorted(gone, key=repr)
        return lost

    def warm(self) -> float:
        """Read and index every provenance view, then decode them, so later questions are
        answered from memory; returns the seconds it took (also kept in
        :attr:`warm_seconds`). The reading and indexing come first (every question needs
        them; they take seconds where decoding takes minutes). Rows already decoded (by
        questions, or by the reading this one was derived from) are not decoded again; the
        lock is taken per run of rows, so questions asked meanwhile are answered between two
        runs, and no step starts while a reader works (:func:`in_foreground`). With a variable
        index in the lake it starts only after :data:`WARM_QUIET_S` without a reader."""
        if self._index_version() is not None:
            _wait_for_quiet(WARM_QUIET_S)  # questions read through the index meanwhile
        started = time.perf_counter()
        present = []
        for view in PROVENANCE_VIEWS:
            if view in VIEWS and table_exists(self.settings, view):
                _yield_to_readers()
                self._rows(view).names()
                present.append(view)
        _yield_to_readers()
        self._live_rows()
        self.describe("")  # the registry's descriptions, which every explanation reads
        for view in present:
            self._decode_all(self._rows(view), _yield_to_readers)
        self.warm_seconds = time.perf_counter() - started
        return self.warm_seconds

    # -- following the batches -------------------------------------------------------------
    def advance(self, versions: ProvenanceVersions | None = None) -> LakeProvenance:
        """The lake's provenance as of ``versions`` (default: the last committed batch),
        derived from this reading: the views read so far take the rows the later batches
        upserted and deleted (from the change log; decoded into the same manager when asked),
        unchanged rows keep their decoded formulas, and the registry re-reads only its new
        files. When the log cannot say what changed (a compaction or rebuild in between, the
        log rewritten, the lake moved back) the result is a fresh reading. Both readings stay
        valid; they share :attr:`manager` and :attr:`lock`."""
        pin = pin_lake(self.settings, versions)
        with self._rows_lock:
            views = dict(self._views)
        changes = log_changes(self.settings, self._pin, pin, views)
        if changes is None:
            return LakeProvenance(self.settings, self.manager.backend, versions)
        later = LakeProvenance.__new__(LakeProvenance)
        later.settings = self.settings
        later._pin = pin
        later._registry = self._registry.at(self.settings, pin.variables)
        later._start(self._core)
        with self.lock:
            for view, rows in views.items():
                changed = changes.get(view)
                later._views[view] = rows.with_changes(changed) if changed else rows
        reread = 0 if later._registry is self._registry else later._registry.reread
        later.followed = Followed(self._pin.batch, pin.batch, changed_rows(changes), reread)
        return later


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
    """The one :class:`LakeProvenance` of ``lake`` at ``versions`` in this process, whichever
    thread (dashboard session, warming thread) asks first. A new version is derived from the
    latest one kept (:meth:`LakeProvenance.advance`: after a batch only its changed rows are
    decoded again), else read afresh.

    >>> shared_provenance("/nonexistent/lake", ())  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    aspen.errors.TableMissingError: table 'variables' does not exist under ...
    """
    key = (lake, versions)
    with _shared_lock:
        found = _shared.get(key)
        if found is None:
            earlier = [p for (name, _), p in _shared.items() if name == lake]
            base = max(earlier, key=lambda p: p.batch) if earlier else None
            found = _shared[key] = _derived(base, lake, versions)
            while len(_shared) > SHARED_KEPT:
                _shared.popitem(last=False)
        else:
            _shared.move_to_end(key)
        return found


def _derived(base: LakeProvenance | None, lake: str,
             versions: ProvenanceVersions) -> LakeProvenance:
    """``base`` advanced to ``versions``; a fresh reading without a base, or when advancing
    fails (the fresh reading then says what is wrong with the lake)."""
    if base is not None:
        try:
            return base.advance(versions)
        except (AspenError, DeltaError, OSError, ValueError):
            pass
    return LakeProvenance(Settings(lake=lake), versions=versions)


def keep_warm(settings: Settings, every_s: float, stop: threading.Event,
              on_warm: Callable[[ProvenanceVersions, float], None] | None = None) -> None:
    """Until ``stop`` is set: whenever the lake's provenance tables get a new version, decode
    them (:meth:`LakeProvenance.warm` of the shared reading, derived from the last one: after a
    batch, its changed rows) before anyone asks; checks every ``every_s`` seconds. A lake
    without provenance yet, or one that cannot be read, is looked at again later."""
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
