"""What the bench experiments share: topologies, update records → engine batches, the schemes.

>>> stream = FactStream()
>>> batch = stream.batch([{"op": "insert", "relation": "link", "src": "a", "dst": "b",
...                        "cost": 2.0}])
>>> batch.inserts[0]
BaseFact(relation='link', values=('a', 'b', 2.0), var='v0')
>>> sorted(stream.batch([{"op": "delete", "relation": "link", "src": "a", "dst": "b"}]).deletes)
['v0']
"""

from __future__ import annotations

import json
import os
import platform
import re
import statistics
import time
from collections.abc import Callable, Iterable
from typing import Any

from aspen.baselines.dred import DRedRuntime
from aspen.engine.batch import BASE_RELATIONS, BaseFact, Batch
from aspen.generators.records import Record, tuple_key
from aspen.generators.topology import Topology, TransitStubParams, scaled_params, transit_stub
from aspen.runtime.local import LocalRuntime

__all__ = ["per_node_metrics",
    "PARTIAL_ENV",
    "FactStream",
    "TINY_SHAPE",
    "error_note",
    "machine_info",
    "make_scheme",
    "messages_of",
    "timed",
    "topology",
    "tuples_of",
    "write_partial",
]

#: Environment variable naming the file where a task writes its partial results.
PARTIAL_ENV = "ASPEN_BENCH_PARTIAL"

#: The reduced transit-stub shape of the test's tiny mode (2 transit nodes, 2 stubs of 5: 22 nodes).
TINY_SHAPE: dict[str, int] = {"nodes_per_transit": 2, "stubs_per_transit_node": 2,
                              "nodes_per_stub": 5}


def topology(nodes: int = 100, degree: float = 2.4, seed: int = 0, tiny: bool = False) -> Topology:
    """A transit-stub topology with at least ``nodes`` nodes (paper shape) and ``degree`` link
    tuples per node on average; ``tiny`` uses :data:`TINY_SHAPE` (22 nodes) instead.

    >>> len(topology(100, 2.4).links), len(topology(tiny=True).node_ids)
    (240, 22)
    """
    if tiny:
        return transit_stub(TransitStubParams(avg_degree=degree, **TINY_SHAPE), seed=seed)
    shape = scaled_params(nodes)
    params = TransitStubParams(transit_domains=shape.transit_domains, avg_degree=degree)
    return transit_stub(params, seed=seed)


class FactStream:
    """Turns link records (generators' format) into engine batches: a fresh variable per insert,
    a delete kills every live variable of its tuple."""

    def __init__(self) -> None:
        self.live: dict[tuple[str, str], list[str]] = {}
        self.costs: dict[tuple[str, str], float] = {}
        #: the live variables of the other relations' tuples, by (relation, key)
        self.others: dict[tuple[str, tuple], list[str]] = {}
        self._next = 0

    def batch(self, records: Iterable[Record]) -> Batch:
        inserts: list[BaseFact] = []
        deletes: set[str] = set()
        for record in records:
            if record.get("relation", "link") != "link":
                self._other(record, inserts, deletes)
                continue
            key = (record["src"], record["dst"])
            if record["op"] == "insert":
                var = f"v{self._next}"
                self._next += 1
                self.live.setdefault(key, []).append(var)
                self.costs[key] = float(record["cost"])
                inserts.append(BaseFact("link", (key[0], key[1], float(record["cost"])), var))
            else:
                deletes.update(self.live.pop(key, []))
                self.costs.pop(key, None)
        return Batch(inserts=tuple(inserts), deletes=frozenset(deletes))

    def _other(self, record: Record, inserts: list[BaseFact], deletes: set[str]) -> None:
        """A sensor, triggered or region_seed record (the region workload)."""
        key = tuple_key(record)
        if record["op"] != "insert":
            deletes.update(self.others.pop(key, []))
            return
        var = f"v{self._next}"
        self._next += 1
        self.others.setdefault(key, []).append(var)
        relation = record["relation"]
        values = tuple(float(record[c]) if c in ("x", "y") else str(record[c])
                       for c in BASE_RELATIONS[relation])
        inserts.append(BaseFact(relation, values, var))

    def links(self) -> list[tuple[str, str]]:
        """The live link tuples (src, dst)."""
        return sorted(self.live)


def make_scheme(name: str, partitions: int, views: tuple[str, ...] = ("reachable",),
                **kwargs: Any) -> Any:
    """A runtime for scheme ``name``: ``absorption-lazy``, ``absorption-eager`` (Aspen's
    :class:`LocalRuntime`), ``dred`` or ``relative`` (the baselines)."""
    if name.startswith("absorption-"):
        # the paper's measures are messages between query nodes, which only the reference
        # operators send: the compiled core only when asked (``core="native"``)
        kwargs.setdefault("core", "reference")
        return LocalRuntime(views, partitions=partitions, mode=name.split("-", 1)[1],
                            measure_bytes=False, **kwargs)
    if name == "dred":
        return DRedRuntime(views, partitions=partitions)
    if name == "relative":
        from aspen.baselines.relative import RelativeRuntime

        return RelativeRuntime(views, partitions=partitions)
    raise ValueError(f"unknown scheme {name!r}")


def messages_of(runtime: Any) -> int:
    """Messages shipped so far (engine or baseline)."""
    return int(runtime.metrics.total().messages)


def tuples_of(runtime: Any) -> int:
    """View tuples shipped so far (engine or baseline)."""
    return int(runtime.metrics.total().tuples)


def per_node_metrics(runtime: Any) -> dict[str, float]:
    """The paper's per-node metrics so far: messages sent per node and operator state per node
    (stored entries; for Aspen also encoded bytes), each as mean and max over the nodes.

    >>> rt = make_scheme("dred", 2)
    >>> sorted(per_node_metrics(rt))[:2]
    ['messages_per_node_max', 'messages_per_node_mean']
    """
    nodes = runtime.metrics.nodes
    out: dict[str, float] = {}

    def spread(name: str, values: list[float]) -> None:
        out[f"{name}_mean"] = statistics.fmean(values) if values else 0.0
        out[f"{name}_max"] = max(values, default=0.0)

    spread("messages_per_node", [n.messages for n in nodes])
    if hasattr(runtime, "state_bytes"):  # Aspen: formulas stored by every operator of a node
        runtime.state_bytes()
        spread("state_bytes_per_node", [n.state_bytes for n in runtime.metrics.nodes])
        spread("state_entries_per_node", [
            sum(len(store) for store in {id(st): st for op in ops.values()
                                         for st in op.stores()}.values())
            for ops in runtime.nodes])  # a join side sharing a Fixpoint's map counts once
    else:  # the baselines: view tuples, edge copies (and derivations) per node
        spread("state_entries_per_node", [n.state_entries for n in nodes])
    return out


def timed(action: Callable[..., Any], *args: Any) -> tuple[float, Any]:
    """(seconds, result) of ``action(*args)``.

    >>> timed(sum, [1, 2])[1]
    3
    """
    start = time.perf_counter()
    out = action(*args)
    return time.perf_counter() - start, out


def write_partial(result: dict[str, Any]) -> None:
    """Record what a task has measured so far (read back if the task is cut off); a no-op
    outside a bench worker."""
    path = os.environ.get(PARTIAL_ENV)
    if path:
        tmp = f"{path}.tmp"
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(result, handle)
        os.replace(tmp, path)


#: An absolute path in an error message (up to a quote, a space, a colon or a comma).
_ABSOLUTE_PATH = re.compile(r"(?<![\w.:/])/[^\s'\",:]+")
#: The last line of a Python traceback: the exception's (dotted) type, then its message.
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b(:.*)?$")


def _relative_path(match: re.Match[str]) -> str:
    """A path of this machine as the report may show it: relative to the working folder (the
    repository), or to a lake root (the part after ``lake/``), else its file name only."""
    path = match.group(0)
    cwd = os.getcwd().rstrip("/") + "/"
    if path.startswith(cwd):
        return path[len(cwd):]
    parts = path.strip("/").split("/")
    if "lake" in parts[:-1]:
        return "/".join(parts[len(parts) - parts[::-1].index("lake"):])
    return parts[-1]


def error_note(lines: Iterable[str]) -> str:
    """One line for a failed task's stderr: the error it ended with (type and message), never
    the traceback, with no absolute path.

    >>> error_note(["Traceback (most recent call last):", '  File "/x/store.py", line 1, in add',
    ...             "    self.dirty.add(key)", "MemoryError"])
    'MemoryError'
    >>> error_note(["ValueError: no table at /tmp/aspen-1/lake/tables/link"])
    'ValueError: no table at tables/link'
    >>> error_note(["killed"]), error_note([])
    ('killed', 'no error message')
    """
    kept = [line.strip() for line in lines if line.strip()]
    errors = [line for line in kept if _EXCEPTION_LINE.match(line)]
    frames = ("Traceback ", "File ", "^", "~")
    plain = [line for line in kept if not line.startswith(frames)]
    last = errors[-1] if errors else (plain[-1] if plain else "no error message")
    return _ABSOLUTE_PATH.sub(_relative_path, last)[:300]


def machine_info() -> dict[str, Any]:
    """CPU model, cores, memory and software versions of this machine."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            names = [ln.split(":", 1)[1].strip() for ln in handle if ln.startswith("model name")]
        cpu = names[0] if names else cpu
    except OSError:
        pass
    mem_gb = None
    try:
        mem_gb = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gb": mem_gb,
            "python": platform.python_version(), "platform": platform.platform()}
