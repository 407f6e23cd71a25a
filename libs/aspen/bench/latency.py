"""Update-to-view latency: from a one-link update file landing to its batch's ledger row.

For each lake (a ``topology(nodes)`` of every link, ingested and maintained once — at 100 nodes
the demo's 240 link tuples) and each runtime (``local``, ``spark``), single-link updates
alternate — delete a random live link, then insert it back — one update file per batch, each
timed in one of three modes:

- **cold**: ``aspen ingest FILE`` then ``aspen maintain --runtime R``, each a fresh process
  (wall seconds of each, and their sum, which is the latency);
- **warm**: ``aspen maintain --runtime R --follow --poll 0.2`` runs throughout (started once
  per lake and runtime, its TTL sweep and housekeeping off, warmed by one unmeasured batch);
  per batch the file is written, ``aspen ingest FILE`` runs (its seconds reported apart) and
  the latency runs from the file written to the ledger row seen (the ledger's Delta version
  looked at every :data:`LOOK_SECONDS`);
- **inbox**: the same follower given ``--inbox DIR``, when ``aspen maintain --help`` offers it:
  the update file is moved into DIR and nothing else runs. Without the option the mode is
  skipped with a note.

Every batch also records the Spark jobs per phase its ``metrics`` rows hold (the Spark runtime
writes ``<phase>_spark_jobs``; whatever the local runtime writes is shown as it is). After each
cell's last batch ``aspen verify`` compares the views with from-scratch evaluation. The targets
(:data:`WARM_TARGET_S`, :data:`COLD_TARGET_S`, :data:`JOBS_TARGET`) are set against each cell's
median, as ratios of the same run.

>>> summarize([4.0, 1.0, 3.0, 2.0, 10.0])
{'n': 5, 'median': 3.0, 'p90': 10.0}
>>> verdict(1.0, 2.0), verdict(6.0, 2.0)
('met (×0.50)', 'missed by ×3.00')
"""

from __future__ import annotations

import csv
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["COLD_TARGET_S", "JOBS_TARGET", "MODES", "RUNTIMES", "WARM_TARGET_S", "BatchTiming",
           "Cell", "cell_targets", "comma_list", "latency", "node_counts", "offers_option",
           "phase_jobs", "summarize", "table", "target_for", "verdict", "write_outputs"]

#: The modes a batch can be timed in (see the module docstring).
MODES = ("cold", "warm", "inbox")
#: The runtimes ``aspen maintain --runtime`` offers.
RUNTIMES = ("local", "spark")
#: Warm (and inbox) latency targets, seconds, by lake size (a lake is held to the target of
#: the smallest size at least its own).
WARM_TARGET_S: dict[int, float] = {100: 2.0, 1000: 5.0}
#: Cold ingest + maintain targets, seconds, by lake size.
COLD_TARGET_S: dict[int, float] = {100: 30.0}
#: Spark jobs a one-link batch may run, all phases together.
JOBS_TARGET = 15
#: Link tuples per node: the demo topology's (:data:`aspen.generators.demo.DEMO_AVG_DEGREE`).
DEGREE = 2.4
#: Seconds between looks at the ledger's Delta version while a follower works on a batch.
LOOK_SECONDS = 0.05
#: The follower's ``--poll``.
FOLLOW_POLL_S = 0.2
#: Seconds any one CLI command, or one wait for a ledger row, may take before the cell fails.
COMMAND_TIMEOUT_S = 3600.0
#: Seconds a follower may take to start and commit its warm-up batch.
FOLLOWER_START_TIMEOUT_S = 1800.0


# ---------------------------------------------------------------- pure helpers


def comma_list(text: str, allowed: Sequence[str] | None = None) -> list[str]:
    """The comma-separated items of ``text``, blanks dropped, each checked against ``allowed``.

    >>> comma_list("local, spark"), comma_list("cold,", MODES)
    (['local', 'spark'], ['cold'])
    >>> comma_list("hot", MODES)
    Traceback (most recent call last):
    ...
    ValueError: unknown 'hot': expected one of cold, warm, inbox
    """
    items = [part.strip() for part in text.split(",") if part.strip()]
    if not items:
        raise ValueError(f"expected a comma-separated list, got {text!r}")
    for item in items:
        if allowed is not None and item not in allowed:
            raise ValueError(f"unknown {item!r}: expected one of {', '.join(allowed)}")
    return list(dict.fromkeys(items))


def node_counts(text: str) -> list[int]:
    """The lake sizes of ``--nodes``: comma-separated positive integers.

    >>> node_counts("100,1000"), node_counts("20")
    ([100, 1000], [20])
    """
    counts = []
    for item in comma_list(text):
        try:
            value = int(item)
        except ValueError:
            raise ValueError(f"expected a node count, got {item!r}") from None
        if value < 1:
            raise ValueError(f"a node count must be at least 1, got {value}")
        counts.append(value)
    return counts


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (nearest rank) of ``values``; None when empty.

    >>> percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 90), percentile([], 90)
    (9, None)
    """
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))  # ceil(n q / 100), at least 1
    return ordered[int(rank) - 1]


def summarize(values: Iterable[float | None]) -> dict[str, Any]:
    """Count, median and 90th percentile (nearest rank) of the values that are not None.

    >>> summarize([2.0, None, 4.0])
    {'n': 2, 'median': 3.0, 'p90': 4.0}
    >>> summarize([])
    {'n': 0, 'median': None, 'p90': None}
    """
    present = [float(v) for v in values if v is not None]
    return {"n": len(present), "median": statistics.median(present) if present else None,
            "p90": percentile(present, 90)}


def verdict(measured: float | None, limit: float) -> str:
    """``met (×r)`` when ``measured ≤ limit``, else ``missed by ×r``, r = measured / limit.

    >>> verdict(15, 15), verdict(None, 2.0)
    ('met (×1.00)', 'not measured')
    """
    if measured is None:
        return "not measured"
    ratio = measured / limit
    return f"met (×{ratio:.2f})" if measured <= limit else f"missed by ×{ratio:.2f}"


def target_for(targets: Mapping[int, float], nodes: int) -> tuple[int, float] | None:
    """The target a lake of ``nodes`` nodes is held to: that of the smallest listed size at
    least ``nodes`` (as ``(size, limit)``), None above every size.

    >>> target_for(WARM_TARGET_S, 22), target_for(WARM_TARGET_S, 1000)
    ((100, 2.0), (1000, 5.0))
    >>> target_for(COLD_TARGET_S, 1000) is None
    True
    """
    sizes = sorted(size for size in targets if size >= nodes)
    return (sizes[0], targets[sizes[0]]) if sizes else None


def phase_jobs(totals: Mapping[str, float]) -> tuple[dict[str, int], int | None]:
    """The Spark jobs per phase among a batch's metric totals (``<phase>_spark_jobs``), and
    their total (the ``spark_jobs`` metric, else the phases' sum; None when nothing is
    recorded).

    >>> phase_jobs({"apply_spark_jobs": 5.0, "rounds_spark_jobs": 3.0, "wall_seconds": 2.0})
    ({'apply': 5, 'rounds': 3}, 8)
    >>> phase_jobs({"messages": 4.0})
    ({}, None)
    """
    phases = {name.removesuffix("_spark_jobs"): int(value) for name, value in totals.items()
              if name.endswith("_spark_jobs")}
    if "spark_jobs" in totals:
        return phases, int(totals["spark_jobs"])
    return phases, (sum(phases.values()) if phases else None)


def offers_option(help_text: str, option: str) -> bool:
    """Whether a command's ``--help`` text lists ``option``.

    >>> offers_option("  --follow   keep running\\n  --inbox DIR  watch DIR", "--inbox")
    True
    >>> offers_option("  --inboxes N", "--inbox")
    False
    """
    return re.search(rf"(^|[\s,\[]){re.escape(option)}(?=[\s=,\]]|$)", help_text, re.M) is not None


def ingest_batch_of(stdout: str) -> int | None:
    """The ingest batch ``aspen ingest`` reports (``batch N: …``), None if it says none.

    >>> ingest_batch_of("batch 7: 1 record(s) appended to updates, 0 to quarantine")
    7
    """
    found = re.search(r"\bbatch (\d+)\b", stdout)
    return int(found.group(1)) if found else None


# ---------------------------------------------------------------- results


@dataclass
class BatchTiming:
    """One timed batch: which update, how long each part took, the jobs its metrics hold."""

    index: int
    op: str
    src: str
    dst: str
    latency_s: float
    ingest_s: float | None = None
    maintain_s: float | None = None
    ledger_batch: int | None = None
    jobs: dict[str, int] = field(default_factory=dict)
    jobs_total: int | None = None


@dataclass
class Cell:
    """The batches of one lake size × runtime × mode, and the cell's check."""

    nodes: int
    links: int
    runtime: str
    mode: str
    batches: list[BatchTiming] = field(default_factory=list)
    verify: str | None = None
    note: str | None = None
    error: str | None = None
    start_s: float | None = None  # warm and inbox: the follower's start and warm-up batch

    def summary(self) -> dict[str, Any]:
        """Medians and p90s of the cell's seconds and jobs, per phase too.

        >>> cell = Cell(22, 56, "spark", "warm", [
        ...     BatchTiming(0, "delete", "a", "b", 1.5, 1.0, 0.5, 2, {"apply": 4}, 9),
        ...     BatchTiming(1, "insert", "a", "b", 2.5, 1.2, 1.3, 3, {"apply": 6}, 11)])
        >>> s = cell.summary()
        >>> s["latency_s"], s["jobs"], s["jobs_total"]["median"]
        ({'n': 2, 'median': 2.0, 'p90': 2.5}, {'apply': 5.0}, 10.0)
        """
        phases = list(dict.fromkeys(p for b in self.batches for p in b.jobs))
        return {
            "nodes": self.nodes, "links": self.links, "runtime": self.runtime,
            "mode": self.mode, "batches": len(self.batches), "start_s": self.start_s,
            "latency_s": summarize(b.latency_s for b in self.batches),
            "ingest_s": summarize(b.ingest_s for b in self.batches),
            "maintain_s": summarize(b.maintain_s for b in self.batches),
            "jobs": {p: summarize(b.jobs.get(p) for b in self.batches)["median"]
                     for p in phases},
            "jobs_total": summarize(b.jobs_total for b in self.batches),
            "verify": self.verify, "note": self.note, "error": self.error,
        }


def cell_targets(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The targets a cell's summary is held to, each with its measured median and verdict.

    >>> [t["target"] for t in cell_targets({"nodes": 100, "mode": "warm", "latency_s":
    ...      {"median": 1.0}, "jobs_total": {"median": 12}})]
    ['warm ≤ 2 s at 100 nodes', '≤ 15 Spark jobs a one-link batch']
    """
    out = []

    def held(name: str, measured: float | None, limit: float) -> None:
        out.append({"target": name, "measured": measured, "limit": limit,
                    "ratio": None if measured is None else measured / limit,
                    "verdict": verdict(measured, limit)})

    latency_median = summary["latency_s"]["median"]
    if summary["mode"] in ("warm", "inbox"):
        found = target_for(WARM_TARGET_S, summary["nodes"])
        if found:
            held(f"warm ≤ {found[1]:g} s at {found[0]:,} nodes", latency_median, found[1])
    elif summary["mode"] == "cold":
        found = target_for(COLD_TARGET_S, summary["nodes"])
        if found:
            held(f"cold ingest + maintain ≤ {found[1]:g} s at {found[0]:,} nodes",
                 latency_median, found[1])
    if summary["jobs_total"]["median"] is not None:
        held(f"≤ {JOBS_TARGET} Spark jobs a one-link batch", summary["jobs_total"]["median"],
             JOBS_TARGET)
    return out


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _jobs_text(summary: Mapping[str, Any]) -> str:
    if not summary["jobs"] and summary["jobs_total"]["median"] is None:
        return "none recorded"
    phases = ", ".join(f"{p} {v:g}" for p, v in summary["jobs"].items() if v is not None)
    total = summary["jobs_total"]["median"]
    return f"{phases or '-'} = {'-' if total is None else f'{total:g}'}"


def table(result: Mapping[str, Any]) -> str:
    """The cells as an aligned text table (medians; p90 of the latency), then the targets.

    >>> cell = Cell(22, 56, "local", "cold", [BatchTiming(0, "delete", "a", "b", 9.0, 4.0, 5.0)],
    ...             verify="pass")
    >>> print(table({"cells": [cell.summary()]}))  # doctest: +NORMALIZE_WHITESPACE
    nodes runtime mode n ingest s maintain s latency s p90 s Spark jobs per phase (median) verify
    22 local cold 1 4.00 5.00 9.00 9.00 none recorded pass
    <BLANKLINE>
    target cell measured verdict
    cold ingest + maintain ≤ 30 s at 100 nodes 22 local cold 9.00 met (×0.30)
    """
    header = ("nodes", "runtime", "mode", "n", "ingest s", "maintain s", "latency s", "p90 s",
              "Spark jobs per phase (median)", "verify")
    rows = [header]
    targets = [("target", "cell", "measured", "verdict")]
    for s in result["cells"]:
        status = s["verify"] or "-"
        if s["error"] or s["note"]:
            status += f" ({_clipped(s['error'] or s['note'])})"
        rows.append((str(s["nodes"]), s["runtime"], s["mode"], str(s["batches"]),
                     _seconds(s["ingest_s"]["median"]), _seconds(s["maintain_s"]["median"]),
                     _seconds(s["latency_s"]["median"]), _seconds(s["latency_s"]["p90"]),
                     _jobs_text(s), status))
        for t in cell_targets(s):
            measured = t["measured"]
            targets.append((t["target"], f"{s['nodes']} {s['runtime']} {s['mode']}",
                            "-" if measured is None else f"{measured:.2f}", t["verdict"]))
    return _aligned(rows) + "\n\n" + _aligned(targets)


def _clipped(text: str, width: int = 70) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"


def _aligned(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True))
                     .rstrip() for row in rows)


def batch_rows(cells: Sequence[Cell]) -> list[dict[str, Any]]:
    """One flat row per batch of ``cells`` (the CSV), a ``jobs_<phase>`` column per phase.

    >>> batch_rows([Cell(22, 56, "spark", "warm", [BatchTiming(0, "delete", "a", "b", 1.5,
    ...     jobs={"apply": 4}, jobs_total=4)])])[0]["jobs_apply"]
    4
    """
    phases = list(dict.fromkeys(p for c in cells for b in c.batches for p in b.jobs))
    rows = []
    for cell in cells:
        for b in cell.batches:
            row = {"nodes": cell.nodes, "links": cell.links, "runtime": cell.runtime,
                   "mode": cell.mode} | {k: v for k, v in asdict(b).items() if k != "jobs"}
            rows.append(row | {f"jobs_{p}": b.jobs.get(p) for p in phases})
    return rows


def write_outputs(result: Mapping[str, Any], cells: Sequence[Cell], out: Path) -> None:
    """``latency.json`` (the result) and ``batches.csv`` (every batch) in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "latency.json").write_text(json.dumps(result, indent=1, default=str))
    rows = batch_rows(cells)
    fields = list(dict.fromkeys(k for row in rows for k in row)) or ["nodes"]
    with (out / "batches.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


# ---------------------------------------------------------------- driving the CLI


class CommandError(RuntimeError):
    """A CLI command failed or timed out; the message ends with its last line of stderr."""


@dataclass
class Lake:
    """One lake under ``root`` and the ``aspen`` CLI around it, each command a subprocess."""

    root: Path
    env: dict[str, str]
    aspen: str = field(default_factory=lambda: str(Path(sys.executable).parent / "aspen"))
    files: int = 0

    @property
    def uri(self) -> str:
        return str(self.root / "lake")

    def settings(self) -> Any:
        from aspen.settings import Settings

        return Settings(lake=self.uri)

    def log(self, name: str) -> Path:
        (self.root / "logs").mkdir(parents=True, exist_ok=True)
        return self.root / "logs" / name

    def popen(self, args: Sequence[str], name: str) -> subprocess.Popen[str]:
        """Start ``aspen --lake L ARGS…``; stdout to a pipe, stderr to ``logs/NAME.err``."""
        with self.log(f"{name}.err").open("w") as err:
            return subprocess.Popen([self.aspen, "--lake", self.uri, *args], env=self.env,
                                    stdout=subprocess.PIPE, stderr=err, text=True)

    def finish(self, proc: subprocess.Popen[str], name: str,
               timeout: float = COMMAND_TIMEOUT_S) -> str:
        """Wait for ``proc``; its stdout, or :class:`CommandError` on a failure."""
        try:
            stdout, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise CommandError(f"{name}: no end after {timeout:g} s") from None
        if proc.returncode != 0:
            raise CommandError(f"{name}: exit {proc.returncode}: {self.last_line(name, stdout)}")
        return stdout

    def run(self, args: Sequence[str], name: str) -> tuple[float, str]:
        """Run ``aspen --lake L ARGS…`` to its end: (wall seconds, stdout)."""
        started = time.perf_counter()
        stdout = self.finish(self.popen(args, name), name)
        return time.perf_counter() - started, stdout

    def last_line(self, name: str, stdout: str = "") -> str:
        lines = self.log(f"{name}.err").read_text(errors="replace").strip().splitlines()
        lines = lines or stdout.strip().splitlines()
        return lines[-1] if lines else "no output"

    def update_file(self, record: Mapping[str, Any], into: Path | None = None) -> Path:
        """Write ``record`` as a one-line update file (moved into ``into`` whole, if given)."""
        self.files += 1
        staging = self.root / "updates"
        staging.mkdir(parents=True, exist_ok=True)
        path = staging / f"update-{self.files:04d}.jsonl"
        path.write_text(json.dumps(dict(record)) + "\n")
        if into is None:
            return path
        into.mkdir(parents=True, exist_ok=True)
        os.replace(path, into / path.name)
        return into / path.name

    def committed(self) -> tuple[int, int]:
        """The last committed batch and the ingest batch it covers."""
        from aspen.pipeline.ledger import last_committed

        entry = last_committed(self.settings())
        return entry.batch_id, entry.through_ingest_batch

    def wait_for_row(self, through: int, alive: Callable[[], str | None],
                     timeout: float = COMMAND_TIMEOUT_S) -> tuple[float, int]:
        """Look at the ledger's Delta version every :data:`LOOK_SECONDS` until a row covers an
        ingest batch after ``through``; (when it was seen, its batch). ``alive()`` names why the
        wait is hopeless (the follower ended), else None."""
        from aspen.lake.deltars import table_version_or_none

        settings, seen, deadline = self.settings(), None, time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            version = table_version_or_none(settings, "ledger")
            if version != seen:
                seen = version
                batch, covered = self.committed()
                if covered > through:
                    return time.perf_counter(), batch
            reason = alive()
            if reason:
                raise CommandError(reason)
            time.sleep(LOOK_SECONDS)
        raise CommandError(f"no ledger row after {timeout:g} s")

    def batch_jobs(self, batch: int) -> tuple[dict[str, int], int | None]:
        """The Spark jobs per phase batch ``batch``'s metric totals hold (:func:`phase_jobs`)."""
        from aspen.lake.deltars import read_table, table_exists

        settings = self.settings()
        if not table_exists(settings, "metrics"):
            return {}, None
        frame = read_table(settings, "metrics", ["batch_id", "node", "metric", "value"])
        frame = frame[(frame["batch_id"] == batch) & (frame["node"] == -1)]
        return phase_jobs(dict(zip(frame["metric"], frame["value"], strict=True)))


class Toggle:
    """The one-link updates: delete a random live link, then insert the same link back."""

    def __init__(self, links: Sequence[tuple[str, str, float]], seed: int) -> None:
        self.links = list(links)
        self.rng = random.Random(seed)
        self.down: tuple[str, str, float] | None = None

    def next(self) -> dict[str, Any]:
        """The next update record.

        >>> t = Toggle([("a", "b", 2.0)], 0)
        >>> t.next()["op"], t.next()["op"], t.next()["op"]
        ('delete', 'insert', 'delete')
        """
        from aspen.generators.records import link_delete, link_insert

        if self.down is None:
            self.down = self.rng.choice(self.links)
            return link_delete(self.down[0], self.down[1])
        src, dst, cost = self.down
        self.down = None
        return link_insert(src, dst, cost)


def _timing(index: int, record: Mapping[str, Any], latency_s: float, **parts: Any) -> BatchTiming:
    return BatchTiming(index, record["op"], record["src"], record["dst"], latency_s, **parts)


def run_cold(lake: Lake, cell: Cell, toggle: Toggle, batches: int,
             emit: Callable[[str], None]) -> None:
    """``batches`` cold batches into ``cell``: ingest, then maintain, each a fresh process."""
    for index in range(batches):
        record = toggle.next()
        path = lake.update_file(record)
        landed = time.perf_counter()
        ingest_s, stdout = lake.run(["ingest", str(path)], "ingest")
        maintain_s, _ = lake.run(["maintain", "--runtime", cell.runtime], "maintain")
        latency_s = time.perf_counter() - landed
        batch, covered = lake.committed()
        _check_covered(ingest_batch_of(stdout), covered)
        jobs, total = lake.batch_jobs(batch)
        cell.batches.append(_timing(index, record, latency_s, ingest_s=ingest_s,
                                    maintain_s=maintain_s, ledger_batch=batch, jobs=jobs,
                                    jobs_total=total))
        emit(_progress(cell, cell.batches[-1]))


def _check_covered(ingested: int | None, covered: int) -> None:
    """Fail when the committed batch does not cover the ingest batch just logged."""
    if ingested is not None and covered < ingested:
        raise CommandError(f"the committed batch covers ingest batch {covered}, not the "
                           f"update's {ingested}")


def _progress(cell: Cell, b: BatchTiming) -> str:
    phases = ", ".join(f"{p} {n}" for p, n in b.jobs.items())
    jobs = "" if b.jobs_total is None else f"; Spark jobs {phases} = {b.jobs_total}"
    return (f"  {cell.nodes} {cell.runtime} {cell.mode} #{b.index} {b.op} {b.src}→{b.dst}: "
            f"{b.latency_s:.2f} s (ingest {_seconds(b.ingest_s)}, maintain "
            f"{_seconds(b.maintain_s)}){jobs}")


class Follower:
    """``aspen maintain --follow`` on ``lake`` (chores off), its stdout in ``logs/``."""

    def __init__(self, lake: Lake, runtime: str, inbox: Path | None) -> None:
        self.lake, self.name = lake, f"follower-{runtime}" + ("-inbox" if inbox else "")
        args = ["maintain", "--runtime", runtime, "--follow", "--poll", f"{FOLLOW_POLL_S:g}",
                "--expire-every", "0", "--housekeep-every", "0"]
        if inbox is not None:
            args += ["--inbox", str(inbox)]
        self.out = lake.log(f"{self.name}.out").open("w")
        with lake.log(f"{self.name}.err").open("w") as err:
            self.proc = subprocess.Popen([lake.aspen, "--lake", lake.uri, *args], env=lake.env,
                                         stdout=self.out, stderr=err, text=True)

    def ended(self) -> str | None:
        """Why the follower can no longer commit (it exited), else None."""
        if self.proc.poll() is None:
            return None
        return f"the follower exited with code {self.proc.returncode}: " \
               f"{self.lake.last_line(self.name)}"

    def stop(self) -> str | None:
        """Stop it: ``aspen maintain --stop``, then (if it is still running 120 s later)
        SIGTERM, then kill; a note when the stop command failed or more was needed."""
        notes = []
        if self.proc.poll() is None:
            try:
                self.lake.finish(self.lake.popen(["maintain", "--stop"], "stop"), "stop",
                                 timeout=600)
            except CommandError as err:
                notes.append(f"aspen maintain --{err}")
            for how, act in (("SIGTERM", lambda: self.proc.send_signal(signal.SIGTERM)),
                             ("killed", self.proc.kill)):
                try:
                    self.proc.wait(timeout=120)
                    break
                except subprocess.TimeoutExpired:
                    notes.append(how)
                    act()
            self.proc.wait()
        self.out.close()
        return "; ".join(notes) or None


def _follower_batch(lake: Lake, follower: Follower, record: Mapping[str, Any],
                    inbox: Path | None,
                    timeout: float = COMMAND_TIMEOUT_S) -> tuple[float, float | None, int]:
    """One update through a running follower: (latency s, ingest s or None, ledger batch).
    The ledger is watched while ``aspen ingest`` runs: its process may still be ending when
    the follower has committed."""
    _, through = lake.committed()
    path = lake.update_file(record, into=inbox)
    landed = time.perf_counter()
    ingest = None if inbox is not None else lake.popen(["ingest", str(path)], "ingest")
    ingest_end: list[float] = []

    def alive() -> str | None:
        if ingest is not None and not ingest_end and ingest.poll() is not None:
            ingest_end.append(time.perf_counter())
            if ingest.returncode != 0:
                lake.finish(ingest, "ingest")  # raises, naming the failure
        return follower.ended()

    try:
        seen, batch = lake.wait_for_row(through, alive, timeout)
    except BaseException:
        if ingest is not None and ingest.poll() is None:
            ingest.kill()
            ingest.communicate()
        raise
    if ingest is not None:
        stdout = lake.finish(ingest, "ingest")
        ingest_end.append(time.perf_counter())
        _check_covered(ingest_batch_of(stdout), lake.committed()[1])
    return seen - landed, (ingest_end[0] - landed) if ingest_end else None, batch


def run_warm(lake: Lake, cell: Cell, toggle: Toggle, batches: int, inbox: Path | None,
             emit: Callable[[str], None]) -> str | None:
    """``batches`` batches through one follower into ``cell``, after an unmeasured warm-up
    batch; returns a note on how the follower stopped (None: as asked)."""
    if inbox is not None:
        inbox.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    follower = Follower(lake, cell.runtime, inbox)
    try:
        _follower_batch(lake, follower, toggle.next(), inbox, FOLLOWER_START_TIMEOUT_S)
        cell.start_s = time.perf_counter() - started
        emit(f"  {cell.nodes} {cell.runtime} {cell.mode}: follower started and warm in "
             f"{cell.start_s:.1f} s")
        for index in range(batches):
            record = toggle.next()
            latency_s, ingest_s, batch = _follower_batch(lake, follower, record, inbox)
            jobs, total = lake.batch_jobs(batch)
            cell.batches.append(_timing(
                index, record, latency_s, ingest_s=ingest_s,
                maintain_s=None if ingest_s is None else latency_s - ingest_s,
                ledger_batch=batch, jobs=jobs, jobs_total=total))
            emit(_progress(cell, cell.batches[-1]))
    finally:
        note = follower.stop()
    return note


def _verify(lake: Lake) -> str:
    proc = lake.popen(["verify"], "verify")
    try:
        stdout, _ = proc.communicate(timeout=COMMAND_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return "error (timed out)"
    if proc.returncode == 0:
        return "pass"
    if proc.returncode == 1:
        return "FAIL"
    return f"error ({lake.last_line('verify', stdout)})"


def _build(lake: Lake, links: Sequence[tuple[str, str, float]], runtime: str) -> dict[str, float]:
    """Every link inserted and maintained once: the seconds of both commands."""
    from aspen.generators.records import link_insert

    path = lake.root / "topology.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(link_insert(s, d, c)) + "\n" for s, d, c in links))
    ingest_s, _ = lake.run(["ingest", str(path)], "build-ingest")
    maintain_s, _ = lake.run(["maintain", "--runtime", runtime], "build-maintain")
    return {"ingest_s": ingest_s, "maintain_s": maintain_s}


def inbox_supported(lake: Lake) -> bool:
    """Whether ``aspen maintain --help`` offers ``--inbox``."""
    done = subprocess.run([lake.aspen, "maintain", "--help"], env=lake.env, text=True,
                          capture_output=True, timeout=300, check=False)
    return offers_option(done.stdout, "--inbox")


def _lake_cells(nodes: int, runtime: str, batches: int, modes: Sequence[str], seed: int,
                root: Path, env: dict[str, str], has_inbox: bool,
                emit: Callable[[str], None]) -> tuple[list[Cell], dict[str, Any]]:
    """Build one lake of ``nodes`` for ``runtime`` and time each mode on it."""
    from aspen.bench.common import topology

    # below the paper shape's 100 nodes (one transit domain), the reduced 22-node shape
    topo = topology(nodes, DEGREE, seed, tiny=nodes < 100)
    links = list(dict.fromkeys((ln.src, ln.dst, ln.cost) for ln in topo.links))
    size = len(topo.node_ids)
    lake = Lake(root / f"{size}-{runtime}", env)
    info: dict[str, Any] = {"nodes": size, "links": len(links), "runtime": runtime}
    cells = [Cell(size, len(links), runtime, mode) for mode in modes]
    emit(f"{size} nodes, {len(links)} link tuples, {runtime}: building the lake")
    try:
        info["build"] = _build(lake, links, runtime)
    except CommandError as err:
        for cell in cells:
            cell.error = f"build failed: {err}"
        emit(f"  build failed: {err}")
        return cells, info
    emit(f"  built: ingest {info['build']['ingest_s']:.1f} s, maintain "
         f"{info['build']['maintain_s']:.1f} s")
    toggle = Toggle(links, seed)
    for cell in cells:
        if cell.mode == "inbox" and not has_inbox:
            cell.note = "skipped: aspen maintain offers no --inbox"
            emit(f"  inbox mode {cell.note}")
            continue
        try:
            if cell.mode == "cold":
                run_cold(lake, cell, toggle, batches, emit)
            else:
                inbox = lake.root / "inbox" if cell.mode == "inbox" else None
                cell.note = run_warm(lake, cell, toggle, batches, inbox, emit)
        except CommandError as err:
            cell.error = str(err)
            emit(f"  {cell.mode} failed: {err}")
        cell.verify = _verify(lake)
        emit(f"  {cell.mode}: verify {cell.verify}")
    return cells, info


def git_commit(repo: Path | None = None) -> dict[str, Any]:
    """The checkout's commit and whether tracked files differ from it."""
    where = str(repo or Path(__file__).resolve().parents[3])

    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", where, *args], capture_output=True, text=True,
                              check=False, timeout=60)
        return done.stdout.strip() if done.returncode == 0 else ""

    return {"commit": git("rev-parse", "HEAD") or None,
            "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}


def latency(nodes: Sequence[int] = (100, 1000), runtimes: Sequence[str] = RUNTIMES,
            batches: int = 10, modes: Sequence[str] = MODES, seed: int = 0,
            work_dir: str | None = None,
            emit: Callable[[str], None] | None = None) -> tuple[dict[str, Any], list[Cell]]:
    """Time every lake size × runtime × mode; see the module docstring. Returns the result
    (what ``latency.json`` holds) and the cells (every batch)."""
    if batches < 1:
        raise ValueError(f"batches must be at least 1, got {batches}")
    say = emit or (lambda line: print(line, flush=True))
    root = Path(work_dir or tempfile.mkdtemp(prefix="aspen-latency-"))
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    has_inbox = "inbox" in modes and inbox_supported(Lake(root, env))
    cells: list[Cell] = []
    lakes = []
    for size in nodes:
        for runtime in runtimes:
            done, info = _lake_cells(size, runtime, batches, modes, seed, root, env, has_inbox,
                                     say)
            cells.extend(done)
            lakes.append(info)
    summaries = [cell.summary() for cell in cells]
    result = {
        "config": {"nodes": list(nodes), "runtimes": list(runtimes), "batches": batches,
                   "modes": list(modes), "seed": seed, "degree": DEGREE,
                   "follow_poll_s": FOLLOW_POLL_S, "look_s": LOOK_SECONDS,
                   "work_dir": str(root)},
        "lakes": lakes,
        "cells": summaries,
        "targets": [{"cell": f"{s['nodes']} {s['runtime']} {s['mode']}"} | t
                    for s in summaries for t in cell_targets(s)],
    }
    return result, cells
