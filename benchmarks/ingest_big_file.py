"""Ingest one large generated update file, to see that memory does not follow the file's size.

Writes ``--mb`` megabytes of link inserts (with one bad line in every thousand, so quarantine
gets rows too) into a file, then ingests it into a fresh lake with ``aspen.lake.ingest`` and
prints the file's size, the rows appended and the seconds taken. Run it under
``/usr/bin/time -v`` to read the peak resident set size ("Maximum resident set size"):

    /usr/bin/time -v .venv/bin/python benchmarks/ingest_big_file.py [--mb 300] [--dir DIR]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from aspen.lake.ingest import ingest_files
from aspen.settings import Settings


def write_file(path: Path, megabytes: int) -> int:
    """Write about ``megabytes`` MB of JSON Lines updates to ``path``; the bytes written."""
    target = megabytes * 1_000_000
    written = 0
    with path.open("w", encoding="utf-8") as out:
        index = 0
        while written < target:
            lines = []
            for _ in range(10_000):
                index += 1
                if index % 1000 == 0:
                    lines.append('{"op": "insert", "relation": "link", "cost": -1}')
                else:
                    lines.append(json.dumps({
                        "op": "insert", "relation": "link", "src": f"n{index % 100_003}",
                        "dst": f"n{(index * 7) % 100_003}", "cost": float(index % 17),
                        "event_time": "2026-01-01T00:00:00Z"}))
            block = "\n".join(lines) + "\n"
            out.write(block)
            written += len(block)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=300, help="file size in MB (default 300)")
    parser.add_argument("--dir", default=None, help="work folder (default: a temporary one)")
    args = parser.parse_args()
    work = Path(args.dir or tempfile.mkdtemp(prefix="aspen-bigfile-"))
    work.mkdir(parents=True, exist_ok=True)
    path = work / "big.jsonl"
    size = write_file(path, args.mb)
    started = time.perf_counter()
    report = ingest_files(Settings(lake=str(work / "lake")), [path])
    seconds = time.perf_counter() - started
    print(f"file: {size / 1e6:.0f} MB; batch {report.batch_id}: {report.valid} valid, "
          f"{report.quarantined} quarantined; ingest {seconds:.0f} s")


if __name__ == "__main__":
    main()
