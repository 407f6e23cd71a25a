"""Values, rows and monoid components as canonical JSON text, for the state table: one text
per value, equal values give equal texts (the text is the state row's key).

Plain JSON keeps strings, integers, floats (``2.0`` stays a float), booleans and NULL; other
values are one-key objects: ``{"t": iso}`` a timestamp, ``{"d": iso}`` a date, ``{"q": [n, d]}``
an exact fraction, ``{"b": base64}`` bytes, ``{"m": [[value, count], …]}`` a multiset; a tuple
is an array.

>>> from datetime import datetime, UTC
>>> from fractions import Fraction
>>> text = dumps(("a", 2.0, datetime(2026, 1, 2, tzinfo=UTC), Fraction(1, 3), {"x": 2}))
>>> text
'["a",2.0,{"t":"2026-01-02T00:00:00+00:00"},{"q":[1,3]},{"m":[["x",2]]}]'
>>> loads(text) == ("a", 2.0, datetime(2026, 1, 2, tzinfo=UTC), Fraction(1, 3), {"x": 2})
True
"""

from __future__ import annotations

import base64
import json
from datetime import date, datetime
from fractions import Fraction
from typing import Any

__all__ = ["decode", "dumps", "encode", "loads"]


def encode(value: Any) -> Any:
    """``value`` as JSON data."""
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, tuple | list):
        return [encode(v) for v in value]
    if isinstance(value, datetime):
        return {"t": value.isoformat()}
    if isinstance(value, date):
        return {"d": value.isoformat()}
    if isinstance(value, Fraction):
        return {"q": [value.numerator, value.denominator]}
    if isinstance(value, bytes):
        return {"b": base64.b64encode(value).decode("ascii")}
    if isinstance(value, dict):
        items = sorted(([encode(k), n] for k, n in value.items()), key=json.dumps)
        return {"m": items}
    raise TypeError(f"cannot store a {type(value).__name__} in an incremental state")


def decode(data: Any) -> Any:
    """The value of :func:`encode`'s data (arrays become tuples)."""
    if isinstance(data, list):
        return tuple(decode(v) for v in data)
    if isinstance(data, dict):
        (tag, inner), = data.items()
        if tag == "t":
            return datetime.fromisoformat(inner)
        if tag == "d":
            return date.fromisoformat(inner)
        if tag == "q":
            return Fraction(inner[0], inner[1])
        if tag == "b":
            return base64.b64decode(inner)
        return {decode(k): n for k, n in inner}
    return data


def dumps(value: Any) -> str:
    """``value`` as canonical JSON text."""
    return json.dumps(encode(value), separators=(",", ":"), ensure_ascii=False)


def loads(text: str) -> Any:
    """The value of :func:`dumps`'s text."""
    return decode(json.loads(text))
