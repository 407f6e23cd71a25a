"""One view's stored provenance as a question needs it: the rows' bytes, a name index read from
the bytes, and the rows decoded so far.

A stored formula lists its variable names before its nodes (:mod:`aspen.provenance.codec`), and
those names are exactly the variables it depends on. So which rows a deletion can touch is read
from the bytes without decoding a node (:meth:`ViewRows.candidates`), and only those rows are
decoded. :meth:`ViewRows.with_changes` applies a batch's upserted and deleted rows (from the
views' change log) to a copy, keeping every decoded formula of an unchanged row: the lake's
provenance follows the batches instead of being decoded again.

>>> from aspen.provenance.bdd import ProvenanceManager
>>> m = ProvenanceManager(backend="python")
>>> a, b = m.var("a"), m.var("b")
>>> rows = ViewRows("reachable", {("x", "y"): m.encode(m.and_(a, b)), ("y", "z"): m.encode(b)})
>>> sorted(rows.candidates({"a"})), sorted(rows.candidates({"b"}))
([('x', 'y')], [('x', 'y'), ('y', 'z')])
>>> later = rows.with_changes({("x", "y"): DROPPED, ("z", "z"): m.encode(a)})
>>> sorted(later.candidates({"a"})), sorted(rows.candidates({"a"}))  # the old rows stay valid
([('z', 'z')], [('x', 'y')])
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from aspen.catalog import VIEW_COLUMNS, check_view
from aspen.errors import ProvenanceError
from aspen.lake.view_log import CHANGE_UPSERT, PATH_COLUMNS
from aspen.pipeline.view_tables import row_to_tuple
from aspen.provenance.codec import MAGIC, name_occurrences, read_names

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DROPPED", "ViewRows", "chunks", "frame_keys", "names_of", "net_changes"]

#: A change that removes a row (a ``delete`` of the change log).
DROPPED = object()
#: Attribute columns holding whole numbers, and real numbers (as the engine's tuples hold them).
_INT_COLUMNS = frozenset({"hops", "size"})
_FLOAT_COLUMNS = frozenset({"cost"})


def names_of(data: bytes | None) -> list[str]:
    """The variables a stored formula depends on, read from its bytes (no node is decoded);
    none for a row without a formula.

    >>> from aspen.provenance.bdd import ProvenanceManager
    >>> m = ProvenanceManager(backend="python")
    >>> names_of(m.encode(m.or_(m.var("a"), m.var("b")))), names_of(m.encode(m.true))
    (['a', 'b'], [])
    """
    if data is None:
        return []
    if not data or data[0] != MAGIC:
        raise ProvenanceError("not an Aspen provenance encoding (bad magic byte)")
    return read_names(data, 1)[0]


def _stored(data: Any) -> bytes | None:
    """A ``provenance`` cell as bytes (None: a row without a formula)."""
    return None if data is None else bytes(data)


class ViewRows:
    """The rows of one view (key → provenance bytes, None for a row without a formula), the
    name index over them (variable → keys, built on first use), and ``decoded`` (key → formula
    of the rows decoded so far, filled by the caller under its manager's lock)."""

    def __init__(self, view: str, data: dict[tuple, bytes | None]) -> None:
        self.view = view
        self.data = data
        self.decoded: dict[tuple, Any] = {}
        self._names: dict[str, set[tuple]] | None = None
        self._names_lock = threading.Lock()

    @classmethod
    def from_frame(cls, view: str, frame: pd.DataFrame) -> ViewRows:
        """The rows of a view table's frame (:func:`aspen.lake.committed.read_committed`)."""
        return cls(view, dict(zip(frame_keys(view, frame),
                                  map(_stored, frame["provenance"].tolist()), strict=True)))

    # -- the name index ------------------------------------------------------------------------
    def names(self) -> dict[str, set[tuple]]:
        """Variable → the keys whose formula mentions it (read from the bytes, once)."""
        with self._names_lock:
            if self._names is None:
                self._names = _name_index(self.data)
            return self._names

    def candidates(self, variables: Iterable[str]) -> set[tuple]:
        """The keys whose formula mentions one of ``variables``: the only rows whose formula a
        deletion of them can make false. Without the name index built yet, one vectorised
        pass over the rows' name lists answers (a first question does not build the index).

        >>> from aspen.provenance.bdd import ProvenanceManager
        >>> m = ProvenanceManager(backend="python")
        >>> rows = ViewRows("reachable", {("a", "b"): m.encode(m.var("x")),
        ...                               ("b", "c"): m.encode(m.var("y")), ("c", "d"): None})
        >>> rows.candidates({"y", "z"})
        {('b', 'c')}
        """
        with self._names_lock:
            index = self._names
        if index is None:
            return _rows_naming(self.data, set(variables))
        out: set[tuple] = set()
        for name in variables:
            out |= index.get(name, set())
        return out

    # -- decoding --------------------------------------------------------------------------------
    def with_formula(self) -> list[tuple]:
        """Keys of the rows that carry a formula, in row order."""
        return [key for key, data in self.data.items() if data is not None]

    def undecoded(self, keys: Iterable[tuple] | None = None) -> list[tuple]:
        """Those of ``keys`` (default: every row) that carry a formula not decoded yet."""
        keys = self.data.keys() if keys is None else keys
        return [k for k in keys if k not in self.decoded and self.data.get(k) is not None]

    # -- following the batches ---------------------------------------------------------------
    def with_changes(self, changes: Mapping[tuple, bytes | None | object]) -> ViewRows:
        """A copy with ``changes`` applied (key → new bytes, or :data:`DROPPED`): decoded
        formulas and index entries of unchanged rows are kept, those of changed rows dropped.
        ``self`` is not modified."""
        data = dict(self.data)
        new = ViewRows(self.view, data)
        new.decoded = {k: f for k, f in self.decoded.items() if k not in changes}
        with self._names_lock:
            index = None if self._names is None else dict(self._names)
        copied: set[str] = set()

        def entry(name: str) -> set[tuple]:
            assert index is not None
            if name not in copied:  # copy on write: the old object keeps its sets
                index[name] = set(index.get(name, ()))
                copied.add(name)
            return index[name]

        for key, change in changes.items():
            old = data.pop(key, None)
            if index is not None:
                for name in names_of(old):
                    entry(name).discard(key)
            if change is DROPPED:
                continue
            data[key] = _stored(change)
            if index is not None:
                for name in names_of(data[key]):
                    entry(name).add(key)
        if index is not None:
            new._names = {name: keys for name, keys in index.items() if keys}
        return new


def frame_keys(view: str, frame: pd.DataFrame) -> list[tuple]:
    """The engine's tuple of every row of a view table's frame, as
    :func:`aspen.pipeline.view_tables.row_to_tuple` makes them, a column at a time.

    >>> import pandas as pd
    >>> frame = pd.DataFrame({"src": ["a"], "dst": ["c"], "path": [["a", "b", "c"]],
    ...                       "cost": [3]})
    >>> frame_keys("cheapest_path", frame)
    [('a', 'c', ('a', 'b', 'c'), 3.0)]
    """
    columns = []
    for column in VIEW_COLUMNS[check_view(view)]:
        cells = frame[column].tolist()
        if column in PATH_COLUMNS:
            columns.append([tuple(map(str, cell)) for cell in cells])
        elif column in _INT_COLUMNS:
            columns.append([int(cell) for cell in cells])
        elif column in _FLOAT_COLUMNS:
            columns.append([float(cell) for cell in cells])
        else:
            columns.append([str(cell) for cell in cells])
    return list(zip(*columns, strict=True)) if columns else []


def _rows_naming(data: Mapping[tuple, bytes | None], wanted: set[str]) -> set[tuple]:
    """The keys whose bytes name one of ``wanted``, every row's names read at once."""
    import numpy as np

    keys = [key for key, stored in data.items() if stored is not None]
    rows, ids, names = name_occurrences([data[key] for key in keys])
    hits = [i for i, name in enumerate(names) if name in wanted]
    if not hits:
        return set()
    return {keys[row] for row in np.unique(rows[np.isin(ids, hits)]).tolist()}


def _name_index(data: Mapping[tuple, bytes | None]) -> dict[str, set[tuple]]:
    """Variable → keys whose bytes name it, every row's names read at once."""
    import numpy as np

    keys = [key for key, stored in data.items() if stored is not None]
    rows, ids, names = name_occurrences([data[key] for key in keys])
    if not names:
        return {}
    order = np.argsort(ids)
    bounds = np.cumsum(np.bincount(ids, minlength=len(names)))
    sorted_rows = rows[order].tolist()
    index: dict[str, set[tuple]] = {}
    first = 0
    for name, last in zip(names, bounds.tolist(), strict=True):
        if last > first:
            index[name] = {keys[row] for row in sorted_rows[first:last]}
        first = last
    return index


def net_changes(view: str, changes: pd.DataFrame) -> dict[tuple, bytes | None | object]:
    """Key → its last change among change-log rows of ``view`` (``view``, ``batch_id``,
    ``change``, its attributes, ``provenance``): new bytes for an upsert, :data:`DROPPED` for a
    delete; applied in batch order, a batch's deletions before its upserts, as
    :func:`aspen.lake.view_log.current_rows` reads the log.

    >>> import pandas as pd
    >>> log = pd.DataFrame({"view": ["reachable"] * 3, "batch_id": [3, 2, 3],
    ...                     "change": ["upsert", "upsert", "delete"], "src": ["a"] * 3,
    ...                     "dst": ["b"] * 3, "provenance": [b"\\xa5new", b"\\xa5old", None]})
    >>> net_changes("reachable", log)
    {('a', 'b'): b'\\xa5new'}
    """
    if "view" in changes:
        changes = changes[changes["view"] == view]
    if changes.empty:
        return {}
    ordered = changes.assign(_upsert=(changes["change"] == CHANGE_UPSERT).to_numpy())
    ordered = ordered.sort_values(["batch_id", "_upsert"], kind="stable")
    out: dict[tuple, bytes | None | object] = {}
    for row in ordered.to_dict("records"):
        key = row_to_tuple(view, row)
        out.pop(key, None)  # keep the order of last changes
        out[key] = _stored(row.get("provenance")) if row["_upsert"] else DROPPED
    return out


def chunks(keys: list[tuple], data: Mapping[tuple, bytes | None],
           max_bytes: int) -> Iterator[list[tuple]]:
    """``keys`` in runs of at most ``max_bytes`` stored bytes (a longer row is a run of its
    own): the warm-up decodes a run, then lets a waiting question in.

    >>> list(chunks([1, 2, 3], {1: b"xx", 2: b"xx", 3: b"xxxxx"}, 4))
    [[1, 2], [3]]
    """
    run: list[tuple] = []
    size = 0
    for key in keys:
        length = len(data.get(key) or b"")
        if run and size + length > max_bytes:
            yield run
            run, size = [], 0
        run.append(key)
        size += length
    if run:
        yield run
