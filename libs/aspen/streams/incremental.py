"""A stream network run incrementally, one group of readings at a time, with its state in JSON.

This is what a network's stateful operator does inside Spark's state store: each group (a
sensor, or the one group) keeps a :class:`NetworkState`; each micro-batch hands it the group's
new readings in id order and gets back the outputs that became final, each with the ids of the
readings behind it (Ariadne's Reduced-Eager provenance, per input stream) and their covering
interval (what Replay-Lazy keeps).

When is an output final? Every operator knows its **progress**: a time no later output of it
will be earlier than. A stream's is the group's watermark, the latest reading time minus the
allowed lateness (a reading older than the watermark is dropped as ``late``, and reported);
selections, projections and unions pass their inputs' on (the least); a time window is final
once its input's progress reaches its end; a join's left row once the right side's progress
passes the row's time plus the range; a count window as soon as it fills (its input comes in
id order, :mod:`aspen.streams.networks` checks that). So the outputs depend on the readings and
their ids only, not on how the stream was cut into micro-batches; :meth:`NetworkState.finish`
(progress to infinity) gives exactly the reference algebra's outputs over the readings kept.

>>> from aspen.streams.algebra import Reading
>>> from aspen.streams.networks import parse_network
>>> net = parse_network({"name": "n", "lateness_s": 0, "query": {
...     "aggregate": {"stream": "readings"}, "window": {"seconds": 10},
...     "functions": ["max(value)"], "name": "w"}})
>>> state = NetworkState(net)
>>> state.step([Reading(1, "a", 1.0, 5.0), Reading(2, "a", 4.0, 7.0)]).outputs
[]
>>> [(row.id, row["max_value"], dict(row.prov)) for row in
...  state.step([Reading(3, "a", 12.0, 1.0)]).outputs]
[(('w', 'a', 0.0), 7.0, {'readings': frozenset({1, 2})})]
"""

from __future__ import annotations

import json
import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from aspen.errors import EngineError
from aspen.streams.algebra import (
    Aggregate,
    CountWindow,
    Join,
    Network,
    Project,
    Reading,
    Row,
    Select,
    Stream,
    TimeWindow,
    Union,
)
from aspen.streams.encoding import PerStreamEncoder
from aspen.streams.exactsum import ExactSum
from aspen.streams.networks import StreamNetwork

__all__ = ["KEEPS", "NetworkState", "NetworkStep", "kept_readings"]

_INF = math.inf
#: What rows carry of their readings: the ids and covering intervals (Reduced-Eager), the
#: intervals only (Replay-Lazy), or nothing (the same network without provenance).
KEEPS = ("ids", "covering", "none")


@dataclass
class NetworkStep:
    """What one step of a group gave: the outputs that became final, and the readings it
    dropped with their reason."""

    outputs: list[Row]
    dropped: list[tuple[Reading, str]]


class NetworkState:
    """One group's state of a network: its watermark, every stateful operator's open state and,
    in Reduced-Eager mode, the per-stream encoder of its outputs' ids.

    An open window keeps its running aggregates, ids and cover (:class:`_Window`); a join keeps
    whole rows, those that can still meet. Both are bounded by the windows' sizes, the join's
    range and the lateness."""

    def __init__(self, network: StreamNetwork, keep: str = "ids") -> None:
        if keep not in KEEPS:
            raise EngineError(f"a network state keeps one of {', '.join(KEEPS)}, not {keep!r}")
        self.network = network
        self.keep = keep
        #: Reduced-Eager: each input stream's ids written full or as a delta (Algorithm 2)
        self.encoder = PerStreamEncoder() if keep == "ids" else None
        self.watermark = -_INF
        self.last_id = 0
        self.nodes: dict[str, dict[str, Any]] = {}  # stateful operator name → its state

    # --- stepping ----------------------------------------------------------------------------

    def step(self, readings: Iterable[Reading]) -> NetworkStep:
        """Take the group's next readings (ids ascending, above every id taken before) and
        give back what became final."""
        kept, dropped = [], []
        lateness = self.network.lateness_s
        for reading in sorted(readings, key=lambda r: r.id):
            if reading.id <= self.last_id:
                raise EngineError(f"network '{self.network.name}': reading {reading.id} "
                                  f"arrived after reading {self.last_id}; ids must ascend")
            self.last_id = reading.id
            if reading.ts < self.watermark:
                dropped.append((reading, "late"))
                continue
            kept.append(reading)
            self.watermark = max(self.watermark, reading.ts - lateness)
        return NetworkStep(self._run(kept, self.watermark), dropped)

    def finish(self) -> list[Row]:
        """Everything still open, as if the stream had ended (progress to infinity): with
        every earlier step's outputs, the reference algebra's outputs over the kept readings."""
        return self._run([], _INF)

    def _run(self, readings: list[Reading], watermark: float) -> list[Row]:
        inputs = {stream: [r for r in readings if predicate(
            {"id": r.id, "sensor": r.sensor, "ts": r.ts, "value": r.value})]
            for stream, predicate in self.network.streams.items()}
        run = _Step(self, inputs, watermark)
        return run.rows(self.network.query)[0]

    # --- state as JSON -----------------------------------------------------------------------

    def to_json(self) -> str:
        """The state as JSON text (rows as lists; ids and provenance restored on loading).

        >>> from aspen.streams.networks import parse_network
        >>> net = parse_network({"name": "n", "query": {"stream": "readings"}})
        >>> NetworkState.from_json(net, NetworkState(net).to_json()).watermark
        -inf
        """
        nodes = {name: _node_out(node) for name, node in self.nodes.items()}
        encoder = None if self.encoder is None else self.encoder.to_state()
        return json.dumps({"watermark": _number_out(self.watermark), "last_id": self.last_id,
                           "keep": self.keep, "nodes": nodes, "encoder": encoder},
                          separators=(",", ":"))

    @classmethod
    def from_json(cls, network: StreamNetwork, text: str) -> NetworkState:
        data = json.loads(text)
        state = cls(network, data.get("keep", "ids"))
        state.watermark = _number_in(data["watermark"])
        state.last_id = data["last_id"]
        state.nodes = {name: _node_in(node) for name, node in data["nodes"].items()}
        if data.get("encoder") is not None:
            state.encoder = PerStreamEncoder.from_state(data["encoder"])
            state.encoder.carriers = {s: _tupled(c) for s, c in state.encoder.carriers.items()}
        return state


def kept_readings(network: StreamNetwork, readings: Sequence[Reading]) -> list[Reading]:
    """The readings a group keeps (its late ones left out), by brute force over the whole
    group in id order: the input :meth:`NetworkState.finish` answers for.

    >>> from aspen.streams.networks import parse_network
    >>> net = parse_network({"name": "n", "lateness_s": 5, "query": {"stream": "readings"}})
    >>> [r.id for r in kept_readings(net, [Reading(1, "a", 10, 0), Reading(2, "a", 4, 0),
    ...                                    Reading(3, "a", 6, 0)])]
    [1, 3]
    """
    kept, latest = [], -_INF
    for reading in sorted(readings, key=lambda r: r.id):
        if reading.ts >= latest - network.lateness_s:
            kept.append(reading)
            latest = max(latest, reading.ts)
    return kept


# --- one step through the operators ----------------------------------------------------------

class _Step:
    """One step: each operator's new final rows and its progress, each evaluated once."""

    def __init__(self, state: NetworkState, inputs: dict[str, list[Reading]],
                 watermark: float) -> None:
        self.state = state
        self.inputs = inputs
        self.watermark = watermark
        self.memo: dict[str, tuple[list[Row], float]] = {}

    def rows(self, op: Network) -> tuple[list[Row], float]:
        if op.name not in self.memo:
            self.memo[op.name] = _OPERATORS[type(op)](self, op)
        return self.memo[op.name]

    def node(self, op: Network, fresh: dict[str, Any]) -> dict[str, Any]:
        return self.state.nodes.setdefault(op.name, fresh)


def _derive(row_id: Hashable, data: dict[str, Any], parents: Sequence[Row]) -> Row:
    prov: dict[str, set[int]] = {}
    cov: dict[str, tuple[int, int]] = {}
    for parent in parents:
        for stream, ids in parent.prov.items():
            prov.setdefault(stream, set()).update(ids)
        for stream, (lo, hi) in parent.cov.items():
            old = cov.get(stream, (lo, hi))
            cov[stream] = (min(lo, old[0]), max(hi, old[1]))
    return Row(row_id, data, {s: frozenset(ids) for s, ids in sorted(prov.items())},
               dict(sorted(cov.items())))


def _stream(step: _Step, op: Stream) -> tuple[list[Row], float]:
    keep = step.state.keep
    rows = [Row((op.name, r.id), {"sensor": r.sensor, "ts": r.ts, "value": r.value},
                {op.name: frozenset({r.id})} if keep == "ids" else {},
                {op.name: (r.id, r.id)} if keep != "none" else {})
            for r in step.inputs[op.name]]
    return rows, step.watermark


def _select(step: _Step, op: Select) -> tuple[list[Row], float]:
    rows, progress = step.rows(op.child)
    return [_derive((op.name, row.id), dict(row.data), [row]) for row in rows
            if op.predicate(row)], progress


def _project(step: _Step, op: Project) -> tuple[list[Row], float]:
    rows, progress = step.rows(op.child)
    return [_derive((op.name, row.id), {out: row[col] if isinstance(col, str) else col(row)
                                        for out, col in op.columns.items()}, [row])
            for row in rows], progress


def _union(step: _Step, op: Union) -> tuple[list[Row], float]:
    (left, p_left), (right, p_right) = step.rows(op.left), step.rows(op.right)
    rows = [_derive((op.name, side, row.id), dict(row.data), [row])
            for side, part in ((0, left), (1, right)) for row in part]
    return rows, min(p_left, p_right)


def _key(op: Aggregate | Join, row: Row) -> Hashable:
    return None if op.key is None else row[op.key]


class _Window:
    """An open window's running state: its aggregates, the first member's id, the earliest
    member time, and the members' provenance and cover — not the members themselves, so a
    window's state is a few values and its ids whatever its size (Ariadne's aggregation).
    A sum or avg runs as an exact sum (:class:`~aspen.streams.exactsum.ExactSum`), so it
    equals the algebra's, rounded once, whatever the order of the members."""

    __slots__ = ("count", "cov", "first", "prov", "ts", "values")

    def __init__(self) -> None:
        self.count = 0
        self.values: dict[str, Any] = {}
        self.first: Hashable = None
        self.ts = _INF
        self.prov: dict[str, set[int]] = {}
        self.cov: dict[str, list[int]] = {}

    def add(self, op: Aggregate, row: Row) -> None:
        """Take ``row`` (sums are exact, so member order does not matter to them)."""
        if self.count == 0:
            self.first = row.id
        self.count += 1
        self.ts = min(self.ts, row["ts"])
        for fn, attr, *out in op.aggs:
            name, value = out[0] if out else f"{fn}_{attr}", row[attr]
            if fn == "count":
                continue
            if fn in ("sum", "avg"):
                self._sum(name).add(value)
            elif name not in self.values:
                self.values[name] = value
            elif (value > self.values[name]) if fn == "max" else (value < self.values[name]):
                self.values[name] = value
        for stream, ids in row.prov.items():
            self.prov.setdefault(stream, set()).update(ids)
        for stream, (lo, hi) in row.cov.items():
            old = self.cov.setdefault(stream, [lo, hi])
            old[0], old[1] = min(old[0], lo), max(old[1], hi)

    def row(self, op: Aggregate, key: Hashable, start: float | None) -> Row:
        data: dict[str, Any] = {} if op.key is None else {op.key: key}
        if start is None:
            data["ts"] = self.ts
        else:
            data.update(start=start, end=start + op.window.size, ts=start)  # type: ignore[union-attr]
        for fn, attr, *out in op.aggs:
            name = out[0] if out else f"{fn}_{attr}"
            data[name] = (self.count if fn == "count" else self._sum(name).mean(self.count)
                          if fn == "avg" else self._sum(name).value if fn == "sum"
                          else self.values[name])
        row_id = (op.name, key, self.first if start is None else start)
        return Row(row_id, data, {s: frozenset(ids) for s, ids in sorted(self.prov.items())},
                   {s: (c[0], c[1]) for s, c in sorted(self.cov.items())})

    def _sum(self, name: str) -> ExactSum:
        """The exact sum kept as ``name``; a plain number there (state written before sums
        were exact) becomes one, exact from here on."""
        acc = self.values.get(name)
        if not isinstance(acc, ExactSum):
            acc = self.values[name] = ExactSum() if acc is None else ExactSum.from_total(acc)
        return acc

    def to_list(self) -> list[Any]:
        """``[count, values, first, ts, ids, cover, exact sums]``: ``values`` holds every
        aggregate (sums rounded, for reading), ``exact sums`` the sums' exact states."""
        values = {name: v.value if isinstance(v, ExactSum) else v
                  for name, v in self.values.items()}
        sums = {name: v.to_state() for name, v in self.values.items() if isinstance(v, ExactSum)}
        return [self.count, values, self.first, _number_out(self.ts),
                {s: sorted(ids) for s, ids in self.prov.items()}, self.cov, sums]

    @classmethod
    def from_list(cls, item: list[Any]) -> _Window:
        """The state :meth:`to_list` wrote (or one without exact sums: see :meth:`_sum`)."""
        window = cls()
        count, window.values, first, ts, prov, window.cov, *sums = item
        for name, state in (sums[0] if sums else {}).items():
            window.values[name] = ExactSum.from_state(state)
        window.count, window.first, window.ts = count, _tupled(first), _number_in(ts)
        window.prov = {s: set(ids) for s, ids in prov.items()}
        return window


def _time_window(step: _Step, op: Aggregate) -> tuple[list[Row], float]:
    """Open windows by (key, start); closed when the input's progress reaches the end."""
    window: TimeWindow = op.window  # type: ignore[assignment]
    rows, progress = step.rows(op.child)
    node = step.node(op, {"open": []})
    open_ = {(key, start): acc for key, start, acc in node["open"]}
    for row in rows:
        for start in window.starts(row["ts"]):
            open_.setdefault((_key(op, row), start), _Window()).add(op, row)
    out, still = [], []
    for (key, start), acc in sorted(open_.items(), key=lambda item: (item[0][1],
                                                                      repr(item[0][0]))):
        if start + window.size <= progress:
            out.append(acc.row(op, key, start))
        else:
            still.append([key, start, acc])
    node["open"] = still
    first = window.starts(progress)[0] if math.isfinite(progress) else progress
    return out, min([start for _key_, start, _acc in still] + [first])


def _count_window(step: _Step, op: Aggregate) -> tuple[list[Row], float]:
    """Per key: how many rows it has seen and its windows not yet full, by first row."""
    window: CountWindow = op.window  # type: ignore[assignment]
    rows, progress = step.rows(op.child)
    node = step.node(op, {"keys": []})
    keys = {key: [seen, pending] for key, seen, pending in node["keys"]}
    out = []
    for row in rows:
        key = _key(op, row)
        seen, pending = keys.setdefault(key, [0, []])
        if seen % window.slide == 0:  # the key's rows 1, 1 + s, 1 + 2s, … start windows
            pending.append(_Window())
        for acc in pending:
            acc.add(op, row)
        keys[key][0] = seen + 1
        full = [acc for acc in pending if acc.count == window.count]
        out.extend(acc.row(op, key, None) for acc in full)
        pending[:] = [acc for acc in pending if acc.count < window.count]
    node["keys"] = [[key, seen, pending] for key, (seen, pending) in keys.items()]
    if progress == _INF:  # the stream has ended: windows not full now never will be
        return out, _INF
    return out, min([acc.ts for _seen, pending in keys.values() for acc in pending]
                    + [progress])


def _aggregate(step: _Step, op: Aggregate) -> tuple[list[Row], float]:
    if isinstance(op.window, CountWindow):
        return _count_window(step, op)
    return _time_window(step, op)


def _join(step: _Step, op: Join) -> tuple[list[Row], float]:
    """Left rows wait until no right row can still meet them; right rows stay while a left
    row, waiting or to come, may meet them."""
    (left, p_left), (right, p_right) = step.rows(op.left), step.rows(op.right)
    node = step.node(op, {"waiting": [], "right": []})
    node["waiting"].extend(left)
    node["right"].extend(right)
    out, waiting = [], []
    for row in node["waiting"]:
        if row["ts"] + op.range < p_right:
            out.extend(_derive((op.name, row.id, r.id),
                               {**row.data, **{f"r_{a}": v for a, v in r.data.items()}},
                               [row, r])
                       for r in node["right"]
                       if _key(op, row) == _key(op, r) and row["ts"] <= r["ts"]
                       <= row["ts"] + op.range)
        else:
            waiting.append(row)
    node["waiting"] = waiting
    earliest = min([row["ts"] for row in waiting] + [p_left])
    node["right"] = [r for r in node["right"] if r["ts"] >= earliest]
    return out, earliest


_OPERATORS = {Stream: _stream, Select: _select, Project: _project, Union: _union,
              Aggregate: _aggregate, Join: _join}


# --- JSON of rows ----------------------------------------------------------------------------

def _number_out(value: float) -> float | str:
    return value if math.isfinite(value) else repr(value)


def _number_in(value: float | str) -> float:
    return float(value)


# A row is kept as [id, attributes, {stream: ids}, {stream: [lo, hi]}] and an open window as
# its running state (:class:`_Window`); ids nest tuples, which JSON writes as lists (an id never
# holds a list, so every list in it was a tuple).

def _row_out(row: Row) -> list[Any]:
    return [row.id, row.data, {s: sorted(ids) for s, ids in row.prov.items()}, row.cov]


def _tupled(value: Any) -> Any:
    return tuple(_tupled(v) for v in value) if isinstance(value, list) else value


def _row_in(item: list[Any]) -> Row:
    row_id, data, prov, cov = item
    return Row(_tupled(row_id), data, {s: frozenset(ids) for s, ids in prov.items()},
               {s: (c[0], c[1]) for s, c in cov.items()})


def _node_out(node: dict[str, Any]) -> dict[str, Any]:
    if "open" in node:  # time windows: [key, start, window]
        return {"open": [[key, start, acc.to_list()] for key, start, acc in node["open"]]}
    if "keys" in node:  # count windows: [key, rows seen, [window, …]]
        return {"keys": [[key, seen, [acc.to_list() for acc in pending]]
                         for key, seen, pending in node["keys"]]}
    return {part: [_row_out(row) for row in rows] for part, rows in node.items()}  # a join


def _node_in(node: dict[str, Any]) -> dict[str, Any]:
    if "open" in node:
        return {"open": [[key, start, _Window.from_list(acc)] for key, start, acc in node["open"]]}
    if "keys" in node:
        return {"keys": [[key, seen, [_Window.from_list(acc) for acc in pending]]
                         for key, seen, pending in node["keys"]]}
    return {part: [_row_in(item) for item in rows] for part, rows in node.items()}
