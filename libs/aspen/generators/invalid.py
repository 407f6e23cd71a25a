"""Invalid update records for the quarantine demo, as raw JSON Lines.

Each kind breaks one rule of docs/architecture.md, "Update records" (some cannot even be a dict):

* ``malformed_json``: a link insert cut off mid-way (not JSON);
* ``unknown_op``: ``"op": "upsert"``;
* ``unknown_relation``: ``"relation": "router"``;
* ``missing_field``: a link insert without ``dst``;
* ``extra_field``: a link insert with ``"weight": 3``;
* ``negative_cost``: ``"cost": -10.0``;
* ``nonfinite_cost``: ``"cost": NaN`` (Python's json reads it; strict JSON parsers reject it);
* ``empty_id``: ``"src": ""``;
* ``wrong_type``: ``"cost": "2 ms"`` (a string, not a number).

The invalid lines are mutations of a random link insert of the input (or of a fixed one if the
input has none), placed at random positions among the valid lines.

>>> lines = inject_invalid([{"op": "insert", "relation": "triggered", "id": "s1"}], 9, seed=1)
>>> len(lines)
10
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence

from aspen.errors import ConfigError
from aspen.generators.records import Record, link_insert
from aspen.generators.writers import to_json_line

__all__ = ["INVALID_KINDS", "invalid_line", "inject_invalid", "inject_invalid_labeled"]

#: Every kind of invalid record :func:`inject_invalid` can produce.
INVALID_KINDS: tuple[str, ...] = (
    "malformed_json",
    "unknown_op",
    "unknown_relation",
    "missing_field",
    "extra_field",
    "negative_cost",
    "nonfinite_cost",
    "empty_id",
    "wrong_type",
)

_FALLBACK: Record = link_insert("n1", "n2", 1.0)


def invalid_line(kind: str, template: Record | None = None) -> str:
    """One invalid JSON line of ``kind``, made from a link-insert ``template``.

    >>> invalid_line("negative_cost")
    '{"op": "insert", "relation": "link", "src": "n1", "dst": "n2", "cost": -10.0}'
    >>> invalid_line("malformed_json")[-3:]
    'n2"'
    """
    base = dict(template or _FALLBACK)
    if kind == "malformed_json":
        text = to_json_line(base)
        return text[: text.index(', "cost"')]
    if kind == "unknown_op":
        base["op"] = "upsert"
    elif kind == "unknown_relation":
        base["relation"] = "router"
    elif kind == "missing_field":
        del base["dst"]
    elif kind == "extra_field":
        base["weight"] = 3
    elif kind == "negative_cost":
        base["cost"] = -10.0
    elif kind == "nonfinite_cost":
        base["cost"] = float("nan")
    elif kind == "empty_id":
        base["src"] = ""
    elif kind == "wrong_type":
        base["cost"] = "2 ms"
    else:
        raise ConfigError(
            f"unknown invalid-record kind {kind!r}; known: {', '.join(INVALID_KINDS)}"
        )
    return json.dumps(base, allow_nan=True, ensure_ascii=False)


def inject_invalid_labeled(
    records: Sequence[Record], n: int, seed: int = 0, kinds: Sequence[str] = INVALID_KINDS
) -> list[tuple[str, str | None]]:
    """Like :func:`inject_invalid`, with each line's kind (``None`` for a valid record).

    Kinds are used round-robin in a shuffled order, so ``n ≥ len(kinds)`` covers every kind.

    >>> labeled = inject_invalid_labeled([], 2, seed=0, kinds=["empty_id"])
    >>> [kind for _, kind in labeled]
    ['empty_id', 'empty_id']
    """
    if not isinstance(n, int) or n < 0:
        raise ConfigError(f"the number of invalid records must be an integer ≥ 0, got {n!r}")
    if n and not kinds:
        raise ConfigError("no invalid-record kinds to inject")
    rng = random.Random(seed)
    order = list(kinds)
    rng.shuffle(order)
    templates = [r for r in records if r.get("op") == "insert" and r.get("relation") == "link"]
    bad = [
        (
            invalid_line(order[i % len(order)], rng.choice(templates) if templates else None),
            order[i % len(order)],
        )
        for i in range(n)
    ]
    lines: list[tuple[str, str | None]] = [(to_json_line(r), None) for r in records]
    for line in bad:
        lines.insert(rng.randint(0, len(lines)), line)
    return lines


def inject_invalid(
    records: Sequence[Record], n: int, seed: int = 0, kinds: Sequence[str] = INVALID_KINDS
) -> list[str]:
    """``records`` as JSON lines with ``n`` invalid lines mixed in at random positions.

    The valid records keep their relative order.

    >>> lines = inject_invalid([{"op": "delete", "relation": "link", "src": "a", "dst": "b"}], 1)
    >>> sum(1 for line in lines if line.startswith('{"op": "delete"'))
    1
    """
    return [line for line, _ in inject_invalid_labeled(records, n, seed, kinds)]
