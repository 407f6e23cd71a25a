"""Differential Dataflow as a peer: build the Rust program, write its workload, run it, read it.

The program lives in ``benchmarks/dataflow_peer`` (``differential-dataflow`` and ``timely`` from
crates.io, one worker thread) and is built by :func:`build` on first use with
``cargo build --release`` into ``benchmarks/dataflow_peer/target``. It reads a workload file
(:func:`write_workload`: a line ``B <batch>``, then ``+ src dst cost`` or ``- src dst`` per
update; a delete removes every live instance of the link, as :class:`FactStream` does) and
maintains ``reachable`` (``iterate`` + ``distinct``) and ``min_cost`` (``iterate`` + a ``reduce``
taking the minimum per (src, dst)), printing one JSON line per batch (:func:`run`).

Costs are held as integers, ``round(cost * 1000)`` (:func:`scaled_cost`), so path sums are exact.
Views are compared by an order-independent checksum, the same in Rust and here: the wrapping
(mod 2**64) sum over the rows of FNV-1a 64 of the UTF-8 text ``src\\tdst`` (``reachable``) or
``src\\tdst\\tcost_scaled`` (``min_cost``).

>>> reachable_checksum([("a", "b")]) == fnv1a64("a\\tb")
True
>>> min_cost_checksum([("a", "b", 1.5)]) == fnv1a64("a\\tb\\t1500")
True
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from aspen.errors import ConfigError, SetupError
from aspen.generators.records import Record

__all__ = ["PEER_DIR", "build", "fnv1a64", "min_cost_checksum", "reachable_checksum",
           "peak_rss_mb", "run", "run_lines", "scaled_cost", "write_workload"]

#: The Rust program's source folder (the repository's ``benchmarks/dataflow_peer``).
PEER_DIR = Path(__file__).resolve().parents[3] / "benchmarks" / "dataflow_peer"
#: Costs are multiplied by this and rounded to an integer in both programs.
COST_SCALE = 1000

_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_MASK = (1 << 64) - 1


def fnv1a64(text: str) -> int:
    """FNV-1a 64 of ``text`` in UTF-8.

    >>> fnv1a64(""), fnv1a64("a")
    (14695981039346656037, 12638187200555641996)
    """
    return _fnv_continue(_FNV_OFFSET, text.encode())


def _fnv_continue(state: int, data: bytes) -> int:
    for byte in data:
        state = ((state ^ byte) * _FNV_PRIME) & _MASK
    return state


def scaled_cost(cost: float) -> int:
    """A cost as the integer both programs compare: ``round(cost * 1000)``.

    >>> scaled_cost(2.0), scaled_cost(0.0015)
    (2000, 2)
    """
    return round(float(cost) * COST_SCALE)


def _checksum(rows: Iterable[tuple[str, str]]) -> int:
    """Wrapping sum of FNV-1a 64 of ``head\\tsuffix`` over the rows (head, suffix).

    Vectorised: rows are grouped by suffix and the hash states after ``head\\t`` (one per
    head) are carried through the suffix's bytes for the whole group at once."""
    groups: dict[str, list[str]] = defaultdict(list)
    for head, suffix in rows:
        groups[suffix].append(head)
    prefix: dict[str, int] = {}
    total = np.uint64(0)
    prime = np.uint64(_FNV_PRIME)
    with np.errstate(over="ignore"):
        for suffix, heads in groups.items():
            for head in heads:
                if head not in prefix:
                    prefix[head] = _fnv_continue(_FNV_OFFSET, head.encode() + b"\t")
            states = np.fromiter((prefix[h] for h in heads), dtype=np.uint64, count=len(heads))
            for byte in suffix.encode():
                states ^= np.uint64(byte)
                states *= prime
            total += states.sum(dtype=np.uint64)
    return int(total)


def reachable_checksum(pairs: Iterable[Sequence[Any]]) -> int:
    """The checksum of a ``reachable`` set: rows ``(src, dst)`` (more columns are ignored).

    The literal is what the Rust program prints for the same three-node cycle (batch 0 of a
    workload ``+ a b 1.5``, ``+ b c 2``, ``+ c a 1``):

    >>> cycle = [(s, d) for s in "abc" for d in "abc"]
    >>> reachable_checksum(cycle)
    10859384734568708970
    >>> reachable_checksum(reversed(cycle)) == reachable_checksum(cycle)
    True
    """
    return _checksum((str(row[0]), str(row[1])) for row in pairs)


def min_cost_checksum(rows: Iterable[Sequence[Any]]) -> int:
    """The checksum of a ``min_cost`` set: rows ``(src, dst, cost)``; a float cost is scaled
    by :func:`scaled_cost`, an ``int`` cost is taken as scaled already.

    The literal is the Rust program's for the cycle above (costs a→b 1.5, b→c 2, c→a 1):

    >>> min_cost_checksum([("a", "b", 1.5), ("b", "c", 2.0), ("c", "a", 1.0), ("a", "c", 3.5),
    ...                    ("b", "a", 3.0), ("c", "b", 2.5)])
    2846684537534271249
    """
    return _checksum(
        (str(row[0]), f"{row[1]}\t{row[2] if isinstance(row[2], int) else scaled_cost(row[2])}")
        for row in rows)


def write_workload(batches: Sequence[Sequence[Record]], path: Path) -> Path:
    """Write link update records as the Rust program's workload file; returns ``path``.

    >>> import tempfile
    >>> from aspen.generators.records import link_delete, link_insert
    >>> p = Path(tempfile.mkdtemp()) / "w.txt"
    >>> print(write_workload([[link_insert("a", "b", 1.5)], [link_delete("a", "b")]], p)
    ...       .read_text(), end="")
    B 0
    + a b 1.5
    B 1
    - a b
    """
    lines: list[str] = []
    for number, records in enumerate(batches):
        lines.append(f"B {number}")
        for record in records:
            if record.get("relation", "link") != "link":
                raise ConfigError(f"the dataflow peer takes link records only, not "
                                  f"{record.get('relation')!r}")
            src, dst = str(record["src"]), str(record["dst"])
            if any(not part or any(c.isspace() for c in part) for part in (src, dst)):
                raise ConfigError(f"node ids of the dataflow peer's workload cannot be empty or "
                                  f"hold white space: {src!r} → {dst!r}")
            if record["op"] == "insert":
                lines.append(f"+ {src} {dst} {float(record['cost'])!r}")
            else:
                lines.append(f"- {src} {dst}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def peak_rss_mb() -> float:
    """This process's peak resident set so far, in MB (``VmHWM``: reset by exec, unlike
    ``ru_maxrss``, which a forked child inherits from its parent; 0.0 without /proc).

    >>> peak_rss_mb() > 0
    True
    """
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return 0.0
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _cargo() -> str:
    """The cargo executable, or a one-line SetupError."""
    found = shutil.which("cargo") or next(
        (str(p) for p in [Path.home() / ".cargo" / "bin" / "cargo"] if p.exists()), None)
    if not found:
        raise SetupError("cargo is not installed: install Rust (rustup) to run the Differential "
                         "Dataflow peer, or leave the scheme 'dataflow' out")
    return found


def build(source: Path = PEER_DIR, quiet: bool = True) -> Path:
    """Build the Rust program (``cargo build --release``; a no-op when up to date) and return
    the path of its binary; a missing cargo or a failed build is a one-line SetupError."""
    if not (source / "Cargo.toml").exists():
        raise SetupError(f"the dataflow peer's sources are missing: no Cargo.toml in {source}")
    target = source / "target"
    env = dict(os.environ, CARGO_TARGET_DIR=str(target))
    command = [_cargo(), "build", "--release", "--locked"] + (["--quiet"] if quiet else [])
    done = subprocess.run(command, cwd=source, env=env, capture_output=True, text=True)
    binary = target / "release" / "dataflow_peer"
    if done.returncode != 0 or not binary.exists():
        errors = [line.strip() for line in done.stderr.splitlines()
                  if line.strip().startswith(("error", "failed"))]
        reason = errors[0] if errors else (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise SetupError(f"building the dataflow peer failed (cargo exit {done.returncode}): "
                         f"{reason}")
    return binary


def run(binary: Path, workload: Path, views: Sequence[str], budget_s: float | None = None
        ) -> dict[str, Any]:
    """Run the program on ``workload`` maintaining ``views``; see :func:`run_lines`."""
    return run_lines([str(binary), str(workload), "--views", ",".join(views)],
                     workload.with_suffix(".out.jsonl"), budget_s)


def run_lines(command: Sequence[str], out_path: Path, budget_s: float | None = None
              ) -> dict[str, Any]:
    """Run ``command`` (its own session; stdout to ``out_path``, one JSON object a line):
    ``status`` (``ok``, ``error``, or ``did not finish``: stopped when its build, the time to
    its line of batch 0, took more than ``budget_s`` seconds, or the batches after it took more
    than another ``budget_s``), ``lines`` (the JSON objects read, as far as it got), ``seconds``
    (wall) and ``peak_rss_mb`` (the process's peak resident set from the kernel when it is
    reaped: an upper bound, as it counts the parent's pages the child had between fork and
    exec; a line's own ``peak_rss_mb``, taken after exec, is exact).

    >>> import sys, tempfile
    >>> out = Path(tempfile.mkdtemp()) / "o.jsonl"
    >>> r = run_lines([sys.executable, "-c", "print('{\\"a\\": 1}')"], out)
    >>> r["status"], r["lines"]
    ('ok', [{'a': 1}])
    """
    err_path = out_path.with_suffix(".err.txt")
    start = time.perf_counter()
    deadline = start + budget_s if budget_s else None
    built_at: float | None = None
    stopped: str | None = None
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen(list(command), stdout=out, stderr=err, start_new_session=True)
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            now = time.perf_counter()
            if built_at is None and '"batch": 0' in out_path.read_text(errors="replace"):
                built_at = now  # the build is done: the updates get a budget of their own
                deadline = now + budget_s if budget_s else None
            if deadline is not None and now > deadline and stopped is None:
                stopped = (f"build stopped after {budget_s:g} s" if built_at is None else
                           f"updates stopped {budget_s:g} s after the build")
                os.killpg(proc.pid, signal.SIGKILL)
                _pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.02)
        proc.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - start
    lines = [json.loads(line) for line in out_path.read_text().splitlines()
             if line.strip().endswith("}")]
    result: dict[str, Any] = {"lines": lines, "seconds": seconds,
                              "peak_rss_mb": usage.ru_maxrss / 1024}
    if stopped:
        result |= {"status": "did not finish", "note": stopped}
    elif proc.returncode != 0:
        errors = err_path.read_text(errors="replace").strip().splitlines()
        result |= {"status": "error",
                   "note": f"exit code {proc.returncode}: {errors[-1] if errors else 'no output'}"}
    else:
        result["status"] = "ok"
    return result
