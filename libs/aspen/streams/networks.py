"""Stream networks: Ariadne's operators over the readings, declared as JSON, checked, and built
into the reference algebra's operators (:mod:`aspen.streams.algebra`).

A network names its input streams — each a selection of the lake's readings by a SQL
predicate over ``id``, ``sensor``, ``ts`` (seconds since the epoch) and ``value`` — and one
query over them::

    {"name": "hot_pairs", "lateness_s": 30,
     "streams": {"hot": "value > 90", "cold": "value < 10"},
     "query": {"join": [{"stream": "hot"}, {"stream": "cold"}], "within_s": 60,
               "key": "sensor", "name": "flip"}}

Operators (each may carry a ``name``, unique in the network; a missing one is numbered):

- ``{"stream": S}``: the readings of input stream S, as rows (sensor, ts, value);
- ``{"select": OP, "where": SQL}``: σ, the rows where the predicate holds;
- ``{"project": OP, "columns": {OUT: SQL, …}}``: π with functions; ``"ts": "ts"`` keeps event
  time, which every time window, join or union above it needs;
- ``{"union": [OP, OP]}``: ∪;
- ``{"aggregate": OP, "window": {"seconds": N, "slide": M} | {"rows": N, "slide": M},
  "functions": ["avg(value)", "max(value) AS peak", …], "key": ATTR | null}``: α over
  epoch-aligned time windows or count windows, per key; avg is kept as an exact sum and count;
- ``{"join": [OP, OP], "within_s": N, "key": ATTR | null}``: ⋈, a left row meets each right
  row of its key with ``l.ts ≤ r.ts ≤ l.ts + N``.

What the stream can run (checked here, so a bad network fails before any reading is read):
a count window's input is a chain of selections and projections over one stream (rows in id
order, so its windows are final the moment they fill); time windows, joins and unions get
event time from below unchanged. When every aggregation and join is keyed by ``sensor`` (and
projections keep it as it is), the network runs per sensor, in parallel; otherwise as one
group.

>>> net = parse_network({"name": "n", "query": {"select": {"stream": "readings"},
...                                              "where": "value > 90"}})
>>> net.partition, type(net.query).__name__, net.query.name
('sensor', 'Select', 'select1')
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aspen.errors import ConfigError
from aspen.streams.algebra import (
    Aggregate,
    CountWindow,
    Join,
    Network,
    Project,
    Row,
    Select,
    Stream,
    TimeWindow,
    Union,
    _children,
)
from aspen.streams.expressions import attributes_of, compile_expression, compile_predicate

__all__ = ["DEFAULT_STREAM", "StreamNetwork", "load_network", "parse_network"]

#: The input stream a network gets when it names none: every reading.
DEFAULT_STREAM = "readings"
#: What a stream's rows hold; a stream's predicate may also read the reading's ``id``.
ROW_ATTRIBUTES = frozenset({"sensor", "ts", "value"})
_OPERATORS = ("stream", "select", "project", "union", "aggregate", "join")
_FUNCTION = re.compile(r"^\s*(avg|min|max|count|sum)\s*\(\s*(\w+)\s*\)(?:\s+as\s+(\w+))?\s*$",
                       re.IGNORECASE)


@dataclass(frozen=True)
class StreamNetwork:
    """A checked network: its name, input streams (name → predicate over a reading's
    attributes), query, allowed lateness, partition attribute (``sensor`` or None: one group)
    and the canonical JSON it was built from."""

    name: str
    streams: Mapping[str, Callable[[Mapping[str, Any]], bool]]
    query: Network
    lateness_s: float
    partition: str | None
    spec: Mapping[str, Any] = field(compare=False)

    def canonical(self) -> str:
        """The definition as canonical JSON (operator names filled in): what a name binds to."""
        return json.dumps(self.spec, sort_keys=True, separators=(",", ":"))

    def horizon_s(self) -> float:
        """How far back in event time an output's readings can lie from its newest one: the
        sum of every time window's size and join's range, plus the lateness. A replay reads
        this much around a covering interval."""
        return self.lateness_s + sum(
            op.window.size if isinstance(op, Aggregate) and isinstance(op.window, TimeWindow)
            else op.range if isinstance(op, Join) else 0.0 for op in _walk(self.query))


def parse_network(spec: Mapping[str, Any]) -> StreamNetwork:
    """The network declared by ``spec`` (see the module's docstring), checked.

    >>> parse_network({"name": "x", "query": {"stream": "nope"}})
    Traceback (most recent call last):
    ...
    aspen.errors.ConfigError: network 'x': stream 'nope' is not one of its streams (readings)
    """
    if not isinstance(spec, Mapping):
        raise ConfigError("a stream network is a JSON object with 'name' and 'query'")
    name = spec.get("name")
    if not isinstance(name, str) or not name.replace("_", "").isalnum():
        raise ConfigError(f"a network's name is letters, digits and '_', not {name!r}")
    unknown = sorted(set(spec) - {"name", "streams", "query", "lateness_s"})
    if unknown:
        raise ConfigError(f"network '{name}': unknown field(s) {', '.join(unknown)}")
    streams = dict(spec.get("streams") or {DEFAULT_STREAM: "TRUE"})
    lateness = spec.get("lateness_s", 30.0)
    if not isinstance(lateness, int | float) or not math.isfinite(lateness) or lateness < 0:
        raise ConfigError(f"network '{name}': lateness_s is a number ≥ 0, not {lateness!r}")
    if "query" not in spec:
        raise ConfigError(f"network '{name}' has no 'query'")
    builder = _Builder(name, streams)
    query = builder.build(spec["query"])
    canonical = {"name": name, "streams": streams, "lateness_s": float(lateness),
                 "query": builder.canonical[id(query)]}
    predicates = {stream: _compiled(name, compile_predicate, sql)
                  for stream, sql in sorted(streams.items())}
    for stream, sql in streams.items():
        unknown = sorted(attributes_of(sql) - ROW_ATTRIBUTES - {"id"})
        if unknown:
            raise ConfigError(f"network '{name}': stream {stream!r} reads {', '.join(unknown)}; "
                              "a reading has id, sensor, ts and value")
    return StreamNetwork(name, predicates, query, float(lateness), _partition(query), canonical)


def load_network(text: str) -> StreamNetwork:
    """A network from its JSON text (a file's contents, or a recorded definition)."""
    try:
        return parse_network(json.loads(text))
    except json.JSONDecodeError as error:
        raise ConfigError(f"a stream network is JSON: {error}") from None


def _compiled(network: str, compile_: Callable[[str], Any], sql: Any) -> Any:
    if not isinstance(sql, str):
        raise ConfigError(f"network '{network}': an expression is SQL text, not {sql!r}")
    try:
        return compile_(sql)
    except ConfigError as error:
        raise ConfigError(f"network '{network}': {error}") from None


class _Builder:
    """Builds algebra operators from JSON, numbering unnamed ones, recording each one's
    canonical JSON."""

    def __init__(self, network: str, streams: Mapping[str, str]) -> None:
        self.network = network
        self.streams = streams
        self.counts: dict[str, int] = {}
        self.names: set[str] = set()
        self.canonical: dict[int, dict[str, Any]] = {}
        self.attributes: dict[int, frozenset[str]] = {}  # each operator's output attributes

    def fail(self, message: str) -> ConfigError:
        return ConfigError(f"network '{self.network}': {message}")

    def build(self, node: Any) -> Network:
        if not isinstance(node, Mapping):
            raise self.fail(f"an operator is a JSON object, not {node!r}")
        kinds = [kind for kind in _OPERATORS if kind in node]
        if len(kinds) != 1:
            raise self.fail(f"an operator has exactly one of {', '.join(_OPERATORS)}: {node!r}")
        kind = kinds[0]
        if kind == "stream":
            return self._stream(node)
        name = node.get("name") or self._numbered(kind)
        if not isinstance(name, str) or name in self.names or name in self.streams:
            raise self.fail(f"operator name {name!r} is taken or not text")
        self.names.add(name)
        op, canonical = getattr(self, f"_{kind}")(node, name)
        self.canonical[id(op)] = {**canonical, "name": name}
        return op

    def _numbered(self, kind: str) -> str:
        while True:
            self.counts[kind] = self.counts.get(kind, 0) + 1
            name = f"{kind}{self.counts[kind]}"
            if name not in self.names:
                return name

    def _allowed(self, node: Mapping[str, Any], *fields: str) -> None:
        unknown = sorted(set(node) - set(fields) - {"name"})
        if unknown:
            raise self.fail(f"unknown field(s) {', '.join(unknown)} in {node!r}")

    def _stream(self, node: Mapping[str, Any]) -> Network:
        self._allowed(node, "stream")
        if node["stream"] not in self.streams:
            raise self.fail(f"stream {node['stream']!r} is not one of its streams "
                            f"({', '.join(sorted(self.streams))})")
        op = Stream(node["stream"])
        self.canonical[id(op)] = {"stream": op.name}
        self.attributes[id(op)] = ROW_ATTRIBUTES
        return op

    def _child(self, node: Any) -> tuple[Network, dict[str, Any]]:
        child = self.build(node)
        return child, self.canonical[id(child)]

    def _reads(self, user: str, child: Network, needed: Iterable[str]) -> frozenset[str]:
        """Check that ``user`` reads only attributes ``child``'s rows have; those attributes."""
        have = self.attributes[id(child)]
        missing = sorted(set(needed) - have - {None})  # type: ignore[arg-type]
        if missing:
            raise self.fail(f"{user} reads {', '.join(missing)}, which its input rows lack "
                            f"(they have {', '.join(sorted(have))})")
        return have

    def _typed(self, op: Network, attributes: Iterable[str]) -> Network:
        self.attributes[id(op)] = frozenset(attributes)
        return op

    def _select(self, node: Mapping[str, Any], name: str) -> tuple[Network, dict[str, Any]]:
        self._allowed(node, "select", "where")
        child, inner = self._child(node["select"])
        predicate = _compiled(self.network, compile_predicate, node.get("where"))
        have = self._reads(f"selection {name!r}", child, attributes_of(node["where"]))
        return (self._typed(Select(child, lambda row: predicate(row.data), name), have),
                {"select": inner, "where": node["where"]})

    def _project(self, node: Mapping[str, Any], name: str) -> tuple[Network, dict[str, Any]]:
        self._allowed(node, "project", "columns")
        child, inner = self._child(node["project"])
        columns = node.get("columns")
        if not isinstance(columns, Mapping) or not columns:
            raise self.fail(f"a projection needs 'columns', {{out: SQL}}: {node!r}")
        built: dict[str, str | Callable[[Row], Any]] = {}
        for out, sql in columns.items():
            if isinstance(sql, str) and re.fullmatch(r"\s*\w+\s*", sql):
                built[out] = sql.strip()  # a plain attribute: kept as it is
                self._reads(f"projection {name!r}", child, [sql.strip()])
            else:
                function = _compiled(self.network, compile_expression, sql)
                built[out] = lambda row, f=function: f(row.data)
                self._reads(f"projection {name!r}", child, attributes_of(sql))
        return (self._typed(Project(child, built, name), built),
                {"project": inner, "columns": dict(columns)})

    def _union(self, node: Mapping[str, Any], name: str) -> tuple[Network, dict[str, Any]]:
        self._allowed(node, "union")
        parts = node["union"]
        if not isinstance(parts, list) or len(parts) != 2:
            raise self.fail("a union takes a list of two operators")
        (left, one), (right, two) = self._child(parts[0]), self._child(parts[1])
        for side in (left, right):
            self._needs_time(side, f"union {name!r}")
        both = self.attributes[id(left)] & self.attributes[id(right)]  # what every row has
        return (self._typed(Union(left, right, name), both),
                {"union": [one, two]})

    def _join(self, node: Mapping[str, Any], name: str) -> tuple[Network, dict[str, Any]]:
        self._allowed(node, "join", "within_s", "key")
        parts = node["join"]
        if not isinstance(parts, list) or len(parts) != 2:
            raise self.fail("a join takes a list of two operators")
        within = node.get("within_s")
        if not isinstance(within, int | float) or not math.isfinite(within) or within < 0:
            raise self.fail(f"a join needs 'within_s', a number ≥ 0, not {within!r}")
        (left, one), (right, two) = self._child(parts[0]), self._child(parts[1])
        for side in (left, right):
            self._needs_time(side, f"join {name!r}")
        key = node.get("key", "sensor")
        left_has = self._reads(f"join {name!r}", left, [key, "ts"])
        right_has = self._reads(f"join {name!r}", right, [key, "ts"])
        return (self._typed(Join(left, right, float(within), key, name),
                            left_has | {f"r_{a}" for a in right_has}),
                {"join": [one, two], "within_s": float(within), "key": key})

    def _aggregate(self, node: Mapping[str, Any], name: str) -> tuple[Network, dict[str, Any]]:
        self._allowed(node, "aggregate", "window", "functions", "key")
        child, inner = self._child(node["aggregate"])
        window = self._window(node.get("window"), name)
        if isinstance(window, CountWindow) and not _in_id_order(child):
            raise self.fail(
                f"count window {name!r} reads rows whose order is not final until the "
                "watermark passes (a union, join or aggregation below it); only selections "
                "and projections may lie between a count window and its stream")
        if isinstance(window, TimeWindow):
            self._needs_time(child, f"time window {name!r}")
        functions = node.get("functions") or ["avg(value)"]
        aggs = []
        for text in functions:
            match = _FUNCTION.match(text) if isinstance(text, str) else None
            if match is None:
                raise self.fail(f"a window function is avg|min|max|count|sum(attr) [AS name], "
                                f"not {text!r}")
            fn, attr, out = match.groups()
            aggs.append((fn.lower(), attr, out) if out else (fn.lower(), attr))
        key = node.get("key", "sensor")
        self._reads(f"aggregation {name!r}", child, [key, "ts", *(agg[1] for agg in aggs)])
        try:
            op = Aggregate(child, window, tuple(aggs), key, name)
        except ConfigError as error:
            raise self.fail(str(error)) from None
        times = ("start", "end", "ts") if isinstance(window, TimeWindow) else ("ts",)
        self._typed(op, [*([] if key is None else [key]), *times,
                         *(agg[2] if len(agg) == 3 else f"{agg[0]}_{agg[1]}" for agg in aggs)])
        return op, {"aggregate": inner, "window": node["window"], "functions": list(functions),
                    "key": key}

    def _window(self, window: Any, name: str) -> TimeWindow | CountWindow:
        try:
            if isinstance(window, Mapping) and set(window) <= {"seconds", "slide"} \
                    and "seconds" in window:
                return TimeWindow(float(window["seconds"]), float(window.get("slide",
                                                                             window["seconds"])))
            if isinstance(window, Mapping) and set(window) <= {"rows", "slide"} \
                    and isinstance(window.get("rows"), int) \
                    and isinstance(window.get("slide", 1), int):
                return CountWindow(window["rows"], window.get("slide", 1))
        except (TypeError, ValueError, ConfigError) as error:
            raise self.fail(f"window of {name!r}: {error}") from None
        raise self.fail(f"window of {name!r} is {{'seconds': N, 'slide': M}} or "
                        f"{{'rows': N, 'slide': M}}, not {window!r}")

    def _needs_time(self, op: Network, user: str) -> None:
        """Event time must reach ``user`` unchanged: no projection below it may drop ``ts``
        or compute it."""
        for below in _walk(op):
            if isinstance(below, Project) and below.columns.get("ts") != "ts":
                raise self.fail(f"{user} needs event time, but projection {below.name!r} "
                                "does not keep it (add \"ts\": \"ts\")")


def _walk(op: Network) -> list[Network]:
    """``op`` and every operator below it (each once per path)."""
    found = [op]
    for child in _children(op):
        found.extend(_walk(child))
    return found


def _in_id_order(op: Network) -> bool:
    """Whether ``op``'s rows come in reading-id order: selections and projections over a
    stream."""
    while isinstance(op, Select | Project):
        op = op.child
    return isinstance(op, Stream)


def _partition(query: Network) -> str | None:
    """``sensor`` when the network can run per sensor: every aggregation and join keyed by
    it and every projection keeping it as it is; None (one group) otherwise."""
    for op in _walk(query):
        if isinstance(op, Aggregate | Join) and op.key != "sensor":
            return None
        if isinstance(op, Project) and op.columns.get("sensor", "sensor") != "sensor":
            return None
    return "sensor"
