"""How an instrumented row's provenance columns combine into a formula: its *shape*.

An instrumented row is the answer's values plus hidden columns. Its shape is a tuple of
:class:`Part` s, AND-ed; a part applies to a row when its ``present`` column is not NULL (a
union or an outer join pads the parts of the side a row did not come from). A part holds:

- ``ids`` — witness columns: a base tuple's variable name, or a view row's stored formula;
- ``keys`` — values that tell its units apart (a DISTINCT row, a group, a view row);
- ``groups`` — a nested shape over the rows whose ``marker`` is not NULL, combined by
  ``kind``: ``exists`` (OR of its units: a semi join, DISTINCT, a group), ``not`` (AND NOT the
  OR: an anti join, EXCEPT, an outer join's unmatched row) or ``atleast`` (``k`` of its units:
  HAVING COUNT(*) >= k).

A *unit* of a shape is a set of rows agreeing on every part's present, ids and keys columns:
one bag row of the node the shape belongs to (:func:`identity`).

>>> scan = (Part("_p1", (Leaf("_p1", "var"),)),)
>>> columns(scan)
('_p1',)
>>> columns((Part("_u2", (), ("_k3",), (Group("exists", scan, "_m4"),)),))
('_u2', '_k3', '_m4', '_p1')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Group", "Leaf", "Part", "Shape", "columns", "identity", "identity_of_values"]


@dataclass(frozen=True)
class Leaf:
    """A witness column: ``var`` (its value is a variable's name) or ``view`` (its value is a
    view row's stored formula, the byte codec)."""

    column: str
    kind: str


@dataclass(frozen=True)
class Group:
    """A nested shape over the rows whose ``marker`` is set, combined by ``kind``."""

    kind: str
    shape: Shape
    marker: str
    k: int = 0


@dataclass(frozen=True)
class Part:
    """One AND-ed part of a row's formula (see the module)."""

    present: str
    ids: tuple[Leaf, ...] = ()
    keys: tuple[str, ...] = ()
    groups: tuple[Group, ...] = ()


Shape = tuple[Part, ...]


def columns(shape: Shape) -> tuple[str, ...]:
    """Every hidden column of ``shape``, in a fixed order, each once."""
    out: list[str] = []

    def add(name: str) -> None:
        if name not in out:
            out.append(name)

    for part in shape:
        add(part.present)
        for leaf in part.ids:
            add(leaf.column)
        for key in part.keys:
            add(key)
        for group in part.groups:
            add(group.marker)
            for name in columns(group.shape):
                add(name)
    return tuple(out)


def _hashable(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    if hasattr(value, "tolist") and not isinstance(value, str | bytes):
        return _hashable(value.tolist())
    return value


def identity(shape: Shape, row: Mapping[str, Any]) -> tuple:
    """The unit ``row`` belongs to: its present, ids and keys values of every part.

    >>> identity((Part("_p1", (Leaf("_p1", "var"),)),), {"_p1": "link:a:b", "x": 1})
    ('link:a:b', 'link:a:b')
    """
    out: list[Any] = []
    for part in shape:
        out.append(_hashable(row[part.present]))
        out.extend(_hashable(row[leaf.column]) for leaf in part.ids)
        out.extend(_hashable(row[key]) for key in part.keys)
    return tuple(out)


def identity_of_values(values: tuple) -> tuple:
    """Row values as a key (lists and arrays as tuples, bytes as bytes).

    >>> identity_of_values(("a", ["x", "y"]))
    ('a', ('x', 'y'))
    """
    return tuple(_hashable(v) for v in values)
